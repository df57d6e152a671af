//! What `iolab trace show` says of each asynchronous I/O ring (io_uring ring or libaio
//! context) and each block device of a trace: operations by kind, bytes, sizes, the access
//! pattern, flushes, and the queue depth — at submission (a histogram), on average (Little's
//! law: the operations' summed time in flight over the ring's span) and over time (the mean in
//! flight per slice of the trace). Fed one operation at a time; memory holds one small entry
//! per ring and device and one number per slice ([`MAX_SLICES`], merged pairwise past it).

use crate::format::{AsyncKind, AsyncOp, BlockIo, RingKind, NO_FILE};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Slices of the depth timeline kept: past it, neighbours merge and a slice lasts twice as long.
pub const MAX_SLICES: usize = 4096;
/// The first slice length.
const SLICE_NS: u64 = 100_000_000;
/// Slices shown in the summary (the timeline is merged down to at most this many).
pub const SHOWN_SLICES: usize = 20;

/// The mean number in flight per slice of time: each operation adds the part of its
/// [start, end) interval that falls in a slice.
#[derive(Debug, Clone)]
pub struct Timeline {
    slice_ns: u64,
    busy_ns: Vec<f64>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { slice_ns: SLICE_NS, busy_ns: Vec::new() }
    }
}

impl Timeline {
    pub fn add(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        while (end - 1) / self.slice_ns >= MAX_SLICES as u64 {
            let merged: Vec<f64> = self.busy_ns.chunks(2).map(|c| c.iter().sum()).collect();
            self.busy_ns = merged;
            self.slice_ns *= 2;
        }
        let last = ((end - 1) / self.slice_ns) as usize;
        if self.busy_ns.len() <= last {
            self.busy_ns.resize(last + 1, 0.0);
        }
        let mut t = start;
        while t < end {
            let i = (t / self.slice_ns) as usize;
            let slice_end = (i as u64 + 1) * self.slice_ns;
            let upto = slice_end.min(end);
            self.busy_ns[i] += (upto - t) as f64;
            t = upto;
        }
    }

    /// (slice length in seconds, mean in flight per slice), merged to at most `max` slices,
    /// from the first slice with anything in flight.
    pub fn summary(&self, max: usize) -> (f64, Vec<f64>) {
        let first = self.busy_ns.iter().position(|&b| b > 0.0).unwrap_or(0);
        let v = &self.busy_ns[first.min(self.busy_ns.len())..];
        let mut per = 1usize;
        while v.len().div_ceil(per) > max.max(1) {
            per *= 2;
        }
        let slice = self.slice_ns as f64 * per as f64;
        let means = v.chunks(per).map(|c| c.iter().sum::<f64>() / slice).collect();
        (slice / 1e9, means)
    }
}

/// The access pattern of a stream of (offset, size) moves, as analyze's: sequential, a stride,
/// or random.
#[derive(Default, Debug, Clone)]
struct Moves {
    last: HashMap<u32, (u64, u64)>,
    moves: u64,
    seq: u64,
    strides: HashMap<i64, u64>,
}

impl Moves {
    fn add(&mut self, key: u32, at: u64, size: u64) {
        if let Some((la, ll)) = self.last.insert(key, (at, size)) {
            self.moves += 1;
            if at == la.saturating_add(ll) {
                self.seq += 1;
            }
            let s = (at as i64).wrapping_sub(la as i64);
            if let Some(n) = self.strides.get_mut(&s) {
                *n += 1;
            } else if self.strides.len() < 64 {
                self.strides.insert(s, 1);
            }
        }
    }
    fn pattern(&self) -> crate::stat::Pattern {
        use crate::stat::Pattern;
        if self.moves == 0 {
            return if self.last.is_empty() { Pattern::None } else { Pattern::Sequential };
        }
        if self.seq * 10 >= self.moves * 8 {
            return Pattern::Sequential;
        }
        let best = self.strides.iter().max_by_key(|(s, n)| (**n, std::cmp::Reverse(s.unsigned_abs())));
        match best {
            Some((s, n)) if n * 10 >= self.moves * 8 => Pattern::Strided { stride: *s },
            _ => Pattern::Random,
        }
    }
}

fn bucket(size: u64) -> u64 {
    if size == 0 {
        0
    } else {
        1u64 << (63 - size.leading_zeros())
    }
}

