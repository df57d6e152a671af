//! Comparing runs: each metric of each phase, per configuration, absolute and as a percentage
//! of the baseline, as seed 001 tabulates DRBD against native ext4. With three or more runs per
//! configuration each change gets one of three answers, as criterion gives them: a change
//! (improved or regressed: Welch's t-test finds it significant and its 95% confidence interval
//! lies wholly beyond the noise threshold), no change (the interval lies wholly inside the
//! noise band), or inconclusive, with the interval and about how many more runs of each
//! configuration would decide it. Configurations are a label's values (`--by`), the label
//! selectors given (`config=a config=b`: each selector's runs), or each run. A cell whose runs
//! had a finding of the fidelity rule in that phase (the figure is not what the storage saw)
//! is marked, with the findings named.

use iolab_model::{OpClass, PhaseResult, Totals};
use iolab_store::StoredRun;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A statistic of an operation class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    MbS,
    Iops,
    P50Ms,
    P99Ms,
}

impl Stat {
    pub const ALL: [Stat; 4] = [Stat::MbS, Stat::Iops, Stat::P50Ms, Stat::P99Ms];
    fn key(self) -> &'static str {
        match self {
            Stat::MbS => "mbs",
            Stat::Iops => "iops",
            Stat::P50Ms => "p50",
            Stat::P99Ms => "p99",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Stat::MbS => "MB/s",
            Stat::Iops => "IOPS",
            Stat::P50Ms => "p50 ms",
            Stat::P99Ms => "p99 ms",
        }
    }
    fn json(self) -> &'static str {
        match self {
            Stat::MbS => "mb_s",
            Stat::Iops => "iops",
            Stat::P50Ms => "p50_ms",
            Stat::P99Ms => "p99_ms",
        }
    }
}

/// What can be compared, per phase: a statistic of an operation class (`read-mbs`,
/// `sync-p99`, `create-iops`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub class: OpClass,
    pub stat: Stat,
    /// A personality's figure from `phases[].workload` (`messages_per_min`,
    /// `transactions_per_s`, ...) instead of the class and statistic.
    pub figure: Option<&'static str>,
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.figure {
            Some(f) => s.serialize_str(f),
            None => s.serialize_str(&format!("{}_{}", self.class.as_str(), self.stat.json())),
        }
    }
}

const fn m(class: OpClass, stat: Stat) -> Metric {
    Metric { class, stat, figure: None }
}

impl Metric {
    /// A workload figure as a metric, if `name` is one.
    pub fn figure(name: &str) -> Option<Metric> {
        // Every personality's figures (iolab_model::figures, docs/json.md's Workload figures),
        // and the steady state's.
        let f = iolab_model::figures::names().into_iter().chain(STEADY).find(|f| *f == name)?;
        Some(Metric { class: OpClass::Read, stat: Stat::MbS, figure: Some(f) })
    }
}

/// The steady state's figures as metrics (issue 29), from a phase's `steady_state` or a
/// scenario of rounds' (SNIA PTS's tests, compared as the phase [`STEADY_PHASE`]): the last
/// window's mean in the tracked figure's unit (only the tracked one is present), whether it
/// was steady (1 or 0), and the rounds (or samples) it took.
pub const STEADY: [&str; 5] = ["steady_iops", "steady_mbs", "steady_lat_ms", "steady_attained", "steady_rounds"];

/// The row name under which a scenario of rounds' steady state is compared.
pub const STEADY_PHASE: &str = "steady state";

/// A steady state's figure by its metric name.
fn steady_figure(name: &str, ss: &iolab_model::steady::SteadyStateResult) -> Option<f64> {
    let mean = ss.window.as_ref().map(|w| w.mean);
    match (name, ss.tracked.as_str()) {
        ("steady_iops", "iops") => mean,
        ("steady_mbs", "bw") => mean.map(|m| m / 1e6),
        ("steady_lat_ms", "lat") => mean.map(|m| m / 1e6),
        ("steady_attained", _) => Some(if ss.attained { 1.0 } else { 0.0 }),
        ("steady_rounds", _) => Some(ss.measured as f64),
        _ => None,
    }
}

/// A run's steady state in a phase: the phase's own, or for [`STEADY_PHASE`] the scenario
/// of rounds' that judged it.
fn steady_in(r: &StoredRun, ph: &str) -> Option<iolab_model::steady::SteadyStateResult> {
    match phase(r, ph) {
        Some(p) => p.steady_state.clone(),
        None if ph == STEADY_PHASE => crate::scenario::of_run(&r.result)?.steady(&r.result),
        None => None,
    }
}

/// The nine metrics of read, write and sync by their earlier names.
#[allow(non_upper_case_globals)]
impl Metric {
    pub const ReadMbS: Metric = m(OpClass::Read, Stat::MbS);
    pub const WriteMbS: Metric = m(OpClass::Write, Stat::MbS);
    pub const ReadIops: Metric = m(OpClass::Read, Stat::Iops);
    pub const WriteIops: Metric = m(OpClass::Write, Stat::Iops);
    pub const ReadP50Ms: Metric = m(OpClass::Read, Stat::P50Ms);
    pub const ReadP99Ms: Metric = m(OpClass::Read, Stat::P99Ms);
    pub const WriteP50Ms: Metric = m(OpClass::Write, Stat::P50Ms);
    pub const WriteP99Ms: Metric = m(OpClass::Write, Stat::P99Ms);
    pub const SyncP99Ms: Metric = m(OpClass::Sync, Stat::P99Ms);
}

