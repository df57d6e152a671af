//! What `iolab trace show` prints: per thread and per file the operation counts, bytes, a size
//! histogram, the access pattern (sequential, strided with its stride, random), the writes
//! between flushes, O_DIRECT use and the time per operation type; and a time model — what the
//! trace would take at a device rate and latency — beside what it took, counting only calls on
//! storage (files and block devices; pipes, sockets, /dev/zero and the like are skipped and
//! said). It reads a trace as a stream ([`Analyzer`]): memory holds the threads, one small
//! entry per opening and each distinct path, not the calls; past [`MAX_LISTED`] threads or
//! files the rest are summed into one line.

use crate::format::{oflags, AsyncOp, FormatError, Kind, Op, Overhead, Record, Trace, NO_FILE};
use crate::rings::{DeviceAcc, DeviceStat, RingAcc, RingStat};
pub use crate::stat::{OpStat, Pattern};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Threads, and files, listed one by one; more are summed into one entry.
pub const MAX_LISTED: usize = 4096;
/// Distinct strides counted per access pattern; more count as "other".
const STRIDES_KEPT: usize = 64;

#[derive(Debug, Clone, Serialize)]
pub struct FileStat {
    pub path: String,
    /// Openings of this path in the trace.
    pub openings: u64,
    /// The open flags as strace writes them, or `(opened before the trace)` when the trace
    /// never saw it opened (`-p` attach): its flags, O_DIRECT among them, are then unknown.
    pub flags: String,
    pub direct: bool,
    pub ops: BTreeMap<String, OpStat>,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// Data calls by size: `"4096"` means sizes in [4096, 8192).
    pub sizes: BTreeMap<u64, u64>,
    pub pattern: Pattern,
    pub syncs: u64,
    /// Writes per flush (fsync, fdatasync, sync_file_range), when it flushes.
    pub writes_per_sync: Option<f64>,
    pub bytes_per_sync: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadStat {
    /// The thread (0 for the line summing threads past [`MAX_LISTED`]).
    pub tid: u32,
    pub tgid: u32,
    pub ops: BTreeMap<String, OpStat>,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub syncs: u64,
    /// Data calls by size, as for files.
    pub sizes: BTreeMap<u64, u64>,
    /// How the thread's data calls move, each compared with its previous one on the same file.
    pub pattern: Pattern,
    /// From the thread's first call's start to its last call's end, seconds.
    pub span_s: f64,
    /// Asynchronous operations it submitted (io_uring, libaio), by kind: count, bytes, time
    /// in flight.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub submitted: BTreeMap<String, OpStat>,
}

/// Calls the time model left out, as not storage.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Skipped {
    pub calls: u64,
    pub bytes: u64,
}

/// The time model's inputs and answer.
#[derive(Debug, Clone, Serialize)]
pub struct Model {
    pub rate_bytes_per_s: f64,
    pub latency_s: f64,
    /// Bytes of data calls on storage (files and block devices).
    pub bytes: u64,
    /// Data calls and flushes on storage, each charged one latency.
    pub ios: u64,
    /// bytes / rate + ios × latency, all on one device one at a time.
    pub modelled_s: f64,
    /// What the trace took: its first call's start to its last call's end.
    pub recorded_s: f64,
    /// Data calls and flushes not on storage, by what they were on (`pipes`, `sockets`,
    /// `devices` such as /dev/zero, `/proc and /sys`, `unknown descriptors` without a `-y`
    /// path): left out of the model.
    pub skipped: BTreeMap<String, Skipped>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub source: String,
    pub elapsed_s: f64,
    pub ops: u64,
    pub bad_lines: u64,
    pub totals: BTreeMap<String, OpStat>,
    pub threads: Vec<ThreadStat>,
    pub files: Vec<FileStat>,
    /// Threads, and files, summed into one entry past [`MAX_LISTED`] (0: none).
    pub threads_summed: u64,
    pub files_summed: u64,
    pub model: Option<Model>,
    /// How the trace was recorded (version 2 traces): `ebpf`, `strace`, `import`.
    pub via: Option<String>,
    pub via_detail: Option<String>,
    /// Events the recorder lost, by why (none: nothing was lost).
    pub lost: BTreeMap<String, u64>,
    /// The tracer's cost taken off the times (strace recordings).
    pub overhead: Option<Overhead>,
    /// Time the threads waited for a CPU between their calls, summed (eBPF recordings of
    /// format version 3; 0 otherwise), seconds: what replay's think timing does not wait.
    pub cpu_wait_s: f64,
    /// Asynchronous I/O rings (io_uring rings, libaio contexts).
    pub rings: Vec<RingStat>,
    /// Block devices of a block-level trace.
    pub devices: Vec<DeviceStat>,
}

