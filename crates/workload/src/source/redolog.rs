//! Seed 002's redo-log initialisation, one creator per source: its files made as ndbd made
//! them (the last block first, so the file is full-length and sparse, then a block at offsets
//! 0, 1 stride, 2 strides, ... each followed by an fsync), removed, and made again the way
//! that fixed it (sequential writes of 1 MiB, one fsync at the end). Both times are figures,
//! with the time the sparse pattern's bytes would take at the full initialisation's rate.
//! With several creators, every thread finishes its sparse pass before any starts its full
//! one (the job's threads meet at a barrier), so neither pass's time includes the other's
//! I/O. Files are created with O_EXCL in the thread's own directory; removing them between
//! the passes and at the end, and the directory, is not part of either time and is not counted.

use super::{
    describe_failure, Call, Ctx, Issue, NameId, Next, OpenFlags, PersonalitySource, Run, Source, SourceError, Worker,
};
use crate::clock::Stamp;
use iolab_engine::OpKind;
use iolab_spec::{Job, RedologJob};
use std::io;

const FILE: u32 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sparse,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    MakeDir,
    Open,
    /// Write number `k` of the file (sparse: k=0 is the last block, then stride k-1).
    Write(u64),
    Fsync(u64),
    Close,
    Unlink(u32),
    /// Every creator has finished its sparse pass before any starts the full one.
    Barrier,
    RemoveDir,
    Done,
}

pub struct Redolog {
    r: RedologJob,
    dir: String,
    files: u32,
    direct: bool,
    mode: Mode,
    step: Step,
    file: u32,
    dir_id: Option<NameId>,
    names: Vec<NameId>,
    t: [Option<Stamp>; 4],
    bytes: [u64; 2],
    fsyncs: [u64; 2],
    current: String,
}

impl PersonalitySource for RedologJob {
    type Shared = ();
    fn shared(&self, _job: &Job) -> Result<(), SourceError> {
        Ok(())
    }
    fn source<R: Run>(&self, w: &Worker<'_, ()>, run: R) -> R::Out {
        run.run(Ok(Redolog::new(&w.job.name, self, w.thread, w.job.threads, w.job.direct)))
    }
}

impl Redolog {
    pub fn new(job: &str, r: &RedologJob, thread: u32, threads: u32, direct: bool) -> Redolog {
        Redolog {
            r: r.clone(),
            dir: format!("iolab.{job}.{thread}"),
            files: r.files_of(thread, threads),
            direct,
            mode: Mode::Sparse,
            step: Step::MakeDir,
            file: 0,
            dir_id: None,
            names: Vec::new(),
            t: [None; 4],
            bytes: [0; 2],
            fsyncs: [0; 2],
            current: String::new(),
        }
    }

    /// Writes in one file: sparse, the last block then one per stride; full, one per 1 MiB.
    fn writes(&self) -> u64 {
        match self.mode {
            Mode::Sparse => 1 + self.r.file_size.0.div_ceil(self.r.stride.0),
            Mode::Full => self.r.file_size.0.div_ceil(self.r.full_block.0),
        }
    }

    /// Offset and length of write `k`.
    fn write_at(&self, k: u64) -> (u64, u32) {
        let size = self.r.file_size.0;
        match self.mode {
            Mode::Sparse if k == 0 => (size - self.r.block.0.min(size), self.r.block.0.min(size) as u32),
            Mode::Sparse => {
                let off = (k - 1) * self.r.stride.0;
                (off, self.r.block.0.min(size - off) as u32)
            }
            Mode::Full => {
                let off = k * self.r.full_block.0;
                (off, self.r.full_block.0.min(size - off) as u32)
            }
        }
    }

    fn m(&self) -> usize {
        self.mode as usize
    }
}

