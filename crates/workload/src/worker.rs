//! One worker thread's measuring loop: ask the source for operations, issue them (data calls
//! through the engine, namespace calls through [`crate::ns`]), take one timestamp per reap,
//! and record each completion's latency into its class. At each second boundary the second's
//! counts go to `report`. It stops when the source is done, on an error, or on the stop flag;
//! past the deadline it tells the source to finish up. The clock is a parameter, so the tests
//! below check pacing, barriers, second boundaries and errors exactly, on no real time.

use crate::clock::{Clock, Stamp};
use crate::depth_search::{DepthSearch, Verdict};
use crate::lease::Lease;
use crate::ns;
use crate::rendezvous::Rendezvous;
use crate::source::{Call, Ctx, FileChange, Issue, Names, Next, Source, SourceError};
use iolab_engine::{Completion, Engine, Op};
use iolab_model::{Acc, OpClass, Recorder};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const TICK: Duration = Duration::from_secs(1);

/// When the worker's work starts, when the measured window starts (after the ramp), and when
/// its time is up.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start: Stamp,
    pub t0: Stamp,
    pub deadline: Option<Stamp>,
}

/// How the loop ended: the last second's index and its unsent counts, when, and why if early;
/// and when the source's timed calls ran, for a source whose time is only theirs
/// ([`Source::timed_span`]).
#[derive(Debug)]
pub struct WorkerEnd {
    pub sec: i64,
    pub acc: Acc,
    pub end: Stamp,
    pub error: Option<SourceError>,
    /// When the thread left the job's first barrier (its start barrier), if it met one.
    pub began: Option<Stamp>,
    /// When its last timed namespace call completed, if it made one.
    pub last_timed: Option<Stamp>,
}

impl WorkerEnd {
    /// The thread's measured time for a source whose time runs from its start barrier to its
    /// last timed call ([`Source::timed_span`]): that stretch (empty without a timed call);
    /// `None` for a source that met no barrier, whose time is the whole loop's.
    pub fn timed_span(&self) -> Option<(Stamp, Stamp)> {
        self.began.map(|b| (b, self.last_timed.map_or(b, |t| t.max(b))))
    }
}

/// Run `source` on `engine` until it is done. `report(sec, acc)` receives each finished second;
/// `barrier` is where the job's threads line up when the source asks ([`Next::Barrier`]).
/// Each round issues what it can ([`Loop::issue`]), then reaps and accounts what completed
/// ([`Loop::reap`]); on a synchronous engine with nothing in flight a data call is made and
/// accounted in place.
#[allow(clippy::too_many_arguments)]
pub fn run<C, S, E>(
    source: &mut S,
    engine: &mut E,
    names: &mut Names,
    clk: &C,
    w: Window,
    stop: &AtomicBool,
    barrier: &Rendezvous,
    report: &mut dyn FnMut(i64, Acc),
) -> WorkerEnd
where
    C: Clock + ?Sized,
    S: Source + ?Sized,
    E: Engine + ?Sized,
{
    run_leased(source, engine, names, clk, w, stop, (None, None), barrier, report, &mut Unobserved)
}

/// What the loop tells of each data call beside its counts (fio's per-I/O logs:
/// [`crate::io_log`]). Chosen when the worker starts: a run without per-I/O logs compiles the
/// loop with [`Unobserved`], whose calls are empty, so its hot path has nothing added.
pub trait Observe {
    /// A data call goes into `slot` with its own priority `prio` (0: the thread's).
    fn issued(&mut self, slot: u32, prio: u16);
    /// The data call in `slot` completed at `now`, `lat_ns` after it was issued, moving `bytes`.
    fn completed(&mut self, slot: u32, now: Stamp, lat_ns: u64, call: &Call, bytes: u64);
}

/// No observer: the loop as it is without per-I/O logs.
pub struct Unobserved;

impl Observe for Unobserved {
    #[inline(always)]
    fn issued(&mut self, _: u32, _: u16) {}
    #[inline(always)]
    fn completed(&mut self, _: u32, _: Stamp, _: u64, _: &Call, _: u64) {}
}

/// [`run`] under a lease ([`crate::lease`]): nothing is issued once it has run out; with a
/// latency target's search ([`crate::depth_search`]), its limit on the I/Os in flight; `obs`
/// sees each data call ([`Observe`]).
#[allow(clippy::too_many_arguments)]
pub fn run_leased<C, S, E, O>(
    source: &mut S,
    engine: &mut E,
    names: &mut Names,
    clk: &C,
    w: Window,
    stop: &AtomicBool,
    (lease, search): (Option<&Lease>, Option<&mut DepthSearch>),
    barrier: &Rendezvous,
    report: &mut dyn FnMut(i64, Acc),
    obs: &mut O,
) -> WorkerEnd
where
    C: Clock + ?Sized,
    S: Source + ?Sized,
    E: Engine + ?Sized,
    O: Observe,
{
    let mut l = Loop::new(source, engine, names, clk, w, stop, barrier, report, obs);
    l.lease = lease;
    l.lease_until = if lease.is_some() { w.start } else { Stamp(u64::MAX) };
    if let Some(s) = search {
        l.limit = s.limit();
        l.search = Some(s);
    }
    l.source.start(w.start);
    loop {
        let wait_until = l.issue();
        if l.inflight == 0 {
            if l.done || l.error.is_some() {
                break;
            }
            continue;
        }
        if !l.reap(wait_until) {
            break;
        }
    }
    WorkerEnd { sec: l.sec, acc: l.acc.take(), end: l.now, error: l.error, began: l.began, last_timed: l.last_timed }
}