fn bucket(size: u64) -> u64 {
    if size == 0 {
        0
    } else {
        1u64 << (63 - size.leading_zeros())
    }
}

/// What a path is, for the time model: `None` for storage (a file or a block device).
pub fn not_storage(path: &str) -> Option<&'static str> {
    const BLOCK: &[&str] = &[
        "sd", "vd", "hd", "xvd", "nvme", "md", "dm-", "mapper/", "loop", "mmcblk", "sr", "disk/", "rbd", "nbd", "drbd",
    ];
    if path.starts_with("pipe:") {
        Some("pipes")
    } else if path.starts_with("socket:") {
        Some("sockets")
    } else if path.starts_with("anon_inode:") {
        Some("anonymous inodes (eventfd, epoll, io_uring)")
    } else if let Some(dev) = path.strip_prefix("/dev/") {
        if BLOCK.iter().any(|b| dev.starts_with(b)) {
            None
        } else {
            Some("devices (/dev/zero, /dev/null, terminals)")
        }
    } else if path.starts_with("/proc/") || path.starts_with("/sys/") {
        Some("/proc and /sys")
    } else if !path.starts_with('/') {
        Some("unknown descriptors (no -y path)")
    } else {
        None
    }
}

/// How moves between data calls are tallied into a [`Pattern`]: each call is compared with the
/// previous one on the same file.
#[derive(Default)]
struct PatternAcc {
    /// Per file, its last data call: (offset, size).
    last: HashMap<u32, (u64, u64)>,
    seq: u64,
    strides: HashMap<i64, u64>,
    moves: u64,
    any: bool,
}

impl PatternAcc {
    fn add(&mut self, file: u32, at: u64, size: u64) {
        self.any = true;
        if let Some((last_at, last_len)) = self.last.insert(file, (at, size)) {
            self.moves += 1;
            if at == last_at.saturating_add(last_len) {
                self.seq += 1;
            }
            let stride = (at as i64).wrapping_sub(last_at as i64);
            if let Some(n) = self.strides.get_mut(&stride) {
                *n += 1;
            } else if self.strides.len() < STRIDES_KEPT {
                self.strides.insert(stride, 1);
            }
        }
    }

    fn pattern(&self) -> Pattern {
        if self.moves == 0 {
            return if self.any { Pattern::Sequential } else { Pattern::None };
        }
        if self.seq * 10 >= self.moves * 8 {
            return Pattern::Sequential;
        }
        let (stride, n) = self
            .strides
            .iter()
            .max_by_key(|(s, n)| (**n, std::cmp::Reverse(s.unsigned_abs())))
            .map(|(s, n)| (*s, *n))
            .unwrap_or((0, 0));
        if n * 10 >= self.moves * 8 {
            Pattern::Strided { stride }
        } else {
            Pattern::Random
        }
    }
}

#[derive(Default)]
struct FileAcc {
    openings: u64,
    before: bool,
    flags: u32,
    ops: BTreeMap<String, OpStat>,
    read_bytes: u64,
    written_bytes: u64,
    sizes: BTreeMap<u64, u64>,
    syncs: u64,
    writes: u64,
    pattern: PatternAcc,
}

struct ThreadAcc {
    stat: ThreadStat,
    pos: HashMap<u32, u64>,
    pattern: PatternAcc,
    lo: u64,
    hi: u64,
}

/// An opening, as the analysis needs it: its path (an index into the path table) and flags.
struct Opening {
    path: u32,
    before: bool,
}

fn add(m: &mut BTreeMap<String, OpStat>, name: &str, bytes: u64, dur_ns: u64) {
    let s = match m.get_mut(name) {
        Some(s) => s,
        None => m.entry(name.to_string()).or_default(),
    };
    s.ops += 1;
    s.bytes = s.bytes.saturating_add(bytes);
    s.time_s += dur_ns as f64 / 1e9;
}

