//! The block workload's own options: access pattern, block sizes, mix, stride, distribution,
//! flushes, pacing and data compressibility, with their rules and defaults. A personality's
//! options live in a module like this one, beside it.

use crate::job::{BlockSizes, Dist, Job, Rw, SyncMode};
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockJob {
    /// Bytes each thread transfers in a size-bounded run; `None` means `size`.
    pub io_size: Option<Bytes>,
    /// Where the job's region starts in the file (fio's offset): I/O falls in
    /// [offset, offset + size). Absent in plans stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<Bytes>,
    /// Thread N's region starts N × this many bytes further in (fio's offset_increment).
    /// (Byte counts without `Bytes`' room for a zero keep the block job small.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_increment: Option<NonZeroU64>,
    /// Random offsets are multiples of this many bytes (fio's blockalign); `None`: the
    /// smallest block size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align: Option<NonZeroU64>,
    /// Several files per thread (`--nrfiles`); `None`: the job's one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Box<crate::fileset::FileSet>>,
    pub rw: Rw,
    /// Read percentage of a mixed pattern.
    pub mix: u8,
    pub bs: BlockSizes,
    /// Sequential access that advances by `stride` after each block (a redo log's initialisation).
    pub stride: Option<Bytes>,
    /// Sequential access backwards: each I/O starts this far before the end of the one before
    /// (fio's `rw=read:-N`), wrapping from the region's start to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<Bytes>,
    pub dist: Dist,
    /// Uniform random offsets visit each block once per pass (fio's random map).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_map: bool,
    /// Strided zones (fio's zonemode=strided): where in the region the I/O goes, zone by zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<Box<Zones>>,
    pub sync: SyncMode,
    /// With `sync = fsync|fdatasync`: flush after this many writes.
    pub fsync_every: u64,
    pub end_fsync: bool,
    /// Open-loop bandwidth cap for the job (bytes/s), shared among its threads.
    pub rate: Option<Bytes>,
    /// Open-loop IOPS for the job, shared among its threads.
    pub rate_iops: Option<u64>,
    /// Percent of each written block that compresses (0 = incompressible).
    pub compressibility: u8,
    /// New data in the buffer before every write (jobs stored before this option read as off).
    #[serde(default)]
    pub refill_buffers: bool,
    /// Drop the target's cached pages before each phase and, on a time-based or looping
    /// buffered job on one file, as each new pass over it starts (fio's invalidate; jobs stored
    /// before this option read as off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalidate: bool,
    /// Leave the target's holes and unwritten extents as they are and count the reads that
    /// fall in them (`--keep-holes`), instead of filling them before the window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_holes: bool,
    /// Write until the filesystem is full (`--fill-fs`, fio's fill_device): ENOSPC or EDQUOT
    /// ends the job rather than failing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fill_fs: bool,
    /// How a new file the job only writes is made before its phase (`--preallocate`, fio's
    /// fallocate); `None`: laid out with data for random writes, extended by sequential ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prealloc: Option<crate::prealloc::Prealloc>,
    /// Passes over the job's region in a size-bounded run (fio's loops; `None`: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loops: Option<u64>,
    /// Each thread stops after this many reads and writes, if nothing ends it first (fio's
    /// number_ios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ios: Option<u64>,
    /// Think time between I/Os (fio's thinktime and its family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<Box<crate::think::Think>>,
    /// Errors the job goes on after, counted (fio's continue_on_error and ignore_error;
    /// `None`: the first error ends the job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<Box<crate::on_error::OnError>>,
    /// The writes' block sizes when they differ from `bs` (the reads'): fio's `bs=4k,64k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bs: Option<BlockSizes>,
    /// Pacing beyond `rate`/`rate_iops`: per direction, a Poisson process, a floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<Box<crate::pace::Pacing>>,
    /// The job's share of a flow between jobs (fio's flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Box<crate::flow::Flow>>,
    /// Priorities per request for shares of the I/Os (fio's cmdprio_*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdprio: Option<Box<crate::prio::CmdPrio>>,
    /// Writes that repeat an earlier block's data (fio's dedupe_*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<Dedupe>,
    /// The kernel's advice on the file (posix_fadvise), given as each thread opens it.
    #[serde(default, skip_serializing_if = "Fadvise::is_none")]
    pub fadvise: Fadvise,
}

