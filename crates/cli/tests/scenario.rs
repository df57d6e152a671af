//! `iolab scenario`: seed 000's locking check end to end on the testbed (two network-namespace
//! nodes reached over real ssh, sharing sshfs or GlusterFS over 100 Mbit tbf-shaped links), with
//! a verdict that names the link; the scaling built-in on local agents. Testbed ids 5 and 6 are
//! this file's.

mod common;

use common::testbed::{Fs, Testbed};
use common::*;
use serde_json::Value;

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

fn mbs(v: &Value) -> f64 {
    v["write"]["bw_bytes"].as_f64().unwrap_or(0.0) / 1e6
}

/// Run the locking scenario over ssh on a testbed's mounts and check what seed 000 would.
fn locking_on(tb: &Testbed, mount: impl Fn(&str) -> std::path::PathBuf, extra: &[&str]) -> Value {
    let nodes: Vec<String> = tb.nodes().iter().map(|n| format!("{n}=ssh://{n},dir={}", mount(n).display())).collect();
    locking_with(tb, &nodes, extra)
}

/// Run the locking scenario on these `--node` values and check what seed 000 would.
fn locking_with(tb: &Testbed, nodes: &[String], extra: &[&str]) -> Value {
    let db = tempfile::tempdir().unwrap();
    let dbp = db.path().join("r.db");
    let mut args = vec!["scenario", "locking", "--node", &nodes[0], "--node", &nodes[1]];
    // No --link-speed: the verdict reads the 100 Mbit/s from the tbf qdisc on each node's link.
    args.extend(["--size", "16M", "--output", "json", "--db", dbp.to_str().unwrap()]);
    args.extend(extra);
    let out = iolab_process()
        .args(&args)
        .env("IOLAB_SSH_CONFIG", tb.ssh_config())
        .env("IOLAB_REMOTE_BIN", bin())
        .output()
        .expect("iolab runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "locking failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["status"], "complete");
    let phases = v["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["A alone", "B alone", "A twice", "A and B"]);
    let counts: Vec<usize> = phases.iter().map(|p| p["nodes"].as_array().unwrap().len()).collect();
    assert_eq!(counts, [1, 1, 1, 2]);
    for p in phases {
        for n in p["nodes"].as_array().unwrap() {
            let skew_ms = n["start_skew_ns"].as_i64().unwrap().abs() as f64 / 1e6;
            assert!(skew_ms < 50.0, "start skew {skew_ms} ms in {}", p["name"]);
        }
    }
    let alone = [mbs(&phases[0]["total"]), mbs(&phases[1]["total"])];
    println!("alone {alone:?} MB/s, A twice {:.1}, A and B {:.1}", mbs(&phases[2]["total"]), mbs(&phases[3]["total"]));
    for a in alone {
        assert!((4.0..13.0).contains(&a), "one node alone at {a:.1} MB/s over a 100 Mbit link");
    }
    // Each node's writes went through its own mount: the stored run keeps both nodes.
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2);
    let verdict = &v["verdict"];
    println!("verdict: {verdict:#}");
    assert_eq!(verdict["scenario"], "locking");
    assert_eq!(verdict["limit"], "network", "{verdict:#}");
    let reasons: Vec<&str> = verdict["reasons"].as_array().unwrap().iter().filter_map(|r| r.as_str()).collect();
    assert!(reasons.iter().any(|r| r.contains("100 Mbit/s link")), "{reasons:?}");
    // And the store has it: one run of kind scenario, its verdict, per-node rows.
    let shown = iolab().args(["show", "last", "--db", dbp.to_str().unwrap()]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("limited by the network"), "{shown}");
    v
}

