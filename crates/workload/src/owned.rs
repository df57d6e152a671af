//! iolab's ownership marks (the `user.iolab` xattr, or the directory's `.iolab-owned` manifest
//! where xattrs are refused; see [`crate::layout`]) read and written beneath a job's directory,
//! for files and directories alike, without following a link: what a replay (or any source
//! naming its own paths) needs to tell what it may change, to mark what it made, and to remove
//! what an earlier run of it left.

use crate::error::SourceError;
use crate::layout::{MANIFEST, XATTR};
use iolab_engine::beneath::{Beneath, Parent};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What kind of entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A symbolic link, device, socket or FIFO: never iolab's, never followed.
    Other,
}

/// What is at a path, and whether iolab made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Absent,
    Owned(Kind),
    Foreign(Kind),
}

impl Found {
    pub fn exists(self) -> bool {
        self != Found::Absent
    }
    pub fn kind(self) -> Option<Kind> {
        match self {
            Found::Absent => None,
            Found::Owned(k) | Found::Foreign(k) => Some(k),
        }
    }
}

fn os(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

fn kind_of(mode: u32) -> Kind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        _ => Kind::Other,
    }
}

/// The manifest's lines in directory `dir`: (inode, name).
fn manifest(dir: BorrowedFd) -> Vec<(u64, Vec<u8>)> {
    let Ok(fd) = rustix::fs::openat(dir, MANIFEST, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
    else {
        return Vec::new();
    };
    let mut text = Vec::new();
    if std::fs::File::from(fd).take(64 << 20).read_to_end(&mut text).is_err() {
        return Vec::new();
    }
    text.split(|&b| b == b'\n')
        .filter_map(|l| {
            let sp = l.iter().position(|&b| b == b' ')?;
            let ino = std::str::from_utf8(&l[..sp]).ok()?.parse().ok()?;
            Some((ino, l[sp + 1..].to_vec()))
        })
        .collect()
}

/// The entry `name` in `dir`, opened without following it (O_PATH when it cannot be read).
fn open_entry(dir: BorrowedFd, name: &OsStr) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(os)
}

/// Is the entry `name` of `dir` (open as `fd`, inode `ino`) marked as iolab's?
fn marked(dir: BorrowedFd, name: &OsStr, fd: BorrowedFd, ino: u64) -> bool {
    match rustix::fs::fgetxattr(fd, XATTR, &mut [0u8; 8][..]) {
        Ok(_) => return true,
        Err(rustix::io::Errno::NODATA) => {}
        Err(_) => {} // xattrs unsupported: the manifest
    }
    manifest(dir).iter().any(|(i, n)| *i == ino && n.as_slice() == name.as_bytes())
}

