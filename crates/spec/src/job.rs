//! The job model: one plain-data description of "what I/O to do", shared by flags, job
//! files, the survey and (later) remote nodes, so every front end maps to the same thing.

pub use crate::block::BlockJob;
pub use crate::engine::EngineKind;
use crate::personality::OwnDirs;
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
pub(crate) use word_enum;

word_enum!(
    /// The access pattern, named as fio names it.
    Rw {
        Read => "read",
        Write => "write",
        RandRead => "randread",
        RandWrite => "randwrite",
        ReadWrite => "readwrite",
        RandRw => "randrw",
        Trim => "trim",
        RandTrim => "randtrim",
        TrimWrite => "trimwrite",
    }
);

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::ReadWrite | Rw::RandRw)
    }
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }
    /// Does the job change the target's data? Writes, and trims (a discarded range's data is
    /// gone): either needs the consent writing over data iolab did not make needs.
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }
    /// Does it trim (ioctl BLKDISCARD, fio's `rw=trim|randtrim|trimwrite`)? `trimwrite` trims
    /// each block, then writes it.
    pub fn trims(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite)
    }
}

pub use crate::{Workload, WorkloadKind};

impl FromStr for WorkloadKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        std::iter::once(WorkloadKind::Block)
            .chain(WorkloadKind::PERSONALITIES.iter().copied())
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown value `{s}`; accepted: {}", WorkloadKind::ALL.join(", ")))
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for WorkloadKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WorkloadKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

word_enum!(
    /// How the validation journal's records reach the disk (`--journal-sync`): `sync` makes the
    /// record before each write durable before the write is issued, `async` leaves it in the
    /// page cache.
    JournalSync {
        Sync => "sync",
        Async => "async",
    }
);

