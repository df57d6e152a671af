//! SNIA PTS's IOPS, throughput and latency tests as scenarios (issue 29): `pts-iops`,
//! `pts-throughput`, `pts-latency`. A round is one pass over the test's matrix (read/write
//! mixes by block sizes, one step a cell of `--runtime`, default PTS's minute); rounds repeat
//! until PTS's rule finds the tracked cell steady over its window (5 rounds, range ≤ 20% and
//! the fitted line's excursion ≤ 10% of the window's mean, at most 25 rounds), after the purge
//! and the workload-independent preconditioning (the CLI's, on this machine). The report is
//! PTS's: the convergence plot (the tracked mix at every block size, round by round), the
//! measurement window's plot, the measurement tables (each cell over the window's rounds) and
//! the test conditions. Everything here is computed from a run's phases and plan, so a stored
//! run draws the same report as the fresh one.

use super::Scenario;
use crate::charts::{self, Series};
use crate::markup::{escape, figure};
use iolab_model::steady::{judge_snia, SteadyStateResult};
use iolab_model::{Limit, PhaseResult, RunResult, Verdict};
use iolab_spec::scenario::resolve_one;
use iolab_spec::steady::{Snia, Tracked};
use iolab_spec::{BlockSizes, BuiltinOptions, Bytes, EngineKind, Job, JobPatch, Part, Rw, SpecError, Step, StepPlan};
use iolab_store::StoredRun;
use std::fmt::Write;
use std::time::Duration;

/// Which PTS test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Iops,
    Throughput,
    Latency,
}

/// A PTS test as a scenario.
pub struct Pts(pub Test);

/// `pts-iops`: random mixes 100/0 .. 0/100 by 1024k .. 0.5k, steady on 4k 0/100 IOPS.
pub static IOPS: Pts = Pts(Test::Iops);
/// `pts-throughput`: sequential 128k and 1024k reads and writes, steady on 1024k write MB/s.
pub static THROUGHPUT: Pts = Pts(Test::Throughput);
/// `pts-latency`: random 8k 4k 0.5k at mixes 100/0 65/35 0/100, one thread at QD1, steady on
/// 4k 0/100 mean latency.
pub static LATENCY: Pts = Pts(Test::Latency);

const K: u64 = 1024;

/// A test's matrix and settings as PTS gives them (iolab's defaults where PTS leaves the
/// choice to the operator: the IOPS and throughput tests' threads and depth).
struct Spec {
    name: &'static str,
    title: &'static str,
    /// Read percentages, in PTS's order.
    mixes: &'static [u8],
    /// Block sizes, in PTS's order.
    bs: &'static [u64],
    sequential: bool,
    threads: u32,
    iodepth: u32,
    engine: EngineKind,
    /// The tracked cell (read %, block size) and its figure.
    tracked: (u8, u64),
    figure: Tracked,
}

impl Test {
    fn spec(self) -> Spec {
        match self {
            Test::Iops => Spec {
                name: "pts-iops",
                title: "IOPS",
                mixes: &[100, 95, 65, 50, 35, 5, 0],
                bs: &[1024 * K, 128 * K, 64 * K, 32 * K, 16 * K, 8 * K, 4 * K, 512],
                sequential: false,
                threads: 2,
                iodepth: 16,
                engine: EngineKind::Libaio,
                tracked: (0, 4 * K),
                figure: Tracked::Iops,
            },
            Test::Throughput => Spec {
                name: "pts-throughput",
                title: "Throughput",
                mixes: &[100, 0],
                bs: &[1024 * K, 128 * K],
                sequential: true,
                threads: 1,
                iodepth: 32,
                engine: EngineKind::Libaio,
                tracked: (0, 1024 * K),
                figure: Tracked::Bw,
            },
            Test::Latency => Spec {
                name: "pts-latency",
                title: "Latency",
                mixes: &[100, 65, 0],
                bs: &[8 * K, 4 * K, 512],
                sequential: false,
                threads: 1,
                iodepth: 1,
                engine: EngineKind::Psync,
                tracked: (0, 4 * K),
                figure: Tracked::Lat,
            },
        }
    }
}

/// A cell's mix as PTS writes it: `65/35` (reads/writes).
pub fn mix_word(read_pct: u8) -> String {
    format!("{read_pct}/{}", 100 - read_pct.min(100))
}

