//! What a run produced, as data: the contract of `--output json` (docs/json.md) and what the
//! store keeps. Totals hold one entry per operation class; the JSON keeps the documented
//! `read`, `write` and `sync` objects and adds every class under `classes`. Histograms ride
//! along (not serialized) so results stay mergeable.

use crate::class::{ClassCounts, OpClass};
use crate::stats::{Acc, ClassAcc};
use hdrhistogram::Histogram;
use iolab_spec::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Bumped when a documented field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// How a run (or a stored run) stands. One spelling everywhere: [`Status::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Running, Status::Complete, Status::Interrupted, Status::Failed];
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = crate::words::UnknownWord;
    fn from_str(s: &str) -> Result<Status, crate::words::UnknownWord> {
        Status::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| crate::words::UnknownWord::new("status", s, Status::ALL.map(Status::as_str)))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatNs {
    pub min: u64,
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl LatNs {
    pub fn from_hist(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatNs::default();
        }
        LatNs {
            min: h.min(),
            mean: h.mean().round() as u64,
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// One class's totals: counts, rates over the elapsed time, latency percentiles.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClassTotals {
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    pub lat_ns: LatNs,
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
}

impl ClassTotals {
    pub fn from_acc(a: &ClassAcc, elapsed_s: f64) -> Self {
        let per_s = |v: u64| if elapsed_s > 0.0 { v as f64 / elapsed_s } else { 0.0 };
        ClassTotals {
            ops: a.ops,
            bytes: a.bytes,
            iops: per_s(a.ops),
            bw_bytes: per_s(a.bytes),
            lat_ns: a.hist.as_ref().map(LatNs::from_hist).unwrap_or_default(),
            hist: a.hist.clone(),
        }
    }
}

/// Totals per operation class.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    classes: [ClassTotals; OpClass::COUNT],
}

impl Totals {
    pub fn from_acc(a: &Acc, elapsed_s: f64) -> Self {
        let mut t = Totals::default();
        for (c, x) in a.iter() {
            t.classes[c.index()] = ClassTotals::from_acc(x, elapsed_s);
        }
        t
    }
    #[inline]
    pub fn get(&self, c: OpClass) -> &ClassTotals {
        &self.classes[c.index()]
    }
    pub fn get_mut(&mut self, c: OpClass) -> &mut ClassTotals {
        &mut self.classes[c.index()]
    }
    pub fn read(&self) -> &ClassTotals {
        self.get(OpClass::Read)
    }
    pub fn write(&self) -> &ClassTotals {
        self.get(OpClass::Write)
    }
    pub fn sync(&self) -> &ClassTotals {
        self.get(OpClass::Sync)
    }
    /// The classes that saw operations, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (OpClass, &ClassTotals)> {
        OpClass::ALL.iter().map(|c| (*c, &self.classes[c.index()])).filter(|(_, t)| t.ops > 0)
    }
    /// Operations of every class.
    pub fn ops(&self) -> u64 {
        self.classes.iter().map(|t| t.ops).sum()
    }
}

/// `sync` keeps its documented shape: a count and latencies, no bytes or rates.
#[derive(Serialize, Deserialize, Default)]
struct SyncWire {
    ops: u64,
    lat_ns: LatNs,
}

/// The JSON form: `read`, `write` and `sync` as schema 1 documents them, and every class that
/// saw operations under `classes`. Runs stored before `classes` existed read back from the
/// three documented objects.
#[derive(Serialize, Deserialize)]
struct TotalsWire {
    #[serde(default)]
    read: ClassTotals,
    #[serde(default)]
    write: ClassTotals,
    #[serde(default)]
    sync: SyncWire,
    #[serde(default)]
    classes: BTreeMap<String, ClassTotals>,
}

impl Serialize for Totals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sync = self.sync();
        TotalsWire {
            read: self.read().clone(),
            write: self.write().clone(),
            sync: SyncWire { ops: sync.ops, lat_ns: sync.lat_ns.clone() },
            classes: self.iter().map(|(c, t)| (c.as_str().to_string(), t.clone())).collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Totals {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = TotalsWire::deserialize(d)?;
        let mut t = Totals::default();
        if w.classes.is_empty() {
            t.classes[OpClass::Read.index()] = w.read;
            t.classes[OpClass::Write.index()] = w.write;
            let s = &mut t.classes[OpClass::Sync.index()];
            s.ops = w.sync.ops;
            s.lat_ns = w.sync.lat_ns;
        } else {
            for (k, v) in w.classes {
                if let Ok(c) = k.parse::<OpClass>() {
                    t.classes[c.index()] = v;
                }
            }
        }
        Ok(t)
    }
}

