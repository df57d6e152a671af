//! libaio: Linux native asynchronous I/O, the kernel path fio's `ioengine=libaio` measures (and
//! the one most databases still use): io_setup, io_submit, io_getevents and io_destroy, made as
//! raw system calls (Debian's libaio is a thin wrapper over them), with fio's batching of
//! submissions and completions ([`QueueBatch`]). Reads and writes (with their RWF_* flags),
//! vectored reads and writes, fsync and fdatasync go through AIO; the calls AIO has no command
//! for (at the file position, lseek, sync_file_range, ftruncate, fallocate) are made
//! synchronously, as the io_uring engine does for its own gaps.

use crate::{buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const IOCB_CMD_FSYNC: u16 = 2;
const IOCB_CMD_FDSYNC: u16 = 3;
const IOCB_CMD_PREADV: u16 = 7;
const IOCB_CMD_PWRITEV: u16 = 8;

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h): 64 bytes, `aio_key` and
/// `aio_rw_flags` swapped on big-endian machines.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Iocb {
    data: u64,
    #[cfg(target_endian = "little")]
    key: u32,
    rw_flags: u32,
    #[cfg(target_endian = "big")]
    key: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// aio_abi.h: the iocb's `aio_reqprio` is the request's I/O priority.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64 && std::mem::size_of::<IoEvent>() == 32);

/// The kernel's `struct iovec`, as plain numbers (a pointer-holding iovec would make the
/// engine not `Send`; the addresses are the pool's, which the engine owns).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Iov {
    base: usize,
    len: usize,
}

const _: () = assert!(std::mem::size_of::<Iov>() == std::mem::size_of::<libc::iovec>());

/// A file in the table, with the alignment O_DIRECT asks of its I/O (0: not O_DIRECT).
struct AioFile {
    file: File,
    align: u32,
}

pub struct Libaio {
    /// The AIO context (`aio_context_t`); 0 once destroyed.
    ctx: libc::c_ulong,
    /// One control block per slot, at a fixed address while the slot is in flight.
    iocbs: Box<[Iocb]>,
    /// Each slot's iovecs, for vectored calls.
    iovs: Vec<Vec<Iov>>,
    pool: BufferPool,
    files: FileTable<AioFile>,
    in_flight: Vec<bool>,
    /// Addresses of the queued control blocks not yet submitted, in order (io_submit's array).
    queued: Vec<usize>,
    events: Vec<IoEvent>,
    /// Completions made without the kernel's AIO (synchronous calls, refusals), for `reap`.
    ready: Vec<Completion>,
    /// Submitted and not yet reaped.
    outstanding: usize,
    /// Submit once this many are queued (usize::MAX: at `commit`, iolab's own way).
    submit_at: usize,
    /// Wait for at least this many completions per reap.
    complete_min: usize,
    /// Take at most this many per io_getevents.
    complete_max: usize,
    /// Once the queue is full, drain it to this many before refilling.
    low: usize,
}

fn setup_err(what: String, source: io::Error) -> EngineError {
    EngineError::Setup { engine: "libaio", what, source }
}

fn submit_err(source: io::Error) -> EngineError {
    EngineError::Submit { engine: "libaio", source }
}

/// A /proc/sys/fs figure, for the message that names the limit.
fn proc_fs(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/fs/{name}")).map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

/// Why io_setup refused, said so the user knows what to change.
fn why_no_context(nr: usize, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => format!(
            "io_setup for {nr} events exceeds the kernel's AIO limit: /proc/sys/fs/aio-max-nr is {} with {} in use \
             (/proc/sys/fs/aio-nr); raise it (sysctl -w fs.aio-max-nr=1048576) or lower --iodepth",
            proc_fs("aio-max-nr"),
            proc_fs("aio-nr"),
        ),
        Some(libc::ENOSYS) | Some(libc::EPERM) => {
            "this kernel has no native AIO (built without CONFIG_AIO, or a seccomp filter refuses io_setup); \
             use --engine io_uring or psync"
                .into()
        }
        _ => format!("io_setup for {nr} events"),
    }
}

