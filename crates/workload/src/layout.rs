//! Targets and their safety: which files a job uses, whether iolab may write them, whether
//! they fit, and laying them out before the measured window. iolab marks every file it
//! creates (an xattr, or a manifest where xattrs are unsupported) and writes only to marked
//! files unless told otherwise; refusals happen before any byte is written. A file a job reads
//! is looked at for holes and unwritten extents ([`iolab_engine::extents`]): where iolab may
//! write it, they are filled as fio lays out a file; where it may not (or `--keep-holes`),
//! they are kept, and the reads that fall in them are counted.
//!
//! Every target is opened once: its directory through [`crate::place::Roots`] (as named in a
//! local run, beneath `--allow` on an agent), then the target in it ([`Spot`]); what follows —
//! its type and size, its ownership mark, its creation, its layout, the workers' opens, its
//! validation, its removal — goes through those descriptors, never through its name again, so a
//! link, a directory or a hard link swapped in meanwhile changes nothing iolab does.

use crate::lease::Lease;
use crate::place::{self, Place};
use iolab_engine::beneath::{reopen, Beneath};
use iolab_engine::{fill_pattern, OpenOptions};
use iolab_spec::prealloc::Prealloc;
use iolab_spec::{Bytes, Job};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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
    /// The filesystem filled up while laying out a file this run created: the partial file is
    /// named with the way to remove it.
    #[error("laying out {path}: {source}; {done} of {size} bytes were written. The partial file, created by this run, is left: remove it with `rm {path}` (or run again with less --size)")]
    Full { path: PathBuf, done: u64, size: u64, source: io::Error },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> LayoutError + 'a {
    move |source| LayoutError::Io { what, path: path.to_path_buf(), source }
}

fn os(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// What stops a layout: the stop flag, or a lease that ran out.
#[derive(Clone, Copy)]
pub struct Halt<'a> {
    pub stop: &'a AtomicBool,
    pub lease: Option<&'a Lease>,
}

impl<'a> Halt<'a> {
    pub fn stop(stop: &'a AtomicBool) -> Halt<'a> {
        Halt { stop, lease: None }
    }
    pub fn now(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.lease.is_some_and(Lease::lapsed)
    }
}

/// What kind of thing a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    File,
    Device,
}

/// Where a target is: its directory and its name there, each opened once, and the target
/// itself once it has been opened (checked) or created. Shared by the target's clones.
#[derive(Debug)]
pub struct Spot {
    dir: Arc<Beneath>,
    name: OsString,
    file: OnceLock<OwnedFd>,
}

impl Spot {
    fn new(dir: Arc<Beneath>, name: &OsStr) -> Arc<Spot> {
        Arc::new(Spot::at(dir, name))
    }
    /// The entry `name` of `dir`, not opened yet.
    pub fn at(dir: Arc<Beneath>, name: &OsStr) -> Spot {
        Spot { dir, name: name.to_os_string(), file: OnceLock::new() }
    }
    /// The directory the target is in.
    pub fn dir(&self) -> &Arc<Beneath> {
        &self.dir
    }
    pub fn name(&self) -> &OsStr {
        &self.name
    }
    /// The target as opened when it was checked or created, if it has been.
    pub fn held(&self) -> Option<BorrowedFd<'_>> {
        self.file.get().map(|f| f.as_fd())
    }
    /// The target opened again with `o`'s flags, through its descriptor: the inode checked or
    /// created, whatever its name leads to now.
    pub fn open(&self, o: OpenOptions) -> io::Result<File> {
        let Some(fd) = self.held() else {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the target was neither checked nor created"));
        };
        reopen(fd, o, self.dir.fd(), &self.name)
    }
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
    /// Where it is, opened once.
    pub at: Arc<Spot>,
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
    /// A file new to the run whose holes are kept: one its phase's first job preallocated
    /// (the executor's `preallocated_first`; a new file has no holes otherwise).
    pub fn preallocated(&self) -> bool {
        !self.exists && !self.kept_holes().is_empty()
    }
    /// Bytes of `empty`.
    pub fn empty_bytes(&self) -> u64 {
        self.empty.iter().map(|(a, b)| b - a).sum()
    }
}

/// The files of one job: one per thread for a directory target, else the one target shared.
/// (Names only: a run reaches them through [`check_job_at`]'s descriptors.)
pub fn job_paths(job: &Job) -> Vec<PathBuf> {
    if let Some(set) = job.workload.block().and_then(|b| b.files.as_ref()) {
        return (0..job.threads)
            .flat_map(|t| (0..set.count).map(move |f| job.target.join(set.name(&job.name, t, f))))
            .collect();
    }
    if job.target.is_dir() {
        (0..job.threads).map(|t| job.target.join(format!("iolab.{}.{t}", job.name))).collect()
    } else {
        vec![job.target.clone()]
    }
}

