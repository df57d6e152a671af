//! Replays run for real (the executor, threads, files under a temporary target) from strace
//! text, and the timing modes on the worker's fake clock.

use super::*;
use crate::clock::{Clock, FakeClock, Stamp};
use crate::executor::{run_plan, Control, NoSink};
use crate::source::{Call, Ctx, FileChange, Names, Next, SetupFile, Source, SourceError};
use crate::worker::{self, Window};
use iolab_model::{OpClass, RunResult};
use iolab_spec::{EngineKind, Phase, Plan, ReplayLimits, Timing, Workload};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Import strace text into a trace file in `dir`.
fn trace_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("t.trace");
    let mut imp = iolab_trace::Importer::new(std::fs::File::create(&path).unwrap(), "test").unwrap();
    imp.read_file(text.as_bytes(), "test", None).unwrap();
    let (f, sum) = imp.finish().unwrap();
    f.sync_all().unwrap();
    assert_eq!(sum.bad_lines, 0, "{:?}", sum.bad);
    path
}

fn replay_job(trace: &Path, target: &Path, timing: Timing, prepare: bool) -> Job {
    let (bytes, crc) = fingerprint(trace).unwrap();
    let r = ReplayJob {
        trace: trace.to_path_buf(),
        trace_bytes: bytes,
        trace_crc32: crc,
        timing,
        strip: "/d".into(),
        prepare,
        limits: ReplayLimits::default(),
    };
    let threads = load(&r).map(|p| p.threads.len() as u32).unwrap_or(1);
    Job {
        name: "replay".into(),
        target: target.to_path_buf(),
        size: None,
        seed: iolab_spec::DEFAULT_SEED,
        engine: EngineKind::Psync,
        iodepth: 1,
        batch: Default::default(),
        direct: false,
        threads,
        runtime: None,
        ramp: Duration::ZERO,
        ramp_auto: false,
        start_delay: Default::default(),
        exit_all: false,
        cpus: None,
        numa: None,
        sched: None,
        overwrite: false,
        device: false,
        verify: None,
        steady: None,
        workload: Workload::Replay(r),
    }
}

fn run(job: Job) -> Result<RunResult, String> {
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] };
    run_plan(&plan, &Control::default(), &mut NoSink).map_err(|e| e.to_string())
}

fn fidelity(r: &RunResult) -> &iolab_model::ReplayFidelity {
    r.phases[0].jobs[0].replay.as_ref().expect("a replay's fidelity")
}

fn replayed(r: &RunResult, c: OpClass) -> u64 {
    r.phases[0].jobs[0].total.get(c).ops
}

