//! Following one node's run: every message an agent sends is checked against the node's plan
//! before it is used (a phase the plan does not have, a time that overflows, a figure out of
//! range makes the node failed, with a message that says what it sent), kept where the merge
//! needs it (its seconds, its phases, its latest progress, the key maps it handed over), and
//! handed on as an event of the run's one stream (`iolab_model::events`), the node's name
//! added. [`follow_events`] does the same without a connection, for the fuzz target.

use crate::aggregate::aggregate;
use crate::NodeRun;
use iolab_cluster_protocol::proto::{self, control, event, Control};
use iolab_cluster_protocol::{done, events, keys, unix_ns, wire};
use iolab_model::events::{Emit, Named, NoSink, Sink};
use iolab_model::{HandedMap, PhaseResult, RunResult, Status, TimelinePoint};
use iolab_spec::Plan;
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};
use tokio::sync::mpsc;

/// The most seconds a node's timeline may hold in one phase (11 days): more is a broken agent.
const MAX_TIMELINE: usize = 1_000_000;
/// The longest a node may say a phase ran, in seconds (a year): more is a broken agent.
const MAX_ELAPSED_S: f64 = 365.0 * 86_400.0;

/// One node's run as the coordinator follows it.
pub(crate) struct NodeState {
    pub name: String,
    pub offset_ns: i64,
    pub tx: Option<mpsc::UnboundedSender<Control>>,
    /// Phases of the node's plan: every event must name one of them.
    pub phases: usize,
    pub ready: Option<usize>,
    pub done: bool,
    pub last_heard: Instant,
    /// Per phase: when its measured work began, on the node's own clock (ns).
    pub started: Vec<Option<i64>>,
    /// Per phase: when its clock began and its workers were released, node clock (ns).
    pub actual: Vec<Option<i64>>,
    /// Per phase: the instant it was told to start at, on the node's own clock (ns).
    pub scheduled: Vec<Option<i64>>,
    pub timelines: Vec<BTreeMap<u64, TimelinePoint>>,
    /// Per phase: the node's latest progress (its phase as it stood), kept for a node lost
    /// before it sent the phase's end: what it measured until then.
    pub so_far: Vec<Option<PhaseResult>>,
    /// Key maps the node handed over at its phases' ends, the latest of each file.
    pub maps: Vec<HandedMap>,
    pub run: NodeRun,
}

impl NodeState {
    pub fn new(name: String, offset_ns: i64, phases: usize) -> NodeState {
        let run = NodeRun {
            name: name.clone(),
            status: Status::Running,
            error: None,
            started_unix_s: 0.0,
            phases: Vec::new(),
        };
        NodeState {
            name,
            offset_ns,
            tx: None,
            phases,
            ready: None,
            done: false,
            last_heard: Instant::now(),
            started: vec![None; phases],
            actual: vec![None; phases],
            scheduled: vec![None; phases],
            timelines: vec![BTreeMap::new(); phases],
            so_far: vec![None; phases],
            maps: Vec::new(),
            run,
        }
    }
    pub fn send(&self, kind: control::Kind) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Control { kind: Some(kind) });
        }
    }
    pub fn fail(&mut self, msg: String) {
        if !self.done {
            self.done = true;
            self.run.status = Status::Failed;
            self.run.error = Some(msg);
            self.tx = None;
        }
    }
    /// A message that makes no sense: the node is failed, saying what it sent.
    pub fn invalid(&mut self, what: String) {
        let msg = format!("node `{}` sent an invalid message ({what}); it is taken for failed", self.name);
        self.fail(msg);
    }
    /// The phase an event names, if the node's plan has it.
    fn phase(&mut self, p: u32) -> Option<usize> {
        let i = p as usize;
        if i < self.phases {
            Some(i)
        } else {
            self.invalid(format!("an event for phase {} of a plan of {} phase(s)", i + 1, self.phases));
            None
        }
    }
    /// A time of the node's clock (ns) on the coordinator's.
    pub fn local(&self, node_ns: i64) -> Option<i64> {
        node_ns.checked_sub(self.offset_ns)
    }
    /// When phase `i`'s measured work began on the node, in Unix seconds on the coordinator's
    /// clock, once known.
    pub fn started_unix_s(&self, i: usize) -> Option<f64> {
        self.started.get(i).copied().flatten().and_then(|t| self.local(t)).map(|ns| ns as f64 / 1e9)
    }
    /// Check a phase result's figures before they are merged.
    fn sane(&mut self, r: &PhaseResult) -> bool {
        let bad_s = |x: f64| !(0.0..=MAX_ELAPSED_S).contains(&x);
        let why = if bad_s(r.elapsed_s) {
            Some(format!("a phase of {} s", r.elapsed_s))
        } else if let Some(j) = r.jobs.iter().find(|j| bad_s(j.elapsed_s)) {
            Some(format!("a job of {} s", j.elapsed_s))
        } else if r.timeline.len() > MAX_TIMELINE {
            Some(format!("a timeline of {} seconds", r.timeline.len()))
        } else {
            r.timeline.iter().find(|p| bad_s(p.t_s)).map(|p| format!("a second at {} s", p.t_s))
        };
        match why {
            Some(w) => {
                self.invalid(w);
                false
            }
            None => true,
        }
    }
}

