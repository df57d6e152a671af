//! The HTML report over real runs: two runs of real I/O on a temporary file (labels config=a
//! and config=b, so the comparison appears), rendered once and checked as text and, where
//! Chromium is installed, as a page a browser loads and draws.

use iolab_report::html::{default_title, render, ReportOptions};
use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw};
use iolab_store::StoredRun;
use iolab_workload::{run_plan_kept, Control, NoSink};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod multi;

const EVIL: &str = "<script>alert(1)</script>";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn one_run(dir: &Path, id: i64, config: &str) -> StoredRun {
    let target = dir.join(format!("data-{config}"));
    let job = |name: &str, rw: Rw, fsync_every: Option<u64>| {
        JobPatch {
            name: Some(name.into()),
            target: Some(target.clone()),
            size: Some(Bytes::mib(16)),
            rw: Some(rw),
            runtime: Some(Duration::from_secs(2)),
            fsync_every,
            ..Default::default()
        }
        .resolve(name)
        .expect("a valid job")
    };
    let plan = Plan {
        phases: vec![
            Phase { name: "write".into(), jobs: vec![job("write", Rw::Write, Some(16))] },
            Phase { name: "rand read".into(), jobs: vec![job("randread", Rw::RandRead, None)] },
        ],
    };
    let ctl = Control {
        stop: Arc::new(AtomicBool::new(false)),
        start_at: None,
        sample_interval: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let result = run_plan_kept(&plan, &ctl, &mut NoSink).expect("the run");
    let mut labels = BTreeMap::from([("config".to_string(), config.to_string())]);
    if id == 2 {
        labels.insert("note".into(), EVIL.into());
    }
    let target_info = result.phases.iter().find_map(|p| p.system.as_ref()?.target.clone());
    StoredRun {
        id,
        uid: String::new(),
        kind: iolab_model::RunKind::Run,
        name: "html-report-test".into(),
        labels,
        host: iolab_sysstat::host_facts(target_info.as_ref()),
        pid: std::process::id(),
        ended_unix_s: Some(result.started_unix_s + result.phases.iter().map(|p| p.elapsed_s).sum::<f64>()),
        result,
    }
}

/// The two runs, made once for all tests of this file.
fn runs() -> &'static [StoredRun] {
    static RUNS: OnceLock<Vec<StoredRun>> = OnceLock::new();
    RUNS.get_or_init(|| {
        // Under target/ rather than /tmp, which may be a tmpfs: the writes should reach a disk.
        let base = repo().join("target");
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(&base).unwrap();
        vec![one_run(dir.path(), 1, "a"), one_run(dir.path(), 2, "b")]
    })
}

fn report() -> &'static str {
    static HTML: OnceLock<String> = OnceLock::new();
    HTML.get_or_init(|| {
        render(
            runs(),
            &ReportOptions {
                title: String::new(),
                baseline: Some(0),
                by: Some("config".into()),
                noise: None,
                survey_locking: None,
                sets: Vec::new(),
            },
        )
    })
}

