//! Mail delivery into maildirs, one delivering thread per source: each message is created in
//! a mailbox's tmp/ (O_CREAT|O_EXCL), written, fsynced, closed, renamed into new/ and, when
//! asked, new/ is fsynced; only then is it counted as delivered, so a run stopped at any
//! instant (Ctrl-C, SIGKILL) leaves no message only in tmp/ that it counted. Each thread
//! delivers into mailboxes of its own, in a directory `iolab.<job>.<thread>` it creates; at the
//! end it removes the messages it delivered and its directories.

use super::{describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, Source};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_spec::MaildirJob;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io;
use std::path::PathBuf;

const FILE: u32 = 0;
/// The largest write: a message goes out in writes of at most this.
const CHUNK: u32 = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Begin,
    Write { left: u64 },
    Fsync,
    Close,
    Rename,
    DirSync,
    Cleanup(usize),
    RemoveDirs(usize),
    Done,
}

/// A delivered message: its mailbox, sequence number and size.
#[derive(Debug, Clone, Copy)]
struct Message {
    mailbox: u32,
    seq: u64,
    size: u64,
}

pub struct Maildir {
    m: MaildirJob,
    root: PathBuf,
    dir: String,
    thread: u32,
    rng: Xoshiro256PlusPlus,
    step: Step,
    current: Message,
    delivered: Vec<Message>,
    started: Option<Stamp>,
    last: Option<Stamp>,
    after_discard: u64,
    bytes: u64,
    ids: Option<(NameId, NameId, NameId)>,
    dirs: Vec<String>,
    seq: u64,
    swept: bool,
    leftovers: Vec<String>,
    /// The message's last call (rename, or new/'s fsync) was issued; asked for the next call,
    /// the source knows it completed and counts the message.
    finishing: bool,
}

impl Maildir {
    pub fn new(job: &str, m: &MaildirJob, seed: u64, thread: u32, root: PathBuf) -> Maildir {
        Maildir {
            m: m.clone(),
            root,
            dir: format!("iolab.{job}.{thread}"),
            thread,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ (0x6d61_696c << 16) ^ thread as u64),
            step: Step::Begin,
            current: Message { mailbox: 0, seq: 0, size: 0 },
            delivered: Vec::new(),
            started: None,
            last: None,
            after_discard: 0,
            bytes: 0,
            ids: None,
            dirs: Vec::new(),
            seq: 0,
            finishing: false,
            swept: false,
            leftovers: Vec::new(),
        }
    }

    /// A message's file name: unique in its mailbox, with its size (maildir's `S=`).
    fn file(&self, m: &Message) -> String {
        format!("{}.T{}.iolab,S={}", m.seq, self.thread, m.size)
    }

    fn in_box(&self, mailbox: u32, sub: &str, m: Option<&Message>) -> String {
        match m {
            Some(m) => format!("{}/box{mailbox}/{sub}/{}", self.dir, self.file(m)),
            None => format!("{}/box{mailbox}/{sub}", self.dir),
        }
    }

    fn delivered_now(&mut self, now: Stamp) {
        self.delivered.push(self.current);
        self.bytes += self.current.size;
        self.last = Some(now);
        if let Some(s) = self.started {
            if now.saturating_duration_since(s) >= self.m.discard {
                self.after_discard += 1;
            }
        }
    }

    fn set(&self, ctx: &mut Ctx, id: NameId, rel: &str) -> bool {
        ctx.names.reuse(id, rel).is_ok()
    }
}

/// messages_per_min from summed counts and the longest thread's measured seconds.
pub fn derive_rates(f: &mut std::collections::BTreeMap<String, f64>) {
    let g = |f: &std::collections::BTreeMap<String, f64>, k: &str| f.get(k).copied().unwrap_or(0.0);
    let measured = g(f, "measured_s");
    let rate = if measured > 0.0 { g(f, "messages_after_discard") / measured * 60.0 } else { 0.0 };
    let el = g(f, "elapsed_s");
    let per_s = if el > 0.0 { g(f, "messages") / el } else { 0.0 };
    f.insert("messages_per_min".into(), rate);
    f.insert("messages_per_s".into(), per_s);
}

