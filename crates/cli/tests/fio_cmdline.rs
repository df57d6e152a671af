//! `iolab fio ARGS...` and the libaio engine under it (issue 27): fio's command line runs on
//! Linux native AIO (strace sees io_submit), its JSON is what fio's readers read, its normal and
//! terse reports are fio's layouts, a bad option is one error naming its argument, `--output`
//! writes the file and the run is in the store; fio's batching makes the io_submit calls fio
//! makes.

#![allow(clippy::disallowed_macros)] // a test prints what it measured with eprintln!, not user text

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

/// fio's metadata engines (`filecreate`, `filestat`, `filedelete`, `dircreate`, `dirstat`,
/// `dirdelete`): iolab's JSON counts what fio's does (each call one read of bs bytes, a clat
/// sample, no lat), checked against fio where it is installed and has the engine; iolab works in
/// the job's directory itself, as fio, and leaves it as it found it; a name of its own already
/// there is refused and left alone.
#[test]
fn metadata_engines_count_as_fio_counts() {
    let (scratch, store) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs = scratch.path().join("t.0.10");
    std::fs::write(&theirs, "theirs").unwrap();
    let counts = |json: &[u8]| -> Vec<u64> {
        let v: Value =
            serde_json::from_slice(json).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(json)));
        let j = &v["jobs"][0];
        let (r, w) = (&j["read"], &j["write"]);
        vec![u(&r["io_bytes"]), u(&r["total_ios"]), u(&r["clat_ns"]["N"]), u(&r["lat_ns"]["N"]), u(&w["total_ios"])]
    };
    let fio_ok = have("fio");
    for engine in ["filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"] {
        let args = |dir: &Path| {
            vec![
                "--name=t".to_string(),
                format!("--ioengine={engine}"),
                "--nrfiles=10".into(),
                "--filesize=4k".into(),
                format!("--directory={}", dir.display()),
                "--output-format=json".into(),
            ]
        };
        // A store of its own: the acceptance test beside it reads its own run as `show last`.
        let out = iolab()
            .env("IOLAB_DB", store.path().join("runs.db"))
            .arg("fio")
            .args(args(scratch.path()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
        let mine = counts(&out.stdout);
        assert_eq!(mine, vec![40960, 10, 10, 0, 0], "{engine}: io_bytes, total_ios, clat N, lat N, writes");
        let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(
            left,
            vec![std::ffi::OsString::from("t.0.10")],
            "{engine}: only the file iolab did not make is left"
        );
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs", "{engine}");
        if !fio_ok {
            skip(&format!("fio is not installed: {engine}'s counts checked against fio 3.33's recorded ones only"));
            continue;
        }
        let theirs_dir = tempfile::tempdir().unwrap();
        let fio = Command::new("fio").args(args(theirs_dir.path())).output().unwrap();
        if !fio.status.success() {
            let why = String::from_utf8_lossy(&fio.stderr).lines().next().unwrap_or("").to_string();
            skip(&format!("fio has no {engine} engine here ({why}): iolab's counts checked against fio's rule only"));
            continue;
        }
        assert_eq!(mine, counts(&fio.stdout), "{engine}: iolab's counts against fio's");
    }
    // One of its names already there: refused, that file left as it was, nothing else left.
    let mine = scratch.path().join("t.0.3");
    std::fs::rename(&theirs, &mine).unwrap();
    for engine in ["filedelete", "filecreate", "dircreate"] {
        let out = iolab()
            .env("IOLAB_DB", store.path().join("runs.db"))
            .args(["fio", "--name=t", &format!("--ioengine={engine}"), "--nrfiles=10", "--filesize=4k"])
            .arg(format!("--directory={}", scratch.path().display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("t.0.3"), "{engine}: {err}");
        let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("t.0.3")], "{engine}: only theirs is left");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "theirs", "{engine}");
    }
}

