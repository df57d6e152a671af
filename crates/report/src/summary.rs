//! The human summary of a run: per phase, a dd-style line per direction and a table of
//! jobs with, per operation class, throughput, IOPS and latency percentiles.

use crate::fmt::{count, fmt_binary, fmt_decimal, ms, num, rate, secs};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use iolab_model::{ClassTotals, PhaseResult, RunResult, Status, Totals};
use std::fmt::Write;

pub fn render(r: &RunResult) -> String {
    let mut s = String::new();
    for p in &r.phases {
        s.push_str(&phase(p));
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

pub fn phase(p: &PhaseResult) -> String {
    let mut s = String::new();
    let mark = if p.interrupted { " (interrupted)" } else { "" };
    let _ = writeln!(s, "phase {}{mark}: {} job(s), {}", p.name, p.jobs.len(), secs(p.elapsed_s));
    dd_lines(&mut s, &p.total, p.elapsed_s, "  ");
    let _ = writeln!(s, "  iolab cpu: user {:.2} s, system {:.2} s", p.cpu.user_s, p.cpu.system_s);
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(["job", "dir", "ops", "MB/s", "MiB/s", "IOPS", "lat ms mean", "p50", "p90", "p99", "p99.9", "max"]);
    for j in &p.jobs {
        // Every operation class the job used: reads and writes with their throughput, the
        // others (flushes, creates, renames...) with their count and latency.
        for (class, d) in j.total.iter() {
            if class.moves_data() {
                t.add_row(row(&j.name, class.as_str(), d));
            } else {
                let l = &d.lat_ns;
                let mut r: Vec<Cell> =
                    vec![Cell::new(&j.name), Cell::new(class.as_str()), Cell::new(count(d.ops as f64))];
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
    if let Some(sys) = &p.system {
        let _ = writeln!(s, "  system: {}", crate::system::line(sys));
        for f in crate::system::findings(sys) {
            let _ = writeln!(s, "  - {}", f.text());
        }
    }
    for j in p.jobs.iter().filter(|j| j.error.is_some()) {
        let _ = writeln!(s, "  job {} stopped: {}", j.name, j.error.as_deref().unwrap_or(""));
    }
    s
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
