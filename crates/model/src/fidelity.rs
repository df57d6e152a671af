//! A figure beside what the storage saw: the one rule that compares the bytes iolab issued in a
//! phase with the bytes the target's devices (or, for a network filesystem, its links) moved
//! over the same window, and says so when they differ by far. Reads answered from holes or the
//! page cache, writes still in the page cache, a device that moved much more than was asked
//! (read-ahead, write amplification, replication, other I/O on it): each is a case of it. The
//! executor applies it as a phase ends (on each node); the summary, the JSON
//! (`phases[].findings`), `compare` and the HTML report print what it found. Thresholds: the
//! constants below, documented in docs/fidelity.md.

use crate::results::{CpuTime, HoleReads, NodeResult, PhaseResult, Totals};
use iolab_spec::units::fmt_decimal;
use iolab_spec::{Job, SyncMode};
use iolab_sysstat::SystemResult;
use serde::{Deserialize, Serialize};

/// iolab must have issued at least this many bytes per second in a direction for "the device
/// saw much less" to be said: below it a device keeping up, or a page cache absorbing a
/// trickle, is no surprise (50 MB/s).
pub const MIN_ISSUED_BYTES_S: f64 = 50e6;
/// "Much less": the device moved under this share of what iolab issued.
pub const LOW_SHARE: f64 = 0.2;
/// "Much more": the device moved this many times what iolab issued or more...
pub const HIGH_RATIO: f64 = 1.8;
/// ...and at least this many bytes per second more (a few MB/s of metadata beside a slow job
/// is no finding).
pub const MIN_EXCESS_BYTES_S: f64 = 10e6;
/// "Much more" is said only of a job issuing at least this much (1 MB/s): against less, any
/// device's background is "many times" it.
pub const MIN_ISSUED_FOR_MORE: f64 = 1e6;
/// Reads in holes are the cause when at least this share of reads fell in one.
pub const HOLES_CAUSE_SHARE: f64 = 0.2;

/// What a rule reads of a phase, or of one node's share of a phase run on several: its totals
/// over its elapsed time, iolab's CPU time, the system beside it, its reads in holes.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub total: &'a Totals,
    pub elapsed_s: f64,
    pub cpu: CpuTime,
    pub system: Option<&'a SystemResult>,
    pub holes: Option<&'a HoleReads>,
}

impl PhaseResult {
    /// The phase as the rules read it.
    pub fn observed(&self) -> Observed<'_> {
        Observed {
            total: &self.total,
            elapsed_s: self.elapsed_s,
            cpu: self.cpu,
            system: self.system.as_ref(),
            holes: self.holes.as_ref(),
        }
    }
}

impl NodeResult {
    /// The node's share of a phase as the rules read it.
    pub fn observed(&self) -> Observed<'_> {
        Observed {
            total: &self.total,
            elapsed_s: self.elapsed_s,
            cpu: self.cpu,
            system: self.system.as_ref(),
            holes: self.holes.as_ref(),
        }
    }
}

/// Reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Read,
    Write,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
        }
    }
}

/// Which case of the rule spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seen {
    /// Reads fell in holes (or unwritten extents) of files whose holes were kept: zeros from
    /// the filesystem, no device I/O.
    ReadsInHoles,
    /// Buffered reads served from the page cache.
    ReadsFromCache,
    /// Direct reads the device did not see, and no hole counted: holes iolab could not map,
    /// or a cache below the filesystem.
    ReadsUnseen,
    /// Buffered writes, no flush: the data stayed in the page cache.
    WritesInCache,
    /// The device (or link) moved much more than iolab issued.
    MovedMore,
}

impl Seen {
    pub fn as_str(self) -> &'static str {
        match self {
            Seen::ReadsInHoles => "reads_in_holes",
            Seen::ReadsFromCache => "reads_from_cache",
            Seen::ReadsUnseen => "reads_unseen",
            Seen::WritesInCache => "writes_in_cache",
            Seen::MovedMore => "moved_more",
        }
    }
}

/// One finding: a direction's issued and seen bytes per second, where they were seen, and the
/// sentence the summary prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Seen,
    pub direction: Direction,
    /// What iolab issued in this direction, bytes per second over the phase.
    pub issued_bytes_s: f64,
    /// What the devices (or links) moved in this direction over the same window.
    pub seen_bytes_s: f64,
    /// The device (`vda`, `loop0`) or the links (`eth0`, `g11c+g21c`) that saw it.
    pub seen_on: String,
    /// The share of reads that fell in holes, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes_share: Option<f64>,
    /// The node, in a run of several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub text: String,
}

