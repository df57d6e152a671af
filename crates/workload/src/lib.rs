//! iolab-workload: turns a validated plan into I/O and measurements. Operation sources
//! ([`source`]: the block workload today, personalities, replay and validation next) feed the
//! workers' measuring loop ([`worker`]); data calls go through the engine, namespace calls
//! through [`ns`]; the executor ([`executor`]) runs phases, starts their workers together and
//! merges what they count. Access patterns ([`pattern`]), targets and their safety
//! ([`layout`]); the results themselves are `iolab-model`'s, re-exported here.

#![forbid(unsafe_code)]

// First, so its `said!` is known to every module below.
#[macro_use]
pub mod error;
mod aggregate;
pub mod clock;
pub mod cpu;
pub mod depth_search;
pub mod device;
pub mod executor;
pub mod io_log;
mod keep;
pub mod layout;
pub mod lease;
pub mod memory;
pub mod names;
pub mod ns;
pub mod numa;
pub mod owned;
pub mod pattern;
pub mod place;
pub mod precondition;
pub mod rendezvous;
pub mod source;
pub mod steady;
mod strided;
mod validation;
mod warmup;
pub mod worker;

pub use executor::{check_plan, run_plan, Control, Expect, NoSink, RunError, Sink, StartGate};
pub use iolab_model::events::{Emit, Event};
pub use iolab_model::{self as model, results, stats};
pub use iolab_model::{JobResult, PhaseResult, RunResult, Status, Totals};
pub use keep::{run_plan_kept, Keep};
