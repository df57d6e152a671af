//! bonnie++ 2.0's tests, one after another in one thread, in a directory of its own
//! (`iolab.<job>.<thread>`, made with O_EXCL): per-character write (1-byte write(2) calls, as
//! bonnie++ 2.0 issues them, over the first 3 MiB), block write, rewrite (read a chunk, dirty
//! it, seek back, write), per-character read, block read, random seeks (lseek and read of a
//! chunk, one in ten written back), then sequential and random create, stat and delete of empty
//! files. Each test's rate and %CPU (the process's CPU time over the test's wall time, as
//! bonnie++ takes it from getrusage) are the workload figures, under bonnie++'s CSV names;
//! [`csv_line`] prints them as bonnie++'s `-q` line. bonnie++'s 5 seekers are one here: the
//! 8192 seeks run in this thread, one after another.

use super::{describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, Source};
use crate::clock::Stamp;
use iolab_engine::{OpKind, Whence};
use iolab_spec::BonnieJob;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::PathBuf;

const FILE: u32 = 0;

/// The tests in bonnie++'s order, with their CSV names.
const TESTS: [&str; 12] = [
    "putc",
    "put_block",
    "rewrite",
    "getc",
    "get_block",
    "seeks",
    "seq_create",
    "seq_stat",
    "seq_del",
    "ran_create",
    "ran_stat",
    "ran_del",
];
const CPU: [&str; 12] = [
    "putc_cpu",
    "put_block_cpu",
    "rewrite_cpu",
    "getc_cpu",
    "get_block_cpu",
    "seeks_cpu",
    "seq_create_cpu",
    "seq_stat_cpu",
    "seq_del_cpu",
    "ran_create_cpu",
    "ran_stat_cpu",
    "ran_del_cpu",
];

/// One finished test: wall seconds, CPU seconds, and what it did (bytes, seeks or files).
#[derive(Debug, Clone, Copy, Default)]
struct Done {
    secs: f64,
    cpu: f64,
    amount: f64,
}

pub struct Bonnie {
    b: BonnieJob,
    root: PathBuf,
    dir: String,
    rng: Xoshiro256PlusPlus,
    /// The test running (index into TESTS; 12 is the cleanup).
    test: usize,
    /// Units of the test queued so far.
    unit: u64,
    queue: VecDeque<Call>,
    started: Option<(Stamp, f64)>,
    done: [Option<Done>; 12],
    data_id: Option<NameId>,
    dir_id: Option<NameId>,
    names: Vec<NameId>,
    /// Which create-test files exist (the sequential set, then the random set).
    exists: Vec<bool>,
    /// Orders of the random tests.
    orders: [Vec<usize>; 3],
    data_exists: bool,
    open: bool,
    cleaning: bool,
    current: String,
}

fn cpu_now() -> f64 {
    let c = crate::cpu::process_cpu();
    c.user_s + c.system_s
}

