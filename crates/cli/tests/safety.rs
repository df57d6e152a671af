//! The safety rules, each checked on real files: refusals leave data byte-for-byte as it was,
//! bad input writes nothing, Ctrl-C and a full disk keep what was measured.

mod common;
use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn snapshot(p: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (std::fs::read(p).unwrap(), std::fs::metadata(p).unwrap().modified().unwrap())
}

fn refused(args: &[&str]) -> String {
    let out = iolab().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?} should be refused with exit 2");
    assert!(out.stdout.is_empty(), "nothing on stdout for a refusal");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "one clear line: {err}");
    err
}

#[test]
fn foreign_file_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("database.ibd");
    std::fs::write(&f, vec![0xAB; 100_000]).unwrap();
    let before = snapshot(&f);
    let fs = f.to_str().unwrap();
    for rw in ["write", "randwrite", "randrw", "readwrite"] {
        let e = refused(&["run", "--target", fs, "--rw", rw, "--bs", "4k"]);
        assert!(e.contains("did not create") && e.contains("--overwrite"), "{e}");
    }
    // Reading more than is there would extend it: refused too.
    let e = refused(&["run", "--target", fs, "--rw", "randread", "--size", "1M"]);
    assert!(e.contains("extend"), "{e}");
    // --cleanup never removes it.
    let _ = iolab().args(["run", "--target", fs, "--rw", "read", "--bs", "4k", "--cleanup"]).output().unwrap();
    assert_eq!(snapshot(&f), before, "the file is byte-for-byte unchanged");
    // Reading what is there is allowed and changes nothing.
    let v = run_json(&["run", "--target", fs, "--rw", "read", "--bs", "4k"]);
    assert_eq!(u(&v["phases"][0]["total"]["read"]["bytes"]), 100_000 / 4096 * 4096);
    assert_eq!(snapshot(&f).0, before.0);
    // With --overwrite it is written.
    run_json(&["run", "--target", fs, "--rw", "write", "--bs", "4k", "--overwrite"]);
    assert_ne!(std::fs::read(&f).unwrap(), before.0);
}

#[test]
fn devices_need_the_device_flag() {
    let e = refused(&["run", "--target", "/dev/null", "--rw", "write", "--size", "1M"]);
    assert!(e.contains("--device"), "{e}");
    let v = run_json(&["run", "--target", "/dev/null", "--device", "--rw", "write", "--size", "1M"]);
    assert_eq!(u(&v["phases"][0]["total"]["write"]["bytes"]), 1 << 20);
}

#[test]
fn block_device_refused_unchanged() {
    // A loop device over a file: a real block device, without touching the machine's disks.
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0x5A; 4 << 20]).unwrap();
    let out = std::process::Command::new("losetup").args(["--find", "--show"]).arg(&backing).output();
    let dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => return skip("losetup unavailable (needs root and loop devices)"),
    };
    let e = refused(&["run", "--target", &dev, "--rw", "write", "--bs", "4k"]);
    assert!(e.contains("block device") && e.contains("--device"), "{e}");
    let _ = std::process::Command::new("losetup").args(["-d", &dev]).status();
    assert!(std::fs::read(&backing).unwrap().iter().all(|&b| b == 0x5A), "device data unchanged");
}

#[test]
fn bad_flags_name_the_field_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("never");
    let fs = f.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--rw", "sideways"], "randrw"),
        (&["--bs", "4q"], "suffix"),
        (&["--runtime", "5y"], "time unit"),
        (&["--engine", "aio"], "io_uring"),
        (&["--mix", "150"], "mix"),
        (&["--rw", "randread", "--stride", "1M"], "stride"),
        (&["--iodepth", "8"], "io_uring"),
        (&["--engine", "mmap", "--direct"], "direct"),
        (&["--bs", "1000", "--direct"], "512"),
        (&["--ramp", "1s"], "runtime"),
    ];
    for (extra, word) in cases {
        let mut args = vec!["run", "--target", fs, "--size", "1M"];
        args.extend_from_slice(extra);
        let out = iolab().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(word), "{extra:?}: {err}");
        assert!(!f.exists(), "{extra:?} created the target");
    }
}

