//! Opening the SQLite file, before the store reads or writes anything in it: the path must be
//! a regular file (a directory, `/dev/null`, a FIFO or a socket is refused by name, before
//! SQLite sees it); reading commands open it read-only (`mode=ro`, and `immutable=1` where the
//! directory cannot be written, a read-only mount, so a WAL database is readable there) and
//! never migrate it (a database of an older schema is read from a migrated copy in memory); a
//! file SQLite finds damaged is named with SQLite's own `quick_check` result.

use crate::{NotIolab, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::Path;

/// What the version and tables of a database say, read in one transaction.
pub(crate) struct Found {
    pub version: u32,
    pub tables: i64,
    pub has_runs: bool,
}

/// The largest database read through a migrated copy in memory (an older schema, opened to
/// read): a larger one is upgraded by a writing command first.
pub const MAX_COPY_BYTES: u64 = 512 << 20;

/// Refuse a path that is not a regular file (`exists`: it must exist).
pub(crate) fn check_path(path: &Path, exists: bool) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(StoreError::NotRegular { path: path.into(), kind: kind_of(&m.file_type()) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !exists => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::Missing(path.into())),
        Err(source) => Err(StoreError::Unreadable { path: path.into(), source }),
    }
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The version, table count and runs table of an open database, in one transaction (a
/// database another process is creating is seen either empty or complete).
pub(crate) fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    let tx = conn.unchecked_transaction()?;
    let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    let runs: i64 =
        tx.query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='runs'", [], |r| r.get(0))?;
    Ok(Found { version, tables, has_runs: runs == 1 })
}

/// Whether SQLite's error means the file's content is damaged (or no database at all).
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase))
}

/// SQLite's `quick_check` of an open database, its first lines: what a damaged file's message
/// says beside SQLite's error.
pub(crate) fn quick_check(conn: &Connection) -> String {
    let lines: rusqlite::Result<Vec<String>> =
        conn.prepare("PRAGMA quick_check(5)").and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect());
    match lines {
        Ok(l) if l.is_empty() => "no result".into(),
        Ok(l) => l.join("; "),
        Err(e) => format!("it could not run ({e})"),
    }
}

/// The error of a file SQLite could not read as a database, with its quick_check.
pub(crate) fn damaged(path: &Path, conn: &Connection, e: rusqlite::Error) -> StoreError {
    let check = if is_damage(&e) { Some(quick_check(conn)) } else { None };
    StoreError::Corrupt { path: path.into(), source: NotIolab::Damaged { sqlite: e, quick_check: check } }
}

/// A path as an SQLite URI's path (`file:` URIs percent-encode all but plain characters).
fn uri_path(path: &Path) -> String {
    let mut s = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Whether the directory holding `path` can be written (SQLite makes `-shm` and `-wal` there).
fn dir_writable(path: &Path) -> bool {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

fn connect_ro(path: &Path, immutable: bool) -> rusqlite::Result<Connection> {
    let query = if immutable { "immutable=1" } else { "mode=ro" };
    let uri = format!("file:{}?{query}", uri_path(path));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(conn)
}

/// A database opened read-only, what it holds, and a note for the user (WAL content that a
/// read-only directory hides).
pub(crate) struct ReadOnly {
    pub conn: Connection,
    pub found: Found,
    pub note: Option<String>,
}

/// Open an existing database read-only: `mode=ro`; where the directory cannot be written and
/// SQLite cannot read that way (a WAL database needs its `-shm`), `immutable=1`.
pub(crate) fn open_read_only(path: &Path) -> Result<ReadOnly, StoreError> {
    check_path(path, true)?;
    let sql = |what: &'static str| move |source| StoreError::Sql { path: path.into(), what, source };
    let conn = connect_ro(path, false).map_err(sql("opening read-only"))?;
    let first = inspect(&conn);
    let (conn, found) = match first {
        Ok(f) => (conn, f),
        Err(e) if !is_damage(&e) && !dir_writable(path) => {
            // A WAL database in a directory iolab cannot write (a read-only mount): SQLite
            // reads it as immutable, the main file alone.
            let conn = connect_ro(path, true).map_err(sql("opening read-only (immutable)"))?;
            let found = inspect(&conn).map_err(|e| damaged(path, &conn, e))?;
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            let note = std::fs::metadata(&wal).ok().filter(|m| m.len() > 0).map(|m| {
                format!(
                    "{} is read as it stands without its write-ahead log ({} bytes in {}, which a read-only directory keeps SQLite from reading); runs saved last may be missing",
                    path.display(),
                    m.len(),
                    std::path::PathBuf::from(wal.clone()).display()
                )
            });
            return Ok(ReadOnly { conn, found, note });
        }
        Err(e) => return Err(damaged(path, &conn, e)),
    };
    Ok(ReadOnly { conn, found, note: None })
}

/// An older schema read without writing: a copy in memory, migrated there.
pub(crate) fn copy_in_memory(path: &Path, src: &Connection) -> Result<Connection, StoreError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_COPY_BYTES {
        return Err(StoreError::OldSchemaTooLarge { path: path.into(), bytes: size, cap: MAX_COPY_BYTES });
    }
    let sql = |what: &'static str| move |source| StoreError::Sql { path: path.into(), what, source };
    let mut mem = Connection::open_in_memory().map_err(sql("copying the database into memory"))?;
    {
        let backup = rusqlite::backup::Backup::new(src, &mut mem).map_err(sql("copying the database into memory"))?;
        backup.run_to_completion(1024, std::time::Duration::ZERO, None).map_err(|e| damaged(path, src, e))?;
    }
    Ok(mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_escape_what_a_uri_reads() {
        assert_eq!(uri_path(Path::new("/tmp/a b/r?s#t%.db")), "/tmp/a%20b/r%3Fs%23t%25.db");
        assert_eq!(uri_path(Path::new("rel/results.db")), "rel/results.db");
    }

    #[test]
    fn paths_that_are_not_files_are_named() {
        let e = check_path(Path::new("/dev/null"), true).unwrap_err().to_string();
        assert!(e.contains("a character device"), "{e}");
        let e = check_path(Path::new("/"), false).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        assert!(check_path(Path::new("/nonexistent/x.db"), false).is_ok());
        assert!(matches!(check_path(Path::new("/nonexistent/x.db"), true), Err(StoreError::Missing(_))));
    }
}
