//! One run on the agent: its Start checked (the plan, its targets under `--allow`, the
//! directories to make, the run's mark, key maps handed over) before anything is written; then
//! three things at once: the coordinator's side of the stream (Go, Stop, EndPhase, heartbeats; silence
//! past the lease stops the run), an Alive every beat, and the run itself on a thread of its
//! own, whose events are forwarded as they come and whose end is told in Done.

use crate::allow::Allow;
use crate::forward::{Forward, Gate, Outbox};
use crate::tap::{Both, Tap, Tapped};
use crate::traces::TraceCache;
use iolab_cluster_protocol::proto::{self, control, event, Control, Event};
use iolab_cluster_protocol::{done, event as ev, keys, BEAT, IO_LEASE};
use iolab_cluster_transport::log;
use iolab_model::HandedMap;
use iolab_spec::{Plan, Workload};
use iolab_workload::layout::RunMark;
use iolab_workload::lease::Lease;
use iolab_workload::place::Roots;
use iolab_workload::steady::PhaseEnds;
use iolab_workload::{run_plan, Control as RunControl};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as smpsc, Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Status, Streaming};

/// How long an agent waits for a run's first message.
const START_WAIT: Duration = Duration::from_secs(10);

/// A run's Start, checked: what the run needs.
struct Accepted {
    plan: Plan,
    node: String,
    run_mark: Option<RunMark>,
    handed: Vec<HandedMap>,
    sample_interval: Option<Duration>,
}

/// A refusal, logged, as the coordinator hears it.
fn refuse(e: String, status: fn(String) -> Status) -> Status {
    log(&format!("refused a run: {e}"));
    status(e)
}

/// Check a run's Start before anything is written: the plan (a replay's trace must be one this
/// agent was sent), the directories to make and every target under `--allow`, the mark, the
/// key maps handed over.
fn accept(allow: &Allow, traces: Option<&TraceCache>, first: proto::Start) -> Result<Accepted, Status> {
    let mut plan: Plan = serde_json::from_slice(&first.plan_json)
        .map_err(|e| Status::invalid_argument(format!("the plan is not iolab's JSON: {e}")))?;
    // A replay runs from the agent's copy of a trace it was sent, never from a path it is
    // told: the path is the coordinator's, and reading it here would read anything.
    if plan.phases.iter().flat_map(|p| &p.jobs).any(|j| matches!(j.workload, Workload::Replay(_))) {
        match traces {
            Some(t) => t.rewrite(&mut plan).map_err(|e| refuse(e.to_string(), Status::permission_denied))?,
            None => {
                return Err(refuse(
                    "this agent keeps no traces, so it runs no replay".into(),
                    Status::permission_denied,
                ))
            }
        }
    }
    plan.validate().map_err(|e| Status::invalid_argument(format!("the plan: {e}")))?;
    let run_mark = match first.run_mark.as_str() {
        "" => None,
        m => Some(RunMark::parse(m).ok_or_else(|| Status::invalid_argument("a run mark is 32 lowercase hex digits"))?),
    };
    for d in &first.mkdirs {
        // Made beneath the allowed directory that holds it, each level with mkdirat in the one
        // above, no link followed.
        allow
            .check(Path::new(d))
            .map_err(|e| e.to_string())
            .and_then(|real| allow.opened().make_dirs(&real).map_err(|e| format!("making {d}: {e}")))
            .map_err(|e| refuse(e, Status::permission_denied))?;
    }
    allow.check_plan(&plan).map_err(|e| refuse(e, Status::permission_denied))?;
    allow.resolve_plan(&mut plan).map_err(|e| refuse(e, Status::permission_denied))?;
    let handed = keys::maps_in(&first.keys).map_err(|e| refuse(e, Status::invalid_argument))?;
    let sample_interval = (first.sample_interval_ns > 0).then(|| Duration::from_nanos(first.sample_interval_ns));
    Ok(Accepted { plan, node: first.node, run_mark, handed, sample_interval })
}

