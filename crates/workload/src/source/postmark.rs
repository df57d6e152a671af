//! PostMark 1.5x as a source: a pool of files, then transactions that pair a read or an append
//! with a create or a delete, then the pool's removal. Its random numbers come from PostMark's
//! own generator (the 1999 MT19937 seeded with Knuth's 69069 recurrence) drawn in PostMark's
//! order, so the same seed and settings make the same operations, counts and bytes as the
//! original. Each thread works in a directory of its own that it creates, and it creates every
//! file with O_EXCL there: it never writes, renames or deletes a file it did not create.

use super::{
    describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker,
};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_spec::{Job, PostmarkJob};
use std::collections::VecDeque;
use std::io;

/// PostMark's random generator: MT19937 (integer version, 1999/10/28) with `sgenrand`'s
/// 69069 seeding, as postmark.c carries it.
pub struct Mt19937 {
    mt: [u32; 624],
    mti: usize,
}

impl Mt19937 {
    pub fn new(seed: u32) -> Mt19937 {
        let mut mt = [0u32; 624];
        let mut seed = seed;
        for m in mt.iter_mut() {
            *m = seed & 0xffff_0000;
            seed = seed.wrapping_mul(69069).wrapping_add(1);
            *m |= (seed & 0xffff_0000) >> 16;
            seed = seed.wrapping_mul(69069).wrapping_add(1);
        }
        Mt19937 { mt, mti: 624 }
    }

    pub fn genrand(&mut self) -> u32 {
        const N: usize = 624;
        const M: usize = 397;
        let mag = |y: u32| if y & 1 == 1 { 0x9908_b0df } else { 0 };
        if self.mti >= N {
            for kk in 0..N {
                let y = (self.mt[kk] & 0x8000_0000) | (self.mt[(kk + 1) % N] & 0x7fff_ffff);
                self.mt[kk] = self.mt[(kk + M) % N] ^ (y >> 1) ^ mag(y);
            }
            self.mti = 0;
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// PostMark's `RND(x)`: `genrand() % x`, and no draw at all when x is 0.
    pub fn rnd(&mut self, x: u32) -> u32 {
        if x > 0 {
            self.genrand() % x
        } else {
            0
        }
    }
}

/// One of PostMark's file operations, as its algorithm decides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmOp {
    /// Create file number `name` (in location `loc` and subdirectory `dir`) in table slot
    /// `slot` with `size` bytes.
    Create {
        slot: u32,
        name: u32,
        loc: Option<u32>,
        dir: Option<u32>,
        size: u32,
    },
    Read {
        slot: u32,
        size: u32,
    },
    Append {
        slot: u32,
        bytes: u32,
    },
    Delete {
        slot: u32,
    },
}

/// Which part of the run an operation belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Pool,
    Transactions,
    Cleanup,
}

/// PostMark's algorithm without I/O: the operations it does, in order, with its counters.
pub struct Plan {
    rng: Mt19937,
    p: PostmarkJob,
    sizes: Vec<u32>,
    allocated: usize,
    pub created: u64,
    pub deleted: u64,
    pub read: u64,
    pub appended: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub transactions_done: u64,
    pub deleted_before_cleanup: u64,
    pub out_of_files: bool,
    stage: Stage,
    next_pool: u32,
    next_cleanup: usize,
    queued: VecDeque<PmOp>,
    /// The first bytes of PostMark's text buffer (what its writes carry).
    pub text: Vec<u8>,
    /// PostMark's weighted location index: a location's number once per unit of its weight.
    locations: Vec<u32>,
}

