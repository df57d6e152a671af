//! fio job files in, fio's JSON and logs out (issue 13): the same job file run by fio and by
//! iolab gives JSON of one shape (fio's own output is the schema), fio's readers
//! (fio_jsonplus_clat2csv, fio2gnuplot) read iolab's output, convert gives the same plan, and
//! bad job files are refused with their file and line before anything is touched.

mod common;

use common::{iolab, skip};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new("which").arg(cmd).output().is_ok_and(|o| o.status.success())
}

/// The job both tools run: a mixed random job with flushes, its file from the environment.
const JOB: &str = "\
; the same job for fio and iolab
[global]
filename=${TESTFILE}
size=8m
bs=4k
ioengine=psync
runtime=1
time_based

[mixed]
rw=randrw
rwmixread=70
fsync=8
";

/// A value's shape: objects by key, arrays by their first element, numbers as integer or
/// float, maps whose keys are data (`bins`, `job options`) by their values' shape only.
fn shape(v: &Value, key: &str) -> Value {
    match v {
        Value::Object(m) if key == "bins" || key == "job options" => {
            let kinds: BTreeSet<String> = m.values().map(|x| shape(x, "").to_string()).collect();
            Value::String(format!("map of {}", kinds.into_iter().collect::<Vec<_>>().join("|")))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), shape(x, k))).collect()),
        Value::Array(a) => Value::Array(a.first().map(|x| vec![shape(x, "")]).unwrap_or_default()),
        Value::Number(n) if n.is_f64() => "float".into(),
        Value::Number(_) => "integer".into(),
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null".into(),
    }
}

/// Paths where the two shapes differ.
fn differences(fio: &Value, ours: &Value, path: &str, out: &mut Vec<String>) {
    match (fio, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in a {
                match b.get(k) {
                    Some(y) => differences(x, y, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k}: not in fio's"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                differences(x, y, &format!("{path}[]"), out);
            }
        }
        (x, y) if x != y => out.push(format!("{path}: fio {x}, iolab {y}")),
        _ => {}
    }
}

