//! io_uring: operations are queued as SQEs, submitted in a batch by `commit`, and reaped
//! from the completion queue, so one thread keeps `iodepth` I/Os in flight. Files in the first
//! [`FIXED`] table entries are registered with the ring (as fio's `registerfiles`), saving a
//! file lookup per I/O. lseek, ftruncate and sync_file_range run at once (the first two have no
//! ring operation) and their completion comes back with the next reap.

use crate::{
    buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup, SqPoll,
};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::os::fd::AsRawFd;

/// Table entries registered with the ring (a sparse table, filled as files are set).
pub const FIXED: u32 = 256;

pub struct Uring {
    ring: IoUring,
    pool: BufferPool,
    files: FileTable<File>,
    /// Whether the sparse fixed-file table was registered (kernels from 5.19).
    fixed: bool,
    /// Whether the buffer pool is registered with the ring (as fio's `fixedbufs`); refused
    /// when it exceeds the locked-memory limit of an unprivileged user, then plain reads.
    fixed_bufs: bool,
    in_flight: Vec<bool>,
    /// The iovecs of each slot's vectored operation; they must live until its completion.
    iovs: Vec<Vec<libc::iovec>>,
    /// Completions of operations performed synchronously, returned by the next reap.
    ready: Vec<Completion>,
    pending: usize,
    outstanding: usize,
    /// The ring has a kernel thread polling its submission queue (SQPOLL): completions are
    /// posted without this thread asking, so a look at the queue needs no system call, and
    /// `reap` polls the completion queue instead of waiting in the kernel, as fio does.
    sqpoll: bool,
}

// SAFETY: the iovecs point into `pool`, which the engine owns and moves with it; nothing else
// refers to them. Everything else is Send already.
unsafe impl Send for Uring {}

fn setup(what: &str, source: std::io::Error) -> EngineError {
    EngineError::Setup { engine: "io_uring", what: what.into(), source }
}

fn submit_err(source: std::io::Error) -> EngineError {
    EngineError::Submit { engine: "io_uring", source }
}

/// Build the SQE for `op` on a target of either kind (fixed index or plain descriptor).
macro_rules! entry {
    ($fd:expr, $op:expr, $ptr:expr, $iov:expr, $fixed_buf:expr) => {{
        let (fd, op, ptr) = ($fd, $op, $ptr);
        match op.kind {
            // With the pool registered (one buffer, index 0), pread/pwrite read and write it
            // without the kernel pinning the user pages for each I/O.
            // The operation's RWF_* flags ride in the SQE's rw_flags, as preadv2/pwritev2 take them.
            OpKind::Read if $fixed_buf => opcode::ReadFixed::new(fd, ptr, op.len, 0)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Write if $fixed_buf => opcode::WriteFixed::new(fd, ptr, op.len, 0)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Read => opcode::Read::new(fd, ptr, op.len)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Write => opcode::Write::new(fd, ptr, op.len)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            // An offset of -1 reads or writes at (and advances) the file position.
            OpKind::ReadCur => opcode::Read::new(fd, ptr, op.len)
                .offset(u64::MAX)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::WriteCur => opcode::Write::new(fd, ptr, op.len)
                .offset(u64::MAX)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Readv(_) => opcode::Readv::new(fd, $iov.as_ptr(), $iov.len() as u32)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Writev(_) => opcode::Writev::new(fd, $iov.as_ptr(), $iov.len() as u32)
                .offset(op.offset)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::ReadvCur(_) => opcode::Readv::new(fd, $iov.as_ptr(), $iov.len() as u32)
                .offset(u64::MAX)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::WritevCur(_) => opcode::Writev::new(fd, $iov.as_ptr(), $iov.len() as u32)
                .offset(u64::MAX)
                .rw_flags(op.flags.bits() as i32)
                .ioprio(op.prio)
                .build(),
            OpKind::Fsync => opcode::Fsync::new(fd).build(),
            OpKind::Fdatasync => opcode::Fsync::new(fd).flags(types::FsyncFlags::DATASYNC).build(),
            OpKind::Fallocate { mode, len } => {
                opcode::Fallocate::new(fd, len).offset(op.offset).mode(mode as i32).build()
            }
            OpKind::Seek(_) | OpKind::Ftruncate | OpKind::SyncRange { .. } | OpKind::Trim => {
                unreachable!("performed synchronously")
            }
        }
    }};
}

