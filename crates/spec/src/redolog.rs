//! The redo-log initialisation of seed 002 (MySQL Cluster's ndbd creating its fragment log
//! files) as parameters: files of one size written by parallel creators, one block at every
//! stride with an fsync after each — first the file's last block, so the file is full-length
//! and sparse from the start, then offsets 0, 1 stride, 2 strides, ... — against the fix, a
//! full sequential initialisation with one fsync at the end (`InitFragmentLogFiles=full`,
//! `dd bs=1M conv=fsync`). The job's `size` is each file's size, `bs` the block, `stride` the
//! stride, `threads` the parallel creators.

use crate::job::Job;
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedologJob {
    /// Files in all (default 4), shared out among the threads.
    pub files: u32,
    /// Each file's size (the job's `size`, default 256 MiB as NDB's fragment log files).
    pub file_size: Bytes,
    /// The block written at every stride (`bs`, default 32 KiB).
    pub block: Bytes,
    /// The distance between blocks (`stride`, default 1 MiB).
    pub stride: Bytes,
    /// The write size of the full initialisation (1 MiB).
    pub full_block: Bytes,
}

impl RedologJob {
    pub(crate) fn from_patch(p: &JobPatch, _name: &str) -> Result<RedologJob, SpecError> {
        Ok(RedologJob {
            files: p.files.unwrap_or(4),
            file_size: p.size.unwrap_or(Bytes::mib(256)),
            block: p.bs.as_ref().map(|b| b.max()).unwrap_or(Bytes::kib(32)),
            stride: p.stride.unwrap_or(Bytes::mib(1)),
            full_block: Bytes::mib(1),
        })
    }

    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.files == 0 || self.files > 100_000 {
            return err("files", format!("{}: accepted 1 to 100000", self.files));
        }
        if self.block.0 == 0 || self.block.0 > 64 << 20 {
            return err("bs", format!("a block of {}: accepted 1 byte to 64 MiB", self.block));
        }
        if self.stride < self.block {
            return err("stride", format!("stride {} is below the block {}", self.stride, self.block));
        }
        if self.file_size < self.stride {
            return err("size", format!("files of {} are smaller than one stride ({})", self.file_size, self.stride));
        }
        if job.direct && [self.block.0, self.stride.0, self.file_size.0].iter().any(|v| !v.is_multiple_of(4096)) {
            return err("direct", "with direct I/O the block, stride and file size must be multiples of 4 KiB".into());
        }
        Ok(())
    }

    /// Files thread `t` of `threads` creates.
    pub fn files_of(&self, t: u32, threads: u32) -> u32 {
        self.files / threads + u32::from(t < self.files % threads)
    }
}