/// A block size as PTS writes it: `1024k`, `4k`, `0.5k`.
pub fn bs_word(bytes: u64) -> String {
    if bytes.is_multiple_of(K) {
        format!("{}k", bytes / K)
    } else {
        let s = format!("{:.2}", bytes as f64 / K as f64);
        format!("{}k", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// The name of a cell's step: `65/35 4k`.
pub fn cell_name(read_pct: u8, bs: u64) -> String {
    format!("{} {}", mix_word(read_pct), bs_word(bs))
}

/// The phase name of a cell in round `round`: `round 3: 65/35 4k`.
pub fn phase_name(round: u32, cell: &str) -> String {
    format!("round {round}: {cell}")
}

/// The round a phase belongs to, from its name.
fn round_of(name: &str) -> Option<u32> {
    name.strip_prefix("round ")?.split_once(':')?.0.parse().ok()
}

impl Pts {
    /// SNIA's rule for this test, with the job flags' window, limits and maximum rounds.
    pub fn rule(&self, job: &JobPatch) -> Snia {
        Snia {
            round: job.runtime.unwrap_or(Duration::from_secs(60)),
            window: job.ss_window.unwrap_or(Snia::PTS.window),
            max_rounds: job.ss_max_rounds.unwrap_or(Snia::PTS.max_rounds),
            range_pct: job.ss_range.unwrap_or(Snia::PTS.range_pct),
            excursion_pct: job.ss_excursion.unwrap_or(Snia::PTS.excursion_pct),
            tracked: self.0.spec().figure,
        }
    }

    fn cells(&self, opts: &BuiltinOptions) -> Result<Vec<(u8, u64)>, SpecError> {
        let sp = self.0.spec();
        let mixes = opts.pts_mixes.clone().unwrap_or_else(|| sp.mixes.to_vec());
        let bs: Vec<u64> = opts.pts_bs.as_ref().map_or_else(|| sp.bs.to_vec(), |b| b.iter().map(|b| b.0).collect());
        if let Some(m) = mixes.iter().find(|m| **m > 100) {
            return Err(SpecError::plain(format!("--pts-mixes: {m} is no read percentage; give 0 to 100")));
        }
        if let Some(b) = bs.iter().find(|b| **b == 0 || **b % 512 != 0) {
            return Err(SpecError::plain(format!(
                "--pts-bs: {b} bytes is no block size; give multiples of 512 (0.5k)"
            )));
        }
        let cells: Vec<(u8, u64)> = mixes.iter().flat_map(|m| bs.iter().map(move |b| (*m, *b))).collect();
        if !cells.contains(&sp.tracked) {
            return Err(SpecError::plain(format!(
                "{}'s steady state is judged on {}: keep mix {} in --pts-mixes and {} in --pts-bs",
                sp.name,
                cell_name(sp.tracked.0, sp.tracked.1),
                sp.tracked.0,
                bs_word(sp.tracked.1)
            )));
        }
        Ok(cells)
    }

    /// One cell's job on `target`.
    fn cell_job(&self, (mix, bs): (u8, u64), job: &JobPatch, target: &std::path::Path) -> Result<Job, SpecError> {
        let sp = self.0.spec();
        let rw = match (sp.sequential, mix) {
            (false, 100) => Rw::RandRead,
            (false, 0) => Rw::RandWrite,
            (false, _) => Rw::RandRw,
            (true, 100) => Rw::Read,
            (true, 0) => Rw::Write,
            (true, _) => Rw::ReadWrite,
        };
        let base = JobPatch {
            rw: Some(rw),
            mix: Some(mix),
            bs: Some(BlockSizes::single(Bytes(bs))),
            direct: Some(true),
            threads: Some(sp.threads),
            iodepth: Some(sp.iodepth),
            engine: Some(sp.engine),
            runtime: Some(Duration::from_secs(60)),
            ..Default::default()
        };
        // The job flags win, but for what the matrix and the rounds set.
        let over = JobPatch {
            rw: None,
            mix: None,
            bs: None,
            steady_state: None,
            round: None,
            ss_window: None,
            ss_max_rounds: None,
            ss_range: None,
            ss_excursion: None,
            ss_track: None,
            ..job.clone()
        };
        resolve_one(&base.layered(&over), "cell", target.to_path_buf())
    }
}

impl Scenario for Pts {
    fn name(&self) -> &str {
        self.0.spec().name
    }
    fn about(&self) -> &str {
        match self.0 {
            Test::Iops => "SNIA PTS's IOPS test on this machine: purge, precondition, rounds of the mix x block size matrix until 4k 0/100 IOPS is steady",
            Test::Throughput => "SNIA PTS's throughput test on this machine: sequential 128k and 1024k reads and writes until 1024k writes are steady",
            Test::Latency => "SNIA PTS's latency test on this machine: 8k 4k 0.5k at QD1 until 4k 0/100 mean latency is steady",
        }
    }
    /// One round: a step per cell, on the first node (this machine).
    fn steps(&self, nodes: &[String], job: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
        let sp = self.0.spec();
        for (set, flag) in [
            (job.rw.is_some(), "--rw"),
            (job.mix.is_some(), "--mix"),
            (job.bs.is_some(), "--bs"),
            (job.steady_state.is_some(), "--steady-state"),
            (job.round.is_some(), "--round"),
        ] {
            if set {
                return Err(SpecError::plain(format!(
                    "{} sets each cell's pattern and its rounds: drop {flag} (the matrix: --pts-mixes, --pts-bs; a cell's time: --runtime; the rule: --ss-window, --ss-range, --ss-excursion, --ss-max-rounds)",
                    sp.name
                )));
            }
        }
        let node = nodes.first().cloned().unwrap_or_default();
        let target = job.target.clone().ok_or_else(|| {
            SpecError::plain(format!("{} needs --target: the device (with --device) or the file under test", sp.name))
        })?;
        let rule = self.rule(job);
        if rule.window < 2 || rule.max_rounds < rule.window {
            return Err(SpecError::plain(format!(
                "--ss-window {} and --ss-max-rounds {}: the window needs 2 rounds or more and at most the maximum",
                rule.window, rule.max_rounds
            )));
        }
        let steps = self
            .cells(opts)?
            .into_iter()
            .map(|cell| {
                let mut j = self.cell_job(cell, job, &target)?;
                j.name = cell_name(cell.0, cell.1).replace(' ', "_").replace('/', "-");
                Ok(Step {
                    name: cell_name(cell.0, cell.1),
                    parts: vec![Part { node: node.clone(), jobs: vec![j], mkdirs: Vec::new() }],
                })
            })
            .collect::<Result<Vec<_>, SpecError>>()?;
        Ok(StepPlan { name: sp.name.into(), steps })
    }
    fn verdict(&self, run: &RunResult, _link: Option<f64>) -> Option<Verdict> {
        let ss = self.steady(run)?;
        let sp = self.0.spec();
        let mut figures = std::collections::BTreeMap::new();
        figures.insert("rounds".to_string(), ss.measured as f64);
        figures.insert("steady".to_string(), if ss.attained { 1.0 } else { 0.0 });
        if let Some(at) = ss.steady_at {
            figures.insert("steady_at".to_string(), at as f64);
        }
        if let Some(w) = &ss.window {
            figures.insert("window_mean".to_string(), w.mean);
            figures.insert("window_range".to_string(), w.range);
            figures.insert("window_excursion".to_string(), w.excursion);
        }
        let reasons = vec![format!("{} {}: {}", cell_name(sp.tracked.0, sp.tracked.1), ss.tracked, ss.verdict())];
        Some(Verdict { scenario: sp.name.into(), limit: Limit::None, reasons, figures })
    }
    fn chart(&self, h: &mut String, run: &StoredRun) {
        self.html(h, &run.result, Some(run));
    }
    fn rounds(&self, job: &JobPatch) -> Option<Snia> {
        Some(self.rule(job))
    }
    fn precondition(&self) -> bool {
        true
    }
    fn steady(&self, run: &RunResult) -> Option<SteadyStateResult> {
        steady(self, run)
    }
    fn text(&self, run: &RunResult) -> Option<String> {
        Some(self.text_of(run))
    }
}

/// A cell of a run: its round, read %, block size and phase.
struct CellRun<'a> {
    round: u32,
    mix: u8,
    bs: u64,
    phase: &'a PhaseResult,
}

/// Every cell of the run, by its phase's name (the round) and its job in the plan (the cell).
fn cells_of(run: &RunResult) -> Vec<CellRun<'_>> {
    run.phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let round = round_of(&p.name)?;
            let job = run.plan.phases.get(i)?.jobs.first()?;
            let b = job.workload.block()?;
            let mix = match b.rw {
                Rw::Read | Rw::RandRead => 100,
                Rw::Write | Rw::RandWrite => 0,
                _ => b.mix,
            };
            Some(CellRun { round, mix, bs: b.bs.max().0, phase: p })
        })
        .collect()
}

