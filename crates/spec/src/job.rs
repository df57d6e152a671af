//! The job model: one plain-data description of "what I/O to do", shared by flags, job
//! files, the survey and (later) remote nodes, so every front end maps to the same thing.

use crate::units::{duration_serde, parse_size, Bytes};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

macro_rules! word_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $( #[serde(rename = $word)] $variant ),+ }

        impl $name {
            pub const ALL: &'static [&'static str] = &[$($word),+];
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $word ),+ }
            }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s { $( $word => Ok($name::$variant), )+
                    other => Err(format!("unknown value `{other}`; accepted: {}", Self::ALL.join(", "))),
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

word_enum!(
    /// The access pattern, named as fio names it.
    Rw {
        Read => "read",
        Write => "write",
        RandRead => "randread",
        RandWrite => "randwrite",
        ReadWrite => "readwrite",
        RandRw => "randrw",
    }
);

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::ReadWrite | Rw::RandRw)
    }
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::RandWrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }
}

word_enum!(
    /// How an I/O reaches the kernel.
    EngineKind {
        Psync => "psync",
        IoUring => "io_uring",
        Mmap => "mmap",
        Null => "null",
    }
);

word_enum!(
    /// Durability of writes: dd's `oflag=dsync` is `dsync`, `oflag=sync` is `sync`,
    /// a flush after every N writes is `fsync` or `fdatasync` with `fsync_every`.
    SyncMode {
        None => "none",
        Fsync => "fsync",
        Fdatasync => "fdatasync",
        Dsync => "dsync",
        Sync => "sync",
    }
);

/// Weighted block sizes, for example `4k:70,64k:30`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSizes(pub Vec<(Bytes, u32)>);

impl BlockSizes {
    pub fn single(b: Bytes) -> Self {
        BlockSizes(vec![(b, 1)])
    }
    pub fn max(&self) -> Bytes {
        self.0.iter().map(|x| x.0).max().unwrap_or(Bytes(0))
    }
    pub fn min(&self) -> Bytes {
        self.0.iter().map(|x| x.0).min().unwrap_or(Bytes(0))
    }
    /// Mean block size by weight, used to size bounded random runs.
    pub fn mean(&self) -> f64 {
        let w: u64 = self.0.iter().map(|x| x.1 as u64).sum();
        if w == 0 {
            return 0.0;
        }
        self.0.iter().map(|(b, wt)| b.0 as f64 * *wt as f64).sum::<f64>() / w as f64
    }
}

impl FromStr for BlockSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let (size, weight) = match part.split_once(':') {
                Some((a, b)) => {
                    let w: u32 = b.trim().parse().map_err(|_| {
                        format!("`{part}`: the weight after `:` must be a whole number, as in 4k:70,64k:30")
                    })?;
                    (a, w)
                }
                None => (part, 1),
            };
            let b = parse_size(size)?;
            if b.0 == 0 {
                return Err("a block size must be larger than 0".into());
            }
            if weight == 0 {
                return Err(format!("`{part}`: a weight of 0 never picks that size; drop it"));
            }
            out.push((b, weight));
        }
        if out.is_empty() {
            return Err("no block size given".into());
        }
        Ok(BlockSizes(out))
    }
}

impl fmt::Display for BlockSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() == 1 {
            return write!(f, "{}", self.0[0].0);
        }
        let parts: Vec<String> = self.0.iter().map(|(b, w)| format!("{b}:{w}")).collect();
        f.write_str(&parts.join(","))
    }
}

impl Serialize for BlockSizes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for BlockSizes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A number of bytes, or a string: a size (`4k`) or weighted sizes (`4k:70,64k:30`).
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(u64),
            Text(String),
        }
        let b = match Form::deserialize(d)? {
            Form::Number(n) => BlockSizes::single(Bytes(n)),
            Form::Text(t) => t.parse().map_err(serde::de::Error::custom)?,
        };
        if b.0.iter().any(|(x, _)| x.0 == 0) {
            return Err(serde::de::Error::custom("a block size must be larger than 0"));
        }
        Ok(b)
    }
}

/// Where random offsets fall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    Uniform,
    /// Zipf with exponent theta: a few blocks get most of the I/O.
    Zipf(f64),
}

impl FromStr for Dist {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "uniform" => Ok(Dist::Uniform),
            None if s == "zipf" => Ok(Dist::Zipf(1.2)),
            Some(("zipf", t)) => {
                let theta: f64 =
                    t.parse().map_err(|_| format!("`{s}`: zipf's theta must be a number, as in zipf:1.2"))?;
                if !(theta > 0.0 && theta.is_finite()) {
                    return Err(format!("`{s}`: zipf's theta must be above 0"));
                }
                Ok(Dist::Zipf(theta))
            }
            _ => Err(format!("unknown distribution `{s}`; accepted: uniform, zipf, zipf:THETA")),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Uniform => f.write_str("uniform"),
            Dist::Zipf(t) => write!(f, "zipf:{t}"),
        }
    }
}

