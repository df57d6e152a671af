//! The trace format (docs/trace-format.md): a magic line, then a gzip stream (flate2) of
//! length-prefixed postcard records — threads, files (one id per opening) and per-thread chunks
//! of operations — ending with a summary. Written and read as a stream: neither side holds the
//! whole trace.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, BufReader, Read, Write};

/// The first bytes of every trace file this crate writes (the last byte is the version).
pub const MAGIC: &[u8; 16] = b"iolab-trace\0\0\0\0\x03";
/// The format version this crate writes.
pub const VERSION: u32 = 3;
/// The oldest version it reads. Versions 2 and 3 only added records (each a new variant after
/// the last of the version before, so an older stream decodes as it did): a version 1 trace is
/// a version 3 trace that has none of them.
pub const OLDEST: u32 = 1;
/// Operations per chunk: a chunk is written once a thread has this many.
pub const CHUNK: usize = 1024;
/// Operations a writer holds back over all threads: past it, every thread's unfinished chunk is
/// written (so memory does not grow with the threads a trace has seen).
pub const MAX_PENDING: usize = 64 * 1024;
/// Emptied chunk buffers a writer keeps for the next threads, and the largest it keeps (in
/// bytes, about 64 operations): a big one handed to a short thread would stay with it while it
/// lives.
const SPARE: usize = 16;
const SPARE_BYTES: usize = 4096;
/// The largest record a reader accepts (a corrupt length must not allocate gigabytes).
pub const MAX_RECORD: usize = 64 << 20;

/// What an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Kind {
    Open,
    Close,
    Read,
    Write,
    Pread,
    Pwrite,
    Readv,
    Writev,
    Preadv,
    Pwritev,
    Lseek,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Ftruncate,
    Fallocate,
    Unlink,
    Rename,
    Mkdir,
    /// Any other call, by its index in the name table ([`Record::Name`]).
    Other(u32),
}

impl Kind {
    /// The variant's index (its place in the declaration, as serde numbers it) and `Other`'s
    /// name id.
    fn index(self) -> (u32, Option<u32>) {
        let i = match self {
            Kind::Open => 0,
            Kind::Close => 1,
            Kind::Read => 2,
            Kind::Write => 3,
            Kind::Pread => 4,
            Kind::Pwrite => 5,
            Kind::Readv => 6,
            Kind::Writev => 7,
            Kind::Preadv => 8,
            Kind::Pwritev => 9,
            Kind::Lseek => 10,
            Kind::Fsync => 11,
            Kind::Fdatasync => 12,
            Kind::SyncFileRange => 13,
            Kind::Ftruncate => 14,
            Kind::Fallocate => 15,
            Kind::Unlink => 16,
            Kind::Rename => 17,
            Kind::Mkdir => 18,
            Kind::Other(name) => return (19, Some(name)),
        };
        (i, None)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Open => "open",
            Kind::Close => "close",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Pread => "pread64",
            Kind::Pwrite => "pwrite64",
            Kind::Readv => "readv",
            Kind::Writev => "writev",
            Kind::Preadv => "preadv",
            Kind::Pwritev => "pwritev",
            Kind::Lseek => "lseek",
            Kind::Fsync => "fsync",
            Kind::Fdatasync => "fdatasync",
            Kind::SyncFileRange => "sync_file_range",
            Kind::Ftruncate => "ftruncate",
            Kind::Fallocate => "fallocate",
            Kind::Unlink => "unlink",
            Kind::Rename => "rename",
            Kind::Mkdir => "mkdir",
            Kind::Other(_) => "other",
        }
    }
    pub fn reads(self) -> bool {
        matches!(self, Kind::Read | Kind::Pread | Kind::Readv | Kind::Preadv)
    }
    pub fn writes(self) -> bool {
        matches!(self, Kind::Write | Kind::Pwrite | Kind::Writev | Kind::Pwritev)
    }
    pub fn is_sync(self) -> bool {
        matches!(self, Kind::Fsync | Kind::Fdatasync | Kind::SyncFileRange)
    }
}

/// No file (namespace calls without a result fd, other calls).
pub const NO_FILE: u32 = u32::MAX;

/// One traced call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// Nanoseconds since the trace's first call.
    pub start_ns: u64,
    /// `-T`'s duration (0 if the trace has none).
    pub dur_ns: u64,
    pub kind: Kind,
    /// The file id (an opening: [`Record::File`]) or, for unlink/rename/mkdir, a path id
    /// ([`Record::Path`]); [`NO_FILE`] when none.
    pub file: u32,
    /// pread/pwrite/preadv/pwritev/sync_file_range/fallocate offset, lseek's offset argument,
    /// ftruncate's length, rename's target path id.
    pub offset: u64,
    /// Bytes asked for (read/write count, sum of iov_len, sync_file_range/fallocate length).
    pub size: u64,
    /// The iovec count for readv/writev/preadv/pwritev; lseek's whence (0 SET, 1 CUR, 2 END).
    pub count: u32,
    /// open's flags (Linux O_* bits), fallocate's mode, sync_file_range's flags.
    pub flags: u32,
    /// The return value; -errno on failure; `i64::MIN` for a call that did not return.
    pub result: i64,
}

