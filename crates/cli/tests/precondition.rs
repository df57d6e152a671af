//! `iolab precondition` (issue 29) on real storage: a loop device over a file (BLKDISCARD
//! honoured: the backing file's blocks freed; the fill writing them back twice; refused without
//! --device and while mounted) and a plain file (a punched hole, then the fill; a file iolab did
//! not make refused without --overwrite).

mod common;
use common::*;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// Bytes the file holds on disk.
fn allocated(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks() * 512
}

fn precondition(args: &[&str]) -> std::process::Output {
    iolab().arg("precondition").args(args).output().expect("iolab runs")
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A loop device, detached when dropped.
struct Loop(PathBuf);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn a_loop_device_is_discarded_then_filled_twice_and_refused_while_mounted() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0xABu8; (64 * MIB) as usize]).unwrap();
    std::fs::File::open(&backing).unwrap().sync_all().unwrap();
    let out = Command::new("losetup").args(["--find", "--show"]).arg(&backing).output();
    let dev = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => return skip("losetup could not attach a loop device (needs root and the loop driver)"),
    };
    let lo = Loop(dev.clone());
    let d = lo.0.to_str().unwrap();
    let before = allocated(&backing);
    assert!(before >= 60 * MIB, "the backing file is written: {before}");

    // Without --device: refused, nothing written.
    let out = precondition(&[d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device"), "{}", String::from_utf8_lossy(&out.stderr));

    // The purge alone: BLKDISCARD reaches the loop driver, which punches the backing file.
    let v = json_of(&precondition(&[d, "--device", "--passes", "0", "--output", "json"]));
    assert_eq!(v["kind"], "block device");
    assert_eq!(v["capacity_bytes"].as_u64(), Some(64 * MIB));
    if v["purge"] == "none" {
        return skip(&format!("the loop device refused the discard: {}", v["purge_said"]));
    }
    assert_eq!(v["purge"], "discard", "{v}");
    assert_eq!(v["bytes_written"].as_u64(), Some(0));
    let purged = allocated(&backing);
    assert!(purged < before / 8, "BLKDISCARD freed the backing file's blocks: {before} -> {purged}");

    // The fill: twice the capacity in 128 KiB writes; the backing file is whole again.
    let v = json_of(&precondition(&[d, "--device", "--no-progress", "--output", "json"]));
    assert_eq!(v["bytes_written"].as_u64(), Some(2 * 64 * MIB), "{v}");
    assert_eq!((v["passes"].as_u64(), v["bs"].as_u64()), (Some(2), Some(128 * 1024)));
    assert_eq!(v["direct"], true, "a block device is filled with O_DIRECT");
    assert!(allocated(&backing) >= 60 * MIB, "filled: {}", allocated(&backing));
    // Not the 0xAB it held: the fill's data is there.
    let data = std::fs::read(&backing).unwrap();
    assert!(data[..4096].iter().any(|b| *b != 0xAB));

    // Mounted: refused, naming the mount.
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let made = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&dev).status().is_ok_and(|s| s.success());
    if made && Command::new("mount").arg(&dev).arg(&mnt).status().is_ok_and(|s| s.success()) {
        let out = precondition(&[d, "--device"]);
        let _ = Command::new("umount").arg(&mnt).status();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("mounted at") && err.contains(mnt.to_str().unwrap()), "{err}");
    } else {
        skip("mkfs.ext4 or mount failed: the mounted-device refusal was not checked");
    }
    drop(lo);
}

#[test]
fn a_file_is_punched_then_filled_and_a_foreign_one_needs_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("qual.dat");
    let fs = f.to_str().unwrap();
    // Missing without a size: refused, saying what to add.
    let out = precondition(&[fs]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--size"));
    // Created at 8 MiB, punched, filled twice.
    let v = json_of(&precondition(&[fs, "--size", "8M", "--output", "json"]));
    assert_eq!(v["kind"], "file");
    assert_eq!(v["capacity_bytes"].as_u64(), Some(8 * MIB));
    assert!(v["purge"] == "punch hole" || v["purge"] == "none", "{v}");
    assert_eq!(v["bytes_written"].as_u64(), Some(16 * MIB));
    assert!(allocated(&f) >= 8 * MIB);
    // Again, on the file iolab made: the purge frees its blocks first (the purge alone shows it).
    let v = json_of(&precondition(&[fs, "--passes", "0", "--output", "json"]));
    if v["purge"] == "punch hole" {
        assert!(allocated(&f) < MIB, "the punched file holds {} bytes", allocated(&f));
    }
    // A file iolab did not make: refused without --overwrite, and left as it was.
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, vec![1u8; MIB as usize]).unwrap();
    let out = precondition(&[theirs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--overwrite"));
    assert_eq!(std::fs::read(&theirs).unwrap(), vec![1u8; MIB as usize]);
    let v = json_of(&precondition(&[theirs.to_str().unwrap(), "--overwrite", "--passes", "1", "--output", "json"]));
    assert_eq!(v["bytes_written"].as_u64(), Some(MIB));
}
