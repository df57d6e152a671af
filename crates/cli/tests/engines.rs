//! Every engine on every access pattern, with real I/O in temporary directories.

mod common;
use common::*;

const PATTERNS: [&str; 6] = ["read", "write", "randread", "randwrite", "readwrite", "randrw"];

fn check_engine(engine: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for rw in PATTERNS {
        let f = dir.path().join(format!("{engine}-{rw}"));
        let fs = f.to_str().unwrap();
        let mut args = vec!["run", "--target", fs, "--size", "4M", "--bs", "4k", "--rw", rw, "--engine", engine];
        args.extend_from_slice(extra);
        let v = run_json(&args);
        assert_eq!(v["status"], "complete", "{engine} {rw}");
        let t = &v["phases"][0]["total"];
        let (r, w) = (u(&t["read"]["bytes"]), u(&t["write"]["bytes"]));
        // One pass of a 4 MiB file: sequential covers it once, random issues as many bytes.
        assert_eq!(r + w, 4 << 20, "{engine} {rw}: read {r} + write {w}");
        match rw {
            "read" | "randread" => assert_eq!(w, 0),
            "write" | "randwrite" => assert_eq!(r, 0),
            _ => assert!(r > 0 && w > 0, "{engine} {rw}: a mix does both"),
        }
        let ops = u(&t["read"]["ops"]) + u(&t["write"]["ops"]);
        assert_eq!(ops, 1024);
        if engine != "null" {
            let lat = &t[if r > 0 { "read" } else { "write" }]["lat_ns"];
            assert!(
                u(&lat["min"]) > 0 && u(&lat["min"]) <= u(&lat["p50"]) && u(&lat["p50"]) <= u(&lat["max"]),
                "{lat}"
            );
            let len = std::fs::metadata(&f).unwrap().len();
            assert_eq!(len, 4 << 20, "{engine} {rw}: file size");
            if w > 0 {
                let data = std::fs::read(&f).unwrap();
                let zeros = data.iter().filter(|&&b| b == 0).count();
                assert!(
                    zeros < data.len() / 10,
                    "{engine} {rw}: written data should be incompressible, {zeros} zero bytes"
                );
            }
        }
    }
}

#[test]
fn psync_every_pattern() {
    check_engine("psync", &[]);
}

#[test]
fn mmap_every_pattern() {
    check_engine("mmap", &[]);
}

#[test]
fn null_every_pattern() {
    check_engine("null", &[]);
}

#[test]
fn io_uring_every_pattern() {
    if !uring_ok() {
        return skip("io_uring is not available on this kernel");
    }
    check_engine("io_uring", &["--iodepth", "8"]);
}

