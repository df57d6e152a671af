//! The records the kernel half (bpf/iolab.bpf.c) writes into its ring buffer, decoded field
//! by field from their bytes (no casts, no `unsafe`): each layout here is its C struct's, in
//! the host's byte order. A record that is short, of an unknown type or whose lengths point
//! past its end is an error, never a panic: the decoder is fuzzed (fuzz/fuzz_targets/bpf_event.rs).

/// The C header: type, tid, tgid, size, ts.
const HEAD: usize = 24;
/// `struct ev_sys` without its paths.
pub const SYS: usize = 128;
/// Where path 2 starts after the `ev_sys` header.
pub const MAX_PATH: usize = 4096;
/// Fixed-file slots one registration record carries.
pub const MAX_FIXED: usize = 256;

/// One record from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A system call: entry and exit on the kernel's monotonic clock.
    Sys(Sys),
    /// A thread or process made by a traced one (`tid`, `tgid` the parent).
    Fork {
        ts: u64,
        tid: u32,
        tgid: u32,
        child_tid: u32,
        child_tgid: u32,
    },
    /// A thread ended; `group_dead`: the last of its process.
    Exit {
        ts: u64,
        tid: u32,
        tgid: u32,
        group_dead: bool,
    },
    /// An io_uring request taken from the submission queue.
    UringSubmit(UringSubmit),
    /// An io_uring completion posted.
    UringComplete {
        ts: u64,
        tid: u32,
        ctx: u64,
        req: u64,
        user_data: u64,
        res: i32,
        cflags: u32,
    },
    /// A ring created (`fd` >= 0) or first seen (`fd` -1).
    Ring {
        ts: u64,
        tid: u32,
        tgid: u32,
        ctx: u64,
        fd: i32,
        sq_entries: u32,
        cq_entries: u32,
        flags: u32,
    },
    /// An iocb io_submit accepted (its raw 64 bytes), or an io_event io_getevents returned (32).
    AioSubmit {
        start: u64,
        ts: u64,
        tid: u32,
        tgid: u32,
        ctx: u64,
        iocb: u64,
        raw: [u8; 64],
    },
    AioDone {
        ts: u64,
        tid: u32,
        tgid: u32,
        ctx: u64,
        raw: [u8; 32],
    },
    /// Fixed files registered with io_uring_register: `fds[i]` goes to slot `offset + i`.
    FixedFiles {
        ts: u64,
        tid: u32,
        tgid: u32,
        ctx: u64,
        ring_fd: i32,
        opcode: u32,
        offset: u32,
        nr: u32,
        fds: Vec<i32>,
    },
    /// A block request completed.
    Block(Block),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sys {
    pub tid: u32,
    pub tgid: u32,
    pub start: u64,
    pub end: u64,
    pub ret: i64,
    pub args: [u64; 6],
    /// openat2's open_how.flags, io_setup's context id, a vectored call's iovecs summed.
    pub extra: u64,
    pub nr: u32,
    /// The recorder's code for the call (`syscalls::Sys`).
    pub kind: u16,
    /// The thread's run-queue wait so far (the scheduler's run_delay) at the call's entry and
    /// exit, ns: what of a gap the thread spent waiting for a CPU.
    pub run_delay: (u64, u64),
    /// Paths named by the call (lossy UTF-8), and whether each was cut at 4 KiB.
    pub path1: Option<String>,
    pub path2: Option<String>,
    pub cut: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UringSubmit {
    pub ts: u64,
    pub tid: u32,
    pub tgid: u32,
    pub ctx: u64,
    pub req: u64,
    pub user_data: u64,
    pub off: u64,
    pub addr: u64,
    pub len: u64,
    pub fd: i32,
    pub rw_flags: u32,
    pub opcode: u8,
    pub sqe_flags: u8,
    pub buf_index: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub ts: u64,
    pub issue: u64,
    pub queued: u64,
    pub sector: u64,
    pub dev: u32,
    pub bytes: u32,
    pub cmd_flags: u32,
    pub error: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("a record of {0} bytes is shorter than its type's {1}")]
    Short(usize, usize),
    #[error("a record of unknown type {0}")]
    Type(u32),
    #[error("a record whose path lengths ({0}, {1}) go past its {2} bytes")]
    Paths(usize, usize, usize),
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2).and_then(|s| s.try_into().ok()).map(u16::from_ne_bytes).unwrap_or(0)
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_ne_bytes).unwrap_or(0)
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at) as i32
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_ne_bytes).unwrap_or(0)
}

