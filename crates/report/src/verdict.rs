//! What scenarios' verdicts read (`crate::scenario`'s `locking` and `scaling`): each phase's
//! and each node's figures (throughput as dd prints it, what its busiest interface carried
//! against its link, its busiest disk, its CPU) and the words they are said in. Whether a link
//! is full or a disk saturated is the limit rule's say ([`iolab_model::bound`]: its network and
//! device cases, with its thresholds), the rule every phase's limit line comes from; a verdict
//! only adds what it sees across steps. Reads a finished (or stored) `RunResult`; runs nothing.

use iolab_model::{NodeResult, PhaseResult, RunResult, Totals};
use iolab_spec::scenario::base_step_name;
use iolab_spec::units::fmt_decimal;
use iolab_sysstat::SystemResult;

/// A link carrying this share of its speed or more is the limit: the limit rule's
/// ([`iolab_model::bound`]), whose cases the verdicts read.
pub use iolab_model::bound::LINK_FULL;
/// A device busy this share of the time or more is saturated (the limit rule's).
pub const DISK_BUSY_PCT: f64 = iolab_model::bound::DEVICE_BUSY_PCT;
/// CPU I/O wait this high or more says the storage is saturated where no device is sampled
/// (the limit rule's).
pub const IOWAIT_HIGH_PCT: f64 = iolab_model::bound::IOWAIT_HIGH_PCT;
/// Checks 1 and 2 agree when they differ by at most this share.
pub const BASELINE_AGREE: f64 = 0.10;
/// Check 4 "well below" check 3: under this share of it.
pub const WELL_BELOW: f64 = 0.75;
/// A count "still scales" when it adds at least this share over the one before.
pub const STILL_GROWS: f64 = 0.10;
/// Scaling that still grows but reaches under this share of linear at the last count has
/// something holding it back, which the verdict names.
pub const SUBLINEAR: f64 = 0.90;

/// MB/s as dd prints it: `11.9 MB/s`.
pub(crate) fn mbs(bytes_per_s: f64) -> String {
    format!("{}/s", fmt_decimal(bytes_per_s))
}

pub(crate) fn moved(t: &Totals) -> f64 {
    t.read().bw_bytes + t.write().bw_bytes
}

/// A node's figures over one phase.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeFig {
    pub name: String,
    /// The node's own read + write rate (its bytes over its own elapsed time).
    pub bps: f64,
    /// What its busiest interface carried (the larger of rx and tx), when sampled.
    pub wire_bps: Option<f64>,
    pub wire_iface: Option<String>,
    /// The link speed of that interface, or the one given.
    pub link_mbps: Option<f64>,
    /// The busiest device under the target and its %util.
    pub disk: Option<(String, f64)>,
    /// Whether the limit rule's device case holds (busy, or I/O wait with no device sampled).
    pub storage_saturated: bool,
    pub iowait: Option<f64>,
    pub sys: Option<f64>,
    pub user: Option<f64>,
}

impl NodeFig {
    pub fn of(n: &NodeResult, link_given: Option<f64>) -> NodeFig {
        let mut f = NodeFig { name: n.name.clone(), bps: moved(&n.total), ..Default::default() };
        if let Some(s) = &n.system {
            f.fill_system(s, link_given);
        } else {
            f.link_mbps = link_given;
        }
        f
    }

