//! Import of real strace output captured on this machine (redo.c from bench/trace under
//! `strace -f -ttt -T -y` and `strace -ff -tt -T -y`) and of hand-made edge cases.

use iolab_trace::format::{oflags, Kind, Trace, NO_FILE};
use iolab_trace::{analyze, import_files, Op};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn import(paths: &[PathBuf]) -> (Trace, iolab_trace::Summary) {
    let (bytes, sum) = import_files(paths, Vec::new()).unwrap();
    (Trace::read(&bytes[..]).unwrap(), sum)
}

fn count(t: &Trace, k: Kind) -> usize {
    t.ops.iter().flat_map(|(_, o)| o).filter(|o| o.kind == k).count()
}

#[test]
fn one_file_with_f_and_unfinished_pairs() {
    // redo 4 threads × 3 rounds.
    let (t, sum) = import(&[fixture("redo_f.strace")]);
    assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
    assert_eq!(count(&t, Kind::Write), 12);
    assert_eq!(count(&t, Kind::Fsync), 12);
    assert_eq!(count(&t, Kind::Lseek), 12);
    // The 4 workers are threads of the main process.
    let main = t.threads.iter().map(|&(_, g)| g).min().unwrap();
    assert_eq!(t.threads.len(), 5);
    assert!(t.threads.iter().all(|&(_, g)| g == main));
    let redo: Vec<_> = t.files.values().filter(|f| f.path.contains("/redo")).collect();
    assert_eq!(redo.len(), 4);
    assert!(redo.iter().all(|f| f.flags == oflags::O_WRONLY | oflags::O_CREAT | oflags::O_DIRECT && !f.before));
    // Each worker's calls stay in program order: open, then (lseek, write, fsync)×3, close.
    for (_, ops) in &t.ops {
        let mine: Vec<Kind> = ops
            .iter()
            .filter(|o| o.file != NO_FILE && t.files.get(&o.file).is_some_and(|f| f.path.contains("/redo")))
            .map(|o| o.kind)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut want = vec![Kind::Open];
        for _ in 0..3 {
            want.extend([Kind::Lseek, Kind::Write, Kind::Fsync]);
        }
        want.push(Kind::Close);
        assert_eq!(mine, want);
        // An unfinished write keeps its start time and gets the resumed line's duration.
        let w = ops.iter().find(|o| o.kind == Kind::Write).unwrap();
        assert_eq!((w.size, w.result), (32768, 32768));
        assert!(w.dur_ns > 0);
        let seeks: Vec<u64> = ops.iter().filter(|o| o.kind == Kind::Lseek).map(|o| o.offset).collect();
        assert_eq!(seeks, vec![0, 1 << 20, 2 << 20]);
    }
    let starts: Vec<u64> = t.ops.iter().flat_map(|(_, o)| o.iter().map(|o| o.start_ns)).collect();
    assert!(starts.iter().all(|&s| s <= t.last_ns));
}

#[test]
fn per_thread_files_from_ff_merge_by_time() {
    // redo 2 threads × 2 rounds, -ff -tt (time of day).
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("redo_ff."))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3);
    let (t, sum) = import(&files);
    assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
    assert_eq!(t.ops.len(), 3);
    assert_eq!(count(&t, Kind::Write), 4);
    assert_eq!(count(&t, Kind::Fsync), 4);
    // The clone3 results in the main file make the workers threads of it.
    let main = iolab_trace::ff_tid(&files[0]).unwrap();
    assert!(t.threads.iter().all(|&(_, g)| g == main), "{:?}", t.threads);
    // Each write resolves to the file its thread opened.
    for (_, ops) in &t.ops {
        let opened: Vec<u32> =
            ops.iter().filter(|o| o.kind == Kind::Open && o.file != NO_FILE).map(|o| o.file).collect();
        for w in ops.iter().filter(|o| o.kind == Kind::Write) {
            assert!(opened.contains(&w.file));
            assert!(t.files[&w.file].path.contains("/redo"));
        }
    }
}

