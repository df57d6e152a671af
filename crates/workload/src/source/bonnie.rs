//! bonnie++ 2.0's tests, in its order, in a directory of the job's own (`iolab.<job>`): the
//! first thread runs the tests one after another — per-character write (1-byte write(2)
//! calls), block write, rewrite (read a chunk, dirty it, seek back, write), per-character
//! read, block read — then every thread of the job is one of bonnie++'s seekers: each opens
//! the file, they start together (a barrier), take tickets from one shared list (bonnie++'s
//! pipe) until it is empty — lseek and read a chunk, one in ten dirtied and written back —
//! and each stops its clock after its fsync and close (the test's time is the slowest
//! seeker's) and then unlinks the file, as bonnie++'s seekers do, so the last close frees it
//! inside the test when a seeker unlinked it first. Then the first thread alone runs the create tests:
//! sequential create, stat and delete in directory (readdir) order, then random-named create,
//! stat and delete in a shuffled order, each create and delete ending with a flush of the
//! filesystem (bonnie++'s sync()), files optionally holding data and spread over directories
//! (`-n number:max:min:dirs`), with `-b`'s fsyncs. Each test's wall time, the process's CPU
//! time over it (getrusage's, as bonnie++ takes it) and its longest unit of work (bonnie++'s
//! latency: a chunk of 1-byte calls, a block, a seek, a file) are the figures, under bonnie++'s
//! CSV names; `iolab_report::bonnie_csv` prints them as bonnie++'s `-q` line.

use super::{
    describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker,
};
use crate::clock::Stamp;
use iolab_engine::{OpKind, Whence};
use iolab_spec::{BonnieJob, Job};
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const FILE: u32 = 0;

use iolab_model::figures::bonnie::{AMOUNT, CPU, LATENCY, SECS};

const PUTC: usize = 0;
const PUT_BLOCK: usize = 1;
const REWRITE: usize = 2;
const GETC: usize = 3;
const GET_BLOCK: usize = 4;
const SEEKS: usize = 5;
const SEQ_CREATE: usize = 6;
const SEQ_STAT: usize = 7;
const SEQ_DEL: usize = 8;
const RAN_CREATE: usize = 9;
const RAN_STAT: usize = 10;
const RAN_DEL: usize = 11;

/// bonnie++'s seek tickets, which its seekers take from one pipe: the chunk each seek reads,
/// and whether it writes it back (one in ten). Shared by the job's threads.
#[derive(Debug)]
pub struct Tickets {
    list: Vec<(u64, bool)>,
    next: AtomicUsize,
    /// The first thread stopped before the seek test (an error, a stop): the seekers go home.
    abort: AtomicBool,
}

impl Tickets {
    /// `b.seeks` tickets as bonnie++ draws them: a random number, an update when it is a
    /// multiple of 10, the chunk at the number modulo the file's chunks.
    pub fn new(b: &BonnieJob, seed: u64) -> Tickets {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7365_656b_7300);
        let chunks = b.blocks().max(1);
        let list = (0..b.seeks)
            .map(|_| {
                let t = (rng.next_u32() & 0x7fff_ffff) as u64;
                (t % chunks, t.is_multiple_of(10))
            })
            .collect();
        Tickets { list, next: AtomicUsize::new(0), abort: AtomicBool::new(false) }
    }

    fn take(&self) -> Option<(u64, bool)> {
        self.list.get(self.next.fetch_add(1, Ordering::Relaxed)).copied()
    }
}

/// What the source does next: a call, or a mark on its own clock.
#[derive(Debug, Clone, Copy)]
enum Item {
    Do(Issue),
    /// The test's clock starts (after its file is open, as bonnie++'s `timer.start()`).
    Start,
    /// The test's clock stops (after its fsync and close, or its sync).
    Stop,
    /// A unit of the test (bonnie++'s `dur.start()`/`dur.stop()`): its longest is the latency.
    UnitStart,
    UnitEnd,
    /// The job's threads line up (the seekers' start and end).
    Barrier,
    /// The first thread stopped before the seek test (an error, a stop): nothing to seek in,
    /// so this seeker cleans up and goes home.
    IfAborted,
}

/// One finished test.
#[derive(Debug, Clone, Copy, Default)]
struct Done {
    secs: f64,
    cpu: f64,
    amount: f64,
    latency_ns: u64,
}