/// A `--metric` that names no metric; it keeps the text, and says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown metric `{0}`; write CLASS-STAT with STAT one of mbs, iops, p50, p99 and CLASS one of {classes} (for example write-mbs, sync-p99, create-iops), or a workload figure such as messages_per_min or transactions_per_s (docs/json.md lists them), or a steady-state figure: steady_iops, steady_mbs, steady_lat_ms, steady_attained, steady_rounds",
    classes = OpClass::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
)]
pub struct UnknownMetric(pub String);

impl Metric {
    /// The metrics compared by default for the classes every block job has, in table order;
    /// other classes add their IOPS and p99 when the baseline has them ([`Metric::defaults`]).
    pub const ALL: [Metric; 9] = [
        m(OpClass::Read, Stat::MbS),
        m(OpClass::Write, Stat::MbS),
        m(OpClass::Read, Stat::Iops),
        m(OpClass::Write, Stat::Iops),
        m(OpClass::Read, Stat::P50Ms),
        m(OpClass::Read, Stat::P99Ms),
        m(OpClass::Write, Stat::P50Ms),
        m(OpClass::Write, Stat::P99Ms),
        m(OpClass::Sync, Stat::P99Ms),
    ];

    /// [`Metric::ALL`], then IOPS and p99 of every other class.
    pub fn defaults() -> Vec<Metric> {
        let mut v = Metric::ALL.to_vec();
        for c in OpClass::ALL.iter().filter(|c| !matches!(c, OpClass::Read | OpClass::Write | OpClass::Sync)) {
            v.push(m(*c, Stat::Iops));
            v.push(m(*c, Stat::P99Ms));
        }
        v
    }

    pub fn name(self) -> String {
        if let Some(f) = self.figure {
            return f.to_string();
        }
        let class = if self.class == OpClass::Sync { "fsync" } else { self.class.as_str() };
        format!("{class} {}", self.stat.label())
    }

    /// The spelling `--metric` takes.
    pub fn key(self) -> String {
        if let Some(f) = self.figure {
            return f.to_string();
        }
        format!("{}-{}", self.class.as_str(), self.stat.key())
    }

    pub fn parse(s: &str) -> Result<Metric, UnknownMetric> {
        if let Some(m) = Metric::figure(s) {
            return Ok(m);
        }
        let bad = || UnknownMetric(s.to_string());
        let (class, stat) = s.rsplit_once('-').ok_or_else(bad)?;
        let class: OpClass = class.parse().map_err(|_| bad())?;
        let stat = Stat::ALL.into_iter().find(|x| x.key() == stat).ok_or_else(bad)?;
        Ok(Metric { class, stat, figure: None })
    }

    pub fn higher_is_better(self) -> bool {
        if let Some(f) = self.figure {
            if STEADY.contains(&f) {
                // A steady latency and the rounds it took are better smaller.
                return !matches!(f, "steady_lat_ms" | "steady_rounds");
            }
            // Seconds, latencies and CPU shares are better smaller; counts and rates higher.
            let smaller =
                (f.ends_with("_s") && !f.ends_with("_per_s")) || f.ends_with("_latency_us") || f.ends_with("_cpu");
            return !smaller;
        }
        matches!(self.stat, Stat::MbS | Stat::Iops)
    }

    /// The metric's value in a phase: its figure, or its class's statistic (`None` when the
    /// phase did no such operation).
    pub fn value_in(self, p: &iolab_model::PhaseResult) -> Option<f64> {
        match self.figure {
            Some(f) if STEADY.contains(&f) => steady_figure(f, p.steady_state.as_ref()?),
            Some(f) => p.workload.get(f).copied(),
            None => self.value(&p.total),
        }
    }