#[test]
fn dup_fcntl_escapes_deleted_and_bad_lines() {
    let (t, sum) = import(&[fixture("edge.strace")]);
    let ops: &Vec<Op> = &t.ops[0].1;
    let dd = ops[0].file;
    assert_eq!(t.files[&dd].path, "/data/dd1.img");
    // dup2 moved fd 3 to 1; fd 3's close leaves the opening alive (one reference left).
    let close = ops.iter().find(|o| o.kind == Kind::Close).unwrap();
    assert_eq!((close.file, close.count), (dd, 1));
    let w = ops.iter().find(|o| o.kind == Kind::Write && o.size == 32768).unwrap();
    assert_eq!(w.file, dd, "write on fd 1 after dup2 is the same opening");
    let pw = ops.iter().find(|o| o.kind == Kind::Pwrite && o.size == 2).unwrap();
    assert_eq!((pw.file, pw.offset), (dd, 65536), "fcntl(F_DUPFD) keeps the opening");
    // Octal escapes and (deleted).
    let tmp = ops.iter().find(|o| o.kind == Kind::Pwrite && o.size == 4).unwrap();
    assert_eq!(t.files[&tmp.file].path, "/data/tmp file>x");
    let wv = ops.iter().find(|o| o.kind == Kind::Writev).unwrap();
    assert_eq!((wv.file, wv.count, wv.size, wv.result), (tmp.file, 2, 4098, 4098));
    let un = ops.iter().find(|o| o.kind == Kind::Unlink).unwrap();
    assert_eq!(t.paths[&un.file], "/scratch/exp/rel");
    assert_eq!(un.result, -1);
    let rn = ops.iter().find(|o| o.kind == Kind::Rename).unwrap();
    assert_eq!(
        (t.paths[&rn.file].as_str(), t.paths[&(rn.offset as u32)].as_str()),
        ("/scratch/exp/a", "/scratch/exp/b")
    );
    assert_eq!(count(&t, Kind::Mkdir), 1);
    assert!(t.names.values().any(|n| n == "futex"));
    // Garbage (line 8) and a truncated line (14) are counted with their line numbers.
    assert_eq!(sum.bad_lines, 2, "{:?}", sum.bad);
    assert_eq!(sum.bad.iter().map(|b| b.line).collect::<Vec<_>>(), vec![8, 14]);
    let a = analyze::analyze(&t, Some((50e6, 0.005)));
    let f = a.files.iter().find(|f| f.path == "/data/dd1.img").unwrap();
    assert!(f.direct);
    assert_eq!((f.written_bytes, f.syncs), (32770, 1));
}

#[test]
fn garbage_and_binary_never_panic() {
    let mut junk = Vec::new();
    for i in 0..2000u32 {
        junk.extend_from_slice(&i.to_le_bytes().repeat(7));
        junk.extend_from_slice(b"(\"<... ) = \n[pid  \xff\xfe 1 <unfinished ...>\n");
    }
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("junk");
    std::fs::write(&p, &junk).unwrap();
    let (_, sum) = import(&[p]);
    assert!(sum.bad_lines > 1000);
    assert!(sum.bad.len() <= iolab_trace::import::BAD_KEPT);
}

#[test]
fn inputs_the_fuzzer_found() {
    let found: &[&str] = &["fuzz_crash_1.strace"];
    for &name in found {
        let mut imp = iolab_trace::Importer::new(Vec::new(), "fuzz").unwrap();
        let data = std::fs::read(fixture(name)).unwrap();
        imp.read_file(&data[..], name, Some(1)).unwrap();
        let (bytes, sum) = imp.finish().unwrap();
        let t = Trace::read(&bytes[..]).unwrap();
        assert_eq!(t.ops.iter().map(|(_, o)| o.len() as u64).sum::<u64>(), sum.ops);
        let _ = analyze::analyze(&t, Some((50e6, 0.005)));
    }
}

fn import_text(text: &str) -> (Trace, iolab_trace::Summary, iolab_trace::Held) {
    let mut imp = iolab_trace::Importer::new(Vec::new(), "test").unwrap();
    imp.read_file(text.as_bytes(), "t", None).unwrap();
    let held = imp.held();
    let (bytes, sum) = imp.finish().unwrap();
    (Trace::read(&bytes[..]).unwrap(), sum, held)
}

