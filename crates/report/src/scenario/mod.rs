//! Scenarios as plug-ins. A [`Scenario`] expands into steps (`iolab_spec::StepPlan`: per
//! node, the jobs each step runs), judges a complete run (its verdict, `None` for none) and
//! draws its chart in the report; the CLI runs its steps on the nodes (`iolab_cluster::steps`)
//! and asks nothing by name. The built-ins are one file each and one line in [`BUILTINS`]; a
//! TOML scenario file is one more implementation ([`File`]). A new scenario (pts-iops, say) is
//! a file `scenario/NAME.rs` implementing the trait, `mod NAME;` and its line in [`BUILTINS`].
//!
//! The trait lives here, in the report crate, because its verdict reads results
//! (iolab-model) and its chart draws with the report's charts; its steps are spec data, which
//! the report sees too. Stored runs find their scenario again by their verdict's name.

pub mod locking;
pub mod pts;
pub mod scaling;

use crate::charts::{self, Dash, Series};
use crate::markup::{escape, figure};
use crate::nodes::{data_bw, headline};
use iolab_model::steady::SteadyStateResult;
use iolab_model::{RunResult, Verdict};
use iolab_spec::steady::Snia;
use iolab_spec::{BuiltinOptions, JobPatch, ScenarioFile, SpecError, StepPlan};
use iolab_store::StoredRun;
use std::fmt::Write;

/// A scenario: steps to run on several nodes, what they conclude, how they are drawn.
pub trait Scenario: Sync {
    /// Its name: `iolab scenario NAME`, the stored run's name, the verdict's `scenario`.
    fn name(&self) -> &str;
    /// One line for `--help` and for the error that lists the built-ins.
    fn about(&self) -> &str;
    /// Its steps on these nodes (in the order given), with the job flags over every job and
    /// the built-ins' options; every job checked by the rules of `iolab run`, so a bad
    /// scenario is refused before any node is contacted.
    fn steps(&self, nodes: &[String], job: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError>;
    /// What it concludes from a complete run (`link_speed_mbps`: `--link-speed`, over what
    /// the interfaces report); `None` when it has no verdict.
    fn verdict(&self, _run: &RunResult, _link_speed_mbps: Option<f64>) -> Option<Verdict> {
        None
    }
    /// Its chart in the report's section on nodes, with the run's verdict where it belongs.
    /// By default: throughput against the number of nodes when its steps ran on two or more
    /// counts of nodes ([`sweep`]), the verdict after it.
    fn chart(&self, h: &mut String, run: &StoredRun) {
        default_chart(h, run)
    }
    /// A scenario of rounds (SNIA PTS's tests): its steps are one round, run again and again
    /// on this machine until [`Scenario::steady`] finds the run steady or the rule's maximum
    /// rounds ran. `None` (the default): its steps run once, on the nodes.
    fn rounds(&self, _job: &JobPatch) -> Option<Snia> {
        None
    }
    /// Whether the purge and the workload-independent preconditioning (`iolab precondition`'s)
    /// run on the target before its steps (skipped with `--no-precondition`, which it says).
    fn precondition(&self) -> bool {
        false
    }
    /// A scenario of rounds: its steady state over the run's rounds so far (`None` before the
    /// first complete round, and for other scenarios).
    fn steady(&self, _run: &RunResult) -> Option<SteadyStateResult> {
        None
    }
    /// Its report in the terminal, in place of the verdict's lines (`None`: the verdict's).
    fn text(&self, _run: &RunResult) -> Option<String> {
        None
    }
}

/// A scenario by reference is the scenario (a built-in of [`BUILTINS`] where a scenario is
/// owned, as a file's is).
impl<S: Scenario + ?Sized> Scenario for &S {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn about(&self) -> &str {
        (**self).about()
    }
    fn steps(&self, nodes: &[String], job: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
        (**self).steps(nodes, job, opts)
    }
    fn verdict(&self, run: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
        (**self).verdict(run, link_speed_mbps)
    }
    fn chart(&self, h: &mut String, run: &StoredRun) {
        (**self).chart(h, run)
    }
    fn rounds(&self, job: &JobPatch) -> Option<Snia> {
        (**self).rounds(job)
    }
    fn precondition(&self) -> bool {
        (**self).precondition()
    }
    fn steady(&self, run: &RunResult) -> Option<SteadyStateResult> {
        (**self).steady(run)
    }
    fn text(&self, run: &RunResult) -> Option<String> {
        (**self).text(run)
    }
}

/// The built-in scenarios, by name.
pub static BUILTINS: &[&dyn Scenario] =
    &[&locking::Locking, &scaling::Scaling, &pts::IOPS, &pts::THROUGHPUT, &pts::LATENCY];

/// The built-in scenario named `name`.
pub fn builtin(name: &str) -> Option<&'static dyn Scenario> {
    BUILTINS.iter().copied().find(|s| s.name() == name)
}

/// The built-in named `name`, or an error that lists them all.
pub fn builtin_or_list(name: &str) -> Result<&'static dyn Scenario, SpecError> {
    builtin(name).ok_or_else(|| {
        SpecError::plain(format!(
            "no scenario file `{name}` and no built-in scenario of that name; the built-ins: {}",
            BUILTINS.iter().map(|s| format!("{} ({})", s.name(), s.about())).collect::<Vec<_>>().join("; ")
        ))
    })
}

/// The scenario a stored run was judged by (its verdict's), if it is one of the built-ins.
pub fn of_run(run: &RunResult) -> Option<&'static dyn Scenario> {
    run.verdict.as_ref().and_then(|v| builtin(&v.scenario))
}

