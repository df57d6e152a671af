//! The executor: a plan in, results out. Phases run in order; the jobs of a phase start
//! together at one instant (a barrier, or a wall-clock time given from outside), each thread
//! with its own engine. The framework, not the engine, takes timestamps: an op's latency runs
//! from its issue (or, under a rate, from its scheduled time) to its reaping. Each worker sends
//! its counts once a second; the coordinating thread merges them into totals and a timeline
//! and hands each finished second to a [`Sink`]. Nothing here reads the terminal.

use crate::clock::{Clock, Stamp};
use crate::cpu;
use crate::layout::{self, LayoutError, Target, TargetKind};
use crate::pattern::{Dir, Pattern};
use crate::results::*;
use iolab_engine::{fill_pattern, open_target, Completion, Engine, Op, OpKind, OpenOptions};
use iolab_model::{new_histogram, Acc, OpClass};
use iolab_spec::{EngineKind, Job, Phase, Plan, SyncMode};
use iolab_sysstat::{ProcRoot, Sampler, SysRoots};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TICK: Duration = Duration::from_secs(1);

/// How the outside world steers a run: stop it, or start it at an agreed instant.
#[derive(Clone, Default)]
pub struct Control {
    pub stop: Arc<AtomicBool>,
    /// Start every phase's measured work no earlier than this wall-clock time.
    pub start_at: Option<SystemTime>,
    /// Sample CPU, disks and network this often beside each phase (None: don't).
    pub sample_interval: Option<Duration>,
}

/// What a phase is expected to take, for progress displays.
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    pub duration: Option<Duration>,
    pub bytes: Option<u64>,
}

/// Receives what happens during a run, as it happens. Every method has a do-nothing default.
pub trait Sink {
    fn message(&mut self, _text: &str) {}
    fn phase_start(&mut self, _index: usize, _phase: &Phase, _expect: Expect) {}
    fn tick(&mut self, _index: usize, _point: &TimelinePoint, _totals_bytes: u64) {}
    fn phase_end(&mut self, _index: usize, _result: &PhaseResult) {}
}

/// A sink that ignores everything.
pub struct NoSink;
impl Sink for NoSink {}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("{0}")]
    Spec(#[from] iolab_spec::SpecError),
}

/// Check every phase's targets before anything is written; a refusal stops the whole plan.
pub fn check_plan(plan: &Plan) -> Result<Vec<Vec<Vec<Target>>>, RunError> {
    plan.validate()?;
    let mut out = Vec::new();
    for p in &plan.phases {
        let mut jobs = Vec::new();
        for j in &p.jobs {
            if j.engine == EngineKind::Null {
                if j.size.is_none() {
                    return Err(iolab_spec::SpecError::field(&j.name, "size", "the null engine needs --size").into());
                }
                jobs.push(Vec::new());
            } else {
                jobs.push(layout::check_job(j)?);
            }
        }
        out.push(jobs);
    }
    Ok(out)
}

/// Run a plan. Refusals return `Err` with nothing written; once I/O has begun, failures and
/// interruptions come back inside the result, beside what was measured.
pub fn run_plan(plan: &Plan, ctl: &Control, sink: &mut dyn Sink) -> Result<RunResult, RunError> {
    let targets = check_plan(plan)?;
    let started_unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        node: iolab_sysstat::hostname(),
        started_unix_s,
        status: Status::Running,
        error: None,
        plan: plan.clone(),
        phases: Vec::new(),
    };
    for (i, (phase, targets)) in plan.phases.iter().zip(targets).enumerate() {
        if ctl.stop.load(Ordering::Relaxed) {
            result.status = Status::Interrupted;
            break;
        }
        if let Err(e) = prepare_phase(phase, &ctl.stop, sink) {
            if result.phases.is_empty() && !matches!(e, LayoutError::Interrupted { .. }) {
                return Err(e.into()); // nothing measured yet: a plain refusal
            }
            result.status =
                if matches!(e, LayoutError::Interrupted { .. }) { Status::Interrupted } else { Status::Failed };
            result.error = Some(e.to_string());
            break;
        }
        let pr = run_phase(i, phase, &targets, ctl, sink);
        sink.phase_end(i, &pr);
        let errors: Vec<String> =
            pr.jobs.iter().filter_map(|j| j.error.clone().map(|e| format!("job `{}`: {e}", j.name))).collect();
        let interrupted = pr.interrupted;
        result.phases.push(pr);
        if !errors.is_empty() {
            result.status = Status::Failed;
            result.error = Some(errors.join("; "));
            break;
        }
        if interrupted {
            result.status = Status::Interrupted;
            break;
        }
    }
    if result.status == Status::Running {
        result.status = Status::Complete;
    }
    Ok(result)
}

