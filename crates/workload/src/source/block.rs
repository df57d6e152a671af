//! The block workload as an operation source: reads, writes and trims (`--rw trim|randtrim`;
//! `trimwrite` trims each block, then writes it) where the access pattern says
//! (sequential, strided, uniform, zipf; weighted sizes; a read/write mix), a flush every N
//! writes as a barrier, open-loop pacing under `--rate`/`--rate-iops`, each written block
//! stamped with its offset (and given new data with `--refill-buffers`), and a final fsync with
//! `--end-fsync`. A paced job's time runs to the end of its last operation's slot (the rate
//! is over the schedule, never over a near-zero window), and never past the deadline. Reads
//! of a file whose holes were kept are counted, with those that fell in a hole.

use super::cmdprio::Chooser;
use super::dedupe::Dedup;
use super::mix::splitmix64;
use super::pace::{Admit, Pacer};
use super::{describe_failure, io_error, Call, Ctx, Issue, Next, SetupFile, Source, SourceError};
use crate::clock::Stamp;
use crate::layout::{Target, TargetKind};
use crate::pattern::{Dir, Pattern};
use iolab_engine::{fill_pattern, refill, OpKind, OpenOptions};
use iolab_spec::fileset::FileService;
use iolab_spec::{BlockJob, Job, SyncMode};
use std::io;

pub struct BlockSource<'a> {
    job: &'a Job,
    b: &'a BlockJob,
    thread: u32,
    target: Option<&'a Target>,
    path: String,
    pattern: Pattern,
    flush_every: u64,
    flush_kind: OpKind,
    /// Its rates and floor (`None`: neither).
    pace: Option<Pacer>,
    /// Priorities per request (`--cmdprio`).
    cmdprio: Option<Chooser>,
    /// Writes that repeat earlier data (`--dedupe`).
    dedupe: Option<Dedup>,
    writes_since_flush: u64,
    /// A flush is in flight: nothing else is issued until it completes.
    flushing: bool,
    exhausted: bool,
    end_fsync_done: bool,
    /// Writes whose buffer was refilled (with `--refill-buffers`): each gets its own data.
    refills: u64,
    /// Where the job's region starts in the file (`--offset`).
    base: u64,
    /// The target's kept holes (empty when it has none, or they were filled).
    holes: &'a [(u64, u64)],
    /// Reads of a file with kept holes, and those wholly in one.
    hole_reads: u64,
    in_holes: u64,
    /// A paced job whose pattern ended has waited out its last slot.
    schedule_done: bool,
    /// The file the I/O goes to now (its index in the engine's table; 0 with one file).
    cur: u32,
    /// Several files per thread (`--nrfiles`): the others and the turns among them.
    set: Option<Box<Set<'a>>>,
    /// fio's invalidate at each pass: whether the job drops the file's cached pages as each
    /// pass over it starts, and the file (a second descriptor) it drops them from.
    drops_per_pass: bool,
    pass_file: Option<std::fs::File>,
    /// The job's writes are trims (`--rw trim|randtrim`), or each block is trimmed and then
    /// written (`trimwrite`).
    trims: bool,
    trim_write: bool,
    /// `trimwrite`'s write of the block just trimmed (file, offset, length), issued next.
    write_after_trim: Option<(u32, u64, u32)>,
}

/// A thread's files beyond the one it works on now (`--nrfiles`): each file's pattern waits
/// here while another file is current, so the single-file path keeps its one pattern.
struct Set<'a> {
    files: Vec<Parked<'a>>,
    service: FileService,
    /// I/Os left in the current file's turn (roundrobin:N, random:N).
    left: u32,
    /// The current file's turn is over: the next draw moves on.
    turn_over: bool,
    /// Files of the end fsync made so far.
    synced: u32,
    rng: u64,
}

/// One file of a set: its target and name, and its pattern while another file is current
/// (`None` while it is current, or once its pattern has ended).
struct Parked<'a> {
    target: &'a Target,
    path: String,
    holes: &'a [(u64, u64)],
    pattern: Option<Pattern>,
    done: bool,
}