impl Finding {
    /// `seen / issued`.
    pub fn ratio(&self) -> f64 {
        if self.issued_bytes_s > 0.0 {
            self.seen_bytes_s / self.issued_bytes_s
        } else {
            0.0
        }
    }
    /// The sentence, with its node in front in a run of several.
    pub fn said(&self) -> String {
        match &self.node {
            Some(n) => format!("{n}: {}", self.text),
            None => self.text.clone(),
        }
    }
}

/// A percentage with three significant digits (`0.0140`, `1.50`, `35.2`, `412`), as the tables
/// print values.
pub fn pct_words(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else if v == 0.0 || v.abs() >= 0.1 {
        format!("{v:.3}")
    } else {
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(3, 9) as usize;
        format!("{v:.decimals$}")
    }
}

/// What the target's storage moved in one direction, bytes per second: `low` the least any
/// level of its device stack saw (for "much more", so another tenant of the disk under a loop
/// device does not count), `high` the most (for "much less", so a write counted at any level
/// counts), and their names. For a network filesystem without block devices: its links,
/// added up (received for reads, sent for writes). `None` when nothing was sampled or the
/// target has neither (tmpfs).
#[derive(Debug, Clone)]
pub struct Moved {
    pub low: f64,
    pub low_on: String,
    pub high: f64,
    pub high_on: String,
}

pub fn moved(s: &SystemResult, dir: Direction) -> Option<Moved> {
    let target = s.target.as_ref()?;
    let disks: Vec<(&String, f64)> = target
        .devices
        .iter()
        .filter_map(|n| {
            s.mean.disks.get(n).map(|d| (n, if dir == Direction::Read { d.rkb_s } else { d.wkb_s } * 1024.0))
        })
        .collect();
    if !disks.is_empty() {
        let lo = disks.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let hi = disks.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        return Some(Moved { low: lo.1, low_on: lo.0.clone(), high: hi.1, high_on: hi.0.clone() });
    }
    if target.network && !target.interfaces.is_empty() {
        let mut names = Vec::new();
        let mut sum = 0.0;
        for i in &target.interfaces {
            if let Some(r) = s.mean.net.get(&i.name) {
                sum += if dir == Direction::Read { r.rx_bytes_s } else { r.tx_bytes_s };
                names.push(i.name.clone());
            }
        }
        if names.is_empty() {
            return None;
        }
        let on = names.join("+");
        return Some(Moved { low: sum, low_on: on.clone(), high: sum, high_on: on });
    }
    None
}

/// How the phase's jobs ran, as far as the rule cares.
struct Jobs {
    direct_reads: bool,
    /// Every job that writes is buffered and never flushes.
    buffered_writes: bool,
    keep_holes: bool,
}

fn jobs_of(jobs: &[Job]) -> Jobs {
    let reads = |j: &&Job| j.workload.block().is_none_or(|b| b.rw.reads());
    let writes = |j: &&Job| j.workload.writes();
    let buffered = |j: &&Job| !j.direct && j.workload.block().is_none_or(|b| b.sync == SyncMode::None && !b.end_fsync);
    Jobs {
        direct_reads: jobs.iter().filter(reads).any(|j| j.direct),
        buffered_writes: jobs.iter().filter(writes).count() > 0 && jobs.iter().filter(writes).all(|j| buffered(&j)),
        keep_holes: jobs.iter().any(|j| j.workload.block().is_some_and(|b| b.keep_holes)),
    }
}