/// iolab's own CPU time over a phase (all its threads), and its worker threads' time on a CPU
/// and waiting in the run queue for one (schedstat), added over the workers.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
    /// The worker threads' time on a CPU, seconds added over them (0 where not known).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub workers_on_cpu_s: f64,
    /// The worker threads' time runnable but waiting for a CPU (others' work held it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub workers_waiting_s: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl CpuTime {
    pub fn since(self, before: CpuTime) -> CpuTime {
        CpuTime {
            user_s: (self.user_s - before.user_s).max(0.0),
            system_s: (self.system_s - before.system_s).max(0.0),
            workers_on_cpu_s: (self.workers_on_cpu_s - before.workers_on_cpu_s).max(0.0),
            workers_waiting_s: (self.workers_waiting_s - before.workers_waiting_s).max(0.0),
        }
    }
}

/// One second of a phase's measured window.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the measured window began, at the end of this interval.
    pub t_s: f64,
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
    pub sync_ops: u64,
    /// Operations completed in the interval, per class (every class that had any).
    #[serde(default)]
    pub ops: ClassCounts,
    /// Latency of the reads and writes that completed in this second.
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_max_ns: u64,
    /// Mean latency of the reads that completed in this second (0 without any).
    #[serde(default)]
    pub read_lat_mean_ns: u64,
    /// Mean latency of the writes that completed in this second (0 without any).
    #[serde(default)]
    pub write_lat_mean_ns: u64,
}

impl TimelinePoint {
    /// Add a second's counts of one worker.
    pub fn add(&mut self, acc: &Acc) {
        for (c, a) in acc.iter() {
            self.ops.add(c, a.ops);
            match c {
                OpClass::Read => {
                    self.read_ops += a.ops;
                    self.read_bytes += a.bytes;
                }
                OpClass::Write => {
                    self.write_ops += a.ops;
                    self.write_bytes += a.bytes;
                }
                OpClass::Sync => self.sync_ops += a.ops,
                _ => {}
            }
        }
    }
}

/// One thread (worker) of a job: when it ended and what it moved. Threads of one job can end
/// far apart (a writer starved by its sibling); the job's figures alone hide that.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    /// The thread's number within its job, from 0.
    pub thread: u32,
    /// Seconds from the measured window's start to this thread's end.
    pub elapsed_s: f64,
    /// Operations of every class.
    pub ops: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// `bytes / elapsed_s`.
    pub bw_bytes: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ThreadResult {
    pub fn new(thread: u32, elapsed_s: f64, ops: u64, bytes: u64, error: Option<String>) -> Self {
        let bw_bytes = if elapsed_s > 0.0 { bytes as f64 / elapsed_s } else { 0.0 };
        ThreadResult { thread, elapsed_s, ops, bytes, bw_bytes, error }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobResult {
    /// The node that ran the job, in a run of several nodes (absent on one machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub name: String,
    pub engine: String,
    pub rw: String,
    pub threads: u32,
    pub files: Vec<String>,
    pub elapsed_s: f64,
    pub total: Totals,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each thread's end and volume (runs stored before these were kept have none).
    #[serde(default)]
    pub per_thread: Vec<ThreadResult>,
    /// The job's personality figures, its threads combined ([`crate::figures`]); empty for
    /// block jobs and runs stored before jobs kept their own.
    #[serde(
        default,
        skip_serializing_if = "std::collections::BTreeMap::is_empty",
        serialize_with = "crate::figures::serialize"
    )]
    pub workload: crate::figures::Figures,
    /// A replay job's fidelity: recorded against replayed (absent for other workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplayFidelity>,
    /// Reads that fell in holes of the job's files (absent when its files had none where it
    /// read: [`HoleReads`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<HoleReads>,
    /// Failed I/Os the job went on after (`--continue-on-error`): how many, and the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_errors: Option<crate::IoErrors>,
    /// Where the job's latency target's search got to (`--latency-target`; absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyDepth>,
}

