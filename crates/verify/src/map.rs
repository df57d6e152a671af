//! The key map: one byte per key block of a file, as Vdbench's (0 never written, 1..=126 the
//! key of the last write, [`UNKNOWN`] not checked again). In memory the threads writing a file
//! share it; a block's top bit marks it busy while an I/O of one thread is on it, so no other
//! I/O touches it meanwhile. On disk ([`MapFile`], `<file id>.map` in the journal directory)
//! the top bit marks a block written since the file was last synced, which tells a stale read
//! from another node's point of view.

use crate::error::FormatError;
use crate::sector::MAX_KEY;
use std::sync::atomic::{AtomicU8, Ordering};

/// In memory: an I/O is on the block.
pub const BUSY: u8 = 0x80;
/// On disk: written since the last sync.
pub const UNSYNCED: u8 = 0x80;
/// A block whose content is unknown (a failed write, an error already reported): not checked.
pub const UNKNOWN: u8 = 0x7f;

/// The map the threads of a run share.
pub struct KeyMap {
    keys: Box<[AtomicU8]>,
}

impl KeyMap {
    /// A map of `blocks` blocks from their persisted bytes (key in the low 7 bits), or all never
    /// written.
    pub fn new(blocks: u64, from: Option<&[u8]>) -> KeyMap {
        let keys = (0..blocks as usize)
            .map(|i| AtomicU8::new(from.and_then(|f| f.get(i)).map_or(0, |b| b & !UNSYNCED)))
            .collect();
        KeyMap { keys }
    }
    pub fn len(&self) -> u64 {
        self.keys.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
    /// The block's key (0 never written, [`UNKNOWN`]), busy or not.
    #[inline]
    pub fn key(&self, block: u64) -> u8 {
        self.keys.get(block as usize).map_or(UNKNOWN, |k| k.load(Ordering::Acquire) & !BUSY)
    }
    /// Mark the block busy; `None` if an I/O is already on it. Returns its key.
    #[inline]
    pub fn try_claim(&self, block: u64) -> Option<u8> {
        let k = self.keys.get(block as usize)?;
        let prev = k.fetch_or(BUSY, Ordering::AcqRel);
        (prev & BUSY == 0).then_some(prev)
    }
    /// Set the key of a claimed block, keeping it busy (a write on its way).
    #[inline]
    pub fn set_busy(&self, block: u64, key: u8) {
        if let Some(k) = self.keys.get(block as usize) {
            k.store(key | BUSY, Ordering::Release);
        }
    }
    /// Release a claimed block with its key.
    #[inline]
    pub fn release(&self, block: u64, key: u8) {
        if let Some(k) = self.keys.get(block as usize) {
            k.store(key & !BUSY, Ordering::Release);
        }
    }
    /// Set a block's key, leaving its busy bit as it is (a finding in a block an I/O holds).
    pub fn mark(&self, block: u64, key: u8) {
        if let Some(k) = self.keys.get(block as usize) {
            k.fetch_and(BUSY, Ordering::AcqRel);
            k.fetch_or(key & !BUSY, Ordering::AcqRel);
        }
    }
    /// Set every block's key from `keys` (busy bits dropped), before any I/O is on the map.
    pub fn load(&self, keys: &[u8]) {
        for (k, v) in self.keys.iter().zip(keys) {
            k.store(v & !BUSY, Ordering::Release);
        }
    }
    /// The keys as they stand (busy bits dropped).
    pub fn snapshot(&self) -> Vec<u8> {
        self.keys.iter().map(|k| k.load(Ordering::Acquire) & !BUSY).collect()
    }
}

/// The persisted map of one data file: `<file id>.map` in the journal directory.
///
/// Layout (little-endian): `IOLABMAP`, version u32 (1), key block u32, blocks u64, file id
/// u64, epoch u64, flags u32, node name length u16, path length u16, CRC-32C of everything
/// after the 56-byte header u32, CRC-32C of header bytes 0..52 u32; then the writer node's
/// name, the data file's path (UTF-8) and one byte per block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapFile {
    pub key_block: u32,
    pub file_id: u64,
    /// The journal whose header carries the same epoch applies to this map; a clean end saves
    /// the map with the next epoch and starts the journal anew.
    pub epoch: u64,
    /// The node whose run wrote the file last.
    pub node: String,
    /// The data file.
    pub path: String,
    /// Per block: key in the low 7 bits, [`UNSYNCED`] on top.
    pub keys: Vec<u8>,
}

