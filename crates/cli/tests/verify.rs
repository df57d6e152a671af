//! Data validation, proven against injected faults (issue 12's "Proof that it works"): a file is
//! written twice by real validated runs (every key block at key 1, then key 2), then surgery on
//! the file flips bits, restores the older version of blocks (a dropped write, or stale data
//! when another node reads it), copies blocks over other blocks (a misdirected write), restores
//! the older version of the last sectors of blocks (a torn write) and zeroes blocks (data never
//! written) — 1,000 of each, in one file — and iolab must find every one, with the right class
//! at the right block and sector, and nothing else; clean runs must report nothing. Also: reads
//! during a run validate what they read, every engine and shared files stay clean, and a run
//! killed with SIGKILL recovers with `iolab verify`.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const KB: usize = 4096;
const SECTOR: usize = 512;
const FAULTS: usize = 1000;

/// A small deterministic generator (xorshift64*), so a failure can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Flip,
    Drop,
    Misdirect,
    Tear,
    Zero,
}

/// What a fault at a block must be reported as: class, first bad sector, found key.
struct Expected {
    class: &'static str,
    sector_offset: u64,
    found_key: Option<u64>,
}

/// `iolab` with `args`, its exit code and its JSON.
fn json_of(args: &[&str]) -> (i32, Value) {
    let out = iolab().args(args).args(["--output", "json", "--no-store"]).output().expect("iolab runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "iolab {args:?} printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn verify_of(v: &Value) -> &Value {
    &v["phases"][0]["verify"]
}

fn total_errors(v: &Value) -> u64 {
    verify_of(v)["errors"].as_object().unwrap().values().map(u).sum()
}

/// Write `file` (`size` bytes) sequentially with validation and a journal: one pass.
fn write_pass(file: &Path, size: &str, journal: &Path) {
    let (code, v) = json_of(&[
        "run",
        "--target",
        file.to_str().unwrap(),
        "--size",
        size,
        "--rw",
        "write",
        "--bs",
        "4k:1,64k:1",
        "--verify-after",
        "--journal",
        journal.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "a clean validated run: {v}");
    let ver = verify_of(&v);
    assert_eq!(total_errors(&v), 0, "{ver}");
    // Key blocks are the smallest block size: a 64 KiB write stamps 16 of them.
    assert_eq!(u(&ver["key_block"]), 4096, "{ver}");
}

/// Check a `verify` result against the injected faults: exactly one error per fault, at its
/// block, with its class, sector and found key.
fn check_found(ver: &Value, injected: &BTreeMap<u64, Expected>, lost_as: &str) {
    let errors = ver["first_errors"].as_array().expect("errors listed");
    assert_eq!(errors.len(), injected.len(), "one error per injected fault");
    let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in errors {
        let off = u(&e["offset"]);
        let want = injected.get(&off).unwrap_or_else(|| panic!("an error where no fault was injected: {e}"));
        let want_class = if want.class == "lost_write" { lost_as } else { want.class };
        assert_eq!(e["class"], want_class, "class at {off}: {e}");
        assert_eq!(u(&e["sector_offset"]), want.sector_offset, "first bad sector at {off}: {e}");
        assert_eq!(e["found_key"].as_u64(), want.found_key, "found key at {off}: {e}");
        assert_eq!(u(&e["expected_key"]), 2, "{e}");
        assert!(e["file"].as_str().unwrap().ends_with("/data"), "{e}");
        assert!(!e["detail"].as_str().unwrap().is_empty());
        if want.found_key.is_some() {
            assert!(e["writer"].as_str().is_some_and(|w| w.ends_with("/0")), "the writer is named: {e}");
            assert!(u(&e["found_time_unix_ns"]) > 1_600_000_000_000_000_000, "the time found: {e}");
        }
        assert!(seen.insert(off), "one error per block: {off}");
        *by_class.entry(want_class.to_string()).or_default() += 1;
    }
    for (class, n) in by_class {
        assert_eq!(u(&ver["errors"][&class]), n, "{class}: {ver}");
        assert_eq!(n, FAULTS as u64, "{class}");
    }
}

#[test]
fn every_injected_fault_is_found_with_its_class_and_place() {
    let dir = disk_tempdir();
    let data = dir.path().join("data");
    let journal = dir.path().join("journal");
    // 6,144 blocks of 4 KiB: 5,000 faults on distinct blocks, the rest as misdirected sources.
    let size = 6144 * KB;
    let size_s = format!("{size}");
    // Two real passes: every block at key 1, then at key 2; the first version is kept.
    write_pass(&data, &size_s, &journal);
    let v1 = std::fs::read(&data).unwrap();
    write_pass(&data, &size_s, &journal);
    let v2 = std::fs::read(&data).unwrap();
    assert_ne!(v1, v2, "the second pass rewrote every block with a new key");
    assert_eq!(v1.len(), size);

    // Clean: the writer and another node find nothing.
    for who in ["", "n2"] {
        let mut args = vec!["verify", "--journal", journal.to_str().unwrap()];
        if !who.is_empty() {
            args.extend(["--as-node", who]);
        }
        let (code, v) = json_of(&args);
        assert_eq!((code, total_errors(&v)), (0, 0), "clean file: {v}");
        assert_eq!(u(&verify_of(&v)["checked_after"]), 6144);
    }

    // Inject.
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let mut blocks: Vec<usize> = (0..6144).collect();
    for i in (1..blocks.len()).rev() {
        blocks.swap(i, rng.below(i + 1));
    }
    let kinds = [Fault::Flip, Fault::Drop, Fault::Misdirect, Fault::Tear, Fault::Zero];
    let spare: Vec<usize> = blocks[kinds.len() * FAULTS..].to_vec();
    let mut file = v2.clone();
    let mut injected: BTreeMap<u64, Expected> = BTreeMap::new();
    for (k, kind) in kinds.iter().enumerate() {
        for &b in &blocks[k * FAULTS..(k + 1) * FAULTS] {
            let at = b * KB;
            let off = at as u64;
            let e = match kind {
                Fault::Flip => {
                    let p = rng.below(KB);
                    file[at + p] ^= 1 << rng.below(8);
                    Expected { class: "corrupted", sector_offset: off + (p / SECTOR * SECTOR) as u64, found_key: None }
                }
                Fault::Drop => {
                    file[at..at + KB].copy_from_slice(&v1[at..at + KB]);
                    Expected { class: "lost_write", sector_offset: off, found_key: Some(1) }
                }
                Fault::Misdirect => {
                    let s = spare[rng.below(spare.len())] * KB;
                    file[at..at + KB].copy_from_slice(&v2[s..s + KB]);
                    Expected { class: "misdirected", sector_offset: off, found_key: Some(2) }
                }
                Fault::Tear => {
                    // The write landed in the first k sectors only.
                    let k = 1 + rng.below(KB / SECTOR - 1);
                    file[at + k * SECTOR..at + KB].copy_from_slice(&v1[at + k * SECTOR..at + KB]);
                    Expected { class: "torn", sector_offset: off + (k * SECTOR) as u64, found_key: Some(1) }
                }
                Fault::Zero => {
                    file[at..at + KB].fill(0);
                    Expected { class: "never_written", sector_offset: off, found_key: None }
                }
            };
            injected.insert(off, e);
        }
    }
    std::fs::write(&data, &file).unwrap();
    let max = "100000";

    // Another node reading after the writer synced: the old versions are stale reads. It
    // leaves the journal as it is.
    let (code, v) =
        json_of(&["verify", "--journal", journal.to_str().unwrap(), "--as-node", "n2", "--max-errors", max]);
    assert_eq!(code, 1, "errors found: exit status 1");
    check_found(verify_of(&v), &injected, "stale_read");

    // Reads during a run check what they read (on a copy of the journal, which the run updates).
    let journal2 = dir.path().join("journal2");
    std::fs::create_dir(&journal2).unwrap();
    for e in std::fs::read_dir(&journal).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), journal2.join(e.file_name())).unwrap();
    }
    let (code, v) = json_of(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--rw",
        "read",
        "--bs",
        "4k",
        "--journal",
        journal2.to_str().unwrap(),
        "--max-errors",
        max,
        "--no-progress",
    ]);
    assert_eq!(code, 1, "a run whose reads found bad blocks exits 1: {}", verify_of(&v));
    assert_eq!(u(&verify_of(&v)["checked_during"]), 6144);
    assert!(verify_of(&v)["first_errors"].as_array().unwrap().iter().all(|e| e["when"] == "during"));
    check_found(verify_of(&v), &injected, "lost_write");

    // The writer's own check: the old versions are lost writes.
    let (code, v) = json_of(&["verify", "--journal", journal.to_str().unwrap(), "--max-errors", max]);
    assert_eq!(code, 1);
    check_found(verify_of(&v), &injected, "lost_write");
    // Its map now marks those blocks bad: they are not reported again, the others still pass.
    let (code, v) = json_of(&["verify", "--journal", journal.to_str().unwrap()]);
    assert_eq!((code, total_errors(&v)), (0, 0), "{v}");
    assert_eq!(u(&verify_of(&v)["checked_after"]), 6144 - 5 * FAULTS as u64);
}

