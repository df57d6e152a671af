//! Comparing runs: each metric of each phase, per configuration, absolute and as a percentage
//! of the baseline, as seed 001 tabulates DRBD against native ext4. With two or more runs per
//! configuration each change gets a verdict in criterion's two gates: Welch's t-test must find
//! it significant, and its 95% confidence interval must lie wholly beyond the noise threshold.

use iolab_model::{PhaseResult, Totals};
use iolab_store::StoredRun;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// What can be compared, per phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    ReadMbS,
    WriteMbS,
    ReadIops,
    WriteIops,
    ReadP50Ms,
    ReadP99Ms,
    WriteP50Ms,
    WriteP99Ms,
    SyncP99Ms,
}

impl Metric {
    pub const ALL: [Metric; 9] = [
        Metric::ReadMbS,
        Metric::WriteMbS,
        Metric::ReadIops,
        Metric::WriteIops,
        Metric::ReadP50Ms,
        Metric::ReadP99Ms,
        Metric::WriteP50Ms,
        Metric::WriteP99Ms,
        Metric::SyncP99Ms,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::ReadMbS => "read MB/s",
            Metric::WriteMbS => "write MB/s",
            Metric::ReadIops => "read IOPS",
            Metric::WriteIops => "write IOPS",
            Metric::ReadP50Ms => "read p50 ms",
            Metric::ReadP99Ms => "read p99 ms",
            Metric::WriteP50Ms => "write p50 ms",
            Metric::WriteP99Ms => "write p99 ms",
            Metric::SyncP99Ms => "fsync p99 ms",
        }
    }

    /// The spelling `--metric` takes.
    pub fn key(self) -> &'static str {
        match self {
            Metric::ReadMbS => "read-mbs",
            Metric::WriteMbS => "write-mbs",
            Metric::ReadIops => "read-iops",
            Metric::WriteIops => "write-iops",
            Metric::ReadP50Ms => "read-p50",
            Metric::ReadP99Ms => "read-p99",
            Metric::WriteP50Ms => "write-p50",
            Metric::WriteP99Ms => "write-p99",
            Metric::SyncP99Ms => "sync-p99",
        }
    }

    pub fn parse(s: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.key() == s)
            .ok_or_else(|| format!("unknown metric `{s}`; accepted: {}", Metric::ALL.map(|m| m.key()).join(", ")))
    }

    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::ReadMbS | Metric::WriteMbS | Metric::ReadIops | Metric::WriteIops)
    }

    /// The metric's value in a phase, or `None` when the phase did no such operation.
    pub fn value(self, t: &Totals) -> Option<f64> {
        let ms = |ns: u64| ns as f64 / 1e6;
        let (ops, v) = match self {
            Metric::ReadMbS => (t.read().ops, t.read().bw_bytes / 1e6),
            Metric::WriteMbS => (t.write().ops, t.write().bw_bytes / 1e6),
            Metric::ReadIops => (t.read().ops, t.read().iops),
            Metric::WriteIops => (t.write().ops, t.write().iops),
            Metric::ReadP50Ms => (t.read().ops, ms(t.read().lat_ns.p50)),
            Metric::ReadP99Ms => (t.read().ops, ms(t.read().lat_ns.p99)),
            Metric::WriteP50Ms => (t.write().ops, ms(t.write().lat_ns.p50)),
            Metric::WriteP99Ms => (t.write().ops, ms(t.write().lat_ns.p99)),
            Metric::SyncP99Ms => (t.sync().ops, ms(t.sync().lat_ns.p99)),
        };
        (ops > 0).then_some(v)
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
    let metrics: Vec<Metric> = if opts.metrics.is_empty() { Metric::ALL.to_vec() } else { opts.metrics.clone() };
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
                    let v = fmt_value(cell.mean);
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

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