/// The analysis, fed one record at a time.
pub struct Analyzer {
    model: Option<(f64, f64)>,
    source: String,
    names: HashMap<u32, String>,
    openings: HashMap<u32, Opening>,
    paths: Vec<String>,
    path_index: HashMap<String, u32>,
    /// Per path (index), its accumulator; paths past MAX_LISTED go to `other_files`.
    files: HashMap<u32, FileAcc>,
    other_files: FileAcc,
    files_summed: std::collections::HashSet<u32>,
    threads: HashMap<u32, ThreadAcc>,
    other_threads: Option<ThreadAcc>,
    threads_summed: u64,
    tgids: HashMap<u32, u32>,
    totals: BTreeMap<String, OpStat>,
    ops: u64,
    model_bytes: u64,
    model_ios: u64,
    skipped: BTreeMap<String, Skipped>,
    bad_lines: u64,
    first_ns: u64,
    last_ns: u64,
    via: Option<(String, String)>,
    lost: BTreeMap<String, u64>,
    overhead: Option<Overhead>,
    cpu_wait_ns: u64,
    rings: BTreeMap<u32, RingAcc>,
    devices: BTreeMap<u32, (String, DeviceAcc)>,
}

impl Analyzer {
    /// `model`: (bytes per second, seconds of latency) for the time model.
    pub fn new(model: Option<(f64, f64)>) -> Analyzer {
        Analyzer {
            model,
            source: String::new(),
            names: HashMap::new(),
            openings: HashMap::new(),
            paths: Vec::new(),
            path_index: HashMap::new(),
            files: HashMap::new(),
            other_files: FileAcc::default(),
            files_summed: Default::default(),
            threads: HashMap::new(),
            other_threads: None,
            threads_summed: 0,
            tgids: HashMap::new(),
            totals: BTreeMap::new(),
            ops: 0,
            model_bytes: 0,
            model_ios: 0,
            skipped: BTreeMap::new(),
            bad_lines: 0,
            first_ns: 0,
            last_ns: 0,
            via: None,
            lost: BTreeMap::new(),
            overhead: None,
            cpu_wait_ns: 0,
            rings: BTreeMap::new(),
            devices: BTreeMap::new(),
        }
    }

    fn path_id(&mut self, path: String) -> u32 {
        if let Some(&i) = self.path_index.get(&path) {
            return i;
        }
        let i = self.paths.len() as u32;
        self.path_index.insert(path.clone(), i);
        self.paths.push(path);
        i
    }

    pub fn record(&mut self, r: Record) {
        match r {
            Record::Header { source, .. } => self.source = source,
            Record::Name { id, name } => {
                self.names.insert(id, name);
            }
            Record::File { id, path, flags, before, .. } => {
                let p = self.path_id(path);
                self.openings.insert(id, Opening { path: p, before });
                let f = self.file_acc(p);
                f.before |= before;
                if !before {
                    f.flags |= flags;
                }
            }
            Record::Thread { tid, tgid } => {
                self.tgids.insert(tid, tgid);
            }
            Record::Chunk { tid, ops } => {
                for op in &ops {
                    self.op(tid, op);
                }
            }
            Record::Path { .. } => {}
            Record::End { bad_lines, first_ns, last_ns, .. } => {
                self.bad_lines = bad_lines;
                self.first_ns = first_ns;
                self.last_ns = last_ns;
            }
            Record::Recorder { via, detail } => self.via = Some((via, detail)),
            Record::Lost { why, events } => *self.lost.entry(why).or_default() += events,
            Record::Overhead(o) => self.overhead = Some(o),
            Record::Ring { id, tgid, kind, entries, .. } => {
                if self.rings.len() < MAX_LISTED {
                    self.rings.insert(id, RingAcc::new(kind, tgid, entries));
                }
            }
            Record::RingOps { ring, ops } => {
                for op in &ops {
                    self.async_op(ring, op);
                }
            }
            Record::Device { dev, name } => {
                self.devices.entry(dev).or_insert_with(|| (String::new(), DeviceAcc::default())).0 = name;
            }
            Record::CpuWaits { waits, .. } => {
                self.cpu_wait_ns = waits.iter().fold(self.cpu_wait_ns, |a, w| a.saturating_add(*w));
            }
            Record::BlockIos { dev, ios } => {
                if self.devices.len() < MAX_LISTED || self.devices.contains_key(&dev) {
                    let d = &mut self.devices.entry(dev).or_insert_with(|| (String::new(), DeviceAcc::default())).1;
                    for io in &ios {
                        d.io(io);
                    }
                }
            }
        }
    }

