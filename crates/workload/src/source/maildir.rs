//! Mail delivery into a pool of maildirs that every delivering thread shares, as Postal's
//! threads drive one LMTP server: each message goes to a mailbox picked at random, is created
//! in its tmp/ under a name unique to the message (maildir's `time.pid_thread.host` style:
//! `1732371234.M123456P4242_3Q17.host,S=5120`), written, fsynced, closed, renamed into new/
//! and, when asked, new/ is fsynced; only then is it counted as delivered, so a run stopped at
//! any instant (Ctrl-C, SIGKILL) leaves no message only in tmp/ that it counted. Readers (a
//! POP/IMAP server) list new/ of their mailboxes, move each message to cur/, read it whole and
//! delete it. The pool, `iolab.<job>/box<N>/{tmp,new,cur}`, is made by the first deliverer
//! before the start (the mailboxes exist before Postal delivers: layout, untimed) and, once
//! every thread has stopped (the job's threads meet at a barrier), it removes what is left, the
//! messages named by this process and then the directories (untimed): it never touches a file
//! iolab did not create.

use super::{
    describe_failure, io_error, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError,
    Worker,
};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_spec::{Job, MaildirJob};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

const FILE: u32 = 0;
const SUBDIRS: [&str; 3] = ["tmp", "new", "cur"];

/// The pool of mailboxes the job's threads share, and how its messages are named.
#[derive(Debug)]
pub struct Pool {
    /// `iolab.<job>`, under the target directory.
    dir: String,
    mailboxes: u32,
    /// What every message of this process carries in its name: `P<pid>_`.
    pid_tag: String,
    /// The host part of the names, with `/` and `:` written as maildir says (`\057`, `\072`).
    host: String,
    /// The first deliverer made the pool (set before the start, read after it).
    ready: std::sync::atomic::AtomicBool,
}

impl Pool {
    pub fn new(job: &str, m: &MaildirJob) -> Pool {
        let host = iolab_sysstat::hostname().replace('/', "\\057").replace(':', "\\072");
        Pool {
            dir: format!("iolab.{job}"),
            mailboxes: m.mailboxes,
            pid_tag: format!("P{}_", std::process::id()),
            host,
            ready: Default::default(),
        }
    }

    fn boxdir(&self, mailbox: u32, sub: &str) -> String {
        format!("{}/box{mailbox}/{sub}", self.dir)
    }

    /// A new message's name: seconds and microseconds of the wall clock, the process and
    /// thread, the thread's message number (unique even within a microsecond), the host and
    /// the size (`,S=`, as Courier and Dovecot write it).
    fn message_name(&self, thread: u32, seq: u64, size: u64) -> String {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        format!("{}.M{}{}{thread}Q{seq}.{},S={size}", t.as_secs(), t.subsec_micros(), self.pid_tag, self.host)
    }

    /// The size of a message this process named (`name` as listed in new/ or cur/, with
    /// cur/'s `:2,` flags or not); `None` for any other name.
    fn ours(&self, name: &str) -> Option<u64> {
        let base = name.split_once(':').map_or(name, |(b, _)| b);
        let (head, size) = base.rsplit_once(",S=")?;
        if !head.contains(&self.pid_tag) || !head.ends_with(&format!(".{}", self.host)) {
            return None;
        }
        size.parse().ok()
    }

