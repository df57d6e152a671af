//! The command as a whole: the JSON contract of docs/json.md, job files with phases, help,
//! completions, the man page and the survey.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;

/// Documented paths: the first backticked cell of each table row in docs/json.md, split into
/// the run output's (before "## Stored runs") and the stored run's (that section).
fn documented_sections() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let (run, stored) = text.split_once("## Stored runs").expect("docs/json.md has a Stored runs section");
    let stored = stored.split("\n## ").next().unwrap_or("");
    let rows = |t: &str| -> BTreeSet<String> {
        t.lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
            .collect()
    };
    (rows(run), rows(stored))
}

fn documented() -> BTreeSet<String> {
    documented_sections().0
}

/// Every path in a JSON value, arrays written as `[]`; `plan` is documented as one object.
fn paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                // Map keys that are names (devices, interfaces) are documented as placeholders.
                let k = if prefix.ends_with(".disks") {
                    "<name>".to_string()
                } else if prefix.ends_with(".net") {
                    "<iface>".to_string()
                } else if prefix == "verdict.figures" || prefix.ends_with("].limit.figures") {
                    "<figure>".to_string()
                } else if prefix.ends_with(".classes") || prefix.ends_with("timeline[].ops") {
                    "<class>".to_string()
                } else {
                    k.clone()
                };
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                out.insert(p.clone());
                if p != "plan" {
                    paths(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// Fields only a run of several nodes has; `json_of_a_real_run_of_several_nodes_matches_docs`
/// checks them against real output, `json_of_a_run_of_several_nodes_matches_docs` as stored.
fn is_multi_node(d: &str) -> bool {
    d.starts_with("nodes")
        || d.starts_with("verdict")
        || d.starts_with("phases[].nodes")
        || d == "phases[].jobs[].node"
        || d == "phases[].first_done_s"
        || d == "phases[].started_unix_s"
        || d == "phases[].last_done_s"
}

/// (documented but absent, present but undocumented) paths of a run's JSON; `skip` names
/// documented paths this output need not have.
fn against_docs(v: &Value, skip: impl Fn(&str) -> bool) -> (Vec<String>, Vec<String>) {
    let docs = documented();
    let mut seen = BTreeSet::new();
    paths(v, "", &mut seen);
    // The totals of jobs have the shape documented for the phase's totals.
    let norm = |p: &str| {
        p.replace("phases[].jobs[].total", "phases[].total")
            .replace("phases[].nodes[].total", "phases[].total")
            .replace("phases[].nodes[].system", "phases[].system")
            .replace("phases[].nodes[].verify.", "phases[].verify.")
            .replace("phases[].nodes[].limit.", "phases[].limit.")
            .replace("phases[].nodes[].findings[].", "phases[].findings[].")
    };
    let (mut missing, mut undocumented) = (Vec::new(), Vec::new());
    for d in &docs {
        if d.starts_with("phases[].workload") || d == "phases[].jobs[].workload" || d == "phases[].notes" {
            continue; // a personality's figures and notes; checked against real runs in tests/apps.rs
        }
        if d.starts_with("phases[].verify") || d == "phases[].nodes[].verify" {
            continue; // data validation; checked in json_of_validation_matches_docs (a node's in verify_other.rs)
        }
        if d == "error" || d == "phases[].jobs[].error" || d == "phases[].jobs[].per_thread[].error" {
            continue; // only present on failure; checked in safety.rs
        }
        if d.starts_with("phases[].jobs[].io_errors") {
            continue; // only after failed I/O a job went on past; checked in tests/on_error.rs and tests/trim.rs
        }
        if d.starts_with("phases[].jobs[].replay") {
            continue; // a replay's fidelity; checked against a real replay in tests/trace.rs
        }
        if d.contains(".net.<iface>")
            || d.contains("io_pressure")
            || d.contains("load1")
            || d.starts_with("phases[].system.target.interfaces")
        {
            continue; // present only with network traffic, PSI or a load figure; checked in tests/system.rs
        }
        if d.starts_with("phases[].holes")
            || d == "phases[].jobs[].holes"
            || d == "phases[].nodes[].holes"
            || d == "phases[].findings[].holes_share"
            || d == "phases[].findings[].node"
            || d == "phases[].limit.subject"
        {
            continue; // only with reads in kept holes, on several nodes, or a limit naming a device, link or option; checked in tests/figures.rs
        }
        if d.starts_with("phases[].steady_state") {
            continue; // only in a phase judged for steady state; checked in json_of_steady_state_runs_matches_docs
        }
        if d.starts_with("phases[].warmup") {
            continue; // only with --ramp auto; checked in tests/steady.rs
        }
        if d.starts_with("precondition") {
            continue; // only in a run that followed a preconditioning; checked in tests/pts.rs
        }
        if d.starts_with("phases[].jobs[].latency_target") {
            continue; // only with --latency-target; every field checked in tests/fio_map.rs
        }
        if d.starts_with("phases[].jobs[].io_errors") {
            continue; // only after failed I/Os a job went on after; checked on a real ENOSPC in tests/on_error.rs
        }
        if skip(d) {
            continue;
        }
        if !seen.iter().any(|s| s == d || norm(s) == *d) {
            missing.push(d.clone());
        }
    }
    for s in &seen {
        // `system.max` and `system.samples[]` have the mean's fields; `per_cpu[]` the cpu's.
        let n = norm(s)
            .replace("phases[].system.max.", "phases[].system.")
            .replace("phases[].system.samples[].", "phases[].system.")
            .replace("phases[].system.cpu.per_cpu[].", "phases[].system.cpu.");
        // Covered: documented itself, a parent of documented fields, or inside an object
        // documented as a whole (`total.write()` has read's fields, `sync.lat_ns` the usual ones).
        let covered = docs.contains(&n)
            || docs.iter().any(|d| d.starts_with(&format!("{n}.")) || d.starts_with(&format!("{n}[]")))
            || docs.iter().any(|d| {
                (d.ends_with(".write") || d.ends_with(".lat_ns") || d.ends_with(".interfaces"))
                    && n.starts_with(d.as_str())
            });
        if !covered {
            undocumented.push(s.clone());
        }
    }
    (missing, undocumented)
}

/// Every `phases[].verify` path docs/json.md lists is in the JSON of a validated run or of
/// `iolab verify` on a damaged file, and every path they print is documented.
#[test]
fn json_of_validation_matches_docs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let j = dir.path().join("j");
    let run = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "1M",
        "--rw",
        "randrw",
        "--runtime",
        "0.5s",
        "--verify-before-rewrite",
        "--verify-after",
        "--journal",
        j.to_str().unwrap(),
        "--journal-sync",
        "sync",
    ]);
    // Block 0 copied over block 1 (a misdirected write: an intact stamp, its key found), a bit
    // flipped in every other block (no key found), then the check.
    let mut data = std::fs::read(&f).unwrap();
    let first = data[..4096].to_vec();
    data[4096..8192].copy_from_slice(&first);
    for b in (0..data.len() / 4096).filter(|b| *b != 1) {
        data[b * 4096 + 100] ^= 1;
    }
    std::fs::write(&f, &data).unwrap();
    let out = iolab().args(["verify", "--journal", j.to_str().unwrap(), "--output", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let check: Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs: BTreeSet<String> = documented().into_iter().filter(|d| d.starts_with("phases[].verify")).collect();
    let mut seen = BTreeSet::new();
    paths(&run, "", &mut seen);
    paths(&check, "", &mut seen);
    let seen: BTreeSet<String> = seen.into_iter().filter(|s| s.starts_with("phases[].verify")).collect();
    let missing: Vec<_> = docs.difference(&seen).collect();
    let undocumented: Vec<_> = seen.difference(&docs).collect();
    assert!(missing.is_empty(), "documented but absent: {missing:?}");
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
    assert!(u(&run["phases"][0]["total"]["classes"]["journal"]["ops"]) > 0, "the journal's writes are timed");
}

/// A phase judged for steady state, by SNIA's rule and by one of fio's: between them every
/// documented `phases[].steady_state` field is there, and nothing undocumented.
#[test]
fn json_of_steady_state_runs_matches_docs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let base = ["run", "--target", f.to_str().unwrap(), "--size", "1M", "--rw", "randread", "--rate-iops", "200"];
    let snia = run_json(
        &[&base[..], &["--steady-state", "snia", "--round", "1s", "--ss-window", "2", "--ss-max-rounds", "3"]].concat(),
    );
    let fio = run_json(&[&base[..], &["--steady-state", "iops:50%", "--ss-dur", "2s", "--runtime", "4s"]].concat());
    let mut seen = BTreeSet::new();
    for v in [&snia, &fio] {
        assert!(v["phases"][0]["steady_state"].is_object(), "{v}");
        paths(v, "", &mut seen);
    }
    seen.retain(|p| p.starts_with("phases[].steady_state"));
    // The rows name several fields at once (`a.first`, `.last`): each is documented.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let mut docs = BTreeSet::new();
    for row in text.lines().filter_map(|l| l.strip_prefix("| `phases[].steady_state")) {
        let cell = row.split(" | ").next().unwrap_or("");
        let first = format!("phases[].steady_state{}", cell.split('`').next().unwrap_or(""));
        let parent = first.rsplit_once('.').map_or(first.clone(), |(p, _)| p.to_string());
        for (i, name) in cell.split('`').enumerate().filter(|(i, _)| i % 2 == 0) {
            if i == 0 {
                docs.insert(first.clone());
            } else if let Some(field) = name.strip_prefix('.') {
                docs.insert(format!("{parent}.{field}"));
            }
        }
    }
    // Each node's own judgement is there only in a run of several nodes: tests/cluster.rs's
    // steady-state tests check those rows.
    docs.retain(|p| !p.starts_with("phases[].steady_state.nodes[]"));
    let missing: Vec<&String> = docs.difference(&seen).collect();
    let undocumented: Vec<&String> = seen.difference(&docs).collect();
    assert!(missing.is_empty(), "documented but absent: {missing:?}");
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
}