impl Source for Maildir {
    fn buffer_len(&self) -> usize {
        (self.m.max_size.0.clamp(1, CHUNK as u64)) as usize
    }

    /// The mailboxes (box*/tmp, new, cur) are made before the start, untimed, in a directory
    /// that must not exist yet.
    fn setup(&mut self) -> Result<Vec<super::SetupFile>, String> {
        let top = self.root.join(&self.dir);
        std::fs::create_dir(&top).map_err(|e| {
            format!(
                "creating {}: {e} (a directory left by an interrupted run? remove it or choose another job name)",
                top.display()
            )
        })?;
        self.dirs.push(self.dir.clone());
        for b in 0..self.m.mailboxes {
            for sub in [None, Some("tmp"), Some("new"), Some("cur")] {
                let rel = match sub {
                    None => format!("{}/box{b}", self.dir),
                    Some(s) => self.in_box(b, s, None),
                };
                std::fs::create_dir(self.root.join(&rel)).map_err(|e| format!("creating {rel}: {e}"))?;
                self.dirs.push(rel);
            }
        }
        Ok(Vec::new())
    }

    fn prime(&mut self, _slot: u32, buf: &mut [u8]) {
        // A message's text: header-like printable lines.
        let line = b"Received: from postal by iolab; a line of a message body, 72 bytes long..\n";
        for (i, b) in buf.iter_mut().enumerate() {
            *b = line[i % line.len()];
        }
    }

