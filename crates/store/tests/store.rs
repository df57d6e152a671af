//! The results database on real files and a real PostgreSQL server: migrations, round trips
//! of real runs with their histograms, databases it must refuse and leave untouched, selectors,
//! concurrent writers, and copies between the two. Every test runs on both backends (`matrix!`
//! at the end): once on an SQLite file, once on a database of its own on the server `pg` starts.

mod pg;
use pg::Backend;

use iolab_model::{RunResult, Status};
use iolab_spec::{JobPatch, Phase, Plan, Rw};
use iolab_store::{schema, Dialect, ListFilter, Store, StoreError, Target};
use iolab_workload::{run_plan_kept, Control, NoSink};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One database of a test: a file in the test's directory, or a database of its own on the
/// server.
struct Db {
    target: Target,
    /// The file; `None` on the server.
    file: Option<PathBuf>,
    /// The server's database name (the file's tag for SQLite).
    name: String,
}

impl Backend {
    /// A new database (nothing in it yet), named after `tag`.
    fn db(self, dir: &Path, tag: &str) -> Db {
        match self {
            Backend::Sqlite => {
                let file = dir.join(format!("{tag}.db"));
                Db { target: Target::File(file.clone()), file: Some(file), name: tag.into() }
            }
            Backend::Postgres => {
                let s = pg::server().expect("the matrix runs PostgreSQL tests only with a server");
                let name = s.fresh(tag);
                Db { target: Target::parse(s.url(&name)), file: None, name }
            }
        }
    }

    /// A new database, opened.
    fn store(self, dir: &Path) -> Store {
        Store::open(&self.db(dir, "results").target).unwrap()
    }

    fn dialect(self) -> Dialect {
        match self {
            Backend::Sqlite => Dialect::Sqlite,
            Backend::Postgres => Dialect::Postgres,
        }
    }
}

/// A statement parameter for SQL run behind iolab's back.
enum P {
    I(i64),
    F(f64),
    T(String),
    B(Option<Vec<u8>>),
}

/// A plain connection to a test's database, without iolab.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(::postgres::Client),
}

impl Db {
    fn open(&self) -> Result<Store, StoreError> {
        Store::open(&self.target)
    }

    fn raw(&self) -> Raw {
        match &self.file {
            Some(f) => Raw::Sqlite(rusqlite::Connection::open(f).unwrap()),
            None => Raw::Postgres(pg::server().unwrap().client(&self.name)),
        }
    }

    /// Everything in it: the file's bytes, or every table and row on the server.
    fn snapshot(&self) -> Vec<u8> {
        match &self.file {
            Some(f) => std::fs::read(f).unwrap(),
            None => pg::dump(pg::server().unwrap(), &self.name).into_bytes(),
        }
    }
}

/// `?N` parameters as PostgreSQL writes them.
fn numbered(sql: &str) -> String {
    sql.replace('?', "$")
}

impl Raw {
    fn batch(&mut self, sql: &str) {
        match self {
            Raw::Sqlite(c) => c.execute_batch(sql).unwrap(),
            Raw::Postgres(c) => c.batch_execute(sql).unwrap(),
        }
    }

    /// iolab's schema version, where each engine keeps it.
    fn set_version(&mut self, v: u32) {
        match self {
            Raw::Sqlite(c) => c.pragma_update(None, "user_version", v).unwrap(),
            Raw::Postgres(c) => c
                .batch_execute(&format!(
                    "CREATE TABLE IF NOT EXISTS iolab_schema (version BIGINT NOT NULL); DELETE FROM iolab_schema; INSERT INTO iolab_schema VALUES ({v});"
                ))
                .unwrap(),
        }
    }

    /// One statement with `?N` parameters.
    fn exec(&mut self, sql: &str, params: &[P]) {
        match self {
            Raw::Sqlite(c) => {
                let ps: Vec<Box<dyn rusqlite::ToSql>> = params
                    .iter()
                    .map(|p| -> Box<dyn rusqlite::ToSql> {
                        match p {
                            P::I(i) => Box::new(*i),
                            P::F(f) => Box::new(*f),
                            P::T(t) => Box::new(t.clone()),
                            P::B(b) => Box::new(b.clone()),
                        }
                    })
                    .collect();
                c.execute(sql, rusqlite::params_from_iter(ps.iter())).unwrap();
            }
            Raw::Postgres(c) => {
                let ps: Vec<&(dyn ::postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| -> &(dyn ::postgres::types::ToSql + Sync) {
                        match p {
                            P::I(i) => i,
                            P::F(f) => f,
                            P::T(t) => t,
                            P::B(b) => b,
                        }
                    })
                    .collect();
                c.execute(&numbered(sql), &ps).unwrap();
            }
        }
    }

    /// The text in the first column of the first row, for a query of one id.
    fn text(&mut self, sql: &str, id: i64) -> String {
        match self {
            Raw::Sqlite(c) => c.query_row(sql, [id], |r| r.get(0)).unwrap(),
            Raw::Postgres(c) => c.query_one(&numbered(sql), &[&id]).unwrap().get(0),
        }
    }

    /// The names of a table's columns.
    fn columns(&mut self, table: &str) -> Vec<String> {
        match self {
            Raw::Sqlite(c) => c
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .flatten()
                .collect(),
            Raw::Postgres(c) => c
                .query(
                    "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                    &[&table],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect(),
        }
    }
}

/// A real run (1.5 s of mixed random I/O with fsyncs on a 4 MiB file, samples every 250 ms),
/// made once per test binary: every test reads the same one, on both backends. `slot` 1 is a
/// second, separate run, for tests of two nodes that must tell one node's figures from the
/// other's.
fn real_run(_dir: &std::path::Path) -> RunResult {
    shared_run(0)
}

fn shared_run(slot: usize) -> RunResult {
    static RUNS: [std::sync::OnceLock<RunResult>; 2] = [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    RUNS[slot]
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            run_once(dir.path())
        })
        .clone()
}

fn run_once(dir: &std::path::Path) -> RunResult {
    let job = JobPatch {
        target: Some(dir.join("f")),
        size: Some(iolab_spec::Bytes::mib(4)),
        rw: Some(Rw::RandRw),
        runtime: Some(Duration::from_millis(1500)),
        fsync_every: Some(50),
        ..Default::default()
    }
    .resolve("mixed")
    .unwrap();
    let plan = Plan { phases: vec![Phase { name: "p1".into(), jobs: vec![job] }] };
    let ctl = Control { sample_interval: Some(Duration::from_millis(250)), ..Default::default() };
    run_plan_kept(&plan, &ctl, &mut NoSink).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn save(store: &Store, r: &RunResult, l: &[(&str, &str)]) -> i64 {
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "test", &labels(l), &host, &r.plan, r.started_unix_s).unwrap();
    for (i, p) in r.phases.iter().enumerate() {
        for t in &p.timeline {
            store.add_tick(id, i, &host.hostname, t).unwrap();
        }
        store.add_phase(id, i, &host.hostname, p).unwrap();
    }
    store.finish_run(id, r.status, r.error.as_deref(), r.started_unix_s + 2.0).unwrap();
    id
}

