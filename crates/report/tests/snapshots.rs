//! Snapshots of the terminal comparison table and the CSV export, on fixed runs: seed 001's
//! shape (native ext4 against DRBD, three runs of each), so any change to either format shows up
//! in review as a diff of `tests/snapshots/`.

use iolab_model::{ClassTotals, LatNs, OpClass, PhaseResult, RunResult, Status, Totals, SCHEMA_VERSION};
use iolab_report::compare::{compare, render_table, CompareOptions, Metric, Verdict};
use iolab_spec::Plan;
use iolab_store::StoredRun;

fn dir(ops: u64, bytes: u64, secs: f64, p50_us: u64, p99_us: u64) -> ClassTotals {
    ClassTotals {
        ops,
        bytes,
        iops: ops as f64 / secs,
        bw_bytes: bytes as f64 / secs,
        lat_ns: LatNs {
            min: p50_us * 500,
            mean: p50_us * 1100,
            p50: p50_us * 1000,
            p90: p99_us * 700,
            p99: p99_us * 1000,
            p999: p99_us * 1500,
            max: p99_us * 3000,
        },
        hist: None,
    }
}

/// A run of two phases: delivery-like 4 KiB writes with fsync, and 64 KiB reads.
fn run(id: i64, config: &str, speed: f64) -> StoredRun {
    let secs = 60.0;
    let w_ops = (60_000.0 * speed) as u64;
    let r_ops = (30_000.0 * speed) as u64;
    let mut deliver = Totals::default();
    *deliver.get_mut(OpClass::Write) = dir(w_ops, w_ops * 4096, secs, (200.0 / speed) as u64, (900.0 / speed) as u64);
    *deliver.get_mut(OpClass::Sync) = ClassTotals {
        ops: w_ops / 4,
        lat_ns: LatNs { p50: 1_000_000, p99: (4_000_000.0 / speed) as u64, ..Default::default() },
        ..Default::default()
    };
    let mut read = Totals::default();
    *read.get_mut(OpClass::Read) = dir(r_ops, r_ops * 65536, secs, 150, 700);
    let phase = |name: &str, t: Totals| PhaseResult {
        name: name.into(),
        elapsed_s: secs,
        interrupted: false,
        total: t,
        jobs: Vec::new(),
        timeline: Vec::new(),
        cpu: Default::default(),
        system: None,
    };
    StoredRun {
        id,
        kind: "run".into(),
        name: "mail.toml".into(),
        labels: [("config".to_string(), config.to_string()), ("note".to_string(), "a, \"quoted\" one".to_string())]
            .into(),
        host: Default::default(),
        pid: 1,
        ended_unix_s: Some(1_795_305_660.0 + id as f64),
        result: RunResult {
            schema_version: SCHEMA_VERSION,
            iolab_version: "0.1.0".into(),
            node: "node1".into(),
            started_unix_s: 1_795_305_600.0 + id as f64,
            status: Status::Complete,
            error: None,
            plan: Plan { phases: Vec::new() },
            phases: vec![phase("deliver", deliver), phase("read", read)],
        },
    }
}

fn seed_001() -> Vec<StoredRun> {
    vec![
        run(1, "ext4", 1.00),
        run(2, "ext4", 1.01),
        run(3, "ext4", 0.99),
        run(4, "drbd-C", 0.80),
        run(5, "drbd-C", 0.81),
        run(6, "drbd-C", 0.79),
        run(7, "drbd-A", 1.005),
        run(8, "drbd-A", 0.995),
        run(9, "drbd-A", 1.0),
    ]
}

#[test]
fn compare_table_by_configuration() {
    let runs = seed_001();
    let c = compare(&runs, &CompareOptions { by: Some("config".into()), ..Default::default() });
    insta::assert_snapshot!("compare_by_config", render_table(&c));
    // The verdicts the table shows, checked directly too.
    let iops = c.rows.iter().find(|r| r.phase == "deliver" && r.metric == Metric::WriteIops).unwrap();
    assert_eq!(iops.cells[1].as_ref().unwrap().verdict, Some(Verdict::Regressed));
    assert_eq!(iops.cells[2].as_ref().unwrap().verdict, Some(Verdict::WithinNoise));
    let p99 = c.rows.iter().find(|r| r.phase == "deliver" && r.metric == Metric::SyncP99Ms).unwrap();
    assert_eq!(p99.cells[1].as_ref().unwrap().verdict, Some(Verdict::Regressed), "higher latency is a regression");
    assert_eq!(c.regressions(), 7, "drbd-C: write MB/s, IOPS, p50, p99, fsync p99, read MB/s and IOPS");
}

