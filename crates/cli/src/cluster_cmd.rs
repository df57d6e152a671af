//! `iolab run --node ...`, `iolab scenario` (and `survey --node`, `replay --node`): runs of
//! steps on several nodes at once, through `iolab-cluster`. Everything that can be checked is
//! checked before any node is contacted (the plan, each node's plan as it will run there, what
//! each way of reaching a node needs). Each node's seconds and phases are saved under its name
//! as they come, each step's aggregate under node `*` when the step ends (it comes as node
//! `*`'s phase end); the summary printed is the aggregate's, with a scenario's verdict.

use crate::args::{NodeArgs, OutArgs, RunArgs, SaveArgs, ScenarioArgs};
use crate::live_metrics::Live;
use crate::output::{emit, exit_code};
use crate::record::{Recorder, Tee};
use crate::run_cmd::plan_of;
use anyhow::{bail, Context, Result};
use iolab_cluster::rounds::{Rounds, StepKind};
use iolab_cluster::scenario::ScenarioSteps;
use iolab_cluster::steps::{run_steps, News, OneStep, Steps};
use iolab_cluster::{Addr, Cluster, NodeSpec, Options, Work};
use iolab_report::scenario::{self as scenarios, Scenario};
use iolab_spec::{Plan, StepPlan};
use iolab_workload::layout::RunMark;
use iolab_workload::model::RunKind;
use iolab_workload::results::{PhaseResult, RunResult};
use iolab_workload::{Event, NoSink, Sink};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The nodes the flags name: `--nodes FILE` first, then each `--node`.
fn specs(nodes: &NodeArgs) -> Result<Vec<NodeSpec>> {
    let mut specs = Vec::new();
    if let Some(path) = &nodes.nodes_file {
        let text = iolab_spec::input::read_text(path, "nodes file", iolab_spec::input::NODES_FILE_MAX)?;
        specs.extend(NodeSpec::parse_file(path, &text)?);
    }
    for n in &nodes.node {
        specs.push(NodeSpec::parse(n)?);
    }
    // --expect N: ranks 0 to N-1 join, those not named by a join:RANK node as rankR.
    for r in 0..nodes.expect.unwrap_or(0) {
        let addr = Addr::Join(r);
        if !specs.iter().any(|s| s.addr == addr) {
            specs.push(NodeSpec { name: format!("rank{r}"), addr, dir: None });
        }
    }
    if specs.is_empty() {
        bail!("no node given: add --node NAME=ADDR[,dir=PATH] or [[node]] tables with name and addr to --nodes");
    }
    for s in &specs {
        if s.name == iolab_store::AGGREGATE || s.name.contains('\x1f') {
            bail!("node name `{}` is reserved; choose another", s.name.escape_debug());
        }
    }
    Ok(specs)
}

/// The names of the nodes the flags give, in order.
pub fn node_names(nodes: &NodeArgs) -> Result<Vec<String>> {
    Ok(specs(nodes)?.into_iter().map(|s| s.name).collect())
}

/// The nodes, how the coordinator behaves, and the run's output, as the flags give them.
pub struct On<'a> {
    pub nodes: &'a NodeArgs,
    pub out: &'a OutArgs,
    pub save: &'a SaveArgs,
    /// `--metrics-listen`'s endpoint: every node's figures, labelled by node.
    pub live: &'a Live,
}

