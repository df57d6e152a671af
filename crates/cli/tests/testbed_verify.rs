//! `--verify-on other` on the multi-node testbed: two network-namespace nodes reached over real
//! ssh, each mounting the same sshfs export at its own path (so file ids must not hang on the
//! mount path). With sshfs caching on (`kernel_cache`, 60 s attribute and entry caches: the
//! testbed's `--sshfs-cache yes`) a node keeps the pages it read in round 1 of the file the
//! other node rewrites in round 2, and reads them again: stale reads, every one located. With
//! caching off (`direct_io`, no attribute or entry cache: `--sshfs-cache no`) every read goes
//! to the server and nothing is found. Testbed ids 4 and 7 are this file's.

mod common;

use common::testbed::{Fs, Testbed};
use common::*;
use serde_json::Value;

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

/// Run 3 rounds of `--verify-on other` over ssh on the testbed's sshfs mounts; the JSON and the
/// exit status.
fn rounds_on(tb: &Testbed) -> (Value, Option<i32>) {
    let nodes: Vec<String> =
        tb.nodes().iter().map(|n| format!("{n}=ssh://{n},dir={}", tb.sshfs_mount(n).display())).collect();
    let db = tempfile::tempdir().unwrap();
    let dbp = db.path().join("r.db");
    let out = iolab_process()
        .args(["run", "--node", &nodes[0], "--node", &nodes[1], "--target", "v", "--rw", "write"])
        .args(["--size", "4M", "--verify-on", "other", "--verify-rounds", "3", "--max-errors", "0"])
        .args(["--sample-interval", "0", "--output", "json", "--db", dbp.to_str().unwrap()])
        .env("IOLAB_SSH_CONFIG", tb.ssh_config())
        .env("IOLAB_REMOTE_BIN", bin())
        .output()
        .expect("iolab runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    assert_eq!(v["status"], "complete", "{stderr}");
    (v, out.status.code())
}

/// Per read step: (step, node, stale reads, all errors, blocks checked).
fn reads(v: &Value) -> Vec<(String, String, u64, u64, u64)> {
    let mut out = Vec::new();
    for p in v["phases"].as_array().unwrap() {
        let step = p["name"].as_str().unwrap().to_string();
        if !step.starts_with("read") {
            continue;
        }
        for n in p["nodes"].as_array().unwrap() {
            let e = &n["verify"]["errors"];
            let all: u64 = e.as_object().unwrap().values().map(u).sum();
            out.push((
                step.clone(),
                n["name"].as_str().unwrap().to_string(),
                u(&e["stale_read"]),
                all,
                u(&n["verify"]["checked_during"]),
            ));
        }
    }
    out
}

#[test]
fn sshfs_with_caching_on_serves_stale_reads_and_with_caching_off_none() {
    // Caching on.
    let tb = match Testbed::up_with(4, 2, Fs::Sshfs, "none", &["--sshfs-cache", "yes"]) {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let (v, code) = rounds_on(&tb);
    let on = reads(&v);
    println!("sshfs cache=yes: {on:?}");
    // Every read checked the other node's whole file: 4 MiB of 4 KiB blocks.
    assert!(on.iter().all(|r| r.4 == 1024), "{on:?}");
    // Round 1: nothing was cached yet, so nothing stale.
    assert!(on.iter().filter(|r| r.0 == "read 1").all(|r| r.3 == 0), "{on:?}");
    // Later rounds: the pages kept from the round before are served again.
    let stale: u64 = on.iter().map(|r| r.2).sum();
    assert!(stale > 0, "no stale read with sshfs caching on: {on:?}");
    assert_eq!(code, Some(1), "errors found: exit status 1");
    // Each is located: the other node's file, an offset, round N's key expected and an older
    // one found, written by the other node.
    let p = v["phases"].as_array().unwrap().iter().find(|p| u(&p["verify"]["errors"]["stale_read"]) > 0).unwrap();
    let e = &p["verify"]["first_errors"][0];
    println!("first stale read: {e:#}");
    assert_eq!(e["class"], "stale_read");
    let file = e["file"].as_str().unwrap();
    assert!(file.ends_with("/v.n1") || file.ends_with("/v.n2"), "{file}");
    assert!(u(&e["found_key"]) < u(&e["expected_key"]), "{e}");
    let writer = e["writer"].as_str().unwrap();
    assert!(file.ends_with(&format!("/v.{}", writer.split('/').next().unwrap())), "{file} written by {writer}");
    drop(tb);

    // Caching off: the same rounds find nothing.
    let tb = match Testbed::up_with(7, 2, Fs::Sshfs, "none", &["--sshfs-cache", "no"]) {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let (v, code) = rounds_on(&tb);
    let off = reads(&v);
    println!("sshfs cache=no: {off:?}");
    assert!(off.iter().all(|r| r.4 == 1024), "{off:?}");
    assert!(off.iter().all(|r| r.3 == 0), "errors with sshfs caching off: {off:?}");
    assert_eq!(code, Some(0));
}