/// One record of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Record {
    /// First record: where the trace came from.
    Header { version: u32, source: String, epoch_ns: u64 },
    /// A thread (tid) and its thread group (the process, tgid).
    Thread { tid: u32, tgid: u32 },
    /// An opening: a file id, the path as traced, the open flags, whether it existed before the
    /// trace (opened before strace attached) and whether it is a regular file's path (not a
    /// socket, pipe, anon inode, /dev or /proc).
    File { id: u32, path: String, flags: u32, before: bool, regular: bool },
    /// A path named by unlink/rename/mkdir.
    Path { id: u32, path: String },
    /// A call name for [`Kind::Other`].
    Name { id: u32, name: String },
    /// Operations of one thread, in its program order.
    Chunk { tid: u32, ops: Vec<Op> },
    /// Last record.
    End { ops: u64, bad_lines: u64, first_ns: u64, last_ns: u64 },
    // ---- version 2: records appended after `End` so that version 1 decodes unchanged ----
    /// How the trace was made: `via` is `ebpf`, `strace` or `import`; `detail` the tool's
    /// version and the kernel. After the header.
    Recorder { via: String, detail: String },
    /// An asynchronous I/O context of process `tgid`: an io_uring ring (`entries` its
    /// submission queue's size, `flags` its IORING_SETUP_* flags) or a libaio context
    /// (`entries` io_setup's nr_events). Before its operations.
    Ring { id: u32, tgid: u32, kind: RingKind, entries: u32, flags: u32 },
    /// Operations of one ring, in submission order (a ring's operations are the concatenation
    /// of its records).
    RingOps { ring: u32, ops: Vec<AsyncOp> },
    /// Events the recorder could not keep (its ring buffer full, a table full), by why: a
    /// trace never loses events silently. Before the end record.
    Lost { why: String, events: u64 },
    /// The tracer's own cost taken off the recorded times (strace recordings): the operations'
    /// times are the program's as estimated without the tracer, and this says by how much and
    /// how. Before the end record.
    Overhead(Overhead),
    /// A block device of a block-level trace (`dev`: major << 20 | minor, the kernel's).
    Device { dev: u32, name: String },
    /// Block requests of one device, in the order they completed.
    BlockIos { dev: u32, ios: Vec<BlockIo> },
    // ---- version 3 ----
    /// The CPU wait in the gap before each operation of `tid`'s chunk just written, ns: how long
    /// the thread waited on a run queue between the end of its previous recorded call and this
    /// one's start (the eBPF recorder, from the scheduler's run_delay). Right after its chunk.
    CpuWaits { tid: u32, waits: Vec<u64> },
}

impl Record {
    /// The format version that introduced this record.
    pub fn since_version(&self) -> u32 {
        match self {
            Record::Header { .. }
            | Record::Thread { .. }
            | Record::File { .. }
            | Record::Path { .. }
            | Record::Name { .. }
            | Record::Chunk { .. }
            | Record::End { .. } => 1,
            Record::CpuWaits { .. } => 3,
            _ => 2,
        }
    }
}

/// What kind of asynchronous I/O context a ring is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RingKind {
    IoUring,
    Aio,
}

/// What an asynchronous operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum AsyncKind {
    Read,
    Write,
    /// Vectored: `count` iovecs.
    Readv,
    Writev,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Fallocate,
    /// No operation (io_uring NOP, IOCB_CMD_NOOP).
    Nop,
    /// Any other opcode, by its number (io_uring's IORING_OP_*, or libaio's IOCB_CMD_* + 1000).
    Other(u32),
}

impl AsyncKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AsyncKind::Read => "read",
            AsyncKind::Write => "write",
            AsyncKind::Readv => "readv",
            AsyncKind::Writev => "writev",
            AsyncKind::Fsync => "fsync",
            AsyncKind::Fdatasync => "fdatasync",
            AsyncKind::SyncFileRange => "sync_file_range",
            AsyncKind::Fallocate => "fallocate",
            AsyncKind::Nop => "nop",
            AsyncKind::Other(_) => "other",
        }
    }
    pub fn reads(self) -> bool {
        matches!(self, AsyncKind::Read | AsyncKind::Readv)
    }
    pub fn writes(self) -> bool {
        matches!(self, AsyncKind::Write | AsyncKind::Writev)
    }
    pub fn is_sync(self) -> bool {
        matches!(self, AsyncKind::Fsync | AsyncKind::Fdatasync | AsyncKind::SyncFileRange)
    }
}

