//! Steady state across two nodes (issue 29), each node a real agent over TLS writing real
//! files: both steady, the phase ends after exactly the window's rounds on both, the
//! aggregate's rounds the nodes' sums; node `a` steady beside node `b` whose rate falls every
//! round, both run to the maximum, `a` judged steady on its own, `b` and the whole not.

use iolab_cluster::{tls, AgentService, Allow, Cluster, NodeSpec, Options, Work};
use iolab_model::events::NoSink;
use iolab_model::steady::SteadyStateResult;
use iolab_spec::{parse_job_file, JobPatch, Plan};
use iolab_workload::layout::RunMark;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROUNDS: u32 = 7;

fn job(name: &str, target: &Path, rate: u32, extra: &str) -> String {
    format!(
        "[[phase.job]]\nname = \"{name}\"\ntarget = \"{}\"\nsize = \"1M\"\nrw = \"randwrite\"\nrate_iops = {rate}\n{extra}",
        target.display()
    )
}

fn judged(dir: &Path, rate: u32, rounds: u32) -> String {
    job("judged", &dir.join("j"), rate, &format!("steady_state = \"snia\"\nround = \"1s\"\nss_max_rounds = {rounds}\n"))
}

/// Two agents, `a` and `b`, each allowed its own directory, and a cluster connected to them;
/// then each node runs its own plan (`plans`: job files' text, `{dir}` its directory).
/// Returns what the run gave and how long it took.
fn on_two_nodes(plans: [&dyn Fn(&Path) -> String; 2]) -> (iolab_cluster::ClusterResult, Duration) {
    let d = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (cert, key) = tls::load_or_make(&d.path().join("tls")).unwrap();
    let mut specs = Vec::new();
    let mut texts = Vec::new();
    for (name, plan) in ["a", "b"].into_iter().zip(plans) {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let service = AgentService::new(Allow::new(std::slice::from_ref(&dir)).unwrap());
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (c, k) = (cert.clone(), key.clone_key());
        rt.spawn(tls::serve(listener, service.server(), "tok".into(), c, k, Duration::from_secs(1)));
        specs.push(NodeSpec { name: name.into(), addr: iolab_cluster::Addr::parse(&addr).unwrap(), dir: None });
        texts.push(plan(&dir));
    }
    let plans: Vec<Arc<Plan>> =
        texts.iter().map(|t| Arc::new(parse_job_file(t, &JobPatch::default()).unwrap())).collect();
    let opts = Options { token: Some("tok".into()), known_agents: Some(d.path().join("known")), ..Default::default() };
    let mut cluster = Cluster::connect(&specs, opts, &mut |w| panic!("{w}")).unwrap();
    let mark = RunMark::new();
    let work: Vec<Option<Work>> = plans.iter().map(|p| Some(Work::plan(p.clone(), &mark))).collect();
    let t = Instant::now();
    let r = cluster.run_each(&plans[0], &work, Arc::new(AtomicBool::new(false)), &mut NoSink);
    let took = t.elapsed();
    let errors: Vec<_> = r.nodes.iter().map(|n| &n.error).collect();
    assert!(errors.iter().all(|e| e.is_none()), "{errors:?}");
    (r, took)
}

fn own(r: &iolab_cluster::ClusterResult, n: usize) -> SteadyStateResult {
    r.nodes[n].phases[0].steady_state.clone().expect("each node's own steady state")
}

/// The merged phase's steady state: its rounds each the nodes' sum, and each node's own.
fn merged(r: &iolab_cluster::ClusterResult) -> SteadyStateResult {
    let s = r.aggregate.phases[0].steady_state.clone().expect("the merged phase's steady state");
    let (sa, sb) = (own(r, 0), own(r, 1));
    assert_eq!(s.values.len() as u64, s.measured);
    for (i, v) in s.values.iter().enumerate() {
        let sum = sa.values[i] + sb.values[i];
        assert!((v - sum).abs() < 1e-9, "round {}: the aggregate {v} is the nodes' sum {sum}", i + 1);
    }
    let names: Vec<&str> = s.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!((&s.nodes[0].state, &s.nodes[1].state), (&sa, &sb), "each node's own, as it judged it");
    s
}

#[test]
fn two_steady_nodes_end_after_exactly_the_window_on_both() {
    let steady = |dir: &Path| format!("[[phase]]\nname = \"p\"\n{}", judged(dir, 400, 12));
    let (r, took) = on_two_nodes([&steady, &steady]);
    // Ended once both were steady (the fifth second is finalized about a second after it ends:
    // about 6 s), not at the maximum of 12 rounds.
    assert!(took < Duration::from_secs(10), "the phase ran {took:?}");
    for n in 0..2 {
        let s = own(&r, n);
        assert_eq!((s.measured, s.steady_at, s.attained), (5, Some(5), true), "node {n}: {s:?}");
        for x in &s.values {
            assert!((x - 400.0).abs() <= 20.0, "node {n} near 400 IOPS each round: {:?}", s.values);
        }
    }
    let s = merged(&r);
    assert_eq!((s.measured, s.steady_at, s.attained), (5, Some(5), true), "{s:?}");
    let w = s.window.as_ref().unwrap();
    assert!((w.mean - 800.0).abs() <= 40.0 && w.steady, "{w:?}");
}

#[test]
fn a_steady_node_runs_to_the_maximum_beside_one_that_is_not() {
    // Node a: 400 IOPS every round. Node b: 100 IOPS judged beside three jobs of 300 IOPS
    // ending one a round (1000, 700, 400, then 100 on).
    let a = |dir: &Path| format!("[[phase]]\nname = \"p\"\n{}", judged(dir, 400, ROUNDS));
    let b = |dir: &Path| {
        let mut b = format!("[[phase]]\nname = \"p\"\n{}", judged(dir, 100, ROUNDS));
        for k in 1..=3 {
            b += &job(&format!("b{k}"), &dir.join(format!("b{k}")), 300, &format!("runtime = \"{k}s\"\n"));
        }
        b
    };
    let (r, took) = on_two_nodes([&a, &b]);
    assert!(took >= Duration::from_secs(ROUNDS as u64), "the phase ran {took:?}");
    let (sa, sb) = (own(&r, 0), own(&r, 1));
    assert_eq!((sa.measured, sb.measured), (ROUNDS as u64, ROUNDS as u64), "both ran to the maximum");
    assert!(sa.attained, "node a judged steady on its own: {sa:?}");
    assert!(!sb.attained, "node b is not: {sb:?}");
    for x in &sa.values {
        assert!((x - 400.0).abs() <= 20.0, "node a near 400 IOPS each round: {:?}", sa.values);
    }
    let s = merged(&r);
    assert_eq!(s.measured, ROUNDS as u64);
    assert!(!s.attained && s.steady_at.is_none(), "not every node steady: {s:?}");
}
