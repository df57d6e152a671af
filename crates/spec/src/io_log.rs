//! fio's per-I/O logs (`write_bw_log`, `write_iops_log`, `write_lat_log` without
//! `log_avg_msec`): which logs a job's threads write as they run, one line per I/O, and under
//! which names. The workload crate writes them (iolab_workload::io_log); this is what the plan
//! carries, set on each job once the plan is made ([`assign`]).

use crate::job::Plan;
use serde::{Deserialize, Serialize};

/// A per-I/O log's kind and its part of the file name (`PREFIX_bw.N.log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoLogKind {
    /// One line per I/O: its bandwidth, bytes x 10^6 / latency in ns (fio's per-I/O value).
    Bw,
    /// One line per I/O: 1.
    Iops,
    /// One line per I/O: its latency in ns, issue to completion (fio's `_lat`).
    Lat,
}

impl IoLogKind {
    pub fn suffix(self) -> &'static str {
        match self {
            IoLogKind::Bw => "bw",
            IoLogKind::Iops => "iops",
            IoLogKind::Lat => "lat",
        }
    }
}

/// The per-I/O logs of one job: their prefixes, the columns fio's `log_offset` and `log_prio`
/// add, and the number of the job's first thread's files (fio numbers its threads from 1
/// across the whole job file: a job of 4 threads after a job of 1 writes `.2` to `.5`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IoLog {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<String>,
    /// fio's `log_offset=1`: each line has the I/O's offset in bytes.
    #[serde(default)]
    pub offset: bool,
    /// fio's `log_prio=1`: the last column is the I/O's priority value in hex (0x2000: rt/0);
    /// else 1 for a real-time I/O, 0 for any other.
    #[serde(default)]
    pub prio: bool,
    /// The number of the job's first thread's files, from 1.
    #[serde(default)]
    pub first: u32,
}

impl IoLog {
    /// The logs asked for, each with its prefix.
    pub fn kinds(&self) -> impl Iterator<Item = (IoLogKind, &str)> {
        [(IoLogKind::Bw, &self.bw), (IoLogKind::Iops, &self.iops), (IoLogKind::Lat, &self.lat)]
            .into_iter()
            .filter_map(|(k, p)| p.as_deref().map(|p| (k, p)))
    }

    /// Thread `thread`'s files (0-based within the job), as fio names them.
    pub fn files(&self, thread: u32) -> Vec<(IoLogKind, String)> {
        self.kinds().map(|(k, p)| (k, file_name(p, k, self.first + thread))).collect()
    }
}

/// `PREFIX_KIND.N.log`, fio's name for thread N's log.
pub fn file_name(prefix: &str, kind: IoLogKind, n: u32) -> String {
    format!("{prefix}_{}.{n}.log", kind.suffix())
}

/// Set `log` on the jobs of `plan` that `wanted` says (all of them when it is `None`; else one
/// flag per job in the plan's order), numbering their files as fio numbers threads: every job
/// counts, logged or not. Returns every file name the run will write.
pub fn assign(plan: &mut Plan, log: &IoLog, wanted: Option<&[bool]>) -> Vec<String> {
    let mut n = 1;
    let mut names = Vec::new();
    let jobs = plan.phases.iter_mut().flat_map(|p| p.jobs.iter_mut());
    for (i, job) in jobs.enumerate() {
        if wanted.is_none_or(|w| w.get(i).copied().unwrap_or(false)) {
            let mine = IoLog { first: n, ..log.clone() };
            names.extend((0..job.threads).flat_map(|t| mine.files(t)).map(|f| f.1));
            job.io_log = Some(mine);
        }
        n += job.threads;
    }
    names
}