/// One ring's figures.
#[derive(Debug, Clone, Serialize)]
pub struct RingStat {
    pub ring: u32,
    /// `io_uring` or `aio`.
    pub kind: &'static str,
    pub tgid: u32,
    /// The ring's size (io_uring's submission queue entries, libaio's nr_events; 0 unknown).
    pub entries: u32,
    /// Threads that submitted to it.
    pub threads: Vec<u32>,
    /// Operations by kind: count, bytes moved, summed time in flight.
    pub ops: BTreeMap<String, crate::stat::OpStat>,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub syncs: u64,
    /// Operations that never completed within the trace, and that failed.
    pub unfinished: u64,
    pub failed: u64,
    /// Data operations by size bucket (as for files).
    pub sizes: BTreeMap<u64, u64>,
    pub pattern: crate::stat::Pattern,
    /// Operations by the depth in flight when each was submitted (itself included).
    pub depth_at_submit: BTreeMap<u32, u64>,
    pub max_depth: u32,
    /// Mean operations in flight from the ring's first submission to its last completion.
    pub mean_depth: f64,
    /// The mean in flight per slice (`depth_slice_s` long) from the first.
    pub depth_slice_s: f64,
    pub depth_over_time: Vec<f64>,
    /// Operations on registered files and buffers, and on files the trace could not name.
    pub fixed_files: u64,
    pub fixed_buffers: u64,
    pub unknown_files: u64,
}

/// A ring's accumulator.
#[derive(Debug, Clone)]
pub struct RingAcc {
    kind: RingKind,
    tgid: u32,
    entries: u32,
    threads: std::collections::BTreeSet<u32>,
    ops: BTreeMap<String, crate::stat::OpStat>,
    read_bytes: u64,
    written_bytes: u64,
    syncs: u64,
    unfinished: u64,
    failed: u64,
    sizes: BTreeMap<u64, u64>,
    moves: Moves,
    depth: BTreeMap<u32, u64>,
    max_depth: u32,
    in_flight_ns: f64,
    lo: u64,
    hi: u64,
    timeline: Timeline,
    fixed_files: u64,
    fixed_buffers: u64,
    unknown_files: u64,
}

impl RingAcc {
    pub fn new(kind: RingKind, tgid: u32, entries: u32) -> RingAcc {
        RingAcc {
            kind,
            tgid,
            entries,
            threads: Default::default(),
            ops: BTreeMap::new(),
            read_bytes: 0,
            written_bytes: 0,
            syncs: 0,
            unfinished: 0,
            failed: 0,
            sizes: BTreeMap::new(),
            moves: Moves::default(),
            depth: BTreeMap::new(),
            max_depth: 0,
            in_flight_ns: 0.0,
            lo: u64::MAX,
            hi: 0,
            timeline: Timeline::default(),
            fixed_files: 0,
            fixed_buffers: 0,
            unknown_files: 0,
        }
    }

    pub fn op(&mut self, op: &AsyncOp) {
        use crate::format::{ASYNC_FIXED_BUF, ASYNC_FIXED_FILE};
        if self.threads.len() < 64 {
            self.threads.insert(op.tid);
        }
        let done = op.result != i64::MIN;
        let time_ns = if done { op.complete_ns.saturating_sub(op.submit_ns) } else { 0 };
        let moved = if (op.kind.reads() || op.kind.writes()) && op.result > 0 { op.result as u64 } else { 0 };
        let name = match op.kind {
            AsyncKind::Other(n) => format!("opcode {n}"),
            k => k.as_str().to_string(),
        };
        let s = self.ops.entry(name).or_default();
        s.ops += 1;
        s.bytes = s.bytes.saturating_add(moved);
        s.time_s += time_ns as f64 / 1e9;
        if op.kind.reads() {
            self.read_bytes = self.read_bytes.saturating_add(moved);
        } else if op.kind.writes() {
            self.written_bytes = self.written_bytes.saturating_add(moved);
        }
        if op.kind.is_sync() {
            self.syncs += 1;
        }
        if op.kind.reads() || op.kind.writes() {
            *self.sizes.entry(bucket(op.size)).or_default() += 1;
            if op.offset != u64::MAX {
                self.moves.add(op.file, op.offset, op.size);
            }
        }
        if !done {
            self.unfinished += 1;
        } else if op.result < 0 {
            self.failed += 1;
        }
        *self.depth.entry(op.depth).or_default() += 1;
        self.max_depth = self.max_depth.max(op.depth);
        self.lo = self.lo.min(op.submit_ns);
        if done {
            self.hi = self.hi.max(op.complete_ns);
            self.in_flight_ns += time_ns as f64;
            self.timeline.add(op.submit_ns, op.complete_ns);
        }
        if op.flags & ASYNC_FIXED_FILE != 0 {
            self.fixed_files += 1;
        }
        if op.flags & ASYNC_FIXED_BUF != 0 {
            self.fixed_buffers += 1;
        }
        if op.file == NO_FILE && !matches!(op.kind, AsyncKind::Nop) {
            self.unknown_files += 1;
        }
    }

