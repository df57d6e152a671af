//! `--write-bw-log`, `--write-iops-log`, `--write-lat-log`: fio's logs of a run written beside
//! it (report::fio_log makes their text); with `--node`, the merged run's and each node's, as
//! fio's client writes each server's. Names are checked before the run: a file that exists is
//! never overwritten.

use crate::args::LogArgs;
use anyhow::{bail, Context, Result};
use iolab_report::fio_log::{self, LogKind};
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
    if wanted(a).is_empty() {
        return Ok(());
    }
    if a.log_avg_msec == 0 || !a.log_avg_msec.is_multiple_of(1000) {
        bail!(
            "--log-avg-msec {}: iolab keeps figures per second; give a whole number of seconds in ms (1000, 5000)",
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

/// Write the logs; returns the files written.
pub fn write(a: &LogArgs, run: &RunResult) -> Result<Vec<PathBuf>> {
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