#[test]
fn json_matches_docs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "4M",
        "--rw",
        "randrw",
        "--runtime",
        "1.2s",
        "--fsync-every",
        "64",
        "--histograms",
    ]);
    let (missing, undocumented) = against_docs(&v, is_multi_node);
    assert!(missing.is_empty(), "documented but absent: {missing:?}");
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
    assert_eq!(v["schema_version"], 1);
    // Values obey their documented meaning.
    let p = &v["phases"][0];
    let r = &p["total"]["read"];
    let el = p["elapsed_s"].as_f64().unwrap();
    assert!((r["iops"].as_f64().unwrap() * el - u(&r["ops"]) as f64).abs() < 1.0);
    let l = &r["lat_ns"];
    let order = ["min", "p50", "p90", "p99", "p999", "max"].map(|k| u(&l[k]));
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{l}");
    let tl = p["timeline"].as_array().unwrap();
    let tl_reads: u64 = tl.iter().map(|x| u(&x["read_ops"])).sum();
    assert_eq!(tl_reads, u(&r["ops"]), "the timeline adds up to the totals");
    assert!(u(&p["total"]["sync"]["ops"]) > 0);
}

#[test]
fn job_file_phases_run_in_order_and_jobs_together() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            r#"
[defaults]
size = "4M"
runtime = "1s"

