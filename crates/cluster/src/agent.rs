//! The agent: the `Agent` service a node runs (`iolab agent`). It answers the handshake and
//! the clock, and runs plans it is sent, only under its `--allow` directories, through the
//! same `run_plan` (and so every safety rule) as `iolab run`. It runs no command of any kind.
//! A run stops when the coordinator says so, or when it hears nothing from it for
//! [`LEASE`] (the coordinator heartbeats every [`BEAT`]), or when the request stream ends.

use crate::allow::Allow;
use crate::proto::{self, agent_server, control, event, Control, Event};
use crate::traces::{TraceCache, TraceError};
use crate::wire;
use iolab_spec::{Plan, Workload};
use iolab_workload::layout::RunMark;
use iolab_workload::{run_plan, Control as RunControl, Expect, PhaseResult, Sink, StartGate};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as smpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// The protocol version this build speaks (see proto/agent.proto).
/// 2: key maps handed over with Start and PhaseEnd (`--verify-on other`).
pub const PROTOCOL_VERSION: u32 = 2;
/// How long an agent runs on without hearing from its coordinator.
pub const LEASE: Duration = Duration::from_millis(4500);
/// How often each side says it is there: the coordinator's heartbeat, the agent's Alive. Nine
/// beats fit in a lease, so a few late ones (a loaded machine, a retransmission) lose nothing,
/// and a silent peer is noticed within 5 s of its last word.
pub const BEAT: Duration = Duration::from_millis(500);
/// How long an agent waits for a run's first message.
const START_WAIT: Duration = Duration::from_secs(10);

pub fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

pub fn from_unix_ns(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
}

/// Log a line on stderr, the agent's log.
pub fn log(text: &str) {
    eprintln!("iolab agent: {text}");
}

/// The service. Cheap to clone: one per transport.
#[derive(Clone)]
pub struct AgentService {
    allow: Arc<Allow>,
    /// Where traces sent for replay jobs are kept (none: replay jobs are refused).
    traces: Option<Arc<TraceCache>>,
    /// An agent that joined its coordinator: its rank and its proof of the token.
    joined: Option<(u32, Vec<u8>)>,
}

impl AgentService {
    pub fn new(allow: Allow) -> AgentService {
        AgentService { allow: Arc::new(allow), traces: None, joined: None }
    }

    /// The service of an agent that joined its coordinator (one connection): the handshake
    /// answers with its rank and its proof of the token (see [`crate::join`]).
    pub fn joined(mut self, rank: u32, proof: Vec<u8>) -> AgentService {
        self.joined = Some((rank, proof));
        self
    }

    /// Keep traces sent for replay jobs in a directory of this process's own under `dir`,
    /// which must lie outside the `--allow` directories.
    pub fn with_trace_cache(mut self, dir: &Path) -> Result<AgentService, TraceError> {
        self.traces = Some(Arc::new(TraceCache::new(dir, &self.allow)?));
        Ok(self)
    }

    /// The directory of this process's copies of traces, removed by the caller when it ends
    /// (tasks a runtime shuts down in the background may never drop the cache).
    pub fn trace_dir(&self) -> Option<PathBuf> {
        self.traces.as_ref().map(|t| t.dir().to_path_buf())
    }

    pub fn server(self) -> agent_server::AgentServer<AgentService> {
        agent_server::AgentServer::new(self).max_decoding_message_size(64 << 20)
    }

