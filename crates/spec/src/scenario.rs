//! Scenarios as plain data: steps of (nodes × jobs) run one after another on several nodes
//! ([`StepPlan`]), the TOML file a user writes them in ([`ScenarioFile`]), and the building
//! blocks the built-ins expand with (a dd-like write, repetitions, step names). A scenario
//! itself (its steps, its verdict, its chart, by name in one list) is the report crate's
//! `Scenario`; this module runs nothing.
//!
//! A scenario expands into a [`StepPlan`], a list of [`Step`]s run in order; a step's [`Part`]s run at once (every
//! listed node starts its jobs at one instant); a node not named in a step sits it out.
//! **Job targets are relative to each node's directory**: the coordinator joins a relative
//! target with the node's `dir=` (an absolute target stays as it is), so one scenario serves
//! nodes that mount the shared filesystem at different paths.

use crate::job::{Job, Phase, Plan, Rw, WorkloadKind};
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// What the coordinator executes: steps in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    pub name: String,
    pub steps: Vec<Step>,
}

/// One step: every part runs at once, all starting at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    pub parts: Vec<Part>,
}

/// One node's share of a step: its jobs, whose relative targets live under the node's `dir=`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub node: String,
    pub jobs: Vec<Job>,
    /// Directories (relative to the node's directory, like the targets) the coordinator
    /// creates, if missing, before the step: the built-ins' working directories and the
    /// parents of a file's relative targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mkdirs: Vec<PathBuf>,
}

impl StepPlan {
    /// The nodes that take part in at least one step, in the order first seen.
    pub fn nodes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in self.steps.iter().flat_map(|s| &s.parts) {
            if !out.contains(&p.node.as_str()) {
                out.push(&p.node);
            }
        }
        out
    }
}

/// Options of the built-in scenarios beside the job flags (a scenario reads those it has).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuiltinOptions {
    /// `locking`: every writer writes one file, `iolab-locking/shared.dat` (seed 000 wrote one).
    pub shared_file: bool,
    /// `scaling`: stop at this many nodes (default: every node given).
    pub clients: Option<u32>,
    /// Run the whole sequence of steps this many times (0 and 1: once).
    pub repeat: u32,
    /// `pts-*`: the matrix's read percentages (100: all reads), instead of the test's own.
    pub pts_mixes: Option<Vec<u8>>,
    /// `pts-*`: the matrix's block sizes, instead of the test's own.
    pub pts_bs: Option<Vec<Bytes>>,
    /// `pts-*`: skip the purge and the workload-independent preconditioning (the report says so).
    pub no_precondition: bool,
}

/// The dd-like write the built-ins default to: `bs = 1M`, `size = 1G`, `end_fsync = true`
/// (dd conv=fsync: the storage, not the page cache), under the job flags. Only for the block
/// workload: another workload's job is the flags alone.
pub fn dd_like(overrides: &JobPatch) -> JobPatch {
    if overrides.workload.is_some_and(|w| w != WorkloadKind::Block) {
        return overrides.clone();
    }
    let dd = JobPatch {
        rw: Some(Rw::Write),
        bs: Some(crate::job::BlockSizes::single(Bytes::mib(1))),
        size: Some(Bytes::gib(1)),
        end_fsync: Some(true),
        ..Default::default()
    };
    let mut p = dd.layered(overrides);
    // A final fsync belongs to writes; a read job asked for by flags does not get one.
    if overrides.end_fsync.is_none() && !p.rw.unwrap_or(Rw::Read).writes() {
        p.end_fsync = None;
    }
    p
}

/// A built-in's working directory: `--target` (relative to each node's directory, or
/// absolute) or the default.
pub fn base_dir(overrides: &JobPatch, default: &str) -> PathBuf {
    overrides.target.clone().unwrap_or_else(|| PathBuf::from(default))
}

/// The job `patch` makes named `name` on `target`, checked by the rules of `iolab run`.
pub fn resolve_one(patch: &JobPatch, name: &str, target: PathBuf) -> Result<Job, SpecError> {
    let p = JobPatch { name: Some(name.to_string()), target: Some(target), ..patch.clone() };
    let job = p.resolve(name)?;
    job.validate()?;
    Ok(job)
}