    fn start(&mut self, at: Stamp) {
        self.started = Some(at);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        self.started.get_or_insert(ctx.now);
        if self.finishing && self.step == Step::Begin {
            self.finishing = false;
            self.delivered_now(ctx.now);
        }
        let (tmp, new, dir) = match self.ids {
            Some(ids) => ids,
            None => {
                let (Ok(a), Ok(b), Ok(c)) =
                    (ctx.names.add(&self.dir), ctx.names.add(&self.dir), ctx.names.add(&self.dir))
                else {
                    return Next::Done;
                };
                self.ids = Some((a, b, c));
                (a, b, c)
            }
        };
        let call = loop {
            match self.step {
                Step::Begin => {
                    let enough = self.m.messages.is_some_and(|n| self.seq >= n);
                    if ctx.ending || enough {
                        self.step = Step::Cleanup(0);
                        continue;
                    }
                    let mailbox = self.rng.random_range(0..self.m.mailboxes);
                    let size = self.rng.random_range(self.m.min_size.0..=self.m.max_size.0);
                    self.seq += 1;
                    self.current = Message { mailbox, seq: self.seq, size };
                    let t = self.in_box(mailbox, "tmp", Some(&self.current));
                    if !self.set(ctx, tmp, &t) {
                        return Next::Done;
                    }
                    self.step = Step::Write { left: size };
                    let flags = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
                    break Call::Open { name: tmp, file: FILE, flags };
                }
                Step::Write { left } if left > 0 => {
                    let len = left.min(self.buffer_len() as u64) as u32;
                    self.step = Step::Write { left: left - len as u64 };
                    break Call::Data { kind: OpKind::WriteCur, file: FILE, offset: 0, len };
                }
                Step::Write { .. } => self.step = Step::Fsync,
                Step::Fsync => {
                    self.step = Step::Close;
                    break Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 };
                }
                Step::Close => {
                    self.step = Step::Rename;
                    break Call::Close { file: FILE };
                }
                Step::Rename => {
                    let n = self.in_box(self.current.mailbox, "new", Some(&self.current));
                    if !self.set(ctx, new, &n) {
                        return Next::Done;
                    }
                    self.step = if self.m.dir_fsync { Step::DirSync } else { Step::Begin };
                    self.finishing = !self.m.dir_fsync;
                    break Call::Rename { from: tmp, to: new };
                }
                Step::DirSync => {
                    let d = self.in_box(self.current.mailbox, "new", None);
                    if !self.set(ctx, dir, &d) {
                        return Next::Done;
                    }
                    self.step = Step::Begin;
                    self.finishing = true;
                    break Call::FsyncDir { name: dir };
                }
                Step::Cleanup(i) if i < self.delivered.len() => {
                    let m = self.delivered[i];
                    let n = self.in_box(m.mailbox, "new", Some(&m));
                    if !self.set(ctx, new, &n) {
                        return Next::Done;
                    }
                    self.step = Step::Cleanup(i + 1);
                    break Call::Unlink { name: new };
                }
                Step::Cleanup(_) if self.m.readers > 0 && !self.swept => {
                    // Messages readers moved to cur/ and had not yet deleted when they stopped.
                    self.swept = true;
                    let mut left = Vec::new();
                    for b in 0..self.m.mailboxes {
                        let cur = self.root.join(self.in_box(b, "cur", None));
                        for e in std::fs::read_dir(&cur).into_iter().flatten().flatten() {
                            left.push(format!("{}/{}", self.in_box(b, "cur", None), e.file_name().to_string_lossy()));
                        }
                    }
                    self.leftovers = left;
                }
                Step::Cleanup(_) if !self.leftovers.is_empty() => {
                    let rel = self.leftovers.pop().unwrap_or_default();
                    if !self.set(ctx, new, &rel) {
                        return Next::Done;
                    }
                    break Call::Unlink { name: new };
                }
                Step::Cleanup(_) => self.step = Step::RemoveDirs(self.dirs.len()),
                Step::RemoveDirs(i) if i > 0 => {
                    let d = self.dirs[i - 1].clone();
                    if !self.set(ctx, dir, &d) {
                        return Next::Done;
                    }
                    self.step = Step::RemoveDirs(i - 1);
                    break Call::Rmdir { name: dir };
                }
                Step::RemoveDirs(_) => self.step = Step::Done,
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), String> {
        let path = self.in_box(self.current.mailbox, "tmp", Some(&self.current));
        match (call, r) {
            (Call::Data { len, .. }, Ok(n)) if *len > 0 && *n != *len as usize => {
                Err(describe_failure(call, &path, *len, 0, r))
            }
            (Call::Data { len, .. }, Err(_)) => Err(describe_failure(call, &path, *len, 0, r)),
            // A reader took the message from new/ meanwhile.
            (Call::Unlink { .. }, Err(e)) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            (_, Err(_)) => Err(describe_failure(call, &path, 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let secs = |a: Option<Stamp>, b: Option<Stamp>| match (a, b) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let elapsed = secs(self.started, self.last);
        vec![
            ("messages", self.delivered.len() as f64),
            ("messages_after_discard", self.after_discard as f64),
            ("bytes_delivered", self.bytes as f64),
            ("discard_s", self.m.discard.as_secs_f64()),
            ("elapsed_s", elapsed),
            ("measured_s", (elapsed - self.m.discard.as_secs_f64()).max(0.0)),
        ]
    }
}

/// A reader, as a POP/IMAP server reads a maildir: it lists new/ of the mailboxes of the
/// deliverers it serves (deliverer d when d % readers == its index), moves each message to
/// cur/ (`name:2,`), reads it whole and deletes it. It touches only messages iolab's deliverers
/// made, in their directories.
pub struct MaildirReader {
    m: MaildirJob,
    root: PathBuf,
    boxes: Vec<String>,
    next_box: usize,
    empty_sweep: usize,
    queue: Vec<(String, u64)>,
    step: RStep,
    current: (String, u64),
    ids: Option<(NameId, NameId)>,
    read: u64,
    bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RStep {
    List,
    Rename,
    Open,
    Read(u64),
    Close,
    Unlink,
}

impl MaildirReader {
    pub fn new(job: &str, m: &MaildirJob, reader: u32, deliverers: u32, root: PathBuf) -> MaildirReader {
        let readers = m.readers.max(1);
        let mut boxes = Vec::new();
        for d in (0..deliverers).filter(|d| d % readers == reader) {
            for b in 0..m.mailboxes {
                boxes.push(format!("iolab.{job}.{d}/box{b}"));
            }
        }
        MaildirReader {
            m: m.clone(),
            root,
            boxes,
            next_box: 0,
            empty_sweep: 0,
            queue: Vec::new(),
            step: RStep::List,
            current: (String::new(), 0),
            ids: None,
            read: 0,
            bytes: 0,
        }
    }
}

impl Source for MaildirReader {
    fn buffer_len(&self) -> usize {
        (self.m.max_size.0.clamp(1, CHUNK as u64)) as usize
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        let (a, b) = match self.ids {
            Some(ids) => ids,
            None => {
                let (Ok(a), Ok(b)) = (ctx.names.add("."), ctx.names.add(".")) else { return Next::Done };
                self.ids = Some((a, b));
                (a, b)
            }
        };
        if self.boxes.is_empty() {
            return Next::Done;
        }
        let call = loop {
            match self.step {
                RStep::List => {
                    if ctx.ending {
                        return Next::Done;
                    }
                    if let Some(m) = self.queue.pop() {
                        self.current = m;
                        self.step = RStep::Rename;
                        continue;
                    }
                    if self.empty_sweep >= self.boxes.len() {
                        // Nothing anywhere: look again shortly.
                        self.empty_sweep = 0;
                        return Next::WaitUntil(ctx.now + std::time::Duration::from_millis(2));
                    }
                    let bx = self.boxes[self.next_box % self.boxes.len()].clone();
                    self.next_box += 1;
                    // The names, as the server's readdir sees them; the timed call is below.
                    let dir = format!("{bx}/new");
                    for e in std::fs::read_dir(self.root.join(&dir)).into_iter().flatten().flatten() {
                        let name = e.file_name().to_string_lossy().into_owned();
                        if let Some(size) = name.rsplit("S=").next().and_then(|s| s.parse::<u64>().ok()) {
                            if name.contains(".iolab,S=") {
                                self.queue.push((format!("{bx}/{name}"), size));
                            }
                        }
                    }
                    self.empty_sweep = if self.queue.is_empty() { self.empty_sweep + 1 } else { 0 };
                    if ctx.names.reuse(a, &dir).is_err() {
                        return Next::Done;
                    }
                    break Call::Readdir { name: a };
                }
                RStep::Rename => {
                    let (msg, _) = &self.current;
                    let Some((bx, name)) = msg.rsplit_once('/') else {
                        self.step = RStep::List;
                        continue;
                    };
                    let (from, to) = (format!("{bx}/new/{name}"), format!("{bx}/cur/{name}:2,"));
                    if ctx.names.reuse(a, &from).is_err() || ctx.names.reuse(b, &to).is_err() {
                        return Next::Done;
                    }
                    self.step = RStep::Open;
                    break Call::Rename { from: a, to: b };
                }
                RStep::Open => {
                    self.step = RStep::Read(self.current.1);
                    break Call::Open { name: b, file: FILE, flags: OpenFlags { read: true, ..Default::default() } };
                }
                RStep::Read(left) if left > 0 => {
                    let len = left.min(self.buffer_len() as u64) as u32;
                    self.step = RStep::Read(left - len as u64);
                    break Call::Data { kind: OpKind::ReadCur, file: FILE, offset: 0, len };
                }
                RStep::Read(_) => self.step = RStep::Close,
                RStep::Close => {
                    self.step = RStep::Unlink;
                    break Call::Close { file: FILE };
                }
                RStep::Unlink => {
                    self.step = RStep::List;
                    self.read += 1;
                    self.bytes += self.current.1;
                    break Call::Unlink { name: b };
                }
            }
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), String> {
        match (call, r) {
            // The deliverer's cleanup removed it first (at the end of the run).
            (Call::Rename { .. }, Err(e)) if e.kind() == io::ErrorKind::NotFound => {
                self.step = RStep::List;
                Ok(())
            }
            (Call::Data { len, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &self.current.0, *len, 0, r))
            }
            (_, Err(_)) => Err(describe_failure(call, &self.current.0, 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        vec![("messages_read", self.read as f64), ("bytes_read", self.bytes as f64)]
    }
}