#[test]
fn compare_table_single_runs_and_chosen_baseline() {
    let runs = seed_001();
    let c = compare(
        &runs[3..5],
        &CompareOptions { baseline: Some(1), metrics: vec![Metric::WriteMbS, Metric::ReadMbS], ..Default::default() },
    );
    insta::assert_snapshot!("compare_single_runs", render_table(&c));
    assert!(c.rows.iter().flat_map(|r| &r.cells).flatten().all(|c| c.verdict.is_none()), "one run a side: no verdict");
}

#[test]
fn csv_export() {
    let runs = seed_001();
    insta::assert_snapshot!("csv", iolab_report::csv::to_csv(&runs[..2]));
}

#[test]
fn the_html_comparison_states_the_noise_threshold_it_used() {
    let runs = vec![
        run(1, "ext4", 1.0),
        run(2, "ext4", 1.01),
        run(3, "ext4", 0.99),
        run(4, "drbd", 0.9),
        run(5, "drbd", 0.91),
        run(6, "drbd", 0.89),
    ];
    let opts = |noise| iolab_report::html::ReportOptions { by: Some("config".into()), noise, ..Default::default() };
    let default = iolab_report::html::render(&runs, &opts(None));
    assert!(default.contains("wholly beyond &plusmn;2%"), "the default is 2%");
    let wide = iolab_report::html::render(&runs, &opts(Some(0.15)));
    assert!(wide.contains("wholly beyond &plusmn;15%"));
    // A 10% slower configuration regresses at 2% and is within noise at 15%.
    assert!(!default.contains("No regressions."));
    assert!(wide.contains("No regressions."));
}

/// Classes beyond read, write and sync (here creates and renames, as a mail workload makes)
/// show in every output: the compare table, CSV, the HTML report and the terminal summary.
#[test]
fn every_operation_class_shows_in_every_output() {
    let with_creates = |id: i64, config: &str, speed: f64| {
        let mut r = run(id, config, speed);
        let t = &mut r.result.phases[0].total;
        *t.get_mut(OpClass::Create) = dir((6000.0 * speed) as u64, 0, 60.0, (300.0 / speed) as u64, 2000);
        *t.get_mut(OpClass::Rename) = dir((5900.0 * speed) as u64, 0, 60.0, 100, 400);
        let total = t.clone();
        r.result.phases[0].jobs.push(iolab_model::JobResult {
            name: "deliver".into(),
            engine: "psync".into(),
            rw: "write".into(),
            threads: 12,
            files: Vec::new(),
            elapsed_s: 60.0,
            total,
            error: None,
            per_thread: Vec::new(),
        });
        r
    };
    let runs = vec![with_creates(1, "ext4", 1.0), with_creates(2, "drbd", 0.5)];
    let c = compare(&runs, &CompareOptions { by: Some("config".into()), ..Default::default() });
    let names: Vec<String> = c.rows.iter().map(|r| r.metric.name()).collect();
    assert!(names.contains(&"create IOPS".to_string()) && names.contains(&"rename p99 ms".to_string()), "{names:?}");
    let create = c.rows.iter().find(|r| r.metric == Metric::parse("create-iops").unwrap()).unwrap();
    assert_eq!(create.cells[1].as_ref().unwrap().pct_of_baseline.map(|p| p.round()), Some(50.0));
    let csv = iolab_report::csv::to_csv(&runs);
    assert!(csv.lines().any(|l| l.contains(",deliver,*,create,6000,")), "{csv}");
    let html = iolab_report::html::render(&runs, &Default::default());
    assert!(html.contains("<h3>Other operations</h3>") && html.contains("<td>rename</td>"));
    let summary = iolab_report::summary::render(&runs[0].result);
    let create_row = summary.lines().find(|l| l.contains(" create ")).expect("a create row");
    assert!(create_row.contains("6,000"), "{create_row}");
    assert!(summary.lines().any(|l| l.contains(" rename ")), "{summary}");
}

