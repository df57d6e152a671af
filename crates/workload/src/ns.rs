//! The namespace layer: open, create, close, unlink, rename, mkdir, rmdir, fsync of a
//! directory, stat and readdir, each one system call with exactly the flags asked for, on paths
//! from the worker's name table (always under the job's directory). Files it opens go into the
//! engine's file table at the index the source chose, so later data calls reach them.

use crate::source::{Call, Names};
use iolab_engine::{open_target, Engine};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Perform a namespace call. `Ok(n)`: what the call returns (0, or entries read by readdir).
pub fn perform<E: Engine + ?Sized>(call: &Call, names: &Names, engine: &mut E) -> io::Result<usize> {
    let other = |e: iolab_engine::EngineError| io::Error::other(e.to_string());
    match *call {
        Call::Open { name, file, flags } => {
            let path = names.path(name);
            let f = open_target(path, flags)?;
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
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
        Call::Unlink { name } => std::fs::remove_file(names.path(name)).map(|_| 0),
        Call::Rename { from, to } => std::fs::rename(names.path(from), names.path(to)).map(|_| 0),
        Call::Mkdir { name } => std::fs::create_dir(names.path(name)).map(|_| 0),
        Call::Rmdir { name } => std::fs::remove_dir(names.path(name)).map(|_| 0),
        Call::FsyncDir { name } => std::fs::File::open(names.path(name)).and_then(|d| d.sync_all()).map(|_| 0),
        Call::Stat { name } => std::fs::metadata(names.path(name)).map(|_| 0),
        Call::Readdir { name } => readdir(names.path(name), &mut Vec::new()),
        Call::SyncFs { name } => std::fs::File::open(names.path(name))
            .and_then(|f| rustix::fs::syncfs(&f).map_err(io::Error::from))
            .map(|_| 0),
        Call::Data { .. } => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// readdir of a directory: every entry's name but `.` and `..`, each followed by a NUL byte,
/// into `out` (cleared first), in the order the filesystem returns them. `Ok(n)`: the entries.
pub fn readdir(path: &Path, out: &mut Vec<u8>) -> io::Result<usize> {
    out.clear();
    let mut n = 0;
    for e in std::fs::read_dir(path)? {
        out.extend_from_slice(e?.file_name().as_bytes());
        out.push(0);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{NameId, OpenFlags};
    use iolab_engine::OpKind;

    #[test]
    fn namespace_calls_do_what_they_say_inside_the_root() {
        let d = tempfile::tempdir().unwrap();
        let mut names = Names::new(d.path());
        let dir = names.add("new").unwrap();
        let f = names.add("new/tmp.1").unwrap();
        let g = names.add("new/cur.1").unwrap();
        let mut e = iolab_engine::build("psync", 1, 4096).unwrap();
        assert_eq!(perform(&Call::Mkdir { name: dir }, &names, &mut *e).unwrap(), 0);
        let create = OpenFlags { write: true, create: true, exclusive: true, ..Default::default() };
        perform(&Call::Open { name: f, file: 3, flags: create }, &names, &mut *e).unwrap();
        e.buffer(0)[..5].copy_from_slice(b"hello");
        e.queue(iolab_engine::Op { kind: OpKind::Write, file: 3, offset: 0, len: 5, slot: 0 }).unwrap();
        let mut done = Vec::new();
        e.reap(1, &mut done).unwrap();
        assert_eq!(done[0].res, 5);
        perform(&Call::Close { file: 3 }, &names, &mut *e).unwrap();
        assert!(perform(&Call::Open { name: f, file: 3, flags: create }, &names, &mut *e).is_err(), "O_EXCL");
        perform(&Call::Rename { from: f, to: g }, &names, &mut *e).unwrap();
        perform(&Call::FsyncDir { name: dir }, &names, &mut *e).unwrap();
        assert_eq!(perform(&Call::Readdir { name: dir }, &names, &mut *e).unwrap(), 1);
        let mut listed = b"left over".to_vec();
        assert_eq!(readdir(&d.path().join("new"), &mut listed).unwrap(), 1);
        assert_eq!(listed, b"cur.1\0", "the names, each ended by a NUL");
        perform(&Call::SyncFs { name: dir }, &names, &mut *e).unwrap();
        assert_eq!(std::fs::read(d.path().join("new/cur.1")).unwrap(), b"hello");
        perform(&Call::Stat { name: g }, &names, &mut *e).unwrap();
        perform(&Call::Unlink { name: g }, &names, &mut *e).unwrap();
        perform(&Call::Rmdir { name: dir }, &names, &mut *e).unwrap();
        assert!(!d.path().join("new").exists());
        assert!(perform(&Call::Stat { name: NameId(42) }, &names, &mut *e).is_err());
    }
}