#[test]
fn max_errors_stops_the_check_and_the_summary_locates_errors() {
    let dir = disk_tempdir();
    let data = dir.path().join("data");
    let journal = dir.path().join("journal");
    write_pass(&data, "1M", &journal);
    let mut f = std::fs::read(&data).unwrap();
    for b in 0..20 {
        f[b * KB + 700] ^= 0x80;
    }
    std::fs::write(&data, &f).unwrap();
    let out = iolab()
        .args(["verify", "--journal", journal.to_str().unwrap(), "--max-errors", "5", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("5 BAD BLOCK(S) (stopped at --max-errors): 5 corrupted data (checksum)"), "{text}");
    assert!(text.contains("corrupted data (checksum) at offset 0 of "), "{text}");
    assert!(text.contains("(first bad sector at 512)") || text.contains("at offset 4096"), "{text}");
}

#[test]
fn clean_runs_report_nothing_on_every_engine_and_on_shared_files() {
    let dir = disk_tempdir();
    let mut engines = vec![("psync", "1"), ("mmap", "1")];
    if uring_ok() {
        engines.push(("io_uring", "16"));
    } else {
        skip("io_uring is not available here; psync and mmap only");
    }
    for (engine, qd) in engines {
        let f = dir.path().join(format!("f-{engine}"));
        // Two threads on one file, mixed sizes and reads: blocks are claimed while in flight.
        let (code, v) = json_of(&[
            "run",
            "--target",
            f.to_str().unwrap(),
            "--size",
            "4M",
            "--rw",
            "randrw",
            "--bs",
            "4k:3,16k:1",
            "--engine",
            engine,
            "--iodepth",
            qd,
            "--threads",
            "2",
            "--runtime",
            "1s",
            "--verify-before-rewrite",
            "--verify-after",
            "--no-progress",
        ]);
        let ver = verify_of(&v);
        assert_eq!((code, total_errors(&v)), (0, 0), "{engine}: {ver}");
        assert!(u(&ver["blocks_written"]) > 100, "{engine}: {ver}");
        assert!(u(&ver["checked_during"]) > 100, "{engine}: reads were checked: {ver}");
        assert!(u(&ver["checked_before_rewrite"]) > 0, "{engine}: {ver}");
        assert!(u(&ver["checked_after"]) > 0, "{engine}: {ver}");
        assert!(ver.get("journal").is_none());
    }
}

#[test]
fn verify_backlog_reads_back_the_writes_during_the_run() {
    let dir = disk_tempdir();
    let f = dir.path().join("f");
    // 256 writes of 4 KiB, each read back and checked 8 writes later, as reads of the job.
    let (code, v) = json_of(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "1M",
        "--rw",
        "randwrite",
        "--verify-backlog",
        "8",
        "--no-progress",
    ]);
    let ver = verify_of(&v);
    assert_eq!((code, total_errors(&v)), (0, 0), "{ver}");
    assert_eq!((u(&ver["blocks_written"]), u(&ver["checked_during"])), (256, 256), "{ver}");
    assert_eq!(
        u(&v["phases"][0]["total"]["read"]["ops"]),
        256,
        "the checks are the job's reads: {}",
        v["phases"][0]["total"]
    );
    assert_eq!(u(&ver["checked_after"]), 0, "{ver}");
}