    /// The metric's value in a phase, or `None` when the phase did no such operation.
    pub fn value(self, t: &Totals) -> Option<f64> {
        let c = t.get(self.class);
        let ms = |ns: u64| ns as f64 / 1e6;
        let v = match self.stat {
            Stat::MbS => c.bw_bytes / 1e6,
            Stat::Iops => c.iops,
            Stat::P50Ms => ms(c.lat_ns.p50),
            Stat::P99Ms => ms(c.lat_ns.p99),
        };
        (c.ops > 0).then_some(v)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    /// The change's interval lies wholly inside the noise band.
    NoChange,
    /// Neither: the interval is too wide to tell (`Cell::runs_needed` says about how many
    /// more runs would).
    Inconclusive,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// More runs of each configuration than this are "more than" it.
pub const MAX_RUNS_NEEDED: usize = 100;

#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// Group runs by this label's value; without it, by `sets`, else each run is its own group.
    pub by: Option<String>,
    /// Named sets of runs (the label selectors given, `config=a`, each with the runs it named):
    /// without `by`, a run belongs to the first set naming it; a run in none is its own group.
    pub sets: Vec<(String, Vec<i64>)>,
    /// Index (in the runs given) of a run whose group is the baseline; default the first group.
    pub baseline: Option<usize>,
    /// Metrics to show; empty means every metric the baseline has.
    pub metrics: Vec<Metric>,
    /// Changes whose confidence interval reaches inside ±this fraction are noise (criterion: 0.02).
    pub noise: f64,
    /// Significance level of the t-test.
    pub alpha: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { by: None, sets: Vec::new(), baseline: None, metrics: Vec::new(), noise: 0.02, alpha: 0.05 }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The label value, or `#ID` for a run on its own.
    pub key: String,
    pub run_ids: Vec<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub mean: f64,
    pub n: usize,
    /// mean / baseline mean × 100, of the two means as the table prints them
    /// ([`crate::fmt::pct_of`]); `None` when the baseline lacks the metric.
    pub pct_of_baseline: Option<f64>,
    /// The 95% confidence interval of the relative change (on the log of the ratio, so never
    /// below −1), when both sides have [`MIN_RUNS_FOR_INTERVAL`] or more runs.
    pub change_ci: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub verdict: Option<Verdict>,
    /// An inconclusive change: about how many more runs of each configuration would decide it
    /// (at most [`MAX_RUNS_NEEDED`] + 1, meaning more than that).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed: Option<usize>,
    /// Why a change against the baseline has no interval and no verdict
    /// ([`TOO_FEW_RUNS`]), when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_note: Option<String>,
    /// The fidelity rule's findings in this phase for the group's runs that bear on the
    /// metric (`#ID: text`): the figure is not (all) what the storage saw. The table marks
    /// the cell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub phase: String,
    pub metric: Metric,
    /// One per group, `None` where the group lacks the phase or the operation.
    pub cells: Vec<Option<Cell>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub groups: Vec<Group>,
    pub baseline: usize,
    pub rows: Vec<Row>,
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.rows.iter().flat_map(|r| &r.cells).flatten().filter(|c| c.verdict == Some(Verdict::Regressed)).count()
    }
}

fn phase<'a>(r: &'a StoredRun, name: &str) -> Option<&'a PhaseResult> {
    r.result.phases.iter().find(|p| p.name == name)
}

/// Runs a side needs for a confidence interval and a verdict: with two, Student's t has one
/// degree of freedom and the interval spans several times the change (a throughput falling
/// by 142%), which says nothing.
pub const MIN_RUNS_FOR_INTERVAL: usize = 3;

/// What a cell says instead of an interval when a side has fewer than
/// [`MIN_RUNS_FOR_INTERVAL`] runs.
pub const TOO_FEW_RUNS: &str = "too few runs for an interval";

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var)
}

/// Welch's two-sided t-test of `g` against `b`: the p-value of "the means are equal".
fn welch_p(b: &[f64], g: &[f64]) -> f64 {
    let ((mb, vb), (mg, vg)) = (mean_var(b), mean_var(g));
    let (nb, ng) = (b.len() as f64, g.len() as f64);
    let se2 = vb / nb + vg / ng;
    let diff = mg - mb;
    if se2 <= 0.0 {
        // Identical runs on each side: the change is exact.
        return if diff == 0.0 { 1.0 } else { 0.0 };
    }
    let df = se2 * se2 / ((vb / nb).powi(2) / (nb - 1.0) + (vg / ng).powi(2) / (ng - 1.0));
    let Ok(t) = StudentsT::new(0.0, 1.0, df.max(1.0)) else { return 1.0 };
    2.0 * (1.0 - t.cdf((diff / se2.sqrt()).abs()))
}

/// The `1 - alpha` confidence interval of the relative change mean g / mean b − 1, computed on
/// the log of the ratio (the delta method's standard error with Welch's degrees of freedom) and
/// mapped back, so it can never reach below −100%: a throughput cannot fall by more than all of
/// it. `None` when a mean is not positive.
fn change_interval(b: &[f64], g: &[f64], alpha: f64) -> Option<(f64, f64)> {
    let ((mb, vb), (mg, vg)) = (mean_var(b), mean_var(g));
    if mb <= 0.0 || mg <= 0.0 {
        return None;
    }
    let (nb, ng) = (b.len() as f64, g.len() as f64);
    let (eb, eg) = (vb / (nb * mb * mb), vg / (ng * mg * mg));
    let se2 = eb + eg;
    let log_ratio = (mg / mb).ln();
    if se2 <= 0.0 {
        let r = mg / mb - 1.0;
        return Some((r, r));
    }
    let df = se2 * se2 / (eb * eb / (nb - 1.0) + eg * eg / (ng - 1.0));
    let t = StudentsT::new(0.0, 1.0, df.max(1.0)).ok()?;
    let half = t.inverse_cdf(1.0 - alpha / 2.0) * se2.sqrt();
    Some(((log_ratio - half).exp() - 1.0, (log_ratio + half).exp() - 1.0))
}

