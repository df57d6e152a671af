//! filebench's varmail personality (workloads/varmail.f) with its defaults: one file set of
//! 1000 files in one flat directory (`dirwidth` 1,000,000) that all 16 threads share, sizes
//! gamma-distributed around 16 KiB (80% made before the run), 60 s, each thread looping over
//! delete, create, append, fsync, close, open, read whole, append, fsync, close, open, read
//! whole, close; appends of 1 byte to 16 KiB, reads in 1 MiB calls.

use crate::job::Job;
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};

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

impl VarmailJob {
    pub(crate) fn from_patch(p: &JobPatch, _name: &str) -> Result<VarmailJob, SpecError> {
        Ok(VarmailJob {
            nfiles: p.nfiles.unwrap_or(1000),
            filesize: p.filesize.unwrap_or(Bytes::kib(16)),
            meanappendsize: p.meanappendsize.unwrap_or(Bytes::kib(16)),
            iosize: p.iosize.unwrap_or(Bytes::mib(1)),
            prealloc: 80,
        })
    }

    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
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
            return err("direct", "varmail's files and appends have any size; direct I/O needs aligned sizes".into());
        }
        Ok(())
    }
}
