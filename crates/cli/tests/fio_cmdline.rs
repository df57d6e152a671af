//! `iolab fio ARGS...` and the libaio engine under it (issue 27): fio's command line runs on
//! Linux native AIO (strace sees io_submit), its JSON is what fio's readers read, its normal and
//! terse reports are fio's layouts, a bad option is one error naming its argument, `--output`
//! writes the file and the run is in the store; fio's batching makes the io_submit calls fio
//! makes.

mod common;

use common::{direct_ok, disk_tempdir, iolab, skip, u};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new("which").arg(cmd).output().is_ok_and(|o| o.status.success())
}

fn aio_ok() -> bool {
    iolab_engine::libaio::available().is_ok()
}

/// The iocbs of each io_submit strace saw (its second argument), in order.
fn submits(strace_out: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(strace_out).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = &l[l.find("io_submit(")? + "io_submit(".len()..];
            rest.split(',').nth(1)?.trim().parse().ok()
        })
        .collect()
}

/// The acceptance line of issue 27: on libaio, fio's JSON with the fields fio's readers take.
#[test]
fn the_acceptance_line_runs_on_libaio_and_prints_fios_json() {
    if !aio_ok() {
        return skip("native AIO (io_setup) is not available here");
    }
    if !have("strace") {
        return skip("strace is not installed");
    }
    let dir = disk_tempdir();
    if !direct_ok(dir.path()) {
        return skip("no scratch filesystem here supports O_DIRECT (set IOLAB_TEST_DIR)");
    }
    let trace = dir.path().join("strace.out");
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=io_setup,io_submit", "-o"])
        .arg(&trace)
        .arg(&bin)
        .args([
            "fio",
            "--name=t",
            "--rw=randread",
            "--bs=4k",
            "--size=64m",
            "--ioengine=libaio",
            "--iodepth=16",
            "--direct=1",
            "--output-format=json",
        ])
        .env("IOLAB_DB", common::db_path())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = submits(&trace);
    assert!(calls.len() >= 16384, "every read through io_submit: {} calls", calls.len());
    assert!(calls.iter().all(|&n| n == 1), "fio's default iodepth_batch_submit=1: one iocb per call");
    let setup = std::fs::read_to_string(&trace).unwrap();
    assert!(setup.contains("io_setup(16,"), "a context for the depth: {}", &setup[..setup.len().min(400)]);
    // fio's JSON, with what fio-plot and fio's scripts read.
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout, nothing else");
    let j = &v["jobs"][0];
    assert_eq!(j["jobname"], "t");
    for (k, want) in [("ioengine", "libaio"), ("iodepth", "16"), ("rw", "randread"), ("bs", "4096"), ("numjobs", "1")] {
        assert_eq!(j["job options"][k], want, "job options {k}");
    }
    assert_eq!(u(&j["read"]["total_ios"]), 16384);
    assert_eq!(u(&j["read"]["io_bytes"]), 64 << 20);
    assert!(j["read"]["iops"].as_f64().unwrap() > 0.0);
    assert!(j["read"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert!(j["read"]["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    assert!(v["fio version"].as_str().unwrap().starts_with("iolab-"));
    // Python's json reads it, with the fields fio-plot's importer takes (job options rw,
    // iodepth, numjobs; per direction iops, bw, lat_ns mean and stddev, clat_ns percentiles).
    if have("python3") {
        let script = "import json,sys\nd=json.load(sys.stdin)\nj=d['jobs'][0]\no=j['job options']\n\
            r=j['read']\nprint(o['rw'],o['iodepth'],o['numjobs'],r['iops']>0,r['bw']>0,\
            r['lat_ns']['mean']>0,r['lat_ns']['stddev']>=0,len(r['clat_ns']['percentile']))";
        let mut py = Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        py.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let said = py.wait_with_output().unwrap();
        assert!(said.status.success(), "python3: {}", String::from_utf8_lossy(&said.stderr));
        assert_eq!(String::from_utf8_lossy(&said.stdout).trim(), "randread 16 1 True True True True 17");
    } else {
        skip("python3 is not installed: fio's JSON read by serde only");
    }
    // The run is in the store.
    let show = iolab().args(["show", "last", "--output", "json"]).output().unwrap();
    assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("libaio") && shown.contains("fio --name=t"), "{shown}");
    // fio-plot reads it, where it is installed.
    let plot = std::env::var("IOLAB_FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    if Command::new(&plot).arg("--help").output().map(|o| !o.status.success()).unwrap_or(true) {
        return skip("fio-plot is not installed (pip install fio-plot; IOLAB_FIO_PLOT=path); its fields checked above");
    }
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::fs::write(results.join("randread-16-1.json"), &out.stdout).unwrap();
    let png = dir.path().join("chart.png");
    let o = Command::new(&plot)
        .args(["-i", "results", "-T", "iolab", "-l", "-r", "randread", "-d", "16", "-n", "1", "-o"])
        .arg(&png)
        .current_dir(dir.path())
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    assert!(o.status.success(), "fio-plot: {}", String::from_utf8_lossy(&o.stderr));
}

/// iodepth_batch_submit=8 at iodepth 16: io_submit carries 8 iocbs at a time, never more, as
/// fio's does with the same options; iolab's own way (no batching asked) submits the whole
/// queue at once.
#[test]
fn batching_makes_the_submissions_fio_makes() {
    if !aio_ok() || !have("strace") {
        return skip("native AIO or strace is not available here");
    }
    let dir = disk_tempdir();
    if !direct_ok(dir.path()) {
        return skip("no scratch filesystem here supports O_DIRECT (set IOLAB_TEST_DIR)");
    }
    let f = dir.path().join("f");
    let fs = f.to_str().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let traced = |name: &str, args: &[String]| -> Vec<u64> {
        let trace = dir.path().join(name);
        let out = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=io_submit", "-o"])
            .arg(&trace)
            .args(args)
            .env("IOLAB_DB", common::db_path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        submits(&trace)
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let job = strings(&[
        "--name=t",
        &format!("--filename={fs}"),
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--ioengine=libaio",
        "--iodepth=16",
        "--direct=1",
        "--iodepth_batch_submit=8",
        "--output-format=terse",
    ]);
    let b = bin.to_str().unwrap();
    let ours = traced("iolab.strace", &[strings(&[b, "fio", "--no-store", "--"]), job.clone()].concat());
    assert_eq!(ours.iter().sum::<u64>(), 2048, "every read submitted once");
    assert!(ours.iter().all(|&n| n <= 8), "never more than the batch: {:?}", &ours[..ours.len().min(20)]);
    assert!(ours.iter().filter(|&&n| n == 8).count() >= 2, "batches of 8: {:?}", &ours[..ours.len().min(20)]);
    if have("fio") {
        let theirs = traced("fio.strace", &[strings(&["fio"]), job].concat());
        assert_eq!(theirs.iter().copied().max(), ours.iter().copied().max(), "fio's largest batch is iolab's");
    }
    let own = traced(
        "own.strace",
        &strings(&[
            b,
            "run",
            "--target",
            fs,
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--engine",
            "libaio",
            "--iodepth",
            "16",
            "--direct",
            "--no-store",
            "--output",
            "json",
        ]),
    );
    assert_eq!(own.first(), Some(&16), "iolab's own way: the whole queue in the first call");
}

/// normal and terse are fio's layouts, several formats at once go to --output, stdout stays
/// empty, and a file iolab wrote is replaced by the next run.
#[test]
fn formats_and_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let report = dir.path().join("report.txt");
    let run = |extra: &[&str]| {
        let out = iolab()
            .arg("fio")
            .arg("--name=seq")
            .arg(format!("--filename={}", f.display()))
            .args(["--rw=read", "--bs=64k", "--size=4m", "--eta=never", "--group_reporting"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "seq: (g=0): rw=read, bs=(R) 65536B-65536B",
        "  read: IOPS=",
        "    clat percentiles (",
        "Run status group 0 (all jobs):",
        "   READ: bw=",
    ] {
        assert!(text.contains(want), "normal output lacks {want:?}:\n{text}");
    }
    let out = run(&["--output-format=terse,json", "--output", report.to_str().unwrap()]);
    assert!(out.stdout.is_empty(), "the report went to the file");
    let written = std::fs::read_to_string(&report).unwrap();
    let (terse, json) = written.split_once('\n').unwrap();
    let fields: Vec<&str> = terse.split(';').collect();
    assert_eq!(fields[0], "3");
    assert!(fields[1].starts_with("iolab-"));
    assert_eq!((fields[2], fields[5]), ("seq", "4096"), "job name and KiB read");
    let v: Value = serde_json::from_str(json).unwrap();
    assert_eq!(u(&v["jobs"][0]["read"]["io_kbytes"]), 4096);
    run(&["--minimal", "--output", report.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&report).unwrap().starts_with("3;iolab-"), "replaced: iolab wrote it");
    // A file iolab did not write is left alone.
    let theirs = dir.path().join("theirs.txt");
    std::fs::write(&theirs, "keep me").unwrap();
    let out = iolab()
        .args(["fio", "--name=t", "--rw=read", "--size=1m"])
        .arg(format!("--filename={}", f.display()))
        .arg(format!("--output={}", theirs.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "keep me");
}

/// A bad option is one error naming it and its place on the command line; nothing runs.
#[test]
fn a_bad_option_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let out = iolab()
        .args(["fio", "--name=t", "--rw=read", "--bogus_opt=3", "--size=1m"])
        .arg(format!("--filename={}", f.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bogus_opt") && err.contains("<command line>:3"), "{err}");
    assert!(!f.exists(), "nothing laid out");
    let out = iolab().args(["fio", "--name=t", "--output-format=xml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`xml` is not a format"));
    let help = iolab().args(["fio", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("iolab fio --name=t --rw=randread"));
}

/// O_DIRECT on libaio with a block size no device takes: one error saying the alignment, before
/// anything runs (the job's rule; the engine's own check, for a file whose O_DIRECT alignment is
/// above 512 bytes, is tested in crates/engine/src/libaio.rs).
#[test]
fn libaio_says_what_o_direct_needs() {
    if !aio_ok() {
        return skip("native AIO (io_setup) is not available here");
    }
    let dir = disk_tempdir();
    if !direct_ok(dir.path()) {
        return skip("no scratch filesystem here supports O_DIRECT (set IOLAB_TEST_DIR)");
    }
    let f = dir.path().join("f");
    let out = iolab()
        .args([
            "run",
            "--rw",
            "randread",
            "--size",
            "1m",
            "--bs",
            "1000",
            "--engine",
            "libaio",
            "--iodepth",
            "4",
            "--direct",
            "--no-store",
        ])
        .arg("--target")
        .arg(&f)
        .output()
        .unwrap();
    let all = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("multiple of 512 bytes") && all.contains("bs"), "{all}");
    assert!(!f.exists(), "nothing laid out");
}

/// fio's sqthread_poll on its command line: the job runs on a polled ring and every read of a
/// size-bounded job is counted, as fio counts it; fio's JSON echoes the option in `job options`
/// as fio's own does; with libaio both refuse it (fio: "unrecognized option").
#[test]
fn sqthread_poll_runs_on_a_polled_ring() {
    if !common::uring_ok() {
        return skip("io_uring is not available on this kernel");
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let job = |engine: &str| {
        vec![
            "--name=t".to_string(),
            format!("--filename={}", f.display()),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--size=16m".into(),
            format!("--ioengine={engine}"),
            "--iodepth=8".into(),
            "--sqthread_poll=1".into(),
            "--output-format=json".into(),
        ]
    };
    let out = iolab().args(["fio", "--no-store", "--"]).args(job("io_uring")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
    let j = &v["jobs"][0];
    assert_eq!(j["job options"]["sqthread_poll"], "1");
    assert_eq!(j["job options"]["ioengine"], "io_uring");
    assert_eq!(u(&j["read"]["total_ios"]), 4096, "16 MiB in 4 KiB reads");
    assert_eq!(u(&j["read"]["io_bytes"]), 16 << 20);
    if have("fio") {
        let theirs = Command::new("fio").args(job("io_uring")).output().unwrap();
        assert!(theirs.status.success(), "{}", String::from_utf8_lossy(&theirs.stderr));
        let t: Value = serde_json::from_slice(&theirs.stdout).expect("fio's own JSON");
        assert_eq!(t["jobs"][0]["job options"]["sqthread_poll"], "1");
        assert_eq!(u(&t["jobs"][0]["read"]["total_ios"]), 4096, "fio counts the same reads");
    }
    let out = iolab().args(["fio", "--no-store", "--"]).args(job("libaio")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("sqthread_poll is an option of fio's io_uring engine"), "{err}");
}
