//! strace text into the trace format, as a stream: lines are read one at a time (a line longer
//! than [`MAX_LINE`] is cut and counted bad), `<unfinished ...>` halves wait per thread for their
//! `<... resumed>`, fds resolve to per-opening file ids through per-process fd tables that follow
//! dup/dup2/dup3/fcntl(F_DUPFD), clone/fork and close, the working directory follows
//! chdir/fchdir, and `-ff` per-thread files are merged by timestamp. A thread's exit (`+++
//! exited`, `+++ killed`) writes its last operations and forgets it, a process's fd table goes
//! with its last thread, and the writer holds at most [`crate::format::MAX_PENDING`] operations
//! back: memory is bounded by the threads alive at once, their open files and the distinct names
//! (paths are remembered up to [`PATHS_KEPT`]), not by the text or the threads it has seen.

use crate::format::{oflags, Kind, Op, Record, Writer, NO_FILE, VERSION};
use crate::line::{self, Body};
use foldhash::HashMap;
use std::collections::BinaryHeap;
use std::io::{self, BufRead, Write};
use std::sync::Arc;

/// Longest line kept; the rest of a longer line is skipped and the line counted bad.
pub const MAX_LINE: usize = 1 << 20;
/// Bad lines kept with their text (all are counted).
pub const BAD_KEPT: usize = 50;
/// Distinct paths (unlink, rename, mkdir, failed opens) remembered to give one path one id;
/// past it the table starts afresh (a path named again then gets a new id, which is correct,
/// only larger).
pub const PATHS_KEPT: usize = 256 * 1024;

/// `CLONE_THREAD` in clone's flags (a finder built once: building one per call showed in the
/// profile of a fork-heavy trace).
static CLONE_THREAD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"CLONE_THREAD"));

/// A line that was not understood.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    pub source: String,
    pub line: u64,
    pub reason: String,
    /// The line's first 160 characters.
    pub text: String,
}

/// What an import saw.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Summary {
    pub lines: u64,
    pub bytes: u64,
    pub ops: u64,
    pub threads: usize,
    pub files: u32,
    pub bad_lines: u64,
    pub bad: Vec<BadLine>,
    /// Calls by name (every call seen, traced kinds and others).
    pub calls: Vec<(String, u64)>,
}

/// What an importer holds at a moment (its memory grows with these, not with the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Threads alive (seen and not exited).
    pub threads: usize,
    /// Processes with an fd table.
    pub processes: usize,
    /// Operations written to no chunk yet.
    pub ops: usize,
    /// Paths remembered for their ids.
    pub paths: usize,
}

/// Reads lines of at most [`MAX_LINE`] bytes: in place in the reader's buffer when the whole
/// line is there, else gathered in a buffer of its own.
pub struct Lines<R: BufRead> {
    r: R,
    buf: Vec<u8>,
    /// Bytes of the line last returned in place, consumed at the next call.
    used: usize,
    pub line_no: u64,
    pub bytes: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(r: R) -> Self {
        Lines { r, buf: Vec::with_capacity(512), used: 0, line_no: 0, bytes: 0 }
    }

