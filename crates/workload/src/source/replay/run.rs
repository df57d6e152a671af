//! A replay as it runs: the state its threads share ([`ReplayRun`]: the ranks done on each
//! shared path, the openings threads hand to one another, the calls whose result differed)
//! and one traced thread's source ([`ReplaySource`]). At the end the run marks what it made
//! and turns what it saw into the job's fidelity.

use super::plan::{class_of, ReplayPlan, Step, ADOPT, ASYNC, DROP_AFTER};
use super::rings::{RingGate, RingStep};
use super::target::{self, Before};
use super::{open_flags, Checked};
use crate::clock::Stamp;
use crate::source::{describe_failure, Call, Ctx, FileChange, Issue, NameId, Next, SetupFile, Source, SourceError};
use iolab_engine::beneath::Beneath;
use iolab_engine::{OpKind, Whence};
use iolab_model::{ClassFidelity, JobResult, Mismatch, OpClass, ReplayFidelity};
use iolab_spec::{Job, ReplayJob, Timing};
use iolab_trace::format::{Kind, Op};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Mismatched calls kept with their details (all are counted).
const MISMATCHES_KEPT: usize = 20;

#[derive(Default)]
struct Results {
    mismatched: u64,
    kept: Vec<Mismatch>,
    /// Per class: (short, long).
    by_class: BTreeMap<OpClass, (u64, u64)>,
}

/// What the threads of one replay job share while it runs.
pub struct ReplayRun {
    checked: Arc<Checked>,
    /// The job's directory (none for a block-level trace, replayed onto a file or device).
    beneath: Option<Beneath>,
    timing: Timing,
    before: Before,
    /// Per ordering key, the calls on it completed.
    done: Vec<AtomicU64>,
    /// Per traced ring, what is in flight on it and what has completed.
    gates: Vec<RingGate>,
    abort: AtomicBool,
    /// Openings handed between threads: a duplicate descriptor (one open file description)
    /// and how many threads are still to take it.
    handed: Mutex<HashMap<u32, (File, u32)>>,
    results: Mutex<Results>,
}

impl ReplayRun {
    /// Make the target what the trace expects (re-checked first: an earlier phase may have
    /// changed it) and set up the shared state; `beneath` is the job's directory as opened when
    /// the run was checked.
    pub fn prepare(
        checked: Arc<Checked>,
        job: &Job,
        r: &ReplayJob,
        beneath: Beneath,
        halt: &crate::layout::Halt,
    ) -> Result<Arc<ReplayRun>, SourceError> {
        let before = target::check(&beneath, &checked.expect, r.prepare, job.overwrite)?;
        target::prepare(&beneath, &checked.expect, r.prepare, halt)?;
        Ok(ReplayRun::new(checked, Some(beneath), r, before))
    }

    /// The shared state of a block-level trace's replay (its target laid out as a block job's).
    pub fn for_blocks(checked: Arc<Checked>, r: &ReplayJob) -> Arc<ReplayRun> {
        ReplayRun::new(checked, None, r, Before::default())
    }

    fn new(checked: Arc<Checked>, beneath: Option<Beneath>, r: &ReplayJob, before: Before) -> Arc<ReplayRun> {
        let keys = checked.plan.keys as usize;
        Arc::new(ReplayRun {
            beneath,
            timing: r.timing,
            before,
            done: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            gates: checked.plan.ring_ops.iter().map(|&n| RingGate::new(n)).collect(),
            abort: AtomicBool::new(false),
            handed: Mutex::new(HashMap::new()),
            results: Mutex::new(Results::default()),
            checked,
        })
    }

    /// The job's directory: a call trace's replay has one.
    fn dir(&self) -> Result<&Beneath, SourceError> {
        self.beneath.as_ref().ok_or_else(|| said!("a block-level trace's replay has no directory"))
    }

