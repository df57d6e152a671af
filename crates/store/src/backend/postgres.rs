//! The PostgreSQL backend: a database on a server, reached with the `postgres` crate (pure
//! Rust, no libpq). iolab's tables live in the connection's current schema (the first of its
//! `search_path` that exists); the table `iolab_schema` is iolab's marker and holds the schema
//! version. A migration takes a transaction-scoped advisory lock, so iolabs on many hosts
//! opening a new database at once migrate it once. Statements are prepared once per connection.
//!
//! The `postgres` crate drives tokio-postgres with a runtime of its own and panics when called
//! from a thread inside another runtime (the coordinator of a run of several nodes records from
//! inside its own), so the connection lives on a thread of its own: [`Postgres`] hands each call
//! to it and waits for the answer; [`Session`] is the connection on that thread.

use super::pg_error::text;
use super::{Backend, DbError, Dialect, Found, Row, Value};
use crate::target::{scrub, PgUrl};
use bytes::BytesMut;
use postgres::error::SqlState;
use postgres::types::{FromSql, IsNull, ToSql, Type};
use postgres::{Client, Statement};
use std::borrow::Cow;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The advisory lock a migration holds ("iolab" in ASCII, then "sch").
const MIGRATION_LOCK: i64 = 0x696f_6c61_6273_6368;

/// How long connecting may take when the URL does not say (`connect_timeout=SECONDS`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long sent data may go unacknowledged before the connection counts as broken, when the
/// URL does not say (`tcp_user_timeout=SECONDS`).
const UNANSWERED: Duration = Duration::from_secs(30);

/// A call handed to the connection's thread.
type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The connection, on a thread of its own.
pub(crate) struct Postgres {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

fn gone() -> DbError {
    DbError::Message("the connection's thread ended".into())
}

impl Postgres {
    /// Connect, on a new thread that keeps the connection until this is dropped.
    pub fn connect(url: &PgUrl) -> Result<Postgres, DbError> {
        let url = url.clone();
        let (jobs, todo) = mpsc::channel::<Job>();
        let (ready, connected) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-postgres".into())
            .spawn(move || {
                let mut session = match Session::connect(&url) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                for job in todo {
                    job(&mut session);
                }
            })
            .map_err(|e| DbError::Message(format!("starting the connection's thread: {e}")))?;
        connected.recv().map_err(|_| gone())??;
        Ok(Postgres { jobs: Some(jobs), thread: Some(thread) })
    }

