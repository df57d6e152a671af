//! The kernel's records ([`crate::wire::Event`]) into an iolab trace, as they come: system
//! calls become per-thread operations with the kernel's times (fds resolved to openings through
//! per-process fd tables that follow dup, fork and close, relative paths through the working
//! directory and dirfds, as the strace importer does), io_uring and libaio submissions and
//! completions are paired per ring into [`AsyncOp`]s written in submission order with the
//! depth in flight at each, fixed files resolve through the registered tables, and block
//! requests are kept per device. Memory is bounded by what is alive (threads, open files,
//! operations in flight: at most [`MAX_QUEUE`] per ring) and the trace writer's chunks.

use crate::syscalls::{Sys, CALLS};
use crate::wire::{self, Event, IoEvent, Iocb};
use iolab_trace::format::{
    oflags, AsyncKind, AsyncOp, BlockIo, Kind, Op, Record, RingKind, Writer, ASYNC_DRAIN, ASYNC_FIXED_BUF,
    ASYNC_FIXED_FILE, ASYNC_FORCE_ASYNC, ASYNC_LINK, CHUNK, NO_BUF, NO_FILE, VERSION,
};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::{self, Write};
use std::sync::Arc;

/// Operations a ring holds waiting for an earlier one's completion; past it the oldest is
/// written as never completed (a multishot request, a lost completion).
pub const MAX_QUEUE: usize = 65_536;
/// Fixed-file slots followed per ring.
const MAX_SLOTS: u32 = 1 << 20;
/// Distinct paths remembered for their ids (as the importer's PATHS_KEPT).
const PATHS_KEPT: usize = 256 * 1024;
const AT_FDCWD: i32 = -100;

/// What the recorder saw, for its summary line.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Summary {
    pub ops: u64,
    pub async_ops: u64,
    pub block_ios: u64,
    pub threads: usize,
    pub processes: usize,
    pub files: u32,
    pub rings: u32,
    /// Events lost or not paired, by why.
    pub lost: BTreeMap<String, u64>,
    /// The recorder's kernel programs: runs and time spent in them (from the kernel's BPF
    /// statistics, when `kernel.bpf_stats_enabled` is 1; else 0).
    pub kernel_runs: u64,
    pub kernel_ns: u64,
    /// CPU time of the recorder's reading thread (decoding, assembling, writing the trace).
    pub reader_cpu_ns: u64,
}

/// Looks up what the kernel half cannot: an fd first seen in use (opened before the recording,
/// or inherited), by its process's /proc entry.
pub trait FdLookup {
    /// (path, open flags) of `fd` in process `tgid`, if it can be known now.
    fn fd(&mut self, tgid: u32, fd: i32) -> Option<(String, u32)>;
}

/// Reads /proc/TGID/fd/N and /proc/TGID/fdinfo/N.
pub struct ProcFds;

impl FdLookup for ProcFds {
    fn fd(&mut self, tgid: u32, fd: i32) -> Option<(String, u32)> {
        let path = std::fs::read_link(format!("/proc/{tgid}/fd/{fd}")).ok()?;
        let info = std::fs::read_to_string(format!("/proc/{tgid}/fdinfo/{fd}")).unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .unwrap_or(0);
        Some((path.to_string_lossy().into_owned(), flags))
    }
}

/// No lookups (tests, and traces assembled after the processes are gone).
pub struct NoLookup;

impl FdLookup for NoLookup {
    fn fd(&mut self, _: u32, _: i32) -> Option<(String, u32)> {
        None
    }
}

#[derive(Default, Clone)]
struct Proc {
    fds: HashMap<i32, u32>,
    cwd: Option<Arc<str>>,
}

struct Slot {
    op: AsyncOp,
    done: bool,
}

struct RingState {
    id: u32,
    kind: RingKind,
    in_flight: u32,
    queue: VecDeque<Slot>,
    /// The sequence number of `queue`'s front.
    base: u64,
    /// Request (io_uring) or iocb address (libaio) to its sequence number.
    by_key: HashMap<u64, u64>,
    out: Vec<AsyncOp>,
    /// Registered files: slot → opening.
    fixed: Vec<u32>,
    tgid: u32,
}