    /// A path under the job's directory, as errors say it.
    fn shown(&self, rel: &Path) -> String {
        self.beneath.as_ref().map_or_else(|| rel.display().to_string(), |b| b.root().join(rel).display().to_string())
    }

    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Whether the run was stopped (a thread failed).
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Stop the run's other threads (this one failed).
    pub fn abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
    }

    pub fn plan(&self) -> &ReplayPlan {
        &self.checked.plan
    }

    /// Take a duplicate of an opening another thread handed on (None: not handed yet).
    fn take(&self, file: u32) -> io::Result<Option<File>> {
        let mut h = self.handed.lock().map_err(|_| io::Error::other("a replay thread panicked"))?;
        let Some((f, left)) = h.get_mut(&file) else { return Ok(None) };
        let dup = f.try_clone()?;
        *left = left.saturating_sub(1);
        if *left == 0 {
            h.remove(&file);
        }
        Ok(Some(dup))
    }

    /// Hand an opening on to `takers` threads.
    fn hand(&self, file: u32, f: &File, takers: u32) -> io::Result<()> {
        let dup = f.try_clone()?;
        let mut h = self.handed.lock().map_err(|_| io::Error::other("a replay thread panicked"))?;
        h.insert(file, (dup, takers));
        Ok(())
    }

    pub(super) fn mismatch(&self, m: Mismatch, class: OpClass) {
        if let Ok(mut r) = self.results.lock() {
            r.mismatched += 1;
            let e = r.by_class.entry(class).or_default();
            if m.replayed < m.recorded {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
            if r.kept.len() < MISMATCHES_KEPT {
                r.kept.push(m);
            }
        }
    }

    /// After the workers: mark what the replay made, and put the fidelity into the job's result.
    pub fn finish(&self, job: &mut JobResult) {
        let problems = match &self.beneath {
            Some(b) => target::finish(b, &self.checked.expect, &self.before),
            None => Vec::new(),
        };
        if !problems.is_empty() && job.error.is_none() {
            job.error = Some(problems.join("; "));
        }
        job.replay = Some(self.fidelity(job));
    }

    fn fidelity(&self, job: &JobResult) -> ReplayFidelity {
        let plan = self.plan();
        let results = self.results.lock().map(|r| (r.mismatched, r.kept.clone(), r.by_class.clone()));
        let (mismatched, kept, by_class) = results.unwrap_or_default();
        let mut classes = Vec::new();
        let mut equal = true;
        for c in OpClass::ALL {
            let rec = plan.recorded.get(c).copied().unwrap_or_default();
            let got = job.total.get(*c);
            if rec.ops == 0 && got.ops == 0 {
                continue;
            }
            equal &= rec.ops == got.ops;
            let (short, long) = by_class.get(c).copied().unwrap_or_default();
            classes.push(ClassFidelity {
                class: c.as_str().to_string(),
                recorded_ops: rec.ops,
                replayed_ops: got.ops,
                recorded_bytes: rec.bytes,
                replayed_bytes: got.bytes,
                short,
                long,
                recorded_mean_ms: if rec.ops > 0 { rec.dur_ns as f64 / rec.ops as f64 / 1e6 } else { 0.0 },
                replayed_mean_ms: got.lat_ns.mean as f64 / 1e6,
                replayed_p99_ms: got.lat_ns.p99 as f64 / 1e6,
            });
        }
        // The program's recorded time: its start-up, the replayed calls' span, its wind-up.
        let recorded_s = plan.lead_ns.saturating_add(plan.recorded_span_ns).saturating_add(plan.tail_ns) as f64 / 1e9;
        // Where the recorded time went, on the thread with the most calls: inside them, and
        // between them (think time, and strace's stops, which it cannot tell apart).
        let busiest = plan.threads.iter().max_by_key(|t| t.steps.len());
        let (mut calls_ns, mut gaps_ns) = (0u64, 0u64);
        if let Some(t) = busiest {
            calls_ns = t.steps.iter().map(|s| s.op.dur_ns).fold(0, u64::saturating_add);
            gaps_ns = t
                .steps
                .windows(2)
                .map(|w| w[1].op.start_ns.saturating_sub(w[0].op.start_ns.saturating_add(w[0].op.dur_ns)))
                .fold(0, u64::saturating_add);
        }
        let gap_ns = busiest.map(|t| t.tracer_gap_ns).unwrap_or(0);
        let pct = |a: f64, b: f64| if b > 0.0 { (a / b - 1.0) * 100.0 } else { 0.0 };
        ReplayFidelity {
            counts_equal: equal,
            results_equal: mismatched == 0,
            classes,
            mismatched,
            mismatches: kept,
            threads: plan.threads.len() as u32,
            recorded_s,
            lead_s: plan.lead_ns as f64 / 1e9,
            tail_s: plan.tail_ns as f64 / 1e9,
            recorded_calls_s: calls_ns as f64 / 1e9,
            recorded_gaps_s: gaps_ns as f64 / 1e9,
            tracer_gap_ms: gap_ns as f64 / 1e6,
            replayed_s: job.elapsed_s,
            elapsed_error_pct: pct(job.elapsed_s, recorded_s),
            left_out: plan.left_out.clone(),
            adjusted: plan.adjusted.clone(),
        }
    }
}