/// The suffix a repeated step's name carries: `A alone #2`.
pub fn repeat_suffix(round: u32) -> String {
    format!(" #{round}")
}

/// The name of a step without its repetition suffix (`A alone #2` → `A alone`).
pub fn base_step_name(name: &str) -> &str {
    match name.rsplit_once(" #") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// The whole sequence `n` times, in rounds (all steps, then all steps again), so a drift of
/// the storage over time spreads over every step instead of landing on one.
pub fn repeated(steps: Vec<Step>, n: u32) -> Vec<Step> {
    if n <= 1 {
        return steps;
    }
    (1..=n)
        .flat_map(|round| {
            steps
                .iter()
                .map(move |s| Step { name: format!("{}{}", s.name, repeat_suffix(round)), parts: s.parts.clone() })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The TOML file.

/// Most repetitions a file or `--repeat` may ask for.
pub const MAX_REPEAT: u32 = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    name: Option<String>,
    #[serde(default)]
    defaults: JobPatch,
    repeat: Option<Spanned<i64>>,
    #[serde(default)]
    step: Vec<Spanned<StepModel>>,
    #[serde(default)]
    sweep: Vec<Spanned<StepModel>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepModel {
    name: Option<String>,
    nodes: Option<Spanned<toml::Value>>,
    #[serde(default)]
    job: Vec<JobPatch>,
}

/// Which nodes a step runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeSel {
    /// Every node given.
    All,
    /// The first N nodes given.
    First(usize),
    /// These nodes, by name.
    Names(Vec<String>),
}

/// How many nodes each step of a sweep runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum CountSel {
    /// `"1..4"`; `"1..all"` (`to` absent) goes up to every node given.
    Range { from: usize, to: Option<usize> },
    /// `[1, 2, 4]`
    List(Vec<usize>),
}

/// A `[[step]]` or a `[[sweep]]`, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `line`: the table's first line; `nodes_line`: its `nodes` field's (or the table's).
    Step {
        name: String,
        line: usize,
        nodes_line: usize,
        nodes: NodeSel,
        jobs: Vec<JobPatch>,
    },
    Sweep {
        name: String,
        line: usize,
        nodes_line: usize,
        counts: CountSel,
        jobs: Vec<JobPatch>,
    },
}

/// A parsed scenario file: checked for form; nodes and jobs are checked by [`ScenarioFile::expand`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioFile {
    pub name: String,
    pub defaults: JobPatch,
    pub repeat: u32,
    pub items: Vec<Item>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

fn at(line: usize, field: &str, message: impl std::fmt::Display) -> SpecError {
    SpecError::plain(format!("scenario file, line {line}, field `{field}`: {message}"))
}

/// Parse a scenario file's text (see docs/scenarios.md). `default_name` names a scenario whose
/// file has no `name` (the file's stem, say).
pub fn parse_scenario_file(text: &str, default_name: &str) -> Result<ScenarioFile, SpecError> {
    let model: FileModel = toml::from_str(text).map_err(|e| SpecError::plain(format!("scenario file: {e}")))?;
    let repeat = match &model.repeat {
        None => 1,
        Some(r) => match u32::try_from(*r.get_ref()) {
            Ok(n) if (1..=MAX_REPEAT).contains(&n) => n,
            _ => {
                return Err(at(
                    line_of(text, r.span().start),
                    "repeat",
                    format!("{} is out of range; accepted: 1 to {MAX_REPEAT}", r.get_ref()),
                ))
            }
        },
    };
    let mut items: Vec<(usize, Item)> = Vec::new();
    for (kind, list) in [("step", &model.step), ("sweep", &model.sweep)] {
        for (i, s) in list.iter().enumerate() {
            let start = s.span().start;
            let line = line_of(text, start);
            let m = s.get_ref();
            let name = m.name.clone().unwrap_or_else(|| format!("{kind}{}", i + 1));
            if name.trim().is_empty() {
                return Err(at(line, "name", format!("a {kind} needs a non-empty name")));
            }
            if m.job.is_empty() {
                return Err(at(line, "job", format!("{kind} `{name}` has no job; add a [[{kind}.job]] table")));
            }
            let nodes_line = m.nodes.as_ref().map(|v| line_of(text, v.span().start)).unwrap_or(line);
            let item = if kind == "step" {
                let nodes = match &m.nodes {
                    None => NodeSel::All,
                    Some(v) => node_sel(v.get_ref()).map_err(|e| at(nodes_line, "nodes", e))?,
                };
                Item::Step { name, line, nodes_line, nodes, jobs: m.job.clone() }
            } else {
                let Some(v) = &m.nodes else {
                    return Err(at(
                        line,
                        "nodes",
                        format!("sweep `{name}` needs `nodes`, for example nodes = \"1..4\""),
                    ));
                };
                let counts = count_sel(v.get_ref()).map_err(|e| at(nodes_line, "nodes", e))?;
                Item::Sweep { name, line, nodes_line, counts, jobs: m.job.clone() }
            };
            items.push((start, item));
        }
    }
    if items.is_empty() {
        return Err(SpecError::plain(
            "scenario file: no step; add a [[step]] (or a [[sweep]]) with at least one [[step.job]]",
        ));
    }
    items.sort_by_key(|(start, _)| *start);
    Ok(ScenarioFile {
        name: model.name.unwrap_or_else(|| default_name.to_string()),
        defaults: model.defaults,
        repeat,
        items: items.into_iter().map(|(_, i)| i).collect(),
    })
}

const NODES_FORMS: &str = "a list of node names, \"all\" or \"first:N\"";

fn node_sel(v: &toml::Value) -> Result<NodeSel, String> {
    match v {
        toml::Value::String(s) if s == "all" => Ok(NodeSel::All),
        toml::Value::String(s) => match s.strip_prefix("first:") {
            Some(n) => match n.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(NodeSel::First(n)),
                _ => Err(format!("`{s}`: the count after `first:` must be 1 or more, as in first:2")),
            },
            None => Err(format!("`{s}` is not a node selection; write {NODES_FORMS} (a single node: [\"{s}\"])")),
        },
        toml::Value::Array(a) => {
            let mut names = Vec::new();
            for x in a {
                let Some(n) = x.as_str() else {
                    return Err(format!("`{x}` is not a node name; write {NODES_FORMS}"));
                };
                if names.iter().any(|m: &String| m == n) {
                    return Err(format!("node `{n}` is listed twice"));
                }
                names.push(n.to_string());
            }
            if names.is_empty() {
                return Err("an empty list runs nothing; name at least one node".into());
            }
            Ok(NodeSel::Names(names))
        }
        other => Err(format!("`{other}` is not a node selection; write {NODES_FORMS}")),
    }
}

