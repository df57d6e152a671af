//! iolab-engine: the one place that talks to the kernel about data. Each engine (psync,
//! libaio, io_uring, mmap, null) is a module behind the [`Engine`] trait; the framework above it
//! takes timestamps and keeps statistics, as fio's engines leave that to fio. What an engine can
//! do is its row in the spec's table ([`EngineKind::caps`]); [`build_any`] builds each kind in
//! one exhaustive match, generated from the list at the bottom of this file.
//!
//! The engine owns its buffers ([`BufferPool`]): the caller fills a slot's buffer, queues an
//! [`Op`] naming that slot, and gets the slot back in a [`Completion`]. A buffer cannot be
//! touched while the kernel owns it, so no `unsafe` leaks out of this crate. An engine issues
//! exactly the call it is told: pread/pwrite, read/write at the file position (after an lseek),
//! preadv/pwritev, readv/writev at the position, lseek with any whence, fsync, fdatasync,
//! sync_file_range, ftruncate and fallocate with its mode, on files opened with the caller's
//! flags ([`open_target`], or beneath a directory with [`beneath::Beneath`]) and placed in the
//! engine's file table by index. [`extents`] says where a file holds no data (holes, and
//! extents allocated but never written).

pub mod beneath;
pub mod buffer;
mod calls;
pub mod extents;
pub mod falloc;
pub mod ftruncate;
pub mod libaio;
pub mod mmap;
pub mod null;
pub mod numa;
pub mod open;
pub mod prio;
pub mod psync;
pub mod purge;
pub mod realtime;
pub mod uring;

pub use buffer::{fill_pattern, refill, BufferPool};
pub use iolab_spec::engine::{Caps, EngineKind, QueueBatch, SqPoll};
pub use open::{open_target, OpenOptions};

use std::fs::File;
use std::io;

/// lseek(2)'s whence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Whence {
    /// SEEK_SET: to `offset`.
    Set,
    /// SEEK_CUR: `offset` (as an i64) from the position.
    Cur,
    /// SEEK_END: `offset` (as an i64) from the end.
    End,
    /// SEEK_DATA: the next data at or after `offset`.
    Data,
    /// SEEK_HOLE: the next hole at or after `offset`.
    Hole,
}

impl Whence {
    /// From lseek's numeric whence (0 SET, 1 CUR, 2 END, 3 DATA, 4 HOLE).
    pub fn from_raw(n: u32) -> Option<Whence> {
        Some(match n {
            0 => Whence::Set,
            1 => Whence::Cur,
            2 => Whence::End,
            3 => Whence::Data,
            4 => Whence::Hole,
            _ => return None,
        })
    }
    /// As rustix takes it, `offset` being the call's offset argument.
    pub fn seek_from(self, offset: u64) -> rustix::fs::SeekFrom {
        use rustix::fs::SeekFrom;
        match self {
            Whence::Set => SeekFrom::Start(offset),
            Whence::Cur => SeekFrom::Current(offset as i64),
            Whence::End => SeekFrom::End(offset as i64),
            Whence::Data => SeekFrom::Data(offset),
            Whence::Hole => SeekFrom::Hole(offset),
        }
    }
}

