//! Steady state's arithmetic and its result (issue 29): a window of values judged by SNIA PTS's
//! rule (range and the least-squares line's excursion against the window's mean) or by one of
//! fio's criteria (largest deviation from the mean, or the slope), and what a phase reports
//! (`phases[].steady_state`: every round, the last window, the verdict). Pure functions of
//! numbers, so the coordinating thread, the report and the tests compute the same thing.

use iolab_spec::steady::{FioCriterion, FioTest, Snia};
use serde::{Deserialize, Serialize};

/// The least-squares line y = slope·x + intercept over x = 0..n-1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub slope: f64,
    pub intercept: f64,
}

/// Fit `y` over x = 0..n-1 (n ≥ 2; a single value is a flat line through it).
pub fn fit(y: &[f64]) -> Fit {
    let n = y.len() as f64;
    if y.len() < 2 {
        return Fit { slope: 0.0, intercept: y.first().copied().unwrap_or(0.0) };
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        let dx = i as f64 - mean_x;
        sxy += dx * (v - mean_y);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    Fit { slope, intercept: mean_y - slope * mean_x }
}

/// One window judged: its values' figures, the fitted line, and each test against its limit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Window {
    /// The window's first and last round (or sample), counted from 1.
    pub first: u64,
    pub last: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// max - min, and (SNIA) the most it may be.
    pub range: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_limit: Option<f64>,
    /// The least-squares line over the window (x = 0 at its first round, in rounds).
    pub slope: f64,
    pub intercept: f64,
    /// |slope| × (n - 1): how far the line moves across the window, and (SNIA) the most it may.
    pub excursion: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excursion_limit: Option<f64>,
    /// The largest distance of a value from the mean (fio's deviation).
    pub max_deviation: f64,
    /// fio: the criterion's value (in the tracked unit, or % of the mean) and its limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    pub steady: bool,
}

fn describe(y: &[f64], first: u64) -> Window {
    let n = y.len().max(1) as f64;
    let mean = y.iter().sum::<f64>() / n;
    let min = y.iter().copied().fold(f64::INFINITY, f64::min);
    let max = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let f = fit(y);
    Window {
        first,
        last: first + y.len().saturating_sub(1) as u64,
        mean,
        min: if y.is_empty() { 0.0 } else { min },
        max: if y.is_empty() { 0.0 } else { max },
        range: if y.is_empty() { 0.0 } else { max - min },
        slope: f.slope,
        intercept: f.intercept,
        excursion: f.slope.abs() * (y.len().saturating_sub(1)) as f64,
        max_deviation: y.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max),
        ..Default::default()
    }
}

/// SNIA PTS's rule on a window of rounds (`first` its first round, from 1): steady when
/// max - min ≤ range% of the mean and |slope| × (n - 1) ≤ excursion% of the mean. A window
/// whose mean is 0 (nothing done) is not steady.
pub fn judge_snia(y: &[f64], first: u64, s: &Snia) -> Window {
    let mut w = describe(y, first);
    let range_limit = s.range_pct * w.mean / 100.0;
    let excursion_limit = s.excursion_pct * w.mean / 100.0;
    w.range_limit = Some(range_limit);
    w.excursion_limit = Some(excursion_limit);
    w.steady = w.mean > 0.0 && w.range <= range_limit && w.excursion <= excursion_limit;
    w
}

/// fio's rule (steadystate.c) on a window of samples: `iops`/`bw`/`lat`, the largest
/// |value - mean| (as a percentage of the mean with %), steady when below the limit;
/// `*_slope`, the least-squares slope per sample (as a percentage of the mean with %), steady
/// when its absolute value is below the limit. Both strict, as fio's `<`.
pub fn judge_fio(y: &[f64], first: u64, c: &FioCriterion) -> Window {
    let mut w = describe(y, first);
    let raw = match c.test {
        FioTest::Deviation => w.max_deviation,
        FioTest::Slope => w.slope,
    };
    let value = if c.percent {
        if w.mean > 0.0 {
            100.0 * raw / w.mean
        } else {
            f64::INFINITY
        }
    } else {
        raw
    };
    w.criterion = Some(value);
    w.limit = Some(c.limit);
    w.steady = value.abs() < c.limit;
    w
}

