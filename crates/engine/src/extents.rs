//! Where a file holds no data: its holes (lseek's SEEK_DATA and SEEK_HOLE) and its extents
//! allocated but never written (FIEMAP's unwritten flag: what `fallocate` leaves). A read of
//! either returns zeros from the filesystem without touching the device, so a benchmark that
//! reads there measures memory, not storage. The layout fills them in files iolab may write;
//! elsewhere the reads that fall in them are counted.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `FS_IOC_FIEMAP`: `_IOWR('f', 11, struct fiemap)` (linux/fs.h), a 32-byte header.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// The last extent of the file.
const FIEMAP_EXTENT_LAST: u32 = 0x0000_0001;
/// Allocated but not written: reads return zeros.
const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x0000_0800;
/// Extents asked for per call.
const BATCH: usize = 128;

/// `struct fiemap_extent` (linux/fiemap.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` with room for [`BATCH`] extents after it.
#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; BATCH],
}

/// The ranges of `[start, end)` in `file` that hold no data: holes and unwritten extents,
/// sorted, disjoint, merged where they touch. A filesystem that supports neither lseek's
/// SEEK_DATA nor FIEMAP reports none (every byte counts as data).
pub fn empty_ranges(file: &File, start: u64, end: u64) -> io::Result<Vec<(u64, u64)>> {
    if start >= end {
        return Ok(Vec::new());
    }
    let mut out = holes(file, start, end)?;
    out.extend(unwritten(file, start, end)?);
    out.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(out.len());
    for (a, b) in out {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(merged)
}

/// Holes by SEEK_DATA and SEEK_HOLE (the file's position moves; nothing else changes).
fn holes(file: &File, start: u64, end: u64) -> io::Result<Vec<(u64, u64)>> {
    use rustix::fs::{seek, SeekFrom};
    use rustix::io::Errno;
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        let data = match seek(file, SeekFrom::Data(pos)) {
            Ok(d) => d,
            // No data at or after `pos`: the rest is a hole.
            Err(Errno::NXIO) => {
                out.push((pos, end));
                break;
            }
            // SEEK_DATA unsupported here: no holes known.
            Err(Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        if data > pos {
            out.push((pos, data.min(end)));
        }
        if data >= end {
            break;
        }
        pos = match seek(file, SeekFrom::Hole(data)) {
            Ok(h) => h,
            Err(Errno::NXIO) => end,
            Err(e) => return Err(e.into()),
        };
    }
    Ok(out)
}

/// Unwritten extents by FIEMAP, clipped to `[start, end)`; none where FIEMAP is unsupported.
fn unwritten(file: &File, start: u64, end: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut pos = start;
    let mut map = Box::new(Fiemap {
        fm_start: 0,
        fm_length: 0,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: BATCH as u32,
        fm_reserved: 0,
        fm_extents: [FiemapExtent::default(); BATCH],
    });
    while pos < end {
        map.fm_start = pos;
        map.fm_length = end - pos;
        map.fm_flags = 0;
        map.fm_mapped_extents = 0;
        map.fm_extent_count = BATCH as u32;
        // SAFETY: `map` is a live, exclusively borrowed `struct fiemap` (repr(C), laid out as
        // linux/fiemap.h has it) followed by room for `fm_extent_count` extents, which is all
        // the kernel writes; the descriptor is open for the call's duration.
        let r = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *map as *mut Fiemap) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::ENOTTY | libc::EINVAL | libc::ENOSYS | libc::EBADR) => Ok(Vec::new()),
                _ => Err(e),
            };
        }
        let n = (map.fm_mapped_extents as usize).min(BATCH);
        if n == 0 {
            break;
        }
        let mut last = false;
        let mut next = pos;
        for e in &map.fm_extents[..n] {
            let (a, b) = (e.fe_logical, e.fe_logical.saturating_add(e.fe_length));
            if e.fe_flags & FIEMAP_EXTENT_UNWRITTEN != 0 {
                let (a, b) = (a.max(start), b.min(end));
                if a < b {
                    out.push((a, b));
                }
            }
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
            next = next.max(b);
        }
        if last || next <= pos {
            break;
        }
        pos = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn holes_and_unwritten_extents_are_found_and_data_is_not() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = d.path().join("f");
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        let mib = 1u64 << 20;
        f.set_len(8 * mib).unwrap();
        // Data at [1, 2) MiB; the rest a hole.
        f.write_all_at(&vec![7u8; mib as usize], mib).unwrap();
        f.sync_all().unwrap();
        let e = empty_ranges(&f, 0, 8 * mib).unwrap();
        if e.is_empty() {
            eprintln!("this filesystem reports no holes (no SEEK_DATA): nothing to check");
            return;
        }
        assert_eq!(e, vec![(0, mib), (2 * mib, 8 * mib)]);
        assert_eq!(empty_ranges(&f, mib, 2 * mib).unwrap(), vec![], "written data is data");
        // Preallocated, never written: empty too (by SEEK_HOLE or FIEMAP, whichever says it).
        if rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 4 * mib, 2 * mib).is_ok() {
            let e = empty_ranges(&f, 0, 8 * mib).unwrap();
            assert_eq!(e, vec![(0, mib), (2 * mib, 8 * mib)], "unwritten extents count as empty");
            let u = unwritten(&f, 0, 8 * mib).unwrap();
            assert!(
                u.is_empty() || u == vec![(4 * mib, 6 * mib)],
                "FIEMAP (where supported) sees the preallocation: {u:?}"
            );
        }
        assert_eq!(empty_ranges(&f, 5, 5).unwrap(), vec![]);
    }
}
