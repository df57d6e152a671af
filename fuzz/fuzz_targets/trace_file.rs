//! Fuzz the trace format's reader with any record stream (the bytes are what the gzip layer
//! holds: length-prefixed postcard records, versions 2 and 3's included): reading, the
//! streaming analysis, the fio export, strace's cost correction and a replay's plan (calls,
//! rings and their waits, CPU waits, block requests) give a result or an error, never a panic, a
//! hang or a runaway allocation (a record's length is capped at 64 MiB, and libFuzzer's memory
//! limit catches more).
#![no_main]
use iolab_trace::format::{FormatError, Reader, Record, MAGIC};
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fn records(file: &[u8]) -> Option<impl Iterator<Item = Result<Record, FormatError>> + '_> {
    let mut r = Reader::new(file).ok()?;
    Some(std::iter::from_fn(move || r.next_record().transpose()))
}

fuzz_target!(|data: &[u8]| {
    let mut file = MAGIC.to_vec();
    let mut gz = flate2::write::GzEncoder::new(&mut file, flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap();
    let _ = iolab_trace::Trace::read(&file[..]);
    if let Some(r) = records(&file) {
        let _ = iolab_trace::analyze::analyze_records(r, Some((1e6, 0.001)));
    }
    if let Some(r) = records(&file) {
        let _ = iolab_trace::fio::export(r, None, &mut Vec::new());
    }
    for strip in ["/", "/d", "loop0"] {
        if let Some(r) = records(&file) {
            let job = iolab_spec::ReplayJob {
                trace: "fuzz".into(),
                trace_bytes: 0,
                trace_crc32: 0,
                timing: iolab_spec::Timing::Think,
                strip: strip.into(),
                prepare: true,
                limits: iolab_spec::ReplayLimits::default(),
            };
            let _ = iolab_workload::source::replay::ReplayPlan::build(r, &job);
        }
    }
    if let Some(r) = records(&file) {
        if let Ok(shape) = iolab_trace::overhead::Shape::of(r, None) {
            let cost = iolab_trace::overhead::Cost { call_ns: 10_000, gap_ns: 20_000, method: "fuzz".into() };
            if let Some(r) = records(&file) {
                let _ = iolab_trace::overhead::correct(r, &shape, &cost, Vec::new());
            }
        }
    };
});