fn count_sel(v: &toml::Value) -> Result<CountSel, String> {
    let forms = "a range of node counts such as \"1..4\" or \"1..all\", or a list such as [1, 2, 4]";
    match v {
        toml::Value::String(s) => {
            let Some((a, b)) = s.split_once("..") else {
                return Err(format!("`{s}` is not {forms}"));
            };
            let from: usize = a.trim().parse().map_err(|_| format!("`{s}`: `{a}` is not a count; write {forms}"))?;
            let to = match b.trim() {
                "all" => None,
                b => Some(b.parse::<usize>().map_err(|_| format!("`{s}`: `{b}` is not a count; write {forms}"))?),
            };
            if from == 0 {
                return Err(format!("`{s}`: a step on 0 nodes runs nothing; start at 1"));
            }
            if to.is_some_and(|t| t < from) {
                return Err(format!("`{s}` counts down; write the smaller count first"));
            }
            Ok(CountSel::Range { from, to })
        }
        toml::Value::Array(a) => {
            let mut out = Vec::new();
            for x in a {
                match x.as_integer().and_then(|n| usize::try_from(n).ok()) {
                    Some(n) if n > 0 => out.push(n),
                    _ => return Err(format!("`{x}` is not a node count of 1 or more; write {forms}")),
                }
            }
            if out.is_empty() {
                return Err(format!("an empty list runs nothing; write {forms}"));
            }
            Ok(CountSel::List(out))
        }
        other => Err(format!("`{other}` is not {forms}")),
    }
}