fn migrates_from_empty_and_from_every_earlier_version(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    for from in 0..schema::VERSION {
        let db = b.db(dir.path(), &format!("v{from}"));
        {
            let mut c = db.raw();
            for (i, m) in schema::MIGRATIONS.iter().take(from as usize).enumerate() {
                c.batch(m.sql(b.dialect()));
                c.set_version(i as u32 + 1);
            }
        }
        let s = db.open().unwrap();
        assert_eq!(s.schema_version(), schema::VERSION, "from version {from}");
        // Opening again changes nothing.
        drop(s);
        assert_eq!(db.open().unwrap().schema_version(), schema::VERSION);
    }
}

fn a_real_run_round_trips_with_histograms(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = b.store(dir.path());
    let id = save(&store, &r, &[("config", "ext4 barrier=0")]);
    let back = store.load(id).unwrap();
    assert_eq!(back.labels["config"], "ext4 barrier=0");
    assert_eq!(back.result.status, Status::Complete);
    assert_eq!(back.result.plan, r.plan);
    let (a, b) = (&r.phases[0], &back.result.phases[0]);
    assert_eq!(a.total.read().ops, b.total.read().ops);
    assert_eq!(a.total.write().bytes, b.total.write().bytes);
    assert_eq!(a.total.read().lat_ns, b.total.read().lat_ns);
    assert_eq!(a.total.sync().ops, b.total.sync().ops);
    assert_eq!(a.timeline.len(), b.timeline.len());
    assert_eq!(a.jobs[0].total.write().iops, b.jobs[0].total.write().iops);
    let (sa, sb) = (a.system.as_ref().unwrap(), b.system.as_ref().unwrap());
    assert_eq!(sa.samples.len(), sb.samples.len());
    assert_eq!(sa.mean.cpu, sb.mean.cpu);
    // Histograms come back whole: the same quantiles, and they still merge.
    let (ha, hb) = (a.total.read().hist.as_ref().unwrap(), b.total.read().hist.as_ref().unwrap());
    for q in [0.5, 0.9, 0.99, 0.999] {
        assert_eq!(ha.value_at_quantile(q), hb.value_at_quantile(q));
    }
    let mut merged = hb.clone();
    merged.add(b.jobs[0].total.read().hist.as_ref().unwrap()).unwrap();
    assert_eq!(merged.len(), 2 * ha.len());
}

/// A newer, damaged or foreign database is refused before anything is written: the file's
/// bytes, or every table and row on the server, are the same after. (A file of something
/// else than SQLite has no counterpart on a server; a marker without iolab's tables does.)
fn newer_corrupt_and_foreign_files_are_refused_untouched(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let newer = b.db(dir.path(), "newer");
    {
        let mut c = newer.raw();
        c.batch("CREATE TABLE runs (id INTEGER PRIMARY KEY);");
        c.set_version(schema::VERSION + 7);
    }
    let before = newer.snapshot();
    let e = newer.open().err().unwrap();
    assert!(matches!(e, StoreError::Newer { .. }) && e.to_string().contains("newer iolab"), "{e}");
    assert_eq!(newer.snapshot(), before);

    if b == Backend::Sqlite {
        let corrupt = dir.path().join("corrupt.db");
        std::fs::write(&corrupt, b"this is not an sqlite file, it is a grocery list: eggs, milk".repeat(100)).unwrap();
        let before = std::fs::read(&corrupt).unwrap();
        let e = Store::open(&corrupt).err().unwrap();
        assert!(matches!(e, StoreError::Corrupt { .. }) && e.to_string().contains("left as it is"), "{e}");
        assert_eq!(std::fs::read(&corrupt).unwrap(), before);
    }

    let marked = b.db(dir.path(), "marked");
    marked.raw().set_version(3);
    let before = marked.snapshot();
    let e = marked.open().err().unwrap();
    assert!(matches!(e, StoreError::Corrupt { .. }) && e.to_string().contains("no runs table"), "{e}");
    assert_eq!(marked.snapshot(), before);

    let foreign = b.db(dir.path(), "other_app");
    foreign.raw().batch("CREATE TABLE inventory (sku TEXT); INSERT INTO inventory VALUES ('a');");
    let before = foreign.snapshot();
    let e = foreign.open().err().unwrap();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert_eq!(foreign.snapshot(), before);

    match b {
        Backend::Sqlite => {
            let missing = dir.path().join("nope.db");
            assert!(matches!(Store::open_existing(&missing).err().unwrap(), StoreError::Missing(_)));
            assert!(!missing.exists());
        }
        Backend::Postgres => {
            // A server's database with nothing of iolab's: reading it creates nothing.
            let empty = b.db(dir.path(), "empty");
            let e = Store::open_existing(&empty.target).err().unwrap();
            assert!(matches!(e, StoreError::Missing(_)) && e.to_string().contains("no results database"), "{e}");
            assert_eq!(empty.snapshot(), b"");
        }
    }
}

fn selectors_and_listing(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = b.store(dir.path());
    let a = save(&store, &r, &[("config", "ext4"), ("proto", "A")]);
    let b = save(&store, &r, &[("config", "drbd"), ("proto", "A")]);
    let c = save(&store, &r, &[("config", "drbd"), ("proto", "C")]);
    assert_eq!(store.resolve("last").unwrap(), [c]);
    assert_eq!(store.resolve("last~2").unwrap(), [a]);
    assert_eq!(store.resolve(&b.to_string()).unwrap(), [b]);
    assert_eq!(store.resolve("config=drbd").unwrap(), [b, c]);
    assert_eq!(store.resolve("config=drbd,proto=C").unwrap(), [c]);
    assert_eq!(store.resolve_all(&["last".into(), "config=drbd".into()]).unwrap(), [c, b]);
    for bad in ["999", "last~9", "config=zfs"] {
        let e = store.resolve(bad).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(_)) && e.to_string().contains("iolab runs"), "{e}");
    }
    assert!(matches!(store.resolve("bogus").unwrap_err(), StoreError::BadSelector(_)));
    let f = ListFilter { labels: vec![("proto".into(), "A".into())], ..Default::default() };
    assert_eq!(store.list(&f).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [a, b]);
    assert_eq!(store.remove(&[b]).unwrap(), 1);
    assert_eq!(store.resolve("config=drbd").unwrap(), [c]);
    assert!(store.load(b).is_err());
}

/// Every kind word an iolab has stored reads back as its kind; a word this iolab does not know
/// (a newer iolab's) is refused naming the run and the word, in `list` and `load` alike.
fn run_kinds_read_back_from_their_words_and_an_unknown_word_is_refused(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = b.db(dir.path(), "results");
    let store = db.open().unwrap();
    let host = iolab_sysstat::host_facts(None);
    let plan = Plan { phases: Vec::new() };
    let mut ids = Vec::new();
    for k in iolab_model::RunKind::ALL {
        ids.push((k, store.begin_run(k, "k", &BTreeMap::new(), &host, &plan, 1.0).unwrap()));
    }
    let mut c = db.raw();
    for (k, id) in &ids {
        let word = c.text("SELECT kind FROM runs WHERE id = ?1", *id);
        assert_eq!(word, k.as_str(), "stored as today's word");
        assert_eq!(store.load(*id).unwrap().kind, *k);
    }
    let listed: Vec<_> = store.list(&ListFilter::default()).unwrap().into_iter().map(|r| r.kind).collect();
    assert_eq!(listed, iolab_model::RunKind::ALL);
    let (_, last) = ids[ids.len() - 1];
    c.exec("UPDATE runs SET kind = 'steady' WHERE id = ?1", &[P::I(last)]);
    for e in [store.load(last).unwrap_err(), store.list(&ListFilter::default()).unwrap_err()] {
        assert!(matches!(e, StoreError::UnknownKind { run, .. } if run == last), "{e}");
        assert!(e.to_string().contains("`steady`") && e.to_string().contains("newer iolab"), "{e}");
    }
}

