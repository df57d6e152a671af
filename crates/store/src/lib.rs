//! iolab-store: every run kept in one database, an SQLite file (the default, nothing to
//! install) or a PostgreSQL server a team shares, written as the run goes (the run row at the
//! start; each second of the timeline, the system samples and the phase as it stands, once a
//! second in one transaction; each phase for good when it ends; the status at the end), so an
//! interrupted or killed run keeps what it measured, per job and per thread. Reads rebuild the
//! same `RunResult` the engine produced, histograms included, for comparison and reports. The
//! queries are written once above `backend`, the seam to each engine.

#![forbid(unsafe_code)]

mod backend;
mod conn;
pub mod copy;
mod multi;
pub mod schema;
mod select;
mod target;

use backend::{vals, Access, Row};
use conn::Conn;
use iolab_model::steady::Precondition;
use iolab_model::{
    NodeInfo, OpClass, PhaseResult, RunKind, RunResult, Status, ThreadResult, TimelinePoint, Totals, UnknownWord,
    Verdict,
};
use iolab_spec::Plan;
use iolab_sysstat::{HostFacts, Rates};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use backend::{DbError, Dialect};
pub use copy::{CopyEvent, CopyFilter, CopyReport};
pub use multi::AGGREGATE;
pub use select::{parse_selector, BadSelector};
pub use target::{PgUrl, Target, HIDDEN};

/// The store's errors. Each keeps its cause in `cause` and says it in its message, which is
/// whole on its own: the cause is not repeated as an error source (so `{:#}` prints it once).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}", missing(.0))]
    Missing(Target),
    #[error(
        "{at} was written by a newer iolab (schema version {found}; this iolab knows up to {known}); use a newer iolab"
    )]
    Newer { at: Target, found: u32, known: u32 },
    #[error("{at} is not a readable iolab database ({cause}); it was left as it is{}", corrupt_advice(.at, .cause))]
    Corrupt { at: Target, cause: NotIolab },
    #[error("the results database {path} is {kind}, not a file; point --db or IOLAB_DB at a file (a new one is made where none exists)")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("cannot read the results database {path}: {cause}")]
    Unreadable { path: PathBuf, cause: std::io::Error },
    #[error("{} was written by an older iolab: reading it without changing it takes a copy in memory, and it is {} MiB (at most {} MiB); run a writing command on it once (iolab run --db {} ...), which upgrades it", path.display(), bytes >> 20, cap >> 20, path.display())]
    OldSchemaTooLarge { path: PathBuf, bytes: u64, cap: u64 },
    #[error("{at} holds iolab's schema version {found}, older than this iolab's {known}, and reading commands never change a database; run a writing command on it once (iolab run --db URL ..., or iolab db copy into it), which upgrades it")]
    Older { at: Target, found: u32, known: u32 },
    #[error("cannot make {dir} for the results database: {cause}")]
    CreateDir { dir: PathBuf, cause: std::io::Error },
    /// No run matches (the message names the selector and the database).
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    BadSelector(#[from] BadSelector),
    #[error("results database {at}: {what}: {cause}")]
    Sql { at: Target, what: &'static str, cause: DbError },
    #[error("results database: stored data of run {run} is damaged: {what}: {cause}")]
    Damaged { run: i64, what: String, cause: serde_json::Error },
    #[error("results database: run {run}: {cause} (a newer iolab stored it: read it with that one)")]
    UnknownKind { run: i64, cause: UnknownWord },
}

/// What to do with a database iolab cannot read: an empty file is filled by a run saved in
/// it; another file can be restored or moved aside.
fn corrupt_advice(at: &Target, cause: &NotIolab) -> &'static str {
    match (at, cause) {
        (Target::File(_), NotIolab::Empty) => {
            "; a run saved in it (`iolab run --db FILE ...`) makes it a results database"
        }
        (Target::File(_), _) => ": restore it from a copy, or move it aside and iolab starts a new one",
        (Target::Postgres(_), _) => "",
    }
}