/// Builds a trace from the kernel's records.
pub struct Builder<W: Write, L: FdLookup = ProcFds> {
    w: Writer<W>,
    lookup: L,
    t0: u64,
    procs: HashMap<u32, Proc>,
    tgid_of: HashMap<u32, u32>,
    /// Each thread's run-queue wait so far at its last recorded call's exit (run_delay, ns).
    run_delay: HashMap<u32, u64>,
    threads_seen: usize,
    processes_seen: HashSet<u32>,
    /// Processes whose calls are left out until their first successful execve: the command
    /// as forked by the recorder, before it becomes the command.
    before_exec: HashSet<u32>,
    files: HashMap<u32, String>,
    refs: HashMap<u32, u32>,
    next_file: u32,
    path_ids: HashMap<String, u32>,
    next_path: u32,
    names: HashMap<&'static str, u32>,
    rings: HashMap<(RingKind, u64), RingState>,
    next_ring: u32,
    devices: BTreeMap<u32, Vec<BlockIo>>,
    lost: BTreeMap<String, u64>,
    ops: u64,
    async_ops: u64,
    block_ios: u64,
    first_ns: Option<u64>,
    last_ns: u64,
}

fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

fn regular(path: &str) -> bool {
    path.starts_with('/') && !["/dev/", "/proc/", "/sys/"].iter().any(|p| path.starts_with(p))
}

/// io_uring's opcode into the trace's kind.
fn uring_kind(opcode: u8, rw_flags: u32) -> AsyncKind {
    match opcode {
        0 => AsyncKind::Nop,
        1 => AsyncKind::Readv,
        2 => AsyncKind::Writev,
        // IORING_FSYNC_DATASYNC
        3 if rw_flags & 1 != 0 => AsyncKind::Fdatasync,
        3 => AsyncKind::Fsync,
        4 | 22 => AsyncKind::Read,
        5 | 23 => AsyncKind::Write,
        8 => AsyncKind::SyncFileRange,
        17 => AsyncKind::Fallocate,
        n => AsyncKind::Other(u32::from(n)),
    }
}

/// libaio's IOCB_CMD_* into the trace's kind.
fn aio_kind(opcode: u16) -> AsyncKind {
    match opcode {
        0 => AsyncKind::Read,
        1 => AsyncKind::Write,
        2 => AsyncKind::Fsync,
        3 => AsyncKind::Fdatasync,
        6 => AsyncKind::Nop,
        7 => AsyncKind::Readv,
        8 => AsyncKind::Writev,
        n => AsyncKind::Other(1000 + u32::from(n)),
    }
}

impl<W: Write, L: FdLookup> Builder<W, L> {
    /// A trace named `source`, recorded `via` (with `detail`), whose time zero is `t0` on the
    /// kernel's monotonic clock; `epoch_ns` is the wall-clock time of that zero.
    pub fn new(out: W, lookup: L, source: &str, detail: &str, t0: u64, epoch_ns: u64) -> io::Result<Self> {
        let mut w = Writer::new(out)?;
        w.record(&Record::Header { version: VERSION, source: source.to_string(), epoch_ns })?;
        w.record(&Record::Recorder { via: "ebpf".into(), detail: detail.to_string() })?;
        Ok(Builder {
            w,
            lookup,
            t0,
            procs: HashMap::new(),
            tgid_of: HashMap::new(),
            run_delay: HashMap::new(),
            threads_seen: 0,
            processes_seen: HashSet::new(),
            before_exec: HashSet::new(),
            files: HashMap::new(),
            refs: HashMap::new(),
            next_file: 0,
            path_ids: HashMap::new(),
            next_path: 0,
            names: HashMap::new(),
            rings: HashMap::new(),
            next_ring: 0,
            devices: BTreeMap::new(),
            lost: BTreeMap::new(),
            ops: 0,
            async_ops: 0,
            block_ios: 0,
            first_ns: None,
            last_ns: 0,
        })
    }

    /// A process the recording starts with: its working directory, and whether its calls
    /// count only once it has exec'd (the command forked by the recorder).
    pub fn add_process(&mut self, tgid: u32, cwd: Option<String>, after_exec: bool) {
        let p = self.procs.entry(tgid).or_default();
        if let Some(c) = cwd {
            p.cwd = Some(c.into());
        }
        if after_exec {
            self.before_exec.insert(tgid);
        }
        self.processes_seen.insert(tgid);
    }

    /// Name a block device of a block-level recording.
    pub fn add_device(&mut self, dev: u32, name: &str) -> io::Result<()> {
        self.devices.entry(dev).or_default();
        self.w.record(&Record::Device { dev, name: name.to_string() })
    }

    /// Count events lost (`why`), from the kernel half's counters or the decoder.
    pub fn lost(&mut self, why: &str, n: u64) {
        if n > 0 {
            *self.lost.entry(why.to_string()).or_default() += n;
        }
    }

    fn rel(&mut self, t: u64) -> u64 {
        let r = t.saturating_sub(self.t0);
        self.first_ns.get_or_insert(r);
        r
    }