/// Three writers at once, each on its own connection (as iolabs on three hosts would be):
/// every run gets an id of its own and keeps every second.
fn writers_at_once_lose_nothing(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let db = b.db(dir.path(), "results");
    db.open().unwrap();
    let ids: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|w| {
                let (db, r) = (&db, &r);
                s.spawn(move || {
                    let store = db.open().unwrap();
                    let host = iolab_sysstat::host_facts(None);
                    let mut ids = Vec::new();
                    for k in 0..10 {
                        let id = store
                            .begin_run(
                                iolab_model::RunKind::Run,
                                &format!("w{w}-{k}"),
                                &BTreeMap::new(),
                                &host,
                                &r.plan,
                                0.0,
                            )
                            .unwrap();
                        for t in 0..20 {
                            let mut p = r.phases[0].timeline[0].clone();
                            p.t_s = t as f64 + 1.0;
                            store.add_tick(id, 0, "n", &p).unwrap();
                        }
                        store.add_phase(id, 0, "n", &r.phases[0]).unwrap();
                        store.finish_run(id, Status::Complete, None, 1.0).unwrap();
                        ids.push(id);
                    }
                    ids
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let store = db.open().unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 30);
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 30, "no id given twice: {ids:?}");
    for id in ids {
        let run = store.load(id).unwrap();
        assert_eq!(run.result.phases.len(), 1);
        assert!(run.result.phases[0].timeline.len() >= 20);
    }
}

fn many_openers_of_a_new_database_all_succeed(b: Backend) {
    // Two iolab processes starting together both create the database: none may see it half
    // made and call it foreign (a race the whole-command test once hit).
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = b.db(dir.path(), &format!("new{round}"));
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    let store = db.open().unwrap_or_else(|e| panic!("round {round}: {e}"));
                    assert_eq!(store.schema_version(), schema::VERSION);
                });
            }
        });
    }
}

/// A database written by the iolab before operation classes (schema version 1: totals with
/// read/write/sync rows and latency columns, phase JSON without `classes`, plans without
/// `workload`) opens, migrates and reads back with the same figures.
fn a_version_1_database_with_runs_reads_back_after_migrating(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let db = b.db(dir.path(), "v1");
    let strip = |v: &mut serde_json::Value, key: &str| {
        fn walk(v: &mut serde_json::Value, key: &str) {
            match v {
                serde_json::Value::Object(m) => {
                    m.remove(key);
                    m.values_mut().for_each(|x| walk(x, key));
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, key)),
                _ => {}
            }
        }
        walk(v, key)
    };
    {
        let mut c = db.raw();
        c.batch(schema::MIGRATIONS[0].sql(b.dialect()));
        c.set_version(1);
        let mut plan = serde_json::to_value(&r.plan).unwrap();
        strip(&mut plan, "workload");
        let host = serde_json::to_string(&iolab_sysstat::host_facts(None)).unwrap();
        c.exec(
            "INSERT INTO runs (id, kind, name, status, started_unix_s, ended_unix_s, node, pid, iolab_version, plan_json, host_json) VALUES (1, 'run', 'old', 'complete', 1.0, 3.0, 'oldhost', 1, '0.1.0', ?1, ?2)",
            &[P::T(plan.to_string()), P::T(host)],
        );
        let p = &r.phases[0];
        let mut slim = serde_json::to_value(p).unwrap();
        slim["timeline"] = serde_json::json!([]);
        slim["system"] = serde_json::Value::Null;
        strip(&mut slim, "classes");
        strip(&mut slim, "per_thread"); // not written before schema 3
        c.exec(
            "INSERT INTO phases (run_id, idx, node, name, elapsed_s, interrupted, result_json) VALUES (1, 0, 'oldhost', ?1, ?2, 0, ?3)",
            &[P::T(p.name.clone()), P::F(p.elapsed_s), P::T(slim.to_string())],
        );
        for (dir, t) in [("read", p.total.read()), ("write", p.total.write()), ("sync", p.total.sync())] {
            c.exec(
                "INSERT INTO totals (run_id, phase_idx, node, job, dir, ops, bytes, iops, bw_bytes, lat_p50_ns, lat_p99_ns, hist) VALUES (1, 0, 'oldhost', '', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                &[
                    P::T(dir.into()),
                    P::I(t.ops as i64),
                    P::I(t.bytes as i64),
                    P::F(t.iops),
                    P::F(t.bw_bytes),
                    P::I(t.lat_ns.p50 as i64),
                    P::I(t.lat_ns.p99 as i64),
                    P::B(t.hist.as_ref().and_then(iolab_model::hist::to_v2)),
                ],
            );
        }
        for t in &p.timeline {
            let mut v = serde_json::to_value(t).unwrap();
            strip(&mut v, "ops");
            c.exec(
                "INSERT INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (1, 0, 'oldhost', ?1, ?2)",
                &[P::F(t.t_s), P::T(v.to_string())],
            );
        }
    }
    // Read, it is read from a copy migrated in memory (SQLite), or refused (a server's
    // database is shared: a writing command upgrades it); either way it is left at version 1.
    let before = db.snapshot();
    match b {
        Backend::Sqlite => {
            let ro = Store::open_read(&db.target).unwrap();
            assert_eq!(ro.schema_version(), schema::VERSION, "the copy in memory is migrated");
            assert_eq!(ro.load(1).unwrap().result.node, "oldhost");
        }
        Backend::Postgres => {
            let e = Store::open_read(&db.target).err().unwrap();
            assert!(matches!(e, StoreError::Older { found: 1, .. }), "{e}");
            assert!(e.to_string().contains("run a writing command on it once"), "{e}");
        }
    }
    assert_eq!(db.snapshot(), before, "reading left it as it was");
    let store = db.open().unwrap();
    assert_eq!(store.schema_version(), schema::VERSION);
    let back = store.load(1).unwrap();
    assert_eq!(back.result.plan, r.plan, "an old plan reads as block jobs");
    assert_eq!(back.result.node, "oldhost");
    let (a, b) = (&r.phases[0], &back.result.phases[0]);
    assert_eq!(b.total.read().ops, a.total.read().ops);
    assert_eq!(b.total.write().bytes, a.total.write().bytes);
    assert_eq!(b.total.sync().ops, a.total.sync().ops);
    assert_eq!(b.total.read().lat_ns, a.total.read().lat_ns);
    assert_eq!(b.total.read().hist.as_ref().map(|h| h.len()), Some(a.total.read().ops));
    assert_eq!(b.timeline.len(), a.timeline.len());
    assert_eq!(b.timeline.iter().map(|t| t.read_ops).sum::<u64>(), a.total.read().ops);
    assert!(!b.jobs.is_empty() && b.jobs.iter().all(|j| j.per_thread.is_empty()), "no thread rows before schema 3");
    // The latency columns are gone: nothing keeps a value no one reads.
    let cols = db.raw().columns("totals");
    assert!(!cols.iter().any(|c| c.starts_with("lat_")), "{cols:?}");
}

