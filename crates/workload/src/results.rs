//! What a run produced, as data: the contract of `--output json` (docs/json.md) and what
//! the store will keep. Histograms ride along (not serialized) so results stay mergeable.

use crate::stats::{Acc, DirAcc};
use hdrhistogram::Histogram;
use iolab_spec::Plan;
use serde::{Deserialize, Serialize};

/// Bumped when a documented field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Complete,
    Interrupted,
    Failed,
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DirTotals {
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    pub lat_ns: LatNs,
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
}

impl DirTotals {
    pub fn from_acc(a: &DirAcc, elapsed_s: f64) -> Self {
        let per_s = |v: u64| if elapsed_s > 0.0 { v as f64 / elapsed_s } else { 0.0 };
        DirTotals {
            ops: a.ops,
            bytes: a.bytes,
            iops: per_s(a.ops),
            bw_bytes: per_s(a.bytes),
            lat_ns: LatNs::from_hist(&a.hist),
            hist: Some(a.hist.clone()),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SyncTotals {
    pub ops: u64,
    pub lat_ns: LatNs,
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    pub read: DirTotals,
    pub write: DirTotals,
    pub sync: SyncTotals,
}

impl Totals {
    pub fn from_acc(a: &Acc, elapsed_s: f64) -> Self {
        Totals {
            read: DirTotals::from_acc(&a.read, elapsed_s),
            write: DirTotals::from_acc(&a.write, elapsed_s),
            sync: SyncTotals {
                ops: a.sync.ops,
                lat_ns: LatNs::from_hist(&a.sync.hist),
                hist: Some(a.sync.hist.clone()),
            },
        }
    }
}

/// iolab's own CPU time over a phase (all its threads).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
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
    /// Latency of the reads and writes that completed in this second.
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_max_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    pub name: String,
    pub engine: String,
    pub rw: String,
    pub threads: u32,
    pub files: Vec<String>,
    pub elapsed_s: f64,
    pub total: Totals,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
}
