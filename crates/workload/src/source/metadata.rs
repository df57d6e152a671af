//! The metadata workload's source (`--workload metadata`, fio's `filecreate`, `filestat`,
//! `filedelete`, `dircreate`, `dirstat` and `dirdelete`; its options and rules are
//! crates/spec/src/metadata.rs). As fio's, every thread of every job works in the target
//! directory itself, so the jobs that share a directory contend for its lock as fio's do; each
//! names its files as fio does (`<job>.<thread>.<n>`) and touches no name it did not make in
//! this run: where the call needs its names to exist (stat, delete) it makes them before the
//! start, untimed, with O_EXCL (a file of `--file-sizes` bytes written and flushed, as fio lays
//! out its files), then waits for the job's other threads (the start barrier), makes one timed
//! call per name, and at the end removes what is left, untimed, after a failed call too. The
//! job's time is the timed calls' alone, from the start barrier to the last of them
//! ([`Source::timed_span`]), as fio's is.

use super::{describe_failure, Call, Ctx, Issue, JobDir, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker};
use iolab_spec::metadata::MetaOp;
use iolab_spec::{Job, MetadataJob};
use std::io::{self, Write};
use std::path::Path;

pub struct Metadata {
    job: MetadataJob,
    /// The target directory the names are in.
    root: JobDir,
    /// fio's name of the thread's files, before their number: `<job>.<thread>.`.
    prefix: String,
    names: Vec<NameId>,
    /// How many names `setup` made (those the timed calls find).
    made: usize,
    stage: Stage,
    /// The name the stage is at.
    at: usize,
    /// A file created and not yet closed (its close comes next).
    open: bool,
    /// A timed call's failure, said once what is left is removed.
    failed: Option<SourceError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Wait for the job's other threads to be ready.
    Ready,
    Timed,
    /// Remove what is left (untimed).
    Clean,
    Done,
}

const FILE: u32 = 0; // a created file's index in the worker's file table

impl Metadata {
    pub fn new(job: &MetadataJob, name: &str, thread: u32, root: JobDir) -> Self {
        Metadata {
            job: job.clone(),
            root,
            prefix: format!("{name}.{thread}."),
            names: Vec::new(),
            made: 0,
            stage: Stage::Ready,
            at: 0,
            open: false,
            failed: None,
        }
    }

    fn name(&self, n: usize) -> String {
        format!("{}{n}", self.prefix)
    }

    /// The untimed call that removes name `n`.
    fn remove(&self, n: NameId) -> Issue {
        Issue::untimed(if self.job.op.on_dirs() { Call::Rmdir { name: n } } else { Call::Unlink { name: n } })
    }

    /// Make name `n` as the timed calls need it: a directory, or a file created exclusively
    /// with `file_size` bytes written, allocated first and flushed after, as fio lays out a
    /// file (fallocate, write, fsync).
    fn make(&self, b: &iolab_engine::beneath::Beneath, n: usize, data: &[u8]) -> io::Result<()> {
        let rel = self.name(n);
        if self.job.op.on_dirs() {
            return b.mkdir(Path::new(&rel));
        }
        let mut f = b.open_file(Path::new(&rel), create())?;
        let size = self.job.file_size.0;
        if size > 0 {
            // fio's default fallocate=native; a filesystem without it is laid out by the writes.
            let _ = rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, size);
            let mut left = size;
            while left > 0 {
                let n = left.min(data.len() as u64) as usize;
                f.write_all(&data[..n])?;
                left -= n as u64;
            }
            f.sync_all()?;
        }
        Ok(())
    }

    /// What is left of the names once the timed calls stopped at `reached`: those the timed
    /// calls made, or all that setup made less those the timed calls removed.
    fn left_after(&mut self, reached: usize) {
        let (from, to) = match self.job.op {
            MetaOp::FileCreate | MetaOp::DirCreate => (0, reached),
            MetaOp::FileStat | MetaOp::DirStat => (0, self.made),
            MetaOp::FileDelete | MetaOp::DirDelete => (reached, self.made),
        };
        self.names.truncate(to.min(self.names.len()));
        (self.stage, self.at) = (Stage::Clean, from);
    }
}

/// fio's filecreate: open(O_CREAT|O_RDWR); O_EXCL as well, so a name already there is an
/// error, never a file opened that iolab did not make.
fn create() -> OpenFlags {
    OpenFlags { read: true, write: true, create: true, exclusive: true, ..Default::default() }
}

impl PersonalitySource for MetadataJob {
    type Shared = ();
    fn shared(&self, _job: &Job) -> Result<(), SourceError> {
        Ok(())
    }
    fn source<R: Run>(&self, w: &Worker<'_, ()>, run: R) -> R::Out {
        run.run(Ok(Metadata::new(self, &w.job.name, w.thread, w.job_dir())))
    }
}

