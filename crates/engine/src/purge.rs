//! Purging a target before preconditioning (issue 29, SNIA PTS's purge): on a block device the
//! kernel's discard ioctls (BLKDISCARD, or BLKSECDISCARD for a secure erase of the range), on a
//! file `fallocate(PUNCH_HOLE)`; and opening a block device exclusively, which the kernel
//! refuses (EBUSY) while it or one of its partitions is mounted or held by another driver.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// linux/fs.h: `_IO(0x12, 119)`, discard a byte range `[start, len]`.
const BLKDISCARD: u64 = 0x1277;
/// linux/fs.h: `_IO(0x12, 125)`, securely discard a byte range.
const BLKSECDISCARD: u64 = 0x127d;

/// Discard `[offset, offset + len)` of the block device `dev` (`secure`: BLKSECDISCARD). The
/// range must be aligned to the device's logical block size; the kernel says EINVAL otherwise,
/// and EOPNOTSUPP where the device cannot discard.
pub fn discard(dev: &File, offset: u64, len: u64, secure: bool) -> io::Result<()> {
    let range: [u64; 2] = [offset, len];
    let req = if secure { BLKSECDISCARD } else { BLKDISCARD };
    // SAFETY: BLKDISCARD and BLKSECDISCARD read a `uint64_t[2]` (start, length) from the
    // pointer and write nothing; `range` lives on this stack frame for the call's duration and
    // the descriptor is open (borrowed from `dev`).
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), req as _, range.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Punch `[offset, offset + len)` of a regular file out: its blocks freed, reads give zeros.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    rustix::fs::fallocate(
        file,
        rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
        offset,
        len,
    )
    .map_err(io::Error::from)
}

/// Open a block device for writing, exclusively: EBUSY when it, or a partition of it, is
/// mounted, or a device mapper, RAID or swap holds it (the kernel's own claim check).
/// `direct`: O_DIRECT, so the fill goes to the device and not the page cache.
pub fn open_exclusive(path: &Path, direct: bool) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true);
    o.custom_flags(libc::O_EXCL | if direct { libc::O_DIRECT } else { 0 });
    o.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_punched_file_keeps_its_size_and_frees_its_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
        f.write_all(&vec![7u8; 4 << 20]).unwrap();
        f.sync_all().unwrap();
        let before = f.metadata().unwrap().blocks();
        match punch_hole(&f, 0, 4 << 20) {
            Ok(()) => {
                let m = f.metadata().unwrap();
                assert_eq!(m.len(), 4 << 20);
                assert!(m.blocks() < before / 4, "blocks {before} -> {}", m.blocks());
            }
            // A filesystem without hole punching says so; nothing to check then.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}"),
        }
    }

    #[test]
    fn discard_on_a_regular_file_is_refused_by_the_kernel_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        let e = discard(&f, 0, 4096, false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "{e}");
    }
}