[[phase]]
name = "fill"
[[phase.job]]
name = "a"
target = "{d}/a"
rw = "write"
bs = "64k"
runtime = "0.5s"

[[phase]]
name = "mixed"
[[phase.job]]
name = "reader"
target = "{d}/a"
rw = "randread"
[[phase.job]]
name = "writer"
target = "{d}/b"
rw = "randwrite"
"#,
            d = dir.path().display()
        ),
    )
    .unwrap();
    let v = run_json(&["run", job.to_str().unwrap()]);
    let ph = v["phases"].as_array().unwrap();
    assert_eq!(ph.len(), 2);
    assert_eq!(ph[0]["name"], "fill");
    assert_eq!(ph[1]["name"], "mixed");
    let jobs = ph[1]["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        let e = j["elapsed_s"].as_f64().unwrap();
        assert!((0.9..1.6).contains(&e), "both jobs ran the whole second together: {e}");
    }
    assert!(u(&jobs[0]["total"]["read"]["ops"]) > 0 && u(&jobs[1]["total"]["write"]["ops"]) > 0);
    // Flags override the file.
    let v = run_json(&["run", job.to_str().unwrap(), "--runtime", "0.3s"]);
    assert!(v["phases"][1]["elapsed_s"].as_f64().unwrap() < 0.8);
}