/// Reading commands open the database read-only and change nothing in it: the file's bytes
/// (and no write-ahead log) or every table and row on the server are the same after, and a
/// write through a store opened to read is refused by the engine. An empty file, a directory
/// or a device given as the database is named for what it is, before SQLite sees it.
fn reading_opens_read_only_and_changes_nothing(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = b.db(dir.path(), "ro");
    let r = real_run(dir.path());
    let id = save(&db.open().unwrap(), &r, &[("config", "ro")]);
    let before = db.snapshot();
    let store = Store::open_read(&db.target).unwrap();
    assert!(store.note().is_none());
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(store.load(id).unwrap().labels["config"], "ro");
    let host = iolab_sysstat::host_facts(None);
    let e = store.begin_run(iolab_model::RunKind::Run, "no", &labels(&[]), &host, &r.plan, 1.0).err();
    assert!(matches!(e, Some(StoreError::Sql { .. })), "a write is refused: {e:?}");
    assert!(store.remove(&[id]).is_err());
    drop(store);
    assert_eq!(db.snapshot(), before);
    match b {
        Backend::Sqlite => {
            let wal = dir.path().join("ro.db-wal");
            assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0, "nothing in the write-ahead log");
            let empty = dir.path().join("empty.db");
            std::fs::write(&empty, b"").unwrap();
            let e = Store::open_read(&empty).err().unwrap();
            assert!(matches!(e, StoreError::Corrupt { .. }) && e.to_string().contains("empty"), "{e}");
            assert_eq!(std::fs::read(&empty).unwrap(), b"");
            let junk = dir.path().join("junk.db");
            let mut bytes = b"SQLite format 3\0".to_vec();
            bytes.extend(std::iter::repeat_n(0xffu8, 4096));
            std::fs::write(&junk, &bytes).unwrap();
            let e = Store::open_read(&junk).err().unwrap().to_string();
            assert!(e.contains("quick_check") && e.contains("left as it is"), "{e}");
            assert_eq!(std::fs::read(&junk).unwrap(), bytes);
            // Damage past the first page is found by the statement that reads it, and said
            // with the quick_check too.
            let hurt = dir.path().join("hurt.db");
            let mut bytes = std::fs::read(dir.path().join("ro.db")).unwrap();
            assert!(bytes.len() > 8192);
            bytes[4096..].fill(0xff);
            std::fs::write(&hurt, &bytes).unwrap();
            let e = Store::open_read(&hurt).and_then(|s| s.list(&ListFilter::default())).err().unwrap();
            assert!(matches!(e, StoreError::Corrupt { .. }) && e.to_string().contains("quick_check"), "{e}");
            assert_eq!(std::fs::read(&hurt).unwrap(), bytes);
            for (path, kind) in [(dir.path(), "a directory"), (Path::new("/dev/null"), "a character device")] {
                for e in [Store::open_read(path).err(), Store::open_existing(path).err(), Store::open(path).err()] {
                    let e = e.unwrap();
                    assert!(matches!(e, StoreError::NotRegular { .. }) && e.to_string().contains(kind), "{e}");
                }
            }
            let missing = dir.path().join("nope.db");
            assert!(matches!(Store::open_read(&missing).err().unwrap(), StoreError::Missing(_)));
            assert!(!missing.exists());
        }
        Backend::Postgres => {
            let empty = b.db(dir.path(), "empty");
            let e = Store::open_read(&empty.target).err().unwrap();
            assert!(matches!(e, StoreError::Missing(_)), "{e}");
            assert_eq!(empty.snapshot(), b"");
        }
    }
}

/// Two nodes' rows of one run stay apart: each node's phases, seconds and histograms load
/// only with that node.
fn rows_are_keyed_by_node(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = b.store(dir.path());
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "two", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    for t in &p.timeline {
        store.add_tick(id, 0, &host.hostname, t).unwrap();
        store
            .add_tick(
                id,
                0,
                "node-b",
                &iolab_model::TimelinePoint { read_ops: 1, ops: Default::default(), ..t.clone() },
            )
            .unwrap();
    }
    store.add_phase(id, 0, &host.hostname, p).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let mut nodes = store.nodes(id).unwrap();
    nodes.sort();
    let mut want = vec![host.hostname.clone(), "node-b".to_string()];
    want.sort();
    assert_eq!(nodes, want);
    let mine = store.load(id).unwrap();
    assert_eq!(mine.result.phases.len(), 1);
    assert_eq!(mine.result.phases[0].timeline.len(), p.timeline.len(), "no second counted twice");
    assert_eq!(mine.result.phases[0].total.read().ops, p.total.read().ops);
    let b = store.phases_of(id, "node-b", &r.plan).unwrap();
    assert_eq!(b.len(), 1, "node b's cut-off phase, rebuilt from its seconds");
    assert_eq!(b[0].total.read().ops, p.timeline.len() as u64);
}

