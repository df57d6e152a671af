//! How a new file that a job only writes is made before its phase (`--preallocate`, fio's
//! `fallocate`). fio lays out a write-only job's new file by allocating it, not writing it
//! (filesetup.c: `fallocate=native`, its default, is fallocate(2) with mode 0 over the file's
//! size; no data), so its writes land in allocated, unwritten extents; a file written into
//! holes instead allocates as it goes (fio's tiobench f1, 4 sequential O_DIRECT writers: 0.36 of
//! fio's IOPS on a new sparse file, 1.0 on a fallocated one, this machine's ext4). Without the
//! option iolab lays out a random writer's file with data and lets a sequential writer extend
//! it; with it, a job that only writes gets the file made as said and no data laid out, or
//! (`data`, fio's `overwrite=1`) laid out with data as a reader's file is.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

crate::job::word_enum!(
    /// The making of a new file a job only writes.
    Prealloc {
        // fallocate(2) with mode 0 over the file's size: blocks allocated, unwritten, the size
        // set (fio's `native` and `posix`; where the filesystem refuses it, as `none`).
        Fallocate => "fallocate",
        // fallocate(2) with FALLOC_FL_KEEP_SIZE: blocks allocated, the size left at 0 (fio's `keep`).
        Keep => "keep",
        // ftruncate(2) to the file's size: sized, sparse (fio's `truncate`).
        Truncate => "truncate",
        // Created empty: the writes extend it (fio's `none`).
        None => "none",
        // Laid out with data before the phase, as for a reader, so the writes overwrite
        // written blocks (fio's `overwrite=1`).
        Data => "data",
    }
);

impl Prealloc {
    /// fio's `fallocate` value (HOWTO: none, native, posix, keep, truncate; 0 and 1 the old
    /// none and posix).
    pub fn of_fio(v: &str) -> Option<Prealloc> {
        Some(match v {
            "none" | "0" => Prealloc::None,
            "native" | "posix" | "1" => Prealloc::Fallocate,
            "keep" => Prealloc::Keep,
            "truncate" => Prealloc::Truncate,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_words_and_fios() {
        for w in Prealloc::ALL {
            assert_eq!(w.parse::<Prealloc>().map(Prealloc::as_str), Ok(*w));
        }
        assert!("posix".parse::<Prealloc>().unwrap_err().contains("fallocate, keep, truncate, none, data"));
        assert_eq!(Prealloc::of_fio("native"), Some(Prealloc::Fallocate));
        assert_eq!(Prealloc::of_fio("posix"), Some(Prealloc::Fallocate));
        assert_eq!(Prealloc::of_fio("1"), Some(Prealloc::Fallocate));
        assert_eq!(Prealloc::of_fio("0"), Some(Prealloc::None));
        assert_eq!(Prealloc::of_fio("keep"), Some(Prealloc::Keep));
        assert_eq!(Prealloc::of_fio("sometimes"), None);
    }
}
