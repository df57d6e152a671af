//! The `scaling` scenario: the same job on 1, 2, ..., N nodes at once, each node in its own
//! directory (seed 003's PostMark on one to four clients), and its verdict: the aggregate per
//! client count, each client's share, the efficiency against linear scaling, where it stops
//! scaling and what is full there. Its chart is the sweep every run of several node counts
//! gets.

use super::Scenario;
use crate::verdict::{link_words, mbs, pct, PhaseFig, LINK_FULL, STILL_GROWS, SUBLINEAR};
use iolab_model::{Limit, RunResult, Verdict};
use iolab_spec::scenario::{base_dir, dd_like, repeated, resolve_one};
use iolab_spec::{BuiltinOptions, JobPatch, Part, SpecError, Step, StepPlan};
use std::collections::BTreeMap;

/// The `scaling` scenario.
pub struct Scaling;

impl Scenario for Scaling {
    fn name(&self) -> &str {
        "scaling"
    }
    fn about(&self) -> &str {
        "the same job on 1, 2, ..., N nodes at once, each node in its own subdirectory"
    }
    fn steps(&self, nodes: &[String], job: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
        steps(nodes, job, opts)
    }
    fn verdict(&self, run: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
        verdict(run, link_speed_mbps)
    }
}

/// The step name of the scaling scenario for `n` nodes at once.
pub fn step_name(n: usize) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

/// The same job on 1, 2, ..., N nodes at once, each node in `iolab-scaling/<node>/`.
fn steps(nodes: &[String], overrides: &JobPatch, opts: &BuiltinOptions) -> Result<StepPlan, SpecError> {
    if nodes.is_empty() {
        return Err(SpecError::plain("the scaling scenario needs at least one node; add --node NAME=ADDR"));
    }
    let max = match opts.clients {
        None => nodes.len(),
        Some(0) => return Err(SpecError::plain("--clients 0 runs nothing; give 1 or more")),
        Some(c) if c as usize > nodes.len() => {
            return Err(SpecError::plain(format!(
                "--clients {c} but {} node(s) given; add nodes or lower --clients",
                nodes.len()
            )))
        }
        Some(c) => c as usize,
    };
    let patch = dd_like(overrides);
    let dir = base_dir(overrides, "iolab-scaling");
    let name = overrides.name.clone().unwrap_or_else(|| "job1".into());
    let mut steps = Vec::new();
    for n in 1..=max {
        let parts = nodes[..n]
            .iter()
            .map(|node| {
                let own = dir.join(node);
                Ok(Part { node: node.clone(), jobs: vec![resolve_one(&patch, &name, own.clone())?], mkdirs: vec![own] })
            })
            .collect::<Result<Vec<_>, SpecError>>()?;
        steps.push(Step { name: step_name(n), parts });
    }
    Ok(StepPlan { name: "scaling".into(), steps: repeated(steps, opts.repeat) })
}