/// A file of the create tests: its name, the directory it is in, its size.
#[derive(Debug, Clone, Copy)]
struct FileRec {
    id: NameId,
    dir: u32,
    size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Pre,
    Body,
    Post,
    Over,
}

pub struct Bonnie {
    b: BonnieJob,
    /// bonnie++'s -D (`--direct`): the file of the write tests is created with O_DIRECT; the
    /// tests after them open it without, as bonnie++ 2.0 does (strace shows it).
    direct: bool,
    tickets: Arc<Tickets>,
    dir: String,
    thread: u32,
    rng: Xoshiro256PlusPlus,
    /// The test running (index into TESTS; 12: done).
    test: usize,
    part: Part,
    /// Units of the test's body queued so far.
    unit: u64,
    queue: VecDeque<Item>,
    started: Option<(Stamp, f64)>,
    unit_at: Option<Stamp>,
    latency_ns: u64,
    amount: u64,
    done: [Option<Done>; 12],
    top_id: Option<NameId>,
    data_id: Option<NameId>,
    test_dir: Option<NameId>,
    subdirs: Vec<NameId>,
    /// The create tests' files, in the order they are made.
    files: Vec<FileRec>,
    by_name: HashMap<String, usize>,
    /// The order the stat and delete tests take them (readdir's, or shuffled).
    order: Vec<usize>,
    /// Which directory the readdir-ordered tests list next.
    listing: u32,
    exists: Vec<bool>,
    data_exists: bool,
    test_dir_exists: bool,
    subdirs_exist: bool,
    open: bool,
    cleaning: bool,
    /// Blocks the running write test has filled: bonnie++ bumps byte `n % chunk` of its
    /// buffer before the n-th block of the block write and the rewrite, so past the first
    /// chunk-count blocks no page it writes is all zeros (a disk that skips or compresses
    /// zeros must not make iolab's writes cheaper than bonnie++'s).
    bumps: u64,
}

fn cpu_now() -> f64 {
    let c = crate::cpu::process_cpu();
    c.user_s + c.system_s
}

impl PersonalitySource for BonnieJob {
    /// The seekers' tickets (bonnie++'s pipe).
    type Shared = Tickets;
    fn shared(&self, job: &Job) -> Result<Tickets, SourceError> {
        Ok(Tickets::new(self, job.seed))
    }
    fn source<R: Run>(&self, w: &Worker<'_, Tickets>, run: R) -> R::Out {
        run.run(Ok(Bonnie::new(&w.job.name, self, w.shared.clone(), w.job.seed, w.thread, w.job.direct)))
    }
}