/// `AsyncOp::flags`: the submission asked for a registered (fixed) file.
pub const ASYNC_FIXED_FILE: u32 = 1;
/// `AsyncOp::flags`: a registered buffer (io_uring READ_FIXED/WRITE_FIXED; `buf` its index).
pub const ASYNC_FIXED_BUF: u32 = 2;
/// `AsyncOp::flags`: the submission was linked to the next (IOSQE_IO_LINK or IO_HARDLINK).
pub const ASYNC_LINK: u32 = 4;
/// `AsyncOp::flags`: IOSQE_IO_DRAIN (issued after everything before it completed).
pub const ASYNC_DRAIN: u32 = 8;
/// `AsyncOp::flags`: IOSQE_ASYNC (issued from the kernel's worker threads).
pub const ASYNC_FORCE_ASYNC: u32 = 16;
/// No fixed buffer.
pub const NO_BUF: u32 = u32::MAX;

/// One asynchronous operation: submitted by a thread, completed later, on a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsyncOp {
    /// The thread that submitted it.
    pub tid: u32,
    /// When it was submitted (the kernel took it from the ring, or io_submit's entry), ns
    /// after the trace's start.
    pub submit_ns: u64,
    /// When its completion was posted (io_uring) or reaped by io_getevents (libaio), ns after
    /// the trace's start; 0 if it never completed within the trace.
    pub complete_ns: u64,
    pub kind: AsyncKind,
    /// The opening (`Record::File`), [`NO_FILE`] when not known.
    pub file: u32,
    /// The fd or, with [`ASYNC_FIXED_FILE`], the registered file's index, as submitted.
    pub fd: i32,
    /// The file offset (`u64::MAX`: at the file position).
    pub offset: u64,
    /// Bytes asked for; for vectored operations and fallocate/sync_file_range, their length.
    pub size: u64,
    /// The iovec count of a vectored operation.
    pub count: u32,
    /// `ASYNC_*` bits.
    pub flags: u32,
    /// RWF_* flags of a read or write, fsync's flags (IORING_FSYNC_DATASYNC), fallocate's mode.
    pub op_flags: u32,
    /// The registered buffer's index, [`NO_BUF`] when none.
    pub buf: u32,
    /// Operations in flight on the ring when it was submitted, itself included.
    pub depth: u32,
    /// The result: bytes moved, or -errno; `i64::MIN` if it never completed within the trace.
    pub result: i64,
    /// The application's tag (io_uring user_data, the iocb's aio_data).
    pub user_data: u64,
}

/// What the tracer's cost was estimated to be and what was taken off (see docs/trace-format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// How it was estimated, in words.
    pub method: String,
    /// The tracer's cost per traced call measured at record time: what one call costs more
    /// under the tracer than without it, split into the part that lands inside the call's
    /// recorded duration and the part that lands in the gap after it.
    pub call_ns: u64,
    pub gap_ns: u64,
    /// Summed over the trace: what was taken off the calls' durations (0: they are kept as
    /// recorded) and off the gaps.
    pub calls_taken_ns: u64,
    pub gaps_taken_ns: u64,
    /// The trace's span before the correction (its end record has the span after).
    pub recorded_span_ns: u64,
}

/// One block request, as the block layer issued and completed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockIo {
    /// When the request was made (its bio queued), ns after the trace's start; 0 when the
    /// device's queue does not keep it.
    pub queued_ns: u64,
    /// When the driver was given it.
    pub issue_ns: u64,
    /// When it completed.
    pub complete_ns: u64,
    /// First 512-byte sector.
    pub sector: u64,
    pub bytes: u32,
    /// The kernel's REQ_OP_* (0 read, 1 write, 2 flush, 3 discard, 5 secure erase, 9 write zeroes).
    pub op: u8,
    /// The kernel's request flags above the op (REQ_SYNC, REQ_META, REQ_FUA, REQ_PREFLUSH...),
    /// as `cmd_flags >> 8`.
    pub flags: u32,
    /// 0, or the block layer's error status (blk_status_t).
    pub error: u8,
}

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("not an iolab trace (the file does not start with the trace magic)")]
    NotATrace,
    #[error("trace format version {0}; this iolab reads versions {OLDEST} to {VERSION}")]
    Version(u32),
    #[error("corrupt trace: {0}")]
    Corrupt(String),
}

/// A thread's operations held back, already encoded as they will be in its chunk.
#[derive(Default)]
struct Held {
    ops: usize,
    bytes: Vec<u8>,
    /// Each operation's CPU wait before it, once one is not 0 (empty until then).
    waits: Vec<u64>,
}

/// The longest encoded operation: five 10-byte and three 5-byte varints and a 6-byte kind.
const OP_MAX: usize = 5 * 10 + 3 * 5 + 6;