impl<'a> BlockSource<'a> {
    /// The source of one thread of `job` on its `targets` (none for the null engine; several
    /// with `--nrfiles`, the thread's own files).
    pub fn new(job: &'a Job, b: &'a BlockJob, thread: u32, targets: &'a [Target]) -> Self {
        let target = targets.first();
        let base = b.offset_of(thread);
        let (path, size) = match target {
            // The region past this thread's offset: `size` bytes where given (a file the
            // threads share reaches the last thread's region with fio's offset_increment).
            Some(t) => {
                let past = t.size.saturating_sub(base);
                (t.path.display().to_string(), job.size.map_or(past, |s| s.0.min(past)))
            }
            None => (job.target.display().to_string(), job.size.map(|s| s.0).unwrap_or(0)),
        };
        // Time-bounded runs wrap around the file until the deadline (or io_size, if given);
        // several passes (`--loops`) wrap until their bytes are done.
        let loops = b.loops.unwrap_or(1);
        let wrap = job.runtime.is_some() || loops > 1;
        let budget = match (b.io_size, job.runtime.is_some()) {
            (Some(io), _) => Some(io.0.saturating_mul(loops)),
            (None, true) => Some(u64::MAX),
            (None, false) => (loops > 1).then(|| b.budget_bytes(size)),
        };
        let mut pattern = Pattern::new(b, job.seed, thread, size, wrap, budget);
        if let Some(n) = b.max_ios {
            pattern.limit_ops(n);
        }
        // With several files each has its own pattern over its own size, seeded apart; io_size
        // is the thread's over all its files, shared evenly.
        let per_file = |t: &Target| t.size.saturating_sub(base);
        let budget_of = |len: u64| match (b.io_size, job.runtime.is_some()) {
            (Some(io), _) => Some((io.0 / targets.len() as u64).max(1).saturating_mul(loops)),
            (None, true) => Some(u64::MAX),
            (None, false) => (loops > 1).then(|| b.budget_bytes(len)),
        };
        let set = b.files.as_ref().filter(|_| targets.len() > 1).map(|fs| {
            let files = targets
                .iter()
                .enumerate()
                .map(|(i, t)| Parked {
                    target: t,
                    path: t.path.display().to_string(),
                    holes: t.kept_holes(),
                    pattern: (i > 0).then(|| {
                        let seed = job.seed.wrapping_add((i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
                        Pattern::new(b, seed, thread, per_file(t), wrap, budget_of(per_file(t)))
                    }),
                    done: false,
                })
                .collect();
            let n = match fs.service {
                FileService::RoundRobin(n) | FileService::Random(n) => n,
                FileService::Sequential => u32::MAX,
            };
            Box::new(Set {
                files,
                service: fs.service,
                left: n,
                turn_over: false,
                synced: 0,
                rng: job.seed ^ ((thread as u64) << 40) ^ 0x5E7_F11E,
            })
        });
        if let (Some(_), Some(t)) = (&set, target) {
            // File 0's pattern runs over its own size, not the job's.
            pattern = Pattern::new(b, job.seed, thread, per_file(t), wrap, budget_of(per_file(t)));
        }
        // fio's invalidate (on by default) drops the file's cached pages each time a time-based
        // or looping job starts a new pass over it, not only before the job: buffered I/O on
        // one file (O_DIRECT keeps nothing in the cache; several files are not told apart). A
        // backward job's pass never ends in fio (its offset wraps within it: fio 3.33 under
        // strace dropped twice in 32 wraps of a 1 MiB file), so it drops nothing more.
        let drops_per_pass = b.invalidate
            && wrap
            && b.backward.is_none()
            && !job.direct
            && set.is_none()
            && target.is_some()
            && job.engine.caps().opens_files()
            && !job.engine.caps().maps_files();
        if drops_per_pass {
            pattern.track_passes();
        }
        BlockSource {
            job,
            b,
            thread,
            target,
            path,
            pattern,
            flush_every: b.flush_every(),
            flush_kind: if b.sync == SyncMode::Fdatasync { OpKind::Fdatasync } else { OpKind::Fsync },
            pace: Pacer::new(b, job.threads, job.seed, thread),
            cmdprio: b.cmdprio.as_deref().map(|c| Chooser::new(c, job.seed, thread)),
            dedupe: b.dedupe.map(|d| Dedup::new(d, job.seed, &job.name, thread, (size as f64 / b.mean_bs()) as u64)),
            writes_since_flush: 0,
            flushing: false,
            exhausted: false,
            end_fsync_done: false,
            refills: 0,
            base,
            holes: target.map_or(&[][..], |t| t.kept_holes()),
            hole_reads: 0,
            in_holes: 0,
            schedule_done: false,
            cur: 0,
            set,
            drops_per_pass,
            pass_file: None,
            trims: b.rw.trims(),
            trim_write: b.rw == iolab_spec::Rw::TrimWrite,
            write_after_trim: None,
        }
    }

    /// A pass over the file has ended: once nothing is in flight, drop the file's cached pages
    /// over the thread's region (fio's file_invalidate_cache, fadvise DONTNEED), then start the
    /// next pass. Outside any timed call; a refusal is not the job's error (the drop before
    /// the phase checked the call on this file).
    #[cold]
    #[inline(never)]
    fn next_pass(&mut self, ctx: &Ctx) -> Option<Next> {
        if ctx.inflight > 0 {
            return Some(Next::Drain);
        }
        if let Some(f) = &self.pass_file {
            let len = std::num::NonZeroU64::new(self.pattern.pass_len());
            let _ = rustix::fs::fadvise(f, self.base, len, rustix::fs::Advice::DontNeed);
        }
        self.pattern.start_pass();
        None
    }

    /// Move to the next file of the set, as its service says (`ended`: the current file's
    /// pattern is over). `false` when every file's is.
    #[cold]
    fn rotate(&mut self, ended: bool) -> bool {
        let Some(set) = self.set.as_deref_mut() else { return false };
        let n = set.files.len() as u32;
        let cur = self.cur;
        if ended {
            set.files[cur as usize].done = true;
        }
        let live = |k: u32| !set.files[k as usize].done;
        let start = match set.service {
            FileService::Random(_) => {
                set.rng = splitmix64(set.rng);
                (set.rng % n as u64) as u32
            }
            _ => (cur + 1) % n,
        };
        let Some(next) = (0..n).map(|i| (start + i) % n).find(|k| live(*k)) else { return false };
        set.left = match set.service {
            FileService::RoundRobin(k) | FileService::Random(k) => k,
            FileService::Sequential => u32::MAX,
        };
        set.turn_over = false;
        if next == cur {
            return true;
        }
        let Some(incoming) = set.files[next as usize].pattern.take() else { return false };
        let outgoing = std::mem::replace(&mut self.pattern, incoming);
        if !ended {
            set.files[cur as usize].pattern = Some(outgoing);
        }
        let f = &set.files[next as usize];
        self.target = Some(f.target);
        self.holes = f.holes;
        self.cur = next;
        true
    }

    /// One I/O of the current file's turn issued.
    #[cold]
    fn count_turn(&mut self) {
        if let Some(set) = self.set.as_deref_mut() {
            set.left = set.left.saturating_sub(1);
            set.turn_over = set.left == 0;
        }
    }

    /// The name of file `file` of the thread's (`path` is file 0's).
    fn path_of(&self, file: u32) -> &str {
        match self.set.as_deref() {
            Some(set) => set.files.get(file as usize).map_or(self.path.as_str(), |f| f.path.as_str()),
            None => &self.path,
        }
    }

    /// Count a read of a file with kept holes: in a hole when it lies wholly in one.
    #[inline(never)]
    fn count_hole_read(&mut self, offset: u64, len: u32) {
        self.hole_reads += 1;
        let i = self.holes.partition_point(|(a, _)| *a <= offset);
        if i > 0 && offset + len as u64 <= self.holes[i - 1].1 {
            self.in_holes += 1;
        }
    }

    fn flush(kind: OpKind, file: u32) -> Next {
        Next::Issue(Issue::now(Call::Data { kind, file, offset: 0, len: 0 }))
    }

    /// The pattern is done or the time is up: a paced job waits out its last operation's slot
    /// (so its rate is over its schedule; never past the deadline), then the final fsync, then
    /// done.
    fn finish(&mut self, ctx: &Ctx) -> Next {
        let due = self.pace.as_ref().and_then(Pacer::next_due);
        if let (false, false, Some(due)) = (self.schedule_done, ctx.ending, due) {
            if ctx.now < due {
                return Next::WaitUntil(due);
            }
        }
        self.schedule_done = true;
        if self.b.end_fsync && !self.end_fsync_done {
            if ctx.inflight > 0 {
                return Next::Drain;
            }
            // Each of the thread's files, one after another.
            let file = match self.set.as_deref_mut() {
                Some(set) => {
                    set.synced += 1;
                    self.end_fsync_done = set.synced as usize >= set.files.len();
                    set.synced - 1
                }
                None => {
                    self.end_fsync_done = true;
                    0
                }
            };
            return Self::flush(OpKind::Fsync, file);
        }
        Next::Done
    }
}

impl Source for BlockSource<'_> {
    fn buffer_len(&self) -> usize {
        self.b.max_bs().0 as usize
    }

    fn hole_reads(&self) -> Option<(u64, u64)> {
        self.holes_counted()
    }

    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        let Some(t) = self.target else { return Ok(Vec::new()) };
        let (job, b) = (self.job, self.b);
        let opts = OpenOptions {
            read: true,
            write: b.rw.writes()
                || b.end_fsync
                || job.engine.caps().maps_files() && t.kind == TargetKind::File
                || job.engine.reads_allocate(),
            direct: job.direct,
            dsync: b.sync == SyncMode::Dsync,
            sync: b.sync == SyncMode::Sync,
            ..Default::default()
        };
        // The target as it was checked (or created), opened again with this worker's flags
        // through its descriptor: never by its name.
        let open = |t: &Target| {
            let file = t.at.open(opts).map_err(|e| {
                let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
                    " (this filesystem does not support direct I/O: drop --direct)"
                } else {
                    ""
                };
                io_error("opening", &t.path, hint)(e)
            })?;
            // fio's fadvise_hint: RANDOM turns the kernel's readahead off for random offsets.
            if let Some(random) = b.fadvise.random_for(b.rw) {
                let advice = if random { rustix::fs::Advice::Random } else { rustix::fs::Advice::Sequential };
                rustix::fs::fadvise(&file, 0, None, advice)
                    .map_err(|e| io_error("advising the kernel on", &t.path, "")(io::Error::from(e)))?;
            }
            Ok::<_, SourceError>(file)
        };
        let Some(set) = self.set.as_deref() else {
            let file = open(t)?;
            if self.drops_per_pass {
                self.pass_file = Some(file.try_clone().map_err(io_error("opening", &t.path, ""))?);
            }
            return Ok(vec![SetupFile { index: 0, file, len: t.size, path: self.path.clone() }]);
        };
        // Every file of the thread's set, at its index, for the whole phase.
        let mut out = Vec::with_capacity(set.files.len());
        for (i, f) in set.files.iter().enumerate() {
            out.push(SetupFile { index: i as u32, file: open(f.target)?, len: f.target.size, path: f.path.clone() });
        }
        Ok(out)
    }

    fn prime(&mut self, slot: u32, buf: &mut [u8]) {
        fill_pattern(buf, self.job.seed ^ ((self.thread as u64) << 32 | slot as u64), self.b.compressibility);
    }

    fn start(&mut self, at: Stamp) {
        if let Some(p) = &mut self.pace {
            p.start(at);
        }
    }

    #[inline(always)]
    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if self.flushing {
            return Next::Drain; // a flush waits for the writes before it, and everything waits for it
        }
        if ctx.ending || self.exhausted {
            return self.finish(ctx);
        }
        if self.flush_every > 0 && self.writes_since_flush >= self.flush_every {
            if ctx.inflight > 0 {
                return Next::Drain;
            }
            self.writes_since_flush = 0;
            self.flushing = true;
            return Self::flush(self.flush_kind, self.cur);
        }
        if let Some((file, offset, len)) = self.write_after_trim.take() {
            // trimwrite: the block just trimmed, written (the trim was synchronous, so done).
            self.writes_since_flush += 1;
            return Next::Issue(Issue {
                call: Call::Data { kind: OpKind::Write, file, offset, len },
                due: None,
                timed: true,
                prio: 0,
            });
        }
        if self.set.as_ref().is_some_and(|s| s.turn_over) && !self.rotate(false) {
            self.exhausted = true;
            return self.finish(ctx);
        }
        let mut a = loop {
            match self.pattern.next_access() {
                Some(a) => break a,
                None if self.pattern.pass_ended() => {
                    if let Some(wait) = self.next_pass(ctx) {
                        return wait;
                    }
                }
                None if self.set.is_some() && self.rotate(true) => {}
                None => {
                    self.exhausted = true;
                    return self.finish(ctx);
                }
            }
        };
        let due = match &mut self.pace {
            Some(p) => match p.admit(ctx.now, a.dir) {
                Admit::Go(due) => due,
                Admit::Turn(due) => {
                    a = self.pattern.turn(a);
                    due
                }
                Admit::Wait(t) => {
                    // Not due yet: keep this access for later.
                    self.pattern.push_back(a);
                    return Next::WaitUntil(t);
                }
            },
            None => None,
        };
        let kind = match a.dir {
            Dir::Read => OpKind::Read,
            Dir::Write if self.trims => {
                if self.trim_write {
                    self.write_after_trim = Some((self.cur, self.base + a.offset, a.len));
                }
                OpKind::Trim
            }
            Dir::Write => {
                self.writes_since_flush += 1;
                OpKind::Write
            }
        };
        if self.set.is_some() {
            self.count_turn();
        }
        Next::Issue(Issue {
            call: Call::Data { kind, file: self.cur, offset: self.base + a.offset, len: a.len },
            due,
            timed: true,
            prio: match &mut self.cmdprio {
                None => 0,
                Some(c) => c.draw(a.dir, a.len),
            },
        })
    }

    #[inline]
    fn fill(&mut self, call: &Call, buf: &mut [u8]) {
        if let Call::Data { offset, len, .. } = call {
            if let Some(d) = &mut self.dedupe {
                // Data from its key alone, no offset stamp: equal keys, equal blocks.
                let n = (*len as usize).min(buf.len());
                fill_pattern(&mut buf[..n], d.next_key(), self.b.compressibility);
                return;
            }
            if self.b.refill_buffers {
                self.refills += 1;
                let key = splitmix64(self.job.seed ^ ((self.thread as u64) << 48) ^ self.refills);
                let n = (*len as usize).min(buf.len());
                refill(&mut buf[..n], key, self.b.compressibility);
            }
            if buf.len() >= 8 {
                // Distinct blocks: dedupe cannot fold what iolab writes.
                buf[..8].copy_from_slice(&offset.to_le_bytes());
            }
        }
    }

    #[inline(always)]
    fn completed(&mut self, call: &Call, _buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        let Call::Data { kind, len, offset, file } = *call else { return Ok(()) };
        if kind.is_sync() {
            self.flushing = false;
        }
        // (With several files, a read still in flight from the file before counts nowhere.)
        if !self.holes.is_empty() && kind == OpKind::Read && file == self.cur {
            self.count_hole_read(offset, len);
        }
        if let (Some(p), Ok(n), false) = (&mut self.pace, result, kind.is_sync()) {
            let dir = if kind == OpKind::Read { Dir::Read } else { Dir::Write };
            p.completed(dir, *n as u64).map_err(SourceError::Said)?;
        }
        match result {
            Ok(n) if kind.is_sync() || *n == len as usize => Ok(()),
            r if self.b.fill_fs && kind.writes() && is_full(r) => {
                // The filesystem is full: the job's end, as fio's fill_device (the failed
                // write is not counted; a short one counts what it wrote).
                self.exhausted = true;
                Ok(())
            }
            r => self.failed(call, r),
        }
    }
}