/// A latency target's search ([`iolab_spec::LatencyTarget`]): the queue depth it reached, the
/// lowest of the job's threads (fio's latency_depth), and what it held the I/Os to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyDepth {
    /// The highest depth found to meet the target (with `found` false: where the search stood
    /// when the job ended).
    pub depth: u32,
    /// Every thread's search settled on its depth (or, with `latency_run`, kept adjusting).
    pub found: bool,
    pub target_ns: u64,
    pub window_ns: u64,
    pub percentile: f64,
}

/// Reads that fell where a file holds no data: a hole, or an extent allocated but never
/// written (fallocate's unwritten extents). The filesystem answers those with zeros and no
/// device I/O, so their speed is not the storage's. Counted only on files whose holes were
/// kept: a file iolab may write has its holes filled before the measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HoleReads {
    /// Reads of the files that have holes.
    pub reads: u64,
    /// Those that fell in a hole.
    pub in_holes: u64,
    /// Bytes of the files' read region in holes, over the region (what a uniform read would
    /// find), 0..1.
    pub hole_share: f64,
    /// The holes are a file's preallocation by the phase's first job on it, as fio lays out a
    /// file whose first job writes without reading: counted as the phase began, while its
    /// writes fill them, so a read counted in one may have found data by then.
    #[serde(default)]
    pub preallocated: bool,
    /// For `preallocated` holes: the share of the file still unwritten as the phase ended,
    /// 0..1 (what its writes left of the holes its reads were counted against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwritten_at_end: Option<f64>,
}

impl HoleReads {
    /// The share of reads that fell in holes, 0..1 (0 without reads).
    pub fn share(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.in_holes as f64 / self.reads as f64
        }
    }
    /// Both counts added; the hole share the larger (a phase over several files).
    pub fn add(&mut self, o: &HoleReads) {
        self.reads += o.reads;
        self.in_holes += o.in_holes;
        self.hole_share = self.hole_share.max(o.hole_share);
        self.preallocated |= o.preallocated;
        self.unwritten_at_end = match (self.unwritten_at_end, o.unwritten_at_end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Files laid out before a phase's measured window (written where they had no data: past
/// their end, in their holes and unwritten extents), with the time it took. Not part of the
/// phase's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutDone {
    /// The files laid out.
    pub files: Vec<String>,
    /// Bytes written to lay them out.
    pub bytes: u64,
    /// Of those, bytes written into holes and unwritten extents inside the files.
    pub holes_filled: u64,
    /// Seconds the layout took (its writes and the flush after them).
    pub elapsed_s: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub total: Totals,
    pub jobs: Vec<JobResult>,
    pub timeline: Vec<TimelinePoint>,
    pub cpu: CpuTime,
    /// The system beside the phase's measured window (CPU, disks, network), when sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<iolab_sysstat::SystemResult>,
    /// Several nodes: each node's share of the phase (empty on one machine). `total` and
    /// `timeline` are then the aggregate over the common window, first start to last end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeResult>,
    /// When the phase's measured window began, in Unix seconds. Set in runs of several nodes:
    /// on each node's phase its own start on the coordinator's clock, on the aggregate the
    /// first node's (the merge aligns the nodes' seconds by it: [`crate::merge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// Several nodes: seconds from the common start to the first node's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_done_s: Option<f64>,
    /// Several nodes: seconds from the common start to the last node's end (the phase's
    /// `elapsed_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_done_s: Option<f64>,
    /// A personality's own figures under the original's names (PostMark's `transactions`,
    /// `transactions_per_s`, `created`, ...; docs/json.md lists them): the phase's jobs
    /// combined when they are all of one personality ([`crate::figures::roll_up`]), else
    /// empty (each job keeps its own in `jobs[].workload`); empty for block jobs.
    #[serde(
        default,
        skip_serializing_if = "std::collections::BTreeMap::is_empty",
        serialize_with = "crate::figures::serialize"
    )]
    pub workload: crate::figures::Figures,
    /// What a reader should know about how the phase ran that its figures do not say (a
    /// maildir job's discarded start shortened for a short run), a sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Data validation (`--verify`): blocks stamped and checked, errors by class, the first
    /// errors located. Absent when no job of the phase validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifyResult>,
    /// Where the bytes iolab issued and the bytes the target's devices (or links) moved over
    /// the window differ by far ([`crate::fidelity`]); on several nodes, every node's, each
    /// with its node. Empty on a healthy run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::fidelity::Finding>,
    /// What bounded the phase's figure ([`crate::bound`]); on several nodes each node has its
    /// own (`nodes[].limit`) and the aggregate none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::bound::Bound>,
    /// Reads that fell in holes of files whose holes were kept ([`HoleReads`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<HoleReads>,
    /// The layout before the measured window, when files were laid out for the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutDone>,
    /// The steady-state criterion's rounds and verdict (`--steady-state`), when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyStateResult>,
    /// `--ramp auto`: the warm-up found and dropped, or that none was (issue 29).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<crate::steady::Warmup>,
}

