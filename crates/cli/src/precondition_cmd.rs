//! `iolab precondition TARGET` (issue 29): SNIA PTS's purge and workload-independent fill
//! (`iolab_workload::precondition`), with a progress line and its ETA on stderr, and what was
//! done on stdout (a summary, or one JSON object).

use crate::args::PreconditionArgs;
use crate::formats::Format;
use anyhow::{Context, Result};
use iolab_report::fmt::{fmt_binary, rate};
use iolab_workload::precondition::{precondition, Outcome, Progress, Request};
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
    let out = precondition(&req, &stop, &mut progress_line(show, tty))
        .with_context(|| format!("preconditioning {}", a.target.display()))?;
    if show && tty {
        let _ = writeln!(std::io::stderr());
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
