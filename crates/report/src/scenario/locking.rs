//! The `locking` scenario: seed 000's four checks of a cluster filesystem's locking on a shared
//! directory (A alone, B alone, two writers on A, A and B at once), its verdict (which part of
//! a slowdown is the disk, which the cluster filesystem and which the network, in the words
//! seed 000's friend used) and its chart (each check's throughput as bars, the verdict
//! beside them).

use super::{verdict_block, Scenario};
use crate::charts::{self, Bar};
use crate::markup::{escape, figure};
use crate::nodes::data_bw;
use crate::verdict::{link_words, mbs, pct, step_figs, NodeFig, PhaseFig, BASELINE_AGREE, LINK_FULL, WELL_BELOW};
use iolab_model::{Limit, RunResult, Verdict};
use iolab_spec::scenario::{base_dir, base_step_name, dd_like, repeated, resolve_one};
use iolab_spec::{BuiltinOptions, Job, JobPatch, Part, SpecError, Step, StepPlan};
use iolab_store::StoredRun;
use std::collections::BTreeMap;

/// The names of the four steps, in order (the verdict reads them).
pub const STEPS: [&str; 4] = ["A alone", "B alone", "A twice", "A and B"];

/// The `locking` scenario.
pub struct Locking;

impl Scenario for Locking {
    fn name(&self) -> &str {
        "locking"
    }
    fn about(&self) -> &str {
        "the locking check's four steps on a shared directory: A alone, B alone, two writers on A, A and B at once"
    }
    fn steps(&self, nodes: &[String], job: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
        steps(nodes, job, opts)
    }
    fn verdict(&self, run: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
        verdict(run, link_speed_mbps)
    }
    fn chart(&self, h: &mut String, run: &StoredRun) {
        h.push_str("<div class=\"charts\">\n");
        if let Some(v) = &run.result.verdict {
            chart(h, run, v);
        }
        h.push_str("</div>\n");
    }
}

/// Seed 000's four checks: nodes A and B are the first two nodes given.
fn steps(nodes: &[String], overrides: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
    let [a, b, ..] = nodes else {
        return Err(SpecError::plain(format!(
            "the locking scenario needs two nodes (A and B), {} given; add --node NAME=ADDR for each",
            nodes.len()
        )));
    };
    let patch = dd_like(overrides);
    let dir = base_dir(overrides, "iolab-locking");
    let base = overrides.name.clone().unwrap_or_else(|| "dd".into());
    let writer = |node: &str, n: u32| -> Result<Job, SpecError> {
        let file = if opts.shared_file { "shared.dat".to_string() } else { format!("{node}.{n}.dat") };
        resolve_one(&patch, &format!("{base}.{n}"), dir.join(file))
    };
    let part = |node: &str, writers: u32| -> Result<Part, SpecError> {
        let jobs = (1..=writers).map(|n| writer(node, n)).collect::<Result<Vec<_>, _>>()?;
        Ok(Part { node: node.to_string(), jobs, mkdirs: vec![dir.clone()] })
    };
    let steps = vec![
        Step { name: STEPS[0].into(), parts: vec![part(a, 1)?] },
        Step { name: STEPS[1].into(), parts: vec![part(b, 1)?] },
        Step { name: STEPS[2].into(), parts: vec![part(a, 2)?] },
        Step { name: STEPS[3].into(), parts: vec![part(a, 1)?, part(b, 1)?] },
    ];
    Ok(StepPlan { name: "locking".into(), steps: repeated(steps, opts.repeat) })
}

fn mb(bytes: f64) -> f64 {
    bytes / 1e6
}

/// The four checks' figures (each the mean of its repetitions), and what the verdict says of
/// them so far.
struct Judge {
    c1: PhaseFig,
    c2: PhaseFig,
    c3: PhaseFig,
    c4: PhaseFig,
    /// How many times check 1 ran.
    repeats: usize,
    figures: BTreeMap<String, f64>,
    reasons: Vec<String>,
}

impl Judge {
    /// Checks 1 and 2: the baseline.
    fn baseline(&mut self) {
        let Judge { c1, c2, repeats, figures, reasons, .. } = self;
        let (a, b) = (&c1.nodes[0], &c2.nodes[0]);
        let (lo, hi) = (c1.agg_bps.min(c2.agg_bps), c1.agg_bps.max(c2.agg_bps));
        let spread = if hi > 0.0 { (hi - lo) / hi } else { 0.0 };
        figures.insert("a_alone_mbs".into(), mb(c1.agg_bps));
        figures.insert("b_alone_mbs".into(), mb(c2.agg_bps));
        figures.insert("baseline_spread_pct".into(), spread * 100.0);
        let each = if *repeats > 1 { format!(" (the mean of {repeats} rounds)") } else { String::new() };
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
    }

    /// Check 3 against check 1: disk-internal concurrency. Whether A's storage is saturated.
    fn concurrency(&mut self) -> bool {
        let Judge { c1, c3, figures, reasons, .. } = self;
        let a = &c1.nodes[0];
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
        disk_saturated
    }