impl Source for Metadata {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.job) as usize
    }

    /// Make the names the timed calls need to exist (stat, delete), untimed, before the start;
    /// a name already there is refused and what this thread made is removed again.
    fn setup(&mut self) -> Result<Vec<super::SetupFile>, SourceError> {
        if !self.job.op.needs_existing() {
            return Ok(Vec::new());
        }
        let b = self.root.beneath()?;
        let data = vec![0x5au8; self.job.file_size.0.clamp(1, 1 << 20) as usize];
        for n in 0..self.job.files as usize {
            if let Err(e) = self.make(&b, n, &data) {
                let path = self.root.path.join(self.name(n));
                for k in (0..n).rev() {
                    let rel = self.name(k);
                    let _ = if self.job.op.on_dirs() { b.rmdir(Path::new(&rel)) } else { b.unlink(Path::new(&rel)) };
                }
                return Err(match e.kind() {
                    io::ErrorKind::AlreadyExists => SourceError::Said(format!(
                        "{} exists (left by an interrupted run?): iolab works only on names it makes; remove it or choose another job name",
                        path.display()
                    )),
                    _ => super::io_error("making", path, "")(e),
                });
            }
            self.made = n + 1;
        }
        Ok(Vec::new())
    }

    fn timed_span(&self) -> bool {
        true
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        if self.open {
            self.open = false;
            return Next::Issue(Issue::untimed(Call::Close { file: FILE }));
        }
        let issue = match self.stage {
            // The names, once, before the start barrier (what is left of them shrinks later).
            Stage::Ready => {
                for n in 0..self.job.files as usize {
                    let Ok(id) = ctx.names.add(self.name(n)) else { return Next::Done };
                    self.names.push(id);
                }
                (self.stage, self.at) = (Stage::Timed, 0);
                return Next::Barrier;
            }
            Stage::Timed => match self.names.get(self.at).copied() {
                Some(n) if !ctx.ending => {
                    self.at += 1;
                    let call = match self.job.op {
                        MetaOp::FileCreate => {
                            self.open = true;
                            Call::Open { name: n, file: FILE, flags: create() }
                        }
                        MetaOp::FileStat | MetaOp::DirStat => Call::Stat { name: n },
                        MetaOp::FileDelete => Call::Unlink { name: n },
                        MetaOp::DirCreate => Call::Mkdir { name: n },
                        MetaOp::DirDelete => Call::Rmdir { name: n },
                    };
                    Issue::now(call)
                }
                _ => {
                    self.left_after(self.at);
                    return self.next(ctx);
                }
            },
            Stage::Clean => match self.names.get(self.at).copied() {
                Some(n) => {
                    self.at += 1;
                    self.remove(n)
                }
                None => {
                    self.stage = Stage::Done;
                    return self.next(ctx);
                }
            },
            Stage::Done => return Next::Done,
        };
        Next::Issue(issue)
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let failed = match r {
            Ok(_) => None,
            Err(_) => {
                // The name the call was about: the stage's previous one.
                let path = self.root.path.join(self.name(self.at.saturating_sub(1)));
                Some(describe_failure(call, &path.display().to_string(), 0, 0, r))
            }
        };
        match (self.stage, failed) {
            // A timed call failed: what is left is removed first (a create that failed made
            // nothing; its name is not removed), then the failure is said.
            (Stage::Timed, Some(e)) => {
                self.open = false;
                let reached = match self.job.op {
                    MetaOp::FileCreate | MetaOp::DirCreate => self.at - 1,
                    _ => self.at,
                };
                self.left_after(reached);
                if self.at >= self.names.len() {
                    return Err(e);
                }
                self.failed = Some(e);
                Ok(())
            }
            (_, Some(e)) => Err(self.failed.take().unwrap_or(e)),
            (Stage::Clean, None) if self.at >= self.names.len() => self.failed.take().map_or(Ok(()), Err),
            (_, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, TscClock};
    use crate::source::Names;
    use crate::worker::{run, Window};
    use iolab_model::OpClass;
    use iolab_spec::Bytes;
    use std::sync::atomic::AtomicBool;

    fn run_op(op: MetaOp, root: &std::path::Path) -> (iolab_model::Acc, Option<String>) {
        let (end, _) = run_n(op, root, 10);
        (end.acc, end.error.map(|e| e.to_string()))
    }

    /// One thread over `files` names, set up as the executor sets it up; its end and the
    /// loop's start.
    fn run_n(op: MetaOp, root: &std::path::Path, files: u64) -> (crate::worker::WorkerEnd, crate::clock::Stamp) {
        let job = MetadataJob { op, files, io_size: Bytes::kib(4), writes: false, file_size: Bytes(0) };
        let mut src = Metadata::new(&job, "t", 0, JobDir { path: root.to_path_buf(), dir: None });
        let clk = TscClock::new();
        let now = Clock::now(&clk);
        if let Err(e) = src.setup() {
            let end = crate::worker::WorkerEnd {
                sec: 0,
                acc: Default::default(),
                end: now,
                error: Some(e),
                began: None,
                last_timed: None,
            };
            return (end, now);
        }
        let setup = iolab_engine::Setup::new(1, 512);
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, setup).unwrap();
        let w = Window { start: now, t0: now, deadline: None };
        let mut names = Names::new(root);
        let barrier = crate::rendezvous::Rendezvous::new(1);
        let end = run(&mut src, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        (end, now)
    }

    #[test]
    fn each_engine_times_one_call_per_name_on_real_files_and_removes_what_it_made() {
        let d = tempfile::tempdir().unwrap();
        for (op, class) in [
            (MetaOp::FileCreate, OpClass::Create),
            (MetaOp::FileStat, OpClass::Stat),
            (MetaOp::FileDelete, OpClass::Unlink),
            (MetaOp::DirCreate, OpClass::Mkdir),
            (MetaOp::DirStat, OpClass::Stat),
            (MetaOp::DirDelete, OpClass::Rmdir),
        ] {
            let (acc, err) = run_op(op, d.path());
            assert!(err.is_none(), "{op}: {err:?}");
            let timed: Vec<(OpClass, u64)> = acc.iter().map(|(c, a)| (c, a.ops)).filter(|x| x.1 > 0).collect();
            assert_eq!(timed, vec![(class, 10)], "{op}: only its ten calls are counted");
            assert!(acc.get(class).hist.as_ref().is_some_and(|h| h.len() == 10), "{op}: ten latencies");
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "{op}: what it made is gone");
        }
    }

    #[test]
    fn a_name_already_there_is_refused_left_alone_and_what_it_made_removed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("t.0.3"), b"theirs").unwrap();
        for op in [MetaOp::FileDelete, MetaOp::FileStat, MetaOp::FileCreate] {
            let (acc, err) = run_op(op, d.path());
            assert!(err.as_ref().is_some_and(|e| e.contains("t.0.3")), "{op}: {err:?}");
            if op == MetaOp::FileCreate {
                // Its three creates before the name already there are counted.
                assert_eq!(acc.iter().map(|(_, a)| a.ops).sum::<u64>(), 3, "{op}");
            } else {
                assert!(err.is_some_and(|e| e.contains("exists (left by an interrupted run?)")), "{op}");
                assert_eq!(acc.iter().map(|(_, a)| a.ops).sum::<u64>(), 0, "{op}");
            }
            assert_eq!(std::fs::read(d.path().join("t.0.3")).unwrap(), b"theirs", "{op}");
            let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(left, vec![std::ffi::OsString::from("t.0.3")], "{op}: only theirs is left");
        }
    }

    #[test]
    fn stat_and_delete_find_files_of_the_size_fio_lays_out() {
        let d = tempfile::tempdir().unwrap();
        let job = MetadataJob { op: MetaOp::FileStat, files: 3, io_size: Bytes::kib(4), writes: false, file_size: Bytes::kib(12) };
        let mut src = Metadata::new(&job, "t", 0, JobDir { path: d.path().to_path_buf(), dir: None });
        src.setup().unwrap();
        for n in 0..3 {
            assert_eq!(std::fs::metadata(d.path().join(format!("t.0.{n}"))).unwrap().len(), 12 << 10);
        }
    }

    #[test]
    fn the_job_time_is_from_the_start_barrier_to_the_last_timed_call() {
        let d = tempfile::tempdir().unwrap();
        for op in [MetaOp::FileStat, MetaOp::FileDelete, MetaOp::FileCreate] {
            let (end, start) = run_n(op, d.path(), 500);
            assert!(end.error.is_none(), "{op}: {:?}", end.error);
            let (from, last) = end.timed_span().expect("it met its start barrier");
            assert!(start <= from && from <= last && last <= end.end, "{op}: {start:?} {from:?} {last:?} {:?}", end.end);
            // The removal after the last timed call (500 unlinks, for create and stat) is outside
            // the span, and for stat and delete so is the making before the barrier (500 creates).
            if op != MetaOp::FileDelete {
                assert!(last < end.end, "{op}: the removal after is not in the span");
            }
            assert!(last - from < end.end - start, "{op}: the span is less than the loop");
            if op != MetaOp::FileCreate {
                assert!(from > start, "{op}: the making before the barrier is not in the span");
            }
        }
    }
}
