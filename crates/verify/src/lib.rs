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
pub mod content;
pub mod error;
pub mod handed;
pub mod journal;
pub mod layout;
pub mod linear;
pub mod map;
pub mod pattern;
pub mod recover;
pub mod scan;
pub mod sector;
pub mod tally;
pub mod tracked;

pub use check::{check_block, Expect, Finding};
pub use error::{FormatError, VerifyError};
pub use handed::HandedMap;
pub use recover::{recover_dir, Recovered};
pub use sector::{next_key, stamp_block, Stamp, Stamper, MAX_KEY, SECTOR};
pub use tally::Tally;
pub use tracked::{Options, Tracked, When};

use std::path::Path;

/// A file's id in its stamps: a 64-bit hash of its canonical path (FNV-1a, then mixed).
pub fn file_id(canonical: &Path) -> u64 {
    hash_path(canonical)
}

/// A file's id on a node that reaches the shared storage under `root` (its `dir=`): the hash
/// of the path below `root`, so every node names a shared file alike however it mounts the
/// share (`/mnt/a/f` on one node and `/net/share/f` on another are both `f`). A file outside
/// `root` keeps the id of its canonical path. `root` is canonicalized first when it can be.
pub fn file_id_under(canonical: &Path, root: &Path) -> u64 {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    match canonical.strip_prefix(&root) {
        // A marker byte first, so a relative id never equals the id of an absolute path.
        Ok(rel) => {
            let mut tagged = std::ffi::OsString::from("\u{1}");
            tagged.push(rel.as_os_str());
            hash_path(Path::new(&tagged))
        }
        Err(_) => hash_path(canonical),
    }
}

fn hash_path(canonical: &Path) -> u64 {
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

/// The time now, ns since the Unix epoch, from the kernel's coarse clock (its tick, a few ms:
/// enough to date a stamp, at a fifth of the cost of the precise clock on every write).
#[inline]
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.tv_nsec as u64)
}

/// `node/thread`, the node named when it is one of `names`, else its id in hex.
pub fn writer_words(node: u32, thread: u32, names: &[&str]) -> String {
    match names.iter().find(|n| node_id(n) == node) {
        Some(n) => format!("{n}/{thread}"),
        None => format!("node {node:#010x}/{thread}"),
    }
}

#[cfg(test)]
mod corpus {
    //! `IOLAB_WRITE_CORPUS=1 cargo test -p iolab-verify corpus` writes the fuzz target
    //! `journal`'s seed inputs (fuzz/corpus/journal): a map, a journal with records, a
    //! stamped block, each behind the byte that picks its parser.
    use crate::journal::{JournalHeader, Kind, Record};
    use crate::map::MapFile;

    #[test]
    fn write_fuzz_corpus() {
        if std::env::var_os("IOLAB_WRITE_CORPUS").is_none() {
            return;
        }
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/journal");
        std::fs::create_dir_all(dir).unwrap();
        let map = MapFile {
            key_block: 4096,
            file_id: 0xF11E,
            epoch: 2,
            node: "n1".into(),
            path: "/d/f".into(),
            keys: vec![0, 1, 2, 0x85, 0x7f, 126],
        };
        let mut m = vec![0u8];
        m.extend(map.encode());
        let mut j = vec![1u8];
        j.extend(JournalHeader { key_block: 4096, file_id: 0xF11E, epoch: 2, blocks: 6 }.encode());
        for (b, k, key) in [
            (1, Kind::Before, 2),
            (1, Kind::After, 2),
            (0, Kind::Before, 1),
            (0, Kind::Synced, 0),
            (5, Kind::Before, 1),
        ] {
            j.extend(Record { block: b, kind: k, key, thread: 0 }.encode());
        }
        j.extend([7, 7, 7]);
        let mut s = vec![2u8];
        let mut block = vec![0u8; 4096];
        crate::stamp_block(&mut block, 4096, &crate::Stamp { file_id: 0xF11E, key: 1, time_ns: 1, node: 2, thread: 0 });
        s.extend(block);
        for (name, bytes) in [("map", m), ("journal", j), ("block", s)] {
            std::fs::write(format!("{dir}/{name}"), bytes).unwrap();
        }
    }
}

#[cfg(test)]
mod ids {
    use super::*;

    #[test]
    fn a_shared_file_has_one_id_on_every_node_however_it_is_mounted() {
        // Node a mounts the share at /mnt/a, node b at /net/share: the same file `f`.
        let on_a = file_id_under(Path::new("/mnt/a/sub/f"), Path::new("/mnt/a"));
        let on_b = file_id_under(Path::new("/net/share/sub/f"), Path::new("/net/share"));
        assert_eq!(on_a, on_b);
        // By canonical path they differ: every cross-node read would be "misdirected".
        assert_ne!(file_id(Path::new("/mnt/a/sub/f")), file_id(Path::new("/net/share/sub/f")));
        // Another file below the root has another id, and no relative id is an absolute one's.
        assert_ne!(on_a, file_id_under(Path::new("/mnt/a/sub/g"), Path::new("/mnt/a")));
        assert_ne!(on_a, file_id(Path::new("sub/f")));
        // A file outside the root keeps its canonical path's id.
        assert_eq!(file_id_under(Path::new("/elsewhere/f"), Path::new("/mnt/a")), file_id(Path::new("/elsewhere/f")));
        // A root given through a symlink is the directory it names.
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
        let real = std::fs::canonicalize(&real).unwrap();
        assert_eq!(
            file_id_under(&real.join("f"), &d.path().join("link")),
            file_id_under(Path::new("/mnt/a/f"), Path::new("/mnt/a"))
        );
    }
}
