//! Steady state (issue 29) as whole commands on real files: SNIA's rounds ending a steady phase
//! in exactly its window, a phase whose rate changes every round never judged steady, and a
//! fio job file's `steadystate=iops_slope:0.3%` with `ss_dur` beside fio 3.33 on the same job.
#![allow(clippy::disallowed_macros)] // a test prints its skips and figures with eprintln!, not user text

mod common;
use common::*;
use serde_json::Value;

fn steady(v: &Value) -> &Value {
    let s = &v["phases"][0]["steady_state"];
    assert!(s.is_object(), "no steady_state in {v}");
    s
}

#[test]
fn a_steady_rate_is_judged_steady_in_exactly_five_rounds_and_reports_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let db = dir.path().join("runs.db");
    let v = run_json(&[
        "run",
        "--db",
        db.to_str().unwrap(),
        "--target",
        f.to_str().unwrap(),
        "--size",
        "4M",
        "--rw",
        "randwrite",
        "--rate-iops",
        "400",
        "--steady-state",
        "snia",
        "--round",
        "2s",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let s = steady(&v);
    assert_eq!(s["method"], "snia");
    assert_eq!(s["attained"], true, "{s}");
    assert_eq!(s["steady_at"], 5, "{s}");
    assert_eq!(s["measured"], 5, "the phase ends at the round judged steady: {s}");
    let values: Vec<f64> = s["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(values.len(), 5);
    for x in &values {
        assert!((x - 400.0).abs() <= 8.0, "every round near 400 IOPS: {values:?}");
    }
    let w = &s["window"];
    assert_eq!((w["first"].as_u64(), w["last"].as_u64()), (Some(1), Some(5)));
    assert!(w["range"].as_f64().unwrap() <= w["range_limit"].as_f64().unwrap());
    assert!(w["excursion"].as_f64().unwrap() <= w["excursion_limit"].as_f64().unwrap());
    // The phase's figures are the window's: 5 rounds of 2 s at 400 IOPS.
    let p = &v["phases"][0];
    assert_eq!(p["elapsed_s"].as_f64(), Some(10.0), "{p}");
    let ops = p["total"]["write"]["ops"].as_f64().unwrap();
    assert!((ops - 4000.0).abs() <= 40.0, "the window's writes: {ops}");
    assert_eq!((s["figures_from_s"].as_f64(), s["figures_to_s"].as_f64()), (Some(0.0), Some(10.0)));

    // Stored, the rounds read back as data, and the report draws their convergence.
    let out = iolab().args(["export", "--db", db.to_str().unwrap(), "last", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let back: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &back[0]["result"];
    assert_eq!(&run["phases"][0]["steady_state"], s, "the store keeps the rounds");
    let html = dir.path().join("r.html");
    let out =
        iolab().args(["report", "--db", db.to_str().unwrap(), "last", "-o", html.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page.find("data-chart=\"steady-").expect("a convergence chart");
    let fig = &page[at..at + page[at..].find("</figure>").unwrap()];
    for words in ["fitted line", "limits band", "window mean", "steady at round 5"] {
        assert!(fig.contains(words), "the chart has {words}: {fig}");
    }
}

#[test]
fn a_rate_that_changes_every_round_is_never_judged_steady() {
    // The judged job runs at 100 IOPS beside six jobs of 300 IOPS ending one a round: the
    // phase's summed figure falls by 300 every round (1900, 1600, ... 400).
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::from("[[phase]]\nname = \"falling\"\n");
    toml += &format!(
        "[[phase.job]]\nname = \"judged\"\ntarget = \"{}\"\nsize = \"1M\"\nrw = \"randwrite\"\nrate_iops = 100\nsteady_state = \"snia\"\nround = \"1s\"\nss_max_rounds = 6\n",
        dir.path().join("j").display()
    );
    for k in 1..=6 {
        toml += &format!(
            "[[phase.job]]\nname = \"b{k}\"\ntarget = \"{}\"\nsize = \"1M\"\nrw = \"randwrite\"\nrate_iops = 300\nruntime = \"{k}s\"\n",
            dir.path().join(format!("b{k}")).display()
        );
    }
    let job = dir.path().join("falling.toml");
    std::fs::write(&job, toml).unwrap();
    let v = run_json(&["run", "--no-store", job.to_str().unwrap()]);
    let s = steady(&v);
    assert_eq!(s["attained"], false, "{s}");
    assert!(s.get("steady_at").is_none(), "{s}");
    assert_eq!(s["measured"], 6, "ended at the maximum: {s}");
    let values: Vec<f64> = s["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    for (r, x) in values.iter().enumerate() {
        let want = 1900.0 - 300.0 * r as f64;
        assert!((x - want).abs() <= 0.05 * want, "round {} near {want}: {values:?}", r + 1);
    }
    // The last window (rounds 2..6) is judged and reported outside its range limit.
    let w = &s["window"];
    assert_eq!((w["first"].as_u64(), w["last"].as_u64()), (Some(2), Some(6)));
    assert!(w["range"].as_f64().unwrap() > w["range_limit"].as_f64().unwrap(), "{w}");
    assert_eq!(w["steady"], false);
}

/// A fio job: random 4 KiB writes at 500 IOPS for at most 30 s, ending once the IOPS slope
/// over 5 one-second samples is under 0.3% of their mean.
fn fio_job(dir: &std::path::Path) -> String {
    format!(
        "[global]\nioengine=psync\nrw=randwrite\nbs=4k\nsize=4m\ntime_based\nruntime=30\nrate_iops=500\n\
         steadystate=iops_slope:0.3%\nss_dur=5\n\n[ss]\nfilename={}\n",
        dir.join("ss.dat").display()
    )
}

#[test]
fn a_fio_job_file_with_an_iops_slope_criterion_ends_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("ss.fio");
    std::fs::write(&job, fio_job(dir.path())).unwrap();
    let started = std::time::Instant::now();
    let v = run_json(&["run", "--no-store", job.to_str().unwrap()]);
    let took = started.elapsed().as_secs_f64();
    let s = steady(&v);
    assert_eq!(s["method"], "fio");
    assert_eq!(s["attained"], true, "{s}");
    assert_eq!(s["steady_at"], 5, "judged once five samples are in: {s}");
    let w = &s["window"];
    assert!(w["criterion"].as_f64().unwrap().abs() < 0.3, "{w}");
    assert_eq!(w["limit"].as_f64(), Some(0.3));
    assert!(took < 20.0, "ended when steady, not at the 30 s runtime: {took:.1} s");
    // fio reports the whole job: ~5 s at 500 IOPS, not a window.
    let ops = v["phases"][0]["total"]["write"]["ops"].as_f64().unwrap();
    assert!(ops >= 2400.0, "{ops}");

    // fio 3.33 on the same job, where installed: it attains steady state too, long before 30 s.
    let fio = std::process::Command::new("fio").arg("--output-format=json").arg(&job).current_dir(dir.path()).output();
    match fio {
        Ok(out) if out.status.success() => {
            let f: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
            let j = &f["jobs"][0];
            assert_eq!(j["steadystate"]["attained"], 1, "fio: {}", j["steadystate"]);
            let ms = j["job_runtime"].as_f64().unwrap();
            assert!(ms < 20_000.0, "fio ended when steady too: {ms} ms");
            eprintln!("fio 3.33: attained after {ms} ms; iolab after {took:.1} s, {ops} writes");
        }
        _ => skip("fio is not installed or failed; iolab's side was checked alone"),
    }
}

/// `--ramp auto`: a phase that starts fast (a second job adds 600 IOPS for its first 4 s) and
/// then holds 300 IOPS drops exactly those 4 s: the first steady 10 s window starts there. Its
/// figures are the 12 s after; what was dropped is in JSON and in the summary.
#[test]
fn ramp_auto_drops_exactly_the_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[[phase]]\nname = \"warm\"\n\
         [[phase.job]]\nname = \"steady\"\ntarget = \"{}\"\nsize = \"4M\"\nrw = \"randwrite\"\nrate_iops = 300\nruntime = \"16s\"\nramp = \"auto\"\n\
         [[phase.job]]\nname = \"fresh\"\ntarget = \"{}\"\nsize = \"4M\"\nrw = \"randwrite\"\nrate_iops = 600\nruntime = \"4s\"\n",
        dir.path().join("a").display(),
        dir.path().join("b").display()
    );
    let job = dir.path().join("warm.toml");
    std::fs::write(&job, toml).unwrap();
    let v = run_json(&["run", "--no-store", job.to_str().unwrap()]);
    let p = &v["phases"][0];
    let w = &p["warmup"];
    assert_eq!(w["found"], true, "{w}");
    assert_eq!(w["dropped_s"].as_f64(), Some(4.0), "{w}");
    assert_eq!(
        (w["window_s"].as_u64(), w["range_pct"].as_f64(), w["excursion_pct"].as_f64()),
        (Some(10), Some(20.0), Some(10.0))
    );
    let win = &w["window"];
    assert_eq!(
        (win["first"].as_u64(), win["last"].as_u64()),
        (Some(5), Some(14)),
        "seconds 5..14, counted from 1: {w}"
    );
    assert!((win["mean"].as_f64().unwrap() - 300.0).abs() < 15.0, "{w}");
    let dropped = w["dropped_ops"].as_f64().unwrap();
    assert!((dropped - 4.0 * 900.0).abs() <= 0.04 * 3600.0, "4 s at 900 IOPS dropped: {dropped}");
    // The figures are the 12 s after the warm-up, at 300 IOPS.
    let el = p["elapsed_s"].as_f64().unwrap();
    assert!((el - 12.0).abs() < 0.3, "{el}");
    let ops = p["total"]["write"]["ops"].as_f64().unwrap();
    assert!((ops - 12.0 * 300.0).abs() <= 0.04 * 3600.0, "{ops}");
    assert!((p["total"]["write"]["iops"].as_f64().unwrap() - 300.0).abs() < 15.0, "{p}");
    // Every documented `phases[].warmup` field is there (the window's as steady_state's).
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let mut docs = std::collections::BTreeSet::new();
    for row in text.lines().filter_map(|l| l.strip_prefix("| `phases[].warmup")) {
        let cell = row.split(" | ").next().unwrap_or("");
        for (_, name) in cell.split('`').enumerate().filter(|(i, _)| i % 2 == 0) {
            let name = name.trim_start_matches('.');
            if !name.is_empty() && !name.starts_with(',') {
                docs.insert(name.to_string());
            }
        }
    }
    let seen: std::collections::BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(docs, seen, "docs/json.md's phases[].warmup rows against a run's");
    for k in ["first", "last", "mean", "range", "range_limit", "excursion", "excursion_limit", "steady"] {
        assert!(win.get(k).is_some(), "warmup.window.{k}: {win}");
    }

    // The timeline keeps the warm-up seconds: 900 a second at first.
    let first = &p["timeline"][0];
    assert!(first["write_ops"].as_f64().unwrap() > 800.0, "{first}");

    // Without a steady window nothing is dropped, and it says so.
    let out = iolab()
        .args([
            "run",
            "--no-store",
            "--target",
            dir.path().join("c").to_str().unwrap(),
            "--size",
            "1M",
            "--rw",
            "randwrite",
        ])
        .args(["--rate-iops", "100", "--runtime", "3s", "--ramp", "auto"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warm-up (--ramp auto): no 10 s window was steady, nothing dropped"), "{text}");
    // --ramp auto needs a runtime, and judges what --steady-state would: one of them.
    let out = iolab().args(["run", "--no-store", "--target", "x", "--size", "1M", "--ramp", "auto"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("add a runtime"), "{}", String::from_utf8_lossy(&out.stderr));
}