impl Bonnie {
    /// `direct`: bonnie++'s -D, the block write test's file created with O_DIRECT.
    pub fn new(job: &str, b: &BonnieJob, tickets: Arc<Tickets>, seed: u64, thread: u32, direct: bool) -> Bonnie {
        Bonnie {
            b: b.clone(),
            direct,
            tickets,
            dir: format!("iolab.{job}"),
            thread,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x626f_6e6e_6965_0000),
            test: if thread == 0 { PUTC } else { SEEKS },
            part: Part::Pre,
            unit: 0,
            queue: VecDeque::new(),
            started: None,
            unit_at: None,
            latency_ns: 0,
            amount: 0,
            done: [None; 12],
            top_id: None,
            data_id: None,
            test_dir: None,
            subdirs: Vec::new(),
            files: Vec::new(),
            by_name: HashMap::new(),
            order: Vec::new(),
            listing: 0,
            exists: Vec::new(),
            data_exists: false,
            test_dir_exists: false,
            subdirs_exist: false,
            open: false,
            cleaning: false,
            bumps: 0,
        }
    }

    fn main(&self) -> bool {
        self.thread == 0
    }

    fn name_dirs(&mut self, ctx: &mut Ctx) -> Result<(), SourceError> {
        let pid = std::process::id();
        self.top_id = Some(ctx.names.add(&self.dir)?);
        self.data_id = Some(ctx.names.add(format!("{}/Bonnie.{pid}", self.dir))?);
        // The create tests' directory takes the data file's name once it is gone, as in bonnie++.
        self.test_dir = self.data_id;
        if self.b.dirs > 1 {
            for d in 0..self.b.dirs {
                self.subdirs.push(ctx.names.add(format!("{}/Bonnie.{pid}/{d:05}", self.dir))?);
            }
        }
        Ok(())
    }

    /// bonnie++'s `make_names`: a 10-hex-digit index and 0 to 12 random characters after it
    /// (sequential) or before it (random), spread over the directories as it does (a
    /// directory gets one more than its share before the next starts); and each file's size
    /// (`min + rand % (max - min + 1)`, or `max`).
    fn make_names(&mut self, ctx: &mut Ctx, random: bool) -> Result<(), SourceError> {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let n = self.b.files() as usize;
        let per_dir = n / self.b.dirs as usize;
        let (mut in_dir, mut dir) = (0usize, 0u32);
        let pid = std::process::id();
        // The random set reuses the sequential set's name ids (its files are gone by then), and
        // only the sequential tests look names up, so iolab's memory stays near bonnie++'s.
        let ids: Vec<NameId> = self.files.iter().map(|f| f.id).collect();
        self.files.clear();
        self.by_name.clear();
        self.by_name.shrink_to_fit();
        for i in 0..n {
            let len = self.rng.random_range(0..=12usize);
            let extra: String = (0..len).map(|_| CHARS[self.rng.random_range(0..CHARS.len())] as char).collect();
            let name = if random { format!("{extra}{i:010x}") } else { format!("{i:010x}{extra}") };
            let sub = if self.b.dirs > 1 { format!("{dir:05}/") } else { String::new() };
            let path = format!("{}/Bonnie.{pid}/{sub}{name}", self.dir);
            let id = match ids.get(i) {
                Some(id) => {
                    ctx.names.reuse(*id, path)?;
                    *id
                }
                None => ctx.names.add(path)?,
            };
            let range = self.b.max_size - self.b.min_size;
            let size = if range > 0 { self.b.min_size + self.rng.random_range(0..=range) } else { self.b.max_size };
            if !random {
                self.by_name.insert(format!("{dir}/{name}"), i);
            }
            self.files.push(FileRec { id, dir, size });
            in_dir += 1;
            if in_dir > per_dir {
                in_dir = 0;
                dir += 1;
            }
        }
        self.exists = vec![false; n];
        Ok(())
    }

    /// bonnie++'s `random_sort`: each position swapped with a random one.
    fn shuffle(&mut self) {
        let n = self.files.len();
        self.order = (0..n).collect();
        for i in 0..n {
            let j = self.rng.random_range(0..n);
            self.order.swap(i, j);
        }
    }

    fn dir_of(&self, d: u32) -> NameId {
        if self.subdirs.is_empty() {
            self.test_dir.unwrap_or(NameId(u32::MAX))
        } else {
            self.subdirs[d as usize]
        }
    }

    fn data(&self) -> NameId {
        self.data_id.unwrap_or(NameId(u32::MAX))
    }

    /// Queue the calls before the test's clock starts, and its start.
    fn pre(&mut self) {
        let d = |kind, offset, len| Item::Do(Issue::now(Call::Data { kind, file: FILE, offset, len }));
        let data = self.data();
        let create =
            OpenFlags { read: true, write: true, create: true, exclusive: true, direct: self.direct, ..Default::default() };
        let rw = OpenFlags { read: true, write: true, ..Default::default() };
        self.bumps = 0;
        let q = &mut self.queue;
        match self.test {
            PUTC | PUT_BLOCK => {
                // bonnie++ makes the file anew for each write test (unlink, O_CREAT|O_EXCL).
                if self.data_exists {
                    q.push_back(Item::Do(Issue::now(Call::Unlink { name: data })));
                }
                q.push_back(Item::Do(Issue::now(Call::Open { name: data, file: FILE, flags: create })));
            }
            REWRITE | GET_BLOCK => {
                q.push_back(Item::Do(Issue::now(Call::Open { name: data, file: FILE, flags: rw })));
                q.push_back(d(OpKind::Seek(Whence::Set), 0, 0));
            }
            GETC => q.push_back(Item::Do(Issue::now(Call::Open { name: data, file: FILE, flags: rw }))),
            SEEKS => {
                // Each seeker opens the file on its own once the first thread's I/O tests have
                // made it, and their clocks start together after that (bonnie++'s seekers open
                // it, then wait for the tickets, and start the clock at the first one).
                q.push_back(Item::Barrier);
                q.push_back(Item::IfAborted);
                q.push_back(Item::Do(Issue::now(Call::Open { name: data, file: FILE, flags: rw })));
                q.push_back(Item::Barrier);
                q.push_back(Item::Start);
                return;
            }
            SEQ_CREATE | RAN_CREATE => {
                if let Some(t) = self.test_dir {
                    q.push_back(Item::Do(Issue::untimed(Call::Mkdir { name: t })));
                }
                for s in &self.subdirs {
                    q.push_back(Item::Do(Issue::untimed(Call::Mkdir { name: *s })));
                }
            }
            _ => {}
        }
        q.push_back(Item::Start);
    }

    /// Queue the test's next unit; false when its body is over.
    fn body(&mut self) -> bool {
        let u = self.unit;
        self.unit += 1;
        let chunk = self.b.chunk_size.0 as u32;
        let d = |kind, offset, len| Item::Do(Issue::now(Call::Data { kind, file: FILE, offset, len }));
        let mut q: Vec<Item> = Vec::new();
        match self.test {
            PUTC | GETC => {
                // A unit is a chunk's worth of 1-byte calls, as bonnie++ times them.
                let units = self.b.char_size.0 / chunk as u64;
                if u >= units {
                    return false;
                }
                let kind = if self.test == PUTC { OpKind::WriteCur } else { OpKind::ReadCur };
                q.push(Item::UnitStart);
                q.extend(std::iter::repeat_n(d(kind, 0, 1), chunk as usize));
                q.push(Item::UnitEnd);
                self.amount += chunk as u64;
            }
            PUT_BLOCK | GET_BLOCK => {
                if u >= self.b.blocks() {
                    return false;
                }
                let kind = if self.test == PUT_BLOCK { OpKind::WriteCur } else { OpKind::ReadCur };
                q.extend([Item::UnitStart, d(kind, 0, chunk), Item::UnitEnd]);
                self.amount += chunk as u64;
            }
            REWRITE => {
                if u >= self.b.blocks() {
                    return false;
                }
                q.extend([
                    Item::UnitStart,
                    d(OpKind::ReadCur, 0, chunk),
                    d(OpKind::Seek(Whence::Set), u * chunk as u64, 0),
                    d(OpKind::WriteCur, 0, chunk),
                    Item::UnitEnd,
                ]);
                self.amount += chunk as u64;
            }
            SEEKS => {
                if self.tickets.abort.load(Ordering::Relaxed) {
                    return false;
                }
                let Some((at, update)) = self.tickets.take() else { return false };
                let at = at * chunk as u64;
                q.extend([Item::UnitStart, d(OpKind::Seek(Whence::Set), at, 0), d(OpKind::ReadCur, 0, chunk)]);
                if update {
                    q.extend([d(OpKind::Seek(Whence::Set), at, 0), d(OpKind::WriteCur, 0, chunk)]);
                    if self.b.sync {
                        q.push(d(OpKind::Fsync, 0, 0));
                    }
                }
                q.push(Item::UnitEnd);
                self.amount += 1;
            }
            SEQ_CREATE | RAN_CREATE => {
                let Some(f) = self.files.get(u as usize).copied() else { return false };
                let flags = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
                q.push(Item::UnitStart);
                q.push(Item::Do(Issue::now(Call::Open { name: f.id, file: FILE, flags })));
                let mut left = f.size;
                while left > 0 {
                    let len = left.min(chunk as u64) as u32;
                    q.push(d(OpKind::WriteCur, 0, len));
                    left -= len as u64;
                }
                if self.b.sync {
                    q.push(d(OpKind::Fsync, 0, 0));
                    q.push(Item::Do(Issue::now(Call::FsyncDir { name: self.dir_of(f.dir) })));
                }
                q.extend([Item::Do(Issue::now(Call::Close { file: FILE })), Item::UnitEnd]);
                self.amount += 1;
            }
            SEQ_STAT | SEQ_DEL | RAN_STAT | RAN_DEL => {
                // Sequential: each directory listed (a timed readdir), its files in the order
                // listed; random: the shuffled order.
                let seq = matches!(self.test, SEQ_STAT | SEQ_DEL);
                if seq && self.order.is_empty() {
                    if self.listing >= self.b.dirs {
                        return false;
                    }
                    let dir = self.dir_of(self.listing);
                    self.listing += 1;
                    self.queue.push_back(Item::Do(Issue::now(Call::Readdir { name: dir })));
                    return true;
                }
                let Some(i) = (if seq { self.order.pop() } else { self.order.get(u as usize).copied() }) else {
                    return false;
                };
                let f = self.files[i];
                q.push(Item::UnitStart);
                if matches!(self.test, SEQ_STAT | RAN_STAT) {
                    // bonnie++'s stat_file: stat, and a file with data is read whole.
                    q.push(Item::Do(Issue::now(Call::Stat { name: f.id })));
                    if f.size > 0 {
                        let ro = OpenFlags { read: true, ..Default::default() };
                        q.push(Item::Do(Issue::now(Call::Open { name: f.id, file: FILE, flags: ro })));
                        let mut left = f.size;
                        while left > 0 {
                            let len = left.min(chunk as u64) as u32;
                            q.push(d(OpKind::ReadCur, 0, len));
                            left -= len as u64;
                        }
                        q.push(Item::Do(Issue::now(Call::Close { file: FILE })));
                    }
                } else {
                    q.push(Item::Do(Issue::now(Call::Unlink { name: f.id })));
                    if self.b.sync {
                        q.push(Item::Do(Issue::now(Call::FsyncDir { name: self.dir_of(f.dir) })));
                    }
                }
                q.push(Item::UnitEnd);
                self.amount += 1;
            }
            _ => return false,
        }
        self.queue.extend(q);
        true
    }

    /// Queue what ends the test: the file's fsync and close (bonnie++'s `Close()`), or the
    /// directories' removal and the flush (its `sync()`), then the clock's stop.
    fn post(&mut self) {
        let q = &mut self.queue;
        let top = self.top_id.unwrap_or(NameId(u32::MAX));
        match self.test {
            PUTC | PUT_BLOCK | REWRITE | GETC | GET_BLOCK => {
                q.push_back(Item::Do(Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 })));
                q.push_back(Item::Do(Issue::now(Call::Close { file: FILE })));
            }
            SEEKS => {
                // Each seeker's clock stops after its fsync and close (its own report); the
                // test's time is the slowest seeker's. Then, as bonnie++'s seeker does after
                // its report, it unlinks the data file (the first one removes it, the others
                // find it gone): a seeker still seeking keeps the file open, and the last
                // close frees its blocks inside that seeker's time, as in bonnie++. The
                // threads line up before the first one goes on to the create tests.
                q.push_back(Item::Do(Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 })));
                q.push_back(Item::Do(Issue::now(Call::Close { file: FILE })));
                q.push_back(Item::Stop);
                q.push_back(Item::Do(Issue::untimed(Call::Unlink { name: self.data_id.unwrap_or(NameId(u32::MAX)) })));
                q.push_back(Item::Barrier);
                return;
            }
            SEQ_CREATE | RAN_CREATE => q.push_back(Item::Do(Issue::now(Call::SyncFs { name: top }))),
            SEQ_DEL | RAN_DEL => {
                for s in &self.subdirs {
                    q.push_back(Item::Do(Issue::now(Call::Rmdir { name: *s })));
                }
                if let Some(t) = self.test_dir {
                    q.push_back(Item::Do(Issue::now(Call::Rmdir { name: t })));
                }
                q.push_back(Item::Do(Issue::now(Call::SyncFs { name: top })));
            }
            _ => {}
        }
        q.push_back(Item::Stop);
    }

    /// Whether the first thread runs test `t`: per-character tests with a per-character size,
    /// create tests with files.
    fn runs(&self, t: usize) -> bool {
        match t {
            PUTC | GETC => self.b.char_size.0 >= self.b.chunk_size.0,
            SEQ_CREATE..=RAN_DEL => self.b.num_files > 0,
            _ => t < 12,
        }
    }

    /// Calls that leave nothing behind (untimed): close, the data file, the create tests'
    /// files and directories, the job's directory.
    fn queue_cleanup(&mut self) {
        self.queue.clear();
        let u = |call| Item::Do(Issue::untimed(call));
        if self.open {
            self.queue.push_back(u(Call::Close { file: FILE }));
        }
        if !self.main() {
            return;
        }
        if self.data_exists {
            self.queue.push_back(u(Call::Unlink { name: self.data() }));
        }
        for (i, e) in self.exists.iter().enumerate() {
            if *e {
                self.queue.push_back(u(Call::Unlink { name: self.files[i].id }));
            }
        }
        if self.subdirs_exist {
            for s in &self.subdirs {
                self.queue.push_back(u(Call::Rmdir { name: *s }));
            }
        }
        if self.test_dir_exists {
            if let Some(t) = self.test_dir {
                self.queue.push_back(u(Call::Rmdir { name: t }));
            }
        }
        if let Some(d) = self.top_id {
            self.queue.push_back(u(Call::Rmdir { name: d }));
        }
    }

    /// Move to the next test the first thread runs (the seekers have only the one).
    fn next_test(&mut self, ctx: &mut Ctx) -> Result<(), SourceError> {
        if !self.main() {
            self.test = 12;
            return Ok(());
        }
        let from = self.test;
        self.test += 1;
        while self.test < 12 && !self.runs(self.test) {
            self.test += 1;
        }
        if from <= SEEKS && self.test > SEEKS && self.data_exists {
            // The data file goes before the create tests, as bonnie++ deletes it.
            self.queue.push_back(Item::Do(Issue::untimed(Call::Unlink { name: self.data() })));
        }
        match self.test {
            SEQ_CREATE => self.make_names(ctx, false)?,
            RAN_CREATE => self.make_names(ctx, true)?,
            RAN_STAT | RAN_DEL => self.shuffle(),
            SEQ_STAT | SEQ_DEL => {
                self.order.clear();
                self.listing = 0;
            }
            _ => {}
        }
        Ok(())
    }
}