    /// Refuse any target outside the allowed directories, before anything is written, whatever
    /// the engine: a personality on the null engine still makes its directories and files.
    fn check(&self, plan: &Plan) -> Result<(), String> {
        for job in plan.phases.iter().flat_map(|p| &p.jobs) {
            self.allow.check(&job.target).map_err(|e| format!("job `{}`: {e}", job.name))?;
            for p in iolab_workload::layout::job_paths(job) {
                self.allow.check(&p).map_err(|e| format!("job `{}`: {e}", job.name))?;
            }
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl agent_server::Agent for AgentService {
    async fn hello(&self, req: Request<proto::HelloRequest>) -> Result<Response<proto::HelloReply>, Status> {
        let peer = req.remote_addr().map(|a| a.to_string()).unwrap_or_else(|| "the coordinator".into());
        let r = req.into_inner();
        if r.protocol_version != PROTOCOL_VERSION {
            let msg = format!(
                "protocol version {} (iolab {}) is not this agent's {PROTOCOL_VERSION} (iolab {}); run the same iolab on both sides",
                r.protocol_version,
                r.iolab_version,
                env!("CARGO_PKG_VERSION")
            );
            log(&format!("refused {peer}: {msg}"));
            return Err(Status::failed_precondition(msg));
        }
        Ok(Response::new(proto::HelloReply {
            protocol_version: PROTOCOL_VERSION,
            iolab_version: env!("CARGO_PKG_VERSION").into(),
            hostname: iolab_sysstat::hostname(),
            arch: std::env::consts::ARCH.into(),
            unix_ns: unix_ns(SystemTime::now()),
            rank: self.joined.as_ref().map_or(0, |j| j.0),
            join_proof: self.joined.as_ref().map(|j| j.1.clone()).unwrap_or_default(),
            allow: self.allow.dirs().iter().map(|d| d.display().to_string()).collect(),
        }))
    }

    async fn clock(&self, _req: Request<proto::Empty>) -> Result<Response<proto::ClockReply>, Status> {
        Ok(Response::new(proto::ClockReply { unix_ns: unix_ns(SystemTime::now()) }))
    }

    async fn put_trace(&self, req: Request<Streaming<proto::TraceChunk>>) -> Result<Response<proto::Empty>, Status> {
        let Some(cache) = self.traces.clone() else {
            return Err(Status::failed_precondition("this agent keeps no traces"));
        };
        let mut input = req.into_inner();
        let mut upload = None;
        while let Some(c) = input.message().await? {
            let u = match &mut upload {
                Some(u) => u,
                None => upload.insert(cache.begin(c.total_bytes, c.crc32).map_err(refuse_trace)?),
            };
            u.write(&c.data).map_err(refuse_trace)?;
        }
        let Some(u) = upload else { return Err(Status::invalid_argument("no trace was sent")) };
        let path = u.finish().map_err(refuse_trace)?;
        log(&format!("kept a trace for replay: {}", path.display()));
        Ok(Response::new(proto::Empty {}))
    }

    type RunStream = UnboundedReceiverStream<Result<Event, Status>>;

    async fn run(&self, req: Request<Streaming<Control>>) -> Result<Response<Self::RunStream>, Status> {
        let mut input = req.into_inner();
        let first = match tokio::time::timeout(START_WAIT, input.message()).await {
            Ok(Ok(Some(Control { kind: Some(control::Kind::Start(s)) }))) => s,
            Ok(Ok(_)) => return Err(Status::invalid_argument("a run's first message must be Start")),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(Status::deadline_exceeded("no Start within 10 s")),
        };
        let mut plan: Plan = serde_json::from_slice(&first.plan_json)
            .map_err(|e| Status::invalid_argument(format!("the plan is not iolab's JSON: {e}")))?;
        // A replay runs from the agent's copy of a trace it was sent, never from a path it is
        // told: the path is the coordinator's, and reading it here would read anything.
        let has_replay = plan.phases.iter().flat_map(|p| &p.jobs).any(|j| matches!(j.workload, Workload::Replay(_)));
        if has_replay {
            let rewritten = match &self.traces {
                Some(t) => t.rewrite(&mut plan).map_err(|e| e.to_string()),
                None => Err("this agent keeps no traces, so it runs no replay".to_string()),
            };
            if let Err(e) = rewritten {
                log(&format!("refused a run: {e}"));
                return Err(Status::permission_denied(e));
            }
        }
        if let Err(e) = plan.validate() {
            return Err(Status::invalid_argument(format!("the plan: {e}")));
        }
        let run_mark = match first.run_mark.as_str() {
            "" => None,
            m => Some(
                RunMark::parse(m).ok_or_else(|| Status::invalid_argument("a run mark is 32 lowercase hex digits"))?,
            ),
        };
        for d in &first.mkdirs {
            let made = self
                .allow
                .check(Path::new(d))
                .map_err(|e| e.to_string())
                .and_then(|real| std::fs::create_dir_all(&real).map_err(|e| format!("making {d}: {e}")));
            if let Err(e) = made {
                log(&format!("refused a run: {e}"));
                return Err(Status::permission_denied(e));
            }
        }
        if let Err(e) = self.check(&plan) {
            log(&format!("refused a run: {e}"));
            return Err(Status::permission_denied(e));
        }
        let handed = match crate::cross::maps_in(&first.keys) {
            Ok(h) => h,
            Err(e) => {
                log(&format!("refused a run: {e}"));
                return Err(Status::invalid_argument(e));
            }
        };
        let node = first.node.clone();
        log(&format!("run for node `{node}`: {} phase(s)", plan.phases.len()));
        let (tx, rx) = mpsc::unbounded_channel::<Result<Event, Status>>();
        let stop = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let (go_tx, go_rx) = smpsc::channel::<(u32, i64)>();

        // The coordinator's side: Go, Stop, heartbeats; silence past the lease stops the run.
        let (stop2, finished2) = (stop.clone(), finished.clone());
        tokio::spawn(async move {
            loop {
                match tokio::time::timeout(LEASE, input.message()).await {
                    Ok(Ok(Some(Control { kind: Some(k) }))) => match k {
                        control::Kind::Go(g) => {
                            let _ = go_tx.send((g.phase, g.at_unix_ns));
                        }
                        control::Kind::Stop(_) => {
                            log("stop asked by the coordinator");
                            stop2.store(true, Ordering::Relaxed);
                        }
                        control::Kind::Heartbeat(_) | control::Kind::Start(_) => {}
                    },
                    Ok(Ok(Some(Control { kind: None }))) => {}
                    Ok(Ok(None)) | Ok(Err(_)) | Err(_) => {
                        if !finished2.load(Ordering::Relaxed) {
                            log(&format!(
                                "lost the coordinator (stream ended or no heartbeat for {} s): stopping I/O",
                                LEASE.as_secs_f64()
                            ));
                        }
                        stop2.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            }
        });
        // Alive every beat, so the coordinator can tell a slow layout from a lost node.
        let (alive_tx, finished3) = (tx.clone(), finished.clone());
        tokio::spawn(async move {
            while !finished3.load(Ordering::Relaxed) {
                tokio::time::sleep(BEAT).await;
                if alive_tx.send(Ok(ev(event::Kind::Alive(proto::Alive {})))).is_err() {
                    return;
                }
            }
        });
        let sample_interval = (first.sample_interval_ns > 0).then(|| Duration::from_nanos(first.sample_interval_ns));
        let gate = Arc::new(Gate { tx: tx.clone(), go: Mutex::new(go_rx) });
        // A node's name as the coordinator calls it names it in validation stamps (the
        // testbed's nodes share one host name); an empty one falls back to the host name.
        let stamp_node = (!node.is_empty() && node.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
            .then(|| node.clone());
        let ctl = RunControl {
            stop: stop.clone(),
            start_at: None,
            gate: Some(gate),
            sample_interval,
            run_mark,
            node: stamp_node,
            handed,
        };
        std::thread::Builder::new()
            .name("iolab-agent-run".into())
            .spawn(move || {
                let mut sink = Forward { tx: tx.clone(), ramp: Duration::ZERO, started: Vec::new(), maps: Vec::new() };
                // Whatever happens to the run, the coordinator hears how it ended: a panic
                // is a failed run, not a node that stays "alive" and never finishes.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_plan(&plan, &ctl, &mut sink)));
                let done = match ran {
                    Ok(Ok(mut r)) => {
                        r.phases.clear();
                        proto::Done { result_json: serde_json::to_vec(&r).unwrap_or_default(), refused: String::new() }
                    }
                    Ok(Err(e)) => {
                        log(&format!("refused a run: {e}"));
                        proto::Done { result_json: Vec::new(), refused: e.to_string() }
                    }
                    Err(panic) => {
                        let what = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "no message".into());
                        ctl.stop.store(true, Ordering::Relaxed);
                        log(&format!("the run failed: it panicked ({what})"));
                        let r = iolab_model::RunResult {
                            status: iolab_model::Status::Failed,
                            error: Some(format!("the agent's run panicked: {what}")),
                            ..failed_run()
                        };
                        proto::Done { result_json: serde_json::to_vec(&r).unwrap_or_default(), refused: String::new() }
                    }
                };
                finished.store(true, Ordering::Relaxed);
                let _ = tx.send(Ok(ev(event::Kind::Done(done))));
                log(&format!("run for node `{node}` done"));
            })
            .map_err(|e| Status::internal(format!("starting the run's thread: {e}")))?;
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }
}

fn refuse_trace(e: TraceError) -> Status {
    log(&format!("refused a trace: {e}"));
    Status::invalid_argument(e.to_string())
}

/// An empty run result, for a run that ended without one.
fn failed_run() -> iolab_model::RunResult {
    iolab_model::RunResult {
        status: iolab_model::Status::Failed,
        ..iolab_model::RunResult::new(Plan { phases: Vec::new() }, iolab_sysstat::hostname(), 0.0)
    }
}

fn ev(kind: event::Kind) -> Event {
    Event { kind: Some(kind) }
}

/// The start gate: say Ready, then wait for the coordinator's Go (or a stop).
struct Gate {
    tx: mpsc::UnboundedSender<Result<Event, Status>>,
    go: Mutex<smpsc::Receiver<(u32, i64)>>,
}

impl StartGate for Gate {
    fn open(&self, phase: usize, stop: &AtomicBool) -> Option<SystemTime> {
        let _ = self.tx.send(Ok(ev(event::Kind::Ready(proto::Ready { phase: phase as u32 }))));
        let go = self.go.lock().ok()?;
        while !stop.load(Ordering::Relaxed) {
            match go.recv_timeout(Duration::from_millis(20)) {
                Ok((p, at)) if p as usize == phase => return Some(from_unix_ns(at)),
                Ok(_) => {}
                Err(smpsc::RecvTimeoutError::Timeout) => {}
                Err(smpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
        None
    }
}

/// The run's sink: everything it hears goes to the coordinator as an event.
struct Forward {
    tx: mpsc::UnboundedSender<Result<Event, Status>>,
    /// The current phase's ramp: its measured work begins that long after its start.
    ramp: Duration,
    /// Each phase's measured start, agent clock.
    started: Vec<Option<i64>>,
    /// Key maps to send with the next phase_end.
    maps: Vec<proto::KeyMap>,
}

impl Forward {
    fn send(&self, kind: event::Kind) {
        let _ = self.tx.send(Ok(ev(kind)));
    }
    fn phase(&self, index: usize, r: &PhaseResult) -> proto::Phase {
        proto::Phase {
            phase: index as u32,
            result: Some(wire::pack(r)),
            started_unix_ns: self.started.get(index).copied().flatten().unwrap_or(0),
            keys: Vec::new(),
        }
    }
}

impl Sink for Forward {
    fn message(&mut self, text: &str) {
        self.send(event::Kind::Message(proto::Message { text: text.into() }));
    }
    fn phase_start(&mut self, _index: usize, phase: &iolab_spec::Phase, _expect: Expect) {
        self.ramp = phase.jobs.iter().map(|j| j.ramp).max().unwrap_or_default();
    }
    fn started(&mut self, index: usize, at: SystemTime) {
        if self.started.len() <= index {
            self.started.resize(index + 1, None);
        }
        let measured = unix_ns(at + self.ramp);
        self.started[index] = Some(measured);
        self.send(event::Kind::PhaseStart(proto::PhaseStart {
            phase: index as u32,
            started_unix_ns: measured,
            actual_unix_ns: unix_ns(at),
        }));
    }
    fn tick(&mut self, index: usize, point: &iolab_model::TimelinePoint, bytes: u64) {
        let point_json = serde_json::to_vec(point).unwrap_or_default();
        self.send(event::Kind::Tick(proto::Tick { phase: index as u32, point_json, bytes_so_far: bytes }));
    }
    fn correct(&mut self, index: usize, point: &iolab_model::TimelinePoint) {
        let point_json = serde_json::to_vec(point).unwrap_or_default();
        self.send(event::Kind::Correct(proto::Tick { phase: index as u32, point_json, bytes_so_far: 0 }));
    }
    fn sample(&mut self, index: usize, sample: &iolab_sysstat::Rates) {
        let rates_json = serde_json::to_vec(sample).unwrap_or_default();
        self.send(event::Kind::Sample(proto::Sample { phase: index as u32, rates_json }));
    }
    fn progress(&mut self, index: usize, so_far: &PhaseResult) {
        self.send(event::Kind::Progress(self.phase(index, so_far)));
    }
    fn key_maps(&mut self, _index: usize, maps: &[iolab_verify::HandedMap]) {
        self.maps = maps.iter().map(crate::cross::map_out).collect();
    }
    fn phase_end(&mut self, index: usize, result: &PhaseResult) {
        let mut p = self.phase(index, result);
        p.keys = std::mem::take(&mut self.maps);
        self.send(event::Kind::PhaseEnd(p));
    }
}
