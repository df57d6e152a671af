//! Targets and their safety: which files a job uses, whether iolab may write them, whether
//! they fit, and laying them out before the measured window. iolab marks every file it
//! creates (an xattr, or a manifest where xattrs are unsupported) and writes only to marked
//! files unless told otherwise; refusals happen before any byte is written. A file a job reads
//! is looked at for holes and unwritten extents ([`iolab_engine::extents`]): where iolab may
//! write it, they are filled as fio lays out a file; where it may not (or `--keep-holes`),
//! they are kept, and the reads that fall in them are counted.

use iolab_engine::fill_pattern;
use iolab_spec::Job;
use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) const XATTR: &str = "user.iolab";
pub(crate) const MANIFEST: &str = ".iolab-owned";
const LAYOUT_CHUNK: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("refusing {path}: {why}")]
    Refused { path: PathBuf, why: String },
    /// A source's own refusal of its target (a replay's trace expects another).
    #[error("refusing {}: {source}", path.display())]
    Source { path: PathBuf, source: crate::error::SourceError },
    #[error("not enough free space in {dir}: laying out needs {need} bytes, {free} are free; use a smaller --size or another directory")]
    NoSpace { dir: PathBuf, need: u64, free: u64 },
    #[error("{what} {path}: {source}")]
    Io { what: &'static str, path: PathBuf, source: io::Error },
    #[error("interrupted while laying out {path}: {done} of {size} bytes written; {fate}")]
    Interrupted { path: PathBuf, done: u64, size: u64, fate: String },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> LayoutError + 'a {
    move |source| LayoutError::Io { what, path: path.to_path_buf(), source }
}

/// What kind of thing a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    File,
    Device,
}

/// One file (or device) a job will use, checked and sized.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes of the file the job uses.
    pub size: u64,
    /// Bytes the file has now (0 when it will be created).
    pub existing: u64,
    /// Whether the file exists before this run.
    pub exists: bool,
    /// Bytes to write before the measured window so reads find data.
    pub layout: bool,
    /// The ranges of the job's region that hold no data (holes, unwritten extents), as file
    /// offsets, sorted: filled by the layout when `fill_holes`, else kept (reads in them are
    /// counted).
    pub empty: Vec<(u64, u64)>,
    /// Whether the layout fills `empty` (a file iolab may write, holes not kept on purpose).
    pub fill_holes: bool,
}

impl Target {
    /// The holes kept in the job's region (none when the layout fills them).
    pub fn kept_holes(&self) -> &[(u64, u64)] {
        if self.fill_holes {
            &[]
        } else {
            &self.empty
        }
    }
    /// Bytes of `empty`.
    pub fn empty_bytes(&self) -> u64 {
        self.empty.iter().map(|(a, b)| b - a).sum()
    }
}

/// The files of one job: one per thread for a directory target, else the one target shared.
pub fn job_paths(job: &Job) -> Vec<PathBuf> {
    if job.target.is_dir() {
        (0..job.threads).map(|t| job.target.join(format!("iolab.{}.{t}", job.name))).collect()
    } else {
        vec![job.target.clone()]
    }
}

/// Check a job's targets without writing anything: existence, ownership, devices, sizes.
pub fn check_job(job: &Job) -> Result<Vec<Target>, LayoutError> {
    check_job_in_run(job, None)
}

/// [`check_job`] within a run that marks what it creates with `run` (a scenario's steps on
/// several nodes): a file this run created counts as iolab's even where another node cannot
/// see the file's own mark (see [`RunMark`]).
pub fn check_job_in_run(job: &Job, run: Option<&RunMark>) -> Result<Vec<Target>, LayoutError> {
    if job.workload.makes_own_files() {
        return check_own_dirs(job);
    }
    let mut out = Vec::new();
    for path in job_paths(job) {
        out.push(check_target(job, &path, run)?);
    }
    Ok(out)
}

/// One run's own mark, for runs of several steps on several nodes. A file is marked as iolab's
/// by an xattr or by a line of the `.iolab-owned` manifest naming its inode, and another node
/// reaching the same directory through its own mount of a network filesystem may see neither
/// (no user xattrs over sshfs, other inode numbers). So each file a run creates also gets a
/// manifest line `run:MARK NAME` in its directory: a later step of the same run, on any node
/// that sees that directory, may write the file again; nothing else is vouched for (another
/// node's directory of the same relative name has no such line). The mark is 128 random bits,
/// made once per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMark(String);