/// io_setup(2): a context for `nr` events in flight.
fn io_setup(nr: usize) -> io::Result<libc::c_ulong> {
    let mut ctx: libc::c_ulong = 0;
    let n = libc::c_long::try_from(nr).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: io_setup writes one aio_context_t (an unsigned long) to the pointer, which points to
    // a zeroed local that lives across the call, as the kernel requires.
    let r = unsafe { libc::syscall(libc::SYS_io_setup, n, &mut ctx as *mut libc::c_ulong) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ctx)
    }
}

/// The alignment O_DIRECT asks of I/O on `file`: 0 when it is not open O_DIRECT, else the
/// offset alignment statx reports (STATX_DIOALIGN), or 512 where it reports none.
fn direct_align(file: &File) -> u32 {
    let direct = rustix::fs::fcntl_getfl(file).is_ok_and(|f| f.contains(rustix::fs::OFlags::DIRECT));
    if !direct {
        return 0;
    }
    use rustix::fs::{AtFlags, StatxFlags};
    match rustix::fs::statx(file.as_fd(), "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0 && st.stx_dio_offset_align > 0 => {
            st.stx_dio_offset_align
        }
        _ => 512,
    }
}

impl Libaio {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Self::with_events(setup, setup.depth.max(1))
    }

    /// The engine with a context for `nr` events (the depth, but for the test of the limit).
    fn with_events(setup: Setup, nr: usize) -> Result<Self, EngineError> {
        let depth = setup.depth.max(1);
        let ctx = io_setup(nr).map_err(|e| setup_err(why_no_context(nr, &e), e))?;
        let pool = match BufferPool::try_new(depth, setup.buf_len) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the context was just made and nothing was submitted to it.
                unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
                return Err(EngineError::memory(EngineKind::Libaio, e));
            }
        };
        let b = setup.batch;
        let clamp = |n: u32| (n as usize).clamp(1, depth);
        let complete_min = b.complete_min.map_or(1, |n| (n as usize).min(depth));
        Ok(Libaio {
            ctx,
            iocbs: vec![Iocb::default(); depth].into_boxed_slice(),
            iovs: vec![Vec::new(); depth],
            pool,
            files: FileTable::default(),
            in_flight: vec![false; depth],
            queued: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
            ready: Vec::new(),
            outstanding: 0,
            // fio: 0 means the queue depth.
            submit_at: b.submit.map_or(usize::MAX, |n| if n == 0 { depth } else { clamp(n) }),
            complete_min,
            // fio: complete_max below complete_min is complete_min.
            complete_max: b.complete_max.map_or(depth, |n| (n as usize).max(complete_min).clamp(1, depth)),
            low: b.low.map_or(depth, |n| (n as usize).min(depth)),
        })
    }

    /// What O_DIRECT refuses, said before the kernel answers EINVAL with no reason.
    #[cold]
    fn misaligned(op: &Op, align: u32, ptr: usize) -> EngineError {
        EngineError::Unsupported {
            engine: "libaio",
            what: format!(
                "O_DIRECT needs offsets, lengths and buffers in multiples of {align} bytes on this file, and this \
                 {:?} is {} bytes at offset {} (buffer at {ptr:#x}); use a block size and offsets that are multiples \
                 of {align} (--bs 4k), or drop --direct",
                op.kind, op.len, op.offset
            ),
        }
    }

    /// Hand the queued control blocks to the kernel. A block the kernel refuses at submission
    /// (a bad descriptor, EINVAL) completes with that error; EAGAIN (the kernel short of
    /// resources) waits for a completion and tries again.
    fn submit(&mut self) -> Result<(), EngineError> {
        let mut done = 0;
        while done < self.queued.len() {
            let rest = &mut self.queued[done..];
            // SAFETY: every address in `queued` is a control block in `self.iocbs` for a slot
            // marked in flight: its buffer (in `self.pool`), its iovecs (in `self.iovs`) and its
            // file (held in `self.files`; `take_file` refuses while I/O is outstanding) stay
            // where they are until its event is reaped, and Drop waits for every outstanding
            // event before any of them is freed. `usize` and a pointer have one layout.
            let r =
                unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, rest.len() as libc::c_long, rest.as_mut_ptr()) };
            if r > 0 {
                done += r as usize;
                self.outstanding += r as usize;
                continue;
            }
            let e = if r == 0 { io::Error::from_raw_os_error(libc::EAGAIN) } else { io::Error::last_os_error() };
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) if self.outstanding > 0 => {
                    let mut out = std::mem::take(&mut self.ready);
                    let got = self.get_events(1, &mut out);
                    self.ready = out;
                    got?;
                }
                Some(errno) if errno != libc::EAGAIN && errno != libc::ENOMEM => {
                    // The first block was refused: it completes with the error, the rest go on.
                    // SAFETY: the address is one of `self.iocbs`' (see above).
                    let slot = unsafe { (*(rest[0] as *const Iocb)).data } as u32;
                    self.in_flight[slot as usize] = false;
                    self.ready.push(Completion { slot, res: -(errno as i64) });
                    done += 1;
                }
                _ => return Err(submit_err(e)),
            }
        }
        self.queued.clear();
        Ok(())
    }

    /// io_getevents for at least `min` (at most `complete_max`, more if `min` asks) events into `out`.
    fn get_events(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, EngineError> {
        let min = min.min(self.outstanding);
        let max = self.complete_max.max(min).min(self.outstanding).max(1);
        loop {
            // SAFETY: `events` holds `depth` >= `max` io_event records for the kernel to write;
            // no timeout (NULL): wait for `min`, which never exceeds what is outstanding.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(submit_err(e));
            }
            let n = r as usize;
            for ev in &self.events[..n] {
                let slot = ev.data as u32;
                self.in_flight[slot as usize] = false;
                out.push(Completion { slot, res: ev.res });
            }
            self.outstanding -= n;
            return Ok(n);
        }
    }
}

