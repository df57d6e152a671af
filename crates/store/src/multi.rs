//! Runs of several nodes: each node saves its own rows under its name, and the coordinator saves
//! each phase's aggregate under the reserved node [`AGGREGATE`]. Job names repeat across nodes,
//! so the aggregate's per-job rows (totals, threads) are keyed by node and job, and each node's
//! total (with its histograms) by node alone. Loading a run rebuilds the aggregate; a phase the
//! coordinator never saved (a run killed mid-phase) is merged from the nodes' own rows.

use crate::backend::vals;
use crate::{Result, Store};
use iolab_model::{JobResult, LatNs, NodeResult, OpClass, PhaseResult, TimelinePoint, Totals};
use iolab_spec::Plan;

/// The node name of a phase's aggregate rows in a run of several nodes.
pub const AGGREGATE: &str = "*";

/// Between node and job in a totals or threads key (ASCII unit separator: no name holds it).
const SEP: char = '\u{1f}';

/// A phase as loaded, with its index and whether it had a phase row of its own.
pub(crate) struct Indexed {
    pub idx: i64,
    pub phase: PhaseResult,
    pub row: bool,
}

/// The key of a job's rows: its name on one machine, `NODE\x1fJOB` in an aggregate.
pub(crate) fn job_key(j: &JobResult) -> String {
    match &j.node {
        Some(n) => format!("{n}{SEP}{}", j.name),
        None => j.name.clone(),
    }
}

/// The key of a node's total in an aggregate: `NODE\x1f`.
pub(crate) fn node_key(node: &str) -> String {
    format!("{node}{SEP}")
}

/// (node, job) of a key; `(None, "")` is the phase's total, `(Some(node), "")` a node's.
pub(crate) fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once(SEP) {
        Some((node, job)) => (Some(node), job),
        None => (None, key),
    }
}

pub(crate) fn job_mut<'a>(p: &'a mut PhaseResult, node: Option<&str>, name: &str) -> Option<&'a mut JobResult> {
    p.jobs.iter_mut().find(|j| j.name == name && j.node.as_deref() == node)
}

impl Store {
    /// Whether a run saved any aggregate rows.
    pub(crate) fn has_aggregate(&self, id: i64) -> Result<bool> {
        let n = self.row(
            "reading a run's aggregate",
            "SELECT (SELECT count(*) FROM phases WHERE run_id = ?1 AND node = ?2) + (SELECT count(*) FROM timeline WHERE run_id = ?1 AND node = ?2)",
            vals![id, AGGREGATE],
            |r| r.get::<i64>(0),
        )?;
        Ok(n.unwrap_or(0) > 0)
    }

    /// The phases of a run of several nodes: the coordinator's aggregate where it saved one
    /// (each node's samples from that node's rows), else the nodes' own phases merged.
    pub(crate) fn aggregate_phases(&self, id: i64, plan: &Plan) -> Result<Vec<PhaseResult>> {
        let agg = self.indexed_phases(id, AGGREGATE, plan)?;
        let mut per_node = Vec::new();
        for name in self.nodes(id)? {
            let phases = self.indexed_phases(id, &name, plan)?;
            per_node.push((name, phases));
        }
        let mut idxs: Vec<i64> =
            agg.iter().map(|x| x.idx).chain(per_node.iter().flat_map(|(_, ps)| ps.iter().map(|x| x.idx))).collect();
        idxs.sort_unstable();
        idxs.dedup();
        let mut out = Vec::new();
        for idx in idxs {
            let mine = agg.iter().find(|x| x.idx == idx);
            if let Some(a) = mine.filter(|a| a.row) {
                let mut p = a.phase.clone();
                for n in &mut p.nodes {
                    if let Some(s) = &mut n.system {
                        s.samples = self.samples(id, &n.name, idx)?;
                        for x in &mut s.samples {
                            x.keep_those_of(&s.mean);
                        }
                    }
                }
                out.push(p);
                continue;
            }
            let parts: Vec<(&str, &PhaseResult)> = per_node
                .iter()
                .filter_map(|(name, ps)| ps.iter().find(|x| x.idx == idx).map(|x| (name.as_str(), &x.phase)))
                .collect();
            let timeline = mine.map(|a| a.phase.timeline.clone()).unwrap_or_default();
            let name = plan.phases.get(idx as usize).map(|p| p.name.clone()).unwrap_or_else(|| format!("phase{idx}"));
            out.push(merge(name, &parts, timeline));
        }
        Ok(out)
    }
}

