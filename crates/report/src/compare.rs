//! Comparing runs: each metric of each phase, per configuration, absolute and as a percentage
//! of the baseline, as seed 001 tabulates DRBD against native ext4. With two or more runs per
//! configuration each change gets a verdict in criterion's two gates: Welch's t-test must find
//! it significant, and its 95% confidence interval must lie wholly beyond the noise threshold.

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
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}_{}", self.class.as_str(), self.stat.json()))
    }
}

const fn m(class: OpClass, stat: Stat) -> Metric {
    Metric { class, stat }
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
        let class = if self.class == OpClass::Sync { "fsync" } else { self.class.as_str() };
        format!("{class} {}", self.stat.label())
    }

    /// The spelling `--metric` takes.
    pub fn key(self) -> String {
        format!("{}-{}", self.class.as_str(), self.stat.key())
    }

    pub fn parse(s: &str) -> Result<Metric, String> {
        let bad = || {
            format!(
                "unknown metric `{s}`; write CLASS-STAT with STAT one of mbs, iops, p50, p99 and CLASS one of {} (for example write-mbs, sync-p99, create-iops)",
                OpClass::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        let (class, stat) = s.rsplit_once('-').ok_or_else(bad)?;
        let class: OpClass = class.parse().map_err(|_| bad())?;
        let stat = Stat::ALL.into_iter().find(|x| x.key() == stat).ok_or_else(bad)?;
        Ok(Metric { class, stat })
    }

    pub fn higher_is_better(self) -> bool {
        matches!(self.stat, Stat::MbS | Stat::Iops)
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
    WithinNoise,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::WithinNoise => "within noise",
        }
    }
}

#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// Group runs by this label's value; without it, each run is its own group.
    pub by: Option<String>,
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
        CompareOptions { by: None, baseline: None, metrics: Vec::new(), noise: 0.02, alpha: 0.05 }
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
    /// mean / baseline mean × 100.
    pub pct_of_baseline: Option<f64>,
    /// The 95% confidence interval of the relative change, when both sides have 2+ runs.
    pub change_ci: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub verdict: Option<Verdict>,
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

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var)
}

/// Welch's two-sided t-test of `g` against `b`, and the 95% interval of (mean g − mean b) / mean b.
fn welch(b: &[f64], g: &[f64], alpha: f64) -> (f64, (f64, f64)) {
    let ((mb, vb), (mg, vg)) = (mean_var(b), mean_var(g));
    let (nb, ng) = (b.len() as f64, g.len() as f64);
    let se2 = vb / nb + vg / ng;
    let diff = mg - mb;
    let rel = |x: f64| if mb != 0.0 { x / mb } else { 0.0 };
    if se2 <= 0.0 {
        // Identical runs on each side: the change is exact.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return (p, (rel(diff), rel(diff)));
    }
    let se = se2.sqrt();
    let df = se2 * se2 / ((vb / nb).powi(2) / (nb - 1.0) + (vg / ng).powi(2) / (ng - 1.0));
    let Ok(t) = StudentsT::new(0.0, 1.0, df.max(1.0)) else { return (1.0, (f64::NEG_INFINITY, f64::INFINITY)) };
    let p = 2.0 * (1.0 - t.cdf((diff / se).abs()));
    let crit = t.inverse_cdf(1.0 - alpha / 2.0);
    (p, (rel(diff - crit * se), rel(diff + crit * se)))
}