impl Bonnie {
    pub fn new(job: &str, b: &BonnieJob, seed: u64, thread: u32, root: PathBuf) -> Bonnie {
        Bonnie {
            b: b.clone(),
            root,
            dir: format!("iolab.{job}.{thread}"),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x626f_6e6e_6965_0000 ^ thread as u64),
            test: 0,
            unit: 0,
            queue: VecDeque::new(),
            started: None,
            done: [None; 12],
            data_id: None,
            dir_id: None,
            names: Vec::new(),
            exists: Vec::new(),
            orders: [Vec::new(), Vec::new(), Vec::new()],
            data_exists: false,
            open: false,
            cleaning: false,
            current: String::new(),
        }
    }

    fn files(&self) -> usize {
        self.b.num_files as usize * 1024
    }

    /// Register the names: the data file, then the create tests' files (bonnie++'s names: a
    /// 7-digit number and up to 12 random characters).
    fn name_all(&mut self, ctx: &mut Ctx) -> Result<(), String> {
        self.dir_id = Some(ctx.names.add(&self.dir)?);
        self.data_id = Some(ctx.names.add(format!("{}/Bonnie.data", self.dir))?);
        let n = self.files();
        const ALNUM: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        for set in 0..2 {
            for i in 0..n {
                let len = self.rng.random_range(0..=12usize);
                let tail: String = (0..len).map(|_| ALNUM[self.rng.random_range(0..ALNUM.len())] as char).collect();
                // The random set's names start with random characters, so they do not sort in order.
                let name = if set == 0 { format!("{i:07}{tail}") } else { format!("{tail}{i:07}") };
                self.names.push(ctx.names.add(format!("{}/{name}", self.dir))?);
            }
        }
        self.exists = vec![false; 2 * n];
        for o in self.orders.iter_mut() {
            *o = (n..2 * n).collect();
            o.shuffle(&mut self.rng);
        }
        Ok(())
    }

    /// Which create-test file a name is: they were registered one after another, so the
    /// index is the distance from the first (a search would make the create tests quadratic).
    fn index(&self, name: NameId) -> Option<usize> {
        let first = self.names.first()?.0;
        let i = name.0.checked_sub(first)? as usize;
        (self.names.get(i) == Some(&name)).then_some(i)
    }

    fn data(&self) -> NameId {
        self.data_id.unwrap_or(NameId(u32::MAX))
    }

    /// Queue the calls of the test's next unit; false when the test is over.
    fn queue_unit(&mut self) -> bool {
        let u = self.unit;
        self.unit += 1;
        let chunk = self.b.chunk_size.0 as u32;
        let blocks = self.b.blocks();
        let chars = self.b.char_size.0;
        let data = self.data();
        let n = self.files() as u64;
        let rw = OpenFlags { read: true, write: true, ..Default::default() };
        let create = OpenFlags { create: true, exclusive: true, ..rw };
        let ro = OpenFlags { read: true, ..Default::default() };
        let d = |kind, offset, len| Call::Data { kind, file: FILE, offset, len };
        let q = &mut self.queue;
        // A test over a file: open, `body` units, then the calls after.
        let framed = |q: &mut VecDeque<Call>, open: OpenFlags, body: u64, pre: &[Call]| -> Option<u64> {
            if u == 0 {
                q.extend(pre.iter().copied());
                q.push_back(Call::Open { name: data, file: FILE, flags: open });
                None
            } else if u <= body {
                Some(u - 1)
            } else if u == body + 1 {
                if open.write {
                    q.push_back(d(OpKind::Fsync, 0, 0));
                }
                q.push_back(Call::Close { file: FILE });
                None
            } else {
                None
            }
        };
        let over = |q: &VecDeque<Call>| q.is_empty();
        match self.test {
            0 => {
                if framed(q, create, chars, &[]).is_some() {
                    q.push_back(d(OpKind::WriteCur, 0, 1));
                }
            }
            1 => {
                if framed(q, create, blocks, &[Call::Unlink { name: data }]).is_some() {
                    q.push_back(d(OpKind::WriteCur, 0, chunk));
                }
            }
            2 => {
                if let Some(j) = framed(q, rw, blocks, &[]) {
                    q.push_back(d(OpKind::ReadCur, 0, chunk));
                    q.push_back(d(OpKind::Seek(Whence::Set), j * chunk as u64, 0));
                    q.push_back(d(OpKind::WriteCur, 0, chunk));
                }
            }
            3 => {
                if framed(q, ro, chars, &[]).is_some() {
                    q.push_back(d(OpKind::ReadCur, 0, 1));
                }
            }
            4 => {
                if framed(q, ro, blocks, &[]).is_some() {
                    q.push_back(d(OpKind::ReadCur, 0, chunk));
                }
            }
            5 => {
                if framed(q, rw, self.b.seeks as u64, &[]).is_some() {
                    let at = self.rng.random_range(0..blocks.max(1)) * chunk as u64;
                    q.push_back(d(OpKind::Seek(Whence::Set), at, 0));
                    q.push_back(d(OpKind::ReadCur, 0, chunk));
                    if self.rng.random_range(0..10u32) == 0 {
                        q.push_back(d(OpKind::Seek(Whence::Set), at, 0));
                        q.push_back(d(OpKind::WriteCur, 0, chunk));
                    }
                }
            }
            t @ 6..=11 => {
                if u >= n {
                    return false;
                }
                let i = match t {
                    6..=8 => u as usize,
                    9 => self.orders[0][u as usize],
                    10 => self.orders[1][u as usize],
                    _ => self.orders[2][u as usize],
                };
                let name = self.names[i];
                match t {
                    6 | 9 => {
                        let flags = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
                        q.push_back(Call::Open { name, file: FILE, flags });
                        q.push_back(Call::Close { file: FILE });
                    }
                    7 | 10 => q.push_back(Call::Stat { name }),
                    _ => q.push_back(Call::Unlink { name }),
                }
            }
            _ => return false,
        }
        !over(q)
    }

    fn amount(&self, test: usize) -> f64 {
        match test {
            0 | 3 => self.b.char_size.0 as f64,
            1 | 2 | 4 => (self.b.blocks() * self.b.chunk_size.0) as f64,
            5 => self.b.seeks as f64,
            _ => self.files() as f64,
        }
    }

    /// Calls that leave nothing behind: close, delete the data file and the created files, the
    /// directory.
    fn queue_cleanup(&mut self) {
        self.queue.clear();
        if self.open {
            self.queue.push_back(Call::Close { file: FILE });
        }
        if self.data_exists {
            self.queue.push_back(Call::Unlink { name: self.data() });
        }
        for (i, e) in self.exists.iter().enumerate() {
            if *e {
                self.queue.push_back(Call::Unlink { name: self.names[i] });
            }
        }
        if let Some(d) = self.dir_id {
            self.queue.push_back(Call::Rmdir { name: d });
        }
    }
}

impl Source for Bonnie {
    fn buffer_len(&self) -> usize {
        self.b.chunk_size.0 as usize
    }

