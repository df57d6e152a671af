//! `iolab trace record|import|show|export` and `iolab replay` as a whole: a real program
//! (bench/trace/redo.c, seed 002's redo-log pattern) recorded under strace (`--via strace`: run
//! by it, and attached to with -p; the eBPF recorder's tests are in tests/ebpf.rs), analysed, exported for fio and run by the real fio, and replayed with
//! its operation counts equal, twice into the same target.

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
    let d = disk_tempdir();
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
        "--via".as_ref(),
        "strace".as_ref(),
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

    // Per-thread tables in the human output, and `| head` ends it quietly.
    let out = iolab().args(["trace", "show"]).arg(&trace).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\nThread ").count(), show["threads"].as_array().unwrap().len(), "{text}");
    assert!(text.contains("access strided 1048576 B"), "{text}");
    let mut child = iolab_process()
        .args(["trace", "show"])
        .arg(&trace)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before iolab writes
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(done.stderr.is_empty(), "{}", String::from_utf8_lossy(&done.stderr));

    if have("fio") {
        // The export, remapped under a directory of its own, run by the real fio.
        let log = d.path().join("redo.iolog");
        let fio_dir = d.path().join("fio");
        std::fs::create_dir(&fio_dir).unwrap();
        let out = iolab()
            .args(["trace", "export", "--fio"])
            .arg(&trace)
            .arg("-o")
            .arg(&log)
            .arg("--target")
            .arg(&fio_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("fio version 3 iolog\n"));
        assert_eq!(text.lines().filter(|l| l.contains(" write ")).count(), 6, "{text}");
        assert!(text
            .lines()
            .all(|l| l.starts_with("fio") || l.split(' ').nth(1).unwrap().starts_with(fio_dir.to_str().unwrap())));
        let out = std::process::Command::new("fio")
            .arg("--name=replay")
            .arg(format!("--read_iolog={}", log.display()))
            .arg("--output-format=json")
            .output()
            .unwrap();
        assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        let job = &j["jobs"][0];
        assert_eq!((job["error"].clone(), job["write"]["total_ios"].clone()), (0.into(), 6.into()), "{job}");
        assert_eq!(job["sync"]["total_ios"], 6);
        assert_eq!(std::fs::metadata(fio_dir.join("redo1.log")).unwrap().len(), 2 * (1 << 20) + 32768);
    } else {
        skip("fio is not installed: the export is not run by fio");
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
    // A second replay finds its own files and runs again; this one is stored.
    let again = json(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--target".as_ref(),
        target.as_os_str(),
        "--timing".as_ref(),
        "afap".as_ref(),
        "--label".as_ref(),
        "replay=redo".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    let stored = json(&["show".as_ref(), "replay=redo".as_ref(), "--output".as_ref(), "json".as_ref()]);
    let stored_replay = &stored[0]["result"]["phases"][0]["jobs"][0]["replay"];
    assert_eq!(stored_replay["counts_equal"], true, "the fidelity is in the store: {stored}");
    assert_eq!(stored_replay["classes"], again["fidelity"]["classes"]);
    assert_eq!(again["fidelity"]["counts_equal"], true);
    assert_eq!(again["fidelity"]["results_equal"], true, "{}", again["fidelity"]);
    // The fidelity is stored with the run (in the job's result), not only printed, with the
    // fields docs/json.md names.
    let replay = &again["run"]["phases"][0]["jobs"][0]["replay"];
    assert_eq!(replay["counts_equal"], true);
    let mut seen = std::collections::BTreeSet::new();
    paths_of(replay, "phases[].jobs[].replay", &mut seen);
    let docs = documented_replay();
    let undocumented: Vec<&String> = seen.difference(&docs).collect();
    assert!(undocumented.is_empty(), "present but not in docs/json.md: {undocumented:?}");
    // A faithful replay has no mismatches[] entries to show their fields.
    let absent: Vec<&String> = docs.difference(&seen).filter(|d| !d.contains(".mismatches[].")).collect();
    assert!(absent.is_empty(), "documented but absent: {absent:?}");
    assert!(replay["left_out"]["other calls"]["clone3"].as_u64().unwrap() >= 2, "{replay}");
    // Validated: every write the replay makes is stamped and read back at the end, as faithful.
    let checked = json(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--target".as_ref(),
        target.as_os_str(),
        "--timing".as_ref(),
        "afap".as_ref(),
        "--verify-after".as_ref(),
        "--no-store".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(checked["fidelity"]["counts_equal"], true, "{}", checked["fidelity"]);
    let v = &checked["run"]["phases"][0]["verify"];
    assert_eq!(v["blocks_written"], 6 * 32768 / 512, "{v}");
    assert!(v["checked_after"].as_u64().unwrap() >= 6 * 32768 / 512, "{v}");
    assert_eq!(v["errors"].as_object().unwrap().values().filter_map(|x| x.as_u64()).sum::<u64>(), 0, "{v}");
}

/// The documented paths under `phases[].jobs[].replay` (first backticked cell of each row).
fn documented_replay() -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .filter(|p| p.starts_with("phases[].jobs[].replay"))
        .collect()
}

/// Every path in a JSON value, arrays as `[]`; `left_out` and `adjusted` are maps documented whole.
fn paths_of(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    if !v.is_array() {
        out.insert(prefix.to_string());
    }
    if prefix.ends_with(".left_out") || prefix.ends_with(".adjusted") {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                paths_of(x, &format!("{prefix}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                paths_of(x, &format!("{prefix}[]"), out);
            }
            if a.is_empty() {
                out.insert(format!("{prefix}[]"));
            }
        }
        _ => {}
    }
}

#[test]
fn record_attached_ends_on_sigint_and_sigterm_keeping_the_trace() {
    // Issue 25: `trace record -p PID` ran on for minutes after SIGINT or SIGTERM (until the
    // traced process ended); it must end at once, strace detached and the trace kept.
    if !have("strace") {
        return skip("strace is missing");
    }
    let d = tempfile::tempdir().unwrap();
    for sig in [rustix::process::Signal::INT, rustix::process::Signal::TERM] {
        let mut prog = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        let trace = d.path().join(format!("{sig:?}.trace"));
        let mut rec = iolab_process()
            .args(["trace", "record", "--via", "strace", "-o"])
            .arg(&trace)
            .args(["-p", &prog.id().to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let pid = rustix::process::Pid::from_raw(rec.id() as i32).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(st) = rec.try_wait().unwrap() {
                break Some(st);
            }
            if t.elapsed() > std::time::Duration::from_secs(10) {
                let _ = rec.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let _ = prog.kill();
        let _ = prog.wait();
        let status = status.unwrap_or_else(|| panic!("trace record -p still running 10 s after SIG{sig:?}"));
        let mut err = String::new();
        std::io::Read::read_to_string(rec.stderr.as_mut().unwrap(), &mut err).unwrap();
        if err.contains("Operation not permitted") {
            return skip("ptrace may not attach here (kernel.yama.ptrace_scope, a container)");
        }
        let _ = status;
        let out = iolab().args(["trace", "show"]).arg(&trace).output().unwrap();
        assert!(
            out.status.success(),
            "the trace was not kept after SIG{sig:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn record_attaches_to_a_running_process() {
    if !have("strace") || !have("cc") {
        return skip("strace or cc is missing");
    }
    let d = tempfile::tempdir().unwrap();
    let Some(redo) = redo_binary(d.path()) else { return skip("cannot compile bench/trace/redo.c") };
    if !direct_ok(d.path()) {
        return skip("the temp directory's filesystem refuses O_DIRECT");
    }
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // A shell that waits, then becomes the program: attached during the wait, the trace has
    // all of the program's calls.
    let mut prog = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("sleep 3; exec {} {} 2 4", redo.display(), data.display()))
        .spawn()
        .unwrap();
    let trace = d.path().join("p.trace");
    let out = iolab()
        .args(["trace", "record", "--via", "strace", "-o"])
        .arg(&trace)
        .args(["-p", &prog.id().to_string(), "--output", "json"])
        .output()
        .unwrap();
    let _ = prog.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Operation not permitted") {
        return skip("ptrace may not attach here (kernel.yama.ptrace_scope, a container)");
    }
    assert!(out.status.success(), "{err}");
    let show = json(&["trace".as_ref(), "show".as_ref(), trace.as_os_str(), "--output".as_ref(), "json".as_ref()]);
    let redo_files: Vec<&Value> = show["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().contains("/data/redo"))
        .collect();
    assert_eq!(redo_files.len(), 2, "{show}");
    assert!(redo_files.iter().all(|f| f["written_bytes"] == 4 * 32768 && f["syncs"] == 4));
    assert!(show["source"].as_str().unwrap().starts_with("process "));
}

#[test]
fn record_without_strace_says_what_to_install() {
    let d = tempfile::tempdir().unwrap();
    let out = iolab()
        .env("PATH", d.path())
        .args(["trace", "record", "--via", "strace", "-o"])
        .arg(d.path().join("x.trace"))
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run strace") && err.contains("install it"), "{err}");
    assert!(!d.path().join("x.trace").exists());
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
    // The output named as an input (spelled another way) is refused, the input untouched
    // (issue 25: it was truncated to 61 bytes, exit 0).
    let before = std::fs::read(&s).unwrap();
    let same = d.path().join(".").join("bad.strace");
    let out = iolab().args(["trace", "import", "-o"]).arg(&same).arg(&s).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the input"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&s).unwrap(), before);
    let out = iolab().args(["trace", "show"]).arg(&s).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an iolab trace"));
    // Exported to stdout, the same: said once, and not blamed on stdout.
    let out = iolab().args(["trace", "export", "--fio"]).arg(&s).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("not an iolab trace").count(), 1, "{err}");
    assert!(!err.contains("stdout"), "{err}");
}

#[test]
fn import_takes_a_given_strace_cost_off() {
    let trace = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../trace/tests/fixtures/redo_f.strace"));
    let d = tempfile::tempdir().unwrap();
    let (plain, taken) = (d.path().join("plain.trace"), d.path().join("taken.trace"));
    let out = iolab().args(["trace", "import", "-o"]).arg(&plain).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out =
        iolab().args(["trace", "import", "--strace-cost", "5us,20us", "-o"]).arg(&taken).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (p, t) =
        (run_json(&["trace", "show", plain.to_str().unwrap()]), run_json(&["trace", "show", taken.to_str().unwrap()]));
    assert!(p["overhead"].is_null(), "{}", p["overhead"]);
    let o = &t["overhead"];
    assert_eq!((u(&o["call_ns"]), u(&o["gap_ns"])), (5_000, 20_000), "{o}");
    assert!(u(&o["gaps_taken_ns"]) > 0, "{o}");
    assert!(t["elapsed_s"].as_f64().unwrap() < p["elapsed_s"].as_f64().unwrap(), "the span shrank");
    assert_eq!(t["totals"]["write"], p["totals"]["write"], "the calls are the same");
    let bad = iolab().args(["trace", "import", "--strace-cost", "5us", "-o"]).arg(&taken).arg(&trace).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("CALL,GAP"), "{}", String::from_utf8_lossy(&bad.stderr));
}
