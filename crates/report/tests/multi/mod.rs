//! Synthetic runs of several nodes for the report's tests: seed 000's shape (dd of 1 MiB
//! blocks onto a shared filesystem over a 100 Mbit link), with histograms, each node's CPU and
//! network, and the `locking` scenario's four checks with a verdict.

#![allow(dead_code)]

use iolab_model::{
    Acc, CpuTime, JobResult, Limit, NodeInfo, NodeResult, OpClass, PhaseResult, RunResult, Status, TimelinePoint,
    Totals, Verdict, SCHEMA_VERSION,
};
use iolab_spec::Plan;
use iolab_store::StoredRun;
use iolab_sysstat::{CpuPct, NetRates, SystemResult};

/// `mb_s` MB/s of 1 MiB writes for `secs`, latencies spread deterministically around
/// `lat_ms`.
pub fn writes(mb_s: f64, secs: f64, lat_ms: f64) -> Totals {
    let mut a = Acc::default();
    let ops = (mb_s * 1e6 * secs / 1048576.0).round() as u64;
    for i in 0..ops {
        let spread = 0.5 + (i % 10) as f64 / 10.0 + if i % 100 == 99 { 2.0 } else { 0.0 };
        a.record(OpClass::Write, 1048576, (lat_ms * spread * 1e6) as u64);
    }
    Totals::from_acc(&a, secs)
}

fn system(us: f64, sy: f64, wa: f64, net_mb_s: f64) -> SystemResult {
    let mut s = SystemResult { interval_s: 1.0, ..Default::default() };
    s.mean.cpu.all =
        CpuPct { user_pct: us, system_pct: sy, iowait_pct: wa, idle_pct: 100.0 - us - sy - wa, ..Default::default() };
    s.mean.net.insert(
        "veth0".into(),
        NetRates { tx_bytes_s: net_mb_s * 1e6, rx_bytes_s: net_mb_s * 1e4, ..Default::default() },
    );
    s.mean.net.insert("lo".into(), NetRates { tx_bytes_s: 1000.0, rx_bytes_s: 1000.0, ..Default::default() });
    s
}

/// One node's share: its name, MB/s, time, latency, start skew (µs), with one `dd` job per
/// `jobs` (the same name on every node).
pub struct Share {
    pub node: &'static str,
    pub mb_s: f64,
    pub secs: f64,
    pub lat_ms: f64,
    pub skew_us: i64,
    pub jobs: usize,
}

pub fn share(node: &'static str, mb_s: f64, secs: f64, lat_ms: f64, skew_us: i64) -> Share {
    Share { node, mb_s, secs, lat_ms, skew_us, jobs: 1 }
}

/// A phase of several nodes as the coordinator builds it: each node's total and system, the
/// jobs tagged with their node, the merged total over the longest node's time, the seconds.
pub fn phase(name: &str, shares: &[Share]) -> PhaseResult {
    let elapsed = shares.iter().map(|s| s.secs).fold(0.0, f64::max);
    let first = shares.iter().map(|s| s.secs).fold(f64::MAX, f64::min);
    let mut total = Totals::default();
    let mut nodes = Vec::new();
    let mut jobs = Vec::new();
    for s in shares {
        let t = writes(s.mb_s, s.secs, s.lat_ms);
        let w = t.write();
        let m = total.get_mut(OpClass::Write);
        m.ops += w.ops;
        m.bytes += w.bytes;
        match (&mut m.hist, &w.hist) {
            (Some(h), Some(x)) => h.add(x).unwrap(),
            (None, Some(x)) => m.hist = Some(x.clone()),
            _ => {}
        }
        for k in 0..s.jobs {
            let part = writes(s.mb_s / s.jobs as f64, s.secs, s.lat_ms * (1.0 + k as f64 * 0.1));
            jobs.push(JobResult {
                node: Some(s.node.into()),
                name: "dd".into(),
                engine: "psync".into(),
                rw: "write".into(),
                threads: 1,
                files: vec![format!("/mnt/shared/{}-{k}", s.node)],
                elapsed_s: s.secs,
                total: part,
                error: None,
                per_thread: Vec::new(),
                workload: Default::default(),
                replay: None,
                holes: None,
                latency_target: None,
                io_errors: None,
            });
        }
        let net = s.mb_s * 1.04;
        nodes.push(NodeResult {
            name: s.node.into(),
            start_skew_ns: s.skew_us * 1000,
            elapsed_s: s.secs,
            interrupted: false,
            error: None,
            total: t,
            cpu: CpuTime { user_s: 0.05, system_s: 0.4, ..Default::default() },
            system: Some(system(1.0, 4.0 + s.mb_s / 10.0, 30.0, net)),
            verify: None,
            findings: Vec::new(),
            limit: None,
            holes: None,
        });
    }
    let m = total.get_mut(OpClass::Write);
    m.iops = m.ops as f64 / elapsed;
    m.bw_bytes = m.bytes as f64 / elapsed;
    m.lat_ns = iolab_model::LatNs::from_hist(m.hist.as_ref().unwrap());
    let per_s: f64 = shares.iter().map(|s| s.mb_s).sum();
    let timeline = (1..=elapsed.ceil() as u64)
        .map(|t| TimelinePoint {
            t_s: t as f64,
            write_bytes: (per_s * 1e6) as u64,
            write_ops: (per_s * 1e6 / 1048576.0) as u64,
            lat_p50_ns: 8_000_000,
            lat_p99_ns: 30_000_000,
            ..Default::default()
        })
        .collect();
    PhaseResult {
        verify: None,
        workload: Default::default(),
        notes: Vec::new(),
        name: name.into(),
        elapsed_s: elapsed,
        interrupted: false,
        total,
        jobs,
        timeline,
        cpu: CpuTime { user_s: 0.1, system_s: 0.8, ..Default::default() },
        system: None,
        nodes,
        started_unix_s: None,
        first_done_s: Some(first),
        last_done_s: Some(elapsed),
        findings: Vec::new(),
        limit: None,
        holes: None,
        layout: None,
        steady_state: None,
        warmup: None,
    }
}