impl RunMark {
    /// A fresh mark.
    pub fn new() -> RunMark {
        RunMark(format!("{:032x}", rand::random::<u128>()))
    }
    /// A mark as sent by a coordinator: 32 lowercase hex digits.
    pub fn parse(s: &str) -> Option<RunMark> {
        (s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| RunMark(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    fn line(&self, name: &str) -> String {
        format!("run:{} {name}", self.0)
    }
}

impl Default for RunMark {
    fn default() -> Self {
        RunMark::new()
    }
}

/// Whether this run created the file (its `run:MARK NAME` line is in the directory's manifest).
pub fn made_by_run(path: &Path, run: &RunMark) -> bool {
    let Some(name) = file_name(path) else { return false };
    let want = run.line(name);
    fs::read_to_string(manifest_path(path)).is_ok_and(|t| t.lines().any(|l| l == want))
}

/// A personality (PostMark, ...) works in directories of its own ([`Job::own_dirs`]:
/// `iolab.<job>.<thread>`, or `iolab.<job>` that its threads share) that it creates under the
/// target directory and removes at its end; it creates every file in them with O_EXCL, so
/// nothing it writes, renames or deletes can be a file it did not create. Here: the target
/// must be a directory and those names must be free (a directory of that name with a user's
/// file in it is refused before anything is written).
fn check_own_dirs(job: &Job) -> Result<Vec<Target>, LayoutError> {
    match fs::symlink_metadata(&job.target) {
        Ok(m) if m.is_dir() => {}
        // A missing directory is created (and marked) before the phase, as a block job's file
        // is; its parent must exist, as a block job's file's directory must.
        Err(e) if e.kind() == io::ErrorKind::NotFound => check_parent(&job.target)?,
        _ => {
            return Err(refuse(
                &job.target,
                format!(
                    "workload `{}` needs a directory to work in; give --target a directory (a missing one is created)",
                    job.workload.label()
                ),
            ))
        }
    }
    // What the big files will take, so a run that cannot fit is refused before it starts
    // (bonnie++'s file, twice the RAM by default; the redo log's files).
    let space = job.workload.space();
    job.own_dirs()
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let path = job.target.join(d);
            if path.symlink_metadata().is_ok() {
                return Err(refuse(&path, "it exists already (left by an interrupted run?); this workload works only in a directory it creates: remove it or choose another job name".into()));
            }
            // `exists`: nothing for the layout step to create; the source makes the directory.
            let size = if i == 0 { space } else { 0 };
            Ok(Target {
                path,
                kind: TargetKind::File,
                size,
                existing: 0,
                exists: true,
                layout: false,
                empty: Vec::new(),
                fill_holes: false,
            })
        })
        .collect()
}

/// A path to create: its directory must exist.
fn check_parent(path: &Path) -> Result<(), LayoutError> {
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(refuse(path, format!("its directory {} does not exist; create it first", parent.display())));
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The nearest directory at or above `dir` that exists: where a file in a directory still to
/// be made will land.
fn nearest_existing(dir: &Path) -> PathBuf {
    dir.ancestors().find(|a| a.is_dir()).unwrap_or(Path::new(".")).to_path_buf()
}

/// Create a missing directory to work in (its parent must exist) and mark it as iolab's, as a
/// block job's missing file is created and marked; noted as the run's with `run`. `Ok(false)`
/// when it was there already.
pub fn create_dir_in_run(path: &Path, run: Option<&RunMark>) -> Result<bool, LayoutError> {
    if path.is_dir() {
        return Ok(false);
    }
    check_parent(path)?;
    fs::create_dir(path).map_err(io_err("creating the directory", path))?;
    let d = File::open(path).map_err(io_err("opening the directory", path))?;
    mark_owned(path, &d).map_err(io_err("marking as iolab's", path))?;
    if let Some(run) = run {
        note_run(path, run)?;
    }
    Ok(true)
}

/// Remove a directory iolab created, if it is empty; returns whether it was removed.
pub fn remove_owned_dir(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_dir() => {}
        _ => return Ok(false),
    }
    if !is_owned(path)? {
        return Ok(false);
    }
    let lines = manifest_lines(path);
    match fs::remove_dir(path) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => return Ok(false),
        Err(e) => return Err(e),
    }
    forget_in_manifest(path, lines)?;
    Ok(true)
}

fn refuse(path: &Path, why: String) -> LayoutError {
    LayoutError::Refused { path: path.to_path_buf(), why }
}

