//! Data validation's results as data (`phases[].verify` in the JSON): how many key blocks were
//! stamped and checked, the errors by class, and the first errors with their location. The
//! checking itself lives in iolab-verify; the store and the report read only this. A writer's
//! key map handed to another node ([`HandedMap`]) is plain data too.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What went wrong with a key block, as iolab-verify classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// A checksum failed: the header's, or the data's (the data is not the pattern its header
    /// names).
    Corrupted,
    /// The block holds an intact stamp of an older key: a write that completed never reached it.
    LostWrite,
    /// An older key read by a node other than the writer, after the writer synced: a cache that
    /// served old data.
    StaleRead,
    /// The block holds an intact stamp naming another offset or another file.
    Misdirected,
    /// The block's sectors hold different keys (or some hold none): part of a write landed.
    Torn,
    /// The block was written (the map says so) but holds no stamp at all.
    NeverWritten,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 6] = [
        ErrorClass::Corrupted,
        ErrorClass::LostWrite,
        ErrorClass::StaleRead,
        ErrorClass::Misdirected,
        ErrorClass::Torn,
        ErrorClass::NeverWritten,
    ];
    /// The class's name in JSON and in words.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Corrupted => "corrupted",
            ErrorClass::LostWrite => "lost_write",
            ErrorClass::StaleRead => "stale_read",
            ErrorClass::Misdirected => "misdirected",
            ErrorClass::Torn => "torn",
            ErrorClass::NeverWritten => "never_written",
        }
    }
    /// The class in a few words, for the summary.
    pub fn words(self) -> &'static str {
        match self {
            ErrorClass::Corrupted => "corrupted data (checksum)",
            ErrorClass::LostWrite => "lost write (older key)",
            ErrorClass::StaleRead => "stale read (older key, seen from another node after the writer synced)",
            ErrorClass::Misdirected => "misdirected write (stamp of another offset or file)",
            ErrorClass::Torn => "torn block (mixed keys)",
            ErrorClass::NeverWritten => "data never written (no stamp)",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors counted per class; in JSON an object with every class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    #[serde(default)]
    pub corrupted: u64,
    #[serde(default)]
    pub lost_write: u64,
    #[serde(default)]
    pub stale_read: u64,
    #[serde(default)]
    pub misdirected: u64,
    #[serde(default)]
    pub torn: u64,
    #[serde(default)]
    pub never_written: u64,
}

impl ErrorCounts {
    pub fn get(&self, c: ErrorClass) -> u64 {
        match c {
            ErrorClass::Corrupted => self.corrupted,
            ErrorClass::LostWrite => self.lost_write,
            ErrorClass::StaleRead => self.stale_read,
            ErrorClass::Misdirected => self.misdirected,
            ErrorClass::Torn => self.torn,
            ErrorClass::NeverWritten => self.never_written,
        }
    }
    pub fn add(&mut self, c: ErrorClass, n: u64) {
        let slot = match c {
            ErrorClass::Corrupted => &mut self.corrupted,
            ErrorClass::LostWrite => &mut self.lost_write,
            ErrorClass::StaleRead => &mut self.stale_read,
            ErrorClass::Misdirected => &mut self.misdirected,
            ErrorClass::Torn => &mut self.torn,
            ErrorClass::NeverWritten => &mut self.never_written,
        };
        *slot += n;
    }
    pub fn total(&self) -> u64 {
        ErrorClass::ALL.iter().map(|c| self.get(*c)).sum()
    }
    pub fn merge(&mut self, o: &ErrorCounts) {
        for c in ErrorClass::ALL {
            self.add(c, o.get(c));
        }
    }
}

