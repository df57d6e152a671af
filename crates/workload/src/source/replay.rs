//! Trace replay as an operation source: one worker per traced thread returns that thread's
//! recorded calls in program order — lseek then write stays `Seek` then `WriteCur`, pwrite stays
//! `Write`, readv/writev keep their vector count, opens keep their flags (O_DIRECT gets the
//! engine's aligned buffers) — with the thread's think time between calls (or the recorded
//! instants, none, or scaled gaps). Threads wait for one another only on a shared path, in the
//! order the trace saw (ROOT/ARTC, SOSP'13): each shared path has a counter of its calls done,
//! and a call waits until its rank comes up. Paths are remapped under the job's directory: the
//! traced prefix `strip` is replaced by it; files outside it are not replayed.

use super::{describe_failure, Call, Ctx, Issue, Next, OpenFlags, SetupFile, Source};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_model::OpClass;
use iolab_spec::{Job, ReplayJob, Timing};
use iolab_trace::format::{oflags, Kind, Op, Trace, NO_FILE};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The largest engine buffer a replay asks for; a larger recorded call is cut to it.
pub const MAX_BUFFER: u64 = 64 << 20;

/// One recorded call to replay.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub op: Op,
    /// (shared path index, rank among that path's calls) when other threads use the path too.
    pub order: Option<(u32, u64)>,
}

/// A traced thread's replay.
#[derive(Debug, Clone, Default)]
pub struct ThreadPlan {
    pub tid: u32,
    pub steps: Vec<Step>,
    /// Files this thread uses without opening them first (opened by another thread, or before
    /// the trace): opened in setup, untimed.
    pub foreign: Vec<u32>,
    pub buffer_len: usize,
    /// The smallest gap between two of the thread's recorded calls: what the tracer itself
    /// costs between calls (its stops at a call's exit and the next call's entry), which the
    /// program cannot have been faster than. Think time is each gap less this.
    pub tracer_gap_ns: u64,
}

/// A file the replay touches, under the target.
#[derive(Debug, Clone)]
pub struct ReplayFile {
    pub rel: PathBuf,
    /// Flags of its opening (0 when opened before the trace).
    pub flags: u32,
    pub before: bool,
}

/// What a whole trace replays as.
#[derive(Debug)]
pub struct ReplayPlan {
    pub threads: Vec<ThreadPlan>,
    pub files: HashMap<u32, ReplayFile>,
    /// unlink/rename/mkdir path ids → path under the target.
    pub paths: HashMap<u32, PathBuf>,
    /// The traced prefix replaced by the target.
    pub strip: PathBuf,
    /// Recorded calls not replayed (other calls, failed calls, files outside `strip`, pipes
    /// and sockets), by name.
    pub skipped: BTreeMap<String, u64>,
    /// The first replayed call's recorded start, ns since the trace's start.
    pub origin_ns: u64,
    /// From the first replayed call's start to the last one's end, ns.
    pub recorded_span_ns: u64,
    done: Vec<AtomicU64>,
    abort: AtomicBool,
}

/// A path under `strip`, relative, with no `..`.
fn under(strip: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path).strip_prefix(strip).ok()?;
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(rel.to_path_buf())
}

/// The longest common directory of the files a trace writes, creates, renames, removes or
/// makes: the application's data directory, which the target stands for.
pub fn default_strip(t: &Trace) -> PathBuf {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut written: HashSet<u32> = HashSet::new();
    for (_, ops) in &t.ops {
        for op in ops {
            match op.kind {
                Kind::Open if op.flags & oflags::O_CREAT != 0 && op.file != NO_FILE => {
                    written.insert(op.file);
                }
                k if k.writes() || k.is_sync() || matches!(k, Kind::Ftruncate | Kind::Fallocate) => {
                    written.insert(op.file);
                }
                Kind::Unlink | Kind::Mkdir | Kind::Rename => {
                    if let Some(p) = t.paths.get(&op.file) {
                        dirs.push(Path::new(p).parent().unwrap_or(Path::new("/")).to_path_buf());
                    }
                }
                _ => {}
            }
        }
    }
    for id in written {
        if let Some(f) = t.files.get(&id).filter(|f| f.regular) {
            dirs.push(Path::new(&f.path).parent().unwrap_or(Path::new("/")).to_path_buf());
        }
    }
    let Some(first) = dirs.first().cloned() else { return PathBuf::from("/") };
    dirs.iter().fold(first, |acc, d| {
        let mut common = PathBuf::new();
        for (a, b) in acc.components().zip(d.components()) {
            if a != b {
                break;
            }
            common.push(a.as_os_str());
        }
        common
    })
}