    fn setup(&mut self) -> Result<Vec<super::SetupFile>, String> {
        let top = self.root.join(&self.dir);
        std::fs::create_dir(&top).map_err(|e| {
            format!(
                "creating {}: {e} (left by an interrupted run? remove it or choose another job name)",
                top.display()
            )
        })?;
        Ok(Vec::new())
    }

    fn prime(&mut self, _slot: u32, buf: &mut [u8]) {
        buf.fill(0);
    }

    /// Rewrite dirties what it read; the seekers' writes too (bonnie++ bumps a byte).
    fn fill(&mut self, _call: &Call, buf: &mut [u8]) {
        if let Some(b) = buf.first_mut() {
            *b = b.wrapping_add(1);
        }
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        if self.dir_id.is_none() && self.name_all(ctx).is_err() {
            return Next::Done;
        }
        if ctx.ending && !self.cleaning {
            self.cleaning = true;
            self.queue_cleanup();
        }
        loop {
            if let Some(call) = self.queue.pop_front() {
                if !self.cleaning && self.started.is_none() {
                    self.started = Some((ctx.now, cpu_now()));
                }
                return Next::Issue(Issue::now(call));
            }
            if self.cleaning {
                return Next::Done;
            }
            if self.queue_unit() {
                continue;
            }
            // The test is over.
            if let Some((t0, c0)) = self.started.take() {
                let secs = ctx.now.saturating_duration_since(t0).as_secs_f64();
                self.done[self.test] = Some(Done { secs, cpu: cpu_now() - c0, amount: self.amount(self.test) });
            }
            self.test += 1;
            self.unit = 0;
            if self.test == 6 && self.data_exists {
                // The data file goes before the create tests, as bonnie++ deletes it.
                self.queue.push_back(Call::Unlink { name: self.data() });
            }
            if self.test >= 12 {
                self.cleaning = true;
                self.queue_cleanup();
            }
        }
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), String> {
        let data = self.data();
        match (call, r) {
            (Call::Open { name, flags, .. }, Ok(_)) => {
                self.open = true;
                if *name == data {
                    self.data_exists = true;
                } else if flags.create {
                    if let Some(i) = self.index(*name) {
                        self.exists[i] = true;
                    }
                }
            }
            (Call::Close { .. }, _) => self.open = false,
            (Call::Unlink { name }, Ok(_)) => {
                if *name == data {
                    self.data_exists = false;
                } else if let Some(i) = self.index(*name) {
                    self.exists[i] = false;
                }
            }
            _ => {}
        }
        self.current = format!("{}/{}", self.dir, if matches!(call, Call::Data { .. }) { "Bonnie.data" } else { "" });
        match (call, r) {
            (Call::Data { kind: OpKind::Seek(Whence::Set), .. }, Ok(_)) => Ok(()),
            (Call::Data { len, offset, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &self.current, *len, *offset, r))
            }
            (Call::Data { len, offset, .. }, Err(_)) => Err(describe_failure(call, &self.current, *len, *offset, r)),
            (_, Err(_)) => Err(describe_failure(call, &self.current, 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        for (i, d) in self.done.iter().enumerate() {
            let Some(d) = d else { continue };
            if i >= 6 && self.files() == 0 {
                continue;
            }
            let rate = if d.secs > 0.0 { d.amount / d.secs } else { 0.0 };
            // Bytes go as K/sec, as bonnie++ reports them.
            let rate = if i <= 4 { rate / 1024.0 } else { rate };
            out.push((TESTS[i], rate));
            out.push((CPU[i], if d.secs > 0.0 { 100.0 * d.cpu / d.secs } else { 0.0 }));
        }
        out
    }
}

/// bonnie++ 2.0's CSV line (its `-q` output, what bon_csv2html and bon_csv2txt read): format
/// 1.98, version, name, concurrency, seed, size, chunk size, seeks, seekers, the six file tests
/// with %CPU, the create tests' parameters and results, then twelve latencies (left empty:
/// iolab's latencies are in the JSON).
pub fn csv_line(b: &BonnieJob, name: &str, seed: u64, f: &BTreeMap<String, f64>) -> String {
    let v = |k: &str| f.get(k).map(|x| format!("{}", x.round() as u64)).unwrap_or_default();
    let mut cols: Vec<String> = vec![
        "1.98".into(),
        "2.00a".into(),
        name.replace(',', " "),
        "1".into(),
        (seed as u32).to_string(),
        format!("{}M", b.file_size.0 >> 20),
        if b.chunk_size.0 == 8192 { String::new() } else { b.chunk_size.0.to_string() },
        b.seeks.to_string(),
        "5".into(),
    ];
    for t in 0..6 {
        cols.push(v(TESTS[t]));
        cols.push(v(CPU[t]));
    }
    if b.num_files > 0 {
        cols.push(b.num_files.to_string());
    } else {
        cols.push(String::new());
    }
    cols.extend(std::iter::repeat_n(String::new(), 4));
    for t in 6..12 {
        cols.push(v(TESTS[t]));
        cols.push(v(CPU[t]));
    }
    cols.extend(std::iter::repeat_n(String::new(), 12));
    cols.join(",")
}
