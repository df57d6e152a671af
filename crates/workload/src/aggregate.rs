//! The coordinating thread's side of a phase: merging what each worker reports once a second
//! into per-job totals and a 1 s timeline, finalising a second once every live worker has moved
//! past it (or a second after it ended), and building the phase's result at the end. Memory is
//! bounded by the number of workers, not the run's length.

use crate::layout::Target;
use iolab_model::{new_histogram, Acc, CpuTime, JobResult, OpClass, PhaseResult, TimelinePoint, Totals};
use iolab_spec::Phase;
use std::collections::BTreeMap;
use std::time::Instant;

/// What a worker sends the coordinating thread.
pub(crate) enum Msg {
    /// A finished second's counts (`sec` counts from the measured window's start, negative
    /// during the ramp).
    Interval { job: usize, worker: usize, sec: i64, acc: Acc },
    /// The worker is done: its last counts, when it ended, and why if early.
    Done { job: usize, worker: usize, sec: i64, acc: Acc, end: Instant, error: Option<String> },
}

struct Pending {
    counts: TimelinePoint,
    hist: hdrhistogram::Histogram<u64>,
}

pub(crate) struct Aggregator {
    t0: Instant,
    jobs: Vec<Acc>,
    job_end: Vec<Option<Instant>>,
    job_err: Vec<Option<String>>,
    worker_sec: Vec<i64>,
    worker_done: Vec<bool>,
    pub(crate) alive: usize,
    pending: BTreeMap<i64, Pending>,
    timeline: Vec<TimelinePoint>,
    finalized_upto: i64,
    bytes: u64,
}

impl Aggregator {
    pub(crate) fn new(jobs: usize, workers: usize, t0: Instant) -> Self {
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

    pub(crate) fn bytes_so_far(&self) -> u64 {
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

    pub(crate) fn take(&mut self, m: Msg) {
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
            self.finalized_upto = self.finalized_upto.max(sec);
            self.timeline.push(point.clone());
            out.push(point);
        }
        if upto != i64::MAX {
            self.finalized_upto = self.finalized_upto.max(upto);
        }
        out
    }

    pub(crate) fn into_result(
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
                rw: job.workload.label(),
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