/// One traced thread's replay.
/// Waits shorter than this are owed and slept together (see `ReplaySource::next`).
const SHORT_WAIT: Duration = Duration::from_micros(200);

pub struct ReplaySource {
    run: Arc<ReplayRun>,
    thread: usize,
    i: usize,
    start: Option<Stamp>,
    due: Option<Stamp>,
    /// Short waits not slept yet (see `next`).
    owed: Duration,
    /// The synchronous step in flight.
    issued: Option<usize>,
    /// The asynchronous steps in flight: (call, step, its place in the thread's `rings`). A
    /// completion is matched to the first with an equal call (equal calls are alike).
    pending: Vec<(Call, usize, usize)>,
    /// The next asynchronous step's place in the thread's `rings`.
    ring_i: usize,
    /// Opening → engine file index.
    slots: HashMap<u32, u32>,
    free: Vec<u32>,
    next_slot: u32,
    names: HashMap<PathBuf, NameId>,
    changes: VecDeque<FileChange>,
    /// Polls in a row that found the next call's turn not come: the wait between polls doubles
    /// from 20 µs to 200 µs, so a thread waiting long on another does not spin.
    polls: u32,
}

impl ReplaySource {
    /// The source of worker `thread` of a replay job (the `thread`-th traced thread that has
    /// calls to replay).
    pub fn new(run: Arc<ReplayRun>, thread: u32) -> Result<ReplaySource, SourceError> {
        if thread as usize >= run.plan().threads.len() {
            return Err(said!(
                "the trace has {} threads to replay; the job asks for thread {}",
                run.plan().threads.len(),
                thread + 1
            ));
        }
        Ok(ReplaySource {
            run,
            thread: thread as usize,
            i: 0,
            start: None,
            due: None,
            owed: Duration::ZERO,
            issued: None,
            pending: Vec::new(),
            ring_i: 0,
            slots: HashMap::new(),
            free: Vec::new(),
            next_slot: 0,
            names: HashMap::new(),
            changes: VecDeque::new(),
            polls: 0,
        })
    }

    fn steps(&self) -> &[Step] {
        &self.run.plan().threads[self.thread].steps
    }

    fn tid(&self) -> u32 {
        self.run.plan().threads[self.thread].tid
    }

    fn slot(&mut self, file: u32) -> u32 {
        if let Some(&s) = self.slots.get(&file) {
            return s;
        }
        let s = self.free.pop().unwrap_or_else(|| {
            self.next_slot += 1;
            self.next_slot - 1
        });
        self.slots.insert(file, s);
        s
    }