/// The rule: for reads and for writes, iolab's bytes per second against what the storage
/// moved (see the module and the constants). `jobs` are the phase's jobs (as run on the node
/// observed); `node` names the node in a run of several.
pub fn findings(o: Observed, jobs: &[Job], node: Option<&str>) -> Vec<Finding> {
    let Some(s) = o.system else { return Vec::new() };
    let how = jobs_of(jobs);
    let mut out = Vec::new();
    for dir in [Direction::Read, Direction::Write] {
        let class = if dir == Direction::Read { o.total.read() } else { o.total.write() };
        let issued = class.bw_bytes;
        if class.ops == 0 || !issued.is_finite() {
            continue;
        }
        let Some(m) = moved(s, dir) else { continue };
        let mut f = Finding {
            kind: Seen::MovedMore,
            direction: dir,
            issued_bytes_s: issued,
            seen_bytes_s: m.high,
            seen_on: m.high_on.clone(),
            holes_share: None,
            node: node.map(str::to_string),
            text: String::new(),
        };
        let share = 100.0 * m.high / issued;
        let figures = |verb: &str, on: &str, seen: f64, pct: f64| {
            format!("iolab {verb} {}/s, {on} {}/s ({}%)", fmt_decimal(issued), fmt_decimal(seen), pct_words(pct))
        };
        if issued >= MIN_ISSUED_BYTES_S && m.high < LOW_SHARE * issued {
            match dir {
                Direction::Read => {
                    let holes = o.holes.filter(|h| h.reads > 0).map(|h| h.share());
                    f.holes_share = holes;
                    let on = format!("the device ({})", m.high_on);
                    if holes.is_some_and(|h| h >= HOLES_CAUSE_SHARE) {
                        f.kind = Seen::ReadsInHoles;
                        let kept = if o.holes.is_some_and(|h| h.preallocated) {
                            "the file was preallocated, not written, as fio lays out a file whose first job writes without reading; to read data, put a reading job first or give the writer --preallocate none"
                        } else if how.keep_holes {
                            "kept with --keep-holes"
                        } else {
                            "a file iolab may not write: pass --overwrite to have them filled first"
                        };
                        f.text = format!(
                            "{}% of reads fell in holes (no data there: the filesystem returns zeros without reading the device; {kept}): {}; the figure is not the storage's",
                            pct_words(100.0 * holes.unwrap_or(0.0)),
                            figures("read", &on, m.high, share)
                        );
                    } else if how.direct_reads {
                        f.kind = Seen::ReadsUnseen;
                        f.text = format!(
                            "direct reads the device did not see: {}: holes or unwritten extents iolab could not map, or a cache below the filesystem; the figure is not the device's",
                            figures("read", &on, m.high, share)
                        );
                    } else {
                        f.kind = Seen::ReadsFromCache;
                        f.text = format!(
                            "reads served from the page cache: {}; add --direct, or --invalidate to start from the storage",
                            figures("read", &on, m.high, share)
                        );
                    }
                }
                Direction::Write => {
                    if !how.buffered_writes || o.total.sync().ops > 0 {
                        continue;
                    }
                    f.kind = Seen::WritesInCache;
                    f.text = format!(
                        "writes stayed in the page cache: {}; {CACHED_ADVICE}",
                        figures("wrote", "the device", m.high, share)
                    );
                }
            }
            out.push(f);
        } else if issued >= MIN_ISSUED_FOR_MORE && m.low >= HIGH_RATIO * issued && m.low - issued >= MIN_EXCESS_BYTES_S
        {
            f.seen_bytes_s = m.low;
            f.seen_on = m.low_on.clone();
            let what = match dir {
                Direction::Read => "read-ahead, or other reads of the same storage",
                Direction::Write => {
                    "write amplification (a journal, read-modify-write, parity), replication, or other writes to the same storage"
                }
            };
            let verb = if dir == Direction::Read { "read" } else { "wrote" };
            f.text = format!(
                "{} moved {:.1}× what iolab {verb}: iolab {verb} {}/s, {} {}/s: {what}",
                m.low_on,
                m.low / issued,
                fmt_decimal(issued),
                m.low_on,
                fmt_decimal(m.low)
            );
            out.push(f);
        }
    }
    out
}

/// What the page-cache case suggests.
pub const CACHED_ADVICE: &str = "add --end-fsync (dd's conv=fsync) to count the flush, or --direct to bypass the cache";