#[test]
fn bad_job_file_names_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("never");
    let job = dir.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            "[[phase]]\nname = 'a'\n[[phase.job]]\ntarget = '{}'\nsize = '1M'\nrw = 'write'\nblocksize = '4k'\n",
            target.display()
        ),
    )
    .unwrap();
    let out = iolab().arg("run").arg(&job).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("blocksize") && err.contains("line 7"), "{err}");
    assert!(!target.exists());
    let out = iolab().args(["run", "/no/such/job.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading job file"));
}

#[test]
fn cleanup_removes_only_what_iolab_created() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    run_json(&["run", "--target", mine.to_str().unwrap(), "--size", "1M", "--rw", "randread", "--cleanup"]);
    assert!(!mine.exists(), "created and removed");
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, vec![1u8; 8192]).unwrap();
    run_json(&["run", "--target", theirs.to_str().unwrap(), "--rw", "read", "--cleanup"]);
    assert!(theirs.exists(), "a file iolab did not create stays");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no marker or manifest left behind");
}

#[test]
fn ctrl_c_prints_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long");
    let child = iolab_process()
        .args([
            "run",
            "--target",
            f.to_str().unwrap(),
            "--size",
            "8M",
            "--rw",
            "randread",
            "--runtime",
            "60s",
            "--output",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let ok = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "interrupted");
    let p = &v["phases"][0];
    assert_eq!(p["interrupted"], true);
    assert!(u(&p["total"]["read"]["ops"]) > 0, "what was measured is kept");
    assert!(p["elapsed_s"].as_f64().unwrap() < 10.0);
    assert!(f.exists(), "the laid-out file is kept");
}

#[test]
fn full_disk_ends_the_job_and_keeps_results() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted =
        std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"]).arg(&mnt).status();
    if !matches!(mounted, Ok(s) if s.success()) {
        return skip("cannot mount a small tmpfs (needs root)");
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let f = mnt.join("fill");
    // 12 MiB fit when checked; a filler then takes the room while iolab writes slowly.
    let child = iolab_process()
        .args([
            "run",
            "--target",
            f.to_str().unwrap(),
            "--size",
            "12M",
            "--rw",
            "write",
            "--bs",
            "64k",
            "--rate",
            "4M",
            "--output",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let _ = std::fs::write(mnt.join("filler"), vec![7u8; 10 << 20]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("No space left") && err.contains("full"), "{err}");
    // The partial file the run created is named, with the way to remove it.
    assert!(err.contains(&format!("rm '{}'", f.display())) && err.contains("partial file"), "{err}");
    let written = u(&v["phases"][0]["total"]["write"]["bytes"]);
    assert!(written > 0 && written < 12 << 20, "kept what was written before the disk filled: {written}");
    let thread = &v["phases"][0]["jobs"][0]["per_thread"][0];
    assert!(thread["error"].as_str().unwrap().contains("No space left"), "the thread that failed says why: {thread}");
    assert_eq!(u(&thread["bytes"]), written, "one thread wrote it all");
}

#[test]
fn no_space_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge");
    let e = refused(&["run", "--target", f.to_str().unwrap(), "--size", "1000T", "--rw", "randread"]);
    assert!(e.contains("not enough free space"), "{e}");
    assert!(!f.exists());
}

#[test]
fn ctrl_c_during_layout_removes_the_partial_file_and_says_so() {
    let dir = disk_tempdir();
    let f = dir.path().join("big");
    // A layout long enough to interrupt: 8 GiB written before any measured I/O.
    let child = iolab_process()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "8G", "--rw", "randread", "--runtime", "5s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while !f.exists() && waited < 100 {
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
    }
    std::thread::sleep(Duration::from_millis(100));
    let _ = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        return skip("the layout finished before the signal arrived");
    }
    if text.contains("not enough free space") {
        return skip("less than 8 GiB free for the layout");
    }
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted while laying out") && text.contains("removed"), "{text}");
    assert!(!f.exists(), "the half-written file this run created is gone");
}
