//! Asynchronous operations (io_uring, libaio) in a replay: a trace's `RingOps` become steps of
//! the thread that submitted them, placed in its program by their submission time, each with
//! what its ring must show before it is issued — fewer operations in flight than when it was
//! recorded, and every operation of the ring that had completed before its recorded submission
//! completed again (a write-ahead log's next write waits for its flush). [`RingGate`] keeps
//! that state while the replay runs, shared by the threads that submit to one ring.

use iolab_spec::EngineKind;
use iolab_trace::format::{AsyncKind, AsyncOp, Kind, Op, RingKind, ASYNC_LINK};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// What an asynchronous step waits for on its ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingStep {
    /// The ring: an index into the run's gates.
    pub ring: u32,
    /// Operations in flight on the ring when it was submitted, itself included: it is issued
    /// only while fewer than this are in flight.
    pub depth: u32,
    /// Its place in the ring's recorded completion order.
    pub rank: u64,
    /// The first `after` operations of the ring's completion order must have completed: those
    /// that had when it was submitted.
    pub after: u64,
    /// When the last of those completed in the recording, ns (its think time counts from there).
    pub ready_ns: u64,
    /// When the call that submitted it (io_uring_enter, io_submit) began, ns; its submission
    /// when none is known. Operations one call submitted have no think time between them:
    /// the time between their submissions was the kernel's, inside that call.
    pub called_ns: u64,
}

/// The calls that submit asynchronous operations, whose span holds the submissions they made.
pub fn submits(name: &str) -> bool {
    matches!(name, "io_uring_enter" | "io_submit")
}

/// Why an asynchronous operation of a kind iolab does not replay is left out.
pub const NOT_REPLAYED: &str = "asynchronous operations iolab does not replay (nop, other opcodes)";

/// The call an asynchronous operation replays as (a read at an offset is a pread, ...), or
/// `None` for a kind iolab does not replay.
pub fn as_op(a: &AsyncOp) -> Option<Op> {
    let at = a.offset != u64::MAX;
    let moved = a.result.max(0) as u64;
    // A vectored operation's size is unknown to the recorder: the bytes it moved.
    let vsize = if a.size == 0 { moved } else { a.size };
    let (kind, size, flags) = match a.kind {
        AsyncKind::Read => (if at { Kind::Pread } else { Kind::Read }, a.size, 0),
        AsyncKind::Write => (if at { Kind::Pwrite } else { Kind::Write }, a.size, 0),
        AsyncKind::Readv => (if at { Kind::Preadv } else { Kind::Readv }, vsize, 0),
        AsyncKind::Writev => (if at { Kind::Pwritev } else { Kind::Writev }, vsize, 0),
        AsyncKind::Fsync => (Kind::Fsync, 0, 0),
        AsyncKind::Fdatasync => (Kind::Fdatasync, 0, 0),
        AsyncKind::SyncFileRange => (Kind::SyncFileRange, a.size, a.op_flags),
        AsyncKind::Fallocate => (Kind::Fallocate, a.size, a.op_flags),
        AsyncKind::Nop | AsyncKind::Other(_) => return None,
    };
    Some(Op {
        start_ns: a.submit_ns,
        dur_ns: a.complete_ns.saturating_sub(a.submit_ns),
        kind,
        file: a.file,
        offset: if at { a.offset } else { 0 },
        size,
        count: if matches!(kind, Kind::Readv | Kind::Writev | Kind::Preadv | Kind::Pwritev) {
            a.count.max(1)
        } else {
            0
        },
        flags,
        result: a.result,
    })
}

/// The name an asynchronous operation is counted under when left out.
pub fn name_of(ring: Option<RingKind>, k: AsyncKind) -> String {
    let on = match ring {
        Some(RingKind::Aio) => "aio",
        _ => "io_uring",
    };
    match k {
        AsyncKind::Other(n) => format!("{on} opcode {n}"),
        k => format!("{on} {}", k.as_str()),
    }
}

/// The asynchronous operations a plan keeps, gathered ring by ring while the trace streams.
#[derive(Debug, Default)]
pub struct Rings {
    kinds: HashMap<u32, RingKind>,
    /// Per recorded ring: (submitting thread, the call, recorded depth), in submission order.
    kept: BTreeMap<u32, Vec<(u32, Op, u32)>>,
    /// Operations linked to the next (IOSQE_IO_LINK): replayed unlinked.
    pub linked: u64,
}

