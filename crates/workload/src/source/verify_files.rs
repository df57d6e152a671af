//! Data validation around an application workload or a replay (`--verify` on a workload other
//! than block): the files it creates, writes, renames and deletes are followed by name, each
//! with what it should hold ([`iolab_verify::content::Content`]); every write is stamped just
//! before it is queued (`fill`), every read is checked on its completion against what the file
//! should hold where it read. The position of each open file is followed (data calls at the
//! position, appends, seeks), so a read or write at the position is checked where it lands. A
//! read that another write of the file overlapped in time is not checked (which landed first is
//! not known), nor what two writes in flight together wrote. With `--verify-after` each file is
//! read back and checked just before the workload deletes it (by this wrapper, outside the
//! operations counted) and the files left at the end after the phase ([`FileSet::verify_after`]).

use super::verify::StampTime;
use super::{Call, Ctx, FileChange, Issue, Next, OpenFlags, SetupFile, Source, SourceError};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_model::OpClass;
use iolab_verify::content::{self, Content};
use iolab_verify::Tally;
use iolab_verify::{Stamper, When};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

type Shared = Arc<Mutex<Content>>;

fn lock(c: &Shared) -> MutexGuard<'_, Content> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// The files of one job under validation, shared by its threads.
pub struct FileSet {
    files: Mutex<HashMap<PathBuf, Shared>>,
    pub tally: Tally,
    created: AtomicU64,
    after: bool,
    /// The job's directory as the run opened it: files read back beneath it, not by name.
    root: Option<Arc<iolab_engine::beneath::Beneath>>,
}

impl FileSet {
    pub fn new(node: &str, max_errors: u64, after: bool) -> FileSet {
        FileSet {
            files: Mutex::new(HashMap::new()),
            tally: Tally::new(node, None, 512, max_errors),
            created: AtomicU64::new(0),
            after,
            root: None,
        }
    }

    /// Read files back beneath `root` (the job's directory as the run opened it).
    pub fn within(mut self, root: Option<Arc<iolab_engine::beneath::Beneath>>) -> FileSet {
        self.root = root;
        self
    }

    fn files(&self) -> MutexGuard<'_, HashMap<PathBuf, Shared>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new file's id: its path's, mixed with a count, so a file created again under the same
    /// name (a mailbox's message, PostMark's numbered files) is another file in the stamps.
    fn new_id(&self, path: &Path) -> u64 {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        iolab_verify::file_id(path) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(31)
    }

    /// The file at `path` as an opening finds it: `fresh` when the opening empties or creates
    /// it (its whole content is known from now on).
    fn open(&self, path: &Path, fresh: bool) -> Shared {
        let mut files = self.files();
        if !fresh {
            if let Some(c) = files.get(path) {
                return c.clone();
            }
        }
        let c = Arc::new(Mutex::new(Content::new(self.new_id(path), fresh)));
        files.insert(path.to_path_buf(), c.clone());
        c
    }

    /// `from` is now `to` (a file it replaces is gone).
    fn renamed(&self, from: &Path, to: &Path) {
        let mut files = self.files();
        match files.remove(from) {
            Some(c) => {
                files.insert(to.to_path_buf(), c);
            }
            None => {
                files.remove(to);
            }
        }
    }

    fn removed(&self, path: &Path) -> Option<Shared> {
        self.files().remove(path)
    }

    /// Read a file back and check it whole (`--verify-after`).
    fn check_file(&self, path: &Path, c: &Content) {
        let display = path.display().to_string();
        let read = iolab_engine::OpenOptions { read: true, ..Default::default() };
        let opened = match self.root.as_ref().and_then(|r| path.strip_prefix(r.root()).ok().map(|rel| (r, rel))) {
            Some((root, rel)) => root.open_file(rel, read),
            None => std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path),
        };
        let found = match opened.and_then(|f| c.check_file(&f)) {
            Ok((checked, found)) => {
                self.tally.checked(When::After, checked);
                found
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && c.size() > 0 => vec![(
                0,
                0,
                iolab_verify::Finding {
                    class: iolab_model::ErrorClass::LostWrite,
                    sector_offset: 0,
                    found_key: None,
                    found_time_ns: None,
                    writer: None,
                    detail: format!("the file is gone: {} bytes were written to it", c.size()),
                },
            )],
            Err(_) => Vec::new(),
        };
        for (s, k, f) in found {
            self.tally.found(&display, s, k, f, When::After);
        }
    }

    /// After the phase, with `--verify-after`: every file the job left, read back and checked.
    pub fn verify_after(&self) {
        if !self.after {
            return;
        }
        let mut left: Vec<(PathBuf, Shared)> = self.files().iter().map(|(p, c)| (p.clone(), c.clone())).collect();
        left.sort_by(|a, b| a.0.cmp(&b.0));
        for (p, c) in left {
            if self.tally.stopped() {
                break;
            }
            let c = lock(&c);
            self.check_file(&p, &c);
        }
    }
}

/// A file open in this worker's table.
struct OpenFile {
    content: Shared,
    path: Arc<Path>,
    /// The descriptor's position, when it is known.
    pos: Option<u64>,
    append: bool,
}