impl Uring {
    pub fn new(Setup { depth, buf_len, sqpoll, .. }: Setup) -> Result<Self, EngineError> {
        let depth = depth.clamp(1, EngineKind::IoUring.caps().max_depth as usize);
        let entries = depth.next_power_of_two() as u32;
        let ring = if sqpoll.on { Self::sqpoll_ring(entries, sqpoll)? } else { Self::ring(entries)? };
        let fixed = ring.submitter().register_files_sparse(FIXED).is_ok();
        let mut pool = BufferPool::try_new(depth, buf_len).map_err(|e| EngineError::memory(EngineKind::IoUring, e))?;
        let whole = pool.as_iovec();
        // SAFETY: the iovec covers the pool's one allocation, which lives as long as the ring:
        // both are fields of this engine, and `ring` is declared (so dropped, unregistering
        // the buffer) before `pool`.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&[whole]) }.is_ok();
        Ok(Uring {
            ring,
            pool,
            files: FileTable::default(),
            fixed,
            fixed_bufs,
            in_flight: vec![false; depth],
            iovs: vec![Vec::new(); depth],
            ready: Vec::new(),
            pending: 0,
            outstanding: 0,
            sqpoll: sqpoll.on,
        })
    }

    /// As fio sets up its rings: completions run when this thread asks for them, not by
    /// interrupting it (COOP_TASKRUN, DEFER_TASKRUN), and only this thread submits
    /// (SINGLE_ISSUER; the engine lives and dies in its worker). Kernels before 6.1 refuse
    /// these flags: then a plain ring.
    fn ring(entries: u32) -> Result<IoUring, EngineError> {
        IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| setup("creating the ring", e))
    }

    /// A ring whose submission queue a kernel thread polls (fio's sqthread_poll), built as fio
    /// 3.33 ends up building it: the kernel refuses DEFER_TASKRUN (with SINGLE_ISSUER) beside
    /// SQPOLL, and fio, refused, drops them, then COOP_TASKRUN when that is refused too (6.18
    /// refuses it: strace shows fio's third io_uring_setup, SQPOLL alone, succeed). The thread
    /// sleeps after the kernel's default idle (fio leaves sq_thread_idle at 0: one second);
    /// `submit` wakes it (IORING_ENTER_SQ_WAKEUP) when the ring says it sleeps.
    fn sqpoll_ring(entries: u32, sqpoll: SqPoll) -> Result<IoUring, EngineError> {
        let build = |coop: bool| {
            let mut b = IoUring::builder();
            b.setup_sqpoll(0);
            if let Some(cpu) = sqpoll.cpu {
                b.setup_sqpoll_cpu(cpu);
            }
            if coop {
                b.setup_coop_taskrun();
            }
            b.build(entries)
        };
        build(true).or_else(|_| build(false)).map_err(|e| match sqpoll.cpu {
            Some(cpu) if e.raw_os_error() == Some(libc::EINVAL) => setup(
                &format!("creating a ring polled by a kernel thread on CPU {cpu} (sqpoll_cpu: is CPU {cpu} online and allowed?)"),
                e,
            ),
            _ => setup("creating a ring polled by a kernel thread (sqpoll)", e),
        })
    }

    /// On a polled ring the kernel thread frees submission entries as it takes them, and it
    /// posts an I/O's completion before it moves the queue's head past it: a slot reaped and
    /// queued again can find the queue still full. Wake the thread if it sleeps and wait for
    /// room (IORING_ENTER_SQ_WAIT), as fio waits when its queue is busy.
    #[cold]
    fn wait_for_room(&mut self) -> Result<(), EngineError> {
        while self.ring.submission().is_full() {
            self.ring.submit().map_err(submit_err)?;
            match self.ring.submitter().squeue_wait() {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(source) => return Err(submit_err(source)),
            }
        }
        Ok(())
    }

    /// Wait for a completion on a polled ring as fio does with sqthread_poll: look at the
    /// completion queue again without entering the kernel (fio's getevents makes no
    /// io_uring_enter then), so the job's thread stays on its CPU beside the kernel's polling
    /// thread, and the figures are fio's: on a machine short of CPUs the two threads contend
    /// (fio 3.33 does 5.4K IOPS there where it does 40K without). What is queued and not yet
    /// committed is handed over first (a system call only to wake a sleeping thread).
    #[cold]
    fn spin(&mut self) -> Result<(), EngineError> {
        if self.pending > 0 {
            self.ring.submit().map_err(submit_err)?;
            self.pending = 0;
        }
        std::hint::spin_loop();
        Ok(())
    }

    fn is_fixed(&self, index: u32) -> bool {
        self.fixed && index < FIXED
    }
}