impl ReplayPlan {
    /// Decide, call by call, what replays; rank calls on paths several threads share.
    pub fn build(t: &Trace, strip: &Path) -> ReplayPlan {
        let mut files = HashMap::new();
        for (&id, f) in &t.files {
            if !f.regular {
                continue;
            }
            if let Some(rel) = under(strip, &f.path) {
                files.insert(id, ReplayFile { rel, flags: f.flags, before: f.before });
            }
        }
        let mut paths = HashMap::new();
        for (&id, p) in &t.paths {
            if let Some(rel) = under(strip, p) {
                paths.insert(id, rel);
            }
        }
        let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
        let mut threads = Vec::new();
        for (tid, ops) in &t.ops {
            let mut th = ThreadPlan { tid: *tid, ..Default::default() };
            let mut opened: HashSet<u32> = HashSet::new();
            let mut foreign: Vec<u32> = Vec::new();
            let mut max = 0u64;
            for op in ops {
                let ok = op.result >= 0 && op.result != i64::MIN;
                let replay = ok
                    && match op.kind {
                        Kind::Other(_) => false,
                        Kind::Unlink | Kind::Mkdir => paths.contains_key(&op.file),
                        Kind::Rename => paths.contains_key(&op.file) && paths.contains_key(&(op.offset as u32)),
                        Kind::Close => files.contains_key(&op.file) && op.count == 0,
                        _ => files.contains_key(&op.file),
                    };
                if !replay {
                    *skipped.entry(t.op_name(op.kind).to_string()).or_default() += 1;
                    continue;
                }
                match op.kind {
                    Kind::Open => {
                        opened.insert(op.file);
                    }
                    Kind::Unlink | Kind::Mkdir | Kind::Rename => {}
                    _ if !opened.contains(&op.file) && !foreign.contains(&op.file) => foreign.push(op.file),
                    _ => {}
                }
                if op.kind.reads() || op.kind.writes() {
                    max = max.max(op.size);
                }
                th.steps.push(Step { op: *op, order: None });
            }
            if th.steps.is_empty() {
                continue;
            }
            th.foreign = foreign;
            th.tracer_gap_ns = th
                .steps
                .windows(2)
                .map(|w| w[1].op.start_ns.saturating_sub(w[0].op.start_ns.saturating_add(w[0].op.dur_ns)))
                .min()
                .unwrap_or(0);
            th.buffer_len = (max.clamp(4096, MAX_BUFFER).div_ceil(4096) * 4096) as usize;
            threads.push(th);
        }
        // Which paths several threads touch, and the order the trace saw their calls in.
        let key = |s: &Step| -> Option<PathBuf> {
            match s.op.kind {
                Kind::Unlink | Kind::Mkdir | Kind::Rename => paths.get(&s.op.file).cloned(),
                _ => files.get(&s.op.file).map(|f| f.rel.clone()),
            }
        };
        let mut users: HashMap<PathBuf, HashSet<usize>> = HashMap::new();
        for (ti, th) in threads.iter().enumerate() {
            for s in &th.steps {
                if let Some(k) = key(s) {
                    users.entry(k).or_default().insert(ti);
                }
                if s.op.kind == Kind::Rename {
                    if let Some(to) = paths.get(&(s.op.offset as u32)) {
                        users.entry(to.clone()).or_default().insert(ti);
                    }
                }
            }
        }
        let mut shared: HashMap<PathBuf, u32> = HashMap::new();
        for (k, u) in &users {
            if u.len() > 1 {
                let n = shared.len() as u32;
                shared.insert(k.clone(), n);
            }
        }
        let mut order: Vec<(u64, u32, usize, usize)> = Vec::new();
        for (ti, th) in threads.iter().enumerate() {
            for (si, s) in th.steps.iter().enumerate() {
                if key(s).is_some_and(|k| shared.contains_key(&k)) {
                    order.push((s.op.start_ns, th.tid, ti, si));
                }
            }
        }
        order.sort_unstable();
        let mut next_rank = vec![0u64; shared.len()];
        for (_, _, ti, si) in order {
            let Some(k) = key(&threads[ti].steps[si]) else { continue };
            let Some(&r) = shared.get(&k) else { continue };
            threads[ti].steps[si].order = Some((r, next_rank[r as usize]));
            next_rank[r as usize] += 1;
        }
        let origin_ns = threads.iter().filter_map(|t| t.steps.first()).map(|s| s.op.start_ns).min().unwrap_or(0);
        let end = threads
            .iter()
            .flat_map(|t| t.steps.iter())
            .map(|s| s.op.start_ns.saturating_add(s.op.dur_ns))
            .max()
            .unwrap_or(origin_ns);
        ReplayPlan {
            threads,
            files,
            paths,
            strip: strip.to_path_buf(),
            skipped,
            origin_ns,
            recorded_span_ns: end.saturating_sub(origin_ns),
            done: (0..shared.len()).map(|_| AtomicU64::new(0)).collect(),
            abort: AtomicBool::new(false),
        }
    }

