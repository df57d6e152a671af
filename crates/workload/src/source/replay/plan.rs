//! A trace read as a stream into what each replay thread will do: the recorded calls on files
//! under the traced data directory (`strip`, which the target stands for), per thread in
//! program order; the waits that order threads only where they share a path or its directory
//! (ROOT/ARTC, SOSP'13); which thread opens each opening and which take it from that thread (a
//! shared descriptor keeps one file position); and what the trace recorded, class by class,
//! with what was left out and why. A trace is untrusted input: the plan refuses one that would
//! wait too long, need too large a buffer, too many threads or too much memory
//! ([`ReplayLimits`]), naming the option that allows it.

use super::blocks::{self, BlockPlan, Devices};
use super::rings::{self, Gathered, RingStep, Rings};
use crate::error::SourceError;
use iolab_model::OpClass;
use iolab_spec::{EngineKind, ReplayJob, ReplayLimits, Timing};
use iolab_trace::format::{oflags, AsyncKind, AsyncOp, FormatError, Kind, Op, Record, NO_FILE};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The step's opening is one another thread opened: take it (a duplicate of that thread's
/// descriptor, the same file position) before the call.
pub const ADOPT: u8 = 1;
/// The thread's last use of an opening it did not close: let go of it after the call.
pub const DROP_AFTER: u8 = 2;
/// A call asking for more than `--max-buffer` that moved no more: replayed asking for the buffer.
pub const CUT: u8 = 4;
/// An asynchronous operation (io_uring, libaio): issued without waiting for the thread's
/// earlier ones, when its ring allows ([`ThreadPlan::rings`]).
pub const ASYNC: u8 = 8;

/// What the plan counts per replayed call for memory (the step, its share of waits, the merge
/// order while planning).
pub const STEP_BYTES: u64 = 112;

/// One recorded call to replay.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub op: Op,
    /// This step's waits: `waits[start..start + len]` of its thread.
    pub waits_start: u32,
    pub waits_len: u8,
    /// [`ADOPT`], [`DROP_AFTER`], [`CUT`].
    pub flags: u8,
    /// The time the thread waited for a CPU in the recorded gap before it (since the previous
    /// replayed call's end), ns: not think time (an eBPF trace of format version 3; else 0).
    pub cpu_wait_ns: u64,
}

/// A traced thread's replay.
#[derive(Debug, Clone, Default)]
pub struct ThreadPlan {
    pub tid: u32,
    pub tgid: u32,
    pub steps: Vec<Step>,
    /// (ordering key, rank): the step waits until the key's `rank` earlier calls completed.
    pub waits: Vec<(u32, u64)>,
    /// What each [`ASYNC`] step waits for on its ring, in the order of those steps.
    pub rings: Vec<RingStep>,
    /// Openings this thread uses that no replayed call opens (opened before the trace began):
    /// opened at setup, untimed, shared with the other threads that use them.
    pub setup: Vec<u32>,
    pub buffer_len: usize,
    /// The smallest gap between two of the thread's recorded calls: what the tracer itself
    /// costs between calls (its stops at a call's exit and the next call's entry), which the
    /// program cannot have been faster than. Think time is each gap less this.
    pub tracer_gap_ns: u64,
    /// The recorded time after this thread's last step to the trace's last call (the
    /// program's wind-up: its other calls, its exit), less the thread's CPU waits in it: think
    /// time the thread waits after its last step. Only the thread whose step ends last has it.
    pub tail_ns: u64,
}

/// A file (an opening) the replay touches, under the target.
#[derive(Debug, Clone)]
pub struct ReplayFile {
    pub rel: PathBuf,
    /// Flags of its opening (0 when opened before the trace).
    pub flags: u32,
    pub before: bool,
    /// Whether a replayed call reads, or writes, through it (how an opening made before the
    /// trace, whose flags are unknown, is opened).
    pub reads: bool,
    pub writes: bool,
}

/// What the trace recorded of one class, on the files the replay covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorded {
    pub ops: u64,
    pub bytes: u64,
    pub dur_ns: u64,
}

/// What a whole trace replays as.
#[derive(Debug, Default)]
pub struct ReplayPlan {
    pub threads: Vec<ThreadPlan>,
    pub files: HashMap<u32, ReplayFile>,
    /// unlink/rename/mkdir path ids → path under the target.
    pub paths: HashMap<u32, PathBuf>,
    /// The traced prefix replaced by the target.
    pub strip: PathBuf,
    /// Ordering keys (paths several threads use).
    pub keys: u32,
    /// Openings used by several threads → how many threads take a duplicate of the one that
    /// opened it (or of the first one opened at setup).
    pub takers: HashMap<u32, u32>,
    pub recorded: BTreeMap<OpClass, Recorded>,
    /// Recorded calls not replayed: why → call name → count.
    pub left_out: BTreeMap<String, BTreeMap<String, u64>>,
    /// Calls replayed other than recorded: how → count.
    pub adjusted: BTreeMap<String, u64>,
    /// The first replayed call's recorded start, ns since the trace's start.
    pub origin_ns: u64,
    /// From the first replayed call's start to the last one's end, ns.
    pub recorded_span_ns: u64,
    /// The recorded time before the first replayed call, from the trace's first call (the
    /// program's start-up: its loader, its other calls), ns. Think, scaled and recorded timing
    /// wait it before the first step, so that the replay takes the program's time.
    pub lead_ns: u64,
    /// The recorded time after the last replayed call's end to the trace's last call (its
    /// wind-up), ns: waited by the thread that has it ([`ThreadPlan::tail_ns`]), before the CPU
    /// waits in it are taken off.
    pub tail_ns: u64,
    /// What the plan holds in memory with every thread's buffer, bytes (an estimate).
    pub memory: u64,
    /// Asynchronous operations per ring (as [`RingStep::ring`] numbers the rings).
    pub ring_ops: Vec<u64>,
    /// The deepest any ring was when an operation was submitted (1 without asynchronous I/O):
    /// the engine depth an asynchronous replay needs.
    pub max_depth: u32,
    /// The engine that replays the asynchronous operations as recorded (libaio for libaio
    /// contexts only, else io_uring); `None` when the trace has none.
    pub async_engine: Option<EngineKind>,
    /// A block-level trace's device, replayed onto the job's target (a file or a device): then
    /// `threads` is empty and one worker replays it.
    pub blocks: Option<BlockPlan>,
}

