//! The metadata workload's source (`--workload metadata`, fio's `filecreate`, `filestat`,
//! `filedelete`, `dircreate`, `dirstat` and `dirdelete`; its options and rules are
//! crates/spec/src/metadata.rs). Each thread makes its own directory `iolab.<job>.<thread>`
//! (refusing one already there, so it never touches what it did not make), names its files as
//! fio does (`<job>.<thread>.<n>`), makes them untimed first where the call needs them to exist
//! (stat, delete), waits for the job's other threads, then makes one timed call per name, and
//! at the end removes what is left and its directory, untimed.

use super::{describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker};
use iolab_spec::metadata::MetaOp;
use iolab_spec::{Job, MetadataJob};
use std::io;

pub struct Metadata {
    job: MetadataJob,
    /// The thread's directory, `iolab.<job>.<thread>`.
    dir: String,
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
    MakeDir,
    /// Make the names the timed call needs to exist (untimed).
    Prepare,
    /// Wait for the job's other threads to be ready.
    Ready,
    Timed,
    /// Remove what is left (untimed).
    Clean,
    RemoveDir,
    Done,
}

const FILE: u32 = 0; // a created file's index in the worker's file table

impl Metadata {
    pub fn new(job: &MetadataJob, name: &str, thread: u32) -> Self {
        Metadata {
            job: job.clone(),
            dir: format!("iolab.{name}.{thread}"),
            prefix: format!("{name}.{thread}."),
            dir_id: None,
            names: Vec::new(),
            stage: Stage::MakeDir,
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
        run.run(Ok(Metadata::new(self, &w.job.name, w.thread)))
    }
}

impl Source for Metadata {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.job) as usize
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
            Stage::MakeDir => {
                self.stage = if self.job.op.needs_existing() { Stage::Prepare } else { Stage::Ready };
                Issue::untimed(Call::Mkdir { name: dir })
            }
            Stage::Prepare => match self.names.get(self.at).copied() {
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
                    self.stage = Stage::RemoveDir;
                    return self.next(ctx);
                }
            },
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
            (Call::Mkdir { name }, Err(e)) if Some(*name) == self.dir_id && e.kind() == io::ErrorKind::AlreadyExists => {
                Err(format!("{} exists (left by an interrupted run?); remove it or choose another job name", self.dir)
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
        let job = MetadataJob { op, files: 10, io_size: Bytes::kib(4), writes: false };
        let mut src = Metadata::new(&job, "t", 0);
        let setup = iolab_engine::Setup::new(1, 512);
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, setup).unwrap();
        let clk = TscClock::new();
        let now = Clock::now(&clk);
        let w = Window { start: now, t0: now, deadline: None };
        let mut names = Names::new(root);
        let barrier = crate::rendezvous::Rendezvous::new(1);
        let end = run(&mut src, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        (end.acc, end.error.map(|e| e.to_string()))
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
            assert!(!d.path().join("iolab.t.0").exists(), "{op}: its directory is gone");
        }
    }

    #[test]
    fn a_directory_of_its_name_already_there_is_refused_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("iolab.t.0")).unwrap();
        std::fs::write(d.path().join("iolab.t.0/t.0.0"), b"theirs").unwrap();
        for op in [MetaOp::FileDelete, MetaOp::FileCreate] {
            let (acc, err) = run_op(op, d.path());
            assert!(err.is_some_and(|e| e.contains("exists (left by an interrupted run?)")), "{op}");
            assert_eq!(acc.iter().map(|(_, a)| a.ops).sum::<u64>(), 0);
            assert_eq!(std::fs::read(d.path().join("iolab.t.0/t.0.0")).unwrap(), b"theirs");
        }
    }
}