/// A second is saved as it is measured; a worker's late report that lands in a second already
/// shown changes the phase's timeline, and the phase's end saves that second's new counts (and
/// any second that was never ticked), so the stored seconds add up to the totals.
fn a_second_changed_after_its_tick_is_saved_with_the_phase(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = b.store(dir.path());
    let host = iolab_sysstat::host_facts(None);
    let id =
        store.begin_run(iolab_model::RunKind::Run, "late", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    assert!(p.timeline.len() >= 2, "a 1.5 s phase has two seconds");
    // The first second was shown short of one read; the last was never ticked.
    let mut early = p.timeline[0].clone();
    early.read_ops = early.read_ops.saturating_sub(1);
    store.add_tick(id, 0, &host.hostname, &early).unwrap();
    for t in &p.timeline[1..p.timeline.len() - 1] {
        store.add_tick(id, 0, &host.hostname, t).unwrap();
    }
    store.add_phase(id, 0, &host.hostname, p).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let back = store.load(id).unwrap();
    let b = &back.result.phases[0];
    assert_eq!(b.timeline.len(), p.timeline.len());
    assert_eq!(b.timeline[0].read_ops, p.timeline[0].read_ops, "the late report is kept");
    assert_eq!(b.timeline.iter().map(|t| t.read_ops).sum::<u64>(), p.timeline.iter().map(|t| t.read_ops).sum::<u64>());
}

/// While a phase runs, each second saves its seconds, samples and the phase as it stands in one
/// transaction: a run that dies there reads back per job and per thread and is counted; the
/// phase's end replaces the provisional row.
fn a_phase_saved_as_it_stands_reads_back_and_its_end_replaces_it(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = b.store(dir.path());
    let host = iolab_sysstat::host_facts(None);
    let node = &host.hostname;
    let id =
        store.begin_run(iolab_model::RunKind::Run, "stands", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    let samples = &p.system.as_ref().unwrap().samples;
    assert!(!p.jobs[0].per_thread.is_empty());
    // A provisional phase: the first second, half the samples, totals a little short.
    let mut so_far = p.clone();
    so_far.interrupted = true;
    so_far.timeline.clear();
    so_far.system = None;
    so_far.elapsed_s = 1.0;
    so_far.jobs[0].per_thread[0].ops -= 1;
    store.add_second(id, 0, node, &p.timeline[..1], &samples[..samples.len() / 2], Some(&so_far)).unwrap();
    let list = store.list(&ListFilter::default()).unwrap();
    assert_eq!(list[0].phases, 1, "a phase saved as it stands is counted");
    let mid = store.load(id).unwrap();
    let m = &mid.result.phases[0];
    assert!(m.interrupted && m.elapsed_s == 1.0);
    assert_eq!(m.timeline.len(), 1);
    assert_eq!(m.jobs.len(), p.jobs.len());
    assert_eq!(m.jobs[0].per_thread, so_far.jobs[0].per_thread);
    assert_eq!(m.jobs[0].total.read().hist.as_ref().map(|h| h.len()), Some(p.jobs[0].total.read().ops));
    let (tl, sm) = store.series(id, node, 0).unwrap();
    assert_eq!((tl.len(), sm.len()), (1, samples.len() / 2));
    // The rest, then the phase's end.
    store.add_second(id, 0, node, &p.timeline[1..], &samples[samples.len() / 2..], None).unwrap();
    let mut slim = p.clone();
    slim.timeline.clear();
    slim.system.as_mut().unwrap().samples.clear();
    store.add_phase(id, 0, node, &slim).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let back = store.load(id).unwrap();
    let b = &back.result.phases[0];
    assert!(!b.interrupted && b.elapsed_s == p.elapsed_s);
    assert_eq!(b.jobs[0].per_thread, p.jobs[0].per_thread, "the end's figures replace the provisional ones");
    assert_eq!(b.timeline.len(), p.timeline.len());
    assert_eq!(b.system.as_ref().unwrap().samples, *samples, "samples read back as the summary kept them");
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].phases, 1);
}

/// The aggregate of two nodes' totals, as the coordinator builds it: counts summed, histograms
/// merged, rates over the longer node's time.
fn merged(a: &iolab_model::Totals, b: &iolab_model::Totals, elapsed: f64) -> iolab_model::Totals {
    let mut t = a.clone();
    for (class, x) in b.iter() {
        let m = t.get_mut(class);
        m.ops += x.ops;
        m.bytes += x.bytes;
        match (&mut m.hist, &x.hist) {
            (Some(h), Some(y)) => h.add(y).unwrap(),
            (None, Some(y)) => m.hist = Some(y.clone()),
            _ => {}
        }
        m.iops = m.ops as f64 / elapsed;
        m.bw_bytes = m.bytes as f64 / elapsed;
        m.lat_ns = m.hist.as_ref().map(iolab_model::LatNs::from_hist).unwrap_or_default();
    }
    t
}

fn node_result(name: &str, p: &iolab_model::PhaseResult, skew: i64) -> iolab_model::NodeResult {
    iolab_model::NodeResult {
        name: name.into(),
        start_skew_ns: skew,
        elapsed_s: p.elapsed_s,
        interrupted: false,
        error: None,
        total: p.total.clone(),
        cpu: p.cpu,
        system: p.system.clone(),
        verify: p.verify.clone(),
        findings: p.findings.clone(),
        limit: p.limit.clone(),
        holes: p.holes,
    }
}

/// A run of two nodes whose jobs share a name, recorded as the coordinator does: each node's
/// own rows, the aggregate under `*`, the nodes and the verdict. It loads back as the aggregate
/// with each node's total and every job (histograms included, nothing of one node lost under
/// the other's job of the same name), while each node's phases stay readable on their own.
fn a_run_of_two_nodes_round_trips_with_its_aggregate_nodes_and_verdict(b: Backend) {
    use iolab_model::{JobResult, Limit, NodeInfo, Verdict};
    use iolab_store::AGGREGATE;
    let dir = tempfile::tempdir().unwrap();
    let (ra, rb) = (shared_run(0), shared_run(1));
    let (pa, pb) = (&ra.phases[0], &rb.phases[0]);
    assert_eq!(pa.jobs[0].name, pb.jobs[0].name, "the jobs share a name");
    let store = b.store(dir.path());
    let host = iolab_sysstat::host_facts(None);
    let id = store
        .begin_run(iolab_model::RunKind::Scenario, "locking", &labels(&[]), &host, &ra.plan, ra.started_unix_s)
        .unwrap();
    for (name, p) in [("a", pa), ("b", pb)] {
        let samples = &p.system.as_ref().unwrap().samples;
        store.add_second(id, 0, name, &p.timeline, samples, None).unwrap();
        let mut slim = p.clone();
        slim.timeline.clear();
        slim.system.as_mut().unwrap().samples.clear();
        store.add_phase(id, 0, name, &slim).unwrap();
    }
    let elapsed = pa.elapsed_s.max(pb.elapsed_s);
    let seconds: Vec<iolab_model::TimelinePoint> = pa
        .timeline
        .iter()
        .zip(&pb.timeline)
        .map(|(x, y)| iolab_model::TimelinePoint { read_ops: x.read_ops + y.read_ops, ..x.clone() })
        .collect();
    let tag = |n: &str, j: &JobResult| JobResult { node: Some(n.into()), ..j.clone() };
    let aggregate = iolab_model::PhaseResult {
        verify: None,
        workload: Default::default(),
        notes: Vec::new(),
        name: pa.name.clone(),
        elapsed_s: elapsed,
        interrupted: false,
        total: merged(&pa.total, &pb.total, elapsed),
        jobs: vec![tag("a", &pa.jobs[0]), tag("b", &pb.jobs[0])],
        timeline: Vec::new(),
        cpu: pa.cpu,
        system: None,
        nodes: vec![node_result("a", pa, 120_000), node_result("b", pb, -80_000)],
        started_unix_s: None,
        first_done_s: Some(pa.elapsed_s.min(pb.elapsed_s)),
        last_done_s: Some(elapsed),
        findings: Vec::new(),
        limit: None,
        holes: None,
        layout: None,
        steady_state: None,
        warmup: None,
    };
    store.add_second(id, 0, AGGREGATE, &seconds, &[], None).unwrap();
    store.add_phase(id, 0, AGGREGATE, &aggregate).unwrap();
    let infos = vec![
        NodeInfo {
            name: "a".into(),
            address: "ssh://root@10.0.0.1".into(),
            hostname: "ha".into(),
            iolab_version: "0.1.0".into(),
            clock_offset_ns: 1500,
            rtt_ns: 90_000,
            clock_offset_uncertainty_ns: 45000,
            dir: Some("/mnt/shared".into()),
        },
        NodeInfo { name: "b".into(), address: "10.0.0.2:7070".into(), dir: None, ..Default::default() },
    ];
    store.set_nodes(id, &infos).unwrap();
    let verdict = Verdict {
        scenario: "locking".into(),
        limit: Limit::Network,
        reasons: vec!["the link ran at 95% of 100 Mbit/s".into()],
        figures: [("link_mbs".to_string(), 12.5)].into(),
    };
    store.set_verdict(id, &verdict).unwrap();
    store.finish_run(id, Status::Complete, None, ra.started_unix_s + 3.0).unwrap();

    assert_eq!(store.nodes(id).unwrap(), ["a", "b"], "`*` is no node");
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].phases, 1, "one phase, however many nodes");
    let back = store.load(id).unwrap();
    assert_eq!(back.result.nodes, infos);
    assert_eq!(back.result.verdict.as_ref(), Some(&verdict));
    let p = &back.result.phases[0];
    assert_eq!((p.first_done_s, p.last_done_s), (aggregate.first_done_s, aggregate.last_done_s));
    assert_eq!(p.total.read().ops, pa.total.read().ops + pb.total.read().ops);
    assert_eq!(p.total.read().hist.as_ref().unwrap().len(), pa.total.read().ops + pb.total.read().ops);
    assert_eq!(p.timeline.len(), seconds.len());
    assert_eq!(p.timeline[0].read_ops, seconds[0].read_ops, "the aggregate's own seconds");
    // Both jobs of the same name, each with its own node's figures, histograms and threads.
    assert_eq!(p.jobs.len(), 2);
    for (j, src, node) in [(&p.jobs[0], pa, "a"), (&p.jobs[1], pb, "b")] {
        assert_eq!(j.node.as_deref(), Some(node));
        assert_eq!(j.total.write().ops, src.jobs[0].total.write().ops);
        assert_eq!(j.total.write().hist.as_ref().unwrap().len(), src.jobs[0].total.write().ops, "node {node}");
        assert_eq!(j.per_thread, src.jobs[0].per_thread, "node {node}");
    }
    assert_ne!(pa.jobs[0].total.write().ops, 0);
    // Each node's share, with its histograms and its samples from its own rows.
    assert_eq!(p.nodes.len(), 2);
    for (n, src, skew) in [(&p.nodes[0], pa, 120_000), (&p.nodes[1], pb, -80_000)] {
        assert_eq!(n.start_skew_ns, skew);
        assert_eq!(n.total.read().ops, src.total.read().ops);
        let h = n.total.read().hist.as_ref().unwrap();
        assert_eq!(h.value_at_quantile(0.99), src.total.read().hist.as_ref().unwrap().value_at_quantile(0.99));
        assert_eq!(n.system.as_ref().unwrap().samples.len(), src.system.as_ref().unwrap().samples.len());
    }
    // Each node's own phases, apart.
    let a = store.phases_of(id, "a", &ra.plan).unwrap();
    assert_eq!(a[0].total.read().ops, pa.total.read().ops);
    assert!(a[0].nodes.is_empty() && a[0].jobs[0].node.is_none());
    assert_eq!(a[0].timeline.len(), pa.timeline.len());
}

