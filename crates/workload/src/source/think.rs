//! Think time around any source (`--think`, fio's thinktime): after every N blocks (completed,
//! or issued) or once a stretch of I/O time has passed, let what is in flight complete, spin
//! the CPU for part of the stall and sleep the rest, then go on. A wrapper, chosen only for a
//! job with a think time, so a job without one runs its source with nothing added per
//! operation. The stall is not an operation: nothing is timed while the thread thinks, and
//! the next I/O's latency runs from its own issue.

use super::{Call, Ctx, Next, Source, SourceError};
use crate::clock::Stamp;
use iolab_spec::think::Think;
use std::io;
use std::time::Instant;

pub struct Thinking<S> {
    inner: S,
    think: Think,
    blocks: u64,
    /// Blocks counted (issued or completed, as `think.on_issue` says) and at the last stall.
    count: u64,
    last: u64,
    /// When the last stall ended (or the start), for `iotime`.
    since: Stamp,
    state: State,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Running,
    /// A stall is due: drain what is in flight first.
    Quiesce,
    /// Sleeping until this instant.
    Sleeping(Stamp),
}

impl<S: Source> Thinking<S> {
    pub fn new(inner: S, think: Think) -> Self {
        Thinking { inner, blocks: think.blocks(), think, count: 0, last: 0, since: Stamp(0), state: State::Running }
    }

    fn due(&self, now: Stamp) -> bool {
        self.count >= self.last.saturating_add(self.blocks) || self.think.iotime.is_some_and(|t| now >= self.since + t)
    }
}

/// A read or a write (what fio counts as a block).
fn is_block(call: &Call) -> bool {
    matches!(call, Call::Data { kind, .. } if kind.reads() || kind.writes())
}

impl<S: Source> Source for Thinking<S> {
    forward_to_inner!(plain, io_errors);
    fn start(&mut self, at: Stamp) {
        self.since = at;
        self.inner.start(at)
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        loop {
            match self.state {
                State::Running => {
                    if !ctx.ending && self.due(ctx.now) {
                        self.state = State::Quiesce;
                        continue;
                    }
                    let next = self.inner.next(ctx);
                    if self.think.on_issue {
                        if let Next::Issue(i) = &next {
                            if is_block(&i.call) {
                                self.count += 1;
                            }
                        }
                    }
                    return next;
                }
                State::Quiesce => {
                    if ctx.inflight > 0 {
                        return Next::Drain;
                    }
                    // Spin for part of the stall (fio's thinktime_spin), sleep the rest.
                    let spin = self.think.spin;
                    if !spin.is_zero() {
                        let begin = Instant::now();
                        while begin.elapsed() < spin {
                            std::hint::spin_loop();
                        }
                    }
                    self.state = State::Sleeping(ctx.now + self.think.time);
                }
                State::Sleeping(until) => {
                    if ctx.now < until && !ctx.ending {
                        return Next::WaitUntil(until);
                    }
                    self.last = self.count;
                    self.since = ctx.now;
                    self.state = State::Running;
                }
            }
        }
    }

    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        if !self.think.on_issue && is_block(call) {
            self.count += 1;
        }
        self.inner.completed(call, buf, result)
    }
}

/// The stalls a think time adds to `ops` blocks one at a time (for the tests' expectations).
#[cfg(test)]
pub(crate) fn stalls(think: &Think, ops: u64) -> u64 {
    ops / think.blocks()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_plan, Control, NoSink};
    use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw};
    use std::time::Duration;

    /// 64 reads of 4 KiB from a real file, with a think time of 20 ms after every 8: 8 stalls,
    /// so at least 160 ms; without it, far less. The reads' latencies do not include the stalls.
    #[test]
    fn a_think_time_stalls_between_blocks_and_is_not_in_the_latency() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 256 << 10]).unwrap();
        let run = |think: Option<Duration>, on_issue: bool| {
            let job = JobPatch {
                target: Some(path.clone()),
                rw: Some(Rw::Read),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                size: Some(Bytes::kib(256)),
                overwrite: Some(true),
                think,
                think_every: think.map(|_| 8),
                think_on_issue: on_issue.then_some(true),
                ..Default::default()
            }
            .resolve("t")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "t".into(), jobs: vec![job] }] };
            run_plan(&plan, &Control::default(), &mut NoSink).unwrap()
        };
        let think = Think {
            time: Duration::from_millis(20),
            every: Some(8),
            spin: Duration::ZERO,
            on_issue: false,
            iotime: None,
        };
        assert_eq!(stalls(&think, 64), 8);
        for on_issue in [false, true] {
            let r = run(Some(Duration::from_millis(20)), on_issue);
            let p = &r.phases[0];
            assert_eq!(p.total.read().ops, 64);
            assert!(
                p.elapsed_s >= 0.15,
                "8 stalls of 20 ms (the last one at the end, cut by nothing): {} s",
                p.elapsed_s
            );
            assert!(p.total.read().lat_ns.max < 15_000_000, "a stall is not in a read's latency");
        }
        let r = run(None, false);
        assert!(r.phases[0].elapsed_s < 0.1, "without a think time: {} s", r.phases[0].elapsed_s);
    }
}