/// The verdict: the aggregate throughput per client count, each
/// client's share, the efficiency against linear scaling, where it stops scaling, and the
/// limit when one can be named. `None` when no phase ran.
pub fn verdict(result: &RunResult, link_speed_mbps: Option<f64>) -> Option<Verdict> {
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
            step_name(*n),
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
    let last_eff = if base > 0.0 { last.agg_bps / (base * *last_n as f64) } else { 0.0 };
    let mut limit = Limit::None;
    // Where it stops scaling, or where it scales but well below linear: what is full there.
    let judged_at = match stop {
        None if counts.len() == 1 => {
            reasons.push("one client count only: nothing to compare".into());
            None
        }
        None if last_eff < SUBLINEAR => {
            figures.insert("sublinear_at_clients".into(), *last_n as f64);
            reasons.push(format!(
                "it still scales to {last_n} clients, but at {} of linear: something holds the clients back",
                pct(last_eff)
            ));
            Some(*last_n)
        }
        None => {
            reasons.push(format!(
                "it scales to {last_n} clients: they move {:.1}× what {} moves",
                if one.agg_bps > 0.0 { last.agg_bps / one.agg_bps } else { 0.0 },
                step_name(*n1)
            ));
            None
        }
        Some((from, at, gain)) => {
            figures.insert("stops_at_clients".into(), at as f64);
            reasons.push(format!(
                "it stops scaling at {at} clients: the aggregate changes {}{} from {from} to {at}",
                if gain >= 0.0 { "+" } else { "" },
                pct(gain)
            ));
            Some(at)
        }
    };
    if let Some(at) = judged_at {
        // What is full there, by the limit rule's cases (every link the target crosses).
        let at_fig = counts.iter().find(|(n, _)| *n == at).map(|(_, f)| f).unwrap_or(last);
        let slowest_link = at_fig.nodes.iter().filter_map(|x| x.link_mbps).fold(f64::INFINITY, f64::min);
        if let Some((node, s)) = at_fig.full_link() {
            limit = Limit::Network;
            reasons.push(format!(
                "{} moves {}{}, {} of its {} link: the clients' links are full",
                node.name,
                mbs(node.wire()),
                node.wire_iface.as_ref().map(|i| format!(" on {i}")).unwrap_or_default(),
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
    reasons.push(format!("limit: {}", limit.as_str()));
    Some(Verdict { scenario: "scaling".into(), limit, reasons, figures })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::fixtures::*;
    use iolab_model::PhaseResult;
    use iolab_spec::{Bytes, Rw};
    use iolab_sysstat::SystemResult;
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
    fn scaling_runs_one_to_n_nodes_each_in_its_own_directory() {
        let four = nodes(&["c1", "c2", "c3", "c4"]);
        let s = steps(&four, &JobPatch::default(), &BuiltinOptions::default()).unwrap();
        assert_eq!(s.steps.iter().map(|s| s.parts.len()).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(s.steps[0].name, "1 client");
        assert_eq!(s.steps[3].name, "4 clients");
        assert_eq!(
            targets(&s.steps[1]),
            [("c1".into(), "iolab-scaling/c1".into()), ("c2".into(), "iolab-scaling/c2".into())]
        );
        assert_eq!(s.steps[1].parts[1].mkdirs, [PathBuf::from("iolab-scaling/c2")]);
        assert_eq!(s.steps[0].parts[0].jobs[0].workload.block().unwrap().rw, Rw::Write);

        let opts = BuiltinOptions { clients: Some(2), repeat: 2, ..Default::default() };
        let over = JobPatch { rw: Some(Rw::RandRead), bs: Some("4k".parse().unwrap()), ..Default::default() };
        let s = steps(&four, &over, &opts).unwrap();
        assert_eq!(
            s.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["1 client #1", "2 clients #1", "1 client #2", "2 clients #2"]
        );
        let b = s.steps[0].parts[0].jobs[0].workload.block().unwrap();
        assert_eq!((b.rw, b.bs.max(), b.end_fsync), (Rw::RandRead, Bytes::kib(4), false));

        let e = steps(&four, &JobPatch::default(), &BuiltinOptions { clients: Some(5), ..Default::default() })
            .unwrap_err()
            .to_string();
        assert!(e.contains("--clients 5") && e.contains("4 node"), "{e}");
        assert!(steps(&[], &JobPatch::default(), &BuiltinOptions::default()).is_err());
    }

    fn clients(n: usize, each_s: &[f64], system: impl Fn(usize) -> Option<SystemResult>) -> PhaseResult {
        phase(&step_name(n), (0..n).map(|i| node(&format!("c{}", i + 1), &[(GB, each_s[i])], system(i))).collect())
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
        let v = verdict(&r, None).unwrap();
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
        let v = verdict(&r, None).unwrap();
        assert_eq!(v.limit, Limit::None);
        assert!(v.reasons.join("\n").contains("it scales to 2 clients"), "{:?}", v.reasons);

        let s = |_| Some(sys(None, Some(("sdc", 99.0)), 45.0, 3.0));
        let r = run(vec![clients(1, &[10.0], s), clients(2, &[20.0, 20.0], s)]);
        let v = verdict(&r, None).unwrap();
        assert_eq!(v.limit, Limit::Disk, "{:?}", v.reasons);
        assert!(v.reasons.join("\n").contains("c1: sdc 99% busy"), "{:?}", v.reasons);

        let r = run(vec![clients(1, &[10.0], |_| None), clients(2, &[25.0, 25.0], |_| None)]);
        assert_eq!(verdict(&r, None).unwrap().limit, Limit::ClusterFs);
        assert!(verdict(&run(vec![]), None).is_none());
    }
}