/// A run of two nodes killed in its second phase, before the coordinator saved that phase's
/// aggregate: the first phase reads as saved, the second is merged from the nodes' own rows
/// (interrupted, each node's share and jobs, the nodes' seconds summed).
fn a_run_of_two_nodes_killed_mid_phase_shows_each_node_partial_phase(b: Backend) {
    use iolab_model::NodeInfo;
    use iolab_store::AGGREGATE;
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let p = &r.phases[0];
    let mut plan = r.plan.clone();
    plan.phases.push(iolab_spec::Phase { name: "p2".into(), jobs: plan.phases[0].jobs.clone() });
    let store = b.store(dir.path());
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "two", &labels(&[]), &host, &plan, r.started_unix_s).unwrap();
    store
        .set_nodes(
            id,
            &[NodeInfo { name: "a".into(), ..Default::default() }, NodeInfo { name: "b".into(), ..Default::default() }],
        )
        .unwrap();
    for n in ["a", "b"] {
        store.add_phase(id, 0, n, p).unwrap();
    }
    let whole = iolab_model::PhaseResult {
        verify: None,
        nodes: vec![node_result("a", p, 0), node_result("b", p, 0)],
        total: merged(&p.total, &p.total, p.elapsed_s),
        ..p.clone()
    };
    store.add_phase(id, 0, AGGREGATE, &whole).unwrap();
    // Phase 2: node a saved a provisional row, node b only its first second.
    let mut so_far = p.clone();
    so_far.name = "p2".into();
    so_far.interrupted = true;
    so_far.timeline.clear();
    store.add_second(id, 1, "a", &p.timeline[..1], &[], Some(&so_far)).unwrap();
    store.add_second(id, 1, "b", &p.timeline[..1], &[], None).unwrap();
    store.finish_run(id, Status::Interrupted, Some("node b unreachable"), r.started_unix_s + 3.0).unwrap();
    let back = store.load(id).unwrap();
    let ph = &back.result.phases;
    assert_eq!(ph.len(), 2);
    assert_eq!(ph[0].nodes.len(), 2);
    assert!(!ph[0].interrupted);
    let cut = &ph[1];
    assert_eq!(cut.name, "p2");
    assert!(cut.interrupted);
    assert_eq!(cut.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(cut.nodes[0].interrupted && cut.nodes[1].interrupted);
    assert_eq!(cut.nodes[0].total.read().ops, p.total.read().ops, "a's provisional totals");
    assert_eq!(cut.nodes[1].total.read().ops, p.timeline[0].read_ops, "b's, from its one second");
    assert_eq!(cut.total.read().ops, p.total.read().ops + p.timeline[0].read_ops);
    assert_eq!(cut.jobs.len(), 1, "only a saved jobs");
    assert_eq!(cut.jobs[0].node.as_deref(), Some("a"));
    assert_eq!(cut.timeline.len(), 1);
    assert_eq!(cut.timeline[0].read_ops, 2 * p.timeline[0].read_ops, "the nodes' seconds summed");
    // Where the coordinator saved the aggregate's seconds (but no phase row), those are kept.
    let mut sum = p.timeline[0].clone();
    sum.read_ops = 7;
    store.add_second(id, 1, AGGREGATE, &[sum], &[], None).unwrap();
    let back = store.load(id).unwrap();
    let cut = &back.result.phases[1];
    assert_eq!(cut.timeline.iter().map(|t| t.read_ops).collect::<Vec<_>>(), [7]);
    assert_eq!(cut.nodes.len(), 2, "still each node's share");
    assert_eq!(store.nodes(id).unwrap(), ["a", "b"]);
}

/// A run as `show` prints it, without the id its database gave it.
fn shown(store: &Store, id: i64) -> serde_json::Value {
    let run = store.load(id).unwrap();
    let mut v = serde_json::to_value(&run).unwrap();
    v.as_object_mut().unwrap().remove("id");
    v
}

/// The read histogram of a run's first phase, as stored (HDR V2).
fn read_hist(store: &Store, id: i64) -> Option<Vec<u8>> {
    let run = store.load(id).unwrap();
    run.result.phases[0].total.read().hist.as_ref().and_then(iolab_model::hist::to_v2)
}

