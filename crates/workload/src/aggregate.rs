//! The coordinating thread's side of a phase: merging what each worker reports once a second
//! into per-job and per-thread totals and a 1 s timeline, finalising a second once every live
//! worker has moved past it (or a second after it ended), and building the phase's result (at
//! the end, or as it stands for saving while the run goes on). Finished seconds are handed out,
//! not kept: only the last [`RECENT_S`] stay, so a worker's late report can still correct them.
//! Memory is bounded by the number of workers, not the run's length.

use crate::layout::Target;
use iolab_model::figures::{self, Combine, Figures};
use iolab_model::{
    new_histogram, Acc, CpuTime, HoleReads, JobResult, OpClass, PhaseResult, ThreadResult, TimelinePoint, Totals,
};
use iolab_spec::Phase;
use std::collections::BTreeMap;
use std::time::Instant;

/// How many finished seconds stay in memory for late reports to land in. A report later than
/// this (a worker stuck in one I/O for minutes) still counts in the totals; its second in the
/// timeline keeps what it had.
pub(crate) const RECENT_S: usize = 600;

/// What a worker sends the coordinating thread.
pub(crate) enum Msg {
    /// A finished second's counts (`sec` counts from the measured window's start, negative
    /// during the ramp).
    Interval { job: usize, worker: usize, sec: i64, acc: Acc },
    /// The worker is done: its last counts, when it ended, and why if early.
    Done {
        job: usize,
        worker: usize,
        sec: i64,
        acc: Acc,
        end: Instant,
        error: Option<String>,
        /// The source's own figures (see [`crate::source::Source::figures`]).
        figures: Vec<(&'static str, f64)>,
        /// Its reads of kept holes (see [`crate::source::Source::hole_reads`]).
        holes: Option<(u64, u64)>,
        /// The failed I/Os it went on after (see [`crate::source::Source::io_errors`]).
        io_errors: Option<Box<iolab_model::IoErrors>>,
        /// Its time on a CPU and waiting for one over its run, ns ([`crate::cpu::thread_sched`]).
        sched: (u64, u64),
        /// Where its latency target's search got to: the depth, and whether it was found.
        depth: Option<(u32, bool)>,
        /// For a source timed only between its start barrier and its last timed call
        /// ([`crate::source::Source::timed_span`]): those two instants, its measured time.
        span: Option<(Instant, Instant)>,
    },
}

struct Pending {
    counts: TimelinePoint,
    hist: hdrhistogram::Histogram<u64>,
    /// Latencies of the second's reads and writes summed (ns), for their means.
    lat_sum: [f64; 2],
}

/// One worker's share: which job and thread it is, what it moved in the measured window, when
/// it ended and why if early.
#[derive(Clone, Default)]
struct WorkerTally {
    job: usize,
    thread: u32,
    ops: u64,
    bytes: u64,
    end: Option<Instant>,
    error: Option<String>,
    /// When its measured time starts, for a worker started after the phase (a start delay),
    /// or at its start barrier (a source timed only over its timed calls).
    from: Option<Instant>,
    /// Its time is its timed calls' stretch (`Msg::Done`'s `span`), the job's time too.
    spanned: bool,
}

pub(crate) struct Aggregator {
    t0: Instant,
    jobs: Vec<Acc>,
    job_end: Vec<Option<Instant>>,
    job_err: Vec<Option<String>>,
    /// Each job's threads' workload figures, as their sources said them.
    job_figures: Vec<Vec<Figures>>,
    /// Each job's reads of kept holes, from its threads.
    job_holes: Vec<Option<HoleReads>>,
    /// Each job's latency target's search, its threads' depths combined (the lowest; found
    /// when every thread's was).
    job_depth: Vec<Option<(u32, bool)>>,
    /// Each job's failed I/Os gone on after, from its threads.
    job_io_errors: Vec<Option<iolab_model::IoErrors>>,
    /// The workers' time on a CPU and waiting for one, ns, over those done.
    sched: (u64, u64),
    workers: Vec<WorkerTally>,
    worker_sec: Vec<i64>,
    worker_done: Vec<bool>,
    pub(crate) alive: usize,
    pending: BTreeMap<i64, Pending>,
    /// The last finished seconds, by second, for late reports.
    recent: BTreeMap<i64, TimelinePoint>,
    /// Finished seconds a late report changed since [`Aggregator::corrections`] was last asked.
    changed: Vec<i64>,
    finalized_upto: i64,
    bytes: u64,
    /// SNIA steady state: each job's counts per round, the last few, so that the phase can
    /// report its window's figures ([`Aggregator::keep_rounds`]).
    rounds: Option<Rounds>,
    /// `--ramp auto`: the seconds held until the warm-up is judged, and those dropped
    /// ([`Aggregator::judge_warmup`]).
    auto: Option<AutoRamp>,
}

/// `--ramp auto`'s seconds: each job's counts per second held while they may still start a
/// steady window (at most the window's), those found to be warm-up, and the first second that
/// counts once the judge found it.
struct AutoRamp {
    held: BTreeMap<i64, Vec<Acc>>,
    dropped: Vec<Acc>,
    /// Seconds before this one are warm-up.
    before: i64,
    from: Option<i64>,
}

/// Each job's counts per round of `len_s` seconds (the last `keep` rounds), and the window of
/// rounds the phase's figures come from once one is chosen.
struct Rounds {
    len_s: i64,
    keep: usize,
    by_round: BTreeMap<i64, Vec<Acc>>,
    window: Option<(i64, i64)>,
}

impl Aggregator {
    /// `threads[j]` is job `j`'s thread count; workers are numbered job by job.
    pub(crate) fn new(threads: &[u32], t0: Instant) -> Self {
        let workers: Vec<WorkerTally> = threads
            .iter()
            .enumerate()
            .flat_map(|(job, n)| (0..*n).map(move |thread| WorkerTally { job, thread, ..Default::default() }))
            .collect();
        let n = workers.len();
        Aggregator {
            t0,
            jobs: vec![Acc::default(); threads.len()],
            job_end: vec![None; threads.len()],
            job_err: vec![None; threads.len()],
            job_figures: vec![Vec::new(); threads.len()],
            job_holes: vec![None; threads.len()],
            job_depth: vec![None; threads.len()],
            job_io_errors: vec![None; threads.len()],
            sched: (0, 0),
            workers,
            worker_sec: vec![i64::MIN; n],
            worker_done: vec![false; n],
            alive: n,
            pending: BTreeMap::new(),
            recent: BTreeMap::new(),
            changed: Vec::new(),
            finalized_upto: -1,
            bytes: 0,
            rounds: None,
            auto: None,
        }
    }

