//! A phase run on several nodes at once, node by node: what each node moved, how late it
//! started, how busy its CPU and its busiest network interface were; when the first and the
//! last node were done; and a scenario's verdict in words. The terminal summary and the HTML
//! report print the same rows from here.

use crate::fmt::{count, ms, num};
use iolab_model::{ClassTotals, OpClass, PhaseResult, Totals, Verdict};
use iolab_sysstat::SystemResult;
use std::fmt::Write;

/// One node's line of a phase.
#[derive(Debug, Clone)]
pub struct NodeRow {
    pub name: String,
    /// Bytes read and written per second.
    pub bw_bytes: f64,
    /// Reads and writes per second.
    pub iops: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub elapsed_s: f64,
    pub start_skew_ns: i64,
    /// CPU user, system and I/O wait, %.
    pub cpu: Option<(f64, f64, f64)>,
    /// The busiest interface and its bytes per second received and sent.
    pub net: Option<(String, f64)>,
    pub interrupted: bool,
    pub error: Option<String>,
}

/// Bytes read and written per second of totals.
pub fn data_bw(t: &Totals) -> f64 {
    t.read().bw_bytes + t.write().bw_bytes
}

/// The latencies of the data class that did the most operations (reads or writes); a phase
/// without data calls: its busiest class.
pub fn main_class(t: &Totals) -> Option<&ClassTotals> {
    let (r, w) = (t.read(), t.write());
    if r.ops + w.ops > 0 {
        return Some(if w.ops >= r.ops { w } else { r });
    }
    t.iter().max_by_key(|(_, c)| c.ops).map(|(_, c)| c)
}

/// The interface that moved the most bytes (received and sent) over the window.
pub fn busiest_iface(s: &SystemResult) -> Option<(String, f64)> {
    s.mean.net.iter().map(|(name, r)| (name.clone(), r.rx_bytes_s + r.tx_bytes_s)).max_by(|a, b| a.1.total_cmp(&b.1))
}

pub fn rows(p: &PhaseResult) -> Vec<NodeRow> {
    p.nodes
        .iter()
        .map(|n| {
            let main = main_class(&n.total);
            NodeRow {
                name: n.name.clone(),
                bw_bytes: data_bw(&n.total),
                iops: n.total.get(OpClass::Read).iops + n.total.get(OpClass::Write).iops,
                p50_ns: main.map(|c| c.lat_ns.p50).unwrap_or(0),
                p99_ns: main.map(|c| c.lat_ns.p99).unwrap_or(0),
                elapsed_s: n.elapsed_s,
                start_skew_ns: n.start_skew_ns,
                cpu: n.system.as_ref().map(|s| {
                    let c = &s.mean.cpu.all;
                    (c.us(), c.sy(), c.iowait_pct)
                }),
                net: n.system.as_ref().and_then(busiest_iface),
                interrupted: n.interrupted,
                error: n.error.clone(),
            }
        })
        .collect()
}

/// The table's header, in the order of [`cells`].
pub const HEADER: [&str; 11] = [
    "node",
    "MB/s",
    "MiB/s",
    "IOPS",
    "p50 ms",
    "p99 ms",
    "elapsed s",
    "skew ms",
    "CPU us/sy/wa %",
    "net MB/s",
    "iface",
];

/// A row's cells as the tables print them.
pub fn cells(r: &NodeRow) -> [String; 11] {
    let mark = if r.error.is_some() {
        " (failed)"
    } else if r.interrupted {
        " (interrupted)"
    } else {
        ""
    };
    [
        format!("{}{mark}", r.name),
        num(r.bw_bytes / 1e6),
        num(r.bw_bytes / 1048576.0),
        count(r.iops),
        ms(r.p50_ns),
        ms(r.p99_ns),
        num(r.elapsed_s),
        num(r.start_skew_ns as f64 / 1e6),
        r.cpu.map(|(u, s, w)| format!("{u:.0}/{s:.0}/{w:.0}")).unwrap_or_else(|| "-".into()),
        r.net.as_ref().map(|(_, b)| num(b / 1e6)).unwrap_or_else(|| "-".into()),
        r.net.as_ref().map(|(i, _)| i.clone()).unwrap_or_else(|| "-".into()),
    ]
}

/// The per-node table of a phase and its "first node done" line, indented for the summary;
/// empty on one machine.
pub fn terminal(p: &PhaseResult) -> String {
    use comfy_table::{presets::UTF8_BORDERS_ONLY, CellAlignment, Table};
    let mut s = String::new();
    if p.nodes.is_empty() {
        return s;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(HEADER);
    for r in rows(p) {
        t.add_row(cells(&r));
    }
    for c in 1..HEADER.len() - 1 {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    for line in t.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    if let Some(d) = done_line(p) {
        let _ = writeln!(s, "  {d}");
    }
    for n in p.nodes.iter().filter(|n| n.error.is_some()) {
        let _ = writeln!(s, "  node {} failed: {}", n.name, n.error.as_deref().unwrap_or(""));
    }
    s
}

/// `first node done at 9.80 s, last at 10.2 s`
pub fn done_line(p: &PhaseResult) -> Option<String> {
    if p.nodes.len() < 2 {
        return None;
    }
    let (first, last) = (p.first_done_s?, p.last_done_s?);
    Some(format!("first node done at {} s, last at {} s", num(first), num(last)))
}

/// The verdict in words: the limit, then each reason.
pub fn verdict_text(v: &Verdict) -> String {
    let mut s = format!("verdict of {}: {} (limit: {})\n", v.scenario, headline(v), v.limit.as_str());
    for r in &v.reasons {
        let _ = writeln!(s, "  - {r}");
    }
    s
}

/// The limit in words: `limited by the network`, ..., `no limit found`.
pub fn headline(v: &Verdict) -> &'static str {
    match v.limit {
        iolab_model::Limit::Network => "limited by the network",
        iolab_model::Limit::Disk => "limited by the disk",
        iolab_model::Limit::ClusterFs => "limited by the cluster filesystem",
        iolab_model::Limit::None => "no limit found",
    }
}
