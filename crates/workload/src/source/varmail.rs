//! filebench's varmail flow on one file set that every thread of the job shares, as filebench
//! does it (workloads/varmail.f, fileset.c, flowop_library.c): `nfiles` files in one flat
//! directory `iolab.<job>` (varmail's `dirwidth` of 1,000,000), 80% of them made before the
//! start (gamma-sized around the mean; the layout, flushed, untimed, as filebench
//! preallocates), then each thread loops over the thirteen flowops — delete, create, append,
//! fsync, close, open, read whole, append, fsync, close, open, read whole, close. Files are
//! picked as filebench's `fileset_pick` does: delete and open take the next existing file from
//! one rotor the threads share, create the next file that does not exist from another, and a
//! file a thread has open (busy, from its create or open to its close) is passed over, so no
//! thread deletes or opens a file another is using. At the end the threads meet and the first
//! removes the set and its directory (untimed). It creates every file itself (O_EXCL).

use super::{
    describe_failure, io_error, Call, Ctx, Issue, JobDir, NameId, Next, OpenFlags, PersonalitySource, Run, SetupFile,
    Source, SourceError, Worker,
};
use iolab_engine::OpKind;
use iolab_spec::{Job, VarmailJob};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

const FILE: u32 = 0;

/// filebench's file set: which files exist, their sizes, which are busy, and the two rotors.
#[derive(Debug)]
pub struct FileSet {
    /// `iolab.<job>`, under the target directory.
    dir: String,
    sets: Mutex<Sets>,
}

#[derive(Debug)]
struct Sets {
    size: Vec<u64>,
    busy: Vec<bool>,
    exist: BTreeSet<u32>,
    noexist: BTreeSet<u32>,
    /// `fs_file_exrotor[0]`: varmail's deletes and opens pass no thread id, so they share it.
    ex_rotor: u32,
    /// `fs_file_nerotor`: creates.
    ne_rotor: u32,
}

