//! `iolab trace export --fio`: a fio iolog version 3 (`ts filename action [offset length]`,
//! `ts` in µs since the start) for users who replay with fio's `read_iolog=`. fio replays one
//! log in one job, so the threads are merged in start order; read/write at the file position
//! become offsets (fio issues pread/pwrite with its own open flags: the call shape is lost,
//! which is why iolab has its own replay). A path is `open`ed when its first opening begins (or
//! at its first use, for a descriptor opened before the trace) and `close`d when its last
//! opening ends: a close of a duplicate descriptor (dup, fork) ends nothing and is not written,
//! so fio never closes a file it has not opened. With `target`, paths under the traced
//! directory are remapped under it and the rest left out. The calls exported are held in memory
//! (32 bytes each, merged by time), at most [`MAX_ENTRIES`]. Asynchronous operations (io_uring,
//! libaio) are written at their submission with the bytes they moved; a block-level trace's
//! requests go to /dev/NAME (fio's `replay_redirect=` sends them elsewhere): read, write,
//! trim (a discard), sync (a flush), at their issue.

use crate::format::{FormatError, Kind, Record, NO_FILE};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Calls an export holds to merge the threads by time (32 bytes each: 1 GiB).
pub const MAX_ENTRIES: usize = 32 << 20;

/// Where the exported paths go: the traced directory (`strip`) replaced by `target`.
#[derive(Debug, Clone)]
pub struct Remap {
    pub strip: PathBuf,
    pub target: PathBuf,
}

/// What an export wrote and left out.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Exported {
    /// Log entries (without the header and `add` lines).
    pub entries: u64,
    /// Per action (`read`, `write`, `sync`, `open`, ...), entries written.
    pub actions: BTreeMap<String, u64>,
    /// Calls left out, by why.
    pub left_out: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Act {
    Open,
    Read,
    Write,
    Sync,
    Datasync,
    Trim,
    /// A close that ends the opening (the last reference).
    Close,
}

/// One call to export: (start, thread order, call order) to merge by, then what.
#[derive(Clone, Copy)]
struct Entry {
    ts_ns: u64,
    seq: u32,
    path: u32,
    act: Act,
    offset: u64,
    len: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error(
        "the trace has more than {MAX_ENTRIES} calls to export, which are merged by time in memory; export part of it with --target and a narrower --strip"
    )]
    TooLarge,
}

fn left(out: &mut Exported, why: &str) {
    *out.left_out.entry(why.to_string()).or_default() += 1;
}

/// Write the log from a trace's records (read as a stream; the exported calls are held).
pub fn export(
    records: impl Iterator<Item = Result<Record, FormatError>>,
    remap: Option<&Remap>,
    out: &mut dyn Write,
) -> Result<Exported, ExportError> {
    let mut c = Collect { remap, ..Collect::default() };
    for r in records {
        match r? {
            Record::Device { dev, name } => {
                let p = c.intern(format!("/dev/{name}"));
                c.devices.insert(dev, p);
            }
            Record::BlockIos { dev, ios } => c.block_ios(dev, ios)?,
            Record::RingOps { ops, .. } => c.ring_ops(ops)?,
            Record::File { id, path, regular, .. } => c.file(id, path, regular),
            Record::Chunk { tid, ops } => c.chunk(tid, ops)?,
            _ => {}
        }
    }
    let Collect { mut entries, paths, mut res, .. } = c;
    // Merged by start; a thread's calls keep their order (equal starts by call order).
    entries.sort_by_key(|e| (e.ts_ns, e.seq));
    write_log(out, &entries, &paths, &mut res)?;
    Ok(res)
}

/// The calls to export, gathered from the records as they come.
#[derive(Default)]
struct Collect<'a> {
    remap: Option<&'a Remap>,
    res: Exported,
    /// Opening id → path index (an error: left out, with why).
    files: HashMap<u32, Result<u32, &'static str>>,
    paths: Vec<String>,
    path_ids: HashMap<String, u32>,
    /// Per thread: its position per opening (read/write at the position become offsets).
    pos: HashMap<u32, HashMap<u32, u64>>,
    entries: Vec<Entry>,
    /// Per thread: its calls so far (their order).
    seq: HashMap<u32, u32>,
    /// Block devices of a block-level trace: dev → path index of /dev/NAME.
    devices: HashMap<u32, u32>,
    async_seq: u32,
}

