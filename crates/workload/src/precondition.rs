//! `iolab precondition` (issue 29): SNIA PTS's purge and workload-independent preconditioning
//! of a target before a qualification run. The purge discards the whole target where it can
//! (BLKDISCARD or BLKSECDISCARD on a block device, `fallocate(PUNCH_HOLE)` on a file) and says
//! what it did or why it did nothing; the fill then writes the target's capacity `passes` times
//! (PTS: twice) in 128 KiB sequential writes, O_DIRECT where the target takes it, reporting its
//! progress as it goes. A block device is written only when named with `device` and when the
//! kernel grants it exclusively (not mounted, no partition of it mounted, no holder); a file
//! only when iolab made it, or with `overwrite`.

use iolab_engine::purge;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How to purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Purge {
    /// Discard on a device, punch a hole in a file.
    #[default]
    Auto,
    /// BLKDISCARD (a device only).
    Discard,
    /// BLKSECDISCARD (a device only).
    Secure,
    /// fallocate PUNCH_HOLE (a file only).
    Punch,
    /// No purge.
    None,
}

impl std::str::FromStr for Purge {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Purge::Auto),
            "discard" => Ok(Purge::Discard),
            "secure" => Ok(Purge::Secure),
            "punch" => Ok(Purge::Punch),
            "none" => Ok(Purge::None),
            other => Err(format!(
                "`{other}` is not a purge; accepted: auto (discard a device, punch a file), discard, secure, punch, none"
            )),
        }
    }
}

/// What to precondition.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: PathBuf,
    /// The target may be a block device (its data is destroyed).
    pub device: bool,
    /// A file's size (created when missing; an existing file keeps its own).
    pub size: Option<u64>,
    /// Write into an existing file iolab did not create.
    pub overwrite: bool,
    pub purge: Purge,
    /// Times the capacity is written (PTS: 2; 0: purge only).
    pub passes: u32,
    /// The fill's write size (PTS: 128 KiB).
    pub bs: u64,
}

/// How far the fill got.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    pub elapsed: Duration,
}

impl Progress {
    /// Bytes per second so far.
    pub fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.done as f64 / s
        } else {
            0.0
        }
    }
    /// The time left at the rate so far (None before anything was written).
    pub fn eta(&self) -> Option<Duration> {
        let r = self.rate();
        (r > 0.0).then(|| Duration::from_secs_f64(self.total.saturating_sub(self.done) as f64 / r))
    }
}

/// What was done.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub target: PathBuf,
    /// `block device` or `file`.
    pub kind: &'static str,
    pub capacity_bytes: u64,
    /// `discard`, `secure discard`, `punch hole` or `none`.
    pub purge: String,
    /// Why the purge did what it did, in words.
    pub purge_said: String,
    pub purge_s: f64,
    pub passes: u32,
    pub bs: u64,
    pub direct: bool,
    pub bytes_written: u64,
    pub fill_s: f64,
    /// Stopped before the fill ended.
    pub interrupted: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PreconditionError {
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

fn refused(path: &Path, why: impl Into<String>) -> PreconditionError {
    PreconditionError::Refused { path: path.to_path_buf(), why: why.into() }
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PreconditionError {
    let path = path.to_path_buf();
    move |source| PreconditionError::Io { what, path, source }
}

/// The target opened for the fill: the file, whether it is a device, its capacity, O_DIRECT.
struct Opened {
    file: File,
    device: bool,
    capacity: u64,
    direct: bool,
}

fn open(req: &Request) -> Result<Opened, PreconditionError> {
    let path = &req.target;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(refused(path, "it is a symbolic link; name the device or file itself"))
        }
        Ok(m) if m.file_type().is_block_device() => {
            if !req.device {
                return Err(refused(
                    path,
                    "it is a block device and preconditioning destroys everything on it; pass --device if you mean to",
                ));
            }
            use std::os::unix::fs::MetadataExt;
            if let Some(why) = crate::device::in_use(m.rdev()) {
                return Err(refused(path, why));
            }
            let (file, direct) = match purge::open_exclusive(path, true) {
                Ok(f) => (f, true),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    (purge::open_exclusive(path, false).map_err(io("opening", path))?, false)
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    return Err(refused(path, "the kernel says it is in use (mounted, a partition of it mounted, swap or held by another driver); iolab never writes a device in use"))
                }
                Err(e) => return Err(io("opening", path)(e)),
            };
            let capacity = (&file).seek(SeekFrom::End(0)).map_err(io("sizing", path))?;
            Ok(Opened { file, device: true, capacity, direct })
        }
        Ok(m) if m.file_type().is_file() => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let name = path.file_name().map(Path::new).ok_or_else(|| refused(path, "no file name"))?;
            let b = iolab_engine::beneath::Beneath::open(dir).map_err(io("opening the directory of", path))?;
            let owned = matches!(crate::owned::found(&b, name), Ok(crate::owned::Found::Owned(_)));
            if !owned && !req.overwrite {
                return Err(refused(path, "iolab did not create this file and preconditioning overwrites all of it; pass --overwrite if you mean to"));
            }
            open_file(path, m.len(), req)
        }
        Ok(_) => Err(refused(path, "it is neither a regular file nor a block device")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let size = req.size.ok_or_else(|| refused(path, "it does not exist; add --size to create it"))?;
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let name = path.file_name().map(Path::new).ok_or_else(|| refused(path, "no file name"))?;
            let b = iolab_engine::beneath::Beneath::open(dir).map_err(io("opening the directory of", path))?;
            let f = crate::owned::create_file(&b, name).map_err(io("creating", path))?;
            f.set_len(size).map_err(io("sizing", path))?;
            open_file(path, size, req)
        }
        Err(e) => Err(io("reading", path)(e)),
    }
}