/// Check a job's targets without writing anything: existence, ownership, devices, sizes.
pub fn check_job(job: &Job) -> Result<Vec<Target>, LayoutError> {
    check_job_at(job, None, &mut Place::default())
}

/// [`check_job`] within a run that marks what it creates with `run` (a scenario's steps on
/// several nodes): a file this run created counts as iolab's even where another node cannot
/// see the file's own mark (see [`RunMark`]).
pub fn check_job_in_run(job: &Job, run: Option<&RunMark>) -> Result<Vec<Target>, LayoutError> {
    check_job_at(job, run, &mut Place::default())
}

/// [`check_job_in_run`] within a run's `place`: each directory and target opened the first time
/// the run names it (beneath an agent's `--allow` when its roots say so), and reached through
/// what was opened then every later time.
pub fn check_job_at(job: &Job, run: Option<&RunMark>, place: &mut Place) -> Result<Vec<Target>, LayoutError> {
    if job.workload.makes_own_files() {
        return check_own_dirs(job, place);
    }
    if let Some(set) = job.workload.block().and_then(|b| b.files.as_ref()) {
        return check_file_set(job, set, run, place);
    }
    // A target checked or created earlier in the run is what it was then.
    if let Some(spot) = place.spot(&job.target) {
        // Checked ahead of the run, a file an earlier phase names may not exist yet.
        let pending = place.ahead() && spot.held().is_none();
        return Ok(vec![check_target(job, &job.target, spot, run, pending, None, None)?]);
    }
    // A directory target: one file per thread in it, the directory opened once.
    match place.dir(&job.target) {
        Ok(dir) => {
            let mut out = Vec::new();
            for t in 0..job.threads {
                let name = OsString::from(format!("iolab.{}.{t}", job.name));
                let path = job.target.join(&name);
                let spot = place.spot(&path).unwrap_or_else(|| Spot::new(dir.clone(), &name));
                place.keep_spot(&path, &spot);
                out.push(check_target(job, &path, spot, run, false, Some(t), None)?);
            }
            return Ok(out);
        }
        Err(e) if e.kind() == io::ErrorKind::NotADirectory || e.kind() == io::ErrorKind::NotFound => {}
        Err(e) if place.strict() => return Err(refuse(&job.target, e.to_string())),
        Err(_) => {}
    }
    let spot = spot_of(&job.target, place)?;
    place.keep_spot(&job.target, &spot);
    Ok(vec![check_target(job, &job.target, spot, run, false, None, None)?])
}

/// Several files per thread (`--nrfiles`) in the job's directory: thread t's files come
/// t-th, `set.count` of them, each sized as the set says and checked as any target is.
fn check_file_set(
    job: &Job,
    set: &iolab_spec::fileset::FileSet,
    run: Option<&RunMark>,
    place: &mut Place,
) -> Result<Vec<Target>, LayoutError> {
    let dir = place.dir(&job.target).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => refuse(
            &job.target,
            "with --nrfiles the target is the directory the files go in; give an existing directory".into(),
        ),
        _ => refuse(&job.target, e.to_string()),
    })?;
    let min_bs = job.workload.block().map_or(4096, |b| b.bs.min().0.min(b.write_sizes().min().0));
    let mut out = Vec::with_capacity(job.threads as usize * set.count as usize);
    for t in 0..job.threads {
        for f in 0..set.count {
            let name = OsString::from(set.name(&job.name, t, f));
            let path = job.target.join(&name);
            let known = place.spot(&path);
            let pending = place.ahead() && known.as_ref().is_some_and(|s| s.held().is_none());
            let spot = known.unwrap_or_else(|| Spot::new(dir.clone(), &name));
            place.keep_spot(&path, &spot);
            let size = set.size_of(job.size, job.seed, t, f, min_bs);
            out.push(check_target(job, &path, spot, run, pending, Some(t), size)?);
        }
    }
    Ok(out)
}

/// The directory holding `path`, opened once, and `path`'s name in it.
fn spot_of(path: &Path, place: &mut Place) -> Result<Arc<Spot>, LayoutError> {
    let Some(name) = path.file_name() else {
        return Err(refuse(path, "it names no file (it ends in `..` or `/`)".into()));
    };
    let parent = parent_of(path);
    let dir = place.dir(parent).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            refuse(path, format!("its directory {} does not exist; create it first", parent.display()))
        }
        _ => refuse(path, e.to_string()),
    })?;
    Ok(Spot::new(dir, name))
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
    fn line(&self, name: &OsStr) -> Vec<u8> {
        let mut l = format!("run:{} ", self.0).into_bytes();
        l.extend_from_slice(name.as_bytes());
        l
    }
}

impl Default for RunMark {
    fn default() -> Self {
        RunMark::new()
    }
}