/// Append postcard's encoding of `op` to `out`, the bytes `postcard::to_extend` gives
/// (unsigned integers as LEB128 varints, signed ones zigzagged first, an enum as its variant's
/// index and then its fields; the test `op_encoding_is_postcards` holds the two equal). Done
/// by hand because serde's way through postcard's slice flavour, a `memcpy` call per field,
/// was an eighth of a fork-heavy import.
fn encode_op(op: &Op, out: &mut Vec<u8>) {
    fn varint(b: &mut [u8; OP_MAX], n: &mut usize, mut v: u64) {
        while v >= 0x80 {
            b[*n] = v as u8 | 0x80;
            v >>= 7;
            *n += 1;
        }
        b[*n] = v as u8;
        *n += 1;
    }
    let mut b = [0u8; OP_MAX];
    let mut n = 0;
    varint(&mut b, &mut n, op.start_ns);
    varint(&mut b, &mut n, op.dur_ns);
    let (index, other) = op.kind.index();
    varint(&mut b, &mut n, u64::from(index));
    if let Some(name) = other {
        varint(&mut b, &mut n, u64::from(name));
    }
    varint(&mut b, &mut n, u64::from(op.file));
    varint(&mut b, &mut n, op.offset);
    varint(&mut b, &mut n, op.size);
    varint(&mut b, &mut n, u64::from(op.count));
    varint(&mut b, &mut n, u64::from(op.flags));
    varint(&mut b, &mut n, ((op.result << 1) ^ (op.result >> 63)) as u64);
    out.extend_from_slice(&b[..n]);
}

fn postcard_error(e: postcard::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// Writes records; chunks operations per thread.
pub struct Writer<W: Write> {
    /// Records reach the compressor 64 KiB at a time: each write into flate2's encoder zeroes
    /// its 32 KiB output buffer first, so two small writes per record made memset a sixth of
    /// an import's time.
    out: io::BufWriter<flate2::write::GzEncoder<W>>,
    /// Each thread with operations held back: its slot in `slots`.
    pending: foldhash::HashMap<u32, usize>,
    /// The held-back operations, a slot per thread (slots of written threads are reused).
    /// They are encoded as they come (about 20 bytes each, where an `Op` is 56): the encoding
    /// is done while the operation is fresh in the cache, and a chunk is written by copying.
    slots: Vec<Held>,
    free: Vec<usize>,
    /// The thread of the last operation and its slot: a thread's calls mostly come in runs,
    /// and a run then costs one table look-up (the table is cold when thousands of threads
    /// are alive).
    last: Option<(u32, usize)>,
    /// Operations in `slots`, over all threads.
    held: usize,
    /// Buffers of written chunks, reused: a trace of many short threads would otherwise
    /// allocate and grow one per thread.
    spare: Vec<Vec<u8>>,
    buf: Vec<u8>,
    ops: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut w: W) -> io::Result<Self> {
        w.write_all(MAGIC)?;
        Ok(Writer {
            out: io::BufWriter::with_capacity(1 << 16, flate2::write::GzEncoder::new(w, flate2::Compression::fast())),
            pending: foldhash::HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            last: None,
            held: 0,
            spare: Vec::new(),
            buf: Vec::new(),
            ops: 0,
        })
    }

    pub fn record(&mut self, r: &Record) -> io::Result<()> {
        self.buf.clear();
        let bytes = postcard::to_extend(r, std::mem::take(&mut self.buf)).map_err(postcard_error)?;
        self.out.write_all(&(bytes.len() as u32).to_le_bytes())?;
        self.out.write_all(&bytes)?;
        self.buf = bytes;
        Ok(())
    }

    /// Queue an operation of `tid`; a full chunk is written, and every thread's chunk when the
    /// writer holds [`MAX_PENDING`] operations.
    pub fn op(&mut self, tid: u32, op: Op) -> io::Result<()> {
        self.op_waited(tid, op, 0)
    }

    /// [`Writer::op`] with the CPU wait in the gap before it (ns): a chunk with any such wait
    /// is followed by its [`Record::CpuWaits`].
    pub fn op_waited(&mut self, tid: u32, op: Op, wait_ns: u64) -> io::Result<()> {
        self.ops += 1;
        self.held += 1;
        let slot = match self.last {
            Some((t, slot)) if t == tid => slot,
            _ => {
                let slot = match self.pending.get(&tid) {
                    Some(&slot) => slot,
                    None => {
                        let buf = Held { ops: 0, bytes: self.spare.pop().unwrap_or_default(), waits: Vec::new() };
                        let slot = match self.free.pop() {
                            Some(slot) => {
                                self.slots[slot] = buf;
                                slot
                            }
                            None => {
                                self.slots.push(buf);
                                self.slots.len() - 1
                            }
                        };
                        self.pending.insert(tid, slot);
                        slot
                    }
                };
                self.last = Some((tid, slot));
                slot
            }
        };
        let h = &mut self.slots[slot];
        encode_op(&op, &mut h.bytes);
        if wait_ns > 0 && h.waits.is_empty() {
            h.waits.resize(h.ops, 0);
        }
        if wait_ns > 0 || !h.waits.is_empty() {
            h.waits.push(wait_ns);
        }
        h.ops += 1;
        if h.ops >= CHUNK {
            self.flush_thread(tid)?;
        }
        if self.held >= MAX_PENDING {
            self.flush_all()?;
        }
        Ok(())
    }

    /// Write `tid`'s unfinished chunk (the thread has ended) and forget the thread.
    pub fn flush_thread(&mut self, tid: u32) -> io::Result<()> {
        if let Some(slot) = self.pending.remove(&tid) {
            if self.last.is_some_and(|(t, _)| t == tid) {
                self.last = None;
            }
            let Held { ops, mut bytes, waits } = std::mem::take(&mut self.slots[slot]);
            self.free.push(slot);
            self.held -= ops;
            if ops > 0 {
                // The record `Record::Chunk { tid, ops }` is: what an empty chunk of `tid`
                // encodes to without its last byte (the length 0), the number of operations,
                // then the operations (postcard's layout: varints, a sequence's length first).
                let mut head = [0u8; 32];
                let empty = postcard::to_slice(&Record::Chunk { tid, ops: Vec::new() }, &mut head)
                    .map_err(postcard_error)?
                    .len();
                let mut count = [0u8; 16];
                let count = postcard::to_slice(&ops, &mut count).map_err(postcard_error)?;
                let len = empty - 1 + count.len() + bytes.len();
                self.out.write_all(&(len as u32).to_le_bytes())?;
                self.out.write_all(&head[..empty - 1])?;
                self.out.write_all(count)?;
                self.out.write_all(&bytes)?;
                if !waits.is_empty() {
                    self.record(&Record::CpuWaits { tid, waits })?;
                }
                if self.spare.len() < SPARE && bytes.capacity() <= SPARE_BYTES {
                    bytes.clear();
                    self.spare.push(bytes);
                }
            }
        }
        Ok(())
    }

    /// Write every thread's unfinished chunk, in tid order.
    pub fn flush_all(&mut self) -> io::Result<()> {
        let mut tids: Vec<u32> = self.pending.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            self.flush_thread(tid)?;
        }
        Ok(())
    }

    /// Operations held back (not yet written), over all threads.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Write what is queued (in tid order), the end record, and finish the gzip stream.
    pub fn finish(mut self, bad_lines: u64, first_ns: u64, last_ns: u64) -> io::Result<W> {
        self.flush_all()?;
        let ops = self.ops;
        self.record(&Record::End { ops, bad_lines, first_ns, last_ns })?;
        self.out.into_inner().map_err(|e| e.into_error())?.finish()
    }
}

