//! The board as Prometheus series, named as Prometheus's guide asks (base units, `_total`
//! counters, `_seconds`, `_bytes`, `_ratio`), in either text format through prometheus-client:
//! OpenMetrics 1.0 for a scraper that asks for it (Prometheus does), the classic text format
//! 0.0.4 otherwise (curl, `promtool check metrics`). docs/metrics.md lists every family; the
//! table below is that list's source.

use crate::board::{Board, ClassFigures, Figures, NodeFigures, RunFigures};
use crate::buckets::Folded;
use iolab_model::{ErrorClass, OpClass, Status};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The content types of the two formats.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The text a scrape gets: OpenMetrics when `open_metrics`, else the classic text format.
pub fn render(board: &Arc<Board>, open_metrics: bool) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(View(board.clone())));
    let mut out = String::new();
    if open_metrics {
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    }
    Ok(out)
}

type Labels = Vec<(String, String)>;

/// A sample's value.
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Box<Folded>),
    Info,
}

/// One metric family: its name without the unit (and `_total` or `_info`, which the encoder
/// adds by type), unit, type, help, and series.
struct Family {
    name: &'static str,
    unit: Option<Unit>,
    kind: MetricType,
    help: &'static str,
    series: Vec<(Labels, Value)>,
}

/// Every family, in the order they are written; `families()[i].name` is unique.
fn families() -> Vec<Family> {
    use MetricType::{Counter, Gauge, Histogram, Info};
    let f = |name, unit, kind, help| Family { name, unit, kind, help, series: Vec::new() };
    vec![
        f("iolab_run", None, Info, "The run: what made it (kind) and iolab's version"),
        f("iolab_run_start_time", Some(Unit::Seconds), Gauge, "When the run began, in Unix time"),
        f("iolab_run_status", None, Gauge, "1 for the run's status (running, complete, interrupted, failed), 0 for the others"),
        f("iolab_run_phases", None, Gauge, "Phases the run has (a scenario's: one per step)"),
        f("iolab_run_phases_ended", None, Gauge, "Phases that ended (on several nodes: merged over the nodes)"),
        f("iolab_run_steps", None, Gauge, "Steps of a run on several nodes"),
        f("iolab_run_step", None, Gauge, "The step running, from 1"),
        f("iolab_phase_running", None, Gauge, "1 while the phase runs on the node, 0 once it ended"),
        f("iolab_phase_elapsed", Some(Unit::Seconds), Gauge, "Seconds of the phase's measured window so far on the node"),
        f("iolab_phase_progress", Some(Unit::Other("ratio".into())), Gauge, "How far a time-bounded phase is on the node, 0 to 1"),
        f("iolab_operations", None, Counter, "Operations completed in the measured window (the ramp excluded), per operation class"),
        f("iolab", Some(Unit::Bytes), Counter, "Bytes read or written in the measured window"),
        f("iolab_operation_latency", Some(Unit::Seconds), Histogram, "Latency of each operation, from issue (or its scheduled time under a rate) to completion, in iolab's fixed buckets"),
        f("iolab_errors", None, Counter, "Workers a job lost to an I/O error (an error ends the worker)"),
        f("iolab_in_flight_operations", None, Gauge, "Reads and writes in flight, on average over the last second (completions times mean latency)"),
        f("iolab_validation_written_blocks", None, Counter, "Key blocks stamped by validated writes (--verify)"),
        f("iolab_validation_checked_blocks", None, Counter, "Key blocks read back and checked (--verify)"),
        f("iolab_validation_errors", None, Counter, "Bad key blocks found by validation, per kind of error"),
        f("iolab_cpu", Some(Unit::Other("ratio".into())), Gauge, "CPU time in the last sample, 0 to 1: user (with nice), system (with irq and softirq), iowait, steal, idle"),
        f("iolab_disk_reads_per_second", None, Gauge, "Reads completed per second in the last sample (iostat -x r/s)"),
        f("iolab_disk_writes_per_second", None, Gauge, "Writes completed per second in the last sample (iostat -x w/s)"),
        f("iolab_disk_read_bytes_per_second", None, Gauge, "Bytes read per second in the last sample (iostat -x rkB/s times 1024)"),
        f("iolab_disk_written_bytes_per_second", None, Gauge, "Bytes written per second in the last sample (iostat -x wkB/s times 1024)"),
        f("iolab_disk_read_merges_per_second", None, Gauge, "Reads merged per second in the last sample (iostat -x rrqm/s)"),
        f("iolab_disk_write_merges_per_second", None, Gauge, "Writes merged per second in the last sample (iostat -x wrqm/s)"),
        f("iolab_disk_request_size", Some(Unit::Bytes), Gauge, "Average request size in the last sample (iostat -x areq-sz)"),
        f("iolab_disk_queue_length", None, Gauge, "Average queue size in the last sample (iostat -x aqu-sz)"),
        f("iolab_disk_read_await", Some(Unit::Seconds), Gauge, "Average read time, queue included, in the last sample (iostat -x r_await)"),
        f("iolab_disk_write_await", Some(Unit::Seconds), Gauge, "Average write time, queue included, in the last sample (iostat -x w_await)"),
        f("iolab_disk_utilization", Some(Unit::Other("ratio".into())), Gauge, "Share of the last sample the device was busy, 0 to 1 (iostat -x %util)"),
        f("iolab_network_receive_bytes_per_second", None, Gauge, "Bytes received per second in the last sample"),
        f("iolab_network_transmit_bytes_per_second", None, Gauge, "Bytes sent per second in the last sample"),
        f("iolab_network_receive_packets_per_second", None, Gauge, "Packets received per second in the last sample"),
        f("iolab_network_transmit_packets_per_second", None, Gauge, "Packets sent per second in the last sample"),
        f("iolab_network_receive_errors", None, Counter, "Receive errors over the samples taken"),
        f("iolab_network_transmit_errors", None, Counter, "Transmit errors over the samples taken"),
        f("iolab_network_receive_drops", None, Counter, "Received packets dropped over the samples taken"),
        f("iolab_network_transmit_drops", None, Counter, "Packets to send dropped over the samples taken"),
        f("iolab_memory_dirty", Some(Unit::Bytes), Gauge, "Dirty page cache at the last sample"),
        f("iolab_memory_writeback", Some(Unit::Bytes), Gauge, "Page cache under writeback at the last sample"),
        f("iolab_memory_cached", Some(Unit::Bytes), Gauge, "Page cache at the last sample"),
        f("iolab_io_pressure", Some(Unit::Other("ratio".into())), Gauge, "Share of the last sample some (or all) runnable tasks stalled on I/O (PSI)"),
        f("iolab_load1", None, Gauge, "The one-minute load average at the last sample"),
    ]
}