/// A phase's steady state as measured: `phases[].steady_state` in JSON (docs/json.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SteadyStateResult {
    /// `snia` or `fio`.
    pub method: String,
    /// The criterion in words (the spec's `SteadyState::describe`).
    pub criterion: String,
    /// What was tracked: `iops`, `bw` or `lat`, and its unit (`IOPS`, `B/s`, `ns`).
    pub tracked: String,
    pub unit: String,
    /// A round's length (SNIA) or a sample's (fio), seconds.
    pub interval_s: f64,
    /// SNIA: every round's value; fio: the last window's samples.
    pub values: Vec<f64>,
    /// Which round or sample `values[0]` is, counted from 1.
    pub first: u64,
    /// Rounds or samples measured in all.
    pub measured: u64,
    /// The last window judged (none before the first window was full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Whether the phase ended steady.
    pub attained: bool,
    /// The round or sample at which it was judged steady, counted from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_at: Option<u64>,
    /// SNIA: the phase's reported figures are the window's (seconds `from_s` to `to_s` of the
    /// measured time); fio: they are the whole phase's, as fio's are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures_from_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures_to_s: Option<f64>,
    /// Several nodes: this result is the aggregate's (each round's value the nodes' sum; for
    /// latency their mean), judged by the coordinator; here each node's own, judged on its
    /// rounds alone. The phase ended on every node when all of them and the aggregate were
    /// steady at the same round, or at the maximum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeSteadyState>,
}

/// One node's own steady state in a phase run on several nodes (`phases[].steady_state.nodes[]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeSteadyState {
    pub node: String,
    #[serde(flatten)]
    pub state: SteadyStateResult,
}

impl SteadyStateResult {
    /// The verdict in a few words: `steady at round 5 (range 0.4% ≤ 20%, excursion 0.1% ≤ 10%)`.
    pub fn verdict(&self) -> String {
        let what = if self.method == "snia" { "round" } else { "sample" };
        let Some(w) = &self.window else {
            return format!("not steady: {} {what}s measured, fewer than the window", self.measured);
        };
        let pct = |v: f64| if w.mean > 0.0 { 100.0 * v / w.mean } else { 0.0 };
        let figures = match (w.range_limit, w.excursion_limit, w.criterion, w.limit) {
            (Some(rl), Some(el), _, _) => format!(
                "range {:.2}% (limit {:.2}%), excursion {:.2}% (limit {:.2}%) of the mean {} {}",
                pct(w.range),
                pct(rl),
                pct(w.excursion),
                pct(el),
                short(w.mean),
                self.unit
            ),
            (_, _, Some(c), Some(l)) => format!("criterion {} (limit {l})", short(c)),
            _ => String::new(),
        };
        match (self.attained, self.steady_at) {
            (true, Some(at)) => format!("steady at {what} {at}: {figures}"),
            _ => format!("not steady after {} {what}s: {figures}", self.measured),
        }
    }
}

/// `--ramp auto`'s finding (`phases[].warmup`): where the warm-up ended (the first second of
/// the first steady window of per-second figures, `iolab_spec::steady::AUTO_RAMP`) and what
/// was dropped before it; or that no window was steady, when nothing is dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Warmup {
    /// A steady window was found: the seconds before it are dropped.
    pub found: bool,
    /// Seconds dropped from the phase's start (0 when none was found).
    pub dropped_s: f64,
    /// Operations and bytes of the dropped seconds (every class), not in the phase's figures.
    pub dropped_ops: u64,
    pub dropped_bytes: u64,
    /// The rule: a window of this many one-second values, range and excursion limits, % of the
    /// window's mean.
    pub window_s: u32,
    pub range_pct: f64,
    pub excursion_pct: f64,
    /// The first steady window (in seconds from the phase's start, counted from 1), or the last
    /// judged when none was steady.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