#[test]
fn validation_refuses_what_it_cannot_check() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let out = iolab()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "1M", "--rw", "write", "--bs", "1000", "--verify"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // One clear error: said once (it was once printed twice, as its own cause).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("multiple of 512").count(), 1, "{err}");
    let out = iolab().args(["verify", "--journal", dir.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no map"), "{}", String::from_utf8_lossy(&out.stderr));
    // A hostile map: refused with the file named, nothing else touched.
    std::fs::write(dir.path().join("0000000000000001.map"), b"IOLABMAP garbage").unwrap();
    let out = iolab().args(["verify", "--journal", dir.path().to_str().unwrap(), "--no-store"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0000000000000001.map") && err.contains("cut short"), "{err}");
}

/// Kill a validated run with SIGKILL mid-run; `iolab verify` must rebuild the map from the
/// journal and find every block as the journal says (pending writes with either key); a run on
/// the unchecked journal is refused, and goes on after the check.
fn killed_run_recovers(sync: &str) {
    let dir = disk_tempdir();
    let data = dir.path().join("data");
    let journal = dir.path().join("journal");
    let args = |rt: &str| -> Vec<String> {
        [
            "run",
            "--target",
            data.to_str().unwrap(),
            "--size",
            "8M",
            "--rw",
            "randwrite",
            "--bs",
            "4k:3,8k:1",
            "--runtime",
            rt,
            "--journal",
            journal.to_str().unwrap(),
            "--journal-sync",
            sync,
            "--no-progress",
            "--no-store",
            "--output",
            "json",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut child = iolab_process()
        .args(args("60s"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the journal holds a good number of records, then SIGKILL.
    let jnl = || std::fs::read_dir(&journal).ok()?.flatten().find(|e| e.path().extension().is_some_and(|x| x == "jnl"));
    let start = std::time::Instant::now();
    while jnl().and_then(|e| e.metadata().ok()).map_or(0, |m| m.len()) < 48 + 16 * 400 {
        assert!(start.elapsed() < Duration::from_secs(50), "the run journals nothing");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // Going on without the check is refused, with what to do.
    let out = iolab().args(args("1s")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not end cleanly") && err.contains("iolab verify --journal"), "{err}");

    let (code, v) = json_of(&["verify", "--journal", journal.to_str().unwrap()]);
    let ver = verify_of(&v);
    assert_eq!((code, total_errors(&v)), (0, 0), "{sync}: the killed run's blocks are as its journal says: {ver}");
    assert!(u(&ver["checked_after"]) >= 100, "{ver}");
    // A block pending when killed: at most one per I/O in flight (one thread, QD1: one I/O of
    // at most two key blocks).
    assert!(u(&ver["pending"]) <= 2, "{ver}");

    // The map is up to date and the journal new: a run goes on from it, and finds nothing wrong.
    let out = iolab().args(args("1s")).args(["--verify-after"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(total_errors(&v), 0, "{}", verify_of(&v));
    assert!(u(&verify_of(&v)["checked_after"]) > 100);
    // The journal's writes are timed in their own class.
    assert!(u(&v["phases"][0]["total"]["classes"]["journal"]["ops"]) > 0);
}

#[test]
fn a_run_killed_with_sigkill_recovers_with_an_async_journal() {
    killed_run_recovers("async");
}

#[test]
fn a_run_killed_with_sigkill_recovers_with_a_sync_journal() {
    killed_run_recovers("sync");
}

/// A later phase's validated reads check what an earlier phase wrote (the map carried over
/// without a journal); the run is stored with its validation, and `iolab show` prints it.
#[test]
fn phases_carry_the_map_and_the_store_keeps_validation() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let jobs = dir.path().join("jobs.toml");
    std::fs::write(
        &jobs,
        format!(
            "[defaults]\ntarget = \"{}\"\nsize = \"2M\"\nverify = true\n\n[[phase]]\nname = \"w\"\n[[phase.job]]\nrw = \"write\"\n\n[[phase]]\nname = \"r\"\n[[phase.job]]\nrw = \"randread\"\n",
            f.display()
        ),
    )
    .unwrap();
    let out = iolab().args(["run", jobs.to_str().unwrap(), "--output", "json", "--no-progress"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&v["phases"][0]["verify"]["blocks_written"]), 512);
    let r = &v["phases"][1]["verify"];
    assert_eq!(u(&r["checked_during"]), 512, "every block the reads brought in was checked: {r}");
    let shown = iolab().args(["show", "last", "--output", "json"]).output().unwrap();
    let s: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(s[0]["result"]["phases"][1]["verify"], *r, "stored and read back");
    let text = iolab().args(["show", "last"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("verify: key blocks of 4.0 KiB, checked 512 by the workload's reads; no errors"), "{text}");
}

/// `--verify` on the application workloads: each validates its files (writes stamped, reads and
/// the files it leaves checked) and reports nothing on a clean run.
#[test]
fn application_workloads_validate_their_files_and_clean_runs_report_nothing() {
    let dir = disk_tempdir();
    let runs: [(&str, &[&str]); 5] = [
        ("postmark", &["--number", "300", "--transactions", "2000"]),
        ("varmail", &["--nfiles", "200", "--runtime", "1s"]),
        ("maildir", &["--readers", "1", "--runtime", "2s"]),
        ("redolog", &["--files", "2", "--size", "4M"]),
        ("bonnie", &["--bonnie-size", "16m", "--bonnie-ram", "8m", "--bonnie-files", "1"]),
    ];
    for (w, extra) in runs {
        let t = dir.path().join(w);
        std::fs::create_dir(&t).unwrap();
        let mut args = vec!["run", "--workload", w, "--target", t.to_str().unwrap(), "--verify", "--verify-after"];
        args.extend_from_slice(extra);
        let (code, v) = json_of(&args);
        let ver = verify_of(&v);
        assert_eq!((code, total_errors(&v)), (0, 0), "{w}: {ver}");
        assert!(u(&ver["blocks_written"]) > 0, "{w}: {ver}");
        assert!(u(&ver["checked_after"]) > 0, "{w}: {ver}");
        if w != "redolog" {
            assert!(u(&ver["checked_during"]) > 0, "{w}: its reads were checked: {ver}");
        }
        assert_eq!(u(&ver["key_block"]), 512, "{w}");
    }
    // What only a block file can have is refused with the way out.
    let t = dir.path().join("postmark");
    let out = iolab()
        .args(["run", "--workload", "postmark", "--target", t.to_str().unwrap(), "--journal", "/tmp/j"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a journal applies to the block workload") && err.contains("--verify-after"), "{err}");
}

/// Faults made in delivered messages while a validated maildir run goes on (a flipped byte, a
/// zeroed sector, a zeroed message, a message cut short: three of each) are each found by `--verify-after`, with
/// their class, file and sector, and nothing else is.
#[test]
fn faults_made_in_delivered_messages_are_found_with_their_class_file_and_sector() {
    let dir = disk_tempdir();
    let t = dir.path().join("mail");
    std::fs::create_dir(&t).unwrap();
    let child = iolab_process()
        .args(["run", "--workload", "maildir", "--target", t.to_str().unwrap(), "--runtime", "4s"])
        .args(["--min-size", "3k", "--max-size", "8k", "--mailboxes", "4", "--verify", "--verify-after"])
        .args(["--output", "json", "--no-store", "--no-progress"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Messages renamed into new/ are final: no reader takes them.
    let delivered = || {
        let mut v: Vec<std::path::PathBuf> = walk(&t)
            .into_iter()
            .filter(|p| p.parent().and_then(|d| d.file_name()).is_some_and(|n| n == "new"))
            .collect();
        v.sort();
        v
    };
    let start = std::time::Instant::now();
    let mut victims = delivered();
    while victims.len() < 12 && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
        victims = delivered();
    }
    assert!(victims.len() >= 12, "12 messages delivered within 3 s: {}", victims.len());
    let mut expected: BTreeMap<String, (&str, u64)> = BTreeMap::new();
    for (i, p) in victims.iter().take(12).enumerate() {
        let mut b = std::fs::read(p).unwrap();
        let class = match i % 4 {
            0 => {
                b[700] ^= 0x20;
                ("corrupted", 512)
            }
            // A message is one write: one sector of it zeroed is a torn write, all of it
            // zeroed is data never written.
            1 => {
                b[1024..1536].fill(0);
                ("torn", 1024)
            }
            2 => {
                b.fill(0);
                ("never_written", 0)
            }
            _ => {
                b.truncate(1000);
                ("lost_write", 512)
            }
        };
        std::fs::write(p, &b).unwrap();
        expected.insert(p.display().to_string(), class);
    }
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(1), "errors found: exit status 1");
    let ver = verify_of(&v);
    assert_eq!(total_errors(&v), 12, "{ver}");
    for c in ["corrupted", "torn", "never_written", "lost_write"] {
        assert_eq!(u(&ver["errors"][c]), 3, "{c}: {ver}");
    }
    for e in ver["first_errors"].as_array().unwrap() {
        let file = e["file"].as_str().unwrap();
        let (class, sector) = expected.get(file).unwrap_or_else(|| panic!("an error where no fault was made: {e}"));
        assert_eq!((e["class"].as_str().unwrap(), u(&e["sector_offset"])), (*class, *sector), "{e}");
        assert_eq!(e["when"], "after");
    }
}

fn walk(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
