//! Data validation's options (`--verify`, `--verify-before-rewrite`, `--verify-after`,
//! `--journal`, `--journal-sync`, `--max-errors`) with their rules and defaults. On the block
//! workload reads and writes are whole key blocks (the job's smallest block size, or the divisor of it the offset needs), each a
//! multiple of the 512-byte sector a stamp is made of, with a key map and a journal; on an
//! application workload or a replay the files are followed by name and checked byte for byte
//! (`--verify`, `--verify-after`, `--max-errors`).

use crate::job::{EngineKind, Job, JournalSync, VerifyOn, Workload};
use crate::patch::JobPatch;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Errors after which a validating job stops when `--max-errors` is not given (Vdbench's
/// `data_errors` default).
pub const DEFAULT_MAX_ERRORS: u64 = 50;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyJob {
    /// Read and check a block written before just before rewriting it.
    #[serde(default)]
    pub before_rewrite: bool,
    /// Re-read and check every written block when the job ends.
    #[serde(default)]
    pub after: bool,
    /// Where the key map and the journal are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    pub journal_sync: JournalSync,
    /// Stop after this many bad blocks (0: never).
    pub max_errors: u64,
    /// `--verify-on other`: another node reads back and checks what this job wrote, in
    /// `rounds` write-then-read rounds (the coordinator runs them: `iolab_cluster::rounds`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub on_other: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds: u32,
    /// Set by the coordinator on a job that reads a file another node wrote: that node's name.
    /// Its keys are handed over with the run; an older key found is a stale read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Set by the coordinator: the node's directory (`dir=`), below which file ids are taken,
    /// so every node names a shared file alike however it mounts the share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_root: Option<PathBuf>,
    /// Read back and check the blocks of every `backlog` writes during the run (fio's
    /// verify_backlog; 0: never).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub backlog: u64,
    /// How many of the waiting writes one such check reads back (0: all of them; fio's
    /// verify_backlog_batch).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub backlog_batch: u64,
}

/// Write-then-read rounds of `--verify-on other` when `--verify-rounds` is not given.
pub const DEFAULT_ROUNDS: u32 = 3;
/// The most rounds `--verify-rounds` takes.
pub const MAX_ROUNDS: u32 = 1000;

fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn is_zero64(n: &u64) -> bool {
    *n == 0
}

impl VerifyJob {
    /// The validation a patch asks for: `None` unless one of its options turns it on.
    pub(crate) fn from_patch(p: &JobPatch, name: &str) -> Result<Option<VerifyJob>, SpecError> {
        let on = p.verify.unwrap_or(false)
            || p.verify_before_rewrite.unwrap_or(false)
            || p.verify_after.unwrap_or(false)
            || p.journal.is_some()
            || p.verify_on.is_some()
            || p.verify_backlog.is_some();
        if !on {
            if p.verify_backlog_batch.is_some() {
                return Err(SpecError::field(
                    name,
                    "verify_backlog_batch",
                    "sizes the checks of --verify-backlog N: add it",
                ));
            }
            if p.verify_rounds.is_some() {
                return Err(SpecError::field(name, "verify_rounds", "counts rounds of --verify-on other: add it"));
            }
            if p.journal_sync.is_some() {
                return Err(SpecError::field(name, "journal_sync", "goes with a journal: add --journal DIR"));
            }
            if p.max_errors.is_some() {
                return Err(SpecError::field(name, "max_errors", "counts validation errors: add --verify"));
            }
            return Ok(None);
        }
        if p.verify_backlog == Some(0) || p.verify_backlog_batch == Some(0) {
            let f = if p.verify_backlog == Some(0) { "verify_backlog" } else { "verify_backlog_batch" };
            return Err(SpecError::field(name, f, "0 writes check nothing; give 1 or more"));
        }
        if p.journal_sync.is_some() && p.journal.is_none() {
            return Err(SpecError::field(name, "journal_sync", "goes with a journal: add --journal DIR"));
        }
        let on_other = p.verify_on == Some(VerifyOn::Other);
        if p.verify_rounds.is_some() && !on_other {
            return Err(SpecError::field(name, "verify_rounds", "counts rounds of --verify-on other: add it"));
        }
        if on_other && p.journal.is_some() {
            return Err(SpecError::field(
                name,
                "journal",
                "--verify-on other hands the key maps from node to node through the coordinator; a journal is not kept with it",
            ));
        }
        Ok(Some(VerifyJob {
            before_rewrite: p.verify_before_rewrite.unwrap_or(false),
            after: p.verify_after.unwrap_or(false),
            journal: p.journal.clone(),
            journal_sync: p.journal_sync.unwrap_or(JournalSync::Async),
            max_errors: p.max_errors.unwrap_or(DEFAULT_MAX_ERRORS),
            on_other,
            rounds: if on_other { p.verify_rounds.unwrap_or(DEFAULT_ROUNDS) } else { 0 },
            peer: None,
            id_root: None,
            backlog: p.verify_backlog.unwrap_or(0),
            backlog_batch: match (p.verify_backlog, p.verify_backlog_batch) {
                (None, Some(_)) => {
                    return Err(SpecError::field(
                        name,
                        "verify_backlog_batch",
                        "sizes the checks of --verify-backlog N: add it",
                    ))
                }
                (_, b) => b.unwrap_or(0),
            },
        }))
    }

    /// Validation's rules for `job`.
    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.on_other && !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return err("verify_rounds", format!("{} is out of range; accepted: 1 to {MAX_ROUNDS}", self.rounds));
        }
        if !job.engine.caps().opens_files() {
            let movers: Vec<&str> =
                EngineKind::KINDS.iter().filter(|k| k.caps().opens_files()).map(|k| k.as_str()).collect();
            return err(
                "verify",
                format!("the {} engine moves no data to validate; pick {}", job.engine, or_list(&movers)),
            );
        }
        let Workload::Block(b) = &job.workload else {
            // An application workload or a replay: its files are followed by name and checked
            // byte for byte (crates/verify's content validation); what needs one file of whole
            // key blocks is refused.
            let label = job.workload.label();
            let only = |what: &str| {
                format!("{what} applies to the block workload (one file of whole key blocks); `{label}` creates, appends to and deletes files of its own sizes: use --verify and --verify-after")
            };
            if self.journal.is_some() {
                return err("journal", only("a journal"));
            }
            if self.on_other || self.peer.is_some() {
                return err("verify_on", only("--verify-on other"));
            }
            if self.before_rewrite {
                return err("verify_before_rewrite", only("--verify-before-rewrite"));
            }
            if self.backlog > 0 {
                return err("verify_backlog", only("--verify-backlog"));
            }
            return Ok(());
        };
        let key = b.key_block();
        if !key.is_multiple_of(512) || b.bs.0.iter().any(|(s, _)| !s.0.is_multiple_of(key)) {
            return err(
                "bs",
                format!("`{}`: with --verify every block size must be a multiple of 512 bytes and of the smallest ({key} bytes, the key block)", b.bs),
            );
        }
        if let Some(s) = b.stride.filter(|s| !s.0.is_multiple_of(key)) {
            return err(
                "stride",
                format!("with --verify the stride {s} must be a multiple of the key block ({key} bytes)"),
            );
        }
        if !b.offset_of(1).is_multiple_of(key) || !b.offset().is_multiple_of(key) {
            return err(
                "offset",
                format!("with --verify the offset {} (and --offset-increment) must be a multiple of 512 bytes, the sector a stamp is made of", b.offset()),
            );
        }
        if let Some(s) = job.size.filter(|s| !s.0.is_multiple_of(key)) {
            return err(
                "size",
                format!("with --verify the size {s} must be a multiple of the key block ({key} bytes)"),
            );
        }
        if let Some(s) = b.io_size.filter(|s| !s.0.is_multiple_of(key)) {
            return err(
                "io_size",
                format!("with --verify io_size {s} must be a multiple of the key block ({key} bytes)"),
            );
        }
        if self.journal.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return err("journal", "an empty journal directory name".into());
        }
        if self.on_other && self.peer.is_none() && !b.rw.writes() {
            return err(
                "verify_on",
                format!("--verify-on other checks what a job writes on another node; `{}` writes nothing", b.rw),
            );
        }
        if let Some(p) = &self.peer {
            if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                return err("verify", format!("the writer node `{}` is not a node's name", p.escape_debug()));
            }
        }
        Ok(())
    }

    /// The options in a few words, for `Job::describe`.
    pub fn describe(&self) -> String {
        let mut w = vec!["verify"];
        if self.before_rewrite {
            w.push("before rewrite");
        }
        if self.after {
            w.push("after");
        }
        if self.backlog > 0 {
            w.push("backlog");
        }
        if self.on_other {
            w.push("on other");
        }
        if self.journal.is_some() {
            w.push(match self.journal_sync {
                JournalSync::Sync => "sync journal",
                JournalSync::Async => "async journal",
            });
        }
        w.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bytes, Plan, Rw};

    fn job(f: impl FnOnce(&mut JobPatch)) -> Result<Job, SpecError> {
        let mut p = JobPatch {
            target: Some("/t/f".into()),
            rw: Some(Rw::RandWrite),
            size: Some(Bytes::mib(1)),
            ..Default::default()
        };
        f(&mut p);
        let j = p.resolve("j")?;
        Plan { phases: vec![crate::Phase { name: "p".into(), jobs: vec![j.clone()] }] }.validate()?;
        Ok(j)
    }

    #[test]
    fn any_validation_option_turns_it_on_with_its_defaults() {
        assert_eq!(job(|_| {}).unwrap().verify, None);
        let v = job(|p| p.journal = Some("/j".into())).unwrap().verify.unwrap();
        assert_eq!((v.journal_sync, v.max_errors, v.after), (JournalSync::Async, DEFAULT_MAX_ERRORS, false));
        assert!(job(|p| p.verify_after = Some(true)).unwrap().verify.unwrap().after);
        assert_eq!(job(|p| p.verify = Some(true)).unwrap().describe(), "randwrite 4k verify");
    }

    #[test]
    fn validation_refuses_what_it_cannot_check() {
        let msg = |f: fn(&mut JobPatch)| job(f).unwrap_err().to_string();
        assert!(msg(|p| p.journal_sync = Some(JournalSync::Sync)).contains("--journal DIR"));
        assert!(msg(|p| p.max_errors = Some(3)).contains("--verify"));
        assert!(msg(|p| {
            p.verify = Some(true);
            p.bs = Some("4k,6k".parse().unwrap());
        })
        .contains("multiple"));
        assert!(msg(|p| {
            p.verify = Some(true);
            p.bs = Some("1000".parse().unwrap());
        })
        .contains("512"));
        assert!(msg(|p| {
            p.verify = Some(true);
            p.rw = Some(Rw::RandRead);
        })
        .contains("--journal DIR"));
        assert!(msg(|p| {
            p.verify = Some(true);
            p.size = Some(Bytes(3 * 4096));
            p.bs = Some("8k".parse().unwrap());
        })
        .contains("size"));
        // An application workload validates its files, without a journal.
        fn pm(p: &mut JobPatch) {
            p.rw = None;
            p.size = None;
            p.workload = Some(crate::WorkloadKind::Postmark);
        }
        let v = job(|p| {
            pm(p);
            p.verify = Some(true);
            p.verify_after = Some(true);
        })
        .unwrap();
        assert!(v.verify.unwrap().after);
        assert!(msg(|p| {
            pm(p);
            p.journal = Some("/j".into());
        })
        .contains("a journal applies to the block workload"));
        assert!(msg(|p| {
            pm(p);
            p.verify_before_rewrite = Some(true);
        })
        .contains("use --verify and --verify-after"));
        assert!(msg(|p| {
            p.verify = Some(true);
            p.engine = Some(EngineKind::Null);
        })
        .contains("null"));
    }

    #[test]
    fn the_key_block_divides_the_offset_too() {
        // fio's cross-stripe-verify: 16k writes from 120k, every 128k: 8 KiB key blocks.
        let j = job(|p| {
            p.verify = Some(true);
            p.rw = Some(Rw::Write);
            p.bs = Some("16k".parse().unwrap());
            p.offset = Some(Bytes::kib(120));
            p.stride = Some(Bytes::kib(128));
        })
        .unwrap();
        assert_eq!(j.workload.block().unwrap().key_block(), 8192);
        assert_eq!(job(|p| p.bs = Some("16k".parse().unwrap())).unwrap().workload.block().unwrap().key_block(), 16384);
        let e = msg_with(|p| {
            p.verify = Some(true);
            p.offset = Some(Bytes(1000));
        });
        assert!(e.contains("offset") && e.contains("512"), "{e}");
    }

    fn msg_with(f: impl FnOnce(&mut JobPatch)) -> String {
        job(f).unwrap_err().to_string()
    }

    #[test]
    fn verify_on_other_turns_validation_on_and_refuses_what_it_cannot_do() {
        let v = job(|p| p.verify_on = Some(VerifyOn::Other)).unwrap().verify.unwrap();
        assert!(v.on_other && v.rounds == DEFAULT_ROUNDS && v.peer.is_none());
        let v = job(|p| {
            p.verify_on = Some(VerifyOn::Other);
            p.verify_rounds = Some(5);
        })
        .unwrap();
        assert_eq!(v.verify.as_ref().unwrap().rounds, 5);
        assert_eq!(v.describe(), "randwrite 4k verify on other");
        // `self` is plain validation.
        assert!(!job(|p| p.verify_on = Some(VerifyOn::Writer)).unwrap().verify.unwrap().on_other);
        let msg = |f: fn(&mut JobPatch)| job(f).unwrap_err().to_string();
        assert!(msg(|p| p.verify_rounds = Some(2)).contains("--verify-on other"));
        // The flag's range holds for a job file's value too (it was once clamped to 1).
        for bad in [0, MAX_ROUNDS + 1] {
            let e = msg_with(|p| {
                p.verify_on = Some(VerifyOn::Other);
                p.verify_rounds = Some(bad);
            });
            assert!(e.contains("verify_rounds") && e.contains("accepted: 1 to 1000"), "{e}");
        }
        assert!(msg(|p| {
            p.verify_on = Some(VerifyOn::Other);
            p.journal = Some("/j".into());
        })
        .contains("coordinator"));
        assert!(msg(|p| {
            p.verify_on = Some(VerifyOn::Other);
            p.rw = Some(Rw::Read);
        })
        .contains("writes nothing"));
        // A reader's writer must be a node's name.
        let mut j = job(|p| p.verify_on = Some(VerifyOn::Other)).unwrap();
        j.verify.as_mut().unwrap().peer = Some("../x".into());
        assert!(Plan { phases: vec![crate::Phase { name: "p".into(), jobs: vec![j] }] }.validate().is_err());
    }

    #[test]
    fn a_job_with_validation_reads_back_from_json() {
        let j = job(|p| {
            p.journal = Some("/j".into());
            p.journal_sync = Some(JournalSync::Sync);
        })
        .unwrap();
        let back: Job = serde_json::from_value(serde_json::to_value(&j).unwrap()).unwrap();
        assert_eq!(back, j);
        let old: Job = serde_json::from_value({
            let mut v = serde_json::to_value(&j).unwrap();
            v.as_object_mut().unwrap().remove("verify");
            v
        })
        .unwrap();
        assert_eq!(old.verify, None, "plans stored before validation read back without it");
    }
}