impl Serialize for Dist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One job, complete and validated: every field has its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub name: String,
    /// A file, a directory (one file per thread) or, with `device`, a block device.
    pub target: PathBuf,
    /// Size of each file; `None` means "the existing file's size".
    pub size: Option<Bytes>,
    /// Bytes each thread transfers in a size-bounded run; `None` means `size`.
    pub io_size: Option<Bytes>,
    pub rw: Rw,
    /// Read percentage of a mixed pattern.
    pub mix: u8,
    pub bs: BlockSizes,
    /// Sequential access that advances by `stride` after each block (a redo log's initialisation).
    pub stride: Option<Bytes>,
    pub dist: Dist,
    pub seed: u64,
    pub engine: EngineKind,
    pub iodepth: u32,
    pub direct: bool,
    pub sync: SyncMode,
    /// With `sync = fsync|fdatasync`: flush after this many writes.
    pub fsync_every: u64,
    pub end_fsync: bool,
    pub threads: u32,
    #[serde(with = "duration_serde::option")]
    pub runtime: Option<Duration>,
    #[serde(with = "duration_serde")]
    pub ramp: Duration,
    /// Open-loop bandwidth cap for the job (bytes/s), shared among its threads.
    pub rate: Option<Bytes>,
    /// Open-loop IOPS for the job, shared among its threads.
    pub rate_iops: Option<u64>,
    /// Percent of each written block that compresses (0 = incompressible).
    pub compressibility: u8,
    /// Allow writing into an existing file iolab did not create.
    pub overwrite: bool,
    /// Allow a block device as target.
    pub device: bool,
}

impl Job {
    /// The rules a job must follow, each naming its field.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&self.name, field, message));
        if self.name.is_empty() || self.name.contains(['/', '\0']) {
            return err("name", "a job name must be non-empty and contain no `/`".into());
        }
        if self.target.as_os_str().is_empty() {
            return err("target", "no target given; name a file, a directory or (with --device) a block device".into());
        }
        if self.bs.0.iter().any(|(b, _)| b.0 == 0 || b.0 > 1 << 30) {
            return err("bs", "each block size must be between 1 byte and 1 GiB".into());
        }
        if self.direct && self.bs.0.iter().any(|(b, _)| b.0 % 512 != 0) {
            return err("bs", format!("`{}`: with direct I/O every block size must be a multiple of 512 bytes (the device's logical block)", self.bs));
        }
        if self.mix > 100 {
            return err("mix", format!("{} is not a percentage; accepted: 0 to 100", self.mix));
        }
        if let Some(stride) = self.stride {
            if self.rw.is_random() {
                return err(
                    "stride",
                    "a stride applies to sequential patterns (read, write, readwrite), not random ones".into(),
                );
            }
            if stride < self.bs.max() {
                return err("stride", format!("stride {stride} is smaller than the block size {}; a stride is the distance from one block's start to the next", self.bs.max()));
            }
        }
        if let Some(s) = self.size {
            if s.0 < self.bs.max().0 {
                return err("size", format!("size {s} is smaller than the block size {}", self.bs.max()));
            }
        }
        if self.iodepth == 0 || self.iodepth > 4096 {
            return err("iodepth", format!("{} is out of range; accepted: 1 to 4096", self.iodepth));
        }
        if self.iodepth > 1 && self.engine != EngineKind::IoUring {
            return err(
                "iodepth",
                format!(
                    "engine `{}` runs one I/O at a time; use --engine io_uring for a queue depth above 1",
                    self.engine
                ),
            );
        }
        if self.engine == EngineKind::Mmap && self.direct {
            return err("direct", "memory-mapped I/O goes through the page cache and cannot be direct; drop --direct or pick another engine".into());
        }
        if self.threads == 0 || self.threads > 4096 {
            return err("threads", format!("{} is out of range; accepted: 1 to 4096", self.threads));
        }
        if self.compressibility > 100 {
            return err("compressibility", format!("{} is not a percentage; accepted: 0 to 100", self.compressibility));
        }
        if matches!(self.sync, SyncMode::Fsync | SyncMode::Fdatasync) && self.fsync_every == 0 {
            return err("fsync_every", "must be at least 1 with sync = fsync or fdatasync".into());
        }
        if !self.ramp.is_zero() && self.runtime.is_none() {
            return err("ramp", "a ramp needs a time-bounded run; add a runtime".into());
        }
        if let Some(r) = self.runtime {
            if r.is_zero() {
                return err("runtime", "a runtime of 0 measures nothing".into());
            }
        }
        if self.rate == Some(Bytes(0)) || self.rate_iops == Some(0) {
            return err("rate", "a rate of 0 issues nothing; leave it out to run flat out".into());
        }
        if self.rate.is_some() && self.rate_iops.is_some() {
            return err("rate", "give either a bandwidth rate or an IOPS rate, not both".into());
        }
        Ok(())
    }

    /// The effective fsync cadence (0 = never during the run).
    pub fn flush_every(&self) -> u64 {
        match self.sync {
            SyncMode::Fsync | SyncMode::Fdatasync => self.fsync_every,
            _ => 0,
        }
    }
}

/// Phases run in order; the jobs of one phase run at the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub jobs: Vec<Job>,
}

/// Everything one invocation will do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub phases: Vec<Phase>,
}

impl Plan {
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.phases.is_empty() {
            return Err(SpecError::plain(
                "the plan has no phase; a job file needs at least one [[phase]] with one [[phase.job]]",
            ));
        }
        for p in &self.phases {
            if p.jobs.is_empty() {
                return Err(SpecError::plain(format!("phase `{}` has no job", p.name)));
            }
            let mut names = std::collections::HashSet::new();
            for j in &p.jobs {
                if !names.insert(&j.name) {
                    return Err(SpecError::field(
                        &j.name,
                        "name",
                        format!("two jobs in phase `{}` share this name", p.name),
                    ));
                }
                j.validate()?;
            }
        }
        Ok(())
    }
}
