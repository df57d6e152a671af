//! What the `locking` and `scaling` scenarios conclude, read from their results: which part of
//! a slowdown is the disk, which the cluster filesystem and which the network, in figures and
//! in the words seed 000's friend used. Reads a finished (or stored) `RunResult`; runs nothing.

use iolab_model::{Limit, NodeResult, PhaseResult, RunResult, Totals, Verdict};
use iolab_spec::scenario::{base_step_name, LOCKING_STEPS};
use iolab_spec::units::fmt_decimal;
use iolab_sysstat::SystemResult;
use std::collections::BTreeMap;

/// A link carrying this share of its speed or more is the limit (a 100 Mbit/s link gives
/// about 11–12 MB/s of payload: 90–95%).
pub const LINK_FULL: f64 = 0.80;
/// A device busy this share of the time or more is saturated.
pub const DISK_BUSY_PCT: f64 = 90.0;
/// CPU I/O wait (the mean over CPUs) this high or more says the storage is saturated.
pub const IOWAIT_HIGH_PCT: f64 = 30.0;
/// Checks 1 and 2 agree when they differ by at most this share.
pub const BASELINE_AGREE: f64 = 0.10;
/// Check 4 "well below" check 3: under this share of it.
pub const WELL_BELOW: f64 = 0.75;
/// A count "still scales" when it adds at least this share over the one before.
pub const STILL_GROWS: f64 = 0.10;

/// MB/s as dd prints it: `11.9 MB/s`.
fn mbs(bytes_per_s: f64) -> String {
    format!("{}/s", fmt_decimal(bytes_per_s))
}

fn moved(t: &Totals) -> f64 {
    t.read().bw_bytes + t.write().bw_bytes
}

/// A node's figures over one phase.
#[derive(Debug, Clone, Default)]
struct NodeFig {
    name: String,
    /// The node's own read + write rate (its bytes over its own elapsed time).
    bps: f64,
    /// What its busiest interface carried (the larger of rx and tx), when sampled.
    wire_bps: Option<f64>,
    wire_iface: Option<String>,
    /// The link speed of that interface, or the one given.
    link_mbps: Option<f64>,
    /// The busiest device under the target and its %util.
    disk: Option<(String, f64)>,
    iowait: Option<f64>,
    sys: Option<f64>,
    user: Option<f64>,
}

impl NodeFig {
    fn of(n: &NodeResult, link_given: Option<f64>) -> NodeFig {
        let mut f = NodeFig { name: n.name.clone(), bps: moved(&n.total), ..Default::default() };
        if let Some(s) = &n.system {
            f.fill_system(s, link_given);
        } else {
            f.link_mbps = link_given;
        }
        f
    }

