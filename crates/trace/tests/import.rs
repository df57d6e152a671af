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