    /// `--ramp auto`: hold each second's counts until [`Aggregator::warmup`] says whether it
    /// is warm-up (dropped) or counts.
    pub(crate) fn judge_warmup(&mut self) {
        let n = self.jobs.len();
        self.auto = Some(AutoRamp { held: BTreeMap::new(), dropped: vec![Acc::default(); n], before: 0, from: None });
    }

    /// What the warm-up judge heard after a second.
    pub(crate) fn warmup(&mut self, h: crate::warmup::Heard) {
        use crate::warmup::Heard;
        let Some(a) = &mut self.auto else { return };
        let (cut, counts_from) = match h {
            Heard::Nothing => return,
            Heard::Before(b) => (b, None),
            Heard::Ended(e) => (e, Some(e)),
        };
        a.before = a.before.max(cut);
        let kept = a.held.split_off(&cut);
        for (_, per_job) in std::mem::replace(&mut a.held, kept) {
            for (d, add) in a.dropped.iter_mut().zip(&per_job) {
                d.merge(add);
            }
        }
        if let Some(e) = counts_from {
            a.from = Some(e);
            for (_, per_job) in std::mem::take(&mut a.held) {
                for (j, add) in self.jobs.iter_mut().zip(&per_job) {
                    j.merge(add);
                }
            }
        }
    }