/// One event of a node, checked against its plan and handed on to `sink` as the node's; `next`
/// is the phase the barrier waits for.
pub(crate) fn on_event(st: &mut NodeState, kind: event::Kind, next: usize, sink: &mut dyn Sink) {
    let name = st.name.clone();
    let mut sink = Named { node: &name, inner: sink };
    match kind {
        event::Kind::Ready(r) => {
            let Some(i) = st.phase(r.phase) else { return };
            if i != next {
                return st.invalid(format!("ready for phase {} while phase {} was next", i + 1, next + 1));
            }
            st.ready = Some(i);
        }
        event::Kind::PhaseStart(p) => {
            let Some(i) = st.phase(p.phase) else { return };
            for t in [p.started_unix_ns, p.actual_unix_ns] {
                if st.local(t).is_none() {
                    return st.invalid(format!("a start at {t} ns"));
                }
            }
            st.started[i] = Some(p.started_unix_ns);
            st.actual[i] = (p.actual_unix_ns != 0).then_some(p.actual_unix_ns);
        }
        event::Kind::Tick(t) | event::Kind::Correct(t) => on_second(st, &t, &mut sink),
        event::Kind::Sample(s) => {
            let Some(i) = st.phase(s.phase) else { return };
            if let Ok(r) = events::rates(&s) {
                sink.sample(i, &r);
            }
        }
        event::Kind::Progress(p) => {
            let Some(i) = st.phase(p.phase) else { return };
            if let Some(Ok(mut r)) = p.result.as_ref().map(wire::unpack) {
                if st.sane(&r) {
                    r.started_unix_s = st.started_unix_s(i);
                    sink.progress(i, &r);
                    st.so_far[i] = Some(r);
                }
            }
        }
        event::Kind::PhaseEnd(p) => on_phase_end(st, p, &mut sink),
        event::Kind::Done(d) => match done::read(&d) {
            Ok(done::Ended::Ran { status, error, started_unix_ns: started_ns }) => {
                st.run.status = status;
                st.run.error = error;
                st.run.started_unix_s = st.local(started_ns).unwrap_or(started_ns) as f64 / 1e9;
                st.done = true;
                st.tx = None;
            }
            Ok(done::Ended::Refused(refused)) => st.fail(format!("node `{name}` refused the run: {refused}")),
            Err(what) => st.invalid(what),
        },
        event::Kind::Message(m) => sink.message(&m.text),
        event::Kind::Alive(_) => {}
    }
}

/// A second (a Tick, or a Correct of one already sent): kept in the node's timeline and handed
/// on.
fn on_second(st: &mut NodeState, t: &proto::Tick, sink: &mut dyn Sink) {
    let Some(i) = st.phase(t.phase) else { return };
    let Ok(point) = events::point(t) else { return };
    if !(0.0..=MAX_ELAPSED_S).contains(&point.t_s) {
        return st.invalid(format!("a second at {} s", point.t_s));
    }
    let key = (point.t_s * 1000.0).round() as u64;
    let fresh = !st.timelines[i].contains_key(&key);
    if fresh && st.timelines[i].len() >= MAX_TIMELINE {
        return st.invalid(format!("more than {MAX_TIMELINE} seconds in phase {}", i + 1));
    }
    st.timelines[i].insert(key, point.clone());
    if fresh {
        sink.tick(i, &point, t.bytes_so_far);
    } else {
        sink.correct(i, &point);
    }
}

/// A phase's end: its result checked, its start kept, the key maps it handed over checked and
/// kept (the latest of each file), handed on, then kept with its seconds.
fn on_phase_end(st: &mut NodeState, p: proto::Phase, sink: &mut dyn Sink) {
    let Some(i) = st.phase(p.phase) else { return };
    let mut r = match p.result.as_ref().map(wire::unpack) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return st.fail(format!("node `{}` sent a phase that did not unpack: {e}", st.name)),
        None => return,
    };
    if !st.sane(&r) {
        return;
    }
    if st.started[i].is_none() && p.started_unix_ns > 0 {
        if st.local(p.started_unix_ns).is_none() {
            return st.invalid(format!("a start at {} ns", p.started_unix_ns));
        }
        st.started[i] = Some(p.started_unix_ns);
    }
    match keys::maps_in(&p.keys) {
        Ok(maps) => {
            for m in maps {
                st.maps.retain(|h| h.file_id != m.file_id);
                st.maps.push(m);
            }
        }
        Err(e) => return st.invalid(e),
    }
    for j in &mut r.jobs {
        j.node = Some(st.name.clone());
    }
    r.started_unix_s = st.started_unix_s(i);
    sink.phase_end(i, &r);
    r.timeline = st.timelines[i].values().cloned().collect();
    if st.run.phases.len() == i {
        st.run.phases.push(r);
    }
}

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
    use iolab_cluster_protocol::event as ev;

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