/// `iolab db copy`: an SQLite file's runs (a finished one with labels, a run of two nodes with
/// its aggregate, nodes and verdict, one killed mid-phase, one still running) copied into the
/// backend's database read back the same, histograms included; the one still running is left;
/// copying again copies nothing; a label selects; and the copies copy back whole.
fn copies_of_an_sqlite_files_runs_are_whole_and_made_once(b: Backend) {
    use iolab_model::{NodeInfo, Verdict};
    use iolab_store::{CopyEvent, CopyFilter, AGGREGATE};
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let p = &r.phases[0];
    let src = Backend::Sqlite.db(dir.path(), "source");
    let from = src.open().unwrap();
    let done = save(&from, &r, &[("config", "ext4 barrier=0"), ("proto", "C")]);
    let host = iolab_sysstat::host_facts(None);
    let multi = from
        .begin_run(iolab_model::RunKind::Scenario, "locking", &labels(&[("config", "drbd")]), &host, &r.plan, 5.0)
        .unwrap();
    for n in ["a", "b"] {
        from.add_second(multi, 0, n, &p.timeline, &p.system.as_ref().unwrap().samples, None).unwrap();
        from.add_phase(multi, 0, n, p).unwrap();
    }
    let whole = iolab_model::PhaseResult {
        nodes: vec![node_result("a", p, 10), node_result("b", p, -10)],
        total: merged(&p.total, &p.total, p.elapsed_s),
        ..p.clone()
    };
    from.add_phase(multi, 0, AGGREGATE, &whole).unwrap();
    from.set_nodes(
        multi,
        &[NodeInfo { name: "a".into(), ..Default::default() }, NodeInfo { name: "b".into(), ..Default::default() }],
    )
    .unwrap();
    let verdict = Verdict {
        scenario: "locking".into(),
        limit: iolab_model::Limit::Network,
        reasons: vec!["the link ran at 95% of 100 Mbit/s".into()],
        figures: [("link_mbs".to_string(), 12.5)].into(),
    };
    from.set_verdict(multi, &verdict).unwrap();
    from.finish_run(multi, Status::Complete, None, 9.0).unwrap();
    // Killed: a provisional phase and a process that is gone.
    let killed = from.begin_run(iolab_model::RunKind::Run, "killed", &labels(&[]), &host, &r.plan, 6.0).unwrap();
    let mut so_far = p.clone();
    so_far.interrupted = true;
    so_far.timeline.clear();
    from.add_second(killed, 0, &host.hostname, &p.timeline[..1], &[], Some(&so_far)).unwrap();
    src.raw().exec("UPDATE runs SET pid = ?1 WHERE id = ?2", &[P::I(2_147_483_000), P::I(killed)]);
    // Still running: this process.
    let running = from.begin_run(iolab_model::RunKind::Run, "running", &labels(&[]), &host, &r.plan, 7.0).unwrap();
    from.add_tick(running, 0, &host.hostname, &p.timeline[0]).unwrap();

    let dest = b.db(dir.path(), "team");
    let to = dest.open().unwrap();
    let all = from.select(&CopyFilter::default()).unwrap();
    assert_eq!(all, [done, multi, killed, running]);
    let mut events = Vec::new();
    let report = from.copy_to(&to, &all, &mut |e| events.push(e)).unwrap();
    assert_eq!((report.copied, report.present, report.running), (3, 0, 1), "{events:?}");
    assert!(report.rows > 0);
    let mut pairs = Vec::new();
    for e in &events {
        match e {
            CopyEvent::Copied { from: f, to: t, rows, .. } => {
                assert!(*rows > 0);
                pairs.push((*f, *t));
            }
            CopyEvent::Running { from: f, .. } => assert_eq!(*f, running),
            CopyEvent::Present { .. } => panic!("nothing was there: {e:?}"),
        }
    }
    assert_eq!(pairs.iter().map(|(f, _)| *f).collect::<Vec<_>>(), [done, multi, killed]);
    for (f, t) in &pairs {
        assert_eq!(shown(&to, *t), shown(&from, *f), "run {f} copied as {t}");
        assert_eq!(read_hist(&to, *t), read_hist(&from, *f), "run {f}'s histogram");
    }
    let (_, t_killed) = pairs[2];
    let k = to.load(t_killed).unwrap();
    assert_eq!(k.result.status, Status::Interrupted, "copied as `show` reads it");
    assert!(k.result.error.as_deref().unwrap_or("").contains("killed"), "{:?}", k.result.error);
    assert!(k.result.phases[0].interrupted && !k.result.phases[0].jobs.is_empty());
    let (_, t_multi) = pairs[1];
    let m = to.load(t_multi).unwrap();
    assert_eq!(m.result.verdict.as_ref(), Some(&verdict));
    assert_eq!(m.result.phases[0].nodes.len(), 2);
    assert_eq!(to.nodes(t_multi).unwrap(), ["a", "b"]);
    assert!(!m.uid.is_empty() && m.uid == from.load(multi).unwrap().uid, "the identity survives the copy");

    // Again: nothing copied twice.
    let again = from.copy_to(&to, &all, &mut |_| {}).unwrap();
    assert_eq!((again.copied, again.present, again.running), (0, 3, 1));
    assert_eq!(to.list(&ListFilter::default()).unwrap().len(), 3);

    // Selected by label, into another database: that run alone.
    let some = b.db(dir.path(), "some").open().unwrap();
    let filter = CopyFilter {
        list: ListFilter { labels: vec![("config".into(), "drbd".into())], ..Default::default() },
        ..Default::default()
    };
    let picked = from.select(&filter).unwrap();
    assert_eq!(picked, [multi]);
    assert_eq!(from.copy_to(&some, &picked, &mut |_| {}).unwrap().copied, 1);
    assert_eq!(some.list(&ListFilter::default()).unwrap().len(), 1);

    // And back out into a new file, whole.
    let back = Backend::Sqlite.db(dir.path(), "back").open().unwrap();
    let ids: Vec<i64> = pairs.iter().map(|(_, t)| *t).collect();
    assert_eq!(to.copy_to(&back, &ids, &mut |_| {}).unwrap().copied, 3);
    for (i, (f, _)) in pairs.iter().enumerate() {
        assert_eq!(shown(&back, i as i64 + 1), shown(&from, *f));
    }
    // The copy in `to` is recognised as the run of `from` it is.
    assert_eq!(from.copy_to(&back, &all, &mut |_| {}).unwrap().present, 3);
}

