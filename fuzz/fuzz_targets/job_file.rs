//! Fuzz the TOML job-file parser: any input gives a plan or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(plan) = iolab_spec::parse_job_file(text, &iolab_spec::JobPatch::default()) {
            // Whatever parses is a valid plan.
            plan.validate().expect("a parsed plan is valid");
        }
    }
});