/// About how many more runs of each side would decide an inconclusive change: the interval's
/// half-width shrinks as one over the square root of the runs (Welch's degrees of freedom
/// growing with them), until it fits between its centre and the noise band's edge (wholly
/// beyond it, or wholly inside). `None` when the centre sits on the edge (no number of runs
/// decides it); capped at [`MAX_RUNS_NEEDED`] + 1.
pub fn runs_needed(b: &[f64], g: &[f64], alpha: f64, noise: f64) -> Option<usize> {
    let ((mb, vb), (mg, vg)) = (mean_var(b), mean_var(g));
    if mb <= 0.0 || mg <= 0.0 || noise <= 0.0 {
        return None;
    }
    let (nb, ng) = (b.len() as f64, g.len() as f64);
    let se2 = vb / (nb * mb * mb) + vg / (ng * mg * mg);
    if se2 <= 0.0 {
        return None;
    }
    let c = (mg / mb).ln();
    let (lo, hi) = ((1.0 - noise).ln(), (1.0 + noise).ln());
    // How far the centre is from the edge it must clear.
    let room = if c > hi {
        c - hi
    } else if c < lo {
        lo - c
    } else {
        (c - lo).min(hi - c)
    };
    if room <= 1e-12 {
        return None;
    }
    let n = nb.min(ng);
    // se at n' runs a side: se × sqrt(n / n'); find the least n' whose half-width fits.
    for more in 1..=MAX_RUNS_NEEDED {
        let n2 = n + more as f64;
        let Ok(t) = StudentsT::new(0.0, 1.0, (2.0 * n2 - 2.0).max(1.0)) else { return None };
        if t.inverse_cdf(1.0 - alpha / 2.0) * (se2 * n / n2).sqrt() < room {
            return Some(more);
        }
    }
    Some(MAX_RUNS_NEEDED + 1)
}

/// `--by node` (the value of [`BY_NODE`]) on runs of several nodes: each node is a
/// configuration. On runs of one machine it is the label `node`, as any other.
pub const BY_NODE: &str = "node";

fn by_node(runs: &[StoredRun], opts: &CompareOptions) -> bool {
    opts.by.as_deref() == Some(BY_NODE) && runs.iter().any(|r| !node_names(r).is_empty())
}

/// The nodes of a run's phases, in the order they first appear.
fn node_names(r: &StoredRun) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in r.result.phases.iter().flat_map(|p| &p.nodes) {
        if !out.contains(&n.name) {
            out.push(n.name.clone());
        }
    }
    out
}

/// One member of a configuration: a run, or one node of it.
struct Member<'a> {
    run: &'a StoredRun,
    node: Option<String>,
}

impl Member<'_> {
    /// The member's totals of a phase: the run's, or its node's share (with its histograms).
    fn totals(&self, ph: &str) -> Option<&Totals> {
        let p = phase(self.run, ph)?;
        match &self.node {
            None => Some(&p.total),
            Some(n) => p.nodes.iter().find(|x| &x.name == n).map(|x| &x.total),
        }
    }

    /// The fidelity rule's findings of the member in a phase that bear on metric `m` (reads'
    /// on read metrics, writes' on write metrics, any on the others), as `#ID: text`.
    fn findings(&self, ph: &str, m: Metric) -> Vec<String> {
        let Some(p) = phase(self.run, ph) else { return Vec::new() };
        let jobs = self.run.result.plan.phases.iter().find(|x| x.name == ph).map(|x| x.jobs.as_slice()).unwrap_or(&[]);
        let found = match &self.node {
            None => crate::system::fidelity(p, jobs),
            Some(n) => p.nodes.iter().find(|x| &x.name == n).map(|x| x.findings.clone()).unwrap_or_default(),
        };
        use iolab_model::fidelity::Direction;
        found
            .into_iter()
            .filter(|f| match (m.figure, m.class) {
                (None, OpClass::Read) => f.direction == Direction::Read,
                (None, OpClass::Write) => f.direction == Direction::Write,
                _ => true,
            })
            .map(|f| format!("#{}: {}", self.run.id, f.said()))
            .collect()
    }

    /// The member's value of a metric in a phase. A workload figure is the run's (a node's share
    /// carries no figures of its own).
    fn value(&self, ph: &str, m: Metric) -> Option<f64> {
        match (&self.node, m.figure) {
            (None, Some(f)) if STEADY.contains(&f) => steady_figure(f, &steady_in(self.run, ph)?),
            (None, Some(_)) => m.value_in(phase(self.run, ph)?),
            (Some(_), Some(_)) => None,
            (_, None) => m.value(self.totals(ph)?),
        }
    }
}

