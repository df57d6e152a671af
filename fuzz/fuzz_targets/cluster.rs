//! Fuzz what the cluster crate reads from outside: `--node` values, nodes files, and the
//! protobuf messages an agent or a coordinator receives (a packed phase result unpacked with
//! its histograms). Any input gives a value or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    match kind % 4 {
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
        _ => {
            if let Ok(c) = iolab_cluster::proto::Control::decode(rest) {
                if let Some(iolab_cluster::proto::control::Kind::Start(s)) = c.kind {
                    let _ = serde_json::from_slice::<iolab_spec::Plan>(&s.plan_json).map(|p| p.validate());
                }
            }
            let _ = iolab_cluster::proto::Event::decode(rest);
        }
    }
});
