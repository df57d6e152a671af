//! iolab-agent: the `Agent` service a node runs (`iolab agent`). It answers the handshake and
//! the clock, keeps traces it is sent for replay jobs ([`traces`]), and runs plans it is sent
//! ([`run`]), only under its `--allow` directories ([`allow`]), through the same `run_plan`
//! (and so every safety rule) as `iolab run`, its events forwarded as they come
//! ([`forward`]). It runs no command of any kind. A run stops when the coordinator says so,
//! when it hears nothing from it for the protocol's lease, or when the request stream ends.
//! It serves over any of the transports (iolab-cluster-transport) and knows nothing of the
//! coordinator.

#![forbid(unsafe_code)]

pub mod allow;
mod forward;
mod run;
pub mod tap;
pub mod traces;

pub use allow::Allow;
pub use tap::{Tap, Tapped};

use crate::traces::{TraceCache, TraceError};
use iolab_cluster_protocol::proto::{self, agent_server, Control, Event};
use iolab_cluster_protocol::{unix_ns, MAX_MESSAGE, PROTOCOL_VERSION};
use iolab_cluster_transport::log;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// The service. Cheap to clone: one per transport.
#[derive(Clone)]
pub struct AgentService {
    allow: Arc<Allow>,
    /// Where traces sent for replay jobs are kept (none: replay jobs are refused).
    traces: Option<Arc<TraceCache>>,
    /// An agent that joined its coordinator: its rank and its proof of the token.
    joined: Option<(u32, Vec<u8>)>,
    /// What listens to every run beside the coordinator (`--metrics-listen`).
    tap: Option<Arc<dyn Tap>>,
}

impl AgentService {
    pub fn new(allow: Allow) -> AgentService {
        AgentService { allow: Arc::new(allow), traces: None, joined: None, tap: None }
    }

    /// The service of an agent that joined its coordinator (one connection): the handshake
    /// answers with its rank and its proof of the token (`iolab_cluster_transport::join`).
    pub fn joined(mut self, rank: u32, proof: Vec<u8>) -> AgentService {
        self.joined = Some((rank, proof));
        self
    }

    /// Let `tap` hear every run's events beside the coordinator.
    pub fn with_tap(mut self, tap: Arc<dyn Tap>) -> AgentService {
        self.tap = Some(tap);
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

    /// The gRPC server of this service, for a transport to serve.
    pub fn server(self) -> agent_server::AgentServer<AgentService> {
        agent_server::AgentServer::new(self).max_decoding_message_size(MAX_MESSAGE)
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
        run::run(&self.allow, self.traces.as_deref(), self.tap.clone(), req.into_inner()).await.map(Response::new)
    }
}

fn refuse_trace(e: TraceError) -> Status {
    log(&format!("refused a trace: {e}"));
    Status::invalid_argument(e.to_string())
}