/// The findings of a phase run on several nodes: each node's, with its node named.
pub fn of_nodes(p: &PhaseResult) -> Vec<Finding> {
    p.nodes
        .iter()
        .flat_map(|n| {
            n.findings.iter().cloned().map(|mut f| {
                f.node.get_or_insert_with(|| n.name.clone());
                f
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Acc;
    use crate::OpClass;
    use iolab_spec::{JobPatch, Rw};
    use iolab_sysstat::{DiskRates, TargetInfo};

    fn phase(dir: OpClass, mbs: f64, devices: &[(&str, f64, f64)], holes: Option<HoleReads>) -> PhaseResult {
        let mut a = Acc::default();
        for _ in 0..(mbs * 1e6 / 4096.0) as u64 {
            a.record(dir, 4096, 1000);
        }
        let mut s = SystemResult::default();
        let mut t = TargetInfo::default();
        for (n, r, w) in devices {
            s.mean.disks.insert(
                (*n).into(),
                DiskRates { rkb_s: r * 1e6 / 1024.0, wkb_s: w * 1e6 / 1024.0, ..Default::default() },
            );
            t.devices.push((*n).into());
        }
        s.target = Some(t);
        PhaseResult {
            elapsed_s: 1.0,
            total: Totals::from_acc(&a, 1.0),
            system: Some(s),
            holes,
            ..PhaseResult::new("p")
        }
    }

    fn job(f: impl FnOnce(&mut JobPatch)) -> Vec<Job> {
        let mut p = JobPatch { target: Some("/t".into()), rw: Some(Rw::RandRead), ..Default::default() };
        f(&mut p);
        vec![p.resolve("j").unwrap()]
    }

    #[test]
    fn a_healthy_direct_read_is_quiet() {
        let p = phase(OpClass::Read, 200.0, &[("loop0", 199.0, 0.1), ("vda", 230.0, 40.0)], None);
        assert!(findings(p.observed(), &job(|p| p.direct = Some(true)), None).is_empty());
    }

    #[test]
    fn reads_in_holes_from_cache_and_unseen() {
        let holes = HoleReads { reads: 1000, in_holes: 1000, hole_share: 1.0, ..Default::default() };
        let p = phase(OpClass::Read, 5500.0, &[("vda", 0.0, 1.0)], Some(holes));
        let f = findings(p.observed(), &job(|p| p.direct = Some(true)), None);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].kind, f[0].holes_share), (Seen::ReadsInHoles, Some(1.0)));
        assert!(
            f[0].text.starts_with("100% of reads fell in holes") && f[0].text.contains("--overwrite"),
            "{}",
            f[0].text
        );
        let kept = findings(
            p.observed(),
            &job(|p| {
                p.direct = Some(true);
                p.keep_holes = Some(true)
            }),
            Some("n1"),
        );
        assert!(kept[0].text.contains("kept with --keep-holes") && kept[0].said().starts_with("n1: "));
        let p = phase(OpClass::Read, 3000.0, &[("vda", 1.0, 0.0)], None);
        assert_eq!(findings(p.observed(), &job(|_| {}), None)[0].kind, Seen::ReadsFromCache);
        assert_eq!(findings(p.observed(), &job(|p| p.direct = Some(true)), None)[0].kind, Seen::ReadsUnseen);
        // Too slow to tell.
        let p = phase(OpClass::Read, 20.0, &[("vda", 0.0, 0.0)], None);
        assert!(findings(p.observed(), &job(|_| {}), None).is_empty());
    }

    #[test]
    fn writes_in_the_cache_and_a_device_that_moved_more() {
        let w = |f: &mut JobPatch| f.rw = Some(Rw::RandWrite);
        let p = phase(OpClass::Write, 500.0, &[("vda", 0.0, 0.07)], None);
        let f = findings(p.observed(), &job(w), None);
        assert_eq!(f[0].kind, Seen::WritesInCache);
        assert!(f[0].text.contains("iolab wrote 500.0 MB/s, the device 70.0 kB/s (0.0140%)"), "{}", f[0].text);
        assert!(findings(
            p.observed(),
            &job(|f| {
                w(f);
                f.direct = Some(true)
            }),
            None
        )
        .is_empty());
        // A loop device over a shared disk: the loop device's own figure decides "more".
        let p = phase(OpClass::Write, 20.0, &[("loop0", 0.0, 60.0), ("vda", 0.0, 300.0)], None);
        let f = findings(p.observed(), &job(w), None);
        assert_eq!((f[0].kind, f[0].seen_on.as_str()), (Seen::MovedMore, "loop0"));
        assert!(f[0].text.starts_with("loop0 moved 3.0× what iolab wrote"), "{}", f[0].text);
        let p = phase(OpClass::Write, 20.0, &[("loop0", 0.0, 25.0), ("vda", 0.0, 300.0)], None);
        assert!(findings(p.observed(), &job(w), None).is_empty(), "within the ratio");
    }
}