/// --sqpoll: every pattern moves its bytes through a polled ring; while a job runs, a kernel
/// thread of iolab's (`iou-sqp-PID`) polls it and the plan says `sqpoll`, where a run without
/// the flag has neither; io_uring_setup asked for IORING_SETUP_SQPOLL (strace, when there is
/// one); another engine, or --sqpoll-cpu alone, is one error naming the flag.
#[test]
fn io_uring_with_sqpoll() {
    if !uring_ok() {
        return skip("io_uring is not available on this kernel");
    }
    check_engine("io_uring", &["--iodepth", "8", "--sqpoll"]);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let fs = f.to_str().unwrap();
    let job = ["run", "--target", fs, "--size", "16M", "--rw", "randread", "--bs", "4k", "--engine", "io_uring"];
    let job: Vec<&str> = job.iter().copied().chain(["--iodepth", "8", "--runtime", "2s", "--no-progress"]).collect();
    let watched = |extra: &[&str]| -> (bool, serde_json::Value) {
        let out = dir.path().join("out.json");
        let mut child = iolab_process()
            .args(&job)
            .args(extra)
            .args(["--output", "json"])
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let tasks = format!("/proc/{}/task", child.id());
        let mut seen = false;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            for t in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
                seen |= std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("iou-sqp-"));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(status.success(), "iolab {extra:?} failed");
        (seen, serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap())
    };
    let (seen, v) = watched(&["--sqpoll"]);
    if v["phases"][0]["jobs"][0]["error"].is_string() {
        panic!("{}", v["phases"][0]["jobs"][0]["error"]);
    }
    assert!(seen, "a polling thread ran in iolab's process");
    assert_eq!(v["plan"]["phases"][0]["jobs"][0]["sqpoll"], true);
    let t = &v["phases"][0]["total"]["read"];
    assert!(u(&t["ops"]) > 0 && u(&t["bytes"]) == u(&t["ops"]) * 4096, "{t}");
    let (seen, v) = watched(&[]);
    assert!(!seen, "no polling thread without --sqpoll");
    assert!(v["plan"]["phases"][0]["jobs"][0].get("sqpoll").is_none());
    if std::process::Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success()) {
        let trace = dir.path().join("setup.strace");
        let out = std::process::Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=io_uring_setup", "-o"])
            .arg(&trace)
            .arg(assert_cmd::cargo::cargo_bin("iolab"))
            .args(&job)
            .args(["--sqpoll", "--no-store", "--output", "json"])
            .env("IOLAB_DB", db_path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let calls = std::fs::read_to_string(&trace).unwrap();
        assert!(
            calls.lines().any(|l| l.contains("IORING_SETUP_SQPOLL") && !l.contains("= -1")),
            "a ring set up with SQPOLL: {calls}"
        );
    } else {
        skip("strace is not installed: io_uring_setup's flags not checked");
    }
    for (extra, says) in [
        (&["--engine", "libaio", "--sqpoll"][..], "use --engine io_uring or drop --sqpoll"),
        (&["--sqpoll-cpu", "0"][..], "give --sqpoll too"),
    ] {
        let out = iolab().args(["run", "--target", fs, "--size", "1M"]).args(extra).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn libaio_every_pattern() {
    if let Err(why) = iolab_engine::libaio::available() {
        return skip(&format!("native AIO is not available here: {why}"));
    }
    check_engine("libaio", &["--iodepth", "8"]);
    // Batched as fio's options say, on every pattern too.
    check_engine(
        "libaio",
        &["--iodepth", "8", "--iodepth-batch-submit", "4", "--iodepth-batch-complete-max", "2", "--iodepth-low", "2"],
    );
}

#[test]
fn direct_io_on_a_disk_filesystem() {
    let dir = disk_tempdir();
    if !direct_ok(dir.path()) {
        return skip("no scratch filesystem here supports O_DIRECT (set IOLAB_TEST_DIR)");
    }
    let f = dir.path().join("direct");
    let fs = f.to_str().unwrap();
    for engine in ["psync", "io_uring"] {
        if engine == "io_uring" && !uring_ok() {
            skip("io_uring is not available on this kernel");
            continue;
        }
        for rw in ["write", "randread", "randwrite"] {
            let v = run_json(&[
                "run",
                "--target",
                fs,
                "--size",
                "8M",
                "--bs",
                "64k",
                "--rw",
                rw,
                "--engine",
                engine,
                "--direct",
                "--iodepth",
                if engine == "io_uring" { "4" } else { "1" },
            ]);
            let t = &v["phases"][0]["total"];
            assert_eq!(u(&t["read"]["bytes"]) + u(&t["write"]["bytes"]), 8 << 20, "{engine} {rw}");
        }
    }
}

#[test]
fn direct_io_refused_cleanly_on_tmpfs() {
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else { return skip("no /dev/shm") };
    if direct_ok(dir.path()) {
        return skip("/dev/shm accepts O_DIRECT here");
    }
    let f = dir.path().join("x");
    let out = iolab()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "1M", "--rw", "write", "--direct"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(all.contains("does not support direct I/O"), "{all}");
}

#[test]
fn redo_log_stride_writes_where_the_trace_says() {
    // Seed 002: 32 KiB at every 1 MiB, fsync after each write.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("redo");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "8M",
        "--rw",
        "write",
        "--bs",
        "32k",
        "--stride",
        "1M",
        "--sync",
        "fsync",
    ]);
    let t = &v["phases"][0]["total"];
    assert_eq!(u(&t["write"]["ops"]), 8);
    assert_eq!(u(&t["sync"]["ops"]), 8, "one fsync per write");
    let data = std::fs::read(&f).unwrap();
    for mb in 0..8usize {
        let block = &data[mb << 20..(mb << 20) + 32768];
        assert!(block.iter().any(|&b| b != 0), "block at {mb} MiB written");
        if mb < 7 {
            let gap = &data[(mb << 20) + 32768..(mb + 1) << 20];
            assert!(gap.iter().all(|&b| b == 0), "gap after {mb} MiB untouched");
        }
    }
}

