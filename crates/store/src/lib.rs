//! iolab-store: every run kept in one SQLite file, written as the run goes (the run row at the
//! start; each second of the timeline, the system samples and the phase as it stands, once a
//! second in one transaction; each phase for good when it ends; the status at the end), so an
//! interrupted or killed run keeps what it measured, per job and per thread. Reads rebuild the
//! same `RunResult` the engine produced, histograms included, for comparison and reports.

#![forbid(unsafe_code)]

mod multi;
pub mod schema;
mod select;

use iolab_model::{
    NodeInfo, OpClass, PhaseResult, RunKind, RunResult, Status, ThreadResult, TimelinePoint, Totals, UnknownWord,
    Verdict,
};
use iolab_spec::Plan;
use iolab_sysstat::{HostFacts, Rates};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use multi::AGGREGATE;
pub use select::{parse_selector, BadSelector};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no results database at {0}; run `iolab run` or `iolab survey` first, or point --db / IOLAB_DB at one")]
    Missing(PathBuf),
    #[error("{path} was written by a newer iolab (schema version {found}; this iolab knows up to {known}); use a newer iolab")]
    Newer { path: PathBuf, found: u32, known: u32 },
    #[error("{path} is not a readable iolab database ({source}); it was left as it is")]
    Corrupt { path: PathBuf, source: NotIolab },
    #[error("cannot make {dir} for the results database: {source}")]
    CreateDir { dir: PathBuf, source: std::io::Error },
    /// No run matches (the message names the selector and the database).
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    BadSelector(#[from] BadSelector),
    #[error("results database {path}: {what}: {source}")]
    Sql { path: PathBuf, what: &'static str, source: rusqlite::Error },
    #[error("results database: stored data of run {run} is damaged: {what}: {source}")]
    Damaged { run: i64, what: String, source: serde_json::Error },
    #[error("results database: run {run}: {source} (a newer iolab stored it: read it with that one)")]
    UnknownKind { run: i64, source: UnknownWord },
}

/// Why a file is not a database this iolab can read.
#[derive(Debug, thiserror::Error)]
pub enum NotIolab {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("schema version {0} but no runs table; not an iolab database")]
    NoRunsTable(u32),
    #[error("an SQLite database of something else")]
    Foreign,
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A run as stored: what was asked, where, with which labels, and what came out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: i64,
    /// The command that made it (stored and printed as its word: `run`, `survey`, ...).
    pub kind: RunKind,
    /// What the user ran: a job file's name, its job in words when run from flags
    /// (`randwrite 4k direct io_uring QD32`), or the surveyed directory.
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub host: HostFacts,
    pub pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_unix_s: Option<f64>,
    /// Plan, phases (with histograms, timeline and samples), status, error.
    pub result: RunResult,
}

/// One line of `iolab runs`.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub id: i64,
    pub kind: RunKind,
    pub name: String,
    pub status: Status,
    pub started_unix_s: f64,
    pub node: String,
    pub labels: BTreeMap<String, String>,
    pub phases: u32,
}

/// Filters of `iolab runs`.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub labels: Vec<(String, String)>,
    pub name_contains: Option<String>,
    pub since_unix_s: Option<f64>,
    pub status: Option<Status>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// `$IOLAB_DB` is handled by the CLI; this is the default beneath it.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("iolab/results.db")
}

/// A stored status word; anything unreadable counts as still running (then judged live or not).
fn status_of(s: &str) -> Status {
    s.parse().unwrap_or(Status::Running)
}

/// A stored kind word: every word an iolab has stored reads back; another is refused by name.
fn kind_of(run: i64, s: &str) -> Result<RunKind> {
    s.parse().map_err(|source| StoreError::UnknownKind { run, source })
}