/// A NUL-terminated string of `len` bytes (its NUL included) at `at`.
fn c_str(b: &[u8], at: usize, len: usize) -> Option<String> {
    let s = b.get(at..at + len)?;
    let s = match memchr_nul(s) {
        Some(i) => &s[..i],
        None => s,
    };
    Some(String::from_utf8_lossy(s).into_owned())
}

fn memchr_nul(s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == 0)
}

fn need(b: &[u8], n: usize) -> Result<(), WireError> {
    if b.len() < n {
        Err(WireError::Short(b.len(), n))
    } else {
        Ok(())
    }
}

/// Decode one ring-buffer record.
pub fn decode(b: &[u8]) -> Result<Event, WireError> {
    need(b, HEAD)?;
    let ty = u32_at(b, 0);
    let tid = u32_at(b, 4);
    let tgid = u32_at(b, 8);
    let ts = u64_at(b, 16);
    Ok(match ty {
        1 => {
            need(b, SYS)?;
            let len1 = usize::from(u16_at(b, 104));
            let len2 = usize::from(u16_at(b, 106));
            let flags = u16_at(b, 102);
            let end1 = SYS + len1;
            let end2 = if len2 > 0 { SYS + MAX_PATH + len2 } else { 0 };
            if end1 > b.len() || end2 > b.len() || len1 > MAX_PATH || len2 > MAX_PATH {
                return Err(WireError::Paths(len1, len2, b.len()));
            }
            let mut args = [0u64; 6];
            for (i, a) in args.iter_mut().enumerate() {
                *a = u64_at(b, 40 + 8 * i);
            }
            Event::Sys(Sys {
                tid,
                tgid,
                start: u64_at(b, 24),
                end: ts,
                ret: u64_at(b, 32) as i64,
                args,
                extra: u64_at(b, 88),
                nr: u32_at(b, 96),
                kind: u16_at(b, 100),
                run_delay: (u64_at(b, 112), u64_at(b, 120)),
                path1: if len1 > 0 { c_str(b, SYS, len1) } else { None },
                path2: if len2 > 0 { c_str(b, SYS + MAX_PATH, len2) } else { None },
                cut: flags & 3 != 0,
            })
        }
        2 => {
            need(b, 32)?;
            Event::Fork { ts, tid, tgid, child_tid: u32_at(b, 24), child_tgid: u32_at(b, 28) }
        }
        3 => {
            need(b, 32)?;
            Event::Exit { ts, tid, tgid, group_dead: u32_at(b, 24) != 0 }
        }
        4 => {
            need(b, 88)?;
            Event::UringSubmit(UringSubmit {
                ts,
                tid,
                tgid,
                ctx: u64_at(b, 24),
                req: u64_at(b, 32),
                user_data: u64_at(b, 40),
                off: u64_at(b, 48),
                addr: u64_at(b, 56),
                len: u64_at(b, 64),
                fd: i32_at(b, 72),
                rw_flags: u32_at(b, 76),
                opcode: b[80],
                sqe_flags: b[81],
                buf_index: u16_at(b, 82),
            })
        }
        5 => {
            need(b, 56)?;
            Event::UringComplete {
                ts,
                tid,
                ctx: u64_at(b, 24),
                req: u64_at(b, 32),
                user_data: u64_at(b, 40),
                res: i32_at(b, 48),
                cflags: u32_at(b, 52),
            }
        }
        6 => {
            need(b, 48)?;
            Event::Ring {
                ts,
                tid,
                tgid,
                ctx: u64_at(b, 24),
                fd: i32_at(b, 32),
                sq_entries: u32_at(b, 36),
                cq_entries: u32_at(b, 40),
                flags: u32_at(b, 44),
            }
        }
        7 | 8 => {
            need(b, 120)?;
            let (start, ctx, ptr) = (u64_at(b, 24), u64_at(b, 32), u64_at(b, 40));
            if ty == 7 {
                let mut raw = [0u8; 64];
                raw.copy_from_slice(&b[56..120]);
                Event::AioSubmit { start, ts, tid, tgid, ctx, iocb: ptr, raw }
            } else {
                let mut raw = [0u8; 32];
                raw.copy_from_slice(&b[56..88]);
                Event::AioDone { ts, tid, tgid, ctx, raw }
            }
        }
        9 => {
            let size = 56 + 4 * MAX_FIXED;
            need(b, size)?;
            let got = (u32_at(b, 48) as usize).min(MAX_FIXED);
            let fds = (0..got).map(|i| i32_at(b, 56 + 4 * i)).collect();
            Event::FixedFiles {
                ts,
                tid,
                tgid,
                ctx: u64_at(b, 24),
                ring_fd: i32_at(b, 32),
                opcode: u32_at(b, 36),
                offset: u32_at(b, 40),
                nr: u32_at(b, 44),
                fds,
            }
        }
        10 => {
            need(b, 64)?;
            Event::Block(Block {
                ts,
                issue: u64_at(b, 24),
                queued: u64_at(b, 32),
                sector: u64_at(b, 40),
                dev: u32_at(b, 48),
                bytes: u32_at(b, 52),
                cmd_flags: u32_at(b, 56),
                error: i32_at(b, 60),
            })
        }
        t => return Err(WireError::Type(t)),
    })
}

