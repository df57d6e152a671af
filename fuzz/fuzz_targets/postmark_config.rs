//! Fuzz PostMark's configuration-file parser: any text is parsed or refused with a line number,
//! never a panic, and what it accepts makes a job that validates or is refused in words.
#![no_main]
use iolab_spec::postmark::parse_config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        match parse_config(s) {
            Ok(c) => {
                if let (Some(l), Some(h)) = (c.size_low, c.size_high) {
                    assert!(l > 0 && h >= l);
                }
                let patch = iolab_spec::JobPatch {
                    workload: Some(iolab_spec::WorkloadKind::Postmark),
                    target: Some("/nowhere".into()),
                    ..Default::default()
                }
                .with::<iolab_spec::PostmarkJob>(|o| o.postmark_config = Some(c));
                if let Ok(job) = patch.resolve("j") {
                    let _ = job.validate();
                }
            }
            Err(e) => assert!(e.line >= 1 && e.line <= s.lines().count().max(1)),
        }
    }
});