/// The rings of a plan, gathered: each thread's asynchronous steps in submission order.
#[derive(Debug, Default)]
pub struct Gathered {
    pub by_thread: HashMap<u32, Vec<(Op, RingStep)>>,
    /// Operations per ring (dense, as [`RingStep::ring`] numbers them).
    pub ring_ops: Vec<u64>,
    pub max_depth: u32,
    /// The engine that replays them as the program made them: libaio when every ring was a
    /// libaio context, io_uring otherwise; `None` without asynchronous operations.
    pub engine: Option<EngineKind>,
}

impl Rings {
    pub fn ring(&mut self, id: u32, kind: RingKind) {
        self.kinds.insert(id, kind);
    }

    pub fn kind(&self, id: u32) -> Option<RingKind> {
        self.kinds.get(&id).copied()
    }

    /// Keep one operation of ring `ring` (after the plan's checks: on a file it replays, done
    /// when recorded).
    pub fn keep(&mut self, ring: u32, a: &AsyncOp, op: Op) {
        if a.flags & ASYNC_LINK != 0 {
            self.linked += 1;
        }
        self.kept.entry(ring).or_default().push((a.tid, op, a.depth.max(1)));
    }

    /// Rank each ring's operations by when they completed, and give each what it waits for;
    /// `calls`: each thread's submitting calls, (start, end) in program order.
    pub fn gather(self, calls: &HashMap<u32, Vec<(u64, u64)>>) -> Gathered {
        let mut g = Gathered::default();
        let (mut uring, mut aio) = (false, false);
        for (id, ops) in self.kept {
            match self.kinds.get(&id) {
                Some(RingKind::Aio) => aio = true,
                _ => uring = true,
            }
            let ring = g.ring_ops.len() as u32;
            g.ring_ops.push(ops.len() as u64);
            // A completion before its own submission (a corrupt trace) counts at its submission,
            // so no operation ever waits for itself.
            let done = |op: &Op| op.start_ns.saturating_add(op.dur_ns);
            let mut order: Vec<(u64, usize)> = ops.iter().enumerate().map(|(i, (_, op, _))| (done(op), i)).collect();
            order.sort_unstable();
            let mut rank = vec![0u64; ops.len()];
            for (r, &(_, i)) in order.iter().enumerate() {
                rank[i] = r as u64;
            }
            for (i, (tid, op, depth)) in ops.into_iter().enumerate() {
                let after = order.partition_point(|&(c, _)| c < op.start_ns);
                let ready_ns = if after > 0 { order[after - 1].0 } else { 0 };
                g.max_depth = g.max_depth.max(depth);
                let called_ns = calls
                    .get(&tid)
                    .and_then(|c| c.get(c.partition_point(|&(start, _)| start <= op.start_ns).checked_sub(1)?))
                    .filter(|&&(_, end)| op.start_ns <= end)
                    .map_or(op.start_ns, |&(start, _)| start);
                let s = RingStep { ring, depth, rank: rank[i], after: after as u64, ready_ns, called_ns };
                g.by_thread.entry(tid).or_default().push((op, s));
            }
        }
        for ops in g.by_thread.values_mut() {
            ops.sort_by_key(|(op, _)| op.start_ns);
        }
        g.engine = match (uring, aio) {
            (false, false) => None,
            (false, true) => Some(EngineKind::Libaio),
            _ => Some(EngineKind::IoUring),
        };
        g
    }
}

/// One ring's state while a replay runs.
#[derive(Debug)]
pub struct RingGate {
    state: Mutex<GateState>,
}

#[derive(Debug)]
struct GateState {
    in_flight: u32,
    /// Completed, by recorded completion rank (a bit each).
    done: Vec<u64>,
    /// The first `prefix` ranks have all completed.
    prefix: u64,
}

impl RingGate {
    pub fn new(ops: u64) -> RingGate {
        let words = ops.div_ceil(64) as usize;
        RingGate { state: Mutex::new(GateState { in_flight: 0, done: vec![0; words], prefix: 0 }) }
    }

    /// Whether `s` may be issued now: fewer than its recorded depth in flight, and what it
    /// waits for completed.
    pub fn may_issue(&self, s: &RingStep) -> bool {
        self.state.lock().map(|g| g.in_flight < s.depth && g.prefix >= s.after).unwrap_or(true)
    }

    /// If `s` may be issued, count it in flight and say so.
    pub fn issue(&self, s: &RingStep) -> bool {
        let Ok(mut g) = self.state.lock() else { return true };
        if g.in_flight < s.depth && g.prefix >= s.after {
            g.in_flight += 1;
            return true;
        }
        false
    }

