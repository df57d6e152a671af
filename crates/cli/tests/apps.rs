//! Application workloads as whole commands, on real files in temp dirs: PostMark against the
//! real `postmark` (Debian's package), its figures against docs/json.md, its configuration
//! errors, and that a personality never touches a file it did not create.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const PM_CFG: &str = "set size 500 20000\nset number 300\nset transactions 800\nset read 4096\nset write 4096\nset bias read 6\nset bias create 5\nset subdirectories 3\nset seed 11\nrun\nquit\n";

/// The real PostMark's counts from its verbose report: created, read, appended, deleted,
/// deletions mixed with transactions.
fn real_postmark(dir: &Path, cfg: &Path) -> Option<[u64; 5]> {
    // Not installed: None (the test says it skipped). Installed: its report must parse.
    let out = std::process::Command::new("postmark").arg(cfg).current_dir(dir).output().ok()?;
    Some(
        parse_postmark(&String::from_utf8_lossy(&out.stdout))
            .unwrap_or_else(|| panic!("postmark's report did not parse: {}", String::from_utf8_lossy(&out.stdout))),
    )
}

fn parse_postmark(text: &str) -> Option<[u64; 5]> {
    let num = |line: &str| line.trim().split(' ').next().and_then(|w| w.parse::<u64>().ok());
    let lines: Vec<&str> = text.lines().collect();
    let find = |word: &str| lines.iter().find(|l| l.contains(word) && l.contains("per second")).and_then(|l| num(l));
    let mixed: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains("Mixed with transactions"))
        .filter_map(|l| l.split(':').nth(1).and_then(num))
        .collect();
    Some([find(" created ")?, find(" read (")?, find(" appended ")?, find(" deleted ")?, *mixed.get(1)?])
}

#[test]
fn postmark_does_what_the_real_postmark_does_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("pm.cfg");
    std::fs::write(&cfg, PM_CFG).unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    // A user's files with PostMark's own names: they must come out as they went in.
    for name in ["1", "2", "s0"] {
        std::fs::write(target.join(name), format!("user's {name}")).unwrap();
    }
    let v = run_json(&[
        "run",
        "--workload",
        "postmark",
        "--config",
        cfg.to_str().unwrap(),
        "--target",
        target.to_str().unwrap(),
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    for name in ["1", "2", "s0"] {
        assert_eq!(std::fs::read_to_string(target.join(name)).unwrap(), format!("user's {name}"));
    }
    let left: BTreeSet<String> =
        std::fs::read_dir(&target).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["1", "2", "s0"].iter().map(|s| s.to_string()).collect(), "PostMark removes all it made");
    assert_eq!(f("transactions"), 800.0);
    assert_eq!(f("created"), f("deleted"));
    assert_eq!(f("created_alone"), 300.0);
    assert_eq!(f("created"), f("created_alone") + f("created_mixed"));
    assert_eq!(f("deleted"), f("deleted_alone") + f("deleted_mixed"));
    let total = &v["phases"][0]["total"];
    assert_eq!(total["read"]["bytes"].as_f64().unwrap(), f("bytes_read"));
    assert_eq!(total["write"]["bytes"].as_f64().unwrap(), f("bytes_written"));
    assert_eq!(total["classes"]["create"]["ops"].as_f64().unwrap(), f("created"));
    assert_eq!(total["classes"]["unlink"]["ops"].as_f64().unwrap(), f("deleted"));
    assert!(f("transactions_per_s") > 0.0 && f("elapsed_s") >= f("transactions_s"));

    // Every figure is documented, and every documented PostMark figure is there.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("PostMark"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");

    // The real PostMark in its own directory, same settings: the same counts and bytes.
    let real_dir = dir.path().join("real");
    std::fs::create_dir(&real_dir).unwrap();
    match real_postmark(&real_dir, &cfg) {
        None => skip("postmark is not installed (apt-get install postmark)"),
        Some(real) => {
            let ours = ["created", "read", "appended", "deleted", "deleted_mixed"].map(|k| f(k) as u64);
            assert_eq!(ours, real, "created, read, appended, deleted, deleted mixed: iolab against postmark");
        }
    }
}