/// Reads the board at each scrape.
#[derive(Debug)]
struct View(Arc<Board>);

impl Collector for View {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut fams = families();
        fill(&self.0.lock(), &mut fams);
        for fam in &fams {
            if fam.series.is_empty() {
                continue;
            }
            let mut me = encoder.encode_descriptor(fam.name, fam.help, fam.unit.as_ref(), fam.kind)?;
            for (labels, v) in &fam.series {
                match v {
                    Value::Info => me.encode_info(labels)?,
                    Value::Counter(n) => ConstCounter::new(*n).encode(me.encode_family(labels)?)?,
                    Value::Gauge(x) => ConstGauge::new(*x).encode(me.encode_family(labels)?)?,
                    Value::Histogram(h) => me.encode_family(labels)?.encode_histogram::<NoLabelSet>(
                        h.sum_s,
                        h.count(),
                        &h.per_bucket(),
                        None,
                    )?,
                }
            }
        }
        Ok(())
    }
}

/// Adds series to the families by name.
struct Out<'a>(&'a mut [Family]);

impl Out<'_> {
    fn add(&mut self, name: &str, labels: Labels, v: Value) {
        if let Some(f) = self.0.iter_mut().find(|f| f.name == name) {
            f.series.push((labels, v));
        }
    }
}

/// `base` (node, run_id, ...) then `more`, then the run's own labels.
fn labels(base: &[(&str, &str)], run: &RunFigures) -> Labels {
    base.iter().map(|(k, v)| (k.to_string(), v.to_string())).chain(run.labels.iter().cloned()).collect()
}