    pub fn fill_system(&mut self, s: &SystemResult, link_given: Option<f64>) {
        use iolab_model::bound;
        self.iowait = Some(s.mean.cpu.all.iowait_pct);
        (self.user, self.sys) = (Some(s.mean.cpu.all.us()), Some(s.mean.cpu.all.sy()));
        // The rule's network case: the busiest link the target crosses, with its speed.
        if let Some(l) = bound::link_use(Some(s), link_given, self.bps).filter(|l| l.iface.is_some()) {
            self.wire_bps = Some(l.bytes_s);
            self.wire_iface = l.iface;
            self.link_mbps = Some(l.mbps);
        } else {
            // No speed known: the busiest of the target's interfaces (every one but loopback
            // when the target names none), for the words.
            let target = s.target.as_ref();
            let wanted = |name: &str| match target.filter(|t| !t.interfaces.is_empty()) {
                Some(t) => t.interfaces.iter().any(|i| i.name == name),
                None => name != "lo",
            };
            if let Some((name, r)) = s
                .mean
                .net
                .iter()
                .filter(|(n, _)| wanted(n))
                .map(|(n, r)| (n, r.rx_bytes_s.max(r.tx_bytes_s)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .filter(|(_, r)| *r > 0.0)
            {
                self.wire_bps = Some(r);
                self.wire_iface = Some(name.clone());
            }
            self.link_mbps = link_given;
        }
        // The rule's device case (the depth iolab gave is not the verdict's to know).
        let busiest = bound::device_use(s);
        self.disk = busiest.as_ref().map(|d| (d.name.clone(), d.util_pct));
        self.storage_saturated =
            busiest.is_some_and(|d| bound::device_saturated(&d, None)) || bound::iowait_saturated(s);
    }

    /// What the node put on the wire: the interface's figure, else its own I/O rate.
    pub fn wire(&self) -> f64 {
        self.wire_bps.unwrap_or(self.bps)
    }

    /// The share of its link the node used, when a speed is known.
    pub fn link_share(&self) -> Option<f64> {
        self.link_mbps.filter(|m| *m > 0.0).map(|m| self.wire() * 8.0 / (m * 1e6))
    }

    /// The limit rule's device case.
    pub fn disk_saturated(&self) -> bool {
        self.storage_saturated
    }

    /// `a: sda 95% busy, CPU us 0% sy 9% wa 45%`, or nothing when not sampled.
    pub fn system_words(&self) -> Option<String> {
        let mut w = Vec::new();
        if let Some((d, u)) = &self.disk {
            w.push(format!("{d} {u:.0}% busy"));
        }
        if let (Some(us), Some(sy), Some(wa)) = (self.user, self.sys, self.iowait) {
            w.push(format!("CPU us {us:.0}% sy {sy:.0}% wa {wa:.0}%"));
        }
        (!w.is_empty()).then(|| format!("{}: {}", self.name, w.join(", ")))
    }
}

/// One phase's figures.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseFig {
    /// The aggregate over the common window (all bytes over first start to last end).
    pub agg_bps: f64,
    /// Each writer's rate as dd would print it (its bytes over its own time).
    pub writers: Vec<f64>,
    pub nodes: Vec<NodeFig>,
    pub first_done_s: Option<f64>,
    pub last_done_s: Option<f64>,
}

impl PhaseFig {
    pub fn of(p: &PhaseResult, link_given: Option<f64>) -> PhaseFig {
        let mut writers = Vec::new();
        for j in &p.jobs {
            if j.per_thread.len() > 1 {
                writers.extend(j.per_thread.iter().map(|t| t.bw_bytes));
            } else {
                writers.push(moved(&j.total));
            }
        }
        let mut nodes: Vec<NodeFig> = p.nodes.iter().map(|n| NodeFig::of(n, link_given)).collect();
        if nodes.is_empty() {
            // A phase run on one machine: the phase is its one node.
            let mut f = NodeFig { name: "this node".into(), bps: moved(&p.total), ..Default::default() };
            match &p.system {
                Some(s) => f.fill_system(s, link_given),
                None => f.link_mbps = link_given,
            }
            nodes.push(f);
        }
        PhaseFig {
            agg_bps: moved(&p.total),
            writers,
            nodes,
            first_done_s: p.first_done_s,
            last_done_s: p.last_done_s.or(Some(p.elapsed_s)),
        }
    }

    /// The mean of repetitions of one step (figures that do not line up keep the first's).
    pub fn mean(figs: Vec<PhaseFig>) -> Option<PhaseFig> {
        let n = figs.len() as f64;
        let mut out = figs.first()?.clone();
        let avg = |f: &dyn Fn(&PhaseFig) -> f64| figs.iter().map(f).sum::<f64>() / n;
        out.agg_bps = avg(&|p| p.agg_bps);
        if figs.iter().all(|p| p.writers.len() == out.writers.len()) {
            for i in 0..out.writers.len() {
                out.writers[i] = avg(&|p| p.writers[i]);
            }
        }
        if figs.iter().all(|p| p.nodes.len() == out.nodes.len()) {
            for i in 0..out.nodes.len() {
                out.nodes[i].bps = avg(&|p| p.nodes[i].bps);
                if figs.iter().all(|p| p.nodes[i].wire_bps.is_some()) {
                    out.nodes[i].wire_bps = Some(avg(&|p| p.nodes[i].wire_bps.unwrap_or(0.0)));
                }
            }
        }
        Some(out)
    }

    pub fn writers_words(&self) -> String {
        self.writers.iter().map(|w| mbs(*w)).collect::<Vec<_>>().join(" + ")
    }

    pub fn times_words(&self) -> String {
        match (self.first_done_s, self.last_done_s) {
            (Some(a), Some(b)) if (b - a).abs() > 0.05 => format!(", first done at {a:.0} s, last at {b:.0} s"),
            (_, Some(b)) => format!(" in {b:.0} s"),
            _ => String::new(),
        }
    }

    pub fn saturated_node(&self) -> Option<&NodeFig> {
        self.nodes.iter().find(|n| n.disk_saturated())
    }