/// fio's ftruncate engine: each write sizes the file to its offset (fio 3.33, `--size=1m
/// --bs=4k --rw=write`: 256 writes, 1 MiB counted, the file left at 1044480 bytes), checked
/// against fio where it is installed; a job that reads is named as not mapped (fio fails each
/// read with EINVAL).
#[test]
fn ftruncate_sizes_the_file_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let args = |file: &Path| {
        vec![
            "--name=t".to_string(),
            "--ioengine=ftruncate".into(),
            format!("--filename={}", file.display()),
            "--size=1m".into(),
            "--bs=4k".into(),
            "--rw=write".into(),
            "--output-format=json".into(),
        ]
    };
    let read = |out: std::process::Output, file: &Path| -> (Vec<u64>, u64) {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..]).unwrap();
        let w = &v["jobs"][0]["write"];
        let got =
            vec![u(&w["io_bytes"]), u(&w["total_ios"]), u(&w["clat_ns"]["N"]), u(&v["jobs"][0]["read"]["total_ios"])];
        (got, std::fs::metadata(file).unwrap().len())
    };
    let (i, f) = (dir.path().join("i"), dir.path().join("f"));
    // A store of its own: the acceptance test beside it reads its own run as `show last`.
    let db = dir.path().join("runs.db");
    let mine = read(iolab().env("IOLAB_DB", &db).arg("fio").args(args(&i)).output().unwrap(), &i);
    assert_eq!(mine, (vec![1 << 20, 256, 256, 0], 1_044_480), "io_bytes, total_ios, clat N, reads; the file's size");
    let out = iolab()
        .env("IOLAB_DB", &db)
        .args(["fio", "--name=t", "--ioengine=ftruncate", "--size=1m", "--rw=read"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("ioengine=ftruncate with rw=read: fio fails each read with EINVAL"));
    if !have("fio") {
        return skip("fio is not installed: ftruncate checked against fio 3.33's recorded counts only");
    }
    assert_eq!(mine, read(Command::new("fio").args(args(&f)).output().unwrap(), &f), "iolab against fio");
}

/// A metadata job's time is its timed calls' (from its start barrier to its last call), as
/// fio's is: filestat's IOPS on 20000 files in each of two threads, sharing one directory,
/// come out near fio's on the same machine (loosely: within 5x either way; before, the untimed
/// making and removal of the files were in the job's time and iolab showed ~1/200 of fio's
/// IOPS). On tmpfs (/dev/shm): fio lays out 40000 files in 2.5 s there, in minutes on this
/// disk, and its job_runtime in whole ms needs 100 ms or more of calls to give an IOPS figure.
#[test]
fn filestat_iops_are_near_fios() {
    if !have("fio") {
        return skip("fio is not installed: filestat's IOPS not compared with fio's");
    }
    let Ok(dir) = tempfile::Builder::new().prefix("iolab-filestat").tempdir_in("/dev/shm") else {
        return skip("no tmpfs at /dev/shm: fio lays out 40000 files in minutes on a disk");
    };
    let (mine, theirs) = (dir.path().join("iolab"), dir.path().join("fio"));
    std::fs::create_dir(&mine).unwrap();
    std::fs::create_dir(&theirs).unwrap();
    let args = |d: &Path| {
        vec![
            "--name=t".to_string(),
            "--ioengine=filestat".into(),
            "--nrfiles=20000".into(),
            "--filesize=4k".into(),
            "--numjobs=2".into(),
            "--thread".into(),
            format!("--directory={}", d.display()),
            "--output-format=json".into(),
        ]
    };
    // IOPS summed over the jobs (fio lists each thread apart) and the longest job_runtime.
    let iops = |out: std::process::Output| -> (f64, u64) {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..]).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        let sum = jobs.iter().map(|j| j["read"]["iops"].as_f64().unwrap()).sum();
        (sum, jobs.iter().map(|j| u(&j["job_runtime"])).max().unwrap_or(0))
    };
    let db = dir.path().join("runs.db");
    let (i, i_ms) = iops(iolab().env("IOLAB_DB", &db).arg("fio").args(args(&mine)).output().unwrap());
    let (f, f_ms) = iops(Command::new("fio").args(args(&theirs)).output().unwrap());
    eprintln!("filestat, 2 x 20000 files: iolab {i:.0} IOPS in {i_ms} ms, fio {f:.0} IOPS in {f_ms} ms");
    assert!(i > 0.0 && f > 0.0, "iolab {i}, fio {f}");
    let ratio = i / f;
    assert!((0.2..=5.0).contains(&ratio), "iolab {i:.0} IOPS against fio's {f:.0}: {ratio:.3} of fio's");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 0, "iolab's shared directory is gone");
}