    fn name_id(&mut self, name: &'static str) -> io::Result<u32> {
        if let Some(&id) = self.names.get(name) {
            return Ok(id);
        }
        let id = self.names.len() as u32;
        self.names.insert(name, id);
        self.w.record(&Record::Name { id, name: name.to_string() })?;
        Ok(id)
    }

    fn path_id(&mut self, p: String) -> io::Result<u32> {
        if let Some(&id) = self.path_ids.get(&p) {
            return Ok(id);
        }
        if self.path_ids.len() >= PATHS_KEPT {
            self.path_ids.clear();
        }
        let id = self.next_path;
        self.next_path += 1;
        self.w.record(&Record::Path { id, path: p.clone() })?;
        self.path_ids.insert(p, id);
        Ok(id)
    }

    fn new_file(&mut self, path: String, flags: u32, before: bool) -> io::Result<u32> {
        let id = self.next_file;
        self.next_file += 1;
        let reg = regular(&path);
        self.w.record(&Record::File { id, path: path.clone(), flags, before, regular: reg })?;
        self.files.insert(id, path);
        Ok(id)
    }

    fn tgid(&mut self, tid: u32, tgid: u32) -> u32 {
        if self.tgid_of.insert(tid, tgid).is_none() {
            self.threads_seen += 1;
            self.processes_seen.insert(tgid);
        }
        tgid
    }

    fn set_fd(&mut self, tgid: u32, fd: i32, file: u32) {
        let old = self.procs.entry(tgid).or_default().fds.insert(fd, file);
        if let Some(old) = old {
            self.unref(old);
        }
        *self.refs.entry(file).or_insert(0) += 1;
    }

    /// Drop one reference; the references left.
    fn unref(&mut self, file: u32) -> u32 {
        match self.refs.get_mut(&file) {
            Some(n) if *n > 1 => {
                *n -= 1;
                *n
            }
            _ => {
                self.refs.remove(&file);
                self.files.remove(&file);
                0
            }
        }
    }

    /// The opening behind `fd` in `tgid`, made (as opened before the trace) when first seen.
    fn file_of(&mut self, tgid: u32, fd: i32) -> io::Result<u32> {
        if fd < 0 {
            return Ok(NO_FILE);
        }
        if let Some(&f) = self.procs.get(&tgid).and_then(|p| p.fds.get(&fd)) {
            return Ok(f);
        }
        let (path, flags) = self.lookup.fd(tgid, fd).unwrap_or_else(|| (format!("fd:{fd}"), 0));
        let id = self.new_file(path, flags, true)?;
        self.set_fd(tgid, fd, id);
        Ok(id)
    }

    fn resolve(&self, tgid: u32, dirfd: Option<i32>, path: &str) -> String {
        if path.starts_with('/') {
            return normalize(path);
        }
        let base = match dirfd {
            None | Some(AT_FDCWD) => self.procs.get(&tgid).and_then(|p| p.cwd.as_deref().map(str::to_string)),
            Some(fd) => self.procs.get(&tgid).and_then(|p| p.fds.get(&fd)).and_then(|f| self.files.get(f)).cloned(),
        };
        match base {
            Some(b) if b.starts_with('/') => normalize(&format!("{b}/{path}")),
            _ => path.to_string(),
        }
    }

