//! What `iolab trace show` prints: per thread and per file the operation counts, bytes, a size
//! histogram, the access pattern (sequential, strided with its stride, random), the writes
//! between flushes, O_DIRECT use and the time per operation type; and a time model — what the
//! trace would take at a device rate and latency — beside what it took.

use crate::format::{oflags, Kind, Trace, NO_FILE};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Count, bytes and time of one operation type.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct OpStat {
    pub ops: u64,
    pub bytes: u64,
    /// Sum of the traced durations (`-T`), seconds.
    pub time_s: f64,
}

/// How a file's data calls move through it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    None,
    Sequential,
    Strided { stride: i64 },
    Random,
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::None => write!(f, "-"),
            Pattern::Sequential => write!(f, "sequential"),
            Pattern::Strided { stride } => write!(f, "strided {stride} B"),
            Pattern::Random => write!(f, "random"),
        }
    }
}

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
    pub tid: u32,
    pub tgid: u32,
    pub ops: BTreeMap<String, OpStat>,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub syncs: u64,
    /// From the thread's first call's start to its last call's end, seconds.
    pub span_s: f64,
}

/// The time model's inputs and answer.
#[derive(Debug, Clone, Serialize)]
pub struct Model {
    pub rate_bytes_per_s: f64,
    pub latency_s: f64,
    pub bytes: u64,
    /// Data calls and flushes, each charged one latency.
    pub ios: u64,
    /// bytes / rate + ios × latency, all on one device one at a time.
    pub modelled_s: f64,
    /// What the trace took: its first call's start to its last call's end.
    pub recorded_s: f64,
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
    pub model: Option<Model>,
}

fn bucket(size: u64) -> u64 {
    if size == 0 {
        0
    } else {
        1u64 << (63 - size.leading_zeros())
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
    last: Option<(u64, u64)>,
    seq: u64,
    strides: HashMap<i64, u64>,
    moves: u64,
}

/// Analyse a trace; `model` is (bytes per second, seconds of latency) for the time model.
pub fn analyze(t: &Trace, model: Option<(f64, f64)>) -> Analysis {
    let mut totals: BTreeMap<String, OpStat> = BTreeMap::new();
    let mut by_path: BTreeMap<String, FileAcc> = BTreeMap::new();
    let mut threads = Vec::new();
    let tgids: HashMap<u32, u32> = t.threads.iter().copied().collect();
    let mut total_ops = 0;
    let mut model_bytes = 0u64;
    let mut model_ios = 0u64;
    for (tid, ops) in &t.ops {
        let mut th = ThreadStat {
            tid: *tid,
            tgid: tgids.get(tid).copied().unwrap_or(*tid),
            ops: BTreeMap::new(),
            read_bytes: 0,
            written_bytes: 0,
            syncs: 0,
            span_s: 0.0,
        };
        // Position of each opening (for read/write at the file position).
        let mut pos: HashMap<u32, u64> = HashMap::new();
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for op in ops {
            total_ops += 1;
            lo = lo.min(op.start_ns);
            hi = hi.max(op.start_ns.saturating_add(op.dur_ns));
            let name = t.op_name(op.kind).to_string();
            let moved = if (op.kind.reads() || op.kind.writes()) && op.result > 0 { op.result as u64 } else { 0 };
            for m in [&mut totals, &mut th.ops] {
                let s = m.entry(name.clone()).or_default();
                s.ops += 1;
                s.bytes = s.bytes.saturating_add(moved);
                s.time_s += op.dur_ns as f64 / 1e9;
            }
            if op.kind.reads() {
                th.read_bytes = th.read_bytes.saturating_add(moved);
            }
            if op.kind.writes() {
                th.written_bytes = th.written_bytes.saturating_add(moved);
            }
            if op.kind.is_sync() {
                th.syncs += 1;
                model_ios += 1;
            }
            if op.kind.reads() || op.kind.writes() {
                model_ios += 1;
                model_bytes = model_bytes.saturating_add(op.size);
            }
            if op.file == NO_FILE || matches!(op.kind, Kind::Unlink | Kind::Rename | Kind::Mkdir) {
                continue;
            }
            let Some(info) = t.files.get(&op.file) else { continue };
            let f = by_path.entry(info.path.clone()).or_default();
            f.before |= info.before;
            let s = f.ops.entry(name).or_default();
            s.ops += 1;
            s.bytes = s.bytes.saturating_add(moved);
            s.time_s += op.dur_ns as f64 / 1e9;
            match op.kind {
                Kind::Open => {
                    f.openings += 1;
                    f.flags |= op.flags;
                    pos.insert(op.file, 0);
                }
                Kind::Lseek if op.result >= 0 => {
                    pos.insert(op.file, op.result as u64);
                }
                k if k.is_sync() => {
                    f.syncs += 1;
                }
                k if k.reads() || k.writes() => {
                    let at = match k {
                        Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev => op.offset,
                        _ => pos.get(&op.file).copied().unwrap_or(0),
                    };
                    if !matches!(k, Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev) {
                        pos.insert(op.file, at.saturating_add(moved));
                    }
                    if k.reads() {
                        f.read_bytes = f.read_bytes.saturating_add(moved);
                    } else {
                        f.written_bytes = f.written_bytes.saturating_add(moved);
                        f.writes += 1;
                    }
                    *f.sizes.entry(bucket(op.size)).or_default() += 1;
                    if let Some((last_at, last_len)) = f.last {
                        f.moves += 1;
                        if at == last_at.saturating_add(last_len) {
                            f.seq += 1;
                        }
                        *f.strides.entry((at as i64).wrapping_sub(last_at as i64)).or_default() += 1;
                    }
                    f.last = Some((at, op.size));
                }
                _ => {}
            }
        }
        if lo <= hi {
            th.span_s = (hi - lo) as f64 / 1e9;
        }
        threads.push(th);
    }
    let files = by_path
        .into_iter()
        .map(|(path, f)| {
            let pattern = if f.moves == 0 {
                if f.sizes.is_empty() {
                    Pattern::None
                } else {
                    Pattern::Sequential
                }
            } else if f.seq * 10 >= f.moves * 8 {
                Pattern::Sequential
            } else {
                let (stride, n) = f
                    .strides
                    .iter()
                    .max_by_key(|(s, n)| (**n, std::cmp::Reverse(s.unsigned_abs())))
                    .map(|(s, n)| (*s, *n))
                    .unwrap_or((0, 0));
                if n * 10 >= f.moves * 8 {
                    Pattern::Strided { stride }
                } else {
                    Pattern::Random
                }
            };
            FileStat {
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
                pattern,
                syncs: f.syncs,
                writes_per_sync: (f.syncs > 0).then(|| f.writes as f64 / f.syncs as f64),
                bytes_per_sync: (f.syncs > 0).then(|| f.written_bytes as f64 / f.syncs as f64),
            }
        })
        .collect();
    let elapsed_s = t.last_ns.saturating_sub(t.first_ns) as f64 / 1e9;
    let model = model.map(|(rate, lat)| Model {
        rate_bytes_per_s: rate,
        latency_s: lat,
        bytes: model_bytes,
        ios: model_ios,
        modelled_s: if rate > 0.0 { model_bytes as f64 / rate } else { 0.0 } + model_ios as f64 * lat,
        recorded_s: elapsed_s,
    });
    Analysis {
        source: t.source.clone(),
        elapsed_s,
        ops: total_ops,
        bad_lines: t.bad_lines,
        totals,
        threads,
        files,
        model,
    }
}