impl On<'_> {
    fn options(&self) -> Result<Options> {
        let interval = self.out.sample_interval;
        Ok(Options {
            ignore_clock: self.nodes.ignore_clock,
            sample_interval: (!interval.is_zero()).then_some(interval),
            token: self.nodes.token_file.as_deref().map(crate::agent_cmd::read_token).transpose()?,
            known_agents: self.save.db.local_dir().map(|d| d.join("known_agents")),
            ca: self.nodes.ca.clone(),
            listen: self.nodes.listen.clone(),
            join_patience: self.nodes.join_timeout,
        })
    }

    /// Check every step against the nodes before any is contacted, then connect them all and
    /// say how each one's clock stands.
    fn connect(&self, specs: &[NodeSpec], steps: &mut dyn Steps) -> Result<Cluster> {
        let opts = self.options()?;
        let mark = RunMark::new();
        let count = steps.count();
        for i in 0..count {
            let step = steps.step(i, &mark).map_err(anyhow::Error::msg)?;
            let checked = Cluster::preflight(specs, &step.work, &opts);
            if count > 1 {
                checked.with_context(|| format!("step `{}`", step.name))?;
            } else {
                checked?;
            }
        }
        let cluster = Cluster::connect(specs, opts, &mut |w| errln!("iolab: warning: {w}"))?;
        if !self.out.machine() {
            for i in cluster.infos() {
                errln!(
                    "iolab: node {} ({}, {}): clock offset {:+.3} ± {:.3} ms, round trip {:.3} ms",
                    i.name,
                    i.address,
                    i.hostname,
                    i.clock_offset_ns as f64 / 1e6,
                    i.clock_offset_uncertainty_ns as f64 / 1e6,
                    i.rtt_ns as f64 / 1e6
                );
            }
        }
        Ok(cluster)
    }

    /// Run `steps` on the nodes `specs`, showing every node's progress, saying each step with
    /// `say` (its line, or none), and saving the whole as one run of `kind` named `name`. With
    /// `keep`, each node's own phases (with their seconds) are kept there, at their places in
    /// the whole run (fio's logs of each node need them; nothing else keeps them).
    fn run(
        &self,
        specs: &[NodeSpec],
        steps: &mut dyn Steps,
        (kind, name): (RunKind, &str),
        say: &dyn Fn(usize, usize, &iolab_cluster::steps::Step) -> Option<String>,
        mut keep: Option<&mut NodePhases>,
        stop: Arc<AtomicBool>,
    ) -> Result<(RunResult, Option<Recorder>)> {
        let json = self.out.machine();
        let mut cluster = self.connect(specs, steps)?;
        let plan = steps.plan();
        let mut rec = Recorder::begin(self.save, kind, name, &plan)?;
        // The nodes saved at once, not only at the end: a run whose coordinator is killed is
        // then read back as a run of several nodes, each node's partial phases shown.
        if let Some(r) = rec.as_mut() {
            r.set_nodes(&cluster.infos(), None);
        }
        let mut feed = self.live.feed(rec.as_ref().map(|r| r.run), kind, &self.save.labels, &plan);
        let mut steps_feed = feed.clone();
        let draw = !json && !self.out.no_progress && std::io::stderr().is_terminal();
        let ran = {
            let mut live = Nodes { rec: rec.as_mut(), metrics: feed.as_mut(), draw, json, rates: Vec::new() };
            let mut news = |n: News| match n {
                News::Begin { index, of, step } => {
                    if let Some(f) = steps_feed.as_mut() {
                        f.step(index, of);
                    }
                    if let Some(line) = say(index, of, step).filter(|_| !json) {
                        errln!("iolab: step {}/{of}: {} ({line})", index + 1, step.name);
                    }
                }
                News::Ran { first_phase, result, .. } => {
                    if draw {
                        errln!();
                    }
                    if let Some(k) = keep.as_deref_mut() {
                        keep_nodes(k, first_phase, result);
                    }
                }
            };
            run_steps(&mut cluster, steps, stop, &mut live, &mut news)
        };
        if let Some(f) = feed.as_mut() {
            f.finish(ran.status);
        }
        Ok((ran, rec))
    }
}

/// Each node's own phases, at their places in the whole run (empty where it sat out).
type NodePhases = Vec<(String, Vec<PhaseResult>)>;

/// A step's nodes' phases, kept in `into` from the run's phase `first` on.
fn keep_nodes(into: &mut NodePhases, first: usize, r: &iolab_cluster::ClusterResult) {
    for n in &r.nodes {
        let at = match into.iter().position(|(name, _)| *name == n.name) {
            Some(at) => at,
            None => {
                into.push((n.name.clone(), Vec::new()));
                into.len() - 1
            }
        };
        let phases = &mut into[at].1;
        phases.resize_with(first, PhaseResult::default);
        phases.extend(n.phases.iter().cloned());
    }
}

/// Save a run of several nodes as it ended (its nodes, a scenario's verdict, its status) and
/// say where.
fn finish(rec: Option<Recorder>, run: &RunResult, json: bool) {
    if let Some(mut r) = rec {
        r.set_nodes(&run.nodes, run.verdict.as_ref());
        r.finish(run);
        if !json {
            errln!("iolab: {}", r.where_());
        }
    }
}

