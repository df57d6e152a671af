//! I/O priorities and niceness (fio's prio, prioclass, nice, cmdprio_*): a job's threads at an
//! I/O priority (`--ioprio rt/0`: ioprio_set on each worker thread, which the requests it
//! submits inherit) and a nice value (`--nice`), and a priority per request for a share of the
//! job's I/Os (`--cmdprio 20%rt`: io_uring's SQE and libaio's iocb carry it), by direction and
//! block size as fio's cmdprio_percentage, cmdprio_class, cmdprio and cmdprio_bssplit say.

use crate::units::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// An I/O priority: a class (1 real-time, 2 best-effort, 3 idle; ionice(1)'s) and a level 0-7
/// (0 the highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoPrio {
    pub class: u8,
    pub level: u8,
}

impl IoPrio {
    /// The kernel's value: IOPRIO_PRIO_VALUE(class, level).
    pub fn value(self) -> u16 {
        (self.class as u16) << 13 | self.level as u16
    }
    /// A class from fio's number or ionice's word.
    pub fn class_of(s: &str) -> Result<u8, String> {
        match s.trim() {
            "1" | "rt" | "realtime" => Ok(1),
            "2" | "be" | "best-effort" => Ok(2),
            "3" | "idle" => Ok(3),
            other => Err(format!("`{other}`: an I/O priority class is rt (1), be (2) or idle (3)")),
        }
    }
    pub fn level_of(s: &str) -> Result<u8, String> {
        s.trim()
            .parse::<u8>()
            .ok()
            .filter(|l| *l <= 7)
            .ok_or_else(|| format!("`{s}`: an I/O priority level is 0 (the highest) to 7"))
    }
}

impl FromStr for IoPrio {
    type Err = String;
    /// `CLASS[/LEVEL]`: `rt/0`, `be/4`, `idle` (level 0 when not given, as fio's default).
    fn from_str(s: &str) -> Result<Self, String> {
        let (c, l) = s.split_once('/').map_or((s, None), |(c, l)| (c, Some(l)));
        Ok(IoPrio { class: IoPrio::class_of(c)?, level: l.map(IoPrio::level_of).transpose()?.unwrap_or(0) })
    }
}

impl fmt::Display for IoPrio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = match self.class {
            1 => "rt",
            2 => "be",
            _ => "idle",
        };
        write!(f, "{c}/{}", self.level)
    }
}

/// One share of a direction's I/Os (of one block size, or any) issued at a priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrioShare {
    pub bs: Option<Bytes>,
    pub pct: u8,
    pub prio: IoPrio,
}

/// The per-request priorities of a job: reads' and writes' shares. For an I/O, the shares of
/// its size (or of any size) are taken in order by one draw from 0-99, cumulatively, as fio's
/// cmdprio.c does; an I/O that falls in none keeps the thread's priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdPrio {
    pub read: Vec<PrioShare>,
    pub write: Vec<PrioShare>,
}

impl FromStr for CmdPrio {
    type Err = String;
    /// `SHARES[,SHARES]` (reads, then writes; one list for both): shares `:`-separated, each
    /// `[BS@]PCT%CLASS[/LEVEL]`: `20%rt`, `64k@25%rt/1:64k@75%be/2,1m@0%rt`.
    fn from_str(s: &str) -> Result<Self, String> {
        let list = |t: &str| -> Result<Vec<PrioShare>, String> {
            let mut out = Vec::new();
            for e in t.split(':').map(str::trim).filter(|e| !e.is_empty()) {
                let (bs, rest) = match e.split_once('@') {
                    Some((b, r)) => (Some(crate::units::parse_size(b)?), r),
                    None => (None, e),
                };
                let (pct, prio) = rest
                    .split_once('%')
                    .ok_or_else(|| format!("`{e}`: a share is [BS@]PCT%CLASS[/LEVEL], as 20%rt or 64k@25%be/2"))?;
                let pct = pct
                    .trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("`{pct}` is not a percentage (0 to 100)"))?;
                out.push(PrioShare { bs, pct, prio: prio.parse()? });
            }
            let mut by_size: std::collections::BTreeMap<Option<u64>, u32> = Default::default();
            for p in &out {
                *by_size.entry(p.bs.map(|b| b.0)).or_default() += p.pct as u32;
            }
            if let Some((bs, sum)) = by_size.iter().find(|(_, s)| **s > 100) {
                return Err(format!(
                    "the shares of {} add up to {sum}%, more than 100",
                    bs.map_or("every size".into(), |b| Bytes(b).to_string())
                ));
            }
            Ok(out)
        };
        let (r, w) = match s.split_once(',') {
            Some((r, w)) => (list(r)?, list(w)?),
            None => (list(s)?, list(s)?),
        };
        if r.is_empty() && w.is_empty() {
            return Err("no share given; write one as 20%rt".into());
        }
        Ok(CmdPrio { read: r, write: w })
    }
}

impl fmt::Display for CmdPrio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |l: &[PrioShare]| -> String {
            l.iter()
                .map(|p| format!("{}{}%{}", p.bs.map_or(String::new(), |b| format!("{}@", b.0)), p.pct, p.prio))
                .collect::<Vec<_>>()
                .join(":")
        };
        write!(f, "{},{}", list(&self.read), list(&self.write))
    }
}

macro_rules! as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
as_text!(IoPrio);
as_text!(CmdPrio);

/// How a job's threads are scheduled: their I/O priority and nice value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sched {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ioprio: Option<IoPrio>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_read_and_print_back() {
        assert_eq!("rt/0".parse(), Ok(IoPrio { class: 1, level: 0 }));
        assert_eq!("3".parse::<IoPrio>().map(IoPrio::value), Ok(3 << 13));
        assert!("rt/8".parse::<IoPrio>().unwrap_err().contains("0 (the highest) to 7"));
        let c: CmdPrio = "64k@25%rt/1:64k@75%idle/2:1048576@0%be,1m@0%rt".parse().unwrap();
        assert_eq!(c.read.len(), 3);
        assert_eq!(c.read[1], PrioShare { bs: Some(Bytes::kib(64)), pct: 75, prio: IoPrio { class: 3, level: 2 } });
        assert_eq!(c.to_string().parse::<CmdPrio>(), Ok(c));
        let c: CmdPrio = "20%rt".parse().unwrap();
        assert_eq!(c.read, c.write);
        assert!("64k@60%rt:64k@50%be".parse::<CmdPrio>().unwrap_err().contains("110%"));
        assert!("20rt".parse::<CmdPrio>().unwrap_err().contains("PCT%CLASS"));
    }
}