impl Warmup {
    /// In words: `warm-up: 42 s dropped (12,345 operations) before the first steady 10 s ...`.
    pub fn said(&self) -> String {
        let pct = |v: f64, w: &Window| if w.mean > 0.0 { 100.0 * v / w.mean } else { 0.0 };
        let win = self.window.as_ref().map_or(String::new(), |w| {
            format!(
                ": range {:.1}% (limit {}%), excursion {:.1}% (limit {}%) of {} operations/s",
                pct(w.range, w),
                self.range_pct,
                pct(w.excursion, w),
                self.excursion_pct,
                short(w.mean)
            )
        });
        if self.found {
            format!(
                "warm-up (--ramp auto): {} s dropped ({} operations, {} bytes) before seconds {}-{}, the first steady {} s{win}",
                self.dropped_s,
                self.dropped_ops,
                self.dropped_bytes,
                self.window.as_ref().map_or(0, |w| w.first),
                self.window.as_ref().map_or(0, |w| w.last),
                self.window_s
            )
        } else {
            format!(
                "warm-up (--ramp auto): no {} s window was steady, nothing dropped; the figures are the whole phase's{win}",
                self.window_s
            )
        }
    }
}

/// A preconditioning (SNIA PTS's purge and workload-independent fill) as a run keeps it:
/// `iolab precondition`'s outcome, when it ended, and for a run that followed a stored one,
/// which (`run_uid`, `run_id` in the database it was read from) and what came between.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Precondition {
    pub target: String,
    /// `block device` or `file`.
    pub kind: String,
    pub capacity_bytes: u64,
    /// `discard`, `secure discard`, `punch hole` or `none`, and why, in words.
    pub purge: String,
    pub purge_said: String,
    pub purge_s: f64,
    pub passes: u32,
    pub bs: u64,
    pub direct: bool,
    pub bytes_written: u64,
    pub fill_s: f64,
    /// Stopped before the fill's end: the target is not preconditioned.
    pub interrupted: bool,
    /// When the fill ended, Unix seconds.
    pub ended_unix_s: f64,
    /// The stored `iolab precondition` run this run followed (absent: the run's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// Runs recorded on this host between that run and this one (on any target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_since: Option<u64>,
}

impl Precondition {
    /// In words: `preconditioned by run 12 (discard, 2 x 64.0 MiB in 128 KiB writes), 3 min
    /// before, 1 run recorded since`.
    pub fn said(&self, run_started_unix_s: f64) -> String {
        let what = format!(
            "{}{}, {} pass(es) of {} bytes in {} KiB sequential writes{}",
            self.purge,
            if self.purge == "none" { " purged" } else { "" },
            self.passes,
            self.capacity_bytes,
            self.bs / 1024,
            if self.interrupted { ", INTERRUPTED before its end" } else { "" }
        );
        match self.run_id {
            None => format!("preconditioning (the purge and fill before any measurement): {what}"),
            Some(id) => {
                let ago = (run_started_unix_s - self.ended_unix_s).max(0.0);
                let ago = if ago >= 120.0 { format!("{:.0} min", ago / 60.0) } else { format!("{ago:.0} s") };
                let since = match self.runs_since.unwrap_or(0) {
                    0 => "no run recorded on this host since".to_string(),
                    1 => "1 run recorded on this host since".to_string(),
                    n => format!("{n} runs recorded on this host since"),
                };
                format!("preconditioned by run {id} ({what}), {ago} before; {since}")
            }
        }
    }
}