    /// The calls the replay will make, by class (what a faithful replay's result counts).
    pub fn expected(&self) -> BTreeMap<OpClass, (u64, u64)> {
        let mut m: BTreeMap<OpClass, (u64, u64)> = BTreeMap::new();
        for th in &self.threads {
            for s in &th.steps {
                let (class, bytes) = class_of(&s.op, self.files.get(&s.op.file));
                let e = m.entry(class).or_default();
                e.0 += 1;
                e.1 += bytes;
            }
        }
        m
    }

    /// Files that must exist before the replay starts, and the size each needs: opened
    /// without O_CREAT, opened before the trace, or used by a thread that did not open them.
    pub fn needs(&self) -> BTreeMap<PathBuf, u64> {
        let mut need: BTreeMap<PathBuf, u64> = BTreeMap::new();
        let mut created: HashSet<u32> = HashSet::new();
        let mut foreign: HashSet<u32> = HashSet::new();
        for th in &self.threads {
            foreign.extend(th.foreign.iter().copied());
        }
        // Visit in recorded time order so "first open" is the first in the trace.
        let mut all: Vec<&Step> = self.threads.iter().flat_map(|t| t.steps.iter()).collect();
        all.sort_by_key(|s| s.op.start_ns);
        let mut extent: HashMap<u32, u64> = HashMap::new();
        let mut pos: HashMap<u32, u64> = HashMap::new();
        for s in all {
            let op = &s.op;
            let Some(f) = self.files.get(&op.file) else { continue };
            match op.kind {
                Kind::Open => {
                    if op.flags & oflags::O_CREAT != 0 && !need.contains_key(&f.rel) {
                        created.insert(op.file);
                    } else if !created.contains(&op.file) {
                        need.entry(f.rel.clone()).or_insert(0);
                    }
                    pos.insert(op.file, 0);
                }
                Kind::Lseek => {
                    pos.insert(op.file, op.result.max(0) as u64);
                }
                k if k.reads() || k.writes() => {
                    let at = match k {
                        Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev => op.offset,
                        _ => {
                            let p = pos.entry(op.file).or_insert(0);
                            let at = *p;
                            *p = p.saturating_add(op.result.max(0) as u64);
                            at
                        }
                    };
                    if k.reads() {
                        let e = extent.entry(op.file).or_insert(0);
                        *e = (*e).max(at.saturating_add(op.result.max(0) as u64));
                    }
                }
                _ => {}
            }
        }
        for (&id, f) in &self.files {
            if f.before || foreign.contains(&id) {
                need.entry(f.rel.clone()).or_insert(0);
            }
        }
        for (id, e) in extent {
            if let Some(f) = self.files.get(&id) {
                if let Some(n) = need.get_mut(&f.rel) {
                    *n = (*n).max(e);
                }
            }
        }
        need
    }
}

