//! Data validation as a source around another (`--verify`): every key block a write carries is
//! stamped just before the write is queued (`fill`), every block a read brings in is checked
//! on its completion (`completed`), and the key map and journal follow each write. An I/O
//! claims its blocks in the shared map for as long as it is in flight, so two I/Os (of this
//! thread or another) never overlap on a block: a colliding one waits (a drain, or 20 µs
//! polls for another thread's). With `--verify-before-rewrite` a write to a block written
//! before is preceded by a read of the same range, checked first. The journal's writes are
//! timed in their own class (`journal`), not in the data write's latency. With
//! `--verify-backlog N` the writes are read back and checked during the run ([`Backlog`]).

use super::backlog::Backlog;
use super::{Call, Ctx, Issue, Next, SetupFile, Source, SourceError};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_model::OpClass;
use iolab_verify::journal::ThreadJournal;
use iolab_verify::map::UNKNOWN;
use iolab_verify::{check_block, next_key, now_ns, Expect, Stamper, Tracked, When};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The file index validated calls use (the block workload's one file).
const FILE: u32 = 0;

/// The time a validating source writes into its stamps: the wall-clock time at the worker's
/// start, moved on by the worker's clock (which it reads anyway), not the system's; kept to
/// 2^20 ns (about a millisecond; the coarse clock it came from before had 4 ms), so a stamper
/// redoes its header checksum about once a millisecond, not every write.
pub(super) struct StampTime {
    /// The worker's clock at its start and the wall-clock time then (ns since the Unix epoch).
    epoch: Option<(Stamp, u64)>,
    /// The time of the operation being issued, ns since the Unix epoch (to 2^20 ns).
    pub ns: u64,
}

impl StampTime {
    const MASK: u64 = !((1 << 20) - 1);

    pub fn new() -> StampTime {
        StampTime { epoch: None, ns: now_ns() & Self::MASK }
    }
    /// The worker starts at `at`.
    pub fn start(&mut self, at: Stamp) {
        self.epoch = Some((at, now_ns()));
    }
    /// The worker's clock reads `now`.
    #[inline]
    pub fn tick(&mut self, now: Stamp) {
        if let Some((s0, unix0)) = self.epoch {
            self.ns = unix0.saturating_add(now.0.saturating_sub(s0.0)) & Self::MASK;
        }
    }
}

pub struct Validating<S> {
    inner: S,
    t: Arc<Tracked>,
    kb: u64,
    /// log2 of `kb` when it is a power of two: blocks found by a shift, not a division.
    kb_shift: Option<u32>,
    stamper: Stamper,
    before_rewrite: bool,
    journal: Option<ThreadJournal>,
    /// An access whose blocks another I/O holds, to issue once they are free.
    held: Option<Issue>,
    /// A write waiting for its pre-read (issued, not yet completed: `true` once done).
    after_preread: Option<(Issue, bool)>,
    /// `--verify-backlog`: written ranges read back during the run; whether `held` is one.
    backlog: Option<Backlog>,
    held_backlog: bool,
    /// The inner source is done; the backlog's last check may still be under way.
    inner_done: bool,
    /// Journal writes timed since the last `take_timings`: (bytes, ns).
    timed: Vec<(u64, u64)>,
    /// A journal write failed: the job ends with this.
    failure: Option<String>,
    time: StampTime,
    /// Key blocks written and not yet added to the shared count (added when the source is
    /// dropped, at the end of its worker, before the phase's validation results are taken).
    written: u64,
}

impl<S> Drop for Validating<S> {
    fn drop(&mut self) {
        self.t.wrote(self.written);
    }
}

impl<S: Source> Validating<S> {
    pub fn new(inner: S, t: Arc<Tracked>, thread: u32, before_rewrite: bool) -> Self {
        let kb = t.key_block as u64;
        let journal = t.journal.as_ref().map(|_| ThreadJournal::new(thread));
        let stamper = Stamper::new(t.file_id, t.node_id, thread);
        Validating {
            inner,
            t,
            kb,
            kb_shift: kb.is_power_of_two().then(|| kb.trailing_zeros()),
            stamper,
            before_rewrite,
            journal,
            held: None,
            after_preread: None,
            backlog: None,
            held_backlog: false,
            inner_done: false,
            timed: Vec::new(),
            failure: None,
            written: 0,
            time: StampTime::new(),
        }
    }

    /// Read back and check the blocks of every `every` writes during the run, `batch` of them
    /// at a time (0: `every`).
    pub fn with_backlog(mut self, every: u64, batch: u64) -> Self {
        if every > 0 {
            self.backlog = Some(Backlog::new(every, batch));
        }
        self
    }

    /// Issue a backlog read (`issue`), or hold it until its blocks are free.
    fn backlog_read(&mut self, issue: Issue, ctx: &Ctx) -> Next {
        let next = self.prepare(issue, ctx);
        match (&next, self.backlog.as_mut()) {
            (Next::Issue(Issue { call: Call::Data { offset, len, .. }, .. }), Some(b)) => b.issued(*offset, *len),
            _ => self.held_backlog = self.held.is_some(),
        }
        next
    }

    /// The next backlog read due, if any (none once the job's time is up).
    fn backlog_due(&mut self, ctx: &Ctx) -> Option<Issue> {
        if ctx.ending {
            return None;
        }
        let (offset, len) = self.backlog.as_mut()?.take()?;
        Some(Issue::now(Call::Data { kind: OpKind::Read, file: FILE, offset, len }))
    }

    /// The key block an offset falls in.
    #[inline]
    fn block_of(&self, offset: u64) -> u64 {
        match self.kb_shift {
            Some(s) => offset >> s,
            None => offset / self.kb,
        }
    }

    /// Whether `x` bytes are whole key blocks.
    #[inline]
    fn whole(&self, x: u64) -> bool {
        match self.kb_shift {
            Some(_) => x & (self.kb - 1) == 0,
            None => x.is_multiple_of(self.kb),
        }
    }

    #[inline]
    fn blocks(&self, offset: u64, len: u32) -> std::ops::Range<u64> {
        self.block_of(offset)..self.block_of(offset + len as u64 + self.kb - 1)
    }

    /// Claim every block of the range, or none.
    fn claim(&self, r: std::ops::Range<u64>) -> bool {
        for b in r.clone() {
            if self.t.map.try_claim(b).is_none() {
                for c in r.start..b {
                    self.t.map.release(c, self.t.map.key(c));
                }
                return false;
            }
        }
        true
    }

    fn release(&self, r: std::ops::Range<u64>) {
        for b in r {
            self.t.map.release(b, self.t.map.key(b));
        }
    }

    /// Write the journal's waiting records (timed).
    fn journal_flush(
        &mut self,
        what: impl FnOnce(&mut ThreadJournal, &iolab_verify::journal::Journal) -> io::Result<usize>,
    ) {
        let (Some(tj), Some(j)) = (self.journal.as_mut(), self.t.journal.as_ref()) else { return };
        let begin = Instant::now();
        match what(tj, j) {
            Ok(0) => {}
            Ok(n) => self.timed.push((n as u64, begin.elapsed().as_nanos() as u64)),
            Err(e) => {
                self.failure.get_or_insert(format!("writing the validation journal of {}: {e}", self.t.display));
            }
        }
    }

    /// A write's blocks get their new keys, recorded in the journal before the write is issued.
    fn begin_write(&mut self, r: std::ops::Range<u64>) {
        for b in r.clone() {
            let k = next_key(self.t.map.key(b));
            self.t.map.set_busy(b, k);
        }
        if self.journal.is_some() {
            let t = self.t.clone();
            self.journal_flush(|tj, j| {
                for b in r {
                    tj.push_before(b, t.map.key(b));
                }
                tj.flush(j)
            });
        }
    }

    /// Check the blocks a read brought in against the keys the map holds for them.
    fn check(&mut self, offset: u64, buf: &[u8], when: When) {
        let kb = self.kb as usize;
        let mut checked = 0;
        for (i, data) in buf.chunks_exact(kb).enumerate() {
            let b = self.block_of(offset) + i as u64;
            let key = self.t.map.key(b);
            if key == UNKNOWN {
                continue;
            }
            checked += (key != 0) as u64;
            // Another node's file, read after its writer synced: an older key is a stale read.
            let e = Expect { key, stale: self.t.peer.is_some(), ..Default::default() };
            if let Some(f) = check_block(data, b * self.kb, self.t.file_id, &e) {
                // Marked not to be checked again; the I/O's end releases it as it is.
                self.t.found(b, key, f, when);
            }
        }
        self.t.checked(when, checked);
    }

    /// What the inner source asked for, checked: a validated call must be whole key blocks.
    fn validate_issue(&mut self, next: Next, ctx: &Ctx) -> Next {
        match next {
            Next::Issue(i) => {
                let Some((_, offset, len)) = validated(&i.call) else { return Next::Issue(i) };
                if !self.whole(offset) || !self.whole(len as u64) {
                    self.failure = Some(format!(
                        "validation needs whole key blocks of {} bytes; an I/O of {len} bytes at offset {offset} is not",
                        self.kb
                    ));
                    return Next::Done;
                }
                self.prepare(i, ctx)
            }
            Next::Done => {
                self.journal_flush(|tj, j| tj.flush(j));
                // A backlog check under way (or due once the writes in flight complete)
                // finishes first.
                if self.backlog.is_some() {
                    self.inner_done = true;
                    if let Some(i) = self.backlog_due(ctx) {
                        return self.backlog_read(i, ctx);
                    }
                    if ctx.inflight > 0 {
                        return Next::Drain;
                    }
                }
                Next::Done
            }
            other => other,
        }
    }

    /// What a data call on the validated file needs before it is issued.
    fn prepare(&mut self, issue: Issue, ctx: &Ctx) -> Next {
        let Call::Data { kind, offset, len, .. } = issue.call else { return Next::Issue(issue) };
        let r = self.blocks(offset, len);
        if !self.claim(r.clone()) {
            self.held = Some(issue);
            return if ctx.inflight > 0 { Next::Drain } else { Next::WaitUntil(ctx.now + Duration::from_micros(20)) };
        }
        if kind.writes() {
            if self.before_rewrite && r.clone().any(|b| !matches!(self.t.map.key(b), 0 | UNKNOWN)) {
                self.after_preread = Some((issue, false));
                return Next::Issue(Issue::now(Call::Data { kind: OpKind::Read, file: FILE, offset, len }));
            }
            self.begin_write(r);
        }
        Next::Issue(issue)
    }
}

fn validated(call: &Call) -> Option<(OpKind, u64, u32)> {
    match *call {
        Call::Data { kind, file: FILE, offset, len } if kind.reads() || kind.writes() => Some((kind, offset, len)),
        _ => None,
    }
}

impl<S: Source> Source for Validating<S> {
    fn buffer_len(&self) -> usize {
        self.inner.buffer_len()
    }
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        self.inner.setup()
    }
    fn prime(&mut self, slot: u32, buf: &mut [u8]) {
        self.inner.prime(slot, buf)
    }
    fn start(&mut self, at: Stamp) {
        self.time.start(at);
        self.inner.start(at)
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        self.time.tick(ctx.now);
        if self.failure.is_some() || self.t.stopped() {
            if ctx.inflight > 0 {
                return Next::Drain;
            }
            self.journal_flush(|tj, j| tj.flush(j));
            return Next::Done;
        }
        if let Some((issue, done)) = self.after_preread.take() {
            if !done {
                self.after_preread = Some((issue, false));
                return Next::Drain;
            }
            if let Call::Data { offset, len, .. } = issue.call {
                let r = self.blocks(offset, len);
                self.begin_write(r);
            }
            return Next::Issue(issue);
        }
        if let Some(i) = self.held.take() {
            if std::mem::take(&mut self.held_backlog) {
                return self.backlog_read(i, ctx);
            }
            return self.validate_issue(Next::Issue(i), ctx);
        }
        if let Some(i) = self.backlog_due(ctx) {
            return self.backlog_read(i, ctx);
        }
        if self.inner_done {
            return if ctx.inflight > 0 { Next::Drain } else { Next::Done };
        }
        let next = self.inner.next(ctx);
        self.validate_issue(next, ctx)
    }

    #[inline]
    fn fill(&mut self, call: &Call, buf: &mut [u8]) {
        let Some((_, offset, len)) = validated(call) else {
            return self.inner.fill(call, buf);
        };
        let kb = self.kb as usize;
        let time_ns = self.time.ns;
        let n = (len as usize).min(buf.len());
        for (i, block) in buf[..n].chunks_exact_mut(kb).enumerate() {
            let b = self.block_of(offset) + i as u64;
            self.stamper.stamp(block, b * self.kb, self.t.map.key(b), time_ns);
        }
    }

    fn checks_reads(&self) -> bool {
        true
    }

    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        if let Some((kind, offset, len)) = validated(call) {
            let r = self.blocks(offset, len);
            let whole = matches!(result, Ok(n) if *n == len as usize);
            // The pre-read is the read of its write's range (no other I/O can hold those blocks).
            let preread = kind.reads()
                && matches!(self.after_preread, Some((Issue { call: Call::Data { offset: o, len: l, .. }, .. }, false)) if o == offset && l == len);
            // A backlog read is the validating source's own: the inner source never asked for it.
            let backlog = kind.reads() && self.backlog.as_mut().is_some_and(|b| b.completed(offset, len));
            if kind.writes() {
                if whole {
                    self.written += r.end - r.start;
                    if let Some(b) = self.backlog.as_mut() {
                        b.wrote(offset, len);
                    }
                    if self.journal.is_some() {
                        for b in r.clone() {
                            let key = self.t.map.key(b);
                            if let Some(tj) = self.journal.as_mut() {
                                tj.push_after(b, key);
                            }
                        }
                        if let (Some(tj), Some(j)) = (self.journal.as_mut(), self.t.journal.as_ref()) {
                            if tj.waiting() >= 4096 {
                                let begin = Instant::now();
                                match tj.flush(j) {
                                    Ok(n) => self.timed.push((n as u64, begin.elapsed().as_nanos() as u64)),
                                    Err(e) => {
                                        self.failure.get_or_insert(format!(
                                            "writing the validation journal of {}: {e}",
                                            self.t.display
                                        ));
                                    }
                                }
                            }
                        }
                    }
                    self.release(r);
                } else {
                    // What a failed or short write left is unknown: never checked again.
                    for b in r {
                        self.t.map.release(b, UNKNOWN);
                    }
                }
            } else if whole {
                let when = if preread { When::BeforeRewrite } else { When::During };
                self.check(offset, buf, when);
                if preread {
                    // The write that follows keeps the blocks.
                    if let Some((_, done)) = self.after_preread.as_mut() {
                        *done = true;
                    }
                    return Ok(());
                }
                self.release(r);
                if backlog {
                    return self.failure.take().map_or(Ok(()), |f| Err(f.into()));
                }
            } else {
                if preread {
                    self.after_preread = None;
                }
                self.release(r);
            }
            if preread || backlog {
                // A failed pre-read (its write is dropped) or backlog read: the failure ends the job.
                return self.inner.completed(&Call::Data { kind, file: FILE, offset, len }, buf, result);
            }
        } else if let Call::Data { kind, file: FILE, .. } = *call {
            if kind.is_sync() && result.is_ok() && self.journal.is_some() {
                self.journal_flush(|tj, j| tj.synced(j));
            }
        }
        let r = self.inner.completed(call, buf, result);
        match self.failure.take() {
            Some(f) => Err(f.into()),
            None => r,
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        self.inner.figures()
    }

    fn hole_reads(&self) -> Option<(u64, u64)> {
        self.inner.hole_reads()
    }

    fn times_itself(&self) -> bool {
        self.journal.is_some()
    }

    fn take_timings(&mut self, out: &mut dyn FnMut(OpClass, u64, u64)) {
        for (bytes, ns) in self.timed.drain(..) {
            out(OpClass::Journal, bytes, ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, FakeClock};
    use crate::rendezvous::Rendezvous;
    use crate::source::Names;
    use crate::worker::{run, Window};
    use iolab_engine::Engine;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::AtomicBool;

    const KB: u64 = 4096;

    /// Writes the file's blocks in order, and, once block `hit`'s write has completed, a second
    /// writer (another descriptor of the same file) overwrites that block with other data,
    /// before anything reads it.
    struct Writer {
        next: u64,
        blocks: u64,
        hit: u64,
        other: std::fs::File,
    }

    impl Source for Writer {
        fn buffer_len(&self) -> usize {
            KB as usize
        }
        fn next(&mut self, _ctx: &mut Ctx) -> Next {
            if self.next == self.blocks {
                return Next::Done;
            }
            self.next += 1;
            Next::Issue(Issue::now(Call::Data {
                kind: OpKind::Write,
                file: FILE,
                offset: (self.next - 1) * KB,
                len: KB as u32,
            }))
        }
        fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
            assert!(matches!(r, Ok(n) if *n == KB as usize), "{call:?}: {r:?}");
            if matches!(*call, Call::Data { kind: OpKind::Write, offset, .. } if offset == self.hit * KB) {
                self.other.write_all_at(&[0x5a; KB as usize], self.hit * KB).unwrap();
            }
            Ok(())
        }
    }

    /// Write 16 blocks through validation with `backlog` (0: none), block 5 overwritten by a
    /// second writer just after its write: what validation found, and the reads made.
    fn run_with(backlog: u64) -> (iolab_model::VerifyResult, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.set_len(16 * KB).unwrap();
        let opts = iolab_verify::Options {
            journal: None,
            sync: false,
            max_errors: 0,
            node: "n".into(),
            id_root: None,
            peer: None,
        };
        let t = Arc::new(Tracked::open(&path, 16 * KB, KB as u32, &opts, true, None).unwrap());
        let other = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let inner = Writer { next: 0, blocks: 16, hit: 5, other };
        let mut src = Validating::new(inner, t.clone(), 0, false).with_backlog(backlog, 0);
        let mut e = iolab_engine::psync::Psync::new(iolab_engine::Setup::new(1, KB as usize)).unwrap();
        e.set_file(FILE, file, 16 * KB).unwrap();
        let clk = FakeClock::new(Duration::from_micros(1));
        let start = Clock::now(&clk);
        let w = Window { start, t0: start, deadline: None };
        let (stop, barrier) = (AtomicBool::new(false), Rendezvous::new(1));
        let mut reads = 0;
        let end = run(&mut src, &mut e, &mut Names::default(), &clk, w, &stop, &barrier, &mut |_, a| {
            reads += a.get(OpClass::Read).ops
        });
        assert!(end.error.is_none(), "{:?}", end.error);
        reads += end.acc.get(OpClass::Read).ops;
        drop(src);
        (t.result(), reads)
    }

    #[test]
    fn a_backlog_check_finds_a_block_corrupted_after_its_write_during_the_run() {
        // Without the backlog a write-only job reads nothing back: the damage goes unseen.
        let (v, reads) = run_with(0);
        assert_eq!((v.checked_during, v.errors.total(), reads), (0, 0, 0), "{v:?}");
        // Every 4 writes, those 4 blocks are read back: block 5 is found bad, during the run.
        let (v, reads) = run_with(4);
        assert_eq!((v.checked_during, reads), (16, 16), "every written block was read back once: {v:?}");
        assert_eq!(v.errors.total(), 1, "{v:?}");
        let e = &v.first_errors[0];
        assert_eq!((e.offset, e.when.as_str()), (5 * KB, "during"), "{e:?}");
    }
}