    /// One record from the kernel.
    pub fn event(&mut self, ev: Event) -> io::Result<()> {
        match ev {
            Event::Sys(s) => self.sys(s),
            Event::Fork { tid, tgid, child_tid, child_tgid, .. } => {
                // The recorder's own fork of the command is not a traced thread.
                if self.procs.contains_key(&tgid) {
                    self.tgid(tid, tgid);
                }
                if child_tgid == child_tid && child_tgid != tgid {
                    // A new process: copies of its parent's fd table and working directory.
                    let parent = self.procs.get(&tgid).cloned().unwrap_or_default();
                    for f in parent.fds.values() {
                        *self.refs.entry(*f).or_insert(0) += 1;
                    }
                    self.procs.insert(child_tgid, parent);
                    if self.before_exec.contains(&tgid) {
                        self.before_exec.insert(child_tgid);
                    }
                }
                self.tgid(child_tid, child_tgid);
                Ok(())
            }
            Event::Exit { tid, tgid, group_dead, .. } => {
                self.w.flush_thread(tid)?;
                self.run_delay.remove(&tid);
                if self.tgid_of.remove(&tid).is_some() {
                    self.w.record(&Record::Thread { tid, tgid })?;
                }
                if group_dead {
                    if let Some(p) = self.procs.remove(&tgid) {
                        for f in p.fds.into_values() {
                            self.unref(f);
                        }
                    }
                    self.before_exec.remove(&tgid);
                }
                Ok(())
            }
            Event::Ring { tgid, ctx, sq_entries, flags, .. } => {
                self.ring(RingKind::IoUring, ctx, tgid, sq_entries, flags)?;
                Ok(())
            }
            Event::UringSubmit(s) => self.uring_submit(s),
            Event::UringComplete { ts, ctx, req, res, cflags, .. } => {
                // IORING_CQE_F_MORE: a multishot request goes on; only its last completion ends it.
                if cflags & 2 != 0 {
                    return Ok(());
                }
                let t = self.rel(ts);
                self.complete(RingKind::IoUring, ctx, req, t, i64::from(res))
            }
            Event::AioSubmit { start, tid, tgid, ctx, iocb, raw, .. } => {
                self.aio_submit(start, tid, tgid, ctx, iocb, &raw)
            }
            Event::AioDone { ts, ctx, raw, .. } => {
                let e = IoEvent::parse(&raw);
                let t = self.rel(ts);
                self.complete(RingKind::Aio, ctx, e.obj, t, e.res)
            }
            Event::FixedFiles { tgid, ctx, offset, fds, nr, .. } => {
                let files: Vec<u32> = {
                    let mut v = Vec::with_capacity(fds.len());
                    for fd in fds.iter().copied() {
                        v.push(if fd >= 0 { self.file_of(tgid, fd)? } else { NO_FILE });
                    }
                    v
                };
                if nr as usize > files.len() {
                    self.lost(
                        "fixed files past the first 256 of one registration (not resolved)",
                        u64::from(nr) - files.len() as u64,
                    );
                }
                let r = self.ring(RingKind::IoUring, ctx, tgid, 0, 0)?;
                if offset < MAX_SLOTS {
                    let end = (offset as usize + files.len()).min(MAX_SLOTS as usize);
                    if r.fixed.len() < end {
                        r.fixed.resize(end, NO_FILE);
                    }
                    for (i, f) in files.into_iter().enumerate() {
                        if let Some(s) = r.fixed.get_mut(offset as usize + i) {
                            *s = f;
                        }
                    }
                }
                Ok(())
            }
            Event::Block(b) => {
                let io = BlockIo {
                    queued_ns: b.queued.saturating_sub(self.t0),
                    issue_ns: self.rel(b.issue),
                    complete_ns: self.rel(b.ts),
                    sector: b.sector,
                    bytes: b.bytes,
                    op: (b.cmd_flags & 0xff) as u8,
                    flags: b.cmd_flags >> 8,
                    error: b.error.clamp(0, 255) as u8,
                };
                self.last_ns = self.last_ns.max(io.complete_ns);
                self.block_ios += 1;
                let v = self.devices.entry(b.dev).or_default();
                v.push(io);
                if v.len() >= CHUNK {
                    let ios = std::mem::take(v);
                    self.w.record(&Record::BlockIos { dev: b.dev, ios })?;
                }
                Ok(())
            }
        }
    }

    fn ring(&mut self, kind: RingKind, key: u64, tgid: u32, entries: u32, flags: u32) -> io::Result<&mut RingState> {
        let id = self.next_ring;
        if !self.rings.contains_key(&(kind, key)) {
            self.next_ring += 1;
            self.w.record(&Record::Ring { id, tgid, kind, entries, flags })?;
        }
        Ok(self.rings.entry((kind, key)).or_insert_with(|| RingState {
            id,
            kind,
            in_flight: 0,
            queue: VecDeque::new(),
            base: 0,
            by_key: HashMap::new(),
            out: Vec::new(),
            fixed: Vec::new(),
            tgid,
        }))
    }