/// The class a step counts under, and the bytes it moves.
fn class_of(op: &Op, file: Option<&ReplayFile>) -> (OpClass, u64) {
    let moved = op.result.max(0) as u64;
    match op.kind {
        Kind::Open if op.flags & oflags::O_CREAT != 0 => (OpClass::Create, 0),
        Kind::Open => (OpClass::Open, 0),
        Kind::Close => (OpClass::Close, 0),
        k if k.reads() => (OpClass::Read, moved),
        k if k.writes() => (OpClass::Write, moved),
        k if k.is_sync() => (OpClass::Sync, 0),
        Kind::Lseek => (OpClass::Seek, 0),
        Kind::Ftruncate => (OpClass::Truncate, 0),
        Kind::Fallocate => (OpClass::Allocate, 0),
        Kind::Unlink if op.flags & 0x200 != 0 => (OpClass::Rmdir, 0),
        Kind::Unlink => (OpClass::Unlink, 0),
        Kind::Rename => (OpClass::Rename, 0),
        Kind::Mkdir => (OpClass::Mkdir, 0),
        _ => {
            let _ = file;
            (OpClass::Stat, 0)
        }
    }
}

/// The engine's open flags for a recorded open's bits.
pub fn open_flags(bits: u32) -> OpenFlags {
    OpenFlags {
        read: bits & 3 != oflags::O_WRONLY,
        write: bits & 3 != 0,
        create: bits & oflags::O_CREAT != 0,
        exclusive: bits & oflags::O_EXCL != 0,
        truncate: bits & oflags::O_TRUNC != 0,
        append: bits & oflags::O_APPEND != 0,
        direct: bits & oflags::O_DIRECT != 0,
        dsync: bits & oflags::O_DSYNC != 0 && bits & oflags::O_SYNC != oflags::O_SYNC,
        sync: bits & oflags::O_SYNC == oflags::O_SYNC,
    }
}

/// CRC-32 and length of a file: what a plan records and a job checks.
pub fn fingerprint(path: &Path) -> io::Result<(u64, u32)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut crc = flate2::Crc::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        crc.update(&buf[..n]);
    }
    Ok((crc.amount() as u64, crc.sum()))
}

/// Read and plan a replay job's trace, checking it is the file the plan named.
pub fn load(r: &ReplayJob) -> Result<ReplayPlan, String> {
    let (bytes, crc) =
        fingerprint(&r.trace).map_err(|e| format!("cannot read the trace {}: {e}", r.trace.display()))?;
    if (bytes, crc) != (r.trace_bytes, r.trace_crc32) {
        return Err(format!(
            "the trace {} is not the one planned ({bytes} bytes, CRC-32 {crc:08x}; the plan says {} bytes, {:08x})",
            r.trace.display(),
            r.trace_bytes,
            r.trace_crc32
        ));
    }
    let f = std::fs::File::open(&r.trace).map_err(|e| format!("cannot open {}: {e}", r.trace.display()))?;
    let t = Trace::read(io::BufReader::new(f)).map_err(|e| format!("{}: {e}", r.trace.display()))?;
    Ok(ReplayPlan::build(&t, &r.strip))
}

type Registry = Mutex<Vec<(String, Weak<ReplayPlan>)>>;
static PLANS: Registry = Mutex::new(Vec::new());

/// The plan the workers of one job share (read once, ranks counted together).
fn shared_plan(job: &Job, r: &ReplayJob) -> Result<Arc<ReplayPlan>, String> {
    let key = format!("{}\0{}\0{:08x}", job.name, r.trace.display(), r.trace_crc32);
    let mut reg = PLANS.lock().map_err(|_| "a replay worker panicked".to_string())?;
    reg.retain(|(_, w)| w.strong_count() > 0);
    if let Some(p) = reg.iter().find(|(k, _)| *k == key).and_then(|(_, w)| w.upgrade()) {
        return Ok(p);
    }
    let p = Arc::new(load(r)?);
    reg.push((key, Arc::downgrade(&p)));
    Ok(p)
}

/// One traced thread's replay.
pub struct ReplaySource {
    plan: Arc<ReplayPlan>,
    thread: usize,
    root: PathBuf,
    timing: Timing,
    i: usize,
    start: Option<Stamp>,
    due: Option<Stamp>,
    issued: Option<usize>,
    slots: HashMap<u32, u32>,
    free: Vec<u32>,
    next_slot: u32,
    pos: HashMap<u32, u64>,
    names: HashMap<PathBuf, super::NameId>,
}