/// Microsecond latencies keep their digits in the table, so the percentage beside a value
/// agrees with the values printed (3.4 µs against 8 µs once read `0.003` → `0.008 (235.3%)`).
#[test]
fn small_values_keep_the_digits_their_percentage_is_made_of() {
    let fast = |id: i64, config: &str, p50_ns: u64| {
        let mut r = run(id, config, 1.0);
        r.result.phases[0].total.get_mut(OpClass::Write).lat_ns.p50 = p50_ns;
        r
    };
    let runs = vec![fast(1, "a", 3_400), fast(2, "b", 8_000)];
    let c = compare(
        &runs,
        &CompareOptions { by: Some("config".into()), metrics: vec![Metric::WriteP50Ms], ..Default::default() },
    );
    let table = render_table(&c);
    assert!(table.contains("0.00340") && table.contains("0.00800 (235.3%)"), "{table}");
    let html = iolab_report::html::render(&runs, &iolab_report::html::ReportOptions::default());
    assert!(html.contains("0.00800 <span class=\"pct\">(235.3%)</span>"), "the report prints the same");
}

/// The throughput chart of a phase four runs share, cut out of the report.
fn throughput_chart(html: &str, phase: &str) -> String {
    let from = html.find(&format!("data-chart=\"throughput-{phase}\"")).expect("a throughput chart");
    let to = html[from..].find("</figure>").unwrap();
    html[from..from + to].to_string()
}

/// Four runs (seed 001's ext4 against three DRBD protocols) each draw in their own colour and
/// dash; when one is 36× slower than another the axis turns logarithmic and says so.
#[test]
fn four_runs_get_four_styles_and_a_tenfold_spread_a_log_axis() {
    let with_seconds = |id: i64, mb_s: f64| {
        let mut r = run(id, &format!("c{id}"), 1.0);
        r.result.phases[0].timeline = (1..=5)
            .map(|t| iolab_model::TimelinePoint {
                t_s: t as f64,
                write_bytes: (mb_s * 1e6) as u64 + t * 1000,
                write_ops: 100,
                ..Default::default()
            })
            .collect();
        r
    };
    let strokes = |svg: &str| -> std::collections::BTreeSet<(String, bool)> {
        // (colour, dashed): a dashed series is drawn as many short paths of its colour.
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        for l in svg.lines().filter(|l| l.contains("<polyline") || l.contains("<path")) {
            if let Some(c) = l.split("stroke=\"").nth(1).and_then(|s| s.split('"').next()) {
                *seen.entry(c.to_string()).or_default() += 1;
            }
        }
        seen.into_iter()
            .filter(|(c, _)| !["#222222", "#F0F0F0", "#D4D4D4"].contains(&c.as_str()))
            .map(|(c, n)| (c, n > 2))
            .collect()
    };
    let near = vec![with_seconds(1, 1266.0), with_seconds(2, 1100.0), with_seconds(3, 900.0), with_seconds(4, 1000.0)];
    let html = iolab_report::html::render(&near, &Default::default());
    let chart = throughput_chart(&html, "deliver");
    let styles = strokes(&chart);
    assert_eq!(styles.len(), 4, "four colours: {styles:?}");
    assert_eq!(styles.iter().filter(|(_, dashed)| *dashed).count(), 3, "one solid, three dashed: {styles:?}");
    assert!(chart.contains("MB/s") && !chart.contains("log scale"), "900 to 1266 MB/s stays linear");

    let far = vec![with_seconds(1, 1266.0), with_seconds(2, 35.0), with_seconds(3, 900.0), with_seconds(4, 1000.0)];
    let chart = throughput_chart(&iolab_report::html::render(&far, &Default::default()), "deliver");
    assert!(
        chart.contains("MB/s (log scale)") && chart.contains("so the axis is logarithmic"),
        "35 against 1,266 MB/s"
    );
    assert_eq!(strokes(&chart).len(), 4);
}
