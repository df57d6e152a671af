//! Partial jobs: flags, a job file's `[defaults]` and each `[[phase.job]]` are all
//! `JobPatch`es layered onto the built-in defaults, so every front end lands in one `Job`.

use crate::job::{BlockSizes, Dist, EngineKind, Job, Rw, SyncMode};
use crate::units::{duration_serde, Bytes};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// A job with every field optional; `deny_unknown_fields` turns a typo into an error
/// that names the field and the accepted ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobPatch {
    pub name: Option<String>,
    pub target: Option<PathBuf>,
    pub size: Option<Bytes>,
    pub io_size: Option<Bytes>,
    pub rw: Option<Rw>,
    pub mix: Option<u8>,
    pub bs: Option<BlockSizes>,
    pub stride: Option<Bytes>,
    pub dist: Option<Dist>,
    pub seed: Option<u64>,
    pub engine: Option<EngineKind>,
    pub iodepth: Option<u32>,
    pub direct: Option<bool>,
    pub sync: Option<SyncMode>,
    pub fsync_every: Option<u64>,
    pub end_fsync: Option<bool>,
    pub threads: Option<u32>,
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Duration>,
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Duration>,
    pub rate: Option<Bytes>,
    pub rate_iops: Option<u64>,
    pub compressibility: Option<u8>,
    pub overwrite: Option<bool>,
    pub device: Option<bool>,
}

/// The seed used when none is given, so two runs of the same command do the same I/O.
pub const DEFAULT_SEED: u64 = 0x10_1AB;

impl JobPatch {
    /// Fields set in `over` win over those set in `self`.
    pub fn layered(&self, over: &JobPatch) -> JobPatch {
        macro_rules! pick { ($($f:ident),*) => { JobPatch { $( $f: over.$f.clone().or_else(|| self.$f.clone()), )* } } }
        pick!(
            name,
            target,
            size,
            io_size,
            rw,
            mix,
            bs,
            stride,
            dist,
            seed,
            engine,
            iodepth,
            direct,
            sync,
            fsync_every,
            end_fsync,
            threads,
            runtime,
            ramp,
            rate,
            rate_iops,
            compressibility,
            overwrite,
            device
        )
    }

    /// Fill the gaps with iolab's defaults and validate.
    pub fn resolve(&self, default_name: &str) -> Result<Job, SpecError> {
        let name = self.name.clone().unwrap_or_else(|| default_name.to_string());
        let target = self.target.clone().ok_or_else(|| {
            SpecError::field(
                &name,
                "target",
                "no target given; name a file or a directory (or a block device with --device)",
            )
        })?;
        let sync = self.sync.unwrap_or(if self.fsync_every.is_some() { SyncMode::Fsync } else { SyncMode::None });
        let rw = self.rw.unwrap_or(Rw::Read);
        let job = Job {
            target,
            size: self.size,
            io_size: self.io_size,
            rw,
            mix: self.mix.unwrap_or(if rw.is_mixed() {
                50
            } else if rw.reads() {
                100
            } else {
                0
            }),
            bs: self.bs.clone().unwrap_or(BlockSizes::single(Bytes::kib(4))),
            stride: self.stride,
            dist: self.dist.unwrap_or(Dist::Uniform),
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            engine: self.engine.unwrap_or(EngineKind::Psync),
            iodepth: self.iodepth.unwrap_or(1),
            direct: self.direct.unwrap_or(false),
            sync,
            fsync_every: self.fsync_every.unwrap_or(1),
            end_fsync: self.end_fsync.unwrap_or(false),
            threads: self.threads.unwrap_or(1),
            runtime: self.runtime,
            ramp: self.ramp.unwrap_or(Duration::ZERO),
            rate: self.rate,
            rate_iops: self.rate_iops,
            compressibility: self.compressibility.unwrap_or(0),
            overwrite: self.overwrite.unwrap_or(false),
            device: self.device.unwrap_or(false),
            name,
        };
        if self.mix.is_some() && !rw.is_mixed() {
            return Err(SpecError::field(
                &job.name,
                "mix",
                format!("a read percentage applies to readwrite and randrw, not `{rw}`"),
            ));
        }
        job.validate()?;
        Ok(job)
    }
}
