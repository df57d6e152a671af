//! The SQLite backend: one file, `PRAGMA user_version` as the schema version, WAL so readers
//! never wait for the recording run, and a 10 s wait on another process's lock.

use super::{Backend, DbError, Dialect, Found, Row, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, DbError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Sqlite { conn })
    }
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
}

fn busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(e, _)
        if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}