fn fill(figures: &Figures, fams: &mut [Family]) {
    let mut out = Out(fams);
    for run in &figures.runs {
        run_series(run, &mut out);
        for (node, n) in &run.nodes {
            node_series(run, node, n, &mut out);
            system_series(run, node, n, &mut out);
        }
    }
}

fn run_series(run: &RunFigures, out: &mut Out) {
    let id = run.id.as_str();
    let version = env!("CARGO_PKG_VERSION");
    out.add("iolab_run", labels(&[("run_id", id), ("kind", &run.kind), ("version", version)], run), Value::Info);
    let l = || labels(&[("run_id", id)], run);
    out.add("iolab_run_start_time", l(), Value::Gauge(run.started_unix_s));
    for s in Status::ALL {
        let on = if s == run.status { 1.0 } else { 0.0 };
        out.add("iolab_run_status", labels(&[("run_id", id), ("status", s.as_str())], run), Value::Gauge(on));
    }
    out.add("iolab_run_phases", l(), Value::Gauge(run.planned.len() as f64));
    out.add("iolab_run_phases_ended", l(), Value::Gauge(run.ended.len() as f64));
    if let Some((index, of)) = run.step {
        out.add("iolab_run_steps", l(), Value::Gauge(of as f64));
        out.add("iolab_run_step", l(), Value::Gauge((index + 1) as f64));
    }
}

/// Every phase of one name on a node, added up: a name that comes again (a repeated step)
/// keeps counting from where it was, so counters never go back.
#[derive(Default)]
struct ByName {
    classes: BTreeMap<(String, OpClass), ClassFigures>,
    errors: BTreeMap<String, u64>,
    verify: Option<(u64, u64, iolab_model::ErrorCounts)>,
}

fn node_series(run: &RunFigures, node: &str, n: &NodeFigures, out: &mut Out) {
    let id = run.id.as_str();
    let mut names: BTreeMap<&str, ByName> = BTreeMap::new();
    for (index, p) in &n.phases {
        let phase = p.name.as_str();
        let pl = || labels(&[("node", node), ("run_id", id), ("phase", phase)], run);
        out.add("iolab_phase_running", pl(), Value::Gauge(if p.running { 1.0 } else { 0.0 }));
        out.add("iolab_phase_elapsed", pl(), Value::Gauge(p.elapsed_s));
        if let Some(expected) = run.planned.get(*index).and_then(|x| x.expected_s).filter(|e| *e > 0.0) {
            let ratio = if p.running { (p.elapsed_s / expected).min(1.0) } else { 1.0 };
            out.add("iolab_phase_progress", pl(), Value::Gauge(ratio));
        }
        let by = names.entry(phase).or_default();
        for j in &p.jobs {
            *by.errors.entry(j.name.clone()).or_default() += j.errors;
            for (c, x) in &j.classes {
                let sum = by.classes.entry((j.name.clone(), *c)).or_default();
                sum.ops += x.ops;
                sum.bytes += x.bytes;
                sum.latency.add(&x.latency);
            }
        }
        if let Some(v) = &p.verify {
            let s = by.verify.get_or_insert_with(Default::default);
            s.0 += v.written;
            s.1 += v.checked;
            s.2.merge(&v.errors);
        }
    }
    for (phase, by) in &names {
        for ((job, class), x) in &by.classes {
            let l = || {
                labels(
                    &[("node", node), ("run_id", id), ("phase", phase), ("job", job), ("class", class.as_str())],
                    run,
                )
            };
            out.add("iolab_operations", l(), Value::Counter(x.ops));
            if class.moves_data() {
                out.add("iolab", l(), Value::Counter(x.bytes));
            }
            out.add("iolab_operation_latency", l(), Value::Histogram(Box::new(x.latency.clone())));
        }
        for (job, errors) in &by.errors {
            let l = labels(&[("node", node), ("run_id", id), ("phase", phase), ("job", job)], run);
            out.add("iolab_errors", l, Value::Counter(*errors));
        }
        if let Some((written, checked, errors)) = &by.verify {
            let l = || labels(&[("node", node), ("run_id", id), ("phase", phase)], run);
            out.add("iolab_validation_written_blocks", l(), Value::Counter(*written));
            out.add("iolab_validation_checked_blocks", l(), Value::Counter(*checked));
            for e in ErrorClass::ALL {
                let l = labels(&[("node", node), ("run_id", id), ("phase", phase), ("error", e.as_str())], run);
                out.add("iolab_validation_errors", l, Value::Counter(errors.get(e)));
            }
        }
    }
    if let Some(x) = n.in_flight {
        out.add("iolab_in_flight_operations", labels(&[("node", node), ("run_id", id)], run), Value::Gauge(x));
    }
}