impl Plan {
    pub fn new(p: &PostmarkJob, seed: u32, text_len: usize) -> Plan {
        let mut rng = Mt19937::new(seed);
        // initialize_file_source: 2H printable bytes, drawn before anything else.
        let n = 2 * p.size_high as usize;
        let mut text = Vec::with_capacity(text_len.min(n));
        for i in 0..n {
            let c = 32 + rng.rnd(95) as u8;
            if i < text_len {
                text.push(c);
            }
        }
        Plan {
            rng,
            p: p.clone(),
            sizes: vec![0; 2 * p.number as usize],
            allocated: 0,
            created: 0,
            deleted: 0,
            read: 0,
            appended: 0,
            bytes_read: 0,
            bytes_written: 0,
            transactions_done: 0,
            deleted_before_cleanup: 0,
            out_of_files: false,
            stage: Stage::Pool,
            next_pool: 0,
            next_cleanup: 0,
            queued: VecDeque::new(),
            text,
            // build_location_index: each location's index repeated by its weight.
            locations: p
                .locations
                .iter()
                .enumerate()
                .flat_map(|(i, (_, w))| std::iter::repeat_n(i as u32, *w as usize))
                .collect(),
        }
    }

    fn find_free(&mut self) -> Option<usize> {
        if self.allocated < self.sizes.len() && self.sizes[self.allocated] == 0 {
            self.allocated += 1;
            return Some(self.allocated - 1);
        }
        let i = self.sizes.iter().position(|s| *s == 0)?;
        self.allocated = i + 1;
        Some(i)
    }

    fn find_used(&mut self) -> usize {
        loop {
            let i = self.rng.rnd(self.sizes.len() as u32) as usize;
            if self.sizes[i] != 0 {
                return i;
            }
        }
    }

    fn create(&mut self) -> Option<PmOp> {
        let slot = self.find_free()?;
        // create_file_name: the location (drawn by weight when there are several), then the
        // subdirectory, then the name.
        let loc = match self.locations.len() {
            0 => None,
            1 => Some(0),
            n => Some(self.locations[self.rng.rnd(n as u32) as usize]),
        };
        let dir = (self.p.subdirectories > 1).then(|| self.rng.rnd(self.p.subdirectories));
        self.created += 1;
        let size = self.p.size_low + self.rng.rnd(self.p.size_high - self.p.size_low);
        self.sizes[slot] = size;
        self.bytes_written += size as u64;
        Some(PmOp::Create { slot: slot as u32, name: self.created as u32, loc, dir, size })
    }

    fn delete(&mut self, slot: usize) -> Option<PmOp> {
        if self.sizes[slot] == 0 {
            return None;
        }
        self.sizes[slot] = 0;
        self.deleted += 1;
        Some(PmOp::Delete { slot: slot as u32 })
    }

    /// The stage the next operation belongs to.
    pub fn stage(&self) -> Stage {
        if self.queued.is_empty() {
            self.stage
        } else {
            Stage::Transactions
        }
    }

    /// Ends the run early (Ctrl-C, a deadline): no new transaction and no more of the pool; the
    /// transaction under way finishes (its operations are already counted, and a queued delete
    /// has already freed its slot) and the cleanup removes every file created.
    pub fn stop(&mut self) {
        if self.stage == Stage::Cleanup {
            return;
        }
        self.p.transactions = self.transactions_done.min(self.p.transactions as u64) as u32;
        if self.stage == Stage::Pool {
            self.next_pool = self.p.number;
        }
    }

