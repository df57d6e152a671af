//! A source in one file, as docs/architecture.md shows it: an append-only log that creates its
//! file, appends fixed-size records at the file position, fsyncs every N records, and closes
//! the file at the end. It is what a personality, a replay or a validator looks like: no part
//! of the executor changes to add one.

use super::{describe_failure, Call, Ctx, Issue, Next, OpenFlags, Source};
use iolab_engine::OpKind;
use std::io;

pub struct AppendLog {
    pub record: u32,
    pub records: u64,
    pub fsync_every: u64,
    written: u64,
    since_sync: u64,
    state: State,
}

#[derive(PartialEq)]
enum State {
    Create,
    Append,
    Done,
}

const LOG: u32 = 0; // the file's index in the worker's file table

impl AppendLog {
    pub fn new(record: u32, records: u64, fsync_every: u64) -> Self {
        AppendLog { record, records, fsync_every, written: 0, since_sync: 0, state: State::Create }
    }
}

impl Source for AppendLog {
    fn buffer_len(&self) -> usize {
        self.record as usize
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        let call = match self.state {
            State::Create => {
                let Ok(name) = ctx.names.add("append.log") else { return Next::Done };
                let flags =
                    OpenFlags { write: true, create: true, exclusive: true, append: true, ..Default::default() };
                self.state = State::Append;
                Call::Open { name, file: LOG, flags }
            }
            State::Append if ctx.inflight > 0 => return Next::Drain,
            State::Append if self.fsync_every > 0 && self.since_sync >= self.fsync_every => {
                self.since_sync = 0;
                Call::Data { kind: OpKind::Fsync, file: LOG, offset: 0, len: 0 }
            }
            State::Append if self.written < self.records && !ctx.ending => {
                self.written += 1;
                self.since_sync += 1;
                Call::Data { kind: OpKind::WriteCur, file: LOG, offset: 0, len: self.record }
            }
            State::Append => {
                self.state = State::Done;
                Call::Close { file: LOG }
            }
            State::Done => return Next::Done,
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), String> {
        match (call, r) {
            (Call::Data { kind: OpKind::WriteCur, len, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, "append.log", *len, 0, r))
            }
            (_, Ok(_)) => Ok(()),
            (_, Err(_)) => Err(describe_failure(call, "append.log", self.record, 0, r)),
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
    use std::sync::atomic::AtomicBool;

    #[test]
    fn appends_records_with_a_flush_every_n_on_a_real_file() {
        let d = tempfile::tempdir().unwrap();
        let mut src = AppendLog::new(512, 10, 4);
        let mut e = iolab_engine::build("psync", 1, 512).unwrap();
        let clk = TscClock::new();
        let now = Clock::now(&clk);
        let w = Window { start: now, t0: now, deadline: None };
        let mut names = Names::new(d.path());
        let barrier = crate::rendezvous::Rendezvous::new(1);
        let end = run(&mut src, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        assert!(end.error.is_none(), "{:?}", end.error);
        assert_eq!(std::fs::metadata(d.path().join("append.log")).unwrap().len(), 5120);
        let count = |c| end.acc.get(c).ops;
        assert_eq!(
            (count(OpClass::Create), count(OpClass::Write), count(OpClass::Sync), count(OpClass::Close)),
            (1, 10, 2, 1)
        );
        // A second run finds the log there: O_EXCL refuses, and the job says why.
        let mut again = AppendLog::new(512, 10, 4);
        let end = run(&mut again, &mut *e, &mut names, &clk, w, &AtomicBool::new(false), &barrier, &mut |_, _| {});
        assert!(end.error.unwrap().contains("File exists"));
    }
}
