//! `--write-bw-log`, `--write-iops-log`, `--write-lat-log`: fio's logs of a run written beside
//! it (report::fio_log makes their text); with `--node`, the merged run's and each node's, as
//! fio's client writes each server's. With `--log-avg-msec 0` they are fio's per-I/O logs,
//! which the workers write as they run (iolab_workload::io_log; each job carries its
//! `io_log`, set here). Names are checked before the run: a file that exists is never
//! overwritten.

use crate::args::LogArgs;
use anyhow::{bail, Context, Result};
use iolab_report::fio_log::{self, LogKind};
use iolab_spec::io_log::IoLog;
use iolab_spec::Plan;
use iolab_workload::{PhaseResult, RunResult};
use std::io::Write;
use std::path::PathBuf;

fn wanted(a: &LogArgs) -> Vec<(LogKind, &str)> {
    [(LogKind::Bw, &a.write_bw_log), (LogKind::Iops, &a.write_iops_log), (LogKind::Lat, &a.write_lat_log)]
        .into_iter()
        .filter_map(|(k, p)| p.as_deref().map(|p| (k, p)))
        .collect()
}

/// Refuse bad settings and existing files before anything runs (`phases`: how many logs each).
pub fn check(a: &LogArgs, phases: usize) -> Result<()> {
    check_nodes(a, phases, &[])
}

/// [`check`] for a run of several nodes: the merged logs' names and each node's.
pub fn check_nodes(a: &LogArgs, phases: usize, nodes: &[String]) -> Result<()> {
    if (a.log_offset || a.log_prio) && !a.per_io() {
        let flag = if a.log_offset { "--log-offset" } else { "--log-prio" };
        bail!("{flag} is a column of the per-I/O logs: give it with --write-lat-log PREFIX (or bw, iops) and --log-avg-msec 0");
    }
    if wanted(a).is_empty() {
        return Ok(());
    }
    if a.per_io() {
        if !nodes.is_empty() {
            bail!("--log-avg-msec 0: per-I/O logs are written where the I/O runs; with --node, give a whole number of seconds (1000)");
        }
        // The names are checked when the jobs are given their logs (per_io).
        return Ok(());
    }
    if !a.log_avg_msec.is_multiple_of(1000) {
        bail!(
            "--log-avg-msec {}: iolab keeps figures per second; give a whole number of seconds in ms (1000, 5000), or 0 to log every I/O",
            a.log_avg_msec
        );
    }
    for (kind, prefix) in wanted(a) {
        for i in 0..phases {
            let merged = std::iter::once(fio_log::file_name(prefix, kind, i));
            let per_node = nodes.iter().map(|n| fio_log::node_file_name(prefix, kind, i, n));
            for path in merged.chain(per_node).map(PathBuf::from) {
                if path.symlink_metadata().is_ok() {
                    bail!("{} exists; iolab does not overwrite it: remove it or choose another prefix", path.display());
                }
            }
        }
    }
    Ok(())
}

/// [`check`] for the logs of a stored run: its per-second figures, never per I/O.
pub fn check_stored(a: &LogArgs, phases: usize) -> Result<()> {
    if a.per_io() {
        bail!("--log-avg-msec 0: a stored run keeps per-second figures; per-I/O logs are written during `iolab run`");
    }
    check(a, phases)
}

/// With `--log-avg-msec 0`, give the plan's jobs (those of a fio job file that ask) their
/// per-I/O logs, numbered as fio numbers threads, and refuse names that exist.
pub fn per_io(a: &LogArgs, plan: &mut Plan) -> Result<()> {
    if !a.per_io() {
        return Ok(());
    }
    let log = IoLog {
        bw: a.write_bw_log.clone(),
        iops: a.write_iops_log.clone(),
        lat: a.write_lat_log.clone(),
        offset: a.log_offset,
        prio: a.log_prio,
        first: 1,
    };
    let only = (!a.logged.is_empty()).then_some(a.logged.as_slice());
    for name in iolab_spec::io_log::assign(plan, &log, only) {
        if std::path::Path::new(&name).symlink_metadata().is_ok() {
            bail!("{name} exists; iolab does not overwrite it: remove it or choose another prefix");
        }
    }
    Ok(())
}

/// Write the logs; returns the files written. Per-I/O logs were written during the run: their
/// files, with the lines each has, and any I/Os the writer fell behind on, said.
pub fn write(a: &LogArgs, run: &RunResult) -> Result<Vec<PathBuf>> {
    if a.per_io() {
        let mut files = Vec::new();
        for w in iolab_workload::io_log::take_written() {
            if w.lost > 0 {
                errln!(
                    "iolab: {}: {} I/Os not logged of {} (the log's writer fell behind the I/O; a faster disk for the logs, or fewer threads, avoids it)",
                    w.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
                    w.lost,
                    w.lost + w.lines
                );
            }
            files.extend(w.files);
        }
        return Ok(files);
    }
    write_phases(a, &run.phases, None)
}

/// Write the logs of `phases`: a run's, or node `node`'s own (fio's client names each server's
/// log after it: `PREFIX_lat.1.log.NODE`). Returns the files written.
pub fn write_phases(a: &LogArgs, phases: &[PhaseResult], node: Option<&str>) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (kind, prefix) in wanted(a) {
        for (i, text) in fio_log::logs_of(phases, kind, a.log_avg_msec / 1000) {
            let path = PathBuf::from(match node {
                Some(n) => fio_log::node_file_name(prefix, kind, i, n),
                None => fio_log::file_name(prefix, kind, i),
            });
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            f.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}