fn system_series(run: &RunFigures, node: &str, n: &NodeFigures, out: &mut Out) {
    let id = run.id.as_str();
    let nl = |extra: &[(&str, &str)]| {
        let mut base = vec![("node", node), ("run_id", id)];
        base.extend_from_slice(extra);
        labels(&base, run)
    };
    for (iface, c) in &n.net {
        let l = || nl(&[("interface", iface)]);
        out.add("iolab_network_receive_errors", l(), Value::Counter(c.rx_errs));
        out.add("iolab_network_transmit_errors", l(), Value::Counter(c.tx_errs));
        out.add("iolab_network_receive_drops", l(), Value::Counter(c.rx_drop));
        out.add("iolab_network_transmit_drops", l(), Value::Counter(c.tx_drop));
    }
    let Some(s) = &n.system else { return };
    let cpu = &s.cpu.all;
    for (mode, pct) in [
        ("user", cpu.us()),
        ("system", cpu.sy()),
        ("iowait", cpu.iowait_pct),
        ("steal", cpu.steal_pct),
        ("idle", cpu.idle_pct),
    ] {
        out.add("iolab_cpu", nl(&[("mode", mode)]), Value::Gauge(pct / 100.0));
    }
    for (dev, d) in s.disks.iter() {
        let l = || nl(&[("device", dev)]);
        for (name, v) in [
            ("iolab_disk_reads_per_second", d.r_s),
            ("iolab_disk_writes_per_second", d.w_s),
            ("iolab_disk_read_bytes_per_second", d.rkb_s * 1024.0),
            ("iolab_disk_written_bytes_per_second", d.wkb_s * 1024.0),
            ("iolab_disk_read_merges_per_second", d.rrqm_s),
            ("iolab_disk_write_merges_per_second", d.wrqm_s),
            ("iolab_disk_request_size", d.avgrq_kb * 1024.0),
            ("iolab_disk_queue_length", d.avgqu),
            ("iolab_disk_read_await", d.r_await_ms / 1e3),
            ("iolab_disk_write_await", d.w_await_ms / 1e3),
            ("iolab_disk_utilization", d.util_pct / 100.0),
        ] {
            out.add(name, l(), Value::Gauge(v));
        }
    }
    for (iface, x) in s.net.iter() {
        let l = || nl(&[("interface", iface)]);
        out.add("iolab_network_receive_bytes_per_second", l(), Value::Gauge(x.rx_bytes_s));
        out.add("iolab_network_transmit_bytes_per_second", l(), Value::Gauge(x.tx_bytes_s));
        out.add("iolab_network_receive_packets_per_second", l(), Value::Gauge(x.rx_packets_s));
        out.add("iolab_network_transmit_packets_per_second", l(), Value::Gauge(x.tx_packets_s));
    }
    out.add("iolab_memory_dirty", nl(&[]), Value::Gauge(s.dirty_kb as f64 * 1024.0));
    out.add("iolab_memory_writeback", nl(&[]), Value::Gauge(s.writeback_kb as f64 * 1024.0));
    out.add("iolab_memory_cached", nl(&[]), Value::Gauge(s.cached_kb as f64 * 1024.0));
    for (level, v) in [("some", s.io_pressure_some_pct), ("full", s.io_pressure_full_pct)] {
        if let Some(v) = v {
            out.add("iolab_io_pressure", nl(&[("level", level)]), Value::Gauge(v / 100.0));
        }
    }
    if let Some(l1) = s.load1 {
        out.add("iolab_load1", nl(&[]), Value::Gauge(l1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::tests::{phase, plan};
    use crate::feed::RunStart;
    use iolab_model::events::{Emit, Named};
    use iolab_sysstat::Rates;

    /// A board with a run of two nodes (one of them this process's own), a sample and a label
    /// that needs making valid.
    fn board() -> Arc<Board> {
        let board = Board::new();
        let plan = plan();
        let labels = [
            ("config".to_string(), "ext4 \"barrier=0\"".to_string()),
            ("db-url".to_string(), "postgres://u:pw@h/x".to_string()),
        ];
        let mut feed = board.begin(RunStart {
            id: "42".into(),
            kind: "run",
            labels: &labels,
            plan: &plan,
            node: "n1".into(),
            started_unix_s: 1.7e9,
        });
        feed.progress(0, &phase("write", 3, 1_500));
        let mut rates = Rates::default();
        rates.cpu.all.iowait_pct = 25.0;
        rates
            .disks
            .insert("vda".into(), iolab_sysstat::DiskRates { util_pct: 50.0, r_await_ms: 2.0, ..Default::default() });
        feed.sample(0, &rates);
        let mut n2 = Named { node: "n2", inner: &mut feed };
        n2.phase_end(0, &phase("write", 5, 700_000));
        board
    }

    #[test]
    fn the_classic_text_names_series_as_prometheus_s_guide_asks() {
        let text = render(&board(), false).unwrap();
        let has = |s: &str| assert!(text.contains(s), "no `{s}` in\n{text}");
        has("# TYPE iolab_operations_total counter\n");
        has(
            r#"iolab_operations_total{node="n1",run_id="42",phase="write",job="j",class="read",config="ext4 \"barrier=0\"",db_url="postgres://u@h/x"} 3"#,
        );
        has(r#"iolab_bytes_total{node="n2",run_id="42",phase="write",job="j",class="read""#);
        has("# TYPE iolab_operation_latency_seconds histogram\n");
        has(
            r#"iolab_operation_latency_seconds_bucket{node="n2",run_id="42",phase="write",job="j",class="read",config="ext4 \"barrier=0\"",db_url="postgres://u@h/x",le="0.001"} 5"#,
        );
        has(
            r#"iolab_operation_latency_seconds_bucket{node="n2",run_id="42",phase="write",job="j",class="read",config="ext4 \"barrier=0\"",db_url="postgres://u@h/x",le="0.0005"} 0"#,
        );
        has(r#"iolab_operation_latency_seconds_count{node="n2""#);
        has(r#"iolab_errors_total{node="n1",run_id="42",phase="write",job="j""#);
        has(r#"iolab_cpu_ratio{node="n1",run_id="42",mode="iowait""#);
        has(r#"iolab_disk_utilization_ratio{node="n1",run_id="42",device="vda""#);
        has(
            r#"iolab_disk_read_await_seconds{node="n1",run_id="42",device="vda",config="ext4 \"barrier=0\"",db_url="postgres://u@h/x"} 0.002"#,
        );
        has(r#"iolab_run_info{run_id="42",kind="run",version=""#);
        has(r#"iolab_run_status{run_id="42",status="running""#);
        has(r#"iolab_phase_progress_ratio{node="n1",run_id="42",phase="write""#);
        assert!(!text.contains("pw"), "no password in a label");
        assert!(!text.contains("# EOF"));
        assert_eq!(text.matches("le=\"+Inf\"").count(), 2, "each histogram has its +Inf bucket once");
    }

    #[test]
    fn open_metrics_ends_with_eof_and_keeps_the_units() {
        let text = render(&board(), true).unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(text.contains("# TYPE iolab_operations counter\n"));
        assert!(text.contains("# UNIT iolab_operation_latency_seconds seconds\n"));
        assert!(text.contains("iolab_operations_total{node=\"n1\""));
        assert!(text.contains("# TYPE iolab_run info\n"));
        assert_eq!(text.matches("le=\"+Inf\"").count(), 2, "each histogram has its +Inf bucket once");
    }

    #[test]
    fn an_empty_board_is_an_empty_page() {
        assert_eq!(render(&Board::new(), false).unwrap(), "");
        assert_eq!(render(&Board::new(), true).unwrap(), "# EOF\n");
    }

    /// promtool (Debian's prometheus package) lints the classic text: names, help, types,
    /// counters' `_total`, units in names.
    #[test]
    fn promtool_accepts_the_text() {
        let Ok(mut child) = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("skipped: promtool is not installed (Debian's prometheus package)");
            return;
        };
        use std::io::Write;
        let text = render(&board(), false).unwrap();
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.trim().is_empty(), "promtool: {said}\n{text}");
    }
}