/// What an operation does: the system call an engine makes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// pread(2) of `len` bytes at `offset`.
    Read,
    /// pwrite(2) of `len` bytes at `offset`.
    Write,
    /// read(2) of `len` bytes at the file position (`offset` is ignored).
    ReadCur,
    /// write(2) of `len` bytes at the file position.
    WriteCur,
    /// preadv(2) at `offset`: the slot's first `len` bytes split into this many buffers.
    Readv(u16),
    /// pwritev(2) at `offset`, likewise.
    Writev(u16),
    /// readv(2) at the file position (`offset` is ignored), the slot split as for `Readv`.
    ReadvCur(u16),
    /// writev(2) at the file position, likewise.
    WritevCur(u16),
    /// lseek(2) by `offset` with this whence; the result is the new position.
    Seek(Whence),
    Fsync,
    Fdatasync,
    /// sync_file_range(2) of `len` bytes (0: to the end of the file) at `offset`, with these
    /// flags (SYNC_FILE_RANGE_WAIT_BEFORE 1, WRITE 2, WAIT_AFTER 4).
    SyncRange {
        flags: u32,
        len: u64,
    },
    /// ftruncate(2) to `offset`.
    Ftruncate,
    /// fallocate(2) of `len` bytes at `offset` with this mode (0 allocates; FALLOC_FL_KEEP_SIZE
    /// 1, PUNCH_HOLE 2, ZERO_RANGE 0x10, ...). The op's own `len` is not used: a range may
    /// exceed 4 GiB.
    Fallocate {
        mode: u32,
        len: u64,
    },
    /// ioctl(BLKDISCARD) of `len` bytes at `offset`: a block device's range discarded (fio's
    /// trim), done synchronously by every engine as fio does. On a file that is not a block
    /// device the kernel answers ENOTTY. The result is the bytes discarded.
    Trim,
}

impl OpKind {
    #[inline]
    pub fn is_sync(self) -> bool {
        matches!(self, OpKind::Fsync | OpKind::Fdatasync | OpKind::SyncRange { .. })
    }
    /// Does the operation read into its slot's buffer?
    #[inline]
    pub fn reads(self) -> bool {
        matches!(self, OpKind::Read | OpKind::ReadCur | OpKind::Readv(_) | OpKind::ReadvCur(_))
    }
    /// Does it move (or, a trim, discard) `len` bytes at `offset`: a read, a write or a trim?
    #[inline]
    pub fn moves_data(self) -> bool {
        self.reads() || self.writes() || self == OpKind::Trim
    }
    /// Does it write from its slot's buffer?
    #[inline]
    pub fn writes(self) -> bool {
        matches!(self, OpKind::Write | OpKind::WriteCur | OpKind::Writev(_) | OpKind::WritevCur(_))
    }
}

/// Per-call flags of a read or write, passed through to the kernel as preadv2/pwritev2 and
/// io_uring take them (`RWF_*`). An engine whose row says it takes none
/// ([`Caps::rw_flags`]) answers an operation carrying any with EOPNOTSUPP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RwFlags(u32);

impl RwFlags {
    pub const NONE: RwFlags = RwFlags(0);
    /// RWF_HIPRI: poll for the completion.
    pub const HIPRI: RwFlags = RwFlags(0x1);
    /// RWF_DSYNC: this write durable as with O_DSYNC.
    pub const DSYNC: RwFlags = RwFlags(0x2);
    /// RWF_SYNC: this write durable as with O_SYNC.
    pub const SYNC: RwFlags = RwFlags(0x4);
    /// RWF_NOWAIT: fail with EAGAIN rather than block.
    pub const NOWAIT: RwFlags = RwFlags(0x8);
    /// RWF_APPEND: this write at the end of the file, as with O_APPEND.
    pub const APPEND: RwFlags = RwFlags(0x10);
    /// Flags by their kernel value (an unknown bit reaches the kernel, which refuses it).
    pub const fn from_bits(bits: u32) -> RwFlags {
        RwFlags(bits)
    }
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// One operation for the engine: on file `file` (an index into the engine's file table),
/// `len` bytes at `offset`, using buffer `slot`, with per-call `flags` (usually none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    pub slot: u32,
    pub flags: RwFlags,
    /// The request's own I/O priority (IOPRIO_PRIO_VALUE; 0: the thread's), which io_uring
    /// carries in the SQE and libaio in the iocb; the synchronous engines make calls that have
    /// none.
    pub prio: u16,
}

impl Op {
    /// An operation without per-call flags or priority.
    #[inline]
    pub fn new(kind: OpKind, file: u32, offset: u64, len: u32, slot: u32) -> Op {
        Op { kind, file, offset, len, slot, flags: RwFlags::NONE, prio: 0 }
    }
}