fn check_target(job: &Job, path: &Path, run: Option<&RunMark>) -> Result<Target, LayoutError> {
    let needs_data = job.workload.needs_data() || job.engine.caps().maps_files();
    // The job's region starts `off` bytes in: the file must reach offset + size.
    let off = job.workload.block().map_or(0, |b| b.offset());
    let past_offset = |size: u64| -> Result<u64, LayoutError> {
        if off >= size {
            Err(refuse(
                path,
                format!("the offset {off} is at or past its end ({size} bytes); use a smaller --offset or give --size"),
            ))
        } else {
            Ok(size)
        }
    };
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let size = job.size.map(|s| s.0.saturating_add(off)).ok_or_else(|| {
                refuse(path, "it does not exist and no size was given; add --size (for example --size 1G)".into())
            })?;
            check_parent(path)?;
            Ok(Target {
                path: path.to_path_buf(),
                kind: TargetKind::File,
                size,
                existing: 0,
                exists: false,
                layout: needs_data,
                empty: Vec::new(),
                fill_holes: false,
            })
        }
        Err(e) => Err(io_err("reading metadata of", path)(e)),
        Ok(meta) => {
            let ft = meta.file_type();
            if ft.is_block_device() || ft.is_char_device() {
                if !job.device {
                    return Err(refuse(path, format!(
                        "it is a {} device and iolab may destroy what is on it; pass --device if you mean to test the device itself",
                        if ft.is_block_device() { "block" } else { "character" }
                    )));
                }
                let dev_len = if ft.is_block_device() {
                    File::open(path).and_then(|mut f| f.seek(SeekFrom::End(0))).map_err(io_err("sizing", path))?
                } else {
                    0
                };
                let size = match (job.size, dev_len) {
                    (Some(s), 0) => s.0.saturating_add(off),
                    (Some(s), n) => s.0.saturating_add(off).min(n),
                    (None, 0) => return Err(refuse(path, "a character device has no size; add --size".into())),
                    (None, n) => n,
                };
                return Ok(Target {
                    path: path.to_path_buf(),
                    kind: TargetKind::Device,
                    size: past_offset(size)?,
                    existing: dev_len,
                    exists: true,
                    layout: false,
                    empty: Vec::new(),
                    fill_holes: false,
                });
            }
            if ft.is_dir() {
                return Err(refuse(path, "it is a directory".into()));
            }
            if !ft.is_file() {
                return Err(refuse(path, "it is neither a regular file, a directory nor a device".into()));
            }
            let existing = meta.len();
            let size = job.size.map(|s| s.0.saturating_add(off)).unwrap_or(existing);
            if size == 0 {
                return Err(refuse(path, "it is empty and no size was given; add --size".into()));
            }
            let size = past_offset(size)?;
            let grows = size > existing;
            let writes = job.workload.writes() || (needs_data && grows);
            let may_write = || -> Result<bool, LayoutError> {
                Ok(job.overwrite
                    || run.is_some_and(|r| made_by_run(path, r))
                    || is_owned(path).map_err(io_err("checking the iolab mark of", path))?)
            };
            if writes && !may_write()? {
                return Err(refuse(path, format!(
                    "it exists and iolab did not create it, so iolab will not {} it; pass --overwrite to allow that, or choose a new path",
                    if job.workload.writes() { "write to" } else { "extend" }
                )));
            }
            // What the job will read that holds no data (the part the layout writes anyway
            // aside): filled where iolab may write, unless kept on purpose.
            let empty = if needs_data && off < existing.min(size) {
                let f = File::open(path).map_err(io_err("opening to map the data of", path))?;
                iolab_engine::extents::empty_ranges(&f, off, existing.min(size))
                    .map_err(io_err("mapping the holes of", path))?
            } else {
                Vec::new()
            };
            let keep = job.workload.block().is_some_and(|b| b.keep_holes);
            let fill_holes = !empty.is_empty() && !keep && may_write()?;
            Ok(Target {
                path: path.to_path_buf(),
                kind: TargetKind::File,
                size,
                existing,
                exists: true,
                layout: needs_data && (grows || fill_holes),
                empty,
                fill_holes,
            })
        }
    }
}