/// Reads records one at a time.
pub struct Reader<R: Read> {
    inp: flate2::read::GzDecoder<BufReader<R>>,
    buf: Vec<u8>,
    done: bool,
    version: u32,
}

impl<R: Read> Reader<R> {
    pub fn new(r: R) -> Result<Self, FormatError> {
        let mut r = BufReader::new(r);
        let head = r.fill_buf()?;
        if head.len() < MAGIC.len() || head[..MAGIC.len() - 1] != MAGIC[..MAGIC.len() - 1] {
            return Err(FormatError::NotATrace);
        }
        let v = u32::from(head[MAGIC.len() - 1]);
        if !(OLDEST..=VERSION).contains(&v) {
            return Err(FormatError::Version(v));
        }
        r.consume(MAGIC.len());
        Ok(Reader { inp: flate2::read::GzDecoder::new(r), buf: Vec::new(), done: false, version: v })
    }

    /// The version the file says it is.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The next record, `None` after the end record.
    pub fn next_record(&mut self) -> Result<Option<Record>, FormatError> {
        if self.done {
            return Ok(None);
        }
        let mut len = [0u8; 4];
        match self.inp.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(FormatError::Corrupt("the trace ends before its end record (truncated?)".into()))
            }
            Err(e) => return Err(FormatError::Corrupt(e.to_string())),
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_RECORD {
            return Err(FormatError::Corrupt(format!("a record of {len} bytes (more than {MAX_RECORD})")));
        }
        self.buf.resize(len, 0);
        self.inp.read_exact(&mut self.buf).map_err(|e| FormatError::Corrupt(e.to_string()))?;
        let r: Record = postcard::from_bytes(&self.buf).map_err(|e| FormatError::Corrupt(e.to_string()))?;
        if r.since_version() > self.version {
            return Err(FormatError::Corrupt(format!(
                "a version {} record in a version {} trace",
                r.since_version(),
                self.version
            )));
        }
        if matches!(r, Record::End { .. }) {
            self.done = true;
        }
        Ok(Some(r))
    }
}

/// A trace read whole: what `show`, `export` and replay work from.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub source: String,
    pub epoch_ns: u64,
    /// tid → tgid.
    pub threads: Vec<(u32, u32)>,
    pub files: HashMap<u32, FileInfo>,
    pub paths: HashMap<u32, String>,
    pub names: HashMap<u32, String>,
    /// Each thread's operations in program order, threads by tid.
    pub ops: Vec<(u32, Vec<Op>)>,
    pub bad_lines: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Version 2: how it was recorded (`via`, `detail`).
    pub recorder: Option<(String, String)>,
    /// Rings by id.
    pub rings: BTreeMap<u32, RingInfo>,
    /// Each ring's operations in submission order, rings by id.
    pub ring_ops: Vec<(u32, Vec<AsyncOp>)>,
    /// Events lost while recording, by why.
    pub lost: Vec<(String, u64)>,
    pub overhead: Option<Overhead>,
    /// Block devices by dev, and each one's requests in completion order.
    pub devices: BTreeMap<u32, String>,
    pub block_ios: Vec<(u32, Vec<BlockIo>)>,
}