    /// `--ramp auto`: the operations and bytes dropped as warm-up.
    pub(crate) fn dropped(&self) -> (u64, u64) {
        self.auto.as_ref().map_or((0, 0), |a| {
            a.dropped
                .iter()
                .fold((0, 0), |(o, b), acc| (o + acc.iter().map(|(_, c)| c.ops).sum::<u64>(), b + acc.bytes()))
        })
    }

    /// Keep each job's counts per round of `len_s` seconds, the last `window` rounds and a few
    /// more (late reports, the seconds after the last judged round), for the window's figures.
    pub(crate) fn keep_rounds(&mut self, len_s: i64, window: usize) {
        self.rounds = Some(Rounds { len_s: len_s.max(1), keep: window + 3, by_round: BTreeMap::new(), window: None });
    }

    /// The phase's figures are those of rounds `first..=last` (counted from 0).
    pub(crate) fn set_window(&mut self, first: i64, last: i64) {
        if let Some(r) = &mut self.rounds {
            r.window = Some((first, last));
        }
    }

    /// Workers that start after the phase's measured window opens (`--start-delay`), each
    /// with its own start, in worker order: a job's and a thread's time (and so its rates)
    /// count from it, as fio's do from a delayed job's start. The phase's time stays the phase's.
    pub(crate) fn starts(&mut self, begins: impl IntoIterator<Item = Instant>) {
        let t0 = self.t0;
        for (w, b) in self.workers.iter_mut().zip(begins) {
            w.from = (b > t0).then_some(b);
        }
    }

    pub(crate) fn bytes_so_far(&self) -> u64 {
        self.bytes
    }

    /// `--ramp auto`: whether second `sec` counts toward the job's figures; when it does not
    /// (yet), it is held until judged, or dropped as warm-up.
    fn counts(&mut self, job: usize, sec: i64, acc: &Acc) -> bool {
        let n = self.jobs.len();
        let Some(a) = &mut self.auto else { return true };
        match a.from {
            Some(f) if sec >= f => return true,
            Some(_) => a.dropped[job].merge(acc),
            None if sec < a.before => a.dropped[job].merge(acc),
            None => a.held.entry(sec).or_insert_with(|| vec![Acc::default(); n])[job].merge(acc),
        }
        false
    }

    fn merge(&mut self, job: usize, worker: usize, sec: i64, acc: &Acc) {
        if sec < 0 || acc.is_empty() {
            return; // ramp: run but not counted
        }
        if self.counts(job, sec, acc) {
            self.jobs[job].merge(acc);
        }
        self.bytes += acc.bytes();
        if let Some(r) = &mut self.rounds {
            let n = self.jobs.len();
            r.by_round.entry(sec / r.len_s).or_insert_with(|| vec![Acc::default(); n])[job].merge(acc);
            while r.by_round.len() > r.keep {
                r.by_round.pop_first();
            }
        }
        if let Some(w) = self.workers.get_mut(worker) {
            w.ops += acc.iter().map(|(_, a)| a.ops).sum::<u64>();
            w.bytes += acc.bytes();
        }
        if sec <= self.finalized_upto {
            // A straggler's report for a second already handed out: counts still land in it,
            // and the second is handed out again.
            if let Some(p) = self.recent.get_mut(&sec) {
                p.add(acc);
                if !self.changed.contains(&sec) {
                    self.changed.push(sec);
                }
            }
            return;
        }
        let p = self.pending.entry(sec).or_insert_with(|| Pending {
            counts: TimelinePoint { t_s: (sec + 1) as f64, ..Default::default() },
            hist: new_histogram(),
            lat_sum: [0.0; 2],
        });
        p.counts.add(acc);
        for (i, c) in [OpClass::Read, OpClass::Write].into_iter().enumerate() {
            if let Some(h) = &acc.get(c).hist {
                let _ = p.hist.add(h);
                p.lat_sum[i] += h.mean() * h.len() as f64;
            }
        }
    }