    /// Let go of an opening's index (after its close or its last use here).
    fn release(&mut self, file: u32) -> Option<u32> {
        let s = self.slots.remove(&file)?;
        self.free.push(s);
        Some(s)
    }

    fn scaled(&self, ns: u64) -> Duration {
        match self.run.timing {
            Timing::Scale(x) => Duration::from_nanos((ns as f64 / x) as u64),
            _ => Duration::from_nanos(ns),
        }
    }

    /// When step `i` is due, asked right after step `i - 1` completed (at `now`), or, for an
    /// asynchronous step (`ring`, its ring step), once what it waits for completed.
    fn due_of(&self, i: usize, now: Stamp, ring: Option<&RingStep>) -> Option<Stamp> {
        let start = self.start?;
        let plan = self.run.plan();
        let th = &plan.threads[self.thread];
        let op = &th.steps[i].op;
        match self.run.timing {
            Timing::Afap => None,
            Timing::Recorded => Some(
                start + Duration::from_nanos(plan.lead_ns.saturating_add(op.start_ns.saturating_sub(plan.origin_ns))),
            ),
            Timing::Think | Timing::Scale(_) => Some(if i == 0 {
                start + self.scaled(th.lead_ns(&th.steps[0], plan.origin_ns, plan.lead_ns))
            } else {
                now + self.scaled(th.think_ns(i, ring))
            }),
        }
    }

    /// Whether every earlier call on the step's shared paths has completed and, for an
    /// asynchronous step, its ring allows it.
    fn ready(&self, step: &Step) -> bool {
        let th = &self.run.plan().threads[self.thread];
        th.waits[step.waits_start as usize..][..step.waits_len as usize]
            .iter()
            .all(|&(k, rank)| self.run.done[k as usize].load(Ordering::Acquire) >= rank)
            && self.ring_step(step).is_none_or(|r| self.gate(&r).may_issue(&r))
    }

    /// An asynchronous step's ring step (the next one: steps are asked for in order).
    fn ring_step(&self, step: &Step) -> Option<RingStep> {
        if step.flags & ASYNC == 0 {
            return None;
        }
        self.run.plan().threads[self.thread].rings.get(self.ring_i).copied()
    }

    fn gate(&self, r: &RingStep) -> &RingGate {
        &self.run.gates[r.ring as usize]
    }

    /// Whether step `step` must wait for everything in flight first: a synchronous call (made
    /// after the thread's earlier ones completed, as strace saw it) or one that changes the
    /// worker's file table (taking another thread's opening, letting one go).
    fn needs_drain(&self, step: &Step) -> bool {
        step.flags & ASYNC == 0
            || self.issued.is_some()
            || !self.changes.is_empty()
            || (step.flags & ADOPT != 0 && !self.slots.contains_key(&step.op.file))
    }

    fn name(&mut self, ctx: &mut Ctx, rel: &Path) -> Result<NameId, SourceError> {
        if let Some(&n) = self.names.get(rel) {
            return Ok(n);
        }
        let n = ctx.names.add(rel).map_err(|e| e.to_string())?;
        self.names.insert(rel.to_path_buf(), n);
        Ok(n)
    }