    /// Make the pool under `root`: the layout, before the start.
    fn lay_out(&self, job: &super::JobDir) -> Result<(), SourceError> {
        let b = job.beneath()?;
        for d in self.dirs() {
            let p = job.path.join(&d);
            b.mkdir(std::path::Path::new(&d)).map_err(io_error(
                "creating",
                &p,
                " (left by an interrupted run? mail delivery works only in a directory it creates: remove it or choose another job name)",
            ))?;
        }
        self.ready.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    fn is_ready(&self) -> bool {
        self.ready.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The directories, parents first.
    fn dirs(&self) -> Vec<String> {
        let mut v = vec![self.dir.clone()];
        for b in 0..self.mailboxes {
            v.push(format!("{}/box{b}", self.dir));
            v.extend(SUBDIRS.iter().map(|s| self.boxdir(b, s)));
        }
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Begin,
    Write {
        left: u64,
    },
    Fsync,
    Close,
    Rename,
    DirSync,
    EndBarrier,
    /// The first deliverer, once everyone stopped: list the next directory of the pool.
    Sweep(usize),
    /// Remove the listed names of ours in that directory.
    Remove(usize),
    RemoveDirs(usize),
    Done,
}

/// One delivering thread.
pub struct Maildir {
    m: MaildirJob,
    pool: std::sync::Arc<Pool>,
    root: super::JobDir,
    thread: u32,
    rng: Xoshiro256PlusPlus,
    step: Step,
    mailbox: u32,
    size: u64,
    name: String,
    delivered: u64,
    started: Option<Stamp>,
    last: Option<Stamp>,
    after_discard: u64,
    bytes: u64,
    ids: Option<(NameId, NameId, NameId)>,
    seq: u64,
    dirs: Vec<String>,
    /// Names of ours listed in the directory being swept.
    listed: Vec<String>,
    /// The message's last call (rename, or new/'s fsync) was issued; asked for the next call,
    /// the source knows it completed and counts the message.
    finishing: bool,
}

impl PersonalitySource for MaildirJob {
    /// The mailboxes every deliverer and reader uses.
    type Shared = Pool;
    fn shared(&self, job: &Job) -> Result<Pool, SourceError> {
        Ok(Pool::new(&job.name, self))
    }
    /// The job's first threads deliver, the rest (`--readers`) read.
    fn source<R: Run>(&self, w: &Worker<'_, Pool>, run: R) -> R::Out {
        let deliverers = self.deliverers(w.job);
        if w.thread >= deliverers {
            run.run(Ok(MaildirReader::new(self, w.shared.clone(), w.thread - deliverers)))
        } else {
            run.run(Ok(Maildir::new(self, w.shared.clone(), w.job.seed, w.thread, w.job_dir())))
        }
    }
}

impl Maildir {
    pub fn new(
        m: &MaildirJob,
        pool: std::sync::Arc<Pool>,
        seed: u64,
        thread: u32,
        root: super::JobDir,
    ) -> Maildir {
        let dirs = pool.dirs();
        Maildir {
            m: m.clone(),
            pool,
            root,
            thread,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ (0x6d61_696c << 16) ^ thread as u64),
            step: Step::Begin,
            mailbox: 0,
            size: 0,
            name: String::new(),
            delivered: 0,
            started: None,
            last: None,
            after_discard: 0,
            bytes: 0,
            ids: None,
            seq: 0,
            dirs,
            listed: Vec::new(),
            finishing: false,
        }
    }

    fn delivered_now(&mut self, now: Stamp) {
        self.delivered += 1;
        self.bytes += self.size;
        self.last = Some(now);
        if let Some(s) = self.started {
            if now.saturating_duration_since(s) >= self.m.discard {
                self.after_discard += 1;
            }
        }
    }

    /// The directory swept at `i`: each mailbox's tmp/, new/ and cur/.
    fn swept(&self, i: usize) -> Option<String> {
        let b = (i / SUBDIRS.len()) as u32;
        (b < self.pool.mailboxes).then(|| self.pool.boxdir(b, SUBDIRS[i % SUBDIRS.len()]))
    }
}

/// Reads the names a readdir listed (NUL-ended, see `Source::completed`).
fn names(listing: &[u8]) -> impl Iterator<Item = &str> {
    listing.split(|b| *b == 0).filter(|n| !n.is_empty()).filter_map(|n| std::str::from_utf8(n).ok())
}

impl Source for Maildir {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.m) as usize
    }

