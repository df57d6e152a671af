//! Fuzz the `-ff` merge path: the input is split at `\n--\n` into up to 8 per-thread files
//! (each given the tid of its place, as `NAME.TID` would), merged by timestamp without a panic;
//! the trace written reads back with the same number of operations, streams through the
//! analysis, and exports as a fio iolog.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while parts.len() < 7 {
        match rest.windows(4).position(|w| w == b"\n--\n") {
            Some(i) => {
                parts.push(&rest[..i + 1]);
                rest = &rest[i + 4..];
            }
            None => break,
        }
    }
    parts.push(rest);
    let inputs: Vec<(&[u8], String, Option<u32>)> =
        parts.iter().enumerate().map(|(i, p)| (*p, format!("t.{}", 100 + i), Some(100 + i as u32))).collect();
    let mut imp = iolab_trace::Importer::new(Vec::new(), "fuzz").unwrap();
    imp.read_merged(inputs).unwrap();
    let (bytes, sum) = imp.finish().unwrap();
    let t = iolab_trace::Trace::read(&bytes[..]).unwrap();
    let n: usize = t.ops.iter().map(|(_, o)| o.len()).sum();
    assert_eq!(n as u64, sum.ops);
    let mut r = iolab_trace::format::Reader::new(&bytes[..]).unwrap();
    let _ = iolab_trace::analyze::analyze_records(std::iter::from_fn(|| r.next_record().transpose()), Some((50e6, 0.005)));
    let mut r = iolab_trace::format::Reader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    iolab_trace::fio::export(std::iter::from_fn(|| r.next_record().transpose()), None, &mut out).unwrap();
});