impl Collect<'_> {
    fn intern(&mut self, p: String) -> u32 {
        let n = self.paths.len() as u32;
        let paths = &mut self.paths;
        *self.path_ids.entry(p.clone()).or_insert_with(|| {
            paths.push(p);
            n
        })
    }

    fn push(&mut self, e: Entry) -> Result<(), ExportError> {
        if self.entries.len() >= MAX_ENTRIES {
            return Err(ExportError::TooLarge);
        }
        self.entries.push(e);
        Ok(())
    }

    /// An asynchronous entry (a ring's or a block request): ordered after the earlier ones.
    fn push_async(&mut self, ts_ns: u64, path: u32, act: Act, offset: u64, len: u64) -> Result<(), ExportError> {
        self.async_seq = self.async_seq.wrapping_add(1);
        self.push(Entry { ts_ns, seq: self.async_seq, path, act, offset, len })
    }

    fn left(&mut self, why: &str) {
        left(&mut self.res, why);
    }

    /// The path an opening's calls go to, or why they are left out (`None`: unknown opening).
    fn path_of(&mut self, file: u32) -> Option<u32> {
        match self.files.get(&file) {
            Some(Ok(p)) => Some(*p),
            Some(Err(why)) => {
                let why = *why;
                self.left(why);
                None
            }
            None => None,
        }
    }

    fn block_ios(&mut self, dev: u32, ios: Vec<crate::format::BlockIo>) -> Result<(), ExportError> {
        let path = match self.devices.get(&dev) {
            Some(p) => *p,
            None => self.intern(format!("/dev/block/{}:{}", dev >> 20, dev & 0xfffff)),
        };
        self.devices.insert(dev, path);
        for io in ios {
            let act = match io.op {
                0 => Act::Read,
                1 => Act::Write,
                2 => Act::Sync,
                3 => Act::Trim,
                _ => {
                    self.left("block requests other than read, write, flush and discard");
                    continue;
                }
            };
            if io.error != 0 {
                self.left("block requests that failed");
                continue;
            }
            let (offset, len) =
                if act == Act::Sync { (0, 0) } else { (io.sector.saturating_mul(512), u64::from(io.bytes)) };
            self.push_async(io.issue_ns, path, act, offset, len)?;
        }
        Ok(())
    }

    fn ring_ops(&mut self, ops: Vec<crate::format::AsyncOp>) -> Result<(), ExportError> {
        use crate::format::AsyncKind;
        for op in ops {
            let known = self.files.contains_key(&op.file);
            let Some(path) = self.path_of(op.file) else {
                if !known {
                    self.left("asynchronous I/O on a file the trace cannot name");
                }
                continue;
            };
            if op.result < 0 {
                self.left("failed or unfinished when traced");
                continue;
            }
            let (act, offset, len) = match op.kind {
                k if k.reads() || k.writes() => {
                    if op.offset == u64::MAX {
                        self.left("asynchronous I/O at the file position");
                        continue;
                    }
                    if op.result == 0 {
                        self.left("reads and writes that moved nothing");
                        continue;
                    }
                    (if k.reads() { Act::Read } else { Act::Write }, op.offset, op.result as u64)
                }
                AsyncKind::Fsync => (Act::Sync, 0, 0),
                AsyncKind::Fdatasync | AsyncKind::SyncFileRange => (Act::Datasync, 0, 0),
                _ => {
                    self.left("asynchronous operations fio's iolog has no action for");
                    continue;
                }
            };
            self.push_async(op.submit_ns, path, act, offset, len)?;
        }
        Ok(())
    }

    fn file(&mut self, id: u32, path: String, regular: bool) {
        let p = if !regular {
            Err("not a regular file (pipes, sockets, devices, /proc)")
        } else if path.contains(char::is_whitespace) {
            Err("a path with white space (fio's iolog cannot name it)")
        } else {
            match self.remap {
                None => Ok(path),
                Some(m) => remapped(&path, m),
            }
        };
        let p = p.map(|p| self.intern(p));
        self.files.insert(id, p);
    }

    fn chunk(&mut self, tid: u32, ops: Vec<crate::format::Op>) -> Result<(), ExportError> {
        for op in ops {
            let n = self.seq.entry(tid).or_default();
            *n = n.wrapping_add(1);
            let n = *n;
            if op.file == NO_FILE || matches!(op.kind, Kind::Unlink | Kind::Rename | Kind::Mkdir | Kind::Other(_)) {
                continue;
            }
            let Some(path) = self.path_of(op.file) else { continue };
            if op.result < 0 {
                self.left("failed or unfinished when traced");
                continue;
            }
            let moved = op.result.max(0) as u64;
            let pos = self.pos.entry(tid).or_default();
            let (act, offset, len) = match op.kind {
                Kind::Open => {
                    pos.insert(op.file, 0);
                    (Act::Open, 0, 0)
                }
                Kind::Close if op.count != 0 => continue, // a duplicate closed: the opening stays
                Kind::Close => (Act::Close, 0, 0),
                Kind::Lseek => {
                    pos.insert(op.file, moved);
                    continue;
                }
                Kind::Fsync => (Act::Sync, 0, 0),
                Kind::Fdatasync | Kind::SyncFileRange => (Act::Datasync, 0, 0),
                Kind::Ftruncate | Kind::Fallocate => {
                    self.left("ftruncate and fallocate (fio's iolog has no such action)");
                    continue;
                }
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
                    if moved == 0 {
                        self.left("reads and writes that moved nothing");
                        continue;
                    }
                    (if k.reads() { Act::Read } else { Act::Write }, at, moved)
                }
            };
            self.push(Entry { ts_ns: op.start_ns, seq: n, path, act, offset, len })?;
        }
        Ok(())
    }
}

