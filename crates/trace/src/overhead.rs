//! strace's own cost taken off a trace's times (issue 28: a replay timed like the untraced
//! program). Under strace every traced call stops the thread twice; the stops lengthen each
//! call's recorded duration and each gap after it, and with several threads one strace process
//! serves them all, so a thread also waits while strace serves the others. A replay that keeps
//! the recorded gaps as think time replays strace's cost.
//!
//! The cost is measured when the trace is recorded ([`Cost`], by the CLI: the same strace
//! options on as many zero-think processes as the trace had threads at once), and taken off
//! here in two streaming passes over the trace:
//! 1. [`Shape::of`]: per thread, its gaps (a call's start minus the previous call's end) and
//!    what is left of each once the measured gap cost is taken off (`max(0, gap - cost)`);
//! 2. [`correct`]: the trace written again with each gap's residue scaled so that the thread's
//!    think time is its recorded gaps less the measured cost on average (`max(0, G - n ×
//!    cost)`): a gap that was all strace (the mean cost, or its tail of scheduling stalls)
//!    shrinks to nothing, a long pause of the program stays. Each thread starts at its
//!    recorded start scaled as the whole trace's busy time was. The calls' durations are left
//!    as strace recorded them (stops included): strace cannot tell a short call from its own
//!    cost, and a replay makes the calls for real; the cost measured inside calls is kept in
//!    the [`Overhead`] record beside the gap cost, the method and what was taken off.
//!
//! Memory: one entry per thread; the calls are streamed.

use crate::format::{FormatError, Op, Overhead, Record, Writer};
use std::collections::HashMap;
use std::io::Write;

/// The tracer's measured cost per traced call.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// Added to each call's recorded duration.
    pub call_ns: u64,
    /// Added to each gap after a call.
    pub gap_ns: u64,
    /// How it was measured, in words.
    pub method: String,
}

#[derive(Debug, Default, Clone)]
struct ThreadShape {
    first: Option<u64>,
    last_end: u64,
    gaps: u64,
    gaps_ns: u64,
    residue_ns: u64,
    busy_ns: u64,
}

/// What the first pass learns.
#[derive(Debug, Default, Clone)]
pub struct Shape {
    threads: HashMap<u32, ThreadShape>,
    /// The most threads that were between their first and last call at one time.
    pub concurrency: usize,
    /// The trace's span as recorded.
    pub span_ns: u64,
}

impl Shape {
    /// The first pass: with `cost`, each thread's gaps and their residue; without it (before
    /// the cost is measured), only the threads' spans and the concurrency.
    pub fn of(
        records: impl Iterator<Item = Result<Record, FormatError>>,
        cost: Option<&Cost>,
    ) -> Result<Shape, FormatError> {
        let mut s = Shape::default();
        let gap_cost = cost.map(|c| c.gap_ns).unwrap_or(0);
        for r in records {
            match r? {
                Record::Chunk { tid, ops } => {
                    let t = s.threads.entry(tid).or_default();
                    for op in &ops {
                        if let Some(_first) = t.first {
                            let g = op.start_ns.saturating_sub(t.last_end);
                            t.gaps += 1;
                            t.gaps_ns = t.gaps_ns.saturating_add(g);
                            t.residue_ns = t.residue_ns.saturating_add(g.saturating_sub(gap_cost));
                            t.busy_ns = t.busy_ns.saturating_add(g);
                        } else {
                            t.first = Some(op.start_ns);
                        }
                        t.busy_ns = t.busy_ns.saturating_add(op.dur_ns);
                        t.last_end = t.last_end.max(op.start_ns.saturating_add(op.dur_ns));
                    }
                }
                Record::End { first_ns, last_ns, .. } => s.span_ns = last_ns.saturating_sub(first_ns),
                _ => {}
            }
        }
        let mut ev: Vec<(u64, i32)> = Vec::with_capacity(s.threads.len() * 2);
        for t in s.threads.values() {
            if let Some(f) = t.first {
                ev.push((f, 1));
                ev.push((t.last_end, -1));
            }
        }
        ev.sort_unstable_by_key(|&(t, d)| (t, -d));
        let (mut cur, mut max) = (0i64, 0i64);
        for (_, d) in ev {
            cur += i64::from(d);
            max = max.max(cur);
        }
        s.concurrency = max.max(1) as usize;
        Ok(s)
    }
}