/// The charts the report must have: throughput, IOPS and latency for every phase, CPU where the
/// system was sampled, and the disk charts where some block device had samples.
fn expected_charts() -> Vec<String> {
    let mut v = Vec::new();
    for (slug, name) in [("write", "write"), ("rand-read", "rand read")] {
        let phases: Vec<_> = runs().iter().filter_map(|r| r.result.phases.iter().find(|p| p.name == name)).collect();
        assert_eq!(phases.len(), 2, "both runs have phase {name}");
        v.push(format!("throughput-{slug}"));
        v.push(format!("iops-{slug}"));
        v.push(format!("latency-{slug}"));
        let samples: Vec<_> = phases.iter().filter_map(|p| p.system.as_ref()).flat_map(|s| &s.samples).collect();
        assert!(!samples.is_empty(), "the system was sampled in phase {name}");
        v.push(format!("cpu-{slug}"));
        if samples.iter().any(|s| !s.disks.is_empty()) {
            v.push(format!("disk-util-{slug}"));
            v.push(format!("disk-await-{slug}"));
        }
    }
    v
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn report_has_every_chart_no_external_reference_and_escapes_labels() {
    let html = report();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let expected = expected_charts();
    for c in &expected {
        assert_eq!(count(html, &format!("data-chart=\"{c}\"")), 1, "chart {c} once");
    }
    assert_eq!(count(html, "<figure class=\"chart\" data-chart="), expected.len(), "no other chart");
    // Every chart is plotters' SVG, inline.
    assert_eq!(count(html, "<svg"), expected.len());
    // Charts whose data is empty are replaced by a note; only the disk charts can be, here.
    for skipped in html.split("data-chart-skipped=\"").skip(1) {
        let m = skipped.split('"').next().unwrap();
        assert!(m.starts_with("disk-") && !expected.iter().any(|e| e == m), "skipped {m}");
    }
    for external in ["http://", "https://", "src=", "url(", "@import", "<link", "<script"] {
        assert!(!html.to_lowercase().contains(external), "the report contains {external}");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the label is escaped");
    assert!(!html.contains(EVIL));

    // Header, runs, summary, comparison.
    assert!(html.contains(&format!("<title>{}</title>", default_title(runs()))));
    assert_eq!(default_title(runs()), "iolab report: html-report-test, 2 runs");
    assert!(html.contains(&format!("by iolab {}", env!("CARGO_PKG_VERSION"))));
    let host = &runs()[0].host;
    assert!(html.contains(&host.hostname) && html.contains(&host.kernel), "host facts");
    for id in
        ["id=\"runs\"", "id=\"summary\"", "id=\"comparison\"", "id=\"charts\"", "@media print", "break-inside: avoid"]
    {
        assert!(html.contains(id), "{id}");
    }
    assert!(html.contains("a (baseline)"), "the baseline group heads its column");
    assert!(html.contains("write MB/s") && html.contains("fsync p99 ms"), "comparison metrics");
    // Summary: one row per run and phase, with the fsync count of the write phase.
    let w = &runs()[0].result.phases[0];
    assert!(w.total.sync().ops > 0);
    let fsyncs = iolab_report::fmt::count(w.total.sync().ops as f64);
    assert!(html.contains(&format!("<td class=\"n\">{fsyncs}</td>")), "fsync count in the summary, separated");
}

#[test]
fn one_run_has_no_comparison_and_empty_phases_get_notes() {
    let mut run = runs()[0].clone();
    for p in &mut run.result.phases {
        p.timeline.clear();
        p.system = None;
    }
    let html = render(std::slice::from_ref(&run), &ReportOptions { title: "Only <one>".into(), ..Default::default() });
    assert!(html.contains("<h1>Only &lt;one&gt;</h1>"));
    assert!(!html.contains("id=\"comparison\""));
    // Latency comes from the totals, so it stays; the rest are notes.
    assert_eq!(count(&html, "<figure class=\"chart\""), 2);
    assert!(html.contains("data-chart=\"latency-write\"") && html.contains("data-chart=\"latency-rand-read\""));
    for c in ["throughput", "iops", "cpu", "disk-util", "disk-await"] {
        assert!(html.contains(&format!("data-chart-skipped=\"{c}-write\"")), "{c} note");
    }
    assert!(render(&[], &ReportOptions::default()).contains("No runs to report."));
}

/// The findings the terminal prints under a phase are in the report's summary, named by run
/// and phase; a run with nothing standing out has no findings list.
#[test]
fn the_summary_lists_each_phases_findings() {
    let mut run = runs()[0].clone();
    for p in &mut run.result.phases {
        p.system = None;
        // What the run itself found (the fidelity and limit rules, run on this machine's
        // devices) is not this test's: it starts from nothing standing out.
        p.findings.clear();
        p.limit = None;
    }
    let opts = ReportOptions::default();
    assert!(!render(std::slice::from_ref(&run), &opts).contains("<ul class=\"findings\">"));
    let mut sys = iolab_sysstat::SystemResult::default();
    sys.mean.cpu.all.iowait_pct = 40.0;
    run.result.phases[1].system = Some(sys);
    let html = render(std::slice::from_ref(&run), &opts);
    let (summary, list) = (html.find("<section id=\"summary\">"), html.find("<ul class=\"findings\">"));
    assert!(summary.is_some() && list > summary, "the list is in the summary");
    assert!(html.contains(": CPU I/O wait 40%"), "the I/O-wait finding");
    assert_eq!(count(&html, "<li>"), 1, "one finding, in one phase");
    assert!(html.contains("phase rand read: CPU I/O wait 40%"), "named by its phase");
}

/// `/usr/bin/chromium`, else `chromium` on PATH; `IOLAB_CHROMIUM` overrides both (a path that
/// does not exist, or an empty one, means none).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if Path::new("/usr/bin/chromium").exists() {
        return Some("/usr/bin/chromium".into());
    }
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join("chromium")).find(|p| p.is_file())
}