impl PhaseResult {
    /// A phase named `name` with nothing measured yet; the executor, the store and the
    /// commands that make a phase of their own (`watch`, `verify`) fill in what they have.
    pub fn new(name: impl Into<String>) -> PhaseResult {
        PhaseResult { name: name.into(), ..Default::default() }
    }

    /// The phase's personality figures from its jobs' (see `workload`).
    pub fn roll_up_workload(&mut self) {
        self.workload = crate::figures::roll_up(self.jobs.iter().map(|j| (j.rw.as_str(), &j.workload)));
    }
}

/// One node's share of a phase run on several nodes at once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NodeResult {
    pub name: String,
    /// How far this node's measured start was from the scheduled instant, in ns (positive:
    /// late), as the node's own clock corrected by its measured offset saw it.
    pub start_skew_ns: i64,
    /// Seconds from the node's own start to its end.
    pub elapsed_s: f64,
    pub interrupted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub total: Totals,
    pub cpu: CpuTime,
    /// The node's CPU, disks and network beside its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<iolab_sysstat::SystemResult>,
    /// The node's data validation in this phase (`--verify`), as its `phases[].verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifyResult>,
    /// The node's findings (its `phases[].findings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::fidelity::Finding>,
    /// What bounded the node's figure (its `phases[].limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::bound::Bound>,
    /// The node's reads in holes (its `phases[].holes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<HoleReads>,
}

/// A node of a run of several: where it was reached and how its clock stood.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The name given with `--node NAME=...`.
    pub name: String,
    /// How it was reached: `ssh://user@host`, `HOST:PORT`, `exec://PATH` or `join:RANK` (an
    /// agent that connected out to the coordinator).
    pub address: String,
    /// The agent's host name, as it reports it.
    pub hostname: String,
    pub iolab_version: String,
    /// The node's clock minus the coordinator's, in ns (measured at the least round trip).
    pub clock_offset_ns: i64,
    /// The round trip of that measurement, in ns.
    pub rtt_ns: u64,
    /// How far the true offset may be from `clock_offset_ns`, either way, in ns: half that
    /// round trip (the node read its clock somewhere within it). 0 in runs stored before it
    /// was kept.
    #[serde(default)]
    pub clock_offset_uncertainty_ns: u64,
    /// The directory the node's jobs ran under (`dir=`), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
}

/// What limits shared storage under several writers, as the `locking` and `scaling`
/// scenarios judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Network,
    Disk,
    ClusterFs,
    None,
}

impl Limit {
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Network => "network",
            Limit::Disk => "disk",
            Limit::ClusterFs => "cluster_fs",
            Limit::None => "none",
        }
    }
}

/// A scenario's conclusion as data: the limit, the reasons in words, the figures behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The scenario that reached it (`locking`, `scaling`).
    pub scenario: String,
    pub limit: Limit,
    pub reasons: Vec<String>,
    /// The figures the reasons quote, by name (MB/s, ratios, link speeds).
    #[serde(default)]
    pub figures: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub iolab_version: String,
    pub node: String,
    /// Unix time (seconds) when the run began.
    pub started_unix_s: f64,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub plan: Plan,
    pub phases: Vec<PhaseResult>,
    /// Several nodes: the nodes, their addresses and clocks (empty on one machine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeInfo>,
    /// A scenario's verdict (`iolab scenario locking`, `scaling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The preconditioning the run followed (issue 29): its own (a `pts-*` scenario's) or the
    /// last `iolab precondition` of its target on this host, linked by that run's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<crate::steady::Precondition>,
}

