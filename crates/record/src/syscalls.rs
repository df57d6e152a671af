//! The system calls the eBPF recorder traces: its own code for each (what the kernel half
//! carries in a record), the call's number on x86-64 and aarch64, which arguments are paths,
//! and what else the kernel half reads at the call's exit. The same set as strace's recording
//! (`TRACED` in crates/cli/src/trace_cmd.rs) plus io_uring's and libaio's calls.

/// The recorder's code for a system call (never 0: 0 is "not traced" in the kernel's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Sys {
    Open = 1,
    Openat,
    Openat2,
    Creat,
    Close,
    Dup,
    Dup2,
    Dup3,
    Fcntl,
    Read,
    Write,
    Pread,
    Pwrite,
    Readv,
    Writev,
    Preadv,
    Pwritev,
    Preadv2,
    Pwritev2,
    Lseek,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Ftruncate,
    Fallocate,
    Unlink,
    Unlinkat,
    Rename,
    Renameat,
    Renameat2,
    Mkdir,
    Mkdirat,
    Chdir,
    Fchdir,
    Execve,
    Execveat,
    IoUringSetup,
    IoUringEnter,
    IoUringRegister,
    IoSetup,
    IoDestroy,
    IoSubmit,
    IoGetevents,
    IoPgetevents,
}

/// What the kernel half reads besides the arguments (`enum special` in iolab.bpf.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Special {
    None = 0,
    OpenHow = 1,
    AioSubmit = 2,
    AioEvents = 3,
    UringRegister = 4,
    ReadU64Arg1 = 5,
    /// readv and its kin: the iovecs' lengths summed (the bytes asked for) at entry.
    IovSum = 6,
}

/// One traced call: its code, name, numbers, path arguments and special capture.
pub struct Call {
    pub sys: Sys,
    pub name: &'static str,
    pub x86_64: Option<u32>,
    pub aarch64: Option<u32>,
    pub path1: i8,
    pub path2: i8,
    pub special: Special,
}

const fn c(sys: Sys, name: &'static str, x86_64: Option<u32>, aarch64: Option<u32>, path1: i8, path2: i8) -> Call {
    Call { sys, name, x86_64, aarch64, path1, path2, special: Special::None }
}
const fn sp(sys: Sys, name: &'static str, x86_64: u32, aarch64: u32, special: Special) -> Call {
    Call { sys, name, x86_64: Some(x86_64), aarch64: Some(aarch64), path1: -1, path2: -1, special }
}