fn prepare_phase(phase: &Phase, stop: &AtomicBool, sink: &mut dyn Sink) -> Result<(), LayoutError> {
    let seq_writes = phase.jobs.iter().any(|j| j.rw.writes());
    // Re-check: an earlier phase may have created or grown these files since check_plan.
    let fresh: Vec<(&Job, Vec<Target>)> = phase
        .jobs
        .iter()
        .filter(|j| j.engine != EngineKind::Null)
        .map(|j| layout::check_job(j).map(|ts| (j, ts)))
        .collect::<Result<_, _>>()?;
    layout::check_space(&fresh.iter().flat_map(|(_, ts)| ts).collect::<Vec<_>>(), seq_writes)?;
    let mut seen = std::collections::HashSet::new();
    for (job, ts) in &fresh {
        for t in ts {
            if !seen.insert(t.path.clone()) {
                continue;
            }
            let created_now = !t.exists;
            layout::create_target(t)?;
            if t.layout {
                sink.message(&format!("laying out {} ({} bytes)", t.path.display(), t.size - t.existing));
                layout::lay_out(t, job.seed, job.compressibility, stop, created_now)?;
            } else if job.engine == EngineKind::Mmap && t.kind == TargetKind::File && t.existing < t.size {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&t.path)
                    .and_then(|f| f.set_len(t.size))
                    .map_err(|source| LayoutError::Io { what: "sizing for mmap", path: t.path.clone(), source })?;
            }
        }
    }
    Ok(())
}

enum Msg {
    Interval { job: usize, worker: usize, sec: i64, acc: Acc },
    Done { job: usize, worker: usize, sec: i64, acc: Acc, end: Instant, error: Option<String> },
}

struct Shared {
    start: OnceLock<Instant>,
    ready: Barrier,
    go: Barrier,
}

fn run_phase(index: usize, phase: &Phase, targets: &[Vec<Target>], ctl: &Control, sink: &mut dyn Sink) -> PhaseResult {
    let max_ramp = phase.jobs.iter().map(|j| j.ramp).max().unwrap_or_default();
    let workers: usize = phase.jobs.iter().map(|j| j.threads as usize).sum();
    let expect = Expect {
        duration: phase.jobs.iter().filter_map(|j| j.runtime).max().map(|r| r + max_ramp),
        bytes: if phase.jobs.iter().all(|j| j.runtime.is_none()) {
            Some(phase.jobs.iter().zip(targets).map(|(j, ts)| budget_bytes(j, ts) * j.threads as u64).sum())
        } else {
            None
        },
    };
    sink.phase_start(index, phase, expect);
    let shared = Shared { start: OnceLock::new(), ready: Barrier::new(workers + 1), go: Barrier::new(workers + 1) };
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|s| {
        let mut w = 0;
        for (ji, (job, ts)) in phase.jobs.iter().zip(targets).enumerate() {
            for t in 0..job.threads {
                let tx = tx.clone();
                let shared = &shared;
                let stop = &*ctl.stop;
                let target = if ts.is_empty() { None } else { Some(&ts[(t as usize) % ts.len()]) };
                let worker = w;
                std::thread::Builder::new()
                    .name(format!("iolab-{}-{t}", job.name))
                    .spawn_scoped(s, move || worker_main(ji, worker, t, job, target, max_ramp, shared, stop, tx))
                    .expect("spawning a worker thread");
                w += 1;
            }
        }
        drop(tx);
        shared.ready.wait();
        if let Some(at) = ctl.start_at {
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                std::thread::sleep(wait);
            }
        }
        let phase_start = Instant::now();
        let _ = shared.start.set(phase_start);
        shared.go.wait();
        let t0 = phase_start + max_ramp;
        // The first job's target stands for the phase's storage.
        let sampler = ctl.sample_interval.map(|iv| {
            let target =
                targets.iter().flatten().next().map(|t| iolab_sysstat::describe(&t.path, &SysRoots::default()));
            Sampler::start(ProcRoot::default(), iv, t0, target)
        });
        let cpu0 = cpu::process_cpu();
        let mut agg = Aggregator::new(phase.jobs.len(), workers, t0);
        while agg.alive > 0 {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(m) => agg.take(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            for p in agg.finalize(Instant::now(), false) {
                sink.tick(index, &p, agg.bytes_so_far());
            }
        }
        for p in agg.finalize(Instant::now(), true) {
            sink.tick(index, &p, agg.bytes_so_far());
        }
        let cpu1 = cpu::process_cpu();
        let system = sampler.and_then(|s| s.finish());
        let mut r = agg.into_result(phase, targets, t0, cpu1.since(cpu0), ctl.stop.load(Ordering::Relaxed));
        r.system = system;
        r
    })
}