/// Put the node's name in a target: `{node}` in a file's target becomes the node's name, so
/// `target = "data/{node}.dat"` gives each node its own file.
fn for_node(patch: &JobPatch, node: &str) -> JobPatch {
    let mut p = patch.clone();
    if let Some(t) = p.target.as_ref().and_then(|t| t.to_str()) {
        if t.contains("{node}") {
            p.target = Some(PathBuf::from(t.replace("{node}", node)));
        }
    }
    p
}

/// The directory a relative target needs: its parent, or itself when written with a final
/// `/` (a directory target).
fn needed_dir(target: &Path) -> Option<PathBuf> {
    if target.is_absolute() {
        return None;
    }
    let s = target.to_str()?;
    if s.ends_with('/') {
        return Some(PathBuf::from(s.trim_end_matches('/'))).filter(|p| !p.as_os_str().is_empty());
    }
    target.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf)
}

impl ScenarioFile {
    /// The scenario for the nodes given on the command line (in order), with the job flags
    /// (`overrides`) over every job, as `iolab run JOBFILE --flags` does.
    pub fn expand(&self, nodes: &[String], overrides: &JobPatch) -> Result<StepPlan, SpecError> {
        if nodes.is_empty() {
            return Err(SpecError::plain("a scenario needs nodes; add --node NAME=ADDR (or --nodes FILE)"));
        }
        let mut steps = Vec::new();
        for item in &self.items {
            match item {
                Item::Step { name, line, nodes_line, nodes: sel, jobs } => {
                    let on = select(sel, nodes).map_err(|e| at(*nodes_line, "nodes", format!("step `{name}`: {e}")))?;
                    steps.push(self.step(name, *line, &on, jobs, overrides)?);
                }
                Item::Sweep { name, line, nodes_line, counts, jobs } => {
                    let too_many = |n: usize| {
                        at(*nodes_line, "nodes", format!("sweep `{name}` asks for {n} nodes but {} given", nodes.len()))
                    };
                    let list: Vec<usize> = match counts {
                        CountSel::Range { from, to } => {
                            let to = to.unwrap_or(nodes.len());
                            if to.max(*from) > nodes.len() {
                                return Err(too_many(to.max(*from)));
                            }
                            (*from..=to).collect()
                        }
                        CountSel::List(l) => l.clone(),
                    };
                    for n in list {
                        if n > nodes.len() {
                            return Err(too_many(n));
                        }
                        steps.push(self.step(&format!("{name} {n}"), *line, &nodes[..n], jobs, overrides)?);
                    }
                }
            }
        }
        Ok(StepPlan { name: self.name.clone(), steps: repeated(steps, self.repeat) })
    }

    fn step(
        &self,
        name: &str,
        line: usize,
        on: &[String],
        jobs: &[JobPatch],
        overrides: &JobPatch,
    ) -> Result<Step, SpecError> {
        let mut parts = Vec::new();
        for node in on {
            let mut resolved = Vec::new();
            let mut mkdirs: Vec<PathBuf> = Vec::new();
            for (k, j) in jobs.iter().enumerate() {
                let kind = self.defaults.layered(j).layered(overrides).kind();
                let patch = for_node(&self.defaults.for_workload(kind).layered(j).layered(overrides), node);
                let job = patch.resolve(&format!("job{}", k + 1)).map_err(|e| in_step(name, line, e))?;
                if let Some(d) = needed_dir(&job.target) {
                    if !mkdirs.contains(&d) {
                        mkdirs.push(d);
                    }
                }
                resolved.push(job);
            }
            // The rules of `iolab run`, on this node's jobs as one phase.
            let plan = Plan { phases: vec![Phase { name: name.to_string(), jobs: resolved }] };
            plan.validate().map_err(|e| in_step(name, line, e))?;
            let jobs = plan.phases.into_iter().flat_map(|p| p.jobs).collect();
            parts.push(Part { node: node.clone(), jobs, mkdirs });
        }
        Ok(Step { name: name.to_string(), parts })
    }
}

