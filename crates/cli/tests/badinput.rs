//! The bad-input suite (issue 25): every subcommand given what a careless or hostile user
//! types — zero, negative, huge and malformed numbers and units; FIFOs, sockets, character
//! devices and directories where a file is expected; empty, binary, huge and truncated job
//! files, traces and databases; names and labels with escape bytes, newlines and 10 KB; a
//! closed or full stdout; signals — each held to one clear error naming the option or file,
//! exit 2, no panic or backtrace, no hang, nothing written beside the scratch directory's own
//! files, and an error object on stdout when `--output json` was asked. Each table's size is
//! printed (`cargo test -p iolab --test badinput -- --nocapture`).
#![allow(clippy::disallowed_macros)] // a test prints its skips with eprintln!, not user text

mod common;

use assert_cmd::Command;
use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A scratch directory: iolab runs in it with its database, HOME and targets there.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch { dir: tempfile::tempdir().unwrap() }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn db(&self) -> PathBuf {
        self.p("results.db")
    }
    fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("iolab").unwrap();
        c.timeout(Duration::from_secs(60))
            .current_dir(self.dir.path())
            .env("IOLAB_DB", self.db())
            .env("HOME", self.dir.path())
            .env_remove("RUST_BACKTRACE");
        c
    }
    fn process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"));
        c.current_dir(self.dir.path()).env("IOLAB_DB", self.db()).env("HOME", self.dir.path());
        c
    }
    /// A short run on the null engine, stored: what the stored-run commands read.
    fn stored_run(&self, extra: &[&str]) {
        let out = self
            .cmd()
            .args(["run", "--target", "t", "--size", "1M", "--engine", "null", "--runtime", "200ms"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    /// Every name in the scratch directory (and below), to see what a command left.
    fn listing(&self) -> Vec<String> {
        let mut v = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut v);
        v.sort();
        v
    }
}

fn walk(root: &Path, d: &Path, v: &mut Vec<String>) {
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        v.push(p.strip_prefix(root).unwrap().display().to_string());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &p, v);
        }
    }
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn json_asked(args: &[OsString]) -> bool {
    args.windows(2).any(|w| (w[0] == "--output" || w[0] == "-o") && w[1] == "json")
}

/// Hold one refused command to the rules: exit 2 within the timeout, one error on stderr that
/// says each of `says`, no panic or backtrace, no raw escape byte, and an error object on
/// stdout if JSON was asked. Returns stderr.
fn refused(s: &Scratch, args: &[OsString], says: &[&str]) -> String {
    let t = Instant::now();
    let out = s.cmd().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = format!(
        "iolab {args:?}\nexit {:?}\nstderr: {err}\nstdout: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}: {shown}", t.elapsed());
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "memory allocation of"] {
        assert!(!err.contains(bad), "{shown}");
    }
    assert!(!out.stderr.contains(&0x1b) && !out.stdout.contains(&0x1b), "a raw ESC: {shown}");
    let errors = err.lines().filter(|l| l.starts_with("Error:") || l.starts_with("error:")).count();
    assert_eq!(errors, 1, "one error: {shown}");
    for word in says {
        assert!(err.contains(word), "should say `{word}`: {shown}");
    }
    if json_asked(args) {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {shown}"));
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{shown}");
    }
    err
}

fn mkfifo(p: &Path) -> bool {
    std::process::Command::new("mkfifo").arg(p).status().is_ok_and(|s| s.success())
}

/// Files of every hostile kind, named for what they are.
fn hostile_files(s: &Scratch) -> Vec<(&'static str, PathBuf, &'static str)> {
    let mut v: Vec<(&'static str, PathBuf, &'static str)> = vec![
        ("char device", "/dev/zero".into(), "a character device"),
        ("null device", "/dev/null".into(), "a character device"),
        ("directory", s.p("adir"), "a directory"),
    ];
    std::fs::create_dir_all(s.p("adir")).unwrap();
    if mkfifo(&s.p("fifo")) {
        v.push(("fifo", s.p("fifo"), "a FIFO"));
    }
    let sock = s.p("sock");
    // Kept bound for the test's life: the listener is leaked on purpose.
    if let Ok(l) = std::os::unix::net::UnixListener::bind(&sock) {
        std::mem::forget(l);
        v.push(("socket", sock, "a socket"));
    }
    v
}