pub fn node_infos(names: &[&str]) -> Vec<NodeInfo> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| NodeInfo {
            name: n.to_string(),
            address: format!("ssh://root@10.9.0.{}", i + 2),
            hostname: format!("client{}", i + 1),
            iolab_version: "0.1.0".into(),
            clock_offset_ns: 150_000 * i as i64,
            rtt_ns: 80_000,
            clock_offset_uncertainty_ns: 40000,
            dir: Some("/mnt/shared".into()),
        })
        .collect()
}

pub fn stored(
    id: i64,
    kind: &str,
    name: &str,
    phases: Vec<PhaseResult>,
    nodes: &[&str],
    verdict: Option<Verdict>,
) -> StoredRun {
    StoredRun {
        id,
        uid: String::new(),
        kind: kind.parse().unwrap(),
        name: name.into(),
        labels: [("fs".to_string(), "sshfs".to_string())].into(),
        host: Default::default(),
        pid: 1,
        ended_unix_s: Some(1_795_305_700.0 + id as f64),
        result: RunResult {
            schema_version: SCHEMA_VERSION,
            iolab_version: "0.1.0".into(),
            node: "coordinator".into(),
            started_unix_s: 1_795_305_600.0 + id as f64,
            status: Status::Complete,
            error: None,
            plan: Plan { phases: Vec::new() },
            phases,
            nodes: node_infos(nodes),
            verdict,
            precondition: None,
        },
    }
}

/// `iolab run --node a=... --node b=...` of one dd job: node b a little slower.
pub fn two_nodes(id: i64, speed: f64) -> StoredRun {
    let p = phase("dd", &[share("a", 5.6 * speed, 10.0, 90.0, 120), share("b", 5.2 * speed, 10.4, 95.0, -340)]);
    stored(id, "run", "dd 1M", vec![p], &["a", "b"], None)
}

/// Seed 000's locking check on sshfs over 100 Mbit links: A alone, B alone, two writers on A,
/// A and B at once; the link is the limit.
pub fn locking(id: i64) -> StoredRun {
    let two_on_a = Share { jobs: 2, ..share("a", 11.2, 10.0, 95.0, 80) };
    let phases = vec![
        phase("a alone", &[share("a", 11.4, 10.0, 90.0, 60)]),
        phase("b alone", &[share("b", 11.3, 10.0, 91.0, 110)]),
        phase("two writers on a", &[two_on_a]),
        phase("a and b", &[share("a", 10.9, 10.0, 92.0, 150), share("b", 10.8, 10.1, 93.0, -90)]),
    ];
    let verdict = Verdict {
        scenario: "locking".into(),
        limit: Limit::Network,
        reasons: vec![
            "each node alone wrote 11.3 to 11.4 MB/s, 91% of its 100 Mbit/s link (12.5 MB/s)".into(),
            "two writers on node a reached 98% of one writer: the disk shares well".into(),
            "a and b at once reached 191% of one node: the cluster filesystem costs little".into(),
        ],
        figures: [
            ("baseline_low_mbs".to_string(), 11.3),
            ("baseline_high_mbs".to_string(), 11.4),
            ("link_mbs".to_string(), 12.5),
        ]
        .into(),
    };
    stored(id, "scenario", "locking", phases, &["a", "b"], Some(verdict))
}

/// Seed 003's scaling scenario: the same job on 1, 2, 3 and 4 clients, each client a little
/// slower as they are added.
pub fn scaling(id: i64) -> StoredRun {
    let names = ["c1", "c2", "c3", "c4"];
    let phases = (1..=4)
        .map(|n| {
            let shares: Vec<Share> = names[..n]
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    share(c, 11.0 / (1.0 + 0.25 * (n - 1) as f64), 10.0 + i as f64 * 0.1, 90.0, 50 * i as i64)
                })
                .collect();
            phase(&format!("{n} clients"), &shares)
        })
        .collect();
    let verdict = Verdict {
        scenario: "scaling".into(),
        limit: Limit::Disk,
        reasons: vec!["four clients together reach 22 MB/s, 2.0 times one client".into()],
        figures: Default::default(),
    };
    stored(id, "scenario", "scaling", phases, &names, Some(verdict))
}
