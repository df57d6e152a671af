//! Following one node's run: every message an agent sends is checked against the node's plan
//! before it is used (a phase the plan does not have, a time that overflows, a figure out of
//! range makes the node failed, with a message that says what it sent), kept where the merge
//! needs it (its seconds, its phases, its latest progress, the key maps it handed over), and
//! handed on as an event of the run's one stream (`iolab_model::events`), the node's name
//! added. `follow_events` (crate::offline) does the same without a connection, for the fuzz
//! target.

use crate::work::NodeRun;
use iolab_cluster_protocol::proto::{self, control, event, Control};
use iolab_cluster_protocol::{done, events, keys, wire};
use iolab_model::events::{Emit, Named, Sink};
use iolab_model::{HandedMap, PhaseResult, Status, TimelinePoint};
use std::collections::BTreeMap;
use std::time::Instant;
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