fn open_file(path: &Path, len: u64, req: &Request) -> Result<Opened, PreconditionError> {
    let capacity = req.size.filter(|_| len == 0).unwrap_or(len);
    if capacity == 0 {
        return Err(refused(path, "the file is empty; add --size"));
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // O_DIRECT takes whole 4 KiB blocks: a file of another size is filled through the cache.
    let direct = capacity.is_multiple_of(4096) && iolab_engine::open::direct_supported(dir);
    let o = iolab_engine::OpenOptions { read: true, write: true, direct, ..Default::default() };
    let file = iolab_engine::open_target(path, o).map_err(io("opening", path))?;
    if len < capacity {
        file.set_len(capacity).map_err(io("sizing", path))?;
    }
    Ok(Opened { file, device: false, capacity, direct })
}

/// Purge, then fill. `progress` is called about once a second during the fill; `stop` ends the
/// fill early (the outcome says so).
pub fn precondition(
    req: &Request,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome, PreconditionError> {
    let path = &req.target;
    if req.bs == 0 || !req.bs.is_multiple_of(4096) {
        return Err(refused(path, format!("a fill write of {} bytes; it must be a multiple of 4 KiB", req.bs)));
    }
    let t = open(req)?;
    let started = Instant::now();
    let (purge, said) = run_purge(req, &t)?;
    let purge_s = started.elapsed().as_secs_f64();

    // The fill: `passes` sequential passes of `bs` writes, each block's first 8 bytes its
    // offset and pass (so no two blocks are alike for a deduplicating target).
    let total = t.capacity.saturating_mul(req.passes as u64);
    let mut pool = iolab_engine::BufferPool::try_new(1, req.bs as usize)
        .map_err(|_| refused(path, "no memory for the fill's buffer"))?;
    let buf = pool.slot_mut(0);
    iolab_engine::fill_pattern(buf, 0x5EED_F111, 0);
    let fill0 = Instant::now();
    let mut last = fill0;
    let mut done = 0u64;
    let mut interrupted = false;
    'passes: for pass in 0..req.passes {
        let mut off = 0u64;
        while off < t.capacity {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break 'passes;
            }
            let len = req.bs.min(t.capacity - off) as usize;
            buf[..8].copy_from_slice(&(off ^ ((pass as u64) << 56)).to_le_bytes());
            // A short tail stays aligned under O_DIRECT: a device's capacity is a multiple of
            // its block size, and a file not of whole 4 KiB blocks is written through the cache.
            t.file.write_all_at(&buf[..len], off).map_err(io("writing", path))?;
            off += len as u64;
            done += len as u64;
            if last.elapsed() >= Duration::from_secs(1) {
                last = Instant::now();
                progress(Progress { done, total, elapsed: fill0.elapsed() });
            }
        }
        t.file.sync_data().map_err(io("flushing", path))?;
    }
    progress(Progress { done, total, elapsed: fill0.elapsed() });
    Ok(Outcome {
        target: path.clone(),
        kind: if t.device { "block device" } else { "file" },
        capacity_bytes: t.capacity,
        purge,
        purge_said: said,
        purge_s,
        passes: req.passes,
        bs: req.bs,
        direct: t.direct,
        bytes_written: done,
        fill_s: fill0.elapsed().as_secs_f64(),
        interrupted,
    })
}

/// The purge asked for, on this target: what was done, and the words for it.
fn run_purge(req: &Request, t: &Opened) -> Result<(String, String), PreconditionError> {
    let path = &req.target;
    let (kind, secure) = match (req.purge, t.device) {
        (Purge::None, _) => return Ok(("none".into(), "no purge, as asked (--purge none)".into())),
        (Purge::Auto | Purge::Discard, true) => ("discard", false),
        (Purge::Secure, true) => ("secure discard", true),
        (Purge::Auto | Purge::Punch, false) => ("punch hole", false),
        (Purge::Punch, true) => {
            return Err(refused(path, "--purge punch is for files; a device takes discard or secure"))
        }
        (Purge::Discard | Purge::Secure, false) => {
            return Err(refused(path, "--purge discard and secure are for block devices; a file takes punch"))
        }
    };
    let r = if t.device {
        purge::discard(&t.file, 0, t.capacity, secure)
    } else {
        purge::punch_hole(&t.file, 0, t.capacity)
    };
    match r {
        Ok(()) => Ok((kind.into(), format!("{kind} of all {} bytes", t.capacity))),
        Err(e)
            if req.purge == Purge::Auto
                && matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::ENOTTY | libc::EINVAL)) =>
        {
            Ok(("none".into(), format!("none: the target refused {kind} ({e}); filled without a purge")))
        }
        Err(e) => Err(io(if t.device { "discarding" } else { "punching a hole in" }, path)(e)),
    }
}