impl Engine for Libaio {
    #[inline]
    fn kind(&self) -> EngineKind {
        EngineKind::Libaio
    }
    fn depth(&self) -> usize {
        self.in_flight.len()
    }
    fn set_file(&mut self, index: u32, file: File, _len: u64) -> Result<(), EngineError> {
        let align = direct_align(&file);
        self.files.set("libaio", index, AioFile { file, align })
    }
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError> {
        if self.outstanding > 0 || !self.queued.is_empty() {
            return Err(EngineError::Unsupported {
                engine: "libaio",
                what: "closing a file while I/O is in flight".into(),
            });
        }
        Ok(self.files.take(index).map(|f| f.file))
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
        let Some(f) = self.files.get(op.file) else {
            self.ready.push(Completion::from_io(op.slot, Err(calls::no_file())));
            return Ok(());
        };
        let (opcode, vectored) = match op.kind {
            OpKind::Read => (IOCB_CMD_PREAD, 0),
            OpKind::Write => (IOCB_CMD_PWRITE, 0),
            OpKind::Readv(n) => (IOCB_CMD_PREADV, n),
            OpKind::Writev(n) => (IOCB_CMD_PWRITEV, n),
            OpKind::Fsync => (IOCB_CMD_FSYNC, 0),
            OpKind::Fdatasync => (IOCB_CMD_FDSYNC, 0),
            _ => {
                let r = calls::perform(&f.file, &op, self.pool.slot_mut(op.slot));
                self.ready.push(Completion::from_io(op.slot, r));
                return Ok(());
            }
        };
        let ptr = self.pool.slot_ptr(op.slot);
        if f.align > 0 && (op.kind.reads() || op.kind.writes()) {
            let a = f.align as u64;
            let pieces_ok =
                vectored == 0 || calls::pieces(op.len as usize, vectored).all(|r| (r.len() as u64).is_multiple_of(a));
            if !op.offset.is_multiple_of(a)
                || !(op.len as u64).is_multiple_of(a)
                || !(ptr as u64).is_multiple_of(a)
                || !pieces_ok
            {
                return Err(Self::misaligned(&op, f.align, ptr as usize));
            }
        }
        let (buf, nbytes) = if vectored > 0 {
            let iov = &mut self.iovs[slot];
            iov.clear();
            for r in calls::pieces(op.len as usize, vectored) {
                // Within the slot: len <= slot_len, asserted above.
                iov.push(Iov { base: ptr as usize + r.start, len: r.len() });
            }
            (iov.as_ptr() as u64, iov.len() as u64)
        } else {
            (ptr as u64, op.len as u64)
        };
        let fildes = f.file.as_raw_fd() as u32;
        self.iocbs[slot] = if op.kind.is_sync() {
            // The kernel refuses a flush with a buffer, an offset, a length or flags (EINVAL).
            Iocb { data: op.slot as u64, opcode, fildes, ..Iocb::default() }
        } else {
            Iocb {
                data: op.slot as u64,
                rw_flags: op.flags.bits(),
                opcode,
                fildes,
                buf,
                nbytes,
                offset: op.offset as i64,
                // A request's own priority (else the thread's, which the kernel takes).
                reqprio: op.prio as i16,
                flags: if op.prio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
                ..Iocb::default()
            }
        };
        self.in_flight[slot] = true;
        self.queued.push(&self.iocbs[slot] as *const Iocb as usize);
        if self.queued.len() >= self.submit_at {
            self.submit()?;
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), EngineError> {
        if !self.queued.is_empty() {
            self.submit()?;
        }
        Ok(())
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let got = self.ready.len();
        out.append(&mut self.ready);
        if self.outstanding == 0 {
            return Ok(());
        }
        // fio's rules: wait for complete_min (the caller's min if more); a queue that was full
        // drains to iodepth_low before it is refilled.
        // A caller that asks for none (a paced job, not yet due) only looks.
        let mut want = if min == 0 || got >= min { 0 } else { (min - got).max(self.complete_min) };
        if min > 0 && self.outstanding + self.queued.len() >= self.depth() {
            want = want.max(self.outstanding.saturating_sub(self.low));
        }
        let want = want.min(self.outstanding);
        let mut have = self.get_events(want, out)?;
        while have < want {
            have += self.get_events(want - have, out)?;
        }
        Ok(())
    }
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // The kernel may still write into pool buffers: wait for every outstanding I/O first,
        // through EINTR. If the context cannot tell us more, the buffers and control blocks are
        // leaked rather than freed under the kernel's feet.
        let mut sink = Vec::new();
        while self.outstanding > 0 {
            sink.clear();
            if self.get_events(self.outstanding, &mut sink).is_err() {
                std::mem::forget(std::mem::replace(&mut self.pool, BufferPool::new(1, 1)));
                std::mem::forget(std::mem::take(&mut self.iocbs));
                std::mem::forget(std::mem::take(&mut self.iovs));
                return;
            }
        }
        // SAFETY: nothing is in flight on the context, which is ours and destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

/// Is native AIO usable here (io_setup answers)?
pub fn available() -> Result<(), EngineError> {
    Libaio::new(Setup::new(1, 4096)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueueBatch;

    fn skip() -> bool {
        if let Err(why) = available() {
            eprintln!("skipped: {why}");
            return true;
        }
        false
    }

    /// A context beyond /proc/sys/fs/aio-max-nr is one error naming the limit.
    #[test]
    fn a_context_beyond_the_limit_names_it() {
        if skip() {
            return;
        }
        let max: usize = proc_fs("aio-max-nr").parse().unwrap();
        // The kernel counts twice the events asked for (at least 4 per CPU) against the limit.
        let e = Libaio::with_events(Setup::new(1, 4096), max + 1).err().unwrap().to_string();
        assert!(e.contains("/proc/sys/fs/aio-max-nr is") && e.contains("lower --iodepth"), "{e}");
        assert!(e.contains(&format!("is {max} with")), "{e}");
        let nosys = why_no_context(4, &io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(nosys.contains("no native AIO") && nosys.contains("--engine io_uring"), "{nosys}");
    }

    /// Batching as fio's options say: submissions wait for the batch, a full queue drains to
    /// iodepth_low before it is refilled, and at most complete_max events come back per call.
    #[test]
    fn batches_as_fio_says() {
        if skip() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file =
            File::options().read(true).write(true).create(true).truncate(true).open(dir.path().join("f")).unwrap();
        file.set_len(1 << 20).unwrap();
        let batch = QueueBatch { submit: Some(4), complete_min: Some(1), complete_max: Some(2), low: Some(2) };
        let mut e = Libaio::new(Setup { batch, ..Setup::new(8, 4096) }).unwrap();
        let f = e.add_file(&file, 1 << 20).unwrap();
        for s in 0..3u32 {
            e.queue(Op::new(OpKind::Read, f, s as u64 * 4096, 4096, s)).unwrap();
        }
        assert_eq!((e.queued.len(), e.outstanding), (3, 0), "three wait for the batch of four");
        e.queue(Op::new(OpKind::Read, f, 3 * 4096, 4096, 3)).unwrap();
        assert_eq!((e.queued.len(), e.outstanding), (0, 4), "the fourth submits all four");
        let mut out = Vec::new();
        e.reap(1, &mut out).unwrap();
        assert!((1..=2).contains(&out.len()), "complete_max 2: {}", out.len());
        for s in 4..8u32 {
            e.queue(Op::new(OpKind::Read, f, s as u64 * 4096, 4096, s)).unwrap();
        }
        e.commit().unwrap();
        let before = e.outstanding;
        out.clear();
        e.reap(1, &mut out).unwrap();
        if before == 8 {
            assert_eq!(e.outstanding, 2, "a full queue drains to iodepth_low");
        }
        while e.outstanding > 0 {
            e.reap(1, &mut out).unwrap();
        }
    }
}

#[cfg(test)]
mod direct_tests {
    use super::*;
    use crate::{open_target, OpenOptions};

    /// With O_DIRECT, writes at depth land (read back past the engine), reads bring them back,
    /// and a misaligned I/O is refused with the alignment named.
    #[test]
    fn direct_io_lands_and_misalignment_is_said() {
        if let Err(why) = available() {
            eprintln!("skipped: {why}");
            return;
        }
        let dir = tempfile::tempdir_in(std::env::var_os("CARGO_TARGET_TMPDIR").unwrap_or_else(|| "/var/tmp".into()))
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        if !crate::open::direct_supported(dir.path()) {
            eprintln!("skipped: {} does not take O_DIRECT", dir.path().display());
            return;
        }
        let path = dir.path().join("d");
        let o = OpenOptions { read: true, write: true, create: true, direct: true, ..Default::default() };
        let file = open_target(&path, o).unwrap();
        file.set_len(16 * 4096).unwrap();
        let mut e = Libaio::new(Setup::new(16, 4096)).unwrap();
        let f = e.add_file(&file, 16 * 4096).unwrap();
        for s in 0..16u32 {
            e.buffer(s).fill(s as u8 + 1);
            e.queue(Op::new(OpKind::Write, f, s as u64 * 4096, 4096, s)).unwrap();
        }
        e.commit().unwrap();
        assert_eq!(e.outstanding, 16, "sixteen in flight at once");
        let mut out = Vec::new();
        while out.len() < 16 {
            e.reap(1, &mut out).unwrap();
        }
        assert!(out.iter().all(|c| c.res == 4096), "{out:?}");
        let on_disk = std::fs::read(&path).unwrap();
        for s in 0..16usize {
            assert!(on_disk[s * 4096..(s + 1) * 4096].iter().all(|&b| b == s as u8 + 1), "block {s}");
        }
        out.clear();
        for s in 0..16u32 {
            e.buffer(s).fill(0);
            e.queue(Op::new(OpKind::Read, f, (15 - s as u64) * 4096, 4096, s)).unwrap();
        }
        e.commit().unwrap();
        while out.len() < 16 {
            e.reap(1, &mut out).unwrap();
        }
        for s in 0..16u32 {
            assert!(e.buffer(s).iter().all(|&b| b == 16 - s as u8), "slot {s} read block {}", 15 - s);
        }
        let err = e.queue(Op::new(OpKind::Read, f, 100, 4096, 0)).unwrap_err().to_string();
        assert!(
            err.contains("O_DIRECT needs offsets") && err.contains("at offset 100") && err.contains("drop --direct"),
            "{err}"
        );
        let err = e.queue(Op::new(OpKind::Write, f, 0, 1000, 0)).unwrap_err().to_string();
        assert!(err.contains("1000 bytes"), "{err}");
    }
}