/// What a block job tells the kernel of how it reads its file (`--fadvise`, fio's fadvise_hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fadvise {
    /// Nothing (the kernel's readahead as it sees fit).
    #[default]
    None,
    /// RANDOM for random offsets, SEQUENTIAL for sequential ones (fio's fadvise_hint=1).
    Pattern,
    Random,
    Sequential,
}

impl Fadvise {
    fn is_none(&self) -> bool {
        *self == Fadvise::None
    }
    /// The advice for a job going `rw` (`None`: none).
    pub fn random_for(self, rw: Rw) -> Option<bool> {
        match self {
            Fadvise::None => None,
            Fadvise::Pattern => Some(rw.is_random()),
            Fadvise::Random => Some(true),
            Fadvise::Sequential => Some(false),
        }
    }
}

impl std::str::FromStr for Fadvise {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Fadvise::None),
            "pattern" => Ok(Fadvise::Pattern),
            "random" => Ok(Fadvise::Random),
            "sequential" => Ok(Fadvise::Sequential),
            other => Err(format!(
                "`{other}`: a hint is pattern (random or sequential as the job goes), random, sequential or none"
            )),
        }
    }
}

/// A share of the writes that repeat earlier data (`--dedupe`, `--dedupe-set`): each repeats
/// the last unique write, or, with a working set, one of the first unique blocks (fio's
/// dedupe_mode repeat and working_set, get_buf_state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedupe {
    pub pct: u8,
    /// The working set, as a percentage of the job's size (`None`: repeat the last unique).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set: Option<u8>,
    /// The working set is shared: drawn from one sequence every job that sets this draws from
    /// (its seed's), not from the thread's own first unique blocks (fio's dedupe_global).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global: bool,
}

/// fio's strided zones (zonemode=strided; io_u.c, setup_strided_zone_mode): `size` bytes of
/// I/O in a zone of `range` bytes from its start, then the next zone `range + skip` bytes
/// further, from the region's start again once a zone would start past its end. A sequential
/// job goes through each zone from its start (around it again when `size` is more than
/// `range`); a random one draws its offsets within the zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zones {
    pub size: Bytes,
    pub range: Bytes,
    #[serde(default)]
    pub skip: Bytes,
}

impl Zones {
    fn validate(&self, b: &BlockJob, job: &Job) -> Result<(), (&'static str, String)> {
        if self.size.0 == 0 || self.range.0 == 0 {
            return Err(("zone_size", "0: a zone's size and range are at least one block".into()));
        }
        if self.range < b.max_bs() {
            return Err((
                "zone_range",
                format!(
                    "{} is smaller than the block size {}: a zone holds at least one block",
                    self.range,
                    b.max_bs()
                ),
            ));
        }
        if b.stride.is_some() || b.backward.is_some() || b.files.is_some() {
            return Err(("zone_size", "strided zones go with a plain sequential or random pattern on one file (not --stride, --backward or --nrfiles)".into()));
        }
        if b.rw.is_random() && b.dist != Dist::Uniform {
            return Err((
                "zone_size",
                format!("strided zones draw uniform random offsets within each zone, not {}", b.dist),
            ));
        }
        if let Some(s) = job.size {
            if s < self.range {
                return Err(("zone_range", format!("{} is larger than the region (--size {s})", self.range)));
            }
        }
        Ok(())
    }
}

