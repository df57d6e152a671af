//! Validation during a write job (`--verify-backlog N`, fio's verify_backlog): the validating
//! source hands each whole write it completed here, and after every N of them the next
//! `batch` (N unless `--verify-backlog-batch`) are read back, oldest first, and checked as any
//! read is, while the job runs. The reads are the job's own reads (timed, counted), as fio's
//! verify reads are; a write's blocks rewritten meanwhile are checked against their newest key.

use std::collections::VecDeque;

/// The most writes kept waiting for their check: with a batch smaller than N the backlog would
/// grow for as long as the job runs, so the oldest are dropped past this (16 MiB of entries).
const MAX_WAITING: usize = 1 << 20;

pub struct Backlog {
    every: u64,
    batch: u64,
    /// Writes completed since the last check began.
    since: u64,
    /// Reads left in the check under way.
    left: u64,
    /// Writes completed and not yet read back: (offset, length).
    waiting: VecDeque<(u64, u32)>,
    /// Backlog reads issued and not yet completed (no two I/Os in flight share a block, so an
    /// offset and length name one).
    inflight: Vec<(u64, u32)>,
}

impl Backlog {
    /// After every `every` writes, read back `batch` of them (0: `every`).
    pub fn new(every: u64, batch: u64) -> Backlog {
        let every = every.max(1);
        Backlog {
            every,
            batch: if batch == 0 { every } else { batch },
            since: 0,
            left: 0,
            waiting: VecDeque::new(),
            inflight: Vec::new(),
        }
    }

    /// A write of `len` bytes at `offset` completed whole.
    pub fn wrote(&mut self, offset: u64, len: u32) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back((offset, len));
        self.since += 1;
        if self.since >= self.every {
            self.since = 0;
            self.left = self.left.saturating_add(self.batch);
        }
    }

    /// The next range to read back, if a check is due.
    pub fn take(&mut self) -> Option<(u64, u32)> {
        if self.left == 0 {
            return None;
        }
        match self.waiting.pop_front() {
            Some(r) => {
                self.left -= 1;
                Some(r)
            }
            None => {
                self.left = 0;
                None
            }
        }
    }

    /// A range taken was issued.
    pub fn issued(&mut self, offset: u64, len: u32) {
        self.inflight.push((offset, len));
    }

    /// Whether a read of `len` at `offset` that completed is a backlog read (then forgotten).
    pub fn completed(&mut self, offset: u64, len: u32) -> bool {
        match self.inflight.iter().position(|r| *r == (offset, len)) {
            Some(i) => {
                self.inflight.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Writes waiting for their check.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_n_writes_the_batch_is_read_back_oldest_first() {
        let mut b = Backlog::new(3, 0);
        b.wrote(0, 4096);
        b.wrote(4096, 4096);
        assert_eq!(b.take(), None, "not yet due");
        b.wrote(8192, 4096);
        assert_eq!(
            (b.take(), b.take(), b.take(), b.take()),
            (Some((0, 4096)), Some((4096, 4096)), Some((8192, 4096)), None)
        );
        // A batch of 1 after every 2 writes: the others wait.
        let mut b = Backlog::new(2, 1);
        for i in 0..4 {
            b.wrote(i * 4096, 4096);
        }
        assert_eq!((b.take(), b.take(), b.take()), (Some((0, 4096)), Some((4096, 4096)), None));
        assert_eq!(b.waiting(), 2);
        b.issued(0, 4096);
        assert!(!b.completed(4096, 4096) && b.completed(0, 4096) && !b.completed(0, 4096));
    }
}
