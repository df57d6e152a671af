//! Helpers shared by the whole-command tests: run iolab, parse its JSON, skip with a reason.
#![allow(clippy::disallowed_macros)] // the tests print their skips with eprintln!, not user text
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// The results database every iolab started by these tests uses: one per test binary, in a
/// temp dir, never the user's own.
pub fn db_path() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temp dir")).path().join("results.db")
}

pub fn iolab() -> Command {
    let mut c = Command::cargo_bin("iolab").expect("the iolab binary is built");
    c.timeout(std::time::Duration::from_secs(120)).env("IOLAB_DB", db_path());
    c
}

/// iolab as a plain process, for tests that signal it.
pub fn iolab_process() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.env("IOLAB_DB", db_path());
    c
}

/// Run iolab with `--output json`, expect success, and return the parsed output.
pub fn run_json(args: &[&str]) -> Value {
    let out = iolab().args(args).args(["--output", "json"]).output().expect("iolab runs");
    assert!(
        out.status.success(),
        "iolab {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("iolab {args:?} printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Say why a test did not run: on stderr, and in target/test-skips.txt, which .ci/run prints
/// (the test harness hides a passing test's stderr).
pub fn skip(reason: &str) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    eprintln!("SKIPPED {test}: {reason}");
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/test-skips.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
        use std::io::Write;
        let _ = writeln!(f, "SKIPPED {test}: {reason}");
    }
}

pub fn uring_ok() -> bool {
    iolab_engine::io_uring_available().is_ok()
}

pub fn direct_ok(dir: &Path) -> bool {
    iolab_engine::open::direct_supported(dir)
}

/// A scratch directory on a filesystem that supports O_DIRECT (not tmpfs), if there is one.
pub fn disk_tempdir() -> tempfile::TempDir {
    for base in
        [std::env::var("IOLAB_TEST_DIR").ok(), Some("/var/tmp".into()), Some("/tmp".into())].into_iter().flatten()
    {
        if let Ok(d) = tempfile::tempdir_in(&base) {
            if direct_ok(d.path()) {
                return d;
            }
        }
    }
    tempfile::tempdir().expect("a temp dir")
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// The multi-node testbed (scripts/testbed.sh) for tests of several nodes at once.
pub mod testbed;