/// A cell's figure: IOPS, bytes per second, or mean latency (ns) of reads and writes.
fn value(t: Tracked, p: &PhaseResult) -> f64 {
    let (r, w) = (p.total.read(), p.total.write());
    let secs = if p.elapsed_s > 0.0 { p.elapsed_s } else { 1.0 };
    match t {
        Tracked::Iops => (r.ops + w.ops) as f64 / secs,
        Tracked::Bw => (r.bytes + w.bytes) as f64 / secs,
        Tracked::Lat => {
            let ops = (r.ops + w.ops) as f64;
            if ops > 0.0 {
                (r.lat_ns.mean as f64 * r.ops as f64 + w.lat_ns.mean as f64 * w.ops as f64) / ops
            } else {
                0.0
            }
        }
    }
}

/// The tracked cell's value in every complete round, in order.
fn tracked_values(pts: &Pts, run: &RunResult) -> Vec<f64> {
    let sp = pts.0.spec();
    let cells = cells_of(run);
    let last = cells.iter().map(|c| c.round).max().unwrap_or(0);
    (1..=last)
        .filter_map(|r| {
            cells
                .iter()
                .find(|c| c.round == r && (c.mix, c.bs) == sp.tracked && !c.phase.interrupted)
                .map(|c| value(sp.figure, c.phase))
        })
        .collect()
}

