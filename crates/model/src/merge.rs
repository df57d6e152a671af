//! The one rule that merges several nodes' phases into one aggregate phase: the coordinator
//! applies it live, as each phase ends on every node, and the store applies it again when it
//! rebuilds an aggregate the coordinator never saved (a coordinator killed mid-phase). Same
//! inputs, same aggregate.
//!
//! - **The window** runs from the first node's start to the last node's end (each node's start
//!   is its phase's `started_unix_s`, on one clock for all; a node whose start is unknown is
//!   taken to start with the first). Rates are the nodes' operations and bytes over it; the
//!   phase's `elapsed_s` is it; `first_done_s` and `last_done_s` are the first and last node's
//!   ends within it.
//! - **Latencies** come from the nodes' histograms merged (a class without one takes the worst
//!   node's figures).
//! - **The seconds** are placed by time: a node's second `t` lands in the window's second
//!   `ceil(t)` + (its start − the first start, in whole seconds). Counts add up; the
//!   percentiles of a second are the worst node's; its mean latencies are the nodes' means
//!   weighted by their operations, so fio's latency log of a merged run reads true.
//! - Each node keeps its findings and its limit line (`nodes[].findings`, `nodes[].limit`);
//!   the aggregate's `findings` are every node's, named, and it has no limit line of its own;
//!   reads in holes add up.
//! - Jobs keep their node's name (`jobs[].node`); each node's share is in `nodes[]`;
//!   validation's findings merge over the nodes (at most [`MERGED_ERRORS`] located); CPU time
//!   adds up; a personality's figures roll up by [`crate::figures`]' rule.

use crate::class::OpClass;
use crate::results::{NodeResult, PhaseResult, TimelinePoint, Totals};
use crate::stats::{Acc, ClassAcc};
use std::collections::BTreeMap;

/// The node name the aggregate goes by: in the store (its rows), and in a run's events (each
/// merged phase is node `*`'s `PhaseEnd`).
pub const AGGREGATE: &str = "*";

/// The most bad blocks an aggregate's `verify.first_errors` lists, over every node (each
/// node's own list is bounded by its `--max-errors`).
pub const MERGED_ERRORS: usize = 1000;

/// One node's phase, as the merge takes it.
#[derive(Debug, Clone, Copy)]
pub struct NodePhase<'a> {
    /// The node's name in the run.
    pub node: &'a str,
    /// What it measured: totals with histograms, its jobs, its seconds (`timeline`) and its
    /// start (`started_unix_s`).
    pub phase: &'a PhaseResult,
    /// How far its start was from the instant it was told (0: not known).
    pub start_skew_ns: i64,
    /// The node's failure, if it failed.
    pub error: Option<&'a str>,
}

/// Each node's window within the common one, in seconds from the first start: (start, end).
fn windows(parts: &[NodePhase]) -> (Vec<(f64, f64)>, Option<f64>) {
    let first = parts.iter().filter_map(|p| p.phase.started_unix_s).filter(|s| s.is_finite()).reduce(f64::min);
    let w = parts
        .iter()
        .map(|p| {
            let start = match (p.phase.started_unix_s.filter(|s| s.is_finite()), first) {
                (Some(s), Some(f)) => (s - f).max(0.0),
                _ => 0.0,
            };
            (start, start + p.phase.elapsed_s.max(0.0))
        })
        .collect();
    (w, first)
}