/// Time `t` passed the lease's deadline as last seen: the lease read again. `None`: it has run
/// out; else its deadline now, on `clk` (never, without a lease). Out of line and given plain
/// values, so the loop's state stays in registers.
#[cold]
#[inline(never)]
fn lease_left<C: Clock + ?Sized>(lease: Option<&Lease>, clk: &C, t: Stamp) -> Option<Stamp> {
    let Some(lease) = lease else { return Some(Stamp(u64::MAX)) };
    let until = clk.at(lease.until());
    (t < until).then_some(until)
}

/// What the issuing of one call leads to.
enum Flow {
    /// Ask for the next call.
    Next,
    /// Stop issuing for this round (slots full, draining, done, an error).
    Stop,
    /// Nothing is due before this instant and calls are in flight: reap meanwhile.
    Wait(Stamp),
}

/// The measuring loop's state: the source and engine, the slots in flight (each one's call,
/// class and issue stamp), the current second's counts, and why issuing paused or ended.
struct Loop<'a, C: ?Sized, S: ?Sized, E: ?Sized, O> {
    source: &'a mut S,
    obs: &'a mut O,
    engine: &'a mut E,
    names: &'a mut Names,
    clk: &'a C,
    stop: &'a AtomicBool,
    barrier: &'a Rendezvous,
    report: &'a mut dyn FnMut(i64, Acc),
    t0: Stamp,
    deadline: Option<Stamp>,
    free: Vec<u32>,
    issued_at: Vec<Stamp>,
    meta: Vec<(Call, OpClass)>,
    comps: Vec<Completion>,
    inflight: usize,
    acc: Recorder,
    sec: i64,
    boundary: Stamp,
    now: Stamp,
    /// No more issuing (source done, stop, or error); in-flight work is still reaped.
    done: bool,
    /// The source asked for a barrier: issue nothing until everything in flight completed.
    draining: bool,
    /// A namespace call waiting for the data calls in flight before it.
    held: Option<Issue>,
    /// The source asked for the job's barrier: drain, then wait there.
    at_barrier: bool,
    /// The names the last readdir listed, handed to the source.
    listing: Vec<u8>,
    error: Option<SourceError>,
    /// The completion stamp of the synchronous call just made, if nothing came between.
    chained: Option<Stamp>,
    checks_reads: bool,
    times_itself: bool,
    /// The run's lease, and when it ran out as last seen (this clock's stamp; never, without
    /// one): the shared lease is read again only once time passes it.
    lease: Option<&'a Lease>,
    lease_until: Stamp,
    /// The most I/Os in flight: the engine's depth, or a latency target's search's limit.
    limit: usize,
    search: Option<&'a mut DepthSearch>,
    /// When the first barrier was met, and when the last timed namespace call completed
    /// (both off the data calls' path).
    began: Option<Stamp>,
    last_timed: Option<Stamp>,
}