    /// Run `f` on the connection's thread and wait for its answer.
    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<R, DbError> + Send + 'static,
    ) -> Result<R, DbError> {
        let (answer, answered) = mpsc::sync_channel(1);
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        jobs.send(Box::new(move |s: &mut Session| {
            let _ = answer.send(f(s));
        }))
        .map_err(|_| gone())?;
        answered.recv().map_err(|_| gone())?
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which closes the connection.
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Parameters the connection's thread can keep.
fn owned(params: &[Value<'_>]) -> Vec<Value<'static>> {
    params
        .iter()
        .map(|v| match v {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(*i),
            Value::Real(x) => Value::Real(*x),
            Value::Text(t) => Value::Text(Cow::Owned(t.to_string())),
            Value::Blob(b) => Value::Blob(Cow::Owned(b.to_vec())),
        })
        .collect()
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, DbError> {
        let (sql, params) = (sql.to_string(), owned(params));
        self.call(move |s| s.execute(&sql, &params))
    }

    fn query(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<Row>, DbError> {
        let (sql, params) = (sql.to_string(), owned(params));
        self.call(move |s| s.query(&sql, &params))
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let sql = sql.to_string();
        self.call(move |s| s.batch(&sql))
    }

    fn begin(&mut self, exclusive: bool) -> Result<(), DbError> {
        self.call(move |s| s.begin(exclusive))
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.call(|s| s.commit())
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        self.call(|s| s.rollback())
    }

    fn inspect(&mut self) -> Result<Found, DbError> {
        self.call(|s| s.inspect())
    }

    fn prepare_writes(&mut self) -> Result<(), DbError> {
        Ok(())
    }

    fn version(&mut self) -> Result<u32, DbError> {
        self.call(|s| s.version())
    }

    fn set_version(&mut self, v: u32) -> Result<(), DbError> {
        self.call(move |s| s.set_version(v))
    }

    fn retryable(&self, e: &DbError) -> bool {
        let DbError::Postgres(e) = e else { return false };
        matches!(e.code(), Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
    }

    fn limit_cache(&mut self, _kib: u32) -> Result<(), DbError> {
        // The server keeps the pages; this process holds none.
        Ok(())
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        self.batch("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    }

    fn quick_check(&mut self, _e: &DbError) -> Option<String> {
        // The server checks its own pages; there is no file here to check.
        None
    }

    fn copy_in_memory(&mut self) -> Result<Option<Box<dyn Backend>>, DbError> {
        Ok(None)
    }
}

/// The connection itself, on its thread.
pub(crate) struct Session {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Session {
    /// Connect. The password comes from the URL, else from `PGPASSWORD`; errors never carry it.
    fn connect(url: &PgUrl) -> Result<Session, DbError> {
        let mut secrets = url.passwords();
        let env_password = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty());
        secrets.extend(env_password.clone());
        let clean = |e: &dyn std::fmt::Display| DbError::Message(scrub(&e.to_string(), &secrets));
        let tls = super::pg_tls::Tls::from_url(url.secret()).map_err(|e| clean(&e))?;
        let mut config: postgres::Config = tls.url().parse().map_err(|e: postgres::Error| clean(&text(&e)))?;
        if config.get_password().is_none() {
            if let Some(p) = &env_password {
                config.password(p);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // A server that stops answering mid-run (a network cut) fails the recording's next
        // statement within this, rather than holding it forever; the run goes on unsaved.
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(UNANSWERED);
        }
        if config.get_application_name().is_none() {
            config.application_name("iolab");
        }
        config.ssl_mode(tls.ssl_mode());
        let client = tls.connect(&config).map_err(|e| clean(&e))?;
        Ok(Session { client, statements: HashMap::new() })
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(&numbered(sql))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

/// `?1` parameters as PostgreSQL writes them, `$1` (the store's SQL has no `?` elsewhere).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut it = sql.chars().peekable();
    while let Some(c) = it.next() {
        if c == '?' && it.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn refs<'a>(params: &'a [Value<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

type BoxError = Box<dyn StdError + Sync + Send>;

fn mismatch(v: &Value<'_>, ty: &Type) -> BoxError {
    format!("cannot store {} in a column of type {ty}", v.kind()).into()
}

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                _ => Err(mismatch(self, ty)),
            },
            Value::Real(x) => match *ty {
                Type::FLOAT8 => x.to_sql(ty, out),
                Type::FLOAT4 => (*x as f32).to_sql(ty, out),
                _ => Err(mismatch(self, ty)),
            },
            Value::Text(t) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => t.as_ref().to_sql(ty, out),
                _ => Err(mismatch(self, ty)),
            },
            Value::Blob(b) => match *ty {
                Type::BYTEA => b.as_ref().to_sql(ty, out),
                _ => Err(mismatch(self, ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

impl<'a> FromSql<'a> for Value<'static> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                Value::Text(Cow::Owned(String::from_sql(ty, raw)?))
            }
            Type::BYTEA => Value::Blob(Cow::Owned(Vec::<u8>::from_sql(ty, raw)?)),
            _ => return Err(format!("iolab does not read columns of type {ty}").into()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

impl Session {
    pub fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, DbError> {
        let st = self.statement(sql)?;
        Ok(self.client.execute(&st, &refs(params))?)
    }

    pub fn query(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<Row>, DbError> {
        let st = self.statement(sql)?;
        let rows = self.client.query(&st, &refs(params))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| r.try_get::<_, Value<'static>>(i)).collect::<Result<Vec<_>, _>>().map(Row))
            .collect::<Result<_, _>>()
            .map_err(DbError::from)
    }

    pub fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.client.batch_execute(sql)?)
    }

    pub fn begin(&mut self, exclusive: bool) -> Result<(), DbError> {
        self.client.batch_execute("BEGIN")?;
        if exclusive {
            self.client.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        }
        Ok(())
    }

    pub fn commit(&mut self) -> Result<(), DbError> {
        Ok(self.client.batch_execute("COMMIT")?)
    }

    pub fn rollback(&mut self) -> Result<(), DbError> {
        Ok(self.client.batch_execute("ROLLBACK")?)
    }

    pub fn inspect(&mut self) -> Result<Found, DbError> {
        // One snapshot for every read: a database another iolab is creating is seen before or
        // after, never in between.
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let schema: Option<String> = tx.query_one("SELECT current_schema()", &[])?.try_get(0)?;
        if schema.is_none() {
            let path: String = tx.query_one("SHOW search_path", &[])?.try_get(0)?;
            return Err(DbError::Message(format!(
                "no schema to keep iolab's tables in: the search_path ({path}) names none that exists; create one or choose one with options=-csearch_path%3DNAME in the URL"
            )));
        }
        let r = tx.query_one(
            "SELECT count(*), count(*) FILTER (WHERE tablename = 'runs'), count(*) FILTER (WHERE tablename = 'iolab_schema') FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
            &[],
        )?;
        let (tables, runs, marker): (i64, i64, i64) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
        let version = if marker > 0 { read_version(&mut tx)? } else { 0 };
        tx.commit()?;
        Ok(Found { version, has_runs: runs > 0, tables: tables.max(0) as u64 })
    }

    pub fn version(&mut self) -> Result<u32, DbError> {
        let marker: bool = self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'iolab_schema')",
                &[],
            )?
            .try_get(0)?;
        if !marker {
            return Ok(0);
        }
        read_version(&mut self.client)
    }

    pub fn set_version(&mut self, v: u32) -> Result<(), DbError> {
        self.client.batch_execute(
            "CREATE TABLE IF NOT EXISTS iolab_schema (version BIGINT NOT NULL); DELETE FROM iolab_schema;",
        )?;
        self.client.execute("INSERT INTO iolab_schema (version) VALUES ($1)", &[&i64::from(v)])?;
        Ok(())
    }
}

/// The version in the marker table (the largest, should it hold several rows).
fn read_version(c: &mut impl postgres::GenericClient) -> Result<u32, DbError> {
    let v: Option<i64> = c.query_one("SELECT max(version) FROM iolab_schema", &[])?.try_get(0)?;
    Ok(v.unwrap_or(0).clamp(0, u32::MAX as i64) as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameters_are_numbered_as_postgres_writes_them() {
        assert_eq!(
            super::numbered("SELECT a FROM t WHERE x = ?1 AND y = ?12"),
            "SELECT a FROM t WHERE x = $1 AND y = $12"
        );
        assert_eq!(super::numbered("a ? b"), "a ? b");
    }
}