    /// Check 4 against check 3: the cluster filesystem. Whether it costs, with nothing else
    /// saturated.
    fn cluster_fs(&mut self) -> bool {
        let Judge { c1, c2, c3, c4, figures, reasons, .. } = self;
        let (a, b) = (&c1.nodes[0], &c2.nodes[0]);
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
            "two nodes at once do as well as two writers on one: the cluster filesystem adds no visible cost"
                .to_string()
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
        cluster_cost
    }

    /// The network: a lone node against its link. Whether a link is the limit, and each lone
    /// node's share of its link (where a speed is known).
    fn network(&mut self) -> (bool, Vec<f64>) {
        let Judge { c1, c2, c4, figures, reasons, .. } = self;
        let (a, b) = (&c1.nodes[0], &c2.nodes[0]);
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
        (network, shares.iter().map(|(_, s, _)| *s).collect())
    }

    /// Each node alone fills its own link, yet at once they fall well below what their two
    /// links carry while neither node's link is more than half full: what holds check 4 back
    /// is not a link the figures show. Only said on measured interface figures, never guessed.
    fn fs_behind_links(&mut self, lone_shares: &[f64]) -> bool {
        let Judge { c1, c2, c4, figures, reasons, .. } = self;
        let (a, b) = (&c1.nodes[0], &c2.nodes[0]);
        let alone_sum = c1.agg_bps + c2.agg_bps;
        let both_link_bound = lone_shares.len() == 2 && lone_shares.iter().all(|s| *s >= LINK_FULL);
        let shares4: Vec<f64> =
            c4.nodes.iter().filter(|n| n.wire_bps.is_some()).filter_map(|n| n.link_share()).collect();
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
        fs_behind_links
    }
}

/// The verdict (seed 000's four checks): the baseline range, the cost of disk-internal
/// concurrency (check 3 against 1), the cost of the cluster filesystem (check 4 against 3), and
/// whether a network link is the limit. `link_speed_mbps` (`--link-speed`) wins over the speed
/// the interfaces report (a veth or an sshfs/FUSE path may report none, or the speed of a link
/// shaped lower). `None` unless all four checks ran.
pub fn verdict(result: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
    let link = link_speed_mbps.filter(|m| m.is_finite() && *m > 0.0);
    let [c1, c2, c3, c4] = STEPS.map(|s| step_figs(result, s, link));
    let repeats = result.phases.iter().filter(|p| base_step_name(&p.name) == STEPS[0]).count();
    let mut j = Judge { c1: c1?, c2: c2?, c3: c3?, c4: c4?, repeats, figures: BTreeMap::new(), reasons: Vec::new() };
    j.baseline();
    let disk_saturated = j.concurrency();
    let cluster_cost = j.cluster_fs();
    let (network, lone_shares) = j.network();
    let fs_behind_links = j.fs_behind_links(&lone_shares);
    let a = &j.c1.nodes[0];
    let mut reasons = std::mem::take(&mut j.reasons);
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
    Some(Verdict { scenario: "locking".into(), limit, reasons, figures: j.figures })
}

