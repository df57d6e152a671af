//! SNIA PTS's tests as scenarios (issue 29) end to end: `pts-iops` on a loop device (purged
//! with BLKDISCARD, filled twice, then rounds of a small matrix at a steady rate until judged
//! steady in exactly five rounds; stored, its plan and verdict read back and its report drawn),
//! and once over PTS's whole 7 x 8 matrix with tiny cells on a file (a punched hole, the fill).
#![allow(clippy::disallowed_macros)] // a test prints its skips with eprintln!, not user text

mod common;
use common::*;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// A loop device over a file, detached when dropped.
struct Loop(PathBuf);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn attach(backing: &Path) -> Option<Loop> {
    let out = Command::new("losetup").args(["--find", "--show"]).arg(backing).output().ok()?;
    out.status.success().then(|| Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())))
}

fn scenario_json(args: &[&str]) -> Value {
    // The whole matrix's 280 cells take about a minute: more than the helpers' usual limit.
    let out = iolab()
        .timeout(std::time::Duration::from_secs(600))
        .arg("scenario")
        .args(args)
        .args(["--output", "json", "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn names(v: &Value) -> Vec<String> {
    v["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn pts_iops_on_a_loop_device_purges_fills_and_ends_steady_in_five_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0xABu8; (32 * MIB) as usize]).unwrap();
    let Some(lo) = attach(&backing) else {
        return skip("losetup could not attach a loop device (needs root and the loop driver)");
    };
    let d = lo.0.to_str().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();

    // Without --device the raw device is refused before anything is written.
    let out = iolab()
        .args(["scenario", "pts-iops", "--target", d, "--runtime", "1s", "--pts-bs", "4k", "--db", db])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&backing).unwrap()[..4096].iter().all(|b| *b == 0xAB), "nothing written");

    // A steady rate: the tracked cell (0/100 4k) is judged steady at round 5, the first
    // window, and the run ends there.
    let v = scenario_json(&[
        "pts-iops",
        "--target",
        d,
        "--device",
        "--runtime",
        "1s",
        "--pts-bs",
        "64k,4k",
        "--pts-mixes",
        "100,0",
        "--rate-iops",
        "300",
        "--threads",
        "1",
        "--iodepth",
        "4",
        "--db",
        db,
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let n = names(&v);
    assert_eq!(n.len(), 5 * 4, "5 rounds of 4 cells: {n:?}");
    assert_eq!(&n[..4], ["round 1: 100/0 64k", "round 1: 100/0 4k", "round 1: 0/100 64k", "round 1: 0/100 4k"]);
    assert_eq!(n[19], "round 5: 0/100 4k");
    let verdict = &v["verdict"];
    assert_eq!(verdict["scenario"], "pts-iops");
    let f = &verdict["figures"];
    assert_eq!(
        (f["steady"].as_f64(), f["steady_at"].as_f64(), f["rounds"].as_f64()),
        (Some(1.0), Some(5.0), Some(5.0)),
        "{verdict}"
    );
    let mean = f["window_mean"].as_f64().unwrap();
    assert!((mean - 300.0).abs() <= 15.0, "the window's mean near 300 IOPS: {mean}");
    // The preconditioning: BLKDISCARD honoured, then twice the capacity written.
    let reasons = verdict["reasons"].to_string();
    if reasons.contains("purge: none") {
        return skip(&format!("the loop device refused the discard: {reasons}"));
    }
    assert!(reasons.contains("purge: discard"), "{reasons}");
    assert_eq!(f["precondition.bytes_written"].as_f64(), Some((2 * 32 * MIB) as f64), "{f}");
    assert_eq!(f["precondition.capacity_bytes"].as_f64(), Some((32 * MIB) as f64));
    // The run keeps its own preconditioning (no other run's: no run_id).
    let own = &v["precondition"];
    assert_eq!((own["purge"].as_str(), own["bytes_written"].as_u64()), (Some("discard"), Some(2 * 32 * MIB)), "{own}");
    assert!(own.get("run_id").is_none(), "{own}");
    assert!(reasons.contains("128 KiB sequential writes"), "{reasons}");
    // The written cells are really on the device: the fill replaced the 0xAB everywhere.
    let data = std::fs::read(&backing).unwrap();
    assert!(data.chunks(1 << 16).all(|c| c.iter().any(|b| *b != 0xAB)), "every 64 KiB rewritten");
    assert!(std::fs::metadata(&backing).unwrap().blocks() * 512 >= 30 * MIB);

    // Stored: the plan is the rounds that ran, the verdict read back, the rounds judged again.
    let out = iolab().args(["export", "--db", db, "last", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let back: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &back[0]["result"];
    assert_eq!(run["plan"]["phases"].as_array().unwrap().len(), 20, "the plan grew round by round to what ran");
    assert_eq!(run["verdict"], v["verdict"]);
    assert_eq!(back[0]["kind"], "scenario");

    // compare: the run as its steady state, one row, not round by round.
    let out = iolab().args(["compare", "--db", db, "last", "--output", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = c["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["phase"] == "steady state"), "{c}");
    let cell = |m: &str| rows.iter().find(|r| r["metric"] == m).map(|r| r["cells"][0]["mean"].as_f64().unwrap());
    assert_eq!(cell("steady_iops"), Some(mean));
    assert_eq!((cell("steady_attained"), cell("steady_rounds")), (Some(1.0), Some(5.0)));

    // The terminal and the HTML report: PTS's plots, tables and conditions.
    let out = iolab().args(["show", "--db", db, "last"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in
        ["SNIA PTS IOPS test (pts-iops)", "steady at round 5", "mean of rounds 1-5", "purge: discard", "2 pass(es)"]
    {
        assert!(text.contains(want), "{want} in the summary:\n{text}");
    }
    let html = dir.path().join("r.html");
    let out = iolab().args(["report", "--db", db, "last", "-o", html.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    for want in [
        "data-chart=\"pts-convergence-",
        "data-chart=\"pts-window-",
        "fitted line",
        "limits band",
        "data-pts-table=\"IOPS\"",
        "<th>100/0</th><th>0/100</th>",
        "Test conditions",
        "purge: discard",
        "1 thread(s) x queue depth 4, engine libaio, O_DIRECT",
    ] {
        assert!(page.contains(want), "{want} in the report");
    }
}

#[test]
fn pts_iops_runs_the_whole_matrix_on_a_file_with_tiny_cells() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_ok(dir.path()) {
        return skip("O_DIRECT is refused in the temporary directory");
    }
    let f = dir.path().join("pts.dat");
    let fs = f.to_str().unwrap();
    // Five rounds of PTS's 56 cells, 200 ms each at a paced rate, on a file iolab makes: a
    // hole punched (nothing there yet), filled twice, then the rounds; at most 5 rounds, so
    // steady or not the run ends after the fifth.
    let v = scenario_json(&[
        "pts-iops",
        "--target",
        fs,
        "--size",
        "8M",
        "--runtime",
        "200ms",
        "--rate-iops",
        "250",
        "--threads",
        "1",
        "--iodepth",
        "2",
        "--ss-max-rounds",
        "5",
        "--no-store",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let n = names(&v);
    assert_eq!(n.len(), 5 * 56, "five rounds of PTS's 7 x 8 matrix");
    let f = &v["verdict"]["figures"];
    assert_eq!(f["rounds"].as_f64(), Some(5.0), "{}", v["verdict"]);
    if f["steady"].as_f64() == Some(1.0) {
        assert_eq!(f["steady_at"].as_f64(), Some(5.0));
    }
    // The window is the tracked cell's five rounds, as the phases measured them.
    let tracked: Vec<f64> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"].as_str().unwrap().ends_with(": 0/100 4k"))
        .map(|p| p["total"]["write"]["ops"].as_f64().unwrap() / p["elapsed_s"].as_f64().unwrap())
        .collect();
    assert_eq!(tracked.len(), 5);
    let mean = tracked.iter().sum::<f64>() / 5.0;
    assert!((f["window_mean"].as_f64().unwrap() - mean).abs() < 1e-6 * mean, "{f} against {tracked:?}");
    let range = tracked.iter().copied().fold(f64::MIN, f64::max) - tracked.iter().copied().fold(f64::MAX, f64::min);
    assert!((f["window_range"].as_f64().unwrap() - range).abs() < 1e-6 * mean, "{f} against {tracked:?}");
    for (i, cell) in
        ["100/0 1024k", "100/0 0.5k", "95/5 1024k", "65/35 4k", "0/100 4k", "0/100 0.5k"].iter().enumerate()
    {
        let at = [0, 7, 8, 2 * 8 + 6, 6 * 8 + 6, 55][i];
        assert_eq!(n[at], format!("round 1: {cell}"));
        assert_eq!(n[4 * 56 + at], format!("round 5: {cell}"));
    }
    // Every cell did its I/O: reads where the mix reads, writes where it writes.
    for (i, p) in v["phases"].as_array().unwrap().iter().enumerate() {
        let (r, w) = (p["total"]["read"]["ops"].as_u64().unwrap(), p["total"]["write"]["ops"].as_u64().unwrap());
        assert!(r + w > 0, "{} did I/O", n[i]);
        if n[i].contains(" 0/100 ") {
            assert_eq!(r, 0, "{}", n[i]);
        }
        if n[i].contains(" 100/0 ") {
            assert_eq!(w, 0, "{}", n[i]);
        }
    }
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(reasons.contains("purge: punch hole"), "{reasons}");
    assert_eq!(v["verdict"]["figures"]["precondition.bytes_written"].as_f64(), Some((16 * MIB) as f64));

    // Skipped preconditioning is said in the report, and the matrix's flags are refused.
    let out = iolab()
        .args(["scenario", "pts-iops", "--target", fs, "--size", "8M", "--bs", "4k", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pts-bs"));
    let v = scenario_json(&[
        "pts-latency",
        "--target",
        fs,
        "--size",
        "8M",
        "--runtime",
        "200ms",
        "--pts-bs",
        "4k",
        "--pts-mixes",
        "0",
        "--ss-max-rounds",
        "5",
        "--no-precondition",
        "--no-store",
    ]);
    assert_eq!(v["verdict"]["scenario"], "pts-latency");
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(reasons.contains("preconditioning: none (--no-precondition)"), "{reasons}");
    assert_eq!(v["verdict"]["figures"]["precondition.skipped"].as_f64(), Some(1.0));
    let job = &v["plan"]["phases"][0]["jobs"][0];
    assert_eq!(
        (job["threads"].as_u64(), job["iodepth"].as_u64()),
        (Some(1), Some(1)),
        "PTS's latency test: one thread at QD1: {job}"
    );
}

/// `iolab precondition` is kept as a run of kind `precondition`; a later run on the same target
/// links to it (which run, how long before, how many runs between), in JSON, in the store and
/// in the summary.
#[test]
fn a_run_links_to_the_stored_preconditioning_of_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ssd.dat");
    let fs = f.to_str().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let out = iolab()
        .args(["precondition", fs, "--size", "4M", "--passes", "1", "--no-progress", "--db", db, "--output", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = iolab().args(["runs", "--db", db, "--output", "json"]).output().unwrap();
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let pre = &runs.as_array().unwrap()[0];
    assert_eq!(pre["kind"], "precondition", "{runs}");
    let pre_id = pre["id"].as_i64().unwrap();

    let job = ["run", "--target", fs, "--size", "4M", "--rw", "randwrite", "--runtime", "1s", "--db", db];
    let first = run_json(&job);
    let p = &first["precondition"];
    assert_eq!(p["run_id"].as_i64(), Some(pre_id), "{first}");
    assert_eq!((p["purge"].as_str(), p["runs_since"].as_u64()), (Some("punch hole"), Some(0)), "{p}");
    assert_eq!(p["bytes_written"].as_u64(), Some(4 * MIB));
    assert!(p["run_uid"].as_str().is_some_and(|u| u.len() == 32), "{p}");
    let second = run_json(&job);
    assert_eq!(second["precondition"]["runs_since"].as_u64(), Some(1), "the first run came between");

    // Every documented `precondition` field is there, and nothing undocumented.
    let mut seen = std::collections::BTreeSet::new();
    for (k, _) in second["precondition"].as_object().unwrap() {
        seen.insert(format!("precondition.{k}"));
    }
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let mut docs = std::collections::BTreeSet::new();
    for row in text.lines().filter_map(|l| l.strip_prefix("| `precondition.")) {
        let cell = row.split(" | ").next().unwrap_or("");
        for (i, name) in cell.split('`').enumerate().filter(|(i, _)| i % 2 == 0) {
            let name = if i == 0 { name } else { name.trim_start_matches('.') };
            if !name.is_empty() && !name.starts_with(',') {
                docs.insert(format!("precondition.{name}"));
            }
        }
    }
    assert_eq!(docs, seen, "docs/json.md's precondition rows against a linked run's");

    // Stored with the run, and said in its summary.
    let out = iolab().args(["export", "--db", db, "last", "--format", "json"]).output().unwrap();
    let back: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(back[0]["result"]["precondition"], second["precondition"]);
    let out = iolab().args(["show", "--db", db, "last"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("preconditioned by run {pre_id} (punch hole"))
            && text.contains("1 run recorded on this host since"),
        "{text}"
    );
    // Another target follows no preconditioning.
    let other = dir.path().join("other.dat");
    let v = run_json(&["run", "--target", other.to_str().unwrap(), "--size", "1M", "--rw", "write", "--db", db]);
    assert!(v.get("precondition").is_none(), "{v}");
}
