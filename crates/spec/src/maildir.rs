//! Mail delivery into maildirs, as Postal drives an LMTP server and the server's local
//! delivery does it (Postfix's local/maildir.c): each message is a unique file created in
//! tmp/ of one mailbox of a pool that every delivering thread shares, written, fsynced and
//! renamed into new/, optionally with an fsync of new/. Its options
//! keep Postal's names (`-m` max and `-M` min message size, `-t` threads) and seed 001's
//! reading: messages per minute with the first minute dropped.

use crate::figures::{get, per, Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
#[cfg(feature = "clap")]
use crate::units::{parse_duration, parse_size};
use crate::units::{duration_serde, Bytes};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Mail delivery's options as flags and job-file keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "Mail delivery (--workload maildir)"))]
#[serde(deny_unknown_fields)]
pub struct MaildirOptions {
    /// maildir: mailboxes in the pool all delivering threads deliver to, at random (default 100).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mailboxes: Option<u32>,
    /// maildir: smallest message (Postal's -M; default 0).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_size: Option<Bytes>,
    /// maildir: largest message (Postal's -m; default 10k).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Bytes>,
    /// maildir: fsync new/ after each delivery's rename (default true).
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir_fsync: Option<bool>,
    /// maildir: messages each thread delivers (default: until --runtime is up).
    #[cfg_attr(feature = "clap", arg(long = "messages"))]
    #[serde(rename = "messages", skip_serializing_if = "Option::is_none")]
    pub maildir_messages: Option<u64>,
    /// maildir: leave this first part out of messages_per_min (default 1m, a quarter of shorter runs).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub discard: Option<Duration>,
    /// maildir: reader threads beside --threads that move new/ to cur/, read and delete, like a POP/IMAP server (default 0).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readers: Option<u32>,
}

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
    #[serde(with = "duration_serde")]
    pub discard: Duration,
    /// Reader threads (POP/IMAP-like: new/ to cur/, read whole, delete), counted in the job's
    /// threads after the deliverers.
    #[serde(default)]
    pub readers: u32,
    /// Whether `discard` was shortened from what was asked, and from what.
    #[serde(default, with = "crate::units::duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub discard_asked: Option<Duration>,
}

/// The largest write: a message goes out in writes of at most this.
pub const CHUNK: u64 = 64 * 1024;

impl Personality for MaildirJob {
    const NAME: &'static str = "maildir";
    const ABOUT: &'static str = "mail delivery: tmp/, fsync, rename into new/";
    type Options = MaildirOptions;
    const DIRS: OwnDirs = OwnDirs::PerJob;
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[
        ("messages", "messages delivered"),
        ("messages_after_discard", "messages delivered after the discarded start"),
        ("bytes_delivered", "bytes delivered"),
        ("discard_s", "seconds discarded at the start"),
        ("elapsed_s", "seconds in all"),
        ("measured_s", "seconds measured"),
        ("messages_read", "messages read (POP/IMAP readers)"),
        ("bytes_read", "bytes read by the readers"),
        ("messages_per_min", "messages delivered per minute"),
        ("messages_per_s", "messages delivered per second"),
    ];
    const FIGURES: &'static [(&'static str, Kind)] = &[
        ("messages", Count),
        ("messages_after_discard", Count),
        ("bytes_delivered", Count),
        ("discard_s", Setting),
        ("elapsed_s", Seconds),
        ("measured_s", Seconds),
        ("messages_read", Count),
        ("bytes_read", Count),
        ("messages_per_min", Derived),
        ("messages_per_s", Derived),
    ];

    /// messages_per_min: the messages after the discarded start over the measured minutes (seed
    /// 001's figure); messages_per_s: all of them over the whole delivery.
    fn derive(f: &mut Figures) {
        let per_min = per(get(f, "messages_after_discard"), get(f, "measured_s")) * 60.0;
        let per_s = per(get(f, "messages"), get(f, "elapsed_s"));
        f.insert("messages_per_min".into(), per_min);
        f.insert("messages_per_s".into(), per_s);
    }

    fn resolve(o: &MaildirOptions, p: &JobPatch, name: &str) -> Result<MaildirJob, SpecError> {
        let asked = o.discard.unwrap_or(Duration::from_secs(60));
        let discard = match p.runtime {
            Some(r) if asked > r / 4 => r / 4,
            None if o.maildir_messages.is_some() && o.discard.is_none() => Duration::ZERO,
            _ => asked,
        };
        if p.runtime.is_none() && o.maildir_messages.is_none() {
            return Err(SpecError::field(
                name,
                "runtime",
                "mail delivery runs until --runtime is up (Postal runs until stopped) or --messages are delivered; add --runtime 2m, say",
            ));
        }
        Ok(MaildirJob {
            mailboxes: o.mailboxes.unwrap_or(100),
            min_size: o.min_size.unwrap_or(Bytes(0)),
            max_size: o.max_size.unwrap_or(Bytes::kib(10)),
            dir_fsync: o.dir_fsync.unwrap_or(true),
            messages: o.maildir_messages,
            discard,
            discard_asked: (discard != asked).then_some(asked),
            readers: o.readers.unwrap_or(0),
        })
    }

    /// The job's threads are the deliverers (`--threads`) and the readers.
    fn threads(&self, asked: Option<u32>) -> u32 {
        asked.unwrap_or(1) + self.readers
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!("{} mailboxes {}-{}", self.mailboxes, self.min_size, self.max_size));
        if self.dir_fsync {
            words.push("dir fsync".into());
        }
        match self.discard_asked {
            Some(asked) => words.push(format!(
                "first {:.1}s discarded (shortened from {:.0}s: a quarter of the run)",
                self.discard.as_secs_f64(),
                asked.as_secs_f64()
            )),
            None if !self.discard.is_zero() => words.push(format!("first {:.0}s discarded", self.discard.as_secs_f64())),
            None => {}
        }
    }

    fn notes(&self, job: &Job) -> Vec<String> {
        let Some(asked) = self.discard_asked else { return Vec::new() };
        let run = job.runtime.map(|r| format!(" of {:.1} s", r.as_secs_f64())).unwrap_or_default();
        vec![format!(
            "job `{}`: messages_per_min leaves out the first {:.1} s, not the {:.0} s asked (--discard): a quarter of the run{run}",
            job.name,
            self.discard.as_secs_f64(),
            asked.as_secs_f64()
        )]
    }

    fn buffer_len(&self) -> u64 {
        self.max_size.0.clamp(1, CHUNK)
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
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
            // A mail server writes messages of any size through the page cache (Postfix's
            // local delivery has no direct I/O to reproduce).
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

impl MaildirJob {
    /// The delivering threads of a job (its threads less the readers).
    pub fn deliverers(&self, job: &Job) -> u32 {
        job.threads.saturating_sub(self.readers)
    }
}