    fn uring_submit(&mut self, s: wire::UringSubmit) -> io::Result<()> {
        let t = self.rel(s.ts);
        let tgid = self.tgid(s.tid, s.tgid);
        // IOSQE_FIXED_FILE 1, IO_DRAIN 2, IO_LINK 4, IO_HARDLINK 8, ASYNC 16
        let fixed = s.sqe_flags & 1 != 0;
        let mut flags = 0;
        if fixed {
            flags |= ASYNC_FIXED_FILE;
        }
        if s.sqe_flags & 2 != 0 {
            flags |= ASYNC_DRAIN;
        }
        if s.sqe_flags & 12 != 0 {
            flags |= ASYNC_LINK;
        }
        if s.sqe_flags & 16 != 0 {
            flags |= ASYNC_FORCE_ASYNC;
        }
        let fixed_buf = matches!(s.opcode, 4 | 5);
        if fixed_buf {
            flags |= ASYNC_FIXED_BUF;
        }
        let kind = uring_kind(s.opcode, s.rw_flags);
        let file = if fixed {
            let slot = s.fd;
            let f = self.ring(RingKind::IoUring, s.ctx, tgid, 0, 0)?.fixed.get(slot as usize).copied();
            f.unwrap_or(NO_FILE)
        } else {
            self.file_of(tgid, s.fd)?
        };
        let vectored = matches!(kind, AsyncKind::Readv | AsyncKind::Writev);
        let op = AsyncOp {
            tid: s.tid,
            submit_ns: t,
            complete_ns: 0,
            kind,
            file,
            fd: s.fd,
            offset: s.off,
            size: if vectored { 0 } else { s.len },
            count: if vectored { s.len as u32 } else { 0 },
            flags,
            op_flags: s.rw_flags,
            buf: if fixed_buf { u32::from(s.buf_index) } else { NO_BUF },
            depth: 0,
            result: i64::MIN,
            user_data: s.user_data,
        };
        self.submit(RingKind::IoUring, s.ctx, tgid, s.req, op)
    }

    #[allow(clippy::too_many_arguments)]
    fn aio_submit(&mut self, start: u64, tid: u32, tgid: u32, ctx: u64, iocb: u64, raw: &[u8; 64]) -> io::Result<()> {
        let t = self.rel(start);
        let tgid = self.tgid(tid, tgid);
        let i = Iocb::parse(raw);
        let kind = aio_kind(i.opcode);
        let file = self.file_of(tgid, i.fd as i32)?;
        let vectored = matches!(kind, AsyncKind::Readv | AsyncKind::Writev);
        let op = AsyncOp {
            tid,
            submit_ns: t,
            complete_ns: 0,
            kind,
            file,
            fd: i.fd as i32,
            offset: i.offset as u64,
            size: if vectored { 0 } else { i.nbytes },
            count: if vectored { i.nbytes as u32 } else { 0 },
            flags: 0,
            op_flags: i.rw_flags,
            buf: NO_BUF,
            depth: 0,
            result: i64::MIN,
            user_data: i.data,
        };
        self.submit(RingKind::Aio, ctx, tgid, iocb, op)
    }

    fn submit(&mut self, kind: RingKind, ctx: u64, tgid: u32, key: u64, mut op: AsyncOp) -> io::Result<()> {
        self.async_ops += 1;
        self.last_ns = self.last_ns.max(op.submit_ns);
        let mut overflow = 0u64;
        let mut write = None;
        {
            let r = self.ring(kind, ctx, tgid, 0, 0)?;
            r.in_flight += 1;
            op.depth = r.in_flight;
            let seq = r.base + r.queue.len() as u64;
            if let Some(old) = r.by_key.insert(key, seq) {
                // The same request again before its completion was seen: that one was lost.
                if let Some(s) = old.checked_sub(r.base).and_then(|i| r.queue.get_mut(i as usize)) {
                    s.done = true;
                    r.in_flight = r.in_flight.saturating_sub(1);
                    overflow += 1;
                }
            }
            r.queue.push_back(Slot { op, done: false });
            while r.queue.len() > MAX_QUEUE {
                if let Some(s) = r.queue.pop_front() {
                    r.base += 1;
                    if !s.done {
                        r.in_flight = r.in_flight.saturating_sub(1);
                    }
                    r.out.push(s.op);
                }
            }
            if r.out.len() >= CHUNK {
                write = Some((r.id, std::mem::take(&mut r.out)));
            }
        }
        self.lost("completions not seen (the request was submitted again)", overflow);
        if let Some((ring, ops)) = write {
            self.w.record(&Record::RingOps { ring, ops })?;
        }
        Ok(())
    }

    fn complete(&mut self, kind: RingKind, ctx: u64, key: u64, t: u64, res: i64) -> io::Result<()> {
        self.last_ns = self.last_ns.max(t);
        let Some(r) = self.rings.get_mut(&(kind, ctx)) else {
            self.lost("completions of operations submitted before the recording", 1);
            return Ok(());
        };
        let Some(seq) = r.by_key.remove(&key) else {
            self.lost("completions of operations submitted before the recording", 1);
            return Ok(());
        };
        let Some(slot) = seq.checked_sub(r.base).and_then(|i| r.queue.get_mut(i as usize)) else {
            self.lost("completions after their operation was written as unfinished", 1);
            return Ok(());
        };
        slot.done = true;
        slot.op.complete_ns = t;
        slot.op.result = res;
        r.in_flight = r.in_flight.saturating_sub(1);
        while r.queue.front().is_some_and(|s| s.done) {
            if let Some(s) = r.queue.pop_front() {
                r.base += 1;
                r.out.push(s.op);
            }
        }
        if r.out.len() >= CHUNK {
            let (ring, ops) = (r.id, std::mem::take(&mut r.out));
            self.w.record(&Record::RingOps { ring, ops })?;
        }
        Ok(())
    }