    /// One asynchronous operation: into its ring's figures, its submitter's and its file's.
    fn async_op(&mut self, ring: u32, op: &AsyncOp) {
        if let Some(r) = self.rings.get_mut(&ring) {
            r.op(op);
        }
        let done = op.result != i64::MIN;
        let moved = if (op.kind.reads() || op.kind.writes()) && op.result > 0 { op.result as u64 } else { 0 };
        let in_flight = if done { op.complete_ns.saturating_sub(op.submit_ns) } else { 0 };
        let name = format!("async {}", op.kind.as_str());
        let th = self.thread_acc(op.tid);
        add(&mut th.stat.submitted, &name, moved, in_flight);
        th.lo = th.lo.min(op.submit_ns);
        th.hi = th.hi.max(op.submit_ns);
        if op.kind.reads() {
            th.stat.read_bytes = th.stat.read_bytes.saturating_add(moved);
        } else if op.kind.writes() {
            th.stat.written_bytes = th.stat.written_bytes.saturating_add(moved);
        } else if op.kind.is_sync() {
            th.stat.syncs += 1;
        }
        add(&mut self.totals, &name, moved, in_flight);
        let Some(path) = self.openings.get(&op.file).map(|o| o.path) else { return };
        let f = self.file_acc(path);
        add(&mut f.ops, &name, moved, in_flight);
        if op.kind.reads() {
            f.read_bytes = f.read_bytes.saturating_add(moved);
        } else if op.kind.writes() {
            f.written_bytes = f.written_bytes.saturating_add(moved);
            f.writes += 1;
        } else if op.kind.is_sync() {
            f.syncs += 1;
        }
        if op.kind.reads() || op.kind.writes() {
            *f.sizes.entry(bucket(op.size)).or_default() += 1;
            if op.offset != u64::MAX {
                f.pattern.add(0, op.offset, op.size);
            }
        }
    }

    fn file_acc(&mut self, path: u32) -> &mut FileAcc {
        if !self.files.contains_key(&path) && self.files.len() >= MAX_LISTED {
            self.files_summed.insert(path);
            return &mut self.other_files;
        }
        self.files.entry(path).or_default()
    }

    fn thread_acc(&mut self, tid: u32) -> &mut ThreadAcc {
        let fresh = |tid| ThreadAcc {
            stat: ThreadStat {
                tid,
                tgid: tid,
                ops: BTreeMap::new(),
                read_bytes: 0,
                written_bytes: 0,
                syncs: 0,
                sizes: BTreeMap::new(),
                pattern: Pattern::None,
                span_s: 0.0,
                submitted: BTreeMap::new(),
            },
            pos: HashMap::new(),
            pattern: PatternAcc::default(),
            lo: u64::MAX,
            hi: 0,
        };
        if !self.threads.contains_key(&tid) && self.threads.len() >= MAX_LISTED {
            self.threads_summed += 1;
            return self.other_threads.get_or_insert_with(|| fresh(0));
        }
        self.threads.entry(tid).or_insert_with(|| fresh(tid))
    }

