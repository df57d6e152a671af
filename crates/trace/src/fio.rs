//! `iolab trace export --fio`: a fio iolog version 3 (`ts filename action [offset length]`,
//! `ts` in µs since the start) for users who replay with fio's `read_iolog=`. fio replays one
//! log in one job, so the threads are merged in start order; read/write at the file position
//! become offsets (fio issues pread/pwrite with its own open flags: the call shape is lost,
//! which is why iolab has its own replay).

use crate::format::{Kind, Trace, NO_FILE};
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

/// Write the log; returns the number of entries (without the header and `add` lines).
pub fn export(t: &Trace, out: &mut impl Write) -> io::Result<u64> {
    let mut all: Vec<(u64, u32, usize)> = Vec::new();
    for (ti, (_, ops)) in t.ops.iter().enumerate() {
        for (i, op) in ops.iter().enumerate() {
            all.push((op.start_ns, ti as u32, i));
        }
    }
    all.sort_unstable();
    writeln!(out, "fio version 3 iolog")?;
    let mut added: HashSet<&str> = HashSet::new();
    let mut pos: HashMap<u32, u64> = HashMap::new();
    let mut n = 0;
    for (ts, ti, i) in all {
        let op = t.ops[ti as usize].1[i];
        if op.file == NO_FILE || matches!(op.kind, Kind::Unlink | Kind::Rename | Kind::Mkdir | Kind::Other(_)) {
            continue;
        }
        let Some(f) = t.files.get(&op.file) else { continue };
        if !f.regular || f.path.contains(char::is_whitespace) {
            continue;
        }
        let us = ts / 1000;
        let p = f.path.as_str();
        if added.insert(p) {
            writeln!(out, "{us} {p} add")?;
        }
        let moved = op.result.max(0) as u64;
        let line = match op.kind {
            Kind::Open => {
                pos.insert(op.file, 0);
                "open".to_string()
            }
            Kind::Close => "close".to_string(),
            Kind::Lseek => {
                if op.result >= 0 {
                    pos.insert(op.file, op.result as u64);
                }
                continue;
            }
            Kind::Fsync => "sync 0 0".to_string(),
            Kind::Fdatasync => "datasync 0 0".to_string(),
            Kind::SyncFileRange => "datasync 0 0".to_string(),
            Kind::Ftruncate | Kind::Fallocate => continue,
            k => {
                let at = match k {
                    Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev => op.offset,
                    _ => {
                        let p = pos.entry(op.file).or_insert(0);
                        let at = *p;
                        *p = p.saturating_add(moved);
                        at
                    }
                };
                if op.result <= 0 {
                    continue;
                }
                format!("{} {at} {moved}", if k.reads() { "read" } else { "write" })
            }
        };
        writeln!(out, "{us} {p} {line}")?;
        n += 1;
    }
    Ok(n)
}