/// The lines of the manifest in directory `dir` (read through the directory's descriptor, not
/// following a link).
fn manifest_lines_at(dir: BorrowedFd) -> Vec<Vec<u8>> {
    let Ok(fd) = rustix::fs::openat(dir, MANIFEST, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
    else {
        return Vec::new();
    };
    let mut text = Vec::new();
    if File::from(fd).take(64 << 20).read_to_end(&mut text).is_err() {
        return Vec::new();
    }
    text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect()
}

/// Append a line to the manifest in `dir`.
fn manifest_add(dir: BorrowedFd, line: &[u8]) -> io::Result<()> {
    let m = rustix::fs::openat(
        dir,
        MANIFEST,
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(os)?;
    let mut l = line.to_vec();
    l.push(b'\n');
    File::from(m).write_all(&l)
}

/// Whether this run created the entry `name` of `dir` (its `run:MARK NAME` line is in the
/// directory's manifest).
fn made_by_run_at(dir: BorrowedFd, name: &OsStr, run: &RunMark) -> bool {
    let want = run.line(name);
    manifest_lines_at(dir).contains(&want)
}

/// Whether this run created the file at `path` (see [`RunMark`]).
pub fn made_by_run(path: &Path, run: &RunMark) -> bool {
    let (Some(name), Ok(dir)) = (path.file_name(), Beneath::open(parent_of(path))) else { return false };
    made_by_run_at(dir.fd(), name, run)
}

/// A personality (PostMark, ...) works in directories of its own ([`Job::own_dirs`]:
/// `iolab.<job>.<thread>`, or `iolab.<job>` that its threads share) that it creates under the
/// target directory and removes at its end; it creates every file in them with O_EXCL, so
/// nothing it writes, renames or deletes can be a file it did not create. Here: the target
/// must be a directory and those names must be free (a directory of that name with a user's
/// file in it is refused before anything is written).
fn check_own_dirs(job: &Job, place: &mut Place) -> Result<Vec<Target>, LayoutError> {
    let needs_dir = || {
        refuse(
            &job.target,
            format!(
                "workload `{}` needs a directory to work in; give --target a directory (a missing one is created)",
                job.workload.label()
            ),
        )
    };
    // The target directory, opened once; a missing one is made (and marked) before the phase,
    // as a block job's missing file is: then its parent must exist, and it is there the
    // space is asked for.
    let (dir, exists) = match place.dir(&job.target) {
        Ok(d) => (d, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (spot_of(&job.target, place)?.dir.clone(), false),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Err(needs_dir()),
        Err(e) => return Err(refuse(&job.target, e.to_string())),
    };
    // What the big files will take, so a run that cannot fit is refused before it starts
    // (bonnie++'s file, twice the RAM by default; the redo log's files).
    let space = job.workload.space();
    // A personality that works in the target itself (fio's metadata engines: OwnDirs::Target)
    // has no directory of its own to ask at: its space, per thread, is asked of the target's
    // filesystem here.
    if job.workload.app().is_some_and(|a| a.dirs() == iolab_spec::OwnDirs::Target) && space > 0 {
        let need = space.saturating_mul(u64::from(job.threads));
        let free = free_at(dir.fd(), &job.target)?;
        if !fits(need, free) {
            return Err(refuse(
                &job.target,
                format!(
                    "not enough free space: the files made before the timed calls need {need} bytes ({} thread(s) x {space}), {free} are free; use a smaller --file-sizes or --nrfiles, or another directory",
                    job.threads
                ),
            ));
        }
    }
    job.own_dirs()
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let path = job.target.join(&d);
            let name = OsString::from(&d);
            if exists && found_at(dir.fd(), &name).map_err(io_err("looking at", &path))?.is_some() {
                return Err(refuse(&path, "it exists already (left by an interrupted run?); this workload works only in a directory it creates: remove it or choose another job name".into()));
            }
            // `exists`: nothing for the layout step to create; the source makes the directory.
            // (`at` is where its space is asked for: the target, or its parent while missing.)
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
                at: Spot::new(dir.clone(), &name),
            })
        })
        .collect()
}

/// The entry `name` of `dir` as it is (a link not followed), if there is one.
fn found_at(dir: BorrowedFd, name: &OsStr) -> io::Result<Option<rustix::fs::Stat>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => Ok(Some(s)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(os(e)),
    }
}

/// The directory holding `path` (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Create a missing directory to work in (its parent must exist) and mark it as iolab's, as a
/// block job's missing file is created and marked; noted as the run's with `run`. `Ok(false)`
/// when it was there already.
pub fn create_dir_in_run(path: &Path, run: Option<&RunMark>) -> Result<bool, LayoutError> {
    let spot = spot_of(path, &mut Place::default())?;
    create_dir_at(&spot, path, run).map(|(made, _)| made)
}