    fn call(&mut self, step: &Step, ctx: &mut Ctx) -> Result<Call, SourceError> {
        let op = step.op;
        let buffer = self.buffer_len() as u64;
        let len = op.size.min(buffer) as u32;
        let run = self.run.clone();
        let plan = run.plan();
        let namespace = matches!(op.kind, Kind::Open | Kind::Unlink | Kind::Mkdir | Kind::Rename);
        if step.flags & ADOPT != 0 && !namespace && !self.slots.contains_key(&op.file) {
            self.adopt(op.file)?;
        }
        Ok(match op.kind {
            Kind::Open => {
                let rel = plan.files.get(&op.file).map(|f| f.rel.clone()).unwrap_or_default();
                let name = self.name(ctx, &rel)?;
                Call::Open { name, file: self.slot(op.file), flags: open_flags(op.flags) }
            }
            Kind::Close => {
                let file = self.slot(op.file);
                self.release(op.file);
                Call::Close { file }
            }
            Kind::Unlink | Kind::Mkdir => {
                let rel = plan.paths.get(&op.file).cloned().unwrap_or_default();
                let name = self.name(ctx, &rel)?;
                match op.kind {
                    Kind::Mkdir => Call::Mkdir { name },
                    _ if op.flags & 0x200 != 0 => Call::Rmdir { name },
                    _ => Call::Unlink { name },
                }
            }
            Kind::Rename => {
                let from = plan.paths.get(&op.file).cloned().unwrap_or_default();
                let to = plan.paths.get(&(op.offset as u32)).cloned().unwrap_or_default();
                Call::Rename { from: self.name(ctx, &from)?, to: self.name(ctx, &to)? }
            }
            k => {
                let file = self.slot(op.file);
                let iov = op.count.clamp(1, 1024) as u16;
                let (kind, offset, len) = match k {
                    Kind::Read => (OpKind::ReadCur, 0, len),
                    Kind::Write => (OpKind::WriteCur, 0, len),
                    Kind::Pread => (OpKind::Read, op.offset, len),
                    Kind::Pwrite => (OpKind::Write, op.offset, len),
                    Kind::Readv => (OpKind::ReadvCur(iov), 0, len),
                    Kind::Writev => (OpKind::WritevCur(iov), 0, len),
                    Kind::Preadv => (OpKind::Readv(iov), op.offset, len),
                    Kind::Pwritev => (OpKind::Writev(iov), op.offset, len),
                    Kind::Lseek => {
                        let w = Whence::from_raw(op.count)
                            .ok_or_else(|| format!("a recorded lseek with whence {} cannot be replayed", op.count))?;
                        (OpKind::Seek(w), op.offset, 0)
                    }
                    Kind::Fsync => (OpKind::Fsync, 0, 0),
                    Kind::Fdatasync => (OpKind::Fdatasync, 0, 0),
                    Kind::SyncFileRange => (OpKind::SyncRange { flags: op.flags, len: op.size }, op.offset, 0),
                    Kind::Ftruncate => (OpKind::Ftruncate, op.offset, 0),
                    Kind::Fallocate => (OpKind::Fallocate { mode: op.flags, len: op.size }, op.offset, 0),
                    _ => return Err(said!("a recorded {} cannot be replayed", k.as_str())),
                };
                Call::Data { kind, file, offset, len }
            }
        })
    }

    /// Take the opening another thread opened (its descriptor, duplicated) into this thread's
    /// table, at the index the next call names.
    fn adopt(&mut self, file: u32) -> Result<(), SourceError> {
        let run = self.run.clone();
        let rel = run.plan().files.get(&file).map(|f| f.rel.clone()).unwrap_or_default();
        let path = run.shown(&rel);
        let f = run
            .take(file)
            .map_err(|e| format!("{path}: taking the descriptor another thread opened: {e}"))?
            .ok_or_else(|| {
                format!(
                    "{path}: the trace uses this opening in thread {} before the thread that opens it did",
                    self.tid()
                )
            })?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let index = self.slot(file);
        self.changes.push_back(FileChange::Place(SetupFile { index, file: f, len, path }));
        Ok(())
    }

    fn fail(&self, e: SourceError) -> Next {
        self.run.abort.store(true, Ordering::Relaxed);
        eprintln!("replay: {e}");
        Next::Done
    }
}

impl Source for ReplaySource {
    fn buffer_len(&self) -> usize {
        self.run.plan().threads[self.thread].buffer_len
    }