impl RunResult {
    /// A run of `plan` on `node` that began at `started_unix_s`: status running, no phases
    /// yet, this iolab's version and schema.
    pub fn new(plan: Plan, node: impl Into<String>, started_unix_s: f64) -> RunResult {
        RunResult {
            schema_version: SCHEMA_VERSION,
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            node: node.into(),
            started_unix_s,
            status: Status::Running,
            error: None,
            plan,
            phases: Vec::new(),
            nodes: Vec::new(),
            verdict: None,
            precondition: None,
        }
    }

    /// A run of `plan` beginning now on this host ([`iolab_sysstat::hostname`]).
    pub fn begin(plan: Plan) -> RunResult {
        RunResult::new(plan, iolab_sysstat::hostname(), crate::clock::now_unix_s())
    }

    /// A run of `plan` that failed before it measured anything, and why.
    pub fn failed(plan: Plan, error: impl Into<String>) -> RunResult {
        RunResult { status: Status::Failed, error: Some(error.into()), ..RunResult::new(plan, "", 0.0) }
    }

    /// Whether data validation found a bad block in any phase (exit status 1).
    pub fn found_bad_blocks(&self) -> bool {
        self.phases.iter().any(|p| p.verify.as_ref().is_some_and(|v| v.errors.total() > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_is_running_with_this_iolab_s_version() {
        let plan = Plan { phases: Vec::new() };
        let r = RunResult::new(plan.clone(), "n1", 12.5);
        assert_eq!((r.status, r.node.as_str(), r.started_unix_s), (Status::Running, "n1", 12.5));
        assert_eq!((r.schema_version, r.iolab_version.as_str()), (SCHEMA_VERSION, env!("CARGO_PKG_VERSION")));
        assert!(r.phases.is_empty() && r.nodes.is_empty() && r.error.is_none() && r.verdict.is_none());
        let f = RunResult::failed(plan.clone(), "no space");
        assert_eq!((f.status, f.error.as_deref()), (Status::Failed, Some("no space")));
        let b = RunResult::begin(plan);
        assert!(b.started_unix_s > 1.6e9 && !b.node.is_empty());
        let p = PhaseResult::new("write");
        assert_eq!(p.name, "write");
        assert!(!p.interrupted && p.jobs.is_empty() && p.system.is_none());
    }

    #[test]
    fn status_words_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }

    #[test]
    fn totals_keep_the_documented_shape_and_add_classes() {
        let mut a = Acc::default();
        a.record(OpClass::Read, 4096, 1000);
        a.record(OpClass::Sync, 0, 5000);
        a.record(OpClass::Create, 0, 7000);
        let t = Totals::from_acc(&a, 2.0);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["read"]["ops"], 1);
        assert_eq!(v["read"]["bw_bytes"], 2048.0);
        assert_eq!(v["write"]["ops"], 0);
        assert_eq!(v["sync"].as_object().unwrap().keys().collect::<Vec<_>>(), ["lat_ns", "ops"]);
        assert_eq!(v["classes"]["create"]["ops"], 1);
        assert!(v["classes"].get("write").is_none());
        let back: Totals = serde_json::from_value(v).unwrap();
        assert_eq!(back.get(OpClass::Create).lat_ns.max, t.get(OpClass::Create).lat_ns.max);
    }

    #[test]
    fn totals_of_runs_stored_before_classes_read_back() {
        let old = r#"{"read":{"ops":5,"bytes":20480,"iops":5.0,"bw_bytes":20480.0,"lat_ns":{"min":1,"mean":2,"p50":2,"p90":3,"p99":4,"p999":4,"max":4}},
                      "write":{"ops":0,"bytes":0,"iops":0.0,"bw_bytes":0.0,"lat_ns":{"min":0,"mean":0,"p50":0,"p90":0,"p99":0,"p999":0,"max":0}},
                      "sync":{"ops":2,"lat_ns":{"min":9,"mean":9,"p50":9,"p90":9,"p99":9,"p999":9,"max":9}}}"#;
        let t: Totals = serde_json::from_str(old).unwrap();
        assert_eq!(t.read().ops, 5);
        assert_eq!(t.sync().ops, 2);
        assert_eq!(t.sync().lat_ns.p99, 9);
        assert_eq!(t.iter().count(), 2);
    }
}
