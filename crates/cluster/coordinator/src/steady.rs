//! Steady state across the nodes (issue 29): each node's seconds, as its Ticks bring them,
//! judged by the same judge the node runs (`iolab_workload::steady::Judge`, off every node's
//! I/O path), and the aggregate judged on the nodes' summed value of each round (for latency,
//! their mean). A phase ends on every node (EndPhase) once, at one round, every node's window
//! and the aggregate's are steady; otherwise it runs to its maximum, reported not steady.

use iolab_model::steady::SteadyStateResult;
use iolab_model::TimelinePoint;
use iolab_spec::steady::Tracked;
use iolab_spec::Plan;
use iolab_workload::steady::Judge;

/// One node's phase as the coordinator judges it: its judge, and every round it closed (its
/// value, and whether the window it ended was steady).
struct NodeRounds {
    judge: Judge,
    closed: Vec<(f64, bool)>,
}

/// One phase judged across its nodes.
struct PhaseSteady {
    /// Per node of the run; `None`: the node's phase is not judged for steady state.
    nodes: Vec<Option<NodeRounds>>,
    /// The aggregate's judge, fed the nodes' summed rounds.
    aggregate: Judge,
    /// Rounds the aggregate has taken.
    rounds: usize,
    /// Told to end on every node.
    ended: bool,
}

impl PhaseSteady {
    /// A round every judged node has closed: the aggregate's next. True when the phase is to
    /// end now: the aggregate and every node steady at that round.
    fn advance(&mut self) -> bool {
        let judged: Vec<&Vec<(f64, bool)>> = self.nodes.iter().flatten().map(|n| &n.closed).collect();
        while !self.ended && !judged.is_empty() && judged.iter().all(|c| c.len() > self.rounds) {
            let r = self.rounds;
            let sum: f64 = judged.iter().map(|c| c[r].0).sum();
            let v = match self.aggregate.tracked() {
                Tracked::Lat => sum / judged.len() as f64,
                Tracked::Iops | Tracked::Bw => sum,
            };
            self.aggregate.push(v);
            self.rounds += 1;
            if self.aggregate.steady() && judged.iter().all(|c| c[r].1) {
                self.ended = true;
            }
        }
        self.ended
    }
}

/// Every phase of a run on several nodes that is judged for steady state.
pub(crate) struct Across {
    phases: Vec<Option<PhaseSteady>>,
}

impl Across {
    /// For nodes running `plans` (in the run's node order; each node's own plan).
    pub fn new(plans: &[&Plan]) -> Across {
        let count = plans.iter().map(|p| p.phases.len()).max().unwrap_or(0);
        let phases = (0..count)
            .map(|i| {
                let judge = |p: &&Plan| p.phases.get(i).and_then(Judge::for_phase);
                let aggregate = plans.iter().find_map(judge)?.held();
                let nodes = plans
                    .iter()
                    .map(|p| judge(p).map(|j| NodeRounds { judge: j.recording(), closed: Vec::new() }))
                    .collect();
                Some(PhaseSteady { nodes, aggregate, rounds: 0, ended: false })
            })
            .collect();
        Across { phases }
    }

    /// Node `n`'s finished second `p` of phase `phase`. True when the phase is to end on every
    /// node now (said once).
    pub fn second(&mut self, n: usize, phase: usize, p: &TimelinePoint) -> bool {
        let Some(Some(ph)) = self.phases.get_mut(phase) else { return false };
        let Some(Some(node)) = ph.nodes.get_mut(n) else { return false };
        if ph.ended {
            return false;
        }
        node.judge.second(p);
        let now = node.judge.closed();
        if now.is_empty() {
            return false;
        }
        node.closed.extend(now);
        ph.advance()
    }