/// What an engine is built with: its queue depth and the size of each buffer. An engine's own
/// setup options (a ring's polling thread, say) join here when one needs them, named in its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub depth: usize,
    pub buf_len: usize,
    /// fio's batching of submissions and completions, for an engine whose row `batches`.
    pub batch: QueueBatch,
    /// A kernel thread polling the submission queue, for an engine whose row has `sqpoll`.
    pub sqpoll: SqPoll,
}

impl Setup {
    /// `depth` buffers of `buf_len` bytes, batched iolab's own way.
    pub fn new(depth: usize, buf_len: usize) -> Setup {
        Setup { depth, buf_len, batch: QueueBatch::default(), sqpoll: SqPoll::default() }
    }
}

/// A finished operation: its slot and the kernel's answer (bytes, or a negative errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub res: i64,
}

impl Completion {
    #[inline]
    pub fn result(&self) -> io::Result<usize> {
        if self.res < 0 {
            Err(io::Error::from_raw_os_error((-self.res) as i32))
        } else {
            Ok(self.res as usize)
        }
    }
    pub(crate) fn from_io(slot: u32, r: io::Result<usize>) -> Self {
        let res = match r {
            Ok(n) => n as i64,
            Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
        };
        Completion { slot, res }
    }
}

/// Engine failures that are not a single operation's result.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{engine}: {what}: {source}")]
    Setup { engine: &'static str, what: String, source: io::Error },
    #[error("{engine}: {what}")]
    Unsupported { engine: &'static str, what: String },
    #[error("{engine}: submitting I/O: {source}")]
    Submit { engine: &'static str, source: io::Error },
    #[error("{engine}: {source}")]
    Memory { engine: &'static str, source: buffer::NoMemory },
}

impl EngineError {
    /// An engine's buffers the allocator refused.
    pub fn memory(kind: EngineKind, source: buffer::NoMemory) -> EngineError {
        EngineError::Memory { engine: kind.as_str(), source }
    }
}

/// An I/O engine. Each worker thread owns one; none is shared between threads.
pub trait Engine: Send {
    /// Which engine this is: its row says what it can do.
    fn kind(&self) -> EngineKind;
    fn name(&self) -> &'static str {
        self.kind().as_str()
    }
    /// How many operations may be in flight at once (one per buffer slot).
    fn depth(&self) -> usize;
    /// Place a file in the table at `index` (replacing nothing: the index must be free), to be
    /// named by [`Op::file`]. `len` is the length a mapping engine maps.
    fn set_file(&mut self, index: u32, file: File, len: u64) -> Result<(), EngineError>;
    /// Take a file out of the table (to close it). Refused while I/O on it may be in flight.
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError>;
    /// The buffer of a slot that is not in flight, to fill before a write or check after a read.
    fn buffer(&mut self, slot: u32) -> &mut [u8];
    /// Queue an operation. Synchronous engines perform it here.
    fn queue(&mut self, op: Op) -> Result<(), EngineError>;
    /// Hand queued operations to the kernel.
    fn commit(&mut self) -> Result<(), EngineError>;
    /// Collect at least `min` completions (fewer only if fewer are in flight) into `out`.
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError>;

    /// Does [`Engine::queue`] perform the operation at once (its row's `synchronous`: psync,
    /// mmap, null)? Then a caller with nothing in flight may call [`Engine::perform_now`]
    /// instead of queue, commit and reap: the same system call, without the completion queue.
    #[inline]
    fn is_sync(&self) -> bool {
        self.kind().caps().synchronous
    }
    /// Perform `op` and return its completion, with nothing else in flight. Synchronous engines
    /// make the call here; the default queues, commits and reaps it.
    #[inline]
    fn perform_now(&mut self, op: Op) -> Result<Completion, EngineError> {
        self.queue(op)?;
        self.commit()?;
        let mut out = Vec::with_capacity(1);
        while out.is_empty() {
            self.reap(1, &mut out)?;
        }
        Ok(out[0])
    }

    /// Make a file known to the engine at the first free index (a duplicate descriptor of it).
    fn add_file(&mut self, file: &File, len: u64) -> Result<u32, EngineError> {
        let dup = file.try_clone().map_err(|source| EngineError::Setup {
            engine: self.name(),
            what: "dup of the file".into(),
            source,
        })?;
        let index = self.free_index();
        self.set_file(index, dup, len)?;
        Ok(index)
    }
    /// The lowest index with no file.
    fn free_index(&self) -> u32;
}

/// A file table indexed by the caller's numbers, as the engines keep it.
pub(crate) struct FileTable<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for FileTable<T> {
    fn default() -> Self {
        FileTable { slots: Vec::new() }
    }
}

impl<T> FileTable<T> {
    pub(crate) fn set(&mut self, engine: &'static str, index: u32, v: T) -> Result<(), EngineError> {
        let i = index as usize;
        if i > 1 << 20 {
            return Err(EngineError::Unsupported { engine, what: format!("file index {index} is too large") });
        }
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].is_some() {
            return Err(EngineError::Unsupported { engine, what: format!("file index {index} is already in use") });
        }
        self.slots[i] = Some(v);
        Ok(())
    }
    pub(crate) fn take(&mut self, index: u32) -> Option<T> {
        self.slots.get_mut(index as usize).and_then(Option::take)
    }
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        self.slots.get(index as usize).and_then(Option::as_ref)
    }
    pub(crate) fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        self.slots.get_mut(index as usize).and_then(Option::as_mut)
    }
    pub(crate) fn free_index(&self) -> u32 {
        self.slots.iter().position(Option::is_none).unwrap_or(self.slots.len()) as u32
    }
}