    fn op(&mut self, tid: u32, op: &Op) {
        self.ops += 1;
        let name = match op.kind {
            Kind::Other(i) => self.names.get(&i).cloned().unwrap_or_else(|| "other".into()),
            k => k.as_str().to_string(),
        };
        let data = op.kind.reads() || op.kind.writes();
        let moved = if data && op.result > 0 { op.result as u64 } else { 0 };
        add(&mut self.totals, &name, moved, op.dur_ns);
        let opening = if op.file == NO_FILE || matches!(op.kind, Kind::Unlink | Kind::Rename | Kind::Mkdir) {
            None
        } else {
            self.openings.get(&op.file).map(|o| (o.path, o.before))
        };
        // The model: data calls and flushes on storage only.
        if data || op.kind.is_sync() {
            let what = match opening {
                Some((p, _)) => not_storage(&self.paths[p as usize]),
                None => Some("unknown descriptors (no -y path)"),
            };
            match what {
                None => {
                    self.model_ios += 1;
                    if data {
                        self.model_bytes = self.model_bytes.saturating_add(op.size);
                    }
                }
                Some(w) => {
                    let s = self.skipped.entry(w.to_string()).or_default();
                    s.calls += 1;
                    s.bytes = s.bytes.saturating_add(moved);
                }
            }
        }
        let th = self.thread_acc(tid);
        th.lo = th.lo.min(op.start_ns);
        th.hi = th.hi.max(op.start_ns.saturating_add(op.dur_ns));
        add(&mut th.stat.ops, &name, moved, op.dur_ns);
        if op.kind.reads() {
            th.stat.read_bytes = th.stat.read_bytes.saturating_add(moved);
        }
        if op.kind.writes() {
            th.stat.written_bytes = th.stat.written_bytes.saturating_add(moved);
        }
        if op.kind.is_sync() {
            th.stat.syncs += 1;
        }
        let Some((path, _)) = opening else { return };
        // Where a data call lands: its offset, or the position the opening's calls moved to.
        let at = match op.kind {
            Kind::Open => {
                th.pos.insert(op.file, 0);
                None
            }
            Kind::Lseek if op.result >= 0 => {
                th.pos.insert(op.file, op.result as u64);
                None
            }
            Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev => Some(op.offset),
            k if k.reads() || k.writes() => {
                let p = th.pos.entry(op.file).or_insert(0);
                let at = *p;
                *p = p.saturating_add(moved);
                Some(at)
            }
            _ => None,
        };
        if let Some(at) = at {
            *th.stat.sizes.entry(bucket(op.size)).or_default() += 1;
            th.pattern.add(op.file, at, op.size);
        }
        let f = self.file_acc(path);
        add(&mut f.ops, &name, moved, op.dur_ns);
        match op.kind {
            Kind::Open => {
                f.openings += 1;
            }
            k if k.is_sync() => f.syncs += 1,
            k if k.reads() || k.writes() => {
                if k.reads() {
                    f.read_bytes = f.read_bytes.saturating_add(moved);
                } else {
                    f.written_bytes = f.written_bytes.saturating_add(moved);
                    f.writes += 1;
                }
                *f.sizes.entry(bucket(op.size)).or_default() += 1;
                if let Some(at) = at {
                    // A path's calls, whichever opening made them, one after the other.
                    f.pattern.add(0, at, op.size);
                }
            }
            _ => {}
        }
    }

    pub fn finish(self) -> Analysis {
        let tgids = &self.tgids;
        let stat = |mut a: ThreadAcc| {
            a.stat.pattern = a.pattern.pattern();
            if a.lo <= a.hi {
                a.stat.span_s = (a.hi - a.lo) as f64 / 1e9;
            }
            a.stat.tgid = tgids.get(&a.stat.tid).copied().unwrap_or(a.stat.tid);
            a.stat
        };
        let mut threads: Vec<ThreadStat> = self.threads.into_values().map(stat).collect();
        threads.sort_by_key(|t| t.tid);
        if let Some(o) = self.other_threads {
            threads.push(stat(o));
        }
        let file_stat = |path: String, f: FileAcc| FileStat {
            path,
            openings: f.openings,
            flags: if f.openings == 0 && f.before {
                "(opened before the trace)".to_string()
            } else {
                oflags::show(f.flags)
            },
            direct: f.flags & oflags::O_DIRECT != 0,
            ops: f.ops,
            read_bytes: f.read_bytes,
            written_bytes: f.written_bytes,
            sizes: f.sizes,
            pattern: f.pattern.pattern(),
            syncs: f.syncs,
            writes_per_sync: (f.syncs > 0).then(|| f.writes as f64 / f.syncs as f64),
            bytes_per_sync: (f.syncs > 0).then(|| f.written_bytes as f64 / f.syncs as f64),
        };
        let mut files: Vec<FileStat> = Vec::new();
        let mut by_path: Vec<(u32, FileAcc)> = self.files.into_iter().collect();
        by_path.sort_by(|a, b| self.paths[a.0 as usize].cmp(&self.paths[b.0 as usize]));
        for (p, f) in by_path {
            files.push(file_stat(self.paths[p as usize].clone(), f));
        }
        let files_summed = self.files_summed.len() as u64;
        if files_summed > 0 {
            files.push(file_stat(format!("({files_summed} other files)"), self.other_files));
        }
        let elapsed_s = self.last_ns.saturating_sub(self.first_ns) as f64 / 1e9;
        let model = self.model.map(|(rate, lat)| Model {
            rate_bytes_per_s: rate,
            latency_s: lat,
            bytes: self.model_bytes,
            ios: self.model_ios,
            modelled_s: if rate > 0.0 { self.model_bytes as f64 / rate } else { 0.0 } + self.model_ios as f64 * lat,
            recorded_s: elapsed_s,
            skipped: self.skipped.clone(),
        });
        Analysis {
            source: self.source,
            elapsed_s,
            ops: self.ops,
            bad_lines: self.bad_lines,
            totals: self.totals,
            threads,
            files,
            threads_summed: self.threads_summed,
            files_summed,
            model,
            via: self.via.as_ref().map(|v| v.0.clone()),
            via_detail: self.via.map(|v| v.1),
            lost: self.lost,
            overhead: self.overhead,
            cpu_wait_s: self.cpu_wait_ns as f64 / 1e9,
            rings: self.rings.into_iter().map(|(id, r)| r.finish(id)).collect(),
            devices: self.devices.into_iter().map(|(dev, (name, d))| d.finish(dev, name)).collect(),
        }
    }
}

