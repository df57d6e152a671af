//! The namespace layer: open, create, close, unlink, rename, mkdir, rmdir, fsync of a
//! directory, stat and readdir, each one system call with exactly the flags asked for, on paths
//! from the worker's name table, resolved beneath the job's directory
//! ([`iolab_engine::beneath`]: no symbolic link or `..` leads a call out of it). Files it opens
//! go into the engine's file table at the index the source chose, so later data calls reach
//! them; a source that shares an opening with other threads sees each file it opens first.
//!
//! A call on a name in a subdirectory (unlink, mkdir, stat) resolves that directory once and keeps
//! it open for the next such call in the same directory ([`crate::names::DirCache`]), as an application that
//! `chdir`s into its directory makes one call per file; a rename or rmdir anywhere in the
//! process forgets every worker's kept directory.

use crate::names::{NameId, Names};
use crate::source::Call;
use iolab_engine::Engine;
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bumped before and after every rename and rmdir made through this layer: a directory kept
/// open ([`crate::names::DirCache`]) under an older count may no longer be the one its path names.
static RESHAPED: AtomicU64 = AtomicU64::new(0);

/// Run `f` on the directory holding `name` and `name`'s last component: the root's descriptor
/// for a name at the top, else the worker's kept directory when it is that one and nothing
/// was renamed or removed since, else the directory resolved beneath the root (and kept).
fn in_parent<T>(
    names: &Names,
    name: NameId,
    f: impl FnOnce(BorrowedFd, &OsStr) -> rustix::io::Result<T>,
) -> io::Result<T> {
    let b = names.beneath()?;
    let rel = names.rel(name);
    let (Some(last), Some(dir)) = (rel.file_name(), rel.parent()) else {
        // The root itself, or a name ending in `.`: the layer's own checks say why.
        let p = b.parent(rel)?;
        return f(p.fd(), p.name()).map_err(io::Error::from);
    };
    if dir.as_os_str().is_empty() {
        return f(b.fd(), last).map_err(io::Error::from);
    }
    let mut cache = names.dir_cache().borrow_mut();
    let now = RESHAPED.load(Ordering::Acquire);
    match &cache.0 {
        Some((p, fd, at)) if *at == now && p.as_path() == dir => f(fd.as_fd(), last).map_err(io::Error::from),
        _ => {
            let fd = b.resolve(dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
            let r = f(fd.as_fd(), last).map_err(io::Error::from);
            cache.0 = Some((dir.to_path_buf(), fd, now));
            r
        }
    }
}

/// A rename or rmdir: counted before and after, so no worker keeps a directory it moved.
fn reshape(names: &Names, f: impl FnOnce(&Names) -> io::Result<()>) -> io::Result<usize> {
    RESHAPED.fetch_add(1, Ordering::AcqRel);
    let r = f(names);
    RESHAPED.fetch_add(1, Ordering::AcqRel);
    r.map(|_| 0)
}

/// Perform a namespace call. `Ok(n)`: what the call returns (0, or entries read by readdir).
/// `opened` sees each file an `Open` opened, before the engine takes it.
pub fn perform<E: Engine + ?Sized>(
    call: &Call,
    names: &Names,
    engine: &mut E,
    opened: &mut dyn FnMut(u32, &File),
) -> io::Result<usize> {
    let other = |e: iolab_engine::EngineError| io::Error::other(e.to_string());
    match *call {
        Call::Open { name, file, flags } => {
            let f = names.beneath()?.open_file(names.rel(name), flags)?;
            // A file this open made (O_CREAT|O_EXCL) or emptied (O_TRUNC for writing) is
            // empty: no fstat(2) to learn so, which an application's create does not make.
            let len = if fresh(flags) { 0 } else { f.metadata().map(|m| m.len()).unwrap_or(0) };
            opened(file, &f);
            engine.set_file(file, f, len).map_err(other)?;
            Ok(0)
        }
        Call::Close { file } => match engine.take_file(file).map_err(other)? {
            Some(f) => {
                drop(f);
                Ok(0)
            }
            // An engine that keeps no files (its row: null) has nothing to close.
            None if !engine.kind().caps().opens_files() => Ok(0),
            None => Err(io::Error::from_raw_os_error(libc::EBADF)),
        },
        Call::Unlink { name } => in_parent(names, name, |d, n| rustix::fs::unlinkat(d, n, AtFlags::empty())).map(|_| 0),
        Call::Rename { from, to } => reshape(names, |n| n.beneath()?.rename(n.rel(from), n.rel(to))),
        Call::Mkdir { name } => {
            in_parent(names, name, |d, n| rustix::fs::mkdirat(d, n, Mode::from_raw_mode(0o777))).map(|_| 0)
        }
        Call::Rmdir { name } => reshape(names, |n| n.beneath()?.rmdir(n.rel(name))),
        Call::FsyncDir { name } => names.beneath()?.fsync_dir(names.rel(name)).map(|_| 0),
        Call::Stat { name } => stat(names, name).map(|_| 0),
        Call::Readdir { name } => readdir(names, name, &mut Vec::new()),
        Call::SyncFs { name } => names
            .beneath()?
            .open_dir(names.rel(name))
            .and_then(|f| rustix::fs::syncfs(&f).map_err(io::Error::from))
            .map(|_| 0),
        Call::Data { .. } => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// stat(2) of a name: one `fstatat` in its (kept) directory; a symbolic link there is followed
/// only while it stays beneath the root (resolved as an open would be).
fn stat(names: &Names, name: NameId) -> io::Result<rustix::fs::Stat> {
    let s = in_parent(names, name, |d, n| rustix::fs::statat(d, n, AtFlags::SYMLINK_NOFOLLOW))?;
    if rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Symlink {
        return names.beneath()?.stat(names.rel(name));
    }
    Ok(s)
}

/// Whether an open with these flags leaves the file empty: it made it, or truncated it.
fn fresh(flags: crate::source::OpenFlags) -> bool {
    (flags.create && flags.exclusive) || (flags.truncate && flags.write)
}

/// readdir of a directory beneath the job's: every entry's name but `.` and `..`, each
/// followed by a NUL byte, into `out` (cleared first), in the order the filesystem returns
/// them. `Ok(n)`: the entries.
pub fn readdir(names: &Names, name: NameId, out: &mut Vec<u8>) -> io::Result<usize> {
    out.clear();
    names.beneath()?.readdir(names.rel(name), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::OpenFlags;
    use iolab_engine::OpKind;

    #[test]
    fn namespace_calls_do_what_they_say_inside_the_root() {
        let d = tempfile::tempdir().unwrap();
        let mut names = Names::new(d.path());
        let dir = names.add("new").unwrap();
        let f = names.add("new/tmp.1").unwrap();
        let g = names.add("new/cur.1").unwrap();
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, iolab_engine::Setup::new(1, 4096)).unwrap();
        assert_eq!(perform(&Call::Mkdir { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap(), 0);
        let create = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
        perform(&Call::Open { name: f, file: 3, flags: create }, &names, &mut *e, &mut |_, _| {}).unwrap();
        e.buffer(0)[..5].copy_from_slice(b"hello");
        e.queue(iolab_engine::Op::new(OpKind::Write, 3, 0, 5, 0)).unwrap();
        let mut done = Vec::new();
        e.reap(1, &mut done).unwrap();
        assert_eq!(done[0].res, 5);
        perform(&Call::Close { file: 3 }, &names, &mut *e, &mut |_, _| {}).unwrap();
        assert!(
            perform(&Call::Open { name: f, file: 3, flags: create }, &names, &mut *e, &mut |_, _| {}).is_err(),
            "O_EXCL"
        );
        perform(&Call::Rename { from: f, to: g }, &names, &mut *e, &mut |_, _| {}).unwrap();
        perform(&Call::FsyncDir { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap();
        assert_eq!(perform(&Call::Readdir { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap(), 1);
        let mut listed = b"left over".to_vec();
        assert_eq!(readdir(&names, dir, &mut listed).unwrap(), 1);
        assert_eq!(listed, b"cur.1\0", "the names, each ended by a NUL");
        perform(&Call::SyncFs { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap();
        assert_eq!(std::fs::read(d.path().join("new/cur.1")).unwrap(), b"hello");
        perform(&Call::Stat { name: g }, &names, &mut *e, &mut |_, _| {}).unwrap();
        perform(&Call::Unlink { name: g }, &names, &mut *e, &mut |_, _| {}).unwrap();
        perform(&Call::Rmdir { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap();
        assert!(!d.path().join("new").exists());
        assert!(perform(&Call::Stat { name: NameId(42) }, &names, &mut *e, &mut |_, _| {}).is_err());
    }

    /// A kept directory is forgotten when any worker renames or removes a directory, so a path
    /// made anew is acted on, not the old directory; a link out of the root is still refused.
    #[test]
    fn kept_directories_follow_renames_and_removals_and_never_leave_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("f"), b"theirs").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        let mut a = Names::new(&root);
        let mut b = Names::new(&root);
        let (dir, x, y) = (a.add("d").unwrap(), a.add("d/x").unwrap(), a.add("d/y").unwrap());
        let (bdir, moved) = (b.add("d").unwrap(), b.add("e").unwrap());
        let escape = a.add("out/f").unwrap();
        let mut e = iolab_engine::build(iolab_spec::EngineKind::Psync, iolab_engine::Setup::new(1, 4096)).unwrap();
        let mut call = |c: Call, n: &Names| perform(&c, n, &mut *e, &mut |_, _| {});
        let touch = |p: &str| std::fs::write(root.join(p), b"").unwrap();

        call(Call::Mkdir { name: dir }, &a).unwrap();
        touch("d/x");
        call(Call::Unlink { name: x }, &a).unwrap(); // `d` kept by worker a
        assert!(!root.join("d/x").exists());
        // Removed and made anew by a itself.
        call(Call::Rmdir { name: dir }, &a).unwrap();
        call(Call::Mkdir { name: dir }, &a).unwrap();
        touch("d/y");
        call(Call::Unlink { name: y }, &a).unwrap();
        assert!(!root.join("d/y").exists(), "the new d, not the removed one");
        // Renamed away and made anew by another worker.
        touch("d/x");
        call(Call::Rename { from: bdir, to: moved }, &b).unwrap();
        call(Call::Mkdir { name: bdir }, &b).unwrap();
        touch("d/x");
        call(Call::Unlink { name: x }, &a).unwrap();
        assert!(!root.join("d/x").exists(), "the file in the new d went");
        assert!(root.join("e/x").exists(), "the renamed directory's file stayed");
        // Mkdir through the kept directory, and no way out through a link.
        let sub = a.add("d/sub").unwrap();
        call(Call::Mkdir { name: sub }, &a).unwrap();
        assert!(root.join("d/sub").is_dir());
        let err = call(Call::Unlink { name: escape }, &a).unwrap_err();
        assert!(err.to_string().contains("leads out of"), "{err}");
        let err = call(Call::Stat { name: escape }, &a).unwrap_err();
        assert!(err.to_string().contains("leads out of"), "{err}");
        // A link in a kept directory is stat'ed only where it stays inside.
        std::os::unix::fs::symlink(outside.join("f"), root.join("d/out")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("d/in")).unwrap();
        let (out, inside) = (a.add("d/out").unwrap(), a.add("d/in").unwrap());
        assert!(call(Call::Stat { name: out }, &a).unwrap_err().to_string().contains("leads out of"));
        call(Call::Stat { name: inside }, &a).unwrap();
        assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"theirs");
    }
}