/// Every table that keeps a run's rows is copied, with every column: a table added to the
/// schema without its place in `copy::TABLES` fails here.
fn every_table_of_a_run_is_copied(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = b.db(dir.path(), "results");
    drop(db.open().unwrap());
    let mut raw = db.raw();
    let tables: Vec<String> = match &mut raw {
        Raw::Sqlite(c) => c
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .flatten()
            .collect(),
        Raw::Postgres(c) => c
            .query("SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    let mut kept = 0;
    for t in tables {
        let mut cols = raw.columns(&t);
        cols.sort();
        if t == "runs" {
            let mut want: Vec<String> = iolab_store::copy::RUN_COLUMNS.iter().map(|c| c.to_string()).collect();
            want.push("id".into());
            want.sort();
            assert_eq!(cols, want, "runs");
            continue;
        }
        if !cols.iter().any(|c| c == "run_id") {
            continue;
        }
        let Some((_, copied, _)) = iolab_store::copy::TABLES.iter().find(|(name, ..)| *name == t) else {
            panic!("table {t} keeps rows of a run and is not in copy::TABLES");
        };
        let mut want: Vec<String> = copied.iter().map(|c| c.to_string()).collect();
        want.push("run_id".into());
        want.sort();
        assert_eq!(cols, want, "{t}");
        kept += 1;
    }
    assert_eq!(kept, iolab_store::copy::TABLES.len());
}

/// TLS to the server as libpq's `sslmode` says, on a database the server refuses without TLS:
/// `prefer` and `require` encrypt without checking the certificate; `verify-ca` checks it
/// chains to `sslrootcert`, `verify-full` that it also names the host; a certificate of another
/// CA is refused. No error carries the password.
#[test]
fn tls_to_the_server_checks_what_sslmode_asks() {
    let Some(s) = pg::server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let open = |url: String| Store::open(Target::parse(url)).map(|_| ()).map_err(|e| e.to_string());
    let db = pg::TLS_ONLY;
    let mut errors = Vec::new();
    let e = open(s.db_url(db)).unwrap_err();
    assert!(e.contains("no encryption"), "the server refuses plain connections to {db}: {e}");
    errors.push(e);
    open(s.tls_url(db, "127.0.0.1", "prefer", None)).unwrap();
    open(s.tls_url(db, "127.0.0.1", "require", None)).unwrap();
    open(s.tls_url(db, "localhost", "verify-full", Some(&s.ca))).unwrap();
    open(s.tls_url(db, "127.0.0.1", "verify-ca", Some(&s.ca))).unwrap();
    let e = open(s.tls_url(db, "127.0.0.1", "verify-full", Some(&s.ca))).unwrap_err();
    assert!(e.contains("certificate") && e.contains("127.0.0.1"), "the certificate names localhost only: {e}");
    errors.push(e);
    let other = dir.path().join("other-ca.pem");
    pg::certificates(&other).unwrap();
    for mode in ["require", "verify-ca", "verify-full"] {
        let e = open(s.tls_url(db, "localhost", mode, Some(&other))).unwrap_err();
        assert!(e.contains("certificate"), "{mode} with another CA: {e}");
        errors.push(e);
    }
    let e = open(s.tls_url(db, "localhost", "verify-full", Some(&dir.path().join("none.pem")))).unwrap_err();
    assert!(e.contains("none.pem"), "{e}");
    errors.push(e);
    for e in errors {
        assert!(!e.contains(&s.password), "{e}");
    }
}

/// A URL's password never shows: not in the store's location, not in an error of a wrong
/// password, a wrong port or a missing database, and not in any row iolab writes.
#[test]
fn the_password_never_shows_nor_is_stored() {
    let Some(s) = pg::server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let name = s.fresh("secret");
    let url = s.url(&name);
    let store = Store::open(Target::parse(&url)).unwrap();
    let shown = store.location().to_string();
    assert!(shown.contains("iolab:***@127.0.0.1") && !shown.contains(&s.password), "{shown}");
    assert!(!format!("{:?}", store.location()).contains(&s.password));
    let r = real_run(dir.path());
    let id = save(&store, &r, &[("config", "x")]);
    let dumped = pg::dump(s, &name);
    assert!(dumped.contains("row") && !dumped.contains(&s.password) && !dumped.contains("postgres://"));
    let e = store.resolve("999").unwrap_err().to_string();
    assert!(e.contains("***") && !e.contains(&s.password), "{e}");
    let wrong = url.replace(&s.password, "not-the-password");
    let e = Store::open(Target::parse(&wrong)).err().unwrap().to_string();
    assert!(e.contains("password authentication failed") && !e.contains("not-the-password"), "{e}");
    let port = url.replace(&format!(":{}/", s.port), ":1/");
    let e = Store::open(Target::parse(&port)).err().unwrap().to_string();
    assert!(e.contains("connecting") && !e.contains(&s.password), "{e}");
    let nodb = s.db_url("no_such_database");
    let e = Store::open_existing(Target::parse(&nodb)).err().unwrap().to_string();
    assert!(e.contains("does not exist") && !e.contains(&s.password), "{e}");
    // A password given as a parameter, and one percent-encoded, are hidden the same way.
    let param = format!(
        "postgres://iolab@127.0.0.1:{}/{}?sslmode=disable&options=-csearch_path%3D{name}&password={}",
        s.port,
        pg::TESTS,
        s.password
    );
    let store = Store::open(Target::parse(&param)).unwrap();
    assert_eq!(store.load(id).unwrap().labels["config"], "x");
    assert!(!store.location().to_string().contains(&s.password));
}

/// A team keeps iolab's tables in a schema of their own with `options=-csearch_path%3D...`;
/// a search_path that names no schema is refused, saying so, with nothing made.
#[test]
fn a_schema_of_its_own_through_the_urls_options() {
    let Some(s) = pg::server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let name = s.fresh_database("schema");
    s.db_client(&name).batch_execute("CREATE SCHEMA lab; CREATE TABLE public.inventory (sku TEXT);").unwrap();
    let url = format!("{}&options=-csearch_path%3Dlab", s.db_url(&name));
    let store = Store::open(Target::parse(&url)).unwrap();
    let id = save(&store, &real_run(dir.path()), &[("config", "lab")]);
    let tables: Vec<(String, String)> = s
        .db_client(&name)
        .query("SELECT schemaname::text, tablename::text FROM pg_tables WHERE tablename IN ('runs', 'iolab_schema', 'inventory') ORDER BY 2", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want = [("public", "inventory"), ("lab", "iolab_schema"), ("lab", "runs")];
    assert_eq!(tables, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(Store::open_existing(Target::parse(&url)).unwrap().load(id).unwrap().labels["config"], "lab");
    // `public` holds a table of something else: iolab refuses it there.
    assert!(matches!(Store::open(Target::parse(s.db_url(&name))).err().unwrap(), StoreError::Corrupt { .. }));
    let nowhere = format!("{}&options=-csearch_path%3Dnone_such", s.db_url(&name));
    let e = Store::open(Target::parse(&nowhere)).err().unwrap().to_string();
    assert!(e.contains("search_path") && e.contains("none_such"), "{e}");
}

pg::matrix!(
    migrates_from_empty_and_from_every_earlier_version,
    a_real_run_round_trips_with_histograms,
    newer_corrupt_and_foreign_files_are_refused_untouched,
    reading_opens_read_only_and_changes_nothing,
    selectors_and_listing,
    run_kinds_read_back_from_their_words_and_an_unknown_word_is_refused,
    writers_at_once_lose_nothing,
    many_openers_of_a_new_database_all_succeed,
    a_version_1_database_with_runs_reads_back_after_migrating,
    rows_are_keyed_by_node,
    a_second_changed_after_its_tick_is_saved_with_the_phase,
    a_phase_saved_as_it_stands_reads_back_and_its_end_replaces_it,
    a_run_of_two_nodes_round_trips_with_its_aggregate_nodes_and_verdict,
    a_run_of_two_nodes_killed_mid_phase_shows_each_node_partial_phase,
    copies_of_an_sqlite_files_runs_are_whole_and_made_once,
    every_table_of_a_run_is_copied,
);
