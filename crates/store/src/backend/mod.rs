//! The seam between the store and a database engine. Everything the store knows about runs is
//! written once, above this seam, in SQL both engines speak (`?N` parameters, `INSERT ... ON
//! CONFLICT ... DO UPDATE`, `RETURNING`); a backend carries what is its own: connecting, the
//! schema marker and version, the checks made before anything is written, locking for
//! migrations, transactions, and turning values into its types and back.
//!
//! - [`sqlite`]: a file; `PRAGMA user_version` is the version; WAL, busy waits.
//! - [`postgres`]: a server; the table `iolab_schema` is iolab's marker and holds the version;
//!   migrations take an advisory lock.
//!
//! A change that concerns one engine (opening SQLite read-only for reading commands: `Access::Read`,
//! `Sqlite::open_read`) lands in its backend; a new table lands in `schema::MIGRATIONS` (with a PostgreSQL text where its
//! SQL differs), its queries once in the store, and its name in `copy::TABLES`.

mod pg_error;
mod pg_tls;
pub(crate) mod postgres;
pub(crate) mod sqlite;

use std::borrow::Cow;

/// Which SQL an engine speaks where the two differ (column types in migrations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// What a store is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Recording: created where missing.
    Write,
    /// Deleting: it must exist already (`Missing` otherwise, nothing created); migrated.
    Existing,
    /// Reading (`runs`, `show`, `compare`, `report`, `export`): it must exist and hold iolab's
    /// schema; opened read-only and never migrated (SQLite: `mode=ro`, or `immutable=1` where
    /// the directory cannot be written; an older schema is read from a migrated copy in memory).
    Read,
}

/// A value passed to or read from SQL: the five kinds both engines store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(Cow<'a, [u8]>),
}

impl Value<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a number",
            Value::Text(_) => "text",
            Value::Blob(_) => "bytes",
        }
    }
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<u32> for Value<'_> {
    fn from(v: u32) -> Self {
        Value::Int(v.into())
    }
}
impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Int(v.into())
    }
}
impl From<f64> for Value<'_> {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}
impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(Cow::Borrowed(v))
    }
}
impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(Cow::Borrowed(v.as_str()))
    }
}
impl From<String> for Value<'_> {
    fn from(v: String) -> Self {
        Value::Text(Cow::Owned(v))
    }
}
impl From<Vec<u8>> for Value<'_> {
    fn from(v: Vec<u8>) -> Self {
        Value::Blob(Cow::Owned(v))
    }
}
impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(Value::Null)
    }
}

/// `vals![a, b, c]`: statement parameters, each converted with `Value::from`.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$($crate::backend::Value::from($v)),*][..] };
}
pub(crate) use vals;

/// One row of a query's result, its columns in the order selected.
#[derive(Debug, Clone)]
pub(crate) struct Row(pub Vec<Value<'static>>);

impl Row {
    /// Column `i` as `T`; an error names the column and what it held.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T, DbError> {
        let v = self.0.get(i).unwrap_or(&Value::Null);
        T::from_value(v).ok_or_else(|| DbError::Column { index: i, expected: T::EXPECTED, found: v.kind() })
    }
}

/// A Rust value a column converts to.
pub(crate) trait FromValue: Sized {
    const EXPECTED: &'static str;
    fn from_value(v: &Value<'_>) -> Option<Self>;
}

impl FromValue for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_value(v: &Value<'_>) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}
impl FromValue for u32 {
    const EXPECTED: &'static str = "an integer from 0 to 4294967295";
    fn from_value(v: &Value<'_>) -> Option<Self> {
        i64::from_value(v).and_then(|i| u32::try_from(i).ok())
    }
}
impl FromValue for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_value(v: &Value<'_>) -> Option<Self> {
        match v {
            Value::Real(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}
impl FromValue for String {
    const EXPECTED: &'static str = "text";
    fn from_value(v: &Value<'_>) -> Option<Self> {
        match v {
            Value::Text(t) => Some(t.to_string()),
            _ => None,
        }
    }
}
impl FromValue for Vec<u8> {
    const EXPECTED: &'static str = "bytes";
    fn from_value(v: &Value<'_>) -> Option<Self> {
        match v {
            Value::Blob(b) => Some(b.to_vec()),
            _ => None,
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(v: &Value<'_>) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// An engine's error, kept whole.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", pg_error::text(.0))]
    Postgres(#[from] ::postgres::Error),
    /// An error in words: connecting (the engine's text, any password replaced by `***`), or
    /// what the engine did not say (a schema to keep the tables in, an id that did not come back).
    #[error("{0}")]
    Message(String),
    #[error("column {index}: expected {expected}, found {found}")]
    Column { index: usize, expected: &'static str, found: &'static str },
    #[error("the connection is already in use (an iolab bug: a store call made inside another)")]
    InUse,
}

/// What is there before anything is written: read in one transaction, so a database another
/// process is creating is seen empty or whole, never half made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// iolab's schema version (0: no marker).
    pub version: u32,
    /// Whether the `runs` table exists.
    pub has_runs: bool,
    /// How many tables there are, iolab's or not.
    pub tables: u64,
}

/// A connection to one database, in the terms the store needs.
pub(crate) trait Backend: Send {
    fn dialect(&self) -> Dialect;
    /// One statement; the rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, DbError>;
    /// One statement's rows.
    fn query(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<Row>, DbError>;
    /// Several statements without parameters (a migration).
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;
    /// Start a transaction; `exclusive` (a migration) holds off every other writer of the
    /// schema until it ends.
    fn begin(&mut self, exclusive: bool) -> Result<(), DbError>;
    fn commit(&mut self) -> Result<(), DbError>;
    fn rollback(&mut self) -> Result<(), DbError>;
    /// What is there, read without writing anything.
    fn inspect(&mut self) -> Result<Found, DbError>;
    /// Ready the connection for writing, once the checks passed (SQLite: WAL, foreign keys).
    fn prepare_writes(&mut self) -> Result<(), DbError>;
    /// The schema version, inside a transaction.
    fn version(&mut self) -> Result<u32, DbError>;
    /// Set the schema version, inside the migration's transaction.
    fn set_version(&mut self, v: u32) -> Result<(), DbError>;
    /// Whether an error is another writer in the way, worth trying again after a pause.
    fn retryable(&self, e: &DbError) -> bool;
    /// Hold at most `kib` KiB of the database in this process's memory, where the engine keeps
    /// pages in it.
    fn limit_cache(&mut self, kib: u32) -> Result<(), DbError>;
    /// Refuse every write from now on (SQLite: `query_only`; PostgreSQL: read-only
    /// transactions for the session).
    fn read_only(&mut self) -> Result<(), DbError>;
    /// Where `e` says the database's content is damaged, the engine's own check of it (SQLite's
    /// `quick_check`, its first lines), to say beside the error.
    fn quick_check(&mut self, e: &DbError) -> Option<String>;
    /// A copy of the whole database in this process's memory, where the engine can make one
    /// (SQLite: its backup); `None` on a server.
    fn copy_in_memory(&mut self) -> Result<Option<Box<dyn Backend>>, DbError>;
}