#[test]
fn fio_json_has_the_shape_of_fios_own_on_the_same_job() {
    if !have("fio") {
        return skip("fio is not installed");
    }
    let d = common::disk_tempdir();
    let job = d.path().join("mixed.fio");
    std::fs::write(&job, JOB).unwrap();
    let fio = Command::new("fio")
        .arg("--output-format=json+")
        .arg(&job)
        .env("TESTFILE", d.path().join("fio.dat"))
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(fio.status.success(), "fio: {}", String::from_utf8_lossy(&fio.stderr));
    let fio_json: Value = serde_json::from_slice(&fio.stdout).unwrap();
    let out = iolab()
        .args(["run", "--output", "fio-json+", "--no-progress"])
        .arg(&job)
        .env("TESTFILE", d.path().join("iolab.dat"))
        .output()
        .unwrap();
    assert!(out.status.success(), "iolab: {}", String::from_utf8_lossy(&out.stderr));
    let ours: Value = serde_json::from_slice(&out.stdout).unwrap();

    let mut fio_shape = shape(&fio_json, "");
    // fio lists its [global] options beside the jobs; iolab keeps the plan, not the fio text.
    fio_shape.as_object_mut().unwrap().remove("global options");
    let mut diff = Vec::new();
    differences(&fio_shape, &shape(&ours, ""), "", &mut diff);
    assert!(diff.is_empty(), "iolab's fio-json+ differs from fio 3.33's on the same job:\n{}", diff.join("\n"));

    // The figures are the job's: both did about the same reads and writes, 70/30.
    let j = &ours["jobs"][0];
    assert_eq!(j["jobname"], "mixed");
    let (r, w) = (j["read"]["total_ios"].as_f64().unwrap(), j["write"]["total_ios"].as_f64().unwrap());
    assert!(r > 0.0 && w > 0.0 && (0.6..0.8).contains(&(r / (r + w))), "reads {r} writes {w}");
    // An fsync every 8 writes (the time may run out between the 8th write and its fsync).
    let syncs = j["sync"]["total_ios"].as_u64().unwrap();
    assert!((w as u64 / 8).saturating_sub(1) <= syncs && syncs <= w as u64 / 8, "{syncs} fsyncs for {w} writes");
    assert_eq!(j["read"]["io_bytes"].as_u64().unwrap(), r as u64 * 4096);
    let p = &j["read"]["clat_ns"]["percentile"];
    assert!(p["50.000000"].as_u64().unwrap() <= p["99.000000"].as_u64().unwrap());
    assert_eq!(j["job options"]["rw"], "randrw");
    assert_eq!(j["job options"]["bs"], "4096");
    let bins: u64 = j["read"]["clat_ns"]["bins"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(bins, r as u64, "json+ bins hold every read");

    // fio's own json+ reader takes it, and its check of the CSV against the bins passes.
    if have("fio_jsonplus_clat2csv") {
        let json_path = d.path().join("iolab.json");
        std::fs::write(&json_path, &out.stdout).unwrap();
        let csv = d.path().join("lat.csv");
        for extra in [None, Some("--validate")] {
            let o = Command::new("fio_jsonplus_clat2csv").args(extra).arg(&json_path).arg(&csv).output().unwrap();
            assert!(o.status.success(), "fio_jsonplus_clat2csv {extra:?}: {}", String::from_utf8_lossy(&o.stderr));
            let said = String::from_utf8_lossy(&o.stdout);
            assert!(said.contains(if extra.is_some() { "validated" } else { "generated" }), "{said}");
        }
        let rows = std::fs::read_to_string(d.path().join("lat_job0.csv")).unwrap();
        assert!(rows.lines().count() > 10, "{rows}");
    } else {
        skip("fio_jsonplus_clat2csv is not installed");
    }

    // The stored run exports the same document.
    let exported = iolab().args(["export", "last", "--format", "fio-json+"]).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let back: Value = serde_json::from_slice(&exported.stdout).unwrap();
    assert_eq!(back["jobs"][0]["read"]["total_ios"], j["read"]["total_ios"]);
    assert_eq!(back["jobs"][0]["read"]["clat_ns"]["bins"], j["read"]["clat_ns"]["bins"]);
}

#[test]
fn logs_are_fios_and_fio2gnuplot_reads_them() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("w.fio");
    std::fs::write(
        &job,
        format!(
            "[w]\nfilename={}\nsize=4m\nrw=write\nbs=64k\nruntime=3\ntime_based\nrate=2m\n",
            d.path().join("f").display()
        ),
    )
    .unwrap();
    let out = iolab()
        // Not stored: fio_json_has_the_shape... exports the binary's last stored run.
        .args([
            "run",
            "--no-store",
            "--output",
            "json",
            "--write-bw-log",
            "t",
            "--write-iops-log",
            "t",
            "--write-lat-log",
            "t",
        ])
        .arg(&job)
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bw = std::fs::read_to_string(d.path().join("t_bw.1.log")).unwrap();
    let lines: Vec<Vec<u64>> = bw.lines().map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect()).collect();
    assert!(lines.len() >= 2, "{bw}");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l.len(), 5, "{bw}");
        assert_eq!((l[0], l[2], l[3], l[4]), ((i as u64 + 1) * 1000, 1, 0, 0), "{bw}");
        // rate=2m: 2 MiB/s is 2048 KiB/s.
        assert!((1900..=2200).contains(&l[1]), "{bw}");
    }
    let lat = std::fs::read_to_string(d.path().join("t_lat.1.log")).unwrap();
    assert!(lat.lines().all(|l| l.split(", ").nth(1).unwrap().parse::<u64>().unwrap() > 0), "{lat}");
    // Asking again would overwrite them: refused before anything runs.
    let again = iolab().args(["run", "--write-bw-log", "t"]).arg(&job).current_dir(d.path()).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("t_bw.1.log exists"));

    if !have("fio2gnuplot") {
        return skip("fio2gnuplot is not installed");
    }
    let g = d.path().join("plots");
    let o = Command::new("fio2gnuplot").args(["-b", "-d"]).arg(&g).current_dir(d.path()).output().unwrap();
    assert!(
        o.status.success(),
        "fio2gnuplot: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let global = std::fs::read_to_string(g.join("result.global")).unwrap();
    let avg: f64 = global.lines().find_map(|l| l.strip_prefix("avg=")).unwrap().parse().unwrap();
    let mean = lines.iter().map(|l| l[1] as f64).sum::<f64>() / lines.len() as f64;
    assert!((avg - mean).abs() < 1.0, "fio2gnuplot's average {avg} against the log's {mean}");
}

#[test]
fn convert_prints_toml_that_runs_as_the_same_plan() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("two.fio");
    let text = format!(
        "[global]\ndirectory={}\nsize=1m\nioengine=posixaio\niodepth=8\n[seq]\nrw=write\nbs=128k\n[rand]\nstonewall\nrw=randread\nbsrange=4k-16k\nnumjobs=2\n",
        d.path().display()
    );
    std::fs::write(&job, text).unwrap();
    let conv = iolab().arg("convert").arg(&job).output().unwrap();
    assert!(conv.status.success(), "{}", String::from_utf8_lossy(&conv.stderr));
    assert!(String::from_utf8_lossy(&conv.stderr).contains("two.fio:4: ioengine=posixaio runs on io_uring"));
    let toml_path = d.path().join("two.toml");
    std::fs::write(&toml_path, &conv.stdout).unwrap();
    let plan = |p: &Path| -> Value {
        let out = iolab().args(["run", "--no-store", "--cleanup", "--output", "json"]).arg(p).output().unwrap();
        assert!(out.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["plan"].clone()
    };
    if !common::uring_ok() {
        return skip("io_uring is not available");
    }
    let (a, b) = (plan(&job), plan(&toml_path));
    assert_eq!(a, b);
    assert_eq!(a["phases"].as_array().unwrap().len(), 2);
    assert_eq!(a["phases"][1]["jobs"][0]["threads"], 2);
}