/// Serve one run: its first message must be Start.
pub(crate) async fn run(
    allow: &Allow,
    traces: Option<&TraceCache>,
    tap: Option<Arc<dyn Tap>>,
    mut input: Streaming<Control>,
) -> Result<UnboundedReceiverStream<Result<Event, Status>>, Status> {
    let first = match tokio::time::timeout(START_WAIT, input.message()).await {
        Ok(Ok(Some(Control { kind: Some(control::Kind::Start(s)) }))) => s,
        Ok(Ok(_)) => return Err(Status::invalid_argument("a run's first message must be Start")),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(Status::deadline_exceeded("no Start within 10 s")),
    };
    let a = accept(allow, traces, first)?;
    log(&format!("run for node `{}`: {} phase(s)", a.node, a.plan.phases.len()));
    let (tx, rx) = mpsc::unbounded_channel::<Result<Event, Status>>();
    let stop = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (go_tx, go_rx) = smpsc::channel::<(u32, i64)>();
    // The run's I/O is bound to the lease: each word from the coordinator renews it; once it
    // has run out, no worker issues anything (even one resumed after a SIGSTOP, before this
    // side of the stream has had a chance to notice).
    let lease = Arc::new(Lease::new(IO_LEASE));
    let lost = Lost::default();
    // A phase judged for steady state ends when the coordinator says so (every node steady).
    let ends = Arc::new(PhaseEnds::default());
    let steer = Steer { go: go_tx, stop: stop.clone(), ends: ends.clone() };
    tokio::spawn(follow_coordinator(input, steer, finished.clone(), lease.clone(), lost.clone()));
    tokio::spawn(keep_alive(tx.clone(), finished.clone()));
    let gate = Arc::new(Gate { tx: tx.clone(), go: Mutex::new(go_rx) });
    // A node's name as the coordinator calls it names it in validation stamps (the testbed's
    // nodes share one host name); an empty one falls back to the host name.
    let stamp_node = (!a.node.is_empty() && a.node.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .then(|| a.node.clone());
    let ctl = RunControl {
        stop,
        start_at: None,
        gate: Some(gate),
        sample_interval: a.sample_interval,
        run_mark: a.run_mark,
        node: stamp_node,
        handed: a.handed,
        lease: Some(lease),
        roots: Roots::Allowed(allow.opened()),
        phase_ends: Some(ends),
    };
    let mark = ctl.run_mark.as_ref().map(|m| m.as_str().to_string());
    let tapped = tap.map(|t| t.begin(&a.node, mark.as_deref(), &a.plan));
    std::thread::Builder::new()
        .name("iolab-agent-run".into())
        .spawn(move || run_thread(a.plan, ctl, a.node, tx, finished, tapped, lost))
        .map_err(|e| Status::internal(format!("starting the run's thread: {e}")))?;
    Ok(UnboundedReceiverStream::new(rx))
}

/// The run itself: its events forwarded, its end told in Done whatever happens (a panic is a
/// failed run, not a node that stays "alive" and never finishes).
fn run_thread(
    plan: Plan,
    ctl: RunControl,
    node: String,
    tx: Outbox,
    finished: Arc<AtomicBool>,
    mut tapped: Option<Box<dyn Tapped>>,
    lost: Lost,
) {
    let mut forward = Forward::new(tx.clone());
    let ran = {
        let second = tapped.as_mut().map(|t| &mut **t as &mut dyn Tapped);
        let mut sink = Both { first: &mut forward, second };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_plan(&plan, &ctl, &mut sink)))
    };
    if let Some(t) = tapped.as_deref_mut() {
        t.end(match &ran {
            Ok(Ok(r)) => r.status,
            _ => iolab_model::Status::Failed,
        });
    }
    let done = match ran {
        // Stopped because the coordinator fell silent, not because it asked: a failure with
        // its reason (the coordinator, if it hears this at all, must not take it for a Ctrl-C).
        Ok(Ok(r)) if r.status == iolab_model::Status::Interrupted && lost.why().is_some() => {
            let why = lost.why().unwrap_or_default();
            done::ran(iolab_model::Status::Failed, Some(why), (r.started_unix_s * 1e9) as i64)
        }
        Ok(Ok(r)) => done::ran(r.status, r.error, (r.started_unix_s * 1e9) as i64),
        Ok(Err(e)) => {
            log(&format!("refused a run: {e}"));
            done::refused(e.to_string())
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            ctl.stop.store(true, Ordering::Relaxed);
            log(&format!("the run failed: it panicked ({what})"));
            done::ran(iolab_model::Status::Failed, Some(format!("the agent's run panicked: {what}")), 0)
        }
    };
    finished.store(true, Ordering::Relaxed);
    let _ = tx.send(Ok(ev(event::Kind::Done(done))));
    log(&format!("run for node `{node}` done"));
}