word_enum!(
    /// Which node reads back and checks what a validating job wrote (`--verify-on`): `self`,
    /// the writer (the default), or `other`, the next node of a run of several, after the
    /// writer synced (IOR's -C), to catch cache coherency failures between nodes.
    VerifyOn {
        Writer => "self",
        Other => "other",
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

/// Where random offsets fall. Every form but `Uniform` is fio's `random_distribution` of the
/// same name, drawn as fio draws it (crates/workload's pattern).
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    Uniform,
    /// Zipf with exponent theta: a few blocks get most of the I/O.
    Zipf(f64),
    /// fio's pareto with power h (0 < h < 1): block rank `(n-1) * u^(ln h / ln(1-h))`.
    Pareto(f64),
    /// fio's normal: a bell around the middle of the blocks, widened by a deviation given as a
    /// percentage (0..=100) of them.
    Normal(f64),
    /// fio's zoned: (access %, region %) pairs, in order from the file's start; the access
    /// percentages add up to 100, the regions to at most 100.
    Zoned(Vec<(u8, u8)>),
    /// fio's zoned_abs: (access %, region size) pairs, in order from the file's start.
    ZonedAbs(Vec<(u8, Bytes)>),
}

/// fio's limit on the zones of `zoned` and `zoned_abs`.
pub const MAX_ZONES: usize = 256;

impl Dist {
    /// `zoned` (`absolute` false: sizes are percentages of the file) or `zoned_abs` (sizes in
    /// bytes) from its `ACCESS%/SIZE` pairs; `size` reads one size (fio's and iolab's suffixes differ).
    pub fn zoned(
        text: &str,
        pairs: &str,
        absolute: bool,
        size: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<Dist, String> {
        let form = if absolute { "zoned_abs:60/20m:40/80m" } else { "zoned:50/5:30/15:20/80" };
        let mut zones = Vec::new();
        let (mut access, mut region) = (0u32, 0u64);
        // fio's zoned: a region left blank, 0 or without its `/` gets an equal share of what
        // the others leave (options.c's zone_split_ddir); the zone's index here.
        let mut blank = Vec::new();
        for pair in pairs.split(':') {
            let split = match pair.split_once('/') {
                // A zone of its access share alone (`20`): its region left blank.
                None if !absolute && pair.trim().parse::<u8>().is_ok() => Some((pair, "")),
                other => other,
            };
            let (a, r) = split.ok_or_else(|| format!("`{text}`: each zone is ACCESS%/SIZE, as in {form}"))?;
            let a: u8 = a
                .trim()
                .parse()
                .ok()
                .filter(|a| *a <= 100)
                .ok_or_else(|| format!("`{text}`: `{a}` is not an access percentage (0 to 100), as in {form}"))?;
            access += a as u32;
            if absolute {
                let r = size(r.trim()).map_err(|e| format!("`{text}`: {e}"))?;
                region = region.saturating_add(r);
                zones.push((a, r));
            } else if r.trim().is_empty() || r.trim() == "0" {
                blank.push(zones.len());
                zones.push((a, 0));
            } else {
                let r: u8 =
                    r.trim().parse().ok().filter(|r| *r <= 100).ok_or_else(|| {
                        format!("`{text}`: `{r}` is not a region percentage (0 to 100, or blank for a share of the rest), as in {form}")
                    })?;
                region += r as u64;
                zones.push((a, r as u64));
            }
        }
        if !blank.is_empty() && region <= 100 {
            // fio's integer division; a lone zone left blank gets nothing in fio (an empty
            // zone, where it issues almost nothing): refused, as is any blank left nothing.
            let share = if zones.len() == 1 { 0 } else { (100 - region) / blank.len() as u64 };
            if share == 0 {
                return Err(format!(
                    "`{text}`: a region left blank gets an equal share of what the others leave, here 0%; give each zone its size, as in {form}"
                ));
            }
            for &i in &blank {
                zones[i].1 = share;
                region += share;
            }
        }
        if zones.len() > MAX_ZONES {
            return Err(format!("`{text}`: at most {MAX_ZONES} zones (fio's limit)"));
        }
        if access != 100 {
            return Err(format!("`{text}`: the access percentages add up to {access}, not 100"));
        }
        if absolute {
            if region == 0 {
                return Err(format!("`{text}`: the zones cover no bytes"));
            }
            Ok(Dist::ZonedAbs(zones.into_iter().map(|(a, r)| (a, Bytes(r))).collect()))
        } else {
            if region > 100 || region == 0 {
                return Err(format!(
                    "`{text}`: the region percentages add up to {region}; they must add up to 1..=100"
                ));
            }
            Ok(Dist::Zoned(zones.into_iter().map(|(a, r)| (a, r as u8)).collect()))
        }
    }
}

impl FromStr for Dist {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let number = |t: &str, what: &str, eg: &str| -> Result<f64, String> {
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("`{s}`: {what} must be a number, as in {eg}"))
        };
        match s.split_once(':') {
            None if s == "uniform" => Ok(Dist::Uniform),
            None if s == "zipf" => Ok(Dist::Zipf(1.2)),
            Some(("zipf", t)) => {
                let theta = number(t, "zipf's theta", "zipf:1.2")?;
                if theta <= 0.0 {
                    return Err(format!("`{s}`: zipf's theta must be above 0"));
                }
                Ok(Dist::Zipf(theta))
            }
            Some(("pareto", h)) => {
                let h = number(h, "pareto's power", "pareto:0.9")?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("`{s}`: pareto's power must be above 0 and below 1, as in pareto:0.9"));
                }
                Ok(Dist::Pareto(h))
            }
            Some(("normal", d)) => {
                let d = number(d, "normal's deviation", "normal:10")?;
                if !(0.0..=100.0).contains(&d) {
                    return Err(format!("`{s}`: normal's deviation is a percentage, 0 to 100, as in normal:10"));
                }
                Ok(Dist::Normal(d))
            }
            Some(("zoned", z)) => Dist::zoned(s, z, false, |_| Ok(0)),
            Some(("zoned_abs", z)) => Dist::zoned(s, z, true, |t| parse_size(t).map(|b| b.0)),
            _ => Err(format!(
                "unknown distribution `{s}`; accepted: uniform, zipf, zipf:THETA, pareto:H, normal:DEV%, \
                 zoned:ACCESS%/REGION%:..., zoned_abs:ACCESS%/SIZE:..."
            )),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zones = |f: &mut fmt::Formatter<'_>, name: &str, z: Vec<String>| write!(f, "{name}:{}", z.join(":"));
        match self {
            Dist::Uniform => f.write_str("uniform"),
            Dist::Zipf(t) => write!(f, "zipf:{t}"),
            Dist::Pareto(h) => write!(f, "pareto:{h}"),
            Dist::Normal(d) => write!(f, "normal:{d}"),
            Dist::Zoned(z) => zones(f, "zoned", z.iter().map(|(a, r)| format!("{a}/{r}")).collect()),
            Dist::ZonedAbs(z) => zones(f, "zoned_abs", z.iter().map(|(a, r)| format!("{a}/{r}")).collect()),
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

/// One job, complete: every field has its value. A job is the fields every workload has (what
/// to run it on, how many threads, for how long, with which engine and open flags) plus its
/// workload's own fields ([`Workload`]), which live with that workload's module. In JSON and
/// job files they read as one flat table, with `workload` naming the workload (`block` when
/// absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub name: String,
    /// A file, a directory (one file per thread) or, with `device`, a block device.
    pub target: PathBuf,
    /// Size of each file; `None` means "the existing file's size".
    pub size: Option<Bytes>,
    pub seed: u64,
    pub engine: EngineKind,
    pub iodepth: u32,
    /// fio's batching of submissions and completions (iodepth_batch_submit and friends), for
    /// an engine whose row `batches`.
    #[serde(flatten)]
    pub batch: crate::engine::QueueBatch,
    /// A kernel thread polling the submission queue (`sqpoll`, `sqpoll_cpu`), for an engine
    /// whose row has `sqpoll` (io_uring).
    #[serde(flatten)]
    pub sqpoll: crate::engine::SqPoll,
    pub direct: bool,
    pub threads: u32,
    #[serde(with = "duration_serde::option")]
    pub runtime: Option<Duration>,
    #[serde(with = "duration_serde")]
    pub ramp: Duration,
    /// `--ramp auto`: the warm-up is judged (`steady::AUTO_RAMP`) and dropped; `ramp` is then 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ramp_auto: bool,
    /// How long after its phase's start the job starts (fio's startdelay); a range is drawn per
    /// thread. Absent (zero) in plans stored before it existed.
    #[serde(default, skip_serializing_if = "crate::Delay::is_zero")]
    pub start_delay: crate::Delay,
    /// When this job ends, the phase's other jobs end too (fio's exitall). Absent (off) in
    /// plans stored before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exit_all: bool,
    /// When this job ends, the run ends: the phase's other jobs, and later phases never start
    /// (fio's exit_what=all). Absent (off) in plans stored before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exit_run: bool,
    /// Create no file: a missing target is an error (fio's allow_file_create=0). Absent (off)
    /// in plans stored before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_create: bool,
    /// Search for the highest queue depth meeting a latency target (fio's latency_target);
    /// `None`: the job runs at its iodepth. Absent in plans stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<crate::LatencyTarget>,
    /// The CPUs the job's threads may run on (fio's cpus_allowed); `None`: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::cpus::Cpus>,
    /// The NUMA nodes its threads run on and their memory policy (fio's numa_*); `None`: the
    /// system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<crate::numa::Numa>,
    /// Its threads' I/O priority and nice value (fio's prio, prioclass, nice); `None`: as iolab runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<crate::prio::Sched>,
    /// Allow writing into an existing file iolab did not create.
    pub overwrite: bool,
    /// Allow a block device as target.
    pub device: bool,
    /// Data validation (`--verify`), when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifyJob>,
    /// End the phase once its figure is steady (`--steady-state`), when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady::SteadyState>,
    /// fio's per-I/O logs its threads write as they run (`--log-avg-msec 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_log: Option<crate::io_log::IoLog>,
    #[serde(flatten)]
    pub workload: Workload,
}

impl Job {
    /// The job in a few words, to tell runs apart in `iolab runs`: what it does, its block size,
    /// and whatever differs from iolab's defaults (`randwrite 4KiB direct io_uring QD32 4 threads
    /// fsync every 8`).
    pub fn describe(&self) -> String {
        let mut words = vec![self.workload.label()];
        match &self.workload {
            Workload::Block(b) => {
                if let Some(m) = Some(b.mix).filter(|_| b.rw.is_mixed()) {
                    words.push(format!("{m}% reads"));
                }
                words.push(b.bs.to_string());
                if let Some(w) = &b.write_bs {
                    words.push(format!("writes {w}"));
                }
                if self.direct {
                    words.push("direct".into());
                }
                match b.sync {
                    SyncMode::None => {}
                    SyncMode::Fsync | SyncMode::Fdatasync => words.push(format!("{} every {}", b.sync, b.fsync_every)),
                    other => words.push(other.to_string()),
                }
                if b.end_fsync {
                    words.push("end fsync".into());
                }
                if let Some(r) = b.rate {
                    words.push(format!("at {r}/s"));
                }
                if let Some(r) = b.rate_iops {
                    words.push(format!("at {r} IOPS"));
                }
            }
            Workload::Replay(_) => {}
            w => {
                if let Some(app) = w.app() {
                    app.describe(self, &mut words);
                }
            }
        }
        if self.engine != EngineKind::DEFAULT {
            words.push(self.engine.to_string());
        }
        if self.iodepth > 1 {
            words.push(format!("QD{}", self.iodepth));
        }
        match self.sqpoll {
            crate::engine::SqPoll { on: false, .. } => {}
            crate::engine::SqPoll { cpu: None, .. } => words.push("sqpoll".into()),
            crate::engine::SqPoll { cpu: Some(c), .. } => words.push(format!("sqpoll on CPU {c}")),
        }
        if self.threads > 1 && self.workload.app().is_none_or(|a| a.threads_in_words()) {
            words.push(format!("{} threads", self.threads));
        }
        if let Some(v) = &self.verify {
            words.push(v.describe());
        }
        match &self.steady {
            Some(crate::steady::SteadyState::Snia(s)) => words.push(format!("steady snia {}s rounds", s.round_s())),
            Some(crate::steady::SteadyState::Fio(f)) => words.push(format!("steady {}", f.criterion)),
            None => {}
        }
        words.join(" ")
    }

    /// The directories a personality makes under its target directory (relative to it) and
    /// removes at its end: one per thread, `iolab.<job>.<thread>`, where each thread works
    /// alone (PostMark's pools, the redo log's creators), or one for the job, `iolab.<job>`,
    /// where its threads share what is in it (maildir's mailboxes, varmail's file set,
    /// bonnie++'s file and its seekers). Empty for the block workload, replays and a personality
    /// that works in the target itself.
    pub fn own_dirs(&self) -> Vec<String> {
        match self.workload.app().map(|a| a.dirs()) {
            Some(OwnDirs::PerThread) => (0..self.threads).map(|t| format!("iolab.{}.{t}", self.name)).collect(),
            Some(OwnDirs::PerJob) => vec![format!("iolab.{}", self.name)],
            Some(OwnDirs::Target) | None => Vec::new(),
        }
    }

    /// What a reader of the results should know about how the job was run that the figures
    /// do not say (a discarded start shortened for a short run), one sentence each.
    pub fn notes(&self) -> Vec<String> {
        self.workload.app().map(|a| a.notes(self)).unwrap_or_default()
    }
}

impl Workload {
    /// A short description for tables and default phase names (`randrw`, `write`, `postmark`...).
    pub fn label(&self) -> String {
        match self {
            Workload::Block(b) => b.rw.to_string(),
            Workload::Replay(r) => r.describe(),
            w => w.app().map(|a| a.name().to_string()).unwrap_or_default(),
        }
    }
    /// Whether it reads what is in its files (so they must hold data before the window).
    pub fn needs_data(&self) -> bool {
        match self {
            // A random writer's file is laid out unless it is preallocated instead (fio's way).
            Workload::Block(b) => {
                b.rw.reads()
                    || (b.rw.is_random() && b.prealloc.is_none())
                    || b.prealloc == Some(crate::prealloc::Prealloc::Data)
            }
            // A block-level trace's replay reads its target (laid out as a block job's; a
            // call trace's replay prepares its own files and is never laid out).
            Workload::Replay(_) => true,
            // A personality makes its own files.
            _ => false,
        }
    }
    /// Whether it writes into its files.
    pub fn writes(&self) -> bool {
        match self {
            Workload::Block(b) => b.rw.writes(),
            _ => true,
        }
    }
    /// Whether it creates its own files in its own directory under a directory target (a
    /// personality), rather than reading and writing the target's files.
    pub fn makes_own_files(&self) -> bool {
        self.app().is_some()
    }
    /// The job's runtime, `asked` being `--runtime` (a personality may have its own default).
    pub fn runtime(&self, asked: Option<std::time::Duration>) -> Option<std::time::Duration> {
        self.app().map_or(asked, |a| a.runtime(asked))
    }
    /// Bytes its largest files take (a personality's), checked before anything is written.
    pub fn space(&self) -> u64 {
        self.app().map_or(0, |a| a.space())
    }
    /// The block workload's options, if that is the workload.
    pub fn block(&self) -> Option<&BlockJob> {
        match self {
            Workload::Block(b) => Some(b),
            _ => None,
        }
    }
}

impl Job {
    /// The rules a job must follow, each naming its field: the common ones here, the
    /// workload's in its module.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&self.name, field, message));
        if self.name.is_empty() || self.name.contains(['/', '\0']) {
            return err("name", "a job name must be non-empty and contain no `/`".into());
        }
        if self.target.as_os_str().is_empty() {
            return err("target", "no target given; name a file, a directory or (with --device) a block device".into());
        }
        if self.iodepth == 0 || self.iodepth > 4096 {
            return err("iodepth", format!("{} is out of range; accepted: 1 to 4096", self.iodepth));
        }
        let caps = self.engine.caps();
        if self.iodepth > caps.max_depth {
            let deepest = EngineKind::deepest();
            return err(
                "iodepth",
                match caps.max_depth {
                    1 => format!(
                        "engine `{}` runs one I/O at a time; use --engine {deepest} for a queue depth above 1",
                        self.engine
                    ),
                    n => format!(
                        "engine `{}` takes at most {n} I/Os in flight; use --engine {deepest} for more",
                        self.engine
                    ),
                },
            );
        }
        for (key, n) in self.batch.set() {
            if !caps.batches {
                let batching: Vec<&str> =
                    EngineKind::KINDS.iter().filter(|k| k.caps().batches).map(|k| k.as_str()).collect();
                return err(
                    key,
                    format!("engine `{}` does not batch; only {} takes it", self.engine, batching.join(", ")),
                );
            }
            if n > self.iodepth {
                return err(
                    key,
                    format!("{n} is above the queue depth ({}); accepted: 0 to {}", self.iodepth, self.iodepth),
                );
            }
        }
        if self.sqpoll.on && !caps.sqpoll {
            let polled: Vec<&str> = EngineKind::KINDS.iter().filter(|k| k.caps().sqpoll).map(|k| k.as_str()).collect();
            return err(
                "sqpoll",
                format!(
                    "engine `{}` has no submission queue for a kernel thread to poll; use --engine {} or drop --sqpoll",
                    self.engine,
                    polled.join(", ")
                ),
            );
        }
        if let (true, Err(why)) = (self.direct, caps.direct) {
            return err("direct", format!("{why}; drop --direct or pick another engine"));
        }
        if self.threads == 0 || self.threads > 4096 {
            return err("threads", format!("{} is out of range; accepted: 1 to 4096", self.threads));
        }
        // A size-bounded block job with an io_size ramps within it: the ramp's I/O counts
        // toward the io_size and is not reported (fio's ramp_time on a size-bounded job).
        let sized = self.workload.block().is_some_and(|b| b.io_size.is_some());
        if !self.ramp.is_zero() && self.runtime.is_none() && !sized {
            return err(
                "ramp",
                "a ramp needs a time-bounded run or an io_size its I/O counts toward; add a runtime or an io_size"
                    .into(),
            );
        }
        if let Some(r) = self.runtime {
            if r.is_zero() {
                return err("runtime", "a runtime of 0 measures nothing".into());
            }
        }
        if self.ramp_auto && self.runtime.is_none() {
            return err(
                "ramp",
                "--ramp auto judges a time-bounded run's warm-up (the runtime includes it); add a runtime".into(),
            );
        }
        if self.ramp_auto && self.steady.is_some() {
            return err(
                "ramp",
                "--ramp auto and --steady-state both decide which seconds count; give one (--steady-state snia reports the steady window's figures)".into(),
            );
        }
        if let Some(v) = &self.verify {
            v.validate(self)?;
        }
        match &self.workload {
            Workload::Block(b) => b.validate(self),
            Workload::Replay(_) => Ok(()),
            w => w.app().map_or(Ok(()), |a| a.validate(self)),
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
                // Validated reads check keys a journal, an earlier validated phase or (reading
                // another node's file) the coordinator's handed map knows.
                let reads_only = j.workload.block().is_some_and(|b| !b.rw.writes());
                if j.verify.as_ref().is_some_and(|v| v.journal.is_none() && v.peer.is_none()) && reads_only {
                    let mut earlier = self.phases.iter().take_while(|q| !std::ptr::eq(*q, p)).flat_map(|q| &q.jobs);
                    if !earlier.any(|e| e.verify.is_some() && e.target == j.target) {
                        return Err(SpecError::field(
                            &j.name,
                            "verify",
                            "this job only reads: validating reads needs the key map of what wrote the file (--journal DIR, or an earlier phase validating the same target)",
                        ));
                    }
                }
            }
            // The phase is judged once, on its jobs' summed figure: their criteria must agree.
            let mut criteria = p.jobs.iter().filter_map(|j| j.steady.map(|s| (j, s)));
            if let Some((first, c)) = criteria.next() {
                if let Some((j, _)) = criteria.find(|(_, o)| *o != c) {
                    return Err(SpecError::field(
                        &j.name,
                        "steady_state",
                        format!(
                            "phase `{}` is judged once on its jobs' summed figure; this job's criterion differs from job `{}`'s ({}); give them the same or set it on one job",
                            p.name,
                            first.name,
                            c.describe()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A phase's steady-state criterion: the one its jobs name (they agree, see `validate`).
    pub fn steady_of(phase: &Phase) -> Option<crate::steady::SteadyState> {
        phase.jobs.iter().find_map(|j| j.steady)
    }
}