/// Bytes one thread of a size-bounded job transfers.
fn budget_bytes(job: &Job, ts: &[Target]) -> u64 {
    let size = ts.first().map(|t| t.size).or(job.size.map(|s| s.0)).unwrap_or(0);
    match (job.io_size, job.stride) {
        (Some(b), _) => b.0,
        (None, Some(stride)) => size.div_ceil(stride.0) * job.bs.max().0,
        (None, None) => size,
    }
}

struct Pending {
    counts: TimelinePoint,
    hist: hdrhistogram::Histogram<u64>,
}

struct Aggregator {
    t0: Instant,
    jobs: Vec<Acc>,
    job_end: Vec<Option<Instant>>,
    job_err: Vec<Option<String>>,
    worker_sec: Vec<i64>,
    worker_done: Vec<bool>,
    alive: usize,
    pending: BTreeMap<i64, Pending>,
    timeline: Vec<TimelinePoint>,
    finalized_upto: i64,
    bytes: u64,
}

impl Aggregator {
    fn new(jobs: usize, workers: usize, t0: Instant) -> Self {
        Aggregator {
            t0,
            jobs: vec![Acc::default(); jobs],
            job_end: vec![None; jobs],
            job_err: vec![None; jobs],
            worker_sec: vec![i64::MIN; workers],
            worker_done: vec![false; workers],
            alive: workers,
            pending: BTreeMap::new(),
            timeline: Vec::new(),
            finalized_upto: -1,
            bytes: 0,
        }
    }

    fn bytes_so_far(&self) -> u64 {
        self.bytes
    }

    fn merge(&mut self, job: usize, sec: i64, acc: &Acc) {
        if sec < 0 || acc.is_empty() {
            return; // ramp: run but not counted
        }
        self.jobs[job].merge(acc);
        self.bytes += acc.bytes();
        if sec <= self.finalized_upto {
            // A straggler's report for a second already shown: counts still land in it.
            if let Some(p) = self.timeline.iter_mut().find(|p| p.t_s as i64 == sec + 1) {
                p.add(acc);
            }
            return;
        }
        let p = self.pending.entry(sec).or_insert_with(|| Pending {
            counts: TimelinePoint { t_s: (sec + 1) as f64, ..Default::default() },
            hist: new_histogram(),
        });
        p.counts.add(acc);
        for c in [OpClass::Read, OpClass::Write] {
            if let Some(h) = &acc.get(c).hist {
                let _ = p.hist.add(h);
            }
        }
    }

    fn take(&mut self, m: Msg) {
        match m {
            Msg::Interval { job, worker, sec, acc } => {
                self.merge(job, sec, &acc);
                self.worker_sec[worker] = self.worker_sec[worker].max(sec);
            }
            Msg::Done { job, worker, sec, acc, end, error } => {
                self.merge(job, sec, &acc);
                self.worker_done[worker] = true;
                self.alive -= 1;
                self.job_end[job] = Some(self.job_end[job].map_or(end, |e| e.max(end)));
                if error.is_some() && self.job_err[job].is_none() {
                    self.job_err[job] = error;
                }
            }
        }
    }