#[test]
fn locking_over_ssh_on_sshfs_names_the_100mbit_link() {
    let tb = match Testbed::up(5, 2, Fs::Sshfs, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let v = locking_on(&tb, |n| tb.sshfs_mount(n), &["--shared-file"]);
    // One file, written by both nodes through their own mounts of the export.
    let shared = tb.sshfs_export().join("iolab-locking/shared.dat");
    assert_eq!(std::fs::metadata(&shared).expect("the shared file is on the server").len(), 16 << 20);
    // Two writers on one node share its one link: each gets about half of it.
    let twice = &v["phases"][2]["jobs"];
    for j in twice.as_array().unwrap() {
        assert!(mbs(&j["total"]) < 9.0, "a writer of two on one 100 Mbit link at {:.1} MB/s", mbs(&j["total"]));
    }
}

/// The same check with each node's agent a TLS daemon in its network namespace, reached on
/// its management address with a token, its certificate pinned on first use.
#[test]
fn locking_over_tls_daemons_on_sshfs() {
    let tb = match Testbed::up(3, 2, Fs::Sshfs, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let state = tempfile::tempdir().unwrap();
    let token = state.path().join("token");
    std::fs::write(&token, "testbed-token-3\n").unwrap();
    let mut agents = Vec::new();
    let mut nodes = Vec::new();
    for n in tb.nodes() {
        let addr = format!("{}:7733", tb.mgmt_addr(&n));
        let mount = tb.sshfs_mount(&n);
        let sd = state.path().join(&n);
        let mut child = tb
            .exec(&n, &bin(), &["agent", "--listen", &addr, "--token-file", token.to_str().unwrap()])
            .args(["--allow", mount.to_str().unwrap(), "--state-dir", sd.to_str().unwrap()])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the agent starts");
        // Wait until it says it listens.
        let err = child.stderr.take().unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(err));
        let said = lines.by_ref().take(20).map_while(Result::ok).find(|l| l.contains("listening on"));
        assert!(said.is_some(), "agent on {n} did not listen");
        std::thread::spawn(move || lines.for_each(drop));
        agents.push(child);
        nodes.push(format!("{n}={addr},dir={}", mount.display()));
    }
    let v = locking_with(&tb, &nodes, &["--token-file", token.to_str().unwrap()]);
    let addrs: Vec<&str> = v["nodes"].as_array().unwrap().iter().map(|n| n["address"].as_str().unwrap()).collect();
    assert!(addrs.iter().all(|a| a.ends_with(":7733")), "{addrs:?}");
    for mut a in agents {
        let _ = a.kill();
        let _ = a.wait();
    }
}

#[test]
fn locking_over_ssh_on_gluster() {
    let tb = match Testbed::up(6, 2, Fs::Gluster, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    if let Some(why) = tb.gluster_error() {
        return skip(&format!("GlusterFS did not start: {why}"));
    }
    locking_on(&tb, |n| tb.gluster_mount(n), &[]);
}

#[test]
fn scaling_on_local_agents_runs_one_to_three_nodes() {
    let d = disk_tempdir();
    let db = d.path().join("r.db");
    let node = |n: &str| format!("{n}=exec://{},dir={}", bin(), d.path().display());
    let (a, b, c) = (node("a"), node("b"), node("c"));
    let v = run_json(&[
        "scenario",
        "scaling",
        "--node",
        &a,
        "--node",
        &b,
        "--node",
        &c,
        "--size",
        "4M",
        "--db",
        db.to_str().unwrap(),
    ]);
    let counts: Vec<usize> =
        v["phases"].as_array().unwrap().iter().map(|p| p["nodes"].as_array().unwrap().len()).collect();
    assert_eq!(counts, [1, 2, 3]);
    // Each client wrote in its own subdirectory.
    for n in ["a", "b", "c"] {
        let dir = d.path().join("iolab-scaling").join(n);
        assert!(dir.is_dir(), "{} missing", dir.display());
    }
    assert_eq!(v["verdict"]["scenario"], "scaling");
    let ops: Vec<u64> = v["phases"].as_array().unwrap().iter().map(|p| u(&p["total"]["write"]["ops"])).collect();
    assert_eq!(ops, [4, 8, 12], "4 MiB of 1 MiB writes per client");
}

#[test]
fn postmark_scaling_on_local_agents_is_seed_003s_table() {
    let d = disk_tempdir();
    let cfg = d.path().join("pm.cfg");
    std::fs::write(&cfg, "set size 1024 16384\nset number 200\nset transactions 500\n").unwrap();
    let node = |n: &str| format!("{n}=exec://{},dir={}", bin(), d.path().display());
    let (a, b) = (node("a"), node("b"));
    let v = run_json(&[
        "scenario",
        "scaling",
        "--workload",
        "postmark",
        "--config",
        cfg.to_str().unwrap(),
        "--node",
        &a,
        "--node",
        &b,
        "--no-store",
    ]);
    let phases = v["phases"].as_array().unwrap();
    // Each client runs PostMark's 500 transactions in its own subdirectory; the aggregate adds
    // them up, as seed 003's table of one to four clients does.
    let tx: Vec<f64> = phases.iter().map(|p| p["workload"]["transactions"].as_f64().unwrap()).collect();
    assert_eq!(tx, [500.0, 1000.0]);
    assert!(phases[1]["workload"]["transactions_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(phases[1]["jobs"].as_array().unwrap().len(), 2);
}

#[test]
fn survey_with_nodes_adds_the_locking_check() {
    let d = disk_tempdir();
    let (here, shared) = (d.path().join("here"), d.path().join("shared"));
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    let node = |n: &str| format!("{n}=exec://{},dir={}", bin(), shared.display());
    let (a, b) = (node("a"), node("b"));
    let db = d.path().join("r.db");
    let out = iolab()
        .args(["survey", here.to_str().unwrap(), "--step-time", "1s", "--size", "32M", "--node", &a, "--node", &b])
        .args(["--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("the locking check:"), "{text}");
    for step in ["A alone", "B alone", "A twice", "A and B"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(step)), "no {step} row: {text}");
    }
    assert!(text.contains("  limit: "), "{text}");
    // The check is kept as a run of its own, beside the survey's.
    let runs = iolab().args(["runs", "--db", db.to_str().unwrap()]).output().unwrap();
    let runs = String::from_utf8_lossy(&runs.stdout);
    assert!(runs.contains("survey") && runs.contains("scenario"), "{runs}");
    // The HTML report's profile has the same check: each row, the limit and every reason as the
    // terminal printed them; `iolab report` of the survey later finds it too.
    let esc = |t: &str| t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\'', "&#39;");
    let report = text.lines().find_map(|l| l.strip_prefix("report: ")).expect("a report line");
    let later = d.path().join("later.html");
    iolab().args(["report", "1", "--db", db.to_str().unwrap(), "-o", later.to_str().unwrap()]).assert().success();
    for file in [std::path::PathBuf::from(report.split(" (open").next().unwrap()), later] {
        let html = std::fs::read_to_string(&file).unwrap();
        let (lock, runs_at) = (html.find("id=\"locking\""), html.find("<section id=\"runs\">"));
        assert!(lock.is_some() && lock < runs_at, "{}: the locking check is in the profile", file.display());
        let block: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("the locking check:")).skip(1).collect();
        for step in ["A alone", "B alone", "A twice", "A and B"] {
            let row = block.iter().find(|l| l.trim_start().starts_with(step)).unwrap();
            // `748.2 MB/s (713.6 MiB/s) (a 748.2 MB/s (713.6 MiB/s))`: all nodes, then each.
            let rest = row.trim_start()[step.len()..].trim_start();
            let all = &rest[..=rest.find(')').unwrap()];
            assert!(
                html.contains(&format!("<tr><td>{step}</td><td>{}</td>", esc(all))),
                "{step} {all} in {}",
                file.display()
            );
        }
        for l in block.iter().filter_map(|l| {
            l.trim_start().strip_prefix("- ").or(l.trim_start().strip_prefix("limit: ").map(|_| l.trim_start()))
        }) {
            assert!(html.contains(&format!("<li>{}</li>", esc(l))), "{l:?} missing from {}", file.display());
        }
    }
}

/// A later step may write again only files this scenario created, as each node sees them: the
/// same relative name in another node's directory is another file, and a foreign one there is
/// refused.
#[test]
fn a_later_step_writes_only_what_this_scenario_created_on_that_node() {
    let d = disk_tempdir();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(b.join("f"), b"someone else's file").unwrap();
    let file = d.path().join("steps.toml");
    std::fs::write(
        &file,
        "[defaults]\nrw = \"write\"\nsize = \"1M\"\n\
         [[step]]\nname = \"a writes\"\nnodes = [\"a\"]\n[[step.job]]\ntarget = \"f\"\n\
         [[step]]\nname = \"a again\"\nnodes = [\"a\"]\n[[step.job]]\ntarget = \"f\"\n\
         [[step]]\nname = \"b writes\"\nnodes = [\"b\"]\n[[step.job]]\ntarget = \"f\"\n",
    )
    .unwrap();
    let out = iolab()
        .args(["scenario", file.to_str().unwrap(), "--no-store", "-o", "json", "--sample-interval", "0"])
        .args(["--node", &format!("a=exec://{},dir={}", bin(), a.display())])
        .args(["--node", &format!("b=exec://{},dir={}", bin(), b.display())])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = v["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a writes", "a again"], "a's own file written twice, then b refused");
    assert_eq!(v["status"], "failed");
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("b writes") && err.contains("iolab did not create it"), "{err}");
    assert_eq!(std::fs::read(b.join("f")).unwrap(), b"someone else's file");
    assert_eq!(std::fs::metadata(a.join("f")).unwrap().len(), 1 << 20);
}
