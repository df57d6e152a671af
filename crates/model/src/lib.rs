//! iolab-model: what a run produced, as plain data. The executor fills it, the store keeps it,
//! the report and the CLI read it; none of them needs the engine to do so. Operation classes
//! ([`class`]), counters with HDR histograms that merge ([`stats`]), a worker's fast recording
//! buffer ([`recorder`]), a personality's own figures and how they combine ([`figures`]), a
//! replay's fidelity ([`replay`]) and the result tree that
//! `--output json` prints ([`results`], the contract of docs/json.md, with its constructors),
//! data validation's findings ([`verify`]), the kind of a stored run ([`kind`]), the wall
//! clock as results keep it ([`clock`]), what happens during a run as one stream of events
//! ([`events`]), the one rule that merges several nodes' phases into one ([`merge`]), the one
//! rule that sets a figure beside what the storage saw ([`fidelity`]) and the one that names
//! what bounded it ([`bound`]).

#![forbid(unsafe_code)]

pub mod bound;
pub mod class;
pub mod clock;
pub mod events;
pub mod fidelity;
pub mod figures;
pub mod hist;
pub mod io_errors;
pub mod kind;
pub mod merge;
pub mod recorder;
pub mod replay;
pub mod results;
pub mod stats;
pub mod steady;
pub mod verify;
pub mod words;

pub use bound::Bound;
pub use class::{ClassCounts, OpClass};
pub use clock::now_unix_s;
pub use events::{Emit, Event, Expect, Named, NoSink, Shifted, Sink};
pub use fidelity::Finding;
pub use io_errors::{FirstError, IoErrors};
pub use kind::RunKind;
pub use recorder::{Recorder, CLASS_BYTES};
pub use replay::{ClassFidelity, Mismatch, ReplayFidelity};
pub use results::{
    ClassTotals, CpuTime, HoleReads, JobResult, LatNs, LayoutDone, Limit, NodeInfo, NodeResult, PhaseResult, RunResult,
    Status, ThreadResult, TimelinePoint, Totals, Verdict, SCHEMA_VERSION,
};
pub use stats::{new_histogram, Acc, ClassAcc, LAT_MAX_NS};
pub use verify::{BlockError, ErrorClass, ErrorCounts, HandedMap, VerifyResult};
pub use words::UnknownWord;