impl ReplaySource {
    /// The source of worker `thread` of a replay job (the `thread`-th traced thread that has
    /// calls to replay).
    pub fn new(job: &Job, r: &ReplayJob, thread: u32) -> Result<ReplaySource, String> {
        let plan = shared_plan(job, r)?;
        if thread as usize >= plan.threads.len() {
            return Err(format!(
                "the trace has {} threads to replay; the job asks for thread {}",
                plan.threads.len(),
                thread + 1
            ));
        }
        Ok(ReplaySource {
            plan,
            thread: thread as usize,
            root: job.target.clone(),
            timing: r.timing,
            i: 0,
            start: None,
            due: None,
            issued: None,
            slots: HashMap::new(),
            free: Vec::new(),
            next_slot: 0,
            pos: HashMap::new(),
            names: HashMap::new(),
        })
    }

    fn me(&self) -> &ThreadPlan {
        &self.plan.threads[self.thread]
    }

    fn slot(&mut self, file: u32) -> u32 {
        if let Some(&s) = self.slots.get(&file) {
            return s;
        }
        let s = self.free.pop().unwrap_or_else(|| {
            self.next_slot += 1;
            self.next_slot - 1
        });
        self.slots.insert(file, s);
        s
    }

    fn scaled(&self, ns: u64) -> Duration {
        match self.timing {
            Timing::Scale(x) => Duration::from_nanos((ns as f64 / x) as u64),
            _ => Duration::from_nanos(ns),
        }
    }

    /// When step `i` is due, asked right after step `i - 1` completed (at `now`).
    fn due_of(&self, i: usize, now: Stamp) -> Option<Stamp> {
        let start = self.start?;
        let steps = &self.me().steps;
        let op = &steps[i].op;
        match self.timing {
            Timing::Afap => None,
            Timing::Recorded => Some(start + Duration::from_nanos(op.start_ns.saturating_sub(self.plan.origin_ns))),
            Timing::Think | Timing::Scale(_) => Some(if i == 0 {
                start + self.scaled(op.start_ns.saturating_sub(self.plan.origin_ns))
            } else {
                let prev = &steps[i - 1].op;
                let gap = op.start_ns.saturating_sub(prev.start_ns.saturating_add(prev.dur_ns));
                now + self.scaled(gap.saturating_sub(self.me().tracer_gap_ns))
            }),
        }
    }