impl BlockJob {
    /// The block options of a patch, with iolab's defaults where it says nothing.
    pub(crate) fn from_patch(p: &JobPatch, name: &str) -> Result<BlockJob, SpecError> {
        if p.nrfiles == Some(0) {
            return Err(SpecError::field(
                name,
                "nrfiles",
                "0: a job works on at least one file (fio refuses nrfiles=0 too); give 1 or more",
            ));
        }
        if p.nrfiles.unwrap_or(1) < 2 && (p.file_sizes.is_some() || p.file_service.is_some() || p.file_names.is_some())
        {
            return Err(SpecError::field(
                name,
                "nrfiles",
                "--file-sizes, --file-service and --file-names go with --nrfiles 2 or more (one file takes --size)",
            ));
        }
        let rw = p.rw.unwrap_or(Rw::Read);
        let implied = if rw.reads() { 100 } else { 0 };
        // A resolved job's own mix (100 for reads, 0 for writes) reads back; any other is a mistake.
        if p.mix.is_some_and(|m| m != implied) && !rw.is_mixed() {
            return Err(SpecError::field(
                name,
                "mix",
                format!("a read percentage applies to readwrite and randrw, not `{rw}`"),
            ));
        }
        Ok(BlockJob {
            io_size: p.io_size,
            offset: p.offset.filter(|o| o.0 > 0),
            offset_increment: p.offset_increment.and_then(|o| NonZeroU64::new(o.0)),
            align: match p.align {
                Some(Bytes(0)) => {
                    return Err(SpecError::field(name, "align", "0: an alignment is between 1 byte and 1 GiB"))
                }
                a => a.and_then(|a| NonZeroU64::new(a.0)),
            },
            files: p.nrfiles.filter(|n| *n > 1).map(|count| {
                Box::new(crate::fileset::FileSet {
                    count,
                    size: p.file_sizes,
                    service: p.file_service.unwrap_or(crate::fileset::FileService::RoundRobin(1)),
                    names: p.file_names.clone().unwrap_or_else(|| crate::fileset::DEFAULT_NAMES.to_string()),
                })
            }),
            rw,
            mix: p.mix.unwrap_or(if rw.is_mixed() { 50 } else { implied }),
            bs: p.bs.clone().unwrap_or(BlockSizes::single(Bytes::kib(4))),
            stride: p.stride,
            backward: p.backward,
            dist: p.dist.clone().unwrap_or(Dist::Uniform),
            random_map: p.random_map.unwrap_or(false),
            zones: match (p.zone_size, p.zone_range, p.zone_skip) {
                (None, None, None) => None,
                (None, _, _) => {
                    return Err(SpecError::field(
                        name,
                        "zone_size",
                        "--zone-range and --zone-skip shape strided zones: give --zone-size too (the bytes of I/O in each zone)",
                    ))
                }
                (Some(size), range, skip) => {
                    Some(Box::new(Zones { size, range: range.unwrap_or(size), skip: skip.unwrap_or(Bytes(0)) }))
                }
            },
            sync: p.sync.unwrap_or(if p.fsync_every.is_some() { SyncMode::Fsync } else { SyncMode::None }),
            fsync_every: p.fsync_every.unwrap_or(1),
            end_fsync: p.end_fsync.unwrap_or(false),
            rate: p.rate,
            rate_iops: p.rate_iops,
            compressibility: p.compressibility.unwrap_or(0),
            refill_buffers: p.refill_buffers.unwrap_or(false),
            invalidate: p.invalidate.unwrap_or(false),
            keep_holes: p.keep_holes.unwrap_or(false),
            fill_fs: p.fill_fs.unwrap_or(false),
            prealloc: p.preallocate,
            loops: p.loops.filter(|n| *n != 1),
            max_ios: p.max_ios,
            think: think_of(p, name)?.map(Box::new),
            on_error: match (p.continue_on_error, &p.ignore_error) {
                (None, Some(_)) => {
                    return Err(SpecError::field(
                        name,
                        "ignore_error",
                        "lists the errnos --continue-on-error goes on after; give --continue-on-error too",
                    ))
                }
                (on, ignore) => crate::on_error::OnError::of(on, ignore.as_ref()).map(Box::new),
            },
            write_bs: p.write_bs.clone().filter(|w| Some(w) != p.bs.as_ref()),
            pace: crate::pace::of(p, name)?.map(Box::new),
            flow: crate::flow::of(p, name)?.map(Box::new),
            cmdprio: p.cmdprio.clone().map(Box::new),
            fadvise: p.fadvise.unwrap_or_default(),
            dedupe: match (p.dedupe, p.dedupe_set) {
                (Some(_), None) if p.dedupe_global == Some(true) => {
                    return Err(SpecError::field(
                        name,
                        "dedupe_global",
                        "--dedupe-global shares --dedupe-set's working set; give --dedupe-set PCT too",
                    ))
                }
                (Some(pct), set) => Some(Dedupe { pct, working_set: set, global: p.dedupe_global.unwrap_or(false) }),
                (None, Some(_)) => {
                    return Err(SpecError::field(
                        name,
                        "dedupe_set",
                        "--dedupe-set is where --dedupe's repeats come from; give --dedupe PCT too",
                    ))
                }
                (None, _) if p.dedupe_global.is_some() => {
                    return Err(SpecError::field(
                        name,
                        "dedupe_global",
                        "--dedupe-global shares --dedupe-set's working set; give --dedupe PCT and --dedupe-set PCT too",
                    ))
                }
                (None, None) => None,
            },
        })
    }

