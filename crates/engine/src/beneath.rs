//! Paths resolved beneath a directory and never out of it. A namespace call (open, create,
//! unlink, rename, mkdir, rmdir, stat, readdir, fsync of a directory) names a path relative to
//! the job's directory; a symbolic link or a `..` met on the way must not lead it elsewhere
//! (a replayed trace is untrusted input, and the target directory may hold links). Each call
//! resolves with openat2(2) and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` from a descriptor of
//! the directory: one system call, the kernel refusing any escape (EXDEV). Kernels before 5.6
//! (or a seccomp filter that hides openat2) get the same guarantee by a walk: one `openat` per
//! component with `O_NOFOLLOW`, so no link is followed at all. Calls that work on a name in a
//! directory (unlink, rename, mkdir) resolve the directory that way, then act on the last
//! component with the `*at` call.

use crate::open::OpenOptions;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, CWD};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once openat2 is found missing (ENOSYS): every later resolution walks.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// A directory that paths are resolved beneath.
#[derive(Debug)]
pub struct Beneath {
    dir: OwnedFd,
    root: PathBuf,
    /// Resolve by the component walk even where openat2 exists (tests of the fallback).
    walk: bool,
    /// Follow no symbolic link, not even one that stays beneath.
    strict: bool,
}

/// The directory a name lives in, and the name.
pub struct Parent<'a> {
    dir: Dir<'a>,
    name: &'a OsStr,
}

enum Dir<'a> {
    Root(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl Parent<'_> {
    pub fn fd(&self) -> BorrowedFd<'_> {
        match &self.dir {
            Dir::Root(b) => *b,
            Dir::Owned(o) => o.as_fd(),
        }
    }
    pub fn name(&self) -> &OsStr {
        self.name
    }
}