/// fio's falloc engine (engines/falloc.c): each write is fallocate(2) of its range with mode 0,
/// each read one with FALLOC_FL_KEEP_SIZE, each counted as an I/O of its length. fio 3.33 with
/// `--size=1m --bs=4k --rw=randwrite`: 256 writes, 1 MiB counted, one fallocate per write (257
/// with its layout's), the file 1 MiB; with `--bs=64k --rw=read`: 16 reads, 1 MiB. Checked
/// against fio where it is installed, the calls with strace where it is.
#[test]
fn falloc_allocates_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let args = |file: &Path, bs: &str, rw: &str| {
        vec![
            "--name=t".to_string(),
            "--ioengine=falloc".into(),
            format!("--filename={}", file.display()),
            "--size=1m".into(),
            format!("--bs={bs}"),
            format!("--rw={rw}"),
            "--output-format=json".into(),
        ]
    };
    let read = |out: std::process::Output, file: &Path| -> (Vec<u64>, u64) {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..]).unwrap();
        let (r, w) = (&v["jobs"][0]["read"], &v["jobs"][0]["write"]);
        let got =
            vec![u(&r["io_bytes"]), u(&r["total_ios"]), u(&w["io_bytes"]), u(&w["total_ios"]), u(&w["clat_ns"]["N"])];
        let len = std::fs::metadata(file).unwrap().len();
        std::fs::remove_file(file).unwrap();
        (got, len)
    };
    let db = dir.path().join("runs.db");
    let (i, f) = (dir.path().join("i"), dir.path().join("f"));
    let cases = [("4k", "randwrite", vec![0, 0, 1 << 20, 256, 256]), ("64k", "read", vec![1 << 20, 16, 0, 0, 0])];
    for (bs, rw, want) in &cases {
        let mine = read(iolab().env("IOLAB_DB", &db).arg("fio").args(args(&i, bs, rw)).output().unwrap(), &i);
        assert_eq!(mine, (want.clone(), 1 << 20), "{rw}: read bytes and ios, write bytes, ios, clat N; the size");
        if have("fio") {
            let theirs = read(Command::new("fio").args(args(&f, bs, rw)).output().unwrap(), &f);
            assert_eq!(mine, theirs, "{rw}: iolab against fio");
        }
    }
    if !have("fio") {
        skip("fio is not installed: falloc checked against fio 3.33's recorded counts only");
    }
    if !have("strace") {
        return skip("strace is not installed: falloc's calls not counted");
    }
    // The calls: one fallocate(fd, 0, offset, 4096) per write.
    let trace = dir.path().join("strace.txt");
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=fallocate", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_DB", &db)
        .arg("fio")
        .args(args(&i, "4k", "randwrite"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    let writes = text
        .lines()
        .filter(|l| {
            let Some(args) = l.split_once("fallocate(").and_then(|(_, r)| r.split_once(')')) else { return false };
            let a: Vec<&str> = args.0.split(", ").collect();
            a.len() == 4 && a[1] == "0" && a[3] == "4096" && args.1.trim() == "= 0"
        })
        .count();
    assert_eq!(writes, 256, "one fallocate of mode 0 and 4096 bytes per write:\n{text}");
}

/// fio's invalidate (its default) on a time-based buffered job drops the file's cached pages
/// each time a pass over the file starts (fio 3.33 under strace: one fadvise64 DONTNEED per
/// pass, and one after its layout): iolab drops them before the phase and at each pass start
/// after, so a 1 MiB file read at random for 1 s is read from the storage again at each pass.
#[test]
fn invalidate_drops_the_cache_at_each_pass() {
    if !have("strace") {
        return skip("strace is not installed: the drops at each pass not counted");
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, trace) = (dir.path().join("f"), dir.path().join("strace.txt"));
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=fadvise64", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_DB", dir.path().join("runs.db"))
        .args(["fio", "--name=t", "--size=1m", "--rw=randread", "--bs=4k", "--time_based", "--runtime=1"])
        .arg(format!("--filename={}", file.display()))
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..]).unwrap();
    let ios = u(&v["jobs"][0]["read"]["total_ios"]);
    let drops = std::fs::read_to_string(&trace).unwrap().lines().filter(|l| l.contains("POSIX_FADV_DONTNEED")).count();
    // 256 reads a pass: the drop before the phase (the first pass's), one at each pass after.
    let passes = ios.div_ceil(256) as usize;
    eprintln!("{ios} reads of 4 KiB over a 1 MiB file: {passes} passes, {drops} drops of its cached pages");
    assert!(passes >= 2, "{ios} reads: the test needs more than one pass");
    assert_eq!(drops, passes, "{ios} reads: one drop per pass");
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
