//! An agent runs a replay only from a trace its coordinator sent it: a replay job naming a
//! path on the agent (here /dev/zero, which never ends) is refused before anything is read,
//! a trace that arrives damaged is not kept, and a trace sent whole is replayed from the
//! agent's own copy, outside its --allow directories. Over the real TLS transport.

use iolab_cluster::proto::{agent_client::AgentClient, control, Control, HelloRequest, Start, TraceChunk};
use iolab_cluster::{pin, tls, AgentService, Allow, PROTOCOL_VERSION};
use iolab_spec::{Job, JobPatch, Phase, Plan, ReplayJob, Timing, Workload};
use std::sync::Arc;
use std::time::Duration;

fn crc(b: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(b);
    c.sum()
}

fn replay_plan(target: &std::path::Path, trace: &str, bytes: u64, crc32: u32) -> Plan {
    let base = JobPatch { target: Some(target.into()), ..Default::default() }.resolve("r").unwrap();
    let job = Job {
        workload: Workload::Replay(ReplayJob {
            trace: trace.into(),
            trace_bytes: bytes,
            trace_crc32: crc32,
            timing: Timing::Afap,
            strip: "/data".into(),
            prepare: false,
            limits: Default::default(),
        }),
        ..base
    };
    Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_runs_only_from_a_trace_the_coordinator_sent() {
    let d = tempfile::tempdir().unwrap();
    let work = d.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let allow = Allow::new(std::slice::from_ref(&work)).unwrap();
    let state = d.path().join("state");
    let service = AgentService::new(allow).with_trace_cache(&state).unwrap();
    let cache = service.trace_dir().unwrap();
    assert!(!cache.starts_with(&work));
    let (cert, key) = tls::load_or_make(&d.path().join("tls")).unwrap();
    let fp = tls::fingerprint(&cert);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(tls::serve(listener, service.server(), "tok".into(), cert, key, Duration::from_secs(1)));
    let ch = pin::connect(&addr, tls::CERT_NAME, Arc::new(pin::CertPin::new(Some(fp)))).await.unwrap();
    let token: tonic::metadata::MetadataValue<_> = "Bearer tok".parse().unwrap();
    let mut client = AgentClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", token.clone());
        Ok(r)
    });
    client.hello(HelloRequest { protocol_version: PROTOCOL_VERSION, iolab_version: "x".into() }).await.unwrap();
    let run = |plan: Plan| {
        let start = Start {
            plan_json: serde_json::to_vec(&plan).unwrap(),
            sample_interval_ns: 0,
            node: "n".into(),
            mkdirs: Vec::new(),
            run_mark: String::new(),
            keys: Vec::new(),
        };
        tokio_stream::iter(vec![Control { kind: Some(control::Kind::Start(start)) }])
    };

    // A replay of a path on the agent: refused, nothing read (the size and CRC it would have
    // found are not in the answer).
    let e = client.run(run(replay_plan(&work, "/dev/zero", 1 << 20, 0xdead_beef))).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{}", e.message());
    assert!(e.message().contains("was not sent to this agent"), "{}", e.message());

    // A damaged trace is refused and not kept.
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/proto/agent.proto")).unwrap();
    let chunk = |data: &[u8], total: u64, crc32: u32| TraceChunk { total_bytes: total, crc32, data: data.to_vec() };
    let bad = vec![chunk(&bytes[..10], bytes.len() as u64, crc(&bytes)), chunk(b"not the rest", 0, 0)];
    let e = client.put_trace(tokio_stream::iter(bad)).await.unwrap_err();
    assert!(e.message().contains("announced as"), "{}", e.message());
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0, "nothing kept");

    // Sent whole, in two pieces: kept in the agent's cache, and a replay of it is taken (it
    // names the coordinator's path, which means nothing here).
    let good = vec![chunk(&bytes[..100], bytes.len() as u64, crc(&bytes)), chunk(&bytes[100..], 0, 0)];
    client.put_trace(tokio_stream::iter(good)).await.unwrap();
    let kept: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(std::fs::read(&kept[0]).unwrap(), bytes);
    let accepted = client.run(run(replay_plan(&work, "/coordinator/app.trace", bytes.len() as u64, crc(&bytes)))).await;
    assert!(accepted.is_ok(), "{:?}", accepted.err());
}