    /// The next operation, or `None` at the end.
    pub fn next_op(&mut self) -> Option<PmOp> {
        loop {
            if let Some(op) = self.queued.pop_front() {
                return Some(op);
            }
            match self.stage {
                Stage::Pool => {
                    if self.next_pool < self.p.number {
                        self.next_pool += 1;
                        if let Some(op) = self.create() {
                            return Some(op);
                        }
                    } else {
                        self.stage = Stage::Transactions;
                    }
                }
                Stage::Transactions => {
                    if self.transactions_done >= self.p.transactions as u64 {
                        self.deleted_before_cleanup = self.deleted;
                        self.stage = Stage::Cleanup;
                        continue;
                    }
                    if self.created == self.deleted {
                        self.out_of_files = true;
                        self.deleted_before_cleanup = self.deleted;
                        self.stage = Stage::Cleanup;
                        continue;
                    }
                    self.transactions_done += 1;
                    if self.p.bias_read != -1 {
                        let read = (self.rng.rnd(10) as i32) < self.p.bias_read as i32;
                        let slot = self.find_used();
                        let size = self.sizes[slot];
                        if read {
                            self.read += 1;
                            self.bytes_read += size as u64;
                            self.queued.push_back(PmOp::Read { slot: slot as u32, size });
                        } else if size < self.p.size_high {
                            let bytes = self.rng.rnd(self.p.size_high - size) + 1;
                            self.sizes[slot] += bytes;
                            self.appended += 1;
                            self.bytes_written += bytes as u64;
                            self.queued.push_back(PmOp::Append { slot: slot as u32, bytes });
                        }
                    }
                    if self.p.bias_create != -1 {
                        if (self.rng.rnd(10) as i32) < self.p.bias_create as i32 {
                            if let Some(op) = self.create() {
                                self.queued.push_back(op);
                            }
                        } else {
                            let slot = self.find_used();
                            if let Some(op) = self.delete(slot) {
                                self.queued.push_back(op);
                            }
                        }
                    }
                }
                Stage::Cleanup => {
                    while self.next_cleanup < self.sizes.len() {
                        let slot = self.next_cleanup;
                        self.next_cleanup += 1;
                        if let Some(op) = self.delete(slot) {
                            return Some(op);
                        }
                    }
                    return None;
                }
            }
        }
    }
}

const FILE: u32 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    MakeRoot,
    MakeSubdirs(u32),
    Ops,
    /// Moving data: `left` bytes, then an fsync if asked, then close.
    Data {
        kind: OpKind,
        left: u64,
        chunk: u32,
        sync: bool,
    },
    Close,
    RemoveSubdirs(u32),
    RemoveRoot,
    Done,
}

impl PersonalitySource for PostmarkJob {
    type Shared = ();
    fn shared(&self, _job: &Job) -> Result<(), SourceError> {
        Ok(())
    }
    fn source<R: Run>(&self, w: &Worker<'_, ()>, run: R) -> R::Out {
        run.run(Ok(Postmark::new(&w.job.name, self, w.thread)))
    }
}

/// The PostMark source for one thread.
pub struct Postmark {
    p: PostmarkJob,
    plan: Plan,
    dir: String,
    root: Option<NameId>,
    subdirs: Vec<NameId>,
    /// The directories to make inside the thread's own (locations, subdirectories).
    dir_list: Vec<String>,
    names: Vec<Option<NameId>>,
    step: Step,
    started: Option<Stamp>,
    t_start: Option<Stamp>,
    t_end: Option<Stamp>,
    end: Option<Stamp>,
    current: String,
    stopped: bool,
    out_of_files_error: Option<String>,
}

impl Postmark {
    /// Thread `thread` of job `job` works in `iolab.<job>.<thread>` under the target directory.
    pub fn new(job: &str, p: &PostmarkJob, thread: u32) -> Postmark {
        let chunk = p.chunk() as usize;
        Postmark {
            plan: Plan::new(p, p.pm_seed.wrapping_add(thread), chunk),
            p: p.clone(),
            dir: format!("iolab.{job}.{thread}"),
            root: None,
            subdirs: Vec::new(),
            dir_list: Vec::new(),
            names: vec![None; 2 * p.number as usize],
            step: Step::MakeRoot,
            started: None,
            t_start: None,
            t_end: None,
            end: None,
            current: String::new(),
            stopped: false,
            out_of_files_error: None,
        }
    }

    fn path_of(&self, name: u32, loc: Option<u32>, dir: Option<u32>) -> String {
        let mut p = self.dir.clone();
        if let Some(l) = loc {
            p.push_str(&format!("/loc{l}"));
        }
        if let Some(d) = dir {
            p.push_str(&format!("/s{d}"));
        }
        format!("{p}/{name}")
    }