/// The aggregate of the nodes' phases, named `name` (see the module's rule). `interrupted` when
/// any node's was.
pub fn merge_phase(name: &str, parts: &[NodePhase]) -> PhaseResult {
    let (windows, first_start) = windows(parts);
    let last_end = windows.iter().map(|w| w.1).fold(0.0, f64::max);
    let first_end = windows.iter().map(|w| w.1).reduce(f64::min).unwrap_or(0.0);
    let longest = parts.iter().map(|p| p.phase.elapsed_s).fold(0.0, f64::max);
    let window_s = last_end.max(longest);
    let mut out = PhaseResult { name: name.to_string(), started_unix_s: first_start, ..Default::default() };
    let mut timeline: BTreeMap<u64, TimelinePoint> = BTreeMap::new();
    for (p, (start, _)) in parts.iter().zip(&windows) {
        let ph = p.phase;
        for j in &ph.jobs {
            let mut j = j.clone();
            j.node = Some(p.node.to_string());
            out.jobs.push(j);
        }
        out.interrupted |= ph.interrupted;
        if let Some(v) = &ph.verify {
            out.verify.get_or_insert_with(Default::default).merge(v, MERGED_ERRORS);
        }
        out.cpu.user_s += ph.cpu.user_s;
        out.cpu.system_s += ph.cpu.system_s;
        out.cpu.workers_on_cpu_s += ph.cpu.workers_on_cpu_s;
        out.cpu.workers_waiting_s += ph.cpu.workers_waiting_s;
        let shift = start.round() as u64;
        for pt in &ph.timeline {
            let sec = (pt.t_s.ceil() as u64).max(1).saturating_add(shift);
            let e = timeline.entry(sec).or_insert_with(|| TimelinePoint { t_s: sec as f64, ..Default::default() });
            add_second(e, pt);
        }
        out.nodes.push(NodeResult {
            name: p.node.to_string(),
            start_skew_ns: p.start_skew_ns,
            elapsed_s: ph.elapsed_s,
            interrupted: ph.interrupted,
            error: p.error.map(str::to_string),
            total: ph.total.clone(),
            cpu: ph.cpu,
            system: ph.system.clone(),
            verify: ph.verify.clone(),
            findings: ph.findings.clone(),
            limit: ph.limit.clone(),
            holes: ph.holes,
        });
        if let Some(h) = &ph.holes {
            out.holes.get_or_insert_with(Default::default).add(h);
        }
    }
    out.findings = crate::fidelity::of_nodes(&out);
    out.total = merge_totals(parts.iter().map(|p| &p.phase.total), window_s);
    out.elapsed_s = window_s;
    out.timeline = timeline.into_values().collect();
    out.roll_up_workload();
    if !parts.is_empty() {
        out.first_done_s = Some(first_end);
        out.last_done_s = Some(last_end);
    }
    out
}

/// Totals of several nodes over `window_s`: counts added, histograms merged; a class that has
/// operations but no histogram (a run stored before histograms) takes the worst node's latency.
pub fn merge_totals<'a>(totals: impl Iterator<Item = &'a Totals> + Clone, window_s: f64) -> Totals {
    let mut acc = Acc::default();
    for t in totals.clone() {
        for (c, x) in t.iter() {
            acc.get_mut(c).merge(&ClassAcc { ops: x.ops, bytes: x.bytes, hist: x.hist.clone() });
        }
    }
    let mut out = Totals::from_acc(&acc, window_s);
    for c in OpClass::ALL {
        let m = out.get_mut(*c);
        if m.hist.is_none() && m.ops > 0 {
            if let Some(worst) = totals.clone().map(|t| &t.get(*c).lat_ns).max_by_key(|l| l.p99) {
                m.lat_ns = worst.clone();
            }
        }
    }
    out
}

/// Add a node's second into the aggregate's: counts summed, percentiles the worst node's, mean
/// latencies weighted by operations.
pub fn add_second(into: &mut TimelinePoint, p: &TimelinePoint) {
    into.read_lat_mean_ns = weighted(into.read_lat_mean_ns, into.read_ops, p.read_lat_mean_ns, p.read_ops);
    into.write_lat_mean_ns = weighted(into.write_lat_mean_ns, into.write_ops, p.write_lat_mean_ns, p.write_ops);
    into.read_ops = into.read_ops.saturating_add(p.read_ops);
    into.read_bytes = into.read_bytes.saturating_add(p.read_bytes);
    into.write_ops = into.write_ops.saturating_add(p.write_ops);
    into.write_bytes = into.write_bytes.saturating_add(p.write_bytes);
    into.sync_ops = into.sync_ops.saturating_add(p.sync_ops);
    for c in OpClass::ALL {
        into.ops.add(*c, p.ops.get(*c));
    }
    into.lat_p50_ns = into.lat_p50_ns.max(p.lat_p50_ns);
    into.lat_p99_ns = into.lat_p99_ns.max(p.lat_p99_ns);
    into.lat_max_ns = into.lat_max_ns.max(p.lat_max_ns);
}