    /// The aggregate's steady state of phase `phase`, once judged (its nodes' own are theirs):
    /// attained only when the phase ended so, every node steady at the aggregate's round.
    pub fn result(&self, phase: usize) -> Option<SteadyStateResult> {
        let ph = self.phases.get(phase)?.as_ref()?;
        let mut r = ph.aggregate.result();
        if !ph.ended {
            r.attained = false;
            r.steady_at = None;
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{JobPatch, Phase};

    fn plan(rounds: u32) -> Plan {
        let patch = JobPatch {
            target: Some("f".into()),
            steady_state: Some("snia".parse().unwrap()),
            round: Some(std::time::Duration::from_secs(1)),
            ss_max_rounds: Some(rounds),
            ..Default::default()
        };
        Plan { phases: vec![Phase { name: "p".into(), jobs: vec![patch.resolve("j").unwrap()] }] }
    }

    #[test]
    fn fios_criterion_is_judged_across_the_nodes_on_samples() {
        let patch = JobPatch {
            target: Some("f".into()),
            steady_state: Some("iops:5%".parse().unwrap()),
            ss_dur: Some(std::time::Duration::from_secs(3)),
            runtime: Some(std::time::Duration::from_secs(20)),
            ..Default::default()
        };
        let p = Plan { phases: vec![Phase { name: "p".into(), jobs: vec![patch.resolve("j").unwrap()] }] };
        let mut a = Across::new(&[&p, &p]);
        // Node a climbs for 4 s, then holds; node b holds from the start.
        let mut ended = None;
        for t in 1..=20 {
            assert!(!a.second(0, 0, &sec(t, 100 * t.min(5))));
            if a.second(1, 0, &sec(t, 200)) {
                ended = Some(t);
                break;
            }
        }
        assert_eq!(ended, Some(7), "samples 5-7 steady on both and in their sum");
        let r = a.result(0).unwrap();
        assert_eq!((r.method.as_str(), r.values.as_slice(), r.steady_at), ("fio", &[700.0; 3][..], Some(7)));
    }

    fn sec(t: u64, ops: u64) -> TimelinePoint {
        TimelinePoint { t_s: t as f64, write_ops: ops, write_bytes: ops * 4096, ..Default::default() }
    }

    #[test]
    fn the_phase_ends_when_both_nodes_and_their_sum_are_steady_at_one_round() {
        let p = plan(12);
        let mut a = Across::new(&[&p, &p]);
        // Node b is a second behind: a round is the aggregate's once both closed it.
        let mut ended = None;
        for t in 1..=12 {
            assert!(!a.second(0, 0, &sec(t, 100)));
            if a.second(1, 0, &sec(t, 300)) {
                ended = Some(t);
                break;
            }
        }
        assert_eq!(ended, Some(5), "the fifth round of both ends the phase");
        let r = a.result(0).unwrap();
        assert_eq!(r.values, vec![400.0; 5], "each round the nodes' sum");
        assert_eq!((r.attained, r.steady_at, r.measured), (true, Some(5), 5));
        // Said once: later seconds do not end it again.
        assert!(!a.second(0, 0, &sec(6, 100)) && !a.second(1, 0, &sec(6, 300)));
    }

    #[test]
    fn a_steady_node_runs_on_while_the_other_is_not() {
        let p = plan(8);
        let mut a = Across::new(&[&p, &p]);
        for t in 1..=8 {
            assert!(!a.second(0, 0, &sec(t, 100)), "node a steady from round 5, b never");
            assert!(!a.second(1, 0, &sec(t, 100 * t)), "round {t}");
        }
        let r = a.result(0).unwrap();
        assert_eq!(r.measured, 8, "to the maximum");
        assert!(!r.attained);
        let want: Vec<f64> = (1..=8).map(|t| 100.0 + 100.0 * t as f64).collect();
        assert_eq!(r.values, want);
        // The nodes' sum steady every round, each node alternating by 40% of its mean: each
        // node's own window is judged, and neither is ever steady.
        let mut a = Across::new(&[&p, &p]);
        for t in 1..=8 {
            assert!(!a.second(0, 0, &sec(t, 100 + 50 * (t % 2))));
            assert!(!a.second(1, 0, &sec(t, 150 - 50 * (t % 2))), "round {t}");
        }
        let r = a.result(0).unwrap();
        assert_eq!(r.values, vec![250.0; 8]);
        assert!(r.window.as_ref().unwrap().steady, "the aggregate's own window is steady");
        assert!(!r.attained && r.steady_at.is_none(), "but not its nodes: the phase is not");
        // Phases not judged for steady state, or not in the plan, say nothing.
        assert!(!a.second(0, 3, &sec(1, 1)) && a.result(3).is_none());
    }
}