impl Source for Redolog {
    fn buffer_len(&self) -> usize {
        iolab_spec::Personality::buffer_len(&self.r) as usize
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if ctx.inflight > 0 {
            return Next::Drain;
        }
        let call = loop {
            match self.step {
                Step::MakeDir => {
                    let Ok(d) = ctx.names.add(&self.dir) else { return Next::Done };
                    self.dir_id = Some(d);
                    for i in 0..self.files {
                        let Ok(n) = ctx.names.add(format!("{}/redo.{i}", self.dir)) else { return Next::Done };
                        self.names.push(n);
                    }
                    self.step = if self.files == 0 { Step::RemoveDir } else { Step::Open };
                    break Issue::untimed(Call::Mkdir { name: d });
                }
                Step::Open => {
                    if self.t[2 * self.m()].is_none() {
                        self.t[2 * self.m()] = Some(ctx.now);
                    }
                    self.current = format!("{}/redo.{}", self.dir, self.file);
                    self.step = Step::Write(0);
                    let flags = OpenFlags {
                        write: true,
                        create: true,
                        exclusive: true,
                        direct: self.direct,
                        ..Default::default()
                    };
                    break Issue::now(Call::Open { name: self.names[self.file as usize], file: FILE, flags });
                }
                Step::Write(k) if k < self.writes() && !(ctx.ending && self.mode == Mode::Full && k > 0) => {
                    let (offset, len) = self.write_at(k);
                    self.bytes[self.m()] += len as u64;
                    self.step = match self.mode {
                        Mode::Sparse => Step::Fsync(k + 1),
                        Mode::Full => Step::Write(k + 1),
                    };
                    break Issue::now(Call::Data { kind: OpKind::Write, file: FILE, offset, len });
                }
                Step::Write(_) => {
                    // The full initialisation's one fsync, at the end of the file.
                    self.step = Step::Close;
                    if self.mode == Mode::Full {
                        self.fsyncs[1] += 1;
                        break Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 });
                    }
                }
                Step::Fsync(k) => {
                    self.fsyncs[0] += 1;
                    self.step = Step::Write(k);
                    break Issue::now(Call::Data { kind: OpKind::Fsync, file: FILE, offset: 0, len: 0 });
                }
                Step::Close => {
                    self.file += 1;
                    self.step = if self.file < self.files && !ctx.ending {
                        Step::Open
                    } else {
                        self.t[2 * self.m() + 1] = Some(ctx.now);
                        Step::Unlink(0)
                    };
                    break Issue::now(Call::Close { file: FILE });
                }
                Step::Unlink(i) if i < self.file => {
                    self.step = Step::Unlink(i + 1);
                    break Issue::untimed(Call::Unlink { name: self.names[i as usize] });
                }
                Step::Unlink(_) => {
                    if self.mode == Mode::Sparse && !ctx.ending {
                        self.step = Step::Barrier;
                    } else {
                        self.step = Step::RemoveDir;
                    }
                }
                Step::Barrier => {
                    self.mode = Mode::Full;
                    self.file = 0;
                    self.step = Step::Open;
                    return Next::Barrier;
                }
                Step::RemoveDir => {
                    self.step = Step::Done;
                    let Some(d) = self.dir_id else { continue };
                    break Issue::untimed(Call::Rmdir { name: d });
                }
                Step::Done => return Next::Done,
            }
        };
        Next::Issue(call)
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], r: &io::Result<usize>) -> Result<(), SourceError> {
        let path = match call {
            Call::Mkdir { .. } | Call::Rmdir { .. } => self.dir.clone(),
            _ => self.current.clone(),
        };
        match (call, r) {
            (Call::Mkdir { .. }, Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(format!("{path} exists (left by an interrupted run?); remove it or choose another job name").into())
            }
            (Call::Data { kind: OpKind::Write, len, offset, .. }, Ok(n)) if *n != *len as usize => {
                Err(describe_failure(call, &path, *len, *offset, r))
            }
            (Call::Data { len, offset, .. }, Err(_)) => Err(describe_failure(call, &path, *len, *offset, r)),
            (_, Err(_)) => Err(describe_failure(call, &path, 0, 0, r)),
            _ => Ok(()),
        }
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let secs = |a: Option<Stamp>, b: Option<Stamp>| match (a, b) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        vec![
            ("files", self.files as f64),
            ("sparse_s", secs(self.t[0], self.t[1])),
            ("full_s", secs(self.t[2], self.t[3])),
            ("sparse_bytes", self.bytes[0] as f64),
            ("full_bytes", self.bytes[1] as f64),
            ("sparse_fsyncs", self.fsyncs[0] as f64),
            ("full_fsyncs", self.fsyncs[1] as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::Bytes;

    #[test]
    fn the_last_block_first_then_one_per_stride_ending_at_the_size() {
        let r = RedologJob {
            files: 3,
            file_size: Bytes(5 * 1024 * 1024 + 4096),
            block: Bytes::kib(32),
            stride: Bytes::mib(1),
            full_block: Bytes::mib(1),
        };
        let s = Redolog::new("j", &r, 0, 2, false);
        assert_eq!((s.files, Redolog::new("j", &r, 1, 2, false).files), (2, 1));
        let w: Vec<(u64, u32)> = (0..s.writes()).map(|k| s.write_at(k)).collect();
        let size = r.file_size.0;
        assert_eq!(w[0], (size - 32768, 32768), "first the last block: full-length and sparse");
        assert_eq!(w[1..].iter().map(|x| x.0).collect::<Vec<_>>(), (0..6).map(|i| i << 20).collect::<Vec<u64>>());
        assert_eq!(w.last(), Some(&(5 << 20, 4096)), "the file ends exactly at its size");
        let mut full = Redolog::new("j", &r, 0, 1, false);
        full.mode = Mode::Full;
        let f: Vec<(u64, u32)> = (0..full.writes()).map(|k| full.write_at(k)).collect();
        assert_eq!(f.iter().map(|x| x.1 as u64).sum::<u64>(), size);
    }

    /// Two creators of unequal work: neither starts its full pass before both finished their
    /// sparse one.
    #[test]
    fn every_sparse_pass_ends_before_any_full_pass_starts() {
        use crate::clock::FakeClock;
        use crate::rendezvous::Rendezvous;
        use crate::source::Names;
        use crate::worker::{run, Window};
        use std::sync::atomic::AtomicBool;
        let d = tempfile::tempdir().unwrap();
        let r = RedologJob {
            files: 3,
            file_size: Bytes::mib(2),
            block: Bytes::kib(4),
            stride: Bytes::kib(64),
            full_block: Bytes::mib(1),
        };
        let clk = FakeClock::new(std::time::Duration::from_micros(1));
        let start = crate::clock::Clock::now(&clk);
        let w = Window { start, t0: start, deadline: None };
        let (stop, barrier) = (AtomicBool::new(false), Rendezvous::new(2));
        let one = |t: u32| {
            let mut src = Redolog::new("j", &r, t, 2, false);
            let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, iolab_engine::Setup::new(1, src.buffer_len())).unwrap();
            let end = run(&mut src, &mut *e, &mut Names::new(d.path()), &clk, w, &stop, &barrier, &mut |_, _| {});
            barrier.leave();
            assert!(end.error.is_none(), "{:?}", end.error);
            src
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| one(0));
            let b = s.spawn(|| one(1));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!((a.files, b.files), (2, 1), "unequal work");
        let sparse_end = a.t[1].unwrap().max(b.t[1].unwrap());
        let full_start = a.t[2].unwrap().min(b.t[2].unwrap());
        assert!(sparse_end <= full_start, "a full pass started before a sparse one ended");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "all removed");
    }
}