    fn sys(&mut self, s: wire::Sys) -> io::Result<()> {
        let Some(call) = Sys::from_code(s.kind) else {
            self.lost("system call records of an unknown kind", 1);
            return Ok(());
        };
        let sys = call.sys;
        if self.before_exec.contains(&s.tgid) {
            if matches!(sys, Sys::Execve | Sys::Execveat) && s.ret == 0 {
                self.before_exec.remove(&s.tgid);
            } else {
                return Ok(());
            }
        }
        let tgid = self.tgid(s.tid, s.tgid);
        let start = self.rel(s.start);
        let end = s.end.saturating_sub(self.t0);
        self.last_ns = self.last_ns.max(end);
        if s.cut {
            self.lost("paths cut at 4 KiB (kept cut)", 1);
        }
        let mut op = Op {
            start_ns: start,
            dur_ns: end.saturating_sub(start),
            kind: Kind::Other(0),
            file: NO_FILE,
            offset: 0,
            size: 0,
            count: 0,
            flags: 0,
            result: s.ret,
        };
        let c = Got {
            sys,
            name: call.name,
            tgid,
            ret: s.ret,
            ok: s.ret >= 0,
            a: s.args,
            extra: s.extra,
            p1: s.path1.unwrap_or_default(),
            p2: s.path2.unwrap_or_default(),
        };
        match sys {
            Sys::Open | Sys::Openat | Sys::Openat2 | Sys::Creat => self.open_sys(&c, &mut op)?,
            Sys::Close => {
                op.kind = Kind::Close;
                op.file = self.file_of(tgid, c.fd(0))?;
                if c.ok {
                    let gone = self.procs.get_mut(&tgid).and_then(|p| p.fds.remove(&c.fd(0)));
                    if let Some(f) = gone {
                        op.count = self.unref(f);
                    }
                }
            }
            Sys::Dup | Sys::Dup2 | Sys::Dup3 | Sys::Fcntl => {
                op.kind = Kind::Other(self.name_id(c.name)?);
                // fcntl duplicates with F_DUPFD (0) and F_DUPFD_CLOEXEC (1030).
                let dups = sys != Sys::Fcntl || matches!(c.a[1], 0 | 1030);
                if c.fd(0) >= 0 {
                    op.file = self.file_of(tgid, c.fd(0))?;
                }
                if dups && c.ok && op.file != NO_FILE && c.ret as i32 != c.fd(0) {
                    self.set_fd(tgid, c.ret as i32, op.file);
                }
            }
            Sys::Read
            | Sys::Write
            | Sys::Pread
            | Sys::Pwrite
            | Sys::Readv
            | Sys::Writev
            | Sys::Preadv
            | Sys::Pwritev
            | Sys::Preadv2
            | Sys::Pwritev2 => self.data_sys(&c, &mut op)?,
            Sys::Lseek | Sys::Fsync | Sys::Fdatasync | Sys::SyncFileRange | Sys::Ftruncate | Sys::Fallocate => {
                self.fd_sys(&c, &mut op)?
            }
            Sys::Unlink
            | Sys::Unlinkat
            | Sys::Mkdir
            | Sys::Mkdirat
            | Sys::Rename
            | Sys::Renameat
            | Sys::Renameat2
            | Sys::Chdir
            | Sys::Fchdir => self.name_sys(&c, &mut op)?,
            Sys::IoUringSetup
            | Sys::IoUringEnter
            | Sys::IoUringRegister
            | Sys::IoSetup
            | Sys::IoDestroy
            | Sys::IoSubmit
            | Sys::IoGetevents
            | Sys::IoPgetevents
            | Sys::Execve
            | Sys::Execveat => self.async_sys(&c, &mut op)?,
        }
        self.ops += 1;
        // The CPU wait in the gap since the thread's last recorded call (none before its first).
        let (entry, exit) = s.run_delay;
        let wait = self.run_delay.insert(s.tid, exit).map_or(0, |before| entry.saturating_sub(before));
        self.w.op_waited(s.tid, op, wait)
    }

