//! Trims (`--rw trim|randtrim|trimwrite`, fio's): ioctl(BLKDISCARD) on a real loop device,
//! counted in their own class; a regular file answers ENOTTY and the job ends naming it, as
//! fio's ends with error 25; a file iolab did not make is trimmed only with --overwrite.

mod common;
use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bytes the file holds on disk (its allocated blocks).
fn allocated(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks() * 512
}

struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn attach(backing: &Path) -> Option<Loop> {
    let out = std::process::Command::new("losetup").args(["--find", "--show"]).arg(backing).output().ok()?;
    out.status.success().then(|| Loop(String::from_utf8_lossy(&out.stdout).trim().to_string()))
}

#[test]
fn randtrim_on_a_loop_device_discards_what_it_counts() {
    let dir = disk_tempdir();
    let backing = dir.path().join("disk.img");
    let mut engines = vec!["psync", "libaio"];
    if uring_ok() {
        engines.push("io_uring");
    }
    for engine in engines {
        std::fs::write(&backing, vec![0x5A; 8 << 20]).unwrap();
        let Some(dev) = attach(&backing) else {
            return skip("losetup unavailable (needs root and loop devices)");
        };
        let before = allocated(&backing);
        // Refused without --device, as a write is.
        let out = iolab().args(["run", "--target", &dev.0, "--rw", "randtrim", "--bs", "64k"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{engine}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--device"));
        assert_eq!(allocated(&backing), before, "{engine}: nothing trimmed when refused");
        let v = run_json(&[
            "run",
            "--target",
            &dev.0,
            "--device",
            "--engine",
            engine,
            "--rw",
            "randtrim",
            "--bs",
            "64k",
            "--size",
            "4M",
            "--random-map",
        ]);
        let trim = &v["phases"][0]["total"]["classes"]["trim"];
        assert_eq!((u(&trim["ops"]), u(&trim["bytes"])), (64, 4 << 20), "{engine}: {trim}");
        assert!(v["phases"][0]["total"]["classes"].get("write").is_none(), "{engine}: a trim job writes nothing");
        let after = allocated(&backing);
        // The loop driver punches the discarded range out of its backing file.
        // (Less the odd block of the filesystem's extent tree: 4 KiB on ext4.)
        assert!(before - after >= (4 << 20) - 65536, "{engine}: the backing file kept {after} of {before} bytes");
        let data = std::fs::read(&backing).unwrap();
        assert!(data[4 << 20..].iter().all(|&b| b == 0x5A), "{engine}: past --size untouched");
        assert!(data[..4 << 20].iter().all(|&b| b == 0), "{engine}: the trimmed 4 MiB read as zeros");

        // trimwrite: each block trimmed, then written (and the device flushed at the end: an
        // io_uring ring's files are released after the process exits, so its last close need
        // not have written the device's page cache back before the loop is detached).
        let v = run_json(&[
            "run",
            "--target",
            &dev.0,
            "--device",
            "--engine",
            engine,
            "--rw",
            "trimwrite",
            "--bs",
            "64k",
            "--size",
            "1M",
            "--end-fsync",
        ]);
        let c = &v["phases"][0]["total"]["classes"];
        assert_eq!((u(&c["trim"]["ops"]), u(&c["write"]["ops"])), (16, 16), "{engine}: {c}");
        drop(dev);
        let data = std::fs::read(&backing).unwrap();
        assert!(data[..1 << 20].chunks(65536).all(|b| b.iter().any(|&x| x != 0)), "{engine}: every block written");
    }
}

#[test]
fn fio_json_fills_its_trim_section() {
    let dir = disk_tempdir();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0x5A; 2 << 20]).unwrap();
    let Some(dev) = attach(&backing) else {
        return skip("losetup unavailable (needs root and loop devices)");
    };
    let out = iolab()
        .args(["run", "--target", &dev.0, "--device", "--rw", "trim", "--bs", "64k", "--size", "1M"])
        .args(["--output", "fio-json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["jobs"][0]["trim"];
    assert_eq!((u(&t["total_ios"]), u(&t["io_bytes"])), (16, 1 << 20), "{t}");
    assert_eq!(u(&v["jobs"][0]["write"]["total_ios"]), 0);
}

#[test]
fn a_trim_of_a_regular_file_ends_the_job_naming_enotty() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("made");
    let fs = f.to_str().unwrap();
    let out = iolab().args(["run", "--target", fs, "--rw", "randtrim", "--bs", "4k", "--size", "1M"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // fio 3.33: "ioctl(BLKDISCARD) ... Inappropriate ioctl for device", error=25.
    assert!(err.contains("trim of 4096 bytes") && err.contains("os error 25"), "{err}");

    // fio's JSON gives the errno that ended the job, as fio 3.33's `"error" : 25`.
    let g = dir.path().join("made2");
    let out = iolab()
        .args(["run", "--target", g.to_str().unwrap(), "--rw", "trim", "--bs", "4k", "--size", "64k"])
        .args(["--output", "fio-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&v["jobs"][0]["error"]), 25, "{}", v["jobs"][0]);

    // Told to go on after ENOTTY (a trim counts as a write, as fio's), the job counts them all.
    let v = run_json(&[
        "run",
        "--target",
        fs,
        "--rw",
        "trim",
        "--bs",
        "64k",
        "--size",
        "1M",
        "--continue-on-error",
        "write",
        "--ignore-error",
        ",ENOTTY",
    ]);
    let errors = &v["phases"][0]["jobs"][0]["io_errors"];
    assert_eq!((u(&errors["count"]), u(&errors["first"]["errno"])), (16, 25), "{errors}");
    assert_eq!(errors["first"]["call"], "trim", "{errors}");

    // A file iolab did not make is not trimmed without --overwrite.
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, vec![0xAB; 65536]).unwrap();
    let ts = theirs.to_str().unwrap();
    for rw in ["trim", "randtrim", "trimwrite"] {
        let out = iolab().args(["run", "--target", ts, "--rw", rw, "--bs", "4k"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rw}: {err}");
        assert!(err.contains("will not trim") && err.contains("--overwrite"), "{rw}: {err}");
    }
    assert_eq!(std::fs::read(&theirs).unwrap(), vec![0xAB; 65536], "unchanged");
    // Validation cannot check what a trim leaves: refused by name.
    let out = iolab().args(["run", "--target", fs, "--rw", "trim", "--size", "1M", "--verify"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("verify") && err.contains("trim"), "{err}");
}