#[test]
fn bad_job_files_name_file_and_line_exit_2_and_touch_nothing() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("loop-a.fio"), "size=1m\ninclude loop-b.fio\n").unwrap();
    std::fs::write(d.path().join("loop-b.fio"), "include loop-a.fio\n").unwrap();
    let target = d.path().join("data");
    let t = target.display();
    for (name, text, line, what) in [
        ("unclosed.fio", format!("[global]\nfilename={t}\n[job\nrw=write\n"), 3, "unclosed section"),
        ("unknown.fio", format!("[job]\nfilename={t}\nsize=1m\nrw=write\nlockmem=1m\n"), 5, "`lockmem`"),
        ("unit.fio", format!("[job]\nfilename={t}\nsize=4q\nrw=write\n"), 3, "unknown unit `q`"),
        ("loop.fio", format!("[job]\nfilename={t}\nrw=write\ninclude loop-a.fio\n"), 1, "include loop"),
        ("missing.fio", format!("[job]\nfilename={t}\nrw=write\ninclude nowhere.fio\n"), 4, "nowhere.fio"),
    ] {
        let path = d.path().join(name);
        std::fs::write(&path, text).unwrap();
        let before: BTreeSet<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        let db = d.path().join("never.db");
        let out = iolab().arg("run").arg(&path).env("IOLAB_DB", &db).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let file = if name == "loop.fio" { d.path().join("loop-b.fio") } else { path.clone() };
        assert!(err.contains(&format!("{}:{line}:", file.display())) && err.contains(what), "{name}: {err}");
        assert_eq!(err.trim().lines().filter(|l| l.starts_with("Error")).count(), 1, "{name}: one error: {err}");
        let after: BTreeSet<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(before, after, "{name}: nothing created");
        assert!(!target.exists() && !db.exists());
    }
    // --fio-lenient runs without the unknown option and says so.
    let out = iolab()
        .args(["run", "--fio-lenient", "--no-store", "--cleanup", "--output", "json"])
        .arg(d.path().join("unknown.fio"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: left out (--fio-lenient): "));
}

/// fio-plot (from PyPI; .ci/run installs it in a venv and names it in IOLAB_FIO_PLOT) draws its
/// IOPS and latency chart from iolab's fio-json, selecting the file by its `job options`.
#[test]
fn fio_plot_draws_iolabs_fio_json() {
    let bin = std::env::var("IOLAB_FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    if Command::new(&bin).arg("--help").output().map(|o| !o.status.success()).unwrap_or(true) {
        return skip("fio-plot is not installed (pip install fio-plot; IOLAB_FIO_PLOT=path)");
    }
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let out = iolab()
        .args(["run", "--rw", "randread", "--size", "8m", "--runtime", "1s", "--no-store", "--output", "fio-json"])
        .arg("--target")
        .arg(d.path().join("f"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(results.join("randread-1-1.json"), &out.stdout).unwrap();
    let png = d.path().join("chart.png");
    let o = Command::new(&bin)
        .args(["-i", "results", "-T", "iolab", "-l", "-r", "randread", "-d", "1", "-n", "1", "-o"])
        .arg(&png)
        .current_dir(d.path())
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fio-plot: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "a chart of {} bytes", bytes.len());
}

/// A CrystalDiskMark-style file (issue 27): `ramp_time` on size-bounded jobs, `wait_for_previous`
/// and `write_bw_log` in every section runs, and writes the logs the file asks for, one per phase.
#[test]
fn a_crystaldiskmark_style_file_runs_with_its_ramp_and_its_logs() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("cdm.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={}\nsize=2m\nbs=4k\nramp_time=1\nrate_iops=256\nlog_avg_msec=1000\n\
             [SEQ-Write]\nrw=write\nwrite_bw_log=cdm\n[SEQ-Read]\nwait_for_previous\nrw=read\nwrite_bw_log=cdm\n",
            d.path().join("f").display()
        ),
    )
    .unwrap();
    let out = iolab().args(["run", "--no-store", "--output", "json"]).arg(&job).current_dir(d.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    // 2 MiB in 4 KiB blocks is 512 I/Os, 2 s at 256 IOPS: the first second is the ramp, run
    // toward the size and not reported (fio 3.33 reported 511 of 1024 for the same shape).
    for (p, dir) in phases.iter().zip(["write", "read"]) {
        let ops = p["total"][dir]["ops"].as_u64().unwrap();
        assert!((180..=330).contains(&ops), "{dir}: the ramp's I/O counts toward the size, unreported: {ops}");
    }
    for i in 1..=2 {
        assert!(d.path().join(format!("cdm_bw.{i}.log")).exists(), "the file's write_bw_log, phase {i}");
    }
}
