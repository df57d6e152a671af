//! `iolab run --node ...` and `iolab scenario`: plans on several nodes at once, through
//! `iolab-cluster`'s coordinator. Each node's seconds and phases are saved under its name as
//! they come, the aggregate under node `*`; the summary printed is the aggregate's, with a
//! scenario's verdict.

use crate::args::{NodeArgs, OutArgs, RunArgs, SaveArgs, ScenarioArgs};
use crate::output::{emit, exit_code};
use crate::record::{Recorder, Tee};
use anyhow::{bail, Context, Result};
use iolab_cluster::coordinator::Observer;
use iolab_cluster::{Cluster, NodeSpec, Options, Work};
use iolab_spec::{Phase, Plan, Scenario};
use iolab_workload::model::RunKind;
use iolab_workload::results::{PhaseResult, RunResult, Status, TimelinePoint};
use iolab_workload::{NoSink, Sink};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The nodes the flags name: `--nodes FILE` first, then each `--node`.
fn specs(nodes: &NodeArgs) -> Result<Vec<NodeSpec>> {
    let mut specs = Vec::new();
    if let Some(path) = &nodes.nodes_file {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading nodes file {}", path.display()))?;
        specs.extend(NodeSpec::parse_file(path, &text)?);
    }
    for n in &nodes.node {
        specs.push(NodeSpec::parse(n)?);
    }
    // --expect N: ranks 0 to N-1 join, those not named by a join:RANK node as rankR.
    for r in 0..nodes.expect.unwrap_or(0) {
        let addr = iolab_cluster::connect::Addr::Join(r);
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

/// Connect every node and say how each one's clock stands.
fn connect(
    nodes: &NodeArgs,
    save: &SaveArgs,
    sample_interval: std::time::Duration,
    json: bool,
) -> Result<(Cluster, Vec<String>)> {
    let specs = specs(nodes)?;
    let sample_interval = (!sample_interval.is_zero()).then_some(sample_interval);
    let token = nodes.token_file.as_deref().map(crate::agent_cmd::read_token).transpose()?;
    let known_agents = save.db.local_dir().map(|d| d.join("known_agents"));
    let opts = Options {
        ignore_clock: nodes.ignore_clock,
        sample_interval,
        token,
        known_agents,
        ca: nodes.ca.clone(),
        listen: nodes.listen.clone(),
        join_patience: nodes.join_timeout,
    };
    let cluster = Cluster::connect(&specs, opts, &mut |w| eprintln!("iolab: warning: {w}"))?;
    if !json {
        for i in cluster.infos() {
            eprintln!(
                "iolab: node {} ({}, {}): clock offset {:.2} ms, round trip {:.2} ms",
                i.name,
                i.address,
                i.hostname,
                i.clock_offset_ns as f64 / 1e6,
                i.rtt_ns as f64 / 1e6
            );
        }
    }
    Ok((cluster, specs.into_iter().map(|s| s.name).collect()))
}

pub fn run(args: &RunArgs, plan: &Plan, name: &str, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let aggregate = if iolab_cluster::cross::wanted(plan) {
        verify_on_other(args, plan, name, stop)?
    } else {
        same_plan_on_each(args, plan, name, stop)?
    };
    if args.cleanup {
        eprintln!("iolab: --cleanup with --node: remove the files on each node yourself (the agents delete nothing)");
    }
    emit(&aggregate, &args.out)?;
    Ok(exit_code(&aggregate))
}

/// `iolab run --node ...`: the same plan on every node at one start.
fn same_plan_on_each(args: &RunArgs, plan: &Plan, name: &str, stop: Arc<AtomicBool>) -> Result<RunResult> {
    let same = |names: &[String]| -> Result<Vec<Option<Work>>> {
        let run_mark = iolab_workload::layout::RunMark::new();
        Ok(names
            .iter()
            .map(|_| {
                Some(Work { plan: plan.clone(), mkdirs: Vec::new(), run_mark: run_mark.clone(), keys: Vec::new() })
            })
            .collect())
    };
    run_each(&args.nodes, &args.out, &args.save, RunKind::Run, name, plan, same, stop)
}

/// `iolab run --node ... --verify-on other`: the rounds of iolab_cluster::cross (each node
/// writes and syncs its file, then the next node reads and checks it), saved as one run whose
/// phases are the steps (whose `phases[].verify` gives exit status 1 when any node found a bad
/// block).
fn verify_on_other(args: &RunArgs, plan: &Plan, name: &str, stop: Arc<AtomicBool>) -> Result<RunResult> {
    let names = node_names(&args.nodes)?;
    // Checked before any node is contacted.
    let rounds = iolab_cluster::cross::Rounds::new(plan, &names).map_err(anyhow::Error::msg)?;
    let json = args.out.machine();
    let (mut cluster, _) = connect(&args.nodes, &args.save, args.out.sample_interval, json)?;
    let mut rec = Recorder::begin(&args.save, RunKind::Run, name, &rounds.plan())?;
    let draw = !json && !args.out.no_progress && std::io::stderr().is_terminal();
    let mut obs = Live { rec: rec.as_mut(), draw, json, rates: Vec::new(), phase_offset: 0 };
    let steps = rounds.steps.len();
    let mut say = |s: &iolab_cluster::cross::Step, done: bool| {
        if json {
            return;
        }
        if draw && done {
            eprintln!();
        }
        if !done {
            let what = match s.kind {
                iolab_cluster::cross::StepKind::Write => "every node writes and syncs its own file".to_string(),
                iolab_cluster::cross::StepKind::Read => "every node reads and checks the next node's file".to_string(),
            };
            let i = rounds.steps.iter().position(|x| x.name == s.name).map_or(0, |i| i + 1);
            eprintln!("iolab: step {i}/{steps}: {} ({what})", s.name);
        }
    };
    let aggregate = rounds.run(&mut cluster, stop, &mut obs, &mut say);
    save_aggregate(rec.as_mut(), &aggregate, json);
    Ok(aggregate)
}

/// Save a run of several nodes' aggregate (each node's seconds were saved as they came).
fn save_aggregate(rec: Option<&mut Recorder>, aggregate: &RunResult, json: bool) {
    if let Some(r) = rec {
        for (i, p) in aggregate.phases.iter().enumerate() {
            r.add_phase(i, iolab_store::AGGREGATE, p);
        }
        r.set_nodes(&aggregate.nodes, None);
        r.finish(aggregate);
        if !json {
            eprintln!("iolab: {}", r.where_());
        }
    }
}

/// Run one plan per node at one start (`work` makes them from the nodes' names; `None`: the
/// node sits out), showing every node's progress and saving the run as one run of `kind`
/// named `name`, its plan `plan`. Returns the aggregate; prints nothing but progress.
#[allow(clippy::too_many_arguments)]
pub fn run_each(
    nodes: &NodeArgs,
    out: &OutArgs,
    save: &SaveArgs,
    kind: RunKind,
    name: &str,
    plan: &Plan,
    work: impl FnOnce(&[String]) -> Result<Vec<Option<Work>>>,
    stop: Arc<AtomicBool>,
) -> Result<RunResult> {
    let json = out.machine();
    let (mut cluster, names) = connect(nodes, save, out.sample_interval, json)?;
    let work = work(&names)?;
    let mut rec = Recorder::begin(save, kind, name, plan)?;
    let draw = !json && !out.no_progress && std::io::stderr().is_terminal();
    let mut obs = Live { rec: rec.as_mut(), draw, json, rates: Vec::new(), phase_offset: 0 };
    let result = cluster.run_each(plan, &work, stop, &mut obs);
    if draw {
        eprintln!();
    }
    let mut aggregate = result.aggregate;
    aggregate.started_unix_s = result.nodes.iter().map(|n| n.started_unix_s).fold(aggregate.started_unix_s, f64::min);
    save_aggregate(rec.as_mut(), &aggregate, json);
    Ok(aggregate)
}

/// The scenario the arguments name: a file if one exists at that path, else a built-in.
fn scenario_of(args: &ScenarioArgs, nodes: &[String]) -> Result<Scenario> {
    let path = std::path::Path::new(&args.scenario);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading scenario {}", path.display()))?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario".into());
        let mut file = iolab_spec::parse_scenario_file(&text, &stem).with_context(|| format!("{}", path.display()))?;
        if let Some(r) = args.repeat {
            file.repeat = r;
        }
        return file.expand(nodes, &args.job).with_context(|| format!("{}", path.display()));
    }
    iolab_spec::builtin(&args.scenario, nodes, &args.job, &args.builtin_options()).map_err(Into::into)
}

