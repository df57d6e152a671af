//! Figures a user can trust (issue 24), on real files, devices and links: a sparse or
//! preallocated file is filled before it is read (or its holes kept and the reads in them
//! counted), a healthy direct read of a written file says nothing, the limit line names the
//! queue depth, the device, the CPU, the rate and the shaped link where each bounded a run, and
//! a rate with a runtime ends on time at the rate asked. Testbed id 1 is this file's.

mod common;

use common::testbed::{Fs, Testbed};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn phase0(v: &Value) -> &Value {
    &v["phases"][0]
}

fn limit(v: &Value) -> (&str, &str) {
    let l = &phase0(v)["limit"];
    (l["by"].as_str().unwrap_or("?"), l["text"].as_str().unwrap_or("?"))
}

fn findings(v: &Value) -> Vec<String> {
    phase0(v)["findings"]
        .as_array()
        .map(|a| a.iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Bytes of `path` in holes or unwritten extents (iolab's own mapping, SEEK_DATA and FIEMAP).
fn empty_bytes(path: &Path) -> u64 {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len();
    iolab_engine::extents::empty_ranges(&f, 0, len).unwrap().iter().map(|(a, b)| b - a).sum()
}

/// A scratch directory on a disk filesystem that reports holes, or why there is none.
fn sparse_dir() -> Result<tempfile::TempDir, String> {
    let d = disk_tempdir();
    let probe = d.path().join("probe");
    std::fs::File::create(&probe).and_then(|f| f.set_len(1 << 20)).map_err(|e| e.to_string())?;
    if empty_bytes(&probe) != 1 << 20 {
        return Err("the scratch filesystem reports no holes (no SEEK_DATA)".into());
    }
    std::fs::remove_file(&probe).map_err(|e| e.to_string())?;
    Ok(d)
}

#[test]
fn a_sparse_file_read_with_overwrite_is_filled_first_and_reads_reach_the_device() {
    let d = match sparse_dir() {
        Ok(d) => d,
        Err(why) => return skip(&why),
    };
    let f = d.path().join("sparse");
    Command::new("truncate").args(["-s", "64M"]).arg(&f).status().unwrap();
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--runtime",
        "1s",
        "--overwrite",
    ]);
    let p = phase0(&v);
    assert_eq!(p["layout"]["holes_filled"], 64 << 20, "{:#}", p["layout"]);
    assert!(p["layout"]["elapsed_s"].as_f64().unwrap() > 0.0);
    assert!(p["holes"].is_null(), "nothing left to fall into: {:#}", p["holes"]);
    assert_eq!(empty_bytes(&f), 0, "the file holds data everywhere now");
    assert!(!findings(&v).contains(&"reads_in_holes".to_string()), "{:#}", p["findings"]);
    // The laid-out data is iolab's pattern (each 1 MiB chunk stamped with its offset), not zeros.
    let data = std::fs::read(&f).unwrap();
    assert_eq!(u64::from_le_bytes(data[1 << 20..(1 << 20) + 8].try_into().unwrap()), 1 << 20);
}

#[test]
fn holes_kept_on_purpose_or_in_a_foreign_file_are_counted_and_said() {
    let d = match sparse_dir() {
        Ok(d) => d,
        Err(why) => return skip(&why),
    };
    // Seed 002's redo-log layout: 32 KiB written at every 1 MiB, the rest a hole.
    let f = d.path().join("redo");
    let file = std::fs::File::create(&f).unwrap();
    file.set_len(64 << 20).unwrap();
    for i in 0..64u64 {
        std::os::unix::fs::FileExt::write_all_at(&file, &[0xA5; 32 << 10], i << 20).unwrap();
    }
    file.sync_all().unwrap();
    drop(file);
    let before = empty_bytes(&f);
    let db = d.path().join("r.db");
    let args = |extra: &[&'static str]| {
        let mut a = vec!["run", "--target", f.to_str().unwrap(), "--rw", "randread", "--bs", "4k", "--runtime", "1s"];
        a.extend(["--db", db.to_str().unwrap()]);
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    for extra in [&["--keep-holes", "--overwrite"][..], &[][..]] {
        let a = args(extra);
        let v = run_json(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let h = &phase0(&v)["holes"];
        let (reads, in_holes) = (u(&h["reads"]), u(&h["in_holes"]));
        let share = in_holes as f64 / reads as f64;
        println!("{extra:?}: {in_holes} of {reads} reads in holes ({share:.3}), region {}", h["hole_share"]);
        assert!(reads > 1000 && (0.93..0.99).contains(&share), "31/32 of the file is a hole: {h:#}");
        assert!((h["hole_share"].as_f64().unwrap() - 31.0 / 32.0).abs() < 0.001, "{h:#}");
        assert_eq!(&phase0(&v)["jobs"][0]["holes"], h, "one job: the job's count is the phase's");
        assert_eq!(empty_bytes(&f), before, "{extra:?}: the holes are still there");
        let found = &phase0(&v)["findings"];
        let said = found.as_array().and_then(|a| a.first()).map(|f| f["text"].as_str().unwrap().to_string());
        if let Some(said) = said {
            // Said when the device saw much less than was read (page-cached 32 KiB pieces may be
            // all the device had to give).
            assert!(said.contains("fell in holes"), "{said}");
            assert!(said.contains(if extra.is_empty() { "pass --overwrite" } else { "--keep-holes" }), "{said}");
        }
        let out = iolab().args(["show", "last", "--db", db.to_str().unwrap()]).output().unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(shown.contains("% of reads (") && shown.contains("fell in holes or unwritten extents"), "{shown}");
    }
}

#[test]
fn a_fallocated_file_is_filled_where_iolab_may_write_it() {
    let d = match sparse_dir() {
        Ok(d) => d,
        Err(why) => return skip(&why),
    };
    let f = d.path().join("prealloc");
    if !Command::new("fallocate").args(["-l", "32M"]).arg(&f).status().is_ok_and(|s| s.success()) {
        return skip("fallocate is not supported here");
    }
    assert_eq!(empty_bytes(&f), 32 << 20, "unwritten extents read as no data");
    // Read as it is (a foreign file, holes kept): every read falls in an unwritten extent.
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--runtime",
        "1s",
        "--direct",
    ]);
    let h = &phase0(&v)["holes"];
    assert_eq!(u(&h["reads"]), u(&h["in_holes"]), "{h:#}");
    assert!(findings(&v).contains(&"reads_in_holes".to_string()), "{:#}", phase0(&v)["findings"]);
    // With --overwrite: filled before the window, and then read from the device.
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--runtime",
        "1s",
        "--direct",
        "--overwrite",
    ]);
    assert_eq!(phase0(&v)["layout"]["holes_filled"], 32 << 20);
    assert_eq!(empty_bytes(&f), 0);
    assert!(phase0(&v)["holes"].is_null());
}