impl FileSet {
    /// The set of `job`, which files exist before the start and their sizes: each of the
    /// `nfiles` entries exists with the chance `prealloc` in 100, sized by a gamma
    /// distribution of shape 1.5 around `filesize` (filebench 1.4.9's fileset, `filesizegamma`
    /// 1500), drawn from `seed`.
    pub fn new(job: &str, v: &VarmailJob, seed: u64) -> Result<FileSet, SourceError> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7661_726d_6169_6c00);
        let mean = v.filesize.0 as f64;
        let gamma = Gamma::new(1.5, mean / 1.5).map_err(|e| SourceError::Said(format!("file sizes: {e}")))?;
        let n = v.nfiles as usize;
        let (mut size, mut exist, mut noexist) = (vec![0; n], BTreeSet::new(), BTreeSet::new());
        for (i, sz) in size.iter_mut().enumerate() {
            if rng.random_range(0..100u32) < v.prealloc as u32 {
                *sz = (gamma.sample(&mut rng) as u64).max(1);
                exist.insert(i as u32);
            } else {
                noexist.insert(i as u32);
            }
        }
        let sets = Sets { size, busy: vec![false; n], exist, noexist, ex_rotor: 0, ne_rotor: 0 };
        Ok(FileSet { dir: format!("iolab.{job}"), sets: Mutex::new(sets) })
    }

    fn lock(&self) -> MutexGuard<'_, Sets> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A file's path under the target: filebench's `%08d` names, from 1.
    pub fn path(&self, i: u32) -> String {
        format!("{}/{:08}", self.dir, i + 1)
    }

    /// `fileset_pick`: the first entry at or after the rotor in the set of existing (or not
    /// existing) files, wrapping to the lowest; the rotor moves past it; a busy entry is passed
    /// over for the next. The entry is busy until [`FileSet::release`]. `None`: every such
    /// file is busy, or there is none.
    fn pick(&self, existing: bool) -> Option<(u32, u64)> {
        let mut s = self.lock();
        let s = &mut *s;
        let (set, rotor) = if existing { (&s.exist, &mut s.ex_rotor) } else { (&s.noexist, &mut s.ne_rotor) };
        let after = |i: u32| set.range(i..).next().or_else(|| set.first()).copied();
        let start = after(*rotor)?;
        *rotor = start + 1;
        let mut i = start;
        while s.busy[i as usize] {
            i = after(i + 1)?;
            if i == start {
                return None;
            }
        }
        s.busy[i as usize] = true;
        Some((i, s.size[i as usize]))
    }

    /// `fileset_unbusy`: the file is free again, existing (with its size) or not.
    fn release(&self, i: u32, exists: bool, size: u64) {
        let mut s = self.lock();
        s.busy[i as usize] = false;
        s.size[i as usize] = size;
        if exists {
            s.noexist.remove(&i);
            s.exist.insert(i);
        } else {
            s.exist.remove(&i);
            s.noexist.insert(i);
        }
    }

    fn existing(&self) -> Vec<u32> {
        self.lock().exist.iter().copied().collect()
    }

    /// Make the directory and the files that exist at the start, and flush them (syncfs), so
    /// their writeback stays out of the measured window: the layout, before the start.
    fn lay_out(&self, job: &JobDir) -> Result<(), SourceError> {
        let (b, root) = (job.beneath()?, &job.path);
        let top = root.join(&self.dir);
        b.mkdir(Path::new(&self.dir)).map_err(io_error(
            "creating",
            &top,
            " (left by an interrupted run? remove it or choose another job name)",
        ))?;
        let chunk = vec![b'v'; 64 * 1024];
        let files: Vec<(u32, u64)> = {
            let s = self.lock();
            s.exist.iter().map(|i| (*i, s.size[*i as usize])).collect()
        };
        for (i, size) in files {
            let rel = self.path(i);
            let p = root.join(&rel);
            let create = iolab_engine::OpenOptions { write: true, create: true, exclusive: true, ..Default::default() };
            let mut f = b.open_file(Path::new(&rel), create).map_err(io_error("creating", &p, ""))?;
            let mut left = size;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..k]).map_err(io_error("writing", &p, ""))?;
                left -= k as u64;
            }
        }
        let d = b.open_dir(Path::new(&self.dir)).map_err(io_error("opening", &top, ""))?;
        rustix::fs::syncfs(&d).map_err(|e| io_error("flushing", &top, "")(e.into()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Flowop `n` of the loop (0..13).
    Flow(u8),
    /// Reading the open file whole until a read returns nothing, then flowop `then`.
    Reading {
        then: u8,
    },
    /// appendfilerand's write, after its lseek to the end, then flowop `then`.
    Append {
        then: u8,
    },
    CloseForEnd,
    EndBarrier,
    Collect,
    Cleanup(usize),
    RemoveDir,
    Done,
}

impl PersonalitySource for VarmailJob {
    /// filebench's file set.
    type Shared = FileSet;
    fn shared(&self, job: &Job) -> Result<FileSet, SourceError> {
        FileSet::new(&job.name, self, job.seed)
    }
    fn source<R: Run>(&self, w: &Worker<'_, FileSet>, run: R) -> R::Out {
        run.run(Ok(Varmail::new(self, w.shared.clone(), w.job.seed, w.thread, w.job_dir())))
    }
}

/// One varmail thread.
pub struct Varmail {
    v: VarmailJob,
    set: Arc<FileSet>,
    root: JobDir,
    thread: u32,
    rng: Xoshiro256PlusPlus,
    id: Option<(NameId, NameId)>,
    /// The file open, its index and size.
    open: Option<(u32, u64)>,
    /// The file being deleted: busy until its unlink has completed (then free, not existing).
    deleting: Option<u32>,
    step: Step,
    loops: u64,
    flowops: u64,
    /// The last read brought nothing: the file is read whole.
    at_eof: bool,
    current: String,
    leftover: Vec<u32>,
    window: (Option<crate::clock::Stamp>, Option<crate::clock::Stamp>),
}

impl Varmail {
    pub fn new(v: &VarmailJob, set: Arc<FileSet>, seed: u64, thread: u32, root: JobDir) -> Varmail {
        Varmail {
            v: v.clone(),
            set,
            root,
            thread,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7661_726d_6169_6c01 ^ ((thread as u64) << 32)),
            id: None,
            open: None,
            deleting: None,
            step: Step::Flow(0),
            loops: 0,
            flowops: 0,
            at_eof: false,
            current: String::new(),
            leftover: Vec::new(),
            window: (None, None),
        }
    }

    /// appendfilerand's size: 1 byte to `meanappendsize` less one.
    fn append_len(&mut self) -> u32 {
        self.rng.random_range(1..self.v.meanappendsize.0) as u32
    }

    fn name(&mut self, ctx: &mut Ctx, i: u32) -> Option<NameId> {
        self.current = self.set.path(i);
        let (f, _) = self.id?;
        ctx.names.reuse(f, &self.current).ok().map(|_| f)
    }
}

