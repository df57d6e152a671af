//! A node's events followed without a connection: what the coordinator makes of a stream of
//! messages (each checked and followed as a run would, a Go answering every Ready at once),
//! then merged. The fuzz target feeds it hostile messages; nothing here may panic.

use crate::aggregate::aggregate;
use crate::follow::{on_event, NodeState};
use iolab_cluster_protocol::{proto, unix_ns};
use iolab_model::events::NoSink;
use iolab_model::RunResult;
use iolab_spec::Plan;
use std::time::SystemTime;

/// What the coordinator makes of one node's events, without a connection: each event checked
/// and followed as a run would (a Go answers every Ready at once), then the phases merged. For
/// the fuzz target and tests that feed hostile messages; nothing here may panic.
pub fn follow_events(plan: &Plan, offset_ns: i64, events: Vec<proto::Event>) -> RunResult {
    let mut st = NodeState::new("n".into(), offset_ns, plan.phases.len());
    let mut next = 0usize;
    for e in events {
        if st.done {
            break;
        }
        if let Some(kind) = e.kind {
            on_event(&mut st, kind, next, &mut NoSink);
        }
        if !st.done && st.ready == Some(next) {
            let at = unix_ns(SystemTime::now());
            st.scheduled[next] = at.checked_add(st.offset_ns);
            next += 1;
        }
    }
    let mut states = [st];
    aggregate(plan, &[], &mut states, 0.0, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_cluster_protocol::proto::event;
    use iolab_cluster_protocol::{event as ev, wire};
    use iolab_model::{PhaseResult, Status};

    fn two_phases() -> Plan {
        let job = iolab_spec::JobPatch {
            target: Some("/x/f".into()),
            size: Some(iolab_spec::Bytes::mib(1)),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        let phase = |n: &str| iolab_spec::Phase { name: n.into(), jobs: vec![job.clone()] };
        Plan { phases: vec![phase("a"), phase("b")] }
    }

    fn e(kind: event::Kind) -> proto::Event {
        ev(kind)
    }

    fn end(phase: u32, elapsed_s: f64, started_unix_ns: i64) -> proto::Event {
        let r = PhaseResult { name: "a".into(), elapsed_s, ..Default::default() };
        e(event::Kind::PhaseEnd(proto::Phase {
            phase,
            result: Some(wire::pack(&r)),
            started_unix_ns,
            keys: Vec::new(),
        }))
    }

    #[test]
    fn hostile_messages_fail_the_node_and_never_panic() {
        let plan = two_phases();
        let ready = |p: u32| e(event::Kind::Ready(proto::Ready { phase: p }));
        let start = |p: u32, ns: i64| {
            e(event::Kind::PhaseStart(proto::PhaseStart { phase: p, started_unix_ns: ns, actual_unix_ns: ns }))
        };
        let tick = |p: u32, t: &str| {
            e(event::Kind::Tick(proto::Tick {
                phase: p,
                point_json: format!("{{\"t_s\":{t},\"read_ops\":18446744073709551615,\"read_bytes\":0,\"write_ops\":0,\"write_bytes\":0,\"sync_ops\":0,\"lat_p50_ns\":0,\"lat_p99_ns\":0,\"lat_max_ns\":0}}").into_bytes(),
                bytes_so_far: 0,
            }))
        };
        let bad_keys = {
            let mut ev = end(0, 1.0, 5);
            if let Some(event::Kind::PhaseEnd(p)) = ev.kind.as_mut() {
                p.keys.push(proto::KeyMap { file_id: 1, key_block: 4096, keys: vec![1, 200], writer: "b".into() });
            }
            ev
        };
        let cases: Vec<(&str, i64, Vec<proto::Event>, &str)> = vec![
            ("a phase past the plan", 0, vec![ready(4_000_000_000)], "phase 4000000001 of a plan of 2"),
            ("ready out of turn", 0, vec![ready(1)], "ready for phase 2 while phase 1 was next"),
            ("a start before time began", 1, vec![ready(0), start(0, i64::MIN)], "a start at"),
            ("a start past time's end", -1, vec![ready(0), start(0, i64::MAX)], "a start at"),
            ("a second far away", 0, vec![ready(0), tick(0, "1e300")], "a second at"),
            ("a phase of forever", 0, vec![ready(0), end(0, 1e300, 5)], "a phase of"),
            ("a negative phase", 0, vec![ready(0), end(0, -1.0, 5)], "a phase of"),
            ("a tick past the plan", 0, vec![tick(7, "1")], "phase 8 of a plan of 2"),
            ("a key map out of range", 0, vec![ready(0), bad_keys.clone()], "a key map holding key 0xc8"),
        ];
        for (what, offset, events, says) in cases {
            let r = follow_events(&plan, offset, events);
            assert_eq!(r.status, Status::Failed, "{what}");
            let err = r.error.unwrap_or_default();
            assert!(err.contains("invalid message") && err.contains(says), "{what}: {err}");
        }
        // Sums that would overflow saturate instead, and a late start far from the instant is
        // a skew, not a crash.
        let r = follow_events(
            &plan,
            i64::MAX / 2,
            vec![ready(0), tick(0, "1"), tick(0, "2"), start(0, i64::MAX - 1), end(0, 2.0, 0)],
        );
        assert_ne!(r.status, Status::Failed, "{:?}", r.error);
        assert_eq!(r.phases[0].timeline[1].read_ops, u64::MAX);
        assert!(r.phases[0].nodes[0].start_skew_ns > 0);
    }
}