    /// `s` completed.
    pub fn complete(&self, s: &RingStep) {
        let Ok(mut g) = self.state.lock() else { return };
        g.in_flight = g.in_flight.saturating_sub(1);
        let (w, b) = ((s.rank / 64) as usize, s.rank % 64);
        if let Some(word) = g.done.get_mut(w) {
            *word |= 1 << b;
        }
        loop {
            let p = g.prefix;
            match g.done.get((p / 64) as usize) {
                Some(word) if word & (1 << (p % 64)) != 0 => g.prefix += 1,
                _ => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aop(tid: u32, submit_ns: u64, complete_ns: u64, depth: u32) -> AsyncOp {
        AsyncOp {
            tid,
            submit_ns,
            complete_ns,
            kind: AsyncKind::Write,
            file: 0,
            fd: 3,
            offset: 0,
            size: 4096,
            count: 0,
            flags: 0,
            op_flags: 0,
            buf: u32::MAX,
            depth,
            result: 4096,
            user_data: 0,
        }
    }

    #[test]
    fn each_operation_waits_for_what_had_completed_when_it_was_submitted() {
        let mut r = Rings::default();
        r.ring(5, RingKind::IoUring);
        // Two writes in flight together; the flush after both completed; the next write after it.
        for a in [aop(1, 10, 40, 1), aop(1, 11, 30, 2), aop(1, 50, 60, 1), aop(1, 70, 80, 1)] {
            r.keep(5, &a, as_op(&a).unwrap());
        }
        let g = r.gather(&HashMap::new());
        assert_eq!(g.engine, Some(EngineKind::IoUring));
        assert_eq!((g.max_depth, g.ring_ops.clone()), (2, vec![4]));
        let s: Vec<(u64, u64, u64)> = g.by_thread[&1].iter().map(|(_, s)| (s.rank, s.after, s.ready_ns)).collect();
        assert_eq!(s, vec![(1, 0, 0), (0, 0, 0), (2, 2, 40), (3, 3, 60)]);
        // Submitted by one call from 9 to 12: the two writes count from its start.
        let mut r = Rings::default();
        for a in [aop(1, 10, 40, 1), aop(1, 11, 30, 2), aop(1, 50, 60, 1)] {
            r.keep(0, &a, as_op(&a).unwrap());
        }
        let called: Vec<u64> =
            r.gather(&[(1, vec![(9, 12), (49, 49)])].into()).by_thread[&1].iter().map(|(_, s)| s.called_ns).collect();
        assert_eq!(called, vec![9, 9, 50], "the third was submitted after its call's end: its own time");
        // The gate: the third waits for both, whichever order they complete in.
        let gate = RingGate::new(4);
        let steps: Vec<RingStep> = g.by_thread[&1].iter().map(|(_, s)| *s).collect();
        assert!(gate.issue(&steps[0]));
        assert!(!gate.issue(&steps[0]), "depth 1: one in flight already");
        assert!(gate.issue(&steps[1]));
        assert!(!gate.may_issue(&steps[2]));
        gate.complete(&steps[0]);
        assert!(!gate.may_issue(&steps[2]), "rank 0 (the second write) has not completed");
        gate.complete(&steps[1]);
        assert!(gate.issue(&steps[2]));
        assert!(!gate.may_issue(&steps[3]));
        gate.complete(&steps[2]);
        assert!(gate.issue(&steps[3]));
    }

    #[test]
    fn a_completion_before_its_submission_never_waits_for_itself() {
        let mut r = Rings::default();
        let a = aop(1, 100, 50, 1);
        r.keep(0, &a, as_op(&a).unwrap());
        let g = r.gather(&HashMap::new());
        assert_eq!(g.by_thread[&1][0].1.after, 0);
        let mut libaio = Rings::default();
        libaio.ring(0, RingKind::Aio);
        libaio.keep(0, &a, as_op(&a).unwrap());
        assert_eq!(libaio.gather(&HashMap::new()).engine, Some(EngineKind::Libaio));
        let nop = AsyncOp { kind: AsyncKind::Nop, ..a };
        assert!(as_op(&nop).is_none());
        let cur = as_op(&AsyncOp { offset: u64::MAX, kind: AsyncKind::Readv, size: 0, count: 2, ..a }).unwrap();
        assert_eq!((cur.kind, cur.size, cur.count, cur.offset), (Kind::Readv, 4096, 2, 0));
    }
}