/// A ring as its record describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingInfo {
    pub tgid: u32,
    pub kind: RingKind,
    pub entries: u32,
    pub flags: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub path: String,
    pub flags: u32,
    pub before: bool,
    pub regular: bool,
}

impl Trace {
    pub fn read(r: impl Read) -> Result<Trace, FormatError> {
        let mut rd = Reader::new(r)?;
        let mut t = Trace::default();
        let mut by_tid: HashMap<u32, Vec<Op>> = HashMap::new();
        let mut by_ring: BTreeMap<u32, Vec<AsyncOp>> = BTreeMap::new();
        let mut by_dev: BTreeMap<u32, Vec<BlockIo>> = BTreeMap::new();
        let mut seen_header = false;
        while let Some(rec) = rd.next_record()? {
            match rec {
                Record::Header { version, source, epoch_ns } => {
                    if !(OLDEST..=VERSION).contains(&version) {
                        return Err(FormatError::Version(version));
                    }
                    seen_header = true;
                    t.source = source;
                    t.epoch_ns = epoch_ns;
                }
                Record::Thread { tid, tgid } => t.threads.push((tid, tgid)),
                Record::File { id, path, flags, before, regular } => {
                    t.files.insert(id, FileInfo { path, flags, before, regular });
                }
                Record::Path { id, path } => {
                    t.paths.insert(id, path);
                }
                Record::Name { id, name } => {
                    t.names.insert(id, name);
                }
                Record::Chunk { tid, ops } => by_tid.entry(tid).or_default().extend(ops),
                Record::End { bad_lines, first_ns, last_ns, .. } => {
                    t.bad_lines = bad_lines;
                    t.first_ns = first_ns;
                    t.last_ns = last_ns;
                }
                Record::Recorder { via, detail } => t.recorder = Some((via, detail)),
                Record::Ring { id, tgid, kind, entries, flags } => {
                    t.rings.insert(id, RingInfo { tgid, kind, entries, flags });
                }
                Record::RingOps { ring, ops } => by_ring.entry(ring).or_default().extend(ops),
                Record::Lost { why, events } => t.lost.push((why, events)),
                Record::Overhead(o) => t.overhead = Some(o),
                Record::Device { dev, name } => {
                    t.devices.insert(dev, name);
                }
                Record::BlockIos { dev, ios } => by_dev.entry(dev).or_default().extend(ios),
                Record::CpuWaits { .. } => {}
            }
        }
        if !seen_header {
            return Err(FormatError::Corrupt("no header record".into()));
        }
        let mut ops: Vec<(u32, Vec<Op>)> = by_tid.into_iter().collect();
        ops.sort_by_key(|(tid, _)| *tid);
        t.ops = ops;
        t.ring_ops = by_ring.into_iter().collect();
        t.block_ios = by_dev.into_iter().collect();
        Ok(t)
    }

    /// The name of an operation (`Other` calls by their recorded name).
    pub fn op_name(&self, k: Kind) -> &str {
        match k {
            Kind::Other(i) => self.names.get(&i).map(String::as_str).unwrap_or("other"),
            k => k.as_str(),
        }
    }
}

/// Linux open(2) flag bits (x86-64/aarch64 generic values) and their names.
pub mod oflags {
    pub const O_WRONLY: u32 = 0o1;
    pub const O_RDWR: u32 = 0o2;
    pub const O_CREAT: u32 = 0o100;
    pub const O_EXCL: u32 = 0o200;
    pub const O_TRUNC: u32 = 0o1000;
    pub const O_APPEND: u32 = 0o2000;
    pub const O_NONBLOCK: u32 = 0o4000;
    pub const O_DSYNC: u32 = 0o10000;
    pub const O_DIRECT: u32 = 0o40000;
    pub const O_LARGEFILE: u32 = 0o100000;
    pub const O_DIRECTORY: u32 = 0o200000;
    pub const O_NOFOLLOW: u32 = 0o400000;
    pub const O_NOATIME: u32 = 0o1000000;
    pub const O_CLOEXEC: u32 = 0o2000000;
    /// O_SYNC includes O_DSYNC.
    pub const O_SYNC: u32 = 0o4010000;
    pub const O_PATH: u32 = 0o10000000;
    pub const O_TMPFILE: u32 = 0o20200000;