    pub fn finish(self, ring: u32) -> RingStat {
        let span = self.hi.saturating_sub(self.lo);
        let (depth_slice_s, depth_over_time) = self.timeline.summary(SHOWN_SLICES);
        RingStat {
            ring,
            kind: match self.kind {
                RingKind::IoUring => "io_uring",
                RingKind::Aio => "aio",
            },
            tgid: self.tgid,
            entries: self.entries,
            threads: self.threads.into_iter().collect(),
            ops: self.ops,
            read_bytes: self.read_bytes,
            written_bytes: self.written_bytes,
            syncs: self.syncs,
            unfinished: self.unfinished,
            failed: self.failed,
            sizes: self.sizes,
            pattern: self.moves.pattern(),
            depth_at_submit: self.depth,
            max_depth: self.max_depth,
            mean_depth: if span > 0 { self.in_flight_ns / span as f64 } else { 0.0 },
            depth_slice_s,
            depth_over_time,
            fixed_files: self.fixed_files,
            fixed_buffers: self.fixed_buffers,
            unknown_files: self.unknown_files,
        }
    }
}

/// The block layer's request operations, by the kernel's REQ_OP_* number.
pub fn block_op_name(op: u8) -> &'static str {
    match op {
        0 => "read",
        1 => "write",
        2 => "flush",
        3 => "discard",
        5 => "secure erase",
        7 => "zone append",
        9 => "write zeroes",
        _ => "other",
    }
}

/// One block device's figures.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceStat {
    pub dev: String,
    pub name: String,
    pub ops: BTreeMap<String, crate::stat::OpStat>,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// Flushes: flush requests and writes with PREFLUSH or FUA.
    pub flushes: u64,
    pub errors: u64,
    pub sizes: BTreeMap<u64, u64>,
    pub pattern: crate::stat::Pattern,
    /// Mean time from the request's making to its issue, and from issue to completion, ms.
    pub mean_queue_ms: f64,
    pub mean_device_ms: f64,
    pub max_depth: u32,
    pub mean_depth: f64,
    pub depth_slice_s: f64,
    pub depth_over_time: Vec<f64>,
}

/// A device's accumulator.
#[derive(Debug, Clone, Default)]
pub struct DeviceAcc {
    ops: BTreeMap<String, crate::stat::OpStat>,
    read_bytes: u64,
    written_bytes: u64,
    flushes: u64,
    errors: u64,
    sizes: BTreeMap<u64, u64>,
    moves: Moves,
    queue_ns: f64,
    queued: u64,
    device_ns: f64,
    n: u64,
    lo: u64,
    hi: u64,
    timeline: Timeline,
    /// Completion instants of requests in flight, to know the depth at each issue: requests
    /// come in completion order, so the depth is found at the end from the sorted intervals.
    intervals: Vec<(u64, u64)>,
}

/// Intervals kept per device to compute the peak depth (16 bytes each).
const MAX_INTERVALS: usize = 1 << 20;

/// The kernel's request flag bits above the op (as [`BlockIo::flags`] keeps them, 6.x
/// numbering): REQ_FUA and REQ_PREFLUSH.
pub const BLOCK_FUA: u32 = 1 << 9;
pub const BLOCK_PREFLUSH: u32 = 1 << 10;