pub const MAP_MAGIC: &[u8; 8] = b"IOLABMAP";
const MAP_HEADER: usize = 56;
/// Names longer than this are refused (a path is at most 4 KiB on Linux).
const MAX_NAME: usize = 4096;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl MapFile {
    pub fn encode(&self) -> Vec<u8> {
        let node = &self.node.as_bytes()[..self.node.len().min(MAX_NAME)];
        let path = &self.path.as_bytes()[..self.path.len().min(MAX_NAME)];
        let mut body = Vec::with_capacity(node.len() + path.len() + self.keys.len());
        body.extend_from_slice(node);
        body.extend_from_slice(path);
        body.extend_from_slice(&self.keys);
        let mut h = Vec::with_capacity(MAP_HEADER + body.len());
        h.extend_from_slice(MAP_MAGIC);
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&self.key_block.to_le_bytes());
        h.extend_from_slice(&(self.keys.len() as u64).to_le_bytes());
        h.extend_from_slice(&self.file_id.to_le_bytes());
        h.extend_from_slice(&self.epoch.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&(node.len() as u16).to_le_bytes());
        h.extend_from_slice(&(path.len() as u16).to_le_bytes());
        h.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        let hc = crc32c::crc32c(&h);
        h.extend_from_slice(&hc.to_le_bytes());
        h.extend_from_slice(&body);
        h
    }

    /// Read a map file's bytes; anything torn or foreign is a [`FormatError`], never a panic.
    pub fn decode(b: &[u8]) -> Result<MapFile, FormatError> {
        if b.len() < MAP_HEADER {
            return Err(FormatError::Truncated { what: "map header", need: MAP_HEADER as u64, have: b.len() as u64 });
        }
        if &b[..8] != MAP_MAGIC {
            return Err(FormatError::Magic { what: "map" });
        }
        if crc32c::crc32c(&b[..52]) != u32_at(b, 52) {
            return Err(FormatError::Checksum { what: "map header" });
        }
        let version = u32_at(b, 8);
        if version != 1 {
            return Err(FormatError::Version { what: "map", version });
        }
        let key_block = u32_at(b, 12);
        let blocks = u64_at(b, 16);
        let (node_len, path_len) = (u16_at(b, 44) as usize, u16_at(b, 46) as usize);
        if node_len > MAX_NAME || path_len > MAX_NAME {
            return Err(FormatError::Invalid { what: "map", why: "a name is longer than 4096 bytes".into() });
        }
        let need = (MAP_HEADER + node_len + path_len) as u64 + blocks;
        if b.len() as u64 != need {
            return Err(FormatError::Truncated { what: "map", need, have: b.len() as u64 });
        }
        let body = &b[MAP_HEADER..];
        if crc32c::crc32c(body) != u32_at(b, 48) {
            return Err(FormatError::Checksum { what: "map" });
        }
        if key_block == 0 || !key_block.is_multiple_of(512) {
            return Err(FormatError::Invalid {
                what: "map",
                why: format!("key block {key_block} is not a multiple of 512"),
            });
        }
        let text = |s: &[u8]| {
            String::from_utf8(s.to_vec())
                .map_err(|_| FormatError::Invalid { what: "map", why: "a name is not UTF-8".into() })
        };
        let node = text(&body[..node_len])?;
        let path = text(&body[node_len..node_len + path_len])?;
        let keys = body[node_len + path_len..].to_vec();
        if let Some(k) = keys.iter().find(|k| (*k & !UNSYNCED) > MAX_KEY && (*k & !UNSYNCED) != UNKNOWN) {
            return Err(FormatError::Invalid { what: "map", why: format!("a block's key {k:#04x} is out of range") });
        }
        Ok(MapFile { key_block, file_id: u64_at(b, 24), epoch: u64_at(b, 32), node, path, keys })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MapFile {
        MapFile {
            key_block: 4096,
            file_id: 0xFEED,
            epoch: 3,
            node: "n1".into(),
            path: "/tmp/x/f".into(),
            keys: vec![0, 1, 126 | UNSYNCED, UNKNOWN, 5],
        }
    }

    #[test]
    fn a_map_reads_back_and_every_truncation_or_flip_is_refused() {
        let m = sample();
        let b = m.encode();
        assert_eq!(MapFile::decode(&b).unwrap(), m);
        for n in 0..b.len() {
            assert!(MapFile::decode(&b[..n]).is_err(), "cut at {n}");
        }
        for i in 0..b.len() {
            let mut x = b.clone();
            x[i] ^= 0x04;
            assert!(MapFile::decode(&x).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn claims_exclude_each_other() {
        let m = KeyMap::new(4, Some(&[3, UNSYNCED, 0, 0]));
        assert_eq!(m.key(0), 3);
        assert_eq!(m.try_claim(0), Some(3));
        assert_eq!(m.try_claim(0), None);
        m.set_busy(0, 4);
        assert_eq!(m.key(0), 4);
        assert_eq!(m.try_claim(0), None);
        m.release(0, 4);
        assert_eq!(m.try_claim(0), Some(4));
        assert_eq!(m.try_claim(9), None, "past the end");
        assert_eq!(m.snapshot(), vec![4, 0, 0, 0]);
    }
}