/// A write that met a full filesystem or quota: ENOSPC, EDQUOT, or a short write.
#[cold]
fn is_full(r: &io::Result<usize>) -> bool {
    match r {
        Ok(_) => true,
        Err(e) => matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)),
    }
}

impl BlockSource<'_> {
    /// Its reads of kept holes (see [`Source::hole_reads`]), when its file has any.
    pub fn holes_counted(&self) -> Option<(u64, u64)> {
        (!self.holes.is_empty()).then_some((self.hole_reads, self.in_holes))
    }

    /// A call that failed or came up short, in words.
    #[cold]
    fn failed(&self, call: &Call, r: &io::Result<usize>) -> Result<(), SourceError> {
        let Call::Data { kind, offset, len, file } = *call else { return Ok(()) };
        if let (true, Err(e)) = (kind.is_sync() && self.end_fsync_done, r) {
            // The final fsync names itself as such.
            let e =
                e.raw_os_error().map_or_else(|| io::Error::new(e.kind(), e.to_string()), io::Error::from_raw_os_error);
            return Err(io_error("final fsync of", self.path_of(file), "")(e));
        }
        Err(describe_failure(call, self.path_of(file), len, offset, r))
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_plan, Control, NoSink};
    use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw};

    /// Write 8 blocks of 64 KiB to a real file and return the blocks as written.
    fn written_blocks(refill: bool) -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let job = JobPatch {
            target: Some(path.clone()),
            rw: Some(Rw::Write),
            bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(64))),
            size: Some(Bytes::kib(512)),
            refill_buffers: Some(refill),
            ..Default::default()
        }
        .resolve("w")
        .unwrap();
        let plan = Plan { phases: vec![Phase { name: "w".into(), jobs: vec![job] }] };
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        assert_eq!(r.phases[0].total.write().ops, 8);
        std::fs::read(&path).unwrap().chunks(64 << 10).map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn an_offset_moves_the_region_and_leaves_what_is_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for rw in [Rw::Write, Rw::RandWrite] {
            let _ = std::fs::remove_file(&path);
            let job = JobPatch {
                target: Some(path.clone()),
                rw: Some(rw),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                size: Some(Bytes::kib(64)),
                offset: Some(Bytes::kib(128)),
                ..Default::default()
            }
            .resolve("w")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "w".into(), jobs: vec![job] }] };
            let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            assert_eq!(r.phases[0].total.write().bytes, 64 << 10);
            let data = std::fs::read(&path).unwrap();
            assert_eq!(data.len(), 192 << 10, "{rw}: the file reaches offset + size");
            if rw == Rw::Write {
                assert!(data[..128 << 10].iter().all(|&b| b == 0), "nothing written before the offset");
            }
            // Written blocks carry their absolute offset, inside [128k, 192k) (a random job's
            // file was laid out first, so blocks it missed hold the layout's data).
            let stamped = data
                .chunks(4096)
                .enumerate()
                .skip(32)
                .filter(|(i, b)| u64::from_le_bytes(b[..8].try_into().unwrap()) == *i as u64 * 4096)
                .count();
            if rw == Rw::Write {
                assert_eq!(stamped, 16, "{rw}: every block of the region written once");
            } else {
                assert!(stamped > 4, "{rw}: {stamped} blocks of the region written");
            }
        }
    }

    /// A job on a real 1 MiB file (2 s unless it says), its result.
    fn paced(p: JobPatch) -> iolab_model::JobResult {
        let dir = tempfile::tempdir().unwrap();
        let job = JobPatch {
            target: Some(dir.path().join("f")),
            bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
            size: Some(Bytes::mib(1)),
            runtime: p.runtime.or(Some(std::time::Duration::from_secs(2))),
            ..p
        }
        .resolve("p")
        .unwrap();
        let plan = Plan { phases: vec![Phase { name: "p".into(), jobs: vec![job] }] };
        plan.validate().unwrap();
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        r.phases[0].jobs[0].clone()
    }

    #[test]
    fn a_mixed_job_paces_each_direction_on_its_own() {
        // fio's rate_iops=,50 on randrw: writes at 50 IOPS, reads flat out.
        let j = paced(JobPatch { rw: Some(Rw::RandRw), write_rate_iops: Some(50), ..Default::default() });
        let (r, w) = (j.total.read().ops, j.total.write().ops);
        assert!((80..=110).contains(&w), "writes at 50 IOPS for 2 s: {w}");
        assert!(r > 4 * w, "reads unpaced: {r} reads, {w} writes");
        // Both capped: each at its own rate, the mix set aside (fio's rate_iops=100,25).
        let j = paced(JobPatch {
            rw: Some(Rw::RandRw),
            read_rate_iops: Some(100),
            write_rate_iops: Some(25),
            ..Default::default()
        });
        let (r, w) = (j.total.read().ops, j.total.write().ops);
        assert!((170..=210).contains(&r) && (40..=55).contains(&w), "{r} reads, {w} writes");
    }

    #[test]
    fn a_job_below_its_floor_ends_with_the_reason() {
        // 50 IOPS of 4 KiB is 200 KB/s: a floor of 1 MiB/s fails once the 2 s settling and a
        // cycle have passed; one of 100 KiB/s holds.
        let j = paced(JobPatch {
            rw: Some(Rw::RandRead),
            rate_iops: Some(50),
            rate_min: Some(Bytes::mib(1)),
            runtime: Some(std::time::Duration::from_secs(5)),
            ..Default::default()
        });
        let e = j.error.unwrap_or_default();
        assert!(e.contains("reads fell below the floor") && e.contains("rate_min"), "{e}");
        let j = paced(JobPatch {
            rw: Some(Rw::RandRead),
            rate_iops: Some(50),
            rate_min: Some(Bytes::kib(100)),
            rate_cycle: Some(std::time::Duration::from_millis(500)),
            runtime: Some(std::time::Duration::from_secs(4)),
            ..Default::default()
        });
        assert_eq!(j.error, None);
        assert!(j.total.read().ops >= 150, "{}", j.total.read().ops);
    }

    #[test]
    fn a_poisson_process_keeps_the_rate() {
        let j = paced(JobPatch {
            rw: Some(Rw::RandRead),
            rate_iops: Some(200),
            rate_process: Some(iolab_spec::pace::RateProcess::Poisson),
            ..Default::default()
        });
        let n = j.total.read().ops;
        // 400 expected; a Poisson count's standard deviation is 20.
        assert!((320..=480).contains(&n), "{n} reads in 2 s at 200 IOPS");
    }

    #[test]
    fn a_random_map_writes_each_block_of_the_file_once() {
        // 256 random 4 KiB writes over 1 MiB: with the map every block is written (and carries
        // its offset); drawn independently, about a third are missed.
        let dir = tempfile::tempdir().unwrap();
        let stamped = |map: bool| {
            let path = dir.path().join(format!("f{map}"));
            let job = JobPatch {
                target: Some(path.clone()),
                rw: Some(Rw::RandWrite),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                size: Some(Bytes::mib(1)),
                random_map: Some(map),
                ..Default::default()
            }
            .resolve("m")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "m".into(), jobs: vec![job] }] };
            plan.validate().unwrap();
            let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            assert_eq!(r.phases[0].total.write().ops, 256);
            let data = std::fs::read(&path).unwrap();
            data.chunks(4096)
                .enumerate()
                .filter(|(i, b)| u64::from_le_bytes(b[..8].try_into().unwrap()) == *i as u64 * 4096)
                .count()
        };
        assert_eq!(stamped(true), 256);
        assert!(stamped(false) < 200, "independent draws miss blocks");
    }

    #[test]
    fn backward_writes_and_reads_go_through_the_file_from_its_end() {
        // fio's rw=write:-8k on 64 KiB: 16 writes at 0, then 56k down to 0; every block but
        // the last carries its offset, the last is never written.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let run = |rw: Rw| {
            let job = JobPatch {
                target: Some(path.clone()),
                rw: Some(rw),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                size: Some(Bytes::kib(64)),
                backward: Some(Bytes::kib(8)),
                ..Default::default()
            }
            .resolve("b")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "b".into(), jobs: vec![job] }] };
            plan.validate().unwrap();
            run_plan(&plan, &Control::default(), &mut NoSink).unwrap()
        };
        let r = run(Rw::Write);
        assert_eq!((r.phases[0].total.write().ops, r.phases[0].total.write().bytes), (16, 64 << 10));
        let data = std::fs::read(&path).unwrap();
        let stamped: Vec<bool> = data
            .chunks(4096)
            .enumerate()
            .map(|(i, b)| {
                b.len() >= 8
                    && u64::from_le_bytes(b[..8].try_into().unwrap()) == i as u64 * 4096
                    && b[8..].iter().any(|&x| x != 0)
            })
            .collect();
        assert!(stamped[..15].iter().all(|s| *s), "{stamped:?}");
        assert!(!stamped.get(15).copied().unwrap_or(false), "the last block is never written");
        let r = run(Rw::Read);
        assert_eq!(r.phases[0].total.read().ops, 16);
    }

    #[test]
    fn dedupe_repeats_the_share_of_writes_fio_repeats() {
        // fio 3.33, 1024 writes of 4 KiB, dedupe_percentage=50: 513 distinct blocks with
        // dedupe_mode=repeat, 514 with working_set at 25%.
        let dir = tempfile::tempdir().unwrap();
        let distinct = |dedupe: Option<u8>, set: Option<u8>| {
            let path = dir.path().join(format!("d{dedupe:?}{set:?}"));
            let job = JobPatch {
                target: Some(path.clone()),
                rw: Some(Rw::Write),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                size: Some(Bytes::mib(4)),
                dedupe,
                dedupe_set: set,
                compressibility: Some(50),
                ..Default::default()
            }
            .resolve("d")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "d".into(), jobs: vec![job] }] };
            plan.validate().unwrap();
            run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            let data = std::fs::read(&path).unwrap();
            let blocks: std::collections::HashSet<&[u8]> = data.chunks(4096).collect();
            blocks.len()
        };
        assert_eq!(distinct(None, None), 1024);
        for set in [None, Some(25)] {
            let n = distinct(Some(50), set);
            assert!((460..=570).contains(&n), "{set:?}: {n} distinct blocks of 1024");
        }
    }

    #[test]
    fn a_global_working_set_puts_one_jobs_blocks_in_the_others_file() {
        // fio 3.33's dedupe-global.fio at 4 MiB a file (50% dedupe, working set 50%,
        // compressible 50%): 431 of b's 1024 4 KiB blocks are also in a with dedupe_global=1,
        // none without.
        let dir = tempfile::tempdir().unwrap();
        let across = |global: bool| {
            let job = |name: &str| {
                JobPatch {
                    name: Some(name.into()),
                    target: Some(dir.path().join(format!("{name}{global}"))),
                    rw: Some(Rw::Write),
                    bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(4))),
                    size: Some(Bytes::mib(4)),
                    dedupe: Some(50),
                    dedupe_set: Some(50),
                    dedupe_global: Some(global),
                    compressibility: Some(50),
                    ..Default::default()
                }
                .resolve(name)
                .unwrap()
            };
            let plan = Plan { phases: vec![Phase { name: "d".into(), jobs: vec![job("a"), job("b")] }] };
            plan.validate().unwrap();
            run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            let a = std::fs::read(dir.path().join(format!("a{global}"))).unwrap();
            let b = std::fs::read(dir.path().join(format!("b{global}"))).unwrap();
            let in_a: std::collections::HashSet<&[u8]> = a.chunks(4096).collect();
            b.chunks(4096).filter(|blk| in_a.contains(blk)).count()
        };
        assert_eq!(across(false), 0, "each job's blocks are its own");
        let n = across(true);
        assert!((250..=520).contains(&n), "{n} of b's 1024 blocks are in a");
    }

    /// A skip with its reason, kept beside the other tests' in target/test-skips.txt.
    fn skip(reason: &str) {
        let test = std::thread::current().name().unwrap_or("?").to_string();
        eprintln!("SKIPPED {test}: {reason}");
        let log = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/test-skips.txt");
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            use std::io::Write;
            let _ = writeln!(f, "SKIPPED {test}: {reason}");
        }
    }

    /// A tmpfs of `mib` MiB mounted for the test, unmounted when dropped.
    struct Tmpfs(tempfile::TempDir);

    impl Tmpfs {
        fn mount(mib: u64) -> Option<Tmpfs> {
            let dir = tempfile::tempdir().ok()?;
            let ok = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
                .arg(dir.path())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            ok.then_some(Tmpfs(dir))
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            // Lazily: a descriptor a forked child holds for a moment must not keep it mounted.
            let _ = std::process::Command::new("umount").arg("-l").arg(self.0.path()).status();
        }
    }

    fn fill_job(path: &std::path::Path, size: Option<Bytes>, fill: bool) -> Plan {
        let job = JobPatch {
            target: Some(path.to_path_buf()),
            rw: Some(Rw::Write),
            bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(64))),
            size,
            fill_fs: Some(fill),
            ..Default::default()
        }
        .resolve("fill")
        .unwrap();
        Plan { phases: vec![Phase { name: "fill".into(), jobs: vec![job] }] }
    }

    #[test]
    fn fill_fs_writes_until_the_filesystem_is_full_and_ends_there() {
        // Each case on a tmpfs of its own: a descriptor another test's child inherits for a
        // moment (between fork and exec) may hold a removed file's space.
        let fresh = || Tmpfs::mount(4).map(|fs| (fs.0.path().join("f"), fs));
        let Some((path, _fs)) = fresh() else {
            return skip("mounting a 4 MiB tmpfs needs root (mount -t tmpfs)");
        };
        // No size: writes until ENOSPC, which ends the job without an error (fio 3.33's
        // fill_device on an 8 MiB tmpfs wrote 8 MiB, error 0).
        let r = run_plan(&fill_job(&path, None, true), &Control::default(), &mut NoSink).unwrap();
        let j = &r.phases[0].jobs[0];
        assert_eq!(j.error, None);
        assert_eq!(r.phases[0].total.write().bytes, 4 << 20);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 << 20);
        // With a size it ends there, as fio's does (size=2m: 2 MiB).
        let Some((path, _fs)) = fresh() else { panic!("a second tmpfs") };
        let r = run_plan(&fill_job(&path, Some(Bytes::mib(1)), true), &Control::default(), &mut NoSink).unwrap();
        assert_eq!((r.phases[0].jobs[0].error.as_deref(), r.phases[0].total.write().bytes), (None, 1 << 20));
        // Without fill_fs a job that does not fit is refused before it writes.
        let Some((path, _fs)) = fresh() else { panic!("a third tmpfs") };
        let e = run_plan(&fill_job(&path, Some(Bytes::mib(8)), false), &Control::default(), &mut NoSink).unwrap_err();
        assert!(e.to_string().contains("free"), "{e}");
        assert!(!path.exists());
    }

    #[test]
    fn a_later_phase_reads_the_file_an_earlier_one_writes_without_a_size() {
        // fio's write phase then read phase (surface-scan.fio): the reader gives no size, the
        // file does not exist when the plan is checked, and it reads what the writer left.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let job = |rw: Rw, size: Option<Bytes>| {
            JobPatch {
                target: Some(path.clone()),
                rw: Some(rw),
                bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(64))),
                size,
                ..Default::default()
            }
            .resolve(if rw == Rw::Write { "w" } else { "r" })
            .unwrap()
        };
        let phase = |j: iolab_spec::Job| Phase { name: j.name.clone(), jobs: vec![j] };
        let plan = Plan { phases: vec![phase(job(Rw::Write, Some(Bytes::kib(640)))), phase(job(Rw::Read, None))] };
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        assert_eq!(r.phases[1].total.read().bytes, 640 << 10);
        // Alone, the reader of a missing file without a size is still refused.
        std::fs::remove_file(&path).unwrap();
        let alone = Plan { phases: vec![phase(job(Rw::Read, None))] };
        let e = run_plan(&alone, &Control::default(), &mut NoSink).unwrap_err().to_string();
        assert!(e.contains("no size was given"), "{e}");
    }

    /// The 512-byte pieces of a file that carry their own offset (a written block's stamp).
    fn stamped(data: &[u8]) -> Vec<u64> {
        data.chunks(512)
            .enumerate()
            .map(|(i, c)| (i as u64 * 512, c))
            .filter(|(at, c)| c.len() >= 8 && u64::from_le_bytes(c[..8].try_into().unwrap()) == *at && *at > 0)
            .map(|(at, _)| at)
            .collect()
    }

    #[test]
    fn offset_increment_moves_each_threads_region_and_align_its_random_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // Two threads on one file, 1 MiB apart (fio 3.33: clone 0 at 0, clone 1 at 1 MiB).
        let job = JobPatch {
            target: Some(path.clone()),
            rw: Some(Rw::Write),
            bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(64))),
            size: Some(Bytes::kib(128)),
            threads: Some(2),
            offset_increment: Some(Bytes::mib(1)),
            ..Default::default()
        }
        .resolve("w")
        .unwrap();
        let plan = Plan { phases: vec![Phase { name: "w".into(), jobs: vec![job] }] };
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        assert_eq!(r.phases[0].total.write().bytes, 256 << 10);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), (1 << 20) + (128 << 10), "the file reaches the last thread's region");
        let blocks: Vec<u64> = stamped(&data).into_iter().filter(|a| a % (64 << 10) == 0).collect();
        assert_eq!(
            blocks,
            [64 << 10, 1 << 20, (1 << 20) + (64 << 10)],
            "thread 0 at 0 (unstamped), 64k; thread 1 at 1m, 1m+64k"
        );
        assert!(data[128 << 10..1 << 20].iter().all(|&b| b == 0), "nothing between the regions");

        // Random 512-byte writes aligned to 4 KiB (fio's blockalign=4k).
        let path = dir.path().join("g");
        let job = |align: Option<Bytes>| {
            JobPatch {
                target: Some(path.clone()),
                rw: Some(Rw::RandWrite),
                bs: Some(iolab_spec::BlockSizes::single(Bytes(512))),
                size: Some(Bytes::kib(256)),
                align,
                ..Default::default()
            }
            .resolve("r")
            .unwrap()
        };
        let run = |j| {
            let _ = std::fs::remove_file(&path);
            run_plan(
                &Plan { phases: vec![Phase { name: "r".into(), jobs: vec![j] }] },
                &Control::default(),
                &mut NoSink,
            )
            .unwrap();
            stamped(&std::fs::read(&path).unwrap())
        };
        let aligned = run(job(Some(Bytes::kib(4))));
        assert!(aligned.len() > 20, "{} stamped blocks", aligned.len());
        assert!(aligned.iter().all(|a| a % 4096 == 0), "{aligned:?}");
        // Without it, 512-byte offsets land between 4 KiB boundaries too.
        assert!(run(job(None)).iter().any(|a| a % 4096 != 0));
    }

    fn file_set_job(dir: &std::path::Path, service: &str, rw: Rw, threads: u32) -> iolab_spec::Job {
        JobPatch {
            target: Some(dir.to_path_buf()),
            rw: Some(rw),
            bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(64))),
            threads: Some(threads),
            nrfiles: Some(4),
            file_sizes: Some("1m-2m".parse().unwrap()),
            file_service: Some(service.parse().unwrap()),
            ..Default::default()
        }
        .resolve("t")
        .unwrap()
    }

    #[test]
    fn several_files_per_thread_are_laid_out_named_and_each_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let job = file_set_job(dir.path(), "roundrobin", Rw::Write, 2);
        let plan = Plan { phases: vec![Phase { name: "t".into(), jobs: vec![job] }] };
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        assert_eq!(r.phases[0].jobs[0].error, None);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.retain(|n| !n.starts_with(".iolab"));
        names.sort();
        assert_eq!(names, ["t.0.0", "t.0.1", "t.0.2", "t.0.3", "t.1.0", "t.1.1", "t.1.2", "t.1.3"]);
        let mut total = 0;
        for n in &names {
            let data = std::fs::read(dir.path().join(n)).unwrap();
            let len = data.len() as u64;
            assert!((1 << 20..=2 << 20).contains(&len) && len.is_multiple_of(64 << 10), "{n}: {len}");
            // Every block of every file written (each carries its offset; block 0 its 0).
            let blocks = stamped(&data).into_iter().filter(|a| a % (64 << 10) == 0).count() as u64 + 1;
            assert_eq!(blocks, len / (64 << 10), "{n}: each file written whole");
            total += len;
        }
        assert_eq!(r.phases[0].total.write().bytes, total, "the job's bytes are its files'");
        // Read back sequentially (each file to its end before the next) and at random.
        for service in ["sequential", "random:2"] {
            let job = file_set_job(dir.path(), service, Rw::Read, 2);
            let plan = Plan { phases: vec![Phase { name: "t".into(), jobs: vec![job] }] };
            let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            assert_eq!(
                (r.phases[0].jobs[0].error.as_deref(), r.phases[0].total.read().bytes),
                (None, total),
                "{service}"
            );
        }
        // fio 3.33, given the same job, names its files the same way (its sizes are its own
        // draw from the same range, rounded to the block size too).
        if std::process::Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success()) {
            let fio_dir = tempfile::tempdir().unwrap();
            let ok = std::process::Command::new("fio")
                .arg(format!("--directory={}", fio_dir.path().display()))
                .args(["--name=t", "--nrfiles=4", "--filesize=1m-2m", "--bs=64k", "--rw=write", "--numjobs=2"])
                .args(["--file_service_type=roundrobin", "--output-format=terse"])
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "fio ran");
            let mut theirs: Vec<(String, u64)> = std::fs::read_dir(fio_dir.path())
                .unwrap()
                .flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len()))
                .collect();
            theirs.sort();
            assert_eq!(theirs.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), names);
            assert!(
                theirs.iter().all(|(_, l)| (1 << 20..=2 << 20).contains(l) && l.is_multiple_of(64 << 10)),
                "{theirs:?}"
            );
        } else {
            skip("fio is not installed: the names are not compared with fio's");
        }
    }

    #[test]
    fn refill_buffers_gives_every_write_new_data() {
        let same = written_blocks(false);
        let fresh = written_blocks(true);
        for (i, b) in same.iter().chain(&fresh).enumerate() {
            // Every block carries its offset in its first 8 bytes.
            assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), (i as u64 % 8) * 65536);
        }
        // By default only the offset stamp differs between blocks; refilled, the data does.
        assert!(same.windows(2).all(|w| w[0][8..] == w[1][8..]));
        assert!(fresh.windows(2).all(|w| w[0][8..] != w[1][8..]));
        // Refilled data is still incompressible pseudo-random data, not zeros.
        assert!(fresh.iter().all(|b| b[8..].iter().filter(|&&x| x == 0).count() < b.len() / 64));
    }
}
