//! Runs of several nodes: each node saves its own rows under its name, and the coordinator saves
//! each phase's aggregate under the reserved node [`AGGREGATE`]. Job names repeat across nodes,
//! so the aggregate's per-job rows (totals, threads) are keyed by node and job, and each node's
//! total (with its histograms) by node alone. Loading a run rebuilds the aggregate; a phase the
//! coordinator never saved (a run killed mid-phase) is merged from the nodes' own rows, by the
//! coordinator's own rule (`iolab_model::merge`).

use crate::backend::vals;
use crate::{Result, Store};
use iolab_model::merge::{merge_phase, NodePhase};
use iolab_model::{JobResult, PhaseResult, TimelinePoint};
use iolab_spec::Plan;

/// The node name of a phase's aggregate rows in a run of several nodes.
pub use iolab_model::merge::AGGREGATE;

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

/// A phase's aggregate rebuilt from its nodes' own phases (the coordinator saved none), by the
/// one rule the coordinator merges by live (`iolab_model::merge`): the window from the first
/// node's start to the last one's end, seconds aligned by each node's start, mean latencies
/// kept. The aggregate's seconds, where the coordinator saved them, are taken as saved. It
/// reads as interrupted: nobody saw the phase end as a whole; a node's skew (the instant it
/// was told is not stored) reads 0, its error is its first job's.
pub(crate) fn merge(name: String, parts: &[(&str, &PhaseResult)], timeline: Vec<TimelinePoint>) -> PhaseResult {
    let errors: Vec<Option<&str>> = parts.iter().map(|(_, p)| p.jobs.iter().find_map(|j| j.error.as_deref())).collect();
    let nodes: Vec<NodePhase> = parts
        .iter()
        .zip(&errors)
        .map(|((node, phase), error)| NodePhase { node, phase, start_skew_ns: 0, error: *error })
        .collect();
    let mut merged = merge_phase(&name, &nodes);
    if !timeline.is_empty() {
        merged.timeline = timeline;
    }
    merged.interrupted = true;
    merged
}
