//! The human summary of a run: per phase, a dd-style line per direction and a table of
//! jobs with, per operation class, throughput, IOPS and latency percentiles.

use crate::fmt::{count, fmt_binary, fmt_decimal, ms, num, rate, secs};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use iolab_model::{ClassTotals, PhaseResult, RunResult, Status, Totals};
use std::fmt::Write;

pub fn render(r: &RunResult) -> String {
    let mut s = String::new();
    if let Some(p) = &r.precondition {
        let _ = writeln!(s, "{}", p.said(r.started_unix_s));
    }
    for p in &r.phases {
        s.push_str(&phase(p));
        let jobs = r.plan.phases.iter().find(|ph| ph.name == p.name).map(|ph| ph.jobs.as_slice()).unwrap_or(&[]);
        for f in crate::system::fidelity(p, jobs) {
            let _ = writeln!(s, "  - {}", f.said());
        }
        for line in crate::system::limit_lines(p) {
            let _ = writeln!(s, "  {line}");
        }
        if let Some(ss) = &p.steady_state {
            for line in steady_lines(ss) {
                let _ = writeln!(s, "  {line}");
            }
        }
        if let Some(w) = &p.warmup {
            let _ = writeln!(s, "  {}", w.said());
        }
    }
    if let Some(v) = &r.verdict {
        // A scenario with a report of its own (SNIA PTS's tests) prints it instead.
        match crate::scenario::of_run(r).and_then(|sc| sc.text(r)) {
            Some(text) => s.push_str(&text),
            None => s.push_str(&crate::nodes::verdict_text(v)),
        }
    }
    match r.status {
        Status::Interrupted => {
            if let Some(e) = &r.error {
                let _ = writeln!(s, "INTERRUPTED: {e}");
            }
            s.push_str("INTERRUPTED: these are the results measured before the stop.\n");
        }
        Status::Failed => {
            let _ = writeln!(s, "FAILED: {}", r.error.as_deref().unwrap_or("unknown error"));
            s.push_str("The results above were measured before the failure.\n");
        }
        _ => {}
    }
    s
}

/// A phase's steady state in words: the verdict, then the rounds (or the last samples), the
/// window's among them marked; on several nodes (the nodes' sum judged) each node's verdict.
pub fn steady_lines(ss: &iolab_model::steady::SteadyStateResult) -> Vec<String> {
    let what = if ss.method == "snia" { "rounds" } else { "last samples" };
    let (a, b) = ss.window.as_ref().map_or((0, 0), |w| (w.first, w.last));
    let values: Vec<String> = ss
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let n = ss.first + i as u64;
            let v = if v.abs() >= 100.0 { format!("{v:.0}") } else { format!("{v:.3}") };
            if n >= a && n <= b && a > 0 {
                format!("[{v}]")
            } else {
                v
            }
        })
        .collect();
    let mut lines = vec![
        format!("steady state: {} ({})", ss.verdict(), ss.criterion),
        format!("  {what} ({}, {}s each; the window in []): {}", ss.unit, ss.interval_s, values.join(" ")),
    ];
    if !ss.nodes.is_empty() {
        lines[0] = format!("steady state of the nodes' sum: {} ({})", ss.verdict(), ss.criterion);
    }
    for n in &ss.nodes {
        lines.push(format!("  node {}: {}", n.node, n.state.verdict()));
    }
    lines
}

/// A personality's own figures in words (`files created per second, mixed phase 1,234`; the
/// JSON keeps the original's names), a few a line: the phase's (phases[].workload), or each
/// job's when the phase mixes personalities; then the notes.
fn workload_lines(s: &mut String, p: &PhaseResult) {
    let lines = |s: &mut String, head: &str, f: &iolab_model::figures::Figures| {
        let items: Vec<String> = f
            .iter()
            .map(|(k, v)| {
                let said = iolab_spec::figures::words(iolab_model::figures::PERSONALITIES, None, k);
                if v.fract() == 0.0 && (0.0..1e15).contains(v) {
                    format!("{said} {}", crate::fmt::count(*v))
                } else {
                    format!("{said} {}", crate::fmt::num(*v))
                }
            })
            .collect();
        for chunk in items.chunks(3) {
            let _ = writeln!(s, "  {head}{}", chunk.join("; "));
        }
    };
    if !p.workload.is_empty() {
        lines(s, "", &p.workload);
    } else {
        for j in p.jobs.iter().filter(|j| !j.workload.is_empty()) {
            lines(s, &format!("{}: ", j.name), &j.workload);
        }
    }
    for n in &p.notes {
        let _ = writeln!(s, "  note: {n}");
    }
}