fn os(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// The open flags of [`OpenOptions`], as open(2) takes them.
pub fn oflags(o: OpenOptions) -> OFlags {
    let mut f = match (o.read || !o.write, o.write) {
        (true, true) => OFlags::RDWR,
        (false, true) => OFlags::WRONLY,
        _ => OFlags::RDONLY,
    };
    for (on, bit) in [
        (o.create, OFlags::CREATE),
        (o.create && o.exclusive, OFlags::EXCL),
        (o.truncate, OFlags::TRUNC),
        (o.append, OFlags::APPEND),
        (o.direct, OFlags::DIRECT),
        (o.dsync, OFlags::DSYNC),
        (o.sync, OFlags::SYNC),
    ] {
        if on {
            f |= bit;
        }
    }
    f
}

impl Beneath {
    /// Open `root` (following links: it is the directory the user named) to resolve beneath.
    pub fn open(root: &Path) -> io::Result<Beneath> {
        let dir = rustix::fs::openat(CWD, root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| io::Error::new(os(e).kind(), format!("cannot open the directory {}: {e}", root.display())))?;
        Ok(Beneath { dir, root: root.to_path_buf(), walk: false, strict: false })
    }

    /// The same, resolving by the `O_NOFOLLOW` walk whatever the kernel offers.
    pub fn open_walking(root: &Path) -> io::Result<Beneath> {
        Ok(Beneath { walk: true, ..Beneath::open(root)? })
    }

    /// A directory already open (`dir`, known as `root`) to resolve beneath; `strict`: follow
    /// no symbolic link at all.
    pub fn from_fd(dir: OwnedFd, root: PathBuf, strict: bool) -> Beneath {
        Beneath { dir, root, walk: false, strict }
    }

    /// `root`, opened as named (its links followed: the directory the user named), resolving
    /// strictly beneath it from then on.
    pub fn open_strict(root: &Path) -> io::Result<Beneath> {
        Ok(Beneath { strict: true, ..Beneath::open(root)? })
    }

    /// Whether no link at all is followed beneath.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The directory `rel` beneath, as a `Beneath` of its own (as strict as this one): opened
    /// once, so what it names cannot change under the caller.
    pub fn subdir(&self, rel: &Path) -> io::Result<Beneath> {
        let fd = self.resolve(rel, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        Ok(Beneath { dir: fd, root: self.root.join(rel), walk: self.walk, strict: self.strict })
    }

    /// Another handle on the same directory (a duplicate descriptor).
    pub fn try_clone(&self) -> io::Result<Beneath> {
        let dir = rustix::io::fcntl_dupfd_cloexec(&self.dir, 0).map_err(os)?;
        Ok(Beneath { dir, root: self.root.clone(), walk: self.walk, strict: self.strict })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// `rel` as components below the root: `..`, an absolute path or a prefix is refused.
    fn check<'a>(&self, rel: &'a Path) -> io::Result<Vec<&'a OsStr>> {
        let mut out = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "`{}` is not a path inside {} (absolute paths and `..` are refused)",
                            rel.display(),
                            self.root.display()
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }

    fn escape(&self, rel: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} leads out of {} (through a symbolic link); iolab resolves every path beneath the job's directory and follows no link out of it",
                self.root.join(rel).display(),
                self.root.display()
            ),
        )
    }

    /// Open `rel` with `flags` (and `mode` when creating), resolved beneath the root.
    pub fn resolve(&self, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let parts = self.check(rel)?;
        let flags = flags | OFlags::CLOEXEC;
        // openat2 refuses a mode without O_CREAT.
        let mode = if flags.contains(OFlags::CREATE) { mode } else { Mode::empty() };
        if !self.walk && !NO_OPENAT2.load(Ordering::Relaxed) {
            let path: &Path = if parts.is_empty() { Path::new(".") } else { rel };
            let how = if self.strict {
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
            } else {
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS
            };
            match rustix::fs::openat2(&self.dir, path, flags, mode, how) {
                Ok(fd) => return Ok(fd),
                Err(rustix::io::Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(rustix::io::Errno::XDEV) => return Err(self.escape(rel)),
                // RESOLVE_NO_SYMLINKS met a link: said as the walk says it.
                Err(rustix::io::Errno::LOOP) if self.strict => return self.walk_to(rel, &parts, flags, mode),
                Err(rustix::io::Errno::AGAIN) => {
                    // A concurrent rename made the kernel give up on a safe lookup: walk.
                }
                Err(e) => return Err(os(e)),
            }
        }
        self.walk_to(rel, &parts, flags, mode)
    }

    /// One `openat` per component, none following a link.
    fn walk_to(&self, rel: &Path, parts: &[&OsStr], flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let Some((last, dirs)) = parts.split_last() else {
            return rustix::fs::openat(&self.dir, ".", flags, mode).map_err(os);
        };
        let mut cur: Option<OwnedFd> = None;
        for d in dirs {
            let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(self.dir.as_fd());
            let next = rustix::fs::openat(
                at,
                *d,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| self.link_or(rel, at, d, e))?;
            cur = Some(next);
        }
        let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(self.dir.as_fd());
        rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW, mode).map_err(|e| self.link_or(rel, at, last, e))
    }

    /// A failed step of the walk: a symbolic link there is an escape refused; else the error.
    fn link_or(&self, rel: &Path, at: BorrowedFd, name: &OsStr, e: rustix::io::Errno) -> io::Error {
        if matches!(e, rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)
            && rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Symlink)
        {
            if self.strict {
                return io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is or passes through a symbolic link ({}); beneath {} iolab follows no link",
                        self.root.join(rel).display(),
                        Path::new(name).display(),
                        self.root.display()
                    ),
                );
            }
            return self.escape(rel);
        }
        os(e)
    }

    /// The directory holding `rel`'s last component (resolved beneath), and that component.
    pub fn parent<'a>(&'a self, rel: &'a Path) -> io::Result<Parent<'a>> {
        let parts = self.check(rel)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` names the job's directory itself, not an entry in it", rel.display()),
            ));
        };
        let dir = if dirs.is_empty() {
            Dir::Root(self.dir.as_fd())
        } else {
            let p: PathBuf = dirs.iter().collect();
            Dir::Owned(self.resolve(&p, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?)
        };
        Ok(Parent { dir, name })
    }

    /// open(2) of a file with exactly the options given (mode 0644 when it creates).
    pub fn open_file(&self, rel: &Path, o: OpenOptions) -> io::Result<File> {
        self.resolve(rel, oflags(o), Mode::from_raw_mode(0o644)).map(File::from)
    }

    /// A directory opened for reading (readdir, fsync, xattrs).
    pub fn open_dir(&self, rel: &Path) -> io::Result<File> {
        self.resolve(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).map(File::from)
    }

    pub fn unlink(&self, rel: &Path) -> io::Result<()> {
        let p = self.parent(rel)?;
        rustix::fs::unlinkat(p.fd(), p.name(), AtFlags::empty()).map_err(os)
    }

    pub fn rmdir(&self, rel: &Path) -> io::Result<()> {
        let p = self.parent(rel)?;
        rustix::fs::unlinkat(p.fd(), p.name(), AtFlags::REMOVEDIR).map_err(os)
    }

    /// mkdir(2), mode 0777 less the umask.
    pub fn mkdir(&self, rel: &Path) -> io::Result<()> {
        let p = self.parent(rel)?;
        rustix::fs::mkdirat(p.fd(), p.name(), Mode::from_raw_mode(0o777)).map_err(os)
    }

    /// rename(2); `to` is replaced if it exists.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let a = self.parent(from)?;
        let b = self.parent(to)?;
        rustix::fs::renameat(a.fd(), a.name(), b.fd(), b.name()).map_err(os)
    }

    /// stat(2), following a last link only while it stays beneath.
    pub fn stat(&self, rel: &Path) -> io::Result<rustix::fs::Stat> {
        let fd = self.resolve(rel, OFlags::PATH, Mode::empty())?;
        rustix::fs::fstat(&fd).map_err(os)
    }

    /// lstat(2): the entry itself (a link is not followed), None when there is none.
    pub fn lstat(&self, rel: &Path) -> io::Result<Option<rustix::fs::Stat>> {
        let p = self.parent(rel)?;
        match rustix::fs::statat(p.fd(), p.name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => Ok(Some(s)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(os(e)),
        }
    }

    /// Read a directory whole; returns its entries (without `.` and `..`), appending each name
    /// and a NUL byte to `names`.
    pub fn readdir(&self, rel: &Path, names: &mut Vec<u8>) -> io::Result<usize> {
        let fd = self.resolve(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let mut dir = rustix::fs::Dir::new(fd).map_err(os)?;
        let mut n = 0;
        while let Some(e) = dir.read() {
            let e = e.map_err(os)?;
            let name = e.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.extend_from_slice(name);
                names.push(0);
                n += 1;
            }
        }
        Ok(n)
    }

    /// fsync(2) of a directory.
    pub fn fsync_dir(&self, rel: &Path) -> io::Result<()> {
        self.open_dir(rel)?.sync_all()
    }
}

/// Open the file `fd` stands for again, with `o`'s flags (never creating, truncating or
/// excluding: those belong to the first open): through `/proc/thread-self/fd`, the same inode
/// whatever its name has become, nothing resolved by name. Where /proc is not mounted, `name`
/// in `dir` is opened without following a link and must be that same inode, or the open is
/// refused.
pub fn reopen(fd: BorrowedFd, o: OpenOptions, dir: BorrowedFd, name: &OsStr) -> io::Result<File> {
    let o = OpenOptions { create: false, exclusive: false, truncate: false, ..o };
    let flags = oflags(o) | OFlags::CLOEXEC | OFlags::NOCTTY;
    let want = rustix::fs::fstat(fd).map_err(os)?;
    let via = format!("/proc/thread-self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
    let opened = match rustix::fs::openat(CWD, via.as_str(), flags, Mode::empty()) {
        Ok(f) => f,
        Err(rustix::io::Errno::NOENT) if !Path::new("/proc/thread-self").exists() => {
            rustix::fs::openat(dir, name, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(os)?
        }
        Err(e) => return Err(os(e)),
    };
    let got = rustix::fs::fstat(&opened).map_err(os)?;
    if (got.st_dev, got.st_ino) != (want.st_dev, want.st_ino) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is no longer the file iolab checked (its name now leads elsewhere)", Path::new(name).display()),
        ));
    }
    Ok(File::from(opened))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn both(f: impl Fn(&Beneath, &Path, &Path)) {
        for walk in [false, true] {
            let d = tempfile::tempdir().unwrap();
            let root = d.path().join("root");
            let outside = d.path().join("outside");
            std::fs::create_dir_all(root.join("sub")).unwrap();
            std::fs::create_dir(&outside).unwrap();
            symlink(&outside, root.join("out")).unwrap();
            symlink("../outside", root.join("rel_out")).unwrap();
            symlink("sub", root.join("in")).unwrap();
            let b = if walk { Beneath::open_walking(&root) } else { Beneath::open(&root) }.unwrap();
            f(&b, &root, &outside);
        }
    }

    fn create() -> OpenOptions {
        OpenOptions { write: true, create: true, ..Default::default() }
    }

    #[test]
    fn nothing_escapes_through_a_link_or_dotdot() {
        both(|b, root, outside| {
            for rel in ["out/f", "rel_out/f", "out/x/f"] {
                let e = b.open_file(Path::new(rel), create()).unwrap_err();
                assert!(e.to_string().contains("leads out of"), "{rel}: {e}");
                assert!(b.mkdir(Path::new(rel)).is_err(), "{rel}");
            }
            for rel in ["../outside/f", "/tmp/f", "sub/../../outside/f"] {
                let e = b.open_file(Path::new(rel), create()).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{rel}: {e}");
            }
            std::fs::write(outside.join("victim"), b"keep").unwrap();
            assert!(b.unlink(Path::new("out/victim")).is_err());
            assert!(b.rename(Path::new("out/victim"), Path::new("stolen")).is_err());
            assert!(b.stat(Path::new("out/victim")).is_err());
            assert!(b.readdir(Path::new("out"), &mut Vec::new()).is_err());
            assert!(b.fsync_dir(Path::new("out")).is_err());
            assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
            assert_eq!(std::fs::read_dir(outside).unwrap().count(), 1, "nothing made outside");
            // Inside, everything works, and a link that stays inside is followed (openat2) or
            // refused (the walk follows none).
            b.mkdir(Path::new("sub/d")).unwrap();
            drop(b.open_file(Path::new("sub/d/f"), create()).unwrap());
            b.rename(Path::new("sub/d/f"), Path::new("sub/g")).unwrap();
            assert!(root.join("sub/g").is_file());
            let mut names = Vec::new();
            assert_eq!(b.readdir(Path::new("sub"), &mut names).unwrap(), 2);
            assert_eq!(names.iter().filter(|c| **c == 0).count(), 2);
            b.fsync_dir(Path::new(".")).unwrap();
            assert!(b.stat(Path::new("sub/g")).is_ok());
            let via_link = b.open_file(Path::new("in/g"), OpenOptions { read: true, ..Default::default() });
            assert_eq!(via_link.is_ok(), !b.walk, "{via_link:?}");
            assert!(b.lstat(Path::new("out")).unwrap().is_some() && b.lstat(Path::new("nope")).unwrap().is_none());
            b.unlink(Path::new("sub/g")).unwrap();
            b.rmdir(Path::new("sub/d")).unwrap();
            assert!(b.parent(Path::new(".")).is_err());
        });
    }

    #[test]
    fn open_flags_reach_open() {
        let o = OpenOptions { write: true, create: true, exclusive: true, direct: true, ..Default::default() };
        let f = oflags(o);
        assert!(f.contains(OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::DIRECT));
        assert!(oflags(OpenOptions::default()).is_empty(), "read-only");
        assert!(oflags(OpenOptions { read: true, write: true, ..Default::default() }).contains(OFlags::RDWR));
    }
}
