//! Each operation as one synchronous system call on a file and a buffer: what psync does for
//! every operation, and what the other engines fall back to for calls they have no faster path
//! for (lseek and ftruncate on io_uring, lseek on mmap).

use crate::{Op, OpKind};
use std::fs::File;
use std::io::{IoSlice, IoSliceMut};

/// The slot's first `len` bytes as `n` consecutive pieces (the last takes the remainder).
pub(crate) fn pieces(len: usize, n: u16) -> impl Iterator<Item = std::ops::Range<usize>> {
    let n = (n.max(1) as usize).min(len.max(1));
    let each = len / n;
    (0..n).map(move |i| {
        let start = i * each;
        let end = if i + 1 == n { len } else { start + each };
        start..end
    })
}

/// A raw call's answer as a completion's result: bytes, or a negative errno.
#[inline]
pub(crate) fn res(r: rustix::io::Result<usize>) -> i64 {
    match r {
        Ok(n) => n as i64,
        Err(e) => -(e.raw_os_error() as i64),
    }
}

/// pread(2) as a raw system call. libc's `pread` is a thread-cancellation point: in a process
/// with more than one thread it switches asynchronous cancellation on and off around the call,
/// which cost 17% of a 4 KiB pwrite to /dev/null in a worker thread (perf: the two
/// `pthread_*_asynccancel` calls). rustix makes the system call directly. iolab never cancels a
/// thread, so nothing is lost.
#[inline]
pub(crate) fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    rustix::io::pread(file, buf, offset).map_err(Into::into)
}

/// pwrite(2) as a raw system call (see [`pread`]).
#[inline]
pub(crate) fn pwrite(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
    rustix::io::pwrite(file, buf, offset).map_err(Into::into)
}

/// The slot's first `len` bytes as `n` buffers to read into.
fn slices_mut(buf: &mut [u8], len: usize, n: u16) -> Vec<IoSliceMut<'_>> {
    let mut rest = &mut buf[..len];
    let mut slices = Vec::with_capacity(n as usize);
    for r in pieces(len, n) {
        let (a, b) = std::mem::take(&mut rest).split_at_mut(r.len());
        slices.push(IoSliceMut::new(a));
        rest = b;
    }
    slices
}

/// sync_file_range(2). rustix has no wrapper; libc's is the system call.
pub(crate) fn sync_file_range(file: &File, offset: u64, len: u64, flags: u32) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(n)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    // SAFETY: sync_file_range reads no memory of ours; the descriptor is open (borrowed from
    // `file` for the call's duration).
    let r = unsafe { libc::sync_file_range(file.as_raw_fd(), off, n, flags) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(0)
    }
}

/// A read or write with per-call flags: preadv2/pwritev2 (one piece unless the op says more),
/// at the op's offset or, for the calls at the position, at the file position (offset -1).
fn with_flags(file: &File, op: &Op, buf: &mut [u8]) -> std::io::Result<usize> {
    let len = op.len as usize;
    let flags = rustix::io::ReadWriteFlags::from_bits_retain(op.flags.bits());
    let (n, at) = match op.kind {
        OpKind::Read | OpKind::Write => (1, op.offset),
        OpKind::Readv(n) | OpKind::Writev(n) => (n, op.offset),
        OpKind::ReadCur | OpKind::WriteCur => (1, u64::MAX),
        OpKind::ReadvCur(n) | OpKind::WritevCur(n) => (n, u64::MAX),
        _ => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
    };
    if op.kind.reads() {
        rustix::io::preadv2(file, &mut slices_mut(buf, len, n), at, flags).map_err(Into::into)
    } else {
        let slices: Vec<IoSlice> = pieces(len, n).map(|r| IoSlice::new(&buf[r])).collect();
        rustix::io::pwritev2(file, &slices, at, flags).map_err(Into::into)
    }
}

/// Perform `op` on `file` with `buf` (the slot's buffer, at least `op.len` bytes).
pub(crate) fn perform(file: &File, op: &Op, buf: &mut [u8]) -> std::io::Result<usize> {
    let len = op.len as usize;
    if !op.flags.is_empty() {
        return with_flags(file, op, buf);
    }
    match op.kind {
        OpKind::Read => pread(file, &mut buf[..len], op.offset),
        OpKind::Write => pwrite(file, &buf[..len], op.offset),
        OpKind::ReadCur => rustix::io::read(file, &mut buf[..len]).map_err(Into::into),
        OpKind::WriteCur => rustix::io::write(file, &buf[..len]).map_err(Into::into),
        OpKind::Readv(n) => rustix::io::preadv(file, &mut slices_mut(buf, len, n), op.offset).map_err(Into::into),
        OpKind::ReadvCur(n) => rustix::io::readv(file, &mut slices_mut(buf, len, n)).map_err(Into::into),
        OpKind::Writev(n) => {
            let slices: Vec<IoSlice> = pieces(len, n).map(|r| IoSlice::new(&buf[r])).collect();
            rustix::io::pwritev(file, &slices, op.offset).map_err(Into::into)
        }
        OpKind::WritevCur(n) => {
            let slices: Vec<IoSlice> = pieces(len, n).map(|r| IoSlice::new(&buf[r])).collect();
            rustix::io::writev(file, &slices).map_err(Into::into)
        }
        OpKind::Seek(w) => rustix::fs::seek(file, w.seek_from(op.offset)).map(|p| p as usize).map_err(Into::into),
        OpKind::Fsync => file.sync_all().map(|_| 0),
        OpKind::Fdatasync => file.sync_data().map(|_| 0),
        OpKind::SyncRange { flags, len } => sync_file_range(file, op.offset, len, flags),
        OpKind::Ftruncate => rustix::fs::ftruncate(file, op.offset).map(|_| 0).map_err(Into::into),
        OpKind::Trim => crate::purge::discard(file, op.offset, op.len as u64, false).map(|_| op.len as usize),
        OpKind::Fallocate { mode, len } => {
            rustix::fs::fallocate(file, rustix::fs::FallocateFlags::from_bits_retain(mode), op.offset, len)
                .map(|_| 0)
                .map_err(Into::into)
        }
    }
}

/// The answer to an operation on an index with no file: EBADF, as the kernel gives for a
/// closed descriptor.
pub(crate) fn no_file() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EBADF)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_cover_the_buffer() {
        let v: Vec<_> = super::pieces(10, 3).collect();
        assert_eq!(v, vec![0..3, 3..6, 6..10]);
        assert_eq!(super::pieces(4, 0).collect::<Vec<_>>(), vec![0..4]);
        assert_eq!(super::pieces(2, 5).count(), 2);
    }
}