    /// The directories inside the thread's own, parents first: each location's (`loc<N>`)
    /// and the subdirectories `s0..` in each location (or in the thread's directory).
    fn subdir_paths(&self) -> Vec<String> {
        let subs = |base: &str| -> Vec<String> {
            if self.p.subdirectories > 1 {
                (0..self.p.subdirectories).map(|i| format!("{base}/s{i}")).collect()
            } else {
                Vec::new()
            }
        };
        if self.p.locations.is_empty() {
            return subs(&self.dir);
        }
        let mut out = Vec::new();
        for l in 0..self.p.locations.len() {
            let loc = format!("{}/loc{l}", self.dir);
            out.push(loc.clone());
            out.extend(subs(&loc));
        }
        out
    }

    /// PostMark's figures, under its names: counts, seconds and rates per second.
    pub fn figures(&self) -> Vec<(&'static str, f64)> {
        let secs = |a: Option<Stamp>, b: Option<Stamp>| match (a, b) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let pl = &self.plan;
        let pool = self.p.number as u64;
        let created_alone = pool.min(pl.created);
        let deleted_alone = pl.deleted - pl.deleted_before_cleanup;
        vec![
            ("transactions", pl.transactions_done as f64),
            ("created", pl.created as f64),
            ("created_alone", created_alone as f64),
            ("created_mixed", (pl.created - created_alone) as f64),
            ("read", pl.read as f64),
            ("appended", pl.appended as f64),
            ("deleted", pl.deleted as f64),
            ("deleted_alone", deleted_alone as f64),
            ("deleted_mixed", pl.deleted_before_cleanup as f64),
            ("bytes_read", pl.bytes_read as f64),
            ("bytes_written", pl.bytes_written as f64),
            ("elapsed_s", secs(self.started, self.end)),
            ("creation_s", secs(self.started, self.t_start)),
            ("transactions_s", secs(self.t_start, self.t_end)),
            ("deletion_s", secs(self.t_end, self.end)),
        ]
    }

    fn mark_stage(&mut self, now: Stamp) {
        match self.plan.stage() {
            Stage::Transactions if self.t_start.is_none() => self.t_start = Some(now),
            Stage::Cleanup if self.t_end.is_none() => {
                self.t_start.get_or_insert(now);
                self.t_end = Some(now);
            }
            _ => {}
        }
    }
}