    pub(crate) fn take(&mut self, m: Msg) {
        match m {
            Msg::Interval { job, worker, sec, acc } => {
                self.merge(job, worker, sec, &acc);
                self.worker_sec[worker] = self.worker_sec[worker].max(sec);
            }
            Msg::Done { job, worker, sec, acc, end, error, figures, holes, io_errors, sched, depth, span } => {
                if let Some((d, found)) = depth {
                    let j = self.job_depth[job].get_or_insert((d, found));
                    *j = (j.0.min(d), j.1 && found);
                }
                // A source timed only over its timed calls: its time runs from its start
                // barrier to its last timed call, not over the untimed work around them.
                let end = match span {
                    Some((from, last)) => {
                        if let Some(w) = self.workers.get_mut(worker) {
                            (w.from, w.spanned) = (Some(from), true);
                        }
                        last
                    }
                    None => end,
                };
                if let Some(e) = io_errors {
                    self.job_io_errors[job].get_or_insert_with(Default::default).add(&e);
                }
                self.merge(job, worker, sec, &acc);
                self.sched.0 += sched.0;
                self.sched.1 += sched.1;
                if let Some((reads, in_holes)) = holes {
                    let h = self.job_holes[job].get_or_insert_with(HoleReads::default);
                    h.reads += reads;
                    h.in_holes += in_holes;
                }
                if !figures.is_empty() {
                    self.job_figures[job].push(figures.iter().map(|(k, v)| (k.to_string(), *v)).collect());
                }
                if let Some(w) = self.workers.get_mut(worker) {
                    w.end = Some(end);
                    w.error.clone_from(&error);
                }
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
    pub(crate) fn finalize(&mut self, now: Instant, all: bool) -> Vec<TimelinePoint> {
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
            let mean = |sum: f64, n: u64| if n > 0 { (sum / n as f64).round() as u64 } else { 0 };
            point.read_lat_mean_ns = mean(p.lat_sum[0], point.read_ops);
            point.write_lat_mean_ns = mean(p.lat_sum[1], point.write_ops);
            self.finalized_upto = self.finalized_upto.max(sec);
            self.recent.insert(sec, point.clone());
            while self.recent.len() > RECENT_S {
                self.recent.pop_first();
            }
            out.push(point);
        }
        if upto != i64::MAX {
            self.finalized_upto = self.finalized_upto.max(upto);
        }
        out
    }

    /// Finished seconds that late reports changed since last asked, as they now stand.
    pub(crate) fn corrections(&mut self) -> Vec<TimelinePoint> {
        let mut secs = std::mem::take(&mut self.changed);
        secs.sort_unstable();
        secs.iter().filter_map(|s| self.recent.get(s).cloned()).collect()
    }

    /// The phase's result as it stands at `now`: jobs still running count up to `now`. The
    /// timeline and samples are not in it; they were handed out as they were measured.
    pub(crate) fn result(
        &self,
        phase: &Phase,
        targets: &[Vec<Target>],
        now: Instant,
        cpu: CpuTime,
        interrupted: bool,
    ) -> PhaseResult {
        let t0 = self.t0;
        let since =
            |from: Instant, end: Option<Instant>| end.unwrap_or(now).saturating_duration_since(from).as_secs_f64();
        let secs = |end: Option<Instant>| since(t0, end);
        let mut total = Acc::default();
        let mut jobs = Vec::new();
        let mut elapsed = 0f64;
        // SNIA steady state: the jobs' counts over the window's rounds, and its length.
        let window = self.rounds.as_ref().and_then(|r| {
            let (a, b) = r.window?;
            let mut accs = vec![Acc::default(); self.jobs.len()];
            for (_, per_job) in r.by_round.range(a..=b) {
                for (acc, add) in accs.iter_mut().zip(per_job) {
                    acc.merge(add);
                }
            }
            Some((accs, ((b - a + 1) * r.len_s) as f64))
        });
        for (i, job) in phase.jobs.iter().enumerate() {
            let running = self.workers.iter().zip(&self.worker_done).any(|(w, d)| w.job == i && !d);
            let end = if running { None } else { self.job_end[i] };
            let mut phase_e = if running || end.is_some() { secs(end) } else { 0.0 };
            // A delayed job's time counts from its first thread's start.
            let from = self.workers.iter().filter(|w| w.job == i).map(|w| w.from.unwrap_or(t0)).min().unwrap_or(t0);
            let mut e = if running || end.is_some() { since(from, end) } else { 0.0 };
            // A job timed over its timed calls only: the phase's time holds that stretch, not
            // the untimed making before it.
            if !running && self.workers.iter().any(|w| w.job == i && w.spanned) {
                phase_e = e;
            }
            // SNIA steady state: the window's counts over the window's length.
            let whole;
            let acc = match (&window, &self.auto) {
                (Some((accs, len)), _) => {
                    e = *len;
                    phase_e = *len;
                    &accs[i]
                }
                // --ramp auto: the seconds after the warm-up, over their time.
                (None, Some(AutoRamp { from: Some(f), .. })) => {
                    e = (e - *f as f64).max(0.0);
                    phase_e = (phase_e - *f as f64).max(0.0);
                    &self.jobs[i]
                }
                // --ramp auto before (or without) a steady window: everything so far.
                (None, Some(a)) => {
                    let mut all = self.jobs[i].clone();
                    all.merge(&a.dropped[i]);
                    for per_job in a.held.values() {
                        all.merge(&per_job[i]);
                    }
                    whole = all;
                    &whole
                }
                (None, None) => &self.jobs[i],
            };
            elapsed = elapsed.max(phase_e);
            total.merge(acc);
            let per_thread = self
                .workers
                .iter()
                .filter(|w| w.job == i)
                .map(|w| {
                    ThreadResult::new(w.thread, since(w.from.unwrap_or(t0), w.end), w.ops, w.bytes, w.error.clone())
                })
                .collect();
            let label = job.workload.label();
            let workload =
                figures::personality(&label).map(|p| p.combine(self.job_figures[i].iter())).unwrap_or_default();
            jobs.push(JobResult {
                node: None,
                name: job.name.clone(),
                engine: job.engine.to_string(),
                rw: label,
                threads: job.threads,
                files: targets[i].iter().map(|t| t.path.display().to_string()).collect(),
                elapsed_s: e,
                total: Totals::from_acc(acc, e),
                error: self.job_err[i].clone(),
                per_thread,
                workload,
                replay: None,
                holes: self.job_holes[i].map(|mut h| {
                    // What a uniform read of the region would find: its bytes in holes.
                    let (empty, region): (u64, u64) = targets[i]
                        .iter()
                        .filter(|t| !t.kept_holes().is_empty())
                        .map(|t| {
                            (
                                t.empty_bytes(),
                                t.size.min(t.existing).saturating_sub(job.workload.block().map_or(0, |b| b.offset())),
                            )
                        })
                        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                    h.hole_share = if region > 0 { empty as f64 / region as f64 } else { 0.0 };
                    h.preallocated = targets[i].iter().any(Target::preallocated);
                    h
                }),
                latency_target: self.job_depth[i].zip(job.latency_target).map(|((depth, found), t)| {
                    iolab_model::results::LatencyDepth {
                        depth,
                        found: found || t.run,
                        target_ns: t.target.as_nanos() as u64,
                        window_ns: t.window.as_nanos() as u64,
                        percentile: t.percentile,
                    }
                }),
                io_errors: self.job_io_errors[i].clone(),
            });
        }
        let mut r = PhaseResult {
            notes: phase.jobs.iter().flat_map(|j| j.notes()).collect(),
            elapsed_s: elapsed,
            interrupted,
            total: Totals::from_acc(&total, elapsed),
            jobs,
            cpu: CpuTime {
                workers_on_cpu_s: self.sched.0 as f64 / 1e9,
                workers_waiting_s: self.sched.1 as f64 / 1e9,
                ..cpu
            },
            ..PhaseResult::new(phase.name.clone())
        };
        r.roll_up_workload();
        for h in r.jobs.iter().filter_map(|j| j.holes) {
            r.holes.get_or_insert_with(HoleReads::default).add(&h);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{Bytes, EngineKind, JobPatch, Rw};
    use std::time::Duration;

    fn acc(reads: u64) -> Acc {
        let mut a = Acc::default();
        for _ in 0..reads {
            a.record(OpClass::Read, 4096, 1000);
        }
        a
    }

    fn phase(threads: u32) -> Phase {
        let job = JobPatch {
            name: Some("j".into()),
            target: Some("/nowhere".into()),
            size: Some(Bytes::mib(1)),
            rw: Some(Rw::Read),
            engine: Some(EngineKind::Null),
            threads: Some(threads),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        Phase { name: "p".into(), jobs: vec![job] }
    }

    #[test]
    fn a_late_report_corrects_a_second_already_handed_out() {
        let t0 = Instant::now();
        let mut a = Aggregator::new(&[2], t0);
        a.take(Msg::Interval { job: 0, worker: 0, sec: 0, acc: acc(3) });
        a.take(Msg::Interval { job: 0, worker: 0, sec: 1, acc: acc(1) });
        // Worker 1 says nothing; the clock finalises second 0 without it.
        let out = a.finalize(t0 + Duration::from_millis(2500), false);
        assert_eq!(out.iter().map(|p| (p.t_s, p.read_ops)).collect::<Vec<_>>(), [(1.0, 3)]);
        assert!(a.corrections().is_empty());
        // Its report for second 0 arrives late: the second is handed out again, corrected.
        a.take(Msg::Interval { job: 0, worker: 1, sec: 0, acc: acc(2) });
        let fixed = a.corrections();
        assert_eq!(fixed.iter().map(|p| (p.t_s, p.read_ops)).collect::<Vec<_>>(), [(1.0, 5)]);
        assert!(a.corrections().is_empty(), "handed out once");
        assert_eq!(a.jobs[0].get(OpClass::Read).ops, 6);
    }

    #[test]
    fn only_the_recent_seconds_stay_in_memory() {
        let t0 = Instant::now();
        let mut a = Aggregator::new(&[1], t0);
        let n = RECENT_S as i64 + 50;
        for sec in 0..n {
            a.take(Msg::Interval { job: 0, worker: 0, sec, acc: acc(1) });
            a.take(Msg::Interval { job: 0, worker: 0, sec: sec + 1, acc: Acc::default() });
            assert_eq!(a.finalize(t0, false).len(), 1, "second {sec} handed out once its worker moved on");
        }
        assert_eq!(a.recent.len(), RECENT_S);
        assert!(a.pending.len() <= 1);
        // A report for a second that left memory still counts in the totals.
        a.take(Msg::Interval { job: 0, worker: 0, sec: 3, acc: acc(1) });
        assert!(a.corrections().is_empty());
        assert_eq!(a.jobs[0].get(OpClass::Read).ops, n as u64 + 1);
    }

    #[test]
    fn a_job_timed_over_its_calls_counts_from_its_start_barrier_to_its_last_timed_call() {
        let t0 = Instant::now();
        let ph = phase(2);
        let targets = vec![Vec::new()];
        let mut a = Aggregator::new(&[2], t0);
        // Thread 0 made its names untimed for 3 s, met the barrier at 3 s, made its timed calls
        // until 3.5 s and removed the names until 6 s; thread 1 the same, its last call at 3.25 s.
        for (worker, last_ms) in [(0, 3500), (1, 3250)] {
            a.take(Msg::Done {
                job: 0,
                worker,
                sec: 5,
                acc: acc(100),
                end: t0 + Duration::from_secs(6),
                error: None,
                figures: Vec::new(),
                holes: None,
                io_errors: None,
                sched: (0, 0),
                depth: None,
                span: Some((t0 + Duration::from_secs(3), t0 + Duration::from_millis(last_ms))),
            });
        }
        let r = a.result(&ph, &targets, t0 + Duration::from_secs(9), CpuTime::default(), false);
        assert!((r.jobs[0].elapsed_s - 0.5).abs() < 1e-9, "{}", r.jobs[0].elapsed_s);
        assert!((r.elapsed_s - 0.5).abs() < 1e-9, "the phase's time is the job's: {}", r.elapsed_s);
        assert!((r.jobs[0].total.read().iops - 400.0).abs() < 1e-6, "{}", r.jobs[0].total.read().iops);
        let th = &r.jobs[0].per_thread;
        assert_eq!((th[0].elapsed_s, th[1].elapsed_s), (0.5, 0.25));
    }

    #[test]
    fn each_thread_keeps_its_end_and_volume_and_the_phase_stands_while_running() {
        let t0 = Instant::now();
        let ph = phase(2);
        let targets = vec![Vec::new()];
        let mut a = Aggregator::new(&[2], t0);
        a.take(Msg::Interval { job: 0, worker: 0, sec: 0, acc: acc(4) });
        a.take(Msg::Interval { job: 0, worker: 1, sec: 0, acc: acc(2) });
        a.take(Msg::Done {
            job: 0,
            worker: 1,
            sec: 1,
            acc: acc(1),
            end: t0 + Duration::from_secs(2),
            error: None,
            figures: Vec::new(),
            holes: None,
            io_errors: None,
            sched: (0, 0),
            depth: None,
            span: None,
        });
        // Worker 0 still runs: the job and the phase count up to `now`.
        let now = t0 + Duration::from_secs(3);
        let so_far = a.result(&ph, &targets, now, CpuTime::default(), true);
        assert!(so_far.interrupted);
        assert!((so_far.elapsed_s - 3.0).abs() < 1e-9 && (so_far.jobs[0].elapsed_s - 3.0).abs() < 1e-9);
        assert_eq!(so_far.jobs[0].total.read().ops, 7);
        a.take(Msg::Done {
            job: 0,
            worker: 0,
            sec: 4,
            acc: acc(1),
            end: t0 + Duration::from_secs(5),
            error: Some("EIO".into()),
            figures: Vec::new(),
            holes: None,
            io_errors: None,
            sched: (0, 0),
            depth: None,
            span: None,
        });
        let r = a.result(&ph, &targets, t0 + Duration::from_secs(9), CpuTime::default(), false);
        let th = &r.jobs[0].per_thread;
        assert_eq!(th.len(), 2);
        assert_eq!((th[0].thread, th[0].ops, th[0].bytes, th[0].elapsed_s), (0, 5, 5 * 4096, 5.0));
        assert_eq!(th[0].error.as_deref(), Some("EIO"));
        assert_eq!((th[1].thread, th[1].ops, th[1].elapsed_s), (1, 3, 2.0));
        assert!((th[1].bw_bytes - 3.0 * 4096.0 / 2.0).abs() < 1e-9);
        assert_eq!(r.jobs[0].elapsed_s, 5.0, "the job ends with its last thread");
        assert_eq!(r.jobs[0].total.read().ops, th[0].ops + th[1].ops);
        assert!(r.timeline.is_empty(), "seconds are handed out, not kept");
    }
}
