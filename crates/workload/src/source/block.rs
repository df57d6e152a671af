//! The block workload as an operation source: reads and writes where the access pattern says
//! (sequential, strided, uniform, zipf; weighted sizes; a read/write mix), a flush every N
//! writes as a barrier, open-loop pacing under `--rate`/`--rate-iops`, each written block
//! stamped with its offset (and given new data with `--refill-buffers`), and a final fsync with
//! `--end-fsync`. A paced job's time runs to the end of its last operation's slot (the rate
//! is over the schedule, never over a near-zero window), and never past the deadline. Reads
//! of a file whose holes were kept are counted, with those that fell in a hole.

use super::cmdprio::Chooser;
use super::dedupe::Dedup;
use super::pace::{Admit, Pacer};
use super::{describe_failure, io_error, Call, Ctx, Issue, Next, SetupFile, Source, SourceError};
use crate::clock::Stamp;
use crate::layout::{Target, TargetKind};
use crate::pattern::{Dir, Pattern};
use iolab_engine::{fill_pattern, refill, OpKind, OpenOptions};
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
}

impl<'a> BlockSource<'a> {
    /// The source of one thread of `job` on `target` (none for the null engine).
    pub fn new(job: &'a Job, b: &'a BlockJob, thread: u32, target: Option<&'a Target>) -> Self {
        let base = b.offset();
        let (path, size) = match target {
            Some(t) => (t.path.display().to_string(), t.size.saturating_sub(base)),
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
            dedupe: b.dedupe.map(|d| Dedup::new(d, job.seed, thread, (size as f64 / b.mean_bs()) as u64)),
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

    fn flush(kind: OpKind) -> Next {
        Next::Issue(Issue::now(Call::Data { kind, file: 0, offset: 0, len: 0 }))
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
            self.end_fsync_done = true;
            return Self::flush(OpKind::Fsync);
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
            write: b.rw.writes() || b.end_fsync || job.engine.caps().maps_files() && t.kind == TargetKind::File,
            direct: job.direct,
            dsync: b.sync == SyncMode::Dsync,
            sync: b.sync == SyncMode::Sync,
            ..Default::default()
        };
        // The target as it was checked (or created), opened again with this worker's flags
        // through its descriptor: never by its name.
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
        Ok(vec![SetupFile { index: 0, file, len: t.size, path: self.path.clone() }])
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
            return Self::flush(self.flush_kind);
        }
        let Some(mut a) = self.pattern.next_access() else {
            self.exhausted = true;
            return self.finish(ctx);
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
            Dir::Write => {
                self.writes_since_flush += 1;
                OpKind::Write
            }
        };
        Next::Issue(Issue {
            call: Call::Data { kind, file: 0, offset: self.base + a.offset, len: a.len },
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
        let Call::Data { kind, len, offset, .. } = *call else { return Ok(()) };
        if kind.is_sync() {
            self.flushing = false;
        }
        if !self.holes.is_empty() && kind == OpKind::Read {
            self.count_hole_read(offset, len);
        }
        if let (Some(p), Ok(n), false) = (&mut self.pace, result, kind.is_sync()) {
            let dir = if kind == OpKind::Read { Dir::Read } else { Dir::Write };
            p.completed(dir, *n as u64).map_err(SourceError::Said)?;
        }
        match result {
            Ok(n) if kind.is_sync() || *n == len as usize => Ok(()),
            r => self.failed(call, r),
        }
    }
}

/// A well-mixed 64-bit key from a counter (SplitMix64's finaliser), so consecutive writes get
/// unrelated data.
pub(super) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl BlockSource<'_> {
    /// Its reads of kept holes (see [`Source::hole_reads`]), when its file has any.
    pub fn holes_counted(&self) -> Option<(u64, u64)> {
        (!self.holes.is_empty()).then_some((self.hole_reads, self.in_holes))
    }

    /// A call that failed or came up short, in words.
    #[cold]
    fn failed(&self, call: &Call, r: &io::Result<usize>) -> Result<(), SourceError> {
        let Call::Data { kind, offset, len, .. } = *call else { return Ok(()) };
        if let (true, Err(e)) = (kind.is_sync() && self.end_fsync_done, r) {
            // The final fsync names itself as such.
            let e =
                e.raw_os_error().map_or_else(|| io::Error::new(e.kind(), e.to_string()), io::Error::from_raw_os_error);
            return Err(io_error("final fsync of", &self.path, "")(e));
        }
        Err(describe_failure(call, &self.path, len, offset, r))
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