    /// Seconds that every live worker has moved past, or that ended over a second ago.
    fn finalize(&mut self, now: Instant, all: bool) -> Vec<TimelinePoint> {
        let live_min = self
            .worker_sec
            .iter()
            .zip(&self.worker_done)
            .filter(|(_, d)| !**d)
            .map(|(s, _)| *s)
            .min()
            .unwrap_or(i64::MAX);
        let by_clock = if now > self.t0 { (now - self.t0).as_secs() as i64 - 2 } else { -1 };
        let upto = if all { i64::MAX } else { live_min.saturating_sub(1).max(by_clock) };
        let mut out = Vec::new();
        while let Some((&sec, _)) = self.pending.first_key_value() {
            if sec > upto {
                break;
            }
            let Some((_, p)) = self.pending.pop_first() else { break };
            let mut point = p.counts;
            if !p.hist.is_empty() {
                point.lat_p50_ns = p.hist.value_at_quantile(0.5);
                point.lat_p99_ns = p.hist.value_at_quantile(0.99);
                point.lat_max_ns = p.hist.max();
            }
            self.finalized_upto = self.finalized_upto.max(sec);
            self.timeline.push(point.clone());
            out.push(point);
        }
        if upto != i64::MAX {
            self.finalized_upto = self.finalized_upto.max(upto);
        }
        out
    }