/// Phase names in the order the baseline ran them, then any only other groups ran.
fn phase_names(base: &[&StoredRun], all: &[StoredRun]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in base.iter().copied().chain(all) {
        // A scenario of rounds (SNIA PTS's) compares as its steady state, not round by round.
        let rounds = steady_in(r, STEADY_PHASE).is_some();
        for p in r.result.phases.iter().filter(|_| !rounds) {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
        if !names.iter().any(|n| n == STEADY_PHASE) && steady_in(r, STEADY_PHASE).is_some() {
            names.push(STEADY_PHASE.to_string());
        }
    }
    names
}

/// Compare runs. Rows follow the baseline's phases in order, then phases only other groups
/// ran; a metric has a row when any group has it, and a group that lacks it shows as absent
/// (so the table is the same whichever configuration is the baseline).
pub fn compare(runs: &[StoredRun], opts: &CompareOptions) -> Comparison {
    // Each group's members: a run, or with `--by node` one node of a run.
    let by_node = by_node(runs, opts);
    let mut groups: Vec<Group> = Vec::new();
    let mut members: Vec<Vec<Member>> = Vec::new();
    let mut first_group_of_run: Vec<Option<usize>> = Vec::new();
    for r in runs {
        let keys: Vec<(String, Option<String>)> = if by_node {
            node_names(r).into_iter().map(|n| (n.clone(), Some(n))).collect()
        } else {
            let k = match &opts.by {
                Some(l) => r.labels.get(l).cloned().unwrap_or_else(|| format!("({l} unset)")),
                None => match opts.sets.iter().find(|(_, ids)| ids.contains(&r.id)) {
                    Some((name, _)) => name.clone(),
                    None => format!("#{}", r.id),
                },
            };
            vec![(k, None)]
        };
        let mut first = None;
        for (k, node) in keys {
            let gi = match groups.iter().position(|g| g.key == k) {
                Some(i) => {
                    if !groups[i].run_ids.contains(&r.id) {
                        groups[i].run_ids.push(r.id);
                    }
                    i
                }
                None => {
                    groups.push(Group { key: k, run_ids: vec![r.id] });
                    members.push(Vec::new());
                    groups.len() - 1
                }
            };
            members[gi].push(Member { run: r, node });
            first.get_or_insert(gi);
        }
        first_group_of_run.push(first);
    }
    let baseline = opts.baseline.and_then(|i| first_group_of_run.get(i).copied().flatten()).unwrap_or(0);
    let mut rows = Vec::new();
    let Some(base_members) = members.get(baseline) else { return Comparison { groups, baseline, rows } };
    let base_runs: Vec<&StoredRun> = base_members.iter().map(|m| m.run).collect();
    let metrics: Vec<Metric> = if opts.metrics.is_empty() {
        // The class metrics, then the rates of any personality the baseline ran.
        let mut v = Metric::defaults();
        let rates = iolab_model::figures::PERSONALITIES
            .iter()
            .flat_map(|p| p.figures.iter())
            .filter(|(_, k)| *k == iolab_model::figures::Kind::Derived)
            .map(|(f, _)| *f);
        for f in rates {
            if base_runs.iter().any(|r| r.result.phases.iter().any(|p| p.workload.contains_key(f)))
                && !v.iter().any(|m| m.figure == Some(f))
            {
                v.extend(Metric::figure(f));
            }
        }
        // The steady state's figures, where any run has one.
        let steady = |r: &StoredRun| {
            r.result.phases.iter().any(|p| p.steady_state.is_some()) || steady_in(r, STEADY_PHASE).is_some()
        };
        if runs.iter().any(steady) {
            v.extend(STEADY.iter().filter_map(|f| Metric::figure(f)));
        }
        v
    } else {
        opts.metrics.clone()
    };
    for ph in &phase_names(&base_runs, runs) {
        for &m in &metrics {
            let values = |ms: &[Member]| -> Vec<f64> { ms.iter().filter_map(|x| x.value(ph, m)).collect() };
            let bvals = values(base_members);
            let bmean = (!bvals.is_empty()).then(|| mean_var(&bvals).0);
            let cells: Vec<Option<Cell>> = groups
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    let vals = values(&members[i]);
                    if vals.is_empty() {
                        return None;
                    }
                    let (mean, _) = mean_var(&vals);
                    let mut cell = Cell {
                        mean,
                        n: vals.len(),
                        pct_of_baseline: bmean.and_then(|b| crate::fmt::pct_of(mean, b)),
                        change_ci: None,
                        p_value: None,
                        verdict: None,
                        runs_needed: None,
                        interval_note: None,
                        findings: members[i].iter().flat_map(|x| x.findings(ph, m)).collect(),
                    };
                    if i == baseline || bvals.is_empty() {
                        return Some(cell);
                    }
                    if vals.len() < MIN_RUNS_FOR_INTERVAL || bvals.len() < MIN_RUNS_FOR_INTERVAL {
                        cell.interval_note = Some(TOO_FEW_RUNS.to_string());
                        return Some(cell);
                    }
                    let p = welch_p(&bvals, &vals);
                    cell.p_value = Some(p);
                    let Some(ci) = change_interval(&bvals, &vals, opts.alpha) else {
                        cell.interval_note = Some("no interval: a mean is zero".to_string());
                        return Some(cell);
                    };
                    let beyond = ci.0 > opts.noise || ci.1 < -opts.noise;
                    let inside = ci.0 >= -opts.noise && ci.1 <= opts.noise;
                    cell.verdict = Some(if p < opts.alpha && beyond {
                        let up = ci.0 > 0.0;
                        if up == m.higher_is_better() {
                            Verdict::Improved
                        } else {
                            Verdict::Regressed
                        }
                    } else if inside {
                        Verdict::NoChange
                    } else {
                        cell.runs_needed = runs_needed(&bvals, &vals, opts.alpha, opts.noise);
                        Verdict::Inconclusive
                    });
                    cell.change_ci = Some(ci);
                    Some(cell)
                })
                .collect();
            if cells.iter().any(Option::is_some) {
                rows.push(Row { phase: ph.clone(), metric: m, cells });
            }
        }
    }
    Comparison { groups, baseline, rows }
}

/// A verdict in words, with an inconclusive change's interval and the runs it would take:
/// `inconclusive (-20.1%..+5.3%; about 6 more runs of each)`.
pub fn verdict_words(cell: &Cell, v: Verdict) -> String {
    match (v, cell.change_ci) {
        (Verdict::Inconclusive, Some((lo, hi))) => {
            let more = match cell.runs_needed {
                Some(n) if n > MAX_RUNS_NEEDED => format!("more than {MAX_RUNS_NEEDED} more runs of each"),
                Some(1) => "about 1 more run of each".to_string(),
                Some(n) => format!("about {n} more runs of each"),
                None => "no number of runs decides it: the change sits on the noise band's edge".to_string(),
            };
            format!("inconclusive ({:+.1}%..{:+.1}%; {more})", lo * 100.0, hi * 100.0)
        }
        _ => v.word().to_string(),
    }
}

