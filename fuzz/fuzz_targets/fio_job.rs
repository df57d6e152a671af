//! Fuzz the fio job-file parser: any input (with an include beside it and a few variables) is
//! a job file or one error, never a panic; whatever maps converts to TOML that reads back as
//! the same plan.
#![no_main]
use iolab_spec::fio::{self, Env};
use libfuzzer_sys::fuzz_target;
use std::io;
use std::path::{Path, PathBuf};

/// The input as /j/job.fio; /j/inc.fio and /j/self.fio (which includes itself) beside it.
struct Mem<'a>(&'a str);

impl Env for Mem<'_> {
    fn read(&self, path: &Path) -> io::Result<String> {
        match path.to_str() {
            Some("/j/job.fio") => Ok(self.0.to_string()),
            Some("/j/inc.fio") => Ok("size=1m\nbs=4k\n".into()),
            Some("/j/self.fio") => Ok("include self.fio\n".into()),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "SIZE" => Some("64m".into()),
            "DIR" => Some("/data".into()),
            _ => None,
        }
    }
    fn keyword(&self, word: &str) -> Option<u64> {
        match word {
            "$pagesize" => Some(4096),
            "$ncpus" => Some(2),
            "$mb_memory" => Some(1024),
            _ => None,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = PathBuf::from("/j/job.fio");
    for lenient in [false, true] {
        let Ok(f) = fio::parse(&path, &Mem(text), lenient) else { continue };
        let Ok(plan) = f.plan(&iolab_spec::JobPatch::default()) else { continue };
        plan.validate().expect("a mapped plan is valid");
        let toml = f.to_toml();
        let back = iolab_spec::parse_job_file(&toml, &iolab_spec::JobPatch::default())
            .unwrap_or_else(|e| panic!("converted TOML does not read back: {e}\n{toml}"));
        assert_eq!(back, plan, "converted TOML is another plan:\n{toml}");
    }
});
