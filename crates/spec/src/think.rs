//! Think time (`--think`, fio's thinktime): a thread stalls between its I/Os, as an application
//! does something with what it read before the next request. After every `every` blocks (those
//! completed, or with `on_issue` those issued) or once `iotime` of I/O has passed, the thread
//! lets what is in flight complete, spins the CPU for `spin`, then sleeps the rest of `time`.

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::units::duration_serde;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Think {
    /// The whole stall, spin included.
    #[serde(with = "duration_serde")]
    pub time: Duration,
    /// Stall after this many blocks (`None`: after each, unless `iotime` is given alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    /// Of the stall, how long the CPU spins instead of sleeping.
    #[serde(default, with = "duration_serde", skip_serializing_if = "Duration::is_zero")]
    pub spin: Duration,
    /// Count blocks as issued rather than completed (fio's thinktime_blocks_type=issue).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_issue: bool,
    /// Stall after this much time of I/O (fio's thinktime_iotime), or after `every` blocks,
    /// whichever comes first.
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub iotime: Option<Duration>,
}

impl Think {
    /// The blocks between stalls: `every`, else 1, else never by count when only `iotime` is
    /// given (fio: "thinktime_blocks default value 1 does not work together with
    /// thinktime_iotime").
    pub fn blocks(&self) -> u64 {
        match (self.every, self.iotime) {
            (Some(n), _) => n.max(1),
            (None, Some(_)) => u64::MAX,
            (None, None) => 1,
        }
    }

    /// Its rules, for the job `job`.
    pub fn check(&self, job: &str) -> Result<(), crate::SpecError> {
        let err = |field: &str, m: String| Err(crate::SpecError::field(job, field, m));
        if self.time.is_zero() {
            return err("think", "a think time of 0 stalls nothing; leave it out".into());
        }
        if self.time > Duration::from_secs(3600) {
            return err("think", format!("{:?}: a think time is at most an hour", self.time));
        }
        if self.spin > self.time {
            return err(
                "think_spin",
                format!("{:?} is longer than the think time {:?} it is part of", self.spin, self.time),
            );
        }
        if self.every == Some(0) {
            return err("think_every", "0 blocks: give at least 1".into());
        }
        if self.iotime == Some(Duration::ZERO) {
            return err("think_iotime", "0: give a time of I/O between stalls, as 9s".into());
        }
        Ok(())
    }
}