/// Every traced call. Numbers from the kernel's syscall tables (arch/x86/entry/syscalls/
/// syscall_64.tbl; include/uapi/asm-generic/unistd.h for aarch64).
pub const CALLS: &[Call] = &[
    c(Sys::Open, "open", Some(2), None, 0, -1),
    c(Sys::Openat, "openat", Some(257), Some(56), 1, -1),
    Call {
        sys: Sys::Openat2,
        name: "openat2",
        x86_64: Some(437),
        aarch64: Some(437),
        path1: 1,
        path2: -1,
        special: Special::OpenHow,
    },
    c(Sys::Creat, "creat", Some(85), None, 0, -1),
    c(Sys::Close, "close", Some(3), Some(57), -1, -1),
    c(Sys::Dup, "dup", Some(32), Some(23), -1, -1),
    c(Sys::Dup2, "dup2", Some(33), None, -1, -1),
    c(Sys::Dup3, "dup3", Some(292), Some(24), -1, -1),
    c(Sys::Fcntl, "fcntl", Some(72), Some(25), -1, -1),
    c(Sys::Read, "read", Some(0), Some(63), -1, -1),
    c(Sys::Write, "write", Some(1), Some(64), -1, -1),
    c(Sys::Pread, "pread64", Some(17), Some(67), -1, -1),
    c(Sys::Pwrite, "pwrite64", Some(18), Some(68), -1, -1),
    sp(Sys::Readv, "readv", 19, 65, Special::IovSum),
    sp(Sys::Writev, "writev", 20, 66, Special::IovSum),
    sp(Sys::Preadv, "preadv", 295, 69, Special::IovSum),
    sp(Sys::Pwritev, "pwritev", 296, 70, Special::IovSum),
    sp(Sys::Preadv2, "preadv2", 327, 286, Special::IovSum),
    sp(Sys::Pwritev2, "pwritev2", 328, 287, Special::IovSum),
    c(Sys::Lseek, "lseek", Some(8), Some(62), -1, -1),
    c(Sys::Fsync, "fsync", Some(74), Some(82), -1, -1),
    c(Sys::Fdatasync, "fdatasync", Some(75), Some(83), -1, -1),
    c(Sys::SyncFileRange, "sync_file_range", Some(277), Some(84), -1, -1),
    c(Sys::Ftruncate, "ftruncate", Some(77), Some(46), -1, -1),
    c(Sys::Fallocate, "fallocate", Some(285), Some(47), -1, -1),
    c(Sys::Unlink, "unlink", Some(87), None, 0, -1),
    c(Sys::Unlinkat, "unlinkat", Some(263), Some(35), 1, -1),
    c(Sys::Rename, "rename", Some(82), None, 0, 1),
    c(Sys::Renameat, "renameat", Some(264), Some(38), 1, 3),
    c(Sys::Renameat2, "renameat2", Some(316), Some(276), 1, 3),
    c(Sys::Mkdir, "mkdir", Some(83), None, 0, -1),
    c(Sys::Mkdirat, "mkdirat", Some(258), Some(34), 1, -1),
    c(Sys::Chdir, "chdir", Some(80), Some(49), 0, -1),
    c(Sys::Fchdir, "fchdir", Some(81), Some(50), -1, -1),
    c(Sys::Execve, "execve", Some(59), Some(221), 0, -1),
    c(Sys::Execveat, "execveat", Some(322), Some(281), 1, -1),
    c(Sys::IoUringSetup, "io_uring_setup", Some(425), Some(425), -1, -1),
    c(Sys::IoUringEnter, "io_uring_enter", Some(426), Some(426), -1, -1),
    sp(Sys::IoUringRegister, "io_uring_register", 427, 427, Special::UringRegister),
    sp(Sys::IoSetup, "io_setup", 206, 0, Special::ReadU64Arg1),
    c(Sys::IoDestroy, "io_destroy", Some(207), Some(1), -1, -1),
    sp(Sys::IoSubmit, "io_submit", 209, 2, Special::AioSubmit),
    sp(Sys::IoGetevents, "io_getevents", 208, 4, Special::AioEvents),
    sp(Sys::IoPgetevents, "io_pgetevents", 333, 292, Special::AioEvents),
];

impl Sys {
    /// The call with this code.
    pub fn from_code(code: u16) -> Option<&'static Call> {
        CALLS.iter().find(|c| c.sys as u16 == code)
    }
}

/// This machine's number of a call, if it has one.
pub fn number(call: &Call) -> Option<u32> {
    if cfg!(target_arch = "aarch64") {
        call.aarch64
    } else {
        call.x86_64
    }
}

/// The kernel table's entry for a call, packed as `struct sysinfo` is laid out in memory
/// (kind, path1, path2, special: one byte each, in that order).
pub fn packed(call: &Call) -> u32 {
    u32::from_ne_bytes([call.sys as u16 as u8, call.path1 as u8, call.path2 as u8, call.special as u8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_fit_a_byte_and_numbers_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in CALLS {
            assert!((c.sys as u16) > 0 && (c.sys as u16) < 256, "{}", c.name);
            assert_eq!(Sys::from_code(c.sys as u16).map(|x| x.name), Some(c.name));
            if let Some(n) = number(c) {
                assert!(n < 1024 && seen.insert(n), "{} {n}", c.name);
            }
        }
        assert_eq!(packed(&CALLS[1]).to_ne_bytes(), [2, 1, 0xff, 0]);
    }
}