    fn call(&mut self, op: &Op, ctx: &mut Ctx) -> Result<Call, String> {
        let len = op.size.min(MAX_BUFFER) as u32;
        let data = |kind, file, offset| Call::Data { kind, file, offset, len };
        let mut name = |ctx: &mut Ctx, rel: &Path| -> Result<super::NameId, String> {
            if let Some(&n) = self.names.get(rel) {
                return Ok(n);
            }
            let n = ctx.names.add(rel)?;
            self.names.insert(rel.to_path_buf(), n);
            Ok(n)
        };
        Ok(match op.kind {
            Kind::Open => {
                let rel = self.plan.files.get(&op.file).map(|f| f.rel.clone()).unwrap_or_default();
                let n = name(ctx, &rel)?;
                let file = self.slot(op.file);
                self.pos.insert(op.file, 0);
                Call::Open { name: n, file, flags: open_flags(op.flags) }
            }
            Kind::Close => {
                let file = self.slot(op.file);
                self.slots.remove(&op.file);
                self.free.push(file);
                Call::Close { file }
            }
            Kind::Unlink | Kind::Mkdir => {
                let rel = self.plan.paths.get(&op.file).cloned().unwrap_or_default();
                let n = name(ctx, &rel)?;
                match op.kind {
                    Kind::Mkdir => Call::Mkdir { name: n },
                    _ if op.flags & 0x200 != 0 => Call::Rmdir { name: n },
                    _ => Call::Unlink { name: n },
                }
            }
            Kind::Rename => {
                let from = self.plan.paths.get(&op.file).cloned().unwrap_or_default();
                let to = self.plan.paths.get(&(op.offset as u32)).cloned().unwrap_or_default();
                Call::Rename { from: name(ctx, &from)?, to: name(ctx, &to)? }
            }
            k => {
                let file = self.slot(op.file);
                let pos = self.pos.entry(op.file).or_insert(0);
                let moved = op.result.max(0) as u64;
                match k {
                    Kind::Read => {
                        *pos = pos.saturating_add(moved);
                        data(OpKind::ReadCur, file, 0)
                    }
                    Kind::Write => {
                        *pos = pos.saturating_add(moved);
                        data(OpKind::WriteCur, file, 0)
                    }
                    Kind::Pread => data(OpKind::Read, file, op.offset),
                    Kind::Pwrite => data(OpKind::Write, file, op.offset),
                    Kind::Preadv => data(OpKind::Readv(op.count.clamp(1, 1024) as u16), file, op.offset),
                    Kind::Pwritev => data(OpKind::Writev(op.count.clamp(1, 1024) as u16), file, op.offset),
                    // readv/writev at the position: preadv/pwritev at the tracked position.
                    Kind::Readv | Kind::Writev => {
                        let at = *pos;
                        *pos = pos.saturating_add(moved);
                        let n = op.count.clamp(1, 1024) as u16;
                        data(if k == Kind::Readv { OpKind::Readv(n) } else { OpKind::Writev(n) }, file, at)
                    }
                    Kind::Lseek => {
                        *pos = op.result.max(0) as u64;
                        data(OpKind::Seek, file, op.result.max(0) as u64)
                    }
                    Kind::Fsync => data(OpKind::Fsync, file, 0),
                    // The engine has no sync_file_range: its nearest call is fdatasync.
                    Kind::Fdatasync | Kind::SyncFileRange => data(OpKind::Fdatasync, file, 0),
                    Kind::Ftruncate => data(OpKind::Ftruncate, file, op.offset),
                    Kind::Fallocate => data(OpKind::Fallocate, file, op.offset),
                    _ => return Err(format!("a recorded {} cannot be replayed", k.as_str())),
                }
            }
        })
    }
}

impl Source for ReplaySource {
    fn buffer_len(&self) -> usize {
        self.me().buffer_len
    }

    fn setup(&mut self) -> Result<Vec<SetupFile>, String> {
        let mut out = Vec::new();
        for id in self.me().foreign.clone() {
            let Some(f) = self.plan.files.get(&id).cloned() else { continue };
            let path = self.root.join(&f.rel);
            let mut flags = open_flags(f.flags);
            flags.create = false;
            flags.exclusive = false;
            flags.truncate = false;
            if f.before {
                // Flags unknown: read and write, as the trace may do either.
                flags.read = true;
                flags.write = true;
            }
            let file = iolab_engine::open_target(&path, flags).map_err(|e| {
                format!(
                    "{}: {e} (a file the trace used without opening it in this thread; run with --prepare to create it)",
                    path.display()
                )
            })?;
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            let index = self.slot(id);
            out.push(SetupFile { index, file, len, path: path.display().to_string() });
        }
        Ok(out)
    }

    fn start(&mut self, at: Stamp) {
        self.start = Some(at);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        if self.i >= self.me().steps.len() || ctx.ending || self.plan.abort.load(Ordering::Relaxed) {
            return Next::Done;
        }
        let i = self.i;
        if self.due.is_none() {
            self.due = self.due_of(i, ctx.now).or(Some(ctx.now));
        }
        let step = self.me().steps[i];
        if let Some((r, rank)) = step.order {
            if self.plan.done[r as usize].load(Ordering::Acquire) < rank {
                return Next::WaitUntil(ctx.now + Duration::from_micros(20));
            }
        }
        if let Some(d) = self.due {
            if ctx.now < d {
                return Next::WaitUntil(d);
            }
        }
        let call = match self.call(&step.op, ctx) {
            Ok(c) => c,
            Err(e) => {
                self.plan.abort.store(true, Ordering::Relaxed);
                eprintln!("replay: {e}");
                return Next::Done;
            }
        };
        self.i += 1;
        self.due = None;
        self.issued = Some(i);
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], result: &io::Result<usize>) -> Result<(), String> {
        let Some(i) = self.issued.take() else { return Ok(()) };
        let step = self.me().steps[i];
        if let Some((r, _)) = step.order {
            self.plan.done[r as usize].fetch_add(1, Ordering::Release);
        }
        if result.is_err() {
            self.plan.abort.store(true, Ordering::Relaxed);
            let path = self
                .plan
                .files
                .get(&step.op.file)
                .map(|f| self.root.join(&f.rel).display().to_string())
                .unwrap_or_else(|| self.root.display().to_string());
            return Err(format!(
                "replaying call {} of traced thread {}: {}",
                i + 1,
                self.me().tid,
                describe_failure(call, &path, step.op.size as u32, step.op.offset, result)
            ));
        }
        Ok(())
    }
}

