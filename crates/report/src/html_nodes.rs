//! The report's section on runs of several nodes: each phase's per-node table (the rows the
//! terminal summary prints), a scaling chart for runs whose phases ran on 1, 2, ..., N nodes
//! (aggregate and per-client MB/s against the number of clients), and for the `locking`
//! scenario its four checks as bars with the verdict beside them.

use crate::charts::{self, Bar, Dash, Series};
use crate::markup::{escape, figure};
use crate::nodes::{cells, data_bw, headline, rows, HEADER};
use iolab_model::{PhaseResult, Verdict};
use iolab_store::StoredRun;
use std::fmt::Write;

/// Whether any run has a phase of several nodes (the section is left out otherwise).
pub fn any(runs: &[StoredRun]) -> bool {
    runs.iter().any(|r| r.result.phases.iter().any(|p| !p.nodes.is_empty()))
}

pub fn section(h: &mut String, runs: &[StoredRun]) {
    if !any(runs) {
        return;
    }
    h.push_str("<section id=\"nodes\">\n<h2>Nodes</h2>\n");
    for r in runs.iter().filter(|r| r.result.phases.iter().any(|p| !p.nodes.is_empty())) {
        let _ = writeln!(h, "<h3>Run #{} {} {}</h3>", r.id, escape(r.kind.as_str()), escape(&r.name));
        if !r.result.nodes.is_empty() {
            let list: Vec<String> = r
                .result
                .nodes
                .iter()
                .map(|n| {
                    format!(
                        "{} ({}, {}, clock offset {} ms)",
                        escape(&n.name),
                        escape(&n.address),
                        escape(&n.hostname),
                        crate::fmt::num(n.clock_offset_ns as f64 / 1e6)
                    )
                })
                .collect();
            let _ = writeln!(h, "<p class=\"note\">Nodes: {}</p>", list.join("; "));
        }
        for p in r.result.phases.iter().filter(|p| !p.nodes.is_empty()) {
            phase_table(h, p);
        }
        h.push_str("<div class=\"charts\">\n");
        if let Some(v) = r.result.verdict.as_ref().filter(|v| v.scenario == "locking") {
            locking(h, r, v);
        }
        if r.result.verdict.as_ref().is_none_or(|v| v.scenario != "locking") {
            scaling(h, r);
        }
        h.push_str("</div>\n");
        if let Some(v) = r.result.verdict.as_ref().filter(|v| v.scenario != "locking") {
            verdict_block(h, r.id, v);
        }
    }
    h.push_str("</section>\n");
}

fn phase_table(h: &mut String, p: &PhaseResult) {
    let _ = write!(h, "<h4>Phase {}</h4>\n<div class=\"wide\"><table class=\"nodes\">\n<tr>", escape(&p.name));
    for c in HEADER {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for row in rows(p) {
        h.push_str("<tr>");
        for (i, c) in cells(&row).iter().enumerate() {
            let class = if i == 0 || i == HEADER.len() - 1 { "" } else { " class=\"n\"" };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    if let Some(d) = crate::nodes::done_line(p) {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(&d));
    }
}

fn verdict_block(h: &mut String, run: i64, v: &Verdict) {
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

/// The locking check's phases as bars: each phase's aggregate MB/s, and each node's where two
/// or more ran; the verdict beside them.
fn locking(h: &mut String, r: &StoredRun, v: &Verdict) {
    let mut bars = Vec::new();
    let mut legend = vec![("all nodes".to_string(), 0usize)];
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in r.result.phases.iter().enumerate() {
        bars.push(Bar { label: format!("{}", i + 1), value: data_bw(&p.total) / 1e6, color: 0 });
        if p.nodes.len() >= 2 {
            for n in &p.nodes {
                let k = match names.iter().position(|x| *x == n.name) {
                    Some(k) => k,
                    None => {
                        names.push(&n.name);
                        legend.push((format!("node {}", n.name), names.len()));
                        names.len() - 1
                    }
                };
                bars.push(Bar { label: format!("{} {}", i + 1, n.name), value: data_bw(&n.total) / 1e6, color: k + 1 });
            }
        }
    }
    let checks: Vec<String> =
        r.result.phases.iter().enumerate().map(|(i, p)| format!("{} {}", i + 1, escape(&p.name))).collect();
    let svg = charts::bar_chart("Locking check", "MB/s", &bars, &legend);
    h.push_str("<div class=\"locking\">\n");
    figure(
        h,
        &format!("locking-{}", r.id),
        Some(svg),
        &format!(
            "Each check's throughput over all its nodes (and each node's where two ran at once), in MB/s: {}.",
            checks.join(", ")
        ),
        "",
    );
    verdict_block(h, r.id, v);
    h.push_str("</div>\n");
}

/// Aggregate and per-client MB/s against the number of clients, when the run's phases ran on
/// at least two different numbers of nodes (and it is not the locking check, whose 1, 1, 1, 2
/// nodes are no sweep).
fn scaling(h: &mut String, r: &StoredRun) {
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
