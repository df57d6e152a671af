//! The metadata workload's source (`--workload metadata`, fio's `filecreate`, `filestat`,
//! `filedelete`, `dircreate`, `dirstat` and `dirdelete`; its options and rules are
//! crates/spec/src/metadata.rs). The job's threads share one directory, `iolab.<job>`, as
//! fio's threads share the job's directory: the first thread makes it before the start
//! (refusing one already there, so it never touches what it did not make). Each thread names
//! its files as fio does (`<job>.<thread>.<n>`), makes them untimed first where the call needs
//! them to exist (stat, delete), waits for the job's other threads (the start barrier), then
//! makes one timed call per name, and at the end removes what is left, untimed; once every
//! thread is done the first removes the directory. The job's time is the timed calls' alone,
//! from the start barrier to the last of them ([`Source::timed_span`]), as fio's is.

use super::{
    describe_failure, Call, Ctx, Issue, JobDir, NameId, Next, OpenFlags, PersonalitySource, Run, SetupFile, Source,
    SourceError, Worker,
};
use iolab_spec::metadata::MetaOp;
use iolab_spec::{Job, MetadataJob};
use std::io;

pub struct Metadata {
    job: MetadataJob,
    /// The job's directory, `iolab.<job>`, shared by its threads.
    dir: String,
    /// Where it is made (by thread 0, before the start).
    root: JobDir,
    thread: u32,
    /// fio's name of the thread's files, before their number: `<job>.<thread>.`.
    prefix: String,
    dir_id: Option<NameId>,
    names: Vec<NameId>,
    stage: Stage,
    /// The name the stage is at.
    at: usize,
    /// A file created and not yet closed (its close comes next).
    open: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Make the names the timed call needs to exist (untimed).
    Prepare,
    /// Wait for the job's other threads to be ready.
    Ready,
    Timed,
    /// Remove what is left (untimed).
    Clean,
    /// Wait for the job's other threads to be done with the directory.
    EndBarrier,
    RemoveDir,
    Done,
}

const FILE: u32 = 0; // a created file's index in the worker's file table

impl Metadata {
    pub fn new(job: &MetadataJob, name: &str, thread: u32, root: JobDir) -> Self {
        Metadata {
            job: job.clone(),
            dir: format!("iolab.{name}"),
            root,
            thread,
            prefix: format!("{name}.{thread}."),
            dir_id: None,
            names: Vec::new(),
            stage: Stage::Prepare,
            at: 0,
            open: false,
        }
    }

    /// The untimed call that makes name `n` (a file created and then closed, or a directory).
    fn make(&mut self, n: NameId) -> Issue {
        if self.job.op.on_dirs() {
            return Issue::untimed(Call::Mkdir { name: n });
        }
        self.open = true;
        Issue::untimed(Call::Open { name: n, file: FILE, flags: create() })
    }

    /// The untimed call that removes name `n`.
    fn remove(&self, n: NameId) -> Issue {
        Issue::untimed(if self.job.op.on_dirs() { Call::Rmdir { name: n } } else { Call::Unlink { name: n } })
    }

}