    /// The block workload's rules (the job's common fields are given for those that involve them).
    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        for (field, bs) in [("bs", &self.bs)].into_iter().chain(self.write_bs.as_ref().map(|w| ("write_bs", w))) {
            if bs.0.iter().any(|(b, _)| b.0 == 0 || b.0 > 1 << 30) {
                return err(field, "each block size must be between 1 byte and 1 GiB".into());
            }
            if job.direct && bs.0.iter().any(|(b, _)| b.0 % 512 != 0) {
                return err(field, format!("`{bs}`: with direct I/O every block size must be a multiple of 512 bytes (the device's logical block)"));
            }
        }
        if self.write_bs.is_some() {
            if !self.rw.writes() {
                return err("write_bs", format!("`{}` does not write; give the block size with --bs", self.rw));
            }
            if self.stride.is_some() {
                return err("write_bs", "a stride takes one block size (--bs)".into());
            }
            if job.verify.is_some() {
                return err("write_bs", "validation keys blocks by one size list; give --bs only".into());
            }
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
        if self.dedupe.is_some() && job.verify.is_some() {
            return err("dedupe", "validation stamps every sector with its place and time, so no two blocks are alike: give --dedupe or --verify".into());
        }
        if self.cmdprio.is_some() && job.engine.caps().synchronous {
            return err("cmdprio", format!("a priority per request rides in io_uring's SQE or libaio's iocb; {} makes each call itself (give --engine io_uring or libaio, or --ioprio for the job's threads)", job.engine));
        }
        if self.random_map && (!self.rw.is_random() || self.dist != Dist::Uniform) {
            return err("random_map", format!("a random map keeps uniform random offsets (randread, randwrite, randrw, randtrim with --dist uniform), not `{}` with {}", self.rw, self.dist));
        }
        if let Some(z) = &self.zones {
            z.validate(self, job).map_err(|(field, m)| SpecError::field(&job.name, field, m))?;
        }
        if let Some(back) = self.backward {
            if self.rw.is_random() || self.rw.is_mixed() || self.stride.is_some() {
                return err(
                    "backward",
                    format!(
                        "going backwards applies to read and write, alone (not `{}`{})",
                        self.rw,
                        if self.stride.is_some() { " with a stride" } else { "" }
                    ),
                );
            }
            if back <= self.max_bs() {
                return err("backward", format!("{back} is not more than the block size {}: each I/O would not start before the one before it (a forward stride is --stride)", self.max_bs()));
            }
        }
        if let Some(s) = job.size {
            if s.0 < self.max_bs().0 {
                return err("size", format!("size {s} is smaller than the block size {}", self.max_bs()));
            }
        }
        if let Some(o) = self.offset {
            if job.direct && o.0 % 512 != 0 {
                return err("offset", format!("{o}: with direct I/O the offset must be a multiple of 512 bytes"));
            }
        }
        self.check_files(job)?;
        if let Some(i) = self.offset_increment.map(|i| Bytes(i.get())) {
            if job.direct && i.0 % 512 != 0 {
                return err(
                    "offset_increment",
                    format!("{i}: with direct I/O each thread's offset must be a multiple of 512 bytes"),
                );
            }
        }
        if let Some(a) = self.align.map(|a| Bytes(a.get())) {
            if a.0 > 1 << 30 {
                return err("align", format!("{a}: an alignment is between 1 byte and 1 GiB"));
            }
            if job.direct && a.0 % 512 != 0 {
                return err("align", format!("{a}: with direct I/O random offsets must be multiples of 512 bytes"));
            }
        }
        if self.io_size == Some(Bytes(0)) {
            return err("io_size", "an io_size of 0 transfers nothing; leave it out for one pass over --size".into());
        }
        if self.compressibility > 100 {
            return err("compressibility", format!("{} is not a percentage; accepted: 0 to 100", self.compressibility));
        }
        if matches!(self.sync, SyncMode::Fsync | SyncMode::Fdatasync) && self.fsync_every == 0 {
            return err("fsync_every", "must be at least 1 with sync = fsync or fdatasync".into());
        }
        if self.rate == Some(Bytes(0)) || self.rate_iops == Some(0) {
            return err("rate", "a rate of 0 issues nothing; leave it out to run flat out".into());
        }
        if self.rate.is_some() && self.rate_iops.is_some() {
            return err("rate", "give either a bandwidth rate or an IOPS rate, not both".into());
        }
        if let Some(pace) = &self.pace {
            let total = match (self.rate, self.rate_iops) {
                (Some(b), _) => Some(crate::pace::Rate::Bytes(b)),
                (_, Some(n)) => Some(crate::pace::Rate::Iops(n)),
                _ => None,
            };
            pace.check(&job.name, self.rw, total)?;
        }
        if self.loops == Some(0) {
            return err("loops", "0 passes do nothing; give at least 1".into());
        }
        if self.max_ios == Some(0) {
            return err("max_ios", "0 I/Os do nothing; leave it out, or give at least 1".into());
        }
        if let Some(t) = &self.think {
            t.check(&job.name)?;
        }
        self.check_trims_and_fill(job)
    }

