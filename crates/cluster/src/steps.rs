//! A run of steps on the connected nodes, once for every caller: a scenario's steps, the
//! rounds of validation across nodes (`--verify-on other`), and a plain run on several nodes
//! (one step). Each step is a run of its own on the nodes that take part (`Cluster::run_each`:
//! each of its phases starts on them at one instant); the steps run in order under one mark
//! (a later step may write what an earlier one created), and the whole is one run whose phases
//! are the steps' phases in order. Each node's events reach the caller's sink as they come,
//! shifted to their place in the whole run; each step's merged phases reach it when the step
//! ends, as the `PhaseEnd`s of node `*` (`iolab_model::merge::AGGREGATE`). A step that does not complete ends the run, its failure kept with what was measured.

use iolab_coordinator::{Cluster, ClusterResult, Work};
use iolab_model::events::{Event, Shifted, Sink};
use iolab_model::merge::AGGREGATE;
use iolab_model::{RunResult, Status};
use iolab_spec::Plan;
use iolab_workload::layout::RunMark;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One step as it runs: its name and what each node does (in the cluster's node order;
/// `None`: the node sits it out).
pub struct Step {
    pub name: String,
    /// The step's share of the whole run's plan (its phases, every node's jobs named
    /// `node:job`): the aggregate's plan.
    pub plan: Arc<Plan>,
    pub work: Vec<Option<Work>>,
}

/// What a run of steps runs. The steps are made one at a time, so a step may depend on what
/// the ones before it handed over.
pub trait Steps {
    /// The run as a whole: every step's phases, in order.
    fn plan(&self) -> Plan;
    /// How many steps.
    fn count(&self) -> usize;
    /// Step `i`, within the run of mark `mark`.
    fn step(&mut self, i: usize, mark: &RunMark) -> Result<Step, String>;
    /// Step `i` ran to completion: take what it handed over, or fail the run (`Err`).
    fn ran(&mut self, _i: usize, _result: &ClusterResult) -> Result<(), String> {
        Ok(())
    }
}

/// What the loop tells its caller as it goes.
pub enum News<'a> {
    /// Step `index` (of `of`) is about to run on these nodes.
    Begin { index: usize, of: usize, step: &'a Step },
    /// Step `index` ran (completed or not): its merged phases are the run's phases from
    /// `first_phase` on.
    Ran { index: usize, first_phase: usize, result: &'a ClusterResult },
}

/// Run every step in order on `cluster`; the whole as it ended: the merged phases, the nodes,
/// how it ended. Stops at the first step that does not complete, or when `stop` is set. Each
/// node's own phases are in its events and in each step's news, not kept here.
pub fn run_steps(
    cluster: &mut Cluster,
    steps: &mut dyn Steps,
    stop: Arc<AtomicBool>,
    sink: &mut dyn Sink,
    news: &mut dyn FnMut(News),
) -> RunResult {
    let mut run = RunResult { nodes: cluster.infos(), ..RunResult::begin(steps.plan()) };
    // One mark for every step: a file a step created may be written by a later step, on any
    // node that sees it in the same directory (a shared file seen through another mount, where
    // the file's own mark may not show), and nothing else (layout::RunMark).
    let mark = RunMark::new();
    let count = steps.count();
    for i in 0..count {
        if stop.load(Ordering::Relaxed) {
            run.status = Status::Interrupted;
            break;
        }
        let step = match steps.step(i, &mark) {
            Ok(s) => s,
            Err(e) => {
                (run.status, run.error) = (Status::Failed, Some(e));
                break;
            }
        };
        news(News::Begin { index: i, of: count, step: &step });
        let first = run.phases.len();
        let result = {
            let mut shifted = Shifted { by: first, inner: &mut *sink };
            cluster.run_each(&step.plan, &step.work, stop.clone(), &mut shifted)
        };
        // The merged phases go on as node `*`'s (the store keeps them under that name).
        for (k, p) in result.aggregate.phases.iter().enumerate() {
            sink.event(Some(AGGREGATE), Event::PhaseEnd { phase: first + k, result: p });
        }
        news(News::Ran { index: i, first_phase: first, result: &result });
        run.phases.extend(result.aggregate.phases.iter().cloned());
        if result.aggregate.status != Status::Complete {
            run.status = result.aggregate.status;
            run.error = result.aggregate.error.as_ref().map(|e| format!("step `{}`: {e}", step.name));
            break;
        }
        if let Err(e) = steps.ran(i, &result) {
            (run.status, run.error) = (Status::Failed, Some(format!("step `{}`: {e}", step.name)));
            break;
        }
    }
    if run.status == Status::Running {
        run.status = Status::Complete;
    }
    run
}

/// One step (`iolab run --node`, `iolab replay --node`): each node's work as given (`None`:
/// the node sits out), under the run's mark.
pub struct OneStep {
    /// The run as a whole.
    pub plan: Arc<Plan>,
    /// Per node, in the cluster's node order.
    pub work: Vec<Option<Work>>,
}

impl Steps for OneStep {
    fn plan(&self) -> Plan {
        (*self.plan).clone()
    }
    fn count(&self) -> usize {
        1
    }
    fn step(&mut self, _i: usize, mark: &RunMark) -> Result<Step, String> {
        let name = self.plan.phases.first().map(|p| p.name.clone()).unwrap_or_default();
        let work = self.work.iter().map(|w| w.as_ref().map(|w| Work { run_mark: mark.clone(), ..w.clone() })).collect();
        Ok(Step { name, plan: self.plan.clone(), work })
    }
}