impl Store {
    /// Open (creating if needed) the database at `path`, upgrading its schema.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { dir: dir.into(), source })?;
        }
        Self::connect(path)
    }

    /// Open a database that must already exist (for commands that only read or delete).
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.into()));
        }
        Self::connect(path)
    }

    fn connect(path: &Path) -> Result<Store> {
        let sql = |what: &'static str| move |source| StoreError::Sql { path: path.into(), what, source };
        let conn = Connection::open(path).map_err(sql("opening"))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(sql("setting the busy timeout"))?;
        // Read before writing anything: a corrupt or newer file must be left untouched. The
        // version and the tables are read in one transaction, so a database another process is
        // creating right now is seen either empty or complete, never half made.
        let corrupt = |e: rusqlite::Error| StoreError::Corrupt { path: path.into(), source: e.into() };
        let (version, tables, has_runs) = {
            let tx = conn.unchecked_transaction().map_err(corrupt)?;
            let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(corrupt)?;
            let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(corrupt)?;
            let has_runs: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='runs'", [], |r| r.get(0))
                .map_err(corrupt)?;
            (version, tables, has_runs == 1)
        };
        if version > schema::VERSION {
            return Err(StoreError::Newer { path: path.into(), found: version, known: schema::VERSION });
        }
        if version > 0 && !has_runs {
            return Err(StoreError::Corrupt { path: path.into(), source: NotIolab::NoRunsTable(version) });
        }
        if version == 0 && tables > 0 {
            return Err(StoreError::Corrupt { path: path.into(), source: NotIolab::Foreign });
        }
        // Another process creating the same database may hold the lock that switching to WAL
        // needs; SQLite does not always wait for it, so wait here.
        let mode: String =
            conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(sql("reading the journal mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            retry_busy(|| conn.pragma_update(None, "journal_mode", "WAL")).map_err(sql("switching to WAL"))?;
        }
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql("enabling foreign keys"))?;
        let mut store = Store { conn, path: path.into() };
        if version < schema::VERSION {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Apply the missing migrations, each in an IMMEDIATE transaction that re-reads the version
    /// inside it: a second process opening the same new database waits, then finds it done.
    fn migrate(&mut self) -> Result<()> {
        let path = self.path.clone();
        for (i, m) in schema::MIGRATIONS.iter().enumerate() {
            retry_busy(|| {
                let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let now: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                if now > i as u32 {
                    return Ok(());
                }
                tx.execute_batch(m)?;
                tx.pragma_update(None, "user_version", (i + 1) as u32)?;
                tx.commit()
            })
            .map_err(|source| StoreError::Sql {
                path: path.clone(),
                what: "migrating the schema",
                source,
            })?;
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hold at most `kib` KiB of database pages in memory (SQLite's default is 2,000 KiB). A
    /// connection that only appends for hours (a run being recorded) needs little: its memory
    /// then stops growing long before the page cache would have filled.
    pub fn limit_cache(&self, kib: u32) -> Result<()> {
        self.conn.pragma_update(None, "cache_size", -(kib as i64)).map_err(self.err("limiting the page cache"))
    }

    pub fn schema_version(&self) -> u32 {
        self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap_or(0)
    }

    fn err(&self, what: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sql { path: self.path.clone(), what, source }
    }

    /// Record a run as it starts (status `running`); returns its id.
    pub fn begin_run(
        &self,
        kind: RunKind,
        name: &str,
        labels: &BTreeMap<String, String>,
        host: &HostFacts,
        plan: &Plan,
        started_unix_s: f64,
    ) -> Result<i64> {
        let tx = self.conn.unchecked_transaction().map_err(self.err("starting to save a run"))?;
        tx.execute(
            "INSERT INTO runs (kind, name, status, started_unix_s, node, pid, iolab_version, plan_json, host_json) VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                kind.as_str(),
                name,
                started_unix_s,
                host.hostname,
                std::process::id(),
                env!("CARGO_PKG_VERSION"),
                serde_json::to_string(plan).unwrap_or_default(),
                serde_json::to_string(host).unwrap_or_default()
            ],
        )
        .map_err(self.err("saving the run"))?;
        let id = tx.last_insert_rowid();
        for (k, v) in labels {
            tx.execute("INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)", params![id, k, v])
                .map_err(self.err("saving labels"))?;
        }
        tx.commit().map_err(self.err("saving the run"))?;
        Ok(id)
    }

    /// One second of a phase's timeline, as it is measured.
    pub fn add_tick(&self, run: i64, phase: usize, node: &str, p: &TimelinePoint) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run, phase as i64, node, p.t_s, serde_json::to_string(p).unwrap_or_default()],
            )
            .map_err(self.err("saving the timeline"))?;
        Ok(())
    }

    /// One system sample of a phase, as it is taken (`iolab watch --db`); the phase's row, when
    /// it is saved, leaves saved samples as they are.
    pub fn add_sample(&self, run: i64, phase: usize, node: &str, s: &Rates) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO samples (run_id, phase_idx, node, t_s, sample_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run, phase as i64, node, s.t_s, serde_json::to_string(s).unwrap_or_default()],
            )
            .map_err(self.err("saving a system sample"))?;
        Ok(())
    }

    /// A phase that ended: its result, totals with histograms and system samples. Its seconds
    /// were saved as they were measured ([`Store::add_tick`]); only a second the phase's own
    /// timeline differs in (a worker's late report landing in a second already shown, or a
    /// second that was never ticked) is written here.
    ///
    /// With [`Store::add_second`], seconds and samples were saved as they came and the result
    /// carries none; its threads' figures are saved here, and its row replaces the provisional one.
    pub fn add_phase(&self, run: i64, idx: usize, node: &str, p: &PhaseResult) -> Result<()> {
        let tx = self.conn.unchecked_transaction().map_err(self.err("starting to save a phase"))?;
        put_phase(&tx, run, idx, node, p, true).map_err(self.err("saving a phase"))?;
        for t in &p.timeline {
            tx.execute(
                "INSERT INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, phase_idx, node, t_s) DO UPDATE SET point_json = excluded.point_json WHERE point_json != excluded.point_json",
                params![run, idx as i64, node, t.t_s, serde_json::to_string(t).unwrap_or_default()],
            )
            .map_err(self.err("saving the timeline"))?;
        }
        let samples = p.system.as_ref().map(|s| s.samples.as_slice()).unwrap_or_default();
        put_samples(&tx, run, idx, node, samples).map_err(self.err("saving system samples"))?;
        tx.commit().map_err(self.err("saving a phase"))?;
        Ok(())
    }

    /// A second's worth of a running phase in one transaction: the seconds finished since the
    /// last call (new ones, or ones a late report changed), the system samples taken meanwhile,
    /// and the phase as it stands (`so_far`: per-job and per-thread totals, saved as a
    /// provisional phase row that the phase's end replaces).
    pub fn add_second(
        &self,
        run: i64,
        phase: usize,
        node: &str,
        seconds: &[TimelinePoint],
        samples: &[Rates],
        so_far: Option<&PhaseResult>,
    ) -> Result<()> {
        let tx = self.conn.unchecked_transaction().map_err(self.err("starting to save a second"))?;
        for p in seconds {
            tx.execute(
                "INSERT OR REPLACE INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run, phase as i64, node, p.t_s, serde_json::to_string(p).unwrap_or_default()],
            )
            .map_err(self.err("saving the timeline"))?;
        }
        put_samples(&tx, run, phase, node, samples).map_err(self.err("saving system samples"))?;
        if let Some(p) = so_far {
            put_phase(&tx, run, phase, node, p, false).map_err(self.err("saving a phase as it stands"))?;
        }
        tx.commit().map_err(self.err("saving a second"))?;
        Ok(())
    }

    /// The run's end: its status and, if it failed, why.
    pub fn finish_run(&self, run: i64, status: Status, error: Option<&str>, ended_unix_s: f64) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, error = ?3, ended_unix_s = ?4 WHERE id = ?1",
                params![run, status.as_str(), error, ended_unix_s],
            )
            .map_err(self.err("saving the run's status"))?;
        Ok(())
    }

    /// A run of several nodes: its nodes, where they were reached and how their clocks stood.
    pub fn set_nodes(&self, run: i64, nodes: &[NodeInfo]) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET nodes_json = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(nodes).unwrap_or_default()],
            )
            .map_err(self.err("saving the run's nodes"))?;
        Ok(())
    }

    /// A scenario's verdict on the run.
    pub fn set_verdict(&self, run: i64, verdict: &Verdict) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET verdict_json = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(verdict).unwrap_or_default()],
            )
            .map_err(self.err("saving the run's verdict"))?;
        Ok(())
    }

    /// Run ids a selector names: `42`, `last`, `last~2`, or `key=value[,key=value]`.
    pub fn resolve(&self, selector: &str) -> Result<Vec<i64>> {
        let ids = match parse_selector(selector)? {
            select::Selector::Id(id) => {
                let found: Option<i64> = self
                    .conn
                    .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                    .optional()
                    .map_err(self.err("finding a run"))?;
                found.into_iter().collect()
            }
            select::Selector::Last(n) => {
                let found: Option<i64> = self
                    .conn
                    .query_row("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1", [n as i64], |r| r.get(0))
                    .optional()
                    .map_err(self.err("finding a run"))?;
                found.into_iter().collect()
            }
            select::Selector::Labels(pairs) => {
                let mut ids: Option<Vec<i64>> = None;
                for (k, v) in pairs {
                    let mut st = self
                        .conn
                        .prepare("SELECT run_id FROM labels WHERE key = ?1 AND value = ?2 ORDER BY run_id")
                        .map_err(self.err("finding runs"))?;
                    let these: Vec<i64> = st
                        .query_map(params![k, v], |r| r.get(0))
                        .map_err(self.err("finding runs"))?
                        .flatten()
                        .collect();
                    ids = Some(match ids {
                        None => these,
                        Some(prev) => prev.into_iter().filter(|i| these.contains(i)).collect(),
                    });
                }
                ids.unwrap_or_default()
            }
        };
        if ids.is_empty() {
            return Err(StoreError::NotFound(format!(
                "no run matches `{selector}` in {}; `iolab runs` lists them",
                self.path.display()
            )));
        }
        Ok(ids)
    }

    /// Resolve several selectors, keeping the order given and dropping repeats.
    pub fn resolve_all(&self, selectors: &[String]) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        for s in selectors {
            for id in self.resolve(s)? {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }

    fn labels(&self, id: i64) -> Result<BTreeMap<String, String>> {
        let mut st =
            self.conn.prepare("SELECT key, value FROM labels WHERE run_id = ?1").map_err(self.err("reading labels"))?;
        let rows = st.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(self.err("reading labels"))?;
        Ok(rows.flatten().collect())
    }

    pub fn list(&self, f: &ListFilter) -> Result<Vec<RunSummary>> {
        let mut st = self
            .conn
            .prepare("SELECT r.id, r.kind, r.name, r.status, r.started_unix_s, r.node, r.pid, (SELECT count(DISTINCT p.idx) FROM phases p WHERE p.run_id = r.id) FROM runs r ORDER BY r.id")
            .map_err(self.err("listing runs"))?;
        type ListRow = (i64, String, String, String, f64, String, u32, u32);
        let rows: Vec<ListRow> = st
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
            })
            .map_err(self.err("listing runs"))?
            .flatten()
            .collect();
        let mut out = Vec::new();
        for (id, kind, name, status, started, node, pid, phases) in rows {
            let kind = kind_of(id, &kind)?;
            let labels = self.labels(id)?;
            let status = live_status(status_of(&status), &node, pid).0;
            let keep = f.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
                && f.name_contains
                    .as_ref()
                    .is_none_or(|n| name.contains(n.as_str()) || kind.as_str().contains(n.as_str()))
                && f.since_unix_s.is_none_or(|s| started >= s)
                && f.status.is_none_or(|s| s == status);
            if keep {
                out.push(RunSummary { id, kind, name, status, started_unix_s: started, node, labels, phases });
            }
        }
        Ok(out)
    }

    /// Rebuild a stored run, histograms, timeline and samples included. A run whose process
    /// died (SIGKILL, power loss) shows as interrupted with the phases it saved and the
    /// timeline of the phase it was in.
    pub fn load(&self, id: i64) -> Result<StoredRun> {
        let damaged = |what: &'static str| move |source| StoreError::Damaged { run: id, what: what.into(), source };
        type Row = (String, String, String, Option<String>, f64, Option<f64>, String, u32, String, String, String);
        let row: Option<(Row, Option<String>, Option<String>)> = self
            .conn
            .query_row(
                "SELECT kind, name, status, error, started_unix_s, ended_unix_s, node, pid, iolab_version, plan_json, host_json, nodes_json, verdict_json FROM runs WHERE id = ?1",
                [id],
                |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?), r.get(11)?, r.get(12)?)),
            )
            .optional()
            .map_err(self.err("reading a run"))?;
        let Some((
            (kind, name, status, error, started, ended, node, pid, version, plan_json, host_json),
            nodes_json,
            verdict_json,
        )) = row
        else {
            return Err(StoreError::NotFound(format!(
                "no run {id} in {}; `iolab runs` lists them",
                self.path.display()
            )));
        };
        let kind = kind_of(id, &kind)?;
        let plan: Plan = serde_json::from_str(&plan_json).map_err(damaged("plan"))?;
        let host: HostFacts = serde_json::from_str(&host_json).map_err(damaged("host facts"))?;
        let (status, why) = live_status(status_of(&status), &node, pid);
        let infos: Vec<NodeInfo> = match nodes_json {
            Some(j) => serde_json::from_str(&j).map_err(damaged("nodes"))?,
            None => Vec::new(),
        };
        let verdict: Option<Verdict> = match verdict_json {
            Some(j) => Some(serde_json::from_str(&j).map_err(damaged("verdict"))?),
            None => None,
        };
        // (A run of several nodes whose coordinator died before it saved its nodes has no
        // aggregate either: its rows carry several nodes' names, none of them its own.)
        let several = || -> Result<bool> {
            let nodes = self.nodes(id)?;
            Ok(nodes.len() > 1 && !nodes.contains(&node))
        };
        let phases = if !infos.is_empty() || self.has_aggregate(id)? || several()? {
            // A run of several nodes: the aggregate, each phase with its nodes' shares.
            self.aggregate_phases(id, &plan)?
        } else {
            // The run's own node; a run whose rows all carry one other name (a renamed host)
            // reads from that one.
            let nodes = self.nodes(id)?;
            let rows_node = match nodes.as_slice() {
                [only] if *only != node => only.clone(),
                _ => node.clone(),
            };
            self.phases_of(id, &rows_node, &plan)?
        };
        Ok(StoredRun {
            id,
            kind,
            name,
            labels: self.labels(id)?,
            pid,
            ended_unix_s: ended,
            result: RunResult {
                nodes: infos,
                verdict,
                iolab_version: version,
                status,
                error: error.or(why),
                phases,
                ..RunResult::new(plan, node, started)
            },
            host,
        })
    }

    /// The nodes that saved phases or seconds of a run (one for a run on one machine; one per
    /// node for a run of several; never the aggregate's [`AGGREGATE`]).
    pub fn nodes(&self, id: i64) -> Result<Vec<String>> {
        let mut st = self
            .conn
            .prepare("SELECT node FROM phases WHERE run_id = ?1 AND node != '*' UNION SELECT node FROM timeline WHERE run_id = ?1 AND node != '*' ORDER BY 1")
            .map_err(self.err("reading a run's nodes"))?;
        let rows = st.query_map([id], |r| r.get::<_, String>(0)).map_err(self.err("reading a run's nodes"))?;
        Ok(rows.flatten().collect())
    }

    /// One node's phases of a run, histograms, timeline, samples and threads included. A phase
    /// cut off by a killed process reads as it stood at its last saved second (its provisional
    /// row, `interrupted` set); one saved by an iolab before schema 3 (a timeline but no phase
    /// row) is rebuilt from its saved seconds.
    pub fn phases_of(&self, id: i64, node: &str, plan: &Plan) -> Result<Vec<PhaseResult>> {
        Ok(self.indexed_phases(id, node, plan)?.into_iter().map(|x| x.phase).collect())
    }

    /// [`Store::phases_of`] with each phase's index and whether it had a phase row (or was
    /// rebuilt from its seconds alone).
    fn indexed_phases(&self, id: i64, node: &str, plan: &Plan) -> Result<Vec<multi::Indexed>> {
        let mut st = self
            .conn
            .prepare("SELECT idx, result_json FROM phases WHERE run_id = ?1 AND node = ?2 ORDER BY idx")
            .map_err(self.err("reading phases"))?;
        let rows: Vec<(i64, String)> = st
            .query_map(params![id, node], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err("reading phases"))?
            .flatten()
            .collect();
        let mut phases = Vec::new();
        let mut idxs = Vec::new();
        for (idx, json) in rows {
            let mut p: PhaseResult = serde_json::from_str(&json).map_err(|source| StoreError::Damaged {
                run: id,
                what: format!("phase {idx}"),
                source,
            })?;
            p.timeline = self.timeline(id, node, idx)?;
            if let Some(s) = &mut p.system {
                s.samples = self.samples(id, node, idx)?;
                for x in &mut s.samples {
                    x.keep_those_of(&s.mean);
                }
            }
            self.attach_hists(id, node, idx, &mut p)?;
            self.attach_threads(id, node, idx, &mut p)?;
            idxs.push(idx);
            phases.push(multi::Indexed { idx, phase: p, row: true });
        }
        let mut st = self
            .conn
            .prepare("SELECT DISTINCT phase_idx FROM timeline WHERE run_id = ?1 AND node = ?2 ORDER BY phase_idx")
            .map_err(self.err("reading the timeline"))?;
        let partial: Vec<i64> = st
            .query_map(params![id, node], |r| r.get(0))
            .map_err(self.err("reading the timeline"))?
            .flatten()
            .filter(|i| !idxs.contains(i))
            .collect();
        for idx in partial {
            phases.push(multi::Indexed {
                idx,
                phase: partial_phase(plan, idx, self.timeline(id, node, idx)?),
                row: false,
            });
        }
        phases.sort_by_key(|x| x.idx);
        Ok(phases)
    }

    /// One phase's seconds and system samples as saved (samples as taken, before the phase's
    /// summary chose its devices), in time order.
    pub fn series(&self, id: i64, node: &str, phase: usize) -> Result<(Vec<TimelinePoint>, Vec<Rates>)> {
        Ok((self.timeline(id, node, phase as i64)?, self.samples(id, node, phase as i64)?))
    }

    fn timeline(&self, id: i64, node: &str, idx: i64) -> Result<Vec<TimelinePoint>> {
        let mut st = self
            .conn
            .prepare("SELECT point_json FROM timeline WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY t_s")
            .map_err(self.err("reading the timeline"))?;
        let rows = st
            .query_map(params![id, node, idx], |r| r.get::<_, String>(0))
            .map_err(self.err("reading the timeline"))?;
        Ok(rows.flatten().filter_map(|j| serde_json::from_str(&j).ok()).collect())
    }

    fn samples(&self, id: i64, node: &str, idx: i64) -> Result<Vec<Rates>> {
        let mut st = self
            .conn
            .prepare("SELECT sample_json FROM samples WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY t_s")
            .map_err(self.err("reading samples"))?;
        let rows =
            st.query_map(params![id, node, idx], |r| r.get::<_, String>(0)).map_err(self.err("reading samples"))?;
        Ok(rows.flatten().filter_map(|j| serde_json::from_str(&j).ok()).collect())
    }

    fn attach_hists(&self, id: i64, node: &str, idx: i64, p: &mut PhaseResult) -> Result<()> {
        let mut st = self
            .conn
            .prepare("SELECT job, dir, hist FROM totals WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3")
            .map_err(self.err("reading histograms"))?;
        let rows: Vec<(String, String, Option<Vec<u8>>)> = st
            .query_map(params![id, node, idx], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(self.err("reading histograms"))?
            .flatten()
            .collect();
        for (job, dir, blob) in rows {
            let t = match multi::split_key(&job) {
                (None, "") => Some(&mut p.total),
                (Some(node), "") => p.nodes.iter_mut().find(|n| n.name == node).map(|n| &mut n.total),
                (node, name) => multi::job_mut(p, node, name).map(|j| &mut j.total),
            };
            let Some(t) = t else { continue };
            if let Ok(class) = dir.parse::<OpClass>() {
                t.get_mut(class).hist = blob.as_deref().and_then(iolab_model::hist::from_bytes);
            }
        }
        Ok(())
    }

    fn attach_threads(&self, id: i64, node: &str, idx: i64, p: &mut PhaseResult) -> Result<()> {
        let mut st = self
            .conn
            .prepare("SELECT job, thread, elapsed_s, ops, bytes, error FROM threads WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY job, thread")
            .map_err(self.err("reading threads"))?;
        type Row = (String, u32, f64, i64, i64, Option<String>);
        let rows: Vec<Row> = st
            .query_map(params![id, node, idx], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
            })
            .map_err(self.err("reading threads"))?
            .flatten()
            .collect();
        for (job, thread, elapsed_s, ops, bytes, error) in rows {
            let (node, name) = multi::split_key(&job);
            if let Some(j) = multi::job_mut(p, node, name) {
                j.per_thread.push(ThreadResult::new(thread, elapsed_s, ops.max(0) as u64, bytes.max(0) as u64, error));
            }
        }
        Ok(())
    }

    /// Delete runs and everything of theirs.
    pub fn remove(&self, ids: &[i64]) -> Result<usize> {
        let tx = self.conn.unchecked_transaction().map_err(self.err("starting to delete"))?;
        let mut n = 0;
        for id in ids {
            n += tx.execute("DELETE FROM runs WHERE id = ?1", [id]).map_err(self.err("deleting a run"))?;
        }
        tx.commit().map_err(self.err("deleting runs"))?;
        Ok(n)
    }
}

