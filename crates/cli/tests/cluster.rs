//! Several nodes at once, with real agent processes on this machine (`exec://` nodes run
//! `iolab agent --stdio`, the transport ssh uses): files really written on each node, the
//! results merged, the start skew reported; targets outside `--allow` refused; a lost agent
//! and a lost coordinator noticed within 5 s.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn have(cmd: &str) -> bool {
    std::process::Command::new(cmd).arg("--version").output().is_ok()
}

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

fn node(name: &str, dir: &Path) -> String {
    format!("{name}=exec://{},dir={}", bin(), dir.display())
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
        if after.split_whitespace().nth(1).and_then(|s| s.parse::<u32>().ok()) == Some(pid) {
            out.push(p);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_nodes_write_their_files_start_together_and_merge() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let r = run_json(&[
        "run",
        "--node",
        &node("a", &a),
        "--node",
        &node("b", &b),
        "--target",
        "f",
        "--rw",
        "write",
        "--size",
        "8M",
        "--sample-interval",
        "0",
    ]);
    for dir in [&a, &b] {
        assert_eq!(std::fs::metadata(dir.join("f")).unwrap().len(), 8 << 20, "{}", dir.display());
    }
    assert_eq!(r["status"], "complete");
    let names: Vec<&str> = r["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(r["nodes"][0]["rtt_ns"].as_u64().unwrap() > 0);
    let p = &r["phases"][0];
    let jobs = p["jobs"].as_array().unwrap();
    assert_eq!(jobs.iter().map(|j| j["node"].as_str().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
    let ops: u64 = jobs.iter().map(|j| u(&j["total"]["write"]["ops"])).sum();
    assert_eq!(ops, 2 * 2048, "8 MiB of 4 KiB writes on each node");
    assert_eq!(u(&p["total"]["write"]["ops"]), ops, "the aggregate is the nodes' sum");
    assert_eq!(u(&p["total"]["write"]["bytes"]), 16 << 20);
    let nodes = p["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for n in nodes {
        // Measured on the node's own clock against the instant it was given on that clock: a
        // node never starts before it (its gate waits for it), whatever the clock offset.
        let skew = n["start_skew_ns"].as_i64().unwrap();
        assert!(skew >= 0, "node {} started {} ns before the instant", n["name"], -skew);
        assert_eq!(u(&n["total"]["write"]["ops"]), 2048);
    }
    let (first, last) = (p["first_done_s"].as_f64().unwrap(), p["last_done_s"].as_f64().unwrap());
    assert!(first <= last && last > 0.0, "{first} {last}");
    // Every field is documented in docs/json.md.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let rows: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|x| x.0)).collect();
    for path in [
        "nodes[].clock_offset_ns",
        "nodes[].dir",
        "phases[].jobs[].node",
        "phases[].nodes[].start_skew_ns",
        "phases[].last_done_s",
    ] {
        assert!(rows.contains(&path), "{path} is not in docs/json.md");
    }
    for (k, _) in r["nodes"][0].as_object().unwrap() {
        assert!(rows.contains(&format!("nodes[].{k}").as_str()), "nodes[].{k} is not in docs/json.md");
    }
    for (k, _) in p["nodes"][0].as_object().unwrap() {
        assert!(
            rows.iter().any(|r| r.starts_with(&format!("phases[].nodes[].{k}"))),
            "phases[].nodes[].{k} undocumented"
        );
    }
    // Saved as one run: each node's rows and the aggregate under `*`.
    let db = rusqlite::Connection::open(db_path()).unwrap();
    let mut q =
        db.prepare("SELECT DISTINCT node FROM phases WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY node").unwrap();
    let stored: Vec<String> = q.query_map([], |r| r.get(0)).unwrap().map(|x| x.unwrap()).collect();
    assert_eq!(stored, ["*", "a", "b"]);
}

/// Steady state on several nodes (issue 29): a steady `--rate-iops` job on two agents ends
/// after exactly the window's rounds on both, ended by the coordinator once both nodes and
/// their sum were steady; the merged phase's rounds are the nodes' sums, each node's own
/// verdict beside them.
#[test]
fn a_steady_rate_on_two_nodes_ends_after_the_window_on_both() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    #[rustfmt::skip]
    let r = run_json(&[
        "run", "--no-store", "--node", &node("a", &a), "--node", &node("b", &b),
        "--target", "f", "--rw", "randwrite", "--size", "4M", "--rate-iops", "400", "--sample-interval", "0",
        "--steady-state", "snia", "--round", "1s", "--ss-max-rounds", "12",
    ]);
    assert_eq!(r["status"], "complete", "{r}");
    let s = &r["phases"][0]["steady_state"];
    assert_eq!(
        (s["attained"].as_bool(), s["steady_at"].as_u64(), s["measured"].as_u64()),
        (Some(true), Some(5), Some(5)),
        "{s}"
    );
    let vals =
        |v: &Value| -> Vec<f64> { v["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    let nodes = s["nodes"].as_array().unwrap();
    assert_eq!(nodes.iter().map(|n| n["node"].as_str().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
    for n in nodes {
        assert_eq!((n["attained"].as_bool(), n["measured"].as_u64()), (Some(true), Some(5)), "{n}");
        for x in vals(n) {
            assert!((x - 400.0).abs() <= 20.0, "each node near 400 IOPS a round: {n}");
        }
    }
    let (sum, na, nb) = (vals(s), vals(&nodes[0]), vals(&nodes[1]));
    for i in 0..5 {
        assert!((sum[i] - na[i] - nb[i]).abs() < 1e-9, "round {}: {} is not {} + {}", i + 1, sum[i], na[i], nb[i]);
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    for row in ["| `phases[].steady_state.nodes[]` |", "| `phases[].steady_state.nodes[].node` |"] {
        assert!(doc.contains(row), "{row} is not in docs/json.md");
    }
}

/// A rate that falls every round on both nodes (a judged job of 100 IOPS beside six of 300 IOPS
/// ending one a round): no node and not their sum is ever steady; both run to the maximum of 6
/// rounds, the merged rounds the nodes' sums.
#[test]
fn a_rate_that_falls_every_round_on_two_nodes_runs_both_to_the_maximum() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut toml = String::from("[[phase]]\nname = \"falling\"\n");
    toml += "[[phase.job]]\nname = \"judged\"\ntarget = \"j\"\nsize = \"1M\"\nrw = \"randwrite\"\nrate_iops = 100\nsteady_state = \"snia\"\nround = \"1s\"\nss_max_rounds = 6\n";
    for k in 1..=6 {
        toml += &format!(
            "[[phase.job]]\nname = \"b{k}\"\ntarget = \"b{k}\"\nsize = \"1M\"\nrw = \"randwrite\"\nrate_iops = 300\nruntime = \"{k}s\"\n"
        );
    }
    let job = d.path().join("falling.toml");
    std::fs::write(&job, toml).unwrap();
    #[rustfmt::skip]
    let r = run_json(&[
        "run", "--no-store", "--node", &node("a", &a), "--node", &node("b", &b), "--sample-interval", "0",
        job.to_str().unwrap(),
    ]);
    assert_eq!(r["status"], "complete", "{r}");
    let s = &r["phases"][0]["steady_state"];
    assert_eq!((s["attained"].as_bool(), s["measured"].as_u64()), (Some(false), Some(6)), "{s}");
    assert!(s.get("steady_at").is_none(), "{s}");
    let vals =
        |v: &Value| -> Vec<f64> { v["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    let nodes = s["nodes"].as_array().unwrap();
    for n in nodes {
        assert_eq!((n["attained"].as_bool(), n["measured"].as_u64()), (Some(false), Some(6)), "{n}");
        for (i, x) in vals(n).iter().enumerate() {
            let want = 1900.0 - 300.0 * i as f64;
            assert!((x - want).abs() <= 0.05 * want, "round {} near {want}: {n}", i + 1);
        }
    }
    let (sum, na, nb) = (vals(s), vals(&nodes[0]), vals(&nodes[1]));
    assert_eq!(sum.len(), 6);
    for i in 0..6 {
        assert!((sum[i] - na[i] - nb[i]).abs() < 1e-9, "round {}: {} is not {} + {}", i + 1, sum[i], na[i], nb[i]);
    }
}

/// The one merge (issue 23): the aggregate the coordinator merged live is the one the store
/// rebuilds from the nodes' own rows (as after a coordinator killed before it saved it), by
/// the same rule: the window from the first start to the last end, the seconds aligned by
/// time, the mean latency of each second kept. fio's logs of the merged run and of each node
/// are written, the latency log's means non-zero.
#[test]
fn the_live_aggregate_is_the_one_the_store_rebuilds_and_fios_logs_hold_its_latency() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let logs = d.path().join("fio").display().to_string();
    // A database of this test's own: the others' runs (stored at the same time) are not the
    // last one in it.
    let own_db = d.path().join("results.db");
    #[rustfmt::skip]
    let out = iolab().env("IOLAB_DB", &own_db).args([
        "run", "--node", &node("a", &a), "--node", &node("b", &b),
        "--target", "f", "--rw", "randwrite", "--size", "4M", "--rate-iops", "400",
        "--sample-interval", "0", "--write-lat-log", &logs, "--write-iops-log", &logs, "--output", "json",
    ]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "complete", "{r}");
    let live = r["phases"][0].clone();
    assert!(live["timeline"].as_array().unwrap().len() >= 2, "a run of about 2.6 s: {}", live["timeline"]);
    assert!(live["timeline"].as_array().unwrap().iter().any(|p| u(&p["write_lat_mean_ns"]) > 0));

    // The store's own rebuild: the aggregate's rows gone, as if never saved.
    let db = rusqlite::Connection::open(&own_db).unwrap();
    let id: i64 = db.query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0)).unwrap();
    for table in ["phases", "timeline", "samples"] {
        db.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND node = '*'"), [id]).unwrap();
    }
    for table in ["totals", "threads"] {
        db.execute(&format!("DELETE FROM {table} WHERE run_id = ?1 AND node = '*'"), [id]).unwrap();
    }
    let out = iolab().env("IOLAB_DB", &own_db).args(["show", &id.to_string(), "--output", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stored = shown[0]["result"]["phases"][0].clone();
    // What the store cannot know: that the phase ended as a whole, and the instant each node
    // was told (its skew).
    assert_eq!(stored["interrupted"], true);
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("interrupted");
        for n in v["nodes"].as_array_mut().unwrap() {
            n.as_object_mut().unwrap().remove("start_skew_ns");
        }
        v
    };
    let (live, stored) = (strip(live), strip(stored));
    for key in ["elapsed_s", "started_unix_s", "first_done_s", "last_done_s", "total", "timeline", "jobs", "nodes"] {
        assert_eq!(live[key], stored[key], "{key}: live against stored");
    }
    assert_eq!(live, stored);

    // fio's logs: the merged run's, and each node's as fio's client names a server's.
    let lat = std::fs::read_to_string(format!("{logs}_lat.1.log")).unwrap();
    let lines: Vec<&str> = lat.lines().collect();
    assert!(lines.len() >= 2, "{lat}");
    for l in &lines {
        let f: Vec<&str> = l.split(", ").collect();
        assert_eq!(f[2], "1", "writes: {l}");
        assert!(f[1].parse::<u64>().unwrap() > 0, "a mean latency of 0 ns: {l}");
    }
    let iops: u64 = std::fs::read_to_string(format!("{logs}_iops.1.log"))
        .unwrap()
        .lines()
        .map(|l| l.split(", ").nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(iops > 400, "both nodes' I/O in the merged log: {iops} IOPS over its seconds");
    for n in ["a", "b"] {
        let own = std::fs::read_to_string(format!("{logs}_lat.1.log.{n}")).unwrap();
        assert!(own.lines().count() >= 2 && !own.contains(", 0, 1, 0, 0"), "{n}: {own}");
    }
}

/// A run on several nodes is checked before any node is contacted: a node that needs what
/// was not given, or a plan that breaks a rule, is refused without dialling the others (here
/// an ssh node that does not exist: reaching it would fail otherwise).
#[test]
fn a_run_on_nodes_is_checked_before_any_node_is_contacted() {
    let d = tempfile::tempdir().unwrap();
    let nowhere = format!("a=ssh://nobody@iolab-no-such-host.invalid,dir={}", d.path().display());
    let t = Instant::now();
    #[rustfmt::skip]
    let cases: [(&[&str], &str); 3] = [
        (&["--node", &nowhere, "--node", "b=127.0.0.1:1", "--target", "f", "--size", "1M"], "wants its token"),
        (&["--node", &nowhere, "--node", "b=exec:///bin/true", "--target", "f", "--size", "1M"], "needs dir=PATH"),
        (&["--node", &nowhere, "--target", "f", "--size", "1M", "--bs", "1000", "--direct"], "512"),
    ];
    for (args, says) in cases {
        let out = iolab().arg("run").args(args).args(["--sample-interval", "0"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("ssh failed") && !err.contains("copying"), "no node was dialled: {err}");
    }
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
}

#[test]
fn targets_outside_allow_are_refused_before_any_io() {
    let d = tempfile::tempdir().unwrap();
    let (a, other) = (d.path().join("a"), d.path().join("other"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::os::unix::fs::symlink(&other, a.join("link")).unwrap();
    let outside = other.join("f").display().to_string();
    for (target, says) in [
        ("../other/f", "`..` is not allowed"),
        ("link/f", "outside the agent's --allow"),
        (outside.as_str(), "outside"),
    ] {
        let out = iolab()
            .args(["run", "--no-store", "--node", &node("a", &a), "--target", target, "--rw", "write", "--size", "1M"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{target}: {err}");
        assert!(err.contains(says), "{target}: {err}");
        assert!(!other.join("f").exists(), "{target}: nothing written outside");
    }
    // A local or ssh node names the one directory its agent may use.
    let out = iolab()
        .args(["run", "--no-store", "--node", &format!("a=exec://{}", bin()), "--target", "f", "--size", "1M"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("needs dir=PATH"), "{err}");
    // A personality on the null engine still makes directories and files: checked all the same.
    let out = iolab()
        .args(["run", "--no-store", "--node", &node("a", &a), "--workload", "varmail", "--engine", "null"])
        .args(["--runtime", "1s", "--target"])
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("outside the agent's --allow"), "{err}");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0, "nothing made outside --allow: {err}");
}

/// A two-node run of `secs` seconds, started in the background.
fn long_run(a: &Path, b: &Path, secs: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    iolab_process()
        .process_group(0)
        .args(["run", "--no-store", "-o", "json", "--node", &node("a", a), "--node", &node("b", b)])
        .args(["--target", "f", "--rw", "write", "--size", "1M", "--bs", "4k", "--rate-iops", "200"])
        .args(["--runtime", secs, "--sample-interval", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn kill9(pid: u32) {
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
}

#[test]
fn a_killed_agent_is_reported_within_5_s_and_the_other_node_stops() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut run = long_run(&a, &b, "30s");
    wait_for("both files", Duration::from_secs(30), || a.join("f").exists() && b.join("f").exists());
    std::thread::sleep(Duration::from_millis(1500));
    let agents = children(run.id());
    assert_eq!(agents.len(), 2, "two agents: {agents:?}");
    kill9(agents[1]);
    let t = Instant::now();
    let out = loop {
        if let Some(_s) = run.try_wait().unwrap() {
            break run.wait_with_output().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "the coordinator still runs 10 s after an agent died");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(t.elapsed() < Duration::from_secs(6), "took {:?}", t.elapsed());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "failed");
    // The agents connect at once, so which of the two processes is `b` is not known: the
    // coordinator names the one that was killed, and the other was stopped with what it
    // measured kept.
    let err = r["error"].as_str().unwrap();
    let (lost, kept) = if err.contains("node `b` lost") { ("b", "a") } else { ("a", "b") };
    assert!(err.contains(&format!("node `{lost}` lost")), "{err}");
    let nodes = r["phases"][0]["nodes"].as_array().unwrap();
    let nk = nodes.iter().find(|n| n["name"] == kept).unwrap_or_else(|| panic!("node {kept} missing: {nodes:?}"));
    assert!(nk["interrupted"].as_bool().unwrap() && u(&nk["total"]["write"]["ops"]) > 0, "{nk}");
    // The lost node keeps what it had reported when it was lost (its last progress), with why
    // it stopped.
    let nl = nodes.iter().find(|n| n["name"] == lost).unwrap_or_else(|| panic!("node {lost} missing: {nodes:?}"));
    assert!(nl["interrupted"].as_bool().unwrap(), "{nl}");
    assert!(nl["error"].as_str().unwrap().contains("lost"), "{nl}");
}

#[test]
fn agents_of_a_killed_coordinator_stop_within_5_s() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut run = long_run(&a, &b, "30s");
    wait_for("both files", Duration::from_secs(30), || a.join("f").exists() && b.join("f").exists());
    std::thread::sleep(Duration::from_millis(1000));
    let agents = children(run.id());
    assert_eq!(agents.len(), 2, "two agents: {agents:?}");
    kill9(run.id());
    let _ = run.wait();
    wait_for("the agents to stop", Duration::from_secs(6), || agents.iter().all(|p| !alive(*p)));
}

/// An agent daemon on a free loopback port, its stderr (the agent's log) gathered.
struct Daemon {
    child: std::process::Child,
    addr: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Daemon {
    fn start(dir: &Path, token: &Path) -> Daemon {
        let mut child = iolab_process()
            .args(["agent", "--listen", "127.0.0.1:0", "--handshake-timeout", "1s", "--token-file"])
            .arg(token)
            .arg("--state-dir")
            .arg(dir.join("state"))
            .arg("--allow")
            .arg(dir)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (log2, mut err) = (log.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut err, &mut buf) {
                if n == 0 {
                    break;
                }
                log2.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut d = Daemon { child, addr: String::new(), log };
        wait_for("the agent to listen", Duration::from_secs(20), || d.log().contains("(TLS)"));
        let log = d.log();
        let at = log.split("listening on ").nth(1).unwrap();
        d.addr = at.split_whitespace().next().unwrap().to_string();
        d
    }
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
    fn wait_log(&self, what: &str) {
        wait_for(what, Duration::from_secs(10), || self.log().contains(what));
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_tls_daemon_serves_a_good_client_and_refuses_bad_ones() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let (token, bad) = (d.path().join("token"), d.path().join("bad"));
    std::fs::write(&token, "s3cret\n").unwrap();
    std::fs::write(&bad, "guess\n").unwrap();
    let agent = Daemon::start(d.path(), &token);
    let db = d.path().join("db/results.db");
    let run = |tok: &Path| {
        iolab()
            .env("IOLAB_DB", &db)
            .args(["run", "-o", "json", "--sample-interval", "0", "--rw", "write", "--size", "1M", "--target", "f"])
            .args(["--node", &format!("n={},dir={}", agent.addr, d.path().display()), "--token-file"])
            .arg(tok)
            .output()
            .unwrap()
    };
    let good = |why: &str| {
        let out = run(&token);
        assert!(out.status.success(), "{why}: {}", String::from_utf8_lossy(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(u(&r["phases"][0]["total"]["write"]["ops"]), 256, "{why}");
    };
    good("first run");
    let known = std::fs::read_to_string(d.path().join("db/known_agents")).unwrap();
    let fp = agent.log().split("certificate ").nth(1).unwrap().split(',').next().unwrap().to_string();
    assert_eq!(known.trim(), format!("{} {fp}", agent.addr), "pinned on first use");

    // A wrong token.
    let out = run(&bad);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong token"));
    agent.wait_log("wrong token");
    // A coordinator of another protocol version: refused, said in the agent's log, and the
    // agent goes on serving.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let e = rt.block_on(async {
        use iolab_cluster::proto::{agent_client::AgentClient, HelloRequest};
        let pin = std::sync::Arc::new(iolab_cluster::pin::CertPin::new(None));
        let ch = iolab_cluster::pin::connect(&agent.addr, iolab_cluster::tls::CERT_NAME, pin).await.unwrap();
        let token: tonic::metadata::MetadataValue<_> = "Bearer s3cret".parse().unwrap();
        let mut c = AgentClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", token.clone());
            Ok(r)
        });
        c.hello(HelloRequest { protocol_version: 999, iolab_version: "9.9.9".into() }).await.unwrap_err()
    });
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{}", e.message());
    agent.wait_log("protocol version 999 (iolab 9.9.9) is not this agent's");
    good("after a coordinator of another protocol version");
    // Garbage bytes, then a client that says nothing (slow loris).
    let mut g = std::net::TcpStream::connect(&agent.addr).unwrap();
    g.write_all(b"GET / HTTP/1.0\r\n\r\n\x00\x01garbage").unwrap();
    agent.wait_log("TLS handshake: ");
    let _quiet = std::net::TcpStream::connect(&agent.addr).unwrap();
    agent.wait_log("TLS handshake: nothing within 1 s");
    good("after the bad clients");

    // A changed certificate: the pinned fingerprint is not the agent's.
    let other = format!("{} sha256:{}\n", agent.addr, "0".repeat(64));
    std::fs::write(d.path().join("db/known_agents"), other).unwrap();
    let out = run(&token);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("certificate changed") && err.contains("remove the line"), "{err}");
    agent.wait_log("TLS handshake: ");
    // Without a token file, no daemon.
    let out = iolab().args(["agent", "--listen", "127.0.0.1:0", "--allow"]).arg(d.path()).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--token-file"));
    std::fs::write(&bad, "\n").unwrap();
    let out = iolab().args(["agent", "--listen", "127.0.0.1:0", "--token-file"]).arg(&bad).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("is empty"));
}

/// A throwaway sshd on a loopback port, with a key of its own, and the ssh config to reach it
/// as `node1` and `node2` (one host, one home: two nodes sharing a home directory). `None` (with a printed reason) where that cannot run.
fn local_sshd(dir: &Path) -> Option<(std::process::Child, std::path::PathBuf)> {
    if !Path::new("/usr/sbin/sshd").exists()
        || !std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
    {
        skip("needs root and sshd (openssh-server)");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for k in ["hostkey", "id"] {
        let st = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(dir.join(k))
            .status()
            .unwrap();
        assert!(st.success());
    }
    std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
    // A key the server does not know, for a refused login.
    let st = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(dir.join("stranger"))
        .status()
        .unwrap();
    assert!(st.success());
    let d = dir.display();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized_keys\n\
             StrictModes no\nPasswordAuthentication no\nPidFile {d}/sshd.pid\nSetEnv XDG_CACHE_HOME={d}/cache\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("ssh_config"),
        format!(
            "Host node1\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {d}/id\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n\
             Host node2\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {d}/id\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n\
             Host stranger\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {d}/stranger\n  \
             IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        ),
    )
    .unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let sshd =
        std::process::Command::new("/usr/sbin/sshd").arg("-D").arg("-f").arg(dir.join("sshd_config")).spawn().unwrap();
    wait_for("sshd to listen", Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    Some((sshd, dir.join("ssh_config")))
}

#[test]
fn an_ssh_node_runs_over_the_system_ssh() {
    let d = tempfile::tempdir().unwrap();
    let Some((mut sshd, config)) = local_sshd(d.path()) else { return };
    let work = d.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let out = iolab()
        .env("IOLAB_SSH_CONFIG", &config)
        .env("IOLAB_REMOTE_BIN", bin())
        .args(["run", "-o", "json", "--no-store", "--sample-interval", "0", "--target", "f", "--rw", "write"])
        .args(["--size", "2M", "--node", &format!("n1=ssh://node1,dir={}", work.display())])
        .output()
        .unwrap();
    let _ = sshd.kill();
    let _ = sshd.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["nodes"][0]["address"], "ssh://node1");
    assert_eq!(u(&r["phases"][0]["total"]["write"]["bytes"]), 2 << 20);
    assert_eq!(std::fs::metadata(work.join("f")).unwrap().len(), 2 << 20);
}

/// Issue 26 item 5: two ssh nodes sharing a home directory (one host reached as `node1` and
/// `node2`), neither with iolab, start together: each copies the binary at the same time into
/// the one cache directory, and every attempt runs on both, the binary whole, no part file
/// left, and no shell noise ("Text file busy", a missing file) for the copy the other made.
#[test]
fn two_ssh_nodes_sharing_a_home_copy_and_start_together() {
    let d = tempfile::tempdir().unwrap();
    let Some((mut sshd, config)) = local_sshd(d.path()) else { return };
    let (w1, w2) = (d.path().join("w1"), d.path().join("w2"));
    std::fs::create_dir_all(&w1).unwrap();
    std::fs::create_dir_all(&w2).unwrap();
    let cache = d.path().join("cache/iolab");
    let mut outs = Vec::new();
    for _ in 0..3 {
        // A fresh home each time: both nodes find no iolab and copy at once.
        let _ = std::fs::remove_dir_all(d.path().join("cache"));
        let out = iolab()
            .env("IOLAB_SSH_CONFIG", &config)
            .env("IOLAB_REMOTE_BIN", d.path().join("nowhere/iolab"))
            .args(["run", "-o", "json", "--no-store", "--sample-interval", "0", "--target", "f", "--rw", "write"])
            .args(["--size", "1M", "--node", &format!("n1=ssh://node1,dir={}", w1.display())])
            .args(["--node", &format!("n2=ssh://node2,dir={}", w2.display())])
            .output()
            .unwrap();
        let left: Vec<String> = std::fs::read_dir(&cache)
            .map(|r| r.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let copied = std::fs::metadata(cache.join(format!("iolab-{}", env!("CARGO_PKG_VERSION")))).map(|m| m.len());
        outs.push((out, left, copied));
    }
    let _ = sshd.kill();
    let _ = sshd.wait();
    for (out, left, copied) in outs {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(u(&r["phases"][0]["total"]["write"]["bytes"]), 2 << 20, "both nodes wrote: {r}");
        assert_eq!(err.matches("copying this iolab").count(), 2, "each node said it once: {err}");
        for noise in ["busy", "No such file", "cannot", "rm:", "mv:"] {
            assert!(!err.contains(noise), "shell noise `{noise}`: {err}");
        }
        assert_eq!(left, [format!("iolab-{}", env!("CARGO_PKG_VERSION"))], "only the binary, no part file");
        assert_eq!(copied.unwrap(), std::fs::metadata(bin()).unwrap().len(), "the binary whole");
    }
    assert_eq!(std::fs::metadata(w1.join("f")).unwrap().len(), 1 << 20);
    assert_eq!(std::fs::metadata(w2.join("f")).unwrap().len(), 1 << 20);
}

#[test]
fn an_ssh_node_without_iolab_gets_this_one_and_a_refused_login_copies_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let Some((mut sshd, config)) = local_sshd(d.path()) else { return };
    let work = d.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let run = |node: &str| {
        iolab()
            .env("IOLAB_SSH_CONFIG", &config)
            .env("IOLAB_REMOTE_BIN", d.path().join("nowhere/iolab"))
            .args(["run", "-o", "json", "--no-store", "--sample-interval", "0", "--target", "f", "--rw", "write"])
            .args(["--size", "1M", "--node", &format!("n={node},dir={}", work.display())])
            .output()
            .unwrap()
    };
    // No iolab on the node: the coordinator brings its own, says so, and the run goes on.
    let out = run("ssh://node1");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let copied = d.path().join(format!("cache/iolab/iolab-{}", env!("CARGO_PKG_VERSION")));
    let copied_meta = std::fs::metadata(&copied);
    // A refused login: said as it is, and nothing copied.
    std::fs::remove_dir_all(d.path().join("cache")).unwrap();
    let refused = run("ssh://stranger");
    let _ = sshd.kill();
    let _ = sshd.wait();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no iolab on the node's PATH (exit 127)") && err.contains("copying this iolab"), "{err}");
    let m = copied_meta.unwrap_or_else(|e| panic!("{} not copied: {e}", copied.display()));
    assert_eq!(m.len(), std::fs::metadata(bin()).unwrap().len());
    assert!(m.permissions().mode() & 0o111 != 0);
    assert_eq!(std::fs::metadata(work.join("f")).unwrap().len(), 1 << 20);
    let rerr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && rerr.contains("ssh failed (exit 255"), "{rerr}");
    assert!(!rerr.contains("copying"), "{rerr}");
    assert!(!d.path().join("cache").exists(), "nothing copied after a refused login");
}

#[test]
fn ctrl_c_on_the_coordinator_stops_every_agent() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let run = long_run(&a, &b, "30s");
    wait_for("both files", Duration::from_secs(30), || a.join("f").exists() && b.join("f").exists());
    std::thread::sleep(Duration::from_millis(1200));
    let agents = children(run.id());
    // As a terminal's Ctrl-C does: SIGINT to the coordinator's whole process group.
    std::process::Command::new("kill").args(["-INT", "--", &format!("-{}", run.id())]).status().unwrap();
    let t = Instant::now();
    let out = run.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "interrupted");
    let nodes = r["phases"][0]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for n in nodes {
        assert!(n["interrupted"].as_bool().unwrap() && u(&n["total"]["write"]["ops"]) > 0, "{n}");
        assert!(n["elapsed_s"].as_f64().unwrap() < 10.0, "{n}");
    }
    wait_for("the agents to end", Duration::from_secs(5), || agents.iter().all(|p| !alive(*p)));
}

#[test]
fn an_agent_whose_threads_cannot_start_fails_the_run_instead_of_hanging() {
    use std::os::unix::fs::PermissionsExt;
    // The agent as `nobody` with at most 64 processes (RLIMIT_NPROC binds no root): 1024
    // threads' memory fits (the memory plan lets the run start), their threads do not.
    if !have("setpriv") || !have("prlimit") {
        skip("needs setpriv and prlimit (util-linux)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    for p in [d.path(), a.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let wrapper = d.path().join("agent.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexport HOME={}\nexec prlimit --nproc=64 setpriv --reuid=65534 --regid=65534 --clear-groups {} \"$@\"\n",
            d.path().display(),
            bin()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = Instant::now();
    let out = iolab()
        .args(["run", "--no-store", "-o", "json", "--sample-interval", "0", "--node"])
        .arg(format!("a=exec://{},dir={}", wrapper.display(), a.display()))
        .args(["--target", "f", "--engine", "null", "--rw", "read", "--size", "1M", "--threads", "1024"])
        .args(["--runtime", "30s"])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(r["status"], "failed");
    let err = r["error"].as_str().unwrap();
    assert!(err.contains("could not start worker thread") && err.contains("ulimit"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
}

/// An agent whose memory cannot hold the run refuses it before any I/O, the coordinator naming
/// the node and the options to lower (the address space of 4096 threads under 1.5 GB).
#[test]
fn an_agent_without_the_memory_for_the_run_refuses_it_naming_the_node() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    let wrapper = d.path().join("agent.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nulimit -v 1500000\nexport MALLOC_ARENA_MAX=1\nexec {} \"$@\"\n", bin()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = Instant::now();
    let out = iolab()
        .args(["run", "--no-store", "-o", "json", "--sample-interval", "0", "--node"])
        .arg(format!("a=exec://{},dir={}", wrapper.display(), a.display()))
        .args(["--target", "f", "--engine", "null", "--rw", "read", "--size", "1M", "--threads", "4096"])
        .args(["--runtime", "30s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation"), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    let err = r["error"].as_str().unwrap_or_else(|| panic!("no error: {r}"));
    assert!(err.contains("node `a` refused the run") && err.contains("RLIMIT_AS"), "{err}");
    assert!(err.contains("lower --threads"), "{err}");
    assert_eq!(std::fs::read_dir(&a).unwrap().count(), 0, "nothing laid out: {err}");
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
}

/// One coordinator drives 64 agents (each its own process) through a 2-phase run on the null
/// engine: every node takes part in every phase and reports its start skew, never negative
/// (the timing itself is bench/skew.sh's business, in release on a quiet machine).
#[test]
fn sixty_four_agents_start_each_phase_together_and_report_their_skew() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("n");
    std::fs::create_dir_all(&dir).unwrap();
    let job = d.path().join("job.toml");
    std::fs::write(
        &job,
        "[defaults]\ntarget = \"f\"\nsize = \"1M\"\nrw = \"read\"\nengine = \"null\"\nruntime = \"200ms\"\n\
         [[phase]]\nname = \"a\"\n[[phase.job]]\n[[phase]]\nname = \"b\"\n[[phase.job]]\n",
    )
    .unwrap();
    let mut cmd = iolab();
    cmd.args(["run", "--no-store", "-o", "json", "--sample-interval", "0"]).arg(&job);
    for i in 0..64 {
        cmd.args(["--node", &format!("n{i}=exec://{},dir={}", bin(), dir.display())]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["nodes"].as_array().unwrap().len(), 64);
    for p in r["phases"].as_array().unwrap() {
        let nodes = p["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 64, "every node in phase {}", p["name"]);
        for n in nodes {
            let skew = n["start_skew_ns"].as_i64().unwrap_or_else(|| panic!("no skew: {n}"));
            assert!(skew >= 0, "{} started before the instant: {skew} ns", n["name"]);
        }
        assert!(u(&p["total"]["read"]["ops"]) > 0, "{}", p["total"]);
    }
}

/// strace text of one thread creating `/data/NAME`, writing 8 KiB and syncing it.
fn strace_text(name: &str) -> String {
    format!(
        "1000  1700000000.000100 openat(AT_FDCWD, \"/data/{name}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3</data/{name}> <0.000010>\n\
         1000  1700000000.000200 pwrite64(3</data/{name}>, \"\\0\\0\\0\\0\"..., 4096, 0) = 4096 <0.000020>\n\
         1000  1700000000.000300 pwrite64(3</data/{name}>, \"\\0\\0\\0\\0\"..., 4096, 4096) = 4096 <0.000020>\n\
         1000  1700000000.000400 fsync(3</data/{name}>) = 0 <0.000100>\n\
         1000  1700000000.000600 close(3</data/{name}>) = 0 <0.000005>\n"
    )
}

#[test]
fn a_trace_replays_on_several_nodes_at_one_start_from_copies_the_agents_were_sent() {
    let d = tempfile::tempdir().unwrap();
    let (a, b, state) = (d.path().join("a"), d.path().join("b"), d.path().join("state"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let trace = |name: &str| {
        let (text, out) = (d.path().join(format!("{name}.strace")), d.path().join(format!("{name}.trace")));
        std::fs::write(&text, strace_text(name)).unwrap();
        iolab().args(["trace", "import", "-o"]).arg(&out).arg(&text).assert().success();
        out
    };
    let (one, two) = (trace("one"), trace("two"));
    let replay = |args: &[&std::ffi::OsStr]| {
        let out = iolab()
            .env("XDG_STATE_HOME", &state)
            .args(["replay", "--no-store", "-o", "json", "--sample-interval", "0", "--target", "t"])
            .args(["--node", &node("a", &a), "--node", &node("b", &b)])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v
    };
    // The same trace on both nodes.
    let v = replay(&[one.as_os_str()]);
    for n in ["a", "b"] {
        let f = &v["fidelity_by_node"][n];
        assert_eq!(f["counts_equal"], true, "{n}: {f}");
    }
    let ph = &v["run"]["phases"][0];
    assert_eq!(ph["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(u(&ph["total"]["write"]["bytes"]), 2 * 8192, "both nodes replayed 8 KiB");
    for dir in [&a, &b] {
        assert_eq!(std::fs::metadata(dir.join("t/one")).unwrap().len(), 8192, "{}", dir.display());
    }
    // One trace per node.
    let mut per = std::ffi::OsString::from("a=");
    per.push(&one);
    let mut per_b = std::ffi::OsString::from("b=");
    per_b.push(&two);
    let v = replay(&["--node-trace".as_ref(), per.as_os_str(), "--node-trace".as_ref(), per_b.as_os_str()]);
    assert_eq!(v["fidelity_by_node"]["b"]["counts_equal"], true);
    assert_eq!(std::fs::metadata(b.join("t/two")).unwrap().len(), 8192);
    assert!(!a.join("t/two").exists(), "a replayed its own trace");
    // The agents kept their copies outside --allow, and took them along when they ended.
    let left: Vec<_> = walk(&state);
    assert!(left.iter().all(|p| p.is_dir()), "copies left behind: {left:?}");
    // A trace that reads a file it did not make: refused on a node without it, and with
    // --prepare made there by the node's own executor (under its dir=), then replayed.
    let text = d.path().join("reads.strace");
    std::fs::write(
        &text,
        "1000  1700000000.000100 openat(AT_FDCWD, \"/data/in\", O_RDONLY) = 3</data/in> <0.000010>\n\
         1000  1700000000.000200 pread64(3</data/in>, \"\\0\\0\\0\\0\"..., 4096, 4096) = 4096 <0.000020>\n\
         1000  1700000000.000300 close(3</data/in>) = 0 <0.000005>\n",
    )
    .unwrap();
    let reads = d.path().join("reads.trace");
    iolab().args(["trace", "import", "-o"]).arg(&reads).arg(&text).assert().success();
    let bare = iolab()
        .env("XDG_STATE_HOME", &state)
        .args(["replay", "--no-store", "--sample-interval", "0", "--target", "r", "--strip", "/data"])
        .args(["--node", &node("a", &a)])
        .arg(&reads)
        .output()
        .unwrap();
    assert!(!bare.status.success(), "a missing input file must be refused");
    assert!(String::from_utf8_lossy(&bare.stderr).contains("--prepare"), "{}", String::from_utf8_lossy(&bare.stderr));
    assert!(!a.join("r/in").exists());
    let v = replay(&["--prepare".as_ref(), "--strip".as_ref(), "/data".as_ref(), reads.as_os_str()]);
    for (n, dir) in [("a", &a), ("b", &b)] {
        assert_eq!(v["fidelity_by_node"][n]["counts_equal"], true, "{n}: {}", v["fidelity_by_node"][n]);
        assert!(std::fs::metadata(dir.join("t/in")).unwrap().len() >= 8192, "prepared on {n}");
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// Agents a launcher would place: each started with its rank in one launcher's variable (set
/// here by hand) and `--join`; the coordinator waits for the ranks of --expect on --listen,
/// turns away a joiner without the token, and runs as usual.
#[test]
fn agents_join_the_coordinator_with_the_rank_their_launcher_gave_them() {
    use std::io::BufRead;
    let d = tempfile::tempdir().unwrap();
    let (token, bad) = (d.path().join("token"), d.path().join("bad"));
    std::fs::write(&token, "join-token\n").unwrap();
    std::fs::write(&bad, "guess\n").unwrap();
    let mut coord = iolab_process()
        .args(["run", "--no-store", "-o", "json", "--sample-interval", "0", "--listen", "127.0.0.1:0"])
        .args(["--expect", "4", "--join-timeout", "60s", "--target", "f", "--rw", "write", "--size", "1M"])
        .arg("--token-file")
        .arg(&token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(coord.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line.split("join on ").nth(1).and_then(|r| r.split_whitespace().next()).expect(&line).to_string();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for l in err.lines().map_while(Result::ok) {
            log2.lock().unwrap().push_str(&(l + "\n"));
        }
    });
    let agent = |var: &str, rank: u32, tok: &Path| {
        let dir = d.path().join(format!("w{rank}-{}", tok.file_name().unwrap().to_string_lossy()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = iolab_process();
        for v in ["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "JOB_COMPLETION_INDEX"] {
            c.env_remove(v);
        }
        let child = c
            .env(var, rank.to_string())
            .args(["agent", "--join", &addr, "--token-file"])
            .arg(tok)
            .arg("--allow")
            .arg(&dir)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, dir)
    };
    // One without the token first: turned away, and the wait goes on.
    let (mut intruder, idir) = agent("SLURM_PROCID", 0, &bad);
    wait_for("the intruder turned away", Duration::from_secs(30), || log.lock().unwrap().contains("turned away"));
    let mut agents: Vec<_> =
        [("SLURM_PROCID", 0), ("OMPI_COMM_WORLD_RANK", 1), ("PMI_RANK", 2), ("JOB_COMPLETION_INDEX", 3)]
            .into_iter()
            .map(|(v, r)| agent(v, r, &token))
            .collect();
    let out = coord.wait_with_output().unwrap();
    let said = log.lock().unwrap().clone();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("did not prove it holds the token") || said.contains("not the coordinator's proof"),
        "{said}"
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes: Vec<(&str, &str)> = r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap(), n["address"].as_str().unwrap()))
        .collect();
    assert_eq!(nodes, [("rank0", "join:0"), ("rank1", "join:1"), ("rank2", "join:2"), ("rank3", "join:3")]);
    for (a, dir) in &mut agents {
        assert_eq!(std::fs::metadata(dir.join("f")).unwrap().len(), 1 << 20, "{}", dir.display());
        let _ = a.wait();
    }
    assert!(!idir.join("f").exists(), "nothing ran on the intruder");
    let _ = intruder.kill();
    let _ = intruder.wait();
}

/// Lines of a child's stderr as they come, with when each came.
struct Lines(std::sync::Arc<std::sync::Mutex<Vec<(Instant, String)>>>);

impl Lines {
    fn of(err: std::process::ChildStderr) -> Lines {
        use std::io::BufRead;
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                l2.lock().unwrap().push((Instant::now(), l));
            }
        });
        Lines(lines)
    }
    /// When a line containing `what` came, waiting up to `limit` for it.
    fn wait(&self, what: &str, limit: Duration) -> Instant {
        let t = Instant::now();
        loop {
            if let Some((at, _)) = self.0.lock().unwrap().iter().find(|(_, l)| l.contains(what)) {
                return *at;
            }
            let all: Vec<String> = self.0.lock().unwrap().iter().map(|(_, l)| l.clone()).collect();
            assert!(t.elapsed() < limit, "no `{what}` within {limit:?}: {all:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn signal(sig: &str, pid: u32) {
    std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

/// A coordinator that is stopped (SIGSTOP) keeps its connections open but says nothing: each
/// agent's lease runs out and it stops its I/O within 5 s.
#[test]
fn agents_of_a_silent_coordinator_stop_their_io_within_5_s() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut run = long_run(&a, &b, "60s");
    let lines = Lines::of(run.stderr.take().unwrap());
    wait_for("both files", Duration::from_secs(30), || a.join("f").exists() && b.join("f").exists());
    std::thread::sleep(Duration::from_millis(1500));
    let before = (mtime(&a.join("f")), mtime(&b.join("f")));
    signal("-STOP", run.id());
    let t0 = Instant::now();
    let at = lines.wait("lost the coordinator", Duration::from_secs(10));
    let took = at.saturating_duration_since(t0);
    // Still writing until then; nothing written after (a write moves the file's mtime).
    std::thread::sleep(Duration::from_millis(300));
    let stopped = (mtime(&a.join("f")), mtime(&b.join("f")));
    std::thread::sleep(Duration::from_millis(1500));
    let later = (mtime(&a.join("f")), mtime(&b.join("f")));
    signal("-CONT", run.id());
    let _ = run.kill();
    let _ = run.wait();
    assert!(took < Duration::from_secs(5), "the agents stopped {took:?} after the coordinator fell silent");
    assert!(stopped.0 > before.0 && stopped.1 > before.1, "they wrote until the lease ran out");
    assert_eq!(later, stopped, "no write after the lease ran out");
}

/// An agent that is stopped (SIGSTOP) keeps its connection open but says nothing: the
/// coordinator declares it lost within 5 s and stops the other.
#[test]
fn a_silent_agent_is_declared_lost_within_5_s() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut run = long_run(&a, &b, "60s");
    let lines = Lines::of(run.stderr.take().unwrap());
    wait_for("both files", Duration::from_secs(30), || a.join("f").exists() && b.join("f").exists());
    std::thread::sleep(Duration::from_millis(1500));
    let agents = children(run.id());
    assert_eq!(agents.len(), 2, "two agents: {agents:?}");
    signal("-STOP", agents[0]);
    let t0 = Instant::now();
    // The other agent hears the coordinator's Stop as soon as the silent one is declared lost.
    let at = lines.wait("stop asked by the coordinator", Duration::from_secs(10));
    let took = at.saturating_duration_since(t0);
    let out = run.wait_with_output().unwrap();
    signal("-CONT", agents[0]);
    assert!(took < Duration::from_secs(5), "declared lost {took:?} after it fell silent");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "failed");
    assert!(r["error"].as_str().unwrap().contains("nothing heard for 4.5 s"), "{}", r["error"]);
    // The failed node's share says why, a documented field.
    let nodes = r["phases"][0]["nodes"].as_array().unwrap();
    assert!(nodes.iter().any(|n| n["error"].as_str().is_some_and(|e| e.contains("lost"))), "{nodes:?}");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    assert!(doc.contains("| `phases[].nodes[].error` |"));
}

/// A block-level replay onto a device is one machine's: `--device` with `--node` is refused
/// with what to do instead, before any node is reached.
#[test]
fn a_device_replay_on_several_nodes_is_refused_clearly() {
    let d = tempfile::tempdir().unwrap();
    let text = d.path().join("one.strace");
    std::fs::write(&text, strace_text("one")).unwrap();
    let trace = d.path().join("one.trace");
    iolab().args(["trace", "import", "-o"]).arg(&trace).arg(&text).assert().success();
    let out = iolab()
        .args(["replay", "--no-store", "--target", "/dev/null", "--device", "--node", &node("a", d.path())])
        .arg(&trace)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--device cannot be given with --node") && err.contains("on each node"), "{err}");
}