/// The fields of a libaio `struct iocb` (its 64 bytes as io_submit read them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iocb {
    pub data: u64,
    pub rw_flags: u32,
    pub opcode: u16,
    pub fd: u32,
    pub buf: u64,
    pub nbytes: u64,
    pub offset: i64,
    pub flags: u32,
}

impl Iocb {
    pub fn parse(raw: &[u8; 64]) -> Iocb {
        Iocb {
            data: u64_at(raw, 0),
            rw_flags: u32_at(raw, 12),
            opcode: u16_at(raw, 16),
            fd: u32_at(raw, 20),
            buf: u64_at(raw, 24),
            nbytes: u64_at(raw, 32),
            offset: u64_at(raw, 40) as i64,
            flags: u32_at(raw, 56),
        }
    }
}

/// The fields of a libaio `struct io_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoEvent {
    pub data: u64,
    pub obj: u64,
    pub res: i64,
}

impl IoEvent {
    pub fn parse(raw: &[u8; 32]) -> IoEvent {
        IoEvent { data: u64_at(raw, 0), obj: u64_at(raw, 8), res: u64_at(raw, 16) as i64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(ty: u32, size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size];
        b[0..4].copy_from_slice(&ty.to_ne_bytes());
        b[4..8].copy_from_slice(&7u32.to_ne_bytes());
        b[8..12].copy_from_slice(&5u32.to_ne_bytes());
        b[16..24].copy_from_slice(&99u64.to_ne_bytes());
        b
    }

    #[test]
    fn sys_with_two_paths() {
        let mut b = head(1, SYS + MAX_PATH + 6);
        b[24..32].copy_from_slice(&10u64.to_ne_bytes());
        b[32..40].copy_from_slice(&(-2i64).to_ne_bytes());
        b[104..106].copy_from_slice(&4u16.to_ne_bytes());
        b[106..108].copy_from_slice(&6u16.to_ne_bytes());
        b[112..120].copy_from_slice(&300u64.to_ne_bytes());
        b[120..128].copy_from_slice(&350u64.to_ne_bytes());
        b[SYS..SYS + 4].copy_from_slice(b"/a/\0");
        b[SYS + MAX_PATH..SYS + MAX_PATH + 6].copy_from_slice(b"/b/cd\0");
        let Event::Sys(s) = decode(&b).unwrap() else { panic!() };
        assert_eq!((s.tid, s.tgid, s.start, s.end, s.ret, s.run_delay), (7, 5, 10, 99, -2, (300, 350)));
        assert_eq!(s.path1.as_deref(), Some("/a/"));
        assert_eq!(s.path2.as_deref(), Some("/b/cd"));
        // Lengths past the record are refused, not read.
        b.truncate(SYS + MAX_PATH + 3);
        assert!(matches!(decode(&b), Err(WireError::Paths(4, 6, _))));
        assert!(matches!(decode(&b[..20]), Err(WireError::Short(20, 24))));
        assert!(matches!(decode(&head(77, 64)), Err(WireError::Type(77))));
    }

    #[test]
    fn iocb_fields() {
        let mut raw = [0u8; 64];
        raw[0..8].copy_from_slice(&42u64.to_ne_bytes());
        raw[16..18].copy_from_slice(&1u16.to_ne_bytes());
        raw[20..24].copy_from_slice(&9u32.to_ne_bytes());
        raw[32..40].copy_from_slice(&4096u64.to_ne_bytes());
        raw[40..48].copy_from_slice(&8192i64.to_ne_bytes());
        let i = Iocb::parse(&raw);
        assert_eq!((i.data, i.opcode, i.fd, i.nbytes, i.offset), (42, 1, 9, 4096, 8192));
    }
}
