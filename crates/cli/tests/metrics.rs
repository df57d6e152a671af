//! Live metrics with the real things (issue 30): a real Prometheus server (Debian's package,
//! started here in a scratch directory on a free port, scraping every second) scraping a
//! running iolab, whose query API's rate of the operations counter agrees with iolab's own
//! IOPS; promtool accepting the endpoint's text; a coordinator of real agents serving every
//! node's series, an agent daemon its own; bad requests refused. Each skips with its reason
//! where prometheus or promtool is missing.
#![allow(clippy::disallowed_macros)] // a test prints its skips with eprintln!, not user text

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// A free loopback port (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 request; the status code and the body.
fn http(addr: &str, request: &str) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head.to_ascii_lowercase(), body.to_string()))
}

fn get(addr: &str, path: &str, accept: Option<&str>) -> Option<(u16, String, String)> {
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    http(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"))
}

fn have(tool: &str) -> bool {
    std::process::Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The value of every sample of `name` whose labels hold all of `with` (`k="v"` pieces).
fn samples(text: &str, name: &str, with: &[&str]) -> Vec<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| with.iter().all(|w| l.contains(w)))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect()
}

/// A process killed when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child's stderr, gathered by a thread.
fn gather(child: &mut Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (l, err) = (log.clone(), child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            l.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    log
}

fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The address a child's log says its endpoint serves at.
fn served_at(log: &std::sync::Arc<std::sync::Mutex<String>>) -> String {
    wait_for("the metrics endpoint to say where it is", Duration::from_secs(30), || {
        let l = log.lock().unwrap().clone();
        let at = l.split("serving live metrics at http://").nth(1)?;
        Some(at.split('/').next()?.to_string())
    })
}

/// Percent-encoding of a query parameter.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server in a scratch directory, scraping `target` every second.
struct Prometheus {
    _child: Guard,
    addr: String,
}

impl Prometheus {
    fn start(dir: &Path, target: &str) -> Prometheus {
        let port = free_port();
        let cfg = dir.join("prometheus.yml");
        std::fs::write(
            &cfg,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: iolab\n    honor_labels: true\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{port}");
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { _child: Guard(child), addr };
        wait_for("prometheus to be ready", Duration::from_secs(60), || {
            get(&p.addr, "/-/ready", None).filter(|r| r.0 == 200)
        });
        // Its scrape manager takes up new targets every 5 s: wait for the first try at ours
        // (down, as nothing listens yet), so scrapes go on from the run's first second.
        wait_for("prometheus to try the target", Duration::from_secs(30), || {
            let (_, _, body) = get(&p.addr, "/api/v1/targets", None)?;
            let v: Value = serde_json::from_str(&body).ok()?;
            let t = v["data"]["activeTargets"]
                .as_array()?
                .iter()
                .find(|t| t["scrapeUrl"].as_str().is_some_and(|u| u.contains(target)))?
                .clone();
            (t["lastScrape"].as_str()? > "2000").then_some(())
        });
        p
    }

    /// The query API's answer (`data.result`).
    fn api(&self, path: &str) -> Value {
        let (status, _, body) = get(&self.addr, path, None).expect("prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!((status, v["status"].as_str()), (200, Some("success")), "{body}");
        v["data"]["result"].clone()
    }
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64()
}

#[test]
fn prometheus_s_rate_of_the_operations_counter_agrees_with_iolab_s_iops() {
    if !have("prometheus") {
        return skip("prometheus is not installed (Debian's prometheus package)");
    }
    let d = tempfile::tempdir().unwrap();
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let prom = Prometheus::start(d.path(), &target);
    // 2,000 reads a second for 10 s: the rate is known before it runs.
    let file = d.path().join("f");
    let out = iolab()
        .args(["run", "--rw", "randread", "--size", "8M", "--rate-iops", "2000", "--runtime", "10s"])
        .arg("--target")
        .arg(&file)
        .args(["--metrics-listen", &target, "--metrics-linger", "3s", "-o", "json", "-l", "test=rate"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let iops = r["phases"][0]["total"]["read"]["iops"].as_f64().unwrap();
    assert!((1900.0..=2100.0).contains(&iops), "the job ran at its rate: {iops}");
    // The counter as Prometheus scraped it: the window over which it rose.
    let now = unix_now();
    let raw = prom.api(&format!(
        "/api/v1/query?query={}&time={now}",
        enc("iolab_operations_total{class=\"read\",test=\"rate\"}[60s]")
    ));
    let values = raw[0]["values"].as_array().unwrap_or_else(|| panic!("no series scraped: {raw}"));
    let points: Vec<(f64, f64)> =
        values.iter().map(|v| (v[0].as_f64().unwrap(), v[1].as_str().unwrap().parse::<f64>().unwrap())).collect();
    let rose: Vec<&(f64, f64)> = points.iter().filter(|p| p.1 > 0.0).collect();
    let first = rose.first().expect("the counter rose").0;
    let last = points.iter().find(|p| p.1 >= points.last().unwrap().1).unwrap().0;
    assert!(last - first >= 6.0, "scraped over the run: {points:?}");
    assert_eq!(
        points.last().unwrap().1 as u64,
        r["phases"][0]["total"]["read"]["ops"].as_u64().unwrap(),
        "the last scrape (in the linger) saw the final count"
    );
    // rate() over 4 s windows lying within the run, every second: their median against iolab's.
    let q = enc("rate(iolab_operations_total{class=\"read\",test=\"rate\"}[4s])");
    let series = prom.api(&format!("/api/v1/query_range?query={q}&start={}&end={last}&step=1", first + 4.0));
    let mut rates: Vec<f64> = series[0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("no rate: {series}"))
        .iter()
        .map(|v| v[1].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(rates.len() >= 3, "{rates:?}");
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    let off = (median / iops - 1.0).abs();
    eprintln!(
        "prometheus rate() median {median:.1}/s over {rates:?}; iolab {iops:.1} IOPS; off by {:.2}%",
        off * 100.0
    );
    assert!(off < 0.05, "Prometheus's rate {median} against iolab's {iops} IOPS ({rates:?})");
    // The latency histogram gives percentiles there too.
    let q = enc("histogram_quantile(0.5, sum by (le) (rate(iolab_operation_latency_seconds_bucket{class=\"read\",test=\"rate\"}[4s])))");
    let answer = prom.api(&format!("/api/v1/query?query={q}&time={last}"));
    let p50: f64 = answer[0]["value"][1].as_str().unwrap().parse().unwrap();
    let q = enc("sum by (le) (rate(iolab_operation_latency_seconds_bucket{class=\"read\",test=\"rate\"}[4s]))");
    let why = prom.api(&format!("/api/v1/query?query={q}&time={last}"));
    assert!(p50 > 0.0 && p50 < 0.1, "a median read latency from the buckets: {answer} {why}");
    // Every query of the Grafana dashboard in docs/ is PromQL this Prometheus takes, and the
    // main panels show this run.
    let dash: Value = serde_json::from_str(include_str!("../../../docs/grafana/iolab.json")).unwrap();
    let panels = dash["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let e = expr.replace("$run_id", ".*").replace("$node", ".*").replace("$__rate_interval", "4s");
            let got = prom.api(&format!("/api/v1/query?query={}&time={last}", enc(&e)));
            let title = p["title"].as_str().unwrap();
            if ["IOPS per class", "Throughput per class", "Latency percentiles (all nodes)", "CPU iowait"]
                .contains(&title)
            {
                assert!(!got.as_array().unwrap().is_empty(), "panel `{title}`: {expr} shows nothing");
            }
        }
    }
}

/// Start `iolab ARGS --metrics-listen 127.0.0.1:0`, its stderr gathered; where it serves.
fn start(args: &[&str]) -> (Guard, String, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut child = iolab_process()
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = gather(&mut child);
    let at = served_at(&log);
    (Guard(child), at, log)
}

#[test]
fn promtool_accepts_the_endpoint_s_text_while_a_run_goes_on() {
    if !have("promtool") {
        return skip("promtool is not installed (Debian's prometheus package)");
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f").display().to_string();
    let labels = ["-l", "config=ext4 \"barrier=0\"", "-l", "db=postgres://iolab:s3cret@db/x", "-l", "9-lives=yes"];
    let mut args =
        vec!["run", "--target", &f, "--size", "8M", "--rw", "randrw", "--runtime", "6s", "--rate-iops", "500"];
    args.extend(["--no-progress", "--metrics-linger", "0s", "--sample-interval", "500ms"]);
    args.extend(labels);
    let (_run, at, _log) = start(&args);
    // Once the first second is in, the text has every kind of series.
    let text = wait_for("a second's figures", Duration::from_secs(30), || {
        let (_, _, body) = get(&at, "/metrics", None)?;
        (body.contains("iolab_operation_latency_seconds_bucket") && body.contains("iolab_cpu_ratio")).then_some(body)
    });
    let mut lint = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let said = lint.wait_with_output().unwrap();
    let words = format!("{}{}", String::from_utf8_lossy(&said.stdout), String::from_utf8_lossy(&said.stderr));
    assert!(said.status.success() && words.trim().is_empty(), "promtool: {words}\n{text}");
    // Labels made valid, no secret in them; the classes of a mixed job each their own series.
    assert!(text.contains("config=\"ext4 \\\"barrier=0\\\"\"") && text.contains("_9_lives=\"yes\""), "{text}");
    assert!(text.contains("db=\"postgres://iolab@db/x\"") && !text.contains("s3cret"), "{text}");
    assert!(text.contains("class=\"read\"") && text.contains("class=\"write\""));
    // OpenMetrics to a scraper that asks for it.
    let (status, head, om) =
        get(&at, "/metrics", Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"))
            .unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("content-type: application/openmetrics-text") && om.ends_with("# EOF\n"), "{head}");
}

#[test]
fn bad_requests_get_404_or_405_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display().to_string();
    let (_watch, at, _log) =
        start(&["watch", &dir, "--interval", "200ms", "--duration", "60s", "--metrics-linger", "0s"]);
    let body = wait_for("a sample", Duration::from_secs(20), || {
        get(&at, "/metrics", None).map(|r| r.2).filter(|b| b.contains("iolab_cpu_ratio"))
    });
    assert!(body.contains("kind=\"watch\""), "{body}");
    let host = format!("Host: {at}\r\nConnection: close\r\n");
    for (req, status) in [
        (format!("POST /metrics HTTP/1.1\r\n{host}Content-Length: 2\r\n\r\n{{}}"), 405),
        (format!("PUT /metrics HTTP/1.1\r\n{host}Content-Length: 0\r\n\r\n"), 405),
        (format!("DELETE /metrics HTTP/1.1\r\n{host}\r\n"), 405),
        (format!("PATCH /metrics HTTP/1.1\r\n{host}Content-Length: 0\r\n\r\n"), 405),
        (format!("GET / HTTP/1.1\r\n{host}\r\n"), 404),
        (format!("GET /metricsx HTTP/1.1\r\n{host}\r\n"), 404),
        (format!("GET /api/v1/query HTTP/1.1\r\n{host}\r\n"), 404),
        (format!("POST /-/quit HTTP/1.1\r\n{host}Content-Length: 0\r\n\r\n"), 404),
    ] {
        let (got, head, body) = http(&at, &req).unwrap_or_else(|| panic!("no answer to {req:?}"));
        assert_eq!(got, status, "{req:?}: {head}{body}");
        assert!(!body.contains("iolab_"), "{req:?} got metrics: {body}");
    }
    // Still serving after all that.
    assert_eq!(get(&at, "/metrics", None).unwrap().0, 200);
}

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

#[test]
fn a_coordinator_serves_every_node_s_series_and_the_last_scrape_has_the_final_counts() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut child = iolab_process()
        .args(["run", "--node", &format!("a=exec://{},dir={}", bin(), a.display())])
        .args(["--node", &format!("b=exec://{},dir={}", bin(), b.display())])
        .args(["--target", "f", "--size", "4M", "--rw", "randread", "--runtime", "3s", "--rate-iops", "300"])
        .args(["-o", "json", "--metrics-listen", "127.0.0.1:0", "--metrics-linger", "4s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // -o json keeps stderr quiet: find the endpoint by the port the process listens on.
    let log = gather(&mut child);
    let pid = child.id();
    let at = wait_for("the coordinator to listen", Duration::from_secs(30), || listening(pid));
    // Scrape until the process ends; keep the last page.
    let mut last = String::new();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(60) {
        if let Some((200, _, body)) = get(&at, "/metrics", None) {
            last = body;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success(), "{}", log.lock().unwrap());
    let r: Value = serde_json::from_str(&stdout).unwrap();
    let node_ops = |n: &str| {
        r["phases"][0]["nodes"].as_array().unwrap().iter().find(|x| x["name"] == n).unwrap()["total"]["read"]["ops"]
            .as_u64()
            .unwrap()
    };
    for n in ["a", "b"] {
        let ops = samples(&last, "iolab_operations_total", &[&format!("node=\"{n}\""), "class=\"read\""]);
        assert_eq!(ops, [node_ops(n) as f64], "node {n}'s count, final, in the last scrape:\n{last}");
        let lat = samples(&last, "iolab_operation_latency_seconds_count", &[&format!("node=\"{n}\"")]);
        assert_eq!(lat, [node_ops(n) as f64], "node {n}'s histogram holds every read");
        assert!(!samples(&last, "iolab_cpu_ratio", &[&format!("node=\"{n}\"")]).is_empty(), "node {n}'s CPU");
    }
    assert!(!last.contains("node=\"*\""), "the aggregate is no node");
    assert_eq!(samples(&last, "iolab_run_status", &["status=\"complete\""]), [1.0]);
    assert_eq!(samples(&last, "iolab_run_phases_ended", &[]), [1.0]);
}

/// The loopback address process `pid` listens on with TCP (its one listening socket).
fn listening(pid: u32) -> Option<String> {
    let mut inodes = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let l = std::fs::read_link(e.path()).ok()?.display().to_string();
        if let Some(i) = l.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']')) {
            inodes.push(i.to_string());
        }
    }
    let tcp = std::fs::read_to_string("/proc/net/tcp").ok()?;
    for line in tcp.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // local address, state 0A (listen), inode
        if f.len() > 9 && f[3] == "0A" && inodes.contains(&f[9].to_string()) {
            let (ip, port) = f[1].split_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            if ip == "0100007F" {
                return Some(format!("127.0.0.1:{port}"));
            }
        }
    }
    None
}

#[test]
fn an_agent_daemon_serves_its_own_node_only() {
    let d = tempfile::tempdir().unwrap();
    let token = d.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let mut child = iolab_process()
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .arg("--state-dir")
        .arg(d.path().join("state"))
        .arg("--allow")
        .arg(d.path())
        .args(["--metrics-listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = gather(&mut child);
    let _agent = Guard(child);
    let metrics = served_at(&log);
    let addr = wait_for("the agent to listen", Duration::from_secs(20), || {
        let l = log.lock().unwrap().clone();
        Some(l.split("listening on ").nth(1)?.split_whitespace().next()?.to_string())
    });
    assert_eq!(get(&metrics, "/metrics", None).unwrap().2, "", "nothing before a run");
    let out = iolab()
        .env("IOLAB_DB", d.path().join("db/results.db"))
        .args(["run", "-o", "json", "--rw", "write", "--size", "2M", "--target", "f", "--token-file"])
        .arg(&token)
        .args(["--node", &format!("far={addr},dir={}", d.path().display())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), log.lock().unwrap());
    let (_, _, text) = get(&metrics, "/metrics", None).unwrap();
    let ops = samples(&text, "iolab_operations_total", &["node=\"far\"", "class=\"write\""]);
    assert_eq!(ops, [512.0], "2 MiB of 4 KiB writes, on the node the coordinator named:\n{text}");
    assert!(text.lines().filter(|l| l.starts_with("iolab_operations_total")).all(|l| l.contains("node=\"far\"")));
    assert!(text.contains("kind=\"agent\"") && text.contains("status=\"complete\"} 1"), "{text}");
    // run_id: the run's mark, 32 hex digits.
    let id = text.split("run_id=\"").nth(1).unwrap().split('"').next().unwrap();
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
}

/// Hostile addresses for the endpoint, and a malformed team-database URL carrying a password:
/// one clear error each, exit 2, before any I/O, and the password never printed.
#[test]
fn bad_listen_addresses_and_a_bad_database_url_get_one_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("f");
    for addr in ["", "garbage", "127.0.0.1:99999", "1.2.3.4:80", "127.0.0.1:-1"] {
        let out = iolab()
            .args(["run", "--size", "1M", "--engine", "null", "--runtime", "100ms", "--no-store", "--target"])
            .arg(&target)
            .args(["--metrics-listen", addr])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr:?}: {err}");
        assert!(err.contains("--metrics-listen") && !err.contains("panicked"), "{addr:?}: {err}");
        assert!(!target.exists(), "{addr:?}: refused only after laying out the target");
    }
    let out = iolab().args(["runs", "--db", "postgres://u:s3cretpw@[bad"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("s3cretpw") && err.contains("***"), "{err}");
}
