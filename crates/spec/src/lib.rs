//! iolab-spec: what to run, as plain data. Flags, TOML job files and the survey all build
//! a [`Plan`] of [`Phase`]s of [`Job`]s; the engine only ever sees a validated plan, and the
//! plan is serde data so it can be stored or shipped to another node unchanged.

#![forbid(unsafe_code)]

pub mod block;
pub mod cpus;
pub mod delay;
pub mod engine;
pub mod figures;
pub mod file;
pub mod fileset;
pub mod fio;
pub mod flow;
pub mod input;
pub mod io_log;
pub mod job;
pub mod latency_target;
pub mod numa;
pub mod on_error;
pub mod pace;
pub mod patch;
#[macro_use]
pub mod personality;
pub mod prealloc;
pub mod prio;
pub mod replay;
pub mod scenario;
pub mod shown;
pub mod steady;
pub mod table;
pub mod think;
pub mod units;
pub mod verify;

// The personalities, one line each (its options, rules and figures are in its module; its
// sources in the workload crate's list).
personalities! {
    postmark::PostmarkJob as Postmark,
    maildir::MaildirJob as Maildir,
    redolog::RedologJob as Redolog,
    varmail::VarmailJob as Varmail,
    bonnie::BonnieJob as Bonnie,
    append_log::AppendLogJob as AppendLog,
    metadata::MetadataJob as Metadata,
}

pub use block::BlockJob;
pub use delay::Delay;
pub use engine::{Caps, EngineKind};
pub use file::parse_job_file;
pub use job::{BlockSizes, Dist, Job, JournalSync, Phase, Plan, Rw, SyncMode, VerifyOn};
pub use latency_target::LatencyTarget;
pub use patch::{JobPatch, DEFAULT_SEED};
pub use personality::{OwnDirs, Personality, Registered};
pub use replay::{ReplayJob, ReplayLimits, Timing};
pub use scenario::{parse_scenario_file, BuiltinOptions, Part, ScenarioFile, Step, StepPlan};
pub use steady::{SteadyState, Tracked};
pub use units::{parse_duration, parse_size, Bytes};
pub use verify::{VerifyJob, DEFAULT_MAX_ERRORS};

/// A job or job file that cannot run, said in one line that names the field.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("job `{job}`, field `{field}`: {message}")]
    Field { job: String, field: String, message: String },
    #[error("{0}")]
    Plain(String),
    #[error("job file: {0}")]
    Toml(String),
}

impl SpecError {
    pub fn field(job: &str, field: &str, message: impl Into<String>) -> Self {
        SpecError::Field { job: job.to_string(), field: field.to_string(), message: message.into() }
    }
    pub fn plain(message: impl Into<String>) -> Self {
        SpecError::Plain(message.into())
    }
}