/// Files whose content is hostile: empty, binary, huge, truncated.
fn hostile_contents(s: &Scratch, good: &str) -> Vec<(&'static str, PathBuf)> {
    let w = |n: &str, b: &[u8]| {
        std::fs::write(s.p(n), b).unwrap();
        s.p(n)
    };
    let mut huge = good.as_bytes().to_vec();
    huge.resize(5 << 20, b'#');
    vec![
        ("empty", w("empty", b"")),
        ("binary", w("binary", b"\x00\x01\x02\xff\xfe\x1b[31m\x00\x00SQLite format 3\x00")),
        ("huge", w("huge", &huge)),
        ("truncated", w("truncated", &good.as_bytes()[..good.len() / 2])),
    ]
}

#[test]
fn numbers_and_units_are_refused_naming_the_option() {
    let s = Scratch::new();
    let run = ["run", "--target", "t", "--size", "1M", "--engine", "null", "--runtime", "1s"];
    // (the flags, what the error must name)
    let table: &[(&[&str], &str)] = &[
        (&["--threads", "0"], "threads"),
        (&["--threads", "-1"], "--threads"),
        (&["--threads", "99999999999"], "--threads"),
        (&["--threads", "1.5"], "--threads"),
        (&["--threads", ""], "--threads"),
        (&["--iodepth", "0"], "iodepth"),
        (&["--iodepth", "-8"], "--iodepth"),
        (&["--iodepth", "4294967296"], "--iodepth"),
        (&["--bs", "0"], "--bs"),
        (&["--bs", "1x"], "--bs"),
        (&["--bs", "99999999999999999999T"], "--bs"),
        (&["--bs", "4k,"], "--bs"),
        (&["--runtime", "10zz"], "--runtime"),
        (&["--runtime", "-1"], "--runtime"),
        (&["--ramp", "1y"], "--ramp"),
        (&["--seed", "-3"], "--seed"),
        (&["--seed", "x"], "--seed"),
        (&["--preallocate", "sometimes"], "--preallocate"),
        (&["--preallocate", ""], "--preallocate"),
    ];
    let mut n = 0;
    for (flags, names) in table {
        for json in [false, true] {
            let mut args = os(&run);
            args.extend(os(flags));
            if json {
                args.extend(os(&["--output", "json"]));
            }
            refused(&s, &args, &[names]);
            n += 1;
        }
    }
    // The metadata workload's file size: a range, on a call that makes its own files, zero, huge.
    let meta = ["run", "--target", "d", "--workload", "metadata", "--nrfiles", "2"];
    for (op, size, names) in [
        ("filedelete", "1k-2k", "file_sizes"),
        ("filecreate", "4k", "file_sizes"),
        ("filestat", "0", "--file-sizes"),
        ("filestat", "99999999999999999999T", "--file-sizes"),
    ] {
        let mut args = os(&meta);
        args.extend(os(&["--meta-op", op, "--file-sizes", size]));
        refused(&s, &args, &[names]);
        n += 1;
    }
    // Files with more data than the filesystem has room for: refused before any is made.
    let mut args = os(&meta);
    args.extend(os(&["--meta-op", "filestat", "--file-sizes", "100T"]));
    refused(&s, &args, &["not enough free space", "219902325555200 bytes"]);
    assert!(!s.p("d").exists() || std::fs::read_dir(s.p("d")).unwrap().next().is_none(), "nothing made");
    n += 1;
    // Sizes, on their own (run's --size is given above).
    for size in ["0", "-1", "zz", "1e400", "18446744073709551616"] {
        refused(&s, &os(&["run", "--target", "t", "--engine", "null", "--size", size]), &["size"]);
        n += 1;
    }
    // Other commands' numbers.
    let others: &[(&[&str], &str)] = &[
        (&["watch", ".", "--interval", "-1"], "--interval"),
        (&["watch", ".", "--interval", "zz"], "--interval"),
        (&["runs", "--since", "yesterdayish"], "--since"),
        (&["runs", "--status", "bogus"], "--status"),
        (&["compare", "last", "--noise", "-5"], "--noise"),
        (&["compare", "last", "--noise", "x"], "--noise"),
        (&["show", "0"], "selector"),
        (&["show", "-1"], "selector"),
        (&["show", "7..3"], "selector"),
        (&["show", "last~x"], "selector"),
    ];
    let stored = Scratch::new();
    stored.stored_run(&[]);
    for (args, names) in others {
        refused(&stored, &os(args), &[names]);
        n += 1;
    }
    eprintln!("numbers and units: {n} commands");
    assert!(!s.p("t").exists(), "nothing laid out for a refused run");
}

