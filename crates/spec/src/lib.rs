//! iolab-spec: what to run, as plain data. Flags, TOML job files and the survey all build
//! a [`Plan`] of [`Phase`]s of [`Job`]s; the engine only ever sees a validated plan, and the
//! plan is serde data so it can be stored or shipped to another node unchanged.

#![forbid(unsafe_code)]

pub mod block;
pub mod bonnie;
pub mod file;
pub mod fio;
pub mod job;
pub mod maildir;
pub mod patch;
pub mod postmark;
pub mod redolog;
pub mod replay;
pub mod scenario;
pub mod units;
pub mod varmail;
pub mod verify;

pub use block::BlockJob;
pub use bonnie::BonnieJob;
pub use file::parse_job_file;
pub use job::{
    BlockSizes, Dist, EngineKind, Job, JournalSync, Phase, Plan, Rw, SyncMode, VerifyOn, Workload, WorkloadKind,
};
pub use maildir::MaildirJob;
pub use patch::{JobPatch, DEFAULT_SEED};
pub use postmark::PostmarkJob;
pub use redolog::RedologJob;
pub use replay::{ReplayJob, ReplayLimits, Timing};
pub use scenario::{parse_scenario_file, BuiltinOptions, Part, ScenarioFile, Step, StepPlan};
pub use units::{parse_duration, parse_size, Bytes};
pub use varmail::VarmailJob;
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