impl Engine for Uring {
    #[inline]
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }
    fn depth(&self) -> usize {
        self.in_flight.len()
    }
    fn set_file(&mut self, index: u32, file: File, _len: u64) -> Result<(), EngineError> {
        let fd = file.as_raw_fd();
        self.files.set("io_uring", index, file)?;
        if self.is_fixed(index) {
            if let Err(e) = self.ring.submitter().register_files_update(index, &[fd]) {
                self.files.take(index);
                return Err(setup("registering a file", e));
            }
        }
        Ok(())
    }
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError> {
        if self.outstanding > 0 {
            return Err(EngineError::Unsupported {
                engine: "io_uring",
                what: "closing a file while I/O is in flight".into(),
            });
        }
        if self.is_fixed(index) && self.files.get(index).is_some() {
            self.ring.submitter().register_files_update(index, &[-1]).map_err(|e| setup("unregistering a file", e))?;
        }
        Ok(self.files.take(index))
    }
    fn free_index(&self) -> u32 {
        self.files.free_index()
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        assert!(!self.in_flight[slot as usize], "buffer slot {slot} is in flight");
        self.pool.slot_mut(slot)
    }
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let slot = op.slot as usize;
        assert!(!self.in_flight[slot], "slot {slot} queued twice");
        assert!(
            op.len as usize <= self.pool.slot_len() || !(op.kind.reads() || op.kind.writes()),
            "op longer than its buffer"
        );
        let Some(file) = self.files.get(op.file) else {
            self.ready.push(Completion::from_io(op.slot, Err(calls::no_file())));
            return Ok(());
        };
        if matches!(op.kind, OpKind::Seek(_) | OpKind::Ftruncate | OpKind::SyncRange { .. } | OpKind::Trim) {
            let r = calls::perform(file, &op, &mut []);
            self.ready.push(Completion::from_io(op.slot, r));
            return Ok(());
        }
        let raw = file.as_raw_fd();
        let ptr = self.pool.slot_ptr(op.slot);
        if let OpKind::Readv(n) | OpKind::Writev(n) | OpKind::ReadvCur(n) | OpKind::WritevCur(n) = op.kind {
            let iov = &mut self.iovs[slot];
            iov.clear();
            for r in calls::pieces(op.len as usize, n) {
                // SAFETY: the range lies within the slot (len <= slot_len, asserted above).
                iov.push(libc::iovec { iov_base: unsafe { ptr.add(r.start) } as *mut libc::c_void, iov_len: r.len() });
            }
        }
        let iov = &self.iovs[slot];
        let entry = if self.is_fixed(op.file) {
            entry!(types::Fixed(op.file), op, ptr, iov, self.fixed_bufs)
        } else {
            entry!(types::Fd(raw), op, ptr, iov, self.fixed_bufs)
        }
        .user_data(op.slot as u64);
        if self.ring.submission().is_full() {
            self.ring.submit().map_err(submit_err)?;
            if self.sqpoll {
                self.wait_for_room()?;
            }
        }
        // SAFETY: the buffer at `ptr` and the slot's iovecs belong to `self`, which outlives the
        // ring's use of them (Drop waits for in-flight I/O, through EINTR); the slot is marked in
        // flight, so `buffer()` refuses to hand it out and `queue` to reuse its iovecs until its
        // completion is reaped; the file (fixed index or descriptor) is held open in
        // `self.files`, and `take_file` refuses while I/O is outstanding.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        pushed.map_err(|_: squeue::PushError| EngineError::Unsupported {
            engine: "io_uring",
            what: "submission queue full".into(),
        })?;
        self.in_flight[slot] = true;
        self.pending += 1;
        self.outstanding += 1;
        Ok(())
    }
    fn commit(&mut self) -> Result<(), EngineError> {
        if self.pending > 0 {
            self.ring.submit().map_err(submit_err)?;
            self.pending = 0;
        }
        Ok(())
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let mut got = self.ready.len();
        out.append(&mut self.ready);
        let want = min.min(self.outstanding + got);
        if want <= got && self.outstanding > 0 && !self.sqpoll {
            // With deferred task work, finished I/O is posted only when asked for: ask, without
            // waiting (a polled ring has none deferred: the look below is enough).
            // SAFETY: io_uring_enter with nothing to submit, no minimum and no argument; the ring is ours.
            let r = unsafe {
                self.ring.submitter().enter::<libc::sigset_t>(0, 0, 1 /* IORING_ENTER_GETEVENTS */, None)
            };
            if let Err(source) =
                r.map(|_| ()).or_else(|e| if e.raw_os_error() == Some(libc::EINTR) { Ok(()) } else { Err(e) })
            {
                return Err(submit_err(source));
            }
        }
        loop {
            for cqe in self.ring.completion() {
                let slot = cqe.user_data() as u32;
                self.in_flight[slot as usize] = false;
                self.outstanding -= 1;
                out.push(Completion { slot, res: cqe.result() as i64 });
                got += 1;
            }
            if got >= want {
                return Ok(());
            }
            if self.sqpoll {
                self.spin()?;
                continue;
            }
            match self.ring.submit_and_wait(want - got) {
                Ok(_) => self.pending = 0,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(source) => return Err(submit_err(source)),
            }
        }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel may still write into pool buffers: wait for every outstanding I/O first.
        // A signal interrupting the wait (EINTR) is not a reason to stop waiting; any other
        // error means the ring cannot tell us more, and then the buffers are leaked rather than
        // freed under the kernel's feet.
        while self.outstanding > 0 {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(_) => {
                    std::mem::forget(std::mem::replace(&mut self.pool, BufferPool::new(1, 1)));
                    std::mem::forget(std::mem::take(&mut self.iovs));
                    return;
                }
            }
            for _ in self.ring.completion() {
                self.outstanding -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small pool registers with the ring under any locked-memory limit, so reads and writes go
    /// through READ_FIXED/WRITE_FIXED (the engine tests in lib.rs check their data both ways).
    #[test]
    fn the_buffer_pool_is_registered() {
        if let Err(why) = crate::io_uring_available() {
            eprintln!("skipped: {why}");
            return;
        }
        let e = Uring::new(crate::Setup::new(4, 4096)).unwrap();
        assert!(e.fixed_bufs, "a 16 KiB pool registers");
    }

    /// The kernel's polling threads of this process (`iou-sqp-PID`), from /proc.
    fn sqpoll_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|c| c.starts_with("iou-sqp-"))
            .count()
    }

    /// With `sqpoll` the ring is set up with IORING_SETUP_SQPOLL (and without it, not), a
    /// kernel thread of this process polls it, and every block written through it at depth 4
    /// (slots reaped and queued again at once, where the queue can still look full) reads back
    /// as written, through the engine and through the file.
    #[test]
    fn a_polled_ring_has_its_thread_and_moves_every_block() {
        use std::io::Read;
        if let Err(why) = crate::io_uring_available() {
            eprintln!("skipped: {why}");
            return;
        }
        let plain = Uring::new(crate::Setup::new(4, 4096)).unwrap();
        assert!(!plain.ring.params().is_setup_sqpoll());
        drop(plain);
        let setup = crate::Setup { sqpoll: SqPoll { on: true, cpu: None }, ..crate::Setup::new(4, 4096) };
        let mut e = match Uring::new(setup) {
            Ok(e) => e,
            Err(why) => {
                eprintln!("skipped: this kernel refuses a polled ring: {why}");
                return;
            }
        };
        assert!(e.ring.params().is_setup_sqpoll());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        const BLOCKS: u32 = 2048;
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.set_len(BLOCKS as u64 * 4096).unwrap();
        let f = e.add_file(&file, BLOCKS as u64 * 4096).unwrap();
        let run = |e: &mut Uring, kind: OpKind| {
            let mut done = Vec::new();
            let (mut next, mut finished) = (0u32, 0u32);
            let mut free: Vec<u32> = (0..4).collect();
            while finished < BLOCKS {
                while let (Some(slot), true) = (free.last().copied(), next < BLOCKS) {
                    free.pop();
                    if kind == OpKind::Write {
                        e.buffer(slot)[..4096].fill((next % 251) as u8 + 1);
                    }
                    e.queue(Op::new(kind, f, next as u64 * 4096, 4096, slot)).unwrap();
                    e.commit().unwrap();
                    next += 1;
                }
                done.clear();
                e.reap(1, &mut done).unwrap();
                for c in &done {
                    assert_eq!(c.result().unwrap(), 4096, "{kind:?}");
                    if kind == OpKind::Read {
                        let b = e.buffer(c.slot)[0];
                        assert!(b >= 1 && e.buffer(c.slot)[..4096].iter().all(|&x| x == b), "a block reads back whole");
                    }
                    free.push(c.slot);
                    finished += 1;
                }
            }
        };
        run(&mut e, OpKind::Write);
        // The thread names itself when it first runs: by now it has taken every write.
        assert!(sqpoll_threads() >= 1, "a polled ring has its kernel thread");
        run(&mut e, OpKind::Read);
        let mut raw = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut raw).unwrap();
        for (i, block) in raw.chunks(4096).enumerate() {
            assert!(block.iter().all(|&x| x == (i % 251) as u8 + 1), "block {i} is as written");
        }
        // A CPU that does not exist is refused, naming the setting.
        let bad = crate::Setup { sqpoll: SqPoll { on: true, cpu: Some(1 << 20) }, ..crate::Setup::new(4, 4096) };
        let err = Uring::new(bad).err().expect("no such CPU").to_string();
        assert!(err.contains("sqpoll_cpu") && err.contains("CPU 1048576"), "{err}");
    }
}