    /// open, openat, openat2, creat: a new opening of a path.
    fn open_sys(&mut self, c: &Got, op: &mut Op) -> io::Result<()> {
        let (dir, flags) = match c.sys {
            Sys::Open => (None, c.a[1] as u32),
            Sys::Openat => (Some(c.fd(0)), c.a[2] as u32),
            Sys::Openat2 => (Some(c.fd(0)), c.extra as u32),
            _ => (None, oflags::O_CREAT | oflags::O_WRONLY | oflags::O_TRUNC),
        };
        op.kind = Kind::Open;
        op.flags = flags;
        let path = self.resolve(c.tgid, dir, &c.p1);
        if c.ok {
            let id = self.new_file(path, flags, false)?;
            self.set_fd(c.tgid, c.ret as i32, id);
            op.file = id;
        } else {
            op.offset = u64::from(self.path_id(path)?);
        }
        Ok(())
    }

    /// The data calls: read, write, their positioned and vectored forms.
    fn data_sys(&mut self, c: &Got, op: &mut Op) -> io::Result<()> {
        op.file = self.file_of(c.tgid, c.fd(0))?;
        let (kind, vectored, positioned) = match c.sys {
            Sys::Read => (Kind::Read, false, false),
            Sys::Write => (Kind::Write, false, false),
            Sys::Pread => (Kind::Pread, false, true),
            Sys::Pwrite => (Kind::Pwrite, false, true),
            Sys::Readv => (Kind::Readv, true, false),
            Sys::Writev => (Kind::Writev, true, false),
            Sys::Preadv | Sys::Preadv2 => (Kind::Preadv, true, true),
            _ => (Kind::Pwritev, true, true),
        };
        op.kind = kind;
        if vectored {
            op.count = c.a[2] as u32;
            // The iovecs' lengths summed by the kernel half; what was moved when that could not
            // be read (a sum below it).
            op.size = c.extra.max(c.ret.max(0) as u64);
        } else {
            op.size = c.a[2];
        }
        if positioned {
            op.offset = c.a[3];
        }
        Ok(())
    }

    /// The other calls on a descriptor: lseek, the syncs, ftruncate, fallocate.
    fn fd_sys(&mut self, c: &Got, op: &mut Op) -> io::Result<()> {
        op.file = self.file_of(c.tgid, c.fd(0))?;
        let a = &c.a;
        match c.sys {
            Sys::Lseek => {
                op.kind = Kind::Lseek;
                op.offset = a[1];
                op.count = a[2] as u32;
            }
            Sys::Fsync => op.kind = Kind::Fsync,
            Sys::Fdatasync => op.kind = Kind::Fdatasync,
            Sys::SyncFileRange => {
                op.kind = Kind::SyncFileRange;
                op.offset = a[1];
                op.size = a[2];
                op.flags = a[3] as u32;
            }
            Sys::Ftruncate => {
                op.kind = Kind::Ftruncate;
                op.offset = a[1];
            }
            _ => {
                op.kind = Kind::Fallocate;
                op.flags = a[1] as u32;
                op.offset = a[2];
                op.size = a[3];
            }
        }
        Ok(())
    }

    /// The namespace calls by path (unlink, mkdir, rename and their `at` forms) and the cwd's
    /// (chdir, fchdir).
    fn name_sys(&mut self, c: &Got, op: &mut Op) -> io::Result<()> {
        let (sys, tgid) = (c.sys, c.tgid);
        match sys {
            Sys::Rename | Sys::Renameat | Sys::Renameat2 => {
                op.kind = Kind::Rename;
                let (d1, d2) = if sys == Sys::Rename { (None, None) } else { (Some(c.fd(0)), Some(c.fd(2))) };
                let from = self.resolve(tgid, d1, &c.p1);
                let to = self.resolve(tgid, d2, &c.p2);
                op.file = self.path_id(from)?;
                op.offset = u64::from(self.path_id(to)?);
            }
            Sys::Chdir | Sys::Fchdir => {
                op.kind = Kind::Other(self.name_id(c.name)?);
                if c.ok {
                    let dir = if sys == Sys::Chdir {
                        Some(self.resolve(tgid, None, &c.p1))
                    } else {
                        let f = self.file_of(tgid, c.fd(0))?;
                        op.file = f;
                        self.files.get(&f).cloned()
                    };
                    if let Some(d) = dir.filter(|d| d.starts_with('/')) {
                        self.procs.entry(tgid).or_default().cwd = Some(d.into());
                    }
                }
            }
            _ => {
                op.kind = if matches!(sys, Sys::Unlink | Sys::Unlinkat) { Kind::Unlink } else { Kind::Mkdir };
                let dir = matches!(sys, Sys::Unlinkat | Sys::Mkdirat).then(|| c.fd(0));
                if sys == Sys::Unlinkat && c.a[2] & 0x200 != 0 {
                    op.flags = 0x200;
                }
                let p = self.resolve(tgid, dir, &c.p1);
                op.file = self.path_id(p)?;
            }
        }
        Ok(())
    }

