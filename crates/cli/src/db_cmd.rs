//! `iolab db copy FROM TO`: runs moved between results databases (a machine's SQLite file into
//! the team's PostgreSQL, or back), with progress on stderr and the count at the end.

use crate::args::DbCopyArgs;
use crate::formats::Format;
use anyhow::{Context, Result};
use iolab_store::{CopyEvent, CopyFilter, Store};
use serde_json::json;
use std::process::ExitCode;

pub fn copy(a: DbCopyArgs) -> Result<ExitCode> {
    let filter = CopyFilter {
        selectors: a.runs,
        list: crate::stored::list_filter(a.labels, a.name, a.since.as_deref(), a.status.as_deref())?,
    };
    let from = Store::open_existing(&a.from).context("opening the database to copy from")?;
    let ids = from.select(&filter)?;
    let to = Store::open(&a.to).context("opening the database to copy to")?;
    let human = a.output == Format::Human;
    if human {
        errln!("iolab: copying {} run(s) from {} to {}", ids.len(), from.location(), to.location());
    }
    let total = ids.len();
    let mut done = 0;
    let mut events = Vec::new();
    let report = from.copy_to(&to, &ids, &mut |e| {
        done += 1;
        if human {
            let line = match &e {
                CopyEvent::Copied { from, to, name, rows } => {
                    format!("run {from} copied as run {to}: {name} ({rows} rows)")
                }
                CopyEvent::Present { from, to } => format!("run {from} is there already (run {to}); left as it is"),
                CopyEvent::Running { from, node } => {
                    format!("run {from} is still running (on {node}); left for a later copy")
                }
            };
            errln!("  [{done}/{total}] {line}");
        }
        events.push(e);
    })?;
    if human {
        println!(
            "copied {} run(s) ({} rows) to {}; {} already there, {} still running",
            report.copied,
            report.rows,
            to.location(),
            report.present,
            report.running
        );
    } else {
        let runs: Vec<_> = events
            .iter()
            .map(|e| match e {
                CopyEvent::Copied { from, to, rows, .. } => {
                    json!({"from": from, "to": to, "copied": true, "rows": rows})
                }
                CopyEvent::Present { from, to } => json!({"from": from, "to": to, "copied": false}),
                CopyEvent::Running { from, .. } => json!({"from": from, "to": null, "copied": false, "running": true}),
            })
            .collect();
        let mut v = serde_json::to_value(&report)?;
        v["runs"] = runs.into();
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    Ok(ExitCode::SUCCESS)
}
