//! A run's events onto the board: one more [`Sink`] of the event stream, beside the progress
//! line and the store's. It runs on the thread that coordinates the run (or, on a coordinator,
//! the one that follows the nodes), never on a worker's, and does per event what the event
//! carries: a second's counts give the I/O in flight, a sample the system figures, the phase so
//! far (once a second) its counters and histograms, folded into the fixed buckets.

use crate::board::{Board, NetCounts, NodeFigures, PhaseFigures, Planned, RunFigures, KEEP_RUNS};
use iolab_model::events::{Event, Sink};
use iolab_model::merge::AGGREGATE;
use iolab_model::{Status, TimelinePoint};
use iolab_spec::Plan;
use std::sync::Arc;

/// A run about to be fed.
pub struct RunStart<'a> {
    /// The `run_id` label.
    pub id: String,
    /// A `RunKind` word, or `agent`.
    pub kind: &'a str,
    /// The run's `--label`s as given (made valid here).
    pub labels: &'a [(String, String)],
    /// The run's plan: its phases' names and expected lengths, by index.
    pub plan: &'a Plan,
    /// This process's node name (events of its own run carry none).
    pub node: String,
    pub started_unix_s: f64,
}

/// Feeds one run's events to a board. A clone feeds the same run (a step loop's news beside
/// the nodes' events).
#[derive(Clone)]
pub struct Feed {
    board: Arc<Board>,
    run: String,
    node: String,
    /// Phases of this run fed before this feed began (an agent's later step of the same run).
    offset: usize,
}

impl Board {
    /// Put a run on the board and return its feed. A run already there under the same id (an
    /// agent's next step of a coordinator's run) goes on: the new plan's phases follow its own.
    /// The oldest run goes when more than [`KEEP_RUNS`] would be kept.
    pub fn begin(self: &Arc<Self>, start: RunStart<'_>) -> Feed {
        let mut f = self.lock();
        let planned = Planned::of(start.plan);
        let offset = match f.run_mut(&start.id) {
            Some(r) => {
                let at = r.planned.len();
                r.planned.extend(planned);
                r.status = Status::Running;
                at
            }
            None => {
                f.runs.push(RunFigures {
                    id: start.id.clone(),
                    kind: start.kind.to_string(),
                    labels: crate::labels::of_run(start.labels),
                    started_unix_s: start.started_unix_s,
                    status: Status::Running,
                    planned,
                    ended: Default::default(),
                    step: None,
                    nodes: Default::default(),
                });
                let extra = f.runs.len().saturating_sub(KEEP_RUNS);
                f.runs.drain(..extra);
                0
            }
        };
        Feed { board: self.clone(), run: start.id, node: start.node, offset }
    }
}

impl Feed {
    fn with(&self, what: impl FnOnce(&mut RunFigures)) {
        if let Some(r) = self.board.lock().run_mut(&self.run) {
            what(r)
        }
    }

    /// A run of steps: step `index` (0-based) of `of` begins.
    pub fn step(&mut self, index: usize, of: usize) {
        self.with(|r| r.step = Some((index, of)));
    }

    /// The run ended so.
    pub fn finish(&mut self, status: Status) {
        self.with(|r| {
            r.status = status;
            for n in r.nodes.values_mut() {
                n.phases.values_mut().for_each(|p| p.running = false);
            }
        });
    }
}

/// Reads and writes in flight over a second, on average (Little's law: the time they spent,
/// summed, over the second's length).
fn in_flight(p: &TimelinePoint) -> f64 {
    (p.read_ops as f64 * p.read_lat_mean_ns as f64 + p.write_ops as f64 * p.write_lat_mean_ns as f64) / 1e9
}