/// Compare runs. Rows follow the baseline's phases in order and the metrics it has.
pub fn compare(runs: &[StoredRun], opts: &CompareOptions) -> Comparison {
    let key_of = |r: &StoredRun| match &opts.by {
        Some(l) => r.labels.get(l).cloned().unwrap_or_else(|| format!("({l} unset)")),
        None => format!("#{}", r.id),
    };
    let mut groups: Vec<Group> = Vec::new();
    for r in runs {
        let k = key_of(r);
        match groups.iter_mut().find(|g| g.key == k) {
            Some(g) => g.run_ids.push(r.id),
            None => groups.push(Group { key: k, run_ids: vec![r.id] }),
        }
    }
    let baseline = opts
        .baseline
        .and_then(|i| runs.get(i))
        .and_then(|r| groups.iter().position(|g| g.key == key_of(r)))
        .unwrap_or(0);
    let members = |g: &Group| -> Vec<&StoredRun> { runs.iter().filter(|r| g.run_ids.contains(&r.id)).collect() };
    let mut rows = Vec::new();
    let Some(bg) = groups.get(baseline) else { return Comparison { groups, baseline, rows } };
    let base_runs = members(bg);
    let metrics: Vec<Metric> = if opts.metrics.is_empty() { Metric::defaults() } else { opts.metrics.clone() };
    let phase_names: Vec<String> =
        base_runs.first().map(|r| r.result.phases.iter().map(|p| p.name.clone()).collect()).unwrap_or_default();
    for ph in &phase_names {
        for &m in &metrics {
            let values = |rs: &[&StoredRun]| -> Vec<f64> {
                rs.iter().filter_map(|r| phase(r, ph)).filter_map(|p| m.value(&p.total)).collect()
            };
            let bvals = values(&base_runs);
            if bvals.is_empty() {
                continue;
            }
            let (bmean, _) = mean_var(&bvals);
            let cells = groups
                .iter()
                .map(|g| {
                    let vals = values(&members(g));
                    if vals.is_empty() {
                        return None;
                    }
                    let (mean, _) = mean_var(&vals);
                    let pct = (bmean != 0.0).then(|| 100.0 * mean / bmean);
                    let (mut p_value, mut change_ci, mut verdict) = (None, None, None);
                    if g.key != groups[baseline].key && vals.len() >= 2 && bvals.len() >= 2 {
                        let (p, ci) = welch(&bvals, &vals, opts.alpha);
                        let beyond = ci.0 > opts.noise || ci.1 < -opts.noise;
                        verdict = Some(if p < opts.alpha && beyond {
                            let up = ci.0 > 0.0;
                            if up == m.higher_is_better() {
                                Verdict::Improved
                            } else {
                                Verdict::Regressed
                            }
                        } else {
                            Verdict::WithinNoise
                        });
                        p_value = Some(p);
                        change_ci = Some(ci);
                    }
                    Some(Cell { mean, n: vals.len(), pct_of_baseline: pct, change_ci, p_value, verdict })
                })
                .collect();
            rows.push(Row { phase: ph.clone(), metric: m, cells });
        }
    }
    Comparison { groups, baseline, rows }
}

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
                None => "-".into(),
                Some(cell) => {
                    let v = crate::fmt::num(cell.mean);
                    match (i == c.baseline, cell.pct_of_baseline, cell.verdict) {
                        (true, _, _) => v,
                        (false, Some(p), Some(vd)) => format!("{v} ({p:.1}%) {}", vd.word()),
                        (false, Some(p), None) => format!("{v} ({p:.1}%)"),
                        (false, None, _) => v,
                    }
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
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_class_and_statistic_with_the_earlier_spellings() {
        for (key, name) in [("read-mbs", "read MB/s"), ("write-iops", "write IOPS"), ("sync-p99", "fsync p99 ms")] {
            let m = Metric::parse(key).unwrap();
            assert_eq!((m.key(), m.name()), (key.to_string(), name.to_string()));
        }
        let c = Metric::parse("create-p99").unwrap();
        assert_eq!((c.class, c.stat), (OpClass::Create, Stat::P99Ms));
        assert_eq!(serde_json::to_string(&Metric::SyncP99Ms).unwrap(), "\"sync_p99_ms\"");
        assert!(Metric::parse("read-speed").unwrap_err().contains("mbs, iops, p50, p99"));
        assert!(Metric::parse("teleport-iops").is_err());
        assert_eq!(Metric::defaults()[..9], Metric::ALL);
    }

    #[test]
    fn welch_finds_a_clear_change_and_ignores_noise() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let slower = [90.0, 91.0, 89.0, 90.5, 89.5];
        let (p, ci) = welch(&base, &slower, 0.05);
        assert!(p < 0.001, "{p}");
        assert!(ci.0 < -0.08 && ci.1 > -0.12 && ci.1 < -0.08, "{ci:?}");
        let same = [100.2, 100.8, 99.1, 100.1, 99.9];
        let (p, ci) = welch(&base, &same, 0.05);
        assert!(p > 0.05 && ci.0 < 0.0 && ci.1 > 0.0, "{p} {ci:?}");
    }
}