impl DeviceAcc {
    pub fn io(&mut self, io: &BlockIo) {
        let name = block_op_name(io.op);
        let dev_ns = io.complete_ns.saturating_sub(io.issue_ns);
        let s = self.ops.entry(name.to_string()).or_default();
        s.ops += 1;
        s.bytes = s.bytes.saturating_add(u64::from(io.bytes));
        s.time_s += dev_ns as f64 / 1e9;
        match io.op {
            0 => self.read_bytes = self.read_bytes.saturating_add(u64::from(io.bytes)),
            1 => self.written_bytes = self.written_bytes.saturating_add(u64::from(io.bytes)),
            _ => {}
        }
        if io.op == 2 || io.flags & (BLOCK_FUA | BLOCK_PREFLUSH) != 0 {
            self.flushes += 1;
        }
        if io.error != 0 {
            self.errors += 1;
        }
        if io.op <= 1 && io.bytes > 0 {
            *self.sizes.entry(bucket(u64::from(io.bytes))).or_default() += 1;
            self.moves.add(0, io.sector.saturating_mul(512), u64::from(io.bytes));
        }
        if io.queued_ns > 0 && io.queued_ns <= io.issue_ns {
            self.queue_ns += (io.issue_ns - io.queued_ns) as f64;
            self.queued += 1;
        }
        self.device_ns += dev_ns as f64;
        if self.n == 0 {
            self.lo = io.issue_ns;
        }
        self.n += 1;
        self.lo = self.lo.min(io.issue_ns);
        self.hi = self.hi.max(io.complete_ns);
        self.timeline.add(io.issue_ns, io.complete_ns);
        if self.intervals.len() < MAX_INTERVALS {
            self.intervals.push((io.issue_ns, io.complete_ns));
        }
    }

    pub fn finish(mut self, dev: u32, name: String) -> DeviceStat {
        // The peak depth: sweep issues (+1) and completions (-1) in time order.
        let mut ev: Vec<(u64, i32)> = Vec::with_capacity(self.intervals.len() * 2);
        for &(a, b) in &self.intervals {
            ev.push((a, 1));
            ev.push((b, -1));
        }
        ev.sort_unstable_by_key(|&(t, d)| (t, d));
        let (mut cur, mut max) = (0i64, 0i64);
        for (_, d) in ev {
            cur += i64::from(d);
            max = max.max(cur);
        }
        self.intervals = Vec::new();
        let span = self.hi.saturating_sub(self.lo);
        let (depth_slice_s, depth_over_time) = self.timeline.summary(SHOWN_SLICES);
        DeviceStat {
            dev: format!("{}:{}", dev >> 20, dev & 0xfffff),
            name,
            ops: self.ops,
            read_bytes: self.read_bytes,
            written_bytes: self.written_bytes,
            flushes: self.flushes,
            errors: self.errors,
            sizes: self.sizes,
            pattern: self.moves.pattern(),
            mean_queue_ms: if self.queued > 0 { self.queue_ns / self.queued as f64 / 1e6 } else { 0.0 },
            mean_device_ms: if self.n > 0 { self.device_ns / self.n as f64 / 1e6 } else { 0.0 },
            max_depth: max as u32,
            mean_depth: if span > 0 { self.device_ns / span as f64 } else { 0.0 },
            depth_slice_s,
            depth_over_time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_means_what_was_in_flight() {
        let mut t = Timeline::default();
        // Two operations in flight for the whole first 100 ms, one for the second.
        t.add(0, 100_000_000);
        t.add(0, 200_000_000);
        let (slice, v) = t.summary(20);
        assert_eq!(slice, 0.1);
        assert_eq!(v, vec![2.0, 1.0]);
        // Past MAX_SLICES the slices merge and the means stay means.
        t.add(0, SLICE_NS * (MAX_SLICES as u64 + 1));
        let (_, v) = t.summary(usize::MAX);
        assert!((v[0] - 2.5).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn ring_depth_and_pattern() {
        let mut r = RingAcc::new(RingKind::IoUring, 1, 32);
        for i in 0..64u64 {
            r.op(&AsyncOp {
                tid: 1,
                submit_ns: i * 10,
                complete_ns: i * 10 + 40,
                kind: AsyncKind::Read,
                file: 0,
                fd: 3,
                offset: i * 4096,
                size: 4096,
                count: 0,
                flags: 0,
                op_flags: 0,
                buf: crate::format::NO_BUF,
                depth: (i.min(3) + 1) as u32,
                result: 4096,
                user_data: i,
            });
        }
        let s = r.finish(0);
        assert_eq!(s.max_depth, 4);
        assert_eq!(s.read_bytes, 64 * 4096);
        assert_eq!(s.pattern, crate::stat::Pattern::Sequential);
        // 64 × 40 ns in flight over 670 ns.
        assert!((s.mean_depth - 64.0 * 40.0 / 670.0).abs() < 1e-9);
    }
}