/// Create the directory `spot` names (its parent is `spot`'s directory, already open), mark it
/// and note it as the run's; `(false, dir)` when a directory was there already. Returns the
/// directory, opened through its parent without following a link.
pub fn create_dir_at(spot: &Spot, path: &Path, run: Option<&RunMark>) -> Result<(bool, Beneath), LayoutError> {
    let parent = &spot.dir;
    let made = match rustix::fs::mkdirat(parent.fd(), &spot.name, Mode::from_raw_mode(0o777)) {
        Ok(()) => true,
        Err(rustix::io::Errno::EXIST) => false,
        Err(e) => return Err(io_err("creating the directory", path)(os(e))),
    };
    let fd = rustix::fs::openat(
        parent.fd(),
        &spot.name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
            refuse(path, "it is not a directory (a symbolic link or a file was put there)".into())
        }
        e => io_err("opening the directory", path)(os(e)),
    })?;
    if made {
        mark_fd(fd.as_fd(), parent.fd(), &spot.name).map_err(io_err("marking as iolab's", path))?;
        if let Some(run) = run {
            note_run_at(parent.fd(), &spot.name, run, path)?;
        }
    }
    Ok((made, Beneath::from_fd(fd, path.to_path_buf(), parent.is_strict())))
}

/// Remove a directory iolab created, if it is empty; returns whether it was removed.
pub fn remove_owned_dir(path: &Path) -> io::Result<bool> {
    let (Some(name), Ok(dir)) = (path.file_name(), Beneath::open(parent_of(path))) else { return Ok(false) };
    remove_owned_at(dir.fd(), name, true, None)
}

fn refuse(path: &Path, why: String) -> LayoutError {
    LayoutError::Refused { path: path.to_path_buf(), why }
}

/// A target that does not exist yet: made with the job's size (or, writing until the
/// filesystem is full, what is free), or sized when an earlier phase of the run has made it.
fn missing_target(
    path: &Path,
    at: Arc<Spot>,
    want: Option<Bytes>,
    fills: bool,
    off: u64,
    pending: bool,
    needs_data: bool,
) -> Result<Target, LayoutError> {
    let size = match (want, fills) {
        (Some(s), _) => s.0.saturating_add(off),
        (None, true) => off.saturating_add(free_at(at.dir.fd(), path)?),
        // An earlier phase makes it (fio's write phase, then a read phase without a
        // size): nothing to size or lay out before that phase has run.
        (None, false) if pending => {
            return Ok(Target {
                path: path.to_path_buf(),
                kind: TargetKind::File,
                size: 0,
                existing: 0,
                exists: false,
                layout: false,
                empty: Vec::new(),
                fill_holes: false,
                at,
            })
        }
        (None, false) => {
            return Err(refuse(
                path,
                "it does not exist and no size was given; add --size (for example --size 1G)".into(),
            ))
        }
    };
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size,
        existing: 0,
        exists: false,
        layout: needs_data,
        empty: Vec::new(),
        fill_holes: false,
        at,
    })
}