/// The mean of two means, weighted by their counts (in f64: no product overflows).
fn weighted(a: u64, an: u64, b: u64, bn: u64) -> u64 {
    let n = an as f64 + bn as f64;
    if n == 0.0 {
        return 0;
    }
    ((a as f64 * an as f64 + b as f64 * bn as f64) / n).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::JobResult;

    /// A node's phase: `ops` 4 KiB writes of `lat` ns each over `secs` seconds, started at `at`.
    fn node(at: Option<f64>, secs: u64, ops_per_s: u64, lat: u64) -> PhaseResult {
        let mut acc = Acc::default();
        let mut timeline = Vec::new();
        for s in 1..=secs {
            let mut sec = Acc::default();
            for _ in 0..ops_per_s {
                acc.record(OpClass::Write, 4096, lat);
                sec.record(OpClass::Write, 4096, lat);
            }
            let mut p = TimelinePoint { t_s: s as f64, write_lat_mean_ns: lat, lat_p99_ns: lat, ..Default::default() };
            p.add(&sec);
            timeline.push(p);
        }
        let total = Totals::from_acc(&acc, secs as f64);
        let job = JobResult { name: "j".into(), total: total.clone(), elapsed_s: secs as f64, ..Default::default() };
        PhaseResult {
            name: "p".into(),
            elapsed_s: secs as f64,
            total,
            jobs: vec![job],
            timeline,
            started_unix_s: at,
            ..Default::default()
        }
    }

    #[test]
    fn the_window_runs_from_the_first_start_to_the_last_end_and_seconds_align_by_time() {
        // a: 3 s from t=100 at 10 ops/s, 1 µs; b: 2 s from t=102 at 30 ops/s, 5 µs.
        let (a, b) = (node(Some(100.0), 3, 10, 1000), node(Some(102.0), 2, 30, 5000));
        let parts = [
            NodePhase { node: "a", phase: &a, start_skew_ns: 7, error: None },
            NodePhase { node: "b", phase: &b, start_skew_ns: 0, error: Some("lost") },
        ];
        let m = merge_phase("p", &parts);
        assert_eq!(m.elapsed_s, 4.0, "100 to 104");
        assert_eq!((m.first_done_s, m.last_done_s), (Some(3.0), Some(4.0)));
        assert_eq!(m.started_unix_s, Some(100.0));
        assert_eq!(m.total.write().ops, 90);
        assert_eq!(m.total.write().iops, 90.0 / 4.0);
        // b's first second is the window's third: 10 + 30 ops, the mean weighted by ops.
        let secs: Vec<(f64, u64, u64)> = m.timeline.iter().map(|p| (p.t_s, p.write_ops, p.write_lat_mean_ns)).collect();
        assert_eq!(secs, [(1.0, 10, 1000), (2.0, 10, 1000), (3.0, 40, 4000), (4.0, 30, 5000)]);
        assert_eq!(m.timeline[2].lat_p99_ns, 5000, "the worst node's percentile");
        // The totals' latencies from the merged histograms: the mean of all 90 ops.
        let mean = m.total.write().lat_ns.mean as f64;
        assert!((mean - (30.0 * 1000.0 + 60.0 * 5000.0) / 90.0).abs() < 20.0, "{mean}");
        assert_eq!(m.jobs.iter().map(|j| j.node.as_deref()).collect::<Vec<_>>(), [Some("a"), Some("b")]);
        assert_eq!((m.nodes[0].start_skew_ns, m.nodes[1].error.as_deref()), (7, Some("lost")));
    }

    #[test]
    fn without_starts_the_window_is_the_longest_node_and_seconds_align_from_zero() {
        let (a, b) = (node(None, 3, 10, 1000), node(None, 2, 30, 5000));
        let parts = [
            NodePhase { node: "a", phase: &a, start_skew_ns: 0, error: None },
            NodePhase { node: "b", phase: &b, start_skew_ns: 0, error: None },
        ];
        let m = merge_phase("p", &parts);
        assert_eq!((m.elapsed_s, m.started_unix_s), (3.0, None));
        assert_eq!(m.timeline.iter().map(|p| p.write_ops).collect::<Vec<_>>(), [40, 40, 10]);
        assert_eq!(m.timeline[0].write_lat_mean_ns, 4000);
    }

    #[test]
    fn hostile_figures_saturate_instead_of_overflowing() {
        let mut a = node(Some(0.0), 1, 1, 1000);
        a.timeline[0].read_ops = u64::MAX;
        a.timeline[0].read_lat_mean_ns = u64::MAX;
        let b = a.clone();
        let parts = [
            NodePhase { node: "a", phase: &a, start_skew_ns: 0, error: None },
            NodePhase { node: "b", phase: &b, start_skew_ns: 0, error: None },
        ];
        let m = merge_phase("p", &parts);
        assert_eq!(m.timeline[0].read_ops, u64::MAX);
    }
}