/// Is this file marked as created by iolab?
pub fn is_owned(path: &Path) -> io::Result<bool> {
    match rustix::fs::getxattr(path, XATTR, &mut [0u8; 8][..]) {
        Ok(_) => return Ok(true),
        Err(e) if e == rustix::io::Errno::NODATA => {}
        Err(_) => {} // xattrs unsupported here: fall back to the manifest
    }
    let meta = fs::metadata(path)?;
    Ok(manifest_entries(path).iter().any(|(ino, name)| *ino == meta.ino() && Some(name.as_str()) == file_name(path)))
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

fn manifest_path(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join(MANIFEST)
}

fn manifest_entries(path: &Path) -> Vec<(u64, String)> {
    let Ok(text) = fs::read_to_string(manifest_path(path)) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let (ino, name) = l.split_once(' ')?;
            Some((ino.parse().ok()?, name.to_string()))
        })
        .collect()
}

/// Mark a file iolab just created.
fn mark_owned(path: &Path, file: &File) -> io::Result<()> {
    if rustix::fs::fsetxattr(file, XATTR, b"1", rustix::fs::XattrFlags::empty()).is_ok() {
        return Ok(());
    }
    let ino = file.metadata()?.ino();
    let name = file_name(path).ok_or_else(|| io::Error::other("file name is not UTF-8"))?;
    let mut m = fs::OpenOptions::new().create(true).append(true).open(manifest_path(path))?;
    writeln!(m, "{ino} {name}")
}

/// Create (never truncate) a missing target and mark it as iolab's.
pub fn create_target(t: &Target) -> Result<(), LayoutError> {
    create_target_in_run(t, None)
}

/// [`create_target`], noting the file as created by `run` too (see [`RunMark`]).
pub fn create_target_in_run(t: &Target, run: Option<&RunMark>) -> Result<(), LayoutError> {
    if t.exists {
        return Ok(());
    }
    let f = fs::OpenOptions::new().write(true).create_new(true).open(&t.path).map_err(io_err("creating", &t.path))?;
    mark_owned(&t.path, &f).map_err(io_err("marking as iolab's", &t.path))?;
    if let Some(run) = run {
        note_run(&t.path, run)?;
    }
    Ok(())
}

/// Note `path` as created by `run` in its directory's manifest.
fn note_run(path: &Path, run: &RunMark) -> Result<(), LayoutError> {
    let Some(name) = file_name(path) else { return Ok(()) };
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(manifest_path(path))
        .and_then(|mut m| writeln!(m, "{}", run.line(name)))
        .map_err(io_err("noting the run's file in the manifest beside", path))
}

/// Free bytes for unprivileged writers on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
    };
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Refuse before writing if the new bytes of these targets do not fit (with 1% to spare).
pub fn check_space(targets: &[&Target], writes_growth: bool) -> Result<(), LayoutError> {
    let mut by_dev: std::collections::HashMap<u64, (PathBuf, u64)> = Default::default();
    for t in targets.iter().filter(|t| t.kind == TargetKind::File) {
        let mut grows = if t.layout || writes_growth { t.size.saturating_sub(t.existing) } else { 0 };
        if t.fill_holes {
            grows = grows.saturating_add(t.empty_bytes());
        }
        if grows == 0 {
            continue;
        }
        // A directory still to be made (a personality's): its files land where it will be.
        let dir = nearest_existing(parent_of(&t.path));
        let dev = fs::metadata(&dir).map_err(io_err("reading metadata of", &dir))?.dev();
        by_dev.entry(dev).or_insert((dir, 0)).1 += grows;
    }
    for (_, (dir, need)) in by_dev {
        let free = free_bytes(&dir).map_err(io_err("checking free space in", &dir))?;
        if need.saturating_add(need / 100) > free {
            return Err(LayoutError::NoSpace { dir, need, free });
        }
    }
    Ok(())
}

/// What a layout wrote: bytes in all, and of them the bytes written into holes and unwritten
/// extents inside the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaidOut {
    pub bytes: u64,
    pub holes_filled: u64,
}