/// fio's filecreate: open(O_CREAT|O_RDWR); O_EXCL as well, as the directory is iolab's own and
/// fresh (a name already there is an error, never a file opened that iolab did not make).
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

    /// The first thread makes the job's directory before the start, refusing one already
    /// there (the layout refused it too, before the run; this is the moment it is made).
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        if self.thread == 0 {
            let b = self.root.beneath()?;
            b.mkdir(std::path::Path::new(&self.dir)).map_err(|e| {
                let path = self.root.path.join(&self.dir);
                match e.kind() {
                    io::ErrorKind::AlreadyExists => SourceError::Said(format!(
                        "{} exists (left by an interrupted run?); remove it or choose another job name",
                        path.display()
                    )),
                    _ => super::io_error("creating", path, "")(e),
                }
            })?;
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
        let Some(dir) = self.dir_id else {
            let Ok(dir) = ctx.names.add(&self.dir) else { return Next::Done };
            self.dir_id = Some(dir);
            for n in 0..self.job.files {
                let Ok(id) = ctx.names.add(format!("{}/{}{n}", self.dir, self.prefix)) else { return Next::Done };
                self.names.push(id);
            }
            return self.next(ctx);
        };
        let issue = match self.stage {
            Stage::Prepare => match self.names.get(self.at).copied().filter(|_| self.job.op.needs_existing()) {
                Some(n) => {
                    self.at += 1;
                    self.make(n)
                }
                None => {
                    self.stage = Stage::Ready;
                    return self.next(ctx);
                }
            },
            Stage::Ready => {
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
                    // What is left: the names the timed calls made, or all that Prepare made
                    // less those the timed calls removed.
                    let reached = self.at;
                    let (from, to) = match self.job.op {
                        MetaOp::FileCreate | MetaOp::DirCreate => (0, reached),
                        MetaOp::FileStat | MetaOp::DirStat => (0, self.names.len()),
                        MetaOp::FileDelete | MetaOp::DirDelete => (reached, self.names.len()),
                    };
                    self.names.truncate(to);
                    (self.stage, self.at) = (Stage::Clean, from);
                    return self.next(ctx);
                }
            },
            Stage::Clean => match self.names.get(self.at).copied() {
                Some(n) => {
                    self.at += 1;
                    self.remove(n)
                }
                None => {
                    self.stage = Stage::EndBarrier;
                    return self.next(ctx);
                }
            },
            Stage::EndBarrier => {
                self.stage = if self.thread == 0 { Stage::RemoveDir } else { Stage::Done };
                return Next::Barrier;
            }
            Stage::RemoveDir => {
                self.stage = Stage::Done;
                Issue::untimed(Call::Rmdir { name: dir })
            }
            Stage::Done => return Next::Done,
        };
        Next::Issue(issue)
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        match (call, r) {
            (_, Ok(_)) => Ok(()),
            (Call::Rmdir { name }, Err(e)) if Some(*name) == self.dir_id && e.raw_os_error() == Some(libc::ENOTEMPTY) => {
                Err(format!("{} is not empty at the end: a file iolab did not create is in it, and is left as it was", self.dir)
                    .into())
            }
            (_, Err(_)) => {
                // The name the call was about: the stage's previous one, else the directory.
                let path = match self.at.checked_sub(1) {
                    Some(i) if matches!(self.stage, Stage::Prepare | Stage::Timed | Stage::Clean) => {
                        format!("{}/{}{i}", self.dir, self.prefix)
                    }
                    _ => self.dir.clone(),
                };
                Err(describe_failure(call, &path, 0, 0, r))
            }
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
        let job = MetadataJob { op, files, io_size: Bytes::kib(4), writes: false };
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
            assert!(!d.path().join("iolab.t").exists(), "{op}: its directory is gone");
        }
    }

    #[test]
    fn a_directory_of_its_name_already_there_is_refused_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("iolab.t")).unwrap();
        std::fs::write(d.path().join("iolab.t/t.0.0"), b"theirs").unwrap();
        for op in [MetaOp::FileDelete, MetaOp::FileCreate] {
            let (acc, err) = run_op(op, d.path());
            assert!(err.is_some_and(|e| e.contains("exists (left by an interrupted run?)")), "{op}");
            assert_eq!(acc.iter().map(|(_, a)| a.ops).sum::<u64>(), 0);
            assert_eq!(std::fs::read(d.path().join("iolab.t/t.0.0")).unwrap(), b"theirs");
        }
    }

    #[test]
    fn the_job_time_is_from_the_start_barrier_to_the_last_timed_call() {
        let d = tempfile::tempdir().unwrap();
        for op in [MetaOp::FileStat, MetaOp::FileDelete, MetaOp::FileCreate] {
            let (end, start) = run_n(op, d.path(), 500);
            assert!(end.error.is_none(), "{op}: {:?}", end.error);
            let (from, last) = end.timed_span().expect("it met its start barrier");
            assert!(start <= from && from <= last && last < end.end, "{op}: {start:?} {from:?} {last:?} {:?}", end.end);
            // The removal after the last timed call (500 unlinks or rmdirs) is outside the span,
            // and for stat and delete so is the making before the barrier (500 creates).
            assert!(last - from < end.end - start, "{op}: the span is less than the loop");
            if op != MetaOp::FileCreate {
                assert!(from > start, "{op}: the making before the barrier is not in the span");
            }
        }
    }
}