#[test]
fn an_exit_writes_the_thread_out_and_forgets_it() {
    // 2,000 short-lived processes, each opening a file and writing it, then exiting; one left
    // running with an unfinished call.
    let mut text =
        String::from("1  0.5 openat(AT_FDCWD</w>, \"log\", O_WRONLY|O_CREAT, 0644) = 5</w/log> <0.000001>\n");
    for p in 0..2000u32 {
        let pid = 100 + p;
        text.push_str(&format!("1  1.{p:06} clone(child_stack=NULL, flags=SIGCHLD) = {pid} <0.000001>\n"));
        text.push_str(&format!(
            "{pid}  1.{p:06} openat(AT_FDCWD</w>, \"f{p}\", O_WRONLY|O_CREAT, 0644) = 3</w/f{p}> <0.000001>\n"
        ));
        text.push_str(&format!("{pid}  1.{p:06} write(3</w/f{p}>, \"x\", 1) = 1 <0.000001>\n"));
        text.push_str(&format!("{pid}  1.{p:06} exit_group(0) = ?\n{pid}  1.{p:06} +++ exited with 0 +++\n"));
    }
    text.push_str("1  2.0 read(0</dev/pts/0>, \"\"..., 10 <unfinished ...>\n");
    let (t, sum, held) = import_text(&text);
    assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
    assert_eq!(sum.threads, 2001);
    // Only the parent is left: its thread, its fd table, its few operations.
    assert_eq!((held.threads, held.processes), (1, 1), "{held:?}");
    assert!(held.ops <= 2001, "{held:?}");
    assert_eq!(t.threads.len(), 2001, "every thread's record is written, at its exit or at the end");
    assert_eq!(count(&t, Kind::Write), 2000);
    let child = t.ops.iter().find(|(tid, _)| *tid == 100).unwrap();
    assert_eq!(child.1.iter().map(|o| o.kind).filter(|k| *k == Kind::Write).count(), 1);
    // The parent's read never came back: it is kept as a call that did not return.
    let parent = &t.ops.iter().find(|(tid, _)| *tid == 1).unwrap().1;
    assert_eq!(parent.last().map(|o| (o.kind, o.result)), Some((Kind::Read, i64::MIN)));
    let (_, sum, _) = import_text("5  1.0 futex(0x1, FUTEX_WAIT, 0 <unfinished ...>\n5  1.1 +++ exited with 0 +++\n");
    assert_eq!(sum.bad_lines, 0, "an unfinished call ended by the thread's exit is no error");
}

#[test]
fn the_writer_holds_a_bounded_number_of_operations() {
    // 200 threads, 500 writes each, none filling a chunk of 1,024 and none exiting: without a
    // bound the writer would hold all 100,000.
    let mut text = String::new();
    for i in 0..500u32 {
        for t in 0..200u32 {
            text.push_str(&format!("{}  1.{:06} write(3</w/f>, \"x\", 1) = 1 <0.000001>\n", 1000 + t, i));
        }
    }
    let (tr, sum, held) = import_text(&text);
    assert_eq!(sum.ops, 100_000);
    assert!(held.ops <= iolab_trace::format::MAX_PENDING, "{held:?}");
    assert_eq!(tr.ops.len(), 200);
    assert!(tr.ops.iter().all(|(_, o)| o.len() == 500 && o.windows(2).all(|w| w[0].start_ns <= w[1].start_ns)));
}

#[test]
fn chdir_fchdir_and_llseek() {
    let text = "\
1  1.0 chdir(\"/data\") = 0 <0.000001>
1  1.1 open(\"a\", O_WRONLY|O_CREAT, 0644) = 3 <0.000001>
1  1.2 chdir(\"sub/../deep\") = 0 <0.000001>
1  1.3 unlink(\"b\") = 0 <0.000001>
1  1.4 openat(AT_FDCWD, \"/etc\", O_RDONLY|O_DIRECTORY) = 4</etc> <0.000001>
1  1.5 fchdir(4</etc>) = 0 <0.000001>
1  1.6 mkdir(\"c\", 0755) = 0 <0.000001>
1  1.7 _llseek(3</data/a>, 4096, [4096], SEEK_SET) = 0 <0.000001>
1  1.8 _llseek(3</data/a>, -10, [4086], SEEK_CUR) = 0 <0.000001>
";
    let (t, sum, _) = import_text(text);
    assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
    let ops = &t.ops[0].1;
    let open = ops.iter().find(|o| o.kind == Kind::Open && o.flags & oflags::O_CREAT != 0).unwrap();
    assert_eq!(t.files[&open.file].path, "/data/a", "relative to the chdir");
    let unlink = ops.iter().find(|o| o.kind == Kind::Unlink).unwrap();
    assert_eq!(t.paths[&unlink.file], "/data/deep/b", "`..` taken out, relative to the second chdir");
    let mkdir = ops.iter().find(|o| o.kind == Kind::Mkdir).unwrap();
    assert_eq!(t.paths[&mkdir.file], "/etc/c", "relative to the fchdir");
    let seeks: Vec<(u64, u32, i64)> =
        ops.iter().filter(|o| o.kind == Kind::Lseek).map(|o| (o.offset, o.count, o.result)).collect();
    assert_eq!(seeks, vec![(4096, 0, 4096), (-10i64 as u64, 1, 4086)], "_llseek's result is the bracketed offset");
}