/// Three threads of one process write 4 KiB each through the descriptor the first opened:
/// the writes follow one another in the file (one file position), 12288 bytes.
const SHARED_FD: &str = "\
10  1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD} => {parent_tid=[11]}, 88) = 11 <0.000010>
10  1.000001 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD} => {parent_tid=[12]}, 88) = 12 <0.000010>
10  1.000010 openat(AT_FDCWD</d>, \"/d/log\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3</d/log> <0.000010>
10  1.000100 write(3</d/log>, \"a\"..., 4096) = 4096 <0.000010>
11  1.000200 write(3</d/log>, \"b\"..., 4096) = 4096 <0.000010>
12  1.000300 write(3</d/log>, \"c\"..., 4096) = 4096 <0.000010>
11  1.000400 fsync(3</d/log>) = 0 <0.000010>
10  1.000500 close(3</d/log>) = 0 <0.000010>
";

#[test]
fn threads_sharing_a_descriptor_share_its_position() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = trace_file(d.path(), SHARED_FD);
    let r = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    assert_eq!(r.phases[0].jobs[0].error, None);
    assert_eq!(std::fs::metadata(target.join("log")).unwrap().len(), 12288, "three writes at one position");
    let f = fidelity(&r);
    assert!(f.counts_equal && f.results_equal, "{f:?}");
    assert_eq!((replayed(&r, OpClass::Write), replayed(&r, OpClass::Create)), (3, 1));
    assert_eq!(f.threads, 3);
    // Made by the replay, so marked: a second replay into the same target runs.
    let again = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    assert!(fidelity(&again).counts_equal && again.phases[0].jobs[0].error.is_none());
    assert_eq!(std::fs::metadata(target.join("log")).unwrap().len(), 12288);
}

/// readv and writev at the file position, after lseeks with every whence, sync_file_range and
/// a punched hole: each call as recorded, each result as recorded.
const VECTORS: &str = "\
7  1.000000 openat(AT_FDCWD</d>, \"/d/v\", O_RDWR|O_CREAT|O_EXCL, 0644) = 3</d/v> <0.000010>
7  1.000100 writev(3</d/v>, [{iov_base=\"a\"..., iov_len=4096}, {iov_base=\"b\"..., iov_len=4096}], 2) = 8192 <0.000010>
7  1.000200 writev(3</d/v>, [{iov_base=\"c\"..., iov_len=4096}], 1) = 4096 <0.000010>
7  1.000300 lseek(3</d/v>, -8192, SEEK_CUR) = 4096 <0.000010>
7  1.000400 readv(3</d/v>, [{iov_base=\"\"..., iov_len=2048}, {iov_base=\"\"..., iov_len=2048}], 2) = 4096 <0.000010>
7  1.000500 lseek(3</d/v>, 0, SEEK_CUR) = 8192 <0.000010>
7  1.000600 lseek(3</d/v>, -4096, SEEK_END) = 8192 <0.000010>
7  1.000700 sync_file_range(3</d/v>, 0, 0, SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER) = 0 <0.000010>
7  1.000800 fallocate(3</d/v>, FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0, 4096) = 0 <0.000010>
7  1.000900 read(3</d/v>, \"\"..., 8192) = 4096 <0.000010>
7  1.001000 close(3</d/v>) = 0 <0.000010>
";

#[test]
fn vectored_calls_move_the_position_and_every_whence_and_mode_is_kept() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = trace_file(d.path(), VECTORS);
    let r = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    assert_eq!(r.phases[0].jobs[0].error, None);
    let f = fidelity(&r);
    assert!(f.counts_equal && f.results_equal, "{:?} {:?}", f.classes, f.mismatches);
    assert_eq!(replayed(&r, OpClass::Seek), 3);
    assert_eq!(replayed(&r, OpClass::Sync), 1);
    let data = std::fs::read(target.join("v")).unwrap();
    assert_eq!(data.len(), 12288, "the second writev went on at 8192, where the first ended");
    assert!(data[..4096].iter().all(|&b| b == 0), "the punched hole (not an allocation) reads as zeros");
    assert!(data[4096..].iter().any(|&b| b != 0));
    // The trace creates /d/v with O_EXCL: a second replay removes the first one's file first.
    let again = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    assert!(fidelity(&again).results_equal);
}

#[test]
fn a_read_that_comes_back_short_is_a_mismatch() {
    let text = "\
1  1.0 openat(AT_FDCWD</d>, \"/d/in\", O_RDONLY) = 3</d/in> <0.000010>
1  1.1 read(3</d/in>, \"\"..., 4096) = 4096 <0.000010>
1  1.2 read(3</d/in>, \"\"..., 4096) = 4096 <0.000010>
";
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = trace_file(d.path(), text);
    let e = run(replay_job(&t, &target, Timing::Afap, false)).unwrap_err().to_string();
    assert!(e.contains("must exist") && e.contains("--prepare"), "{e}");
    // The user's own file, shorter than the trace read: read (never written), and the second
    // read comes back with nothing.
    std::fs::write(target.join("in"), vec![1u8; 4096]).unwrap();
    let r = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    let f = fidelity(&r);
    assert!(f.counts_equal && !f.results_equal);
    assert_eq!(f.mismatched, 1);
    assert_eq!((f.mismatches[0].recorded, f.mismatches[0].replayed, f.mismatches[0].call), (4096, 0, 3));
    let read = f.classes.iter().find(|c| c.class == "read").unwrap();
    assert_eq!((read.recorded_bytes, read.replayed_bytes, read.short), (8192, 4096, 1));
    assert_eq!(std::fs::read(target.join("in")).unwrap(), vec![1u8; 4096], "not touched");
}

#[test]
fn no_call_escapes_the_target_through_a_link() {
    let text = "\
1  1.0 openat(AT_FDCWD</d>, \"/d/sub/f\", O_WRONLY|O_CREAT, 0644) = 3</d/sub/f> <0.000010>
1  1.1 write(3</d/sub/f>, \"x\"..., 4096) = 4096 <0.000010>
";
    let d = tempfile::tempdir().unwrap();
    let (target, outside) = (d.path().join("tgt"), d.path().join("outside"));
    std::fs::create_dir(&target).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, target.join("sub")).unwrap();
    let t = trace_file(d.path(), text);
    let e = run(replay_job(&t, &target, Timing::Afap, true)).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing made outside");
    // Even past the check (a link made after it), the open is resolved beneath the target.
    let b = iolab_engine::beneath::Beneath::open(&target).unwrap();
    let err = b.open_file(Path::new("sub/f"), open_flags(0o101)).unwrap_err();
    assert!(err.to_string().contains("leads out of"), "{err}");
    // `..` in a traced path never names anything: it is outside the traced directory.
    let dots = "1  1.0 openat(AT_FDCWD</d>, \"/d/../etc/x\", O_WRONLY|O_CREAT, 0644) = 3 <0.000010>\n";
    let t = trace_file(d.path(), dots);
    let e = run(replay_job(&t, &target, Timing::Afap, true)).unwrap_err().to_string();
    assert!(e.contains("nothing to replay"), "{e}");
}

#[test]
fn directories_iolab_did_not_make_are_not_renamed_or_removed() {
    let text = "\
1  1.0 mkdir(\"/d/spool\", 0755) = 0 <0.000010>
1  1.1 openat(AT_FDCWD</d>, \"/d/spool/m\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3</d/spool/m> <0.000010>
1  1.2 close(3</d/spool/m>) = 0 <0.000010>
1  1.3 rename(\"/d/old\", \"/d/older\") = 0 <0.000010>
1  1.4 unlinkat(AT_FDCWD</d>, \"/d/older\", AT_REMOVEDIR) = 0 <0.000010>
";
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    std::fs::create_dir(target.join("old")).unwrap();
    let t = trace_file(d.path(), text);
    let e = run(replay_job(&t, &target, Timing::Afap, true)).unwrap_err().to_string();
    assert!(e.contains("/old exists and iolab did not create it") && e.contains("rename"), "{e}");
    assert!(target.join("old").is_dir());
    std::fs::remove_dir(target.join("old")).unwrap();
    // With --prepare the replay makes `old` itself (marked), renames and removes it; `spool`
    // and its message are the replay's and marked, so the next replay resets them and runs.
    for round in 0..2 {
        let r = run(replay_job(&t, &target, Timing::Afap, true)).unwrap();
        assert_eq!(r.phases[0].jobs[0].error, None, "round {round}");
        assert!(fidelity(&r).counts_equal, "round {round}");
        assert_eq!(replayed(&r, OpClass::Rmdir), 1);
        let b = iolab_engine::beneath::Beneath::open(&target).unwrap();
        for rel in ["spool", "spool/m"] {
            assert!(matches!(crate::owned::found(&b, Path::new(rel)).unwrap(), crate::owned::Found::Owned(_)), "{rel}");
        }
    }
}

/// A source that notes, in order, each call issued (with when) and each completed (`None`).
struct Spy<S: Source> {
    inner: S,
    log: Vec<(Option<Stamp>, Call)>,
}

impl<S: Source> Source for Spy<S> {
    fn buffer_len(&self) -> usize {
        self.inner.buffer_len()
    }
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        self.inner.setup()
    }
    fn start(&mut self, at: Stamp) {
        self.inner.start(at)
    }
    fn next(&mut self, ctx: &mut Ctx) -> Next {
        let n = self.inner.next(ctx);
        if let Next::Issue(i) = n {
            self.log.push((Some(ctx.now), i.call));
        }
        n
    }
    fn opened(&mut self, file: u32, f: &std::fs::File) {
        self.inner.opened(file, f)
    }
    fn file_change(&mut self) -> Option<FileChange> {
        self.inner.file_change()
    }
    fn completed(&mut self, call: &Call, buf: &[u8], result: &std::io::Result<usize>) -> Result<(), SourceError> {
        self.log.push((None, *call));
        self.inner.completed(call, buf, result)
    }
}

/// Replay the first traced thread of `job` on `engine` (`depth` deep) through the worker, on a
/// clock that moves 1 µs per reading and by what is slept: what the spy saw, and the start.
fn spy_on(job: &Job, target: &Path, engine: EngineKind, depth: usize) -> (Vec<(Option<Stamp>, Call)>, Stamp) {
    let Workload::Replay(r) = &job.workload else { unreachable!() };
    let b = iolab_engine::beneath::Beneath::open(target).unwrap();
    let checked = check(job, r, &b).unwrap();
    let run = ReplayRun::prepare(checked, job, r, b, &crate::layout::Halt::stop(&AtomicBool::new(false))).unwrap();
    let mut spy = Spy { inner: ReplaySource::new(run, 0).unwrap(), log: Vec::new() };
    let clk = FakeClock::new(Duration::from_micros(1));
    let mut engine = iolab_engine::build(engine, iolab_engine::Setup::new(depth, 4096)).unwrap();
    let start = clk.now();
    let w = Window { start, t0: start, deadline: None };
    let mut names = Names::new(target);
    let end = worker::run(
        &mut spy,
        &mut *engine,
        &mut names,
        &clk,
        w,
        &AtomicBool::new(false),
        &crate::rendezvous::Rendezvous::new(1),
        &mut |_, _| {},
    );
    assert_eq!(end.error.map(|e| e.to_string()), None);
    forget();
    (spy.log, start)
}

/// One thread: an open, then writes 100 µs, 100 ms and 200 ms after the previous call ended
/// (the smallest gap, 100 µs, is the tracer's).
const GAPS: &str = "\
1  1.000000 openat(AT_FDCWD</d>, \"/d/g\", O_WRONLY|O_CREAT, 0644) = 3</d/g> <0.000010>
1  1.000110 pwrite64(3</d/g>, \"x\"..., 4096, 0) = 4096 <0.000100>
1  1.100210 pwrite64(3</d/g>, \"x\"..., 4096, 4096) = 4096 <0.000100>
1  1.300310 pwrite64(3</d/g>, \"x\"..., 4096, 8192) = 4096 <0.000100>
";

/// The instants (µs after the start) each call was issued at, replayed with `timing` on a clock
/// that moves 1 µs per reading and by what is slept.
fn issue_times(timing: Timing) -> Vec<u64> {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = trace_file(d.path(), GAPS);
    let job = replay_job(&t, &target, timing, false);
    let (log, start) = spy_on(&job, &target, EngineKind::Null, 1);
    log.iter().filter_map(|(at, _)| Some(at.as_ref()?.saturating_duration_since(start).as_micros() as u64)).collect()
}

fn near(got: &[u64], want: &[u64]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.abs_diff(*w) <= 20)
}

#[test]
fn each_timing_mode_waits_what_it_says() {
    // Think time: each gap less the tracer's 100 µs, from the previous call's end.
    let think = issue_times(Timing::Think);
    assert!(near(&think, &[0, 0, 99_900, 299_800]), "{think:?}");
    // As recorded: each call at its offset from the first.
    let rec = issue_times(Timing::Recorded);
    assert!(near(&rec, &[0, 110, 100_210, 300_310]), "{rec:?}");
    // Scaled: think time twice as fast.
    let fast = issue_times(Timing::Scale(2.0));
    assert!(near(&fast, &[0, 0, 49_950, 149_900]), "{fast:?}");
    // As fast as possible: no waits at all.
    let afap = issue_times(Timing::Afap);
    assert!(afap.iter().all(|&t| t < 50), "{afap:?}");
}

/// A write-ahead log on io_uring as the eBPF recorder sees it: four writes in flight together
/// (depths 1 to 4), then, once all four completed, an fdatasync; once that completed, the next
/// write. One thread, its open and close as calls.
fn wal_trace(dir: &Path) -> PathBuf {
    use iolab_trace::format::{oflags, AsyncKind, AsyncOp, Kind, Op, Record, RingKind, Writer};
    let path = dir.join("wal.trace");
    let mut w = Writer::new(std::fs::File::create(&path).unwrap()).unwrap();
    let rec = |w: &mut Writer<std::fs::File>, r: Record| w.record(&r).unwrap();
    rec(&mut w, Record::Header { version: 2, source: "wal".into(), epoch_ns: 0 });
    rec(&mut w, Record::Recorder { via: "ebpf".into(), detail: "test".into() });
    let flags = oflags::O_RDWR | oflags::O_CREAT;
    rec(&mut w, Record::File { id: 0, path: "/d/wal".into(), flags, before: false, regular: true });
    let call = |start_ns, kind, result| Op {
        start_ns,
        dur_ns: 1000,
        kind,
        file: 0,
        offset: 0,
        size: 0,
        count: 0,
        flags: if kind == Kind::Open { flags } else { 0 },
        result,
    };
    w.op(7, call(1_000, Kind::Open, 3)).unwrap();
    rec(&mut w, Record::Ring { id: 1, tgid: 7, kind: RingKind::IoUring, entries: 8, flags: 0 });
    let op = |i: u64, submit_ns, complete_ns, kind, depth| AsyncOp {
        tid: 7,
        submit_ns,
        complete_ns,
        kind,
        file: 0,
        fd: 3,
        offset: i * 4096,
        size: if kind == AsyncKind::Write { 4096 } else { 0 },
        count: 0,
        flags: 0,
        op_flags: 0,
        buf: u32::MAX,
        depth,
        result: if kind == AsyncKind::Write { 4096 } else { 0 },
        user_data: i,
    };
    let mut ops: Vec<AsyncOp> =
        (0..4).map(|i| op(i, 10_000 + i * 100, 60_000 - i * 1000, AsyncKind::Write, i as u32 + 1)).collect();
    ops.push(op(0, 70_000, 90_000, AsyncKind::Fdatasync, 1));
    ops.push(op(4, 100_000, 110_000, AsyncKind::Write, 1));
    rec(&mut w, Record::RingOps { ring: 1, ops });
    w.op(7, call(120_000, Kind::Close, 0)).unwrap();
    w.finish(0, 0, 121_000).unwrap().sync_all().unwrap();
    path
}

#[test]
fn asynchronous_operations_replay_at_their_depth_and_wait_for_their_flush() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = wal_trace(d.path());
    let mut job = replay_job(&t, &target, Timing::Afap, false);
    let Workload::Replay(r) = job.workload.clone() else { unreachable!() };
    let plan = load(&r).unwrap();
    assert_eq!((plan.max_depth, plan.async_engine, plan.ring_ops.clone()), (4, Some(EngineKind::IoUring), vec![6]));
    assert_eq!(plan.recorded[&OpClass::Write].ops, 5);
    assert!(plan.left_out.is_empty(), "{:?}", plan.left_out);
    // On io_uring, as deep as the ring went; psync where io_uring is refused (one at a time).
    let kind = match iolab_engine::build(EngineKind::IoUring, iolab_engine::Setup::new(4, 4096)) {
        Ok(_) => EngineKind::IoUring,
        Err(e) => {
            eprintln!("io_uring refused ({e}): the order is checked on psync");
            EngineKind::Psync
        }
    };
    job.engine = kind;
    job.iodepth = if kind == EngineKind::IoUring { 4 } else { 1 };
    let (log, _) = spy_on(&job, &target, kind, job.iodepth as usize);
    let data = |c: &Call| match c {
        Call::Data { kind, .. } => Some(*kind),
        _ => None,
    };
    // In flight at most 4, and 4 at once on io_uring.
    let (mut now, mut most) = (0i32, 0i32);
    for (issued, c) in &log {
        if data(c).is_some() {
            now += if issued.is_some() { 1 } else { -1 };
            most = most.max(now);
        }
    }
    assert_eq!(most, if kind == EngineKind::IoUring { 4 } else { 1 }, "{log:?}");
    // The flush is issued after the four writes completed; the fifth write after the flush.
    let at = |issued: bool, k: iolab_engine::OpKind, nth: usize| {
        log.iter()
            .enumerate()
            .filter(|(_, (i, c))| i.is_some() == issued && data(c) == Some(k))
            .nth(nth)
            .map(|(n, _)| n)
            .unwrap()
    };
    use iolab_engine::OpKind::{Fdatasync, Write};
    let flush = at(true, Fdatasync, 0);
    assert!(at(false, Write, 3) < flush, "{log:?}");
    assert!(at(false, Fdatasync, 0) < at(true, Write, 4), "{log:?}");
    assert_eq!(std::fs::metadata(target.join("wal")).unwrap().len(), 5 * 4096);
}

/// A block-level trace of device loop9 (and a request on another device): four 8 KiB writes
/// in flight together, one of them FUA, a flush, then two reads of what they wrote.
fn block_trace(dir: &Path) -> PathBuf {
    use iolab_trace::format::{BlockIo, Record, Writer};
    let path = dir.join("blk.trace");
    let mut w = Writer::new(std::fs::File::create(&path).unwrap()).unwrap();
    let io = |issue_ns: u64, sector: u64, bytes: u32, op: u8, flags: u32| BlockIo {
        queued_ns: 0,
        issue_ns,
        complete_ns: issue_ns + 5_000,
        sector,
        bytes,
        op,
        flags,
        error: 0,
    };
    for r in [
        Record::Header { version: 2, source: "block".into(), epoch_ns: 0 },
        Record::Device { dev: 7 << 20 | 9, name: "loop9".into() },
        Record::Device { dev: 8 << 20, name: "sda".into() },
        Record::BlockIos {
            dev: 7 << 20 | 9,
            ios: (0..4).map(|i| io(1_000 + i * 100, 2048 + i * 16, 8192, 1, if i == 3 { 1 << 9 } else { 0 })).collect(),
        },
        Record::BlockIos { dev: 8 << 20, ios: vec![io(1_000, 0, 4096, 0, 0)] },
        Record::BlockIos {
            dev: 7 << 20 | 9,
            ios: vec![io(20_000, 0, 0, 2, 0), io(30_000, 2048, 16384, 0, 0), io(40_000, 2080, 16384, 0, 0)],
        },
    ] {
        w.record(&r).unwrap();
    }
    w.finish(0, 0, 50_000).unwrap().sync_all().unwrap();
    path
}

#[test]
fn a_block_level_trace_replays_onto_a_file() {
    let d = tempfile::tempdir().unwrap();
    let t = block_trace(d.path());
    assert_eq!(default_strip_of(&t).unwrap(), PathBuf::from("loop9"), "the busiest device");
    let mut job = replay_job(&t, &d.path().join("blk.img"), Timing::Think, false);
    let Workload::Replay(r) = &mut job.workload else { unreachable!() };
    r.strip = "loop9".into();
    let plan = load(r).unwrap();
    let b = plan.blocks.as_ref().unwrap();
    assert_eq!((b.steps.len(), b.max_depth, b.extent), (7, 4, (2080 + 32) * 512));
    assert_eq!(plan.adjusted.values().sum::<u64>(), 1, "the FUA write, through O_DSYNC");
    job.threads = 1;
    job.size = Some(iolab_spec::Bytes(b.extent));
    let r = run(job.clone()).unwrap();
    assert_eq!(r.phases[0].jobs[0].error, None);
    let f = fidelity(&r);
    assert!(f.counts_equal && f.results_equal, "{f:?}");
    assert_eq!((replayed(&r, OpClass::Write), replayed(&r, OpClass::Sync), replayed(&r, OpClass::Read)), (4, 1, 2));
    let data = std::fs::read(d.path().join("blk.img")).unwrap();
    assert_eq!(data.len() as u64, b.extent);
    let again = run(job).unwrap();
    assert!(fidelity(&again).counts_equal, "iolab's own file: replayed onto again");
    // Another device's name: said, with the trace's devices.
    let mut j = replay_job(&t, &d.path().join("x.img"), Timing::Afap, false);
    let Workload::Replay(r) = &mut j.workload else { unreachable!() };
    r.strip = "nvme0n1".into();
    let e = load(r).unwrap_err().to_string();
    assert!(e.contains("no requests of device `nvme0n1`") && e.contains("loop9") && e.contains("sda"), "{e}");
}

/// A program that starts up for 300 ms (its loader, its other files) before its first call on
/// the data directory and winds up for 200 ms after its last (fio: its job process forked, its
/// report written): the default timing replays both as think time, so the replay takes the
/// program's time (about 0.5 s); afap replays the calls alone.
const STARTS_UP: &str = "\
7  1.000000 openat(AT_FDCWD</etc>, \"/etc/x\", O_RDONLY) = 3</etc/x> <0.000010>
7  1.300000 openat(AT_FDCWD</d>, \"/d/f\", O_WRONLY|O_CREAT, 0644) = 4</d/f> <0.000010>
7  1.300100 pwrite64(4</d/f>, \"a\"..., 4096, 0) = 4096 <0.000010>
7  1.300200 close(4</d/f>) = 0 <0.000010>
7  1.500200 close(3</etc/x>) = 0 <0.000010>
";

#[test]
fn think_timing_replays_the_programs_start_up_and_wind_up() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("tgt");
    std::fs::create_dir(&target).unwrap();
    let t = trace_file(d.path(), STARTS_UP);
    let think = run(replay_job(&t, &target, Timing::Think, false)).unwrap();
    let f = fidelity(&think);
    assert!(f.counts_equal, "{f:?}");
    assert!((f.lead_s - 0.3).abs() < 1e-6 && (f.tail_s - 0.19999).abs() < 1e-4, "{f:?}");
    assert!((f.recorded_s - 0.50021).abs() < 1e-4, "the trace's whole span: {f:?}");
    assert!(f.replayed_s >= 0.49 && f.replayed_s < 1.5, "{f:?}");
    let afap = run(replay_job(&t, &target, Timing::Afap, false)).unwrap();
    assert!(fidelity(&afap).replayed_s < 0.2, "{:?}", fidelity(&afap));
}
