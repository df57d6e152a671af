//! Validation across nodes (`--verify-on other`) with real agent processes on this machine
//! (`exec://` nodes over one directory, which here is coherent): a clean run finds nothing and
//! every block each node wrote is checked by the other; older blocks put back between a
//! writer's sync and the other node's read (surgery on the file, through the rounds' hook)
//! are stale reads, each at its offset, with the keys expected and found and the writer; a
//! flipped bit is corruption. The sshfs testbed's cache shows the same for real
//! (testbed_verify.rs).
#![allow(clippy::disallowed_macros)] // a test prints its skips with eprintln!, not user text

mod common;

use common::*;
use iolab_cluster::rounds::{Rounds, StepKind};
use iolab_cluster::{Cluster, NodeSpec, Options};
use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw, VerifyOn};
use iolab_workload::model::{ErrorClass, Status};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const KB: u64 = 4096;

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

fn node(name: &str, dir: &Path) -> String {
    format!("{name}=exec://{},dir={}", bin(), dir.display())
}

#[test]
fn two_nodes_check_each_others_files_and_find_nothing_on_a_coherent_directory() {
    let d = tempfile::tempdir().unwrap();
    let share = d.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let args = [
        "run",
        "--node",
        &node("a", &share),
        "--node",
        &node("b", &share),
        "--target",
        "f",
        "--rw",
        "randwrite",
        "--size",
        "2M",
        "--threads",
        "2",
        "--verify-on",
        "other",
        "--verify-rounds",
        "3",
        "--sample-interval",
        "0",
    ];
    let r = run_json(&args);
    assert_eq!(r["status"], "complete", "{r}");
    let names: Vec<&str> = r["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write 1", "read 1", "write 2", "read 2", "write 3", "read 3"]);
    for p in r["phases"].as_array().unwrap() {
        let v = &p["verify"];
        let errors: u64 = v["errors"].as_object().unwrap().values().map(u).sum();
        assert_eq!(errors, 0, "{}: {v}", p["name"]);
        let read = p["name"].as_str().unwrap().starts_with("read");
        for n in p["nodes"].as_array().unwrap() {
            let nv = &n["verify"];
            if read {
                // Each node read the other's whole file: 2 MiB of 4 KiB key blocks, every one
                // written (sequential reads of a file the random writer covered in part: the
                // blocks never written are not counted).
                assert!(u(&nv["checked_during"]) > 0, "{}: node {} checked nothing", p["name"], n["name"]);
                assert_eq!(u(&nv["blocks_written"]), 0);
            } else {
                assert!(u(&nv["blocks_written"]) > 0, "{}: node {} wrote nothing", p["name"], n["name"]);
            }
        }
        let per_node: u64 = p["nodes"].as_array().unwrap().iter().map(|n| u(&n["verify"]["checked_during"])).sum();
        assert_eq!(u(&v["checked_during"]), per_node, "the aggregate is the nodes' sum");
    }
    for f in ["f.a", "f.b"] {
        assert_eq!(std::fs::metadata(share.join(f)).unwrap().len(), 2 << 20, "{f}");
    }
    // Every field of a node's share is documented in docs/json.md, its verify too.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let rows: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|x| x.0)).collect();
    assert!(rows.contains(&"phases[].nodes[].verify"));
    let shares = &r["phases"][1]["nodes"];
    for (k, _) in shares[0].as_object().unwrap() {
        assert!(
            rows.iter().any(|r| r.starts_with(&format!("phases[].nodes[].{k}"))),
            "phases[].nodes[].{k} undocumented"
        );
    }
    for (k, _) in shares[0]["verify"].as_object().unwrap() {
        assert!(rows.contains(&format!("phases[].verify.{k}").as_str()), "phases[].verify.{k} undocumented");
    }
    assert!(shares[0]["verify"]["checked_during"].is_u64());
    // A sequential writer covers every block: each read checks all 512 of the other's.
    let r = run_json(&[
        "run",
        "--node",
        &node("a", &share),
        "--node",
        &node("b", &share),
        "--target",
        "g",
        "--rw",
        "write",
        "--size",
        "2M",
        "--verify-on",
        "other",
        "--verify-rounds",
        "2",
        "--sample-interval",
        "0",
    ]);
    for p in [&r["phases"][1], &r["phases"][3]] {
        for n in p["nodes"].as_array().unwrap() {
            assert_eq!(u(&n["verify"]["checked_during"]), 512, "{}: {}", p["name"], n["name"]);
        }
    }
    // Refused without two nodes, and with a target outside the shared directory.
    let out = iolab()
        .args(["run", "--target", "/tmp/x", "--rw", "write", "--size", "1M", "--verify-on", "other"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("two nodes or more"));
    let out = iolab()
        .args(["run", "--node", &node("a", &share), "--node", &node("b", &share), "--target"])
        .args([share.join("abs").to_str().unwrap(), "--rw", "write", "--size", "1M", "--verify-on", "other"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be relative"));
    let out = iolab()
        .args(["scenario", "locking", "--node", &node("a", &share), "--node", &node("b", &share)])
        .args(["--size", "1M", "--verify-on", "other"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("iolab run --node"));
}

#[test]
fn older_blocks_put_back_between_the_writers_sync_and_the_other_nodes_read_are_stale_reads() {
    let d = tempfile::tempdir().unwrap();
    let share = d.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let specs: Vec<NodeSpec> = ["a", "b"].iter().map(|n| NodeSpec::parse(&node(n, &share)).unwrap()).collect();
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let job = JobPatch {
        target: Some("f".into()),
        rw: Some(Rw::Write),
        size: Some(Bytes::mib(1)),
        verify_on: Some(VerifyOn::Other),
        verify_rounds: Some(3),
        ..Default::default()
    }
    .resolve("w")
    .unwrap();
    let plan = Plan { phases: vec![Phase { name: "w".into(), jobs: vec![job] }] };
    let rounds = Rounds::new(&plan, &names).unwrap();
    let mut cluster = Cluster::connect(&specs, Options::default(), &mut |w| eprintln!("{w}")).unwrap();

    // What b wrote in round 1, kept; after b wrote and synced round 2 (before a reads it),
    // blocks 3..8 of round 1 are put back: what a cache that missed round 2 would serve.
    // After round 3's writes a bit of a's file flips: b reads it corrupted.
    let fb = share.join("f.b");
    let fa = share.join("f.a");
    let mut round1 = Vec::new();
    let mut hook = |s: &iolab_cluster::rounds::Step, done: bool| {
        if !done || s.kind != StepKind::Write {
            return;
        }
        match s.round {
            1 => round1 = std::fs::read(&fb).unwrap(),
            2 => {
                let f = std::fs::OpenOptions::new().write(true).open(&fb).unwrap();
                let (from, to) = (3 * KB as usize, 8 * KB as usize);
                f.write_all_at(&round1[from..to], from as u64).unwrap();
                f.sync_all().unwrap();
            }
            3 => {
                let f = std::fs::OpenOptions::new().read(true).write(true).open(&fa).unwrap();
                let mut b = [0u8; 1];
                let at = 100 * KB + 1000;
                f.read_exact_at(&mut b, at).unwrap();
                b[0] ^= 0x20;
                f.write_all_at(&b, at).unwrap();
            }
            _ => {}
        }
    };
    let r = rounds.run(&mut cluster, Arc::new(AtomicBool::new(false)), &mut iolab_workload::NoSink, &mut hook);
    assert_eq!(r.status, Status::Complete, "{:?}", r.error);
    assert_eq!(r.phases.len(), 6);
    let verify = |i: usize| r.phases[i].verify.clone().unwrap();
    // Round 1 and the writes are clean; so is b's read of round 2 (a's file was left alone).
    for i in [0, 1, 2, 4] {
        assert_eq!(verify(i).errors.total(), 0, "{}: {:?}", r.phases[i].name, verify(i).first_errors);
    }
    let node_verify =
        |i: usize, n: &str| r.phases[i].nodes.iter().find(|x| x.name == n).unwrap().verify.clone().unwrap();
    assert_eq!(node_verify(3, "b").errors.total(), 0);

    // Read 2: a found exactly the 5 blocks put back, stale, each where it was.
    let v = node_verify(3, "a");
    assert_eq!(v.errors.stale_read, 5, "{:?}", v.first_errors);
    assert_eq!(v.errors.total(), 5);
    assert_eq!(v.checked_during, 256);
    let offsets: Vec<u64> = v.first_errors.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, (3..8).map(|b| b * KB).collect::<Vec<_>>());
    for e in &v.first_errors {
        assert_eq!(e.class, ErrorClass::StaleRead);
        assert!(e.file.ends_with("/f.b"), "{}", e.file);
        assert_eq!((e.expected_key, e.found_key), (2, Some(1)), "round 2's key expected, round 1's found");
        assert_eq!(e.writer.as_deref(), Some("b/0"));
        assert!(e.found_time_unix_ns.is_some());
    }
    assert_eq!(verify(3).errors.stale_read, 5, "the aggregate holds the node's findings");

    // Read 3: round 3 rewrote b's blocks (clean again for a); b found the flipped bit.
    assert_eq!(node_verify(5, "a").errors.total(), 0, "{:?}", node_verify(5, "a").first_errors);
    let v = node_verify(5, "b");
    assert_eq!(v.errors.corrupted, 1, "{:?}", v.first_errors);
    assert_eq!(v.errors.total(), 1);
    let e = &v.first_errors[0];
    assert_eq!((e.offset, e.sector_offset), (100 * KB, 100 * KB + 512));
    assert!(e.file.ends_with("/f.a"));
    assert_eq!(e.expected_key, 3);
}