    /// The rules of several files per thread (`--nrfiles`).
    fn check_files(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if let Some(f) = &self.files {
            f.check(job.threads).map_err(|m| SpecError::field(&job.name, "nrfiles", m))?;
            if job.verify.is_some() {
                return err("nrfiles", "validation follows one file per thread; drop --verify or --nrfiles".into());
            }
            if self.fill_fs {
                return err("nrfiles", "--fill-fs fills one file; drop --nrfiles".into());
            }
            if self.max_ios.is_some() {
                return err("nrfiles", "--max-ios counts one file's I/Os; drop --max-ios or --nrfiles".into());
            }
            if f.size.is_none() && job.size.is_none() {
                return err(
                    "nrfiles",
                    "each file needs a size: give --file-sizes, or --size to share among them".into(),
                );
            }
        }
        Ok(())
    }

    /// What goes with trims (nothing to check, dedupe or fill) and with filling the filesystem.
    fn check_trims_and_fill(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.rw.trims() {
            // What a trim leaves is the device's to say (zeros, old data or either), so there is
            // nothing to check, dedupe or fill.
            let with = if job.verify.is_some() {
                Some("verify")
            } else if self.dedupe.is_some() {
                Some("dedupe")
            } else if self.fill_fs {
                Some("fill_fs")
            } else {
                None
            };
            if let Some(field) = with {
                return err(
                    field,
                    format!(
                        "`{}` trims, and a trimmed range holds what the device says; drop --{}",
                        self.rw,
                        field.replace('_', "-")
                    ),
                );
            }
        }
        if self.fill_fs && (self.rw != Rw::Write || self.stride.is_some()) {
            return err(
                "fill_fs",
                format!(
                    "`{}`: filling the filesystem takes sequential writes (--rw write), as fio's fill_device",
                    self.rw
                ),
            );
        }
        Ok(())
    }

    /// The writes' block sizes (`write_bs`, else `bs`).
    pub fn write_sizes(&self) -> &BlockSizes {
        self.write_bs.as_ref().unwrap_or(&self.bs)
    }

    /// The largest I/O the job makes, either way.
    pub fn max_bs(&self) -> Bytes {
        self.bs.max().max(self.write_sizes().max())
    }

    /// The mean I/O size, reads and writes weighed by the mix.
    pub fn mean_bs(&self) -> f64 {
        match &self.write_bs {
            None => self.bs.mean(),
            Some(w) if !self.rw.reads() => w.mean(),
            Some(w) => {
                let r = self.mix as f64 / 100.0;
                r * self.bs.mean() + (1.0 - r) * w.mean()
            }
        }
    }