/// A loop device with direct I/O over an image in a disk-backed temp dir, with ext4 on it,
/// unmounted and detached on drop.
struct Loop {
    dev: String,
    mnt: PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn new(size_mb: u64) -> Option<Loop> {
        let dir = disk_tempdir();
        let img = dir.path().join("disk.img");
        std::fs::File::create(&img).ok()?.set_len(size_mb << 20).ok()?;
        let out = Command::new("losetup").args(["--find", "--show", "--direct-io=on"]).arg(&img).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).ok()?;
        let lp = Loop { dev, mnt, _dir: dir };
        let ok = Command::new("mkfs.ext4").args(["-q", "-F", &lp.dev]).status().ok()?.success()
            && Command::new("mount").arg(&lp.dev).arg(&lp.mnt).status().ok()?.success();
        ok.then_some(lp)
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn on_a_loop_disk_a_direct_read_is_quiet_qd1_is_the_depth_and_qd32_the_device() {
    let Some(lp) = Loop::new(512) else {
        return skip("losetup, mkfs.ext4 or mount unavailable (needs root and loop devices)");
    };
    let f = lp.mnt.join("f");
    let dd = Command::new("dd")
        .args(["if=/dev/urandom", &format!("of={}", f.display()), "bs=1M", "count=256", "oflag=direct", "status=none"])
        .status()
        .unwrap();
    assert!(dd.success());
    let target = f.to_str().unwrap();
    // A healthy direct read of a written file on a real disk: no finding.
    let v = run_json(&["run", "--target", target, "--rw", "randread", "--bs", "4k", "--direct", "--runtime", "2s"]);
    assert!(phase0(&v)["findings"].is_null(), "{:#}", phase0(&v)["findings"]);
    let (by, text) = limit(&v);
    println!("4 KiB QD1: {text}");
    // QD1 against QD32 with 1 MiB reads (the device, not this shared machine's CPUs, is then
    // what a deep queue meets).
    if !uring_ok() {
        return skip("io_uring unavailable: QD32 not tried");
    }
    let qd = |depth: &str| {
        run_json(&[
            "run",
            "--target",
            target,
            "--rw",
            "randread",
            "--bs",
            "1M",
            "--direct",
            "--runtime",
            "3s",
            "--engine",
            "io_uring",
            "--iodepth",
            depth,
        ])
    };
    let (one, deep) = (qd("1"), qd("32"));
    let mbs = |v: &Value| phase0(v)["total"]["read"]["bw_bytes"].as_f64().unwrap() / 1e6;
    println!("QD1 {:.0} MB/s: {}\nQD32 {:.0} MB/s: {}", mbs(&one), limit(&one).1, mbs(&deep), limit(&deep).1);
    assert!(phase0(&one)["findings"].is_null() && phase0(&deep)["findings"].is_null());
    assert_eq!(limit(&one).0, "queue_depth", "{}", limit(&one).1);
    assert!(limit(&one).1.contains("1 in flight (QD1 × 1 thread)"), "{}", limit(&one).1);
    assert_eq!(limit(&deep).0, "device", "{}", limit(&deep).1);
    let subject = phase0(&deep)["limit"]["subject"].as_str().unwrap().to_string();
    let chain: Vec<&str> =
        phase0(&deep)["system"]["target"]["devices"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    assert!(chain.contains(&subject.as_str()), "{subject} is one of the target's devices {chain:?}");
    assert!(
        by == "queue_depth" || by == "cpu",
        "a 4 KiB QD1 read is bounded by its depth (or this machine's CPUs): {text}"
    );
}

#[test]
fn a_cpu_bound_dev_null_job_names_the_cpu() {
    let v = run_json(&[
        "run",
        "--target",
        "/dev/null",
        "--device",
        "--size",
        "1G",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--runtime",
        "1s",
    ]);
    let (by, text) = limit(&v);
    assert_eq!(by, "cpu", "{text}");
    assert!(text.contains("iolab's own threads on CPU"), "{text}");
}

#[test]
fn a_rate_with_a_runtime_ends_on_time_at_the_rate_asked() {
    let d = disk_tempdir();
    let f = d.path().join("paced");
    let t = std::time::Instant::now();
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "1M",
        "--rw",
        "write",
        "--rate",
        "1k",
        "--runtime",
        "1s",
        "--bs",
        "4k",
    ]);
    let wall = t.elapsed().as_secs_f64();
    let p = phase0(&v);
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    let w = &p["total"]["write"];
    println!(
        "--rate 1k --runtime 1s: {} bytes over {elapsed:.3} s, {} B/s, wall {wall:.2} s",
        w["bytes"], w["bw_bytes"]
    );
    assert!((0.95..=1.05).contains(&elapsed), "the phase took {elapsed} s, not the second asked");
    assert!(wall < 3.0, "iolab took {wall:.2} s of wall time");
    assert!(u(&w["bytes"]) <= 4096, "at most one 4 KiB write in a second at 1 kB/s: {w:#}");
    assert!(w["bw_bytes"].as_f64().unwrap() < 10_000.0, "kB/s, never MB/s: {w:#}");
    assert_eq!(limit(&v).0, "rate", "{}", limit(&v).1);
    // An IOPS rate over two seconds: the runtime within 5%, the rate within 5% of the asked.
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--rw",
        "write",
        "--rate-iops",
        "200",
        "--runtime",
        "2s",
        "--bs",
        "4k",
    ]);
    let p = phase0(&v);
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    let iops = p["total"]["write"]["iops"].as_f64().unwrap();
    println!("--rate-iops 200 --runtime 2s: {iops:.1} IOPS over {elapsed:.3} s");
    assert!((1.9..=2.1).contains(&elapsed) && (190.0..=210.0).contains(&iops), "{iops} IOPS over {elapsed} s");
    assert!(limit(&v).1.starts_with("the rate asked (--rate-iops): 200 IOPS asked"), "{}", limit(&v).1);
    // Without a runtime, a paced job's time is its schedule: 16 KiB at 8 KiB/s is two seconds.
    let g = d.path().join("short");
    let v = run_json(&[
        "run",
        "--target",
        g.to_str().unwrap(),
        "--size",
        "16k",
        "--rw",
        "write",
        "--rate",
        "8k",
        "--bs",
        "4k",
    ]);
    let elapsed = phase0(&v)["elapsed_s"].as_f64().unwrap();
    assert!((1.9..=2.2).contains(&elapsed), "four 4 KiB writes at 8 KiB/s took {elapsed} s");
}