impl Drop for ReplaySource {
    fn drop(&mut self) {
        // A thread that ends early (an error, a stop) must not leave others waiting on ranks.
        if self.i < self.me().steps.len() {
            self.plan.abort.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(text: &str) -> Trace {
        let mut imp = iolab_trace::Importer::new(Vec::new(), "test").unwrap();
        imp.read_file(text.as_bytes(), "test", None).unwrap();
        let (bytes, sum) = imp.finish().unwrap();
        assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
        Trace::read(&bytes[..]).unwrap()
    }

    // Thread 11 creates /d/a and writes it; thread 12 writes it through the shared fd, then
    // both write their own files; /d/log is read by 12 only; /etc/x is outside the data dir.
    const TEXT: &str = "\
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
12  1.000900 close(4</d/log>) = 0 <0.000010>
";

    #[test]
    fn shared_files_are_ranked_in_trace_order_and_the_rest_runs_free() {
        let t = trace(TEXT);
        assert_eq!(default_strip(&t), PathBuf::from("/d"));
        let p = ReplayPlan::build(&t, Path::new("/d"));
        assert_eq!(p.threads.len(), 2);
        let (a, b) = (&p.threads[0], &p.threads[1]);
        assert_eq!((a.tid, b.tid), (11, 12));
        // /d/a is shared: open(11) rank 0, pwrite(11) 1, pwrite(12) 2, fsync(11) 3, lseek(11) 4.
        let ranks = |th: &ThreadPlan| th.steps.iter().map(|s| s.order.map(|o| o.1)).collect::<Vec<_>>();
        assert_eq!(ranks(a), vec![Some(0), Some(1), Some(3), Some(4)]);
        assert_eq!(ranks(b), vec![Some(2), None, None, None]);
        // Thread 12 uses /d/a without opening it: it opens it in setup, so it must exist.
        assert_eq!(b.foreign.len(), 1);
        let needs = p.needs();
        assert_eq!(needs.get(Path::new("a")), Some(&0));
        assert_eq!(needs.get(Path::new("log")), Some(&8192), "read up to 8 KiB");
        assert!(!p.files.values().any(|f| f.rel.starts_with("etc")), "outside the data directory");
        let e = p.expected();
        assert_eq!(e[&OpClass::Write], (2, 8192));
        assert_eq!((e[&OpClass::Sync].0, e[&OpClass::Seek].0, e[&OpClass::Create].0), (1, 1, 1));
        assert_eq!((e[&OpClass::Open].0, e[&OpClass::Read], e[&OpClass::Close].0), (1, (1, 8192), 1));
        assert!(p.skipped.get("clone3") == Some(&2) && p.skipped.get("open") == Some(&1));
        // Smallest gap of thread 11: open's end (1.000110) to pwrite (1.000200); fsync keeps its
        // unfinished half's start (1.000600 + 0.0001 to lseek at 1.000800: 100 µs).
        assert_eq!(a.tracer_gap_ns, 90_000);
        assert_eq!(a.buffer_len, 4096);
        assert_eq!(b.buffer_len, 65536);
        let f = open_flags(oflags::O_RDWR | oflags::O_CREAT | oflags::O_DIRECT);
        assert!(f.read && f.write && f.create && f.direct && !f.truncate && !f.sync && !f.dsync);
        let s = open_flags(oflags::O_WRONLY | oflags::O_SYNC);
        assert!(!s.read && s.write && s.sync && !s.dsync);
    }
}
