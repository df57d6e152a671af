//! The append-only log's source (`--workload append-log`; its options and rules are
//! crates/spec/src/append_log.rs): each thread makes its own directory, creates its log there
//! (O_CREAT|O_EXCL|O_APPEND, and O_DIRECT under `--direct`), appends a record at the file
//! position with `write(2)` until its records are written or the time is up, an fsync after
//! every N, closes it, and removes the log and the directory (untimed, outside what is
//! measured). It is the personality docs/architecture.md shows: this file and one line in the
//! list of `source/mod.rs` are all it takes.

use super::{describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_spec::{AppendLogJob, Job};
use std::io;

pub struct AppendLog {
    log: AppendLogJob,
    /// The thread's directory, `iolab.<job>.<thread>`.
    dir: String,
    direct: bool,
    state: State,
    dir_id: Option<NameId>,
    file_id: Option<NameId>,
    written: u64,
    since_sync: u64,
    fsyncs: u64,
    /// The first append's issue and the close's: the log's time.
    first: Option<Stamp>,
    last: Option<Stamp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    MakeDir,
    Create,
    Append,
    Unlink,
    RemoveDir,
    Done,
}

const LOG: u32 = 0; // the log's index in the worker's file table

impl AppendLog {
    pub fn new(log: &AppendLogJob, job: &str, thread: u32, direct: bool) -> Self {
        AppendLog {
            log: log.clone(),
            dir: format!("iolab.{job}.{thread}"),
            direct,
            state: State::MakeDir,
            dir_id: None,
            file_id: None,
            written: 0,
            since_sync: 0,
            fsyncs: 0,
            first: None,
            last: None,
        }
    }

    fn more(&self, ending: bool) -> bool {
        !ending && self.log.records.is_none_or(|n| self.written < n)
    }
}

impl PersonalitySource for AppendLogJob {
    type Shared = ();
    fn shared(&self, _job: &Job) -> Result<(), SourceError> {
        Ok(())
    }
    fn source<R: Run>(&self, w: &Worker<'_, ()>, run: R) -> R::Out {
        run.run(Ok(AppendLog::new(self, &w.job.name, w.thread, w.job.direct)))
    }
}

impl Source for AppendLog {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.log) as usize
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        let (Some(dir), Some(file)) = (self.dir_id, self.file_id) else {
            let (Ok(dir), Ok(file)) = (ctx.names.add(&self.dir), ctx.names.add(format!("{}/append.log", self.dir)))
            else {
                return Next::Done;
            };
            (self.dir_id, self.file_id) = (Some(dir), Some(file));
            return self.next(ctx);
        };
        let issue = match self.state {
            State::MakeDir => {
                self.state = State::Create;
                Issue::untimed(Call::Mkdir { name: dir })
            }
            State::Create => {
                let flags = OpenFlags {
                    write: true,
                    create: true,
                    exclusive: true,
                    append: true,
                    direct: self.direct,
                    ..Default::default()
                };
                self.state = State::Append;
                Issue::now(Call::Open { name: file, file: LOG, flags })
            }
            State::Append if self.log.fsync_every > 0 && self.since_sync >= self.log.fsync_every => {
                self.since_sync = 0;
                self.fsyncs += 1;
                Issue::now(Call::Data { kind: OpKind::Fsync, file: LOG, offset: 0, len: 0 })
            }
            State::Append if self.more(ctx.ending) => {
                self.first.get_or_insert(ctx.now);
                self.written += 1;
                self.since_sync += 1;
                Issue::now(Call::Data { kind: OpKind::WriteCur, file: LOG, offset: 0, len: self.log.record_size.0 as u32 })
            }
            State::Append => {
                self.last = Some(ctx.now);
                self.state = State::Unlink;
                Issue::now(Call::Close { file: LOG })
            }
            State::Unlink => {
                self.state = State::RemoveDir;
                Issue::untimed(Call::Unlink { name: file })
            }
            State::RemoveDir => {
                self.state = State::Done;
                Issue::untimed(Call::Rmdir { name: dir })
            }
            State::Done => return Next::Done,
        };
        Next::Issue(issue)
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let path = format!("{}/append.log", self.dir);
        match (call, r) {
            (Call::Data { kind: OpKind::WriteCur, len, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &path, *len, 0, r))
            }
            (Call::Mkdir { .. }, Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => Err(format!(
                "{} exists (left by an interrupted run?); remove it or choose another job name",
                self.dir
            )
            .into()),
            (_, Ok(_)) => Ok(()),
            (Call::Mkdir { .. } | Call::Rmdir { .. }, Err(_)) => Err(describe_failure(call, &self.dir, 0, 0, r)),
            (_, Err(_)) => Err(describe_failure(call, &path, self.log.record_size.0 as u32, 0, r)),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let elapsed = match (self.first, self.last) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        vec![
            ("records", self.written as f64),
            ("bytes_appended", (self.written * self.log.record_size.0) as f64),
            ("fsyncs", self.fsyncs as f64),
            ("elapsed_s", elapsed),
        ]
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

    #[test]
    fn appends_records_with_a_flush_every_n_on_a_real_file_and_removes_them() {
        let d = tempfile::tempdir().unwrap();
        let log = AppendLogJob { record_size: Bytes(512), records: Some(10), fsync_every: 4 };
        let mut src = AppendLog::new(&log, "j", 0, false);
        let setup = iolab_engine::Setup::new(1, 512);
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, setup).unwrap();
        let clk = TscClock::new();
        let now = Clock::now(&clk);
        let w = Window { start: now, t0: now, deadline: None };
        let mut names = Names::new(d.path());
        let barrier = crate::rendezvous::Rendezvous::new(1);
        let end = run(&mut src, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        assert!(end.error.is_none(), "{:?}", end.error);
        let count = |c| end.acc.get(c).ops;
        assert_eq!(
            (count(OpClass::Create), count(OpClass::Write), count(OpClass::Sync), count(OpClass::Close)),
            (1, 10, 2, 1)
        );
        assert_eq!(end.acc.get(OpClass::Write).bytes, 5120);
        assert_eq!((count(OpClass::Unlink), count(OpClass::Rmdir)), (0, 0), "its cleanup is not counted");
        assert!(!d.path().join("iolab.j.0").exists(), "the log and its directory are gone");
        let f: std::collections::BTreeMap<_, _> = src.figures().into_iter().collect();
        assert_eq!((f["records"], f["bytes_appended"], f["fsyncs"]), (10.0, 5120.0, 2.0));
        // A directory of the log's name left there: the job says why and touches nothing in it.
        std::fs::create_dir(d.path().join("iolab.j.0")).unwrap();
        std::fs::write(d.path().join("iolab.j.0/append.log"), b"theirs").unwrap();
        let mut again = AppendLog::new(&log, "j", 0, false);
        let mut names = Names::new(d.path());
        let end = run(&mut again, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        assert!(end.error.unwrap().to_string().contains("exists (left by an interrupted run?)"));
        assert_eq!(std::fs::read(d.path().join("iolab.j.0/append.log")).unwrap(), b"theirs");
    }
}