fn skip(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}");
    eprintln!("{line}");
    let path = repo().join("target/test-skips.txt");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(f, "{line}");
    }
}

/// Run headless Chromium on `page` with `extra` arguments; stdout and stderr.
fn run_chromium(bin: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts");
    let (so, se) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "chromium failed: {:?}\n{se}", out.status);
    (so, se)
}

/// Console messages of the page. Chromium logs every one (console.log, console.error, uncaught
/// exceptions) as `[pid:tid:time:INFO:CONSOLE:line] "text", source: url (line)`, whatever its
/// level; the report has no script, so any of them is a fault.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

#[test]
fn chromium_loads_and_draws_the_report() {
    const TEST: &str = "chromium_loads_and_draws_the_report";
    let Some(bin) = chromium() else {
        skip(TEST, "chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // First, that this Chromium's console lines are recognised at all: a page that errs.
    let bad = dir.path().join("bad.html");
    std::fs::write(&bad, "<!DOCTYPE html><p>x</p><script>console.error('iolab-probe'); notDefined();</script>")
        .unwrap();
    let (_, stderr) = run_chromium(&bin, &bad, &["--dump-dom".into()]);
    let console = console_lines(&stderr);
    assert!(
        console.iter().any(|l| l.contains("iolab-probe")) && console.iter().any(|l| l.contains("Uncaught")),
        "console errors are not seen in Chromium's log:\n{stderr}"
    );

    let page = dir.path().join("report.html");
    std::fs::write(&page, report()).unwrap();

    let (dom, stderr) = run_chromium(&bin, &page, &["--dump-dom".into()]);
    for c in expected_charts() {
        assert!(dom.contains(&format!("data-chart=\"{c}\"")), "chart {c} in the DOM Chromium built");
    }
    assert!(dom.contains("<svg"), "SVG in the DOM");
    assert!(dom.contains("id=\"comparison\""));
    let console = console_lines(&stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");

    let shot = repo().join("target/report-artifacts/report.png");
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) =
        run_chromium(&bin, &page, &[format!("--screenshot={}", shot.display()), "--window-size=1280,4000".into()]);
    let console = console_lines(&stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(png.len() > 50_000, "a screenshot of {} bytes is too small to show the report", png.len());
    // Kept beside the report for people to look at.
    std::fs::write(shot.with_extension("html"), report()).unwrap();
}

/// The report of runs of several nodes: seed 000's locking check and seed 003's scaling.
fn node_report() -> String {
    let mut locking = multi::locking(1);
    locking.labels.insert("note".into(), EVIL.into());
    render(&[locking, multi::scaling(2)], &ReportOptions::default())
}

/// Each phase gets its per-node table; the locking run its bars and verdict, the scaling run
/// its chart of throughput against clients; nothing of a run on one machine changes.
#[test]
fn runs_of_several_nodes_get_their_tables_bars_and_scaling_chart() {
    let html = node_report();
    assert!(html.contains("<section id=\"nodes\">"));
    assert!(html.contains("a and b <span class=\"muted\">(2 nodes)</span>"), "the summary's aggregate row");
    assert_eq!(count(&html, "<table class=\"nodes\">"), 8, "four phases of each run");
    assert!(html.contains("<th>skew ms</th>") && html.contains("<th>CPU us/sy/wa %</th>"));
    assert!(html.contains("<td>veth0</td>"), "the busiest interface");
    assert!(html.contains("first node done at 10.00 s, last at 10.10 s"));
    assert!(html.contains("data-chart=\"locking-1\"") && html.contains("data-chart=\"scaling-2\""));
    assert!(!html.contains("data-chart=\"scaling-1\""), "the locking check is no scaling sweep");
    assert!(html.contains("Verdict of locking: limited by the network</strong> (limit: <code>network</code>)"));
    assert!(html.contains("<li>two writers on node a reached 98% of one writer: the disk shares well</li>"));
    assert!(html.contains("Verdict of scaling: limited by the disk"));
    assert!(!html.contains(EVIL));
    // The locking chart: four checks' aggregates and both nodes of the fourth, with values.
    let from = html.find("data-chart=\"locking-1\"").unwrap();
    let chart = &html[from..from + html[from..].find("</figure>").unwrap()];
    let texts: Vec<&str> = chart.lines().map(str::trim).collect();
    for t in ["1", "2", "3", "4", "4 a", "4 b", "21.6", "node a", "node b", "all nodes"] {
        assert!(texts.contains(&t), "{t} in the locking chart: {chart}");
    }
    assert!(!runs().iter().any(|r| r.result.phases.iter().any(|p| !p.nodes.is_empty())));
    assert!(!report().contains("id=\"nodes\""), "one machine: no nodes section");
}

/// The node charts drawn in the real browser: each SVG is laid out with a size, the locking
/// chart has its six bars and the scaling chart its three lines, and the page logs nothing.
#[test]
fn chromium_draws_the_node_charts() {
    const TEST: &str = "chromium_draws_the_node_charts";
    let Some(bin) = chromium() else {
        skip(TEST, "chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("nodes.html");
    std::fs::write(&page, node_report()).unwrap();
    let (_, stderr) = run_chromium(&bin, &page, &["--dump-dom".into()]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:#?}", console_lines(&stderr));
    // Kept for people to look at, beside the other report's.
    let shot = repo().join("target/report-artifacts/nodes.png");
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    run_chromium(&bin, &page, &[format!("--screenshot={}", shot.display()), "--window-size=1280,5200".into()]);
    std::fs::write(shot.with_extension("html"), node_report()).unwrap();
    // The same page with a script that measures what the browser drew into the DOM.
    let probe = dir.path().join("probe.html");
    let script = r#"<script>
const out = [];
for (const f of document.querySelectorAll('figure[data-chart^="locking-"], figure[data-chart^="scaling-"]')) {
  const svg = f.querySelector('svg');
  const box = svg.getBoundingClientRect();
  const bars = [...svg.querySelectorAll('rect')].filter(r => {
    const b = r.getBoundingClientRect();
    const fill = (r.getAttribute('fill') || '').toUpperCase();
    return b.width > 2 && b.height > 2 && fill !== '#FFFFFF' && fill !== 'WHITE';
  }).length;
  // The aggregate's line, solid in the first colour, laid out with a length.
  const lines = [...svg.querySelectorAll('polyline')].filter(l =>
    (l.getAttribute('stroke') || '').toUpperCase() === '#4E79A7' && l.getBoundingClientRect().width > 50).length;
  out.push(`${f.dataset.chart} ${Math.round(box.width)}x${Math.round(box.height)} bars=${bars} lines=${lines}`);
}
const pre = document.createElement('pre');
pre.id = 'probe';
pre.textContent = out.join('\n');
document.body.appendChild(pre);
</script>"#;
    std::fs::write(&probe, node_report().replace("</body>", &format!("{script}</body>"))).unwrap();
    let (dom, _) = run_chromium(&bin, &probe, &["--dump-dom".into(), "--window-size=1280,4000".into()]);
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + "<pre id=\"probe\">".len();
    let measured = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let lines: Vec<&str> = measured.lines().collect();
    assert_eq!(lines.len(), 2, "{measured}");
    for l in &lines {
        let size = l.split(' ').nth(1).unwrap();
        let (w, h) = size.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w >= 300 && h >= 150, "{l}");
    }
    let locking = lines.iter().find(|l| l.starts_with("locking-1")).unwrap();
    assert!(locking.contains("bars=6"), "four checks and the fourth's two nodes: {locking}");
    let scaling = lines.iter().find(|l| l.starts_with("scaling-2")).unwrap();
    assert!(scaling.contains("lines=1"), "the aggregate's line: {scaling}");
}