/// Write the target's missing bytes with seeded data, then flush them, so reads in the
/// measured window find real blocks and the layout's writeback does not leak into it: past
/// its end, and (with `fill_holes`) in its holes and unwritten extents. `progress(done, total)`
/// is told after each chunk.
pub fn lay_out(
    t: &Target,
    seed: u64,
    compressibility: u8,
    stop: &AtomicBool,
    created_now: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<LaidOut, LayoutError> {
    let f = fs::OpenOptions::new().write(true).open(&t.path).map_err(io_err("opening for layout", &t.path))?;
    let mut buf = vec![0u8; LAYOUT_CHUNK];
    fill_pattern(&mut buf, seed, compressibility);
    let mut ranges: Vec<(u64, u64)> = if t.fill_holes { t.empty.clone() } else { Vec::new() };
    let holes: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    if t.size > t.existing {
        ranges.push((t.existing, t.size));
    }
    let total: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    let mut done = 0u64;
    for (start, end) in ranges {
        let mut pos = start;
        while pos < end {
            if stop.load(Ordering::Relaxed) {
                let fate = if created_now {
                    drop(f);
                    let _ = remove_owned(&t.path);
                    "the partial file, created by this run, was removed".to_string()
                } else {
                    "the file is kept as it is; the next run completes its layout".to_string()
                };
                return Err(LayoutError::Interrupted { path: t.path.clone(), done, size: total, fate });
            }
            let n = ((end - pos) as usize).min(LAYOUT_CHUNK);
            buf[..8].copy_from_slice(&pos.to_le_bytes());
            f.write_all_at(&buf[..n], pos).map_err(io_err("laying out", &t.path))?;
            pos += n as u64;
            done += n as u64;
            progress(done, total);
        }
    }
    f.sync_all().map_err(io_err("flushing the layout of", &t.path))?;
    Ok(LaidOut { bytes: total, holes_filled: holes })
}

/// Drop the target's pages from the page cache, as fio's `invalidate=1` does before a job: its
/// dirty pages written back first (they cannot be dropped otherwise), then posix_fadvise
/// DONTNEED over the whole file or device. Reads that follow come from the storage. On tmpfs,
/// whose pages are the storage, nothing is dropped.
pub fn drop_cached(t: &Target) -> Result<(), LayoutError> {
    let f = fs::File::open(&t.path).map_err(io_err("opening to drop its cached pages", &t.path))?;
    f.sync_data().map_err(io_err("writing back before dropping the cached pages of", &t.path))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| io_err("dropping the cached pages of", &t.path)(io::Error::from(e)))
}

/// Remove a file only if iolab created it; returns whether it was removed.
pub fn remove_owned(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => {}
        _ => return Ok(false),
    }
    if !is_owned(path)? {
        return Ok(false);
    }
    let lines = manifest_lines(path);
    fs::remove_file(path)?;
    forget_in_manifest(path, lines)?;
    Ok(true)
}

