//! The journal: `<file id>.jnl` beside the map, a record before each write (block, new key)
//! and one after it completes, so a crash leaves a map that can be rebuilt. With
//! `--journal-sync sync` the journal is opened O_DSYNC and the record before a write is durable
//! before the write is issued (seed 004's cost); with `async` it reaches the page cache only
//! (it survives iolab being killed, not the machine). The records after writes are kept in the
//! thread's buffer and go out with its next record before (one journal write per data write,
//! where Vdbench makes two); a completion record lost in a crash only leaves its write pending,
//! which recovery accepts with either key.
//!
//! Layout (little-endian): a 48-byte header — `IOLABJNL`, version u32 (1), key block u32, file
//! id u64, epoch u64 (the map's it applies to), blocks u64, reserved u32, CRC-32C of bytes
//! 0..44 — then 16-byte records: block u64, kind u8 (1 before, 2 after, 3 synced: every write
//! completed before it is durable), key u8, thread u16, CRC-32C of the record's bytes 0..12.
//! Threads reserve their records' place with one atomic add, so a crash can leave a hole (a
//! record never written); the reader skips records that fail their checksum and counts them.

use crate::error::FormatError;
use crate::sector::MAX_KEY;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

pub const JOURNAL_MAGIC: &[u8; 8] = b"IOLABJNL";
pub const JOURNAL_HEADER: usize = 48;
pub const RECORD: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHeader {
    pub key_block: u32,
    pub file_id: u64,
    pub epoch: u64,
    pub blocks: u64,
}

impl JournalHeader {
    pub fn encode(&self) -> [u8; JOURNAL_HEADER] {
        let mut h = [0u8; JOURNAL_HEADER];
        h[..8].copy_from_slice(JOURNAL_MAGIC);
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        h[12..16].copy_from_slice(&self.key_block.to_le_bytes());
        h[16..24].copy_from_slice(&self.file_id.to_le_bytes());
        h[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        h[32..40].copy_from_slice(&self.blocks.to_le_bytes());
        let c = crc32c::crc32c(&h[..44]);
        h[44..48].copy_from_slice(&c.to_le_bytes());
        h
    }
    pub fn decode(b: &[u8]) -> Result<JournalHeader, FormatError> {
        if b.len() < JOURNAL_HEADER {
            return Err(FormatError::Truncated {
                what: "journal header",
                need: JOURNAL_HEADER as u64,
                have: b.len() as u64,
            });
        }
        if &b[..8] != JOURNAL_MAGIC {
            return Err(FormatError::Magic { what: "journal" });
        }
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let u64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        if crc32c::crc32c(&b[..44]) != u32_at(44) {
            return Err(FormatError::Checksum { what: "journal header" });
        }
        let version = u32_at(8);
        if version != 1 {
            return Err(FormatError::Version { what: "journal", version });
        }
        Ok(JournalHeader { key_block: u32_at(12), file_id: u64_at(16), epoch: u64_at(24), blocks: u64_at(32) })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Before = 1,
    After = 2,
    Synced = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub block: u64,
    pub kind: Kind,
    pub key: u8,
    pub thread: u16,
}

impl Record {
    pub fn encode(&self) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&self.block.to_le_bytes());
        r[8] = self.kind as u8;
        r[9] = self.key;
        r[10..12].copy_from_slice(&self.thread.to_le_bytes());
        let c = crc32c::crc32c(&r[..12]);
        r[12..16].copy_from_slice(&c.to_le_bytes());
        r
    }
    /// A record, or `None` if it fails its checksum or makes no sense.
    pub fn decode(r: &[u8]) -> Option<Record> {
        if r.len() != RECORD || crc32c::crc32c(&r[..12]) != u32::from_le_bytes([r[12], r[13], r[14], r[15]]) {
            return None;
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&r[..8]);
        let kind = match r[8] {
            1 => Kind::Before,
            2 => Kind::After,
            3 => Kind::Synced,
            _ => return None,
        };
        let key = r[9];
        if kind != Kind::Synced && (key == 0 || key > MAX_KEY) {
            return None;
        }
        Some(Record { block: u64::from_le_bytes(b), kind, key, thread: u16::from_le_bytes([r[10], r[11]]) })
    }
}