    fn into_result(
        self,
        phase: &Phase,
        targets: &[Vec<Target>],
        t0: Instant,
        cpu: CpuTime,
        stopped: bool,
    ) -> PhaseResult {
        let secs = |end: Option<Instant>| end.map(|e| e.saturating_duration_since(t0).as_secs_f64()).unwrap_or(0.0);
        let mut total = Acc::default();
        let mut jobs = Vec::new();
        let mut elapsed = 0f64;
        for (i, job) in phase.jobs.iter().enumerate() {
            let e = secs(self.job_end[i]);
            elapsed = elapsed.max(e);
            total.merge(&self.jobs[i]);
            jobs.push(JobResult {
                name: job.name.clone(),
                engine: job.engine.to_string(),
                rw: job.rw.to_string(),
                threads: job.threads,
                files: targets[i].iter().map(|t| t.path.display().to_string()).collect(),
                elapsed_s: e,
                total: Totals::from_acc(&self.jobs[i], e),
                error: self.job_err[i].clone(),
            });
        }
        PhaseResult {
            name: phase.name.clone(),
            elapsed_s: elapsed,
            interrupted: stopped,
            total: Totals::from_acc(&total, elapsed),
            jobs,
            timeline: self.timeline,
            cpu,
            system: None,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn worker_main(
    job_idx: usize,
    worker: usize,
    thread: u32,
    job: &Job,
    target: Option<&Target>,
    ramp: Duration,
    shared: &Shared,
    stop: &AtomicBool,
    tx: Sender<Msg>,
) {
    // A private descriptor table spares the kernel a file reference per I/O (see the engine).
    // Where it is refused (seccomp), the worker just shares the process's table.
    let _ = iolab_engine::private_fd_table();
    let setup = Worker::setup(job, thread, target);
    shared.ready.wait();
    shared.go.wait();
    let start = *shared.start.get().expect("start set before the go barrier");
    let (sec, acc, end, error) = match setup {
        Ok(mut w) => w.run(start, start + ramp, stop, &tx, job_idx, worker),
        Err(e) => (0, Acc::default(), start, Some(e)),
    };
    let _ = tx.send(Msg::Done { job: job_idx, worker, sec, acc, end, error });
}

struct Worker<'a> {
    job: &'a Job,
    clock: Clock,
    engine: Box<dyn Engine>,
    pattern: Pattern,
    path: String,
    flush_every: u64,
    flush_kind: OpKind,
    rate_interval: Option<Duration>,
}

impl<'a> Worker<'a> {
    fn setup(job: &'a Job, thread: u32, target: Option<&Target>) -> Result<Self, String> {
        let depth = job.iodepth as usize;
        let buf_len = job.bs.max().0 as usize;
        let mut engine = iolab_engine::build(job.engine.as_str(), depth, buf_len).map_err(|e| e.to_string())?;
        let (path, size) = match target {
            Some(t) => {
                let opts = OpenOptions {
                    read: true,
                    write: job.rw.writes()
                        || job.end_fsync
                        || job.engine == EngineKind::Mmap && t.kind == TargetKind::File,
                    direct: job.direct,
                    dsync: job.sync == SyncMode::Dsync,
                    sync: job.sync == SyncMode::Sync,
                    ..Default::default()
                };
                let f = open_target(&t.path, opts).map_err(|e| {
                    let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
                        " (this filesystem does not support direct I/O: drop --direct)"
                    } else {
                        ""
                    };
                    format!("opening {}: {e}{hint}", t.path.display())
                })?;
                engine.add_file(&f, t.size).map_err(|e| e.to_string())?;
                (t.path.display().to_string(), t.size)
            }
            None => (job.target.display().to_string(), job.size.map(|s| s.0).unwrap_or(0)),
        };
        for slot in 0..engine.depth() as u32 {
            fill_pattern(engine.buffer(slot), job.seed ^ ((thread as u64) << 32 | slot as u64), job.compressibility);
        }
        // Time-bounded runs wrap around the file until the deadline (or io_size, if given).
        let wrap = job.runtime.is_some();
        let budget = job.io_size.map(|b| b.0).or(wrap.then_some(u64::MAX));
        let per_thread = |v: f64| v / job.threads as f64;
        let rate_interval = match (job.rate, job.rate_iops) {
            (Some(bw), _) => Some(Duration::from_secs_f64(job.bs.mean() / per_thread(bw.0 as f64))),
            (_, Some(iops)) => Some(Duration::from_secs_f64(1.0 / per_thread(iops as f64))),
            _ => None,
        };
        Ok(Worker {
            job,
            clock: Clock::new(),
            engine,
            pattern: Pattern::new(job, thread, size, wrap, budget),
            path,
            flush_every: job.flush_every(),
            flush_kind: if job.sync == SyncMode::Fdatasync { OpKind::Fdatasync } else { OpKind::Fsync },
            rate_interval,
        })
    }

    /// The measuring loop. Returns the last second's index, its unsent counts, the end
    /// instant and the error that ended the job early, if any.
    fn run(
        &mut self,
        start: Instant,
        t0: Instant,
        stop: &AtomicBool,
        tx: &Sender<Msg>,
        job: usize,
        worker: usize,
    ) -> (i64, Acc, Instant, Option<String>) {
        // Every timestamp of the loop comes from the cheap clock; instants in, an instant out.
        let clk = &self.clock;
        let (start, t0) = (clk.at(start), clk.at(t0));
        let depth = self.engine.depth();
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut issued_at = vec![start; depth];
        let mut meta = vec![(OpClass::Read, 0u32, 0u64); depth];
        let mut comps: Vec<Completion> = Vec::with_capacity(depth);
        let mut inflight = 0usize;
        let mut acc = Acc::default();
        let sec_of = |now: Stamp| -> i64 {
            if now >= t0 {
                (now - t0).as_secs() as i64
            } else {
                -(((t0 - now).as_nanos().div_ceil(TICK.as_nanos())) as i64)
            }
        };
        // The instant second `sec` ends: seconds are counted from t0, negative during the ramp.
        let end_of = |sec: i64| -> Stamp {
            if sec >= 0 {
                t0 + Duration::from_secs(sec as u64 + 1)
            } else {
                t0 - Duration::from_secs((-sec - 1) as u64)
            }
        };
        let mut sec = sec_of(start);
        let mut boundary = end_of(sec);
        let deadline = self.job.runtime.map(|r| t0 + r);
        let mut now = start;
        let mut next_due = start;
        let mut writes_since_flush = 0u64;
        let mut flushing = false;
        let mut exhausted = false;
        let mut error: Option<String> = None;

        loop {
            // Issue while there is room.
            while !exhausted && !flushing && !free.is_empty() {
                if error.is_some() || stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
                    exhausted = true;
                    break;
                }
                if self.flush_every > 0 && writes_since_flush >= self.flush_every {
                    if inflight > 0 {
                        break; // a flush waits for the writes before it
                    }
                    let slot = free.pop().expect("a free slot");
                    meta[slot as usize] = (OpClass::Sync, 0, 0);
                    issued_at[slot as usize] = clk.now();
                    if let Err(e) = self.engine.queue(Op { kind: self.flush_kind, file: 0, offset: 0, len: 0, slot }) {
                        error = Some(e.to_string());
                        free.push(slot);
                        break;
                    }
                    inflight += 1;
                    writes_since_flush = 0;
                    flushing = true;
                    break;
                }
                let Some(a) = self.pattern.next_access() else {
                    exhausted = true;
                    break;
                };
                let issue_t = match self.rate_interval {
                    Some(iv) => {
                        if now < next_due && inflight > 0 {
                            // Not due yet: keep this access and go reap what is in flight.
                            self.pattern.push_back(a);
                            break;
                        }
                        let mut t = clk.now();
                        while t < next_due {
                            std::thread::sleep((next_due - t).min(Duration::from_millis(50)));
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            t = clk.now();
                        }
                        let due = next_due;
                        next_due += iv;
                        due
                    }
                    None => clk.now(),
                };
                let slot = free.pop().expect("a free slot");
                let (kind, op_kind) = match a.dir {
                    Dir::Read => (OpClass::Read, OpKind::Read),
                    Dir::Write => {
                        let buf = self.engine.buffer(slot);
                        if buf.len() >= 8 {
                            // Distinct blocks: dedupe cannot fold what iolab writes.
                            buf[..8].copy_from_slice(&a.offset.to_le_bytes());
                        }
                        writes_since_flush += 1;
                        (OpClass::Write, OpKind::Write)
                    }
                };
                meta[slot as usize] = (kind, a.len, a.offset);
                issued_at[slot as usize] = issue_t;
                if let Err(e) = self.engine.queue(Op { kind: op_kind, file: 0, offset: a.offset, len: a.len, slot }) {
                    error = Some(e.to_string());
                    free.push(slot);
                    break;
                }
                inflight += 1;
            }
            if inflight == 0 {
                if exhausted || error.is_some() {
                    break;
                }
                if self.rate_interval.is_none() && !flushing {
                    continue;
                }
            }
            if let Err(e) = self.engine.commit() {
                error.get_or_insert(e.to_string());
            }
            let want = if self.rate_interval.is_some() && !exhausted && clk.now() < next_due { 0 } else { 1 };
            if let Err(e) = self.engine.reap(want, &mut comps) {
                error.get_or_insert(e.to_string());
                if comps.is_empty() {
                    break;
                }
            }
            if comps.is_empty() && want == 0 {
                let gap = next_due.saturating_duration_since(clk.now()).min(Duration::from_micros(50));
                std::thread::sleep(gap);
            }
            now = clk.now();
            if now >= boundary {
                let new_sec = sec_of(now);
                if !acc.is_empty() {
                    let _ = tx.send(Msg::Interval { job, worker, sec, acc: std::mem::take(&mut acc) });
                }
                sec = new_sec;
                boundary = end_of(sec);
            }
            for c in comps.drain(..) {
                let (kind, len, offset) = meta[c.slot as usize];
                let lat = now.saturating_duration_since(issued_at[c.slot as usize]).as_nanos() as u64;
                free.push(c.slot);
                inflight -= 1;
                match (kind, c.result()) {
                    (OpClass::Sync, Ok(_)) => {
                        acc.record(OpClass::Sync, 0, lat);
                        flushing = false;
                    }
                    (OpClass::Read, Ok(n)) if n == len as usize => acc.record(OpClass::Read, n as u64, lat),
                    (OpClass::Write, Ok(n)) if n == len as usize => acc.record(OpClass::Write, n as u64, lat),
                    (k, r) => {
                        flushing = false;
                        let what = match k {
                            OpClass::Sync => "flush",
                            k => k.as_str(),
                        };
                        let why = match r {
                            Ok(n) => format!("short {what}: {n} of {len} bytes"),
                            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => format!("{e}: the filesystem is full"),
                            Err(e) => e.to_string(),
                        };
                        let at = if matches!(k, OpClass::Sync) {
                            String::new()
                        } else {
                            format!(" of {len} bytes at offset {offset}")
                        };
                        error.get_or_insert(format!("{what}{at} in {}: {why}", self.path));
                    }
                }
            }
        }
        if self.job.end_fsync && error.is_none() && !stop.load(Ordering::Relaxed) {
            let t = clk.now();
            let mut done = Vec::new();
            let r = self
                .engine
                .queue(Op { kind: OpKind::Fsync, file: 0, offset: 0, len: 0, slot: 0 })
                .and_then(|_| self.engine.commit())
                .and_then(|_| self.engine.reap(1, &mut done));
            now = clk.now();
            match (r, done.first().map(|c| c.result())) {
                (Ok(()), Some(Ok(_))) => acc.record(OpClass::Sync, 0, (now - t).as_nanos() as u64),
                (Err(e), _) => error = Some(format!("final fsync of {}: {e}", self.path)),
                (_, Some(Err(e))) => error = Some(format!("final fsync of {}: {e}", self.path)),
                (Ok(()), None) => {}
            }
            sec = sec_of(now);
        }
        (sec, acc, clk.instant(now), error)
    }
}