#[test]
fn help_completions_and_man_page() {
    let out = iolab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Examples:") && help.contains("iolab survey"), "{help}");
    let out = iolab().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--stride") && help.contains("oflag=direct") && help.contains("Examples:"));
    let out = iolab().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--rw"));
    let out = iolab().arg("man").output().unwrap();
    let man = String::from_utf8_lossy(&out.stdout);
    assert!(man.starts_with(".ie") || man.contains(".TH"), "{man}");
    assert!(man.contains("survey"));
}

#[test]
fn no_progress_noise_when_piped() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p");
    let out = iolab()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "1M", "--rw", "randread", "--runtime", "1.2s"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("bytes (") && stdout.contains("MB/s") && stdout.contains("MiB/s") && stdout.contains("IOPS"),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\r') && !String::from_utf8_lossy(&out.stderr).contains('\r'),
        "no progress bar redraws in a pipe"
    );
}

#[test]
fn survey_runs_every_step_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(&["survey", dir.path().to_str().unwrap(), "--size", "32M", "--step-time", "0.4s"]);
    let names: Vec<&str> = v["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "seq-write",
            "seq-read",
            "rand-read-qd1",
            "rand-read-qd32",
            "rand-write-qd1",
            "rand-write-qd32",
            "append-fsync",
            "one-writer",
            "two-writers",
            "small-files",
            "mail-delivery"
        ]
    );
    assert_eq!(v["status"], "complete");
    for p in v["phases"].as_array().unwrap() {
        let t = &p["total"];
        assert!(u(&t["read"]["ops"]) + u(&t["write"]["ops"]) > 0, "{} did I/O", p["name"]);
    }
    assert!(u(&v["phases"][6]["total"]["sync"]["ops"]) > 0, "append-fsync flushes");
    assert_eq!(v["phases"][8]["jobs"].as_array().unwrap().len(), 2);
    assert!(v["phases"][9]["workload"]["transactions"].as_f64().unwrap() > 0.0, "PostMark's transactions");
    assert!(v["phases"][10]["workload"]["messages"].as_f64().unwrap() > 0.0, "messages delivered");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the survey removes its files");
    // The human form prints the one-page profile.
    let out = iolab()
        .args(["survey", dir.path().to_str().unwrap(), "--size", "32M", "--step-time", "0.3s"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("random read 4 KiB, QD32") && s.contains("two writers together"), "{s}");
    // Its HTML report opens with the same profile and the same findings.
    let report = s.lines().find_map(|l| l.strip_prefix("report: ")).expect("a report line");
    let html = std::fs::read_to_string(report.split(" (open").next().unwrap()).unwrap();
    let (profile, runs) = (html.find("<section id=\"profile\">"), html.find("<section id=\"runs\">"));
    assert!(profile.is_some() && profile < runs, "the profile comes first");
    let esc = |t: &str| {
        t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
    };
    let findings: Vec<&str> = s.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    assert!(!findings.is_empty(), "{s}");
    for f in findings {
        assert!(html.contains(&format!("<li>{}</li>", esc(f))), "the report lacks the finding {f:?}");
    }
    assert!(html.contains("<td>random read 4 KiB, QD32</td>"));
}

