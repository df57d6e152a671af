//! fio's bandwidth, IOPS and latency logs (`--write-bw-log`, `--write-iops-log`,
//! `--write-lat-log`) from a run's per-second figures, in fio 3.x's averaged-log format:
//! `time_ms, value, ddir, bs, offset` per window of `log_avg_msec` (a whole number of
//! seconds: the store keeps seconds), with bs and offset 0 as fio writes them when averaging.
//! bw is KiB/s, iops I/Os per second, lat the mean latency in ns of the window's I/Os (fio's
//! `_lat` log: iolab's latency runs from issue to completion). One log per phase (its jobs
//! together), numbered from 1 as fio numbers its jobs. iolab keeps no per-I/O record, so there
//! is no per-I/O log. A run of several nodes has the merged timeline's logs (the mean latency
//! of each second weighted over the nodes: `iolab_model::merge`) and, as fio's client writes
//! each server's, each node's own ([`node_file_name`]).

use iolab_model::{PhaseResult, RunResult, TimelinePoint};
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    Bw,
    Iops,
    Lat,
}

impl LogKind {
    /// The file name's type part, as fio names it (`PREFIX_bw.1.log`).
    pub fn suffix(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Lat => "lat",
        }
    }
}

/// A log's file name for a prefix and a phase index (0-based).
pub fn file_name(prefix: &str, kind: LogKind, phase: usize) -> String {
    format!("{prefix}_{}.{}.log", kind.suffix(), phase + 1)
}

/// The log of node `node` of a run of several nodes, as fio's client names each server's
/// (`PREFIX_lat.1.log.NODE`; fio appends the host name, iolab the node's name, which is unique
/// where host names may not be).
pub fn node_file_name(prefix: &str, kind: LogKind, phase: usize, node: &str) -> String {
    format!("{}.{node}", file_name(prefix, kind, phase))
}

/// One log per phase that has seconds: (phase index, text).
pub fn logs(run: &RunResult, kind: LogKind, avg_s: u64) -> Vec<(usize, String)> {
    logs_of(&run.phases, kind, avg_s)
}

/// [`logs`] of phases (a node's own, at their places in the run; a phase without seconds has
/// no log).
pub fn logs_of(phases: &[PhaseResult], kind: LogKind, avg_s: u64) -> Vec<(usize, String)> {
    let avg_s = avg_s.max(1) as usize;
    phases
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.timeline.is_empty())
        .map(|(i, p)| (i, render(&p.timeline, kind, avg_s, p.total.read().ops > 0, p.total.write().ops > 0)))
        .collect()
}

fn render(seconds: &[TimelinePoint], kind: LogKind, avg_s: usize, reads: bool, writes: bool) -> String {
    let mut out = String::new();
    for window in seconds.chunks(avg_s) {
        let Some(last) = window.last() else { continue };
        let t_ms = (last.t_s * 1000.0).round() as u64;
        let secs = window.len() as f64;
        for (ddir, on) in [(0, reads), (1, writes)] {
            if !on {
                continue;
            }
            let (ops, bytes, lat_sum) = window.iter().fold((0u64, 0u64, 0f64), |(o, b, l), p| {
                let (po, pb, pl) = if ddir == 0 {
                    (p.read_ops, p.read_bytes, p.read_lat_mean_ns)
                } else {
                    (p.write_ops, p.write_bytes, p.write_lat_mean_ns)
                };
                (o + po, b + pb, l + pl as f64 * po as f64)
            });
            let value = match kind {
                LogKind::Bw => (bytes as f64 / 1024.0 / secs).round() as u64,
                LogKind::Iops => (ops as f64 / secs).round() as u64,
                // No I/O of this direction in the window: fio writes no latency line.
                LogKind::Lat if ops == 0 || lat_sum == 0.0 => continue,
                LogKind::Lat => (lat_sum / ops as f64).round() as u64,
            };
            let _ = writeln!(out, "{t_ms}, {value}, {ddir}, 0, 0");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: f64, r: u64, w: u64) -> TimelinePoint {
        TimelinePoint {
            t_s: t,
            read_ops: r,
            read_bytes: r * 4096,
            write_ops: w,
            write_bytes: w * 4096,
            read_lat_mean_ns: if r > 0 { 1000 * t as u64 } else { 0 },
            write_lat_mean_ns: if w > 0 { 500 } else { 0 },
            ..Default::default()
        }
    }

    #[test]
    fn windows_average_seconds_per_direction() {
        let s = [second(1.0, 100, 10), second(2.0, 300, 0), second(3.0, 50, 50)];
        assert_eq!(render(&s, LogKind::Iops, 1, true, true), "1000, 100, 0, 0, 0\n1000, 10, 1, 0, 0\n2000, 300, 0, 0, 0\n2000, 0, 1, 0, 0\n3000, 50, 0, 0, 0\n3000, 50, 1, 0, 0\n");
        assert_eq!(render(&s, LogKind::Bw, 2, true, false), "2000, 800, 0, 0, 0\n3000, 200, 0, 0, 0\n");
        // Latency: the ops-weighted mean of the seconds' means; no line without I/O.
        assert_eq!(
            render(&s, LogKind::Lat, 2, true, true),
            "2000, 1750, 0, 0, 0\n2000, 500, 1, 0, 0\n3000, 3000, 0, 0, 0\n3000, 500, 1, 0, 0\n"
        );
        assert_eq!(file_name("out/x", LogKind::Lat, 0), "out/x_lat.1.log");
    }
}
