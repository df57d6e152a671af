//! `iolab trace record|import|show|export` and `iolab replay` as a whole: a real program
//! (bench/trace/redo.c, seed 002's redo-log pattern) recorded under strace, analysed, exported
//! for fio and replayed with its operation counts equal.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn redo_binary(dir: &Path) -> Option<PathBuf> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/trace/redo.c");
    let out = dir.join("redo");
    let ok = std::process::Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(out)
}

fn have(cmd: &str) -> bool {
    std::process::Command::new(cmd).arg("--version").output().is_ok()
}

fn json(args: &[&std::ffi::OsStr]) -> Value {
    let out = iolab().args(args).output().unwrap();
    assert!(out.status.success(), "iolab {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn record_show_export_and_replay_a_real_program() {
    if !have("strace") || !have("cc") {
        return skip("strace or cc is missing");
    }
    let d = tempfile::tempdir().unwrap();
    if !direct_ok(d.path()) {
        return skip("the temp directory's filesystem refuses O_DIRECT");
    }
    let Some(redo) = redo_binary(d.path()) else { return skip("cannot compile bench/trace/redo.c") };
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let trace = d.path().join("redo.trace");
    // 2 threads × 3 rounds of lseek, 32 KiB O_DIRECT write, fsync.
    let rec = json(&[
        "trace".as_ref(),
        "record".as_ref(),
        "-o".as_ref(),
        trace.as_os_str(),
        "--output".as_ref(),
        "json".as_ref(),
        "--".as_ref(),
        redo.as_os_str(),
        data.as_os_str(),
        "2".as_ref(),
        "3".as_ref(),
    ]);
    assert_eq!(rec["bad_lines"], 0, "{rec}");
    assert!(rec["threads"].as_u64().unwrap() >= 3);

    let show = json(&[
        "trace".as_ref(),
        "show".as_ref(),
        trace.as_os_str(),
        "--rate".as_ref(),
        "50MB".as_ref(),
        "--latency".as_ref(),
        "5ms".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    let redo0 = show["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("/data/redo0.log"))
        .unwrap();
    assert_eq!(redo0["direct"], true);
    assert_eq!(redo0["written_bytes"], 3 * 32768);
    assert_eq!(redo0["syncs"], 3);
    assert_eq!(redo0["pattern"]["kind"], "strided");
    assert_eq!(redo0["pattern"]["stride"], 1 << 20);
    assert_eq!(redo0["sizes"]["32768"], 3);
    // bytes / 50 MB/s + I/Os × 5 ms, the I/Os counting at least the 6 writes and 6 fsyncs (the
    // loader's reads of libc count too).
    let m = &show["model"];
    let (bytes, ios) = (m["bytes"].as_f64().unwrap(), m["ios"].as_f64().unwrap());
    assert!(bytes >= 6.0 * 32768.0 && ios >= 12.0, "{m}");
    assert!((m["modelled_s"].as_f64().unwrap() - (bytes / 50e6 + ios * 0.005)).abs() < 1e-9, "{m}");

    if have("fio") {
        let log = d.path().join("redo.iolog");
        let out = iolab().args(["trace", "export", "--fio"]).arg(&trace).arg("-o").arg(&log).output().unwrap();
        assert!(out.status.success());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("fio version 3 iolog\n"));
        assert_eq!(text.lines().filter(|l| l.contains("/data/redo") && l.contains(" write ")).count(), 6);
    }

    let target = d.path().join("replay");
    std::fs::create_dir(&target).unwrap();
    let out = json(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--target".as_ref(),
        target.as_os_str(),
        "--prepare".as_ref(),
        "--no-store".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    let f = &out["fidelity"];
    assert_eq!(f["counts_equal"], true, "{f}");
    assert_eq!(f["threads"], 2);
    let class = |c: &str| f["classes"].as_array().unwrap().iter().find(|x| x["class"] == c).cloned().unwrap();
    assert_eq!((class("write")["recorded_ops"].clone(), class("write")["replayed_ops"].clone()), (6.into(), 6.into()));
    assert_eq!(class("write")["replayed_bytes"], 6 * 32768);
    assert_eq!(class("seek")["replayed_ops"], 6);
    assert_eq!(class("sync")["replayed_ops"], 6);
    assert_eq!(class("create")["replayed_ops"], 2);
    assert_eq!(out["run"]["status"], "complete");
    // The replayed files are where the trace put them, remapped under the target.
    assert_eq!(std::fs::metadata(target.join("redo1.log")).unwrap().len(), 2 * (1 << 20) + 32768);
    // A second replay finds its own files and runs again.
    let again = json(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--target".as_ref(),
        target.as_os_str(),
        "--timing".as_ref(),
        "afap".as_ref(),
        "--no-store".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(again["fidelity"]["counts_equal"], true);
}

#[test]
fn replay_refuses_files_it_did_not_create() {
    let trace = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../trace/tests/fixtures/redo_f.strace"));
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("x.trace");
    let out = iolab().args(["trace", "import", "-o"]).arg(&t).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("redo0.log"), b"precious").unwrap();
    let out = iolab().arg("replay").arg(&t).arg("--target").arg(&target).arg("--no-store").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("iolab did not create it"));
    assert_eq!(std::fs::read(target.join("redo0.log")).unwrap(), b"precious");
}

#[test]
fn clear_errors_for_missing_commands_and_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("x.trace");
    let out = iolab().args(["trace", "record", "-o"]).arg(&t).args(["--", "no-such-command-here"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("command not found: `no-such-command-here`"));
    // Garbage and a truncated line are reported with their line numbers; the rest imports.
    let s = d.path().join("bad.strace");
    std::fs::write(
        &s,
        "123  1.000000 write(3</a>, \"x\", 1) = 1 <0.000001>\nnot strace at all\n123  1.000002 write(3</a>, \"x\", 1\n",
    )
    .unwrap();
    let out = iolab().args(["trace", "import", "-o"]).arg(&t).arg(&s).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 lines not understood"), "{text}");
    assert!(text.contains("bad.strace:2:") && text.contains("bad.strace:3:"), "{text}");
    let out = iolab().args(["trace", "show"]).arg(&s).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an iolab trace"));
}