#[test]
fn stored_run_json_matches_docs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let f = dir.path().join("f");
    run_json(&[
        "run",
        "--db",
        db,
        "--target",
        f.to_str().unwrap(),
        "--size",
        "1M",
        "--rw",
        "randread",
        "--label",
        "k=v",
    ]);
    let out = iolab().args(["show", "--db", db, "last", "--output", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = v[0].as_object().unwrap();
    let (_, stored) = documented_sections();
    let present: BTreeSet<String> = run.keys().cloned().collect();
    assert_eq!(present, stored, "fields of a stored run against docs/json.md's Stored runs table");
    assert_eq!(run["labels"]["k"], "v");
    assert_eq!(run["result"]["status"], "complete");
}

/// The JSON of a real run of several nodes (the locking scenario on two local agents, with
/// system samples and histograms): every field docs/json.md lists is there but those present
/// only on failure (`error`, checked in tests/cluster.rs), and nothing undocumented.
#[test]
fn json_of_a_real_run_of_several_nodes_matches_docs() {
    let d = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("iolab").display().to_string();
    let node = |n: &str| format!("{n}=exec://{bin},dir={}", d.path().display());
    let (a, b) = (node("a"), node("b"));
    let v = run_json(&[
        "scenario",
        "locking",
        "--node",
        &a,
        "--node",
        &b,
        "--size",
        "2M",
        "--sample-interval",
        "200ms",
        "--histograms",
        "--no-store",
    ]);
    // A healthy run of several nodes has no findings; its aggregate no limit (each node has
    // its own) and no layout (each node laid out its own files).
    let (missing, undocumented) = against_docs(&v, |d| {
        d.contains("error")
            || d.starts_with("phases[].findings")
            || d == "phases[].nodes[].findings"
            || d.starts_with("phases[].limit")
            || d.starts_with("phases[].layout")
    });
    assert!(missing.is_empty(), "documented but absent: {missing:?}");
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
    assert_eq!(v["nodes"][0]["address"].as_str().unwrap(), format!("exec://{bin}"));
    assert_eq!(v["verdict"]["scenario"], "locking");
}

/// A run of several nodes, as the coordinator stores it (each node's rows, the aggregate under
/// `*`, the nodes and a verdict), built from a real run and printed by `iolab export --format
/// json --histograms`: every field docs/json.md lists for several nodes is there, and nothing
/// undocumented.
#[test]
fn json_of_a_run_of_several_nodes_matches_docs() {
    use iolab_workload::model::{JobResult, Limit, NodeInfo, NodeResult, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let db = dir.path().join("r.db");
    let (f, dbs) = (f.to_str().unwrap(), db.to_str().unwrap());
    iolab()
        .args(["run", "--target", f, "--size", "4M", "--rw", "randrw", "--runtime", "1.2s", "--fsync-every", "64"])
        .args(["--db", dbs, "--output", "json"])
        .assert()
        .success();
    let store = iolab_store::Store::open(&db).unwrap();
    let one = store.load(1).unwrap();
    let p = one.result.phases[0].clone();
    let id = store
        .begin_run(
            iolab_workload::model::RunKind::Scenario,
            "locking",
            &Default::default(),
            &one.host,
            &one.result.plan,
            1.0,
        )
        .unwrap();
    let share = |name: &str, error: Option<String>| NodeResult {
        name: name.into(),
        start_skew_ns: -42_000,
        elapsed_s: p.elapsed_s,
        interrupted: error.is_some(),
        error,
        total: p.total.clone(),
        cpu: p.cpu,
        system: p.system.clone(),
        verify: p.verify.clone(),
        findings: p.findings.clone(),
        limit: p.limit.clone(),
        holes: p.holes,
    };
    for n in ["a", "b"] {
        store.add_phase(id, 0, n, &p).unwrap();
    }
    let aggregate = iolab_workload::PhaseResult {
        verify: None,
        nodes: vec![share("a", None), share("b", Some("node b became unreachable".into()))],
        jobs: ["a", "b"].map(|n| JobResult { node: Some(n.into()), ..p.jobs[0].clone() }).to_vec(),
        started_unix_s: Some(1.0),
        first_done_s: Some(p.elapsed_s - 0.1),
        last_done_s: Some(p.elapsed_s),
        ..p.clone()
    };
    store.add_phase(id, 0, iolab_store::AGGREGATE, &aggregate).unwrap();
    let node = |name: &str| NodeInfo {
        name: name.into(),
        address: format!("ssh://root@{name}"),
        hostname: name.into(),
        iolab_version: "0.1.0".into(),
        clock_offset_ns: 1000,
        rtt_ns: 50_000,
        clock_offset_uncertainty_ns: 25000,
        dir: Some("/mnt/shared".into()),
    };
    store.set_nodes(id, &[node("a"), node("b")]).unwrap();
    let verdict = Verdict {
        scenario: "locking".into(),
        limit: Limit::Network,
        reasons: vec!["the link is full".into()],
        figures: [("link_mbs".to_string(), 12.5)].into(),
    };
    store.set_verdict(id, &verdict).unwrap();
    store.finish_run(id, iolab_workload::Status::Complete, None, 2.0).unwrap();
    drop(store);
    let out =
        iolab().args(["export", &id.to_string(), "--db", dbs, "--format", "json", "--histograms"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = &all[0]["result"];
    let (missing, undocumented) = against_docs(v, |d| !is_multi_node(d) && d.contains("error"));
    assert!(missing.is_empty(), "documented but absent: {missing:?}");
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
    // Values as stored: both jobs of the same name, each node's histograms, the verdict.
    let ph = &v["phases"][0];
    assert_eq!(ph["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(ph["jobs"][1]["node"], "b");
    assert_eq!(ph["nodes"][1]["error"], "node b became unreachable");
    let ops = u(&ph["nodes"][0]["total"]["classes"]["read"]["ops"]);
    assert_eq!(u(&ph["nodes"][0]["total"]["classes"]["read"]["histogram"]["count"]), ops);
    assert_eq!(v["verdict"]["limit"], "network");
    assert_eq!(v["nodes"][1]["dir"], "/mnt/shared");
    // The CSV names the nodes.
    let csv = iolab().args(["export", &id.to_string(), "--db", dbs, "--format", "csv"]).output().unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    let node_col: BTreeSet<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(5).unwrap()).collect();
    assert_eq!(node_col, BTreeSet::from(["*", "a", "b"]), "{csv}");
    // `show` names the nodes, prints each node's share and the verdict; `compare --by node`
    // makes each node a configuration.
    let show = iolab().args(["show", &id.to_string(), "--db", dbs]).output().unwrap();
    let show = String::from_utf8(show.stdout).unwrap();
    assert!(
        show.contains("node a: ssh://root@a (a, iolab 0.1.0), clock offset 0.00100 ms, rtt 0.0500 ms, dir /mnt/shared"),
        "{show}"
    );
    assert!(show.contains("skew ms") && show.contains("node b failed: node b became unreachable"), "{show}");
    assert!(
        show.contains("verdict of locking: limited by the network (limit: network)\n  - the link is full"),
        "{show}"
    );
    let cmp = iolab().args(["compare", &id.to_string(), "--db", dbs, "--by", "node"]).output().unwrap();
    let cmp = String::from_utf8(cmp.stdout).unwrap();
    assert!(cmp.contains("a (baseline)") && cmp.contains("(100.0%)"), "{cmp}");
}