    fn fill_system(&mut self, s: &SystemResult, link_given: Option<f64>) {
        self.iowait = Some(s.mean.cpu.all.iowait_pct);
        (self.user, self.sys) = (Some(s.mean.cpu.all.us()), Some(s.mean.cpu.all.sy()));
        let target = s.target.as_ref();
        // The interfaces that carry the target's I/O; without any named, every one sampled
        // except loopback.
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
            let reported = target
                .and_then(|t| t.interfaces.iter().find(|i| &i.name == name))
                .and_then(|i| i.speed_mbps)
                .map(|m| m as f64);
            self.link_mbps = link_given.or(reported);
        } else {
            self.link_mbps = link_given;
        }
        let devices: Vec<&String> = target.map(|t| t.devices.iter().collect()).unwrap_or_default();
        self.disk = s
            .mean
            .disks
            .iter()
            .filter(|(n, _)| devices.is_empty() || devices.contains(n))
            .map(|(n, d)| (n.clone(), d.util_pct))
            .max_by(|a, b| a.1.total_cmp(&b.1));
    }

    /// What the node put on the wire: the interface's figure, else its own I/O rate.
    fn wire(&self) -> f64 {
        self.wire_bps.unwrap_or(self.bps)
    }

    /// The share of its link the node used, when a speed is known.
    fn link_share(&self) -> Option<f64> {
        self.link_mbps.filter(|m| *m > 0.0).map(|m| self.wire() * 8.0 / (m * 1e6))
    }

    fn disk_saturated(&self) -> bool {
        self.disk.as_ref().is_some_and(|d| d.1 >= DISK_BUSY_PCT) || self.iowait.is_some_and(|w| w >= IOWAIT_HIGH_PCT)
    }

    /// `a: sda 95% busy, CPU us 0% sy 9% wa 45%`, or nothing when not sampled.
    fn system_words(&self) -> Option<String> {
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
struct PhaseFig {
    /// The aggregate over the common window (all bytes over first start to last end).
    agg_bps: f64,
    /// Each writer's rate as dd would print it (its bytes over its own time).
    writers: Vec<f64>,
    nodes: Vec<NodeFig>,
    first_done_s: Option<f64>,
    last_done_s: Option<f64>,
}

impl PhaseFig {
    fn of(p: &PhaseResult, link_given: Option<f64>) -> PhaseFig {
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
    fn mean(figs: Vec<PhaseFig>) -> Option<PhaseFig> {
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

    fn writers_words(&self) -> String {
        self.writers.iter().map(|w| mbs(*w)).collect::<Vec<_>>().join(" + ")
    }

    fn times_words(&self) -> String {
        match (self.first_done_s, self.last_done_s) {
            (Some(a), Some(b)) if (b - a).abs() > 0.05 => format!(", first done at {a:.0} s, last at {b:.0} s"),
            (_, Some(b)) => format!(" in {b:.0} s"),
            _ => String::new(),
        }
    }

    fn saturated_node(&self) -> Option<&NodeFig> {
        self.nodes.iter().find(|n| n.disk_saturated())
    }

    fn full_link(&self) -> Option<(&NodeFig, f64)> {
        self.nodes
            .iter()
            .filter_map(|n| n.link_share().map(|s| (n, s)))
            .filter(|(_, s)| *s >= LINK_FULL)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// The phases of the step named `name` (every repetition).
fn step_figs(result: &RunResult, name: &str, link: Option<f64>) -> Option<PhaseFig> {
    PhaseFig::mean(
        result.phases.iter().filter(|p| base_step_name(&p.name) == name).map(|p| PhaseFig::of(p, link)).collect(),
    )
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn link_words(mbps: f64) -> String {
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

/// The `locking` scenario's verdict (seed 000's four checks): the baseline range, the cost of
/// disk-internal concurrency (check 3 against 1), the cost of the cluster filesystem (check 4
/// against 3), and whether a network link is the limit. `link_speed_mbps` (`--link-speed`)
/// wins over the speed the interfaces report (a veth or an sshfs/FUSE path may report none, or
/// the speed of a link shaped lower). `None` unless all four checks ran.
pub fn locking(result: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
    let link = link_speed_mbps.filter(|m| m.is_finite() && *m > 0.0);
    let [c1, c2, c3, c4] = LOCKING_STEPS.map(|s| step_figs(result, s, link));
    let (c1, c2, c3, c4) = (c1?, c2?, c3?, c4?);
    let mut figures = BTreeMap::new();
    let mut reasons = Vec::new();
    let mb = |b: f64| b / 1e6;
    let a = &c1.nodes[0];
    let b = &c2.nodes[0];
    let repeats = result.phases.iter().filter(|p| base_step_name(&p.name) == LOCKING_STEPS[0]).count();

    // Check 1 and 2: the baseline.
    let (lo, hi) = (c1.agg_bps.min(c2.agg_bps), c1.agg_bps.max(c2.agg_bps));
    let spread = if hi > 0.0 { (hi - lo) / hi } else { 0.0 };
    figures.insert("a_alone_mbs".into(), mb(c1.agg_bps));
    figures.insert("b_alone_mbs".into(), mb(c2.agg_bps));
    figures.insert("baseline_spread_pct".into(), spread * 100.0);
    let each = if repeats > 1 { format!(" (the mean of {repeats} rounds)") } else { String::new() };
    // Judged on the percentage as printed, so the words never say "10%, more than 10%".
    reasons.push(if (spread * 100.0).round() <= BASELINE_AGREE * 100.0 {
        format!(
            "baseline (checks 1 and 2, each node alone): {} on {} and {} on {}{each}; they agree within 10% ({} apart), so one node alone gets {}–{}",
            mbs(c1.agg_bps),
            a.name,
            mbs(c2.agg_bps),
            b.name,
            pct(spread),
            mbs(lo),
            mbs(hi)
        )
    } else {
        format!(
            "baseline (checks 1 and 2, each node alone): {} on {} and {} on {}{each}; they differ by {}, more than 10%: the two nodes do not reach the storage alike (another path, link or cache), so read the later checks against each node's own figure",
            mbs(c1.agg_bps),
            a.name,
            mbs(c2.agg_bps),
            b.name,
            pct(spread)
        )
    });

    // Check 3 against check 1: disk-internal concurrency.
    let r3 = if c1.agg_bps > 0.0 { c3.agg_bps / c1.agg_bps } else { 0.0 };
    figures.insert("a_twice_mbs".into(), mb(c3.agg_bps));
    figures.insert("a_twice_pct_of_a_alone".into(), r3 * 100.0);
    let a3 = &c3.nodes[0];
    if let Some((_, u)) = &a3.disk {
        figures.insert("a_twice_disk_util_pct".into(), *u);
    }
    if let Some(w) = a3.iowait {
        figures.insert("a_twice_iowait_pct".into(), w);
    }
    let sys3 = a3.system_words().map(|s| format!(" ({s})")).unwrap_or_default();
    let disk_saturated = a3.disk_saturated() && r3 <= 1.15;
    let meaning3 = if disk_saturated {
        format!("the storage is saturated and the two writers share what one had, each getting {} of it: that is disk-internal concurrency (a disk's head moving between two streams)", pct(r3 / 2.0))
    } else if r3 > 1.1 {
        "two writers on one node move more than one did: the storage behind a node has room for a second stream (a queue or a cache filling it), so disk-internal concurrency costs nothing here".to_string()
    } else if r3 >= 0.9 {
        "a second writer on the same node costs nothing in total: the storage behind one node takes concurrent writers without loss".to_string()
    } else {
        format!("two writers on one node move less than one did: disk-internal concurrency costs {}", pct(1.0 - r3))
    };
    reasons.push(format!(
        "check 3 (two writers on {} at once): {} as each writer saw it, {} together{}{sys3}: {} of {} alone; {meaning3}",
        a.name,
        c3.writers_words(),
        mbs(c3.agg_bps),
        c3.times_words(),
        pct(r3),
        a.name
    ));

    // Check 4 against check 3: the cluster filesystem.
    let r4 = if c3.agg_bps > 0.0 { c4.agg_bps / c3.agg_bps } else { 0.0 };
    figures.insert("a_and_b_mbs".into(), mb(c4.agg_bps));
    figures.insert("a_and_b_pct_of_a_twice".into(), r4 * 100.0);
    for n in &c4.nodes {
        if let Some(w) = n.iowait {
            figures.insert(format!("a_and_b_iowait_pct.{}", n.name), w);
        }
        if let Some(s) = n.sys {
            figures.insert(format!("a_and_b_sys_pct.{}", n.name), s);
        }
        if let Some(u) = n.user {
            figures.insert(format!("a_and_b_user_pct.{}", n.name), u);
        }
    }
    let sys4: Vec<String> = c4.nodes.iter().filter_map(NodeFig::system_words).collect();
    let sys4 = if sys4.is_empty() { String::new() } else { format!(" ({})", sys4.join("; ")) };
    let link4 = c4.full_link().map(|(n, s)| (n.name.clone(), s));
    let disk4 = c4.saturated_node().map(|n| n.name.clone());
    let cluster_cost = r4 < WELL_BELOW && link4.is_none() && disk4.is_none();
    let meaning4 = if r4 >= 0.9 {
        "two nodes at once do as well as two writers on one: the cluster filesystem adds no visible cost".to_string()
    } else if cluster_cost {
        format!("with neither a link nor a disk saturated, the {} lost between check 3 and check 4 is the cluster filesystem's: keeping two nodes' writes coherent (locks and cache invalidation over the network) costs it", pct(1.0 - r4))
    } else {
        format!("two nodes at once lose {} against two writers on one node", pct(1.0 - r4))
    };
    reasons.push(format!(
        "check 4 ({} and {} at once): {} as each node saw it, {} together{}{sys4}: {} of check 3; {meaning4}",
        a.name,
        b.name,
        c4.writers_words(),
        mbs(c4.agg_bps),
        c4.times_words(),
        pct(r4)
    ));

    // The network: a lone node against its link.
    let lone: Vec<&NodeFig> = vec![a, b];
    let shares: Vec<(&NodeFig, f64, f64)> =
        lone.iter().filter_map(|n| Some((*n, n.link_share()?, n.link_mbps?))).collect();
    let network = shares.iter().any(|(_, s, _)| *s >= LINK_FULL);
    if let Some((_, _, m)) = shares.first() {
        figures.insert("link_mbit".into(), *m);
    }
    for (n, s, _) in &shares {
        figures.insert(format!("link_pct.{}", n.name), s * 100.0);
    }
    if shares.is_empty() {
        reasons.push("no link speed is known (the interface reports none, as a veth or an sshfs/FUSE path may not), so whether the network is the limit cannot be said; give it with --link-speed (for example --link-speed 100mbit)".into());
    } else {
        let (top, share, m) = shares.iter().max_by(|x, y| x.1.total_cmp(&y.1)).copied().unwrap_or(shares[0]);
        let via = top.wire_iface.as_ref().map(|i| format!(" on {i}")).unwrap_or_default();
        if network {
            let mut s = format!(
                "one node alone moves {}{via}, {} of its {} link: the link is the limit, and every check above is bounded by it",
                mbs(top.wire()),
                pct(share),
                link_words(m)
            );
            let together = c4.agg_bps * 8.0 / (m * 1e6);
            if together >= 1.5 * LINK_FULL {
                s.push_str(&format!(
                    "; {} and {} together move {}, {} of one such link, so each node has a link of its own and no link is shared between them",
                    a.name,
                    b.name,
                    mbs(c4.agg_bps),
                    pct(together)
                ));
            } else if together >= LINK_FULL {
                s.push_str(&format!(
                    "; {} and {} together move {}, {} of one such link, so they share one link's worth (a link both cross, such as the storage server's or the replication link)",
                    a.name,
                    b.name,
                    mbs(c4.agg_bps),
                    pct(together)
                ));
            }
            reasons.push(s);
        } else {
            reasons.push(format!(
                "one node alone moves {}{via}, {} of its {} link: the link is not the limit",
                mbs(top.wire()),
                pct(share),
                link_words(m)
            ));
        }
    }

    // Each node alone fills its own link, yet at once they fall well below what their two links
    // carry while neither node's link is more than half full: what holds check 4 back is not a
    // link the figures show. Only said on measured interface figures, never guessed.
    let alone_sum = c1.agg_bps + c2.agg_bps;
    let both_link_bound = shares.len() == 2 && shares.iter().all(|(_, s, _)| *s >= LINK_FULL);
    let shares4: Vec<f64> = c4.nodes.iter().filter(|n| n.wire_bps.is_some()).filter_map(|n| n.link_share()).collect();
    let fs_behind_links = both_link_bound
        && alone_sum > 0.0
        && c4.agg_bps < WELL_BELOW * alone_sum
        && shares4.len() == c4.nodes.len()
        && shares4.iter().all(|s| *s < 0.6);
    if fs_behind_links {
        figures.insert("a_and_b_pct_of_alone_sum".into(), c4.agg_bps / alone_sum * 100.0);
        reasons.push(format!(
            "yet {} and {} at once move {}, {} of the {} the two of them move alone, while each node's link carries at most {} of its speed: the links are not what holds two nodes back; the cluster filesystem is (its locks or its coherence traffic make the two writers take turns)",
            a.name,
            b.name,
            mbs(c4.agg_bps),
            pct(c4.agg_bps / alone_sum),
            mbs(alone_sum),
            pct(shares4.iter().copied().fold(0.0, f64::max))
        ));
    }

    let limit = if fs_behind_links {
        Limit::ClusterFs
    } else if network {
        Limit::Network
    } else if cluster_cost {
        Limit::ClusterFs
    } else if disk_saturated {
        Limit::Disk
    } else {
        Limit::None
    };
    reasons.push(match limit {
        Limit::Network => "limit: the network link".into(),
        Limit::ClusterFs if fs_behind_links => {
            "limit: the cluster filesystem (two nodes at once fall well below what their own links carry, none of which is full; one node alone is bounded by its link)".into()
        }
        Limit::ClusterFs => {
            "limit: the cluster filesystem (check 4 falls well below check 3 with no link or disk saturated)".into()
        }
        Limit::Disk => {
            format!("limit: the disk (saturated in check 3 on {}, and check 4 does not fall well below it)", a.name)
        }
        Limit::None => {
            "limit: none found (no link or disk saturated, and two nodes lose little against two local writers)".into()
        }
    });
    Some(Verdict { scenario: "locking".into(), limit, reasons, figures })
}

/// The `scaling` scenario's verdict with the link speeds the interfaces report.
pub fn scaling(result: &RunResult) -> Option<Verdict> {
    scaling_with_link(result, None)
}

/// The `scaling` scenario's verdict: the aggregate throughput per client count, each
/// client's share, the efficiency against linear scaling, where it stops scaling, and the
/// limit when one can be named. `None` when no phase ran.
pub fn scaling_with_link(result: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
    let link = link_speed_mbps.filter(|m| m.is_finite() && *m > 0.0);
    let mut by_count: BTreeMap<usize, Vec<PhaseFig>> = BTreeMap::new();
    for p in &result.phases {
        by_count.entry(p.nodes.len().max(1)).or_default().push(PhaseFig::of(p, link));
    }
    let counts: Vec<(usize, PhaseFig)> =
        by_count.into_iter().filter_map(|(n, f)| PhaseFig::mean(f).map(|f| (n, f))).collect();
    let (n1, one) = counts.first()?;
    let base = one.agg_bps / *n1 as f64;
    let mut figures = BTreeMap::new();
    let mut reasons = Vec::new();
    let mut stop: Option<(usize, usize, f64)> = None;
    let mut prev: Option<(usize, f64)> = None;
    for (n, f) in &counts {
        let share = f.agg_bps / *n as f64;
        let eff = if base > 0.0 { f.agg_bps / (base * *n as f64) } else { 0.0 };
        figures.insert(format!("clients.{n}.mbs"), f.agg_bps / 1e6);
        figures.insert(format!("clients.{n}.per_client_mbs"), share / 1e6);
        figures.insert(format!("clients.{n}.efficiency_pct"), eff * 100.0);
        let each: Vec<String> = f.nodes.iter().map(|x| format!("{} {}", x.name, mbs(x.bps))).collect();
        reasons.push(format!(
            "{}: {} together, {} per client ({}), {} of linear",
            iolab_spec::scenario::clients_step_name(*n),
            mbs(f.agg_bps),
            mbs(share),
            each.join(", "),
            pct(eff)
        ));
        if let Some((pn, pa)) = prev {
            if stop.is_none() && f.agg_bps < pa * (1.0 + STILL_GROWS) {
                stop = Some((pn, *n, if pa > 0.0 { f.agg_bps / pa - 1.0 } else { 0.0 }));
            }
        }
        prev = Some((*n, f.agg_bps));
    }
    let (last_n, last) = counts.last()?;
    let mut limit = Limit::None;
    match stop {
        None if counts.len() == 1 => reasons.push("one client count only: nothing to compare".into()),
        None => reasons.push(format!(
            "it scales to {last_n} clients: they move {:.1}× what {} moves",
            if one.agg_bps > 0.0 { last.agg_bps / one.agg_bps } else { 0.0 },
            iolab_spec::scenario::clients_step_name(*n1)
        )),
        Some((from, at, gain)) => {
            figures.insert("stops_at_clients".into(), at as f64);
            reasons.push(format!(
                "it stops scaling at {at} clients: the aggregate changes {}{} from {from} to {at}",
                if gain >= 0.0 { "+" } else { "" },
                pct(gain)
            ));
            // Where it stopped: what is full.
            let at_fig = counts.iter().find(|(n, _)| *n == at).map(|(_, f)| f).unwrap_or(last);
            let slowest_link = at_fig.nodes.iter().filter_map(|x| x.link_mbps).fold(f64::INFINITY, f64::min);
            if let Some((node, s)) = at_fig.full_link() {
                limit = Limit::Network;
                reasons.push(format!(
                    "{} moves {}, {} of its {} link: the clients' links are full",
                    node.name,
                    mbs(node.wire()),
                    pct(s),
                    link_words(node.link_mbps.unwrap_or(0.0))
                ));
            } else if slowest_link.is_finite() && at_fig.agg_bps * 8.0 / (slowest_link * 1e6) >= LINK_FULL {
                limit = Limit::Network;
                reasons.push(format!(
                    "together the clients move {}, {} of one {} link: a link they all share (the server's) is the limit",
                    mbs(at_fig.agg_bps),
                    pct(at_fig.agg_bps * 8.0 / (slowest_link * 1e6)),
                    link_words(slowest_link)
                ));
            } else if let Some(node) = at_fig.saturated_node() {
                limit = Limit::Disk;
                reasons.push(format!(
                    "{}: the storage is saturated",
                    node.system_words().unwrap_or_else(|| node.name.clone())
                ));
            } else {
                limit = Limit::ClusterFs;
                reasons.push(
                    "with no link or disk seen saturated, the shared filesystem itself (its locking or its server) holds it back"
                        .into(),
                );
            }
        }
    }
    reasons.push(format!("limit: {}", limit.as_str()));
    Some(Verdict { scenario: "scaling".into(), limit, reasons, figures })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{JobResult, OpClass, Status};
    use iolab_spec::Plan;
    use iolab_sysstat::target::Interface;
    use iolab_sysstat::{DiskRates, NetRates, TargetInfo};

    const GB: f64 = 1_048_576_000.0; // dd's bs=100M count=10

    fn totals(bytes: f64, secs: f64) -> Totals {
        let mut t = Totals::default();
        let w = t.get_mut(OpClass::Write);
        w.bytes = bytes as u64;
        w.ops = (bytes / 1e6) as u64;
        w.bw_bytes = bytes / secs;
        t
    }

    /// A node that wrote `bytes` in `secs`, with its jobs of (bytes, secs) each.
    fn node(name: &str, jobs: &[(f64, f64)], system: Option<SystemResult>) -> (NodeResult, Vec<JobResult>) {
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

    fn phase(name: &str, nodes: Vec<(NodeResult, Vec<JobResult>)>) -> PhaseResult {
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

    fn run(phases: Vec<PhaseResult>) -> RunResult {
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
        }
    }

    fn sys(iface: Option<(&str, Option<u64>, f64)>, disk: Option<(&str, f64)>, wa: f64, sy: f64) -> SystemResult {
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

    /// Seed 000's first series, as dd printed it.
    fn seed_000() -> RunResult {
        run(vec![
            phase("A alone", vec![node("er-40021", &[(GB, 88.1202)], None)]),
            phase("B alone", vec![node("er-20026", &[(GB, 84.3576)], None)]),
            phase("A twice", vec![node("er-40021", &[(GB, 84.1481), (GB, 137.668)], None)]),
            phase("A and B", vec![node("er-40021", &[(GB, 156.417)], None), node("er-20026", &[(GB, 173.982)], None)]),
        ])
    }

    #[test]
    fn seed_000_on_a_100_mbit_link_is_the_network() {
        let v = locking(&seed_000(), Some(100.0)).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::Network, "{all}");
        assert!(all.contains("11.9 MB/s on er-40021 and 12.4 MB/s on er-20026"), "{all}");
        assert!(all.contains("agree within 10% (4% apart)"), "{all}");
        assert!(all.contains("12.5 MB/s + 7.6 MB/s as each writer saw it, 15.2 MB/s together"), "{all}");
        assert!(all.contains("6.7 MB/s + 6.0 MB/s as each node saw it, 12.1 MB/s together"), "{all}");
        assert!(
            all.contains("one node alone moves 12.4 MB/s, 99% of its 100 Mbit/s link: the link is the limit"),
            "{all}"
        );
        assert!(all.contains("together move 12.1 MB/s, 96% of one such link"), "{all}");
        assert!((v.figures["a_alone_mbs"] - 11.9).abs() < 0.05);
        assert!((v.figures["a_twice_pct_of_a_alone"] - 128.0).abs() < 1.0, "{:?}", v.figures);
        assert!((v.figures["a_and_b_pct_of_a_twice"] - 79.1).abs() < 0.5, "{:?}", v.figures);
        assert_eq!(v.figures["link_mbit"], 100.0);
        // Without a link speed it cannot name the network, and says how to give one.
        let v = locking(&seed_000(), None).unwrap();
        assert_ne!(v.limit, Limit::Network);
        assert!(v.reasons.join("\n").contains("--link-speed"), "{:?}", v.reasons);
        // On a gigabit link the same figures are far from it.
        let v = locking(&seed_000(), Some(1000.0)).unwrap();
        assert!(
            v.reasons.join("\n").contains("10% of its 1 Gbit/s link: the link is not the limit"),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn the_interface_rate_and_speed_decide_when_sampled() {
        // Each node's eth0 reports 100 Mb/s and carried 11.5 MB/s while it wrote alone.
        let s = |tx| Some(sys(Some(("eth0", Some(100), tx)), None, 5.0, 3.0));
        let r = run(vec![
            phase("A alone", vec![node("a", &[(GB, 95.0)], s(11.5e6))]),
            phase("B alone", vec![node("b", &[(GB, 96.0)], s(11.4e6))]),
            phase("A twice", vec![node("a", &[(GB, 180.0), (GB, 185.0)], s(11.6e6))]),
            phase("A and B", vec![node("a", &[(GB, 100.0)], s(11.0e6)), node("b", &[(GB, 101.0)], s(11.0e6))]),
        ]);
        let v = locking(&r, None).unwrap();
        assert_eq!(v.limit, Limit::Network);
        assert!(v.reasons.join("\n").contains("11.5 MB/s on eth0, 92% of its 100 Mbit/s link"), "{:?}", v.reasons);
    }

    #[test]
    fn a_saturated_disk_shared_by_two_local_writers_is_the_disk() {
        // A fast link, a disk 98% busy in check 3 where two writers share what one had, and
        // check 4 about as good as check 3.
        let s = |util, wa| Some(sys(Some(("eth0", Some(10_000), 60e6)), Some(("sdb", util)), wa, 4.0));
        let r = run(vec![
            phase("A alone", vec![node("a", &[(GB, 10.0)], s(70.0, 20.0))]),
            phase("B alone", vec![node("b", &[(GB, 10.5)], s(70.0, 20.0))]),
            phase("A twice", vec![node("a", &[(GB, 20.0), (GB, 21.0)], s(98.0, 60.0))]),
            phase("A and B", vec![node("a", &[(GB, 19.0)], s(95.0, 55.0)), node("b", &[(GB, 20.0)], s(96.0, 50.0))]),
        ]);
        let v = locking(&r, None).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::Disk, "{all}");
        assert!(all.contains("a: sdb 98% busy, CPU us 0% sy 4% wa 60%"), "{all}");
        assert!(all.contains("the storage is saturated and the two writers share what one had"), "{all}");
        assert!(all.contains("5% of its 10 Gbit/s link: the link is not the limit"), "{all}");
    }

    #[test]
    fn check_4_well_below_check_3_with_nothing_saturated_is_the_cluster_fs() {
        let s = |util| Some(sys(Some(("eth0", Some(1000), 20e6)), Some(("sdb", util)), 5.0, 12.0));
        let r = run(vec![
            phase("A alone", vec![node("a", &[(GB, 10.0)], s(40.0))]),
            phase("B alone", vec![node("b", &[(GB, 10.0)], s(40.0))]),
            phase("A twice", vec![node("a", &[(GB, 11.0), (GB, 11.0)], s(60.0))]),
            phase("A and B", vec![node("a", &[(GB, 40.0)], s(10.0)), node("b", &[(GB, 42.0)], s(10.0))]),
        ]);
        let v = locking(&r, Some(1000.0)).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::ClusterFs, "{all}");
        assert!(all.contains("is the cluster filesystem's"), "{all}");
        assert!(all.contains("room for a second stream"), "{all}");
        assert!(locking(&seed_000(), Some(100.0)).unwrap().reasons[1].contains("room for a second stream"));
    }

    #[test]
    fn nothing_limiting_is_none_and_unlike_nodes_are_said() {
        let r = run(vec![
            phase("A alone #1", vec![node("a", &[(GB, 10.0)], None)]),
            phase("B alone #1", vec![node("b", &[(GB, 14.0)], None)]),
            phase("A twice #1", vec![node("a", &[(GB, 10.0), (GB, 10.0)], None)]),
            phase("A and B #1", vec![node("a", &[(GB, 10.0)], None), node("b", &[(GB, 10.0)], None)]),
            phase("A alone #2", vec![node("a", &[(GB, 10.0)], None)]),
            phase("B alone #2", vec![node("b", &[(GB, 14.0)], None)]),
            phase("A twice #2", vec![node("a", &[(GB, 10.0), (GB, 10.0)], None)]),
            phase("A and B #2", vec![node("a", &[(GB, 10.0)], None), node("b", &[(GB, 10.0)], None)]),
        ]);
        let v = locking(&r, Some(10_000.0)).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::None, "{all}");
        assert!(all.contains("the mean of 2 rounds") && all.contains("differ by 29%"), "{all}");
        // Three checks are not a verdict.
        let mut r = r;
        r.phases.retain(|p| !p.name.starts_with("A and B"));
        assert!(locking(&r, None).is_none());
    }

    fn clients(n: usize, each_s: &[f64], system: impl Fn(usize) -> Option<SystemResult>) -> PhaseResult {
        phase(
            &iolab_spec::scenario::clients_step_name(n),
            (0..n).map(|i| node(&format!("c{}", i + 1), &[(GB, each_s[i])], system(i))).collect(),
        )
    }

    #[test]
    fn scaling_that_stops_at_a_shared_link_is_the_network() {
        // Each client alone 40 MB/s; together they never pass about 100 MB/s: a gigabit server link.
        let s = |_| Some(sys(Some(("eth0", Some(1000), 30e6)), None, 2.0, 5.0));
        let r = run(vec![
            clients(1, &[GB / 40e6], s),
            clients(2, &[GB / 40e6, GB / 40e6], s),
            clients(3, &[GB / 34e6; 3], s),
            clients(4, &[GB / 26e6; 4], s),
        ]);
        let v = scaling(&r).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::Network, "{all}");
        assert!(
            all.contains(
                "2 clients: 80.0 MB/s together, 40.0 MB/s per client (c1 40.0 MB/s, c2 40.0 MB/s), 100% of linear"
            ),
            "{all}"
        );
        assert!(all.contains("it stops scaling at 4 clients: the aggregate changes +2% from 3 to 4"), "{all}");
        assert!(all.contains("83% of one 1 Gbit/s link: a link they all share"), "{all}");
        assert_eq!(v.figures["stops_at_clients"], 4.0);
        assert!((v.figures["clients.4.efficiency_pct"] - 65.0).abs() < 0.1, "{:?}", v.figures);
    }

    #[test]
    fn scaling_that_keeps_scaling_is_none_and_a_busy_disk_is_the_disk() {
        let r = run(vec![clients(1, &[10.0], |_| None), clients(2, &[10.0, 10.5], |_| None)]);
        let v = scaling(&r).unwrap();
        assert_eq!(v.limit, Limit::None);
        assert!(v.reasons.join("\n").contains("it scales to 2 clients"), "{:?}", v.reasons);

        let s = |_| Some(sys(None, Some(("sdc", 99.0)), 45.0, 3.0));
        let r = run(vec![clients(1, &[10.0], s), clients(2, &[20.0, 20.0], s)]);
        let v = scaling(&r).unwrap();
        assert_eq!(v.limit, Limit::Disk, "{:?}", v.reasons);
        assert!(v.reasons.join("\n").contains("c1: sdc 99% busy"), "{:?}", v.reasons);

        let r = run(vec![clients(1, &[10.0], |_| None), clients(2, &[25.0, 25.0], |_| None)]);
        assert_eq!(scaling(&r).unwrap().limit, Limit::ClusterFs);
        assert!(scaling(&run(vec![])).is_none());
    }
}
