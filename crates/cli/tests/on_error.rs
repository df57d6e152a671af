//! Errors a job goes on after (`--continue-on-error`, `--ignore-error`: fio's
//! continue_on_error and ignore_error), on a real ENOSPC: a 2 MiB tmpfs holding a sparse
//! 4 MiB file the job writes into until the filesystem is full.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// A 2 MiB tmpfs under a temp dir, unmounted when dropped; `None` (the test skips) without
/// the right to mount.
struct Small {
    dir: tempfile::TempDir,
}

impl Small {
    fn mount() -> Option<Small> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Small { dir })
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Small {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}

/// A sparse 4 MiB file in the tmpfs, written at random (each block once, holes kept: the
/// file is the user's, consented with --overwrite), with `extra` flags; exit code, stdout.
fn write_sparse(small: &Small, extra: &[&str]) -> (i32, Vec<u8>) {
    let f = small.path().join("f");
    let _ = std::fs::remove_file(&f);
    std::fs::File::create(&f).and_then(|h| h.set_len(4 << 20)).expect("a sparse file");
    let out = iolab()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "4M", "--rw", "randwrite", "--random-map"])
        .args(["--keep-holes", "--overwrite", "--no-progress", "--no-store"])
        .args(extra)
        .output()
        .expect("iolab runs");
    (out.status.code().unwrap_or(-1), out.stdout)
}

fn json(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(b)))
}

#[test]
fn a_job_goes_on_after_enospc_and_counts_it_where_told() {
    let Some(small) = Small::mount() else { return skip("cannot mount a small tmpfs (needs root)") };
    // By default the first ENOSPC ends the job, named.
    let (code, out) = write_sparse(&small, &["--output", "json"]);
    let v = json(&out);
    assert_eq!(code, 2, "{v}");
    let job = &v["phases"][0]["jobs"][0];
    assert!(job["error"].as_str().is_some_and(|e| e.contains("No space left")), "{job}");
    assert!(job.get("io_errors").is_none(), "{job}");

    // Told to go on after ENOSPC on writes: every block is tried, the failures counted.
    let on = ["--continue-on-error", "write", "--ignore-error", ",ENOSPC"];
    let (code, out) = write_sparse(&small, &[&on[..], &["--output", "json"]].concat());
    let v = json(&out);
    assert_eq!(code, 0, "{v}");
    let job = &v["phases"][0]["jobs"][0];
    assert!(job.get("error").is_none(), "{job}");
    let e = &job["io_errors"];
    let (written, failed) = (u(&job["total"]["write"]["ops"]), u(&e["count"]));
    assert_eq!(written + failed, 1024, "each of the 1024 blocks written or failed once: {job}");
    assert!(failed > 0 && written * 4096 <= 2 << 20, "2 MiB filled, the rest failed: {job}");
    let first = &e["first"];
    assert_eq!(
        (first["call"].as_str(), u(&first["errno"]), first["errno_name"].as_str()),
        (Some("write"), 28, Some("ENOSPC")),
        "{e}"
    );
    assert!(first["file"].as_str().is_some_and(|f| f.ends_with("/f")) && first["len"] == 4096, "{e}");
    assert!(first["text"].as_str().is_some_and(|t| t.contains("No space left")), "{e}");

    // fio's JSON: total_err and first_error (and fio 3.33's error, the first errno).
    let (code, out) = write_sparse(&small, &[&on[..], &["--output", "fio-json"]].concat());
    let v = json(&out);
    assert_eq!(code, 0, "{v}");
    let job = &v["jobs"][0];
    assert_eq!((u(&job["total_err"]), u(&job["first_error"]), u(&job["error"])), (failed, 28, 28), "{job}");

    // The terminal says how many and the first.
    let (_, out) = write_sparse(&small, &on);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains(&format!("went on after {failed} failed I/O; the first: write of 4096 bytes")), "{text}");

    // A list for reads only does not cover a write's ENOSPC: the job ends at it.
    let (code, _) = write_sparse(&small, &["--continue-on-error", "read", "--ignore-error", "ENOSPC,"]);
    assert_eq!(code, 2);
}

#[test]
fn the_options_refuse_what_fio_would_not_take() {
    let e =
        iolab().args(["run", "--target", "/tmp/x", "--size", "1m", "--continue-on-error", "often"]).output().unwrap();
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(!e.status.success() && err.contains("none, read, write, io"), "{err}");
    let e = iolab().args(["run", "--target", "/tmp/x", "--size", "1m", "--ignore-error", ",ENOSPC"]).output().unwrap();
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(!e.status.success() && err.contains("give --continue-on-error too"), "{err}");
}