    pub const NAMES: &[(&str, u32)] = &[
        ("O_RDONLY", 0),
        ("O_WRONLY", O_WRONLY),
        ("O_RDWR", O_RDWR),
        ("O_CREAT", O_CREAT),
        ("O_EXCL", O_EXCL),
        ("O_NOCTTY", 0o400),
        ("O_TRUNC", O_TRUNC),
        ("O_APPEND", O_APPEND),
        ("O_NONBLOCK", O_NONBLOCK),
        ("O_NDELAY", O_NONBLOCK),
        ("O_DSYNC", O_DSYNC),
        ("O_SYNC", O_SYNC),
        ("O_ASYNC", 0o20000),
        ("O_DIRECT", O_DIRECT),
        ("O_LARGEFILE", O_LARGEFILE),
        ("O_DIRECTORY", O_DIRECTORY),
        ("O_NOFOLLOW", O_NOFOLLOW),
        ("O_NOATIME", O_NOATIME),
        ("O_CLOEXEC", O_CLOEXEC),
        ("O_PATH", O_PATH),
        ("O_TMPFILE", O_TMPFILE),
        ("O_RSYNC", 0),
    ];

    /// `O_WRONLY|O_CREAT|O_DIRECT` (or a number) into bits; unknown names are ignored.
    pub fn parse(s: &str) -> u32 {
        let mut bits = 0;
        for part in s.split('|') {
            let part = part.trim();
            if let Some(&(_, v)) = NAMES.iter().find(|(n, _)| *n == part) {
                bits |= v;
            } else if let Some(v) = crate::line::parse_int(part) {
                bits |= v as u32;
            }
        }
        bits
    }

    /// Bits back into names, as strace prints them.
    pub fn show(bits: u32) -> String {
        let mut out = vec![match bits & 3 {
            1 => "O_WRONLY",
            2 => "O_RDWR",
            _ => "O_RDONLY",
        }
        .to_string()];
        let mut rest = bits & !3;
        if rest & O_SYNC == O_SYNC {
            out.push("O_SYNC".into());
            rest &= !O_SYNC;
        }
        if rest & O_TMPFILE == O_TMPFILE {
            out.push("O_TMPFILE".into());
            rest &= !O_TMPFILE;
        }
        for &(n, v) in NAMES {
            if v != 0 && v.count_ones() == 1 && rest & v != 0 && n != "O_NDELAY" {
                out.push(n.into());
                rest &= !v;
            }
        }
        if rest != 0 {
            out.push(format!("{rest:#o}"));
        }
        out.join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.record(&Record::Header { version: VERSION, source: "test".into(), epoch_ns: 5 }).unwrap();
        w.record(&Record::Thread { tid: 7, tgid: 7 }).unwrap();
        w.record(&Record::File { id: 0, path: "/a".into(), flags: oflags::O_DIRECT, before: false, regular: true })
            .unwrap();
        let op = Op {
            start_ns: 1,
            dur_ns: 2,
            kind: Kind::Write,
            file: 0,
            offset: 0,
            size: 4096,
            count: 0,
            flags: 0,
            result: 4096,
        };
        for i in 0..3000 {
            w.op(7, Op { start_ns: i, ..op }).unwrap();
        }
        let bytes = w.finish(0, 0, 3000).unwrap();
        let t = Trace::read(&bytes[..]).unwrap();
        assert_eq!(t.ops.len(), 1);
        assert_eq!(t.ops[0].1.len(), 3000);
        assert_eq!(t.ops[0].1[2999].start_ns, 2999);
        assert_eq!(t.files[&0].path, "/a");
        assert!(matches!(Trace::read(&bytes[..bytes.len() / 2]), Err(FormatError::Corrupt(_))));
        assert!(matches!(Trace::read(&b"hello world, not a trace"[..]), Err(FormatError::NotATrace)));
    }

    #[test]
    fn version_1_traces_still_read_and_hold_no_version_2_record() {
        let v1 = |extra: Option<Record>| {
            let mut w = Writer::new(Vec::new()).unwrap();
            w.record(&Record::Header { version: 1, source: "old".into(), epoch_ns: 0 }).unwrap();
            w.record(&Record::File { id: 0, path: "/a".into(), flags: 0, before: false, regular: true }).unwrap();
            if let Some(r) = extra {
                w.record(&r).unwrap();
            }
            w.op(
                1,
                Op {
                    start_ns: 0,
                    dur_ns: 1,
                    kind: Kind::Fsync,
                    file: 0,
                    offset: 0,
                    size: 0,
                    count: 0,
                    flags: 0,
                    result: 0,
                },
            )
            .unwrap();
            let mut b = w.finish(0, 0, 1).unwrap();
            b[MAGIC.len() - 1] = 1;
            b
        };
        let t = Trace::read(&v1(None)[..]).unwrap();
        assert_eq!((t.source.as_str(), t.ops[0].1.len(), t.recorder.clone()), ("old", 1, None));
        assert_eq!(Reader::new(&v1(None)[..]).unwrap().version(), 1);
        let lost = Record::Lost { why: "x".into(), events: 1 };
        assert!(matches!(Trace::read(&v1(Some(lost))[..]), Err(FormatError::Corrupt(_))));
        let mut future = v1(None);
        future[MAGIC.len() - 1] = 4;
        assert!(matches!(Trace::read(&future[..]), Err(FormatError::Version(4))));
    }

