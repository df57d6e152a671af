//! The run as a whole from what every node measured: each phase merged by the one rule
//! (`iolab_model::merge`: the window from the first start to the last end, seconds aligned by
//! time, mean latencies kept), each node's skew measured on its own clock, a node that failed
//! mid-phase kept with what it measured until then, and the run's status from its nodes'; a
//! phase judged for steady state keeps the aggregate's rounds and each node's own.

use crate::follow::NodeState;
use crate::steady::Across;
use iolab_model::merge::{merge_phase, NodePhase};
use iolab_model::steady::NodeSteadyState;
use iolab_model::{NodeInfo, RunResult, Status};
use iolab_spec::Plan;

/// A node that failed mid-phase keeps what it measured until then: its latest progress, cut
/// short, with the seconds it sent.
fn keep_partial(st: &mut NodeState) {
    if st.run.status != Status::Failed {
        return;
    }
    let i = st.run.phases.len();
    if let Some(mut r) = st.so_far.get_mut(i).and_then(Option::take) {
        r.interrupted = true;
        for j in &mut r.jobs {
            j.node = Some(st.name.clone());
        }
        r.timeline = st.timelines[i].values().cloned().collect();
        st.run.phases.push(r);
    }
}

/// How far node `st`'s start of phase `i` was from the instant it was told, both on the node's
/// own clock (the offset's error does not enter it); 0 when either is unknown.
fn skew(st: &NodeState, i: usize) -> i64 {
    let actual = st.actual.get(i).copied().flatten().or(st.started.get(i).copied().flatten());
    match (actual, st.scheduled.get(i).copied().flatten()) {
        (Some(a), Some(b)) => a.saturating_sub(b),
        _ => 0,
    }
}

/// The merged run: one aggregate phase per phase any node ran, `plan` the run's as a whole,
/// `nodes` the nodes as connected. Failed when any node failed; interrupted when stopped or a
/// node was.
pub(crate) fn aggregate(
    plan: &Plan,
    infos: &[NodeInfo],
    states: &mut [NodeState],
    started_unix_s: f64,
    stopped: bool,
) -> RunResult {
    states.iter_mut().for_each(keep_partial);
    let phases = states.iter().map(|s| s.run.phases.len()).max().unwrap_or(0);
    let mut out = RunResult {
        nodes: infos.to_vec(),
        status: Status::Complete,
        phases: Vec::with_capacity(phases),
        ..RunResult::new(plan.clone(), iolab_sysstat::hostname(), started_unix_s)
    };
    for i in 0..phases {
        let parts: Vec<NodePhase> = states
            .iter()
            .filter_map(|s| {
                let phase = s.run.phases.get(i)?;
                Some(NodePhase { node: &s.name, phase, start_skew_ns: skew(s, i), error: s.run.error.as_deref() })
            })
            .collect();
        let name = parts.first().map(|p| p.phase.name.clone()).unwrap_or_default();
        out.phases.push(merge_phase(&name, &parts));
    }
    let errors: Vec<String> = states.iter().filter_map(|s| s.run.error.clone()).collect();
    out.status = if !errors.is_empty() || states.iter().any(|s| s.run.status == Status::Failed) {
        Status::Failed
    } else if stopped || states.iter().any(|s| s.run.status == Status::Interrupted) {
        Status::Interrupted
    } else {
        Status::Complete
    };
    if !errors.is_empty() {
        out.error = Some(errors.join("; "));
    }
    out
}

/// Each merged phase judged for steady state: the aggregate's rounds and verdict, judged across
/// the nodes, with each node's own (`phases[].steady_state.nodes[]`).
pub(crate) fn steady(run: &mut RunResult, states: &[NodeState], across: &Across) {
    for (i, merged) in run.phases.iter_mut().enumerate() {
        let nodes: Vec<NodeSteadyState> = states
            .iter()
            .filter_map(|s| {
                let state = s.run.phases.get(i)?.steady_state.clone()?;
                Some(NodeSteadyState { node: s.name.clone(), state })
            })
            .collect();
        if let Some(mut r) = across.result(i) {
            r.nodes = nodes;
            merged.steady_state = Some(r);
        }
    }
}