    /// Open the openings this thread uses that no replayed call opens (made before the trace
    /// began): the first thread to get here opens it, the others take duplicates.
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        let run = self.run.clone();
        let plan = run.plan();
        let mut out = Vec::new();
        for &id in &plan.threads[self.thread].setup {
            let Some(f) = plan.files.get(&id) else { continue };
            let path = PathBuf::from(run.shown(&f.rel));
            let file = {
                // Hold the lock while opening so one thread opens and the rest take.
                let mut h = run.handed.lock().map_err(|_| "a replay thread panicked".to_string())?;
                match h.get_mut(&id) {
                    Some((shared, left)) => {
                        let dup = shared.try_clone().map_err(|e| format!("{}: {e}", path.display()))?;
                        *left = left.saturating_sub(1);
                        if *left == 0 {
                            h.remove(&id);
                        }
                        dup
                    }
                    None => {
                        let mut flags = open_flags(f.flags);
                        flags.create = false;
                        flags.exclusive = false;
                        flags.truncate = false;
                        if f.before {
                            // Flags unknown: as the replayed calls need.
                            flags.read = f.reads || !f.writes;
                            flags.write = f.writes;
                        }
                        let file = run.dir()?.open_file(&f.rel, flags).map_err(|e| {
                            format!(
                                "{}: {e} (a file the trace used without opening it; run with --prepare to create it)",
                                path.display()
                            )
                        })?;
                        if let Some(&n) = plan.takers.get(&id) {
                            let dup = file.try_clone().map_err(|e| format!("{}: {e}", path.display()))?;
                            h.insert(id, (dup, n));
                        }
                        file
                    }
                }
            };
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            let index = self.slot(id);
            out.push(SetupFile { index, file, len, path: path.display().to_string() });
        }
        Ok(out)
    }

    /// Writes carry data, not zeros (which compressing or deduplicating storage would fold).
    fn prime(&mut self, slot: u32, buf: &mut [u8]) {
        iolab_engine::fill_pattern(buf, 0x5eed ^ u64::from(slot) ^ (self.thread as u64) << 32, 0);
    }

    fn start(&mut self, at: Stamp) {
        self.start = Some(at);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if self.i >= self.steps().len() || ctx.ending || self.run.abort.load(Ordering::Relaxed) {
            if ctx.inflight > 0 && self.issued.is_some() {
                return Next::Drain;
            }
            // The program's wind-up after its last replayed call, think time like any gap.
            let tail = self.run.plan().threads[self.thread].tail_ns;
            let over = self.i >= self.steps().len() && !ctx.ending && !self.run.aborted() && ctx.inflight == 0;
            if over && self.run.timing != Timing::Afap && tail > 0 {
                let due = *self.due.get_or_insert(ctx.now + self.scaled(tail));
                if ctx.now < due {
                    return Next::WaitUntil(due);
                }
            }
            return Next::Done;
        }
        let i = self.i;
        let step = self.steps()[i];
        if ctx.inflight > 0 && self.needs_drain(&step) {
            return Next::Drain;
        }
        let ring = self.ring_step(&step);
        // A synchronous step's think time runs from its predecessor's end; an asynchronous
        // one's from when what it waits for completed.
        if self.due.is_none() && ring.is_none() {
            self.due = self.due_of(i, ctx.now, None).or(Some(ctx.now));
        }
        if !self.ready(&step) {
            if ctx.inflight > 0 {
                // Its own operations in flight: the worker waits for one to complete.
                return Next::WaitUntil(ctx.now);
            }
            let wait = (20u64 << self.polls.min(4)).min(200);
            self.polls += 1;
            return Next::WaitUntil(ctx.now + Duration::from_micros(wait));
        }
        self.polls = 0;
        if let (None, Some(r)) = (self.due, ring) {
            self.due = self.due_of(i, ctx.now, Some(&r)).or(Some(ctx.now));
        }
        if let Some(d) = self.due {
            if ctx.now < d {
                let left = d.saturating_duration_since(ctx.now);
                // A sleep shorter than the timer's slack (50 µs for a normal thread) lasts the
                // slack: think time in short gaps (an eBPF trace's few µs between calls) is
                // owed and slept in one wait once it adds up to SHORT_WAIT, so the replay keeps
                // the program's think time instead of a slack per gap.
                if left >= SHORT_WAIT || self.run.timing == Timing::Recorded {
                    return Next::WaitUntil(d);
                }
                // With the thread's asynchronous operations in flight a short gap is not owed:
                // a nap lasts the slack while the ring drains (a program thinking a few µs
                // between submissions keeps its depth); the replay's own work between calls
                // stands for it.
                if ctx.inflight == 0 {
                    self.owed += left;
                    if self.owed >= SHORT_WAIT {
                        let d = ctx.now + std::mem::take(&mut self.owed);
                        self.due = Some(d);
                        return Next::WaitUntil(d);
                    }
                }
                self.due = Some(ctx.now);
            }
        }
        if let Some(r) = ring {
            // Taken in flight at once (another thread on the ring may have got there first).
            if !self.gate(&r).issue(&r) {
                return Next::WaitUntil(ctx.now + Duration::from_micros(20));
            }
        }
        let call = match self.call(&step, ctx) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        self.i += 1;
        self.due = None;
        match ring {
            Some(_) => {
                self.pending.push((call, i, self.ring_i));
                self.ring_i += 1;
            }
            None => self.issued = Some(i),
        }
        Next::Issue(Issue::now(call))
    }

    fn opened(&mut self, _file: u32, f: &File) {
        let Some(i) = self.issued else { return };
        let id = self.steps()[i].op.file;
        if let Some(&n) = self.run.plan().takers.get(&id) {
            if let Err(e) = self.run.hand(id, f, n) {
                self.run.abort.store(true, Ordering::Relaxed);
                eprintln!("replay: handing a descriptor on to other threads: {e}");
            }
        }
    }

    fn file_change(&mut self) -> Option<FileChange> {
        self.changes.pop_front()
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        let i = match self.issued.take() {
            Some(i) => i,
            None => {
                let Some(at) = self.pending.iter().position(|p| p.0 == *call) else { return Ok(()) };
                let (_, i, r) = self.pending.remove(at);
                if let Some(r) = self.run.plan().threads[self.thread].rings.get(r) {
                    self.gate(r).complete(r);
                }
                i
            }
        };
        let step = self.steps()[i];
        let run = self.run.clone();
        let plan = run.plan();
        for &(k, _) in &plan.threads[self.thread].waits[step.waits_start as usize..][..step.waits_len as usize] {
            run.done[k as usize].fetch_add(1, Ordering::Release);
        }
        let op: &Op = &step.op;
        let path = || run.shown(plan.rel_of(op).unwrap_or(Path::new("")));
        match result {
            Err(_) => {
                run.abort.store(true, Ordering::Relaxed);
                return Err(SourceError::Context {
                    context: format!("replaying call {} of traced thread {} ({})", i + 1, self.tid(), op.kind.as_str()),
                    source: Box::new(describe_failure(call, &path(), op.size as u32, op.offset, result)),
                });
            }
            Ok(n) => {
                let compared = op.kind.reads() || op.kind.writes() || op.kind == Kind::Lseek;
                if compared && *n as i64 != op.result {
                    run.mismatch(
                        Mismatch {
                            tid: self.tid(),
                            call: i as u64 + 1,
                            name: op.kind.as_str().to_string(),
                            path: path(),
                            recorded: op.result,
                            replayed: *n as i64,
                        },
                        class_of(op),
                    );
                }
            }
        }
        if step.flags & DROP_AFTER != 0 && op.kind != Kind::Close {
            if let Some(s) = self.release(op.file) {
                self.changes.push_back(FileChange::Drop(s));
            }
        }
        Ok(())
    }
}

impl Drop for ReplaySource {
    fn drop(&mut self) {
        // A thread that ends early (an error, a stop) must not leave others waiting on ranks.
        if self.i < self.steps().len() {
            self.run.abort.store(true, Ordering::Relaxed);
        }
    }
}
