//! Validation across nodes (`--verify-on other`): in each round every node writes its own file
//! (stamped with a new key per block written) and syncs it; then, in a run of its own that
//! starts only once every writer has synced and closed its file, node i reads and checks the
//! file node (i+1) mod N wrote (IOR's -C shift), so a node served stale data by its cache (a
//! cluster filesystem's, an NFS client's breaking close-to-open, sshfs's `kernel_cache`) reads
//! an older key: a stale read. Rounds repeat, so a reader that cached an earlier round's data
//! shows it.
//!
//! The reader must know which keys the writer wrote without trusting the storage under test:
//! each writer's key map comes back with its phase's result and the coordinator hands it to
//! the reader with its run (and to the writer again with its next round's, so its keys go on
//! rotating). Nothing is read from a map or journal on the shared filesystem. The rounds run
//! as steps of the one step loop ([`crate::steps`]).

use crate::steps::{run_steps, News, Step as RunStep, Steps};
use iolab_coordinator::{Cluster, ClusterResult, Work};
use iolab_model::events::Sink;
use iolab_model::{HandedMap, RunResult, Status};
use iolab_spec::{BlockSizes, Job, Phase, Plan, Rw, SyncMode, Workload};
use iolab_workload::layout::RunMark;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Whether a plan asks for validation on another node.
pub fn wanted(plan: &Plan) -> bool {
    plan.phases.iter().flat_map(|p| &p.jobs).any(|j| j.verify.as_ref().is_some_and(|v| v.on_other))
}

/// Writing or reading back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    Write,
    Read,
}

/// One step of the rounds: one run on every node.
#[derive(Debug, Clone)]
pub struct Step {
    /// 1-based.
    pub round: u32,
    /// The phase of the user's plan it runs.
    pub phase: usize,
    pub kind: StepKind,
    /// `write 2` (`write 2 PHASE` when the plan has several phases).
    pub name: String,
    /// Per node, in node order: its plan for this step.
    pub plans: Vec<Plan>,
}

/// The rounds of a plan on a set of nodes, checked and expanded.
#[derive(Debug, Clone)]
pub struct Rounds {
    pub nodes: Vec<String>,
    pub rounds: u32,
    pub steps: Vec<Step>,
}

/// A node's file of a job: the job's target with the node's name appended (`f` → `f.n1`).
pub fn node_file(target: &Path, node: &str) -> PathBuf {
    let mut s = target.as_os_str().to_os_string();
    s.push(".");
    s.push(node);
    PathBuf::from(s)
}

/// The job a node writes its own file with: the user's, on its file, synced at its end.
fn writer_job(j: &Job, node: &str) -> Job {
    let mut w = j.clone();
    w.target = node_file(&j.target, node);
    if let Workload::Block(b) = &mut w.workload {
        b.end_fsync = true;
    }
    w
}

/// The job a node reads `writer`'s file with: every block once, in order, one thread, checked
/// against the keys `writer` left.
fn reader_job(j: &Job, writer: &str) -> Job {
    let mut r = j.clone();
    r.name = format!("{}-check", j.name);
    r.target = node_file(&j.target, writer);
    r.threads = 1;
    r.runtime = None;
    r.ramp = Duration::ZERO;
    if let Workload::Block(b) = &mut r.workload {
        b.rw = Rw::Read;
        b.mix = 100;
        b.bs = BlockSizes::single(b.bs.min());
        b.stride = None;
        b.io_size = None;
        b.sync = SyncMode::None;
        b.fsync_every = 0;
        b.end_fsync = false;
        b.rate = None;
        b.rate_iops = None;
    }
    if let Some(v) = r.verify.as_mut() {
        v.before_rewrite = false;
        v.after = false;
        v.peer = Some(writer.to_string());
    }
    r
}