    /// Where the job's region starts in its file, in bytes.
    pub fn offset(&self) -> u64 {
        self.offset.map_or(0, |o| o.0)
    }

    /// Validation's key block (`--verify`): the smallest block size, or a smaller multiple of
    /// 512 that the job's offset and offset_increment are multiples of too (fio's
    /// cross-stripe-verify writes 16k blocks from offset 120k: 8 KiB key blocks), so every I/O
    /// is whole key blocks.
    pub fn key_block(&self) -> u64 {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let min = self.bs.min().0;
        let key = [self.offset(), self.offset_increment.map_or(0, |i| i.get())].into_iter().fold(min, gcd);
        if key.is_multiple_of(512) {
            key
        } else {
            min
        }
    }

    /// Where thread `thread`'s region starts in its file (`offset` + thread × `offset_increment`).
    pub fn offset_of(&self, thread: u32) -> u64 {
        self.offset().saturating_add(self.offset_increment.map_or(0, |i| i.get().saturating_mul(thread as u64)))
    }

    /// The effective fsync cadence (0 = never during the run).
    pub fn flush_every(&self) -> u64 {
        match self.sync {
            SyncMode::Fsync | SyncMode::Fdatasync => self.fsync_every,
            _ => 0,
        }
    }

    /// Bytes one thread transfers in a size-bounded run over a file of `size` bytes.
    pub fn budget_bytes(&self, size: u64) -> u64 {
        match (self.io_size, self.stride) {
            (Some(b), _) => b.0,
            (None, Some(stride)) => size.div_ceil(stride.0) * self.bs.max().0,
            (None, None) => size,
        }
        .saturating_mul(self.loops.unwrap_or(1))
    }
}

/// The think time a patch asks for: `think` and the options that shape it (each alone is a
/// mistake, named).
fn think_of(p: &JobPatch, name: &str) -> Result<Option<crate::think::Think>, SpecError> {
    let Some(time) = p.think else {
        let stray = [
            ("think_every", p.think_every.is_some()),
            ("think_spin", p.think_spin.is_some()),
            ("think_on_issue", p.think_on_issue.is_some()),
            ("think_iotime", p.think_iotime.is_some()),
        ];
        if let Some((k, _)) = stray.iter().find(|(_, set)| *set) {
            return Err(SpecError::field(
                name,
                k,
                format!("--{} shapes a think time; give --think too", k.replace('_', "-")),
            ));
        }
        return Ok(None);
    };
    Ok(Some(crate::think::Think {
        time,
        every: p.think_every,
        spin: p.think_spin.unwrap_or_default(),
        on_issue: p.think_on_issue.unwrap_or(false),
        iotime: p.think_iotime,
    }))
}

#[cfg(test)]
mod tests {
    use crate::{Bytes, JobPatch};

    #[test]
    fn a_shared_working_set_needs_a_working_set() {
        let p = JobPatch { target: Some("/d/f".into()), dedupe_global: Some(true), ..Default::default() };
        let e = p.resolve("j").unwrap_err().to_string();
        assert!(e.contains("dedupe_global") && e.contains("--dedupe PCT"), "{e}");
        let p = JobPatch { dedupe: Some(50), ..p };
        let e = p.resolve("j").unwrap_err().to_string();
        assert!(e.contains("--dedupe-set PCT"), "{e}");
        let j = JobPatch { dedupe_set: Some(10), ..p }.resolve("j").unwrap();
        assert!(j.workload.block().unwrap().dedupe.unwrap().global);
    }

    #[test]
    fn nrfiles_0_is_refused_as_fio_refuses_it() {
        let p = |n| JobPatch {
            target: Some("/data".into()),
            size: Some(Bytes::mib(1)),
            nrfiles: Some(n),
            ..Default::default()
        };
        let e = p(0).resolve("t").unwrap_err().to_string();
        assert!(e.contains("nrfiles") && e.contains("0: a job works on at least one file"), "{e}");
        assert!(p(1).resolve("t").is_ok());
    }
}