/// Analyse a stream of records (a trace file read one record at a time).
pub fn analyze_records(
    records: impl Iterator<Item = Result<Record, FormatError>>,
    model: Option<(f64, f64)>,
) -> Result<Analysis, FormatError> {
    let mut a = Analyzer::new(model);
    for r in records {
        a.record(r?);
    }
    Ok(a.finish())
}

/// Analyse a trace read whole; `model` is (bytes per second, seconds of latency).
pub fn analyze(t: &Trace, model: Option<(f64, f64)>) -> Analysis {
    let mut a = Analyzer::new(model);
    a.record(Record::Header { version: crate::format::VERSION, source: t.source.clone(), epoch_ns: t.epoch_ns });
    for (&id, name) in &t.names {
        a.record(Record::Name { id, name: name.clone() });
    }
    let mut files: Vec<(&u32, &crate::format::FileInfo)> = t.files.iter().collect();
    files.sort_by_key(|(id, _)| **id);
    for (&id, f) in files {
        a.record(Record::File { id, path: f.path.clone(), flags: f.flags, before: f.before, regular: f.regular });
    }
    for (tid, ops) in &t.ops {
        for op in ops {
            a.op(*tid, op);
        }
    }
    for &(tid, tgid) in &t.threads {
        a.record(Record::Thread { tid, tgid });
    }
    if let Some((via, detail)) = &t.recorder {
        a.record(Record::Recorder { via: via.clone(), detail: detail.clone() });
    }
    for (&id, r) in &t.rings {
        a.record(Record::Ring { id, tgid: r.tgid, kind: r.kind, entries: r.entries, flags: r.flags });
    }
    for (ring, ops) in &t.ring_ops {
        for op in ops {
            a.async_op(*ring, op);
        }
    }
    for (dev, name) in &t.devices {
        a.record(Record::Device { dev: *dev, name: name.clone() });
    }
    for (dev, ios) in &t.block_ios {
        a.record(Record::BlockIos { dev: *dev, ios: ios.clone() });
    }
    for (why, events) in &t.lost {
        a.record(Record::Lost { why: why.clone(), events: *events });
    }
    if let Some(o) = &t.overhead {
        a.record(Record::Overhead(o.clone()));
    }
    a.record(Record::End { ops: 0, bad_lines: t.bad_lines, first_ns: t.first_ns, last_ns: t.last_ns });
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_storage() {
        for p in ["/data/redo0.log", "/dev/sdb", "/dev/nvme0n1p1", "/dev/mapper/vg-lv", "/dev/dm-3"] {
            assert_eq!(not_storage(p), None, "{p}");
        }
        assert_eq!(not_storage("pipe:[1234]"), Some("pipes"));
        assert_eq!(not_storage("socket:[99]"), Some("sockets"));
        assert!(not_storage("/dev/zero").unwrap().starts_with("devices"));
        assert!(not_storage("/dev/pts/0").unwrap().starts_with("devices"));
        assert_eq!(not_storage("/proc/self/stat"), Some("/proc and /sys"));
        assert!(not_storage("fd:3").unwrap().starts_with("unknown"));
    }

    #[test]
    fn patterns_compare_calls_on_the_same_file() {
        let mut p = PatternAcc::default();
        for i in 0..10 {
            // Two redo logs written in turn: each strided by 1 MiB, whatever comes between.
            p.add(1, i * 1_048_576, 32768);
            p.add(2, 7 + i * 1_048_576, 32768);
        }
        assert_eq!(p.pattern(), Pattern::Strided { stride: 1_048_576 });
        let mut p = PatternAcc::default();
        for i in 0..10 {
            p.add(1, i * 1_048_576, 32768);
        }
        assert_eq!(p.pattern(), Pattern::Strided { stride: 1_048_576 });
        let mut p = PatternAcc::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p.add(1, (x % 100_000) * 4096, 4096);
        }
        assert_eq!(p.pattern(), Pattern::Random);
        assert!(p.strides.len() <= STRIDES_KEPT);
    }
}
