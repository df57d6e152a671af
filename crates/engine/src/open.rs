//! Opening targets with exactly the flags asked for (O_DIRECT, O_DSYNC, O_SYNC, O_CREAT),
//! so a replayed open or a dd `oflag=` has a faithful equivalent.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    pub read: bool,
    pub write: bool,
    /// Create the file if missing (never truncates).
    pub create: bool,
    /// Fail if the file exists (with `create`).
    pub exclusive: bool,
    /// O_TRUNC.
    pub truncate: bool,
    /// O_APPEND.
    pub append: bool,
    pub direct: bool,
    pub dsync: bool,
    pub sync: bool,
}

pub fn open_target(path: &Path, o: OpenOptions) -> io::Result<File> {
    let mut flags = 0;
    if o.direct {
        flags |= libc::O_DIRECT;
    }
    if o.dsync {
        flags |= libc::O_DSYNC;
    }
    if o.sync {
        flags |= libc::O_SYNC;
    }
    if o.truncate {
        flags |= libc::O_TRUNC;
    }
    if o.append {
        flags |= libc::O_APPEND;
    }
    let mut oo = std::fs::OpenOptions::new();
    oo.read(o.read || !o.write).write(o.write).custom_flags(flags).mode(0o644);
    if o.create && o.exclusive {
        oo.create_new(true);
    } else if o.create {
        oo.create(true);
    }
    oo.open(path)
}

/// Does the filesystem holding `dir` accept O_DIRECT? (tmpfs, for one, does not.)
pub fn direct_supported(dir: &Path) -> bool {
    let probe = dir.join(format!(".iolab-direct-probe.{}", std::process::id()));
    let ok = open_target(
        &probe,
        OpenOptions { write: true, create: true, exclusive: true, direct: true, ..Default::default() },
    )
    .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}