    pub fn full_link(&self) -> Option<(&NodeFig, f64)> {
        self.nodes
            .iter()
            .filter_map(|n| n.link_share().map(|s| (n, s)))
            .filter(|(_, s)| *s >= LINK_FULL)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// The phases of the step named `name` (every repetition).
pub(crate) fn step_figs(result: &RunResult, name: &str, link: Option<f64>) -> Option<PhaseFig> {
    PhaseFig::mean(
        result.phases.iter().filter(|p| base_step_name(&p.name) == name).map(|p| PhaseFig::of(p, link)).collect(),
    )
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

pub(crate) fn link_words(mbps: f64) -> String {
    if mbps >= 1000.0 && (mbps / 1000.0).fract() == 0.0 {
        format!("{:.0} Gbit/s", mbps / 1000.0)
    } else {
        format!("{} Mbit/s", fmt_trim(mbps))
    }
}

fn fmt_trim(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Results to judge, for the scenarios' tests: nodes that wrote so many bytes in so many
/// seconds, with their system figures.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use iolab_model::JobResult;
    use iolab_model::{OpClass, Status};
    use iolab_spec::Plan;
    use iolab_sysstat::target::Interface;
    use iolab_sysstat::{DiskRates, NetRates, TargetInfo};

    pub const GB: f64 = 1_048_576_000.0; // dd's bs=100M count=10

    pub fn totals(bytes: f64, secs: f64) -> Totals {
        let mut t = Totals::default();
        let w = t.get_mut(OpClass::Write);
        w.bytes = bytes as u64;
        w.ops = (bytes / 1e6) as u64;
        w.bw_bytes = bytes / secs;
        t
    }

    /// A node that wrote `bytes` in `secs`, with its jobs of (bytes, secs) each.
    pub fn node(name: &str, jobs: &[(f64, f64)], system: Option<SystemResult>) -> (NodeResult, Vec<JobResult>) {
        let bytes: f64 = jobs.iter().map(|j| j.0).sum();
        let secs = jobs.iter().map(|j| j.1).fold(0.0, f64::max);
        let n =
            NodeResult { name: name.into(), elapsed_s: secs, total: totals(bytes, secs), system, ..Default::default() };
        let js = jobs
            .iter()
            .enumerate()
            .map(|(i, (b, s))| JobResult {
                node: Some(name.into()),
                name: format!("dd.{}", i + 1),
                elapsed_s: *s,
                total: totals(*b, *s),
                ..Default::default()
            })
            .collect();
        (n, js)
    }

    pub fn phase(name: &str, nodes: Vec<(NodeResult, Vec<JobResult>)>) -> PhaseResult {
        let bytes: f64 = nodes.iter().map(|n| n.0.total.write().bytes as f64).sum();
        let first = nodes.iter().map(|n| n.0.elapsed_s).fold(f64::INFINITY, f64::min);
        let last = nodes.iter().map(|n| n.0.elapsed_s).fold(0.0, f64::max);
        PhaseResult {
            verify: None,
            name: name.into(),
            elapsed_s: last,
            total: totals(bytes, last),
            jobs: nodes.iter().flat_map(|n| n.1.clone()).collect(),
            nodes: nodes.into_iter().map(|n| n.0).collect(),
            first_done_s: Some(first),
            last_done_s: Some(last),
            ..Default::default()
        }
    }

    pub fn run(phases: Vec<PhaseResult>) -> RunResult {
        RunResult {
            schema_version: 1,
            iolab_version: "test".into(),
            node: "coordinator".into(),
            started_unix_s: 0.0,
            status: Status::Complete,
            error: None,
            plan: Plan { phases: vec![] },
            phases,
            nodes: vec![],
            verdict: None,
            precondition: None,
        }
    }

    pub fn sys(iface: Option<(&str, Option<u64>, f64)>, disk: Option<(&str, f64)>, wa: f64, sy: f64) -> SystemResult {
        let mut s = SystemResult::default();
        s.mean.cpu.all.iowait_pct = wa;
        s.mean.cpu.all.system_pct = sy;
        let mut t = TargetInfo::default();
        if let Some((name, speed, tx)) = iface {
            s.mean.net.insert(name.into(), NetRates { tx_bytes_s: tx, rx_bytes_s: tx / 50.0, ..Default::default() });
            t.interfaces.push(Interface { name: name.into(), speed_mbps: speed });
            t.network = true;
        }
        if let Some((d, u)) = disk {
            s.mean.disks.insert(d.into(), DiskRates { util_pct: u, ..Default::default() });
            t.devices.push(d.into());
        }
        s.target = Some(t);
        s
    }
}