    #[test]
    fn cpu_waits_follow_their_chunk_and_only_in_version_3() {
        let op = |start_ns| Op {
            start_ns,
            dur_ns: 1,
            kind: Kind::Pwrite,
            file: 0,
            offset: 0,
            size: 1,
            count: 0,
            flags: 0,
            result: 1,
        };
        let trace = |version: u8, waits: &[u64]| {
            let mut w = Writer::new(Vec::new()).unwrap();
            w.record(&Record::Header { version: u32::from(version), source: "w".into(), epoch_ns: 0 }).unwrap();
            for (i, &wait) in waits.iter().enumerate() {
                w.op_waited(9, op(i as u64 * 10), wait).unwrap();
            }
            let mut b = w.finish(0, 0, 100).unwrap();
            b[MAGIC.len() - 1] = version;
            b
        };
        let records = |b: &[u8]| {
            let mut r = Reader::new(b).unwrap();
            std::iter::from_fn(move || r.next_record().transpose()).collect::<Result<Vec<_>, _>>()
        };
        // A wait after the first call: the chunk, then every call's wait (0 before the first).
        let got = records(&trace(3, &[0, 5, 0])).unwrap();
        let at = got.iter().position(|r| matches!(r, Record::Chunk { .. })).unwrap();
        assert_eq!(got[at + 1], Record::CpuWaits { tid: 9, waits: vec![0, 5, 0] });
        // No wait at all: no record.
        assert!(!records(&trace(3, &[0, 0])).unwrap().iter().any(|r| matches!(r, Record::CpuWaits { .. })));
        // A version 2 file that holds one is refused as corrupt.
        let e = records(&trace(2, &[1])).unwrap_err().to_string();
        assert!(e.contains("a version 3 record in a version 2 trace"), "{e}");
    }

    #[test]
    fn chunks_are_what_postcard_makes_of_them() {
        let ops: Vec<Op> = (0..300u64)
            .map(|i| Op {
                start_ns: i << 30,
                dur_ns: i,
                kind: if i % 3 == 0 { Kind::Other(i as u32) } else { Kind::Pwrite },
                file: if i % 5 == 0 { NO_FILE } else { i as u32 },
                offset: i << 40,
                size: 4096,
                count: 0,
                flags: 0,
                result: if i % 7 == 0 { i64::MIN } else { -(i as i64) },
            })
            .collect();
        let mut w = Writer::new(Vec::new()).unwrap();
        for op in &ops {
            w.op(300_000, *op).unwrap();
        }
        let bytes = w.finish(0, 0, 0).unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        assert_eq!(r.next_record().unwrap(), Some(Record::Chunk { tid: 300_000, ops: ops.clone() }));
        // Byte for byte: the decompressed stream is the length and postcard's encoding.
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&bytes[MAGIC.len()..]).read_to_end(&mut raw).unwrap();
        let want = postcard::to_allocvec(&Record::Chunk { tid: 300_000, ops }).unwrap();
        assert_eq!(&raw[..4], &(want.len() as u32).to_le_bytes());
        assert_eq!(&raw[4..4 + want.len()], &want[..]);
    }

    #[test]
    fn op_encoding_is_postcards() {
        // Every kind, by the index serde gives it: decoding index i must give the kind whose
        // index() is i (a variant added or moved without updating index() fails here).
        let mut kinds = Vec::new();
        for i in 0u8..=19 {
            let bytes = if i == 19 { vec![19, 0x80, 0x01] } else { vec![i] };
            let k: Kind = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(k.index().0, u32::from(i), "{k:?}");
            kinds.push(k);
        }
        assert!(postcard::from_bytes::<Kind>(&[20]).is_err(), "a kind after Other: update Kind::index");
        kinds.push(Kind::Other(u32::MAX));
        let edges = [0u64, 1, 0x7f, 0x80, 0x3fff, 0x4000, u64::from(u32::MAX), i64::MAX as u64, u64::MAX];
        let results = [0i64, 1, -1, 63, -64, 64, -65, i64::MAX, i64::MIN];
        for (k, kind) in kinds.iter().enumerate() {
            for (j, &e) in edges.iter().enumerate() {
                let op = Op {
                    start_ns: e,
                    dur_ns: edges[(j + 1) % edges.len()],
                    kind: *kind,
                    file: e as u32,
                    offset: edges[(j + k) % edges.len()],
                    size: !e,
                    count: (e >> 7) as u32,
                    flags: (e >> 32) as u32,
                    result: results[(j + k) % results.len()],
                };
                let mut mine = Vec::new();
                encode_op(&op, &mut mine);
                assert_eq!(mine, postcard::to_allocvec(&op).unwrap(), "{op:?}");
                assert!(mine.len() <= OP_MAX);
            }
        }
    }

    #[test]
    fn flags() {
        let b = oflags::parse("O_WRONLY|O_CREAT|O_DIRECT");
        assert_eq!(b, oflags::O_WRONLY | oflags::O_CREAT | oflags::O_DIRECT);
        assert_eq!(oflags::show(b), "O_WRONLY|O_CREAT|O_DIRECT");
        assert_eq!(oflags::show(oflags::parse("O_RDWR|O_SYNC")), "O_RDWR|O_SYNC");
    }
}