/// What an operation in flight needs on its completion.
enum Pending {
    Open { path: PathBuf, flags: OpenFlags },
    Rename { from: PathBuf, to: PathBuf },
    Unlink { path: PathBuf, content: Option<Shared> },
    Write { content: Shared, file_id: u64, offset: u64, len: u64, key: u8, at_pos: bool },
    Read { content: Shared, path: Arc<Path>, offset: u64, len: u64, version: u64, at_pos: bool },
    Truncate { content: Shared, len: u64 },
    Allocate { content: Shared, offset: u64, len: u64, mode: u32 },
    Seek,
    Other,
}

pub struct FilesValidating<S> {
    inner: S,
    set: Arc<FileSet>,
    stamper: Stamper,
    table: HashMap<u32, OpenFile>,
    inflight: VecDeque<(Call, Pending)>,
    time: StampTime,
    written: u64,
}

impl<S> Drop for FilesValidating<S> {
    fn drop(&mut self) {
        self.set.tally.wrote(self.written);
    }
}

impl<S: Source> FilesValidating<S> {
    pub fn new(inner: S, set: Arc<FileSet>, thread: u32) -> Self {
        let stamper = Stamper::new(0, iolab_verify::node_id(set.tally.node()), thread);
        FilesValidating {
            inner,
            set,
            stamper,
            table: HashMap::new(),
            inflight: VecDeque::new(),
            time: StampTime::new(),
            written: 0,
        }
    }

    fn place(&mut self, index: u32, path: &str) {
        let content = self.set.open(Path::new(path), false);
        self.table.insert(index, OpenFile { content, path: Path::new(path).into(), pos: Some(0), append: false });
    }

    /// What the call needs remembered until it completes (and, for a write, its key).
    fn pending(&mut self, call: &Call, ctx: &Ctx) -> Pending {
        match *call {
            Call::Open { name, flags, .. } => Pending::Open { path: ctx.names.path(name).to_path_buf(), flags },
            // Renames and removals are followed when they are issued, not when they complete:
            // another thread can only find the file under its new name (or not at all) after
            // the call, so its bookkeeping always comes after this thread's (a message renamed
            // into new/ and at once taken by a reader), and is put back if the call fails.
            Call::Rename { from, to } => {
                let (from, to) = (ctx.names.path(from).to_path_buf(), ctx.names.path(to).to_path_buf());
                self.set.renamed(&from, &to);
                Pending::Rename { from, to }
            }
            Call::Unlink { name } => {
                let path = ctx.names.path(name).to_path_buf();
                let content = self.set.removed(&path);
                Pending::Unlink { path, content }
            }
            Call::Data { kind, file, offset, len } => {
                let Some(f) = self.table.get_mut(&file) else { return Pending::Other };
                let at_pos =
                    matches!(kind, OpKind::ReadCur | OpKind::WriteCur | OpKind::ReadvCur(_) | OpKind::WritevCur(_));
                if kind.writes() {
                    let mut c = lock(&f.content);
                    let offset = match (at_pos, f.append, f.pos) {
                        (_, true, _) => c.size(),
                        (false, _, _) => offset,
                        (true, _, Some(p)) => p,
                        (true, _, None) => return Pending::Other,
                    };
                    let key = c.begin_write();
                    if at_pos || f.append {
                        f.pos = Some(offset + len as u64);
                    }
                    let file_id = c.file_id();
                    drop(c);
                    return Pending::Write {
                        content: f.content.clone(),
                        file_id,
                        offset,
                        len: len as u64,
                        key,
                        at_pos: at_pos || f.append,
                    };
                }
                if kind.reads() {
                    let offset = match (at_pos, f.pos) {
                        (false, _) => offset,
                        (true, Some(p)) => p,
                        (true, None) => return Pending::Other,
                    };
                    if at_pos {
                        f.pos = Some(offset + len as u64);
                    }
                    let version = lock(&f.content).version();
                    return Pending::Read {
                        content: f.content.clone(),
                        path: f.path.clone(),
                        offset,
                        len: len as u64,
                        version,
                        at_pos,
                    };
                }
                match kind {
                    OpKind::Seek(_) => Pending::Seek,
                    OpKind::Ftruncate => Pending::Truncate { content: f.content.clone(), len: offset },
                    OpKind::Fallocate { mode, len } => {
                        Pending::Allocate { content: f.content.clone(), offset, len, mode }
                    }
                    _ => Pending::Other,
                }
            }
            _ => Pending::Other,
        }
    }

    fn report(&self, path: &str, found: Vec<content::Found>, when: When) {
        for (s, k, f) in found {
            self.set.tally.found(path, s, k, f, when);
        }
    }
}