impl Comparison {
    /// Every finding a marked cell carries, once each, in table order: `phase metric: #ID:
    /// text`, a finding that repeats for several metrics said once.
    pub fn finding_notes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            for f in r.cells.iter().flatten().flat_map(|c| &c.findings) {
                let line = format!("phase {}: {f}", r.phase);
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
        out
    }

    /// Whether any change lacks an interval because a side has too few runs.
    pub fn too_few_runs(&self) -> bool {
        self.rows.iter().flat_map(|r| &r.cells).flatten().any(|c| c.interval_note.as_deref() == Some(TOO_FEW_RUNS))
    }
}

/// What the table prints where a group lacks the phase or the operation.
pub const ABSENT: &str = "absent";

/// The comparison as a terminal table: every value, its % of the baseline, and the verdict.
pub fn render_table(c: &Comparison) -> String {
    use comfy_table::{presets::UTF8_BORDERS_ONLY, CellAlignment, Table};
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    let mut header = vec!["phase".to_string(), "metric".to_string()];
    for (i, g) in c.groups.iter().enumerate() {
        let base = if i == c.baseline { " (baseline)" } else { "" };
        header.push(format!("{}{base}\nn={}", g.key, g.run_ids.len()));
    }
    t.set_header(header);
    for r in &c.rows {
        let mut row = vec![r.phase.clone(), r.metric.name().to_string()];
        for (i, cell) in r.cells.iter().enumerate() {
            row.push(match cell {
                None => ABSENT.into(),
                Some(cell) => {
                    let v = crate::fmt::num(cell.mean);
                    let mut text = match (i == c.baseline, cell.pct_of_baseline, cell.verdict) {
                        (true, _, _) => v,
                        (false, Some(p), Some(vd)) => format!("{v} ({p:.1}%) {}", verdict_words(cell, vd)),
                        (false, Some(p), None) => format!("{v} ({p:.1}%)"),
                        (false, None, _) => v,
                    };
                    if !cell.findings.is_empty() {
                        text.push_str(" *");
                    }
                    text
                }
            });
        }
        t.add_row(row);
    }
    for col in 2..2 + c.groups.len() {
        if let Some(c) = t.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = t.to_string();
    let notes = c.finding_notes();
    if !notes.is_empty() {
        out.push_str("\n* not (all) what the storage saw:");
        for n in notes {
            out.push_str(&format!("\n  {n}"));
        }
    }
    if c.too_few_runs() {
        out.push_str(&format!(
            "\n({TOO_FEW_RUNS}: a verdict needs {MIN_RUNS_FOR_INTERVAL} or more runs of each configuration)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_figures_are_metrics() {
        let m = Metric::parse("messages_per_min").unwrap();
        assert_eq!(
            (m.figure, m.key(), m.higher_is_better()),
            (Some("messages_per_min"), "messages_per_min".to_string(), true)
        );
        assert!(!Metric::parse("sparse_s").unwrap().higher_is_better());
        assert!(Metric::parse("transactions_per_s").unwrap().higher_is_better());
        assert_eq!(serde_json::to_string(&m).unwrap(), "\"messages_per_min\"");
        let mut p = PhaseResult::default();
        assert_eq!(m.value_in(&p), None);
        p.workload.insert("messages_per_min".into(), 1234.0);
        assert_eq!(m.value_in(&p), Some(1234.0));
        assert!(Metric::parse("messages_per_hour").unwrap_err().to_string().contains("workload figure"));
        // Every personality's figures, bonnie++'s and the readers' among them.
        for f in ["put_block", "ran_del", "messages_read", "seeks_latency_us", "flowops_per_s"] {
            assert_eq!(Metric::parse(f).unwrap().figure, Some(f));
        }
        assert!(Metric::parse("put_block").unwrap().higher_is_better());
        assert!(!Metric::parse("seeks_latency_us").unwrap().higher_is_better());
        assert!(!Metric::parse("put_block_cpu").unwrap().higher_is_better());
    }

    #[test]
    fn metrics_are_class_and_statistic_with_the_earlier_spellings() {
        for (key, name) in [("read-mbs", "read MB/s"), ("write-iops", "write IOPS"), ("sync-p99", "fsync p99 ms")] {
            let m = Metric::parse(key).unwrap();
            assert_eq!((m.key(), m.name()), (key.to_string(), name.to_string()));
        }
        let c = Metric::parse("create-p99").unwrap();
        assert_eq!((c.class, c.stat), (OpClass::Create, Stat::P99Ms));
        assert_eq!(serde_json::to_string(&Metric::SyncP99Ms).unwrap(), "\"sync_p99_ms\"");
        assert!(Metric::parse("read-speed").unwrap_err().to_string().contains("mbs, iops, p50, p99"));
        assert!(Metric::parse("teleport-iops").is_err());
        assert_eq!(Metric::defaults()[..9], Metric::ALL);
    }

    #[test]
    fn welch_finds_a_clear_change_and_ignores_noise() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let slower = [90.0, 91.0, 89.0, 90.5, 89.5];
        assert!(welch_p(&base, &slower) < 0.001);
        let ci = change_interval(&base, &slower, 0.05).unwrap();
        assert!(ci.0 < -0.08 && ci.1 > -0.12 && ci.1 < -0.08, "{ci:?}");
        let same = [100.2, 100.8, 99.1, 100.1, 99.9];
        let ci = change_interval(&base, &same, 0.05).unwrap();
        assert!(welch_p(&base, &same) > 0.05 && ci.0 < 0.0 && ci.1 > 0.0, "{ci:?}");
    }

    /// Three noisy runs a side: an interval on the difference of means reaches below −100%
    /// (a throughput falling by more than all of it); on the log ratio it cannot.
    #[test]
    fn the_interval_of_a_change_stays_above_minus_100_percent() {
        let base = [1266.0, 35.0, 800.0];
        let other = [40.0, 1100.0, 60.0];
        let ((mb, vb), (mg, vg)) = (mean_var(&base), mean_var(&other));
        let se = (vb / 3.0 + vg / 3.0).sqrt();
        let naive_low = (mg - mb - 2.776 * se) / mb;
        assert!(naive_low < -1.0, "the naive interval is impossible: {naive_low}");
        let (lo, hi) = change_interval(&base, &other, 0.05).unwrap();
        assert!(lo > -1.0 && lo < mg / mb - 1.0 && hi > mg / mb - 1.0, "{lo} {hi}");
        assert_eq!(change_interval(&[0.0, 0.0, 0.0], &other, 0.05), None);
        assert_eq!(change_interval(&[2.0; 3], &[3.0; 3], 0.05), Some((0.5, 0.5)));
    }

    fn stored(id: i64, config: &str, phase: &str, sync_p99_ms: Option<u64>, mbs: f64) -> StoredRun {
        let mut total = Totals::default();
        let w = total.get_mut(OpClass::Write);
        (w.ops, w.bw_bytes, w.iops) = (1000, mbs * 1e6, 100.0);
        if let Some(ms) = sync_p99_ms {
            let s = total.get_mut(OpClass::Sync);
            (s.ops, s.lat_ns.p99) = (10, ms * 1_000_000);
        }
        StoredRun {
            id,
            uid: String::new(),
            kind: iolab_model::RunKind::Run,
            name: "t".into(),
            labels: [("config".to_string(), config.to_string())].into(),
            host: Default::default(),
            pid: 1,
            ended_unix_s: None,
            result: iolab_model::RunResult {
                iolab_version: "0".into(),
                status: iolab_model::Status::Complete,
                phases: vec![PhaseResult { elapsed_s: 1.0, total, ..PhaseResult::new(phase) }],
                ..iolab_model::RunResult::new(iolab_spec::Plan { phases: Vec::new() }, "n", 0.0)
            },
        }
    }

    /// `compare config=a config=b` without `--by`: each selector's runs are one group (n=3 a
    /// side, so a verdict), and a cell whose run had a finding is marked and the finding named.
    #[test]
    fn label_selectors_group_and_a_finding_marks_its_cell() {
        use iolab_model::fidelity::{Direction, Finding, Seen};
        let mut runs: Vec<StoredRun> = (1..=3)
            .map(|i| stored(i, "a", "w", None, 100.0 + i as f64))
            .chain((4..=6).map(|i| stored(i, "b", "w", None, 50.0 + i as f64)))
            .collect();
        runs[4].result.phases[0].findings.push(Finding {
            kind: Seen::WritesInCache,
            direction: Direction::Write,
            issued_bytes_s: 55e6,
            seen_bytes_s: 1e6,
            seen_on: "vda".into(),
            holes_share: None,
            node: None,
            text: "writes stayed in the page cache".into(),
        });
        let sets = vec![("config=a".to_string(), vec![1, 2, 3]), ("config=b".to_string(), vec![4, 5, 6])];
        let c = compare(&runs, &CompareOptions { sets, metrics: vec![Metric::WriteMbS], ..Default::default() });
        assert_eq!(c.groups.len(), 2, "two groups, not six runs");
        let cell = c.rows[0].cells[1].as_ref().unwrap();
        assert_eq!((cell.n, cell.verdict), (3, Some(Verdict::Regressed)));
        assert_eq!(cell.findings, vec!["#5: writes stayed in the page cache".to_string()]);
        let table = render_table(&c);
        assert!(table.contains("regressed *") && table.contains("#5: writes stayed in the page cache"), "{table}");
    }

    /// `compare config=a config=b --metric sync-p99` where only b flushed: the row is there in
    /// either order, absent on a's side.
    #[test]
    fn a_metric_one_side_lacks_keeps_its_row_whatever_the_order() {
        let a = stored(1, "a", "p", None, 35.0);
        let b = stored(2, "b", "p", Some(7), 30.0);
        let by = CompareOptions { by: Some("config".into()), metrics: vec![Metric::SyncP99Ms], ..Default::default() };
        for runs in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
            let c = compare(&runs, &by);
            assert_eq!(c.rows.len(), 1, "{c:?}");
            let side = |key: &str| &c.rows[0].cells[c.groups.iter().position(|g| g.key == key).unwrap()];
            assert!(side("a").is_none());
            assert_eq!(side("b").as_ref().map(|c| c.mean), Some(7.0));
            let table = render_table(&c);
            assert!(table.contains("fsync p99 ms") && table.contains(ABSENT) && table.contains("7.00"), "{table}");
        }
        // A phase only the second configuration ran is compared too.
        let c = compare(&[a.clone(), stored(3, "c", "other", None, 30.0)], &CompareOptions::default());
        assert!(c.rows.iter().any(|r| r.phase == "other" && r.cells[0].is_none() && r.cells[1].is_some()));
    }

    /// Steady-state figures compare: a `--steady-state` phase's window mean, whether it was
    /// steady and the rounds it took; a PTS run as its tracked cell's steady state, in one row
    /// `steady state`, never round by round.
    #[test]
    fn steady_state_figures_compare_and_a_pts_run_as_its_steady_state() {
        use iolab_model::steady::{judge_snia, SteadyStateResult};
        let with = |id: i64, config: &str, values: &[f64], attained: bool| {
            let mut r = stored(id, config, "w", None, 10.0);
            let n = values.len();
            let window = judge_snia(&values[n - 5..], (n - 4) as u64, &iolab_spec::steady::Snia::PTS);
            r.result.phases[0].steady_state = Some(SteadyStateResult {
                method: "snia".into(),
                tracked: "iops".into(),
                unit: "IOPS".into(),
                values: values.to_vec(),
                first: 1,
                measured: n as u64,
                attained,
                steady_at: attained.then_some(n as u64),
                window: Some(window),
                ..Default::default()
            });
            r
        };
        let a = with(1, "a", &[500.0, 400.0, 400.0, 400.0, 400.0, 400.0], true);
        let b = with(2, "b", &[900.0, 800.0, 700.0, 600.0, 500.0, 400.0, 300.0], false);
        let c = compare(&[a, b], &CompareOptions { by: Some("config".into()), ..Default::default() });
        let row = |m: &str| {
            c.rows.iter().find(|r| r.phase == "w" && r.metric.key() == m).unwrap_or_else(|| panic!("{m}: {c:?}"))
        };
        let cell = |m: &str, i: usize| row(m).cells[i].as_ref().map(|c| c.mean);
        assert_eq!((cell("steady_iops", 0), cell("steady_iops", 1)), (Some(400.0), Some(500.0)));
        assert_eq!((cell("steady_attained", 0), cell("steady_attained", 1)), (Some(1.0), Some(0.0)));
        assert_eq!((cell("steady_rounds", 0), cell("steady_rounds", 1)), (Some(6.0), Some(7.0)));
        assert!(!c.rows.iter().any(|r| r.metric.key() == "steady_lat_ms"), "only the tracked figure");
        assert!(Metric::parse("steady_rounds").is_ok_and(|m| !m.higher_is_better()));
        assert!(Metric::parse("steady_iops").is_ok_and(|m| m.higher_is_better()));
        let table = render_table(&c);
        assert!(table.contains("steady_iops") && table.contains("steady_attained"), "{table}");

        // Two PTS runs: one steady at round 5, one at round 7; compared as `steady state` only.
        let pts = |id: i64, config: &str, writes: &[u64]| {
            let mut r = stored(id, config, "x", None, 1.0);
            r.result = crate::scenario::pts::fixtures::fixture(writes);
            r.result.verdict = crate::scenario::Scenario::verdict(&crate::scenario::pts::IOPS, &r.result, None);
            r
        };
        let a = pts(3, "a", &[1000, 1000, 1000, 1000, 1000]);
        let b = pts(4, "b", &[3000, 2000, 900, 900, 900, 900, 900]);
        let c = compare(&[a, b], &CompareOptions { by: Some("config".into()), ..Default::default() });
        assert!(
            c.rows.iter().all(|r| r.phase == STEADY_PHASE),
            "{:?}",
            c.rows.iter().map(|r| &r.phase).collect::<Vec<_>>()
        );
        let cell = |m: &str, i: usize| {
            c.rows.iter().find(|r| r.metric.key() == m).and_then(|r| r.cells[i].as_ref()).map(|c| c.mean)
        };
        assert_eq!((cell("steady_iops", 0), cell("steady_iops", 1)), (Some(1000.0), Some(900.0)));
        assert_eq!((cell("steady_rounds", 0), cell("steady_rounds", 1)), (Some(5.0), Some(7.0)));
        assert_eq!((cell("steady_attained", 0), cell("steady_attained", 1)), (Some(1.0), Some(1.0)));
    }

    #[test]
    fn two_runs_a_side_are_too_few_for_an_interval() {
        let runs = [
            stored(1, "a", "p", None, 1266.0),
            stored(2, "a", "p", None, 35.0),
            stored(3, "b", "p", None, 40.0),
            stored(4, "b", "p", None, 1100.0),
        ];
        let c = compare(&runs, &CompareOptions { by: Some("config".into()), ..Default::default() });
        let cell = c.rows[0].cells[1].as_ref().unwrap();
        assert_eq!((cell.change_ci, cell.verdict, cell.interval_note.as_deref()), (None, None, Some(TOO_FEW_RUNS)));
        assert!(c.too_few_runs());
        assert!(render_table(&c).contains("too few runs for an interval"));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["rows"][0]["cells"][1]["interval_note"], TOO_FEW_RUNS);
    }
}
