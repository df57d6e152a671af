//! iolab-workload: turns a validated plan into I/O and measurements. Access patterns
//! ([`pattern`]), targets and their safety ([`layout`]), counters and histograms ([`stats`]),
//! the executor ([`executor`]) and the result model ([`results`]) that every output reads.

pub mod clock;
pub mod cpu;
pub mod executor;
pub mod layout;
pub mod pattern;

pub use executor::{check_plan, run_plan, Control, Expect, NoSink, RunError, Sink};
pub use iolab_model::{self as model, results, stats};
pub use iolab_model::{JobResult, PhaseResult, RunResult, Status, Totals};