fn found_in(p: &Parent) -> io::Result<Found> {
    let st = match rustix::fs::statat(p.fd(), p.name(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => s,
        Err(rustix::io::Errno::NOENT) => return Ok(Found::Absent),
        Err(e) => return Err(os(e)),
    };
    let kind = kind_of(st.st_mode);
    if kind == Kind::Other {
        return Ok(Found::Foreign(kind));
    }
    // An entry iolab cannot open (permissions) is not one it made.
    let Ok(fd) = open_entry(p.fd(), p.name()) else { return Ok(Found::Foreign(kind)) };
    Ok(if marked(p.fd(), p.name(), fd.as_fd(), st.st_ino) { Found::Owned(kind) } else { Found::Foreign(kind) })
}

/// What is at `rel` beneath `b` (a link there is `Foreign(Other)`, not followed).
pub fn found(b: &Beneath, rel: &Path) -> io::Result<Found> {
    match b.parent(rel) {
        Ok(p) => found_in(&p),
        // A missing directory on the way: nothing there.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(Found::Absent),
        Err(e) => Err(e),
    }
}

/// Mark the entry at `rel` as iolab's (a file or a directory iolab made).
pub fn mark(b: &Beneath, rel: &Path) -> io::Result<()> {
    let p = b.parent(rel)?;
    let fd = open_entry(p.fd(), p.name())?;
    if rustix::fs::fsetxattr(&fd, XATTR, b"1", rustix::fs::XattrFlags::empty()).is_ok() {
        return Ok(());
    }
    let ino = rustix::fs::fstat(&fd).map_err(os)?.st_ino;
    if manifest(p.fd()).iter().any(|(i, n)| *i == ino && n.as_slice() == p.name().as_bytes()) {
        return Ok(());
    }
    let m = rustix::fs::openat(
        p.fd(),
        MANIFEST,
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(os)?;
    let mut line = format!("{ino} ").into_bytes();
    line.extend_from_slice(p.name().as_bytes());
    line.push(b'\n');
    std::fs::File::from(m).write_all(&line)
}

/// Create the file `rel` (it must not exist) and mark it.
pub fn create_file(b: &Beneath, rel: &Path) -> io::Result<std::fs::File> {
    let f = b.open_file(
        rel,
        iolab_engine::OpenOptions { write: true, create: true, exclusive: true, ..Default::default() },
    )?;
    mark(b, rel)?;
    Ok(f)
}

/// Make the directory `rel` and mark it.
pub fn create_dir(b: &Beneath, rel: &Path) -> io::Result<()> {
    b.mkdir(rel)?;
    mark(b, rel)
}

/// Drop manifest lines of directory `dir_rel` that name no entry any more (removed or renamed
/// by a run), so a later file cannot inherit a mark by reusing an inode and a name.
pub fn prune_manifest(b: &Beneath, dir_rel: &Path) -> io::Result<()> {
    let dir = b.resolve(dir_rel, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let lines = manifest(dir.as_fd());
    if lines.is_empty() {
        return Ok(());
    }
    let keep: Vec<&(u64, Vec<u8>)> = lines
        .iter()
        .filter(|(ino, name)| {
            rustix::fs::statat(&dir, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|s| s.st_ino == *ino)
        })
        .collect();
    if keep.len() == lines.len() {
        return Ok(());
    }
    if keep.is_empty() {
        return rustix::fs::unlinkat(&dir, MANIFEST, AtFlags::empty()).map_err(os);
    }
    let mut text = Vec::new();
    for (ino, name) in keep {
        text.extend_from_slice(format!("{ino} ").as_bytes());
        text.extend_from_slice(name);
        text.push(b'\n');
    }
    let f = rustix::fs::openat(
        &dir,
        MANIFEST,
        OFlags::WRONLY | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os)?;
    std::fs::File::from(f).write_all(&text)
}

/// Remove `rel` — a file, or a directory with everything in it — if iolab made all of it;
/// otherwise remove nothing and say what is not iolab's.
pub fn remove_tree(b: &Beneath, rel: &Path) -> Result<(), SourceError> {
    let mut order: Vec<(PathBuf, Kind)> = Vec::new();
    collect(b, rel, &mut order, 0)?;
    for (p, k) in &order {
        let r = match k {
            Kind::Dir => {
                // The manifest inside goes with the directory.
                let _ = b.unlink(&p.join(MANIFEST));
                b.rmdir(p)
            }
            _ => b.unlink(p),
        };
        r.map_err(|e| format!("removing {}: {e}", b.root().join(p).display()))?;
    }
    if let Some(parent) = rel.parent() {
        let _ = prune_manifest(b, parent);
    }
    Ok(())
}

/// Everything under `rel`, children before their directory, checked to be iolab's.
fn collect(b: &Beneath, rel: &Path, out: &mut Vec<(PathBuf, Kind)>, depth: usize) -> Result<(), SourceError> {
    let shown = || b.root().join(rel).display().to_string();
    if depth > 256 {
        return Err(said!("{} is nested too deep to remove", shown()));
    }
    match found(b, rel).map_err(|e| format!("{}: {e}", shown()))? {
        Found::Absent => Ok(()),
        Found::Foreign(_) => Err(said!("{} exists and iolab did not make it", shown())),
        Found::Owned(Kind::Dir) => {
            let dir = b.open_dir(rel).map_err(|e| format!("{}: {e}", shown()))?;
            let mut d = rustix::fs::Dir::new(OwnedFd::from(dir)).map_err(|e| format!("{}: {e}", shown()))?;
            let mut names = Vec::new();
            while let Some(e) = d.read() {
                let e = e.map_err(|e| format!("{}: {e}", shown()))?;
                let n = e.file_name().to_bytes();
                if n != b"." && n != b".." && n != MANIFEST.as_bytes() {
                    names.push(PathBuf::from(OsStr::from_bytes(n)));
                }
            }
            for n in names {
                collect(b, &rel.join(n), out, depth + 1)?;
            }
            out.push((rel.to_path_buf(), Kind::Dir));
            Ok(())
        }
        Found::Owned(k) => {
            out.push((rel.to_path_buf(), k));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_on_files_and_directories_without_following_links() {
        let d = tempfile::tempdir().unwrap();
        let b = Beneath::open(d.path()).unwrap();
        assert_eq!(found(&b, Path::new("x")).unwrap(), Found::Absent);
        assert_eq!(found(&b, Path::new("no/such/x")).unwrap(), Found::Absent);
        create_dir(&b, Path::new("mine")).unwrap();
        drop(create_file(&b, Path::new("mine/f")).unwrap());
        assert_eq!(found(&b, Path::new("mine")).unwrap(), Found::Owned(Kind::Dir));
        assert_eq!(found(&b, Path::new("mine/f")).unwrap(), Found::Owned(Kind::File));
        std::fs::create_dir(d.path().join("theirs")).unwrap();
        std::fs::write(d.path().join("theirs/g"), b"x").unwrap();
        assert_eq!(found(&b, Path::new("theirs")).unwrap(), Found::Foreign(Kind::Dir));
        std::os::unix::fs::symlink(d.path().join("mine"), d.path().join("link")).unwrap();
        assert_eq!(found(&b, Path::new("link")).unwrap(), Found::Foreign(Kind::Other));
        // A tree iolab made goes; a tree holding anything else stays whole.
        drop(create_file(&b, Path::new("mine/h")).unwrap());
        std::fs::write(d.path().join("mine/precious"), b"keep").unwrap();
        let e = remove_tree(&b, Path::new("mine")).unwrap_err().to_string();
        assert!(e.contains("precious") && e.contains("did not make"), "{e}");
        assert!(d.path().join("mine/f").exists() && d.path().join("mine/h").exists());
        std::fs::remove_file(d.path().join("mine/precious")).unwrap();
        remove_tree(&b, Path::new("mine")).unwrap();
        assert!(!d.path().join("mine").exists());
        assert!(remove_tree(&b, Path::new("theirs")).is_err());
        assert!(d.path().join("theirs/g").exists());
    }

    #[test]
    fn the_manifest_keeps_marks_where_xattrs_are_refused_and_is_pruned() {
        // Written by hand, as `mark` does where fsetxattr fails.
        let d = tempfile::tempdir().unwrap();
        let b = Beneath::open(d.path()).unwrap();
        std::fs::write(d.path().join("a"), b"").unwrap();
        std::fs::write(d.path().join("b"), b"").unwrap();
        use std::os::unix::fs::MetadataExt;
        let ino = |n: &str| std::fs::metadata(d.path().join(n)).unwrap().ino();
        std::fs::write(d.path().join(MANIFEST), format!("{} a\n{} b\n", ino("a"), ino("b"))).unwrap();
        assert_eq!(found(&b, Path::new("a")).unwrap(), Found::Owned(Kind::File));
        std::fs::remove_file(d.path().join("b")).unwrap();
        prune_manifest(&b, Path::new("")).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join(MANIFEST)).unwrap(), format!("{} a\n", ino("a")));
        std::fs::remove_file(d.path().join("a")).unwrap();
        prune_manifest(&b, Path::new(".")).unwrap();
        assert!(!d.path().join(MANIFEST).exists());
    }
}