impl<'a, C, S, E, O> Loop<'a, C, S, E, O>
where
    C: Clock + ?Sized,
    S: Source + ?Sized,
    E: Engine + ?Sized,
    O: Observe,
{
    #[allow(clippy::too_many_arguments)]
    fn new(
        source: &'a mut S,
        engine: &'a mut E,
        names: &'a mut Names,
        clk: &'a C,
        w: Window,
        stop: &'a AtomicBool,
        barrier: &'a Rendezvous,
        report: &'a mut dyn FnMut(i64, Acc),
        obs: &'a mut O,
    ) -> Self {
        let depth = engine.depth();
        let (checks_reads, times_itself) = (source.checks_reads(), source.times_itself());
        let mut l = Loop {
            source,
            obs,
            engine,
            names,
            clk,
            stop,
            barrier,
            report,
            t0: w.t0,
            deadline: w.deadline,
            free: (0..depth as u32).rev().collect(),
            issued_at: vec![w.start; depth],
            meta: vec![(Call::Close { file: 0 }, OpClass::Close); depth],
            comps: Vec::with_capacity(depth),
            inflight: 0,
            acc: Recorder::default(),
            sec: 0,
            boundary: w.start,
            now: w.start,
            done: false,
            draining: false,
            held: None,
            at_barrier: false,
            listing: Vec::new(),
            error: None,
            chained: None,
            checks_reads,
            times_itself,
            lease: None,
            lease_until: Stamp(u64::MAX),
            limit: depth,
            search: None,
            began: None,
            last_timed: None,
        };
        l.sec = l.sec_of(w.start);
        l.boundary = l.end_of(l.sec);
        l
    }

    /// The second `now` falls in: counted from t0, negative during the ramp.
    #[inline(always)]
    fn sec_of(&self, now: Stamp) -> i64 {
        if now >= self.t0 {
            (now - self.t0).as_secs() as i64
        } else {
            -(((self.t0 - now).as_nanos().div_ceil(TICK.as_nanos())) as i64)
        }
    }

    /// The instant second `sec` ends.
    #[inline(always)]
    fn end_of(&self, sec: i64) -> Stamp {
        if sec >= 0 {
            self.t0 + Duration::from_secs(sec as u64 + 1)
        } else {
            self.t0 - Duration::from_secs((-sec - 1) as u64)
        }
    }

    /// Close the second if `now` passed its end.
    #[inline(always)]
    fn at_boundary(&mut self) {
        if self.now >= self.boundary {
            if !self.acc.is_empty() {
                (self.report)(self.sec, self.acc.take());
            }
            self.sec = self.sec_of(self.now);
            self.boundary = self.end_of(self.sec);
        }
    }

    /// A self-timing source's own work since the last call (a journal write) goes to its own
    /// class.
    #[inline(always)]
    fn own_timings(&mut self) {
        if self.times_itself {
            let acc = &mut self.acc;
            self.source.take_timings(&mut |class, b, ns| acc.record(class, b, ns));
        }
    }

    /// Before an issue: when the call's clock starts, after the source's own timed work.
    #[inline(always)]
    fn issue_stamp(&mut self, t: Stamp) -> Stamp {
        if self.times_itself {
            self.own_timings();
            self.clk.now()
        } else {
            t
        }
    }

    /// Just before a call is made: whether the lease ran out meanwhile (the stamp the loop
    /// checked may be older than a SIGSTOP), on the coarse clock; the loop then ends. Without a
    /// lease, one branch.
    #[inline(always)]
    fn leased_out(&mut self) -> bool {
        if self.lease.is_some_and(|l| l.lapsed_coarse()) {
            self.done = true;
            return true;
        }
        false
    }

    /// Issue while there is room. `Some(due)`: nothing is due before then, with calls in flight.
    #[inline(always)]
    fn issue(&mut self) -> Option<Stamp> {
        while !self.done && !self.free.is_empty() && self.inflight < self.limit {
            match self.issue_one() {
                Flow::Next => {}
                Flow::Stop => return None,
                Flow::Wait(due) => return Some(due),
            }
        }
        None
    }

    #[inline(always)]
    fn issue_one(&mut self) -> Flow {
        if self.error.is_some() || self.stop.load(Ordering::Relaxed) {
            self.done = true;
            return Flow::Stop;
        }
        if self.draining {
            if self.inflight > 0 {
                return Flow::Stop;
            }
            self.draining = false;
        }
        if self.at_barrier && !self.meet() {
            return Flow::Stop;
        }
        // After a synchronous call, its completion stamp is the next call's issue stamp.
        let t = self.chained.take().unwrap_or_else(|| self.clk.now());
        if t >= self.lease_until {
            match lease_left(self.lease, self.clk, t) {
                Some(until) => self.lease_until = until,
                None => {
                    self.done = true;
                    return Flow::Stop;
                }
            }
        }
        let issue = match self.held.take() {
            Some(i) => i,
            None => match self.ask(t) {
                Ok(i) => i,
                Err(flow) => return flow,
            },
        };
        match issue.call {
            Call::Data { kind, file, offset, len } => {
                self.data(issue, Op { prio: issue.prio, ..Op::new(kind, file, offset, len, 0) }, t)
            }
            _ => self.namespace(issue, t),
        }
    }

    /// Wait for the job's other threads at its barrier (drained first); false if stopped.
    /// (Every method of the loop is inlined into `run`, so its state never leaves registers for
    /// memory that an out-of-line call could see.)
    #[inline(always)]
    fn meet(&mut self) -> bool {
        self.at_barrier = false;
        if !self.barrier.wait(self.stop) {
            self.done = true;
            return false;
        }
        self.chained = None;
        self.now = self.clk.now();
        self.began.get_or_insert(self.now);
        self.at_boundary();
        true
    }

    /// Ask the source for its next call (`t`: the time now); what else it wants comes back as
    /// the flow to follow.
    #[inline(always)]
    fn ask(&mut self, t: Stamp) -> Result<Issue, Flow> {
        let ending = self.deadline.is_some_and(|d| t >= d);
        let mut ctx = Ctx { now: t, inflight: self.inflight, ending, names: self.names };
        let next = self.source.next(&mut ctx);
        // Files the source places in or takes out of the table (shared openings), outside any
        // timed call.
        if self.inflight == 0 && !self.apply_changes() {
            self.done = true;
            return Err(Flow::Stop);
        }
        match next {
            Next::Issue(i) => Ok(i),
            Next::Done => {
                self.done = true;
                Err(Flow::Stop)
            }
            Next::Drain => {
                self.draining = true;
                Err(Flow::Next)
            }
            Next::Barrier => {
                self.draining = true;
                self.at_barrier = true;
                Err(Flow::Next)
            }
            Next::WaitUntil(due) if self.inflight > 0 => Err(Flow::Wait(due)),
            Next::WaitUntil(due) => {
                // Nothing in flight: sleep until due, waking to check for a stop, and never
                // past the deadline (a paced job's next slot may lie beyond it: the source is
                // then told its time is up).
                let due = self.deadline.map_or(due, |d| due.min(d));
                let mut t = t;
                while t < due && !self.stop.load(Ordering::Relaxed) {
                    self.clk.sleep((due - t).min(Duration::from_millis(50)));
                    t = self.clk.now();
                }
                // The loop's time is now, so a job that ends here ends now, not at its last call.
                self.now = t;
                self.at_boundary();
                Err(Flow::Next)
            }
        }
    }

    /// Apply the file-table changes the source asks for; false after an error.
    #[inline(always)]
    fn apply_changes(&mut self) -> bool {
        while let Some(change) = self.source.file_change() {
            if let Err(e) = apply(self.engine, change) {
                self.error.get_or_insert(e);
            }
        }
        self.error.is_none()
    }

    /// A data call: made in place on a synchronous engine with nothing in flight (one stamp
    /// serves as its completion and the next call's issue), else queued in a free slot.
    #[inline(always)]
    fn data(&mut self, issue: Issue, op: Op, t: Stamp) -> Flow {
        let call = issue.call;
        if self.engine.is_sync() && self.inflight == 0 {
            if op.kind.writes() {
                self.source.fill(&call, self.engine.buffer(0));
            }
            let t = self.issue_stamp(t);
            let begin = issue.due.unwrap_or(t);
            if self.leased_out() {
                return Flow::Stop;
            }
            self.obs.issued(op.slot, op.prio);
            match self.engine.perform_now(op) {
                Ok(c) => {
                    self.now = self.clk.now();
                    self.chained = Some(self.now);
                    self.at_boundary();
                    let lat = self.now.saturating_duration_since(begin).as_nanos() as u64;
                    self.account(c, call, call.class(), lat);
                    return Flow::Next;
                }
                Err(e) => {
                    self.error = Some(e.into());
                    return Flow::Stop;
                }
            }
        }
        let Some(slot) = self.free.pop() else { return Flow::Stop };
        if op.kind.writes() {
            self.source.fill(&call, self.engine.buffer(slot));
        }
        let t = self.issue_stamp(t);
        self.issued_at[slot as usize] = issue.due.unwrap_or(t);
        self.meta[slot as usize] = (call, call.class());
        if self.leased_out() {
            self.free.push(slot);
            return Flow::Stop;
        }
        self.obs.issued(slot, op.prio);
        if let Err(e) = self.engine.queue(Op { slot, ..op }) {
            self.error = Some(e.into());
            self.free.push(slot);
            return Flow::Stop;
        }
        self.inflight += 1;
        Flow::Next
    }

    /// A namespace call: a barrier to the data calls in flight (held until they complete),
    /// then made at once and accounted.
    #[inline(always)]
    fn namespace(&mut self, issue: Issue, t: Stamp) -> Flow {
        if self.inflight > 0 {
            self.held = Some(issue);
            self.draining = true;
            return Flow::Stop;
        }
        let call = issue.call;
        let begin = issue.due.unwrap_or(t);
        if self.leased_out() {
            return Flow::Stop;
        }
        let r = match call {
            Call::Readdir { name } => ns::readdir(self.names, name, &mut self.listing),
            _ => {
                let source = &mut *self.source;
                ns::perform(&call, self.names, self.engine, &mut |index, f| source.opened(index, f))
            }
        };
        self.now = self.clk.now();
        self.at_boundary();
        let listed: &[u8] = if matches!(call, Call::Readdir { .. }) { &self.listing } else { &[] };
        match self.source.completed(&call, listed, &r) {
            Ok(()) if r.is_ok() && issue.timed => {
                self.last_timed = Some(self.now);
                self.acc.record(call.class(), 0, (self.now - begin).as_nanos() as u64)
            }
            Ok(()) => {}
            Err(m) => self.error = Some(m),
        }
        Flow::Next
    }

    /// Commit what was queued and reap what completed, one stamp for the batch (or, waiting
    /// for a due call, take what is there and nap briefly); false when the loop must end.
    #[inline(always)]
    fn reap(&mut self, wait_until: Option<Stamp>) -> bool {
        if let Err(e) = self.engine.commit() {
            self.error.get_or_insert(e.into());
        }
        let want = match wait_until {
            Some(due) if !self.done && self.clk.now() < due => 0,
            _ => 1,
        };
        if let Err(e) = self.engine.reap(want, &mut self.comps) {
            self.error.get_or_insert(e.into());
            if self.comps.is_empty() {
                return false;
            }
        }
        if self.comps.is_empty() && want == 0 {
            if let Some(due) = wait_until {
                self.clk.sleep(due.saturating_duration_since(self.clk.now()).min(Duration::from_micros(50)));
            }
        }
        self.now = self.clk.now();
        self.at_boundary();
        let mut comps = std::mem::take(&mut self.comps);
        for c in comps.drain(..) {
            let slot = c.slot as usize;
            let (call, class) = self.meta[slot];
            let lat = self.now.saturating_duration_since(self.issued_at[slot]).as_nanos() as u64;
            self.free.push(c.slot);
            self.inflight -= 1;
            self.account(c, call, class, lat);
        }
        self.comps = comps;
        true
    }

    /// Account one completion of `call`: the source sees it (and, after a read it checks, the
    /// bytes), then its latency goes into its class unless the source ended the job.
    #[inline(always)]
    fn account(&mut self, c: Completion, call: Call, class: OpClass, lat: u64) {
        let r = c.result();
        let (bytes, buf): (u64, &[u8]) = match (&call, &r) {
            (Call::Data { kind, .. }, Ok(n)) if kind.reads() && self.checks_reads => {
                (*n as u64, &self.engine.buffer(c.slot)[..*n])
            }
            (Call::Data { kind, .. }, Ok(n)) if kind.moves_data() => (*n as u64, &[]),
            _ => (0, &[]),
        };
        match self.source.completed(&call, buf, &r) {
            Ok(()) if r.is_ok() => {
                self.obs.completed(c.slot, self.now, lat, &call, bytes);
                self.acc.record(class, bytes, lat);
                if self.search.is_some() && matches!(call, Call::Data { kind, .. } if kind.reads() || kind.writes()) {
                    self.steer(lat);
                }
            }
            Ok(()) => {}
            Err(m) => {
                self.error.get_or_insert(m);
            }
        }
        self.own_timings();
    }

    /// A latency target's search takes a data I/O's latency; the loop follows its verdict.
    #[inline(never)]
    fn steer(&mut self, lat: u64) {
        let Some(s) = self.search.as_deref_mut() else { return };
        match s.completed(lat, self.now) {
            Verdict::Go => {}
            // The limit came down (or the found depth's last window starts): what is in
            // flight completes first, as fio's quiesce.
            Verdict::Drain => self.draining = true,
            Verdict::Done => self.done = true,
            Verdict::Exceeded(took) => {
                self.error.get_or_insert(SourceError::Said(format!(
                    "latency target exceeded at queue depth 1: an I/O took {:.3} ms (a latency percentile of 100 allows none over the target; fio's \"max latency exceeded\")",
                    took.as_secs_f64() * 1e3
                )));
            }
        }
        self.limit = s.limit();
    }
}

