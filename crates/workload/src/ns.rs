//! The namespace layer: open, create, close, unlink, rename, mkdir, rmdir, fsync of a
//! directory, stat and readdir, each one system call with exactly the flags asked for, on paths
//! from the worker's name table, resolved beneath the job's directory
//! ([`iolab_engine::beneath`]: no symbolic link or `..` leads a call out of it). Files it opens
//! go into the engine's file table at the index the source chose, so later data calls reach
//! them; a source that shares an opening with other threads sees each file it opens first.

use crate::source::{Call, NameId, Names};
use iolab_engine::Engine;
use std::fs::File;
use std::io;

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
            None if engine.name() == "null" => Ok(0),
            None => Err(io::Error::from_raw_os_error(libc::EBADF)),
        },
        Call::Unlink { name } => names.beneath()?.unlink(names.rel(name)).map(|_| 0),
        Call::Rename { from, to } => names.beneath()?.rename(names.rel(from), names.rel(to)).map(|_| 0),
        Call::Mkdir { name } => names.beneath()?.mkdir(names.rel(name)).map(|_| 0),
        Call::Rmdir { name } => names.beneath()?.rmdir(names.rel(name)).map(|_| 0),
        Call::FsyncDir { name } => names.beneath()?.fsync_dir(names.rel(name)).map(|_| 0),
        Call::Stat { name } => names.beneath()?.stat(names.rel(name)).map(|_| 0),
        Call::Readdir { name } => readdir(names, name, &mut Vec::new()),
        Call::SyncFs { name } => names
            .beneath()?
            .open_dir(names.rel(name))
            .and_then(|f| rustix::fs::syncfs(&f).map_err(io::Error::from))
            .map(|_| 0),
        Call::Data { .. } => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
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
        let mut e = iolab_engine::build("psync", 1, 4096).unwrap();
        assert_eq!(perform(&Call::Mkdir { name: dir }, &names, &mut *e, &mut |_, _| {}).unwrap(), 0);
        let create = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
        perform(&Call::Open { name: f, file: 3, flags: create }, &names, &mut *e, &mut |_, _| {}).unwrap();
        e.buffer(0)[..5].copy_from_slice(b"hello");
        e.queue(iolab_engine::Op { kind: OpKind::Write, file: 3, offset: 0, len: 5, slot: 0 }).unwrap();
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
}