/// A phase's row (without its seconds, samples and threads, which have rows of their own), its
/// totals per job and class with histograms, and its threads. `last` marks the phase's final
/// row; a provisional one (saved while it runs) is replaced by the next.
fn put_phase(
    tx: &rusqlite::Transaction,
    run: i64,
    idx: usize,
    node: &str,
    p: &PhaseResult,
    last: bool,
) -> rusqlite::Result<()> {
    let mut slim = p.clone();
    slim.timeline.clear();
    if let Some(s) = &mut slim.system {
        s.samples.clear();
    }
    for j in &mut slim.jobs {
        j.per_thread.clear();
    }
    // Each node's samples live in that node's own rows.
    for n in &mut slim.nodes {
        if let Some(s) = &mut n.system {
            s.samples.clear();
        }
    }
    tx.execute(
        "INSERT OR REPLACE INTO phases (run_id, idx, node, name, elapsed_s, interrupted, result_json, final) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![run, idx as i64, node, p.name, p.elapsed_s, p.interrupted, serde_json::to_string(&slim).unwrap_or_default(), last],
    )?;
    let put = |job: &str, t: &Totals| -> rusqlite::Result<()> {
        for (class, d) in t.iter() {
            tx.execute(
                "INSERT OR REPLACE INTO totals (run_id, phase_idx, node, job, dir, ops, bytes, iops, bw_bytes, hist) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![run, idx as i64, node, job, class.as_str(), d.ops as i64, d.bytes as i64, d.iops, d.bw_bytes, d.hist.as_ref().and_then(iolab_model::hist::to_v2)],
            )?;
        }
        Ok(())
    };
    put("", &p.total)?;
    for n in &p.nodes {
        put(&multi::node_key(&n.name), &n.total)?;
    }
    for j in &p.jobs {
        let key = multi::job_key(j);
        put(&key, &j.total)?;
        for t in &j.per_thread {
            tx.execute(
                "INSERT OR REPLACE INTO threads (run_id, phase_idx, node, job, thread, elapsed_s, ops, bytes, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![run, idx as i64, node, key, t.thread, t.elapsed_s, t.ops as i64, t.bytes as i64, t.error],
            )?;
        }
    }
    Ok(())
}

