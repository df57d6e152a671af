//! Pacing beyond one open-loop rate for the whole job (fio's rate family): a cap per direction
//! on a mixed job (`--read-rate`, `--write-rate` and their IOPS forms: fio's `rate=R,W`), a
//! Poisson arrival process instead of evenly spaced I/Os (`--rate-process poisson`), and a
//! floor the job must keep or end with an error (`--rate-min`, `--rate-min-iops`: fio's
//! `rate_min`, `rate_iops_min`), checked over `--rate-cycle` (fio's `rate_cycle`).

use crate::patch::JobPatch;
use crate::units::{duration_serde, Bytes};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How paced I/Os are spaced (fio's `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly: one I/O every interval (fio's linear, its default).
    #[default]
    Linear,
    /// A Poisson process: intervals drawn from an exponential distribution of the same mean.
    Poisson,
}

impl std::str::FromStr for RateProcess {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "linear" => Ok(RateProcess::Linear),
            "poisson" => Ok(RateProcess::Poisson),
            other => Err(format!("`{other}`: a rate process is linear (evenly spaced, the default) or poisson")),
        }
    }
}

/// A rate: bytes per second or I/Os per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    Bytes(Bytes),
    Iops(u64),
}

/// A job's pacing options beyond `rate`/`rate_iops` (which stay the job's total cap).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    /// Reads' own cap on a mixed job, for the job (its threads share it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Rate>,
    /// Writes' own cap on a mixed job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Rate>,
    #[serde(default, skip_serializing_if = "is_linear")]
    pub process: RateProcess,
    /// The floor each direction the job does must keep, for the job (its threads share it):
    /// below it over a cycle, after the first 2 s, the job ends with an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Rate>,
    /// The window the floor is measured over (fio's rate_cycle, default 1 s).
    #[serde(with = "duration_serde")]
    pub cycle: Duration,
}

fn is_linear(p: &RateProcess) -> bool {
    *p == RateProcess::Linear
}

/// fio's rate_cycle default.
pub const DEFAULT_CYCLE: Duration = Duration::from_secs(1);

/// fio lets a job settle this long before it checks the floor (backend.c, `__check_min_rate`).
pub const SETTLE: Duration = Duration::from_secs(2);

/// The pacing a patch asks for (`None`: nothing beyond `rate`/`rate_iops`), each option's
/// mistakes named.
pub(crate) fn of(p: &JobPatch, name: &str) -> Result<Option<Pacing>, SpecError> {
    let err = |field: &str, m: String| Err(SpecError::field(name, field, m));
    let one = |field: &str, bytes: Option<Bytes>, iops: Option<u64>| -> Result<Option<Rate>, SpecError> {
        match (bytes, iops) {
            (Some(_), Some(_)) => Err(SpecError::field(
                name,
                field,
                format!("give --{0} or --{0}-iops, not both", field.replace('_', "-")),
            )),
            (Some(Bytes(0)), _) | (_, Some(0)) => {
                Err(SpecError::field(name, field, "a rate of 0 issues nothing; leave it out to run flat out"))
            }
            (Some(b), None) => Ok(Some(Rate::Bytes(b))),
            (None, Some(n)) => Ok(Some(Rate::Iops(n))),
            (None, None) => Ok(None),
        }
    };
    let read = one("read_rate", p.read_rate, p.read_rate_iops)?;
    let write = one("write_rate", p.write_rate, p.write_rate_iops)?;
    let min = one("rate_min", p.rate_min, p.rate_min_iops)?;
    let process = p.rate_process.unwrap_or_default();
    if p.rate_cycle.is_some() && min.is_none() {
        return err("rate_cycle", "--rate-cycle is the window --rate-min is measured over; give --rate-min too".into());
    }
    let cycle = p.rate_cycle.unwrap_or(DEFAULT_CYCLE);
    if cycle < Duration::from_millis(1) {
        return err("rate_cycle", "the window must be at least 1 ms (fio's rate_cycle is in milliseconds)".into());
    }
    if read.is_none() && write.is_none() && min.is_none() && process == RateProcess::Linear {
        return Ok(None);
    }
    Ok(Some(Pacing { read, write, process, min, cycle }))
}

impl Pacing {
    /// Its rules against the job's pattern and total rate.
    pub fn check(&self, job: &str, rw: crate::Rw, rate: Option<Rate>) -> Result<(), SpecError> {
        let err = |field: &str, m: String| Err(SpecError::field(job, field, m));
        let total = rate.is_some();
        // fio refuses the same: "minimum rate exceeds rate".
        for cap in [rate, self.read, self.write].into_iter().flatten() {
            let above = match (self.min, cap) {
                (Some(Rate::Bytes(m)), Rate::Bytes(c)) => m > c,
                (Some(Rate::Iops(m)), Rate::Iops(c)) => m > c,
                _ => false,
            };
            if above {
                return err("rate_min", "the floor is above the rate that caps the job: it could only fail".into());
            }
        }
        if self.read.is_some() || self.write.is_some() {
            if total {
                return err("read_rate", "--rate and --rate-iops cap the job's total; --read-rate and --write-rate each direction: give one or the other".into());
            }
            if !rw.is_mixed() {
                return err("read_rate", format!("`{rw}` goes one way: cap it with --rate or --rate-iops (--read-rate and --write-rate are for readwrite and randrw)"));
            }
        }
        if self.process == RateProcess::Poisson && !total && self.read.is_none() && self.write.is_none() {
            return err(
                "rate_process",
                "a Poisson process spaces paced I/Os: give --rate, --rate-iops, --read-rate or --write-rate too".into(),
            );
        }
        Ok(())
    }
}