    /// The next line (without its newline) and whether it was cut; `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<(&[u8], bool)>> {
        self.r.consume(std::mem::take(&mut self.used));
        let whole = loop {
            match self.r.fill_buf() {
                Ok(a) => break memchr::memchr(b'\n', a).filter(|&i| i < MAX_LINE),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if let Some(i) = whole {
            self.used = i + 1;
            self.bytes += self.used as u64;
            self.line_no += 1;
            // The same buffer again: nothing was consumed since.
            return Ok(Some((&self.r.fill_buf()?[..i], false)));
        }
        self.buf.clear();
        let mut cut = false;
        let mut any = false;
        loop {
            let avail = match self.r.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            let room = MAX_LINE.saturating_sub(self.buf.len());
            if take > room {
                cut = true;
            }
            self.buf.extend_from_slice(&avail[..take.min(room)]);
            self.r.consume(take);
            self.bytes += take as u64;
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        Ok(Some((&self.buf, cut)))
    }
}

/// A line as text: borrowed when it is UTF-8 (strace escapes the rest), else with
/// replacement characters.
fn text_of(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

struct Pending {
    name: String,
    args: String,
    time_ns: Option<u64>,
}

#[derive(Clone)]
struct FdEntry {
    file: u32,
    /// The raw `-y` path it was seen with (to notice an fd reused behind our back).
    raw: Box<str>,
}

/// A process (thread group) the importer knows: its threads alive, its fd table (once it has
/// one) and its working directory (once known). One table entry per process: a fork-heavy
/// trace creates and forgets one for every process, and one look-up beats three.
#[derive(Default)]
struct Proc {
    live: u32,
    fds: Option<HashMap<i64, FdEntry>>,
    /// Shared: processes mostly have their parent's, or the same as the last one set.
    cwd: Option<Arc<str>>,
}

/// The conversion state.
pub struct Importer<W: Write> {
    w: Writer<W>,
    pending: HashMap<u32, Pending>,
    /// Threads alive: tid → tgid.
    tgid: HashMap<u32, u32>,
    /// The last answer of `tgid`, for the next line of the same thread.
    last_tgid: Option<(u32, u32)>,
    threads_seen: usize,
    procs: HashMap<u32, Proc>,
    /// Processes with an fd table.
    fd_tables: usize,
    /// The cwd set last, shared with the next process that has the same.
    last_cwd: Option<Arc<str>>,
    refs: HashMap<u32, u32>,
    next_file: u32,
    path_ids: HashMap<String, u32>,
    next_path: u32,
    names: HashMap<Box<str>, u32>,
    calls: HashMap<Box<str>, u64>,
    first_ns: Option<u64>,
    last_ns: u64,
    bad_lines: u64,
    bad: Vec<BadLine>,
    lines: u64,
    bytes: u64,
    ops: u64,
}

fn regular(path: &str) -> bool {
    path.starts_with('/') && !["/dev/", "/proc/", "/sys/"].iter().any(|p| path.starts_with(p))
}

/// An absolute path with `.` and `..` taken out lexically (`/a/b/../c` is `/a/c`), as a
/// relative name joined to the cwd would be resolved without links.
fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

fn whence(s: &str) -> u32 {
    match s.trim() {
        "SEEK_SET" => 0,
        "SEEK_CUR" => 1,
        "SEEK_END" => 2,
        "SEEK_DATA" => 3,
        "SEEK_HOLE" => 4,
        other => line::parse_int(other).unwrap_or(0) as u32,
    }
}

fn symbolic(s: &str, table: &[(&str, u32)]) -> u32 {
    s.split('|')
        .map(|p| {
            let p = p.trim();
            table
                .iter()
                .find(|(n, _)| *n == p)
                .map(|&(_, v)| v)
                .or_else(|| line::parse_int(p).map(|v| v as u32))
                .unwrap_or(0)
        })
        .fold(0, |a, b| a | b)
}

const FALLOC: &[(&str, u32)] = &[
    ("FALLOC_FL_KEEP_SIZE", 1),
    ("FALLOC_FL_PUNCH_HOLE", 2),
    ("FALLOC_FL_NO_HIDE_STALE", 4),
    ("FALLOC_FL_COLLAPSE_RANGE", 8),
    ("FALLOC_FL_ZERO_RANGE", 0x10),
    ("FALLOC_FL_INSERT_RANGE", 0x20),
    ("FALLOC_FL_UNSHARE_RANGE", 0x40),
];
const SFR: &[(&str, u32)] =
    &[("SYNC_FILE_RANGE_WAIT_BEFORE", 1), ("SYNC_FILE_RANGE_WRITE", 2), ("SYNC_FILE_RANGE_WAIT_AFTER", 4)];

/// The sum of `iov_len=N` in an iovec argument.
fn iov_bytes(s: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    let mut rest = s;
    while let Some(i) = rest.find("iov_len=") {
        rest = &rest[i + 8..];
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        total = total.saturating_add(rest[..n].parse::<u64>().ok()?);
        any = true;
    }
    any.then_some(total)
}

impl<W: Write> Importer<W> {
    pub fn new(out: W, source: &str) -> io::Result<Self> {
        let mut w = Writer::new(out)?;
        w.record(&Record::Header { version: VERSION, source: source.to_string(), epoch_ns: 0 })?;
        Ok(Importer {
            w,
            pending: HashMap::default(),
            tgid: HashMap::default(),
            last_tgid: None,
            threads_seen: 0,
            procs: HashMap::default(),
            fd_tables: 0,
            last_cwd: None,
            refs: HashMap::default(),
            next_file: 0,
            path_ids: HashMap::default(),
            next_path: 0,
            names: HashMap::default(),
            calls: HashMap::default(),
            first_ns: None,
            last_ns: 0,
            bad_lines: 0,
            bad: Vec::new(),
            lines: 0,
            bytes: 0,
            ops: 0,
        })
    }

    /// What the importer holds now.
    pub fn held(&self) -> Held {
        Held { threads: self.tgid.len(), processes: self.fd_tables, ops: self.w.held(), paths: self.path_ids.len() }
    }

    fn bad(&mut self, source: &str, line: u64, reason: &str, text: &str) {
        self.bad_lines += 1;
        if self.bad.len() < BAD_KEPT {
            self.bad.push(BadLine {
                source: source.to_string(),
                line,
                reason: reason.to_string(),
                text: text.chars().take(160).collect(),
            });
        }
    }

    /// Import one whole strace output (`-f` into one file, or a single process). `tid` is the
    /// thread of lines without a pid prefix (a `-ff` file's suffix), if known.
    pub fn read_file<R: BufRead>(&mut self, r: R, source: &str, tid: Option<u32>) -> io::Result<()> {
        let mut lines = Lines::new(r);
        loop {
            let n = lines.line_no + 1;
            let Some((raw, cut)) = lines.next_line()? else { break };
            let text = text_of(raw);
            if cut {
                self.bad(source, n, "a line longer than 1 MiB (cut)", &text);
                continue;
            }
            self.line(&text, source, n, tid);
        }
        self.lines += lines.line_no;
        self.bytes += lines.bytes;
        Ok(())
    }

    /// Import `-ff` per-thread files, merged by timestamp. Each reader comes with its name and
    /// the tid its lines belong to.
    pub fn read_merged<R: BufRead>(&mut self, inputs: Vec<(R, String, Option<u32>)>) -> io::Result<()> {
        struct In<R: BufRead> {
            lines: Lines<R>,
            name: String,
            tid: Option<u32>,
            cur: Option<(String, bool, u64)>,
        }
        let mut ins: Vec<In<R>> =
            inputs.into_iter().map(|(r, name, tid)| In { lines: Lines::new(r), name, tid, cur: None }).collect();
        // (Reverse(time), Reverse(index)): earliest first, then by file order.
        let mut heap = BinaryHeap::new();
        let advance = |i: &mut In<R>| -> io::Result<Option<u64>> {
            match i.lines.next_line()? {
                Some((raw, cut)) => {
                    let s = text_of(raw).into_owned();
                    let t = line::parse(&s).ok().and_then(|l| l.time_ns).unwrap_or(0);
                    i.cur = Some((s, cut, i.lines.line_no));
                    Ok(Some(t))
                }
                None => {
                    i.cur = None;
                    Ok(None)
                }
            }
        };
        for (k, i) in ins.iter_mut().enumerate() {
            if let Some(t) = advance(i)? {
                heap.push(std::cmp::Reverse((t, k)));
            }
        }
        while let Some(std::cmp::Reverse((_, k))) = heap.pop() {
            let Some(i) = ins.get_mut(k) else { continue };
            if let Some((s, cut, n)) = i.cur.take() {
                let (name, tid) = (i.name.clone(), i.tid);
                if cut {
                    self.bad(&name, n, "a line longer than 1 MiB (cut)", &s);
                } else {
                    self.line(&s, &name, n, tid);
                }
            }
            let i = &mut ins[k];
            if let Some(t) = advance(i)? {
                heap.push(std::cmp::Reverse((t, k)));
            }
        }
        for i in &ins {
            self.lines += i.lines.line_no;
            self.bytes += i.lines.bytes;
        }
        Ok(())
    }

    /// One line of text.
    pub fn line(&mut self, text: &str, source: &str, n: u64, tid: Option<u32>) {
        if line::trim(text).is_empty() {
            return;
        }
        let l = match line::parse(text) {
            Ok(l) => l,
            Err(why) => return self.bad(source, n, why, text),
        };
        let pid = l.pid.or(tid).unwrap_or(0);
        match l.body {
            Body::Signal => {}
            Body::Exit => self.exited(pid, source, n, text),
            Body::Unfinished { name, args } => {
                let old = self
                    .pending
                    .insert(pid, Pending { name: name.to_string(), args: args.to_string(), time_ns: l.time_ns });
                if let Some(old) = old {
                    self.bad(source, n, "a call began before the thread's unfinished call resumed", &old.name);
                }
            }
            Body::Resumed { name, rest, ret } => {
                let Some(p) = self.pending.remove(&pid) else {
                    return self.bad(source, n, "a resumed call whose start is not in the trace", text);
                };
                if p.name != name {
                    return self.bad(source, n, "a resumed call that is not the thread's unfinished one", text);
                }
                let mut args = p.args;
                args.push_str(rest);
                self.call(pid, p.time_ns, l.dur_ns, name, &args, ret, source, n, text);
            }
            Body::Call { name, args, ret } => self.call(pid, l.time_ns, l.dur_ns, name, args, ret, source, n, text),
        }
    }

    fn tgid_of(&mut self, tid: u32) -> u32 {
        if let Some((t, g)) = self.last_tgid {
            if t == tid {
                return g;
            }
        }
        let g = match self.tgid.get(&tid) {
            Some(&g) => g,
            None => {
                self.tgid.insert(tid, tid);
                self.procs.entry(tid).or_default().live += 1;
                self.threads_seen += 1;
                tid
            }
        };
        self.last_tgid = Some((tid, g));
        g
    }

    /// `tid` belongs to process `tgid` (a clone with CLONE_THREAD, or a new process).
    fn set_tgid(&mut self, tid: u32, tgid: u32) {
        self.last_tgid = None;
        match self.tgid.insert(tid, tgid) {
            Some(old) if old == tgid => return,
            Some(old) => self.leave_process(old),
            None => self.threads_seen += 1,
        }
        self.procs.entry(tgid).or_default().live += 1;
    }

    /// A thread of `tgid` is gone; with the last, the process's fd table and cwd go too.
    fn leave_process(&mut self, tgid: u32) {
        match self.procs.get_mut(&tgid) {
            Some(p) if p.live > 1 => {
                p.live -= 1;
                return;
            }
            _ => {}
        }
        if let Some(t) = self.procs.remove(&tgid).and_then(|p| p.fds) {
            self.fd_tables -= 1;
            for e in t.into_values() {
                self.unref(e.file);
            }
        }
    }

    /// `+++ exited` / `+++ killed`: a call the thread left unfinished never returned; its last
    /// operations are written and the thread forgotten.
    fn exited(&mut self, tid: u32, source: &str, n: u64, text: &str) {
        if let Some(p) = self.pending.remove(&tid) {
            self.call(tid, p.time_ns, None, &p.name, &p.args, "?", source, n, text);
        }
        self.last_tgid = None;
        let Some(tgid) = self.tgid.remove(&tid) else { return };
        if let Err(e) = self.w.flush_thread(tid).and_then(|_| self.w.record(&Record::Thread { tid, tgid })) {
            self.bad(source, n, &format!("cannot write the trace: {e}"), text);
        }
        self.leave_process(tgid);
    }

    fn name_id(&mut self, name: &str) -> io::Result<u32> {
        if let Some(&id) = self.names.get(name) {
            return Ok(id);
        }
        let id = self.names.len() as u32;
        self.names.insert(name.into(), id);
        self.w.record(&Record::Name { id, name: name.to_string() })?;
        Ok(id)
    }

    fn path_id(&mut self, path: String) -> io::Result<u32> {
        if let Some(&id) = self.path_ids.get(&path) {
            return Ok(id);
        }
        if self.path_ids.len() >= PATHS_KEPT {
            self.path_ids.clear();
        }
        let id = self.next_path;
        self.next_path += 1;
        self.w.record(&Record::Path { id, path: path.clone() })?;
        self.path_ids.insert(path, id);
        Ok(id)
    }

    /// A path argument made absolute against its dirfd (or the cwd) where that is known.
    fn resolve(&self, tgid: u32, dir: Option<&str>, quoted: &str) -> Option<String> {
        let p = line::unquote(quoted)?;
        if p.starts_with('/') {
            return Some(p);
        }
        let base = match dir.and_then(line::parse_fd) {
            Some(f) if f.fd.is_some() => f.path.map(line::unescape),
            Some(f) => f.path.map(line::unescape).or_else(|| self.cwd(tgid).map(str::to_string)),
            None => self.cwd(tgid).map(str::to_string),
        };
        Some(match base {
            Some(b) => normalize(&format!("{}/{}", b.trim_end_matches('/'), p)),
            None => p,
        })
    }

    fn new_file(&mut self, path: String, flags: u32, before: bool) -> io::Result<u32> {
        let id = self.next_file;
        self.next_file += 1;
        let reg = regular(&path);
        self.w.record(&Record::File { id, path, flags, before, regular: reg })?;
        Ok(id)
    }

    fn cwd(&self, tgid: u32) -> Option<&str> {
        self.procs.get(&tgid).and_then(|p| p.cwd.as_deref())
    }

    /// Set a process's cwd, sharing the last one set when it is the same text.
    fn set_cwd(&mut self, tgid: u32, cwd: &str) {
        let cwd = match &self.last_cwd {
            Some(last) if **last == *cwd => last.clone(),
            _ => {
                let new: Arc<str> = cwd.into();
                self.last_cwd = Some(new.clone());
                new
            }
        };
        self.procs.entry(tgid).or_default().cwd = Some(cwd);
    }

    fn set_fd(&mut self, tgid: u32, fd: i64, e: FdEntry) {
        *self.refs.entry(e.file).or_insert(0) += 1;
        let p = self.procs.entry(tgid).or_default();
        let t = p.fds.get_or_insert_with(|| {
            self.fd_tables += 1;
            HashMap::default()
        });
        if let Some(old) = t.insert(fd, e) {
            self.unref(old.file);
        }
    }

    fn unref(&mut self, file: u32) -> u32 {
        match self.refs.get_mut(&file) {
            Some(r) if *r > 1 => {
                *r -= 1;
                *r
            }
            _ => {
                self.refs.remove(&file);
                0
            }
        }
    }

    /// The file id behind an fd argument, registering an opening made before the trace.
    fn file_of(&mut self, tgid: u32, arg: &str) -> io::Result<u32> {
        let Some(f) = line::parse_fd(arg) else { return Ok(NO_FILE) };
        let Some(fd) = f.fd else { return Ok(NO_FILE) };
        let raw = f.path.unwrap_or("");
        if let Some(e) = self.procs.get(&tgid).and_then(|p| p.fds.as_ref()).and_then(|t| t.get(&fd)) {
            if raw.is_empty() || *e.raw == *raw {
                return Ok(e.file);
            }
        }
        let path = if raw.is_empty() { format!("fd:{fd}") } else { line::unescape(raw) };
        let id = self.new_file(path, 0, true)?;
        self.set_fd(tgid, fd, FdEntry { file: id, raw: raw.into() });
        Ok(id)
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        tid: u32,
        time_ns: Option<u64>,
        dur_ns: Option<u64>,
        name: &str,
        args: &str,
        ret: &str,
        source: &str,
        n: u64,
        text: &str,
    ) {
        if let Err(e) = self.call_inner(tid, time_ns, dur_ns, name, args, ret) {
            self.bad(source, n, &format!("cannot write the trace: {e}"), text);
        }
    }

    fn call_inner(
        &mut self,
        tid: u32,
        time_ns: Option<u64>,
        dur_ns: Option<u64>,
        name: &str,
        args: &str,
        ret: &str,
    ) -> io::Result<()> {
        match self.calls.get_mut(name) {
            Some(c) => *c += 1,
            None => {
                self.calls.insert(name.into(), 1);
            }
        }
        let t = time_ns.unwrap_or(0);
        let first = *self.first_ns.get_or_insert(t);
        self.last_ns = self.last_ns.max(t.saturating_add(dur_ns.unwrap_or(0)));
        let r = line::parse_ret(ret);
        let c = Call {
            name,
            args,
            result: r.value.unwrap_or(i64::MIN),
            ok: r.value.is_some_and(|v| v >= 0),
            a: line::first_args(args),
            r,
            tgid: self.tgid_of(tid),
        };
        // The cwd that -y shows for AT_FDCWD is the process's, now.
        if c.arg(0).starts_with("AT_FDCWD<") {
            if let Some(p) = line::parse_fd(c.arg(0)).and_then(|f| f.path) {
                let p = line::unescape_cow(p);
                if self.cwd(c.tgid) != Some(&*p) {
                    self.set_cwd(c.tgid, &p);
                }
            }
        }
        let mut op = Op {
            start_ns: t.saturating_sub(first),
            dur_ns: dur_ns.unwrap_or(0),
            kind: Kind::Other(0),
            file: NO_FILE,
            offset: 0,
            size: 0,
            count: 0,
            flags: 0,
            result: c.result,
        };
        match name {
            "open" | "openat" | "creat" | "openat2" => self.open_call(&c, &mut op)?,
            "close" => self.close_call(&c, &mut op)?,
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => self.dup_call(&c, &mut op)?,
            "read" | "write" | "pread64" | "pwrite64" | "readv" | "writev" | "preadv" | "pwritev" | "preadv2"
            | "pwritev2" => self.data_call(&c, &mut op)?,
            "lseek" | "_llseek" | "fsync" | "fdatasync" | "sync_file_range" | "sync_file_range2" | "ftruncate"
            | "ftruncate64" | "fallocate" => self.fd_call(&c, &mut op)?,
            "chdir" | "fchdir" => self.chdir_call(&c, &mut op)?,
            "unlink" | "unlinkat" | "mkdir" | "mkdirat" | "rename" | "renameat" | "renameat2" => {
                self.name_call(&c, &mut op)?
            }
            "clone" | "clone3" | "fork" | "vfork" => self.clone_call(&c, &mut op)?,
            "execve" | "execveat" => {
                op.kind = Kind::Other(self.name_id(name)?);
                if c.ok {
                    // O_CLOEXEC fds close here; which ones is not in the trace, so keep all.
                    if let Some(p) = self.procs.get_mut(&c.tgid) {
                        p.cwd = None;
                    }
                }
            }
            other => op.kind = Kind::Other(self.name_id(other)?),
        }
        self.ops += 1;
        self.w.op(tid, op)
    }

    /// open, openat, creat, openat2: a new opening of a path.
    fn open_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        let (dir, path, flags) = match c.name {
            "open" => (None, c.arg(0), oflags::parse(c.arg(1))),
            "creat" => (None, c.arg(0), oflags::O_CREAT | oflags::O_WRONLY | oflags::O_TRUNC),
            "openat2" => {
                let how = c.arg(2);
                let f = how
                    .split_once("flags=")
                    .map(|(_, r)| r.split([',', '}']).next().unwrap_or(""))
                    .map(oflags::parse)
                    .unwrap_or(0);
                (Some(c.arg(0)), c.arg(1), f)
            }
            _ => (Some(c.arg(0)), c.arg(1), oflags::parse(c.arg(2))),
        };
        op.kind = Kind::Open;
        op.flags = flags;
        // The path as opened is needed only where `-y` does not show the result's.
        if c.ok {
            let p = match c.r.path {
                Some(p) => line::unescape(p),
                None => self.resolve(c.tgid, dir, path).unwrap_or_default(),
            };
            let id = self.new_file(p, flags, false)?;
            self.set_fd(c.tgid, c.result, FdEntry { file: id, raw: c.r.path.unwrap_or("").into() });
            op.file = id;
        } else {
            let resolved = self.resolve(c.tgid, dir, path).unwrap_or_default();
            op.offset = u64::from(self.path_id(resolved)?);
        }
        Ok(())
    }

    /// close: the descriptor leaves the table; `count` says how many references the opening keeps.
    fn close_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.kind = Kind::Close;
        if let Some(fd) = line::parse_fd(c.arg(0)).and_then(|f| f.fd) {
            op.file = self.file_of(c.tgid, c.arg(0))?;
            if c.ok {
                let t = self.procs.get_mut(&c.tgid).and_then(|p| p.fds.as_mut());
                if let Some(e) = t.and_then(|t| t.remove(&fd)) {
                    op.count = self.unref(e.file);
                }
            }
        }
        Ok(())
    }

    /// dup, dup2, dup3, fcntl(F_DUPFD): a second descriptor for the same opening.
    fn dup_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.kind = Kind::Other(self.name_id(c.name)?);
        let dups = c.name != "fcntl" && c.name != "fcntl64" || matches!(c.arg(1), "F_DUPFD" | "F_DUPFD_CLOEXEC");
        if dups && c.ok {
            let id = self.file_of(c.tgid, c.arg(0))?;
            op.file = id;
            if id != NO_FILE {
                let raw = line::parse_fd(c.arg(0)).and_then(|f| f.path).unwrap_or("");
                self.set_fd(c.tgid, c.result, FdEntry { file: id, raw: c.r.path.unwrap_or(raw).into() });
            }
        }
        Ok(())
    }

