//! Fuzz the eBPF recorder's userspace half: any bytes, cut into records (a 2-byte length then
//! the record), decode without a panic (`iolab_record::wire::decode` refuses what is short,
//! of an unknown type or whose lengths point past its end), and what decodes is assembled into
//! a trace (fd tables, openings, rings pairing submissions with completions, fixed files, block
//! requests) that reads back, is analysed and exported as a fio iolog.
#![no_main]
use iolab_record::assemble::{Builder, NoLookup};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Builder::new(Vec::new(), NoLookup, "fuzz", "fuzz", 1000, 0).unwrap();
    b.add_process(1, Some("/w".into()), false);
    let mut rest = data;
    while rest.len() >= 2 {
        let n = (usize::from(rest[0]) | usize::from(rest[1]) << 8).min(rest.len() - 2);
        let rec = &rest[2..2 + n];
        rest = &rest[2 + n..];
        if let Ok(ev) = iolab_record::wire::decode(rec) {
            b.event(ev).unwrap();
        }
    }
    let (bytes, sum) = b.finish().unwrap();
    let t = iolab_trace::Trace::read(&bytes[..]).unwrap();
    let n: usize = t.ops.iter().map(|(_, o)| o.len()).sum();
    assert_eq!(n as u64, sum.ops);
    let a: usize = t.ring_ops.iter().map(|(_, o)| o.len()).sum();
    assert_eq!(a as u64, sum.async_ops);
    let _ = iolab_trace::analyze::analyze(&t, Some((50e6, 0.005)));
    let mut out = Vec::new();
    let mut r = iolab_trace::format::Reader::new(&bytes[..]).unwrap();
    iolab_trace::fio::export(std::iter::from_fn(|| r.next_record().transpose()), None, &mut out).unwrap();
});