/// Place a file in the engine's table or take one out, as the source asked.
fn apply<E: Engine + ?Sized>(engine: &mut E, change: FileChange) -> Result<(), SourceError> {
    match change {
        FileChange::Place(f) => {
            engine.set_file(f.index, f.file, f.len).map_err(|e| SourceError::Place { path: f.path, source: e })
        }
        FileChange::Drop(index) => engine.take_file(index).map(drop).map_err(SourceError::Engine),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::source::block::BlockSource;
    use iolab_engine::{EngineError, OpKind};
    use iolab_spec::{Job, JobPatch, Rw};
    use std::fs::File;

    fn job(rw: Rw, f: impl FnOnce(&mut JobPatch)) -> Job {
        let mut p = JobPatch {
            target: Some("/nowhere".into()),
            rw: Some(rw),
            size: Some(iolab_spec::Bytes::mib(1)),
            engine: Some(iolab_spec::EngineKind::Null),
            ..Default::default()
        };
        f(&mut p);
        p.resolve("t").unwrap()
    }

    /// An engine that keeps up to `depth` operations in flight, completes them only when
    /// reaped, logs what it was asked, and can fail one operation.
    struct LogEngine {
        depth: usize,
        buf: Vec<u8>,
        queued: Vec<Op>,
        log: Vec<(OpKind, usize)>,
        fail_at: Option<usize>,
    }

    impl LogEngine {
        fn new(depth: usize) -> Self {
            LogEngine { depth, buf: vec![0; 1 << 16], queued: Vec::new(), log: Vec::new(), fail_at: None }
        }
    }

    impl Engine for LogEngine {
        /// It queues and reaps as io_uring does.
        fn kind(&self) -> iolab_spec::EngineKind {
            iolab_spec::EngineKind::IoUring
        }
        fn name(&self) -> &'static str {
            "log"
        }
        fn depth(&self) -> usize {
            self.depth
        }
        fn set_file(&mut self, _: u32, _: File, _: u64) -> Result<(), EngineError> {
            Ok(())
        }
        fn take_file(&mut self, _: u32) -> Result<Option<File>, EngineError> {
            Ok(None)
        }
        fn free_index(&self) -> u32 {
            0
        }
        fn buffer(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
        fn queue(&mut self, op: Op) -> Result<(), EngineError> {
            // The log notes how many were in flight when each op was queued.
            self.log.push((op.kind, self.queued.len()));
            self.queued.push(op);
            Ok(())
        }
        fn commit(&mut self) -> Result<(), EngineError> {
            Ok(())
        }
        fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
            for op in self.queued.drain(..) {
                let n = self.log.len() - 1;
                let res = if self.fail_at.is_some_and(|f| f <= n) && op.kind.reads() {
                    self.fail_at = None;
                    -(libc::EIO as i64)
                } else if op.kind.is_sync() {
                    0
                } else {
                    op.len as i64
                };
                out.push(Completion { slot: op.slot, res });
            }
            Ok(())
        }
    }

    fn window(clk: &FakeClock, runtime: Option<Duration>) -> Window {
        let start = Clock::now(clk);
        Window { start, t0: start, deadline: runtime.map(|r| start + r) }
    }

    /// Run job `j`'s block source (thread 0, no file) on `e` for `runtime`, on the fake clock.
    fn block_run(
        j: &Job,
        e: &mut dyn Engine,
        clk: &FakeClock,
        runtime: Option<Duration>,
        stop: bool,
        report: &mut dyn FnMut(i64, Acc),
    ) -> WorkerEnd {
        let mut src = BlockSource::new(j, j.workload.block().unwrap(), 0, &[]);
        let (stop, barrier) = (AtomicBool::new(stop), Rendezvous::new(1));
        run(&mut src, e, &mut Names::default(), clk, window(clk, runtime), &stop, &barrier, report)
    }

    #[test]
    fn open_loop_pacing_issues_exactly_the_rate_and_times_from_the_due_instant() {
        let j = job(Rw::RandRead, |p| {
            p.rate_iops = Some(1000);
            p.runtime = Some(Duration::from_secs(1));
        });
        let clk = FakeClock::new(Duration::from_micros(1));
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Null, iolab_engine::Setup::new(1, 4096)).unwrap();
        let mut secs_acc = Vec::new();
        let end = block_run(&j, &mut *e, &clk, j.runtime, false, &mut |s, a| secs_acc.push((s, a)));
        assert!(end.error.is_none());
        let total: u64 =
            secs_acc.iter().map(|x| x.1.get(OpClass::Read).ops).sum::<u64>() + end.acc.get(OpClass::Read).ops;
        assert_eq!(total, 1000, "1000 IOPS for 1 s");
        // Each read took a few fake microseconds after its due time.
        let mut all = end.acc.clone();
        for (_, a) in &secs_acc {
            all.merge(a);
        }
        let h = all.get(OpClass::Read).hist.clone().expect("reads were timed");
        assert!(h.max() < 20_000, "latency from the due instant, not from the run's start: {}", h.max());
    }

    /// The lease binds the I/O: nothing is issued once it has run out, checked on the loop's
    /// own clock (the fake clock here: 1 ms per reading, one reading per synchronous write).
    #[test]
    fn nothing_is_issued_past_the_lease() {
        let j = job(Rw::Write, |p| p.size = Some(iolab_spec::Bytes::gib(1)));
        let run_with = |lease: &Lease| {
            let clk = FakeClock::new(Duration::from_millis(1));
            let mut e = iolab_engine::build(iolab_spec::EngineKind::Null, iolab_engine::Setup::new(1, 4096)).unwrap();
            let mut src = BlockSource::new(&j, j.workload.block().unwrap(), 0, &[]);
            let (stop, barrier) = (AtomicBool::new(false), Rendezvous::new(1));
            let mut ops = 0;
            let w = window(&clk, None);
            let end = run_leased(
                &mut src,
                &mut *e,
                &mut Names::default(),
                &clk,
                w,
                &stop,
                (Some(lease), None),
                &barrier,
                &mut |_, a| ops += a.get(OpClass::Write).ops,
                &mut Unobserved,
            );
            ops + end.acc.get(OpClass::Write).ops
        };
        // A lease of 2 s on a clock that moves 1 ms a write: about 2000 writes, then none.
        let ops = run_with(&Lease::new(Duration::from_secs(2)));
        assert!((1990..=2010).contains(&ops), "{ops} writes within a lease of 2 s");
        // A lease that has run out (a process resumed after it lapsed): not one write.
        let ended = Lease::new(Duration::from_secs(60));
        ended.end();
        assert_eq!(run_with(&ended), 0);
    }

    #[test]
    fn a_flush_every_n_writes_waits_for_the_writes_before_it() {
        let j = job(Rw::Write, |p| {
            p.fsync_every = Some(4);
            p.size = Some(iolab_spec::Bytes::kib(64));
        });
        let clk = FakeClock::new(Duration::from_micros(1));
        let mut e = LogEngine::new(4);
        let end = block_run(&j, &mut e, &clk, None, false, &mut |_, _| {});
        assert!(end.error.is_none(), "{:?}", end.error);
        let kinds: String = e.log.iter().map(|(k, _)| if k.is_sync() { 'F' } else { 'W' }).collect();
        assert_eq!(kinds, "WWWWFWWWWFWWWWFWWWWF", "16 writes of 4 KiB, a flush after every 4");
        assert!(e.log.iter().filter(|(k, _)| k.is_sync()).all(|(_, inflight)| *inflight == 0));
        assert!(e.log.iter().any(|(k, inflight)| !k.is_sync() && *inflight == 3), "writes overlap up to the depth");
        assert_eq!(end.acc.get(OpClass::Sync).ops, 4);
        assert_eq!(end.acc.get(OpClass::Write).bytes, 65536);
    }

    #[test]
    fn each_second_is_reported_once_at_its_boundary() {
        let j = job(Rw::Read, |p| p.runtime = Some(Duration::from_millis(3500)));
        // 1 ms per clock reading: about 1000 reads a second on a synchronous engine (one
        // reading per read: each read's completion stamp is the next one's issue stamp), about
        // 500 on a queueing engine (two readings per read).
        for (engine, per_sec) in [("null", 1000), ("log", 500)] {
            let clk = FakeClock::new(Duration::from_millis(1));
            let mut null =
                iolab_engine::build(iolab_spec::EngineKind::Null, iolab_engine::Setup::new(1, 4096)).unwrap();
            let mut log = LogEngine::new(1);
            let e: &mut dyn Engine = if engine == "null" { &mut *null } else { &mut log };
            let mut secs = Vec::new();
            let mut lat = Acc::default();
            let end = block_run(&j, e, &clk, j.runtime, false, &mut |s, a| {
                secs.push((s, a.get(OpClass::Read).ops));
                lat.merge(&a);
            });
            assert_eq!(secs.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 1, 2], "{engine}");
            assert!(secs.iter().all(|s| (per_sec - 5..=per_sec + 5).contains(&s.1)), "{engine}: {secs:?}");
            assert_eq!(end.sec, 3, "{engine}: the cut-short last second comes back with the end");
            let last = end.acc.get(OpClass::Read).ops;
            assert!((per_sec / 2 - 10..=per_sec / 2 + 10).contains(&last), "{engine}: {last}");
            // Every read is timed, and took the clock's step (sync) or one step (queued: the
            // issue and completion readings are one step apart).
            let h = lat.get(OpClass::Read).hist.clone().expect("reads were timed");
            assert_eq!(h.len(), secs.iter().map(|s| s.1).sum::<u64>(), "{engine}");
            assert!(
                (h.value_at_quantile(0.5) as i64 - 1_000_000).abs() < 1_000,
                "{engine}: p50 {}",
                h.value_at_quantile(0.5)
            );
        }
    }

    #[test]
    fn a_failed_read_ends_the_job_with_where_and_why_and_keeps_what_was_done() {
        let j = job(Rw::Read, |p| p.size = Some(iolab_spec::Bytes::kib(40)));
        let clk = FakeClock::new(Duration::from_micros(1));
        let mut e = LogEngine::new(1);
        e.fail_at = Some(5);
        let end = block_run(&j, &mut e, &clk, None, false, &mut |_, _| {});
        let err = end.error.expect("the job failed").to_string();
        assert!(err.contains("read of 4096 bytes at offset 20480 in /nowhere"), "{err}");
        assert!(err.contains("Input/output error"), "{err}");
        assert_eq!(end.acc.get(OpClass::Read).ops, 5);
        assert_eq!(e.log.len(), 6, "nothing issued after the failure");
    }

    /// A latency target's search holds the I/Os in flight below the engine's depth: on the fake
    /// clock (1 us a stamp) an I/O issued with d others before it in the batch waits about d us,
    /// so a 6 us target for every I/O settles on a depth well below 16, and the job ends once
    /// the depth is found, long before its runtime.
    #[test]
    fn a_latency_target_limits_what_is_in_flight_below_the_engines_depth() {
        let j = job(Rw::RandRead, |p| p.runtime = Some(Duration::from_secs(1)));
        let clk = FakeClock::new(Duration::from_micros(1));
        let mut e = LogEngine::new(16);
        let mut src = BlockSource::new(&j, j.workload.block().unwrap(), 0, &[]);
        let (stop, barrier) = (AtomicBool::new(false), Rendezvous::new(1));
        let w = window(&clk, j.runtime);
        let cfg = iolab_spec::LatencyTarget {
            target: Duration::from_micros(6),
            window: Duration::from_micros(200),
            percentile: 100.0,
            run: false,
        };
        let mut s = DepthSearch::new(cfg, 16, w.start, w.t0);
        let end = run_leased(
            &mut src,
            &mut e,
            &mut Names::default(),
            &clk,
            w,
            &stop,
            (None, Some(&mut s)),
            &barrier,
            &mut |_, _| {},
            &mut Unobserved,
        );
        assert!(end.error.is_none(), "{:?}", end.error);
        assert!(s.found(), "the search settled");
        let most = e.log.iter().map(|(_, before)| before + 1).max().unwrap_or(0);
        assert!(most < 16 && most >= s.depth() as usize, "at most {most} in flight, depth found {}", s.depth());
        assert!((2..=8).contains(&s.depth()), "depth {}", s.depth());
        assert!(end.end - w.start < Duration::from_millis(100), "ended at {:?}", end.end - w.start);
    }

    #[test]
    fn the_stop_flag_ends_at_once_without_the_final_flush() {
        let j = job(Rw::Write, |p| {
            p.end_fsync = Some(true);
            p.runtime = Some(Duration::from_secs(10));
        });
        let clk = FakeClock::new(Duration::from_micros(1));
        let mut e = LogEngine::new(1);
        let end = block_run(&j, &mut e, &clk, j.runtime, true, &mut |_, _| {});
        assert!(end.error.is_none() && e.log.is_empty());
        // Without the stop, the deadline brings the final fsync.
        let mut e = LogEngine::new(1);
        block_run(&j, &mut e, &clk, Some(Duration::from_millis(1)), false, &mut |_, _| {});
        assert_eq!(e.log.last().map(|x| x.0), Some(OpKind::Fsync));
    }

    /// A source that lists its directory (timed), stats it (untimed), maybe waits a while,
    /// then meets the other thread at the job's barrier.
    struct Staged {
        wait: bool,
        step: u8,
        listed: Vec<String>,
        before: Option<Stamp>,
        after: Option<Stamp>,
        real: Vec<std::time::Instant>,
    }

    impl Source for Staged {
        fn buffer_len(&self) -> usize {
            4096
        }
        fn next(&mut self, ctx: &mut Ctx) -> Next {
            let Ok(dir) = ctx.names.add(".") else { return Next::Done };
            self.step += 1;
            match self.step {
                1 => Next::Issue(Issue::now(Call::Readdir { name: dir })),
                2 => Next::Issue(Issue::untimed(Call::Stat { name: dir })),
                3 => {
                    if self.wait {
                        std::thread::sleep(Duration::from_millis(300));
                    }
                    self.before = Some(ctx.now);
                    self.real.push(std::time::Instant::now());
                    Next::Barrier
                }
                _ => {
                    self.after.get_or_insert(ctx.now);
                    self.real.push(std::time::Instant::now());
                    Next::Done
                }
            }
        }
        fn completed(&mut self, call: &Call, buf: &[u8], _r: &std::io::Result<usize>) -> Result<(), SourceError> {
            if let Call::Readdir { .. } = call {
                self.listed = buf
                    .split(|b| *b == 0)
                    .filter(|n| !n.is_empty())
                    .map(|n| String::from_utf8_lossy(n).into())
                    .collect();
                self.listed.sort();
            }
            Ok(())
        }
    }

    #[test]
    fn threads_meet_at_the_barrier_readdir_hands_its_names_and_untimed_calls_are_not_counted() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "").unwrap();
        std::fs::write(d.path().join("b"), "").unwrap();
        let clk = FakeClock::new(Duration::from_micros(1));
        let barrier = Rendezvous::new(2);
        let stop = AtomicBool::new(false);
        let w = window(&clk, None);
        let run_one = |wait: bool| {
            let mut src = Staged { wait, step: 0, listed: Vec::new(), before: None, after: None, real: Vec::new() };
            let mut e = iolab_engine::build(iolab_spec::EngineKind::Null, iolab_engine::Setup::new(1, 4096)).unwrap();
            let mut names = Names::new(d.path());
            let mut all = Acc::default();
            let end = run(&mut src, &mut *e, &mut names, &clk, w, &stop, &barrier, &mut |_, a| all.merge(&a));
            barrier.leave();
            all.merge(&end.acc);
            (src, all)
        };
        let (slow, fast) = std::thread::scope(|s| {
            let slow = s.spawn(|| run_one(true));
            let fast = s.spawn(|| run_one(false));
            (slow.join().unwrap(), fast.join().unwrap())
        });
        for (src, acc) in [&slow, &fast] {
            assert_eq!(src.listed, ["a", "b"], "the names reach the source");
            assert_eq!(
                (acc.get(OpClass::Readdir).ops, acc.get(OpClass::Stat).ops),
                (1, 0),
                "the untimed stat is not counted"
            );
        }
        let (slow_in, fast_out) = (slow.0.before.unwrap(), fast.0.after.unwrap());
        assert!(fast_out >= slow_in, "the fast thread went on only once the slow one had arrived");
        assert!(fast.0.real[1] - fast.0.real[0] >= Duration::from_millis(200), "it waited for the slow one");
    }
}