    /// The data calls: read, write, their positioned and vectored forms.
    fn data_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.kind = match c.name {
            "read" => Kind::Read,
            "write" => Kind::Write,
            "pread64" => Kind::Pread,
            "pwrite64" => Kind::Pwrite,
            "readv" => Kind::Readv,
            "writev" => Kind::Writev,
            "preadv" | "preadv2" => Kind::Preadv,
            _ => Kind::Pwritev,
        };
        op.file = self.file_of(c.tgid, c.arg(0))?;
        match op.kind {
            Kind::Read | Kind::Write | Kind::Pread | Kind::Pwrite => op.size = c.num(2) as u64,
            _ => {
                op.count = c.num(2) as u32;
                op.size = iov_bytes(c.arg(1)).unwrap_or(c.result.max(0) as u64);
            }
        }
        if matches!(op.kind, Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev) {
            op.offset = c.num(3) as u64;
        }
        Ok(())
    }

    /// The other calls on a descriptor: seeks, syncs, ftruncate, fallocate.
    fn fd_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.file = self.file_of(c.tgid, c.arg(0))?;
        match c.name {
            "lseek" => {
                op.kind = Kind::Lseek;
                op.offset = c.num(1) as u64;
                op.count = whence(c.arg(2));
            }
            // `_llseek(fd, offset, [result], whence) = 0`: the new offset is in the brackets.
            "_llseek" => {
                op.kind = Kind::Lseek;
                op.offset = c.num(1) as u64;
                op.count = whence(c.arg(3));
                if c.ok {
                    op.result = line::parse_int(c.arg(2).trim_start_matches('[').trim_end_matches(']')).unwrap_or(-1);
                }
            }
            "fsync" => op.kind = Kind::Fsync,
            "fdatasync" => op.kind = Kind::Fdatasync,
            "sync_file_range" | "sync_file_range2" => {
                op.kind = Kind::SyncFileRange;
                op.offset = c.num(1) as u64;
                op.size = c.num(2) as u64;
                op.flags = symbolic(c.arg(3), SFR);
            }
            "fallocate" => {
                op.kind = Kind::Fallocate;
                op.flags = symbolic(c.arg(1), FALLOC);
                op.offset = c.num(2) as u64;
                op.size = c.num(3) as u64;
            }
            _ => {
                op.kind = Kind::Ftruncate;
                op.offset = c.num(1) as u64;
            }
        }
        Ok(())
    }

    /// chdir, fchdir: the process's cwd, which later relative paths resolve against.
    fn chdir_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.kind = Kind::Other(self.name_id(c.name)?);
        if !c.ok {
            return Ok(());
        }
        if c.name == "chdir" {
            if let Some(p) = self.resolve(c.tgid, None, c.arg(0)) {
                self.set_cwd(c.tgid, &p);
            }
        } else if let Some(p) = line::parse_fd(c.arg(0)).and_then(|f| f.path) {
            self.set_cwd(c.tgid, &line::unescape_cow(p));
        }
        Ok(())
    }

    /// The namespace calls: unlink, mkdir, rename (and their `at` forms), by path.
    fn name_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        let (name, tgid) = (c.name, c.tgid);
        if name.starts_with("rename") {
            op.kind = Kind::Rename;
            let (from, to) = if name == "rename" {
                (self.resolve(tgid, None, c.arg(0)), self.resolve(tgid, None, c.arg(1)))
            } else {
                (self.resolve(tgid, Some(c.arg(0)), c.arg(1)), self.resolve(tgid, Some(c.arg(2)), c.arg(3)))
            };
            op.file = self.path_id(from.unwrap_or_default())?;
            op.offset = u64::from(self.path_id(to.unwrap_or_default())?);
            return Ok(());
        }
        op.kind = if name.starts_with("unlink") { Kind::Unlink } else { Kind::Mkdir };
        let p = if name.ends_with("at") {
            if name == "unlinkat" && c.arg(2).contains("AT_REMOVEDIR") {
                op.flags = 0x200;
            }
            self.resolve(tgid, Some(c.arg(0)), c.arg(1))
        } else {
            self.resolve(tgid, None, c.arg(0))
        };
        op.file = self.path_id(p.unwrap_or_default())?;
        Ok(())
    }

    /// clone, clone3, fork, vfork: a thread joins its process; a process gets copies of its
    /// parent's fd table and cwd.
    fn clone_call(&mut self, c: &Call<'_>, op: &mut Op) -> io::Result<()> {
        op.kind = Kind::Other(self.name_id(c.name)?);
        if !(c.ok && c.result > 0) {
            return Ok(());
        }
        let (child, tgid) = (c.result as u32, c.tgid);
        if CLONE_THREAD.find(c.args.as_bytes()).is_some() {
            self.set_tgid(child, tgid);
            return Ok(());
        }
        self.set_tgid(child, child);
        let parent = self.procs.get(&tgid).map(|p| (p.fds.clone(), p.cwd.clone()));
        let (fds, cwd) = parent.unwrap_or_default();
        if let Some(t) = fds {
            for e in t.values() {
                *self.refs.entry(e.file).or_insert(0) += 1;
            }
            let c = self.procs.entry(child).or_default();
            if c.fds.replace(t).is_none() {
                self.fd_tables += 1;
            }
        }
        if let Some(cwd) = cwd {
            self.procs.entry(child).or_default().cwd = Some(cwd);
        }
        Ok(())
    }

    /// Finish the trace: thread records, the last chunks, the end record.
    pub fn finish(mut self) -> io::Result<(W, Summary)> {
        // Calls still unfinished when the trace ends (a recording stopped, a process killed)
        // never returned within it: kept as such (result `i64::MIN`), not as bad lines.
        let mut left: Vec<(u32, Pending)> = self.pending.drain().collect();
        left.sort_by_key(|(p, _)| *p);
        for (pid, p) in left {
            self.call(pid, p.time_ns, None, &p.name, &p.args, "?", "(end)", 0, &p.name);
        }
        let mut tids: Vec<(u32, u32)> = self.tgid.iter().map(|(&t, &g)| (t, g)).collect();
        tids.sort_unstable();
        for &(tid, tgid) in &tids {
            self.w.record(&Record::Thread { tid, tgid })?;
        }
        let first = self.first_ns.unwrap_or(0);
        let mut calls: Vec<(String, u64)> = self.calls.iter().map(|(k, &v)| (k.to_string(), v)).collect();
        calls.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let summary = Summary {
            lines: self.lines,
            bytes: self.bytes,
            ops: self.ops,
            threads: self.threads_seen,
            files: self.next_file,
            bad_lines: self.bad_lines,
            bad: std::mem::take(&mut self.bad),
            calls,
        };
        let w = self.w.finish(self.bad_lines, 0, self.last_ns.saturating_sub(first))?;
        Ok((w, summary))
    }
}