impl Source for Postmark {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.p) as usize
    }

    fn prime(&mut self, _slot: u32, buf: &mut [u8]) {
        let n = buf.len().min(self.plan.text.len());
        buf[..n].copy_from_slice(&self.plan.text[..n]);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        self.started.get_or_insert(ctx.now);
        let call = loop {
            match self.step {
                Step::MakeRoot => {
                    let Ok(name) = ctx.names.add(&self.dir) else { return Next::Done };
                    self.root = Some(name);
                    self.dir_list = self.subdir_paths();
                    self.step = Step::MakeSubdirs(0);
                    break Call::Mkdir { name };
                }
                Step::MakeSubdirs(i) if (i as usize) < self.dir_list.len() => {
                    let Ok(name) = ctx.names.add(&self.dir_list[i as usize]) else { return Next::Done };
                    self.subdirs.push(name);
                    self.step = Step::MakeSubdirs(i + 1);
                    break Call::Mkdir { name };
                }
                Step::MakeSubdirs(_) => {
                    self.step = Step::Ops;
                    self.started = Some(ctx.now); // PostMark's clock starts after its directories
                }
                Step::Ops => {
                    // Ctrl-C or the deadline: stop the transactions, still remove the files. The
                    // operations of the transaction under way stay queued and are done: the plan
                    // has already counted them (a queued delete has freed its slot, so dropping
                    // it would leave its file behind and the directory could not be removed).
                    if ctx.ending && !self.stopped {
                        self.stopped = true;
                        self.plan.stop();
                    }
                    let op = self.plan.next_op();
                    self.mark_stage(ctx.now);
                    let Some(op) = op else {
                        self.mark_stage(ctx.now);
                        self.end = Some(ctx.now);
                        self.step = Step::RemoveSubdirs(0);
                        continue;
                    };
                    match op {
                        PmOp::Create { slot, name, loc, dir, size } => {
                            self.current = self.path_of(name, loc, dir);
                            let Ok(id) = ctx.names.add(&self.current) else { return Next::Done };
                            self.names[slot as usize] = Some(id);
                            let flags = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
                            let chunk = self.p.write_call();
                            self.step =
                                Step::Data { kind: OpKind::WriteCur, left: size as u64, chunk, sync: self.p.fsync };
                            break Call::Open { name: id, file: FILE, flags };
                        }
                        PmOp::Read { slot, size } => {
                            let Some(id) = self.names[slot as usize] else { continue };
                            let chunk = self.p.read_call();
                            self.step = Step::Data { kind: OpKind::ReadCur, left: size as u64, chunk, sync: false };
                            break Call::Open {
                                name: id,
                                file: FILE,
                                flags: OpenFlags { read: true, ..Default::default() },
                            };
                        }
                        PmOp::Append { slot, bytes } => {
                            let Some(id) = self.names[slot as usize] else { continue };
                            let chunk = self.p.write_call();
                            self.step =
                                Step::Data { kind: OpKind::WriteCur, left: bytes as u64, chunk, sync: self.p.fsync };
                            let flags = OpenFlags { write: true, append: true, ..Default::default() };
                            break Call::Open { name: id, file: FILE, flags };
                        }
                        PmOp::Delete { slot } => {
                            let Some(id) = self.names[slot as usize].take() else { continue };
                            break Call::Unlink { name: id };
                        }
                    }
                }
                Step::Data { kind, left, chunk, sync } => {
                    if left > 0 {
                        let len = (chunk as u64).min(left) as u32;
                        self.step = Step::Data { kind, left: left - len as u64, chunk, sync };
                        break Call::Data { kind, file: FILE, offset: 0, len };
                    }
                    self.step = Step::Close;
                    if sync {
                        break Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 };
                    }
                }
                Step::Close => {
                    self.step = Step::Ops;
                    break Call::Close { file: FILE };
                }
                Step::RemoveSubdirs(i) if (i as usize) < self.subdirs.len() => {
                    // Children before their parents: the list in reverse.
                    self.step = Step::RemoveSubdirs(i + 1);
                    break Call::Rmdir { name: self.subdirs[self.subdirs.len() - 1 - i as usize] };
                }
                Step::RemoveSubdirs(_) => {
                    self.step = Step::RemoveRoot;
                }
                Step::RemoveRoot => {
                    self.step = Step::Done;
                    if self.plan.out_of_files {
                        self.out_of_files_error = Some(format!(
                            "out of files after {} of {} transactions: the pool of {} files ran dry with bias create {} ({}; {}; {}); increase `set number`, decrease `set transactions` or raise `set bias create`",
                            self.plan.transactions_done,
                            self.p.transactions,
                            self.p.number,
                            self.p.bias_create,
                            self.p.origin_of("number"),
                            self.p.origin_of("transactions"),
                            self.p.origin_of("bias_create"),
                        ));
                    }
                    let Some(name) = self.root else { continue };
                    break Call::Rmdir { name };
                }
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let path = match call {
            Call::Mkdir { .. } | Call::Rmdir { .. } => self.dir.clone(),
            _ => self.current.clone(),
        };
        match (call, r) {
            (Call::Mkdir { .. }, Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => Err(format!(
                "{path} exists in the target directory (left by an interrupted run?); PostMark works only in a directory it creates: remove it or choose another job name"
            )
            .into()),
            (Call::Data { kind, len, .. }, Ok(n)) if kind.reads() || kind.writes() => {
                if *n != *len as usize {
                    Err(describe_failure(call, &path, *len, 0, r))
                } else {
                    Ok(())
                }
            }
            (Call::Rmdir { .. }, Ok(_)) if self.step == Step::Done => match self.out_of_files_error.take() {
                Some(e) => Err(e.into()),
                None => Ok(()),
            },
            (_, Ok(_)) => Ok(()),
            (Call::Data { len, .. }, Err(_)) => Err(describe_failure(call, &path, *len, 0, r)),
            (_, Err(_)) => Err(describe_failure(call, &path, 0, 0, r)),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        Postmark::figures(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(number: u32, transactions: u32) -> PostmarkJob {
        PostmarkJob {
            size_low: 500,
            size_high: 10000,
            number,
            transactions,
            read: 512,
            write: 512,
            bias_read: 5,
            bias_create: 5,
            subdirectories: 0,
            buffering: true,
            pm_seed: 42,
            fsync: false,
            locations: Vec::new(),
            origin: Default::default(),
        }
    }

    fn run_plan(p: &PostmarkJob) -> Plan {
        let mut plan = Plan::new(p, p.pm_seed, 0);
        while plan.next_op().is_some() {}
        plan
    }

    #[test]
    fn same_counts_and_bytes_as_the_real_postmark() {
        // Debian's postmark 1.53 on its defaults (seed 42): 764 created, 243 read, 257
        // appended, 764 deleted (236 mixed with transactions); 4,662,068 bytes written (strace).
        let p = run_plan(&job(500, 500));
        assert_eq!((p.created, p.read, p.appended, p.deleted, p.deleted_before_cleanup), (764, 243, 257, 764, 236));
        assert_eq!((p.bytes_read, p.bytes_written, p.out_of_files), (1_430_770, 4_662_068, false));
        // set size 1024 262144, transactions 1000, bias read 7, bias create 5,
        // subdirectories 4, seed 7: 1022 created, 675 read, 325 appended, 478 deleted mixed,
        // 151,454,292 bytes written and 97,564,646 read (strace of the real tool).
        let mut j = job(500, 1000);
        (j.size_low, j.size_high, j.bias_read, j.subdirectories, j.pm_seed) = (1024, 262144, 7, 4, 7);
        let p = run_plan(&j);
        assert_eq!((p.created, p.read, p.appended, p.deleted_before_cleanup), (1022, 675, 325, 478));
        assert_eq!((p.bytes_read, p.bytes_written), (97_564_646, 151_454_292));
        // bias create 3 runs the pool dry, as PostMark says ("out of files!").
        j.bias_create = 3;
        j.transactions = 2000;
        let p = run_plan(&j);
        assert!(p.out_of_files && p.transactions_done < 2000);
    }

    #[test]
    fn a_stop_at_any_point_still_removes_every_file() {
        // Files as the source would make them: a create adds its slot, a delete removes it.
        let mut j = job(50, 200);
        j.subdirectories = 3;
        let total = {
            let mut p = Plan::new(&j, 9, 0);
            std::iter::from_fn(|| p.next_op()).count()
        };
        for k in 0..total {
            let mut p = Plan::new(&j, 9, 0);
            let mut live = std::collections::HashSet::new();
            let apply = |op: PmOp, live: &mut std::collections::HashSet<u32>| match op {
                PmOp::Create { slot, .. } => assert!(live.insert(slot), "slot {slot} created twice"),
                PmOp::Delete { slot } => assert!(live.remove(&slot), "slot {slot} deleted but never created"),
                PmOp::Read { slot, .. } | PmOp::Append { slot, .. } => assert!(live.contains(&slot)),
            };
            for _ in 0..k {
                let op = p.next_op().expect("fewer operations than the full run");
                apply(op, &mut live);
            }
            p.stop();
            while let Some(op) = p.next_op() {
                apply(op, &mut live);
            }
            assert!(live.is_empty(), "stopped after {k} operations: {} files left", live.len());
            assert_eq!(p.created, p.deleted);
        }
    }

    #[test]
    fn the_algorithm_balances_its_books() {
        let mut p = Plan::new(&job(500, 500), 42, 0);
        let mut n = 0;
        while let Some(_op) = p.next_op() {
            n += 1;
        }
        assert_eq!(p.created, p.deleted);
        assert_eq!(n as u64, p.created + p.deleted + p.read + p.appended);
        assert_eq!(p.transactions_done, 500);
    }
}