/// A figure with the digits that matter: whole above 100, three decimals below.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::steady::Tracked;

    fn pts() -> Snia {
        Snia::PTS
    }

    #[test]
    fn the_line_is_the_least_squares_one() {
        let f = fit(&[1.0, 3.0, 5.0, 7.0, 9.0]);
        assert!((f.slope - 2.0).abs() < 1e-12 && (f.intercept - 1.0).abs() < 1e-12);
        let f = fit(&[10.0, 12.0, 11.0, 13.0, 12.0]);
        // x̄ = 2, ȳ = 11.6; Sxy = (-2)(-1.6)+(-1)(0.4)+0+(1)(1.4)+(2)(0.4) = 5; Sxx = 10.
        assert!((f.slope - 0.5).abs() < 1e-12, "{f:?}");
        assert!((f.intercept - 10.6).abs() < 1e-12, "{f:?}");
    }

    /// A window computed by hand: mean 100; range 20 is exactly PTS's 20% (inside, ≤), 20.2
    /// is outside; the excursion limit 10 is met by a line rising 2.5 a round (4 × 2.5 = 10)
    /// and missed at 2.55.
    #[test]
    fn a_window_just_inside_and_just_outside_the_limits() {
        let inside = [90.0, 100.0, 110.0, 100.0, 100.0];
        let w = judge_snia(&inside, 1, &pts());
        assert_eq!((w.mean, w.range), (100.0, 20.0));
        // Sxy = (-2)(-10) + 0 + 0·10 + (1)(0) + 0 = 20; slope 2, excursion 8 ≤ 10.
        assert!((w.slope - 2.0).abs() < 1e-12 && (w.excursion - 8.0).abs() < 1e-12, "{w:?}");
        assert!(w.steady, "range exactly 20% and excursion 8% are inside: {w:?}");
        let outside = [89.9, 100.0, 110.1, 100.0, 100.0];
        let w = judge_snia(&outside, 1, &pts());
        assert!((w.range - 20.2).abs() < 1e-9 && (w.mean - 100.0).abs() < 1e-9);
        assert!(!w.steady, "range 20.2% is outside 20%: {w:?}");

        // Excursion: 95, 97.5, 100, 102.5, 105 — a line of slope 2.5: excursion 10 = 10% of 100.
        let w = judge_snia(&[95.0, 97.5, 100.0, 102.5, 105.0], 3, &pts());
        assert!((w.excursion - 10.0).abs() < 1e-9 && w.range <= 20.0, "{w:?}");
        assert!(w.steady, "excursion exactly 10% is inside: {w:?}");
        assert_eq!((w.first, w.last), (3, 7));
        let w = judge_snia(&[94.9, 97.45, 100.0, 102.55, 105.1], 3, &pts());
        assert!((w.excursion - 10.2).abs() < 1e-9, "{w:?}");
        assert!(!w.steady, "excursion 10.2% is outside 10%: {w:?}");
        // Nothing done is not steady.
        assert!(!judge_snia(&[0.0; 5], 1, &pts()).steady);
        let _ = Tracked::Iops;
    }

    #[test]
    fn fio_criteria_are_strict_and_in_percent_of_the_mean() {
        let slope: FioCriterion = "iops_slope:2%".parse().unwrap();
        // Slope 2 per sample on a mean of 100: 2%, not below 2%.
        let w = judge_fio(&[96.0, 98.0, 100.0, 102.0, 104.0], 1, &slope);
        assert!((w.criterion.unwrap() - 2.0).abs() < 1e-12);
        assert!(!w.steady);
        let w = judge_fio(&[96.1, 98.05, 100.0, 101.95, 103.9], 1, &slope);
        assert!(w.steady, "{w:?}");
        // A falling line counts by its size.
        assert!(!judge_fio(&[104.0, 102.0, 100.0, 98.0, 96.0], 1, &slope).steady);
        // Deviation: the largest distance from the mean, absolute.
        let dev: FioCriterion = "iops:5".parse().unwrap();
        let w = judge_fio(&[100.0, 104.0, 96.0, 100.0], 1, &dev);
        assert_eq!(w.max_deviation, 4.0);
        assert!(w.steady);
        assert!(!judge_fio(&[100.0, 105.0, 95.0, 100.0], 1, &dev).steady);
    }
}