#[test]
fn postmark_job_files_carry_the_configuration_not_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("pm.cfg");
    std::fs::write(&cfg, "set number 20\nset transactions 50\nset size 100 2000\n").unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            "[[phase]]\nname = \"small files\"\n[[phase.job]]\nworkload = \"postmark\"\nconfig = \"{}\"\ntarget = \"{}\"\nthreads = 2\npostmark_fsync = true\n",
            cfg.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let v = run_json(&["run", job.to_str().unwrap()]);
    let plan_job = &v["plan"]["phases"][0]["jobs"][0];
    assert_eq!(plan_job["workload"], "postmark");
    assert_eq!((plan_job["number"].as_u64(), plan_job["size_high"].as_u64()), (Some(20), Some(2000)), "{plan_job}");
    let w = &v["phases"][0]["workload"];
    // Two threads, each its own pool and transactions.
    assert_eq!((w["transactions"].as_f64(), w["created_alone"].as_f64()), (Some(100.0), Some(40.0)), "{w}");
    let syncs = v["phases"][0]["total"]["sync"]["ops"].as_f64().unwrap();
    assert_eq!(syncs, w["created"].as_f64().unwrap() + w["appended"].as_f64().unwrap(), "an fsync per file written");
}

#[test]
fn postmark_refuses_bad_configurations_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |text: &str, expect: &str| {
        let cfg = dir.path().join("bad.cfg");
        std::fs::write(&cfg, text).unwrap();
        let out = iolab()
            .args(["run", "--workload", "postmark", "--config", cfg.to_str().unwrap(), "--target"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(expect), "{text:?}: {err}");
    };
    bad("set number 10\nset nuber 5\n", "line 2: unknown command `set nuber 5`");
    bad("set transactions ten\n", "line 1: `ten` is not");
    bad("set bias create 12\n", "line 1: `set bias create` needs 0 to 10");
    // A pool that runs dry: the job fails, says why, and still removes its files.
    let cfg = dir.path().join("dry.cfg");
    std::fs::write(&cfg, "set number 20\nset transactions 500\nset bias create 0\n").unwrap();
    let out = iolab()
        .args(["run", "--workload", "postmark", "--config", cfg.to_str().unwrap(), "--target"])
        .arg(dir.path())
        .args(["--output", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    assert!(v["error"].as_str().unwrap().contains("out of files after"), "{v}");
    assert!(!dir.path().join("iolab.job1.0").exists(), "the pool's files and directory are removed");
}

#[test]
fn maildir_delivers_counts_after_the_discard_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iolab.mail"), "user's").unwrap();
    std::fs::create_dir(dir.path().join("box0")).unwrap();
    std::fs::write(dir.path().join("box0/1.T0.iolab,S=5"), "user's").unwrap();
    let v = run_json(&[
        "run",
        "--workload",
        "maildir",
        "--name",
        "mail",
        "--target",
        dir.path().to_str().unwrap(),
        "--runtime",
        "2s",
        "--threads",
        "2",
        "--mailboxes",
        "5",
        "--max-size",
        "8k",
        "--min-size",
        "1k",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    let classes = &v["phases"][0]["total"]["classes"];
    let ops = |c: &str| classes[c]["ops"].as_f64().unwrap_or(0.0);
    assert!(f("messages") > 0.0);
    // Each message: create, fsync, rename, fsync of new/; all of them removed at the end.
    assert_eq!(
        (ops("create"), ops("rename"), ops("dirsync"), ops("unlink")),
        (f("messages"), f("messages"), f("messages"), f("messages"))
    );
    assert_eq!(f("discard_s"), 0.5, "a 2 s run drops its first quarter, not a minute");
    assert!(f("messages_after_discard") < f("messages"));
    let per_min = f("messages_after_discard") / f("measured_s") * 60.0;
    assert!((f("messages_per_min") - per_min).abs() < 1e-6);
    let b = f("bytes_delivered") / f("messages");
    assert!((1024.0..=8192.0).contains(&b), "mean size {b}");
    assert_eq!(std::fs::read_to_string(dir.path().join("iolab.mail")).unwrap(), "user's");
    assert_eq!(std::fs::read_to_string(dir.path().join("box0/1.T0.iolab,S=5")).unwrap(), "user's");
    let left: BTreeSet<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["box0", "iolab.mail"].iter().map(|s| s.to_string()).collect());

    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("maildir:"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");
}

/// A delivery killed with SIGKILL at any instant: every message in new/ is whole (its size
/// is in its name, maildir's S=), and tmp/ holds at most the one message each thread was
/// writing, which was never counted (a message counts once it is in new/).
#[test]
fn maildir_killed_leaves_only_whole_messages_in_new() {
    for signal in ["KILL", "INT"] {
        killed_with(signal);
    }
}

fn killed_with(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let child = iolab_process()
        .args([
            "run",
            "--workload",
            "maildir",
            "--name",
            "kill",
            "--runtime",
            "30s",
            "--threads",
            "2",
            "--mailboxes",
            "3",
        ])
        .args(["--max-size", "200k", "--dir-fsync=false", "--no-store", "--output", "json", "--target"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SIGKILL: no handler, no cleanup. SIGINT (Ctrl-C): iolab stops and prints what it counted.
    let ok = std::process::Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    let counted = match signal {
        "INT" => {
            let v: Value = serde_json::from_slice(&out.stdout).expect("Ctrl-C prints the results so far");
            assert_eq!(v["status"], "interrupted");
            Some(v["phases"][0]["workload"]["messages"].as_f64().unwrap() as usize)
        }
        _ => None,
    };
    let (mut whole, mut in_tmp) = (0, Vec::new());
    for t in 0..2 {
        for b in 0..3 {
            let bx = dir.path().join(format!("iolab.kill.{t}/box{b}"));
            for e in std::fs::read_dir(bx.join("new")).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                let size: u64 = name.rsplit("S=").next().unwrap().parse().unwrap();
                assert_eq!(e.metadata().unwrap().len(), size, "{name} is whole");
                whole += 1;
            }
            for e in std::fs::read_dir(bx.join("tmp")).unwrap() {
                in_tmp.push((t, e.unwrap().file_name()));
            }
        }
        assert!(in_tmp.iter().filter(|(tt, _)| *tt == t).count() <= 1, "thread {t}: {in_tmp:?}");
    }
    assert!(whole > 0, "it delivered before it was killed ({signal})");
    if let Some(c) = counted {
        // Every message counted is whole in new/ (none was removed: a stopped run leaves them).
        assert!(c > 0 && c <= whole, "{signal}: {c} counted, {whole} whole in new/");
    }
}

#[test]
fn redolog_writes_both_ways_removes_its_files_and_leaves_the_users_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("redo.0"), "user's").unwrap();
    let v = run_json(&[
        "run",
        "--workload",
        "redolog",
        "--name",
        "redo",
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "4M",
        "--files",
        "3",
        "--threads",
        "2",
        "--bs",
        "32k",
        "--stride",
        "1M",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    // Per file: the last block and one per MiB (5 blocks of 32 KiB, 5 fsyncs); then 4 MiB and one fsync.
    assert_eq!((f("files"), f("sparse_bytes"), f("sparse_fsyncs")), (3.0, 3.0 * 5.0 * 32768.0, 15.0));
    assert_eq!((f("full_bytes"), f("full_fsyncs")), (3.0 * 4194304.0, 3.0));
    assert!(f("sparse_s") > 0.0 && f("full_s") > 0.0 && f("sparse_expected_s") > 0.0);
    let classes = &v["phases"][0]["total"]["classes"];
    assert_eq!(classes["sync"]["ops"].as_f64(), Some(18.0));
    assert_eq!(classes["unlink"]["ops"].as_f64(), Some(6.0));
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["redo.0".to_string()]);
    assert_eq!(std::fs::read_to_string(dir.path().join("redo.0")).unwrap(), "user's");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("redolog"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");
}

#[test]
fn varmail_runs_filebench_s_flow_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f0"), "user's").unwrap();
    let v = run_json(&[
        "run",
        "--workload",
        "varmail",
        "--name",
        "vm",
        "--target",
        dir.path().to_str().unwrap(),
        "--runtime",
        "1s",
        "--threads",
        "2",
        "--nfiles",
        "50",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    assert!(f("loops") > 0.0 && f("flowops") >= 13.0 * f("loops"));
    let c = &v["phases"][0]["total"]["classes"];
    let ops = |k: &str| c[k]["ops"].as_f64().unwrap_or(0.0);
    // Per loop: a create, two opens, two fsyncs, two appends and three closes.
    assert!(ops("create") >= f("loops") && ops("open") >= 2.0 * f("loops") && ops("sync") >= 2.0 * f("loops"));
    assert_eq!(ops("write"), ops("sync"), "each append is followed by its fsync");
    assert_eq!(ops("close"), ops("create") + ops("open"));
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["f0".to_string()]);
    assert_eq!(std::fs::read_to_string(dir.path().join("f0")).unwrap(), "user's");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("varmail"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");
}

#[test]
fn maildir_readers_take_what_is_delivered_and_the_end_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine"), "user's").unwrap();
    let v = run_json(&[
        "run",
        "--workload",
        "maildir",
        "--name",
        "pop",
        "--target",
        dir.path().to_str().unwrap(),
        "--runtime",
        "1.5s",
        "--threads",
        "2",
        "--readers",
        "1",
        "--mailboxes",
        "4",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    assert!(f("messages_read") > 0.0 && f("messages_read") <= f("messages"), "{w}");
    assert!(f("bytes_read") <= f("bytes_delivered"));
    let c = &v["phases"][0]["total"]["classes"];
    assert!(c["readdir"]["ops"].as_f64().unwrap() > 0.0);
    // Deliveries rename tmp/ to new/, readers new/ to cur/.
    assert_eq!(c["rename"]["ops"].as_f64().unwrap(), f("messages") + f("messages_read"));
    assert_eq!(v["plan"]["phases"][0]["jobs"][0]["threads"], 3, "two deliverers and a reader");
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["mine".to_string()]);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("maildir:") || l.contains("maildir with `--readers`"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");
}

#[test]
fn bonnie_runs_bonnie_s_tests_prints_its_csv_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Bonnie.data"), "user's").unwrap();
    let args = [
        "run",
        "--workload",
        "bonnie",
        "--name",
        "bn",
        "--target",
        dir.path().to_str().unwrap(),
        "--bonnie-size",
        "1M",
        "--bonnie-files",
        "1",
    ];
    let v = run_json(&args);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let f = |k: &str| w[k].as_f64().unwrap_or_else(|| panic!("no {k} in {w}"));
    for k in ["putc", "put_block", "rewrite", "getc", "get_block", "seeks", "seq_create", "ran_del"] {
        assert!(f(k) > 0.0, "{k} in {w}");
    }
    let t = &v["phases"][0]["total"];
    let c = &t["classes"];
    let ops = |k: &str| c[k]["ops"].as_f64().unwrap_or(0.0);
    // 1 MiB of 1-byte writes (the per-character tests stop at 3 MiB; this file is smaller),
    // 128 chunks of 8 KiB twice (block write, rewrite), then the seekers' write-backs (one in
    // ten); reads: 1 MiB a byte at a time, the file twice (rewrite, block read) and 8192
    // seeks' chunks.
    let (w_ops, r_ops) = (t["write"]["ops"].as_f64().unwrap(), t["read"]["ops"].as_f64().unwrap());
    let back = w_ops - ((1 << 20) as f64 + 256.0);
    assert!(back > 500.0 && back < 1200.0, "{back} of 8192 seeks written back");
    assert_eq!(r_ops, (1 << 20) as f64 + 256.0 + 8192.0);
    assert_eq!(ops("create"), 2.0 + 2048.0, "the data file twice, 1024 files twice");
    assert_eq!(ops("stat"), 2048.0);
    assert_eq!(ops("unlink"), 2.0 + 2048.0);
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["Bonnie.data".to_string()]);
    assert_eq!(std::fs::read_to_string(dir.path().join("Bonnie.data")).unwrap(), "user's");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("bonnie:"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");

    // --csv: bonnie++'s line, which its own bon_csv2txt and bon_csv2html read.
    let out = iolab().args(&args[..]).arg("--csv").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    let cols: Vec<&str> = line.trim_end().split(',').collect();
    assert_eq!(cols.len(), 50, "{line}: bonnie++ 2.0 prints 50 columns");
    assert_eq!(&cols[..3], &["1.98", "2.00a", "bn"]);
    assert_eq!((cols[5], cols[7], cols[8], cols[21]), ("1M", "8192", "5", "1"));
    assert!(cols[9].parse::<u64>().unwrap() > 0 && cols[11].parse::<u64>().unwrap() > 0, "{line}");
    let pipe = |tool: &str| -> Option<String> {
        use std::io::Write;
        let mut child = std::process::Command::new(tool)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        child.stdin.take().unwrap().write_all(line.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{tool} refused {line}");
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match (pipe("bon_csv2txt"), pipe("bon_csv2html")) {
        (Some(txt), Some(html)) => {
            let row = txt.lines().find(|l| l.starts_with("bn ")).unwrap_or_else(|| panic!("no row for bn in {txt}"));
            assert!(row.contains("1M::8192:5"), "{row}");
            assert!(html.contains("<table") && html.contains(">bn<"), "{html}");
        }
        _ => skip("bonnie++ is not installed (apt-get install bonnie++): its bon_csv2txt and bon_csv2html"),
    }
}