impl Rounds {
    /// Check `plan` for validation on another node over `nodes` and lay out its steps.
    pub fn new(plan: &Plan, nodes: &[String]) -> Result<Rounds, String> {
        if nodes.len() < 2 {
            return Err(format!(
                "--verify-on other needs two nodes or more (a node other than the writer reads back); {} given",
                nodes.len()
            ));
        }
        let mut rounds = 0;
        for j in plan.phases.iter().flat_map(|p| &p.jobs) {
            let Some(v) = j.verify.as_ref().filter(|v| v.on_other) else {
                return Err(format!(
                    "job `{}`: with --verify-on other every job of the run is validated across nodes; give it to each",
                    j.name
                ));
            };
            if !matches!(j.workload, Workload::Block(_)) {
                return Err(format!("job `{}`: --verify-on other applies to the block workload", j.name));
            }
            if j.target.is_absolute() {
                return Err(format!(
                    "job `{}`: with --verify-on other the target `{}` must be relative, a file in the directory every node shares (each node's dir=)",
                    j.name,
                    j.target.display()
                ));
            }
            if v.peer.is_some() {
                return Err(format!("job `{}` already names a writer node", j.name));
            }
            // Its key map travels in one message: at most MAX_HANDED_BLOCKS key blocks.
            if let (Some(size), Some(b)) = (j.size, j.workload.block()) {
                let blocks = size.0 / b.bs.min().0.max(1);
                if blocks > iolab_verify::handed::MAX_HANDED_BLOCKS as u64 {
                    return Err(format!(
                        "job `{}`: {} key blocks of {} per file; --verify-on other hands a file's key map from node to node and takes at most {} (a smaller --size or a larger --bs)",
                        j.name,
                        blocks,
                        b.bs.min(),
                        iolab_verify::handed::MAX_HANDED_BLOCKS
                    ));
                }
            }
            rounds = rounds.max(v.rounds.max(1));
        }
        let mut steps = Vec::new();
        let several = plan.phases.len() > 1;
        for round in 1..=rounds {
            for (pi, phase) in plan.phases.iter().enumerate() {
                for kind in [StepKind::Write, StepKind::Read] {
                    let word = if kind == StepKind::Write { "write" } else { "read" };
                    let name =
                        if several { format!("{word} {round} {}", phase.name) } else { format!("{word} {round}") };
                    let plans = nodes
                        .iter()
                        .enumerate()
                        .map(|(i, n)| {
                            let writer = &nodes[(i + 1) % nodes.len()];
                            let jobs = phase
                                .jobs
                                .iter()
                                .map(|j| if kind == StepKind::Write { writer_job(j, n) } else { reader_job(j, writer) })
                                .collect();
                            Plan { phases: vec![Phase { name: name.clone(), jobs }] }
                        })
                        .collect();
                    steps.push(Step { round, phase: pi, kind, name, plans });
                }
            }
        }
        for s in &steps {
            for p in &s.plans {
                p.validate().map_err(|e| format!("{}: {e}", s.name))?;
            }
        }
        Ok(Rounds { nodes: nodes.to_vec(), rounds, steps })
    }

    /// The run as a whole: one phase per step, every node's jobs named `node:job`.
    pub fn plan(&self) -> Plan {
        Plan { phases: self.steps.iter().map(|s| self.step_phase(s)).collect() }
    }

    fn step_phase(&self, s: &Step) -> Phase {
        let jobs = self
            .nodes
            .iter()
            .zip(&s.plans)
            .flat_map(|(n, p)| {
                p.phases[0].jobs.iter().map(move |j| {
                    let mut j = j.clone();
                    j.name = format!("{n}:{}", j.name);
                    j
                })
            })
            .collect();
        Phase { name: s.name.clone(), jobs }
    }

    /// Run every step in order on `cluster` (connected to `self.nodes`, in that order), each
    /// step a run of its own on every node (`steps::run_steps`). `hook` hears each step before
    /// (`false`) and after (`true`) it ran to completion: a test injects faults there. Stops at
    /// the first step that does not complete; errors found do not stop the rounds.
    pub fn run(
        &self,
        cluster: &mut Cluster,
        stop: Arc<AtomicBool>,
        sink: &mut dyn Sink,
        hook: &mut dyn FnMut(&Step, bool),
    ) -> RunResult {
        let mut news = |n: News| match n {
            News::Begin { index, .. } => hook(&self.steps[index], false),
            News::Ran { index, result, .. } if result.aggregate.status == Status::Complete => {
                hook(&self.steps[index], true)
            }
            News::Ran { .. } => {}
        };
        self.run_with(cluster, stop, sink, &mut news)
    }

    /// [`Rounds::run`] telling `news` all the step loop tells.
    pub fn run_with(
        &self,
        cluster: &mut Cluster,
        stop: Arc<AtomicBool>,
        sink: &mut dyn Sink,
        news: &mut dyn FnMut(News),
    ) -> RunResult {
        let mut run = self.steps_on(cluster.names());
        run_steps(cluster, &mut run, stop, sink, news)
    }

    /// The rounds as steps on nodes `names` (in the cluster's order), for `steps::run_steps`.
    pub fn steps_on(&self, names: Vec<String>) -> RoundsRun<'_> {
        RoundsRun { rounds: self, names, latest: HashMap::new() }
    }
}

/// The rounds as they run: each writer's key maps as it last handed them over, by node.
pub struct RoundsRun<'a> {
    rounds: &'a Rounds,
    /// The nodes of the cluster the rounds run on, in its order.
    names: Vec<String>,
    latest: HashMap<String, Vec<HandedMap>>,
}

