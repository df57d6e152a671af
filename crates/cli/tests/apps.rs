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
    bad("set location /a x\n", "line 1: `x` is not a weight");
    // A pool that runs dry: the job fails, says why naming the lines, and still removes its files.
    let cfg = dir.path().join("dry.cfg");
    std::fs::write(&cfg, "set subdirectories 0\nset number 20\nset transactions 500\nset bias create 0\n").unwrap();
    let out = iolab()
        .args(["run", "--workload", "postmark", "--config", cfg.to_str().unwrap(), "--target"])
        .arg(dir.path())
        .args(["--output", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("out of files after"), "{v}");
    for line in ["line 2: `set number 20`", "line 3: `set transactions 500`", "line 4: `set bias create 0`"] {
        assert!(err.contains(&format!("{} {line}", cfg.display())), "{line} in: {err}");
    }
    assert!(!dir.path().join("iolab.job1.0").exists(), "the pool's files and directory are removed");
    // The same settings as flags: the error names the flags.
    let out = iolab()
        .args(["run", "--workload", "postmark", "--number", "20", "--transactions", "500", "--bias-create", "0"])
        .arg("--target")
        .arg(dir.path())
        .args(["--output", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let err = v["error"].as_str().unwrap();
    assert!(
        err.contains("--number 20") && err.contains("--transactions 500") && err.contains("--bias-create 0"),
        "{err}"
    );
}

/// PostMark's `set location`s, drawn by weight as PostMark draws them: the same counts and
/// bytes as the real PostMark with the same locations; and the flags that stand for the
/// configuration's other lines.
#[test]
fn postmark_locations_and_flags_do_what_the_configuration_does() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("loc.cfg");
    std::fs::write(
        &cfg,
        "set location la 3\nset location +lb\nset location +lc 2\nset subdirectories 2\nset number 60\nset transactions 300\nset size 100 3000\nset seed 5\nrun\nquit\n",
    )
    .unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
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
    let ours = ["created", "read", "appended", "deleted", "deleted_mixed"].map(|k| w[k].as_f64().unwrap() as u64);
    // Three locations, each with two subdirectories, made and removed.
    assert_eq!(v["phases"][0]["total"]["classes"]["mkdir"]["ops"].as_u64(), Some(1 + 3 + 3 * 2));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    let real_dir = dir.path().join("real");
    for l in ["la", "lb", "lc"] {
        std::fs::create_dir_all(real_dir.join(l)).unwrap();
    }
    match real_postmark(&real_dir, &cfg) {
        None => skip("postmark is not installed (apt-get install postmark)"),
        Some(real) => assert_eq!(ours, real, "iolab against postmark with three weighted locations"),
    }
    // --pm-size, --pm-read, --pm-write, --pm-buffering stand for `set size`, `set read`,
    // `set write`, `set buffering`: the same run from flags does the same.
    let flags = run_json(&[
        "run",
        "--workload",
        "postmark",
        "--pm-size",
        "100",
        "3000",
        "--number",
        "60",
        "--transactions",
        "300",
        "--seed",
        "5",
        "--pm-read",
        "1024",
        "--pm-write",
        "2048",
        "--pm-buffering=false",
        "--target",
        target.to_str().unwrap(),
    ]);
    let job = &flags["plan"]["phases"][0]["jobs"][0];
    assert_eq!(
        (job["size_low"].as_u64(), job["size_high"].as_u64(), job["read"].as_u64(), job["write"].as_u64()),
        (Some(100), Some(3000), Some(1024), Some(2048))
    );
    assert_eq!(job["buffering"], false);
    let total = &flags["phases"][0]["total"];
    let fw = &flags["phases"][0]["workload"];
    // Unbuffered: a write call per 2048-byte block (or less), a read call per 1024.
    assert!(total["write"]["ops"].as_f64().unwrap() >= fw["bytes_written"].as_f64().unwrap() / 2048.0);
    assert!(total["read"]["ops"].as_f64().unwrap() >= fw["bytes_read"].as_f64().unwrap() / 1024.0);
}

/// Flags that mean nothing to the workload are refused with one line naming the flag, and
/// nothing runs.
#[test]
fn options_of_another_workload_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("pm.cfg");
    std::fs::write(&cfg, "set number 5\n").unwrap();
    let t = dir.path().to_str().unwrap();
    for (args, flag) in [
        (vec!["--workload", "postmark", "--rw", "randread", "--bs", "1M"], "--bs"),
        (vec!["--workload", "varmail", "--config", cfg.to_str().unwrap()], "--config"),
        (vec!["--workload", "maildir", "--runtime", "1s", "--nfiles", "10"], "--nfiles"),
        (vec!["--workload", "bonnie", "--number", "10"], "--number"),
        (vec!["--rw", "write", "--size", "1M", "--mailboxes", "3"], "--mailboxes"),
    ] {
        let out = iolab().arg("run").args(&args).args(["--target", t]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{flag} (`")) && err.contains("does not apply to workload"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing was written");
}

/// Each personality refuses a target where its own directory exists already (with a user's
/// file in it, where the personality would write), before anything is written: the file comes
/// out as it went in, and nothing else appears.
#[test]
fn a_personality_never_writes_where_a_users_directory_is() {
    let cases: [(&str, &[&str], &str); 5] = [
        ("postmark", &[], "iolab.u.0/1"),
        ("maildir", &["--runtime", "1s"], "iolab.u/box0/new/1.M1P1_0Q1.host,S=5"),
        ("redolog", &["--size", "1M", "--files", "1"], "iolab.u.0/redo.0"),
        ("varmail", &["--runtime", "1s", "--nfiles", "10", "--threads", "2"], "iolab.u/00000001"),
        ("bonnie", &["--bonnie-size", "1M", "--bonnie-ram", "0", "--bonnie-files", "1"], "iolab.u/Bonnie.data"),
    ];
    for (workload, extra, users) in cases {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(users);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "user's").unwrap();
        let before: BTreeSet<_> = walk(dir.path());
        let out = iolab()
            .args(["run", "--workload", workload, "--name", "u"])
            .args(extra)
            .arg("--target")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{workload}: {err}");
        assert!(err.contains("exists already"), "{workload}: {err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "user's", "{workload}");
        assert_eq!(walk(dir.path()), before, "{workload} wrote nothing");
    }
}

fn walk(d: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(d).unwrap() {
        let e = e.unwrap();
        out.insert(e.path().display().to_string());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn maildir_delivers_counts_after_the_discard_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iolab.mail.0"), "user's").unwrap();
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
    // Each message: create, fsync, rename, fsync of new/. The pool's 5 mailboxes (tmp, new,
    // cur each) exist before the deliveries (the layout) and removing what is left at the end
    // is not Postal's: neither is counted.
    assert_eq!(
        (ops("create"), ops("rename"), ops("dirsync"), ops("unlink"), ops("mkdir")),
        (f("messages"), f("messages"), f("messages"), 0.0, 0.0)
    );
    assert_eq!(f("discard_s"), 0.5, "a 2 s run drops its first quarter, not a minute");
    assert!(f("messages_after_discard") < f("messages"));
    let per_min = f("messages_after_discard") / f("measured_s") * 60.0;
    assert!((f("messages_per_min") - per_min).abs() < 1e-6);
    let b = f("bytes_delivered") / f("messages");
    assert!((1024.0..=8192.0).contains(&b), "mean size {b}");
    assert_eq!(std::fs::read_to_string(dir.path().join("iolab.mail.0")).unwrap(), "user's");
    assert_eq!(std::fs::read_to_string(dir.path().join("box0/1.T0.iolab,S=5")).unwrap(), "user's");
    let left: BTreeSet<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["box0", "iolab.mail.0"].iter().map(|s| s.to_string()).collect());
    // The shortened discard is said in the results, not only in the run's name.
    let notes = v["phases"][0]["notes"].as_array().expect("a note");
    assert!(notes[0].as_str().unwrap().contains("first 0.5 s, not the 60 s asked"), "{notes:?}");
    assert_eq!(v["phases"][0]["jobs"][0]["workload"]["messages"], w["messages"], "the job's own figures");

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
    let (mut whole, mut in_tmp, mut by) = (0, Vec::new(), [BTreeSet::new(), BTreeSet::new()]);
    // One pool of mailboxes both threads deliver to; a message's name says its thread (`_<t>Q`).
    let thread_of =
        |name: &str| -> usize { name.split_once('_').and_then(|(_, r)| r.split('Q').next()).unwrap().parse().unwrap() };
    for b in 0..3 {
        let bx = dir.path().join(format!("iolab.kill/box{b}"));
        for e in std::fs::read_dir(bx.join("new")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let size: u64 = name.rsplit("S=").next().unwrap().parse().unwrap();
            assert_eq!(e.metadata().unwrap().len(), size, "{name} is whole");
            by[thread_of(&name)].insert(b);
            whole += 1;
        }
        for e in std::fs::read_dir(bx.join("tmp")).unwrap() {
            in_tmp.push(thread_of(&e.unwrap().file_name().to_string_lossy()));
        }
    }
    for t in 0..2 {
        assert!(in_tmp.iter().filter(|tt| **tt == t).count() <= 1, "thread {t}: {in_tmp:?}");
    }
    assert!(whole > 0, "it delivered before it was killed ({signal})");
    assert!(!by[0].is_disjoint(&by[1]), "both threads delivered into the same mailboxes: {by:?}");
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
    // Removing the files between the passes and at the end is neither pass's: not counted.
    assert_eq!(classes["unlink"]["ops"].as_f64(), None);
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

/// The example personality: `--workload append-log` appends its records with an fsync every N
/// in a log per thread, counts them as whole numbers, makes a missing target directory (marked
/// as iolab's) and leaves nothing of its own behind; under `--direct` the log is opened O_DIRECT
/// where the filesystem takes it.
#[test]
fn append_log_appends_fsyncs_counts_and_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("append.log"), "user's").unwrap();
    let target = dir.path().join("logs");
    let t = target.to_str().unwrap();
    let args = ["run", "--workload", "append-log", "--name", "wal", "--target", t, "--threads", "2"];
    let v = run_json(&[&args[..], &["--records", "100", "--record-size", "8k", "--fsync-every", "10"]].concat());
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    let n = |k: &str| w[k].as_u64().unwrap_or_else(|| panic!("{k} is no whole number in {w}"));
    assert_eq!((n("records"), n("bytes_appended"), n("fsyncs")), (200, 200 * 8192, 20));
    assert!(w["records_per_s"].as_f64().unwrap() > 0.0 && w["elapsed_s"].as_f64().unwrap() > 0.0);
    let classes = &v["phases"][0]["total"]["classes"];
    assert_eq!((classes["write"]["ops"].as_u64(), classes["write"]["bytes"].as_u64()), (Some(200), Some(200 * 8192)));
    assert_eq!((classes["sync"]["ops"].as_u64(), classes["create"]["ops"].as_u64()), (Some(20), Some(2)));
    assert_eq!(classes["unlink"]["ops"].as_u64(), None, "removing its logs is not counted");
    assert_eq!(v["plan"]["phases"][0]["jobs"][0]["workload"], "append-log");
    // The directory it made is left (as a block job's file is), empty of its logs.
    assert!(target.is_dir());
    assert!(walk(&target).is_empty(), "{:?}", walk(&target));
    assert_eq!(std::fs::read_to_string(dir.path().join("append.log")).unwrap(), "user's");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `phases[].workload."))
        .filter(|l| l.contains("append-log"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect();
    let seen: BTreeSet<String> = w.as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, documented, "phases[].workload against docs/json.md");
    // Its own options, refused for another workload and checked for it.
    let out = iolab().args(["run", "--target", t, "--size", "1M", "--records", "5"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--records (`records` in a job file) does not apply to workload block"));
    let out = iolab().args(args).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--runtime"),
        "unbounded: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !direct_ok(dir.path()) {
        return skip("this filesystem refuses O_DIRECT: append-log --direct not run");
    }
    let v = run_json(&[&args[..], &["--records", "20", "--record-size", "4k", "--direct"]].concat());
    assert_eq!(v["phases"][0]["workload"]["records"].as_u64(), Some(40), "{v}");
    let out = iolab().args(args).args(["--records", "2", "--record-size", "1000", "--direct"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("record_size"), "{}", String::from_utf8_lossy(&out.stderr));
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
    // Each append is followed by its fsync (but for one cut short by the end, per thread).
    assert!(ops("write") >= ops("sync") && ops("write") <= ops("sync") + 2.0, "{c}");
    // An lseek to the end before each append, to 0 before each read (but for one open per
    // thread the end cut short before its lseek).
    let unseeked = ops("write") + ops("open") - ops("seek");
    assert!(
        (0.0..=2.0).contains(&unseeked),
        "seeks {} against writes + opens {}: {c}",
        ops("seek"),
        ops("write") + ops("open")
    );
    assert_eq!(ops("close"), ops("create") + ops("open"));
    // Reads go on until one returns nothing, as filebench's readwholefile does: two reads per
    // open at least (data, then nothing), but for one open per thread whose reads the end cut
    // short.
    assert!(ops("read") + 2.0 >= 2.0 * ops("open"), "reads {} against opens {}: {c}", ops("read"), ops("open"));
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
        "--bonnie-ram",
        "0",
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
    // The data file once before the block write (bonnie++ makes it anew), the files of both
    // delete tests; the data file's removal after the seeks is not a test's.
    assert_eq!(ops("unlink"), 1.0 + 2048.0);
    // The sequential stat and delete read the directory and go in its order.
    assert_eq!(ops("readdir"), 2.0);
    // An fsync closing each of the five I/O tests and each of the five seekers, and a flush of
    // the filesystem ending each create and delete test (bonnie++'s sync()).
    assert_eq!(ops("sync"), 5.0 + 5.0 + 4.0);
    assert_eq!(f("seeks_count"), 8192.0, "the five seekers took every ticket");
    let threads = v["phases"][0]["jobs"][0]["per_thread"].as_array().unwrap();
    assert_eq!(threads.len(), 5, "five seekers");
    // Each seeker opened the file, took tickets while they lasted, fsynced and closed it (on a
    // 1 MiB file in the page cache the first ones take most of the 8192).
    assert!(threads.iter().all(|t| t["ops"].as_f64().unwrap() >= 3.0), "each seeker ran: {threads:?}");
    for t in ["putc", "seeks", "seq_create", "ran_del"] {
        assert!(f(&format!("{t}_latency_us")) > 0.0 && f(&format!("{t}_s")) > 0.0, "{t} in {w}");
    }
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
    assert_eq!((cols[5], cols[6], cols[7], cols[8], cols[21]), ("1M", "", "8192", "5", "1"));
    assert!(cols[9].parse::<u64>().unwrap() > 0 && cols[11].parse::<u64>().unwrap() > 0, "{line}");
    // The twelve latencies, as bonnie++ writes them (`5609us`, `104ms`).
    for c in &cols[38..50] {
        assert!(c.ends_with("us") || c.ends_with("ms") || c.ends_with('s'), "latency `{c}` in {line}");
        assert!(c.trim_end_matches(char::is_alphabetic).parse::<u64>().is_ok(), "{line}");
    }
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

/// bonnie++'s CSV is one of the formats: `--output bonnie-csv` prints the line alone (nothing
/// on stderr), `iolab export RUN --format bonnie-csv` prints the same line from the stored run,
/// and a stored run without a bonnie job is refused rather than exported as nothing.
#[test]
fn bonnie_s_csv_is_a_format_of_run_and_of_export() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let db = dir.path().join("r.db");
    let (t, db) = (target.to_str().unwrap(), db.to_str().unwrap());
    let run = ["run", "--workload", "bonnie", "--target", t, "--bonnie-size", "1M", "--bonnie-ram", "0"];
    let out = iolab().args(run).args(["--bonnie-files", "1", "--db", db, "--output", "bonnie-csv"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert_eq!(line.trim_end().split(',').count(), 50, "{line}: bonnie++ 2.0 prints 50 columns");
    let exported = iolab().args(["export", "last", "--db", db, "--format", "bonnie-csv"]).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    assert_eq!(String::from_utf8(exported.stdout).unwrap(), line, "the stored run gives the printed line");

    let f = format!("{t}/f");
    let block = iolab().args(["run", "--target", &f, "--size", "1M", "--db", db, "--no-progress"]).output().unwrap();
    assert!(block.status.success(), "{}", String::from_utf8_lossy(&block.stderr));
    let refused = iolab().args(["export", "last", "--db", db, "--format", "bonnie-csv"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--workload bonnie"), "{refused:?}");
}

/// Under strace (`-ff`: a file per thread, no calls split between lines), iolab's bonnie makes
/// bonnie++ 2.00a's calls where they count in its rates: each file of the create tests is one
/// open(O_CREAT|O_EXCL) and a close, with no fstat of the new file; and after the seeks each of
/// the five seekers unlinks the data file, as bonnie++'s seekers do after their report (the
/// first removes it, the four others find it gone), so the file is freed by whichever seeker
/// closes it last.
#[test]
fn bonnie_under_strace_makes_bonnie_s_calls() {
    if std::process::Command::new("strace").arg("-V").output().is_err() {
        return skip("strace is not installed (apt-get install strace)");
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let prefix = dir.path().join("calls");
    let out = std::process::Command::new("strace")
        .args([
            "-ff",
            "-qq",
            "--seccomp-bpf",
            "-e",
            "trace=openat,openat2,statx,fstat,newfstatat,unlink,unlinkat",
            "-o",
        ])
        .arg(&prefix)
        .arg(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["run", "--workload", "bonnie", "--name", "bn", "--target"])
        .arg(&target)
        .args(["--bonnie-size", "1M", "--bonnie-ram", "0", "--bonnie-files", "1", "--bonnie-char-size", "0"])
        .args(["--no-store", "--no-progress"])
        .env("IOLAB_DB", db_path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.contains("ptrace") {
        return skip("strace cannot trace here (ptrace refused)");
    }
    assert!(out.status.success(), "{err}");
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("calls.") {
            lines.extend(std::fs::read_to_string(p).unwrap().lines().map(str::to_string).collect::<Vec<_>>());
        }
    }
    let count = |f: &dyn Fn(&str) -> bool| lines.iter().filter(|l| f(l)).count();
    // The create tests' files (write-only; the data file is opened read-write): 1024 twice.
    assert_eq!(count(&|l| l.contains("O_WRONLY|O_CREAT|O_EXCL")), 2048, "one open per file created");
    // An fstat of each new file would be 2048 more; what is left reads /proc/self/stat.
    let fstats = count(&|l| (l.starts_with("statx(") || l.starts_with("fstat(")) && l.contains("\"\""));
    assert!(fstats < 200, "{fstats} fstat calls: a create must not fstat the file it made");
    // The data file's unlinks (not the create tests' directory of the same name, removed with
    // AT_REMOVEDIR): none before the block write (no per-character test made it before), then
    // one by each of the five seekers.
    let data = |l: &str| l.starts_with("unlinkat(") && l.contains("\"Bonnie.") && !l.contains("AT_REMOVEDIR");
    assert_eq!(count(&|l| data(l)), 5, "{lines:#?}");
    assert_eq!(count(&|l| data(l) && l.contains("ENOENT")), 4, "the first seeker removes it, the others find it gone");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "all removed");
}

/// bonnie++'s -n with sizes and directories, -b and -f: files with data spread over
/// directories, read back by the stat tests, an fsync of each file and of its directory per
/// create and of the directory per delete, no per-character tests.
#[test]
fn bonnie_files_with_data_in_directories_and_no_write_buffering() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(&[
        "run",
        "--workload",
        "bonnie",
        "--name",
        "bn",
        "--target",
        dir.path().to_str().unwrap(),
        "--bonnie-size",
        "2M",
        "--bonnie-ram",
        "1M",
        "--bonnie-files",
        "1:4k:1k:3",
        "--bonnie-sync",
        "--bonnie-char-size",
        "0",
        "--bonnie-seekers",
        "2",
        "--bonnie-seeks",
        "1000",
    ]);
    assert_eq!(v["status"], "complete", "{v}");
    let w = &v["phases"][0]["workload"];
    assert!(w.get("putc").is_none() && w.get("getc").is_none(), "-f: no per-character tests: {w}");
    assert_eq!(w["seeks_count"].as_f64(), Some(1000.0));
    assert_eq!(v["phases"][0]["jobs"][0]["per_thread"].as_array().unwrap().len(), 2);
    let c = &v["phases"][0]["total"]["classes"];
    let ops = |k: &str| c[k]["ops"].as_f64().unwrap_or(0.0);
    // Two create and two delete tests of 1024 files: a directory fsync after each create and delete.
    assert_eq!(ops("dirsync"), 4.0 * 1024.0);
    // Three directories listed by each sequential test.
    assert_eq!(ops("readdir"), 6.0);
    // Files of 1 to 4 KiB, written at create (in 8 KiB chunks: one write each) and read back
    // by both stat tests: 2048 file writes and 2048 file reads besides the data file's.
    let data_writes = 2.0 * 256.0; // block write and rewrite of 2 MiB in 8 KiB chunks
    let t = &v["phases"][0]["total"];
    assert!(t["write"]["ops"].as_f64().unwrap() >= data_writes + 2048.0);
    assert!(t["read"]["ops"].as_f64().unwrap() >= 2.0 * 256.0 + 1000.0 + 2048.0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "all removed");
}

/// Three runs of each of two configurations of a personality: `compare --metric
/// messages_per_min` gives each as a percentage of the baseline with a verdict.
#[test]
fn compare_gives_a_personality_s_figure_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let db = db.to_str().unwrap();
    for (config, extra) in
        [("light", ["--max-size", "1k", "--dir-fsync=false"]), ("heavy", ["--max-size", "512k", "--dir-fsync=true"])]
    {
        for _ in 0..3 {
            run_json(&[
                "run",
                "--workload",
                "maildir",
                "--runtime",
                "1s",
                "--mailboxes",
                "4",
                "--target",
                dir.path().to_str().unwrap(),
                "--db",
                db,
                "--label",
                &format!("config={config}"),
                extra[0],
                extra[1],
                extra[2],
            ]);
        }
    }
    let out = iolab()
        .args(["compare", "--db", db, "config=light", "config=heavy", "--by", "config", "--metric", "messages_per_min"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}{}", String::from_utf8_lossy(&out.stderr));
    assert!(table.contains("messages_per_min") && table.contains("light (baseline)"), "{table}");
    assert!(
        ["regressed", "improved", "no change", "inconclusive"].iter().any(|v| table.contains(v)),
        "a verdict: {table}"
    );
    let c: Value = serde_json::from_slice(
        &iolab()
            .args([
                "compare",
                "--db",
                db,
                "config=light",
                "config=heavy",
                "--by",
                "config",
                "-m",
                "messages_per_min",
                "--output",
                "json",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let cell = &c["rows"][0]["cells"][1];
    assert!(cell["pct_of_baseline"].as_f64().unwrap() > 0.0 && cell["verdict"].is_string(), "{c}");
    // The HTML report of one run shows its figures and its notes.
    let html = dir.path().join("one.html");
    let out = iolab().args(["report", "--db", db, "1", "-o", html.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(
        h.contains("Workload figures: maildir")
            && h.contains("<td title=\"messages_per_min\">messages delivered per minute</td>"),
        "no figures in the report"
    );
    assert!(h.contains("not the 60 s asked"), "the note on the shortened discard");
    // Another personality's figure is a metric too (bonnie++'s, the readers').
    for m in ["put_block", "messages_read"] {
        let out = iolab()
            .args(["compare", "--db", db, "config=light", "config=heavy", "--by", "config", "-m", m])
            .output()
            .unwrap();
        assert!(out.status.success(), "{m}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
