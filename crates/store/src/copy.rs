//! `iolab db copy`: runs moved between stores (SQLite files into a team's PostgreSQL, or back),
//! row for row: the run, its labels, nodes and verdict, phases (provisional and final), totals
//! with histograms, seconds, samples and threads. Each run is written in one transaction of the
//! destination, under a new id there, and keeps its `uid`: a run already in the destination
//! is recognised and never copied twice, however often the copy is repeated.

use crate::backend::{vals, Row, Value};
use crate::conn::Conn;
use crate::{live_status, status_of, ListFilter, Result, Store, StoreError};
use iolab_model::Status;
use serde::Serialize;

/// Every table holding rows of a run, besides `runs`, with the columns copied (all but
/// `run_id`) and the key they are read in order of. A table added to the schema that keeps a
/// run's rows is added here too (a test compares this list with the schema).
pub const TABLES: &[(&str, &[&str], &str)] = &[
    ("labels", &["key", "value"], "key"),
    ("phases", &["idx", "node", "name", "elapsed_s", "interrupted", "result_json", "final"], "idx, node"),
    (
        "totals",
        &["phase_idx", "node", "job", "dir", "ops", "bytes", "iops", "bw_bytes", "hist"],
        "phase_idx, node, job, dir",
    ),
    ("timeline", &["phase_idx", "node", "t_s", "point_json"], "phase_idx, node, t_s"),
    ("samples", &["phase_idx", "node", "t_s", "sample_json"], "phase_idx, node, t_s"),
    (
        "threads",
        &["phase_idx", "node", "job", "thread", "elapsed_s", "ops", "bytes", "error"],
        "phase_idx, node, job, thread",
    ),
];

/// The columns of `runs` copied (all but `id`, which each database gives).
pub const RUN_COLUMNS: &[&str] = &[
    "uid",
    "kind",
    "name",
    "status",
    "error",
    "started_unix_s",
    "ended_unix_s",
    "node",
    "pid",
    "iolab_version",
    "plan_json",
    "host_json",
    "nodes_json",
    "verdict_json",
    "precondition_json",
];

/// Rows read from the source at a time.
const PAGE: i64 = 1000;

/// Rows written by one statement (their parameters stay well under both engines' limits).
const ROWS_PER_INSERT: usize = 100;

/// Which runs a copy takes: those the selectors name (every run when none), among those the
/// filter keeps.
#[derive(Debug, Clone, Default)]
pub struct CopyFilter {
    pub selectors: Vec<String>,
    pub list: ListFilter,
}

/// What happened to one run, as it happens.
#[derive(Debug, Clone)]
pub enum CopyEvent {
    /// Copied as `to` in the destination, with `rows` rows besides its own.
    Copied { from: i64, to: i64, name: String, rows: u64 },
    /// Already in the destination (as `to`): left as it is.
    Present { from: i64, to: i64 },
    /// Still being recorded: not copied (copy it again once it has ended).
    Running { from: i64, node: String },
}

/// The count at the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CopyReport {
    /// Runs copied.
    pub copied: usize,
    /// Runs already in the destination.
    pub present: usize,
    /// Runs skipped because they are still running.
    pub running: usize,
    /// Rows written besides the runs' own (labels, phases, totals, seconds, samples, threads).
    pub rows: u64,
}

impl Store {
    /// The runs a copy takes, in id order.
    pub fn select(&self, f: &CopyFilter) -> Result<Vec<i64>> {
        let listed: Vec<i64> = self.list(&f.list)?.into_iter().map(|r| r.id).collect();
        if f.selectors.is_empty() {
            return Ok(listed);
        }
        let mut named = self.resolve_all(&f.selectors)?;
        named.retain(|id| listed.contains(id));
        named.sort_unstable();
        Ok(named)
    }

    /// Copy runs of this store into `to`; `progress` hears of each run as it is done.
    pub fn copy_to(&self, to: &Store, ids: &[i64], progress: &mut dyn FnMut(CopyEvent)) -> Result<CopyReport> {
        let mut report = CopyReport::default();
        for &id in ids {
            let event = self.copy_one(to, id)?;
            match &event {
                CopyEvent::Copied { rows, .. } => {
                    report.copied += 1;
                    report.rows += rows;
                }
                CopyEvent::Present { .. } => report.present += 1,
                CopyEvent::Running { .. } => report.running += 1,
            }
            progress(event);
        }
        Ok(report)
    }

