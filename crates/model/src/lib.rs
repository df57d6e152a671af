//! iolab-model: what a run produced, as plain data. The executor fills it, the store keeps it,
//! the report and the CLI read it; none of them needs the engine to do so. Operation classes
//! ([`class`]), counters with HDR histograms that merge ([`stats`]), a worker's fast recording
//! buffer ([`recorder`]), a personality's own figures and how they combine ([`figures`]), a
//! replay's fidelity ([`replay`]) and the result tree that
//! `--output json` prints ([`results`], the contract of docs/json.md).

#![forbid(unsafe_code)]

pub mod class;
pub mod figures;
pub mod hist;
pub mod recorder;
pub mod replay;
pub mod results;
pub mod stats;

pub use class::{ClassCounts, OpClass};
pub use recorder::Recorder;
pub use replay::{ClassFidelity, Mismatch, ReplayFidelity};
pub use results::{
    ClassTotals, CpuTime, JobResult, LatNs, Limit, NodeInfo, NodeResult, PhaseResult, RunResult, Status, ThreadResult,
    TimelinePoint, Totals, Verdict, SCHEMA_VERSION,
};
pub use stats::{new_histogram, Acc, ClassAcc, LAT_MAX_NS};