/// `pending`: the plan is checked ahead of the run and an earlier phase names this file, so
/// it may not exist yet; its size is then known when this phase starts and is checked again.
/// `thread`: the one thread whose file this is (a directory target), else every thread's.
fn check_target(
    job: &Job,
    path: &Path,
    at: Arc<Spot>,
    run: Option<&RunMark>,
    pending: bool,
    thread: Option<u32>,
    file_size: Option<u64>,
) -> Result<Target, LayoutError> {
    // One file of several (`--nrfiles`) has its own size; else the job's.
    let want = file_size.map(Bytes).or(job.size);
    let needs_data = job.workload.needs_data() || job.engine.caps().maps_files();
    // The job's region starts `off` bytes in: the file must reach offset + size (for a file
    // the threads share, the last thread's offset with fio's offset_increment).
    let off = job.workload.block().map_or(0, |b| b.offset_of(thread.unwrap_or(job.threads.saturating_sub(1))));
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
    let strict = at.dir.is_strict();
    // Writing until the filesystem is full (fio's fill_device): without a size the file may
    // grow by what is free now; ENOSPC ends the job first if others take space meanwhile.
    let fills = job.workload.block().is_some_and(|b| b.fill_fs);
    // Checked or created earlier in the run: looked at through what was opened then.
    let looked = match at.held() {
        Some(fd) => rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(os),
        None => place::look(&at.dir, Path::new(&at.name)),
    };
    let held = match looked {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // `--no-create` (fio's allow_file_create=0); a file an earlier phase names is
            // checked again when its phase starts.
            if job.no_create && !pending {
                return Err(refuse(
                    path,
                    "it does not exist, and --no-create (fio's allow_file_create=0) forbids creating it; check the name, create the file first, or drop --no-create".into(),
                ));
            }
            return missing_target(path, at, want, fills, off, pending, needs_data);
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Err(refuse(path, e.to_string())),
        Err(e) => return Err(io_err("opening", path)(e)),
    };
    let meta = rustix::fs::fstat(&held).map_err(|e| io_err("reading metadata of", path)(os(e)))?;
    let ft = FileType::from_raw_mode(meta.st_mode);
    if ft == FileType::Symlink {
        return Err(refuse(
            path,
            "it is a symbolic link, and an agent follows none beneath its --allow directories".into(),
        ));
    }
    if (ft == FileType::BlockDevice || ft == FileType::CharacterDevice) && fills {
        return Err(refuse(path, "it is a device: its size is known and writing past its end gives no ENOSPC (fio's HOWTO says the same of fill_device); drop --fill-fs".into()));
    }
    if ft == FileType::BlockDevice || ft == FileType::CharacterDevice {
        return device_target(job, path, at, held, (ft == FileType::BlockDevice, meta.st_rdev), past_offset);
    }
    if ft == FileType::Directory {
        return Err(refuse(path, "it is a directory".into()));
    }
    if ft != FileType::RegularFile {
        return Err(refuse(path, "it is neither a regular file, a directory nor a device".into()));
    }
    let existing = meta.st_size as u64;
    let size = match (want, fills) {
        (Some(s), _) => s.0.saturating_add(off),
        (None, true) => existing.max(off).saturating_add(free_at(at.dir.fd(), path)?),
        (None, false) => existing,
    };
    if size == 0 {
        return Err(refuse(path, "it is empty and no size was given; add --size".into()));
    }
    let size = past_offset(size)?;
    let grows = size > existing;
    let writes = job.workload.writes() || (needs_data && grows);
    let _ = at.file.set(held);
    let owned = || -> Result<bool, LayoutError> {
        if run.is_some_and(|r| made_by_run_at(at.dir.fd(), &at.name, r)) {
            return Ok(true);
        }
        owned_spot(&at).map_err(io_err("checking the iolab mark of", path))
    };
    if writes {
        // A file with another name may be reached from outside the allowed directories too:
        // an agent writes none (iolab never makes a second name for a file).
        if strict && meta.st_nlink > 1 {
            return Err(refuse(path, format!(
                "it has {} names (hard links), one of which may lie outside the agent's --allow directories; an agent writes no such file",
                meta.st_nlink
            )));
        }
        if !job.overwrite && !owned()? {
            return Err(refuse(path, format!(
                "it exists and iolab did not create it, so iolab will not {} it; pass --overwrite to allow that, or choose a new path",
                match job.workload.block() {
                    Some(b) if b.rw.trims() => "trim",
                    _ if job.workload.writes() => "write to",
                    _ => "extend",
                }
            )));
        }
    }
    // What the job will read that holds no data (the part the layout writes anyway aside):
    // filled where iolab may write (an agent writes no file with a second name), unless kept
    // on purpose.
    let empty = if needs_data && off < existing.min(size) {
        let f = at
            .open(OpenOptions { read: true, ..Default::default() })
            .map_err(io_err("opening to map the data of", path))?;
        iolab_engine::extents::empty_ranges(&f, off, existing.min(size))
            .map_err(io_err("mapping the holes of", path))?
    } else {
        Vec::new()
    };
    let keep = job.workload.block().is_some_and(|b| b.keep_holes);
    let second_name = strict && meta.st_nlink > 1;
    let fill_holes = !empty.is_empty() && !keep && !second_name && (job.overwrite || owned()?);
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size,
        existing,
        exists: true,
        layout: needs_data && (grows || fill_holes),
        empty,
        fill_holes,
        at,
    })
}

/// A device as a target: only with `--device`, never a block device in use when the job
/// writes, sized by the device (or `--size` within it).
fn device_target(
    job: &Job,
    path: &Path,
    at: Arc<Spot>,
    held: OwnedFd,
    (block, rdev): (bool, u64),
    size_of: impl Fn(u64) -> Result<u64, LayoutError>,
) -> Result<Target, LayoutError> {
    // The last thread's region is the furthest in (fio's offset_increment).
    let off = job.workload.block().map_or(0, |b| b.offset_of(job.threads.saturating_sub(1)));
    if !job.device {
        return Err(refuse(path, format!(
            "it is a {} device and iolab may destroy what is on it; pass --device if you mean to test the device itself",
            if block { "block" } else { "character" }
        )));
    }
    // A block device written while it (or a partition of it) is mounted or held would
    // corrupt a filesystem in use: refused, whatever --device says.
    let writes = job.workload.block().is_none_or(|b| b.rw.writes());
    if let Some(why) = Some(rdev).filter(|_| block && writes).and_then(crate::device::in_use) {
        return Err(refuse(path, why));
    }
    let _ = at.file.set(held);
    let dev_len = if block {
        at.open(OpenOptions { read: true, ..Default::default() })
            .and_then(|mut f| f.seek(SeekFrom::End(0)))
            .map_err(io_err("sizing", path))?
    } else {
        0
    };
    let size = match (job.size, dev_len) {
        (Some(s), 0) => s.0.saturating_add(off),
        (Some(s), n) => s.0.saturating_add(off).min(n),
        (None, 0) => return Err(refuse(path, "a character device has no size; add --size".into())),
        (None, n) => n,
    };
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::Device,
        size: size_of(size)?,
        existing: dev_len,
        exists: true,
        layout: false,
        empty: Vec::new(),
        fill_holes: false,
        at,
    })
}