    fn copy_one(&self, to: &Store, id: i64) -> Result<CopyEvent> {
        let what = "reading a run to copy";
        let cols = RUN_COLUMNS.join(", ");
        let mut run = self
            .row(what, &format!("SELECT {cols} FROM runs WHERE id = ?1"), vals![id], |r| Ok(r.0.clone()))?
            .ok_or_else(|| StoreError::NotFound(format!("no run {id} in {}", self.at)))?;
        let text = |v: &Value<'_>| match v {
            Value::Text(t) => t.to_string(),
            _ => String::new(),
        };
        let col = |name: &str| RUN_COLUMNS.iter().position(|c| *c == name).unwrap_or(0);
        let uid = text(&run[col("uid")]);
        if uid.is_empty() {
            return Err(StoreError::NotFound(format!(
                "run {id} in {} has no uid (a database this iolab did not migrate?)",
                self.at
            )));
        }
        let node = text(&run[col("node")]);
        let pid = Row(vec![run[col("pid")].clone()]).get::<u32>(0).unwrap_or(0);
        // The status as `show` reads it: a run whose process is gone is copied interrupted, with
        // the reason; one still running is left for a later copy.
        let (status, why) = live_status(status_of(&text(&run[col("status")])), &node, pid);
        if status == Status::Running {
            return Ok(CopyEvent::Running { from: id, node });
        }
        run[col("status")] = Value::Text(status.as_str().to_string().into());
        if let (Value::Null, Some(why)) = (&run[col("error")], why) {
            run[col("error")] = Value::Text(why.into());
        }
        let present = |s: &Store| {
            s.row("finding a copied run", "SELECT id FROM runs WHERE uid = ?1", vals![uid.as_str()], |r| {
                r.get::<i64>(0)
            })
        };
        if let Some(there) = present(to)? {
            return Ok(CopyEvent::Present { from: id, to: there });
        }
        let name = text(&run[col("name")]);
        let placeholders = (1..=RUN_COLUMNS.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
        let insert =
            format!("INSERT INTO runs ({cols}) VALUES ({placeholders}) ON CONFLICT (uid) DO NOTHING RETURNING id");
        let copied = to.tx("copying a run", |c| {
            let Some(new) = c.row("copying a run", &insert, &run, |r| r.get::<i64>(0))? else {
                // Another copy put it there since we looked.
                return Ok(None);
            };
            let mut rows = 0;
            for (table, columns, key) in TABLES {
                rows += self.copy_rows(c, table, columns, key, id, new)?;
            }
            Ok(Some((new, rows)))
        })?;
        Ok(match copied {
            Some((new, rows)) => CopyEvent::Copied { from: id, to: new, name, rows },
            None => CopyEvent::Present { from: id, to: present(to)?.unwrap_or(0) },
        })
    }

    /// One table's rows of run `from`, written under run `to` in the destination's transaction.
    fn copy_rows(&self, c: &mut Conn<'_>, table: &str, columns: &[&str], key: &str, from: i64, to: i64) -> Result<u64> {
        let cols = columns.join(", ");
        let select = format!("SELECT {cols} FROM {table} WHERE run_id = ?1 ORDER BY {key} LIMIT ?2 OFFSET ?3");
        let mut offset = 0;
        let mut n = 0;
        loop {
            let page = self.rows("reading rows to copy", &select, vals![from, PAGE, offset], |r| Ok(r.0.clone()))?;
            for chunk in page.chunks(ROWS_PER_INSERT) {
                let width = columns.len() + 1;
                let tuples: Vec<String> = (0..chunk.len())
                    .map(|r| {
                        let ps: Vec<String> = (1..=width).map(|k| format!("?{}", r * width + k)).collect();
                        format!("({})", ps.join(", "))
                    })
                    .collect();
                let sql = format!("INSERT INTO {table} (run_id, {cols}) VALUES {}", tuples.join(", "));
                let params: Vec<Value<'_>> =
                    chunk.iter().flat_map(|row| std::iter::once(Value::Int(to)).chain(row.iter().cloned())).collect();
                c.exec("copying rows", &sql, &params)?;
                n += chunk.len() as u64;
            }
            if (page.len() as i64) < PAGE {
                return Ok(n);
            }
            offset += PAGE;
        }
    }
}