/// `iolab scenario FILE|NAME --node ...`: each step on its nodes at one instant, steps in
/// order, stored as one run whose phases are the steps; then the built-in's verdict.
pub fn scenario(args: ScenarioArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let names: Vec<String> = specs(&args.nodes)?.into_iter().map(|s| s.name).collect();
    // Expand first: a bad scenario is refused before any node is contacted.
    let sc = scenario_of(&args, &names)?;
    if sc
        .steps
        .iter()
        .flat_map(|s| &s.parts)
        .flat_map(|p| &p.jobs)
        .any(|j| j.verify.as_ref().is_some_and(|v| v.on_other))
    {
        bail!("--verify-on other runs its own rounds of writes and read-backs: use it with `iolab run --node`, not a scenario");
    }
    let scaling = args.scenario == "scaling";
    let overall = run_scenario(&sc, &args.nodes, &args.out, &args.save, args.link_speed, scaling, stop)?;
    emit(&overall, &args.out)?;
    Ok(exit_code(&overall))
}

/// Run an expanded scenario on the nodes and judge it (`locking` by its steps, `scaling` when
/// told), saving it as one run of kind `scenario`. Nothing is printed but progress and where
/// it was saved.
pub fn run_scenario(
    sc: &Scenario,
    nodes: &NodeArgs,
    out: &OutArgs,
    save: &SaveArgs,
    link_speed: Option<f64>,
    scaling: bool,
    stop: Arc<AtomicBool>,
) -> Result<RunResult> {
    let json = out.machine();
    // The run as a whole: one phase per step, every part's jobs named by their node.
    let plan = Plan {
        phases: sc
            .steps
            .iter()
            .map(|st| Phase {
                name: st.name.clone(),
                jobs: st
                    .parts
                    .iter()
                    .flat_map(|p| {
                        p.jobs.iter().map(move |j| {
                            let mut j = j.clone();
                            j.name = format!("{}:{}", p.node, j.name);
                            j
                        })
                    })
                    .collect(),
            })
            .collect(),
    };
    let (mut cluster, names) = connect(nodes, save, out.sample_interval, json)?;
    let mut rec = Recorder::begin(save, RunKind::Scenario, &sc.name, &plan)?;
    let draw = !json && !out.no_progress && std::io::stderr().is_terminal();
    let mut overall = RunResult { nodes: cluster.infos(), ..RunResult::begin(plan.clone()) };
    // One mark for every step: a file a step created may be written by a later step, on any
    // node that sees it in the same directory (a shared file seen through another mount, where
    // the file's own mark may not show), and nothing else (layout::RunMark).
    let run_mark = iolab_workload::layout::RunMark::new();
    for (i, step) in sc.steps.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            overall.status = Status::Interrupted;
            break;
        }
        if !json {
            let who: Vec<&str> = step.parts.iter().map(|p| p.node.as_str()).collect();
            eprintln!("iolab: step {}/{}: {} ({})", i + 1, sc.steps.len(), step.name, who.join(", "));
        }
        let work: Vec<Option<Work>> = names
            .iter()
            .map(|n| {
                step.parts.iter().find(|p| &p.node == n).map(|p| Work {
                    plan: Plan { phases: vec![Phase { name: step.name.clone(), jobs: p.jobs.clone() }] },
                    mkdirs: p.mkdirs.clone(),
                    run_mark: run_mark.clone(),
                    keys: Vec::new(),
                })
            })
            .collect();
        let step_plan = Plan { phases: vec![plan.phases[i].clone()] };
        let mut obs = Live { rec: rec.as_mut(), draw, json, rates: Vec::new(), phase_offset: i };
        let result = cluster.run_each(&step_plan, &work, stop.clone(), &mut obs);
        if draw {
            eprintln!();
        }
        let agg = result.aggregate;
        if let Some(mut p) = agg.phases.into_iter().next() {
            p.name = step.name.clone();
            if let Some(r) = rec.as_mut() {
                r.add_phase(i, iolab_store::AGGREGATE, &p);
            }
            overall.phases.push(p);
        }
        if agg.status != Status::Complete {
            overall.status = agg.status;
            overall.error = agg.error.map(|e| format!("step `{}`: {e}", step.name));
            break;
        }
    }
    if overall.status == Status::Running {
        overall.status = Status::Complete;
    }
    let base = |n: &str| iolab_spec::scenario::base_step_name(n).to_string();
    let is_locking = overall.phases.iter().any(|p| base(&p.name) == iolab_spec::scenario::LOCKING_STEPS[0]);
    if overall.status == Status::Complete {
        overall.verdict = if is_locking {
            iolab_report::verdict::locking(&overall, link_speed)
        } else if scaling {
            iolab_report::verdict::scaling_with_link(&overall, link_speed)
        } else {
            None
        };
    }
    if let Some(r) = rec.as_mut() {
        r.set_nodes(&overall.nodes, overall.verdict.as_ref());
        r.finish(&overall);
        if !json {
            eprintln!("iolab: {}", r.where_());
        }
    }
    Ok(overall)
}