/// Is the file `spot` holds marked as created by iolab (its xattr, or a manifest line naming
/// its inode and name)?
fn owned_spot(spot: &Spot) -> io::Result<bool> {
    let Some(fd) = spot.held() else { return Ok(false) };
    let f = reopen(fd, OpenOptions { read: true, ..Default::default() }, spot.dir.fd(), &spot.name)?;
    is_marked(f.as_fd(), spot.dir.fd(), &spot.name)
}

/// Is the open file `fd`, the entry `name` of `dir`, marked as iolab's?
fn is_marked(fd: BorrowedFd, dir: BorrowedFd, name: &OsStr) -> io::Result<bool> {
    match rustix::fs::fgetxattr(fd, XATTR, &mut [0u8; 8][..]) {
        Ok(_) => return Ok(true),
        Err(rustix::io::Errno::NODATA) => {}
        Err(_) => {} // xattrs unsupported here: fall back to the manifest
    }
    let ino = rustix::fs::fstat(fd).map_err(os)?.st_ino;
    let mut want = format!("{ino} ").into_bytes();
    want.extend_from_slice(name.as_bytes());
    Ok(manifest_lines_at(dir).contains(&want))
}

/// Is this file marked as created by iolab? (Its directory opened as named, the file in it not
/// followed.)
pub fn is_owned(path: &Path) -> io::Result<bool> {
    let Some(name) = path.file_name() else { return Ok(false) };
    let dir = Beneath::open(parent_of(path))?;
    let fd = rustix::fs::openat(
        dir.fd(),
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(os)?;
    is_marked(fd.as_fd(), dir.fd(), name)
}

/// Mark a file or directory iolab just created (open as `fd`, the entry `name` of `dir`).
fn mark_fd(fd: BorrowedFd, dir: BorrowedFd, name: &OsStr) -> io::Result<()> {
    if rustix::fs::fsetxattr(fd, XATTR, b"1", rustix::fs::XattrFlags::empty()).is_ok() {
        return Ok(());
    }
    let ino = rustix::fs::fstat(fd).map_err(os)?.st_ino;
    let mut line = format!("{ino} ").into_bytes();
    line.extend_from_slice(name.as_bytes());
    manifest_add(dir, &line)
}

/// Create (never truncate) a missing target and mark it as iolab's.
pub fn create_target(t: &Target) -> Result<(), LayoutError> {
    create_target_in_run(t, None)
}

/// [`create_target`], noting the file as created by `run` too (see [`RunMark`]). The new file
/// is made in the target's directory with O_EXCL and no link followed, and held: every later
/// operation goes through it.
pub fn create_target_in_run(t: &Target, run: Option<&RunMark>) -> Result<(), LayoutError> {
    if t.exists {
        return Ok(());
    }
    let spot = &t.at;
    let fd = rustix::fs::openat(
        spot.dir.fd(),
        &spot.name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| io_err("creating", &t.path)(os(e)))?;
    mark_fd(fd.as_fd(), spot.dir.fd(), &spot.name).map_err(io_err("marking as iolab's", &t.path))?;
    if let Some(run) = run {
        note_run_at(spot.dir.fd(), &spot.name, run, &t.path)?;
    }
    if spot.file.set(fd).is_err() {
        return Err(refuse(&t.path, "it was created twice in one run".into()));
    }
    Ok(())
}

/// Note the entry `name` of `dir` as created by `run` in the directory's manifest.
fn note_run_at(dir: BorrowedFd, name: &OsStr, run: &RunMark, path: &Path) -> Result<(), LayoutError> {
    manifest_add(dir, &run.line(name)).map_err(io_err("noting the run's file in the manifest beside", path))
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

/// The bytes free to an unprivileged writer on the filesystem of the directory `dir` (`shown`
/// in an error).
fn free_at(dir: BorrowedFd, shown: &Path) -> Result<u64, LayoutError> {
    let s = rustix::fs::fstatvfs(dir).map_err(|e| io_err("checking free space in", shown)(os(e)))?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Whether `need` new bytes fit in `free`, with 1% to spare.
fn fits(need: u64, free: u64) -> bool {
    need.saturating_add(need / 100) <= free
}

/// Refuse before writing if the new bytes of these targets do not fit (with 1% to spare),
/// each filesystem asked through the target's directory.
pub fn check_space(targets: &[&Target], writes_growth: bool) -> Result<(), LayoutError> {
    let mut by_dev: std::collections::HashMap<u64, (PathBuf, u64, u64)> = Default::default();
    for t in targets.iter().filter(|t| t.kind == TargetKind::File) {
        let mut grows = if t.layout || writes_growth { t.size.saturating_sub(t.existing) } else { 0 };
        if t.fill_holes {
            grows = grows.saturating_add(t.empty_bytes());
        }
        if grows == 0 {
            continue;
        }
        let dir = t.at.dir.fd();
        let shown = t.at.dir.root().to_path_buf();
        let dev = rustix::fs::fstat(dir).map_err(|e| io_err("reading metadata of", &shown)(os(e)))?.st_dev;
        let free = free_at(dir, &shown)?;
        by_dev.entry(dev).or_insert((shown, 0, free)).1 += grows;
    }
    for (_, (dir, need, free)) in by_dev {
        if !fits(need, free) {
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
/// is told after each chunk. A full filesystem names the partial file this run created and the
/// way to remove it.
pub fn lay_out(
    t: &Target,
    seed: u64,
    compressibility: u8,
    halt: &Halt,
    created_now: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<LaidOut, LayoutError> {
    let f =
        t.at.open(OpenOptions { write: true, ..Default::default() }).map_err(io_err("opening for layout", &t.path))?;
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
            if halt.now() {
                let fate = if created_now {
                    let ino = rustix::fs::fstat(&f).ok().map(|s| s.st_ino);
                    drop(f);
                    let _ = remove_owned_at(t.at.dir.fd(), &t.at.name, false, ino);
                    "the partial file, created by this run, was removed".to_string()
                } else {
                    "the file is kept as it is; the next run completes its layout".to_string()
                };
                return Err(LayoutError::Interrupted { path: t.path.clone(), done, size: total, fate });
            }
            let n = ((end - pos) as usize).min(LAYOUT_CHUNK);
            buf[..8].copy_from_slice(&pos.to_le_bytes());
            if let Err(e) = f.write_all_at(&buf[..n], pos) {
                if created_now && matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)) {
                    return Err(LayoutError::Full { path: t.path.clone(), done, size: total, source: e });
                }
                return Err(io_err("laying out", &t.path)(e));
            }
            pos += n as u64;
            done += n as u64;
            progress(done, total);
        }
    }
    f.sync_all().map_err(io_err("flushing the layout of", &t.path))?;
    Ok(LaidOut { bytes: total, holes_filled: holes })
}

/// Make a file this run just created as fio makes a write-only job's new file (`--preallocate`,
/// fio's fallocate): its blocks allocated (fallocate mode 0, or KEEP_SIZE), or only its size
/// set, or nothing; no data written. A filesystem without fallocate leaves it as `none` does,
/// as fio's `native` falls back.
pub fn preallocate(t: &Target, how: Prealloc) -> Result<(), LayoutError> {
    let f =
        t.at.open(OpenOptions { write: true, ..Default::default() })
            .map_err(io_err("opening to preallocate", &t.path))?;
    let mode = match how {
        // The layout wrote it (`needs_data`).
        Prealloc::None | Prealloc::Data => return Ok(()),
        Prealloc::Truncate => return f.set_len(t.size).map_err(io_err("sizing", &t.path)),
        Prealloc::Fallocate => rustix::fs::FallocateFlags::empty(),
        Prealloc::Keep => rustix::fs::FallocateFlags::KEEP_SIZE,
    };
    match rustix::fs::fallocate(&f, mode, 0, t.size) {
        Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => Ok(()),
        Err(e) if matches!(e, rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT) => {
            Err(LayoutError::Full { path: t.path.clone(), done: 0, size: t.size, source: os(e) })
        }
        Err(e) => Err(io_err("preallocating", &t.path)(os(e))),
    }
}

/// Size a file for mmap (it must cover the mapping), through its descriptor.
pub fn set_len(t: &Target) -> Result<(), LayoutError> {
    t.at.open(OpenOptions { write: true, ..Default::default() })
        .and_then(|f| f.set_len(t.size))
        .map_err(io_err("sizing for mmap", &t.path))
}

/// Drop the target's pages from the page cache, as fio's `invalidate=1` does before a job: its
/// dirty pages written back first (they cannot be dropped otherwise), then posix_fadvise
/// DONTNEED over the whole file or device. Reads that follow come from the storage. On tmpfs,
/// whose pages are the storage, nothing is dropped.
pub fn drop_cached(t: &Target) -> Result<(), LayoutError> {
    let f =
        t.at.open(OpenOptions { read: true, ..Default::default() })
            .map_err(io_err("opening to drop its cached pages", &t.path))?;
    f.sync_data().map_err(io_err("writing back before dropping the cached pages of", &t.path))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| io_err("dropping the cached pages of", &t.path)(io::Error::from(e)))
}

/// Remove a file only if iolab created it; returns whether it was removed.
pub fn remove_owned(path: &Path) -> io::Result<bool> {
    let (Some(name), Ok(dir)) = (path.file_name(), Beneath::open(parent_of(path))) else { return Ok(false) };
    remove_owned_at(dir.fd(), name, false, None)
}

/// Remove the entry `name` of `dir` (a file, or with `dir_too` an empty directory) only if
/// iolab created it (and, with `expect`, it is that inode); whether it was removed. Race-free: the entry is first renamed to a name
/// of this call's own in the same directory, then what was renamed is checked and removed (or
/// renamed back when it is not iolab's), so an entry swapped in under the name meanwhile is
/// never removed.
fn remove_owned_at(dir: BorrowedFd, name: &OsStr, dir_too: bool, expect: Option<u64>) -> io::Result<bool> {
    let Some(st) = found_at(dir, name)? else { return Ok(false) };
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile && !(dir_too && kind == FileType::Directory) {
        return Ok(false);
    }
    let aside = OsString::from(format!(".iolab-removing.{}.{:016x}", std::process::id(), rand::random::<u64>()));
    match rustix::fs::renameat_with(dir, name, dir, &aside, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => {}
        Err(rustix::io::Errno::NOENT) => return Ok(false),
        Err(e) => return Err(os(e)),
    }
    let back = || {
        let _ = rustix::fs::renameat_with(dir, &aside, dir, name, rustix::fs::RenameFlags::NOREPLACE);
    };
    let opened = rustix::fs::openat(
        dir,
        &aside,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    );
    let fd = match opened {
        Ok(f) => f,
        Err(e) => {
            back();
            return Err(os(e));
        }
    };
    let now = rustix::fs::fstat(&fd).map_err(os)?;
    let is_dir = FileType::from_raw_mode(now.st_mode) == FileType::Directory;
    // (A manifest mark names the entry by its own name, not `aside`.)
    let ours = (FileType::from_raw_mode(now.st_mode) == FileType::RegularFile || (dir_too && is_dir))
        && expect.is_none_or(|ino| ino == now.st_ino)
        && is_marked(fd.as_fd(), dir, name)?;
    if !ours {
        back();
        return Ok(false);
    }
    let flags = if is_dir { AtFlags::REMOVEDIR } else { AtFlags::empty() };
    match rustix::fs::unlinkat(dir, &aside, flags) {
        Ok(()) => {}
        Err(rustix::io::Errno::NOTEMPTY) | Err(rustix::io::Errno::EXIST) => {
            back();
            return Ok(false);
        }
        Err(e) => {
            back();
            return Err(os(e));
        }
    }
    forget_in_manifest(dir, name)?;
    Ok(true)
}

/// After the entry `name` of `dir` was removed: every manifest line naming it goes (its
/// inode's and any run's); the others stay (the manifest goes when none is left).
fn forget_in_manifest(dir: BorrowedFd, name: &OsStr) -> io::Result<()> {
    let lines = manifest_lines_at(dir);
    if lines.is_empty() {
        return Ok(());
    }
    let keep: Vec<&Vec<u8>> = lines
        .iter()
        .filter(|l| l.iter().position(|&b| b == b' ').map(|sp| &l[sp + 1..]) != Some(name.as_bytes()))
        .collect();
    if keep.len() == lines.len() {
        return Ok(());
    }
    if keep.is_empty() {
        return match rustix::fs::unlinkat(dir, MANIFEST, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(os(e)),
        };
    }
    let mut text = Vec::new();
    for l in keep {
        text.extend_from_slice(l);
        text.push(b'\n');
    }
    let f = rustix::fs::openat(
        dir,
        MANIFEST,
        OFlags::WRONLY | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os)?;
    File::from(f).write_all(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{Bytes, JobPatch, Rw};
    use std::fs;

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
        lay_out(&t, 1, 0, &Halt::stop(&AtomicBool::new(false)), true, &mut |_, _| {}).unwrap();
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
        fs::write(a.join(MANIFEST), [&b"999999999 f\n"[..], &run.line(OsStr::new("f")), b"\n"].concat()).unwrap();
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
        let e = lay_out(&t, 1, 0, &Halt::stop(&AtomicBool::new(true)), true, &mut |_, _| {}).unwrap_err().to_string();
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