#[test]
fn the_limit_line_names_the_shaped_link_and_every_link_a_replica_crosses() {
    let tb = match Testbed::up(1, 1, Fs::Both, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let db = tempfile::tempdir().unwrap();
    let run_on = |dir: PathBuf| -> Value {
        let target = dir.join("f");
        let out = tb
            .exec(
                "n1",
                bin.to_str().unwrap(),
                &[
                    "run",
                    "--target",
                    target.to_str().unwrap(),
                    "--size",
                    "24M",
                    "--bs",
                    "1M",
                    "--rw",
                    "write",
                    "--end-fsync",
                    "--output",
                    "json",
                    "--no-store",
                ],
            )
            .env("IOLAB_DB", db.path().join("r.db"))
            .output()
            .expect("iolab runs in n1");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    // sshfs over n1's one shaped link.
    let v = run_on(tb.sshfs_mount("n1"));
    let link = tb.get("NODE_n1_SSHFS_LINK").unwrap().to_string();
    let (by, text) = limit(&v);
    println!("sshfs: {text}");
    assert_eq!(by, "network", "{text}");
    assert_eq!(phase0(&v)["limit"]["subject"], link.as_str(), "{text}");
    assert!(text.contains("of its 100 Mbit/s"), "{text}");
    if let Some(why) = tb.gluster_error() {
        return skip(&format!("GlusterFS did not start: {why}"));
    }
    // GlusterFS replica 2: the client writes to both servers, over both of n1's links.
    let v = run_on(tb.gluster_mount("n1"));
    let links: Vec<String> = tb.get("NODE_n1_GLUSTER_LINKS").unwrap().split(' ').map(String::from).collect();
    let seen: Vec<&str> = phase0(&v)["system"]["target"]["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(links.iter().all(|l| seen.contains(&l.as_str())), "both servers' links {links:?} in {seen:?}");
    let (by, text) = limit(&v);
    println!("gluster: {text}");
    assert_eq!(by, "network", "{text}");
    assert!(links.contains(&phase0(&v)["limit"]["subject"].as_str().unwrap().to_string()), "{text}");
    // And the replication shows: the links carried about twice what iolab wrote.
    let f = &phase0(&v)["findings"][0];
    assert_eq!(f["kind"], "moved_more", "{:#}", phase0(&v)["findings"]);
    let ratio = f["seen_bytes_s"].as_f64().unwrap() / f["issued_bytes_s"].as_f64().unwrap();
    assert!((1.8..2.5).contains(&ratio), "replica 2 sends each byte twice: {ratio:.2}");
}