impl Sink for Feed {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        let Some(phase) = event.phase() else { return };
        let phase = phase + self.offset;
        let own = node.is_none();
        let node = node.unwrap_or(&self.node);
        self.with(|r| {
            // A run of several nodes' merged phase is not a node's: it says the phase ended.
            if node == AGGREGATE {
                if let Event::PhaseEnd { .. } = event {
                    r.ended.insert(phase);
                }
                return;
            }
            let name = r.planned.get(phase).map(|p| p.name.clone());
            let n: &mut NodeFigures = r.nodes.entry(node.to_string()).or_default();
            match event {
                Event::PhaseStart { spec, expect, .. } => {
                    if let (Some(p), Some(d)) = (r.planned.get_mut(phase), expect.duration) {
                        p.expected_s = Some(d.as_secs_f64());
                    }
                    n.phases.entry(phase).or_default().name = spec.name.clone();
                }
                Event::Started { .. } => {
                    let p = n.phases.entry(phase).or_default();
                    p.running = true;
                    if let Some(name) = name {
                        p.name = name;
                    }
                }
                Event::Tick { point, .. } => n.in_flight = Some(in_flight(point)),
                Event::Sample { rates, .. } => {
                    for (iface, x) in rates.net.iter() {
                        let c: &mut NetCounts = n.net.entry(iface.clone()).or_default();
                        c.rx_errs = c.rx_errs.saturating_add(x.rx_errs);
                        c.tx_errs = c.tx_errs.saturating_add(x.tx_errs);
                        c.rx_drop = c.rx_drop.saturating_add(x.rx_drop);
                        c.tx_drop = c.tx_drop.saturating_add(x.tx_drop);
                    }
                    n.system = Some(rates.clone());
                }
                Event::Progress { so_far, .. } => {
                    n.phases.insert(phase, PhaseFigures::of(so_far, true));
                }
                Event::PhaseEnd { result, .. } => {
                    n.phases.insert(phase, PhaseFigures::of(result, false));
                    if own {
                        r.ended.insert(phase);
                    }
                }
                Event::Message(_) | Event::Correct { .. } | Event::KeyMaps { .. } => {}
            }
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use iolab_model::events::{Emit, Named};
    use iolab_model::{Acc, JobResult, OpClass, PhaseResult, ThreadResult, Totals};
    use iolab_spec::{JobPatch, Phase};
    use std::time::Duration;

    pub fn plan() -> Plan {
        let job = JobPatch {
            name: Some("j".into()),
            target: Some("/nowhere".into()),
            runtime: Some(Duration::from_secs(8)),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        Plan {
            phases: vec![
                Phase { name: "write".into(), jobs: vec![job.clone()] },
                Phase { name: "read".into(), jobs: vec![job] },
            ],
        }
    }

    pub fn phase(name: &str, reads: u64, lat_ns: u64) -> PhaseResult {
        let mut a = Acc::default();
        for _ in 0..reads {
            a.record(OpClass::Read, 4096, lat_ns);
        }
        let job = JobResult {
            name: "j".into(),
            total: Totals::from_acc(&a, 1.0),
            per_thread: vec![ThreadResult::new(0, 1.0, reads, reads * 4096, Some("EIO".into()))],
            ..Default::default()
        };
        PhaseResult { elapsed_s: 1.0, jobs: vec![job], ..PhaseResult::new(name) }
    }

    fn start<'a>(id: &str, plan: &'a Plan) -> RunStart<'a> {
        RunStart { id: id.into(), kind: "run", labels: &[], plan, node: "here".into(), started_unix_s: 1.0 }
    }

    #[test]
    fn progress_and_ends_fill_each_node_s_phases() {
        let board = Board::new();
        let plan = plan();
        let mut feed = board.begin(start("7", &plan));
        feed.progress(0, &phase("write", 3, 1_000));
        feed.tick(0, &TimelinePoint { read_ops: 2000, read_lat_mean_ns: 500_000, ..Default::default() }, 0);
        {
            let f = board.lock();
            let n = &f.runs[0].nodes["here"];
            assert_eq!(n.phases[&0].jobs[0].classes[0].1.ops, 3);
            assert!(n.phases[&0].running);
            assert!((n.in_flight.unwrap() - 1.0).abs() < 1e-9, "2000 reads of 0.5 ms over a second: one in flight");
        }
        feed.phase_end(0, &phase("write", 5, 1_000));
        {
            let mut named = Named { node: "n2", inner: &mut feed };
            named.progress(1, &phase("read", 4, 2_000));
        }
        feed.finish(Status::Complete);
        let f = board.lock();
        let r = &f.runs[0];
        assert_eq!(r.status, Status::Complete);
        assert_eq!(r.ended.iter().copied().collect::<Vec<_>>(), [0]);
        let here = &r.nodes["here"].phases[&0];
        assert_eq!((here.running, here.jobs[0].classes[0].1.ops, here.jobs[0].errors), (false, 5, 1));
        assert_eq!(here.jobs[0].classes[0].1.latency.count(), 5);
        assert_eq!(r.nodes["n2"].phases[&1].jobs[0].classes[0].1.ops, 4);
        assert!(!r.nodes["n2"].phases[&1].running, "the run's end ends its phases");
    }

    #[test]
    fn the_aggregate_only_says_a_phase_ended_and_old_runs_go() {
        let board = Board::new();
        let plan = plan();
        let mut feed = board.begin(start("1", &plan));
        feed.event(Some(AGGREGATE), Event::PhaseEnd { phase: 1, result: &phase("read", 9, 1) });
        assert!(board.lock().runs[0].nodes.is_empty());
        assert!(board.lock().runs[0].ended.contains(&1));
        // The same id again is the same run going on: its phases follow.
        let mut again = board.begin(start("1", &plan));
        again.progress(0, &phase("write", 1, 1));
        assert_eq!(board.lock().runs[0].planned.len(), 4);
        assert!(board.lock().runs[0].nodes["here"].phases.contains_key(&2));
        board.begin(start("2", &plan));
        board.begin(start("3", &plan));
        let ids: Vec<String> = board.lock().runs.iter().map(|r| r.id.clone()).collect();
        assert_eq!(ids, ["2", "3"]);
        // A feed whose run went feeds nothing, and says nothing.
        feed.progress(0, &phase("write", 1, 1));
        assert!(board.lock().runs.iter().all(|r| r.nodes.is_empty()));
    }

    #[test]
    fn planned_phases_know_their_length_when_time_bounded() {
        let p = Planned::of(&plan());
        assert_eq!((p[0].name.as_str(), p[0].expected_s), ("write", Some(8.0)));
    }
}