/// A path under `strip`, relative, with no `..`.
pub fn under(strip: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path).strip_prefix(strip).ok()?;
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(rel.to_path_buf())
}

/// The class a recorded call counts under.
pub fn class_of(op: &Op) -> OpClass {
    match op.kind {
        Kind::Open if op.flags & oflags::O_CREAT != 0 => OpClass::Create,
        Kind::Open => OpClass::Open,
        Kind::Close => OpClass::Close,
        Kind::Read | Kind::Pread | Kind::Readv | Kind::Preadv => OpClass::Read,
        Kind::Write | Kind::Pwrite | Kind::Writev | Kind::Pwritev => OpClass::Write,
        Kind::Fsync | Kind::Fdatasync | Kind::SyncFileRange => OpClass::Sync,
        Kind::Lseek => OpClass::Seek,
        Kind::Ftruncate => OpClass::Truncate,
        Kind::Fallocate => OpClass::Allocate,
        Kind::Unlink if op.flags & 0x200 != 0 => OpClass::Rmdir,
        Kind::Unlink => OpClass::Unlink,
        Kind::Rename => OpClass::Rename,
        Kind::Mkdir => OpClass::Mkdir,
        Kind::Other(_) => OpClass::Stat,
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// A duration as an option takes it, rounded up to the minute past one hour (`1h24m`).
fn dur_arg(ns: u64) -> String {
    let s = ns.div_ceil(1_000_000_000);
    if s >= 3600 {
        let m = s.div_ceil(60);
        format!("{}h{}m", m / 60, m % 60)
    } else if s >= 60 {
        format!("{}m{}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// A size as an option takes it, rounded up to the MiB (`1200M`).
fn size_arg(b: u64) -> String {
    format!("{}M", b.div_ceil(1 << 20))
}

fn secs(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.3} s")
    }
}

/// The longest common directory of the files a trace writes, creates, renames, removes or
/// makes: the application's data directory, which the target stands for. Read as a stream.
pub fn default_strip(records: impl Iterator<Item = Result<Record, FormatError>>) -> Result<PathBuf, FormatError> {
    let mut files: HashMap<u32, String> = HashMap::new();
    let mut paths: HashMap<u32, String> = HashMap::new();
    let mut common: Option<PathBuf> = None;
    let mut fold = |dir: &Path| {
        common = Some(match common.take() {
            None => dir.to_path_buf(),
            Some(acc) => acc.components().zip(dir.components()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect(),
        });
    };
    let parent = |p: &str| Path::new(p).parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut done: HashSet<u32> = HashSet::new();
    let mut devices = Devices::default();
    for r in records {
        match r? {
            Record::File { id, path, regular: true, .. } => {
                files.insert(id, path);
            }
            Record::Path { id, path } => {
                paths.insert(id, path);
            }
            Record::Chunk { ops, .. } => {
                for op in ops {
                    let written = (op.kind == Kind::Open && op.flags & oflags::O_CREAT != 0)
                        || op.kind.writes()
                        || op.kind.is_sync()
                        || matches!(op.kind, Kind::Ftruncate | Kind::Fallocate);
                    if written && op.file != NO_FILE && done.insert(op.file) {
                        if let Some(p) = files.get(&op.file) {
                            fold(&parent(p));
                        }
                    }
                    if matches!(op.kind, Kind::Unlink | Kind::Mkdir | Kind::Rename) {
                        if let Some(p) = paths.get(&op.file) {
                            fold(&parent(p));
                        }
                    }
                }
            }
            Record::RingOps { ops, .. } => {
                for a in ops {
                    let written = a.kind.writes() || a.kind.is_sync() || a.kind == AsyncKind::Fallocate;
                    if written && a.file != NO_FILE && done.insert(a.file) {
                        if let Some(p) = files.get(&a.file) {
                            fold(&parent(p));
                        }
                    }
                }
            }
            Record::Device { dev, name } => devices.device(dev, name),
            Record::BlockIos { dev, ios } => devices.ios(dev, ios),
            _ => {}
        }
    }
    // A block-level trace stands the target for its busiest device.
    if common.is_none() {
        if let Some(name) = devices.busiest() {
            return Ok(PathBuf::from(name));
        }
    }
    Ok(common.filter(|c| !c.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from("/")))
}

/// Why a recorded call is not replayed, if it is not.
enum Cover {
    Yes,
    No(&'static str),
}

struct Build<'a> {
    job: &'a ReplayJob,
    files: HashMap<u32, ReplayFile>,
    /// Openings not covered: whether the path is a regular file's (then it is outside the target).
    uncovered: HashMap<u32, bool>,
    paths: HashMap<u32, PathBuf>,
    names: HashMap<u32, String>,
    tgids: HashMap<u32, u32>,
    threads: BTreeMap<u32, ThreadPlan>,
    recorded: BTreeMap<OpClass, Recorded>,
    left_out: BTreeMap<String, BTreeMap<String, u64>>,
    steps: u64,
    name_bytes: u64,
    /// Per thread, its calls that submitted asynchronous I/O: (start, end), in program order.
    submits: HashMap<u32, Vec<(u64, u64)>>,
    /// Per thread, CPU waits before calls left out since its last step (version 3).
    carried_wait: HashMap<u32, u64>,
    /// Per thread, the end of its last recorded call (replayed or not).
    last_end: HashMap<u32, u64>,
}

impl Build<'_> {
    fn name(&self, k: Kind) -> String {
        match k {
            Kind::Other(i) => self.names.get(&i).cloned().unwrap_or_else(|| "other".into()),
            k => k.as_str().to_string(),
        }
    }

    fn leave(&mut self, why: &str, op: &Op) {
        let name = self.name(op.kind);
        *self.left_out.entry(why.to_string()).or_default().entry(name).or_default() += 1;
    }

    fn file_cover(&self, id: u32) -> Cover {
        if self.files.contains_key(&id) {
            Cover::Yes
        } else if self.uncovered.get(&id).copied().unwrap_or(false) {
            Cover::No("outside the target")
        } else {
            Cover::No("not storage (pipes, sockets, devices, /proc)")
        }
    }

    fn path_cover(&self, id: u32) -> Cover {
        if self.paths.contains_key(&id) {
            Cover::Yes
        } else {
            Cover::No("outside the target")
        }
    }

    fn cover(&self, op: &Op) -> Cover {
        match op.kind {
            Kind::Other(_) => Cover::No("other calls"),
            Kind::Unlink | Kind::Mkdir => self.path_cover(op.file),
            Kind::Rename => match (self.path_cover(op.file), self.path_cover(op.offset as u32)) {
                (Cover::Yes, Cover::Yes) => Cover::Yes,
                _ => Cover::No("outside the target"),
            },
            // A failed open names its path by id in `offset`.
            Kind::Open if op.file == NO_FILE => self.path_cover(op.offset as u32),
            _ if op.file == NO_FILE => Cover::No("not storage (pipes, sockets, devices, /proc)"),
            _ => self.file_cover(op.file),
        }
    }

    /// Why a recorded call is left out, if it is.
    fn left_out_why(&self, op: &Op) -> Option<&'static str> {
        if let Cover::No(why) = self.cover(op) {
            return Some(why);
        }
        if op.result == i64::MIN {
            return Some("never returned (the trace ended first)");
        }
        if op.result < 0 {
            return Some("failed when traced");
        }
        if op.kind == Kind::Lseek && op.count > 4 {
            return Some("lseek with an unknown whence");
        }
        if op.kind == Kind::Close && op.count != 0 {
            return Some("closes of a duplicate descriptor (the opening stays open)");
        }
        None
    }

    /// One recorded call: a step of its thread (true), or counted as left out (false).
    fn op(&mut self, tid: u32, op: Op) -> Result<bool, SourceError> {
        let e = self.last_end.entry(tid).or_default();
        *e = (*e).max(op.start_ns.saturating_add(op.dur_ns));
        if let Kind::Other(n) = op.kind {
            if self.names.get(&n).is_some_and(|name| rings::submits(name)) {
                self.submits.entry(tid).or_default().push((op.start_ns, op.start_ns.saturating_add(op.dur_ns)));
            }
        }
        if let Some(why) = self.left_out_why(&op) {
            self.leave(why, &op);
            return Ok(false);
        }
        self.count(&op);
        let th = self.threads.entry(tid).or_insert_with(|| ThreadPlan { tid, ..Default::default() });
        th.steps.push(Step { op, waits_start: 0, waits_len: 0, flags: 0, cpu_wait_ns: 0 });
        self.stepped().map(|()| true)
    }

    /// The CPU waits before each call of `tid`'s last chunk (`kept`: which of its calls became
    /// steps): each step gets the waits since the step before it, left-out calls' included.
    fn cpu_waits(&mut self, tid: u32, kept: &[bool], waits: &[u64]) {
        let carried = self.carried_wait.remove(&tid).unwrap_or(0);
        let Some(th) = self.threads.get_mut(&tid) else { return };
        let n = kept.iter().filter(|k| **k).count();
        let mut at = th.steps.len().saturating_sub(n);
        let mut acc = carried;
        for (k, w) in kept.iter().zip(waits.iter().chain(std::iter::repeat(&0))) {
            acc = acc.saturating_add(*w);
            if *k {
                if let Some(s) = th.steps.get_mut(at) {
                    s.cpu_wait_ns = acc;
                }
                at += 1;
                acc = 0;
            }
        }
        if acc > 0 {
            self.carried_wait.insert(tid, acc);
        }
    }

    /// One asynchronous operation of ring `ring`: kept as the call it replays as (merged into
    /// its thread's steps at the end), or counted as left out.
    fn async_op(&mut self, rings: &mut Rings, ring: u32, a: &AsyncOp) -> Result<(), SourceError> {
        let why = match rings::as_op(a) {
            None => Some(rings::NOT_REPLAYED),
            Some(op) => self.left_out_why(&op).or_else(|| {
                self.count(&op);
                rings.keep(ring, a, op);
                None
            }),
        };
        match why {
            Some(why) => {
                let name = rings::name_of(rings.kind(ring), a.kind);
                *self.left_out.entry(why.to_string()).or_default().entry(name).or_default() += 1;
                Ok(())
            }
            None => self.stepped(),
        }
    }

    /// A call replayed: what it recorded, counted by class.
    fn count(&mut self, op: &Op) {
        let class = class_of(op);
        let moved = if op.kind.reads() || op.kind.writes() { op.result as u64 } else { 0 };
        let r = self.recorded.entry(class).or_default();
        r.ops += 1;
        r.bytes = r.bytes.saturating_add(moved);
        r.dur_ns = r.dur_ns.saturating_add(op.dur_ns);
        if let Some(f) = self.files.get_mut(&op.file).filter(|_| op.kind != Kind::Open) {
            f.reads |= op.kind.reads();
            f.writes |= op.kind.writes() || matches!(op.kind, Kind::Ftruncate | Kind::Fallocate);
        }
    }

    /// One more step held: the memory checked every 4096.
    fn stepped(&mut self) -> Result<(), SourceError> {
        self.steps += 1;
        if self.steps.is_multiple_of(4096) {
            self.check_memory(0)?;
        }
        Ok(())
    }

    fn check_memory(&self, buffers: u64) -> Result<u64, SourceError> {
        let total = self.steps.saturating_mul(STEP_BYTES).saturating_add(self.name_bytes).saturating_add(buffers);
        let max = self.job.limits.max_memory.0;
        if total > max {
            return Err(said!(
                "replaying this trace would hold {} in memory ({} calls at about {STEP_BYTES} bytes, their paths, {} of buffers) and the limit is {}; pass --max-memory {} to allow it, or replay part of it (--strip a narrower directory)",
                mib(total),
                if buffers == 0 { format!("at least {}", self.steps) } else { self.steps.to_string() },
                mib(buffers),
                mib(max),
                size_arg(total + total / 10)
            ));
        }
        Ok(total)
    }
}

/// The replayed calls' first start and last end, and what the program did before and after
/// them (its start-up and wind-up, think time like any gap; the tail is the last-ending
/// thread's, set on it).
fn lead_and_tail(
    threads: &mut [ThreadPlan],
    span: Option<(u64, u64)>,
    one_clock: bool,
    last_end: &HashMap<u32, u64>,
    carried_wait: &HashMap<u32, u64>,
) -> (u64, u64, u64, u64) {
    let origin_ns = threads.iter().filter_map(|t| t.steps.first()).map(|s| s.op.start_ns).min().unwrap_or(0);
    let end = threads
        .iter()
        .flat_map(|t| t.steps.iter())
        .map(|s| s.op.start_ns.saturating_add(s.op.dur_ns))
        .max()
        .unwrap_or(origin_ns);
    let (first_ns, last_ns) = span.unwrap_or((origin_ns, end));
    let (lead_ns, mut tail_ns) = (origin_ns.saturating_sub(first_ns), last_ns.saturating_sub(end));
    if let Some(th) = threads
        .iter_mut()
        .filter(|t| !t.steps.is_empty())
        .max_by_key(|t| t.steps.iter().map(|s| s.op.start_ns.saturating_add(s.op.dur_ns)).max())
    {
        // Without one clock (strace: each thread's gaps corrected on their own, so a thread
        // that mostly waited, as a main thread joining its workers, keeps the tracer's cost
        // the workers lost), the wind-up is the thread's own: to its last recorded call.
        let tail = if one_clock {
            tail_ns
        } else {
            last_end.get(&th.tid).copied().unwrap_or(end).saturating_sub(end).min(tail_ns)
        };
        tail_ns = tail;
        th.tail_ns = tail.saturating_sub(carried_wait.get(&th.tid).copied().unwrap_or(0));
    }
    (origin_ns, end, lead_ns, tail_ns)
}

impl ReplayPlan {
    /// Plan a replay from a trace's records (a stream: only the calls replayed are kept).
    pub fn build(
        records: impl Iterator<Item = Result<Record, FormatError>>,
        job: &ReplayJob,
    ) -> Result<ReplayPlan, SourceError> {
        let strip = job.strip.clone();
        let mut b = Build {
            job,
            files: HashMap::new(),
            uncovered: HashMap::new(),
            paths: HashMap::new(),
            names: HashMap::new(),
            tgids: HashMap::new(),
            threads: BTreeMap::new(),
            recorded: BTreeMap::new(),
            left_out: BTreeMap::new(),
            steps: 0,
            name_bytes: 0,
            submits: HashMap::new(),
            carried_wait: HashMap::new(),
            last_end: HashMap::new(),
        };
        let mut tracer_free = false;
        // Whether the trace's threads share one clock (eBPF: the kernel's times). A strace
        // recording's times are each thread's own, its tracer's cost taken off thread by thread.
        let mut one_clock = false;
        let mut rings = Rings::default();
        let mut devices = Devices::default();
        // Per thread, which calls of its last chunk became steps (for the CPU waits after it).
        let mut last_chunk: HashMap<u32, Vec<bool>> = HashMap::new();
        // The trace's first call's start and last call's end (its end record).
        let mut span: Option<(u64, u64)> = None;
        for r in records {
            match r.map_err(|e| format!("{}: {e}", job.trace.display()))? {
                Record::File { id, path, flags, before, regular } => match under(&strip, &path).filter(|_| regular) {
                    Some(rel) => {
                        b.name_bytes += rel.as_os_str().len() as u64 + 64;
                        b.files.insert(id, ReplayFile { rel, flags, before, reads: false, writes: false });
                    }
                    None => {
                        b.uncovered.insert(id, regular);
                    }
                },
                Record::Path { id, path } => {
                    if let Some(rel) = under(&strip, &path) {
                        b.name_bytes += rel.as_os_str().len() as u64 + 48;
                        b.paths.insert(id, rel);
                    }
                }
                Record::Name { id, name } => {
                    b.names.insert(id, name);
                }
                Record::Thread { tid, tgid } => {
                    b.tgids.insert(tid, tgid);
                }
                Record::Chunk { tid, ops } => {
                    let mut kept = Vec::with_capacity(ops.len());
                    for op in ops {
                        kept.push(b.op(tid, op)?);
                    }
                    last_chunk.insert(tid, kept);
                }
                // Version 3: the CPU waits of the chunk just read.
                Record::CpuWaits { tid, waits } => {
                    if let Some(kept) = last_chunk.remove(&tid) {
                        b.cpu_waits(tid, &kept, &waits);
                    }
                }
                // Version 2: asynchronous I/O, merged into the submitting threads' steps at the
                // end; a trace from the eBPF recorder, or strace's with its cost taken off, has
                // no tracer's gap to remove.
                Record::Ring { id, kind, .. } => rings.ring(id, kind),
                Record::RingOps { ring, ops } => {
                    for a in &ops {
                        b.async_op(&mut rings, ring, a)?;
                    }
                }
                Record::Device { dev, name } => devices.device(dev, name),
                Record::BlockIos { dev, ios } => devices.ios(dev, ios),
                Record::Recorder { via, .. } if via == "ebpf" => (tracer_free, one_clock) = (true, true),
                Record::Overhead(_) => tracer_free = true,
                Record::End { first_ns, last_ns, .. } => span = Some((first_ns, last_ns)),
                _ => {}
            }
        }
        let limits = job.limits;
        let linked = rings.linked;
        let gathered = rings.gather(&b.submits);
        let (ring_ops, max_depth, async_engine) =
            (gathered.ring_ops.clone(), gathered.max_depth.max(1), gathered.engine);
        merge_async(&mut b.threads, gathered);
        let mut threads: Vec<ThreadPlan> = std::mem::take(&mut b.threads).into_values().collect();
        if threads.is_empty() && !devices.is_empty() {
            return block_plan(devices, job);
        }
        if threads.is_empty() {
            return Err(said!(
                "nothing to replay: no call of the trace touches a file under {} (name the traced data directory with --strip)",
                strip.display()
            ));
        }
        if threads.len() > limits.max_threads as usize {
            return Err(said!(
                "the trace has {} threads with calls to replay (one replay thread each) and the limit is {}; pass --max-threads {} to allow them",
                threads.len(),
                limits.max_threads,
                threads.len()
            ));
        }
        let (mut adjusted, buffers) = size_buffers(&mut threads, &b.tgids, limits, tracer_free)?;
        // An asynchronous replay has a buffer per operation in flight.
        let memory = b.check_memory(buffers.saturating_mul(max_depth as u64))?;
        if linked > 0 {
            adjusted
                .insert("asynchronous operations linked to the next (IOSQE_IO_LINK) replayed unlinked".into(), linked);
        }
        let (origin_ns, end, lead_ns, tail_ns) =
            lead_and_tail(&mut threads, span, one_clock, &b.last_end, &b.carried_wait);
        check_waits(&threads, origin_ns, lead_ns, job.timing, limits)?;
        let takers = share_openings(&mut threads, &b.files);
        let mut plan = ReplayPlan {
            threads,
            files: b.files,
            paths: b.paths,
            strip,
            keys: 0,
            takers,
            recorded: b.recorded,
            left_out: b.left_out,
            adjusted,
            origin_ns,
            recorded_span_ns: end.saturating_sub(origin_ns),
            lead_ns,
            tail_ns,
            memory,
            ring_ops,
            max_depth,
            async_engine,
            blocks: None,
        };
        plan.order();
        Ok(plan)
    }

    /// The path a step names (its opening's, or its namespace call's), under the target.
    pub fn rel_of(&self, op: &Op) -> Option<&Path> {
        match op.kind {
            Kind::Unlink | Kind::Mkdir | Kind::Rename => self.paths.get(&op.file).map(PathBuf::as_path),
            _ => self.files.get(&op.file).map(|f| f.rel.as_path()),
        }
    }

    /// The paths that order a step against other threads' steps: its file, and for namespace
    /// calls the directory they change (a create in `d` waits for the `mkdir d` before it).
    fn keys_of(&self, op: &Op) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::with_capacity(4);
        let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(rel) = self.rel_of(op) {
            out.push(rel.to_path_buf());
            if matches!(op.kind, Kind::Open | Kind::Unlink | Kind::Mkdir | Kind::Rename) {
                out.push(parent(rel));
            }
        }
        if op.kind == Kind::Rename {
            if let Some(to) = self.paths.get(&(op.offset as u32)) {
                out.push(to.clone());
                out.push(parent(to));
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Rank the steps on paths several threads use, in the order the trace saw them.
    fn order(&mut self) {
        let mut ids: HashMap<PathBuf, u32> = HashMap::new();
        // Key id → the first thread using it, and whether another does too.
        let mut users: Vec<(usize, bool)> = Vec::new();
        for (ti, th) in self.threads.iter().enumerate() {
            for s in &th.steps {
                for k in self.keys_of(&s.op) {
                    let n = ids.len() as u32;
                    let id = *ids.entry(k).or_insert(n);
                    if id as usize == users.len() {
                        users.push((ti, false));
                    } else if users[id as usize].0 != ti {
                        users[id as usize].1 = true;
                    }
                }
            }
        }
        // Shared keys get dense numbers.
        let mut dense: HashMap<u32, u32> = HashMap::new();
        for (id, (_, shared)) in users.iter().enumerate() {
            if *shared {
                let n = dense.len() as u32;
                dense.insert(id as u32, n);
            }
        }
        self.keys = dense.len() as u32;
        if dense.is_empty() {
            return;
        }
        let mut all: Vec<(u64, u32, u32, u32)> = Vec::new();
        for (ti, th) in self.threads.iter().enumerate() {
            for (si, s) in th.steps.iter().enumerate() {
                all.push((s.op.start_ns, th.tid, ti as u32, si as u32));
            }
        }
        all.sort_unstable();
        let mut next = vec![0u64; dense.len()];
        // Per key: the thread of its latest step, and how many steps came before that thread's
        // run of steps on it.
        let mut runs: Vec<(u32, u64)> = vec![(u32::MAX, 0); dense.len()];
        // (thread, step, key, rank), then grouped per step in program order.
        let mut waits: Vec<(u32, u32, u32, u64)> = Vec::new();
        for (_, _, ti, si) in all {
            let s = &self.threads[ti as usize].steps[si as usize];
            for k in self.keys_of(&s.op) {
                if let Some(&d) = ids.get(&k).and_then(|id| dense.get(id)) {
                    let d = d as usize;
                    if runs[d].0 != ti {
                        runs[d] = (ti, next[d]);
                    }
                    // An asynchronous step waits only for the other threads' steps before it:
                    // its own thread's earlier ones are in flight with it, as recorded.
                    let rank = if s.flags & ASYNC != 0 { runs[d].1 } else { next[d] };
                    waits.push((ti, si, d as u32, rank));
                    next[d] += 1;
                }
            }
        }
        waits.sort_unstable();
        for (ti, si, key, rank) in waits {
            let th = &mut self.threads[ti as usize];
            let at = th.waits.len() as u32;
            th.waits.push((key, rank));
            let s = &mut th.steps[si as usize];
            if s.waits_len == 0 {
                s.waits_start = at;
            }
            s.waits_len += 1;
        }
    }

    /// A thread's plan for worker `i`.
    pub fn thread(&self, i: usize) -> Option<&ThreadPlan> {
        self.threads.get(i)
    }
}

/// The plan of a block-level trace: the device `--strip` names (by default the busiest),
/// within the limits.
fn block_plan(devices: Devices, job: &ReplayJob) -> Result<ReplayPlan, SourceError> {
    let limits = job.limits;
    let max_buffer = limits.max_buffer.0.min(0x7fff_f000);
    let name = job.strip.to_string_lossy();
    let (p, counted) = blocks::plan(devices, &name, max_buffer)?;
    let steps = p.steps.len() as u64;
    let memory =
        steps.saturating_mul(STEP_BYTES).saturating_add((p.buffer_len as u64).saturating_mul(p.max_depth as u64));
    if memory > limits.max_memory.0 {
        return Err(said!(
            "replaying this trace would hold {} in memory ({steps} requests, their buffers) and the limit is {}; pass --max-memory {} to allow it",
            mib(memory),
            mib(limits.max_memory.0),
            size_arg(memory + memory / 10)
        ));
    }
    let origin_ns = p.steps.first().map_or(0, |s| s.issue_ns);
    let end = p.steps.iter().map(|s| s.complete_ns).max().unwrap_or(origin_ns);
    let max = limits.max_wait.as_nanos().min(u64::MAX as u128) as u64;
    let scale = match job.timing {
        Timing::Scale(x) => x,
        _ => 1.0,
    };
    if job.timing != Timing::Afap {
        for (i, w) in p.steps.windows(2).enumerate() {
            let wait = (w[1].issue_ns.saturating_sub(w[0].issue_ns) as f64 / scale) as u64;
            if wait > max {
                return Err(said!(
                    "the trace waits {} before its request {} (--timing {}); the longest wait allowed is {} (--max-wait): pass --max-wait {}, or --timing afap",
                    secs(wait),
                    i + 2,
                    job.timing,
                    secs(max),
                    dur_arg(wait)
                ));
            }
        }
    }
    Ok(ReplayPlan {
        strip: job.strip.clone(),
        recorded: counted
            .recorded
            .into_iter()
            .map(|(c, [ops, bytes, dur_ns])| (c, Recorded { ops, bytes, dur_ns }))
            .collect(),
        left_out: counted.left_out,
        adjusted: counted.adjusted,
        origin_ns,
        recorded_span_ns: end.saturating_sub(origin_ns),
        memory,
        max_depth: p.max_depth,
        blocks: Some(p),
        ..Default::default()
    })
}

impl ThreadPlan {
    /// When the thread's first step `s` is due after the replay's start (think and scaled
    /// timing, before scaling): the trace's lead, then its recorded offset from the first
    /// replayed call, less the CPU waits the thread had before it.
    pub fn lead_ns(&self, s: &Step, origin: u64, lead: u64) -> u64 {
        lead.saturating_add(s.op.start_ns.saturating_sub(origin)).saturating_sub(s.cpu_wait_ns)
    }

    /// The think time before step `i` (not the first) as recorded, less the tracer's gap and the
    /// time the thread waited for a CPU in it: from
    /// the end of the step before (its submission, if asynchronous: the thread did not wait
    /// for it) or, for an asynchronous step (`ring`, its ring step), from the last completion
    /// it waits for if that came later, to the start of the call that submitted it.
    pub fn think_ns(&self, i: usize, ring: Option<&RingStep>) -> u64 {
        let (prev, cur) = (&self.steps[i - 1], &self.steps[i]);
        let mut from = prev.op.start_ns;
        if prev.flags & ASYNC == 0 {
            from = from.saturating_add(prev.op.dur_ns);
        }
        let mut to = cur.op.start_ns;
        if let Some(r) = ring {
            from = from.max(r.ready_ns);
            to = r.called_ns;
        }
        to.saturating_sub(from).saturating_sub(self.tracer_gap_ns).saturating_sub(cur.cpu_wait_ns)
    }
}

/// Place each thread's asynchronous operations among its calls by submission time (its calls
/// keep their program order).
fn merge_async(threads: &mut BTreeMap<u32, ThreadPlan>, g: Gathered) {
    for (tid, ops) in g.by_thread {
        let th = threads.entry(tid).or_insert_with(|| ThreadPlan { tid, ..Default::default() });
        let sync = std::mem::take(&mut th.steps);
        let mut steps = Vec::with_capacity(sync.len() + ops.len());
        let mut ops = ops.into_iter().peekable();
        let async_step = |op| Step { op, waits_start: 0, waits_len: 0, flags: ASYNC, cpu_wait_ns: 0 };
        for s in sync {
            while let Some((op, r)) = ops.next_if(|(op, _)| op.start_ns < s.op.start_ns) {
                steps.push(async_step(op));
                th.rings.push(r);
            }
            steps.push(s);
        }
        for (op, r) in ops {
            steps.push(async_step(op));
            th.rings.push(r);
        }
        th.steps = steps;
    }
}

/// Refuse a wait longer than the limit (a trace can claim any gap).
fn check_waits(
    threads: &[ThreadPlan],
    origin: u64,
    lead: u64,
    timing: Timing,
    limits: ReplayLimits,
) -> Result<(), SourceError> {
    let scale = match timing {
        Timing::Afap => return Ok(()),
        Timing::Scale(x) => x,
        _ => 1.0,
    };
    let max = limits.max_wait.as_nanos().min(u64::MAX as u128) as u64;
    for th in threads {
        let mut r = 0usize;
        for (i, s) in th.steps.iter().enumerate() {
            let mut ring = None;
            if s.flags & ASYNC != 0 {
                ring = th.rings.get(r);
                r += 1;
            }
            let wait = match (timing, i) {
                (_, 0) => th.lead_ns(s, origin, lead),
                (Timing::Recorded, _) => s.op.start_ns.saturating_sub(th.steps[i - 1].op.start_ns),
                _ => th.think_ns(i, ring),
            };
            let wait = (wait as f64 / scale) as u64;
            if wait > max {
                return Err(said!(
                    "traced thread {} waits {} before its call {} (--timing {timing}); the longest wait allowed is {} (--max-wait): pass --max-wait {}, or --timing afap",
                    th.tid,
                    secs(wait),
                    i + 1,
                    secs(max),
                    dur_arg(wait)
                ));
            }
        }
        let tail = (th.tail_ns as f64 / scale) as u64;
        if tail > max {
            return Err(said!(
                "traced thread {} waits {} after its last call, the program's time to its end (--timing {timing}); the longest wait allowed is {} (--max-wait): pass --max-wait {}, or --timing afap",
                th.tid,
                secs(tail),
                secs(max),
                dur_arg(tail)
            ));
        }
    }
    Ok(())
}

/// Who opens each opening, who takes it from them, and when each thread lets go of it.
/// Returns, per opening several threads use, how many threads take a duplicate.
fn share_openings(threads: &mut [ThreadPlan], files: &HashMap<u32, ReplayFile>) -> HashMap<u32, u32> {
    let mut opener: HashMap<u32, usize> = HashMap::new();
    let mut users: HashMap<u32, Vec<usize>> = HashMap::new();
    for (ti, th) in threads.iter().enumerate() {
        let mut seen: HashSet<u32> = HashSet::new();
        for s in &th.steps {
            if !files.contains_key(&s.op.file) || matches!(s.op.kind, Kind::Unlink | Kind::Mkdir | Kind::Rename) {
                continue;
            }
            if s.op.kind == Kind::Open {
                opener.insert(s.op.file, ti);
            }
            if seen.insert(s.op.file) {
                users.entry(s.op.file).or_default().push(ti);
            }
        }
    }
    let mut takers = HashMap::new();
    for (&file, us) in &users {
        let n = match opener.get(&file) {
            Some(o) => us.iter().filter(|u| *u != o).count(),
            None => us.len().saturating_sub(1),
        };
        if n > 0 {
            takers.insert(file, n as u32);
        }
    }
    for (ti, th) in threads.iter_mut().enumerate() {
        let mut first: HashMap<u32, usize> = HashMap::new();
        let mut last: HashMap<u32, usize> = HashMap::new();
        for (si, s) in th.steps.iter().enumerate() {
            if !files.contains_key(&s.op.file) || matches!(s.op.kind, Kind::Unlink | Kind::Mkdir | Kind::Rename) {
                continue;
            }
            first.entry(s.op.file).or_insert(si);
            last.insert(s.op.file, si);
        }
        let mut setup = Vec::new();
        for (&file, &si) in &first {
            match opener.get(&file) {
                Some(&o) if o == ti => {}
                Some(_) => th.steps[si].flags |= ADOPT,
                None => setup.push(file),
            }
        }
        setup.sort_unstable();
        th.setup = setup;
        for &si in last.values() {
            if th.steps[si].op.kind != Kind::Close {
                th.steps[si].flags |= DROP_AFTER;
            }
        }
    }
    takers
}

/// Each thread's buffer (the largest call it replays, at most --max-buffer: a call asking for
/// more that moved no more asks for that, said in `adjusted`), its process, and the tracer's
/// gap to take off its waits. Returns what was adjusted and the buffers' bytes.
fn size_buffers(
    threads: &mut [ThreadPlan],
    tgids: &HashMap<u32, u32>,
    limits: ReplayLimits,
    tracer_free: bool,
) -> Result<(BTreeMap<String, u64>, u64), SourceError> {
    let mut adjusted: BTreeMap<String, u64> = BTreeMap::new();
    let mut buffers = 0u64;
    // Linux moves at most 0x7ffff000 bytes in one read or write.
    let max_buffer = limits.max_buffer.0.min(0x7fff_f000);
    for th in threads.iter_mut() {
        th.tgid = tgids.get(&th.tid).copied().unwrap_or(th.tid);
        let mut max = 0u64;
        for (i, s) in th.steps.iter_mut().enumerate() {
            let op = &s.op;
            if !(op.kind.reads() || op.kind.writes()) {
                continue;
            }
            let moved = op.result.max(0) as u64;
            if op.size > max_buffer {
                // A call asking for more than it moved (a read at the end of a file, a
                // count past Linux's cap) asks for the buffer's size when what it moved fits.
                if moved <= max_buffer {
                    s.flags |= CUT;
                    *adjusted
                        .entry(format!(
                            "calls asking for more than --max-buffer ({}) that moved no more ask for that",
                            iolab_spec::Bytes(max_buffer)
                        ))
                        .or_default() += 1;
                    max = max.max(max_buffer);
                    continue;
                }
                return Err(said!(
                    "traced thread {} {} {} bytes in one call (its call {}); a replay buffer is at most --max-buffer ({}): pass --max-buffer {} to replay it",
                    th.tid,
                    if op.kind.reads() { "read" } else { "wrote" },
                    moved,
                    i + 1,
                    iolab_spec::Bytes(max_buffer),
                    size_arg(moved)
                ));
            }
            max = max.max(op.size);
        }
        th.buffer_len = max.max(4096).div_ceil(4096).saturating_mul(4096) as usize;
        buffers = buffers.saturating_add(th.buffer_len as u64);
        th.tracer_gap_ns = if tracer_free {
            0
        } else {
            th.steps
                .windows(2)
                .map(|w| w[1].op.start_ns.saturating_sub(w[0].op.start_ns.saturating_add(w[0].op.dur_ns)))
                .min()
                .unwrap_or(0)
        };
    }
    Ok((adjusted, buffers))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use iolab_trace::format::Reader;

    pub fn records(text: &str) -> Vec<Result<Record, FormatError>> {
        let mut imp = iolab_trace::Importer::new(Vec::new(), "test").unwrap();
        imp.read_file(text.as_bytes(), "test", None).unwrap();
        let (bytes, sum) = imp.finish().unwrap();
        assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        while let Some(x) = r.next_record().transpose() {
            out.push(x);
        }
        out
    }

    pub fn job(strip: &str, timing: Timing) -> ReplayJob {
        ReplayJob {
            trace: "t".into(),
            trace_bytes: 0,
            trace_crc32: 0,
            timing,
            strip: strip.into(),
            prepare: false,
            limits: ReplayLimits::default(),
        }
    }

    // Thread 11 creates /d/a and writes it; thread 12 writes it through the shared fd, then
    // reads its own /d/log; /etc/x is outside the data dir.
    pub const TEXT: &str = "\
10  1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD} => {parent_tid=[11]}, 88) = 11 <0.000010>
10  1.000001 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD} => {parent_tid=[12]}, 88) = 12 <0.000010>
11  1.000100 openat(AT_FDCWD</d>, \"/d/a\", O_RDWR|O_CREAT|O_DIRECT, 0644) = 3</d/a> <0.000010>
11  1.000200 pwrite64(3</d/a>, \"x\"..., 4096, 0) = 4096 <0.000100>
12  1.000300 pwrite64(3</d/a>, \"x\"..., 4096, 4096) = 4096 <0.000100>
12  1.000400 openat(AT_FDCWD</d>, \"/d/log\", O_RDONLY) = 4</d/log> <0.000010>
12  1.000500 read(4</d/log>, \"\"..., 65536) = 8192 <0.000010>
11  1.000600 fsync(3</d/a> <unfinished ...>
12  1.000650 openat(AT_FDCWD</d>, \"/etc/x\", O_RDONLY) = 5</etc/x> <0.000010>
11  1.000700 <... fsync resumed>) = 0 <0.000100>
11  1.000800 lseek(3</d/a>, 0, SEEK_END) = 8192 <0.000010>
12  1.000850 openat(AT_FDCWD</d>, \"/d/nope\", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000010>
12  1.000900 close(4</d/log>) = 0 <0.000010>
";

    #[test]
    fn the_lead_and_the_tail_are_the_programs_time_around_the_replayed_calls() {
        // TEXT: the first call at 1.000000, the first replayed one at 1.000100, the last
        // replayed one ends the trace.
        let p = ReplayPlan::build(records(TEXT).into_iter(), &job("/d", Timing::Think)).unwrap();
        assert_eq!((p.lead_ns, p.tail_ns), (100_000, 0));
        // A strace trace's threads keep their own clocks: the main thread's exit 0.5 s after its
        // workers' last call (its join, and strace's cost the workers' gaps lost) is not
        // waited; the worker's own wind-up (its exit after its close) is.
        let text = format!("{TEXT}12  1.001000 exit(0) = ?\n10  1.500000 exit_group(0) = ?\n");
        let p = ReplayPlan::build(records(&text).into_iter(), &job("/d", Timing::Think)).unwrap();
        assert_eq!(p.tail_ns, 90_000, "thread 12's close ends at 1.000910, its exit at 1.001000");
        assert_eq!(p.threads.iter().map(|t| t.tail_ns).collect::<Vec<_>>(), vec![0, 90_000]);
    }

    #[test]
    fn shared_paths_are_ranked_in_trace_order_and_the_rest_runs_free() {
        assert_eq!(default_strip(records(TEXT).into_iter()).unwrap(), PathBuf::from("/d"));
        let p = ReplayPlan::build(records(TEXT).into_iter(), &job("/d", Timing::Think)).unwrap();
        assert_eq!(p.threads.len(), 2);
        let (a, b) = (&p.threads[0], &p.threads[1]);
        assert_eq!((a.tid, b.tid), (11, 12));
        assert_eq!((a.tgid, b.tgid), (10, 10));
        let ranks = |th: &ThreadPlan| {
            th.steps
                .iter()
                .map(|s| th.waits[s.waits_start as usize..][..s.waits_len as usize].iter().map(|w| w.1).collect())
                .collect::<Vec<Vec<u64>>>()
        };
        // /d/a: open(11) 0, pwrite(11) 1, pwrite(12) 2, fsync(11) 3, lseek(11) 4; the directory
        // /d (key "") orders the two opens: 11's (0) before 12's of /d/log (1).
        assert_eq!(ranks(a), vec![vec![0, 0], vec![1], vec![3], vec![4]]);
        assert_eq!(ranks(b), vec![vec![2], vec![1], vec![], vec![]]);
        // 12 takes /d/a from 11 (one descriptor, one position) and lets it go after its write;
        // 11 keeps it to the end (no close), so lets go after its lseek.
        assert_eq!(p.takers.get(&0), Some(&1));
        assert_eq!(b.steps[0].flags, ADOPT | DROP_AFTER);
        assert_eq!(a.steps[0].flags, 0);
        assert_eq!(a.steps[3].flags, DROP_AFTER);
        assert!(a.setup.is_empty() && b.setup.is_empty());
        assert_eq!(b.steps[3].flags, 0, "closed by the thread itself");
        let r = |c: OpClass| p.recorded.get(&c).map(|r| (r.ops, r.bytes)).unwrap_or_default();
        assert_eq!(r(OpClass::Write), (2, 8192));
        assert_eq!((r(OpClass::Sync).0, r(OpClass::Seek).0, r(OpClass::Create).0), (1, 1, 1));
        assert_eq!((r(OpClass::Open).0, r(OpClass::Read), r(OpClass::Close).0), (1, (1, 8192), 1));
        assert_eq!(p.left_out["other calls"]["clone3"], 2);
        assert_eq!(p.left_out["outside the target"]["open"], 1);
        assert_eq!(p.left_out["failed when traced"]["open"], 1);
        // Smallest gap of thread 11: open's end (1.000110) to pwrite (1.000200); fsync keeps its
        // unfinished half's start (1.000600 + 0.0001 to lseek at 1.000800: 100 µs).
        assert_eq!(a.tracer_gap_ns, 90_000);
        assert_eq!((a.buffer_len, b.buffer_len), (4096, 65536));
        assert_eq!(p.recorded_span_ns, 810_000, "the open at 1.000100 to the close's end at 1.000910");
        assert!(p.memory > 65536 + 4096);
    }

    #[test]
    fn limits_refuse_with_the_option_to_pass() {
        let mut j = job("/d", Timing::Think);
        j.limits.max_threads = 1;
        let e = ReplayPlan::build(records(TEXT).into_iter(), &j).unwrap_err().to_string();
        assert!(e.contains("2 threads") && e.contains("--max-threads 2"), "{e}");
        let mut j = job("/d", Timing::Think);
        j.limits.max_buffer = iolab_spec::Bytes(1024);
        let e = ReplayPlan::build(records(TEXT).into_iter(), &j).unwrap_err().to_string();
        assert!(e.contains("wrote 4096 bytes") && e.contains("--max-buffer 1M"), "{e}");
        let mut j = job("/d", Timing::Think);
        j.limits.max_memory = iolab_spec::Bytes(10_000);
        let e = ReplayPlan::build(records(TEXT).into_iter(), &j).unwrap_err().to_string();
        assert!(e.contains("--max-memory"), "{e}");
        let gap = "1  1.0 write(3</d/a>, \"x\", 1) = 1 <0.000001>\n1  1.001 write(3</d/a>, \"x\", 1) = 1 <0.000001>\n\
                   1  5000.0 write(3</d/a>, \"x\", 1) = 1 <0.000001>\n";
        let mut j = job("/d", Timing::Think);
        j.limits.max_wait = std::time::Duration::from_secs(60);
        let e = ReplayPlan::build(records(gap).into_iter(), &j).unwrap_err().to_string();
        assert!(e.contains("waits 1.4 h before its call 3") && e.contains("--max-wait 1h24m"), "{e}");
        j.timing = Timing::Scale(100.0);
        assert!(ReplayPlan::build(records(gap).into_iter(), &j).is_ok(), "50 s at scale 100");
        j.timing = Timing::Afap;
        assert!(ReplayPlan::build(records(gap).into_iter(), &j).is_ok());
        // A read asking for 1 GiB that moved 10 bytes asks for the buffer's size.
        let big = "1  1.0 read(3</d/a>, \"x\", 1073741824) = 10 <0.000001>\n";
        let p = ReplayPlan::build(records(big).into_iter(), &job("/d", Timing::Afap)).unwrap();
        assert_eq!(p.threads[0].buffer_len, 64 << 20);
        assert_eq!(p.threads[0].steps[0].flags & CUT, CUT);
        assert_eq!(p.adjusted.values().sum::<u64>(), 1);
    }

    #[test]
    fn nothing_to_replay_says_what_to_do() {
        let e =
            ReplayPlan::build(records(TEXT).into_iter(), &job("/elsewhere", Timing::Think)).unwrap_err().to_string();
        assert!(e.contains("nothing to replay") && e.contains("--strip"), "{e}");
    }
}