impl Steps for RoundsRun<'_> {
    fn plan(&self) -> Plan {
        self.rounds.plan()
    }
    fn count(&self) -> usize {
        self.rounds.steps.len()
    }
    fn step(&mut self, i: usize, mark: &RunMark) -> Result<RunStep, String> {
        let (r, step) = (self.rounds, &self.rounds.steps[i]);
        if self.names != r.nodes {
            return Err(format!("the rounds were laid out for nodes {:?}, not {:?}", r.nodes, self.names));
        }
        let work = r
            .nodes
            .iter()
            .enumerate()
            .map(|(n, node)| {
                // A writer takes its own keys back; a reader the next node's.
                let from = match step.kind {
                    StepKind::Write => node,
                    StepKind::Read => &r.nodes[(n + 1) % r.nodes.len()],
                };
                Some(Work {
                    plan: Arc::new(step.plans[n].clone()),
                    mkdirs: Vec::new(),
                    run_mark: mark.clone(),
                    keys: self.latest.get(from).cloned().unwrap_or_default(),
                })
            })
            .collect();
        let plan = Arc::new(Plan { phases: vec![r.step_phase(step)] });
        Ok(RunStep { name: step.name.clone(), plan, work })
    }
    /// A writer's step hands over each node's key maps, for the next node to check against.
    fn ran(&mut self, i: usize, result: &ClusterResult) -> Result<(), String> {
        if self.rounds.steps[i].kind != StepKind::Write {
            return Ok(());
        }
        for (n, maps) in self.rounds.nodes.iter().zip(&result.key_maps) {
            if maps.is_empty() {
                return Err(format!(
                    "node `{n}` handed over no key map of what it wrote, so no other node can check it"
                ));
            }
            self.latest.insert(n.clone(), maps.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{Bytes, JobPatch, VerifyOn};

    fn plan(f: impl FnOnce(&mut JobPatch)) -> Plan {
        let mut p = JobPatch {
            target: Some("f".into()),
            rw: Some(Rw::RandWrite),
            size: Some(Bytes::mib(1)),
            threads: Some(2),
            verify_on: Some(VerifyOn::Other),
            verify_rounds: Some(2),
            ..Default::default()
        };
        f(&mut p);
        Plan { phases: vec![Phase { name: "p".into(), jobs: vec![p.resolve("j").unwrap()] }] }
    }

    #[test]
    fn each_node_writes_its_file_then_reads_the_next_nodes() {
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let r = Rounds::new(&plan(|_| {}), &names).unwrap();
        assert_eq!(
            r.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["write 1", "read 1", "write 2", "read 2"]
        );
        let job = |s: usize, n: usize| &r.steps[s].plans[n].phases[0].jobs[0];
        for (n, own, next) in [(0, "f.a", "f.b"), (1, "f.b", "f.c"), (2, "f.c", "f.a")] {
            let w = job(0, n);
            assert_eq!(w.target, Path::new(own));
            let Workload::Block(b) = &w.workload else { panic!() };
            assert!(b.end_fsync && b.rw == Rw::RandWrite && w.threads == 2);
            assert_eq!(w.verify.as_ref().unwrap().peer, None);
            let rd = job(1, n);
            assert_eq!(rd.target, Path::new(next));
            let Workload::Block(b) = &rd.workload else { panic!() };
            assert!(b.rw == Rw::Read && !b.end_fsync && rd.threads == 1);
            assert_eq!(rd.verify.as_ref().unwrap().peer.as_deref(), Some(&next[2..]));
        }
        let whole = r.plan();
        assert_eq!(whole.phases.len(), 4);
        assert_eq!(whole.phases[1].jobs[0].name, "a:j-check");
    }

    #[test]
    fn what_cannot_be_checked_across_nodes_is_refused() {
        let one = vec!["a".to_string()];
        assert!(Rounds::new(&plan(|_| {}), &one).unwrap_err().contains("two nodes"));
        let two: Vec<String> = vec!["a".into(), "b".into()];
        assert!(Rounds::new(&plan(|p| p.target = Some("/abs/f".into())), &two).unwrap_err().contains("relative"));
        let mut mixed = plan(|_| {});
        mixed.phases[0].jobs.push(
            JobPatch { target: Some("g".into()), rw: Some(Rw::Write), size: Some(Bytes::mib(1)), ..Default::default() }
                .resolve("plain")
                .unwrap(),
        );
        assert!(Rounds::new(&mixed, &two).unwrap_err().contains("every job"));
        let huge = plan(|p| p.size = Some(Bytes::gib(128)));
        assert!(Rounds::new(&huge, &two).unwrap_err().contains("at most"));
    }
}