#[test]
fn dd_equivalents_count_bytes_like_dd() {
    // dd if=/dev/zero of=F bs=1M count=16 conv=fsync
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("dd");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "1M",
        "--size",
        "16M",
        "--end-fsync",
    ]);
    let p = &v["phases"][0];
    assert_eq!(u(&p["total"]["write"]["bytes"]), 16 << 20);
    assert_eq!(u(&p["total"]["sync"]["ops"]), 1);
    let bw = p["total"]["write"]["bw_bytes"].as_f64().unwrap();
    let el = p["elapsed_s"].as_f64().unwrap();
    assert!((bw * el - (16u64 << 20) as f64).abs() < 1.0, "bw is bytes / elapsed, as dd computes it");
}

#[test]
fn rate_limit_holds_iops() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("rate");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "8M",
        "--rw",
        "randread",
        "--rate-iops",
        "400",
        "--runtime",
        "1.5s",
    ]);
    let iops = v["phases"][0]["total"]["read"]["iops"].as_f64().unwrap();
    assert!((340.0..=420.0).contains(&iops), "asked for 400 IOPS, got {iops}");
}

#[test]
fn ramp_is_run_but_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ramp");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "8M",
        "--rw",
        "randread",
        "--rate-iops",
        "200",
        "--ramp",
        "1s",
        "--runtime",
        "1s",
    ]);
    let p = &v["phases"][0];
    let ops = u(&p["total"]["read"]["ops"]);
    assert!((150..=230).contains(&ops), "1 s at 200 IOPS counted, the ramp's second not: {ops}");
    let el = p["elapsed_s"].as_f64().unwrap();
    assert!((0.9..1.5).contains(&el), "elapsed excludes the ramp: {el}");
    let tl = p["timeline"].as_array().unwrap();
    assert!(!tl.is_empty() && tl.len() <= 2, "{tl:?}");
}

#[test]
fn threads_on_a_directory_get_one_file_each() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "2M",
        "--rw",
        "randwrite",
        "--threads",
        "3",
        "--name",
        "w",
    ]);
    let files = v["phases"][0]["jobs"][0]["files"].as_array().unwrap().len();
    assert_eq!(files, 3);
    for t in 0..3 {
        assert_eq!(std::fs::metadata(dir.path().join(format!("iolab.w.{t}"))).unwrap().len(), 2 << 20);
    }
    assert_eq!(u(&v["phases"][0]["total"]["write"]["bytes"]), 3 * (2 << 20));
}

#[test]
fn weighted_block_sizes_and_zipf() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("z");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "16M",
        "--rw",
        "randread",
        "--bs",
        "4k:50,64k:50",
        "--dist",
        "zipf:1.1",
        "--io-size",
        "8M",
    ]);
    let r = &v["phases"][0]["total"]["read"];
    let avg = u(&r["bytes"]) as f64 / u(&r["ops"]) as f64;
    assert!((25_000.0..45_000.0).contains(&avg), "mean block ~34 KiB, got {avg}");
}

/// The pages of `path` in the page cache, in bytes (util-linux's fincore), if it can say.
fn resident(path: &std::path::Path) -> Option<u64> {
    let out = std::process::Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(path)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn invalidate_drops_the_target_s_cached_pages_before_the_phase() {
    // On a disk-backed filesystem: tmpfs's pages are its storage and cannot be dropped.
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = d.path().join("f");
    let f_s = f.to_str().unwrap();
    iolab()
        .args(["run", "--no-store", "--sample-interval", "0", "--target", f_s, "--size", "32M", "--rw", "write"])
        .assert()
        .success();
    let Some(before) = resident(&f) else {
        return common::skip("fincore (util-linux) cannot report the page cache here");
    };
    if before < 16 << 20 {
        return common::skip(&format!("the written file is not in the page cache ({before} bytes resident)"));
    }
    // Read 4 KiB of it: without --invalidate the file stays cached, with it only what the read
    // (and its readahead) brought back in is.
    let read = |extra: &[&str]| {
        iolab()
            .args(["run", "--no-store", "--sample-interval", "0", "--target", f_s, "--size", "32M", "--rw", "read"])
            .args(["--io-size", "4k"])
            .args(extra)
            .assert()
            .success();
        resident(&f).unwrap()
    };
    let kept = read(&[]);
    assert!(kept >= 16 << 20, "a plain run drops nothing: {kept} bytes resident");
    let dropped = read(&["--invalidate"]);
    assert!(dropped < 4 << 20, "--invalidate left {dropped} bytes of 32 MiB in the page cache");
}