/// An open journal the threads of one file share.
pub struct Journal {
    file: File,
    next: AtomicU64,
    pub sync: bool,
}

impl Journal {
    /// Start a journal anew at `path` (truncating an old one), header durable.
    pub fn create(path: &std::path::Path, header: &JournalHeader, sync: bool) -> io::Result<Journal> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(if sync { libc::O_DSYNC } else { 0 })
            .open(path)?;
        file.write_all_at(&header.encode(), 0)?;
        file.sync_all()?;
        Ok(Journal { file, next: AtomicU64::new(JOURNAL_HEADER as u64), sync })
    }
    /// Append whole records (several threads may at once: each reserves its place).
    pub fn append(&self, bytes: &[u8]) -> io::Result<()> {
        let at = self.next.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.file.write_all_at(bytes, at)
    }
    /// Bytes of records written so far.
    pub fn len(&self) -> u64 {
        self.next.load(Ordering::Relaxed) - JOURNAL_HEADER as u64
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One thread's side of a journal: its completion records wait in a buffer for its next write.
pub struct ThreadJournal {
    pending: Vec<u8>,
    thread: u16,
}

impl ThreadJournal {
    pub fn new(thread: u32) -> ThreadJournal {
        ThreadJournal { pending: Vec::with_capacity(4096), thread: thread as u16 }
    }
    /// The record before a write; [`ThreadJournal::flush`] writes it (with the completions
    /// waiting) before the write is issued.
    pub fn push_before(&mut self, block: u64, key: u8) {
        self.pending.extend_from_slice(&Record { block, kind: Kind::Before, key, thread: self.thread }.encode());
    }
    /// The record after a write completed: it waits for the next write's records.
    pub fn push_after(&mut self, block: u64, key: u8) {
        self.pending.extend_from_slice(&Record { block, kind: Kind::After, key, thread: self.thread }.encode());
    }
    /// Bytes of records waiting.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
    /// Every write this thread completed so far is durable (a flush of the data file returned).
    pub fn synced(&mut self, j: &Journal) -> io::Result<usize> {
        self.pending.extend_from_slice(&Record { block: 0, kind: Kind::Synced, key: 0, thread: self.thread }.encode());
        self.flush(j)
    }
    /// Write what waits; returns the bytes written.
    pub fn flush(&mut self, j: &Journal) -> io::Result<usize> {
        if self.pending.is_empty() {
            return Ok(0);
        }
        let n = self.pending.len();
        j.append(&self.pending)?;
        self.pending.clear();
        Ok(n)
    }
}

/// What a journal says about each block it names, replayed over the map it applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Per block: the key of its last completed write, and the new key of a write pending
    /// when the journal ends (before record, no completion).
    pub blocks: std::collections::HashMap<u64, BlockState>,
    /// Records read, records skipped (bad checksum, nonsense, past the map's end), and bytes
    /// of a record cut short at the end.
    pub records: u64,
    pub bad_records: u64,
    pub torn_tail: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockState {
    /// The key of the last completed write (from the map, or a completion record).
    pub key: u8,
    /// A write on its way: its new key.
    pub pending: Option<u8>,
    /// Index of the record of the block's last write, to compare with the last sync.
    pub last_write: u64,
}

impl Replayed {
    /// The record index of the last `synced` record (0: none).
    pub fn last_sync(&self) -> u64 {
        self.blocks.get(&u64::MAX).map_or(0, |b| b.last_write)
    }
}

/// Replay the records read from `r` (after the header) over `keys`, the map's bytes (key in
/// the low 7 bits). Reads in 64 KiB chunks: a journal of any length takes memory for the
/// blocks it names only.
pub fn replay(keys: &[u8], r: &mut dyn Read) -> io::Result<Replayed> {
    let mut out = Replayed::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut have = 0usize;
    let mut index = 0u64;
    loop {
        let n = match r.read(&mut buf[have..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        have += n;
        let whole = have / RECORD * RECORD;
        for rec in buf[..whole].chunks_exact(RECORD) {
            index += 1;
            apply(&mut out, keys, rec, index);
        }
        buf.copy_within(whole..have, 0);
        have -= whole;
    }
    out.torn_tail = have as u64;
    Ok(out)
}

fn apply(out: &mut Replayed, keys: &[u8], rec: &[u8], index: u64) {
    let Some(r) = Record::decode(rec) else {
        out.bad_records += 1;
        return;
    };
    out.records += 1;
    if r.kind == Kind::Synced {
        out.blocks.insert(u64::MAX, BlockState { key: 0, pending: None, last_write: index });
        return;
    }
    let Some(start) = keys.get(r.block as usize) else {
        out.bad_records += 1;
        out.records -= 1;
        return;
    };
    let e = out.blocks.entry(r.block).or_insert(BlockState {
        key: start & !crate::map::UNSYNCED,
        pending: None,
        last_write: 0,
    });
    match r.kind {
        Kind::Before => {
            // A block is claimed by one I/O at a time: a new write means the one before it
            // completed, even if its completion record was lost.
            if let Some(p) = e.pending.take() {
                e.key = p;
            }
            e.pending = Some(r.key);
            e.last_write = index;
        }
        Kind::After => {
            if e.pending == Some(r.key) {
                e.key = r.key;
                e.pending = None;
            }
            e.last_write = e.last_write.max(index);
        }
        Kind::Synced => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(rs: &[(u64, Kind, u8)]) -> Vec<u8> {
        rs.iter().flat_map(|(b, k, key)| Record { block: *b, kind: *k, key: *key, thread: 0 }.encode()).collect()
    }

    #[test]
    fn replay_tracks_completed_and_pending_writes() {
        let keys = [0u8, 5, 9, 0];
        let mut j = recs(&[
            (1, Kind::Before, 6),
            (1, Kind::After, 6),
            (2, Kind::Before, 10),
            (0, Kind::Before, 1),
            (0, Kind::Synced, 0),
            // A completion record that went missing: the next write promotes the one before.
            (3, Kind::Before, 1),
            (3, Kind::Before, 2),
        ]);
        j.extend_from_slice(&[0u8; RECORD]); // a hole: a record reserved, never written
        j.extend_from_slice(&recs(&[(9, Kind::Before, 1)])); // past the map's end
        j.extend_from_slice(&[1, 2, 3]); // torn tail
        let r = replay(&keys, &mut j.as_slice()).unwrap();
        assert_eq!(r.blocks[&1], BlockState { key: 6, pending: None, last_write: 2 });
        assert_eq!(r.blocks[&2].key, 9);
        assert_eq!(r.blocks[&2].pending, Some(10));
        assert_eq!(r.blocks[&0].pending, Some(1));
        assert_eq!((r.blocks[&3].key, r.blocks[&3].pending), (1, Some(2)));
        assert_eq!(r.last_sync(), 5);
        assert_eq!((r.records, r.bad_records, r.torn_tail), (7, 2, 3));
    }

    #[test]
    fn a_late_completion_does_not_undo_a_newer_write() {
        let keys = [3u8];
        let j = recs(&[(0, Kind::Before, 4), (0, Kind::Before, 5), (0, Kind::After, 4)]);
        let r = replay(&keys, &mut j.as_slice()).unwrap();
        assert_eq!((r.blocks[&0].key, r.blocks[&0].pending), (4, Some(5)));
    }

    #[test]
    fn headers_read_back_and_damage_is_refused() {
        let h = JournalHeader { key_block: 4096, file_id: 1, epoch: 2, blocks: 3 };
        let b = h.encode();
        assert_eq!(JournalHeader::decode(&b).unwrap(), h);
        for i in 0..b.len() {
            let mut x = b;
            x[i] ^= 1;
            assert!(JournalHeader::decode(&x).is_err());
        }
        assert!(JournalHeader::decode(&b[..20]).is_err());
    }
}
