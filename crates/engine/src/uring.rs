//! io_uring: operations are queued as SQEs, submitted in a batch by `commit`, and reaped
//! from the completion queue, so one thread keeps `iodepth` I/Os in flight. Files are
//! registered with the ring (as fio's `registerfiles`), saving a file lookup per I/O.

use crate::{buffer::BufferPool, Completion, Engine, EngineError, Op, OpKind};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::os::fd::AsRawFd;

pub struct Uring {
    ring: IoUring,
    pool: BufferPool,
    files: Vec<File>,
    registered: bool,
    in_flight: Vec<bool>,
    pending: usize,
    outstanding: usize,
}

fn setup(what: &str, source: std::io::Error) -> EngineError {
    EngineError::Setup { engine: "io_uring", what: what.into(), source }
}

impl Uring {
    pub fn new(depth: usize, buf_len: usize) -> Result<Self, EngineError> {
        let depth = depth.clamp(1, 4096);
        let entries = depth.next_power_of_two() as u32;
        // As fio sets up its rings: completions run when this thread asks for them, not by
        // interrupting it (COOP_TASKRUN, DEFER_TASKRUN), and only this thread submits
        // (SINGLE_ISSUER; the engine lives and dies in its worker). Kernels before 6.1 refuse
        // these flags: then a plain ring.
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| setup("creating the ring", e))?;
        Ok(Uring {
            ring,
            pool: BufferPool::new(depth, buf_len),
            files: Vec::new(),
            registered: false,
            in_flight: vec![false; depth],
            pending: 0,
            outstanding: 0,
        })
    }

    fn register(&mut self) -> Result<(), EngineError> {
        if self.registered {
            self.ring.submitter().unregister_files().map_err(|e| setup("unregistering files", e))?;
        }
        let fds: Vec<i32> = self.files.iter().map(|f| f.as_raw_fd()).collect();
        self.ring.submitter().register_files(&fds).map_err(|e| setup("registering files", e))?;
        self.registered = true;
        Ok(())
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }
    fn depth(&self) -> usize {
        self.in_flight.len()
    }
    fn add_file(&mut self, file: &File, _len: u64) -> Result<u32, EngineError> {
        if self.outstanding > 0 {
            return Err(EngineError::Unsupported {
                engine: "io_uring",
                what: "adding a file while I/O is in flight".into(),
            });
        }
        self.files.push(file.try_clone().map_err(|e| setup("dup of the file", e))?);
        self.register()?;
        Ok(self.files.len() as u32 - 1)
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        assert!(!self.in_flight[slot as usize], "buffer slot {slot} is in flight");
        self.pool.slot_mut(slot)
    }
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let slot = op.slot as usize;
        assert!(!self.in_flight[slot], "slot {slot} queued twice");
        assert!(op.len as usize <= self.pool.slot_len(), "op longer than its buffer");
        assert!((op.file as usize) < self.files.len(), "unknown file index");
        let fd = types::Fixed(op.file);
        let ptr = self.pool.slot_ptr(op.slot);
        let entry = match op.kind {
            OpKind::Read => opcode::Read::new(fd, ptr, op.len).offset(op.offset).build(),
            OpKind::Write => opcode::Write::new(fd, ptr, op.len).offset(op.offset).build(),
            OpKind::Fsync => opcode::Fsync::new(fd).build(),
            OpKind::Fdatasync => opcode::Fsync::new(fd).flags(types::FsyncFlags::DATASYNC).build(),
        }
        .user_data(op.slot as u64);
        if self.ring.submission().is_full() {
            self.ring.submit().map_err(|source| EngineError::Submit { engine: "io_uring", source })?;
        }
        // SAFETY: the buffer at `ptr` belongs to `self.pool`, which lives as long as the ring
        // (both are fields of self, and Drop waits for in-flight I/O below); the slot is marked
        // in flight, so `buffer()` refuses to hand it out until its completion is reaped; the
        // fixed file index refers to a file held open in `self.files`.
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
            self.ring.submit().map_err(|source| EngineError::Submit { engine: "io_uring", source })?;
            self.pending = 0;
        }
        Ok(())
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let want = min.min(self.outstanding);
        let mut got = 0;
        if want == 0 && self.outstanding > 0 {
            // With deferred task work, finished I/O is posted only when asked for: ask, without waiting.
            // SAFETY: io_uring_enter with nothing to submit, no minimum and no argument; the ring is ours.
            let r = unsafe {
                self.ring.submitter().enter::<libc::sigset_t>(0, 0, 1 /* IORING_ENTER_GETEVENTS */, None)
            };
            if let Err(source) =
                r.map(|_| ()).or_else(|e| if e.raw_os_error() == Some(libc::EINTR) { Ok(()) } else { Err(e) })
            {
                return Err(EngineError::Submit { engine: "io_uring", source });
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
            match self.ring.submit_and_wait(want - got) {
                Ok(_) => self.pending = 0,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(source) => return Err(EngineError::Submit { engine: "io_uring", source }),
            }
        }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel may still write into pool buffers: wait for every outstanding I/O first.
        while self.outstanding > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                break;
            }
            for _ in self.ring.completion() {
                self.outstanding -= 1;
            }
        }
    }
}