impl Source for Bonnie {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.b) as usize
    }

    fn prime(&mut self, _slot: u32, buf: &mut [u8]) {
        buf.fill(0);
    }

    /// Each write bumps a byte of the buffer, as bonnie++ does: the block write and the
    /// rewrite (which writes back what it read) bump byte `n % chunk` before their n-th block;
    /// the other writes bump the first byte.
    fn fill(&mut self, _call: &Call, buf: &mut [u8]) {
        if buf.is_empty() {
            return;
        }
        let i = match self.test {
            PUT_BLOCK | REWRITE => {
                let i = (self.bumps % buf.len() as u64) as usize;
                self.bumps += 1;
                i
            }
            _ => 0,
        };
        buf[i] = buf[i].wrapping_add(1);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        if self.top_id.is_none() {
            if self.name_dirs(ctx).is_err() {
                return Next::Done;
            }
            if self.main() {
                // The job's directory, before the tests (not part of any).
                if let Some(top) = self.top_id {
                    self.queue.push_back(Item::Do(Issue::untimed(Call::Mkdir { name: top })));
                }
                if !self.runs(PUTC) && self.next_test(ctx).is_err() {
                    return Next::Done;
                }
            }
        }
        if ctx.ending && !self.cleaning {
            self.cleaning = true;
            self.tickets.abort.store(true, Ordering::Relaxed);
            self.queue_cleanup();
        }
        loop {
            if let Some(item) = self.queue.pop_front() {
                match item {
                    Item::Do(issue) => return Next::Issue(issue),
                    Item::Barrier => return Next::Barrier,
                    Item::IfAborted if self.tickets.abort.load(Ordering::Relaxed) => {
                        self.cleaning = true;
                        self.queue_cleanup();
                    }
                    Item::IfAborted => {}
                    Item::Start if self.test == SEEKS && self.tickets.abort.load(Ordering::Relaxed) => {
                        // The first thread stopped before the seeks: nothing to seek in.
                        self.cleaning = true;
                        self.queue_cleanup();
                    }
                    Item::Start => {
                        self.started = Some((ctx.now, cpu_now()));
                        self.latency_ns = 0;
                        self.amount = 0;
                    }
                    Item::UnitStart => self.unit_at = Some(ctx.now),
                    Item::UnitEnd => {
                        if let Some(t) = self.unit_at.take() {
                            self.latency_ns =
                                self.latency_ns.max(ctx.now.saturating_duration_since(t).as_nanos() as u64);
                        }
                    }
                    Item::Stop => {
                        if let Some((t0, c0)) = self.started.take() {
                            let secs = ctx.now.saturating_duration_since(t0).as_secs_f64();
                            let cpu = if self.main() { cpu_now() - c0 } else { 0.0 };
                            self.done[self.test] =
                                Some(Done { secs, cpu, amount: self.amount as f64, latency_ns: self.latency_ns });
                        }
                    }
                }
                continue;
            }
            if self.cleaning || self.test >= 12 {
                if !self.cleaning {
                    self.cleaning = true;
                    self.queue_cleanup();
                    continue;
                }
                return Next::Done;
            }
            match self.part {
                Part::Pre => {
                    self.pre();
                    self.part = Part::Body;
                    self.unit = 0;
                }
                Part::Body => {
                    if !self.body() {
                        self.part = Part::Post;
                    }
                }
                Part::Post => {
                    self.post();
                    self.part = Part::Over;
                }
                Part::Over => {
                    if self.next_test(ctx).is_err() {
                        return Next::Done;
                    }
                    self.part = Part::Pre;
                }
            }
        }
    }

    fn completed(&mut self, call: &Call, buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let data = self.data();
        let file_of = |name: &NameId, files: &[FileRec]| -> Option<usize> {
            let first = files.first()?.id.0;
            let i = name.0.checked_sub(first)? as usize;
            (files.get(i).map(|f| f.id) == Some(*name)).then_some(i)
        };
        match (call, r) {
            (Call::Open { name, flags, .. }, Ok(_)) => {
                self.open = true;
                if *name == data && !self.test_dir_exists {
                    self.data_exists = true;
                } else if flags.create {
                    if let Some(i) = file_of(name, &self.files) {
                        self.exists[i] = true;
                    }
                }
            }
            (Call::Close { .. }, _) => self.open = false,
            // Another seeker removed the data file first (see `post`).
            (Call::Unlink { name }, Err(e))
                if *name == data && self.test == SEEKS && e.kind() == io::ErrorKind::NotFound =>
            {
                self.data_exists = false
            }
            (Call::Unlink { name }, Ok(_)) => {
                if *name == data {
                    self.data_exists = false;
                } else if let Some(i) = file_of(name, &self.files) {
                    self.exists[i] = false;
                }
            }
            (Call::Mkdir { name }, Ok(_)) if Some(*name) == self.test_dir => self.test_dir_exists = true,
            (Call::Mkdir { name }, Ok(_)) if self.subdirs.contains(name) => self.subdirs_exist = true,
            (Call::Rmdir { name }, Ok(_)) if Some(*name) == self.test_dir => self.test_dir_exists = false,
            (Call::Rmdir { name }, Ok(_)) if self.subdirs.last() == Some(name) => self.subdirs_exist = false,
            (Call::Readdir { .. }, Ok(_)) => {
                // The files of the directory just listed, in the order listed (popped from
                // the back, so stacked in reverse).
                let d = self.listing - 1;
                let mut listed: Vec<usize> = buf
                    .split(|b| *b == 0)
                    .filter(|n| !n.is_empty() && n[0] != b'.')
                    .filter_map(|n| std::str::from_utf8(n).ok())
                    .filter_map(|n| self.by_name.get(&format!("{d}/{n}")).copied())
                    .collect();
                listed.reverse();
                self.order = listed;
            }
            _ => {}
        }
        // Where, for an error (made only then: this runs after every 1-byte call).
        let at = || match call {
            Call::Data { .. } => format!("{}/Bonnie.{}", self.dir, std::process::id()),
            _ => self.dir.clone(),
        };
        let failed = match (call, r) {
            (Call::Data { kind: OpKind::Seek(Whence::Set), .. }, Ok(_)) => None,
            (Call::Data { len, offset, .. }, Ok(n)) if *n != *len as usize => {
                Some(describe_failure(call, &at(), *len, *offset, r))
            }
            (Call::Data { len, offset, .. }, Err(_)) => Some(describe_failure(call, &at(), *len, *offset, r)),
            (Call::Mkdir { name }, Err(e)) if e.kind() == io::ErrorKind::AlreadyExists && Some(*name) == self.top_id => {
                Some(format!("{} exists (left by an interrupted run?); bonnie works only in a directory it creates: remove it or choose another job name", self.dir).into())
            }
            (Call::Rmdir { name }, Err(e)) if e.raw_os_error() == Some(libc::ENOTEMPTY) && Some(*name) == self.top_id => {
                Some(format!("{} is not empty at the end: a file iolab did not create is in it, and is left as it was", self.dir).into())
            }
            (Call::Unlink { name }, Err(e)) if *name == data && self.test == SEEKS && e.kind() == io::ErrorKind::NotFound => {
                None
            }
            // Cleaning up after an error: what is already gone is fine.
            (_, Err(e)) if self.cleaning && e.kind() == io::ErrorKind::NotFound => None,
            (_, Err(_)) => Some(describe_failure(call, &at(), 0, 0, r)),
            _ => None,
        };
        match failed {
            Some(e) => {
                // The seekers must not wait for a test that will not come.
                self.tickets.abort.store(true, Ordering::Relaxed);
                Err(e)
            }
            None => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        for (i, d) in self.done.iter().enumerate() {
            let Some(d) = d else { continue };
            out.push((AMOUNT[i], d.amount));
            out.push((LATENCY[i], d.latency_ns as f64 / 1000.0));
            // Each seeker's own time too: the seek test's is the slowest one's (combined as
            // the longest), as bonnie++ takes the first start to the last stop.
            if self.main() || i == SEEKS {
                out.push((SECS[i], d.secs));
            }
            if self.main() {
                out.push((CPU[i], if d.secs > 0.0 { 100.0 * d.cpu / d.secs } else { 0.0 }));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bonnie job on a 16 MiB file, sized for no RAM.
    fn job16() -> iolab_spec::Job {
        iolab_spec::JobPatch {
            target: Some("/t".into()),
            workload: Some(iolab_spec::WorkloadKind::Bonnie),
            ..Default::default()
        }
        .with::<BonnieJob>(|o| {
            o.bonnie_size = Some(iolab_spec::Bytes::mib(16));
            o.bonnie_ram = Some(iolab_spec::Bytes(0));
        })
        .resolve("b")
        .unwrap()
    }

    fn bonnie(j: &iolab_spec::Job) -> &BonnieJob {
        let iolab_spec::Workload::Bonnie(b) = &j.workload else { panic!("a bonnie job") };
        b
    }

    #[test]
    fn block_writes_bump_byte_n_mod_chunk_as_bonnie_does() {
        let j = job16();
        let b = bonnie(&j);
        let mut s = Bonnie::new("b", b, Arc::new(Tickets::new(b, 1)), 1, 0, false);
        let mut buf = vec![0u8; s.buffer_len()];
        s.prime(0, &mut buf);
        let call = Call::SyncFs { name: NameId(0) };
        s.test = PUT_BLOCK;
        s.bumps = 0;
        for _ in 0..buf.len() + 2 {
            s.fill(&call, &mut buf);
        }
        // Every byte bumped once, the first two twice: no zero left in the buffer.
        assert!(buf[2..].iter().all(|&x| x == 1), "each byte of the chunk bumped in turn");
        assert_eq!(&buf[..2], &[2, 2]);
        // The seekers' writes bump the first byte only.
        s.test = SEEKS;
        s.fill(&call, &mut buf);
        assert_eq!(&buf[..3], &[3, 2, 1]);
    }

    /// `--direct` is bonnie++'s -D: the write tests create the file with O_DIRECT; the rewrite,
    /// the reads and the seekers open it without, as bonnie++ 2.0 does (strace shows it).
    #[test]
    fn direct_creates_the_file_o_direct_and_reopens_it_without() {
        let j = job16();
        let b = bonnie(&j);
        let opens = |direct: bool| {
            let mut s = Bonnie::new("b", b, Arc::new(Tickets::new(b, 1)), 1, 0, direct);
            let mut flags = Vec::new();
            for test in [PUT_BLOCK, REWRITE, GET_BLOCK] {
                s.test = test;
                s.queue.clear();
                s.pre();
                flags.extend(s.queue.iter().filter_map(|i| match i {
                    Item::Do(Issue { call: Call::Open { flags, .. }, .. }) => Some((test, flags.direct)),
                    _ => None,
                }));
            }
            flags
        };
        assert_eq!(opens(true), vec![(PUT_BLOCK, true), (REWRITE, false), (GET_BLOCK, false)]);
        assert!(opens(false).iter().all(|(_, d)| !d));
    }

    #[test]
    fn tickets_are_bonnie_s_one_in_ten_updates_taken_once() {
        let j = job16();
        let b = bonnie(&j);
        let t = Tickets::new(b, 1);
        let all: Vec<_> = std::iter::from_fn(|| t.take()).collect();
        assert_eq!(all.len(), 8192);
        let updates = all.iter().filter(|x| x.1).count();
        assert!((650..990).contains(&updates), "{updates} of 8192 written back");
        assert!(all.iter().all(|x| x.0 < 2048), "chunks of the 16 MiB file");
        assert!(t.take().is_none());
    }
}