/// A traced path under `--target`: the traced directory's part of it, which must stay beneath
/// (a `..` or a root in what is left would let fio write outside `--target`).
fn remapped(path: &str, m: &Remap) -> Result<String, &'static str> {
    use std::path::Component;
    match Path::new(path).strip_prefix(&m.strip) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            if rel.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
                Ok(m.target.join(rel).to_string_lossy().into_owned())
            } else {
                Err("a path that climbs out of the traced directory with `..` (fio would write outside --target)")
            }
        }
        _ => Err("outside the traced directory (--strip)"),
    }
}

/// The log itself: a header, each path `add`ed before its first entry, opened at its first
/// opening (or first use) and closed at its last close (or at the end).
fn write_log(out: &mut dyn Write, entries: &[Entry], paths: &[String], res: &mut Exported) -> io::Result<()> {
    writeln!(out, "fio version 3 iolog")?;
    let mut added = vec![false; paths.len()];
    let mut open = vec![0u32; paths.len()];
    let mut last_us = 0;
    let line = |out: &mut dyn Write, res: &mut Exported, us: u64, p: &str, what: &str, rest: &str| {
        res.entries += 1;
        *res.actions.entry(what.to_string()).or_default() += 1;
        writeln!(out, "{us} {p} {what}{rest}")
    };
    for e in entries {
        let us = e.ts_ns / 1000;
        last_us = us;
        let p = paths[e.path as usize].as_str();
        let i = e.path as usize;
        if !added[i] {
            added[i] = true;
            writeln!(out, "{us} {p} add")?;
        }
        match e.act {
            Act::Open => {
                if open[i] == 0 {
                    line(out, res, us, p, "open", "")?;
                }
                open[i] += 1;
            }
            Act::Close => {
                if open[i] == 1 {
                    line(out, res, us, p, "close", "")?;
                }
                open[i] = open[i].saturating_sub(1);
            }
            act => {
                if open[i] == 0 {
                    // Opened before the trace (or used after its last close): opened here.
                    line(out, res, us, p, "open", "")?;
                    open[i] = 1;
                }
                let (what, rest) = match act {
                    Act::Read => ("read", format!(" {} {}", e.offset, e.len)),
                    Act::Write => ("write", format!(" {} {}", e.offset, e.len)),
                    Act::Trim => ("trim", format!(" {} {}", e.offset, e.len)),
                    Act::Sync => ("sync", " 0 0".to_string()),
                    _ => ("datasync", " 0 0".to_string()),
                };
                line(out, res, us, p, what, &rest)?;
            }
        }
    }
    for (i, n) in open.iter().enumerate() {
        if *n > 0 {
            line(out, res, last_us, &paths[i], "close", "")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Reader;

    fn log(text: &str, remap: Option<&Remap>) -> (String, Exported) {
        let mut imp = crate::Importer::new(Vec::new(), "t").unwrap();
        imp.read_file(text.as_bytes(), "t", None).unwrap();
        let (bytes, _) = imp.finish().unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        let ex = export(std::iter::from_fn(|| r.next_record().transpose()), remap, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), ex)
    }

    #[test]
    fn a_path_climbing_out_with_dotdot_is_left_out_under_target() {
        // Issue 25: fio's read_iolog would write wherever the log says; /w/../etc/x is /etc/x.
        let text = "\
1  1.0 openat(AT_FDCWD</w>, \"/w/../etc/x\", O_RDWR) = 3</w/../etc/x> <0.000010>
1  1.1 pwrite64(3</w/../etc/x>, \"x\"..., 512, 0) = 512 <0.000010>
1  1.2 openat(AT_FDCWD</w>, \"/w/./a\", O_RDWR) = 4</w/./a> <0.000010>
1  1.3 pwrite64(4</w/./a>, \"x\"..., 512, 0) = 512 <0.000010>
";
        let remap = Remap { strip: "/w".into(), target: "/mnt/t".into() };
        let (out, ex) = log(text, Some(&remap));
        assert!(!out.contains("etc"), "{out}");
        assert!(out.contains("/mnt/t/a write 0 512"), "{out}");
        let why = "a path that climbs out of the traced directory with `..` (fio would write outside --target)";
        assert_eq!(ex.left_out.get(why), Some(&2), "{:?}", ex.left_out);
    }

    #[test]
    fn a_duplicate_closed_does_not_close_the_file() {
        // dd's pattern: open as 3, dup2 onto 1, close 3 (a duplicate), write through 1, close 1.
        let text = "\
1  1.000000 openat(AT_FDCWD</w>, \"/w/out\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</w/out> <0.000010>
1  1.000010 dup2(3</w/out>, 1</dev/pts/0>) = 1</w/out> <0.000010>
1  1.000020 close(3</w/out>) = 0 <0.000010>
1  1.000030 write(1</w/out>, \"x\"..., 4096) = 4096 <0.000010>
1  1.000040 write(1</w/out>, \"x\"..., 4096) = 4096 <0.000010>
1  1.000050 fsync(1</w/out>) = 0 <0.000010>
1  1.000060 close(1</w/out>) = 0 <0.000010>
1  1.000070 read(5</w/before>, \"\"..., 512) = 512 <0.000010>
1  1.000080 read(6<pipe:[7]>, \"\"..., 512) = 512 <0.000010>
";
        let (text, ex) = log(text, None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            vec![
                "fio version 3 iolog",
                "0 /w/out add",
                "0 /w/out open",
                "30 /w/out write 0 4096",
                "40 /w/out write 4096 4096",
                "50 /w/out sync 0 0",
                "60 /w/out close",
                "70 /w/before add",
                "70 /w/before open",
                "70 /w/before read 0 512",
                "70 /w/before close",
            ]
        );
        assert_eq!(ex.entries, 8);
        assert_eq!(ex.left_out.values().sum::<u64>(), 1, "the pipe");
        // Remapped under another directory; what is outside the traced one is left out.
        let remap = Remap { strip: "/w".into(), target: "/mnt/t".into() };
        let text2 = "\
1  1.0 openat(AT_FDCWD</w>, \"/w/a\", O_RDWR|O_CREAT, 0644) = 3</w/a> <0.000010>
1  1.1 pwrite64(3</w/a>, \"x\"..., 512, 4096) = 512 <0.000010>
1  1.2 openat(AT_FDCWD</w>, \"/etc/x\", O_RDONLY) = 4</etc/x> <0.000010>
1  1.3 read(4</etc/x>, \"\"..., 512) = 100 <0.000010>
";
        let (text, ex) = log(text2, Some(&remap));
        assert!(text.contains("100000 /mnt/t/a write 4096 512\n"), "{text}");
        assert!(!text.contains("/etc/x"));
        assert_eq!(ex.left_out["outside the traced directory (--strip)"], 2);
    }
}