/// Saves each node's seconds and phases under its name and shows each node's rate.
struct Live<'a> {
    rec: Option<&'a mut Recorder>,
    draw: bool,
    json: bool,
    /// The latest second's MB/s of each node.
    rates: Vec<(String, f64)>,
    /// Where this run's phase 0 sits in the stored run (a scenario's step).
    phase_offset: usize,
}

impl Live<'_> {
    fn tee(&mut self, node: &str, f: impl FnOnce(&mut Tee)) {
        if let Some(r) = self.rec.as_deref_mut() {
            r.set_node(node);
        }
        let mut show = NoSink;
        let mut tee = Tee { show: &mut show, rec: self.rec.as_deref_mut() };
        f(&mut tee);
    }
}

impl Observer for Live<'_> {
    fn message(&mut self, node: &str, text: &str) {
        if !self.json {
            eprintln!("{}iolab: node {node}: {text}", if self.draw { "\n" } else { "" });
        }
    }
    fn tick(&mut self, node: &str, phase: usize, point: &TimelinePoint, bytes: u64) {
        let phase = phase + self.phase_offset;
        self.tee(node, |t| t.tick(phase, point, bytes));
        let mbs = (point.read_bytes + point.write_bytes) as f64 / 1e6;
        match self.rates.iter_mut().find(|r| r.0 == node) {
            Some(r) => r.1 = mbs,
            None => self.rates.push((node.to_string(), mbs)),
        }
        if self.draw {
            let line: Vec<String> = self.rates.iter().map(|(n, r)| format!("{n} {r:.1} MB/s")).collect();
            let total: f64 = self.rates.iter().map(|r| r.1).sum();
            eprint!("\r\x1b[2Kphase {}: {} | all {total:.1} MB/s", phase + 1, line.join(", "));
            let _ = std::io::stderr().flush();
        }
    }
    fn correct(&mut self, node: &str, phase: usize, point: &TimelinePoint) {
        let phase = phase + self.phase_offset;
        self.tee(node, |t| t.correct(phase, point));
    }
    fn sample(&mut self, node: &str, phase: usize, rates: &iolab_sysstat::Rates) {
        let phase = phase + self.phase_offset;
        self.tee(node, |t| t.sample(phase, rates));
    }
    fn progress(&mut self, node: &str, phase: usize, so_far: &PhaseResult) {
        let phase = phase + self.phase_offset;
        self.tee(node, |t| t.progress(phase, so_far));
    }
    fn phase_end(&mut self, node: &str, phase: usize, result: &PhaseResult) {
        let phase = phase + self.phase_offset;
        self.tee(node, |t| t.phase_end(phase, result));
    }
}
