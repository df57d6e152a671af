//! The replay workload's options (`iolab replay`): which trace, resolved how, with which timing.
//! The plan carries a reference to the trace — its path, byte length and CRC-32 — not its
//! content: a job shipped to another node resolves the same path there (the trace copied beside
//! the job) and refuses a file that is not the one planned.

use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// When each replayed call is issued.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Keep each thread's gaps between calls (the recorded start of a call minus the recorded
    /// end of the one before), measured from the replayed call's end (ROOT/ARTC's think time),
    /// less the tracer's own cost between calls (the thread's smallest gap).
    Think,
    /// Issue each call at its recorded offset from the trace's start.
    Recorded,
    /// No waits: as fast as possible (order constraints still hold).
    Afap,
    /// Think time divided by this factor (`scale:2` replays the gaps twice as fast).
    Scale(f64),
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Timing::Think => f.write_str("think"),
            Timing::Recorded => f.write_str("recorded"),
            Timing::Afap => f.write_str("afap"),
            Timing::Scale(x) => write!(f, "scale:{x}"),
        }
    }
}

impl FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "think" => Ok(Timing::Think),
            "recorded" => Ok(Timing::Recorded),
            "afap" => Ok(Timing::Afap),
            other => match other.strip_prefix("scale:").map(str::parse::<f64>) {
                Some(Ok(x)) if x.is_finite() && x > 0.0 => Ok(Timing::Scale(x)),
                _ => Err(format!(
                    "`{other}` is not a timing; accepted: think, recorded, afap, scale:X (X > 0, 2 is twice as fast)"
                )),
            },
        }
    }
}

/// What a replay may take, as a trace is untrusted input: a recorded gap is waited out only up
/// to `max_wait`, a thread's buffer is at most `max_buffer`, at most `max_threads` replay
/// threads run, and the calls held in memory with every thread's buffer stay under
/// `max_memory`. A trace beyond one of them is refused before anything runs, naming the option
/// that allows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayLimits {
    /// The longest wait before one call (a thread's think time, or its recorded offset).
    #[serde(with = "crate::units::duration_serde")]
    pub max_wait: Duration,
    /// The largest read or write one call may make (each replay thread has one buffer this big
    /// at most). A call asking for more that moved no more than this is replayed asking for this.
    pub max_buffer: Bytes,
    /// Replay threads (one per traced thread with calls to replay).
    pub max_threads: u32,
    /// Memory for the calls held (about 100 bytes each, names beside) and the threads' buffers.
    pub max_memory: Bytes,
}

impl Default for ReplayLimits {
    fn default() -> Self {
        ReplayLimits {
            max_wait: Duration::from_secs(600),
            max_buffer: Bytes::mib(64),
            max_threads: 256,
            max_memory: Bytes::gib(1),
        }
    }
}

/// A replay job: the threads of the trace, one worker each (the job's `threads`), under the
/// job's `target` directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayJob {
    /// The trace file (iolab's trace format, docs/trace-format.md).
    pub trace: PathBuf,
    /// Its length in bytes, when planned.
    pub trace_bytes: u64,
    /// Its CRC-32, when planned.
    pub trace_crc32: u32,
    pub timing: Timing,
    /// The traced path prefix replaced by the target directory (`/data` in `/data/redo0.log`).
    pub strip: PathBuf,
    /// Create the files and directories the trace expects to exist, with data up to the extent
    /// it reads (`--prepare`); without it they must exist.
    #[serde(default)]
    pub prepare: bool,
    #[serde(default)]
    pub limits: ReplayLimits,
}

impl ReplayJob {
    pub fn describe(&self) -> String {
        format!("replay {} ({})", self.trace.display(), self.timing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_parse() {
        assert_eq!("think".parse::<Timing>(), Ok(Timing::Think));
        assert_eq!("scale:2".parse::<Timing>(), Ok(Timing::Scale(2.0)));
        for bad in ["scale:0", "scale:-1", "scale:x", "fast", ""] {
            assert!(bad.parse::<Timing>().is_err(), "{bad}");
        }
        assert_eq!(Timing::Scale(0.5).to_string().parse::<Timing>(), Ok(Timing::Scale(0.5)));
    }

    #[test]
    fn limits_default_when_absent_and_parse_units() {
        let j: ReplayJob = serde_json::from_str(
            r#"{"trace":"t","trace_bytes":1,"trace_crc32":2,"timing":"afap","strip":"/d","limits":{"max_wait":"2h","max_buffer":"1G"}}"#,
        )
        .unwrap();
        assert!(!j.prepare);
        assert_eq!(j.limits.max_wait, Duration::from_secs(7200));
        assert_eq!(j.limits.max_buffer, Bytes::gib(1));
        assert_eq!(j.limits.max_threads, 256);
        let old: ReplayJob =
            serde_json::from_str(r#"{"trace":"t","trace_bytes":1,"trace_crc32":2,"timing":"think","strip":"/d"}"#)
                .unwrap();
        assert_eq!(old.limits, ReplayLimits::default());
    }
}