fn missing(at: &Target) -> String {
    match at {
        Target::File(p) => format!(
            "no results database at {}; run `iolab run` or `iolab survey` first, or point --db / IOLAB_DB at one",
            p.display()
        ),
        Target::Postgres(u) => format!(
            "no results database at {u} (no iolab tables there yet); save a run there first (`iolab run --db URL`, `iolab db copy`), or point --db / IOLAB_DB at one"
        ),
    }
}

/// Why a database is not one this iolab can read.
#[derive(Debug, thiserror::Error)]
pub enum NotIolab {
    #[error(transparent)]
    Unreadable(DbError),
    #[error("schema version {0} but no runs table; not an iolab database")]
    NoRunsTable(u32),
    #[error("a database of something else: it has tables, and no iolab schema")]
    Foreign,
    #[error("it is empty: no run was ever stored in it")]
    Empty,
    /// The engine found the content damaged (or no database); `quick_check` is SQLite's own
    /// check's first lines (or why it could not run).
    #[error("{cause}; SQLite's quick_check: {quick_check}")]
    Damaged { cause: DbError, quick_check: String },
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A run as stored: what was asked, where, with which labels, and what came out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: i64,
    /// The run's identity in every database it is copied to (`id` is this database's own).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
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
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
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

/// A results database, open. One connection; not shared between threads (each opens its own).
pub struct Store {
    db: RefCell<Box<dyn backend::Backend>>,
    at: Target,
    /// What the user should know of how it was opened (a WAL a read-only directory hid).
    note: Option<String>,
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
    s.parse().map_err(|cause| StoreError::UnknownKind { run, cause })
}

/// A new run's identity: 128 random bits in hex, unique across every host and database.
fn new_uid() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Store {
    /// Open (creating if needed) a database, upgrading its schema: an SQLite file (its
    /// directory made too) or a PostgreSQL database, which must exist on its server.
    pub fn open(at: impl Into<Target>) -> Result<Store> {
        Self::connect(at.into(), Access::Write)
    }

    /// Open a database that must already exist, to change it (`iolab rm`): an SQLite file
    /// that is there, or a server's database that holds iolab's tables.
    pub fn open_existing(at: impl Into<Target>) -> Result<Store> {
        Self::connect(at.into(), Access::Existing)
    }

    /// Open a database that must already exist, to read it (`runs`, `show`, `compare`,
    /// `report`, `export`): nothing in it, or beside an SQLite file, is changed. An SQLite
    /// file is opened read-only (`mode=ro`, or `immutable=1` where its directory cannot be
    /// written) and an older schema is read from a copy migrated in memory; a PostgreSQL
    /// session reads in read-only transactions, and an older schema there is refused
    /// (`StoreError::Older`: a writing command upgrades it).
    pub fn open_read(at: impl Into<Target>) -> Result<Store> {
        Self::connect(at.into(), Access::Read)
    }

    /// What the user should know of how the database was opened (said on stderr), if anything.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Where the store is, printable (a URL's password shows as `***`).
    pub fn location(&self) -> &Target {
        &self.at
    }

    /// The SQLite file, for a store in one.
    pub fn path(&self) -> Option<&Path> {
        self.at.file()
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
        let plan_json = serde_json::to_string(plan).unwrap_or_default();
        let host_json = serde_json::to_string(host).unwrap_or_default();
        self.tx("saving the run", |c| {
            let id = c
                .row(
                    "saving the run",
                    "INSERT INTO runs (uid, kind, name, status, started_unix_s, node, pid, iolab_version, plan_json, host_json) VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
                    vals![
                        new_uid(),
                        kind.as_str(),
                        name,
                        started_unix_s,
                        &host.hostname,
                        std::process::id(),
                        env!("CARGO_PKG_VERSION"),
                        plan_json.as_str(),
                        host_json.as_str()
                    ],
                    |r| r.get::<i64>(0),
                )?
                .ok_or_else(|| StoreError::Sql {
                    at: self.at.clone(),
                    what: "saving the run",
                    cause: DbError::Message("the new run's id did not come back".into()),
                })?;
            for (k, v) in labels {
                c.exec("saving labels", "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)", vals![id, k, v])?;
            }
            Ok(id)
        })
    }

    /// One second of a phase's timeline, as it is measured.
    pub fn add_tick(&self, run: i64, phase: usize, node: &str, p: &TimelinePoint) -> Result<()> {
        put_second(&mut self.conn()?, run, phase, node, p)
    }

    /// One system sample of a phase, as it is taken (`iolab watch --db`); the phase's row, when
    /// it is saved, leaves saved samples as they are.
    pub fn add_sample(&self, run: i64, phase: usize, node: &str, s: &Rates) -> Result<()> {
        put_samples(&mut self.conn()?, run, phase, node, std::slice::from_ref(s))
    }

    /// A phase that ended: its result, totals with histograms and system samples. Its seconds
    /// were saved as they were measured ([`Store::add_tick`]); only a second the phase's own
    /// timeline differs in (a worker's late report landing in a second already shown, or a
    /// second that was never ticked) is written here.
    ///
    /// With [`Store::add_second`], seconds and samples were saved as they came and the result
    /// carries none; its threads' figures are saved here, and its row replaces the provisional one.
    pub fn add_phase(&self, run: i64, idx: usize, node: &str, p: &PhaseResult) -> Result<()> {
        self.tx("saving a phase", |c| {
            put_phase(c, run, idx, node, p, true)?;
            for t in &p.timeline {
                c.exec(
                    "saving the timeline",
                    "INSERT INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, phase_idx, node, t_s) DO UPDATE SET point_json = excluded.point_json WHERE timeline.point_json != excluded.point_json",
                    vals![run, idx as i64, node, t.t_s, serde_json::to_string(t).unwrap_or_default()],
                )?;
            }
            let samples = p.system.as_ref().map(|s| s.samples.as_slice()).unwrap_or_default();
            put_samples(c, run, idx, node, samples)
        })
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
        self.tx("saving a second", |c| {
            for p in seconds {
                put_second(c, run, phase, node, p)?;
            }
            put_samples(c, run, phase, node, samples)?;
            if let Some(p) = so_far {
                put_phase(c, run, phase, node, p, false)?;
            }
            Ok(())
        })
    }

    /// The run's end: its status and, if it failed, why.
    pub fn finish_run(&self, run: i64, status: Status, error: Option<&str>, ended_unix_s: f64) -> Result<()> {
        let n = self.exec(
            "saving the run's status",
            "UPDATE runs SET status = ?2, error = ?3, ended_unix_s = ?4 WHERE id = ?1",
            vals![run, status.as_str(), error, ended_unix_s],
        )?;
        if n == 0 {
            return Err(StoreError::NotFound(format!(
                "run {run} is no longer in {} (deleted while it ran: `iolab rm --force`?); what it measured is printed but not kept",
                self.at
            )));
        }
        Ok(())
    }

    /// A run of several nodes: its nodes, where they were reached and how their clocks stood.
    pub fn set_nodes(&self, run: i64, nodes: &[NodeInfo]) -> Result<()> {
        self.exec(
            "saving the run's nodes",
            "UPDATE runs SET nodes_json = ?2 WHERE id = ?1",
            vals![run, serde_json::to_string(nodes).unwrap_or_default()],
        )?;
        Ok(())
    }

    /// A scenario's verdict on the run.
    pub fn set_verdict(&self, run: i64, verdict: &Verdict) -> Result<()> {
        self.exec(
            "saving the run's verdict",
            "UPDATE runs SET verdict_json = ?2 WHERE id = ?1",
            vals![run, serde_json::to_string(verdict).unwrap_or_default()],
        )?;
        Ok(())
    }

    /// The preconditioning a run followed, or (a run of kind `precondition`) did.
    pub fn set_precondition(&self, run: i64, p: &Precondition) -> Result<()> {
        self.exec(
            "saving the run's preconditioning",
            "UPDATE runs SET precondition_json = ?2 WHERE id = ?1",
            vals![run, serde_json::to_string(p).unwrap_or_default()],
        )?;
        Ok(())
    }

    /// The last complete `iolab precondition` of `target` on host `node` recorded before run
    /// `before`, linked: its uid and id, and how many runs this host recorded in between.
    pub fn last_precondition(&self, node: &str, target: &str, before: i64) -> Result<Option<Precondition>> {
        let row: Option<(i64, Option<String>, String)> = self.row(
            "reading the last preconditioning",
            "SELECT id, precondition_json, uid FROM runs WHERE kind = 'precondition' AND status = 'complete' AND node = ?1 AND name = ?2 AND id < ?3 ORDER BY id DESC LIMIT 1",
            vals![node, target, before],
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<Option<String>>(2)?.unwrap_or_default())),
        )?;
        let Some((id, Some(json), uid)) = row else { return Ok(None) };
        let mut p: Precondition = serde_json::from_str(&json).map_err(|cause| StoreError::Damaged {
            run: id,
            what: "preconditioning".into(),
            cause,
        })?;
        let since: i64 = self
            .row(
                "counting the runs since",
                "SELECT COUNT(*) FROM runs WHERE node = ?1 AND id > ?2 AND id < ?3",
                vals![node, id, before],
                |r| r.get(0),
            )?
            .unwrap_or(0);
        (p.run_uid, p.run_id, p.runs_since) = (Some(uid), Some(id), Some(since.max(0) as u64));
        Ok(Some(p))
    }

    /// The run's plan as it ran, where it grew as it went (a scenario of rounds: SNIA PTS's
    /// tests add a round's cells until the tracked cell is steady).
    pub fn set_plan(&self, run: i64, plan: &Plan) -> Result<()> {
        self.exec(
            "saving the run's plan",
            "UPDATE runs SET plan_json = ?2 WHERE id = ?1",
            vals![run, serde_json::to_string(plan).unwrap_or_default()],
        )?;
        Ok(())
    }

    /// Run ids a selector names: `42`, `last`, `last~2`, `all`, `3..7`, `last~4..`, or
    /// `key=value[,key=value]`.
    pub fn resolve(&self, selector: &str) -> Result<Vec<i64>> {
        let id = |r: &Row| r.get::<i64>(0);
        let sel = parse_selector(selector)?;
        let ids = match sel {
            select::Selector::All | select::Selector::Range(..) => {
                let all = self.rows("finding runs", "SELECT id FROM runs ORDER BY id", &[], id)?;
                sel.pick(&all).unwrap_or_default()
            }
            select::Selector::Id(n) => {
                self.row("finding a run", "SELECT id FROM runs WHERE id = ?1", vals![n], id)?.into_iter().collect()
            }
            select::Selector::Last(n) => self
                .row("finding a run", "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1", vals![n], id)?
                .into_iter()
                .collect(),
            select::Selector::Labels(pairs) => {
                let mut ids: Option<Vec<i64>> = None;
                for (k, v) in pairs {
                    let these = self.rows(
                        "finding runs",
                        "SELECT run_id FROM labels WHERE key = ?1 AND value = ?2 ORDER BY run_id",
                        vals![&k, &v],
                        id,
                    )?;
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
                self.at
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
        let rows = self.rows("reading labels", "SELECT key, value FROM labels WHERE run_id = ?1", vals![id], |r| {
            Ok((r.get::<String>(0)?, r.get::<String>(1)?))
        })?;
        Ok(rows.into_iter().collect())
    }

    pub fn list(&self, f: &ListFilter) -> Result<Vec<RunSummary>> {
        type ListRow = (i64, Option<String>, String, String, String, f64, String, u32, u32);
        let rows: Vec<ListRow> = self.rows(
            "listing runs",
            "SELECT r.id, r.uid, r.kind, r.name, r.status, r.started_unix_s, r.node, r.pid, (SELECT count(DISTINCT p.idx) FROM phases p WHERE p.run_id = r.id) FROM runs r ORDER BY r.id",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?)),
        )?;
        let mut out = Vec::new();
        for (id, uid, kind, name, status, started, node, pid, phases) in rows {
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
                let uid = uid.unwrap_or_default();
                out.push(RunSummary { id, uid, kind, name, status, started_unix_s: started, node, labels, phases });
            }
        }
        Ok(out)
    }

    /// Rebuild a stored run, histograms, timeline and samples included. A run whose process
    /// died (SIGKILL, power loss) shows as interrupted with the phases it saved and the
    /// timeline of the phase it was in.
    pub fn load(&self, id: i64) -> Result<StoredRun> {
        let damaged = |what: &'static str| move |cause| StoreError::Damaged { run: id, what: what.into(), cause };
        type Head = (String, String, String, Option<String>, f64, Option<f64>, String, u32, String, String, String);
        type Tail = (Option<String>, Option<String>, Option<String>, Option<String>);
        let row: Option<(Head, Tail)> = self.row(
            "reading a run",
            "SELECT kind, name, status, error, started_unix_s, ended_unix_s, node, pid, iolab_version, plan_json, host_json, nodes_json, verdict_json, uid, precondition_json FROM runs WHERE id = ?1",
            vals![id],
            |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                    ),
                    (r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?),
                ))
            },
        )?;
        let Some((
            (kind, name, status, error, started, ended, node, pid, version, plan_json, host_json),
            (nodes_json, verdict_json, uid, precondition_json),
        )) = row
        else {
            return Err(StoreError::NotFound(format!("no run {id} in {}; `iolab runs` lists them", self.at)));
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
        let precondition: Option<Precondition> = match precondition_json {
            Some(j) => Some(serde_json::from_str(&j).map_err(damaged("preconditioning"))?),
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
            uid: uid.unwrap_or_default(),
            kind,
            name,
            labels: self.labels(id)?,
            pid,
            ended_unix_s: ended,
            result: RunResult {
                nodes: infos,
                verdict,
                precondition,
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
        self.rows(
            "reading a run's nodes",
            "SELECT node FROM phases WHERE run_id = ?1 AND node != '*' UNION SELECT node FROM timeline WHERE run_id = ?1 AND node != '*' ORDER BY 1",
            vals![id],
            |r| r.get::<String>(0),
        )
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
        let rows = self.rows(
            "reading phases",
            "SELECT idx, result_json FROM phases WHERE run_id = ?1 AND node = ?2 ORDER BY idx",
            vals![id, node],
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        let mut phases = Vec::new();
        let mut idxs = Vec::new();
        for (idx, json) in rows {
            let mut p: PhaseResult = serde_json::from_str(&json).map_err(|cause| StoreError::Damaged {
                run: id,
                what: format!("phase {idx}"),
                cause,
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
        let partial: Vec<i64> = self
            .rows(
                "reading the timeline",
                "SELECT DISTINCT phase_idx FROM timeline WHERE run_id = ?1 AND node = ?2 ORDER BY phase_idx",
                vals![id, node],
                |r| r.get::<i64>(0),
            )?
            .into_iter()
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
        let rows = self.rows(
            "reading the timeline",
            "SELECT point_json FROM timeline WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY t_s",
            vals![id, node, idx],
            |r| r.get::<String>(0),
        )?;
        Ok(rows.iter().filter_map(|j| serde_json::from_str(j).ok()).collect())
    }

    fn samples(&self, id: i64, node: &str, idx: i64) -> Result<Vec<Rates>> {
        let rows = self.rows(
            "reading samples",
            "SELECT sample_json FROM samples WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY t_s",
            vals![id, node, idx],
            |r| r.get::<String>(0),
        )?;
        Ok(rows.iter().filter_map(|j| serde_json::from_str(j).ok()).collect())
    }

    fn attach_hists(&self, id: i64, node: &str, idx: i64, p: &mut PhaseResult) -> Result<()> {
        let rows = self.rows(
            "reading histograms",
            "SELECT job, dir, hist FROM totals WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3",
            vals![id, node, idx],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<Option<Vec<u8>>>(2)?)),
        )?;
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
        type ThreadRow = (String, u32, f64, i64, i64, Option<String>);
        let rows: Vec<ThreadRow> = self.rows(
            "reading threads",
            "SELECT job, thread, elapsed_s, ops, bytes, error FROM threads WHERE run_id = ?1 AND node = ?2 AND phase_idx = ?3 ORDER BY job, thread",
            vals![id, node, idx],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )?;
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
        self.tx("deleting runs", |c| {
            let mut n = 0;
            for id in ids {
                n += c.exec("deleting a run", "DELETE FROM runs WHERE id = ?1", vals![*id])?;
            }
            Ok(n as usize)
        })
    }
}

/// One second of a phase's timeline, replacing what was saved for that second.
fn put_second(c: &mut Conn<'_>, run: i64, idx: usize, node: &str, p: &TimelinePoint) -> Result<()> {
    c.exec(
        "saving the timeline",
        "INSERT INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, phase_idx, node, t_s) DO UPDATE SET point_json = excluded.point_json",
        vals![run, idx as i64, node, p.t_s, serde_json::to_string(p).unwrap_or_default()],
    )?;
    Ok(())
}

/// A phase's row (without its seconds, samples and threads, which have rows of their own), its
/// totals per job and class with histograms, and its threads. `last` marks the phase's final
/// row; a provisional one (saved while it runs) is replaced by the next.
fn put_phase(c: &mut Conn<'_>, run: i64, idx: usize, node: &str, p: &PhaseResult, last: bool) -> Result<()> {
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
    c.exec(
        "saving a phase",
        "INSERT INTO phases (run_id, idx, node, name, elapsed_s, interrupted, result_json, final) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (run_id, idx, node) DO UPDATE SET name = excluded.name, elapsed_s = excluded.elapsed_s, interrupted = excluded.interrupted, result_json = excluded.result_json, final = excluded.final",
        vals![
            run,
            idx as i64,
            node,
            &p.name,
            p.elapsed_s,
            p.interrupted,
            serde_json::to_string(&slim).unwrap_or_default(),
            last
        ],
    )?;
    let put = |c: &mut Conn<'_>, job: &str, t: &Totals| -> Result<()> {
        for (class, d) in t.iter() {
            c.exec(
                "saving totals",
                "INSERT INTO totals (run_id, phase_idx, node, job, dir, ops, bytes, iops, bw_bytes, hist) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (run_id, phase_idx, node, job, dir) DO UPDATE SET ops = excluded.ops, bytes = excluded.bytes, iops = excluded.iops, bw_bytes = excluded.bw_bytes, hist = excluded.hist",
                vals![
                    run,
                    idx as i64,
                    node,
                    job,
                    class.as_str(),
                    d.ops as i64,
                    d.bytes as i64,
                    d.iops,
                    d.bw_bytes,
                    d.hist.as_ref().and_then(iolab_model::hist::to_v2)
                ],
            )?;
        }
        Ok(())
    };
    put(c, "", &p.total)?;
    for n in &p.nodes {
        put(c, &multi::node_key(&n.name), &n.total)?;
    }
    for j in &p.jobs {
        let key = multi::job_key(j);
        put(c, &key, &j.total)?;
        for t in &j.per_thread {
            c.exec(
                "saving threads",
                "INSERT INTO threads (run_id, phase_idx, node, job, thread, elapsed_s, ops, bytes, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (run_id, phase_idx, node, job, thread) DO UPDATE SET elapsed_s = excluded.elapsed_s, ops = excluded.ops, bytes = excluded.bytes, error = excluded.error",
                vals![run, idx as i64, node, &key, t.thread, t.elapsed_s, t.ops as i64, t.bytes as i64, t.error.as_deref()],
            )?;
        }
    }
    Ok(())
}

fn put_samples(c: &mut Conn<'_>, run: i64, idx: usize, node: &str, samples: &[Rates]) -> Result<()> {
    for s in samples {
        c.exec(
            "saving system samples",
            "INSERT INTO samples (run_id, phase_idx, node, t_s, sample_json) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, phase_idx, node, t_s) DO UPDATE SET sample_json = excluded.sample_json",
            vals![run, idx as i64, node, s.t_s, serde_json::to_string(s).unwrap_or_default()],
        )?;
    }
    Ok(())
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
