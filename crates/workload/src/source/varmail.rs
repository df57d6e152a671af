//! filebench's varmail flow, one thread per source, on a file set of its own (its share of
//! `nfiles`, in `iolab.<job>.<thread>`): the set is made before the start (80% of the files,
//! gamma-sized around the mean, as filebench preallocates), then the thread loops over the
//! thirteen flowops — delete, create, append, fsync, close, open, read whole, append, fsync,
//! close, open, read whole, close — picking files round-robin (filebench's rotor). At the end
//! it removes its files and directory. It creates every file itself (O_EXCL).

use super::{describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, SetupFile, Source};
use iolab_engine::OpKind;
use iolab_spec::VarmailJob;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::{self, Write};
use std::path::PathBuf;

const FILE: u32 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Flowop `n` of the loop (0..13).
    Flow(u8),
    /// Reading the open file whole: bytes left, then flowop `then`.
    Reading {
        left: u64,
        then: u8,
    },
    CloseForEnd,
    Cleanup(usize),
    RemoveDir,
    Done,
}

pub struct Varmail {
    v: VarmailJob,
    root: PathBuf,
    dir: String,
    rng: Xoshiro256PlusPlus,
    sizes: Vec<Option<u64>>,
    ids: Vec<NameId>,
    dir_id: Option<NameId>,
    rotor: usize,
    open: Option<usize>,
    step: Step,
    loops: u64,
    flowops: u64,
    current: String,
    window: (Option<crate::clock::Stamp>, Option<crate::clock::Stamp>),
}

impl Varmail {
    pub fn new(job: &str, v: &VarmailJob, seed: u64, thread: u32, threads: u32, root: PathBuf) -> Varmail {
        let n = (v.nfiles / threads + u32::from(thread < v.nfiles % threads)) as usize;
        Varmail {
            v: v.clone(),
            root,
            dir: format!("iolab.{job}.{thread}"),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7661_726d_6169_6c00 ^ thread as u64),
            sizes: vec![None; n],
            ids: Vec::new(),
            dir_id: None,
            rotor: 0,
            open: None,
            step: Step::Flow(0),
            loops: 0,
            flowops: 0,
            current: String::new(),
            window: (None, None),
        }
    }

    /// The next file round-robin from the rotor that exists (or not).
    fn pick(&mut self, exists: bool) -> Option<usize> {
        let n = self.sizes.len();
        for _ in 0..n {
            let i = self.rotor % n;
            self.rotor = self.rotor.wrapping_add(1);
            if self.sizes[i].is_some() == exists {
                return Some(i);
            }
        }
        None
    }

    fn append_len(&mut self) -> u32 {
        self.rng.random_range(1..self.v.meanappendsize.0) as u32
    }

    fn path(&self, i: usize) -> String {
        format!("{}/f{i}", self.dir)
    }
}

impl Source for Varmail {
    fn buffer_len(&self) -> usize {
        self.v.iosize.0.max(self.v.meanappendsize.0) as usize
    }