impl<S: Source> Source for FilesValidating<S> {
    fn buffer_len(&self) -> usize {
        self.inner.buffer_len()
    }
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        let files = self.inner.setup()?;
        for f in &files {
            self.place(f.index, &f.path);
        }
        Ok(files)
    }
    fn prime(&mut self, slot: u32, buf: &mut [u8]) {
        self.inner.prime(slot, buf)
    }
    fn start(&mut self, at: Stamp) {
        self.time.start(at);
        self.inner.start(at)
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        self.time.tick(ctx.now);
        if self.set.tally.stopped() {
            return if ctx.inflight > 0 { Next::Drain } else { Next::Done };
        }
        let next = self.inner.next(ctx);
        if let Next::Issue(Issue { call, .. }) = next {
            let p = self.pending(&call, ctx);
            if let (true, Pending::Unlink { path, content: Some(c) }) = (self.set.after, &p) {
                // --verify-after: the file is checked whole before it goes (taken out of the
                // set first, so that of several threads removing it one checks it).
                self.set.check_file(path, &lock(c));
            }
            self.inflight.push_back((call, p));
        }
        next
    }

    #[inline]
    fn fill(&mut self, call: &Call, buf: &mut [u8]) {
        let found = self.inflight.iter().rev().find(|(c, _)| c == call);
        let Some((Call::Data { len, .. }, Pending::Write { file_id, offset, key, .. })) = found else {
            return self.inner.fill(call, buf);
        };
        self.stamper.set_file(*file_id);
        let n = (*len as usize).min(buf.len());
        content::fill(&mut self.stamper, &mut buf[..n], *offset, *key, self.time.ns);
    }

    fn checks_reads(&self) -> bool {
        true
    }

    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        let pending = match self.inflight.iter().position(|(c, _)| c == call) {
            Some(i) => self.inflight.remove(i).map(|(_, p)| p).unwrap_or(Pending::Other),
            None => Pending::Other,
        };
        let ok = result.as_ref().ok().copied();
        let gone = matches!(result, Err(e) if e.kind() == io::ErrorKind::NotFound);
        match (pending, call) {
            (Pending::Open { path, flags }, Call::Open { file, .. }) if ok.is_some() => {
                let fresh = flags.truncate || (flags.create && flags.exclusive);
                let content = self.set.open(&path, fresh);
                self.table.insert(*file, OpenFile { content, path: path.into(), pos: Some(0), append: flags.append });
            }
            (_, Call::Close { file }) => {
                self.table.remove(file);
            }
            // A rename or removal that failed is undone, unless it failed for want of the file
            // (another thread removed it first: it is gone either way).
            (Pending::Rename { from, to }, _) if ok.is_none() => {
                if gone {
                    self.set.removed(&to);
                } else {
                    self.set.renamed(&to, &from)
                }
            }
            (Pending::Unlink { path, content: Some(c) }, _) if ok.is_none() && !gone => {
                self.set.files().entry(path).or_insert(c);
            }
            (Pending::Write { content, offset, len, key, at_pos, .. }, Call::Data { file, .. }) => {
                lock(&content).end_write(offset, len, key, ok.map(|n| n as u64));
                if let Some(n) = ok {
                    self.written += content::sectors(offset, n as u64);
                }
                if at_pos {
                    if let Some(f) = self.table.get_mut(file) {
                        f.pos = ok.map(|n| offset + n as u64);
                    }
                }
            }
            (Pending::Read { content, path, offset, len, version, at_pos }, Call::Data { file, .. }) => {
                if let Some(n) = ok {
                    let mut c = lock(&content);
                    if c.quiet_since(version) {
                        let (checked, found) = c.check(&buf[..n.min(buf.len())], offset, len);
                        self.set.tally.checked(When::During, checked);
                        for (s, _, _) in &found {
                            c.forget(*s, 512);
                        }
                        drop(c);
                        self.report(&path.display().to_string(), found, When::During);
                    }
                }
                if at_pos {
                    if let Some(f) = self.table.get_mut(file) {
                        f.pos = ok.map(|n| offset + n as u64);
                    }
                }
            }
            (Pending::Seek, Call::Data { file, .. }) => {
                if let Some(f) = self.table.get_mut(file) {
                    f.pos = ok.map(|p| p as u64);
                }
            }
            (Pending::Truncate { content, len }, _) if ok.is_some() => lock(&content).truncate(len),
            (Pending::Allocate { content, offset, len, mode }, _) if ok.is_some() => {
                // FALLOC_FL_KEEP_SIZE 1, PUNCH_HOLE 2, ZERO_RANGE 0x10.
                lock(&content).allocate(offset, len, mode & (0x2 | 0x10) != 0, mode & 0x1 != 0)
            }
            _ => {}
        }
        self.inner.completed(call, buf, result)
    }

    fn file_change(&mut self) -> Option<FileChange> {
        let ch = self.inner.file_change()?;
        match &ch {
            FileChange::Place(f) => self.place(f.index, &f.path),
            FileChange::Drop(i) => {
                self.table.remove(i);
            }
        }
        Some(ch)
    }

    fn opened(&mut self, file: u32, f: &std::fs::File) {
        self.inner.opened(file, f)
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        self.inner.figures()
    }

    fn hole_reads(&self) -> Option<(u64, u64)> {
        self.inner.hole_reads()
    }

    fn times_itself(&self) -> bool {
        self.inner.times_itself()
    }

    fn take_timings(&mut self, out: &mut dyn FnMut(OpClass, u64, u64)) {
        self.inner.take_timings(out)
    }
}