/// A scenario file (docs/scenarios.md): its steps and sweeps, repeated as the file says
/// (`--repeat` sets the file's `repeat`); no verdict of its own.
pub struct File(pub ScenarioFile);

impl Scenario for File {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn about(&self) -> &str {
        "a scenario file"
    }
    fn steps(&self, nodes: &[String], job: &JobPatch, _opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
        self.0.expand(nodes, job)
    }
}

/// The charts of a run of several nodes, by the scenario that judged it (the default chart
/// for any other run).
pub fn chart(h: &mut String, run: &StoredRun) {
    match of_run(&run.result) {
        Some(s) => s.chart(h, run),
        None => default_chart(h, run),
    }
}

/// The report's section on scenario runs of this machine alone (SNIA PTS's tests): each run
/// whose verdict names a built-in and that ran on no nodes, drawn by its scenario.
pub fn alone_section(h: &mut String, runs: &[StoredRun]) {
    let alone: Vec<(&StoredRun, &dyn Scenario)> = runs
        .iter()
        .filter(|r| r.result.phases.iter().all(|p| p.nodes.is_empty()))
        .filter_map(|r| of_run(&r.result).map(|s| (r, s)))
        .collect();
    if alone.is_empty() {
        return;
    }
    h.push_str("<section id=\"scenario\">\n<h2>Scenario</h2>\n");
    for (r, s) in alone {
        let _ = writeln!(h, "<h3>Run #{} {} {}</h3>", r.id, escape(r.kind.as_str()), escape(&r.name));
        s.chart(h, r);
    }
    h.push_str("</section>\n");
}

/// The default chart ([`sweep`]) and the verdict after it.
pub fn default_chart(h: &mut String, run: &StoredRun) {
    h.push_str("<div class=\"charts\">\n");
    sweep(h, run);
    h.push_str("</div>\n");
    if let Some(v) = &run.result.verdict {
        verdict_block(h, run.id, v);
    }
}

/// A verdict in the report: its limit in words and each reason.
pub fn verdict_block(h: &mut String, run: i64, v: &Verdict) {
    let _ = write!(
        h,
        "<div class=\"scenario-verdict\" data-verdict=\"{run}\"><p><strong>Verdict of {}: {}</strong> (limit: <code>{}</code>)</p>\n<ul>\n",
        escape(&v.scenario),
        escape(headline(v)),
        v.limit.as_str()
    );
    for r in &v.reasons {
        let _ = writeln!(h, "<li>{}</li>", escape(r));
    }
    h.push_str("</ul></div>\n");
}

/// Aggregate and per-client MB/s against the number of clients, when the run's phases ran on
/// at least two different numbers of nodes.
pub fn sweep(h: &mut String, r: &StoredRun) {
    let mut counts: Vec<usize> = r.result.phases.iter().map(|p| p.nodes.len()).filter(|n| *n > 0).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() < 2 {
        return;
    }
    let mut total = Vec::new();
    let mut mean = Vec::new();
    let mut slowest = Vec::new();
    for p in r.result.phases.iter().filter(|p| !p.nodes.is_empty()) {
        let n = p.nodes.len() as f64;
        let per: Vec<f64> = p.nodes.iter().map(|x| data_bw(&x.total) / 1e6).collect();
        total.push((n, data_bw(&p.total) / 1e6));
        mean.push((n, per.iter().sum::<f64>() / n));
        slowest.push((n, per.iter().copied().fold(f64::MAX, f64::min)));
    }
    let series = [
        Series { label: "aggregate".into(), points: total, color: 0, dash: Dash::Solid },
        Series { label: "per client (mean)".into(), points: mean, color: 1, dash: Dash::Dashed },
        Series { label: "slowest client".into(), points: slowest, color: 2, dash: Dash::Dotted },
    ];
    let svg = charts::line_chart("Scaling", "clients", "MB/s", &series, None);
    figure(
        h,
        &format!("scaling-{}", r.id),
        Some(svg),
        "Throughput of all clients together and of each client, against the number of clients at once.",
        "",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_by_name_and_unknown_names_list_them() {
        let two: Vec<String> = vec!["a".into(), "b".into()];
        let s = builtin("scaling").unwrap();
        assert_eq!(s.steps(&two, &JobPatch::default(), &BuiltinOptions::default()).unwrap().steps.len(), 2);
        assert!(builtin("locking").is_some() && builtin("lock").is_none());
        let e = builtin_or_list("lock").err().unwrap().to_string();
        assert!(e.contains("`lock`") && e.contains("locking") && e.contains("scaling"), "{e}");
        for s in BUILTINS {
            assert!(builtin_or_list(s.name()).is_ok(), "{} is found by its name", s.name());
        }
    }

    #[test]
    fn a_file_is_a_scenario_without_a_verdict() {
        let text = "name = \"mine\"\n[[step]]\nname = \"A alone\"\n[[step.job]]\ntarget = \"f\"\nrw = \"write\"\nsize = \"1M\"\n";
        let mut file = iolab_spec::parse_scenario_file(text, "x").unwrap();
        file.repeat = 2;
        let f = File(file);
        assert_eq!(f.name(), "mine");
        let two: Vec<String> = vec!["a".into(), "b".into()];
        let s = f.steps(&two, &JobPatch::default(), &BuiltinOptions::default()).unwrap();
        assert_eq!(s.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["A alone #1", "A alone #2"]);
        // A step named as one of locking's is no locking check: no verdict by name.
        let run = crate::verdict::fixtures::run(Vec::new());
        assert!(f.verdict(&run, None).is_none());
    }
}