/// A phase's aggregate rebuilt from its nodes' own phases (the coordinator saved none): totals
/// summed, histograms merged, rates over the longest node's time, seconds summed where the
/// coordinator saved none. It reads as interrupted: nobody saw the phase end as a whole.
pub(crate) fn merge(name: String, parts: &[(&str, &PhaseResult)], timeline: Vec<TimelinePoint>) -> PhaseResult {
    let elapsed = parts.iter().map(|(_, p)| p.elapsed_s).fold(0.0, f64::max);
    let mut total = Totals::default();
    for (_, p) in parts {
        for (class, t) in p.total.iter() {
            let m = total.get_mut(class);
            m.ops += t.ops;
            m.bytes += t.bytes;
            match (&mut m.hist, &t.hist) {
                (Some(h), Some(x)) => {
                    let _ = h.add(x);
                }
                (None, Some(x)) => m.hist = Some(x.clone()),
                _ => {}
            }
            if m.hist.is_none() && t.lat_ns.p99 > m.lat_ns.p99 {
                // No histograms to merge: the worst node's latencies.
                m.lat_ns = t.lat_ns.clone();
            }
        }
    }
    for c in OpClass::ALL {
        let t = total.get_mut(*c);
        if let Some(h) = &t.hist {
            t.lat_ns = LatNs::from_hist(h);
        }
        if elapsed > 0.0 {
            t.iops = t.ops as f64 / elapsed;
            t.bw_bytes = t.bytes as f64 / elapsed;
        }
    }
    let timeline = if timeline.is_empty() { sum_seconds(parts) } else { timeline };
    // Validation over every node, as the coordinator merged it.
    let verify = parts.iter().filter_map(|(_, p)| p.verify.as_ref()).fold(None, |acc, v| {
        let mut a: iolab_model::VerifyResult = acc.unwrap_or_default();
        a.merge(v, 1000);
        Some(a)
    });
    let mut merged = PhaseResult {
        verify,
        workload: Default::default(),
        notes: Vec::new(),
        name,
        elapsed_s: elapsed,
        interrupted: true,
        total,
        jobs: parts
            .iter()
            .flat_map(|(n, p)| p.jobs.iter().map(move |j| JobResult { node: Some(n.to_string()), ..j.clone() }))
            .collect(),
        timeline,
        cpu: iolab_model::CpuTime {
            user_s: parts.iter().map(|(_, p)| p.cpu.user_s).sum(),
            system_s: parts.iter().map(|(_, p)| p.cpu.system_s).sum(),
        },
        system: None,
        nodes: parts
            .iter()
            .map(|(n, p)| NodeResult {
                name: n.to_string(),
                start_skew_ns: 0,
                elapsed_s: p.elapsed_s,
                interrupted: p.interrupted,
                error: p.jobs.iter().find_map(|j| j.error.clone()),
                total: p.total.clone(),
                cpu: p.cpu,
                system: p.system.clone(),
                verify: p.verify.clone(),
            })
            .collect(),
        first_done_s: None,
        last_done_s: None,
    };
    merged.roll_up_workload();
    merged
}

/// The nodes' seconds added second by second (latencies: the worst node's).
fn sum_seconds(parts: &[(&str, &PhaseResult)]) -> Vec<TimelinePoint> {
    let mut out: Vec<TimelinePoint> = Vec::new();
    for (_, p) in parts {
        for (i, t) in p.timeline.iter().enumerate() {
            if out.len() <= i {
                out.push(TimelinePoint { t_s: t.t_s, ..Default::default() });
            }
            let o = &mut out[i];
            o.t_s = o.t_s.max(t.t_s);
            let weighted = |a: u64, an: u64, b: u64, bn: u64| {
                if an + bn == 0 {
                    0
                } else {
                    ((a as f64 * an as f64 + b as f64 * bn as f64) / (an + bn) as f64).round() as u64
                }
            };
            o.read_lat_mean_ns = weighted(o.read_lat_mean_ns, o.read_ops, t.read_lat_mean_ns, t.read_ops);
            o.write_lat_mean_ns = weighted(o.write_lat_mean_ns, o.write_ops, t.write_lat_mean_ns, t.write_ops);
            o.read_ops += t.read_ops;
            o.read_bytes += t.read_bytes;
            o.write_ops += t.write_ops;
            o.write_bytes += t.write_bytes;
            o.sync_ops += t.sync_ops;
            for (c, n) in t.ops.iter() {
                o.ops.add(c, n);
            }
            o.lat_p50_ns = o.lat_p50_ns.max(t.lat_p50_ns);
            o.lat_p99_ns = o.lat_p99_ns.max(t.lat_p99_ns);
            o.lat_max_ns = o.lat_max_ns.max(t.lat_max_ns);
        }
    }
    out
}