/// Why the run lost its coordinator, once it has: said in the run's Done.
#[derive(Clone, Default)]
struct Lost(Arc<Mutex<Option<String>>>);

impl Lost {
    fn set(&self, why: String) {
        if let Ok(mut w) = self.0.lock() {
            w.get_or_insert(why);
        }
    }
    fn why(&self) -> Option<String> {
        self.0.lock().ok().and_then(|w| w.clone())
    }
}

/// What the coordinator's words steer: the phases' starts, the run's stop, the phases it ends.
struct Steer {
    go: smpsc::Sender<(u32, i64)>,
    stop: Arc<AtomicBool>,
    ends: Arc<PhaseEnds>,
}

/// The coordinator's side: Go, Stop, EndPhase, heartbeats, each renewing the lease; a lease
/// run out, or the stream's end, stops the run.
async fn follow_coordinator(
    mut input: Streaming<Control>,
    Steer { go, stop, ends }: Steer,
    finished: Arc<AtomicBool>,
    lease: Arc<Lease>,
    said: Lost,
) {
    let lost = |why: String| {
        if !finished.load(Ordering::Relaxed) {
            log(&format!("lost the coordinator ({why}): stopping I/O"));
            said.set(format!("this agent lost its coordinator ({why}) and stopped its I/O"));
        }
        lease.end();
        stop.store(true, Ordering::Relaxed);
    };
    loop {
        let until = tokio::time::Instant::from_std(lease.until());
        match tokio::time::timeout_at(until, input.message()).await {
            // A word that comes after the lease ran out (it waited in the socket while this
            // process was stopped) does not renew it.
            Ok(Ok(Some(_))) if !lease.renew(IO_LEASE) => {
                return lost(format!("its lease of {} s ran out before its next word", IO_LEASE.as_secs_f64()));
            }
            Ok(Ok(Some(Control { kind: Some(k) }))) => match k {
                control::Kind::Go(g) => {
                    let _ = go.send((g.phase, g.at_unix_ns));
                }
                control::Kind::Stop(_) => {
                    log("stop asked by the coordinator");
                    stop.store(true, Ordering::Relaxed);
                }
                control::Kind::EndPhase(e) => {
                    log(&format!(
                        "phase {} ended by the coordinator: every node steady at round {}",
                        e.phase + 1,
                        e.round
                    ));
                    ends.end(e.phase as usize, e.round);
                }
                control::Kind::Heartbeat(_) | control::Kind::Start(_) => {}
            },
            Ok(Ok(Some(Control { kind: None }))) => {}
            Ok(Ok(None)) | Ok(Err(_)) => return lost("its stream ended".into()),
            Err(_) => {
                return lost(format!("no heartbeat for {} s, its lease ran out", IO_LEASE.as_secs_f64()));
            }
        }
    }
}

/// Alive every beat, so the coordinator can tell a slow layout from a lost node.
async fn keep_alive(tx: Outbox, finished: Arc<AtomicBool>) {
    while !finished.load(Ordering::Relaxed) {
        tokio::time::sleep(BEAT).await;
        if tx.send(Ok(ev(event::Kind::Alive(proto::Alive {})))).is_err() {
            return;
        }
    }
}