/// PTS's steady state over the rounds so far: each window judged as its round ended, the
/// first steady one kept (the run ends there), else the last.
pub fn steady(pts: &Pts, run: &RunResult) -> Option<SteadyStateResult> {
    let values = tracked_values(pts, run);
    if values.is_empty() {
        return None;
    }
    let snia = rule_of(pts, run);
    let n = snia.window as usize;
    let mut window = None;
    let mut steady_at = None;
    for end in n..=values.len() {
        let w = judge_snia(&values[end - n..end], (end - n + 1) as u64, &snia);
        let ok = w.steady;
        window = Some(w);
        if ok {
            steady_at = Some(end as u64);
            break;
        }
    }
    let measured = steady_at.unwrap_or(values.len() as u64);
    let round_s: f64 = {
        let cells = cells_of(run);
        cells.iter().filter(|c| c.round == 1).map(|c| c.phase.elapsed_s).sum()
    };
    let sp = pts.0.spec();
    Some(SteadyStateResult {
        method: "snia".into(),
        criterion: format!(
            "SNIA PTS {} test, {} {} tracked, window {}, range {}%, excursion {}%, at most {} rounds",
            sp.title,
            cell_name(sp.tracked.0, sp.tracked.1),
            snia.tracked.unit(),
            snia.window,
            snia.range_pct,
            snia.excursion_pct,
            snia.max_rounds
        ),
        tracked: snia.tracked.word().into(),
        unit: snia.tracked.unit().into(),
        interval_s: (round_s * 1000.0).round() / 1000.0,
        values: values[..measured as usize].to_vec(),
        first: 1,
        measured,
        window,
        attained: steady_at.is_some(),
        steady_at,
        figures_from_s: None,
        figures_to_s: None,
        nodes: Vec::new(),
    })
}

/// The rule the run was judged by: PTS's, with the window, limits and maximum its first cell's
/// job recorded (the cells carry the runtime; the rule's options are kept in the verdict).
fn rule_of(pts: &Pts, run: &RunResult) -> Snia {
    let mut s = Snia { tracked: pts.0.spec().figure, ..Snia::PTS };
    if let Some(v) = &run.verdict {
        let get = |k: &str| v.figures.get(k).copied();
        if let Some(w) = get("rule.window") {
            s.window = w as u32;
        }
        if let Some(m) = get("rule.max_rounds") {
            s.max_rounds = m as u32;
        }
        if let Some(r) = get("rule.range_pct") {
            s.range_pct = r;
        }
        if let Some(e) = get("rule.excursion_pct") {
            s.excursion_pct = e;
        }
    }
    s
}

/// The rule's figures, kept in the verdict so a stored run is judged again by the same rule.
pub fn rule_figures(s: &Snia) -> Vec<(String, f64)> {
    vec![
        ("rule.window".into(), s.window as f64),
        ("rule.max_rounds".into(), s.max_rounds as f64),
        ("rule.range_pct".into(), s.range_pct),
        ("rule.excursion_pct".into(), s.excursion_pct),
    ]
}

/// The measurement table: per block size (rows) and mix (columns), the cell's figure averaged
/// over the window's rounds, or its worst (greatest) there for a maximum (every round measured
/// when no window was judged).
pub struct Table {
    pub mixes: Vec<u8>,
    pub bs: Vec<u64>,
    /// `cells[bs][mix]`.
    pub cells: Vec<Vec<Option<f64>>>,
    pub rounds: (u32, u32),
}

fn table(pts: &Pts, run: &RunResult, figure: &dyn Fn(&PhaseResult) -> f64, worst: bool) -> Option<Table> {
    let ss = steady(pts, run)?;
    let cells = cells_of(run);
    let (first, last) = match &ss.window {
        Some(w) => (w.first as u32, w.last as u32),
        None => (1, ss.measured as u32),
    };
    let mut mixes: Vec<u8> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for c in &cells {
        if !mixes.contains(&c.mix) {
            mixes.push(c.mix);
        }
        if !sizes.contains(&c.bs) {
            sizes.push(c.bs);
        }
    }
    let grid = sizes
        .iter()
        .map(|size| {
            mixes
                .iter()
                .map(|m| {
                    let v: Vec<f64> = cells
                        .iter()
                        .filter(|c| c.bs == *size && c.mix == *m && (first..=last).contains(&c.round))
                        .map(|c| figure(c.phase))
                        .collect();
                    (!v.is_empty()).then(|| {
                        if worst {
                            v.iter().copied().fold(f64::MIN, f64::max)
                        } else {
                            v.iter().sum::<f64>() / v.len() as f64
                        }
                    })
                })
                .collect()
        })
        .collect();
    Some(Table { mixes, bs: sizes, cells: grid, rounds: (first, last) })
}