fn put_samples(
    tx: &rusqlite::Transaction,
    run: i64,
    idx: usize,
    node: &str,
    samples: &[Rates],
) -> rusqlite::Result<()> {
    let mut st = tx.prepare_cached(
        "INSERT OR REPLACE INTO samples (run_id, phase_idx, node, t_s, sample_json) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for s in samples {
        st.execute(params![run, idx as i64, node, s.t_s, serde_json::to_string(s).unwrap_or_default()])?;
    }
    Ok(())
}

/// Run `f` until it is not refused for a lock held elsewhere, for up to 10 s.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && start.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// A `running` run whose process is gone from this host was killed: say so.
fn live_status(s: Status, node: &str, pid: u32) -> (Status, Option<String>) {
    let here = iolab_sysstat::hostname();
    if s == Status::Running && node == here && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
    {
        return (
            Status::Interrupted,
            Some(format!(
                "the iolab process (pid {pid}) ended without finishing the run (killed?); what it saved is kept"
            )),
        );
    }
    (s, None)
}

/// Totals rebuilt from the seconds saved before the process died (no latency histograms).
fn partial_phase(plan: &Plan, idx: i64, timeline: Vec<TimelinePoint>) -> PhaseResult {
    let elapsed = timeline.last().map(|p| p.t_s).unwrap_or(0.0);
    let mut total = Totals::default();
    for p in &timeline {
        for (class, n) in p.ops.iter() {
            total.get_mut(class).ops += n;
        }
    }
    // Seconds saved before classes were kept: the three documented counters.
    if timeline.iter().all(|p| p.ops.total() == 0) {
        total.get_mut(OpClass::Read).ops = timeline.iter().map(|p| p.read_ops).sum();
        total.get_mut(OpClass::Write).ops = timeline.iter().map(|p| p.write_ops).sum();
        total.get_mut(OpClass::Sync).ops = timeline.iter().map(|p| p.sync_ops).sum();
    }
    total.get_mut(OpClass::Read).bytes = timeline.iter().map(|p| p.read_bytes).sum();
    total.get_mut(OpClass::Write).bytes = timeline.iter().map(|p| p.write_bytes).sum();
    let per_s = |v: u64| if elapsed > 0.0 { v as f64 / elapsed } else { 0.0 };
    for c in OpClass::ALL {
        let t = total.get_mut(*c);
        t.iops = per_s(t.ops);
        t.bw_bytes = per_s(t.bytes);
    }
    PhaseResult {
        elapsed_s: elapsed,
        interrupted: true,
        total,
        timeline,
        ..PhaseResult::new(
            plan.phases.get(idx as usize).map(|p| p.name.clone()).unwrap_or_else(|| format!("phase{idx}")),
        )
    }
}