#[test]
fn labels_and_names_have_a_length_and_a_character_set() {
    let s = Scratch::new();
    let run = ["run", "--target", "t", "--size", "1M", "--engine", "null", "--runtime", "200ms"];
    let long = format!("k={}", "v".repeat(10 * 1024));
    let long_key = format!("{}=v", "k".repeat(10 * 1024));
    let table: Vec<(String, &str)> = vec![
        (long, "at most 256"),
        (long_key, "1 to 64"),
        ("k=\u{1b}[31mred".into(), "control character"),
        ("k=\u{1b}]0;owned\u{7}".into(), "control character"),
        ("a\nb=c".into(), "A-Z a-z 0-9"),
        ("\u{1b}[2J=x".into(), "A-Z a-z 0-9"),
        ("novalue".into(), "KEY=VALUE"),
        ("=v".into(), "KEY=VALUE"),
    ];
    for (label, says) in &table {
        let mut args = os(&run);
        args.push("--label".into());
        args.push(label.into());
        refused(&s, &args, &["--label", says]);
    }
    eprintln!("labels: {} commands", table.len());
}

#[test]
fn a_name_with_escape_bytes_is_shown_escaped_in_tables_csv_and_html() {
    let s = Scratch::new();
    let name = "evil\u{1b}]0;owned\u{7}\u{1b}[31m\nline";
    s.stored_run(&["--name", name]);
    for args in [
        &["runs"][..],
        &["show", "last"],
        &["export", "last", "--format", "csv"],
        &["report", "last", "-o", "-"],
        &["compare", "last"],
    ] {
        let out = s.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "{args:?}: raw control bytes");
        let text = String::from_utf8_lossy(&out.stdout);
        if args[0] == "show" || args[0] == "export" {
            assert!(text.contains("evil\\e]0;owned"), "{args:?}: {text}");
        }
    }
    // The HTML report written to a file, title included.
    let out = s.cmd().args(["report", "last", "-o", "r.html"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read(s.p("r.html")).unwrap();
    assert!(!html.contains(&0x1b) && !html.contains(&0x07));
    // JSON keeps the name as it was given (escaped as JSON does).
    let out = s.cmd().args(["show", "last", "--output", "json"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(serde_json::from_str::<Value>(&text).is_ok() && text.contains("evil\\u001b]0;owned"), "{text}");
    // A trace's unreadable lines and its paths, shown by trace import and trace show.
    std::fs::write(
        s.p("e.strace"),
        "123  1.000000 openat(AT_FDCWD</w>, \"/w/\x1b[31mred\", O_RDWR) = 3</w/\x1b[31mred> <0.000010>\n\
         123  1.000001 pwrite64(3</w/\x1b[31mred>, \"x\", 4096, 0) = 4096 <0.000010>\n\
         junk \x1b]0;owned\x07 here\n",
    )
    .unwrap();
    for args in [&["trace", "import", "-o", "e.trace", "e.strace"][..], &["trace", "show", "e.trace"]] {
        let out = s.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "{args:?}: raw control bytes");
    }
}

/// Notes and warnings on stderr carry names from files and flags: escaped as stdout's are, and a
/// full stderr (`2>/dev/full`) is no panic (`eprintln!` would end the run with exit 101).
#[test]
fn stderr_lines_are_escaped_and_a_full_stderr_is_no_panic() {
    let s = Scratch::new();
    std::fs::write(s.p("j.fio"), "[job]\nrw=write\nsize=64k\nfilename=f\nioengine=null\nevil\x1b[31mopt\x07=1\n")
        .unwrap();
    let run = ["run", "--no-store", "--sample-interval", "0", "--fio-lenient", "j.fio"];
    let out = s.process().args(run).args(["--write-bw-log", "bw\x1b[31m"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert!(!out.stderr.contains(&0x1b) && !out.stderr.contains(&0x07), "raw control bytes on stderr: {err}");
    assert!(err.contains("evil\\e[31mopt"), "the option named, escaped: {err}");
    assert!(err.contains("bw\\e[31m"), "the log's path named, escaped: {err}");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = s.process().args(run).stderr(full).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a full stderr ends nothing");
}

#[test]
fn files_that_are_not_regular_files_are_named_never_read_or_waited_on() {
    let s = Scratch::new();
    let mut n = 0;
    let fio = s.p("ok.fio");
    std::fs::write(&fio, "[j]\nfilename=x\nsize=1m\nrw=read\n").unwrap();
    for (kind, path, says) in hostile_files(&s) {
        let p = path.to_str().unwrap();
        let cmds: Vec<Vec<&str>> = vec![
            vec!["run", p],
            vec!["run", p, "--output", "json"],
            vec!["run", p, "--format", "fio"],
            vec!["convert", p],
            vec!["scenario", p, "--node", "a=127.0.0.1:1"],
            vec!["run", "--nodes", p, "--target", "x", "--size", "1M"],
            vec!["agent", "--listen", "127.0.0.1:0", "--token-file", p],
        ];
        for args in cmds {
            let err = refused(&s, &os(&args), &[says]);
            assert!(err.contains(p), "{kind}: names the path: {err}");
            n += 1;
        }
        // The results database.
        for args in [
            &["runs"][..],
            &["show", "last"],
            &["export", "last"],
            &["compare", "last"],
            &["report", "last"],
            &["rm", "last"],
        ] {
            let mut a = os(args);
            a.extend(os(&["--db", p]));
            refused(&s, &a, &[says]);
            n += 1;
        }
    }
    eprintln!("files that are not regular files: {n} commands");
    assert!(s.listing().iter().all(|f| !f.ends_with(".html")), "no report written: {:?}", s.listing());
}

#[test]
fn a_fifo_job_file_never_blocks_and_a_signal_needs_no_second() {
    let s = Scratch::new();
    if !mkfifo(&s.p("job")) {
        skip("mkfifo failed");
        return;
    }
    // Before, the open blocked until a writer came and swallowed the first SIGTERM.
    let t = Instant::now();
    let child = s.process().args(["run", "job"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a FIFO"));
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn hostile_contents_get_one_clear_error() {
    let s = Scratch::new();
    let toml = "[[phase]]\nname = 'a'\n[[phase.job]]\ntarget = 't'\nsize = '1M'\nrw = 'write'\nengine = 'null'\n";
    let fio = "[global]\nrw=read\nsize=1m\n[job1]\nfilename=t\n";
    let scenario = "[scenario]\nname = 's'\n";
    let mut n = 0;
    for (what, good, cmd) in [("toml", toml, "run"), ("fio", fio, "convert"), ("scenario", scenario, "scenario")] {
        for (kind, path) in hostile_contents(&s, good) {
            let mut args = os(&[cmd, path.to_str().unwrap()]);
            if cmd == "scenario" {
                args.extend(os(&["--node", "a=127.0.0.1:1"]));
            }
            let err = refused(&s, &args, &[]);
            assert!(err.contains(path.file_name().unwrap().to_str().unwrap()), "{what} {kind}: names the file: {err}");
            if kind == "huge" {
                assert!(err.contains("larger than 4 MiB"), "{err}");
            }
            n += 1;
        }
    }
    // A 50 MB job file: refused by its size, not read into memory.
    let big = s.p("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(50 << 20).unwrap();
    refused(&s, &os(&["run", "big.toml"]), &["larger than 4 MiB"]);
    n += 1;
    // Databases: empty, binary, truncated, foreign.
    let ok = Scratch::new();
    ok.stored_run(&[]);
    let bytes = std::fs::read(ok.db()).unwrap_or_default();
    let wal = std::fs::metadata(ok.p("results.db-wal")).map(|m| m.len()).unwrap_or(0);
    assert!(!bytes.is_empty() || wal > 0);
    std::fs::write(s.p("empty.db"), b"").unwrap();
    std::fs::write(s.p("binary.db"), [0x1bu8; 8192]).unwrap();
    let mut trunc = b"SQLite format 3\0".to_vec();
    trunc.extend(std::iter::repeat_n(0xffu8, 4096));
    std::fs::write(s.p("trunc.db"), &trunc).unwrap();
    for db in ["empty.db", "binary.db", "trunc.db"] {
        for args in
            [&["runs"][..], &["runs", "--output", "json"], &["show", "last"], &["export", "last"], &["report", "last"]]
        {
            let mut a = os(args);
            a.extend(os(&["--db", db]));
            let before = std::fs::read(s.p(db)).unwrap();
            let err = refused(&s, &a, &[db]);
            assert_eq!(std::fs::read(s.p(db)).unwrap(), before, "{db} left as it was");
            if db != "empty.db" {
                // SQLite's own check is said, once (not again as the error's cause).
                assert_eq!(err.matches("quick_check").count(), 1, "{err}");
            }
            n += 1;
        }
    }
    eprintln!("hostile contents: {n} commands");
}

#[test]
fn memory_is_planned_before_any_io() {
    let s = Scratch::new();
    if !uring_ok() {
        skip("io_uring is not available");
        return;
    }
    // Under a 4 GiB address space, 512 threads x depth 512 x 1 MiB (256 GiB) aborted with
    // "memory allocation of 536870912 bytes failed", exit 134.
    for json in [false, true] {
        let mut c = std::process::Command::new("prlimit");
        c.arg("--as=4294967296").arg(assert_cmd::cargo::cargo_bin("iolab"));
        c.args(["run", "--target", "big", "--size", "64M", "--threads", "512", "--iodepth", "512"]);
        c.args(["--engine", "io_uring", "--bs", "1m", "--runtime", "2s"]);
        if json {
            c.args(["--output", "json"]);
        }
        let out = c.current_dir(s.dir.path()).env("IOLAB_DB", s.db()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("256 GiB") && err.contains("RLIMIT_AS"), "{err}");
        assert!(err.contains("lower --threads, --iodepth or --bs"), "{err}");
        assert!(!err.contains("memory allocation") && !err.contains("panicked"), "{err}");
        if json {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(v["error"].as_str().unwrap().contains("256 GiB"));
        }
        assert!(!s.p("big").exists(), "refused before any I/O");
    }
}

/// An allocation that fails mid-run, after the memory plan passed (the debug build's failure
/// point refuses buffers over 1 MiB, as an allocator out of memory would): the run ends with
/// the allocation's error and exit 2, never an abort, and the phase measured before it is kept,
/// printed and stored.
#[test]
fn an_allocation_failing_mid_run_keeps_what_was_measured() {
    let s = Scratch::new();
    if !uring_ok() {
        skip("io_uring is not available");
        return;
    }
    std::fs::write(
        s.p("j.toml"),
        "[[phase]]\nname = \"small\"\n[[phase.job]]\ntarget = \"f1\"\nsize = \"4M\"\nbs = \"4k\"\nrw = \"write\"\n\n\
         [[phase]]\nname = \"big\"\n[[phase.job]]\ntarget = \"f2\"\nsize = \"16M\"\nbs = \"4M\"\nrw = \"write\"\n\
         iodepth = 4\nengine = \"io_uring\"\n",
    )
    .unwrap();
    let out = s
        .process()
        .args(["run", "j.toml", "--sample-interval", "0"])
        .env("IOLAB_TEST_REFUSE_BUFFERS_OVER", "1048576")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
    assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{err}");
    assert!(text.contains("cannot allocate 4 I/O buffers of 4194304 bytes"), "{text}");
    assert!(text.contains("measured before the failure"), "{text}");
    let shown = s.process().args(["show", "last", "--output", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let r = &v[0]["result"];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["phases"][0]["name"], "small");
    assert_eq!(r["phases"][0]["total"]["write"]["bytes"].as_u64(), Some(4 << 20), "the first phase kept: {r}");
    assert_eq!(std::fs::metadata(s.p("f1")).unwrap().len(), 4 << 20);
}

/// The eBPF recorder's ring (`--buffer`) is memory too: mapped twice into the process and charged
/// to its cgroup. Under a 1.5 GiB address space a 1 GiB ring is refused before anything is
/// loaded or created, naming --buffer.
#[test]
fn the_recorders_ring_is_planned_like_a_runs_buffers() {
    let s = Scratch::new();
    let mut c = std::process::Command::new("prlimit");
    c.arg("--as=1610612736").arg(assert_cmd::cargo::cargo_bin("iolab"));
    c.args(["trace", "record", "--via", "ebpf", "--buffer", "1g", "-o", "t.trace", "--", "true"]);
    let out = c.current_dir(s.dir.path()).env("IOLAB_DB", s.db()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ring buffer would hold 2 GiB") && err.contains("RLIMIT_AS"), "{err}");
    assert!(err.contains("lower --buffer"), "{err}");
    assert!(!s.p("t.trace").exists(), "nothing created");
}

/// Spawn iolab with its stdout a pipe whose reader takes one byte and goes away (`| head -c 1`).
fn into_head(s: &Scratch, args: &[&str]) -> std::process::Output {
    let mut child = s.process().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    let _ = stdout.read(&mut one);
    drop(stdout);
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "iolab {args:?} did not end after its reader went away");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_or_full_stdout_never_panics() {
    let s = Scratch::new();
    s.stored_run(&[]);
    s.stored_run(&["--label", "config=a"]);
    std::fs::write(s.p("j.fio"), "[global]\nrw=read\nsize=1m\n[job1]\nfilename=t\n").unwrap();
    // A trace for the trace commands (one call, one line iolab cannot read).
    std::fs::write(s.p("x.strace"), "123  1.000000 pwrite64(3</w/a>, \"x\", 4096, 0) = 4096 <0.000010>\nnot strace\n")
        .unwrap();
    assert!(s.cmd().args(["trace", "import", "-o", "t.trace", "x.strace"]).output().unwrap().status.success());
    let run = ["run", "--target", "t2", "--size", "1M", "--engine", "null", "--runtime", "300ms"];
    let with_json = |a: &[&str]| {
        let mut v: Vec<&str> = a.to_vec();
        v.extend(["--output", "json"]);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let mut table: Vec<Vec<String>> = [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["man"],
        &["convert", "j.fio"],
        &["runs"],
        &["show", "last"],
        &["show", "all"],
        &["export", "last"],
        &["export", "all", "--format", "csv"],
        &["export", "last", "--format", "fio-json"],
        &["compare", "1", "2"],
        &["report", "last", "-o", "-"],
        &run,
        &["trace", "--help"],
        &["trace", "import", "-o", "t2.trace", "x.strace"],
        &["trace", "show", "t.trace"],
        &["trace", "export", "--fio", "t.trace"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect();
    table.push(with_json(&["runs"]));
    table.push(with_json(&["show", "last"]));
    table.push(with_json(&run));
    table.push(with_json(&["trace", "show", "t.trace"]));
    let mut n = 0;
    for args in &table {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        // | head -c 1: quiet, exit 0 (a run keeps its own status: 0 here).
        let out = into_head(&s, &a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "iolab {a:?} | head -c 1: {err}");
        assert!(!err.contains("Broken pipe") && !err.contains("panicked") && !err.contains("Error"), "{a:?}: {err}");
        // > /dev/full: said once, exit 2.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = s.process().args(&a).stdout(full).stderr(Stdio::piped()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "iolab {a:?} > /dev/full: {err}");
        assert!(err.contains("stdout is full") && !err.contains("panicked"), "{a:?}: {err}");
        n += 2;
    }
    eprintln!("closed and full stdout: {n} commands");
}

#[test]
fn report_writes_only_its_own_files_or_with_overwrite() {
    let s = Scratch::new();
    s.stored_run(&[]);
    // A user's files: a page, a text file, a read-only one.
    for (name, mode) in [("mine.html", 0o644), ("notes.txt", 0o644), ("ro.html", 0o444)] {
        std::fs::write(s.p(name), b"the user's own").unwrap();
        std::fs::set_permissions(s.p(name), std::fs::Permissions::from_mode(mode)).unwrap();
        let err = refused(&s, &os(&["report", "last", "-o", name]), &["-o", "iolab did not write it", "--overwrite"]);
        assert_eq!(std::fs::read(s.p(name)).unwrap(), b"the user's own", "{err}");
    }
    // --overwrite replaces it; then it is iolab's, replaced without the flag.
    let out = s.cmd().args(["report", "last", "-o", "mine.html", "--overwrite"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(s.p("mine.html")).unwrap().contains("<html"));
    let out = s.cmd().args(["report", "last", "-o", "mine.html"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A new file is written and marked; the next report replaces it.
    for _ in 0..2 {
        let out = s.cmd().args(["report", "last", "-o", "sub/new.html"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // The database it reads is never an output, even with --overwrite.
    let db = s.db();
    let before = std::fs::read(&db).unwrap();
    refused(&s, &[os(&["report", "last", "--overwrite", "-o"]), vec![db.clone().into()]].concat(), &["reads"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let mut wal = db.clone().into_os_string();
    wal.push("-wal");
    if Path::new(&wal).exists() {
        refused(&s, &[os(&["report", "last", "--overwrite", "-o"]), vec![wal]].concat(), &["reads"]);
    }
    // A link, a directory.
    std::os::unix::fs::symlink("notes.txt", s.p("link.html")).unwrap();
    refused(&s, &os(&["report", "last", "--overwrite", "-o", "link.html"]), &["a link"]);
    assert_eq!(std::fs::read(s.p("notes.txt")).unwrap(), b"the user's own");
    std::fs::create_dir(s.p("d")).unwrap();
    refused(&s, &os(&["report", "last", "-o", "d"]), &["a directory"]);
}

/// Wait until `f` holds, or fail saying `what`.
fn wait_for(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill(pid: u32, sig: &str) {
    assert!(std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

fn runs_json(s: &Scratch) -> Vec<Value> {
    let out = s.cmd().args(["runs", "--output", "json"]).output().unwrap();
    serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default()
}

#[test]
fn signals_end_a_run_with_unix_statuses_and_rm_spares_a_running_run() {
    let s = Scratch::new();
    for (sig, code) in [("TERM", 143), ("HUP", 129), ("QUIT", 131), ("INT", 130)] {
        let child = s
            .process()
            .args(["run", "--target", "t", "--size", "1M", "--engine", "null", "--runtime", "60s", "--output", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("the run to be stored as running", || runs_json(&s).last().is_some_and(|r| r["status"] == "running"));
        if sig == "TERM" {
            // rm of a run still running: refused, the run kept, unless --force.
            let n = runs_json(&s).len();
            refused(&s, &os(&["rm", "last"]), &["still running", "--force"]);
            assert_eq!(runs_json(&s).len(), n);
        }
        std::thread::sleep(Duration::from_millis(300));
        kill(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "SIG{sig}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("SIG{sig}: no JSON ({e}): {err}"));
        assert_eq!(v["status"], "interrupted", "SIG{sig}");
        assert!(v["phases"][0]["total"]["read"]["ops"].as_u64().unwrap_or(0) > 0, "SIG{sig}: measured kept");
        assert!(err.contains(&format!("SIG{sig}: stopping")), "SIG{sig}: {err}");
        assert_eq!(runs_json(&s).last().unwrap()["status"], "interrupted", "SIG{sig}: stored");
    }
}

#[test]
fn selectors_all_and_ranges_and_rm_asks_before_many() {
    let s = Scratch::new();
    for _ in 0..4 {
        s.stored_run(&[]);
    }
    let ids = |args: &[&str]| -> Vec<u64> {
        let out = s.cmd().args(args).args(["--output", "json"]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array().unwrap().iter().map(|r| r["id"].as_u64().unwrap()).collect()
    };
    assert_eq!(ids(&["show", "all"]), [1, 2, 3, 4]);
    assert_eq!(ids(&["show", "2..3"]), [2, 3]);
    assert_eq!(ids(&["show", "last~1.."]), [3, 4]);
    // Several runs: not deleted without --yes when no one can be asked.
    let out = s.cmd().args(["rm", "1..3"]).write_stdin("").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    assert_eq!(ids(&["show", "all"]), [1, 2, 3, 4]);
    let out = s.cmd().args(["rm", "1..3", "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(&["show", "all"]), [4]);
}

#[test]
fn an_agent_on_stdio_ends_on_eof_or_garbage() {
    let s = Scratch::new();
    let mut huge_prefix = vec![0xffu8, 0xff, 0xff, 0xff];
    huge_prefix.extend(b"{\"run\":1}");
    for (what, input) in [
        ("nothing", Vec::new()),
        ("garbage", b"garbage\n".to_vec()),
        ("a JSON line", b"{\"hello\": \"agent\"}\n".to_vec()),
        ("a huge length prefix", huge_prefix),
        ("half a preface", b"PRI * HTTP/2.0\r\n".to_vec()),
    ] {
        let t = Instant::now();
        let out =
            s.cmd().args(["agent", "--stdio"]).write_stdin(input).timeout(Duration::from_secs(20)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains("iolab run --node"), "{what}: says what starts an agent: {err}");
        assert!(t.elapsed() < Duration::from_secs(10), "{what}: took {:?}", t.elapsed());
    }
}

#[test]
fn reading_commands_never_write_the_database() {
    let s = Scratch::new();
    s.stored_run(&[]);
    // Settle the WAL into the file, then make it read-only.
    let out = s.cmd().args(["rm", "last", "--yes"]).output().unwrap();
    assert!(out.status.success());
    s.stored_run(&["--label", "config=x"]);
    let before = std::fs::read(s.db()).unwrap();
    let modified = std::fs::metadata(s.db()).unwrap().modified().unwrap();
    for args in
        [&["runs"][..], &["show", "last"], &["export", "last"], &["compare", "last"], &["report", "last", "-o", "-"]]
    {
        let out = s.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // SQLite's reader leaves its -shm (and an empty -wal) beside a WAL database; the file
    // itself is neither written nor migrated.
    assert!(std::fs::read(s.db()).unwrap() == before, "reading changed the database");
    assert_eq!(std::fs::metadata(s.db()).unwrap().modified().unwrap(), modified);
    let wal = std::fs::metadata(s.p("results.db-wal")).map(|m| m.len()).unwrap_or(0);
    assert_eq!(wal, 0, "nothing written to the write-ahead log");
    // On a read-only mount (a bind mount remounted read-only), runs are listed.
    let ro = s.p("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::copy(s.db(), ro.join("results.db")).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::copy(s.p(&format!("results.db{ext}")), ro.join(format!("results.db{ext}")));
    }
    let mount = |args: &[&str]| std::process::Command::new("mount").args(args).status().is_ok_and(|st| st.success());
    let r = ro.to_str().unwrap();
    if !mount(&["--bind", r, r]) {
        skip("cannot bind-mount (not root?)");
        return;
    }
    let remounted = mount(&["-o", "remount,bind,ro", r]);
    if remounted {
        let out = s.cmd().args(["runs", "--output", "json", "--db"]).arg(ro.join("results.db")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let v: Option<Value> = serde_json::from_slice(&out.stdout).ok();
        let _ = std::process::Command::new("umount").arg(r).status();
        assert!(out.status.success(), "{err}");
        assert_eq!(v.and_then(|v| v.as_array().map(|a| a.len())), Some(1), "{err}");
    } else {
        let _ = std::process::Command::new("umount").arg(r).status();
        skip("cannot remount read-only");
    }
}