/// The tables PTS tabulates for a test: (title, unit, figure of a cell).
/// A measurement table: its title, unit, a cell's figure in that unit, and whether the table
/// gives its worst over the window's rounds (a maximum) rather than their mean.
type TableOf = (&'static str, &'static str, fn(&PhaseResult) -> f64, bool);

fn tables(t: Test) -> Vec<TableOf> {
    match t {
        Test::Iops => vec![("IOPS", "IOPS", |p| value(Tracked::Iops, p), false)],
        Test::Throughput => vec![("Throughput", "MB/s", |p| value(Tracked::Bw, p) / 1e6, false)],
        Test::Latency => vec![
            ("Mean latency", "ms", |p| value(Tracked::Lat, p) / 1e6, false),
            ("Maximum latency", "ms", max_latency, true),
        ],
    }
}

/// A table's title with its unit where they differ: `Throughput (MB/s)`, `IOPS`.
fn titled(title: &str, unit: &str) -> String {
    if title == unit {
        title.to_string()
    } else {
        format!("{title} ({unit})")
    }
}

/// A cell's greatest latency of reads and writes, ms.
fn max_latency(p: &PhaseResult) -> f64 {
    p.total.read().lat_ns.max.max(p.total.write().lat_ns.max) as f64 / 1e6
}