impl Source for Varmail {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.v) as usize
    }

    /// The first thread lays out the set before the start (untimed, flushed), as filebench
    /// preallocates it before its run.
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        if self.thread == 0 {
            self.set.lay_out(&self.root)?;
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
        if self.id.is_none() {
            let (Ok(f), Ok(d)) = (ctx.names.add("."), ctx.names.add(&self.set.dir)) else { return Next::Done };
            self.id = Some((f, d));
        }
        let call = loop {
            if ctx.ending && matches!(self.step, Step::Flow(_) | Step::Reading { .. } | Step::Append { .. }) {
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
                        // deletefile: the next existing file from the shared rotor.
                        0 => {
                            let Some((i, _)) = self.set.pick(true) else { continue };
                            // Free (not existing) once the unlink is done, as
                            // flowoplib_deletefile unbusies it after its unlink: freed before,
                            // another thread could create it while it still exists.
                            self.deleting = Some(i);
                            let Some(name) = self.name(ctx, i) else { return Next::Done };
                            break Issue::now(Call::Unlink { name });
                        }
                        // createfile: the next file that does not exist.
                        1 => {
                            let Some((i, _)) = self.set.pick(false) else {
                                self.step = Step::Flow(5); // none free: on to the opens
                                continue;
                            };
                            self.open = Some((i, 0));
                            let Some(name) = self.name(ctx, i) else { return Next::Done };
                            let flags = OpenFlags {
                                read: true,
                                write: true,
                                create: true,
                                exclusive: true,
                                ..Default::default()
                            };
                            break Issue::now(Call::Open { name, file: FILE, flags });
                        }
                        // appendfilerand: lseek to the end, then a write of 1 byte to
                        // meanappendsize - 1.
                        2 | 7 => {
                            let Some((_, size)) = self.open else { continue };
                            self.step = Step::Append { then: next };
                            break Issue::now(Call::Data {
                                kind: OpKind::Seek(iolab_engine::Whence::Set),
                                file: FILE,
                                offset: size,
                                len: 0,
                            });
                        }
                        3 | 8 => {
                            if self.open.is_none() {
                                continue;
                            }
                            break Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 });
                        }
                        4 | 9 | 12 => {
                            let Some((i, size)) = self.open.take() else { continue };
                            self.set.release(i, true, size);
                            break Issue::now(Call::Close { file: FILE });
                        }
                        // openfile: the next existing file from the shared rotor.
                        5 | 10 => {
                            let Some((i, size)) = self.set.pick(true) else {
                                self.step = Step::Flow(if n == 5 { 10 } else { 0 });
                                continue;
                            };
                            self.open = Some((i, size));
                            let Some(name) = self.name(ctx, i) else { return Next::Done };
                            let flags = OpenFlags { read: true, write: true, ..Default::default() };
                            break Issue::now(Call::Open { name, file: FILE, flags });
                        }
                        // readwholefile: lseek to 0, then reads of iosize until one returns 0.
                        6 | 11 => {
                            if self.open.is_none() {
                                continue;
                            }
                            self.at_eof = false;
                            self.step = Step::Reading { then: next };
                            break Issue::now(Call::Data {
                                kind: OpKind::Seek(iolab_engine::Whence::Set),
                                file: FILE,
                                offset: 0,
                                len: 0,
                            });
                        }
                        _ => continue,
                    }
                }
                Step::Append { then } => {
                    let len = self.append_len();
                    let Some((i, size)) = self.open else { continue };
                    self.open = Some((i, size + len as u64));
                    self.step = Step::Flow(then);
                    break Issue::now(Call::Data { kind: OpKind::WriteCur, file: FILE, offset: 0, len });
                }
                Step::Reading { .. } if !self.at_eof => {
                    let len = self.v.iosize.0 as u32;
                    break Issue::now(Call::Data { kind: OpKind::ReadCur, file: FILE, offset: 0, len });
                }
                Step::Reading { then } => self.step = Step::Flow(then),
                Step::CloseForEnd => {
                    self.step = Step::EndBarrier;
                    if let Some((i, size)) = self.open.take() {
                        self.set.release(i, true, size);
                        break Issue::now(Call::Close { file: FILE });
                    }
                }
                Step::EndBarrier => {
                    self.step = if self.thread == 0 { Step::Collect } else { Step::Done };
                    return Next::Barrier;
                }
                // Every thread has stopped: what exists now is what is left.
                Step::Collect => {
                    self.leftover = self.set.existing();
                    self.step = Step::Cleanup(0);
                }
                Step::Cleanup(k) if k < self.leftover.len() => {
                    self.step = Step::Cleanup(k + 1);
                    let Some(name) = self.name(ctx, self.leftover[k]) else { return Next::Done };
                    break Issue::untimed(Call::Unlink { name });
                }
                Step::Cleanup(_) => self.step = Step::RemoveDir,
                Step::RemoveDir => {
                    self.step = Step::Done;
                    self.current = self.set.dir.clone();
                    let Some((_, d)) = self.id else { continue };
                    break Issue::untimed(Call::Rmdir { name: d });
                }
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(call)
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        if let (Call::Unlink { .. }, Some(i)) = (call, self.deleting.take()) {
            self.set.release(i, false, 0);
        }
        match (call, r) {
            (Call::Data { kind: OpKind::ReadCur, .. }, Ok(n)) => {
                self.at_eof = *n == 0;
                Ok(())
            }
            (Call::Data { kind: OpKind::WriteCur, len, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &self.current, *len, 0, r))
            }
            (Call::Data { len, .. }, Err(_)) => Err(describe_failure(call, &self.current, *len, 0, r)),
            (Call::Rmdir { .. }, Err(e)) if e.raw_os_error() == Some(libc::ENOTEMPTY) => Err(format!(
                "{} is not empty at the end: a file iolab did not create is in it, and is left as it was",
                self.current
            )
            .into()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(nfiles: u32) -> FileSet {
        let v = VarmailJob {
            nfiles,
            filesize: iolab_spec::Bytes::kib(16),
            meanappendsize: iolab_spec::Bytes::kib(16),
            iosize: iolab_spec::Bytes::mib(1),
            prealloc: 80,
        };
        FileSet::new("j", &v, 7).unwrap()
    }

    #[test]
    fn picks_go_round_the_shared_rotor_and_pass_over_busy_files() {
        let s = set(1000);
        let n = s.existing().len();
        assert!((700..900).contains(&n), "about 80% made at the start: {n}");
        let mean = s.existing().iter().map(|i| s.lock().size[*i as usize]).sum::<u64>() as f64 / n as f64;
        assert!((14_000.0..19_000.0).contains(&mean), "gamma sizes around 16 KiB: {mean}");
        // Two threads opening: each gets the next existing file, never the same one.
        let (a, _) = s.pick(true).unwrap();
        let (b, _) = s.pick(true).unwrap();
        let ex: Vec<u32> = s.existing();
        assert_eq!((a, b), (ex[0], ex[1]), "in index order from the shared rotor");
        // Back at the start of the rotor, a busy file is passed over.
        s.lock().ex_rotor = 0;
        let (c, _) = s.pick(true).unwrap();
        assert_eq!(c, ex[2], "{a} and {b} are busy");
        s.release(a, false, 0);
        assert!(!s.existing().contains(&a), "deleted");
        let (d, size) = s.pick(false).unwrap();
        assert!(!ex.contains(&d) || d == a, "a create takes a file that does not exist");
        assert_eq!(size, 0);
        // All busy: nothing to pick.
        let small = set(2);
        let all: Vec<_> = std::iter::from_fn(|| small.pick(true)).collect();
        assert!(all.len() <= 2 && small.pick(true).is_none());
    }
}