/// The checks as bars: each check's aggregate MB/s, and each node's where two or more ran; the
/// verdict beside them.
fn chart(h: &mut String, r: &StoredRun, v: &Verdict) {
    let mut bars = Vec::new();
    let mut legend = vec![("all nodes".to_string(), 0usize)];
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in r.result.phases.iter().enumerate() {
        bars.push(Bar { label: format!("{}", i + 1), value: data_bw(&p.total) / 1e6, color: 0 });
        if p.nodes.len() >= 2 {
            for n in &p.nodes {
                let k = match names.iter().position(|x| *x == n.name) {
                    Some(k) => k,
                    None => {
                        names.push(&n.name);
                        legend.push((format!("node {}", n.name), names.len()));
                        names.len() - 1
                    }
                };
                bars.push(Bar { label: format!("{} {}", i + 1, n.name), value: data_bw(&n.total) / 1e6, color: k + 1 });
            }
        }
    }
    let checks: Vec<String> =
        r.result.phases.iter().enumerate().map(|(i, p)| format!("{} {}", i + 1, escape(&p.name))).collect();
    let svg = charts::bar_chart("Locking check", "MB/s", &bars, &legend);
    h.push_str("<div class=\"locking\">\n");
    figure(
        h,
        &format!("locking-{}", r.id),
        Some(svg),
        &format!(
            "Each check's throughput over all its nodes (and each node's where two ran at once), in MB/s: {}.",
            checks.join(", ")
        ),
        "",
    );
    verdict_block(h, r.id, v);
    h.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::fixtures::*;
    use iolab_spec::{Bytes, Rw, SyncMode};
    use std::path::PathBuf;

    fn nodes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn targets(s: &Step) -> Vec<(String, String)> {
        s.parts
            .iter()
            .flat_map(|p| p.jobs.iter().map(move |j| (p.node.clone(), j.target.display().to_string())))
            .collect()
    }

    #[test]
    fn locking_is_seed_000s_four_checks() {
        let s = steps(&nodes(&["n1", "n2", "n3"]), &JobPatch::default(), &BuiltinOptions::default()).unwrap();
        assert_eq!(s.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), STEPS);
        let t = |i: usize| targets(&s.steps[i]);
        let p = |n: &str, f: &str| (n.to_string(), format!("iolab-locking/{f}"));
        assert_eq!(t(0), [p("n1", "n1.1.dat")]);
        assert_eq!(t(1), [p("n2", "n2.1.dat")]);
        assert_eq!(t(2), [p("n1", "n1.1.dat"), p("n1", "n1.2.dat")]);
        assert_eq!(t(3), [p("n1", "n1.1.dat"), p("n2", "n2.1.dat")]);
        let j = &s.steps[2].parts[0].jobs;
        assert_eq!((j[0].name.as_str(), j[1].name.as_str()), ("dd.1", "dd.2"));
        let b = j[0].workload.block().unwrap();
        assert_eq!(b.rw, Rw::Write);
        assert_eq!(b.bs.max(), Bytes::mib(1));
        assert!(b.end_fsync);
        assert_eq!(j[0].size, Some(Bytes::gib(1)));
        assert_eq!(s.steps[0].parts[0].mkdirs, [PathBuf::from("iolab-locking")]);

        let shared = BuiltinOptions { shared_file: true, ..Default::default() };
        let s = steps(&nodes(&["n1", "n2"]), &JobPatch::default(), &shared).unwrap();
        for step in &s.steps {
            for (_, f) in targets(step) {
                assert_eq!(f, "iolab-locking/shared.dat");
            }
        }
        assert_eq!(s.steps[2].parts[0].jobs.len(), 2);
    }

    #[test]
    fn locking_takes_the_job_flags_and_needs_two_nodes() {
        let over = JobPatch {
            size: Some(Bytes::mib(64)),
            bs: Some("4k".parse().unwrap()),
            direct: Some(true),
            runtime: Some(std::time::Duration::from_secs(5)),
            sync: Some(SyncMode::Dsync),
            target: Some("/mnt/ocfs2/t".into()),
            ..Default::default()
        };
        let opts = BuiltinOptions { repeat: 3, ..Default::default() };
        let s = steps(&nodes(&["a", "b"]), &over, &opts).unwrap();
        assert_eq!(s.steps.len(), 12);
        assert_eq!(s.steps[4].name, "A alone #2");
        for j in s.steps.iter().flat_map(|s| &s.parts).flat_map(|p| &p.jobs) {
            assert_eq!(j.size, Some(Bytes::mib(64)));
            assert!(j.direct);
            assert_eq!(j.runtime, Some(std::time::Duration::from_secs(5)));
            assert_eq!(j.workload.block().unwrap().sync, SyncMode::Dsync);
            assert!(j.target.starts_with("/mnt/ocfs2/t"));
        }
        let e = steps(&nodes(&["a"]), &JobPatch::default(), &opts).unwrap_err().to_string();
        assert!(e.contains("two nodes") && e.contains("1 given"), "{e}");
        // A flag that breaks a rule is refused before anything runs.
        let bad = JobPatch { direct: Some(true), bs: Some("1000".parse().unwrap()), ..Default::default() };
        assert!(steps(&nodes(&["a", "b"]), &bad, &opts).unwrap_err().to_string().contains("512"));
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
        let v = verdict(&seed_000(), Some(100.0)).unwrap();
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
        let v = verdict(&seed_000(), None).unwrap();
        assert_ne!(v.limit, Limit::Network);
        assert!(v.reasons.join("\n").contains("--link-speed"), "{:?}", v.reasons);
        // On a gigabit link the same figures are far from it.
        let v = verdict(&seed_000(), Some(1000.0)).unwrap();
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
        let v = verdict(&r, None).unwrap();
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
        let v = verdict(&r, None).unwrap();
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
        let v = verdict(&r, Some(1000.0)).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::ClusterFs, "{all}");
        assert!(all.contains("is the cluster filesystem's"), "{all}");
        assert!(all.contains("room for a second stream"), "{all}");
        assert!(verdict(&seed_000(), Some(100.0)).unwrap().reasons[1].contains("room for a second stream"));
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
        let v = verdict(&r, Some(10_000.0)).unwrap();
        let all = v.reasons.join("\n");
        assert_eq!(v.limit, Limit::None, "{all}");
        assert!(all.contains("the mean of 2 rounds") && all.contains("differ by 29%"), "{all}");
        // Three checks are not a verdict.
        let mut r = r;
        r.phases.retain(|p| !p.name.starts_with("A and B"));
        assert!(verdict(&r, None).is_none());
    }
}
