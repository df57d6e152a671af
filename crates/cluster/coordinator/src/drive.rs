//! One run on the connected nodes, as it happens: each node sent its Start (its plan localized,
//! its traces first), its events followed as they come ([`crate::follow`]), heartbeats every
//! beat, a node silent past the lease or whose stream breaks taken for lost (and everyone
//! stopped), and the start barrier: once every live node is ready for the next phase, one
//! instant for all, in each node's own clock. A phase judged for steady state is judged here
//! across the nodes ([`crate::steady`]) and ended on all of them at once (EndPhase).

use crate::dial::Conn;
use crate::follow::{on_event, NodeState};
use crate::ship::ship_traces;
use crate::steady::Across;
use crate::work::{Options, Work};
use iolab_cluster_protocol::proto::{self, control, event, Control};
use iolab_cluster_protocol::{events, keys, unix_ns, BEAT, LEASE};
use iolab_model::events::{Emit, Named, Sink};
use iolab_model::Status;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// A heartbeat to every node each beat, from a task of its own: the driving loop, busy merging
/// hundreds of nodes' results on a loaded machine, must not starve the agents' leases. The
/// senders are weak: a node whose stream the loop ends (done, failed) gets no more, and the
/// stream still ends when the loop drops its sender.
async fn heartbeats(nodes: Vec<mpsc::WeakUnboundedSender<Control>>) {
    let mut beat = tokio::time::interval(BEAT);
    loop {
        beat.tick().await;
        let mut any = false;
        for tx in nodes.iter().filter_map(|w| w.upgrade()) {
            any |= tx.send(Control { kind: Some(control::Kind::Heartbeat(proto::Heartbeat {})) }).is_ok();
        }
        if !any {
            return;
        }
    }
}

/// What the nodes' streams bring. An event carries the instant its reader took it off the
/// connection: a node is heard when its word arrived, not when the driving loop (busy merging
/// 256 nodes' results on a loaded machine) got round to it.
enum Incoming {
    Event(usize, Instant, proto::Event),
    Lost(usize, String),
}

/// Start node `n`'s run: its traces, then its Start and the stream of its events, read into
/// `incoming`. A node that cannot start is failed at once.
async fn start_node(
    n: usize,
    c: &mut Conn,
    work: &Work,
    opts: &Options,
    traces: &mut HashMap<PathBuf, Arc<Vec<u8>>>,
    incoming: &mpsc::UnboundedSender<Incoming>,
) -> NodeState {
    let local = c.spec.localize(&work.plan);
    let mkdirs = work.mkdirs.iter().map(|d| c.spec.localize_path(d).display().to_string()).collect();
    let (tx, rx) = mpsc::unbounded_channel::<Control>();
    let start = proto::Start {
        plan_json: serde_json::to_vec(&local).unwrap_or_default(),
        sample_interval_ns: opts.sample_interval.map_or(0, |d| d.as_nanos() as u64),
        node: c.spec.name.clone(),
        mkdirs,
        run_mark: work.run_mark.as_str().to_string(),
        keys: work.keys.iter().map(keys::map_out).collect(),
    };
    let _ = tx.send(Control { kind: Some(control::Kind::Start(start)) });
    let mut st = NodeState::new(c.spec.name.clone(), c.info.clock_offset_ns, local.phases.len());
    st.tx = Some(tx);
    if let Err(e) = ship_traces(&mut c.client, &local, traces).await {
        st.fail(format!("node `{}`: {e}", c.spec.name));
        return st;
    }
    match c.client.run(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await {
        Ok(resp) => {
            let mut stream = resp.into_inner();
            let incoming = incoming.clone();
            tokio::spawn(async move {
                loop {
                    let m = match stream.message().await {
                        Ok(Some(e)) => Incoming::Event(n, Instant::now(), e),
                        Ok(None) => Incoming::Lost(n, "its stream ended".into()),
                        Err(e) => Incoming::Lost(n, e.message().to_string()),
                    };
                    let last = matches!(m, Incoming::Lost(..));
                    if incoming.send(m).is_err() || last {
                        return;
                    }
                }
            });
        }
        Err(e) => st.fail(format!("node `{}`: {}", c.spec.name, e.message())),
    }
    st
}

/// The run's nodes as it goes on: their states, the phase the barrier waits for, whether
/// everyone has been told to stop.
struct Run<'a> {
    states: Vec<NodeState>,
    phase: usize,
    stopping: bool,
    /// The worst round trip to a node, ns: the start instant leaves room for it.
    max_rtt: u64,
    /// Steady state judged across the nodes, phase by phase.
    across: Across,
    sink: &'a mut dyn Sink,
}

