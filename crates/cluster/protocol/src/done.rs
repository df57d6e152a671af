//! How a run ended, as the agent says it in Done and the coordinator reads it: a refusal before
//! any I/O, or the run's status, its error and when it began. Nothing else travels: the phases
//! came one by one, and the plan is the coordinator's own.

use crate::proto::{self, RunStatus};
use iolab_model::Status;

/// The Done of a run that ran: how it ended, why it failed, when it began (agent clock, ns).
pub fn ran(status: Status, error: Option<String>, started_unix_ns: i64) -> proto::Done {
    let status = match status {
        Status::Complete => RunStatus::Complete,
        Status::Interrupted => RunStatus::Interrupted,
        Status::Failed | Status::Running => RunStatus::Failed,
    };
    proto::Done { refused: String::new(), status: status as i32, error: error.unwrap_or_default(), started_unix_ns }
}

/// The Done of a run refused before any I/O.
pub fn refused(why: String) -> proto::Done {
    proto::Done { refused: why, status: RunStatus::Failed as i32, error: String::new(), started_unix_ns: 0 }
}

/// How a run ended, as a Done says it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// Refused before any I/O, and why.
    Refused(String),
    /// It ran: how it ended, why it failed, when it began (agent clock, ns).
    Ran { status: Status, error: Option<String>, started_unix_ns: i64 },
}

/// What a Done says. A status this build does not know is an error naming it.
pub fn read(d: &proto::Done) -> Result<Ended, String> {
    if !d.refused.is_empty() {
        return Ok(Ended::Refused(d.refused.clone()));
    }
    let status = match RunStatus::try_from(d.status) {
        Ok(RunStatus::Complete) => Status::Complete,
        Ok(RunStatus::Interrupted) => Status::Interrupted,
        Ok(RunStatus::Failed) => Status::Failed,
        Ok(RunStatus::Unspecified) | Err(_) => return Err(format!("a run that ended with status {}", d.status)),
    };
    let error = (!d.error.is_empty()).then(|| d.error.clone());
    Ok(Ended::Ran { status, error, started_unix_ns: d.started_unix_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_done_says_how_the_run_ended() {
        let d = ran(Status::Failed, Some("ENOSPC".into()), 42);
        let ended = |status, error: Option<&str>, started_unix_ns| {
            Ok(Ended::Ran { status, error: error.map(String::from), started_unix_ns })
        };
        assert_eq!(read(&d), ended(Status::Failed, Some("ENOSPC"), 42));
        assert_eq!(read(&ran(Status::Complete, None, 1)), ended(Status::Complete, None, 1));
        assert_eq!(read(&refused("outside --allow".into())), Ok(Ended::Refused("outside --allow".into())));
        let odd = proto::Done { status: 99, ..ran(Status::Complete, None, 0) };
        assert!(read(&odd).unwrap_err().contains("99"));
        assert!(read(&proto::Done::default()).is_err(), "an empty Done is no status");
    }
}
