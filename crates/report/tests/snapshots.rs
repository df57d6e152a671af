//! Snapshots of the terminal comparison table and the CSV export, on fixed runs: seed 001's
//! shape (native ext4 against DRBD, three runs of each), so any change to either format shows up
//! in review as a diff of `tests/snapshots/`.

use iolab_model::{ClassTotals, LatNs, OpClass, PhaseResult, RunResult, Status, Totals};
use iolab_report::compare::{compare, render_table, CompareOptions, Metric, Verdict};
use iolab_spec::Plan;
use iolab_store::StoredRun;

mod multi;

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
    let phase = |name: &str, t: Totals| PhaseResult { elapsed_s: secs, total: t, ..PhaseResult::new(name) };
    StoredRun {
        id,
        uid: String::new(),
        kind: iolab_model::RunKind::Run,
        name: "mail.toml".into(),
        labels: [("config".to_string(), config.to_string()), ("note".to_string(), "a, \"quoted\" one".to_string())]
            .into(),
        host: Default::default(),
        pid: 1,
        ended_unix_s: Some(1_795_305_660.0 + id as f64),
        result: RunResult {
            iolab_version: "0.1.0".into(),
            status: Status::Complete,
            phases: vec![phase("deliver", deliver), phase("read", read)],
            ..RunResult::new(Plan { phases: Vec::new() }, "node1", 1_795_305_600.0 + id as f64)
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
    // drbd-A equals ext4, but with n=3 a side its interval (-2.1%..+2.1%) reaches past the 2%
    // band: inconclusive, one more run of each would decide it.
    assert_eq!(iops.cells[2].as_ref().unwrap().verdict, Some(Verdict::Inconclusive));
    assert_eq!(iops.cells[2].as_ref().unwrap().runs_needed, Some(1));
    let p50 = c.rows.iter().find(|r| r.phase == "read" && r.metric == Metric::ReadP50Ms).unwrap();
    assert_eq!(p50.cells[2].as_ref().unwrap().verdict, Some(Verdict::NoChange), "equal runs: no change");
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
    // A 10% slower configuration regresses at 2% and is no change or inconclusive at 15%.
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
            node: None,
            name: "deliver".into(),
            engine: "psync".into(),
            rw: "write".into(),
            threads: 12,
            files: Vec::new(),
            elapsed_s: 60.0,
            total,
            error: None,
            per_thread: Vec::new(),
            workload: Default::default(),
            replay: None,
            holes: None,
            latency_target: None,
            io_errors: None,
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
    assert!(csv.lines().any(|l| l.contains(",deliver,node1,*,create,6000,")), "{csv}");
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

/// A run on two nodes: the summary's per-node table under the aggregate, with when the first
/// and last node were done; the CSV's rows per node and for all of them (`*`).
#[test]
fn a_run_of_two_nodes_in_the_summary_and_the_csv() {
    let r = multi::two_nodes(11, 1.0);
    let summary = iolab_report::summary::render(&r.result);
    insta::assert_snapshot!("summary_two_nodes", summary);
    assert!(summary.contains("first node done at 10.00 s, last at 10.40 s"), "{summary}");
    assert!(summary.contains("a:dd") && summary.contains("b:dd"), "jobs named by node: {summary}");
    let csv = iolab_report::csv::to_csv(std::slice::from_ref(&r));
    insta::assert_snapshot!("csv_two_nodes", csv);
    let nodes: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(5).unwrap()).collect();
    assert_eq!(nodes, ["*", "a", "a", "b", "b"], "{csv}");
    // A run on one machine names its own node.
    assert!(iolab_report::csv::to_csv(&seed_001()[..1]).lines().nth(1).unwrap().contains(",deliver,node1,*,write,"));
}

/// The locking check: four phases, each node's share, and the verdict at the end.
#[test]
fn the_locking_check_in_the_summary_and_the_csv() {
    let r = multi::locking(12);
    let summary = iolab_report::summary::render(&r.result);
    insta::assert_snapshot!("summary_locking", summary);
    assert!(summary.ends_with(
        "verdict of locking: limited by the network (limit: network)\n  - each node alone wrote 11.3 to 11.4 MB/s, 91% of its 100 Mbit/s link (12.5 MB/s)\n  - two writers on node a reached 98% of one writer: the disk shares well\n  - a and b at once reached 191% of one node: the cluster filesystem costs little\n"
    ), "{summary}");
    insta::assert_snapshot!("csv_locking", iolab_report::csv::to_csv(std::slice::from_ref(&r)));
}

/// `compare --by node`: each node of three runs is a configuration, valued from its share of
/// each phase (percentiles from its histograms), with verdicts against the first node.
#[test]
fn compare_by_node() {
    let runs = vec![multi::two_nodes(21, 1.0), multi::two_nodes(22, 1.01), multi::two_nodes(23, 0.99)];
    let c = compare(
        &runs,
        &CompareOptions {
            by: Some(iolab_report::compare::BY_NODE.into()),
            metrics: vec![Metric::WriteMbS, Metric::WriteIops, Metric::WriteP50Ms, Metric::WriteP99Ms],
            ..Default::default()
        },
    );
    insta::assert_snapshot!("compare_by_node", render_table(&c));
    assert_eq!(c.groups.iter().map(|g| g.key.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(c.groups[1].run_ids, [21, 22, 23]);
    let mbs = c.rows.iter().find(|r| r.metric == Metric::WriteMbS).unwrap();
    let (a, b) = (mbs.cells[0].as_ref().unwrap(), mbs.cells[1].as_ref().unwrap());
    assert_eq!(a.n, 3);
    // b: 5.2 MB/s over 10.4 s against a's 5.6 over 10 s, counted in whole 1 MiB writes.
    let want = |mbs: f64, secs: f64| (mbs * 1e6 * secs / 1048576.0).round() * 1048576.0 / secs / 1e6;
    let wb = (want(5.2, 10.4) + want(5.2 * 1.01, 10.4) + want(5.2 * 0.99, 10.4)) / 3.0;
    assert!((b.mean - wb).abs() < 1e-9, "{} against {wb}", b.mean);
    assert_eq!(b.verdict, Some(Verdict::Regressed), "b writes 7% slower than a");
    let p50 = c.rows.iter().find(|r| r.metric == Metric::WriteP50Ms).unwrap();
    assert!(p50.cells[1].as_ref().unwrap().mean > p50.cells[0].as_ref().unwrap().mean, "b's latencies are higher");
    // By a label, the same runs are one configuration of aggregates.
    let by_label = compare(&runs, &CompareOptions { by: Some("fs".into()), ..Default::default() });
    assert_eq!(by_label.groups.len(), 1);
    assert_eq!(by_label.groups[0].run_ids, [21, 22, 23]);
}

/// Two surveys (storage A against B, as seed 003's author drew NFS against OCFS2) open the
/// report with one picture of their profiles side by side, before the runs and the charts.
#[test]
fn two_surveys_are_drawn_side_by_side_in_one_profile_picture() {
    let survey = |id: i64, dir: &str, speed: f64| {
        let mut r = run(id, "x", speed);
        r.kind = iolab_model::RunKind::Survey;
        r.name = dir.into();
        r.labels.clear();
        r.result.phases[0].name = "append-fsync".into();
        r.result.phases[1].name = "seq-read".into();
        r
    };
    let runs = vec![survey(1, "/mnt/nfs", 1.0), survey(2, "/mnt/ocfs2", 0.5)];
    let html = iolab_report::html::render(&runs, &Default::default());
    let (picture, runs_at) = (html.find("<svg class=\"plot profile\""), html.find("<section id=\"runs\">"));
    assert!(picture.is_some() && picture < runs_at, "the picture opens the report");
    let svg = &html[picture.unwrap()..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    assert!(svg.contains("#1 /mnt/nfs") && svg.contains("#2 /mnt/ocfs2"), "each survey named: {svg}");
    assert!(svg.contains("append 4 KiB + fsync") && svg.contains("sequential read 1 MiB"), "{svg}");
    // A bar per survey per step: 250 commits/s against 125, each with its p99.
    assert!(svg.contains("250 commits/s · p99 4.00 ms") && svg.contains("125 commits/s · p99 8.00 ms"), "{svg}");
    assert_eq!(svg.matches("<rect").count(), 2 + 4, "two legend marks and four bars");
}
