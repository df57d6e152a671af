//! Mail delivery into maildirs, as Postal drives an LMTP server and the server's local
//! delivery does it (Postfix's local/maildir.c): each message is a unique file created in
//! tmp/ of one mailbox of a pool that every delivering thread shares, written, fsynced and
//! renamed into new/, optionally with an fsync of new/. Its options
//! keep Postal's names (`-m` max and `-M` min message size, `-t` threads) and seed 001's
//! reading: messages per minute with the first minute dropped.

use crate::job::Job;
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaildirJob {
    /// Mailboxes in the pool; every delivering thread delivers to any of them, at random
    /// (default 100).
    pub mailboxes: u32,
    /// Smallest message (Postal's `-M`, default 0 KiB).
    pub min_size: Bytes,
    /// Largest message (Postal's `-m`, default 10 KiB).
    pub max_size: Bytes,
    /// fsync new/ after each rename, as a careful MTA does (default on).
    pub dir_fsync: bool,
    /// Messages each thread delivers; `None`: until the runtime is up.
    pub messages: Option<u64>,
    /// The first part of the run left out of `messages_per_min` (seed 001 drops the first
    /// minute). Shortened to a quarter of a shorter run at plan time (`describe` says so).
    #[serde(with = "crate::units::duration_serde")]
    pub discard: Duration,
    /// Reader threads (POP/IMAP-like: new/ to cur/, read whole, delete), counted in the job's
    /// threads after the deliverers.
    #[serde(default)]
    pub readers: u32,
    /// Whether `discard` was shortened from what was asked, and from what.
    #[serde(default, with = "crate::units::duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub discard_asked: Option<Duration>,
}

impl MaildirJob {
    pub(crate) fn from_patch(p: &JobPatch, name: &str) -> Result<MaildirJob, SpecError> {
        let asked = p.discard.unwrap_or(Duration::from_secs(60));
        let discard = match p.runtime {
            Some(r) if asked > r / 4 => r / 4,
            None if p.maildir_messages.is_some() && p.discard.is_none() => Duration::ZERO,
            _ => asked,
        };
        if p.runtime.is_none() && p.maildir_messages.is_none() {
            return Err(SpecError::field(
                name,
                "runtime",
                "mail delivery runs until --runtime is up (Postal runs until stopped) or --messages are delivered; add --runtime 2m, say",
            ));
        }
        Ok(MaildirJob {
            mailboxes: p.mailboxes.unwrap_or(100),
            min_size: p.min_size.unwrap_or(Bytes(0)),
            max_size: p.max_size.unwrap_or(Bytes::kib(10)),
            dir_fsync: p.dir_fsync.unwrap_or(true),
            messages: p.maildir_messages,
            discard,
            discard_asked: (discard != asked).then_some(asked),
            readers: p.readers.unwrap_or(0),
        })
    }

    /// The delivering threads of a job (its threads less the readers).
    pub fn deliverers(&self, job: &Job) -> u32 {
        job.threads.saturating_sub(self.readers)
    }

    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.mailboxes == 0 || self.mailboxes > 1_000_000 {
            return err("mailboxes", format!("{}: accepted 1 to 1000000", self.mailboxes));
        }
        if self.max_size < self.min_size || self.max_size.0 > 1 << 30 {
            return err(
                "max_size",
                format!(
                    "messages of {} to {}: the largest must be at least the smallest and at most 1 GiB",
                    self.min_size, self.max_size
                ),
            );
        }
        if self.readers >= job.threads {
            return err("readers", format!("{} readers need at least one delivering thread beside them", self.readers));
        }
        if self.readers > 0 && job.runtime.is_none() {
            return err("readers", "readers run until --runtime is up; add one".into());
        }
        if self.messages == Some(0) {
            return err("messages", "0 messages delivers nothing".into());
        }
        if job.direct {
            return err("direct", "messages have any size; direct I/O needs aligned sizes".into());
        }
        if let Some(r) = job.runtime {
            if self.discard >= r {
                return err(
                    "discard",
                    format!("discarding {:?} of a {:?} run leaves nothing to measure", self.discard, r),
                );
            }
        }
        Ok(())
    }
}