/// The second pass: the trace again with the tracer's cost taken off, and the record saying so.
pub fn correct<W: Write>(
    records: impl Iterator<Item = Result<Record, FormatError>>,
    shape: &Shape,
    cost: &Cost,
    out: W,
) -> Result<(W, Overhead), FormatError> {
    // Per thread, the scale of its gaps' residue: its think time (gaps less the cost on
    // average) over the residue.
    let scale: HashMap<u32, f64> = shape
        .threads
        .iter()
        .map(|(&tid, t)| {
            let think = t.gaps_ns.saturating_sub(t.gaps.saturating_mul(cost.gap_ns));
            let f = if t.residue_ns == 0 { 0.0 } else { (think as f64 / t.residue_ns as f64).min(1.0) };
            (tid, f)
        })
        .collect();
    let (mut busy, mut busy_after) = (0u64, 0u64);
    for t in shape.threads.values() {
        busy = busy.saturating_add(t.busy_ns);
        let think = t.gaps_ns.saturating_sub(t.gaps.saturating_mul(cost.gap_ns));
        busy_after = busy_after.saturating_add(think);
    }
    let mut w = Writer::new(out)?;
    // Per thread: (recorded end of its last call, corrected end of it).
    let mut cur: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut gaps_taken = 0u64;
    let mut pending_end = None;
    let mut ops: Vec<(u32, Op)> = Vec::new();
    // The threads' starts are scaled as the busy time (calls and gaps) was.
    let durs: u64 = busy.saturating_sub(shape.threads.values().map(|t| t.gaps_ns).sum());
    let ratio = if busy == 0 { 1.0 } else { (busy_after.saturating_add(durs)) as f64 / busy as f64 };
    for r in records {
        match r? {
            Record::Chunk { tid, ops: chunk } => {
                let f = scale.get(&tid).copied().unwrap_or(0.0);
                for op in chunk {
                    let dur = op.dur_ns;
                    let start = match cur.get(&tid) {
                        None => (op.start_ns as f64 * ratio.min(1.0)) as u64,
                        Some(&(end, end_after)) => {
                            let g = op.start_ns.saturating_sub(end);
                            let g_after = (g.saturating_sub(cost.gap_ns) as f64 * f) as u64;
                            gaps_taken = gaps_taken.saturating_add(g - g_after.min(g));
                            end_after.saturating_add(g_after)
                        }
                    };
                    cur.insert(tid, (op.start_ns.saturating_add(op.dur_ns), start.saturating_add(dur)));
                    ops.push((tid, Op { start_ns: start, dur_ns: dur, ..op }));
                }
                for (tid, op) in ops.drain(..) {
                    w.op(tid, op)?;
                }
            }
            Record::End { bad_lines, .. } => pending_end = Some(bad_lines),
            Record::Header { version, source, epoch_ns } => {
                w.record(&Record::Header { version: version.max(2), source, epoch_ns })?;
            }
            // A strace trace has no CPU waits; one would belong to a chunk this pass rewrites.
            Record::Overhead(_) | Record::CpuWaits { .. } => {}
            other => w.record(&other)?,
        }
    }
    let last = cur.values().map(|&(_, e)| e).max().unwrap_or(0);
    let first = 0;
    let o = Overhead {
        method: cost.method.clone(),
        call_ns: cost.call_ns,
        gap_ns: cost.gap_ns,
        calls_taken_ns: 0,
        gaps_taken_ns: gaps_taken,
        recorded_span_ns: shape.span_ns,
    };
    w.record(&Record::Overhead(o.clone()))?;
    let out = w.finish(pending_end.unwrap_or(0), first, last)?;
    Ok((out, o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Kind, Reader, Trace, NO_FILE};

    fn op(start: u64, dur: u64) -> Op {
        Op {
            start_ns: start,
            dur_ns: dur,
            kind: Kind::Write,
            file: NO_FILE,
            offset: 0,
            size: 1,
            count: 0,
            flags: 0,
            result: 1,
        }
    }

    fn trace(threads: &[(u32, Vec<Op>)]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.record(&Record::Header { version: 2, source: "t".into(), epoch_ns: 0 }).unwrap();
        let mut last = 0;
        for (tid, ops) in threads {
            for o in ops {
                last = last.max(o.start_ns + o.dur_ns);
                w.op(*tid, *o).unwrap();
            }
        }
        w.finish(0, 0, last).unwrap()
    }

    fn records(b: &[u8]) -> impl Iterator<Item = Result<Record, FormatError>> + '_ {
        let mut r = Reader::new(b).unwrap();
        std::iter::from_fn(move || r.next_record().transpose())
    }

    #[test]
    fn tracer_gaps_vanish_and_a_real_pause_stays() {
        // Thread 1: 100 calls of 50 µs (40 of them the tracer's) with gaps of 30 and 70 µs,
        // all the tracer's (50 µs a gap on average), and one 10 ms pause of the program.
        let mut a = Vec::new();
        let mut t = 0;
        for i in 0..100 {
            a.push(op(t, 50_000));
            t += 50_000
                + match i {
                    49 => 10_000_000,
                    i if i % 2 == 0 => 30_000,
                    _ => 70_000,
                };
        }
        let b = trace(&[(1, a)]);
        let cost = Cost { call_ns: 40_000, gap_ns: 50_000, method: "test".into() };
        let shape = Shape::of(records(&b), Some(&cost)).unwrap();
        assert_eq!(shape.concurrency, 1);
        let (out, o) = correct(records(&b), &shape, &cost, Vec::new()).unwrap();
        let tr = Trace::read(&out[..]).unwrap();
        let ops = &tr.ops[0].1;
        assert!(ops.iter().all(|o| o.dur_ns == 50_000), "durations stay as recorded");
        // Think time = the gaps less 99 × 50 µs: the 10 ms pause less 50 µs.
        let gaps: Vec<u64> = ops.windows(2).map(|w| w[1].start_ns - (w[0].start_ns + w[0].dur_ns)).collect();
        let think: u64 = gaps.iter().sum();
        let recorded: u64 = 50 * 30_000 + 48 * 70_000 + 10_000_000;
        let want = recorded - 99 * 50_000;
        assert!(think.abs_diff(want) < 1000, "{think} vs {want}");
        assert!(gaps[49] > 9_000_000, "the pause stays: {}", gaps[49]);
        assert!(gaps.iter().enumerate().all(|(i, &g)| i == 49 || g < 20_000), "the tracer's gaps shrink: {gaps:?}");
        assert_eq!(o.gaps_taken_ns, recorded - think);
        assert_eq!(o.calls_taken_ns, 0);
        assert_eq!(tr.overhead.as_ref().unwrap().gap_ns, 50_000);
    }

    #[test]
    fn concurrency_is_threads_alive_at_once() {
        let b = trace(&[(1, vec![op(0, 10), op(100, 10)]), (2, vec![op(50, 10)]), (3, vec![op(500, 10)])]);
        assert_eq!(Shape::of(records(&b), None).unwrap().concurrency, 2);
    }
}