pub fn phase(p: &PhaseResult) -> String {
    let mut s = String::new();
    let mark = if p.interrupted { " (interrupted)" } else { "" };
    let on = if p.nodes.is_empty() { String::new() } else { format!(" on {} node(s)", p.nodes.len()) };
    let _ = writeln!(s, "phase {}{mark}: {} job(s){on}, {}", p.name, p.jobs.len(), secs(p.elapsed_s));
    dd_lines(&mut s, &p.total, p.elapsed_s, "  ");
    s.push_str(&crate::nodes::terminal(p));
    let _ = writeln!(s, "  iolab cpu: user {:.2} s, system {:.2} s", p.cpu.user_s, p.cpu.system_s);
    workload_lines(&mut s, p);
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(["job", "dir", "ops", "MB/s", "MiB/s", "IOPS", "lat ms mean", "p50", "p90", "p99", "p99.9", "max"]);
    for j in &p.jobs {
        // Every operation class the job used: reads and writes with their throughput, the
        // others (flushes, creates, renames...) with their count and latency.
        // On several nodes a job's name repeats: `node:job`.
        let name = match &j.node {
            Some(n) => format!("{n}:{}", j.name),
            None => j.name.clone(),
        };
        for (class, d) in j.total.iter() {
            if class.moves_data() {
                t.add_row(row(&name, class.as_str(), d));
            } else {
                let l = &d.lat_ns;
                let mut r: Vec<Cell> =
                    vec![Cell::new(&name), Cell::new(class.as_str()), Cell::new(count(d.ops as f64))];
                r.extend(["", "", ""].map(Cell::new));
                r.extend([l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(|v| Cell::new(ms(v))));
                t.add_row(r);
            }
        }
    }
    for c in 2..12 {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    // A phase without jobs (`iolab watch`'s) has only its system line.
    for line in t.to_string().lines().filter(|_| !p.jobs.is_empty()) {
        let _ = writeln!(s, "  {line}");
    }
    s.push_str(&crate::threads::lines(p));
    if let Some(l) = crate::system::layout_line(p) {
        let _ = writeln!(s, "  {l}");
    }
    if let Some(sys) = &p.system {
        let _ = writeln!(s, "  system: {}", crate::system::line(sys));
        for f in crate::system::findings(sys) {
            let _ = writeln!(s, "  - {}", f.text());
        }
    }
    if let Some(h) = crate::system::holes_line(p) {
        let _ = writeln!(s, "  {h}");
    }
    for j in p.jobs.iter() {
        if let Some(l) = latency_target_line(j) {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let Some(v) = &p.verify {
        s.push_str(&crate::verify::terminal(v));
    }
    for j in p.jobs.iter().filter(|j| j.error.is_some()) {
        let _ = writeln!(s, "  job {} stopped: {}", j.name, j.error.as_deref().unwrap_or(""));
    }
    // --continue-on-error: the failed I/Os each job went on after.
    for (j, e) in p.jobs.iter().filter_map(|j| j.io_errors.as_ref().map(|e| (j, e))) {
        let _ = writeln!(s, "  job {} went on after {} failed I/O; the first: {}", j.name, e.count, e.first.text);
    }
    s
}

/// `job lat: latency target 10.0 ms for 99.9% of I/Os per 5.00 s window: target depth found: 12`
/// (fio's latency_target search, `--latency-target`), or where the search stood when the job
/// ended.
pub fn latency_target_line(j: &iolab_model::JobResult) -> Option<String> {
    let t = j.latency_target?;
    let time = |ns: u64| match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{} us", num(ns as f64 / 1e3)),
        1_000_000..=999_999_999 => format!("{} ms", num(ns as f64 / 1e6)),
        _ => format!("{} s", num(ns as f64 / 1e9)),
    };
    let head = format!(
        "job {}: latency target {} for {}% of I/Os per {} window",
        j.name,
        time(t.target_ns),
        num(t.percentile),
        time(t.window_ns)
    );
    Some(if t.found {
        format!("{head}: target depth found: {}", t.depth)
    } else if t.depth == 1 {
        format!("{head}: not met even at queue depth 1")
    } else {
        format!("{head}: no depth settled before the job ended (it stood at {})", t.depth)
    })
}

/// iolab must write at least this fast (MB/s) for [`cached_writes`] to speak: below it a
/// device keeping up is no surprise (the fidelity rule's [`iolab_model::fidelity::MIN_ISSUED_BYTES_S`]).
pub const CACHED_MIN_MBS: f64 = iolab_model::fidelity::MIN_ISSUED_BYTES_S / 1e6;
/// ...and the target's devices must have written less than this share of it.
pub const CACHED_SHARE: f64 = iolab_model::fidelity::LOW_SHARE;

/// Buffered writes that stayed in the page cache: iolab reports what the page cache took, the
/// device wrote a fraction of it. The page-cache case of the fidelity rule
/// ([`iolab_model::fidelity`]): it speaks when every job of the phase that writes is buffered
/// (no `--direct`, no `--sync`/`--fsync-every`, no `--end-fsync`) and flushed nothing, iolab
/// wrote at least [`CACHED_MIN_MBS`], and the target's devices wrote less than
/// [`CACHED_SHARE`] of it.
pub fn cached_writes(p: &PhaseResult, jobs: &[iolab_spec::Job]) -> Option<String> {
    cached(p, jobs).map(|f| f.text)
}

/// What [`cached_writes`] suggests.
pub const CACHED_ADVICE: &str = iolab_model::fidelity::CACHED_ADVICE;

/// The figures behind [`cached_writes`] when it speaks: (iolab's write bytes/s, the target's
/// devices' write bytes/s).
pub fn cached_write_rates(p: &PhaseResult, jobs: &[iolab_spec::Job]) -> Option<(f64, f64)> {
    cached(p, jobs).map(|f| (f.issued_bytes_s, f.seen_bytes_s))
}

fn cached(p: &PhaseResult, jobs: &[iolab_spec::Job]) -> Option<iolab_model::Finding> {
    iolab_model::fidelity::findings(p.observed(), jobs, None)
        .into_iter()
        .find(|f| f.kind == iolab_model::fidelity::Seen::WritesInCache)
}

fn row(job: &str, dir: &str, d: &ClassTotals) -> Vec<Cell> {
    let l = &d.lat_ns;
    let mut r = vec![
        Cell::new(job),
        Cell::new(dir),
        Cell::new(count(d.ops as f64)),
        Cell::new(num(d.bw_bytes / 1e6)),
        Cell::new(num(d.bw_bytes / 1048576.0)),
        Cell::new(count(d.iops)),
    ];
    r.extend([l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(|v| Cell::new(ms(v))));
    r
}

/// `1048576000 bytes (1.0 GB, 1000.0 MiB) written, 88.12 s, 11.9 MB/s (11.3 MiB/s), 10 IOPS`
fn dd_lines(s: &mut String, t: &Totals, elapsed: f64, indent: &str) {
    for (verb, d) in [("read", &t.read()), ("written", &t.write())] {
        if d.ops == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "{indent}{} bytes ({}, {}) {verb}, {}, {}, {} IOPS",
            d.bytes,
            fmt_decimal(d.bytes as f64),
            fmt_binary(d.bytes as f64),
            secs(elapsed),
            rate(d.bw_bytes),
            count(d.iops)
        );
    }
    if t.sync().ops > 0 {
        let _ = writeln!(
            s,
            "{indent}{} flushes, latency ms p50 {} p99 {} max {}",
            count(t.sync().ops as f64),
            ms(t.sync().lat_ns.p50),
            ms(t.sync().lat_ns.p99),
            ms(t.sync().lat_ns.max)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{Acc, OpClass};
    use iolab_spec::{JobPatch, Rw};
    use iolab_sysstat::{DiskRates, SystemResult, TargetInfo};

    #[test]
    fn several_nodes_steady_state_says_the_sums_verdict_then_each_nodes() {
        use iolab_model::steady::{judge_snia, NodeSteadyState, SteadyStateResult};
        let snia = iolab_spec::steady::Snia::PTS;
        let of = |v: f64, steady: bool| SteadyStateResult {
            method: "snia".into(),
            unit: "IOPS".into(),
            values: vec![v; 5],
            first: 1,
            measured: 5,
            window: Some(judge_snia(&[v; 5], 1, &snia)),
            attained: steady,
            steady_at: steady.then_some(5),
            ..Default::default()
        };
        let mut ss = of(800.0, true);
        ss.nodes = vec![
            NodeSteadyState { node: "a".into(), state: of(400.0, true) },
            NodeSteadyState { node: "b".into(), state: of(400.0, true) },
        ];
        let lines = steady_lines(&ss);
        assert!(lines[0].starts_with("steady state of the nodes' sum: steady at round 5"), "{lines:?}");
        assert!(lines[1].contains("[800] [800] [800] [800] [800]"), "{lines:?}");
        assert!(
            lines[2].starts_with("  node a: steady at round 5") && lines[2].contains("of the mean 400 IOPS"),
            "{lines:?}"
        );
        assert!(lines[3].starts_with("  node b: steady at round 5"), "{lines:?}");
        assert_eq!(lines.len(), 4);
        assert_eq!(steady_lines(&of(800.0, true)).len(), 2, "one node: no node lines");
    }

    #[test]
    fn a_personalitys_figures_are_said_in_words() {
        let mut p = PhaseResult::new("pm");
        p.workload.insert("transactions".into(), 5000.0);
        p.workload.insert("created_mixed_per_s".into(), 12.5);
        let s = phase(&p);
        assert!(s.contains("files created per second, mixed phase 12.50"), "{s}");
        assert!(s.contains("transactions 5,000"), "{s}");
        assert!(!s.contains("created_mixed_per_s"), "{s}");
    }

    /// A phase that wrote `mbs` MB/s for 1 s while the target disk wrote `disk_mbs`.
    fn phase_of(mbs: f64, disk_mbs: f64) -> PhaseResult {
        let mut a = Acc::default();
        let ops = (mbs * 1e6 / 4096.0) as u64;
        for _ in 0..ops {
            a.record(OpClass::Write, 4096, 1_000);
        }
        let mut s = SystemResult::default();
        s.mean.disks.insert("vda".into(), DiskRates { wkb_s: disk_mbs * 1e6 / 1024.0, ..Default::default() });
        s.target = Some(TargetInfo { devices: vec!["vda".into()], ..Default::default() });
        PhaseResult { elapsed_s: 1.0, total: Totals::from_acc(&a, 1.0), system: Some(s), ..PhaseResult::new("p") }
    }

    fn job(f: impl FnOnce(&mut JobPatch)) -> Vec<iolab_spec::Job> {
        let mut p = JobPatch { target: Some("/t".into()), rw: Some(Rw::RandWrite), ..Default::default() };
        f(&mut p);
        vec![p.resolve("j").unwrap()]
    }

    #[test]
    fn buffered_writes_the_device_never_saw_get_a_finding() {
        // Seed 000's trap: hundreds of MB/s reported while the disk was nearly idle.
        let f = cached_writes(&phase_of(500.0, 0.07), &job(|_| {})).expect("a finding");
        assert!(f.contains("stayed in the page cache") && f.contains("--end-fsync") && f.contains("--direct"), "{f}");
        assert!(f.contains("iolab wrote 500.0 MB/s, the device 70.0 kB/s (0.0140%)"), "{f}");
    }

    #[test]
    fn no_finding_when_the_device_kept_up_or_the_cache_was_not_in_the_way() {
        assert!(cached_writes(&phase_of(500.0, 450.0), &job(|_| {})).is_none(), "the device wrote it");
        assert!(cached_writes(&phase_of(500.0, 0.1), &job(|p| p.direct = Some(true))).is_none(), "direct");
        assert!(cached_writes(&phase_of(500.0, 0.1), &job(|p| p.end_fsync = Some(true))).is_none(), "end fsync");
        assert!(cached_writes(&phase_of(500.0, 0.1), &job(|p| p.fsync_every = Some(1))).is_none(), "fsync");
        assert!(cached_writes(&phase_of(20.0, 0.0), &job(|_| {})).is_none(), "too slow to tell");
        assert!(cached_writes(&phase_of(500.0, 0.1), &job(|p| p.rw = Some(Rw::Read))).is_none(), "no writes");
        let mut tmpfs = phase_of(500.0, 0.0);
        tmpfs.system.as_mut().unwrap().target = Some(TargetInfo::default());
        assert!(cached_writes(&tmpfs, &job(|_| {})).is_none(), "no block device to compare with");
    }
}
