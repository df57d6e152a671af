//! What validation counted and found, shared by the threads that validate: key blocks (or
//! sectors) stamped and checked, errors by class, the first ones located, and the
//! `--max-errors` limit. One block file's ([`crate::Tracked`]) and one job's files'
//! ([`crate::content`]) validation both count through it.

use crate::check::Finding;
use crate::writer_words;
use iolab_model::{BlockError, ErrorCounts, VerifyResult};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Where a finding was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    During,
    BeforeRewrite,
    After,
    Recovery,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::During => "during",
            When::BeforeRewrite => "before_rewrite",
            When::After => "after",
            When::Recovery => "recovery",
        }
    }
}

pub struct Tally {
    node: String,
    /// The node that wrote what is read, when it is another: its writers are named too.
    peer: Option<String>,
    /// Bytes per counted block.
    unit: u64,
    max_errors: u64,
    written: AtomicU64,
    checked: [AtomicU64; 3],
    count: AtomicU64,
    errors: Mutex<(ErrorCounts, Vec<BlockError>)>,
}

impl Tally {
    /// Counting blocks of `unit` bytes for node `node`, stopping after `max_errors` (0: never).
    pub fn new(node: &str, peer: Option<&str>, unit: u64, max_errors: u64) -> Tally {
        Tally {
            node: node.to_string(),
            peer: peer.map(str::to_string),
            unit,
            max_errors,
            written: AtomicU64::new(0),
            checked: Default::default(),
            count: AtomicU64::new(0),
            errors: Mutex::new(Default::default()),
        }
    }
    /// The node's name in the stamps.
    pub fn node(&self) -> &str {
        &self.node
    }
    /// Blocks stamped.
    #[inline]
    pub fn wrote(&self, blocks: u64) {
        self.written.fetch_add(blocks, Ordering::Relaxed);
    }
    /// Blocks checked.
    #[inline]
    pub fn checked(&self, when: When, blocks: u64) {
        let i = match when {
            When::During => 0,
            When::BeforeRewrite => 1,
            When::After | When::Recovery => 2,
        };
        self.checked[i].fetch_add(blocks, Ordering::Relaxed);
    }
    /// The `--max-errors` limit was reached: stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.max_errors > 0 && self.count.load(Ordering::Relaxed) >= self.max_errors
    }
    /// Record an error found in `file` (its name as the report shows it) in the block at byte
    /// `offset`, where the key `expected` should have been; returns whether to go on.
    pub fn found(&self, file: &str, offset: u64, expected: u8, f: Finding, when: When) -> bool {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let e = BlockError {
            class: f.class,
            file: file.to_string(),
            offset,
            sector_offset: f.sector_offset,
            expected_key: expected,
            found_key: f.found_key,
            found_time_unix_ns: f.found_time_ns,
            writer: f.writer.map(|(node, thread)| {
                let names: Vec<&str> = std::iter::once(self.node.as_str()).chain(self.peer.as_deref()).collect();
                writer_words(node, thread, &names)
            }),
            detail: f.detail,
            when: when.as_str().into(),
        };
        if let Ok(mut g) = self.errors.lock() {
            g.0.add(e.class, 1);
            let keep = if self.max_errors == 0 { 1000 } else { self.max_errors as usize };
            if g.1.len() < keep {
                g.1.push(e);
            }
        }
        self.max_errors == 0 || n < self.max_errors
    }
    /// What was stamped, checked and found (without a journal's fields).
    pub fn result(&self) -> VerifyResult {
        let (errors, first) = self.errors.lock().map(|g| (g.0, g.1.clone())).unwrap_or_default();
        VerifyResult {
            key_block: self.unit,
            blocks_written: self.written.load(Ordering::Relaxed),
            checked_during: self.checked[0].load(Ordering::Relaxed),
            checked_before_rewrite: self.checked[1].load(Ordering::Relaxed),
            checked_after: self.checked[2].load(Ordering::Relaxed),
            errors,
            first_errors: first,
            stopped: self.stopped(),
            journal: None,
            journal_sync: None,
            pending: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::ErrorClass;

    #[test]
    fn tally_counts_and_keeps_errors_up_to_the_limit() {
        let t = Tally::new("n1", None, 512, 2);
        t.wrote(5);
        t.checked(When::During, 3);
        let f = Finding {
            class: ErrorClass::LostWrite,
            sector_offset: 512,
            found_key: Some(1),
            found_time_ns: None,
            writer: Some((crate::node_id("n1"), 3)),
            detail: "x".into(),
        };
        t.found("a/b", 512, 2, f.clone(), When::During);
        assert!(!t.stopped());
        t.found("a/b", 1024, 2, f, When::After);
        let r = t.result();
        assert!(t.stopped() && r.stopped);
        assert_eq!((r.blocks_written, r.checked_during, r.errors.lost_write, r.first_errors.len()), (5, 3, 2, 2));
        assert_eq!(r.first_errors[0].writer.as_deref(), Some("n1/3"));
        assert_eq!(r.key_block, 512);
    }
}
