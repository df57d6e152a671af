//! filebench's varmail personality (workloads/varmail.f) with its defaults: one file set of
//! 1000 files in one flat directory (`dirwidth` 1,000,000) that all 16 threads share, sizes
//! gamma-distributed around 16 KiB (80% made before the run), 60 s, each thread looping over
//! delete, create, append, fsync, close, open, read whole, append, fsync, close, open, read
//! whole, close; appends of 1 byte to 16 KiB, reads in 1 MiB calls.

use crate::figures::{get, per, Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
#[cfg(feature = "clap")]
use crate::units::parse_size;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// varmail's options as flags and job-file keys (16 threads and 60 s unless told).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "filebench's varmail (--workload varmail)"))]
#[serde(deny_unknown_fields)]
pub struct VarmailOptions {
    /// varmail: files in the set all threads share, in one directory (default 1000).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfiles: Option<u32>,
    /// varmail: mean file size (gamma, shape 1.5; default 16k).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filesize: Option<Bytes>,
    /// varmail: appends are 1 byte to this less one (default 16k).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meanappendsize: Option<Bytes>,
    /// varmail: read call size (default 1m).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iosize: Option<Bytes>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarmailJob {
    /// Files in the set (`$nfiles`, 1000), one set all the threads pick from.
    pub nfiles: u32,
    /// Mean file size of the gamma distribution (`$filesize` mean, 16 KiB; gamma 1.5).
    pub filesize: Bytes,
    /// Appends are 1 byte to this less one (`$meanappendsize`, 16 KiB).
    pub meanappendsize: Bytes,
    /// Read call size (`$iosize`, 1 MiB).
    pub iosize: Bytes,
    /// Percent of the files made before the run (`prealloc=80`).
    pub prealloc: u8,
}

/// filebench's varmail runs 16 threads for 60 s.
pub const DEFAULT_THREADS: u32 = 16;
pub const DEFAULT_RUNTIME_S: u64 = 60;

impl Personality for VarmailJob {
    const NAME: &'static str = "varmail";
    const ABOUT: &'static str = "filebench's";
    type Options = VarmailOptions;
    const DIRS: OwnDirs = OwnDirs::PerJob;
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[
        ("flowops", "flow operations (filebench's flowops)"),
        ("loops", "passes through the flow"),
        ("elapsed_s", "seconds in all"),
        ("flowops_per_s", "flow operations per second"),
        ("loops_per_s", "passes through the flow per second"),
    ];
    const FIGURES: &'static [(&'static str, Kind)] = &[
        ("flowops", Count),
        ("loops", Count),
        ("elapsed_s", Seconds),
        ("flowops_per_s", Derived),
        ("loops_per_s", Derived),
    ];

    /// filebench's ops/s: flowops (and whole loops) over the longest thread's time.
    fn derive(f: &mut Figures) {
        let el = get(f, "elapsed_s");
        let (ops, loops) = (per(get(f, "flowops"), el), per(get(f, "loops"), el));
        f.insert("flowops_per_s".into(), ops);
        f.insert("loops_per_s".into(), loops);
    }

    fn resolve(o: &VarmailOptions, _p: &JobPatch, _name: &str) -> Result<VarmailJob, SpecError> {
        Ok(VarmailJob {
            nfiles: o.nfiles.unwrap_or(1000),
            filesize: o.filesize.unwrap_or(Bytes::kib(16)),
            meanappendsize: o.meanappendsize.unwrap_or(Bytes::kib(16)),
            iosize: o.iosize.unwrap_or(Bytes::mib(1)),
            prealloc: 80,
        })
    }

    fn threads(&self, asked: Option<u32>) -> u32 {
        asked.unwrap_or(DEFAULT_THREADS)
    }

    fn runtime(&self, asked: Option<Duration>) -> Option<Duration> {
        asked.or(Some(Duration::from_secs(DEFAULT_RUNTIME_S)))
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!("{} files of {} mean", self.nfiles, self.filesize));
    }

    fn buffer_len(&self) -> u64 {
        self.iosize.0.max(self.meanappendsize.0)
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.nfiles == 0 || self.nfiles > 10_000_000 {
            return err("nfiles", format!("{}: accepted 1 to 10 million", self.nfiles));
        }
        if self.filesize.0 == 0 || self.filesize.0 > 1 << 30 {
            return err("filesize", format!("a mean of {}: accepted 1 byte to 1 GiB", self.filesize));
        }
        if self.meanappendsize.0 < 2 || self.meanappendsize.0 > 1 << 30 {
            return err("meanappendsize", format!("{}: accepted 2 bytes to 1 GiB", self.meanappendsize));
        }
        if self.iosize.0 == 0 || self.iosize.0 > 64 << 20 {
            return err("iosize", format!("{}: accepted 1 byte to 64 MiB", self.iosize));
        }
        if job.direct {
            // varmail.f asks for no directio: its appends of 1 byte to 16 KiB would be refused.
            return err("direct", "varmail's files and appends have any size; direct I/O needs aligned sizes".into());
        }
        Ok(())
    }
}
