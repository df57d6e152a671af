//! The SQLite backend: one file, `PRAGMA user_version` as the schema version, WAL so readers
//! never wait for the recording run, and a 10 s wait on another process's lock. Reading
//! commands open the file read-only (`mode=ro`, or `immutable=1` where its directory cannot be
//! written, a read-only mount, so a WAL database is readable there); a file SQLite finds damaged
//! is named with SQLite's own `quick_check`.

use super::{Backend, DbError, Dialect, Found, Row, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, ToSql};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) struct Sqlite {
    conn: Connection,
}

/// A database opened read-only, and what the user should know of how (a write-ahead log that a
/// read-only directory kept SQLite from reading).
pub(crate) struct ReadOnly {
    pub db: Sqlite,
    pub note: Option<String>,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, DbError> {
        Self::ready(Connection::open(path)?)
    }

    fn ready(conn: Connection) -> Result<Sqlite, DbError> {
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Sqlite { conn })
    }

    /// Open an existing file read-only: `mode=ro`; where the directory cannot be written and
    /// SQLite cannot read that way (a WAL database needs its `-shm` made beside it),
    /// `immutable=1`, the main file alone, with a note when a `-wal` is left unread.
    pub fn open_read(path: &Path) -> Result<ReadOnly, DbError> {
        let mut db = Self::ready(connect_ro(path, false)?)?;
        match db.inspect() {
            Err(e) if !is_damage(&e) && !dir_writable(path) => {
                let db = Self::ready(connect_ro(path, true)?)?;
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                let wal = PathBuf::from(wal);
                let note = std::fs::metadata(&wal).ok().filter(|m| m.len() > 0).map(|m| {
                    format!(
                        "{} is read as it stands without its write-ahead log ({} bytes in {}, which a read-only directory keeps SQLite from reading); runs saved last may be missing",
                        path.display(),
                        m.len(),
                        wal.display()
                    )
                });
                Ok(ReadOnly { db, note })
            }
            // Damage (or success) is for the store's checks to say, with the quick_check.
            _ => Ok(ReadOnly { db, note: None }),
        }
    }
}

/// Whether SQLite's error means the file's content is damaged (or no database at all).
pub(crate) fn is_damage(e: &DbError) -> bool {
    matches!(e, DbError::Sqlite(e)
        if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)))
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

fn connect_ro(path: &Path, immutable: bool) -> Result<Connection, DbError> {
    let query = if immutable { "immutable=1" } else { "mode=ro" };
    let uri = format!("file:{}?{query}", uri_path(path));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Ok(Connection::open_with_flags(uri, flags)?)
}

impl ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(x) => ValueRef::Real(*x),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn value_of(v: ValueRef<'_>) -> Value<'static> {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned().into()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec().into()),
    }
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, DbError> {
        let mut st = self.conn.prepare_cached(sql)?;
        Ok(st.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<Row>, DbError> {
        let mut st = self.conn.prepare_cached(sql)?;
        let n = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(Row((0..n).map(|i| r.get_ref(i).map(value_of)).collect::<rusqlite::Result<_>>()?));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin(&mut self, exclusive: bool) -> Result<(), DbError> {
        // IMMEDIATE takes the write lock now: a second process migrating the same new
        // database waits here, then finds the work done.
        Ok(self.conn.execute_batch(if exclusive { "BEGIN IMMEDIATE" } else { "BEGIN" })?)
    }

    fn commit(&mut self) -> Result<(), DbError> {
        Ok(self.conn.execute_batch("COMMIT")?)
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        Ok(self.conn.execute_batch("ROLLBACK")?)
    }

    fn inspect(&mut self) -> Result<Found, DbError> {
        let tx = self.conn.unchecked_transaction()?;
        let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        let runs: i64 =
            tx.query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='runs'", [], |r| r.get(0))?;
        Ok(Found { version, has_runs: runs == 1, tables: tables.max(0) as u64 })
    }

    fn prepare_writes(&mut self) -> Result<(), DbError> {
        // Another process creating the same database may hold the lock that switching to WAL
        // needs; SQLite does not always wait for it, so wait here.
        let mode: String = self.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            let start = Instant::now();
            loop {
                match self.conn.pragma_update(None, "journal_mode", "WAL") {
                    Err(e) if busy(&e) && start.elapsed() < Duration::from_secs(10) => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    r => break r?,
                }
            }
        }
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    fn version(&mut self) -> Result<u32, DbError> {
        Ok(self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn set_version(&mut self, v: u32) -> Result<(), DbError> {
        Ok(self.conn.pragma_update(None, "user_version", v)?)
    }

    fn retryable(&self, e: &DbError) -> bool {
        matches!(e, DbError::Sqlite(e) if busy(e))
    }

    fn limit_cache(&mut self, kib: u32) -> Result<(), DbError> {
        Ok(self.conn.pragma_update(None, "cache_size", -(kib as i64))?)
    }

    /// The database copied into a new one in memory (SQLite's backup), to be migrated there:
    /// an older schema read without changing the file.
    fn copy_in_memory(&mut self) -> Result<Option<Box<dyn Backend>>, DbError> {
        let mut mem = Connection::open_in_memory()?;
        {
            let backup = rusqlite::backup::Backup::new(&self.conn, &mut mem)?;
            backup.run_to_completion(1024, Duration::ZERO, None)?;
        }
        Ok(Some(Box::new(Self::ready(mem)?)))
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        Ok(self.conn.pragma_update(None, "query_only", true)?)
    }

    fn quick_check(&mut self, e: &DbError) -> Option<String> {
        if !is_damage(e) {
            return None;
        }
        let lines: rusqlite::Result<Vec<String>> = self
            .conn
            .prepare("PRAGMA quick_check(5)")
            .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect());
        Some(match lines {
            Ok(l) if l.is_empty() => "no result".into(),
            Ok(l) => l.join("; "),
            Err(e) => format!("it could not run ({e})"),
        })
    }
}

fn busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(e, _)
        if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_escape_what_a_uri_reads() {
        assert_eq!(uri_path(Path::new("/tmp/a b/r?s#t%.db")), "/tmp/a%20b/r%3Fs%23t%25.db");
        assert_eq!(uri_path(Path::new("rel/results.db")), "rel/results.db");
    }
}