/// One system call's line, taken apart once for the call's handler.
struct Call<'a> {
    name: &'a str,
    /// The arguments as strace wrote them.
    args: &'a str,
    a: line::Args<'a>,
    r: line::Ret<'a>,
    /// The return value (`i64::MIN`: the call did not return).
    result: i64,
    /// It returned, and not an error.
    ok: bool,
    /// The calling thread's process.
    tgid: u32,
}

impl<'a> Call<'a> {
    fn arg(&self, i: usize) -> &'a str {
        self.a.get(i)
    }

    fn num(&self, i: usize) -> i64 {
        line::parse_int(self.arg(i)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines come out the same whether the reader's buffer holds them whole (read in place) or
    /// cuts them anywhere (gathered), with and without a last newline, and a line past
    /// [`MAX_LINE`] is cut either way.
    #[test]
    fn lines_in_place_or_gathered() {
        let mut text = b"1 a(b) = 0\n\n22 long line here\r\nno newline at the end".to_vec();
        let long = vec![b'x'; MAX_LINE + 10];
        let mut with_long = text.clone();
        with_long.push(b'\n');
        with_long.extend_from_slice(&long);
        with_long.extend_from_slice(b"\nafter\n");
        text.push(b'\n');
        for input in [&text[..], &with_long[..]] {
            let all = |mut l: Lines<&mut dyn BufRead>| {
                let mut out = Vec::new();
                while let Some((line, cut)) = l.next_line().unwrap() {
                    out.push((line.to_vec(), cut));
                }
                (out, l.line_no, l.bytes)
            };
            let mut whole = input;
            let want = all(Lines::new(&mut whole));
            assert_eq!(want.2, input.len() as u64);
            for cap in [1, 2, 3, 7, 11, 64, 1 << 16, MAX_LINE, MAX_LINE + 1] {
                let mut r = io::BufReader::with_capacity(cap, input);
                assert_eq!(all(Lines::new(&mut r)), want, "buffer of {cap}");
            }
        }
        let mut r = &with_long[..];
        let (lines, _, _) = {
            let mut l = Lines::new(&mut r as &mut dyn BufRead);
            let mut out = Vec::new();
            while let Some((line, cut)) = l.next_line().unwrap() {
                out.push((line.len(), cut));
            }
            (out, l.line_no, l.bytes)
        };
        assert_eq!(lines, vec![(10, false), (0, false), (18, false), (21, false), (MAX_LINE, true), (5, false)]);
    }
}