/// `iolab run --node ...`: the same plan on every node at one start; with `--verify-on other`,
/// the rounds of `iolab_cluster::rounds` (each node writes and syncs its file, then the next
/// node reads and checks it), saved as one run whose phases are the steps (whose
/// `phases[].verify` gives exit status 1 when any node found a bad block).
pub fn run(mut args: RunArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let (plan, name) = plan_of(&mut args)?;
    let specs = specs(&args.nodes)?;
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let live = Live::start(&args.out.metrics, args.out.machine())?;
    let on = On { nodes: &args.nodes, out: &args.out, save: &args.save, live: &live };
    // Each node's own phases, for its fio logs, when they are asked for.
    let mut per_node = NodePhases::new();
    let keep = args.logs.wanted().then_some(&mut per_node);
    let (run, rec) = if iolab_cluster::rounds::wanted(&plan) {
        // Checked before any node is contacted.
        let rounds = Rounds::new(&plan, &names).map_err(anyhow::Error::msg)?;
        crate::fio_logs::check_nodes(&args.logs, rounds.steps.len(), &names)?;
        let say = |i: usize, _: usize, _: &iolab_cluster::steps::Step| {
            Some(match rounds.steps[i].kind {
                StepKind::Write => "every node writes and syncs its own file".to_string(),
                StepKind::Read => "every node reads and checks the next node's file".to_string(),
            })
        };
        let mut steps = rounds.steps_on(names.clone());
        on.run(&specs, &mut steps, (RunKind::Run, &name), &say, keep, stop.clone())?
    } else {
        crate::fio_logs::check_nodes(&args.logs, plan.phases.len(), &names)?;
        let shared = Arc::new(plan);
        let work = names.iter().map(|_| Some(Work::plan(shared.clone(), &RunMark::new()))).collect();
        let mut steps = OneStep { plan: shared.clone(), work };
        on.run(&specs, &mut steps, (RunKind::Run, &name), &|_, _, _| None, keep, stop.clone())?
    };
    finish(rec, &run, args.out.machine());
    write_logs(&args, &run, &per_node)?;
    if args.cleanup {
        errln!("iolab: --cleanup with --node: remove the files on each node yourself (the agents delete nothing)");
    }
    crate::stdout::unless_closed(emit(&run, &args.out))?;
    live.linger(&stop, args.out.machine());
    Ok(exit_code(&run))
}

/// fio's logs of a run of several nodes: the merged run's, and each node's own (fio's client
/// writes each server's).
fn write_logs(args: &RunArgs, run: &RunResult, per_node: &NodePhases) -> Result<()> {
    let mut written = crate::fio_logs::write(&args.logs, run)?;
    for (node, phases) in per_node {
        written.extend(crate::fio_logs::write_phases(&args.logs, phases, Some(node))?);
    }
    if !args.out.machine() {
        for path in written {
            errln!("iolab: wrote {}", path.display());
        }
    }
    Ok(())
}

/// Run one plan per node at one start (`work`, in the order of the nodes given; `None`: the
/// node sits out), saved as one run of `kind` named `name`, its plan `plan`. Returns the
/// aggregate; prints nothing but progress.
pub fn run_each(
    on: On,
    (kind, name): (RunKind, &str),
    plan: Plan,
    work: Vec<Option<Work>>,
    stop: Arc<AtomicBool>,
) -> Result<RunResult> {
    let specs = specs(on.nodes)?;
    let mut steps = OneStep { plan: Arc::new(plan), work };
    let (run, rec) = on.run(&specs, &mut steps, (kind, name), &|_, _, _| None, None, stop)?;
    finish(rec, &run, on.out.machine());
    Ok(run)
}

/// The scenario the arguments name: a file if one exists at that path (its `repeat` set by
/// `--repeat`), else a built-in.
fn scenario_of(args: &ScenarioArgs) -> Result<Box<dyn Scenario>> {
    let path = std::path::Path::new(&args.scenario);
    // Anything at that path is read as a scenario file: a FIFO, a device or a directory is
    // refused by name rather than taken for a built-in's name (or waited on).
    if path.exists() {
        let text = iolab_spec::input::read_text(path, "scenario file", iolab_spec::input::JOB_FILE_MAX)?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario".into());
        let mut file = iolab_spec::parse_scenario_file(&text, &stem).with_context(|| format!("{}", path.display()))?;
        if let Some(r) = args.repeat {
            file.repeat = r;
        }
        return Ok(Box::new(scenarios::File(file)));
    }
    Ok(Box::new(scenarios::builtin_or_list(&args.scenario)?))
}

