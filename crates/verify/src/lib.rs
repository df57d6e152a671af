//! iolab-verify: data validation, as Vdbench does it and its peers do not. Every key block a
//! validated job writes carries, in each 512-byte sector, a header ([`sector`]: offset, file
//! id, a generation key rotating 1..=126, writer node and thread, time, CRC-32C of header and
//! data) and a pattern derived from (file id, offset, key) ([`pattern`]), so a reader checks a
//! block without having kept it. A key map ([`map`], one byte per key block) says which key
//! each block should hold; a journal ([`journal`]) records each write before and after, so the
//! map can be rebuilt after a crash ([`recover`]). A block that disagrees is classified
//! ([`check`]): corrupted, lost write, stale read, misdirected, torn, never written — each
//! named with its file, offset, the expected and found keys, the time found and the writer.
//!
//! The workload crate stamps and checks through [`Tracked`] (one file under validation during
//! a run); nothing here knows engines or sources. It imports the model (for the results' types)
//! and no iolab crate above it.

#![forbid(unsafe_code)]

pub mod check;
pub mod error;
pub mod journal;
pub mod map;
pub mod pattern;
pub mod recover;
pub mod scan;
pub mod sector;
pub mod tracked;

pub use check::{check_block, Expect, Finding};
pub use error::{FormatError, VerifyError};
pub use recover::{recover_dir, Recovered};
pub use sector::{next_key, stamp_block, Stamp, MAX_KEY, SECTOR};
pub use tracked::{Options, Tracked, When};

use std::path::Path;

/// A file's id in its stamps: a 64-bit hash of its canonical path (FNV-1a, then mixed).
pub fn file_id(canonical: &Path) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical.as_os_str().as_encoded_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // A final mix, so ids of similar paths differ in every bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A node's id in the stamps: the CRC-32C of its name.
pub fn node_id(name: &str) -> u32 {
    crc32c::crc32c(name.as_bytes())
}

/// The time now, ns since the Unix epoch.
#[inline]
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// `node/thread`, the node named when it is one of `names`, else its id in hex.
pub fn writer_words(node: u32, thread: u32, names: &[&str]) -> String {
    match names.iter().find(|n| node_id(n) == node) {
        Some(n) => format!("{n}/{thread}"),
        None => format!("node {node:#010x}/{thread}"),
    }
}