    /// The first deliverer makes the pool before the start (untimed).
    fn setup(&mut self) -> Result<Vec<super::SetupFile>, SourceError> {
        if self.thread == 0 {
            self.pool.lay_out(&self.root)?;
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

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        if self.finishing && self.step == Step::Begin {
            self.finishing = false;
            self.delivered_now(ctx.now);
        }
        let (tmp, new, dir) = match self.ids {
            Some(ids) => ids,
            None => {
                let (Ok(a), Ok(b), Ok(c)) = (ctx.names.add("."), ctx.names.add("."), ctx.names.add(".")) else {
                    return Next::Done;
                };
                self.ids = Some((a, b, c));
                (a, b, c)
            }
        };
        if !self.pool.is_ready() {
            return Next::Done; // the first deliverer could not make the pool; it says why
        }
        let call = loop {
            match self.step {
                Step::Begin => {
                    self.started.get_or_insert(ctx.now);
                    let enough = self.m.messages.is_some_and(|n| self.seq >= n);
                    if ctx.ending || enough {
                        self.step = Step::EndBarrier;
                        continue;
                    }
                    self.mailbox = self.rng.random_range(0..self.pool.mailboxes);
                    self.size = self.rng.random_range(self.m.min_size.0..=self.m.max_size.0);
                    self.seq += 1;
                    self.name = self.pool.message_name(self.thread, self.seq, self.size);
                    let t = format!("{}/{}", self.pool.boxdir(self.mailbox, "tmp"), self.name);
                    if ctx.names.reuse(tmp, &t).is_err() {
                        return Next::Done;
                    }
                    self.step = Step::Write { left: self.size };
                    let flags = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
                    break Issue::now(Call::Open { name: tmp, file: FILE, flags });
                }
                Step::Write { left } if left > 0 => {
                    let len = left.min(self.buffer_len() as u64) as u32;
                    self.step = Step::Write { left: left - len as u64 };
                    break Issue::now(Call::Data { kind: OpKind::WriteCur, file: FILE, offset: 0, len });
                }
                Step::Write { .. } => self.step = Step::Fsync,
                Step::Fsync => {
                    self.step = Step::Close;
                    break Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 });
                }
                Step::Close => {
                    self.step = Step::Rename;
                    break Issue::now(Call::Close { file: FILE });
                }
                Step::Rename => {
                    let n = format!("{}/{}", self.pool.boxdir(self.mailbox, "new"), self.name);
                    if ctx.names.reuse(new, &n).is_err() {
                        return Next::Done;
                    }
                    self.step = if self.m.dir_fsync { Step::DirSync } else { Step::Begin };
                    self.finishing = !self.m.dir_fsync;
                    break Issue::now(Call::Rename { from: tmp, to: new });
                }
                Step::DirSync => {
                    if ctx.names.reuse(dir, self.pool.boxdir(self.mailbox, "new")).is_err() {
                        return Next::Done;
                    }
                    self.step = Step::Begin;
                    self.finishing = true;
                    break Issue::now(Call::FsyncDir { name: dir });
                }
                Step::EndBarrier => {
                    self.step = if self.thread == 0 { Step::Sweep(0) } else { Step::Done };
                    return Next::Barrier;
                }
                Step::Sweep(i) => match self.swept(i) {
                    Some(d) => {
                        if ctx.names.reuse(dir, &d).is_err() {
                            return Next::Done;
                        }
                        self.step = Step::Remove(i);
                        break Issue::untimed(Call::Readdir { name: dir });
                    }
                    None => self.step = Step::RemoveDirs(self.dirs.len()),
                },
                Step::Remove(i) => match (self.listed.pop(), self.swept(i)) {
                    (Some(n), Some(d)) => {
                        if ctx.names.reuse(new, format!("{d}/{n}")).is_err() {
                            return Next::Done;
                        }
                        break Issue::untimed(Call::Unlink { name: new });
                    }
                    _ => self.step = Step::Sweep(i + 1),
                },
                Step::RemoveDirs(i) if i > 0 => {
                    if ctx.names.reuse(dir, &self.dirs[i - 1]).is_err() {
                        return Next::Done;
                    }
                    self.step = Step::RemoveDirs(i - 1);
                    break Issue::untimed(Call::Rmdir { name: dir });
                }
                Step::RemoveDirs(_) => self.step = Step::Done,
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(call)
    }

    fn completed(&mut self, call: &Call, buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let path = || format!("{}/{}", self.pool.boxdir(self.mailbox, "tmp"), self.name);
        match (call, r) {
            (Call::Readdir { .. }, Ok(_)) => {
                // Only the messages this process named: whatever else is there stays (and its
                // directory with it, which the rmdir below then says).
                self.listed = names(buf).filter(|n| self.pool.ours(n).is_some()).map(str::to_string).collect();
                Ok(())
            }
            (Call::Data { len, .. }, Ok(n)) if *len > 0 && *n != *len as usize => {
                Err(describe_failure(call, &path(), *len, 0, r))
            }
            (Call::Data { len, .. }, Err(_)) => Err(describe_failure(call, &path(), *len, 0, r)),
            (Call::Rmdir { .. }, Err(e)) if e.raw_os_error() == Some(libc::ENOTEMPTY) => Err(format!(
                "{} is not empty at the end: a file iolab did not create is in it, and is left as it was",
                self.pool.dir
            )
            .into()),
            (_, Err(_)) => Err(describe_failure(call, &path(), 0, 0, r)),
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
            ("messages", self.delivered as f64),
            ("messages_after_discard", self.after_discard as f64),
            ("bytes_delivered", self.bytes as f64),
            ("discard_s", self.m.discard.as_secs_f64()),
            ("elapsed_s", elapsed),
            ("measured_s", (elapsed - self.m.discard.as_secs_f64()).max(0.0)),
        ]
    }
}

/// A reader, as a POP/IMAP server reads a maildir: it lists new/ of its mailboxes (mailbox b
/// when b % readers is its index, so two readers never race for one message) with a timed
/// readdir, moves each message of this process to cur/ (`name:2,`), reads it whole and
/// deletes it.
pub struct MaildirReader {
    m: MaildirJob,
    pool: std::sync::Arc<Pool>,
    boxes: Vec<u32>,
    next_box: usize,
    empty_sweep: usize,
    /// Messages listed and not yet taken: (mailbox, name, size).
    queue: Vec<(u32, String, u64)>,
    listing: u32,
    step: RStep,
    current: (u32, String, u64),
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
    EndBarrier,
    Done,
}

impl MaildirReader {
    pub fn new(m: &MaildirJob, pool: std::sync::Arc<Pool>, reader: u32) -> MaildirReader {
        let readers = m.readers.max(1);
        let boxes = (0..m.mailboxes).filter(|b| b % readers == reader).collect();
        MaildirReader {
            m: m.clone(),
            pool,
            boxes,
            next_box: 0,
            empty_sweep: 0,
            queue: Vec::new(),
            listing: 0,
            step: RStep::List,
            current: (0, String::new(), 0),
            ids: None,
            read: 0,
            bytes: 0,
        }
    }
}

impl Source for MaildirReader {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.m) as usize
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
        if !self.pool.is_ready() {
            return Next::Done;
        }
        let call = loop {
            match self.step {
                RStep::List => {
                    if ctx.ending || self.boxes.is_empty() {
                        self.step = RStep::EndBarrier;
                        continue;
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
                    self.listing = self.boxes[self.next_box % self.boxes.len()];
                    self.next_box += 1;
                    if ctx.names.reuse(a, self.pool.boxdir(self.listing, "new")).is_err() {
                        return Next::Done;
                    }
                    break Call::Readdir { name: a };
                }
                RStep::Rename => {
                    let (bx, name, _) = &self.current;
                    let from = format!("{}/{name}", self.pool.boxdir(*bx, "new"));
                    let to = format!("{}/{name}:2,", self.pool.boxdir(*bx, "cur"));
                    if ctx.names.reuse(a, &from).is_err() || ctx.names.reuse(b, &to).is_err() {
                        return Next::Done;
                    }
                    self.step = RStep::Open;
                    break Call::Rename { from: a, to: b };
                }
                RStep::Open => {
                    self.step = RStep::Read(self.current.2);
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
                    self.bytes += self.current.2;
                    break Call::Unlink { name: b };
                }
                RStep::EndBarrier => {
                    self.step = RStep::Done;
                    return Next::Barrier;
                }
                RStep::Done => return Next::Done,
            }
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let at = || format!("{}/{}", self.pool.boxdir(self.current.0, "cur"), self.current.1);
        match (call, r) {
            (Call::Readdir { .. }, Ok(_)) => {
                let found: Vec<(u32, String, u64)> = names(buf)
                    .filter_map(|n| self.pool.ours(n).map(|size| (self.listing, n.to_string(), size)))
                    .collect();
                self.empty_sweep = if found.is_empty() { self.empty_sweep + 1 } else { 0 };
                self.queue = found;
                Ok(())
            }
            (Call::Data { len, .. }, Ok(n)) if *n != *len as usize => Err(describe_failure(call, &at(), *len, 0, r)),
            (_, Err(_)) => Err(describe_failure(call, &at(), 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        vec![("messages_read", self.read as f64), ("bytes_read", self.bytes as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_are_unique_and_only_ours_are_taken() {
        let m = MaildirJob {
            mailboxes: 3,
            min_size: iolab_spec::Bytes(0),
            max_size: iolab_spec::Bytes(10),
            dir_fsync: true,
            messages: None,
            discard: std::time::Duration::ZERO,
            readers: 0,
            discard_asked: None,
        };
        let pool = Pool::new("j", &m);
        let a = pool.message_name(0, 1, 512);
        let b = pool.message_name(0, 2, 512);
        let c = pool.message_name(1, 1, 512);
        assert!(a != b && a != c && b != c, "{a} {b} {c}");
        assert!(!a.contains('/') && !a.contains(':'), "{a}");
        assert_eq!(pool.ours(&a), Some(512));
        assert_eq!(pool.ours(&format!("{a}:2,")), Some(512), "cur/'s flags");
        for other in ["1.T0.iolab,S=5", "mine", "1732.M1P1_0Q1.elsewhere,S=5", ""] {
            assert_eq!(pool.ours(other), None, "{other}");
        }
        assert_eq!(pool.dirs().len(), 1 + 3 * 4);
        let listed = b"one\0two\0\0";
        assert_eq!(names(listed).collect::<Vec<_>>(), ["one", "two"]);
    }
}