/// One bad key block, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockError {
    pub class: ErrorClass,
    /// The data file.
    pub file: String,
    /// Byte offset of the key block in the file.
    pub offset: u64,
    /// Byte offset of the first bad 512-byte sector.
    pub sector_offset: u64,
    /// The key the map expected (0: the map says never written).
    pub expected_key: u8,
    /// The key found in the bad sector's header, if it holds an intact stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_key: Option<u8>,
    /// The write time in the bad sector's header (Unix ns), if it holds a stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_time_unix_ns: Option<u64>,
    /// Who wrote what was found: `node/thread` from the header (the node's name when the
    /// journal knows it, else its id in hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    /// What the check saw, in words.
    pub detail: String,
    /// When it was found: `during` (a read of the workload), `before_rewrite`, `after`
    /// (`--verify-after`) or `recovery` (`iolab verify`).
    pub when: String,
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {} of {}", self.class.words(), self.offset, self.file)?;
        if self.sector_offset != self.offset {
            write!(f, " (first bad sector at {})", self.sector_offset)?;
        }
        write!(f, ": expected key {}", self.expected_key)?;
        match self.found_key {
            Some(k) => write!(f, ", found key {k}")?,
            None => write!(f, ", found no intact stamp")?,
        }
        if let Some(t) = self.found_time_unix_ns {
            write!(f, " written at {}", unix_ns_words(t))?;
        }
        if let Some(w) = &self.writer {
            write!(f, " by {w}")?;
        }
        write!(f, "; {}", self.detail)
    }
}

/// A Unix time in ns as `2026-11-23 14:31:50.123456789 UTC`.
pub fn unix_ns_words(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:09} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ns % 1_000_000_000
    )
}

/// A phase's (or a recovery's) validation: what was stamped and checked, and what was wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyResult {
    /// Key block size in bytes (the job's smallest block size).
    pub key_block: u64,
    /// Key blocks stamped by writes.
    pub blocks_written: u64,
    /// Key blocks read back and checked, by when: reads of the workload, pre-reads before a
    /// rewrite, the final pass (`--verify-after`, `iolab verify`).
    pub checked_during: u64,
    pub checked_before_rewrite: u64,
    pub checked_after: u64,
    /// Errors per class.
    pub errors: ErrorCounts,
    /// The first errors (up to `--max-errors`), with their location.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<BlockError>,
    /// Checking stopped at `--max-errors`.
    #[serde(default)]
    pub stopped: bool,
    /// The journal directory, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
    /// `sync` or `async`, with a journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_sync: Option<String>,
    /// Blocks whose write was pending at a crash (recovery): either key was accepted.
    #[serde(default)]
    pub pending: u64,
}

impl VerifyResult {
    pub fn checked(&self) -> u64 {
        self.checked_during + self.checked_before_rewrite + self.checked_after
    }
    /// Fold another file's or job's validation into this one, keeping at most `keep` errors.
    pub fn merge(&mut self, o: &VerifyResult, keep: usize) {
        if self.key_block == 0 {
            self.key_block = o.key_block;
        }
        self.blocks_written += o.blocks_written;
        self.checked_during += o.checked_during;
        self.checked_before_rewrite += o.checked_before_rewrite;
        self.checked_after += o.checked_after;
        self.errors.merge(&o.errors);
        for e in &o.first_errors {
            if self.first_errors.len() < keep {
                self.first_errors.push(e.clone());
            }
        }
        self.stopped |= o.stopped;
        self.pending += o.pending;
        if self.journal.is_none() {
            self.journal.clone_from(&o.journal);
            self.journal_sync.clone_from(&o.journal_sync);
        }
    }
}

/// One file's validation keys as its writer left them after syncing it, handed from node to
/// node by the coordinator (`--verify-on other`): the reader checks the file against them
/// instead of trusting a map on the storage under test. Plain data here, so the event stream
/// ([`crate::events`]) carries it; iolab-verify checks a map that arrives
/// (`iolab_verify::handed::check`) before anything uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandedMap {
    /// The file's id in its stamps (the same on every node: `iolab_verify::file_id_under`).
    pub file_id: u64,
    pub key_block: u32,
    /// One byte per key block: 0 never written, 1..=126 its key, 0x7f not to be checked.
    pub keys: Vec<u8>,
    /// The node that wrote it.
    pub writer: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(unix_ns_words(0), "1970-01-01 00:00:00.000000000 UTC");
        assert_eq!(unix_ns_words(1_795_444_310_123_456_789), "2026-11-23 14:31:50.123456789 UTC");
    }

    #[test]
    fn counts_add_by_class_and_serialize_every_class() {
        let mut c = ErrorCounts::default();
        c.add(ErrorClass::Torn, 2);
        c.add(ErrorClass::LostWrite, 1);
        assert_eq!(c.total(), 3);
        let v = serde_json::to_value(c).unwrap();
        assert_eq!(v["torn"], 2);
        assert_eq!(v.as_object().unwrap().len(), 6);
        for k in ErrorClass::ALL {
            assert!(v.get(k.as_str()).is_some(), "{k}");
        }
    }
}
