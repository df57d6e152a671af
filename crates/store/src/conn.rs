//! The store's hold on its backend: opening a database with the checks made before anything
//! is written (a foreign, damaged or newer one is refused untouched), the migrations, and the
//! calls every query goes through (one statement, or several in one transaction), each error
//! kept with what was being done and where.

use crate::backend::postgres::Postgres;
use crate::backend::sqlite::Sqlite;
use crate::backend::{Access, Backend, DbError, Dialect, Row, Value};
use crate::{schema, NotIolab, Result, Store, StoreError, Target};
use std::cell::{RefCell, RefMut};
use std::time::{Duration, Instant};

/// How long a migration waits for another process's lock before giving up.
const MIGRATION_PATIENCE: Duration = Duration::from_secs(10);

/// The connection, held for one call or one transaction.
pub(crate) struct Conn<'s> {
    db: RefMut<'s, Box<dyn Backend>>,
    at: &'s Target,
}

pub(crate) fn sql_error<'a>(at: &'a Target, what: &'static str) -> impl FnOnce(DbError) -> StoreError + 'a {
    move |cause| StoreError::Sql { at: at.clone(), what, cause }
}

impl Conn<'_> {
    /// One statement; the rows it changed.
    pub fn exec(&mut self, what: &'static str, sql: &str, params: &[Value<'_>]) -> Result<u64> {
        self.db.execute(sql, params).map_err(sql_error(self.at, what))
    }

    /// One statement's rows, each made into a `T` by `f`.
    pub fn rows<T>(
        &mut self,
        what: &'static str,
        sql: &str,
        params: &[Value<'_>],
        f: impl Fn(&Row) -> std::result::Result<T, DbError>,
    ) -> Result<Vec<T>> {
        let at = self.at;
        let rows = self.db.query(sql, params).map_err(sql_error(at, what))?;
        rows.iter().map(|r| f(r).map_err(sql_error(at, what))).collect()
    }

    /// The first row, if any.
    pub fn row<T>(
        &mut self,
        what: &'static str,
        sql: &str,
        params: &[Value<'_>],
        f: impl Fn(&Row) -> std::result::Result<T, DbError>,
    ) -> Result<Option<T>> {
        Ok(self.rows(what, sql, params, f)?.into_iter().next())
    }

    pub fn dialect(&self) -> Dialect {
        self.db.dialect()
    }
}

impl Store {
    pub(crate) fn connect(at: Target, access: Access) -> Result<Store> {
        let db: Box<dyn Backend> = match &at {
            Target::File(path) => {
                match access {
                    Access::Write => {
                        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                            std::fs::create_dir_all(dir)
                                .map_err(|cause| StoreError::CreateDir { dir: dir.into(), cause })?;
                        }
                    }
                    Access::Existing if !path.exists() => return Err(StoreError::Missing(at)),
                    Access::Existing => {}
                }
                Box::new(Sqlite::open(path).map_err(sql_error(&at, "opening"))?)
            }
            Target::Postgres(url) => Box::new(Postgres::connect(url).map_err(sql_error(&at, "connecting"))?),
        };
        let store = Store { db: RefCell::new(db), at };
        let version = store.check(access)?;
        store.conn()?.db.prepare_writes().map_err(sql_error(&store.at, "preparing the connection"))?;
        if version < schema::VERSION {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Read what is there before writing anything: a damaged, foreign or newer database is
    /// refused as it is. Returns the schema version found.
    fn check(&self, access: Access) -> Result<u32> {
        let at = &self.at;
        let corrupt = |e: DbError| StoreError::Corrupt { at: at.clone(), cause: NotIolab::Unreadable(e) };
        let found = self.conn()?.db.inspect().map_err(corrupt)?;
        if found.version > schema::VERSION {
            return Err(StoreError::Newer { at: at.clone(), found: found.version, known: schema::VERSION });
        }
        if found.version > 0 && !found.has_runs {
            return Err(StoreError::Corrupt { at: at.clone(), cause: NotIolab::NoRunsTable(found.version) });
        }
        if found.version == 0 && found.tables > 0 {
            return Err(StoreError::Corrupt { at: at.clone(), cause: NotIolab::Foreign });
        }
        // A server's database with nothing of iolab's is no results database yet; reading it
        // creates nothing (an SQLite file that exists is made one, as it always was).
        if found.version == 0 && access == Access::Existing && matches!(at, Target::Postgres(_)) {
            return Err(StoreError::Missing(at.clone()));
        }
        Ok(found.version)
    }

    /// Apply the missing migrations, each in an exclusive transaction that re-reads the version
    /// inside it: a second process opening the same new database waits, then finds it done.
    fn migrate(&self) -> Result<()> {
        for (i, m) in schema::MIGRATIONS.iter().enumerate() {
            let start = Instant::now();
            loop {
                let mut c = self.conn()?;
                let sql = m.sql(c.dialect());
                let r = c.db.begin(true).and_then(|()| {
                    let step = (|| {
                        if c.db.version()? > i as u32 {
                            return Ok(());
                        }
                        c.db.batch(sql)?;
                        c.db.set_version(i as u32 + 1)
                    })();
                    match step {
                        Ok(()) => c.db.commit(),
                        Err(e) => {
                            let _ = c.db.rollback();
                            Err(e)
                        }
                    }
                });
                match r {
                    Err(e) if c.db.retryable(&e) && start.elapsed() < MIGRATION_PATIENCE => {
                        drop(c);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    r => break r.map_err(sql_error(&self.at, "migrating the schema"))?,
                }
            }
        }
        Ok(())
    }

    /// The connection for one call (a store call made while another holds it is an error,
    /// never a panic).
    pub(crate) fn conn(&self) -> Result<Conn<'_>> {
        let db = self.db.try_borrow_mut().map_err(|_| StoreError::Sql {
            at: self.at.clone(),
            what: "using the connection",
            cause: DbError::InUse,
        })?;
        Ok(Conn { db, at: &self.at })
    }

    /// Several statements in one transaction: all of them or none.
    pub(crate) fn tx<T>(&self, what: &'static str, f: impl FnOnce(&mut Conn<'_>) -> Result<T>) -> Result<T> {
        let mut c = self.conn()?;
        c.db.begin(false).map_err(sql_error(&self.at, what))?;
        match f(&mut c) {
            Ok(v) => {
                c.db.commit().map_err(sql_error(&self.at, what))?;
                Ok(v)
            }
            Err(e) => {
                let _ = c.db.rollback();
                Err(e)
            }
        }
    }

    pub(crate) fn exec(&self, what: &'static str, sql: &str, params: &[Value<'_>]) -> Result<u64> {
        self.conn()?.exec(what, sql, params)
    }

    pub(crate) fn rows<T>(
        &self,
        what: &'static str,
        sql: &str,
        params: &[Value<'_>],
        f: impl Fn(&Row) -> std::result::Result<T, DbError>,
    ) -> Result<Vec<T>> {
        self.conn()?.rows(what, sql, params, f)
    }

    pub(crate) fn row<T>(
        &self,
        what: &'static str,
        sql: &str,
        params: &[Value<'_>],
        f: impl Fn(&Row) -> std::result::Result<T, DbError>,
    ) -> Result<Option<T>> {
        self.conn()?.row(what, sql, params, f)
    }

    /// Hold at most `kib` KiB of database pages in memory (SQLite's default is 2,000 KiB; a
    /// server keeps its pages itself). A connection that only appends for hours (a run being
    /// recorded) needs little: its memory then stops growing long before the cache would fill.
    pub fn limit_cache(&self, kib: u32) -> Result<()> {
        self.conn()?.db.limit_cache(kib).map_err(sql_error(&self.at, "limiting the page cache"))
    }

    pub fn schema_version(&self) -> u32 {
        self.conn().ok().and_then(|mut c| c.db.version().ok()).unwrap_or(0)
    }
}
