//! The redo-log initialisation of seed 002 (MySQL Cluster's ndbd creating its fragment log
//! files) as parameters: files of one size written by parallel creators, one block at every
//! stride with an fsync after each — first the file's last block, so the file is full-length
//! and sparse from the start, then offsets 0, 1 stride, 2 strides, ... — against the fix, a
//! full sequential initialisation with one fsync at the end (`InitFragmentLogFiles=full`,
//! `dd bs=1M conv=fsync`). The job's `size` is each file's size, `bs` the block, `stride` the
//! stride, `threads` the parallel creators.

use crate::figures::{get, per, Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};

/// The redo log's own option (its file size, block and stride are `--size`, `--bs` and
/// `--stride`, its parallel creators `--threads`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "Redo-log initialisation (--workload redolog; also --size, --bs, --stride)"))]
#[serde(deny_unknown_fields)]
pub struct RedologOptions {
    /// redolog: files in all, shared among the threads (default 4).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u32>,
}

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

impl Personality for RedologJob {
    const NAME: &'static str = "redolog";
    const ABOUT: &'static str = "a block per stride with fsync, against a full sequential initialisation";
    type Options = RedologOptions;
    const SHARED_KEYS: &'static [&'static str] = &["size", "bs", "stride"];
    const DIRS: OwnDirs = OwnDirs::PerThread;
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[
        ("files", "redo log files"),
        ("sparse_s", "seconds to create them sparse (as ndbd did)"),
        ("sparse_bytes", "bytes written creating them sparse"),
        ("sparse_fsyncs", "fsyncs creating them sparse"),
        ("full_s", "seconds to create them written in full"),
        ("full_bytes", "bytes written creating them in full"),
        ("full_fsyncs", "fsyncs creating them in full"),
        ("sparse_bytes_per_s", "bytes per second, sparse creation"),
        ("sparse_expected_s", "seconds the sparse creation's bytes would take at the full creation's rate"),
        ("full_bytes_per_s", "bytes per second, full creation"),
        ("full_speedup", "times faster written in full than sparse"),
    ];
    const FIGURES: &'static [(&'static str, Kind)] = &[
        ("files", Count),
        ("sparse_s", Seconds),
        ("sparse_bytes", Count),
        ("sparse_fsyncs", Count),
        ("full_s", Seconds),
        ("full_bytes", Count),
        ("full_fsyncs", Count),
        ("sparse_bytes_per_s", Derived),
        ("sparse_expected_s", Derived),
        ("full_bytes_per_s", Derived),
        ("full_speedup", Derived),
    ];

    /// The two passes' rates, the time the sparse pattern's bytes would take at the full
    /// pass's rate, and how much longer the sparse pass took than the full one.
    fn derive(f: &mut Figures) {
        let (ss, fs) = (get(f, "sparse_s"), get(f, "full_s"));
        let full_rate = per(get(f, "full_bytes"), fs);
        f.insert("full_bytes_per_s".into(), full_rate);
        f.insert("sparse_bytes_per_s".into(), per(get(f, "sparse_bytes"), ss));
        f.insert("sparse_expected_s".into(), per(get(f, "sparse_bytes"), full_rate));
        f.insert("full_speedup".into(), per(ss, fs));
    }

    fn resolve(o: &RedologOptions, p: &JobPatch, _name: &str) -> Result<RedologJob, SpecError> {
        Ok(RedologJob {
            files: o.files.unwrap_or(4),
            file_size: p.size.unwrap_or(Bytes::mib(256)),
            block: p.bs.as_ref().map(|b| b.max()).unwrap_or(Bytes::kib(32)),
            stride: p.stride.unwrap_or(Bytes::mib(1)),
            full_block: Bytes::mib(1),
        })
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!("{} files of {}, {} every {}", self.files, self.file_size, self.block, self.stride));
    }

    /// Every file at its full size.
    fn space(&self) -> u64 {
        self.files as u64 * self.file_size.0
    }

    fn buffer_len(&self) -> u64 {
        self.block.0.max(self.full_block.0)
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
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
}

impl RedologJob {
    /// Files thread `t` of `threads` creates.
    pub fn files_of(&self, t: u32, threads: u32) -> u32 {
        self.files / threads + u32::from(t < self.files % threads)
    }
}