/// Code to run on a concrete engine: [`AnyEngine::run`] calls `visit` with the engine inside,
/// so generic code in it (the worker loop) is compiled once per engine, with no dynamic
/// dispatch per operation and a synchronous engine's `is_sync` known at compile time.
pub trait Visit {
    type Out;
    fn visit<E: Engine>(self, engine: &mut E) -> Self::Out;
}

/// The engines, one line each: the kind's row in the spec's table and the module's type, which
/// has `fn new(Setup) -> Result<Self, EngineError>`. The line generates the kind's variant of
/// [`AnyEngine`] and its arm of every match on it, [`build_any`]'s among them: a kind without a
/// line here does not compile.
macro_rules! engines {
    ($($kind:ident => $ty:ty),+ $(,)?) => {
        /// An engine of a known kind (see [`Visit`]).
        pub enum AnyEngine { $( $kind(Box<$ty>) ),+ }

        impl AnyEngine {
            pub fn as_dyn(&mut self) -> &mut dyn Engine {
                match self { $( AnyEngine::$kind(e) => &mut **e ),+ }
            }
            pub fn into_box(self) -> Box<dyn Engine> {
                match self { $( AnyEngine::$kind(e) => e ),+ }
            }
            /// Run `v` on the engine inside, compiled for its type.
            pub fn run<V: Visit>(&mut self, v: V) -> V::Out {
                match self { $( AnyEngine::$kind(e) => v.visit(&mut **e) ),+ }
            }
        }

        /// Build an engine of `kind`: one arm per row of the spec's table.
        pub fn build_any(kind: EngineKind, setup: Setup) -> Result<AnyEngine, EngineError> {
            Ok(match kind { $( EngineKind::$kind => AnyEngine::$kind(Box::new(<$ty>::new(setup)?)) ),+ })
        }
    };
}

engines! {
    Psync => psync::Psync,
    Libaio => libaio::Libaio,
    IoUring => uring::Uring,
    Mmap => mmap::Mmap,
    Null => null::Null,
    Ftruncate => ftruncate::Ftruncate,
    Falloc => falloc::Falloc,
}

/// [`build_any`], behind the trait.
pub fn build(kind: EngineKind, setup: Setup) -> Result<Box<dyn Engine>, EngineError> {
    build_any(kind, setup).map(AnyEngine::into_box)
}