fn in_step(step: &str, line: usize, e: SpecError) -> SpecError {
    SpecError::plain(format!("scenario file, step `{step}` (line {line}): {e}"))
}

fn select(sel: &NodeSel, nodes: &[String]) -> Result<Vec<String>, String> {
    match sel {
        NodeSel::All => Ok(nodes.to_vec()),
        NodeSel::First(n) if *n > nodes.len() => {
            Err(format!("first:{n} asks for {n} nodes but {} given ({})", nodes.len(), nodes.join(", ")))
        }
        NodeSel::First(n) => Ok(nodes[..*n].to_vec()),
        NodeSel::Names(names) => {
            for n in names {
                if !nodes.contains(n) {
                    return Err(format!("unknown node `{n}`; the nodes given: {}", nodes.join(", ")));
                }
            }
            Ok(names.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    const FILE: &str = r#"
name = "by-hand"
repeat = 2

[defaults]
rw = "write"
bs = "1M"
size = "8M"

[[step]]
name = "A alone"
nodes = ["a"]
[[step.job]]
target = "shared/{node}.dat"

[[sweep]]
name = "clients"
nodes = "1..all"
[[sweep.job]]
target = "scale/{node}/"
threads = 2

[[step]]
name = "everyone"
nodes = "all"
[[step.job]]
name = "w"
target = "shared/x.dat"
end_fsync = true
"#;

    #[test]
    fn a_file_expands_in_file_order_with_sweeps_and_repeats() {
        let f = parse_scenario_file(FILE, "x").unwrap();
        assert_eq!(f.name, "by-hand");
        assert_eq!(f.repeat, 2);
        let s = f.expand(&nodes(&["a", "b", "c"]), &JobPatch::default()).unwrap();
        let names: Vec<&str> = s.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "A alone #1",
                "clients 1 #1",
                "clients 2 #1",
                "clients 3 #1",
                "everyone #1",
                "A alone #2",
                "clients 1 #2",
                "clients 2 #2",
                "clients 3 #2",
                "everyone #2"
            ]
        );
        assert_eq!(base_step_name("clients 3 #2"), "clients 3");
        let a = &s.steps[0];
        assert_eq!(a.parts.len(), 1);
        assert_eq!(a.parts[0].node, "a");
        assert_eq!(a.parts[0].jobs[0].target, PathBuf::from("shared/a.dat"));
        assert_eq!(a.parts[0].jobs[0].size, Some(Bytes::mib(8)));
        assert_eq!(a.parts[0].mkdirs, [PathBuf::from("shared")]);
        let c3 = &s.steps[3];
        assert_eq!(c3.parts.iter().map(|p| p.node.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(c3.parts[2].jobs[0].target, PathBuf::from("scale/c/"));
        assert_eq!(c3.parts[2].mkdirs, [PathBuf::from("scale/c")]);
        assert_eq!(c3.parts[2].jobs[0].threads, 2);
        let every = &s.steps[4];
        assert_eq!(every.parts.len(), 3);
        assert!(every.parts[1].jobs[0].workload.block().unwrap().end_fsync);
        assert_eq!(every.parts[1].jobs[0].name, "w");
        assert_eq!(s.nodes(), ["a", "b", "c"]);
    }

    #[test]
    fn flags_override_every_job_of_a_file() {
        let f = parse_scenario_file(FILE, "x").unwrap();
        let over = JobPatch { size: Some(Bytes::mib(2)), direct: Some(true), ..Default::default() };
        let s = f.expand(&nodes(&["a", "b"]), &over).unwrap();
        for j in s.steps.iter().flat_map(|s| &s.parts).flat_map(|p| &p.jobs) {
            assert_eq!(j.size, Some(Bytes::mib(2)));
            assert!(j.direct);
        }
    }

    fn err(text: &str, on: &[&str]) -> String {
        match parse_scenario_file(text, "x") {
            Err(e) => e.to_string(),
            Ok(f) => f.expand(&nodes(on), &JobPatch::default()).unwrap_err().to_string(),
        }
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let e = err("[[step]]\nnodes = ['a']\n[[step.job]]\ntarget = 'f'\nblocksize = '4k'\n", &["a"]);
        assert!(e.contains("blocksize") && e.contains("line 5"), "{e}");
        let e = err("[[step]]\nname = 's'\nnodes = ['a', 'zed']\n[[step.job]]\ntarget = 'f'\n", &["a", "b"]);
        assert!(e.contains("line 3") && e.contains("unknown node `zed`") && e.contains("a, b"), "{e}");
        let e = err("[[step]]\nnodes = 'first:3'\n[[step.job]]\ntarget = 'f'\n", &["a", "b"]);
        assert!(e.contains("line 2") && e.contains("first:3") && e.contains("2 given"), "{e}");
        let e = err("\n\n[[step]]\nname = 'empty'\nnodes = 'all'\n", &["a"]);
        assert!(e.contains("line 3") && e.contains("`empty` has no job"), "{e}");
        let e = err("[[sweep]]\nnodes = '1..5'\n[[sweep.job]]\ntarget = 'f'\n", &["a", "b"]);
        assert!(e.contains("line 2") && e.contains("5 nodes but 2 given"), "{e}");
        let e = err("[[sweep]]\nnodes = '3..1'\n[[sweep.job]]\ntarget = 'f'\n", &["a"]);
        assert!(e.contains("line 2") && e.contains("counts down"), "{e}");
        let e = err("repeat = 0\n[[step]]\n[[step.job]]\ntarget = 'f'\n", &["a"]);
        assert!(e.contains("line 1") && e.contains("repeat"), "{e}");
        let e = err("[[step]]\nnodes = 'a'\n[[step.job]]\ntarget = 'f'\n", &["a"]);
        assert!(e.contains("line 2") && e.contains("[\"a\"]"), "{e}");
        let e = err("color = 'red'\n[[step]]\n[[step.job]]\ntarget = 'f'\n", &["a"]);
        assert!(e.contains("color") && e.contains("line 1"), "{e}");
        assert!(err("", &["a"]).contains("no step"));
    }

    #[test]
    fn job_rules_apply_and_name_the_step() {
        let e = err("[[step]]\nname = 's'\n[[step.job]]\ntarget = 'f'\nrw = 'randread'\nstride = '1M'\n", &["a"]);
        assert!(e.contains("step `s` (line 1)") && e.contains("stride"), "{e}");
        let e =
            err("[[step]]\n[[step.job]]\nname = 'x'\ntarget = 'f'\n[[step.job]]\nname = 'x'\ntarget = 'g'\n", &["a"]);
        assert!(e.contains("share this name"), "{e}");
        let e = err("[[step]]\n[[step.job]]\nrw = 'write'\n", &["a"]);
        assert!(e.contains("no target"), "{e}");
    }

    #[test]
    fn a_sweep_takes_a_list_of_counts() {
        let f = parse_scenario_file("[[sweep]]\nname='n'\nnodes=[1,3]\n[[sweep.job]]\ntarget='d/'\n", "x").unwrap();
        let s = f.expand(&nodes(&["a", "b", "c", "d"]), &JobPatch::default()).unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.steps.iter().map(|s| s.parts.len()).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(s.steps[1].name, "n 3");
    }

    #[test]
    fn a_scenario_round_trips_through_json() {
        let f = parse_scenario_file(FILE, "x").unwrap();
        let s = f.expand(&nodes(&["a", "b"]), &JobPatch::default()).unwrap();
        let back: StepPlan = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    proptest::proptest! {
        /// Arbitrary text, and the example with one line mangled, parse and expand or fail
        /// without panic.
        #[test]
        fn any_text_is_a_scenario_or_an_error(s in "\\PC{0,200}", line in 0usize..40, junk in "\\PC{0,20}") {
            let two = nodes(&["a", "b"]);
            if let Ok(f) = parse_scenario_file(&s, "x") { let _ = f.expand(&two, &JobPatch::default()); }
            let mut lines: Vec<String> = FILE.lines().map(String::from).collect();
            let i = line % lines.len();
            lines[i] = junk;
            if let Ok(f) = parse_scenario_file(&lines.join("\n"), "x") { let _ = f.expand(&two, &JobPatch::default()); }
        }
    }
}
