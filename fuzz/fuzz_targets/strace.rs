//! Fuzz the strace text importer: any bytes import without a panic, and the trace it writes
//! reads back with the same number of operations, is analysed and exported as a fio iolog. The
//! same bytes read as a trace file must give an error, not a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut imp = iolab_trace::Importer::new(Vec::new(), "fuzz").unwrap();
    imp.read_file(data, "fuzz", Some(1)).unwrap();
    let (bytes, sum) = imp.finish().unwrap();
    let t = iolab_trace::Trace::read(&bytes[..]).unwrap();
    let n: usize = t.ops.iter().map(|(_, o)| o.len()).sum();
    assert_eq!(n as u64, sum.ops);
    let _ = iolab_trace::analyze::analyze(&t, Some((50e6, 0.005)));
    let mut out = Vec::new();
    let mut r = iolab_trace::format::Reader::new(&bytes[..]).unwrap();
    iolab_trace::fio::export(std::iter::from_fn(|| r.next_record().transpose()), None, &mut out).unwrap();
    let _ = iolab_trace::Trace::read(data);
});