    /// The asynchronous interfaces' own calls (io_uring's and libaio's: their rings are
    /// followed from them) and execve.
    fn async_sys(&mut self, c: &Got, op: &mut Op) -> io::Result<()> {
        op.kind = Kind::Other(self.name_id(c.name)?);
        let a = &c.a;
        match c.sys {
            Sys::IoUringSetup => {
                op.count = a[0] as u32;
                if c.ok {
                    let id = self.new_file("anon_inode:[io_uring]".into(), 0, false)?;
                    self.set_fd(c.tgid, c.ret as i32, id);
                    op.file = id;
                }
            }
            Sys::IoUringEnter | Sys::IoUringRegister => {
                op.file = self.file_of(c.tgid, c.fd(0))?;
                // enter: to_submit, min_complete, flags; register: the opcode.
                op.count = a[1] as u32;
                op.size = if c.sys == Sys::IoUringEnter { a[2] } else { a[3] };
                op.flags = if c.sys == Sys::IoUringEnter { a[3] as u32 } else { 0 };
            }
            Sys::IoSetup => {
                op.count = a[0] as u32;
                if c.ret == 0 && c.extra != 0 {
                    self.ring(RingKind::Aio, c.extra, c.tgid, a[0] as u32, 0)?;
                }
            }
            Sys::IoDestroy => self.close_ring(RingKind::Aio, a[0])?,
            Sys::IoSubmit => op.count = a[1] as u32,
            Sys::IoGetevents | Sys::IoPgetevents => {
                op.size = a[1];
                op.count = a[2] as u32;
            }
            _ => {}
        }
        Ok(())
    }

    /// Write a ring's operations (those never completed as such) and forget it.
    fn close_ring(&mut self, kind: RingKind, key: u64) -> io::Result<()> {
        if let Some(mut r) = self.rings.remove(&(kind, key)) {
            let unfinished = r.queue.iter().filter(|s| !s.done).count() as u64;
            r.out.extend(r.queue.drain(..).map(|s| s.op));
            if !r.out.is_empty() {
                self.w.record(&Record::RingOps { ring: r.id, ops: r.out })?;
            }
            let _ = (r.kind, r.tgid, unfinished);
        }
        Ok(())
    }

    /// Finish the trace: every ring's operations, block requests, threads alive, what was
    /// lost, the end record.
    pub fn finish(mut self) -> io::Result<(W, Summary)> {
        let mut keys: Vec<(RingKind, u64)> = self.rings.keys().copied().collect();
        keys.sort_by_key(|k| self.rings.get(k).map(|r| r.id));
        for k in keys {
            self.close_ring(k.0, k.1)?;
        }
        for (dev, ios) in std::mem::take(&mut self.devices) {
            if !ios.is_empty() {
                self.w.record(&Record::BlockIos { dev, ios })?;
            }
        }
        let mut tids: Vec<(u32, u32)> = self.tgid_of.iter().map(|(&t, &g)| (t, g)).collect();
        tids.sort_unstable();
        for (tid, tgid) in tids {
            self.w.record(&Record::Thread { tid, tgid })?;
        }
        for (why, events) in &self.lost {
            self.w.record(&Record::Lost { why: why.clone(), events: *events })?;
        }
        let summary = Summary {
            ops: self.ops,
            async_ops: self.async_ops,
            block_ios: self.block_ios,
            threads: self.threads_seen,
            processes: self.processes_seen.len(),
            files: self.next_file,
            rings: self.next_ring,
            lost: self.lost.clone(),
            kernel_runs: 0,
            kernel_ns: 0,
            reader_cpu_ns: 0,
        };
        let first = self.first_ns.unwrap_or(0);
        let w = self.w.finish(0, first, self.last_ns)?;
        Ok((w, summary))
    }
}

/// Every traced call's name (for the kernel table and messages).
pub fn traced_names() -> Vec<&'static str> {
    CALLS.iter().map(|c| c.name).collect()
}

/// One system call's record, taken apart once for its handler.
struct Got {
    sys: Sys,
    name: &'static str,
    /// The calling thread's process.
    tgid: u32,
    ret: i64,
    /// It returned, and not an error.
    ok: bool,
    a: [u64; 6],
    /// openat2's open_how.flags, io_setup's context id, a vectored call's iovecs summed.
    extra: u64,
    p1: String,
    p2: String,
}

impl Got {
    /// Argument `i` as a descriptor.
    fn fd(&self, i: usize) -> i32 {
        self.a[i] as i32
    }
}