/// `iolab scenario FILE|NAME --node ...`: each step on its nodes at one instant, steps in
/// order, stored as one run whose phases are the steps; then the scenario's verdict.
pub fn scenario(args: ScenarioArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let sc = scenario_of(&args)?;
    // A scenario of rounds (SNIA PTS's tests) runs on this machine.
    if sc.rounds(&args.job).is_some() {
        return crate::pts_cmd::run(args, sc.as_ref(), stop);
    }
    let names = node_names(&args.nodes)?;
    // Expand first: a bad scenario is refused before any node is contacted.
    let steps = sc.steps(&names, &args.job, &args.builtin_options()).with_context(|| args.scenario.clone())?;
    let live = Live::start(&args.out.metrics, args.out.machine())?;
    let on = On { nodes: &args.nodes, out: &args.out, save: &args.save, live: &live };
    let overall = run_scenario(on, sc.as_ref(), &steps, args.link_speed, stop.clone())?;
    crate::stdout::unless_closed(emit(&overall, &args.out))?;
    live.linger(&stop, args.out.machine());
    Ok(exit_code(&overall))
}

/// Run a scenario's expanded steps on the nodes and judge a complete run by the scenario,
/// saving it as one run of kind `scenario`. Nothing is printed but progress and where it was
/// saved.
pub fn run_scenario(
    on: On,
    sc: &dyn Scenario,
    plan: &StepPlan,
    link_speed: Option<f64>,
    stop: Arc<AtomicBool>,
) -> Result<RunResult> {
    if plan
        .steps
        .iter()
        .flat_map(|s| &s.parts)
        .flat_map(|p| &p.jobs)
        .any(|j| j.verify.as_ref().is_some_and(|v| v.on_other))
    {
        bail!("--verify-on other runs its own rounds of writes and read-backs: use it with `iolab run --node`, not a scenario");
    }
    let specs = specs(on.nodes)?;
    let names = specs.iter().map(|s| s.name.clone()).collect();
    let mut steps = ScenarioSteps { plan, names };
    let say = |_: usize, _: usize, s: &iolab_cluster::steps::Step| {
        let who: Vec<&str> =
            specs.iter().zip(&s.work).filter(|(_, w)| w.is_some()).map(|(n, _)| n.name.as_str()).collect();
        Some(who.join(", "))
    };
    let (mut overall, rec) = on.run(&specs, &mut steps, (RunKind::Scenario, &plan.name), &say, None, stop)?;
    if overall.status == iolab_workload::Status::Complete {
        overall.verdict = sc.verdict(&overall, link_speed);
    }
    finish(rec, &overall, on.out.machine());
    Ok(overall)
}

/// Saves each node's seconds and phases under its name, feeds the live metrics and shows each
/// node's rate.
struct Nodes<'a> {
    rec: Option<&'a mut Recorder>,
    metrics: Option<&'a mut iolab_metrics::Feed>,
    draw: bool,
    json: bool,
    /// The latest second's MB/s of each node.
    rates: Vec<(String, f64)>,
}

impl Nodes<'_> {
    /// Each node's rate in its latest second, and all of them together.
    fn show(&mut self, node: &str, phase: usize, mbs: f64) {
        match self.rates.iter_mut().find(|r| r.0 == node) {
            Some(r) => r.1 = mbs,
            None => self.rates.push((node.to_string(), mbs)),
        }
        if self.draw {
            let line: Vec<String> = self.rates.iter().map(|(n, r)| format!("{n} {r:.1} MB/s")).collect();
            let total: f64 = self.rates.iter().map(|r| r.1).sum();
            // The line is redrawn in place (CR, erase line); the node names in it are escaped.
            let line = iolab_report::text::safe(&line.join(", ")).into_owned();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2Kphase {}: {line} | all {total:.1} MB/s", phase + 1);
            let _ = err.flush();
        }
    }
}

impl Sink for Nodes<'_> {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        // The coordinator's own word (a phase ended on every node once steady): no node's.
        if let (None, Event::Message(text)) = (node, &event) {
            if !self.json {
                errln!("{}iolab: {text}", if self.draw { "\n" } else { "" });
            }
            return;
        }
        let node = node.unwrap_or("");
        match event {
            Event::Message(text) if !self.json => {
                errln!("{}iolab: node {node}: {text}", if self.draw { "\n" } else { "" });
            }
            Event::Tick { phase, point, .. } => {
                self.show(node, phase, (point.read_bytes + point.write_bytes) as f64 / 1e6)
            }
            _ => {}
        }
        if let Some(r) = self.rec.as_deref_mut() {
            r.set_node(node);
        }
        Tee { show: &mut NoSink, rec: self.rec.as_deref_mut(), metrics: self.metrics.as_deref_mut() }
            .event(Some(node), event);
    }
}
