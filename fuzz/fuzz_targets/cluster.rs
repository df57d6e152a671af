//! Fuzz what the cluster crate reads from outside: `--node` values, nodes files, and the
//! protobuf messages an agent or a coordinator receives (a packed phase result unpacked with
//! its histograms, the key maps a run or a phase's end hands over), and a whole sequence of one node's events as the coordinator follows and
//! merges them (`coordinator::follow_events`). Any input gives a value or an error, never a
//! panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    match kind % 5 {
        0 => {
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = iolab_cluster::NodeSpec::parse(s);
            }
        }
        1 => {
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = iolab_cluster::NodeSpec::parse_file(std::path::Path::new("nodes.toml"), s);
            }
        }
        2 => {
            if let Ok(p) = iolab_cluster::proto::PackedPhase::decode(rest) {
                let _ = iolab_cluster::wire::unpack(&p);
            }
        }
        3 => {
            // Length-delimited events, as a node would stream them, against a 2-phase plan.
            let mut buf = rest;
            let mut events = Vec::new();
            while let Ok(e) = iolab_cluster::proto::Event::decode_length_delimited(&mut buf) {
                events.push(e);
                if buf.is_empty() || events.len() > 256 {
                    break;
                }
            }
            let offset = i64::from(rest.first().copied().unwrap_or(0)) << 56;
            let _ = iolab_cluster::coordinator::follow_events(&plan(), offset, events);
        }
        _ => {
            if let Ok(c) = iolab_cluster::proto::Control::decode(rest) {
                if let Some(iolab_cluster::proto::control::Kind::Start(s)) = c.kind {
                    let _ = serde_json::from_slice::<iolab_spec::Plan>(&s.plan_json).map(|p| p.validate());
                    // The key maps handed over with a run (--verify-on other), as the agent checks them.
                    let _ = iolab_cluster::protocol::keys::maps_in(&s.keys);
                }
            }
            let _ = iolab_cluster::proto::Event::decode(rest);
        }
    }
});

fn plan() -> iolab_spec::Plan {
    let job = iolab_spec::JobPatch {
        target: Some("/x/f".into()),
        size: Some(iolab_spec::Bytes::mib(1)),
        ..Default::default()
    }
    .resolve("j")
    .expect("a valid job");
    let phase = |n: &str| iolab_spec::Phase { name: n.into(), jobs: vec![job.clone()] };
    iolab_spec::Plan { phases: vec![phase("a"), phase("b")] }
}
