//! `iolab precondition TARGET` (issue 29): SNIA PTS's purge and workload-independent fill
//! (`iolab_workload::precondition`), with a progress line and its ETA on stderr, and what was
//! done on stdout (a summary, or one JSON object).

use crate::args::PreconditionArgs;
use crate::formats::Format;
use crate::record::Recorder;
use anyhow::{Context, Result};
use iolab_report::fmt::{fmt_binary, rate};
use iolab_spec::Plan;
use iolab_workload::model::steady::Precondition;
use iolab_workload::model::RunKind;
use iolab_workload::precondition::{precondition, Outcome, Progress, Request};
use iolab_workload::{RunResult, Status};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

pub fn run(a: PreconditionArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let req = Request {
        target: a.target.clone(),
        device: a.device,
        size: a.size.map(|s| s.0),
        overwrite: a.overwrite,
        purge: a.purge,
        passes: a.passes,
        bs: a.bs.0,
    };
    let tty = std::io::stderr().is_terminal();
    let show = !a.no_progress;
    let name = target_name(&a.target);
    let mut rec = Recorder::begin(&a.save, RunKind::Precondition, &name, &Plan { phases: Vec::new() })?;
    let done = precondition(&req, &stop, &mut progress_line(show, tty));
    if show && tty {
        let _ = writeln!(std::io::stderr());
    }
    let out = match done {
        Ok(out) => out,
        Err(e) => {
            if let Some(r) = rec.as_mut() {
                r.finish(&RunResult::failed(Plan { phases: Vec::new() }, e.to_string()));
            }
            return Err(e).with_context(|| format!("preconditioning {}", a.target.display()));
        }
    };
    if let Some(r) = rec.as_mut() {
        r.set_precondition(&record_of(&out, &name));
        let status = if out.interrupted { Status::Interrupted } else { Status::Complete };
        r.finish(&RunResult { status, ..RunResult::begin(Plan { phases: Vec::new() }) });
        if a.output != Format::Json {
            errln!("iolab: {}", r.where_());
        }
    }
    if a.output == Format::Json {
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        for line in lines(&out) {
            outln!("{line}")?;
        }
    }
    Ok(if out.interrupted { ExitCode::from(crate::signals::interrupted_status()) } else { ExitCode::SUCCESS })
}

/// The progress line of the fill on stderr (redrawn in place on a terminal), or nothing.
pub fn progress_line(show: bool, tty: bool) -> impl FnMut(Progress) {
    move |p: Progress| {
        if !show {
            return;
        }
        let pct = if p.total > 0 { 100.0 * p.done as f64 / p.total as f64 } else { 100.0 };
        let eta = p.eta().map_or("?".to_string(), clock);
        let line = format!(
            "precondition: {} of {} ({pct:.0}%), {}, ETA {eta}",
            fmt_binary(p.done as f64),
            fmt_binary(p.total as f64),
            rate(p.rate())
        );
        let mut e = std::io::stderr();
        let _ = if tty { write!(e, "\r\x1b[2K{line}") } else { writeln!(e, "{line}") };
    }
}

/// What the purge and the fill did, in words (`iolab precondition` prints them; a PTS
/// scenario keeps them as its test conditions).
pub fn lines(out: &Outcome) -> Vec<String> {
    let mut v = vec![
        format!("{} ({}, {} bytes)", out.target.display(), out.kind, out.capacity_bytes),
        format!("purge: {} ({:.2} s)", out.purge_said, out.purge_s),
        format!(
            "fill: {} written in {} pass{} of {} sequential writes{}, {:.1} s, {}",
            fmt_binary(out.bytes_written as f64),
            out.passes,
            if out.passes == 1 { "" } else { "es" },
            fmt_binary(out.bs as f64),
            if out.direct { " (O_DIRECT)" } else { " (through the page cache, flushed each pass)" },
            out.fill_s,
            rate(if out.fill_s > 0.0 { out.bytes_written as f64 / out.fill_s } else { 0.0 })
        ),
    ];
    if out.interrupted {
        v.push("INTERRUPTED: the fill was stopped before its end; the target is not preconditioned".into());
    }
    v
}

/// The name a target's preconditioning is kept and found under: its canonical path (as given
/// when it cannot be resolved).
pub fn target_name(target: &std::path::Path) -> String {
    std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf()).display().to_string()
}

/// The outcome as a run keeps it (ended now).
pub fn record_of(out: &Outcome, target: &str) -> Precondition {
    Precondition {
        target: target.to_string(),
        kind: out.kind.to_string(),
        capacity_bytes: out.capacity_bytes,
        purge: out.purge.clone(),
        purge_said: out.purge_said.clone(),
        purge_s: out.purge_s,
        passes: out.passes,
        bs: out.bs,
        direct: out.direct,
        bytes_written: out.bytes_written,
        fill_s: out.fill_s,
        interrupted: out.interrupted,
        ended_unix_s: iolab_workload::model::now_unix_s(),
        ..Default::default()
    }
}