/// Give the calling thread its own file-descriptor table (`unshare(CLONE_FILES)`).
///
/// In a multi-threaded process the kernel takes a reference on the file for every pread/pwrite;
/// a thread with a private table skips that, which is worth ~20% of a cached 4 KiB I/O. Call it
/// in a worker thread before it opens its files; those files then exist only in its table and
/// are closed when the thread ends.
pub fn private_fd_table() -> io::Result<()> {
    // SAFETY: the caller is a worker thread that opens its own files after this call and never
    // passes a descriptor number to another thread (the engine and its files live and die in
    // the worker). Descriptors opened earlier by other threads stay valid here: unshare copies
    // the table, so nothing this thread already holds is lost.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }.map_err(io::Error::from)
}

/// Is io_uring usable on this kernel (not disabled by sysctl or seccomp)?
pub fn io_uring_available() -> Result<(), EngineError> {
    io_uring::IoUring::new(2).map(drop).map_err(|source| EngineError::Setup {
        engine: "io_uring",
        what: "not available here".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    fn roundtrip(kind: EngineKind) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.set_len(64 * 1024).unwrap();
        let mut e = build(kind, Setup::new(4, 4096)).unwrap();
        let f = e.add_file(&file, 64 * 1024).unwrap();
        let depth = e.depth() as u32;
        let mut done = Vec::new();
        let mut ok = 0;
        for i in 0..4u32 {
            let slot = i % depth;
            if i >= depth {
                e.reap(1, &mut done).unwrap();
            }
            e.buffer(slot)[..4096].fill(i as u8 + 1);
            e.queue(Op::new(OpKind::Write, f, i as u64 * 8192, 4096, slot)).unwrap();
            e.commit().unwrap();
        }
        while ok < 4 {
            e.reap(1, &mut done).unwrap();
            ok = done.len();
        }
        assert!(done.iter().all(|c| c.result().unwrap() == 4096), "{done:?}");
        e.queue(Op::new(OpKind::Fsync, f, 0, 0, 0)).unwrap();
        e.commit().unwrap();
        done.clear();
        e.reap(1, &mut done).unwrap();
        assert_eq!(done[0].result().unwrap(), 0);
        let slot = 1 % depth;
        // read back through the engine
        e.queue(Op::new(OpKind::Read, f, 3 * 8192, 4096, slot)).unwrap();
        e.commit().unwrap();
        done.clear();
        e.reap(1, &mut done).unwrap();
        assert_eq!(done[0].slot, slot);
        if kind != EngineKind::Null {
            assert!(e.buffer(slot)[..4096].iter().all(|&b| b == 4));
            let mut raw = vec![0u8; 4096];
            let mut fh = File::open(&path).unwrap();
            fh.seek(SeekFrom::Start(2 * 8192)).unwrap();
            fh.read_exact(&mut raw).unwrap();
            assert!(raw.iter().all(|&b| b == 3));
        }
    }

    #[test]
    fn psync_roundtrip() {
        roundtrip(EngineKind::Psync);
    }
    #[test]
    fn mmap_roundtrip() {
        roundtrip(EngineKind::Mmap);
    }
    #[test]
    fn null_roundtrip() {
        roundtrip(EngineKind::Null);
    }
    #[test]
    fn uring_roundtrip() {
        if let Err(why) = io_uring_available() {
            eprintln!("skipped: {why}");
            return;
        }
        roundtrip(EngineKind::IoUring);
    }

    #[test]
    fn libaio_roundtrip() {
        if let Err(why) = libaio::available() {
            eprintln!("skipped: {why}");
            return;
        }
        roundtrip(EngineKind::Libaio);
    }

    #[test]
    fn errors_come_back_as_completions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro");
        std::fs::write(&path, [0u8; 4096]).unwrap();
        let file = File::open(&path).unwrap(); // read-only: writes fail with EBADF
        let mut e = build(EngineKind::Psync, Setup::new(1, 4096)).unwrap();
        let f = e.add_file(&file, 4096).unwrap();
        e.queue(Op::new(OpKind::Write, f, 0, 4096, 0)).unwrap();
        let mut done = Vec::new();
        e.reap(1, &mut done).unwrap();
        assert_eq!(done[0].result().unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

    /// lseek then write stays lseek then write; vectored calls at an offset and at the
    /// position; every whence; sync_file_range; ftruncate and fallocate with its mode; files set
    /// at and taken from chosen indexes.
    fn call_shapes(kind: EngineKind) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.set_len(64 * 1024).unwrap();
        let mut e = build(kind, Setup::new(2, 8192)).unwrap();
        e.set_file(7, file, 64 * 1024).unwrap();
        assert_eq!(e.free_index(), 0);
        let run = |e: &mut Box<dyn Engine>, kind: OpKind, offset: u64, len: u32| -> i64 {
            e.queue(Op::new(kind, 7, offset, len, 0)).unwrap();
            e.commit().unwrap();
            let mut done = Vec::new();
            e.reap(1, &mut done).unwrap();
            assert_eq!(done.len(), 1, "{kind:?}");
            done[0].res
        };
        e.buffer(0)[..8192].fill(0xAB);
        assert_eq!(run(&mut e, OpKind::Seek(Whence::Set), 12288, 0), 12288);
        assert_eq!(run(&mut e, OpKind::WriteCur, 0, 4096), 4096);
        assert_eq!(run(&mut e, OpKind::WriteCur, 0, 4096), 4096, "the position advanced");
        e.buffer(0)[..8192].fill(0xCD);
        assert_eq!(run(&mut e, OpKind::Writev(3), 32768, 8192), 8192);
        e.buffer(0).fill(0);
        assert_eq!(run(&mut e, OpKind::Readv(2), 32768, 8192), 8192);
        if kind != EngineKind::Null {
            assert!(e.buffer(0)[..8192].iter().all(|&b| b == 0xCD));
        }
        assert_eq!(run(&mut e, OpKind::Seek(Whence::Set), 16384, 0), 16384);
        assert_eq!(run(&mut e, OpKind::ReadCur, 0, 4096), 4096);
        if kind != EngineKind::Null {
            assert!(e.buffer(0)[..4096].iter().all(|&b| b == 0xAB));
            // readv/writev at the position move it, as read and write do.
            assert_eq!(run(&mut e, OpKind::Seek(Whence::Cur), 0, 0), 20480);
            e.buffer(0)[..8192].fill(0xEF);
            assert_eq!(run(&mut e, OpKind::WritevCur(3), 0, 8192), 8192);
            assert_eq!(run(&mut e, OpKind::Seek(Whence::Cur), -8192i64 as u64, 0), 20480);
            e.buffer(0).fill(0);
            assert_eq!(run(&mut e, OpKind::ReadvCur(2), 0, 8192), 8192);
            assert!(e.buffer(0)[..8192].iter().all(|&b| b == 0xEF));
            assert_eq!(run(&mut e, OpKind::Seek(Whence::Cur), 0, 0), 28672, "readv advanced the position");
            assert_eq!(run(&mut e, OpKind::Seek(Whence::End), -4096i64 as u64, 0), 61440);
            assert_eq!(run(&mut e, OpKind::Seek(Whence::Data), 12288, 0), 12288, "SEEK_DATA where data is");
            let hole = run(&mut e, OpKind::Seek(Whence::Hole), 12288, 0);
            assert!((12288..=65536).contains(&hole), "SEEK_HOLE {hole}");
            assert_eq!(run(&mut e, OpKind::Seek(Whence::Set), -1i64 as u64, 0), -(libc::EINVAL as i64));
        }
        // A trim is BLKDISCARD, which a regular file answers with ENOTTY (fio's error 25).
        let trim = run(&mut e, OpKind::Trim, 0, 4096);
        assert_eq!(trim, if kind == EngineKind::Null { 4096 } else { -(libc::ENOTTY as i64) }, "{kind:?}");
        assert_eq!(run(&mut e, OpKind::Fallocate { mode: 0, len: 65536 }, 0, 0), 0);
        assert_eq!(run(&mut e, OpKind::SyncRange { flags: 1 | 2 | 4, len: 0 }, 0, 0), 0);
        assert_eq!(run(&mut e, OpKind::Fdatasync, 0, 0), 0);
        // Punching a hole (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) is not an allocation.
        assert_eq!(run(&mut e, OpKind::Fallocate { mode: 2 | 1, len: 4096 }, 12288, 0), 0);
        let f = e.take_file(7).unwrap();
        if kind != EngineKind::Null {
            let on_disk = std::fs::read(&path).unwrap();
            assert_eq!(on_disk.len(), 65536);
            assert!(on_disk[12288..16384].iter().all(|&b| b == 0), "the hole reads as zeros");
            assert!(on_disk[16384..20480].iter().all(|&b| b == 0xAB));
            assert!(on_disk[20480..28672].iter().all(|&b| b == 0xEF));
            assert!(on_disk[32768..40960].iter().all(|&b| b == 0xCD));
            let f = f.unwrap();
            e.set_file(0, f, 64 * 1024).unwrap();
            e.queue(Op::new(OpKind::Ftruncate, 0, 4096, 0, 0)).unwrap();
            let mut done = Vec::new();
            e.commit().unwrap();
            e.reap(1, &mut done).unwrap();
            assert_eq!(done[0].res, 0);
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        }
        // A closed index answers EBADF, as a closed descriptor does.
        e.queue(Op::new(OpKind::Read, 7, 0, 4096, 0)).unwrap();
        let mut done = Vec::new();
        e.commit().unwrap();
        e.reap(1, &mut done).unwrap();
        if kind != EngineKind::Null {
            assert_eq!(done[0].result().unwrap_err().raw_os_error(), Some(libc::EBADF));
        }
    }

    #[test]
    fn call_shapes_psync() {
        call_shapes(EngineKind::Psync);
    }
    #[test]
    fn call_shapes_null() {
        call_shapes(EngineKind::Null);
    }
    #[test]
    fn call_shapes_uring() {
        if let Err(why) = io_uring_available() {
            eprintln!("skipped: {why}");
            return;
        }
        call_shapes(EngineKind::IoUring);
    }
    #[test]
    fn call_shapes_libaio() {
        if let Err(why) = libaio::available() {
            eprintln!("skipped: {why}");
            return;
        }
        call_shapes(EngineKind::Libaio);
    }

    /// An operation's RWF_* flags reach the kernel on the engines whose row says so, and are
    /// refused (EOPNOTSUPP) by the others, never dropped.
    #[test]
    fn per_call_flags_pass_through_or_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for kind in EngineKind::KINDS.iter().copied() {
            if kind == EngineKind::IoUring && io_uring_available().is_err() {
                eprintln!("skipped io_uring: not available");
                continue;
            }
            if kind == EngineKind::Libaio && libaio::available().is_err() {
                eprintln!("skipped libaio: not available");
                continue;
            }
            let path = dir.path().join(kind.as_str());
            let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            file.set_len(8192).unwrap();
            let mut e = build(kind, Setup::new(1, 4096)).unwrap();
            let f = e.add_file(&file, 8192).unwrap();
            e.buffer(0).fill(0x5A);
            let op = |kind: OpKind, flags: RwFlags| Op { flags, ..Op::new(kind, f, 4096, 4096, 0) };
            let mut run = |op: Op| {
                e.queue(op).unwrap();
                e.commit().unwrap();
                let mut done = Vec::new();
                e.reap(1, &mut done).unwrap();
                done[0].result()
            };
            let w = run(op(OpKind::Write, RwFlags::DSYNC));
            if kind.caps().rw_flags {
                assert_eq!(w.unwrap(), 4096, "{kind}: RWF_DSYNC write");
                let unknown = run(op(OpKind::Write, RwFlags::from_bits(1 << 30)));
                assert_eq!(unknown.unwrap_err().raw_os_error(), Some(libc::EOPNOTSUPP), "{kind}: the kernel saw it");
                assert_eq!(std::fs::read(&path).unwrap()[4096..], [0x5A; 4096], "{kind}");
            } else {
                assert_eq!(w.unwrap_err().raw_os_error(), Some(libc::EOPNOTSUPP), "{kind} refuses flags");
            }
        }
    }
}