    /// The file set, made before the start (untimed), as filebench preallocates it.
    fn setup(&mut self) -> Result<Vec<SetupFile>, String> {
        let top = self.root.join(&self.dir);
        std::fs::create_dir(&top).map_err(|e| {
            format!(
                "creating {}: {e} (left by an interrupted run? remove it or choose another job name)",
                top.display()
            )
        })?;
        let mean = self.v.filesize.0 as f64;
        let gamma = Gamma::new(1.5, mean / 1.5).map_err(|e| format!("file sizes: {e}"))?;
        let chunk = vec![b'v'; 64 * 1024];
        let n = self.sizes.len();
        for i in 0..n {
            if self.rng.random_range(0..100u32) >= self.v.prealloc as u32 {
                continue;
            }
            let size = (gamma.sample(&mut self.rng) as u64).max(1);
            let p = self.root.join(self.path(i));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
                .map_err(|e| format!("creating {}: {e}", p.display()))?;
            let mut left = size;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..k]).map_err(|e| format!("writing {}: {e}", p.display()))?;
                left -= k as u64;
            }
            self.sizes[i] = Some(size);
        }
        Ok(Vec::new())
    }

    fn prime(&mut self, _slot: u32, buf: &mut [u8]) {
        buf.fill(b'm');
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        self.window.0.get_or_insert(ctx.now);
        if ctx.ending && self.window.1.is_none() {
            self.window.1 = Some(ctx.now);
        }
        if self.ids.is_empty() {
            let Ok(d) = ctx.names.add(&self.dir) else { return Next::Done };
            self.dir_id = Some(d);
            for i in 0..self.sizes.len() {
                let Ok(id) = ctx.names.add(self.path(i)) else { return Next::Done };
                self.ids.push(id);
            }
        }
        let call = loop {
            if ctx.ending && matches!(self.step, Step::Flow(_) | Step::Reading { .. }) {
                self.step = Step::CloseForEnd;
            }
            match self.step {
                Step::Flow(n) => {
                    self.flowops += 1;
                    let next = if n == 12 { 0 } else { n + 1 };
                    if n == 12 {
                        self.loops += 1;
                    }
                    self.step = Step::Flow(next);
                    match n {
                        // deletefile
                        0 => {
                            let Some(i) = self.pick(true) else { continue };
                            self.sizes[i] = None;
                            self.current = self.path(i);
                            break Call::Unlink { name: self.ids[i] };
                        }
                        // createfile
                        1 => {
                            let Some(i) = self.pick(false) else {
                                self.step = Step::Flow(5); // no free name: skip to the opens
                                continue;
                            };
                            self.sizes[i] = Some(0);
                            self.open = Some(i);
                            self.current = self.path(i);
                            let flags = OpenFlags {
                                read: true,
                                write: true,
                                create: true,
                                exclusive: true,
                                ..Default::default()
                            };
                            break Call::Open { name: self.ids[i], file: FILE, flags };
                        }
                        // appendfilerand (after create, after read: at the end of the file)
                        2 | 7 => {
                            let Some(i) = self.open else { continue };
                            let len = self.append_len();
                            if let Some(s) = self.sizes[i].as_mut() {
                                *s += len as u64;
                            }
                            break Call::Data { kind: OpKind::WriteCur, file: FILE, offset: 0, len };
                        }
                        3 | 8 => {
                            if self.open.is_none() {
                                continue;
                            }
                            break Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 };
                        }
                        4 | 9 | 12 => {
                            if self.open.take().is_none() {
                                continue;
                            }
                            break Call::Close { file: FILE };
                        }
                        // openfile
                        5 | 10 => {
                            let Some(i) = self.pick(true) else {
                                self.step = Step::Flow(if n == 5 { 10 } else { 0 });
                                continue;
                            };
                            self.open = Some(i);
                            self.current = self.path(i);
                            let flags = OpenFlags { read: true, write: true, ..Default::default() };
                            break Call::Open { name: self.ids[i], file: FILE, flags };
                        }
                        // readwholefile
                        _ => {
                            let Some(i) = self.open else { continue };
                            let left = self.sizes[i].unwrap_or(0);
                            self.step = Step::Reading { left, then: next };
                        }
                    }
                }
                Step::Reading { left, then } if left > 0 => {
                    let len = left.min(self.v.iosize.0) as u32;
                    self.step = Step::Reading { left: left - len as u64, then };
                    break Call::Data { kind: OpKind::ReadCur, file: FILE, offset: 0, len };
                }
                Step::Reading { then, .. } => self.step = Step::Flow(then),
                Step::CloseForEnd => {
                    self.step = Step::Cleanup(0);
                    if self.open.take().is_some() {
                        break Call::Close { file: FILE };
                    }
                }
                Step::Cleanup(i) if i < self.sizes.len() => {
                    self.step = Step::Cleanup(i + 1);
                    if self.sizes[i].take().is_some() {
                        break Call::Unlink { name: self.ids[i] };
                    }
                }
                Step::Cleanup(_) => self.step = Step::RemoveDir,
                Step::RemoveDir => {
                    self.step = Step::Done;
                    let Some(d) = self.dir_id else { continue };
                    break Call::Rmdir { name: d };
                }
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), String> {
        match (call, r) {
            (Call::Data { kind: OpKind::WriteCur, len, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &self.current, *len, 0, r))
            }
            (Call::Data { len, .. }, Err(_)) => Err(describe_failure(call, &self.current, *len, 0, r)),
            (_, Err(_)) => Err(describe_failure(call, &self.current, 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let secs = match self.window {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        vec![("flowops", self.flowops as f64), ("loops", self.loops as f64), ("elapsed_s", secs)]
    }
}

/// flowops and loops per second over the longest thread's time (filebench's ops/s).
pub fn derive_rates(f: &mut std::collections::BTreeMap<String, f64>) {
    let el = f.get("elapsed_s").copied().unwrap_or(0.0);
    let per = |n: f64| if el > 0.0 { n / el } else { 0.0 };
    let (ops, loops) = (per(f.get("flowops").copied().unwrap_or(0.0)), per(f.get("loops").copied().unwrap_or(0.0)));
    f.insert("flowops_per_s".into(), ops);
    f.insert("loops_per_s".into(), loops);
}