fn cell_text(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

impl Pts {
    /// The test conditions: the device, the purge and preconditioning (the verdict's lines the
    /// CLI added), the rounds.
    fn conditions(&self, run: &RunResult, stored: Option<&StoredRun>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(s) = stored {
            let h = &s.host;
            let dev = [h.device.as_str(), h.device_model.as_str(), h.device_vendor.as_str()]
                .iter()
                .filter(|x| !x.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            out.push(format!(
                "host {} ({}, {} CPUs), device {}{}",
                h.hostname,
                h.kernel,
                h.cpu_count,
                if dev.is_empty() { "unknown" } else { &dev },
                match h.rotational {
                    Some(true) => ", rotational",
                    Some(false) => ", solid state",
                    None => "",
                }
            ));
        }
        if let Some(j) = run.plan.phases.first().and_then(|p| p.jobs.first()) {
            out.push(format!(
                "target {}; each cell {} s, {} thread(s) x queue depth {}, engine {}, {}",
                j.target.display(),
                j.runtime.map_or("?".into(), |d| crate::fmt::num(d.as_secs_f64())),
                j.threads,
                j.iodepth,
                j.engine.as_str(),
                if j.direct { "O_DIRECT" } else { "buffered" }
            ));
        }
        if let Some(v) = &run.verdict {
            out.extend(v.reasons.iter().skip(1).cloned());
        }
        out
    }

    /// The test in words for the terminal: the steady state, the tables, the conditions.
    fn text_of(&self, run: &RunResult) -> String {
        let sp = self.0.spec();
        let mut s = format!(
            "SNIA PTS {} test ({})
",
            sp.title, sp.name
        );
        let Some(ss) = self.steady(run) else {
            s.push_str(
                "  no complete round
",
            );
            return s;
        };
        for l in crate::summary::steady_lines(&ss) {
            let _ = writeln!(s, "  {l}");
        }
        for (title, unit, f, worst) in tables(self.0) {
            let Some(t) = table(self, run, &f, worst) else { continue };
            let what = if worst { "worst" } else { "mean" };
            let _ = writeln!(
                s,
                "  {}, {what} of rounds {}-{}, block size by read/write mix:",
                titled(title, unit),
                t.rounds.0,
                t.rounds.1
            );
            let mut head = format!("  {:>8}", "");
            for m in &t.mixes {
                let _ = write!(head, " {:>9}", mix_word(*m));
            }
            let _ = writeln!(s, "{head}");
            for (b, row) in t.bs.iter().zip(&t.cells) {
                let mut line = format!("  {:>8}", bs_word(*b));
                for v in row {
                    let _ = write!(line, " {:>9}", cell_text(*v));
                }
                let _ = writeln!(s, "{line}");
            }
        }
        for c in self.conditions(run, None) {
            let _ = writeln!(s, "  {c}");
        }
        s
    }

    /// PTS's report in HTML: the convergence and window plots, the tables, the conditions.
    fn html(&self, h: &mut String, run: &RunResult, stored: Option<&StoredRun>) {
        let sp = self.0.spec();
        let id = stored.map_or(0, |s| s.id);
        let _ = writeln!(h, "<div class=\"pts\" data-pts=\"{}\">\n<h4>SNIA PTS {} test</h4>", sp.name, sp.title);
        let Some(ss) = self.steady(run) else {
            h.push_str("<p class=\"note\">No complete round.</p></div>\n");
            return;
        };
        // MB/s and ms on the charts: B/s and ns are both scaled by 1e-6.
        let scale = if ss.unit == "B/s" || ss.unit == "ns" { 1e-6 } else { 1.0 };
        let unit = match ss.unit.as_str() {
            "B/s" => "MB/s",
            "ns" => "ms",
            u => u,
        };
        // Convergence: the tracked mix at every block size, round by round.
        let cells = cells_of(run);
        let mut series = Vec::new();
        let mut sizes: Vec<u64> = Vec::new();
        for c in &cells {
            if !sizes.contains(&c.bs) {
                sizes.push(c.bs);
            }
        }
        for (k, b) in sizes.iter().enumerate() {
            let points: Vec<(f64, f64)> = cells
                .iter()
                .filter(|c| c.bs == *b && c.mix == sp.tracked.0)
                .map(|c| (c.round as f64, value(sp.figure, c.phase) * scale))
                .collect();
            if !points.is_empty() {
                let (color, dash) = charts::run_style(k);
                series.push(Series {
                    label: format!("{} {}", mix_word(sp.tracked.0), bs_word(*b)),
                    points,
                    color,
                    dash,
                });
            }
        }
        let svg = if charts::wants_log(&series) {
            charts::line_chart_log(&format!("{} steady-state convergence", sp.title), "round", unit, &series)
        } else {
            charts::line_chart(&format!("{} steady-state convergence", sp.title), "round", unit, &series, None)
        };
        figure(
            h,
            &format!("pts-convergence-{id}"),
            Some(svg),
            &escape(&format!(
                "Steady-state convergence: {} of mix {} at every block size, round by round.",
                titled(sp.title, unit),
                mix_word(sp.tracked.0)
            )),
            "",
        );
        // The measurement window: the tracked cell's rounds, the window, its limits and line.
        let scaled: Vec<(f64, f64)> = ss.values.iter().enumerate().map(|(i, v)| ((i + 1) as f64, v * scale)).collect();
        let w = ss.window.clone().map(|mut w| {
            for x in
                [&mut w.mean, &mut w.min, &mut w.max, &mut w.range, &mut w.slope, &mut w.intercept, &mut w.excursion]
            {
                *x *= scale;
            }
            w.range_limit = w.range_limit.map(|x| x * scale);
            w.excursion_limit = w.excursion_limit.map(|x| x * scale);
            w
        });
        let svg = charts::convergence_chart(
            &format!("Measurement window: {} {}", cell_name(sp.tracked.0, sp.tracked.1), unit),
            "round",
            unit,
            &scaled,
            w.as_ref(),
        );
        let lines: Vec<String> = crate::summary::steady_lines(&ss).iter().map(|l| escape(l)).collect();
        figure(h, &format!("pts-window-{id}"), Some(svg), &lines.join("<br>"), "");
        for (title, unit, f, worst) in tables(self.0) {
            let Some(t) = table(self, run, &f, worst) else { continue };
            let _ = write!(
                h,
                "<h4>{}, {} of rounds {} to {}</h4>\n<div class=\"wide\"><table class=\"pts-table\" data-pts-table=\"{}\">\n<tr><th>block size</th>",
                escape(&titled(title, unit)),
                if worst { "worst" } else { "mean" },
                t.rounds.0,
                t.rounds.1,
                escape(title)
            );
            for m in &t.mixes {
                let _ = write!(h, "<th>{}</th>", escape(&mix_word(*m)));
            }
            h.push_str("</tr>\n");
            for (b, row) in t.bs.iter().zip(&t.cells) {
                let _ = write!(h, "<tr><td>{}</td>", escape(&bs_word(*b)));
                for v in row {
                    let _ = write!(h, "<td class=\"n\">{}</td>", cell_text(*v));
                }
                h.push_str("</tr>\n");
            }
            h.push_str("</table></div>\n");
        }
        h.push_str("<h4>Test conditions</h4>\n<ul class=\"pts-conditions\">\n");
        for c in self.conditions(run, stored) {
            let _ = writeln!(h, "<li>{}</li>", escape(&c));
        }
        h.push_str("</ul></div>\n");
    }
}

/// A test's run of pts-iops over a 100/0 and a 0/100 4k cell.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use iolab_model::OpClass;

    /// A run of `rounds`, each a 100/0 and a 0/100 4k cell of one second: the writes' IOPS
    /// given per round, the reads at 1000.
    pub(crate) fn fixture(write_iops: &[u64]) -> RunResult {
        let mut phases = Vec::new();
        let mut plan = Vec::new();
        let cells = IOPS
            .steps(
                &["here".to_string()],
                &JobPatch { target: Some("f".into()), ..Default::default() },
                &BuiltinOptions {
                    pts_mixes: Some(vec![100, 0]),
                    pts_bs: Some(vec![Bytes::kib(4)]),
                    ..Default::default()
                },
            )
            .unwrap();
        for (r, w) in write_iops.iter().enumerate() {
            for st in &cells.steps {
                let name = phase_name(r as u32 + 1, &st.name);
                let mut p = PhaseResult::new(name.clone());
                p.elapsed_s = 1.0;
                let b = st.parts[0].jobs[0].workload.block().unwrap();
                let (class, ops) = if b.rw == Rw::RandRead { (OpClass::Read, 1000) } else { (OpClass::Write, *w) };
                p.total.get_mut(class).ops = ops;
                p.total.get_mut(class).bytes = ops * 4096;
                phases.push(p);
                plan.push(iolab_spec::Phase { name, jobs: st.parts[0].jobs.clone() });
            }
        }
        RunResult { phases, ..RunResult::begin(iolab_spec::Plan { phases: plan }) }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::fixture;
    use super::*;

    fn job(target: &str) -> JobPatch {
        JobPatch { target: Some(target.into()), ..Default::default() }
    }

    fn one() -> Vec<String> {
        vec!["here".into()]
    }

    #[test]
    fn the_iops_matrix_is_ptss_in_its_order_and_flags_set_what_pts_leaves_open() {
        let s = IOPS.steps(&one(), &job("/dev/x"), &BuiltinOptions::default()).unwrap();
        assert_eq!(s.steps.len(), 56);
        let names: Vec<&str> = s.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            &names[..9],
            [
                "100/0 1024k",
                "100/0 128k",
                "100/0 64k",
                "100/0 32k",
                "100/0 16k",
                "100/0 8k",
                "100/0 4k",
                "100/0 0.5k",
                "95/5 1024k"
            ]
        );
        assert_eq!(names[55], "0/100 0.5k");
        assert!(names.contains(&"65/35 4k") && names.contains(&"5/95 16k"));
        let cell = |n: &str| s.steps.iter().find(|s| s.name == n).unwrap().parts[0].jobs[0].clone();
        let j = cell("65/35 4k");
        let b = j.workload.block().unwrap();
        assert_eq!((b.rw, b.mix, b.bs.max()), (Rw::RandRw, 65, Bytes::kib(4)));
        assert_eq!((j.direct, j.threads, j.iodepth, j.engine), (true, 2, 16, EngineKind::Libaio));
        assert_eq!(j.runtime, Some(Duration::from_secs(60)), "PTS's minute a cell");
        assert_eq!(cell("0/100 0.5k").workload.block().unwrap().rw, Rw::RandWrite);
        assert_eq!(cell("100/0 1024k").workload.block().unwrap().rw, Rw::RandRead);
        assert_eq!(s.steps[0].parts[0].node, "here");

        // The thread count, depth and a cell's time are the operator's.
        let over =
            JobPatch { threads: Some(4), iodepth: Some(8), runtime: Some(Duration::from_secs(2)), ..job("/dev/x") };
        let s = IOPS.steps(&one(), &over, &BuiltinOptions::default()).unwrap();
        let j = &s.steps[3].parts[0].jobs[0];
        assert_eq!((j.threads, j.iodepth, j.runtime), (4, 8, Some(Duration::from_secs(2))));
        assert_eq!(IOPS.rule(&over).round, Duration::from_secs(2));
        assert_eq!(IOPS.rule(&over).max_rounds, 25);

        // A smaller matrix, which must keep the tracked cell.
        let small =
            BuiltinOptions { pts_mixes: Some(vec![0, 100]), pts_bs: Some(vec![Bytes::kib(4)]), ..Default::default() };
        let s = IOPS.steps(&one(), &job("f"), &small).unwrap();
        assert_eq!(s.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["0/100 4k", "100/0 4k"]);
        let without = BuiltinOptions { pts_bs: Some(vec![Bytes::kib(8)]), ..Default::default() };
        let e = IOPS.steps(&one(), &job("f"), &without).unwrap_err().to_string();
        assert!(e.contains("0/100 4k") && e.contains("--pts-bs"), "{e}");
        // What the matrix sets is refused as a flag; the target is needed.
        let e = IOPS
            .steps(
                &one(),
                &JobPatch { bs: Some(BlockSizes::single(Bytes::kib(8))), ..job("f") },
                &BuiltinOptions::default(),
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("--bs") && e.contains("--pts-bs"), "{e}");
        let e = IOPS.steps(&one(), &JobPatch::default(), &BuiltinOptions::default()).unwrap_err().to_string();
        assert!(e.contains("--target"), "{e}");
    }

    #[test]
    fn throughput_is_sequential_and_latency_one_thread_at_qd1() {
        let s = THROUGHPUT.steps(&one(), &job("f"), &BuiltinOptions::default()).unwrap();
        let cells: Vec<(String, Rw, u64)> = s
            .steps
            .iter()
            .map(|s| {
                let b = s.parts[0].jobs[0].workload.block().unwrap().clone();
                (s.name.clone(), b.rw, b.bs.max().0)
            })
            .collect();
        assert_eq!(
            cells,
            [
                ("100/0 1024k".to_string(), Rw::Read, 1024 * K),
                ("100/0 128k".to_string(), Rw::Read, 128 * K),
                ("0/100 1024k".to_string(), Rw::Write, 1024 * K),
                ("0/100 128k".to_string(), Rw::Write, 128 * K),
            ]
        );
        let s = LATENCY.steps(&one(), &job("f"), &BuiltinOptions::default()).unwrap();
        assert_eq!(s.steps.len(), 9);
        assert_eq!(s.steps[0].name, "100/0 8k");
        assert_eq!(s.steps[8].name, "0/100 0.5k");
        let j = &s.steps[4].parts[0].jobs[0];
        assert_eq!((j.threads, j.iodepth, j.engine), (1, 1, EngineKind::Psync));
        assert_eq!(LATENCY.rule(&JobPatch::default()).tracked, Tracked::Lat);
        assert_eq!(bs_word(512), "0.5k");
        assert_eq!(bs_word(1536), "1.5k");
    }

    fn run_of(write_iops: &[u64]) -> RunResult {
        fixture(write_iops)
    }

    #[test]
    fn the_tracked_cell_is_judged_by_ptss_rule_over_the_rounds() {
        // Falling, then flat: rounds 3..7 are the first window inside both limits.
        let r = run_of(&[3000, 2000, 1000, 1000, 1000, 1050, 1000, 990]);
        let ss = IOPS.steady(&r).unwrap();
        assert!(ss.attained, "{ss:?}");
        assert_eq!(ss.steady_at, Some(7));
        assert_eq!(ss.measured, 7);
        assert_eq!(ss.values, [3000.0, 2000.0, 1000.0, 1000.0, 1000.0, 1050.0, 1000.0]);
        let w = ss.window.clone().unwrap();
        assert_eq!((w.first, w.last), (3, 7));
        assert!((w.mean - 1010.0).abs() < 1e-9);
        // The table is the window's rounds' mean.
        let t = table(&IOPS, &r, &|p| value(Tracked::Iops, p), false).unwrap();
        assert_eq!(t.rounds, (3, 7));
        assert_eq!((t.mixes.clone(), t.bs.clone()), (vec![100, 0], vec![4 * K]));
        assert_eq!(t.cells[0][0], Some(1000.0));
        assert!((t.cells[0][1].unwrap() - 1010.0).abs() < 1e-9);
        // A maximum's table takes the worst round of the window.
        let worst = table(&IOPS, &r, &|p| value(Tracked::Iops, p), true).unwrap();
        assert_eq!((worst.cells[0][0], worst.cells[0][1]), (Some(1000.0), Some(1050.0)));
        let v = IOPS.verdict(&r, None).unwrap();
        assert_eq!(v.figures["steady_at"], 7.0);
        assert_eq!(v.figures["rounds"], 7.0);
        let text = IOPS.text(&r).unwrap();
        assert!(text.contains("steady at round 7") && text.contains("mean of rounds 3-7"), "{text}");

        // Never inside: a rate that keeps falling by 10% a round.
        let falling: Vec<u64> = (0..8).map(|i| (10000.0 * 0.9f64.powi(i)) as u64).collect();
        let ss = IOPS.steady(&run_of(&falling)).unwrap();
        assert!(!ss.attained && ss.steady_at.is_none());
        assert_eq!(ss.measured, 8);
        assert_eq!(ss.window.unwrap().first, 4, "the last window judged");

        // A window of 3 kept in the verdict judges a stored run by the same rule.
        let mut r = run_of(&[3000, 2000, 1000, 1000, 1000]);
        r.verdict = Some(Verdict {
            scenario: "pts-iops".into(),
            limit: Limit::None,
            reasons: Vec::new(),
            figures: rule_figures(&Snia { window: 3, ..Snia::PTS }).into_iter().collect(),
        });
        assert_eq!(IOPS.steady(&r).unwrap().steady_at, Some(5));
        assert!(IOPS.steady(&run_of(&[])).is_none());
    }

    #[test]
    fn the_report_has_ptss_plots_tables_and_conditions() {
        let mut r = run_of(&[1000, 1000, 1000, 1000, 1000]);
        let mut v = IOPS.verdict(&r, None).unwrap();
        v.reasons.push("purge: discard (discard of all 67108864 bytes)".into());
        r.verdict = Some(v);
        let mut h = String::new();
        IOPS.html(&mut h, &r, None);
        for want in [
            "data-chart=\"pts-convergence-0\"",
            "data-chart=\"pts-window-0\"",
            "steady at round 5",
            "data-pts-table=\"IOPS\"",
            "<th>100/0</th><th>0/100</th>",
            "<td>4k</td><td class=\"n\">1000</td><td class=\"n\">1000</td>",
            "<li>purge: discard (discard of all 67108864 bytes)</li>",
            "each cell",
        ] {
            assert!(h.contains(want), "{want} in {h}");
        }
    }
}
