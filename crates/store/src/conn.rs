//! The store's hold on its backend: opening a database with the checks made before anything
//! is written (a foreign, damaged or newer one is refused untouched), the migrations, and the
//! calls every query goes through (one statement, or several in one transaction), each error
//! kept with what was being done and where.

use crate::backend::postgres::Postgres;
use crate::backend::sqlite::Sqlite;
use crate::backend::{Access, Backend, DbError, Dialect, Row, Value};
use crate::{schema, NotIolab, Result, Store, StoreError, Target};
use std::cell::{RefCell, RefMut};
use std::path::Path;
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
    /// A failed statement's error; the engine's word that the database is damaged becomes
    /// iolab's own message with SQLite's quick_check.
    fn fail(&mut self, what: &'static str, cause: DbError) -> StoreError {
        match self.db.quick_check(&cause) {
            Some(quick_check) => {
                StoreError::Corrupt { at: self.at.clone(), cause: NotIolab::Damaged { cause, quick_check } }
            }
            None => StoreError::Sql { at: self.at.clone(), what, cause },
        }
    }

    /// One statement; the rows it changed.
    pub fn exec(&mut self, what: &'static str, sql: &str, params: &[Value<'_>]) -> Result<u64> {
        match self.db.execute(sql, params) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail(what, e)),
        }
    }

    /// One statement's rows, each made into a `T` by `f`.
    pub fn rows<T>(
        &mut self,
        what: &'static str,
        sql: &str,
        params: &[Value<'_>],
        f: impl Fn(&Row) -> std::result::Result<T, DbError>,
    ) -> Result<Vec<T>> {
        let rows = match self.db.query(sql, params) {
            Ok(rows) => rows,
            Err(e) => return Err(self.fail(what, e)),
        };
        let at = self.at;
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

/// The largest SQLite file read through a migrated copy in memory (an older schema, opened to
/// read): a larger one is upgraded by a writing command first.
pub const MAX_COPY_BYTES: u64 = 512 << 20;

/// Refuse a path that is not a regular file, before SQLite sees it (`exists`: it must exist):
/// a directory, a device, a FIFO or a socket is named, never opened, read or waited on.
pub(crate) fn check_path(path: &Path, exists: bool) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(StoreError::NotRegular {
            path: path.into(),
            kind: iolab_spec::input::not_regular(&m.file_type()).unwrap_or("not a regular file"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !exists => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::Missing(Target::File(path.into()))),
        Err(cause) => Err(StoreError::Unreadable { path: path.into(), cause }),
    }
}

impl Store {
    pub(crate) fn connect(at: Target, access: Access) -> Result<Store> {
        let mut note = None;
        let db: Box<dyn Backend> = match &at {
            Target::File(path) => {
                check_path(path, access != Access::Write)?;
                match access {
                    Access::Write => {
                        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                            std::fs::create_dir_all(dir)
                                .map_err(|cause| StoreError::CreateDir { dir: dir.into(), cause })?;
                        }
                        Box::new(Sqlite::open(path).map_err(sql_error(&at, "opening"))?)
                    }
                    Access::Existing => Box::new(Sqlite::open(path).map_err(sql_error(&at, "opening"))?),
                    Access::Read => {
                        let ro = Sqlite::open_read(path).map_err(sql_error(&at, "opening read-only"))?;
                        note = ro.note;
                        Box::new(ro.db)
                    }
                }
            }
            Target::Postgres(url) => Box::new(Postgres::connect(url).map_err(sql_error(&at, "connecting"))?),
        };
        let mut store = Store { db: RefCell::new(db), at, note };
        let version = store.check(access)?;
        if access == Access::Read {
            if version < schema::VERSION {
                store.copy_in_memory(version)?;
                store.migrate()?;
            }
            store.conn()?.db.read_only().map_err(sql_error(&store.at, "opening read-only"))?;
            return Ok(store);
        }
        store.conn()?.db.prepare_writes().map_err(sql_error(&store.at, "preparing the connection"))?;
        if version < schema::VERSION {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Read what is there before writing anything: a damaged, foreign or newer database is
    /// refused as it is (a damaged file with SQLite's quick_check); to read, an empty one too,
    /// and on a server an older one. Returns the schema version found.
    fn check(&self, access: Access) -> Result<u32> {
        let at = &self.at;
        let inspected = self.conn()?.db.inspect();
        let found = match inspected {
            Ok(found) => found,
            Err(e) => {
                let cause = match self.conn()?.db.quick_check(&e) {
                    Some(quick_check) => NotIolab::Damaged { cause: e, quick_check },
                    None => NotIolab::Unreadable(e),
                };
                return Err(StoreError::Corrupt { at: at.clone(), cause });
            }
        };
        if found.version > schema::VERSION {
            return Err(StoreError::Newer { at: at.clone(), found: found.version, known: schema::VERSION });
        }
        if found.version > 0 && !found.has_runs {
            return Err(StoreError::Corrupt { at: at.clone(), cause: NotIolab::NoRunsTable(found.version) });
        }
        if found.version == 0 && found.tables > 0 {
            return Err(StoreError::Corrupt { at: at.clone(), cause: NotIolab::Foreign });
        }
        match at {
            // A server's database with nothing of iolab's is no results database yet; reading
            // it creates nothing.
            Target::Postgres(_) if found.version == 0 && access != Access::Write => {
                return Err(StoreError::Missing(at.clone()))
            }
            // Reading never migrates a server's database (other clients share it).
            Target::Postgres(_) if found.version < schema::VERSION && access == Access::Read => {
                return Err(StoreError::Older { at: at.clone(), found: found.version, known: schema::VERSION })
            }
            // An empty file has no run to read (one opened to delete is made a database, as
            // it always was).
            Target::File(_) if found.version == 0 && access == Access::Read => {
                return Err(StoreError::Corrupt { at: at.clone(), cause: NotIolab::Empty })
            }
            _ => {}
        }
        Ok(found.version)
    }

    /// An older SQLite schema opened to read: swap the read-only connection for a copy of the
    /// database in memory, which `migrate` then upgrades; the file is left as it is.
    fn copy_in_memory(&mut self, found: u32) -> Result<()> {
        let older = || StoreError::Older { at: self.at.clone(), found, known: schema::VERSION };
        let Target::File(path) = &self.at else { return Err(older()) };
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if bytes > MAX_COPY_BYTES {
            return Err(StoreError::OldSchemaTooLarge { path: path.clone(), bytes, cap: MAX_COPY_BYTES });
        }
        let copy = self.conn()?.db.copy_in_memory().map_err(sql_error(&self.at, "copying the database into memory"))?;
        *self.db.get_mut() = copy.ok_or_else(older)?;
        Ok(())
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