/// The lines of the manifest beside `path`.
fn manifest_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(manifest_path(path)).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// After `path` was removed: every manifest line naming it goes (its inode's and any run's);
/// the others stay (the manifest goes when none is left).
fn forget_in_manifest(path: &Path, lines: Vec<String>) -> io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let keep: Vec<String> = lines
        .iter()
        .filter(|l| l.split_once(' ').map(|(_, n)| Some(n)) != Some(file_name(path)))
        .map(|l| format!("{l}\n"))
        .collect();
    let mp = manifest_path(path);
    if keep.is_empty() {
        fs::remove_file(&mp)
    } else {
        fs::write(&mp, keep.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{Bytes, JobPatch, Rw};

    fn job(target: &Path, rw: Rw) -> Job {
        JobPatch { target: Some(target.into()), rw: Some(rw), size: Some(Bytes::kib(64)), ..Default::default() }
            .resolve("j")
            .unwrap()
    }

    #[test]
    fn foreign_file_is_refused_for_writes_but_readable() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("precious");
        fs::write(&p, vec![7u8; 65536]).unwrap();
        let e = check_job(&job(&p, Rw::Write)).unwrap_err().to_string();
        assert!(e.contains("did not create it") && e.contains("--overwrite"), "{e}");
        assert!(check_job(&job(&p, Rw::Read)).is_ok());
        let mut j = job(&p, Rw::Write);
        j.overwrite = true;
        assert!(check_job(&j).is_ok());
    }

    #[test]
    fn created_files_are_marked_and_removable() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("mine");
        let t = check_job(&job(&p, Rw::Read)).unwrap().remove(0);
        assert!(t.layout && !t.exists);
        create_target(&t).unwrap();
        assert!(is_owned(&p).unwrap());
        lay_out(&t, 1, 0, &AtomicBool::new(false), true, &mut |_, _| {}).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 65536);
        let again = check_job(&job(&p, Rw::Write)).unwrap();
        assert!(again[0].exists && !again[0].layout);
        assert!(remove_owned(&p).unwrap());
        assert!(!p.exists());
        let foreign = d.path().join("foreign");
        fs::write(&foreign, b"x").unwrap();
        assert!(!remove_owned(&foreign).unwrap());
        assert!(foreign.exists());
    }

    #[test]
    fn a_runs_own_files_are_its_own_on_another_view_and_nothing_else_is() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let run = RunMark::new();
        let t = check_job_in_run(&job(&a.join("f"), Rw::Write), Some(&run)).unwrap().remove(0);
        create_target_in_run(&t, Some(&run)).unwrap();
        // As another node sees it over its own mount: no xattr, another inode number.
        let _ = rustix::fs::removexattr(&t.path, XATTR);
        fs::write(a.join(MANIFEST), format!("999999999 f\n{}\n", run.line("f"))).unwrap();
        assert!(!is_owned(&t.path).unwrap());
        assert!(check_job(&job(&t.path, Rw::Write)).is_err(), "not iolab's outside the run");
        assert!(check_job_in_run(&job(&t.path, Rw::Write), Some(&run)).is_ok(), "the run's own file");
        assert!(check_job_in_run(&job(&t.path, Rw::Write), Some(&RunMark::new())).is_err(), "another run's");
        // The same name in another directory is another file: not vouched for.
        fs::write(b.join("f"), b"someone's").unwrap();
        assert!(check_job_in_run(&job(&b.join("f"), Rw::Write), Some(&run)).is_err());
        assert_eq!(RunMark::parse(run.as_str()), Some(run.clone()));
        for bad in ["", "xyz", "../../etc", &"A".repeat(32)] {
            assert!(RunMark::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_missing_directory_is_made_marked_and_removed_only_when_empty() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("work");
        assert!(create_dir_in_run(&p, None).unwrap());
        assert!(p.is_dir() && is_owned(&p).unwrap());
        assert!(!create_dir_in_run(&p, None).unwrap(), "there already");
        std::fs::write(p.join("theirs"), b"x").unwrap();
        assert!(!remove_owned_dir(&p).unwrap(), "not while something is in it");
        std::fs::remove_file(p.join("theirs")).unwrap();
        assert!(remove_owned_dir(&p).unwrap() && !p.exists());
        let foreign = d.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        assert!(!remove_owned_dir(&foreign).unwrap() && foreign.exists(), "a user's directory stays");
        let e = create_dir_in_run(&d.path().join("no/such"), None).unwrap_err().to_string();
        assert!(e.contains("does not exist; create it first"), "{e}");
        // A personality's missing target is checked without being made; it is made by the run.
        let job = JobPatch {
            target: Some(d.path().join("pm")),
            workload: Some(iolab_spec::WorkloadKind::Postmark),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        let ts = check_job(&job).unwrap();
        assert_eq!(ts[0].path, d.path().join("pm/iolab.j.0"));
        assert!(!d.path().join("pm").exists());
    }

    #[test]
    fn interrupted_layout_removes_what_it_created() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("half");
        let t = check_job(&job(&p, Rw::Read)).unwrap().remove(0);
        create_target(&t).unwrap();
        let e = lay_out(&t, 1, 0, &AtomicBool::new(true), true, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("removed"), "{e}");
        assert!(!p.exists());
    }

    #[test]
    fn missing_size_and_directory() {
        let d = tempfile::tempdir().unwrap();
        let mut j = job(&d.path().join("nosize"), Rw::Read);
        j.size = None;
        assert!(check_job(&j).unwrap_err().to_string().contains("--size"));
        let j = job(&d.path().join("no/such/dir/f"), Rw::Write);
        assert!(check_job(&j).unwrap_err().to_string().contains("does not exist"));
    }

    #[test]
    fn devices_need_the_flag() {
        let j = job(Path::new("/dev/null"), Rw::Write);
        assert!(check_job(&j).unwrap_err().to_string().contains("--device"));
        let mut j = job(Path::new("/dev/null"), Rw::Write);
        j.device = true;
        assert_eq!(check_job(&j).unwrap()[0].kind, TargetKind::Device);
    }

    #[test]
    fn space_check_refuses_the_impossible() {
        let d = tempfile::tempdir().unwrap();
        let mut j = job(&d.path().join("huge"), Rw::Read);
        j.size = Some(Bytes(1 << 60));
        let t = check_job(&j).unwrap();
        let e = check_space(&t.iter().collect::<Vec<_>>(), true).unwrap_err().to_string();
        assert!(e.contains("not enough free space"), "{e}");
    }
}
