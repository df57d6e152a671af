//! The report's section on runs of several nodes: each phase's per-node table (the rows the
//! terminal summary prints), then the charts and verdict of the scenario that judged the run
//! (`crate::scenario`: the `locking` check's bars, for one), or for any other run a scaling
//! chart when its phases ran on 1, 2, ..., N nodes.

use crate::markup::escape;
use crate::nodes::{cells, rows, HEADER};
use iolab_model::PhaseResult;
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
        crate::scenario::chart(h, r);
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