impl Run<'_> {
    /// Stop every node (once).
    fn stop_all(&mut self) {
        if !self.stopping {
            for s in &self.states {
                s.send(control::Kind::Stop(proto::Stop {}));
            }
            self.stopping = true;
        }
    }

    /// Every node and the nodes' sum are steady in `phase`: it ends on every live node.
    fn end_phase(&mut self, phase: usize) {
        let round = self.across.result(phase).map_or(0, |r| r.measured);
        for s in self.states.iter().filter(|s| !s.done) {
            s.send(control::Kind::EndPhase(proto::EndPhase { phase: phase as u32, round }));
        }
        self.sink.message(&format!(
            "phase {}: every node and their sum steady at round {round}; ending it on every node",
            phase + 1
        ));
    }

    /// Node `n` is lost: failed, said, and everyone stopped.
    fn lost(&mut self, n: usize, why: String, said: String) {
        let name = self.states[n].name.clone();
        self.states[n].fail(format!("node `{name}` lost: {why}"));
        Named { node: &name, inner: &mut *self.sink }.message(&said);
        self.stop_all();
    }

    fn on(&mut self, m: Incoming) {
        match m {
            Incoming::Event(n, at, e) => {
                self.states[n].last_heard = self.states[n].last_heard.max(at);
                let second = match &e.kind {
                    Some(event::Kind::Tick(t)) => events::point(t).ok().map(|p| (t.phase as usize, p)),
                    _ => None,
                };
                if let Some(kind) = e.kind {
                    on_event(&mut self.states[n], kind, self.phase, &mut *self.sink);
                }
                if let Some((phase, p)) = second.filter(|_| !self.states[n].done) {
                    if self.across.second(n, phase, &p) {
                        self.end_phase(phase);
                    }
                }
                if self.states[n].done && self.states[n].run.status == Status::Failed {
                    self.stop_all();
                }
            }
            Incoming::Lost(n, why) if !self.states[n].done => {
                let said = format!("lost: {why}; stopping the other nodes");
                self.lost(n, why, said);
            }
            Incoming::Lost(..) => {}
        }
    }

    /// Every node not heard from for the lease is lost. Silence counts only while this side
    /// was listening: when the check itself comes late (the coordinator had no CPU for `late`
    /// beyond its 50 ms period: a machine loaded past its cores), that time is not held against
    /// the nodes, whose words may be waiting unread in its sockets.
    fn check_silence(&mut self, late: Duration) {
        if late > Duration::ZERO {
            let now = Instant::now();
            for s in &mut self.states {
                s.last_heard = (s.last_heard + late).min(now);
            }
        }
        for n in 0..self.states.len() {
            if !self.states[n].done && self.states[n].last_heard.elapsed() > LEASE {
                let secs = LEASE.as_secs_f64();
                self.lost(
                    n,
                    format!("nothing heard for {secs} s"),
                    format!("silent for {secs} s; stopping the other nodes"),
                );
            }
        }
    }

    /// The barrier: once every live node is ready for this phase, one start for all.
    fn barrier(&mut self) {
        let live: Vec<usize> = (0..self.states.len()).filter(|&n| !self.states[n].done).collect();
        if self.stopping || live.is_empty() || !live.iter().all(|&n| self.states[n].ready == Some(self.phase)) {
            return;
        }
        // Early enough that every node holds its Go before the instant: twice the worst round
        // trip, 50 ms, and a millisecond for each node beyond 8 (the Go messages go out one
        // after another; 64 agents on a loaded machine take their turns to read).
        let extra = Duration::from_millis(live.len().saturating_sub(8) as u64);
        let lead = Duration::from_nanos(self.max_rtt.saturating_mul(2)) + Duration::from_millis(50) + extra;
        let at = unix_ns(SystemTime::now() + lead);
        let phase = self.phase;
        for &n in &live {
            let s = &mut self.states[n];
            // The instant on the node's clock; the skew is measured there too.
            match at.checked_add(s.offset_ns) {
                Some(node_at) if phase < s.phases => {
                    s.scheduled[phase] = Some(node_at);
                    s.send(control::Kind::Go(proto::Go { phase: phase as u32, at_unix_ns: node_at }));
                }
                _ => s.invalid(format!("a clock offset of {} ns", s.offset_ns)),
            }
        }
        self.phase += 1;
    }
}

/// Run each connected node's work at once, until every node is done (or lost); the nodes'
/// events go to `sink` as they come. Returns each node's state as it ended, and the phases'
/// steady state judged across the nodes.
pub(crate) async fn drive(
    conns: &mut [(&mut Conn, &Work)],
    opts: &Options,
    stop: &AtomicBool,
    sink: &mut dyn Sink,
) -> (Vec<NodeState>, Across) {
    let (in_tx, mut in_rx) = mpsc::unbounded_channel::<Incoming>();
    let mut states = Vec::new();
    let mut traces = HashMap::new();
    for (n, (c, work)) in conns.iter_mut().enumerate() {
        states.push(start_node(n, c, work, opts, &mut traces, &in_tx).await);
    }
    drop(in_tx);
    let max_rtt = conns.iter().map(|(c, _)| c.info.rtt_ns).max().unwrap_or(0);
    let plans: Vec<&iolab_spec::Plan> = conns.iter().map(|(_, w)| &*w.plan).collect();
    let across = Across::new(&plans);
    let mut run = Run { states, phase: 0, stopping: false, max_rtt, across, sink };
    let heartbeats =
        tokio::spawn(heartbeats(run.states.iter().filter_map(|s| s.tx.as_ref().map(|t| t.downgrade())).collect()));
    let period = Duration::from_millis(50);
    let mut poll = tokio::time::interval(period);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut polled = Instant::now();
    // A refusal or failure before any phase started stops everyone at once.
    if run.states.iter().any(|s| s.done) {
        run.stop_all();
    }
    while run.states.iter().any(|s| !s.done) {
        tokio::select! {
            m = in_rx.recv() => match m {
                Some(m) => run.on(m),
                None => break,
            },
            _ = poll.tick() => {
                // What has arrived is heard before silence is judged.
                while let Ok(m) = in_rx.try_recv() {
                    run.on(m);
                }
                let now = Instant::now();
                let late = now.saturating_duration_since(polled).saturating_sub(period * 2);
                polled = now;
                run.check_silence(late);
                if stop.load(Ordering::Relaxed) {
                    run.stop_all();
                }
            }
        }
        run.barrier();
    }
    heartbeats.abort();
    // Let the agents go: dropping the senders ends their request streams.
    for s in &mut run.states {
        s.tx = None;
    }
    (run.states, run.across)
}
