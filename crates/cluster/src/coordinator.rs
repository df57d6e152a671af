//! The coordinator: connects every node, checks versions and clock offsets, then runs a plan
//! on all of them: each phase starts on every node at one instant, after every node reported
//! its phase ready (files laid out, engines built). It hands each node's seconds and progress
//! to an [`Observer`] as they come, heartbeats every agent (their lease), stops everyone when
//! a node is lost or the stop flag is set, and merges what the nodes measured into one
//! aggregate phase per phase (histograms merged, the common window from first start to last
//! end). Nothing here draws on a terminal.

use crate::agent::{unix_ns, PROTOCOL_VERSION};
use crate::connect::{self, Addr};
use crate::proto::{self, agent_client::AgentClient, control, event, Control};
use crate::wire;
use iolab_model::class::OpClass;
use iolab_model::{ClassAcc, NodeInfo, NodeResult, PhaseResult, RunResult, Status, TimelinePoint, Totals};
use iolab_spec::{Plan, Workload};
use iolab_verify::HandedMap;
use iolab_workload::layout::RunMark;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// Past this clock offset a run warns; past [`CLOCK_REFUSE`] it refuses (unless told not to).
pub const CLOCK_WARN: Duration = Duration::from_millis(50);
pub const CLOCK_REFUSE: Duration = Duration::from_secs(1);
/// A node silent this long while running is lost.
pub const SILENCE: Duration = Duration::from_millis(4500);
/// Clock samples per node; the one with the least round trip counts.
const CLOCK_SAMPLES: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("--node `{0}`: {1}")]
    NodeArg(String, String),
    #[error("{path}: {msg}")]
    NodesFile { path: PathBuf, msg: String },
    #[error("node `{node}` ({addr}): {msg}")]
    Node { node: String, addr: String, msg: String },
    #[error("node `{node}`: its clock is {offset_ms:.0} ms off this machine's (more than 1 s); sync the clocks (chrony, ntpd) or pass --ignore-clock")]
    Clock { node: String, offset_ms: f64 },
    #[error("two nodes are named `{0}`; each --node needs its own name")]
    Duplicate(String),
    #[error("starting the coordinator's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("{0}")]
    Join(String),
}

/// One node as the user named it: `NAME=ADDR[,dir=PATH]`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(deserialize_with = "de_addr")]
    pub addr: Addr,
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

fn de_addr<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Addr, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    Addr::parse(&s).map_err(serde::de::Error::custom)
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n != "*" && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl NodeSpec {
    /// Parse `NAME=ADDR[,dir=PATH]`.
    pub fn parse(s: &str) -> Result<NodeSpec, ClusterError> {
        let err = |m: &str| ClusterError::NodeArg(s.into(), m.into());
        let (name, rest) = s.split_once('=').ok_or_else(|| err("expected NAME=ADDR[,dir=PATH]"))?;
        if !valid_name(name) {
            return Err(err("a node's name is letters, digits, `-`, `_` and `.`"));
        }
        let (addr, opts) = match rest.split_once(",dir=") {
            Some((a, d)) => (a, Some(d)),
            None => (rest, None),
        };
        let addr = Addr::parse(addr).map_err(|m| err(&m))?;
        let dir = match opts {
            Some("") => return Err(err("dir= needs a path")),
            Some(d) => Some(PathBuf::from(d)),
            None => None,
        };
        Ok(NodeSpec { name: name.into(), addr, dir })
    }

    /// Parse a nodes file: `[[node]]` tables with `name`, `addr` and optionally `dir`.
    pub fn parse_file(path: &Path, text: &str) -> Result<Vec<NodeSpec>, ClusterError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            node: Vec<NodeSpec>,
        }
        let f: File =
            toml::from_str(text).map_err(|e| ClusterError::NodesFile { path: path.into(), msg: e.to_string() })?;
        for n in &f.node {
            if !valid_name(&n.name) {
                let msg = format!("node name `{}`: letters, digits, `-`, `_` and `.` only", n.name);
                return Err(ClusterError::NodesFile { path: path.into(), msg });
            }
        }
        Ok(f.node)
    }

    /// The plan as this node runs it: relative targets joined to its `dir`.
    pub fn localize(&self, plan: &Plan) -> Plan {
        let mut p = plan.clone();
        for j in p.phases.iter_mut().flat_map(|ph| ph.jobs.iter_mut()) {
            j.target = self.localize_path(&j.target);
            // Validated files are named by their path below the node's dir, so a file every
            // node sees (a share mounted at another path on each) has one id on all of them.
            if let (Some(v), Some(dir)) = (j.verify.as_mut(), &self.dir) {
                v.id_root = Some(dir.clone());
            }
        }
        p
    }

    /// A path as this node reaches it: a relative one joined to its `dir`.
    pub fn localize_path(&self, path: &Path) -> PathBuf {
        match &self.dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }
}

/// What one node does in a run: its plan, and the directories to make first (relative ones
/// under its `dir`), within a run of its own mark (a scenario passes the same mark to every
/// step, so a later step may write the files an earlier one created: `layout::RunMark`).
#[derive(Debug, Clone)]
pub struct Work {
    pub plan: Plan,
    pub mkdirs: Vec<PathBuf>,
    pub run_mark: RunMark,
    /// Key maps handed to the node with its run (`--verify-on other`: [`crate::cross`]).
    pub keys: Vec<HandedMap>,
}

/// How the coordinator behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run even with clocks more than 1 s apart.
    pub ignore_clock: bool,
    /// System sampling beside each phase, on every node.
    pub sample_interval: Option<Duration>,
    /// The shared token HOST:PORT agents want.
    pub token: Option<String>,
    /// Where HOST:PORT agents' certificate fingerprints are remembered (trust on first use).
    pub known_agents: Option<PathBuf>,
    /// Check HOST:PORT agents' certificates against these CA certificates instead of pinning.
    pub ca: Option<PathBuf>,
    /// Where `join:RANK` nodes connect to (`iolab agent --join`), HOST:PORT.
    pub listen: Option<String>,
    /// How long to wait for every `join:RANK` node.
    pub join_patience: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ignore_clock: false,
            sample_interval: None,
            token: None,
            known_agents: None,
            ca: None,
            listen: None,
            join_patience: Duration::from_secs(120),
        }
    }
}

/// Puts the token on every request (HOST:PORT agents check it; stdio agents ignore it).
#[derive(Clone)]
pub struct Token(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Token {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

type Client = AgentClient<tonic::service::interceptor::InterceptedService<Channel, Token>>;

/// What happens on the nodes, as it happens (the CLI shows and saves it).
pub trait Observer {
    fn message(&mut self, _node: &str, _text: &str) {}
    fn tick(&mut self, _node: &str, _phase: usize, _point: &TimelinePoint, _bytes: u64) {}
    fn correct(&mut self, _node: &str, _phase: usize, _point: &TimelinePoint) {}
    fn sample(&mut self, _node: &str, _phase: usize, _rates: &iolab_sysstat::Rates) {}
    fn progress(&mut self, _node: &str, _phase: usize, _so_far: &PhaseResult) {}
    fn phase_end(&mut self, _node: &str, _phase: usize, _result: &PhaseResult) {}
}

struct Conn {
    spec: NodeSpec,
    client: Client,
    info: NodeInfo,
    child: Option<tokio::process::Child>,
}

/// Connected nodes, ready to run plans.
pub struct Cluster {
    rt: tokio::runtime::Runtime,
    conns: Vec<Conn>,
    opts: Options,
}

/// A run on several nodes: each node's own, and the aggregate.
#[derive(Debug, Clone)]
pub struct ClusterResult {
    /// Per node, in `--node` order: its phases (with their timelines) as it measured them.
    pub nodes: Vec<RunResult>,
    /// The merged run: aggregate phases with `jobs[].node` and `nodes[]`, top-level `nodes`.
    pub aggregate: RunResult,
    /// Per node, as `nodes`: the key maps it handed over at its phases' ends (the latest of
    /// each file; `--verify-on other`), checked on arrival.
    pub key_maps: Vec<Vec<HandedMap>>,
}

impl Cluster {
    /// Connect every node at once, shake hands and measure clocks. `warn` hears warnings.
    pub fn connect(specs: &[NodeSpec], opts: Options, warn: &mut dyn FnMut(&str)) -> Result<Cluster, ClusterError> {
        let mut names = std::collections::HashSet::new();
        for s in specs {
            if !names.insert(&s.name) {
                return Err(ClusterError::Duplicate(s.name.clone()));
            }
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let joining: Vec<NodeSpec> = specs.iter().filter(|s| matches!(s.addr, Addr::Join(_))).cloned().collect();
        let conns = rt.block_on(async {
            let tasks: Vec<_> = specs
                .iter()
                .filter(|s| !matches!(s.addr, Addr::Join(_)))
                .cloned()
                .map(|s| tokio::spawn(connect_one(s, opts.clone())))
                .collect();
            let joins = (!joining.is_empty()).then(|| tokio::spawn(accept_joins(joining, opts.clone())));
            let mut out = Vec::new();
            for (t, s) in tasks.into_iter().zip(specs.iter().filter(|s| !matches!(s.addr, Addr::Join(_)))) {
                let r = t.await.map_err(|e| node_err(s, format!("connecting: {e}")))?;
                out.push(r?);
            }
            if let Some(j) = joins {
                out.extend(j.await.map_err(|e| ClusterError::Join(format!("waiting for agents to join: {e}")))??);
            }
            // In the order the nodes were given.
            out.sort_by_key(|c| specs.iter().position(|s| s.name == c.spec.name));
            Ok::<_, ClusterError>(out)
        })?;
        for c in &conns {
            let off = Duration::from_nanos(c.info.clock_offset_ns.unsigned_abs());
            if off > CLOCK_REFUSE && !opts.ignore_clock {
                return Err(ClusterError::Clock { node: c.spec.name.clone(), offset_ms: off.as_secs_f64() * 1e3 });
            }
            if off > CLOCK_WARN {
                warn(&format!(
                    "node `{}`: its clock is {:.0} ms off this machine's; start times are corrected for it",
                    c.spec.name,
                    off.as_secs_f64() * 1e3
                ));
            }
        }
        Ok(Cluster { rt, conns, opts })
    }

    /// The nodes as connected: addresses, host names, clock offsets.
    pub fn infos(&self) -> Vec<NodeInfo> {
        self.conns.iter().map(|c| c.info.clone()).collect()
    }

    /// Run `plan` on every node at once; a lost node stops the others and its failure is kept
    /// with what was measured. Setting `stop` stops every agent.
    pub fn run(&mut self, plan: &Plan, stop: Arc<AtomicBool>, obs: &mut dyn Observer) -> ClusterResult {
        let work =
            vec![
                Some(Work { plan: plan.clone(), mkdirs: Vec::new(), run_mark: RunMark::new(), keys: Vec::new() });
                self.conns.len()
            ];
        self.run_each(plan, &work, stop, obs)
    }

    /// Run one plan per node at once (`None`: the node sits this one out), each node's phase i
    /// starting at one instant with the others'. `plan` names the run as a whole (the
    /// aggregate's `plan`); the per-node plans must have as many phases. Results come in node
    /// order, for the nodes that took part.
    pub fn run_each(
        &mut self,
        plan: &Plan,
        plans: &[Option<Work>],
        stop: Arc<AtomicBool>,
        obs: &mut dyn Observer,
    ) -> ClusterResult {
        let started_unix_s = iolab_model::now_unix_s();
        let opts = &self.opts;
        let mut taking: Vec<(&mut Conn, &Work)> =
            self.conns.iter_mut().zip(plans).filter_map(|(c, p)| p.as_ref().map(|p| (c, p))).collect();
        let infos: Vec<NodeInfo> = taking.iter().map(|(c, _)| c.info.clone()).collect();
        let mut states = self.rt.block_on(drive(&mut taking, opts, &stop, obs));
        let aggregate = aggregate(plan, &infos, &mut states, started_unix_s, stop.load(Ordering::Relaxed));
        let key_maps = states.iter_mut().map(|s| std::mem::take(&mut s.maps)).collect();
        let nodes = states.into_iter().map(|s| s.result).collect();
        ClusterResult { nodes, aggregate, key_maps }
    }
}

/// How long agent processes (or the ssh running one) get to end once asked to (SIGTERM: a
/// stdio agent then removes the traces it was sent) before they are killed.
const AGENT_EXIT: Duration = Duration::from_secs(2);

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut children: Vec<tokio::process::Child> = self.conns.iter_mut().filter_map(|c| c.child.take()).collect();
        self.conns.clear();
        for c in &children {
            if let Some(pid) = c.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + AGENT_EXIT;
            for c in &mut children {
                if tokio::time::timeout_at(deadline, c.wait()).await.is_err() {
                    let _ = c.start_kill();
                }
            }
        });
    }
}

fn node_err(s: &NodeSpec, msg: String) -> ClusterError {
    ClusterError::Node { node: s.name.clone(), addr: s.addr.to_string(), msg }
}

/// Why a connection failed, and why bringing this iolab to the node would help (an ssh node
/// without iolab, or with another version), if it would.
struct Failed {
    err: ClusterError,
    bring: Option<String>,
}

impl From<ClusterError> for Failed {
    fn from(err: ClusterError) -> Failed {
        Failed { err, bring: None }
    }
}

async fn connect_one(spec: NodeSpec, opts: Options) -> Result<Conn, ClusterError> {
    match &spec.addr {
        Addr::Ssh(dest) => match try_connect(&spec, &opts, None).await {
            Ok(c) => Ok(c),
            Err(Failed { bring: Some(why), .. }) => {
                // No iolab there, or another version: bring ours, and say so. A login that
                // failed, or anything else, is reported as it is and nothing is copied.
                let path = connect::remote_copy_path();
                eprintln!(
                    "iolab: node `{}`: {why}; copying this iolab ({}, {}) to {dest}:{path}",
                    spec.name,
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::ARCH
                );
                let path = connect::copy_self(dest).await.map_err(|e| node_err(&spec, e.to_string()))?;
                try_connect(&spec, &opts, Some(&path)).await.map_err(|f| f.err)
            }
            Err(f) => Err(f.err),
        },
        _ => try_connect(&spec, &opts, None).await.map_err(|f| f.err),
    }
}

/// How an agent's child process (or the ssh that runs it) ended, waiting a little for it.
async fn exit_code(child: &mut Option<tokio::process::Child>) -> Option<i32> {
    let c = child.as_mut()?;
    match tokio::time::timeout(Duration::from_secs(3), c.wait()).await {
        Ok(Ok(st)) => st.code(),
        _ => None,
    }
}

/// A failed handshake with an agent started over ssh or exec: what its exit says.
async fn handshake_failed(spec: &NodeSpec, child: &mut Option<tokio::process::Child>, msg: String) -> Failed {
    let ssh = matches!(spec.addr, Addr::Ssh(_));
    match exit_code(child).await {
        Some(127) if ssh => Failed {
            err: node_err(spec, format!("{msg}: no iolab on the node's PATH")),
            bring: Some("no iolab on the node's PATH (exit 127)".into()),
        },
        Some(126) if ssh => Failed {
            err: node_err(spec, format!("{msg}: the node's iolab does not run")),
            bring: Some("the node's iolab cannot be run (exit 126)".into()),
        },
        Some(255) if ssh => node_err(
            spec,
            "ssh failed (exit 255: the login was refused or the host is unreachable; ssh's own message is above). \
             Check `ssh HOST true` works without a password (keys, ~/.ssh/config); nothing was copied"
                .into(),
        )
        .into(),
        Some(code) => node_err(spec, format!("{msg}; the agent exited with status {code}")).into(),
        None => node_err(spec, msg).into(),
    }
}

async fn try_connect(spec: &NodeSpec, opts: &Options, remote_bin: Option<&str>) -> Result<Conn, Failed> {
    let spec = spec.clone();
    let (channel, mut child) = match &spec.addr {
        Addr::Exec(_) | Addr::Ssh(_) => {
            // The node's dir= is the agent's --allow there: the only place it does I/O.
            let Some(allow) = spec.dir.clone() else {
                return Err(node_err(
                    &spec,
                    "an ssh:// or exec:// node needs dir=PATH (NAME=ADDR,dir=PATH): the agent there does I/O only under it"
                        .into(),
                )
                .into());
            };
            let cmd = connect::agent_command(&spec.addr, &allow, remote_bin)
                .ok_or_else(|| node_err(&spec, "no command for this address".into()))?;
            let (ch, child) =
                connect::over_child(cmd).await.map_err(|e| node_err(&spec, format!("starting the agent: {e}")))?;
            (ch, Some(child))
        }
        Addr::Tcp(addr) => (tls_channel(&spec, addr, opts).await?, None),
        Addr::Join(_) => return Err(node_err(&spec, "a joining node is not dialled".into()).into()),
    };
    let token = match &opts.token {
        Some(t) => Some(
            format!("Bearer {t}").parse().map_err(|_| node_err(&spec, "the token is not printable ASCII".into()))?,
        ),
        None => None,
    };
    let mut client = new_client(channel, token);
    let hello = match client
        .hello(proto::HelloRequest {
            protocol_version: PROTOCOL_VERSION,
            iolab_version: env!("CARGO_PKG_VERSION").into(),
        })
        .await
    {
        Ok(h) => h.into_inner(),
        Err(e) if e.code() == tonic::Code::FailedPrecondition && matches!(spec.addr, Addr::Ssh(_)) => {
            return Err(Failed {
                err: node_err(&spec, format!("handshake: {}", e.message())),
                bring: Some(format!("the node's iolab speaks another protocol ({})", e.message())),
            })
        }
        Err(e) => return Err(handshake_failed(&spec, &mut child, format!("handshake: {}", e.message())).await),
    };
    if matches!(spec.addr, Addr::Ssh(_)) && hello.iolab_version != env!("CARGO_PKG_VERSION") {
        let msg = format!("the node runs iolab {}, this is {}", hello.iolab_version, env!("CARGO_PKG_VERSION"));
        return Err(Failed { err: node_err(&spec, msg.clone()), bring: Some(msg) });
    }
    Ok(measure(spec, client, hello, child).await?)
}

fn new_client(channel: Channel, header: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>) -> Client {
    AgentClient::with_interceptor(channel, Token(header)).max_decoding_message_size(64 << 20)
}

/// A connected node's clock, measured: the sample with the least round trip counts.
async fn measure(
    spec: NodeSpec,
    mut client: Client,
    hello: proto::HelloReply,
    child: Option<tokio::process::Child>,
) -> Result<Conn, ClusterError> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_SAMPLES {
        let t0 = SystemTime::now();
        let i0 = Instant::now();
        let r = client.clock(proto::Empty {}).await.map_err(|e| node_err(&spec, format!("clock: {}", e.message())))?;
        let rtt = i0.elapsed();
        let mid = unix_ns(t0) + (rtt.as_nanos() / 2) as i64;
        let Some(offset) = r.into_inner().unix_ns.checked_sub(mid) else {
            return Err(node_err(&spec, "its clock answered a time out of range".into()));
        };
        let rtt = rtt.as_nanos() as u64;
        if best.is_none_or(|(b, _)| rtt < b) {
            best = Some((rtt, offset));
        }
    }
    let (rtt_ns, clock_offset_ns) = best.unwrap_or_default();
    let info = NodeInfo {
        name: spec.name.clone(),
        address: spec.addr.to_string(),
        hostname: hello.hostname,
        iolab_version: hello.iolab_version,
        clock_offset_ns,
        rtt_ns,
        dir: spec.dir.as_ref().map(|d| d.display().to_string()),
    };
    Ok(Conn { spec, client, info, child })
}

/// Wait for every `join:RANK` node to connect to `--listen` (within the patience), each
/// proving it holds the token on its own connection; a joiner of a rank not wanted, or twice,
/// or without the proof, is turned away and the wait goes on.
async fn accept_joins(mut wanted: Vec<NodeSpec>, opts: Options) -> Result<Vec<Conn>, ClusterError> {
    let Some(listen) = opts.listen.clone() else {
        return Err(ClusterError::Join(format!(
            "node `{}` joins (join:RANK): give --listen HOST:PORT for agents to join at",
            wanted[0].name
        )));
    };
    let Some(token) = opts.token.clone() else {
        return Err(ClusterError::Join("agents that join need the shared token: give --token-file".into()));
    };
    let rv = crate::join::Rendezvous::bind(&listen, &token)
        .await
        .map_err(|e| ClusterError::Join(format!("listening on {listen} for agents to join: {e}")))?;
    eprintln!(
        "iolab: waiting for {} agent(s) to join on {} (iolab agent --join ADDR --token-file FILE --allow DIR)",
        wanted.len(),
        rv.local_addr()
    );
    let deadline = tokio::time::Instant::now() + opts.join_patience;
    let mut out = Vec::new();
    while !wanted.is_empty() {
        let j = match tokio::time::timeout_at(deadline, rv.next(Duration::from_secs(10))).await {
            Ok(Ok(j)) => j,
            Ok(Err(e)) => return Err(ClusterError::Join(format!("accepting agents on {listen}: {e}"))),
            Err(_) => {
                let missing: Vec<String> = wanted.iter().map(|s| format!("{} ({})", s.name, s.addr)).collect();
                return Err(ClusterError::Join(format!(
                    "waited {} s on {} for agents to join; still missing: {}",
                    opts.join_patience.as_secs(),
                    rv.local_addr(),
                    missing.join(", ")
                )));
            }
        };
        let header = j.header.parse().ok();
        let mut client = new_client(j.channel.clone(), header);
        let hello = tokio::time::timeout(
            Duration::from_secs(10),
            client.hello(proto::HelloRequest {
                protocol_version: PROTOCOL_VERSION,
                iolab_version: env!("CARGO_PKG_VERSION").into(),
            }),
        )
        .await;
        let hello = match hello {
            Ok(Ok(h)) => h.into_inner(),
            Ok(Err(e)) => {
                eprintln!("iolab: turned away a joiner at {}: {}", j.peer, e.message());
                continue;
            }
            Err(_) => {
                eprintln!("iolab: turned away a joiner at {}: no handshake within 10 s", j.peer);
                continue;
            }
        };
        if !rv.proven(&j, &hello) {
            eprintln!("iolab: turned away a joiner at {}: it did not prove it holds the token", j.peer);
            continue;
        }
        let Some(at) = wanted.iter().position(|s| s.addr == Addr::Join(hello.rank)) else {
            eprintln!("iolab: turned away a joiner at {}: rank {} is not wanted or already joined", j.peer, hello.rank);
            continue;
        };
        let mut spec = wanted.remove(at);
        // Without dir=, a joined agent's relative targets go under its one --allow directory.
        if spec.dir.is_none() && hello.allow.len() == 1 {
            spec.dir = Some(PathBuf::from(&hello.allow[0]));
        }
        out.push(measure(spec, client, hello, None).await?);
    }
    Ok(out)
}

/// A TLS channel to an agent daemon, its certificate pinned (remembered on first use).
async fn tls_channel(spec: &NodeSpec, addr: &str, opts: &Options) -> Result<Channel, ClusterError> {
    if opts.token.is_none() {
        return Err(node_err(
            spec,
            "a HOST:PORT agent wants its token: give --token-file (or IOLAB_TOKEN_FILE)".into(),
        ));
    }
    if let Some(ca) = &opts.ca {
        let v = crate::tls::ca_verifier(ca).map_err(|e| node_err(spec, e.to_string()))?;
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        return crate::tls::connect(addr, host, v).await.map_err(|e| node_err(spec, format!("TLS connection: {e}")));
    }
    let known = opts.known_agents.clone().map(|path| crate::tls::KnownAgents { path });
    let expect = known.as_ref().and_then(|k| k.get(addr));
    let pin = Arc::new(crate::tls::CertPin::new(expect.clone()));
    let ch = crate::tls::connect(addr, crate::tls::CERT_NAME, pin.clone()).await;
    let seen = pin.seen.lock().ok().and_then(|s| s.clone());
    match (&expect, &seen) {
        (Some(want), Some(got)) if want != got => {
            let file = known.as_ref().map(|k| k.path.display().to_string()).unwrap_or_default();
            return Err(node_err(
                spec,
                format!(
                    "the agent's certificate changed: {got}, but {want} was pinned. If the agent was \
                     reinstalled (check the fingerprint it prints at start), remove the line `{addr} {want}` from {file}"
                ),
            ));
        }
        _ => {}
    }
    let ch = ch.map_err(|e| node_err(spec, format!("TLS connection: {e}")))?;
    if let (None, Some(got), Some(k)) = (&expect, &seen, &known) {
        k.add(addr, got)
            .map_err(|e| node_err(spec, format!("remembering its fingerprint in {}: {e}", k.path.display())))?;
    }
    Ok(ch)
}

/// The most seconds a node's timeline may hold in one phase (11 days): more is a broken agent.
const MAX_TIMELINE: usize = 1_000_000;
/// The longest a node may say a phase ran, in seconds (a year): more is a broken agent.
const MAX_ELAPSED_S: f64 = 365.0 * 86_400.0;

/// One node's run as the coordinator follows it. Everything an agent sends is checked against
/// its plan before it is used: a phase the plan does not have, a time that overflows or a
/// figure out of range makes the node failed, with a message that says what it sent.
struct NodeState {
    name: String,
    offset_ns: i64,
    tx: Option<mpsc::UnboundedSender<Control>>,
    /// Phases of the node's plan: every event must name one of them.
    phases: usize,
    ready: Option<usize>,
    done: bool,
    last_heard: Instant,
    /// Per phase: when its measured work began, on the node's own clock (ns).
    started: Vec<Option<i64>>,
    /// Per phase: when its clock began and its workers were released, node clock (ns).
    actual: Vec<Option<i64>>,
    /// Per phase: the instant it was told to start at, on the node's own clock (ns).
    scheduled: Vec<Option<i64>>,
    timelines: Vec<BTreeMap<u64, TimelinePoint>>,
    /// Per phase: the node's latest progress (its phase as it stood), kept for a node lost
    /// before it sent the phase's end: what it measured until then.
    so_far: Vec<Option<PhaseResult>>,
    /// Key maps the node handed over at its phases' ends, the latest of each file.
    maps: Vec<HandedMap>,
    result: RunResult,
}

impl NodeState {
    fn new(name: String, offset_ns: i64, phases: usize, result: RunResult) -> NodeState {
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
            result,
        }
    }
    fn send(&self, kind: control::Kind) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Control { kind: Some(kind) });
        }
    }
    fn fail(&mut self, msg: String) {
        if !self.done {
            self.done = true;
            self.result.status = Status::Failed;
            self.result.error = Some(msg);
            self.tx = None;
        }
    }
    /// A message that makes no sense: the node is failed, saying what it sent.
    fn invalid(&mut self, what: String) {
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
    fn local(&self, node_ns: i64) -> Option<i64> {
        node_ns.checked_sub(self.offset_ns)
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

enum Incoming {
    Event(usize, proto::Event),
    Lost(usize, String),
}

async fn drive(
    conns: &mut [(&mut Conn, &Work)],
    opts: &Options,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Vec<NodeState> {
    let (in_tx, mut in_rx) = mpsc::unbounded_channel::<Incoming>();
    let mut states = Vec::new();
    let mut traces = HashMap::new();
    for (n, (c, work)) in conns.iter_mut().enumerate() {
        let local = c.spec.localize(&work.plan);
        let mkdirs = work.mkdirs.iter().map(|d| c.spec.localize_path(d).display().to_string()).collect();
        let (tx, rx) = mpsc::unbounded_channel::<Control>();
        let start = proto::Start {
            plan_json: serde_json::to_vec(&local).unwrap_or_default(),
            sample_interval_ns: opts.sample_interval.map_or(0, |d| d.as_nanos() as u64),
            node: c.spec.name.clone(),
            mkdirs,
            run_mark: work.run_mark.as_str().to_string(),
            keys: work.keys.iter().map(crate::cross::map_out).collect(),
        };
        let _ = tx.send(Control { kind: Some(control::Kind::Start(start)) });
        let phases = local.phases.len();
        let mut st = NodeState::new(
            c.spec.name.clone(),
            c.info.clock_offset_ns,
            phases,
            RunResult {
                schema_version: iolab_model::results::SCHEMA_VERSION,
                iolab_version: c.info.iolab_version.clone(),
                node: c.spec.name.clone(),
                status: Status::Running,
                plan: local,
                ..empty_run()
            },
        );
        st.tx = Some(tx);
        if let Err(e) = ship_traces(&mut c.client, &st.result.plan, &mut traces).await {
            st.fail(format!("node `{}`: {e}", c.spec.name));
            states.push(st);
            continue;
        }
        match c.client.run(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await {
            Ok(resp) => {
                let mut stream = resp.into_inner();
                let in_tx = in_tx.clone();
                tokio::spawn(async move {
                    loop {
                        match stream.message().await {
                            Ok(Some(e)) => {
                                if in_tx.send(Incoming::Event(n, e)).is_err() {
                                    return;
                                }
                            }
                            Ok(None) => {
                                let _ = in_tx.send(Incoming::Lost(n, "its stream ended".into()));
                                return;
                            }
                            Err(e) => {
                                let _ = in_tx.send(Incoming::Lost(n, e.message().to_string()));
                                return;
                            }
                        }
                    }
                });
            }
            Err(e) => st.fail(format!("node `{}`: {}", c.spec.name, e.message())),
        }
        states.push(st);
    }
    drop(in_tx);
    let max_rtt = conns.iter().map(|(c, _)| c.info.rtt_ns).max().unwrap_or(0);
    let mut phase = 0usize;
    let mut stopping = false;
    let mut heartbeat = tokio::time::interval(crate::agent::BEAT);
    let mut poll = tokio::time::interval(Duration::from_millis(50));
    // A refusal or failure before any phase started stops everyone at once.
    let stop_all = |states: &mut [NodeState]| {
        for s in states.iter() {
            s.send(control::Kind::Stop(proto::Stop {}));
        }
    };
    if states.iter().any(|s| s.done) {
        stop_all(&mut states);
        stopping = true;
    }
    while states.iter().any(|s| !s.done) {
        tokio::select! {
            m = in_rx.recv() => match m {
                Some(Incoming::Event(n, e)) => {
                    states[n].last_heard = Instant::now();
                    if let Some(kind) = e.kind {
                        on_event(&mut states[n], kind, phase, obs);
                    }
                    if states[n].done && states[n].result.status == Status::Failed && !stopping {
                        stop_all(&mut states);
                        stopping = true;
                    }
                }
                Some(Incoming::Lost(n, why)) => {
                    if !states[n].done {
                        let name = states[n].name.clone();
                        states[n].fail(format!("node `{name}` lost: {why}"));
                        obs.message(&name, &format!("lost: {why}; stopping the other nodes"));
                        if !stopping {
                            stop_all(&mut states);
                            stopping = true;
                        }
                    }
                }
                None => break,
            },
            _ = heartbeat.tick() => {
                for s in &states {
                    s.send(control::Kind::Heartbeat(proto::Heartbeat {}));
                }
            }
            _ = poll.tick() => {
                for n in 0..states.len() {
                    if !states[n].done && states[n].last_heard.elapsed() > SILENCE {
                        let name = states[n].name.clone();
                        let secs = SILENCE.as_secs_f64();
                        states[n].fail(format!("node `{name}` lost: nothing heard for {secs} s"));
                        obs.message(&name, &format!("silent for {secs} s; stopping the other nodes"));
                        if !stopping {
                            stop_all(&mut states);
                            stopping = true;
                        }
                    }
                }
                if stop.load(Ordering::Relaxed) && !stopping {
                    stop_all(&mut states);
                    stopping = true;
                }
            }
        }
        // The barrier: once every live node is ready for this phase, one start for all.
        let live: Vec<usize> = (0..states.len()).filter(|&n| !states[n].done).collect();
        if !stopping && !live.is_empty() && live.iter().all(|&n| states[n].ready == Some(phase)) {
            // Early enough that every node holds its Go before the instant: twice the worst
            // round trip, 50 ms, and a millisecond for each node beyond 8 (the Go messages go
            // out one after another; 64 agents on a loaded machine take their turns to read).
            let extra = Duration::from_millis(live.len().saturating_sub(8) as u64);
            let lead = Duration::from_nanos(max_rtt.saturating_mul(2)) + Duration::from_millis(50) + extra;
            let at = unix_ns(SystemTime::now() + lead);
            for &n in &live {
                let s = &mut states[n];
                // The instant on the node's clock; the skew is measured there too.
                match at.checked_add(s.offset_ns) {
                    Some(node_at) if phase < s.phases => {
                        s.scheduled[phase] = Some(node_at);
                        s.send(control::Kind::Go(proto::Go { phase: phase as u32, at_unix_ns: node_at }));
                    }
                    _ => s.invalid(format!("a clock offset of {} ns", s.offset_ns)),
                }
            }
            phase += 1;
        }
    }
    // Let the agents go: dropping the senders ends their request streams.
    for s in &mut states {
        s.tx = None;
    }
    states
}

/// The size of the pieces a trace travels in.
const TRACE_CHUNK: usize = 1 << 20;

/// Send a node the trace of each replay job of its plan (the agent runs a replay only from a
/// trace it was sent). Each trace is read once, and must still be the file that was planned.
async fn ship_traces(
    client: &mut Client,
    plan: &Plan,
    read: &mut HashMap<PathBuf, Arc<Vec<u8>>>,
) -> Result<(), String> {
    let mut sent = std::collections::HashSet::new();
    for job in plan.phases.iter().flat_map(|p| &p.jobs) {
        let Workload::Replay(r) = &job.workload else { continue };
        if !sent.insert((r.trace_bytes, r.trace_crc32)) {
            continue;
        }
        let bytes = match read.get(&r.trace) {
            Some(b) => b.clone(),
            None => {
                let b = tokio::fs::read(&r.trace)
                    .await
                    .map_err(|e| format!("reading the trace {}: {e}", r.trace.display()))?;
                let mut crc = flate2::Crc::new();
                crc.update(&b);
                if (b.len() as u64, crc.sum()) != (r.trace_bytes, r.trace_crc32) {
                    return Err(format!("the trace {} changed since the replay was planned", r.trace.display()));
                }
                let b = Arc::new(b);
                read.insert(r.trace.clone(), b.clone());
                b
            }
        };
        let (total, crc32) = (r.trace_bytes, r.trace_crc32);
        let n = bytes.len().div_ceil(TRACE_CHUNK).max(1);
        let chunks = (0..n).map(move |i| {
            let end = ((i + 1) * TRACE_CHUNK).min(bytes.len());
            proto::TraceChunk { total_bytes: total, crc32, data: bytes[i * TRACE_CHUNK..end].to_vec() }
        });
        client
            .put_trace(tokio_stream::iter(chunks))
            .await
            .map_err(|e| format!("sending the trace {}: {}", r.trace.display(), e.message()))?;
    }
    Ok(())
}

/// One event of a node, checked against its plan; `next` is the phase the barrier waits for.
fn on_event(st: &mut NodeState, kind: event::Kind, next: usize, obs: &mut dyn Observer) {
    let name = st.name.clone();
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
        event::Kind::Tick(t) | event::Kind::Correct(t) => {
            let Some(i) = st.phase(t.phase) else { return };
            if let Ok(point) = serde_json::from_slice::<TimelinePoint>(&t.point_json) {
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
                    obs.tick(&name, i, &point, t.bytes_so_far);
                } else {
                    obs.correct(&name, i, &point);
                }
            }
        }
        event::Kind::Sample(s) => {
            let Some(i) = st.phase(s.phase) else { return };
            if let Ok(r) = serde_json::from_slice::<iolab_sysstat::Rates>(&s.rates_json) {
                obs.sample(&name, i, &r);
            }
        }
        event::Kind::Progress(p) => {
            let Some(i) = st.phase(p.phase) else { return };
            if let Some(Ok(r)) = p.result.as_ref().map(wire::unpack) {
                if st.sane(&r) {
                    obs.progress(&name, i, &r);
                    st.so_far[i] = Some(r);
                }
            }
        }
        event::Kind::PhaseEnd(p) => {
            let Some(i) = st.phase(p.phase) else { return };
            match p.result.as_ref().map(wire::unpack) {
                Some(Ok(mut r)) => {
                    if !st.sane(&r) {
                        return;
                    }
                    if st.started[i].is_none() && p.started_unix_ns > 0 {
                        if st.local(p.started_unix_ns).is_none() {
                            return st.invalid(format!("a start at {} ns", p.started_unix_ns));
                        }
                        st.started[i] = Some(p.started_unix_ns);
                    }
                    match crate::cross::maps_in(&p.keys) {
                        Ok(maps) => {
                            for m in maps {
                                st.maps.retain(|h| h.file_id != m.file_id);
                                st.maps.push(m);
                            }
                        }
                        Err(e) => return st.invalid(e),
                    }
                    for j in &mut r.jobs {
                        j.node = Some(name.clone());
                    }
                    obs.phase_end(&name, i, &r);
                    r.timeline = st.timelines[i].values().cloned().collect();
                    if st.result.phases.len() == i {
                        st.result.phases.push(r);
                    }
                }
                Some(Err(e)) => st.fail(format!("node `{name}` sent a phase that did not unpack: {e}")),
                None => {}
            }
        }
        event::Kind::Done(d) => {
            if !d.refused.is_empty() {
                st.fail(format!("node `{name}` refused the run: {}", d.refused));
            } else if let Ok(r) = serde_json::from_slice::<RunResult>(&d.result_json) {
                st.result.status = r.status;
                st.result.error = r.error;
                st.result.started_unix_s = r.started_unix_s;
                st.done = true;
                st.tx = None;
            } else {
                st.fail(format!("node `{name}` ended with a result that is not iolab's JSON"));
            }
        }
        event::Kind::Message(m) => obs.message(&name, &m.text),
        event::Kind::Alive(_) => {}
    }
}

/// What the coordinator makes of one node's events, without a connection: each event checked
/// and followed as a run would (a Go answers every Ready at once), then the phases merged. For
/// the fuzz target and tests that feed hostile messages; nothing here may panic.
pub fn follow_events(plan: &Plan, offset_ns: i64, events: Vec<proto::Event>) -> RunResult {
    let mut st = NodeState::new("n".into(), offset_ns, plan.phases.len(), empty_run());
    let mut next = 0usize;
    let mut obs = NoObserver;
    for e in events {
        if st.done {
            break;
        }
        if let Some(kind) = e.kind {
            on_event(&mut st, kind, next, &mut obs);
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

struct NoObserver;
impl Observer for NoObserver {}

fn empty_run() -> RunResult {
    RunResult::new(Plan { phases: Vec::new() }, "", 0.0)
}

/// A node that failed mid-phase keeps what it measured until then: its latest progress, cut
/// short, with the seconds it sent.
fn keep_partial(st: &mut NodeState) {
    if st.result.status != Status::Failed {
        return;
    }
    let i = st.result.phases.len();
    if let Some(mut r) = st.so_far.get_mut(i).and_then(Option::take) {
        r.interrupted = true;
        for j in &mut r.jobs {
            j.node = Some(st.name.clone());
        }
        r.timeline = st.timelines[i].values().cloned().collect();
        st.result.phases.push(r);
    }
}

/// Merge the nodes' phases: the aggregate of phase i spans its common window.
fn aggregate(
    plan: &Plan,
    infos: &[NodeInfo],
    states: &mut [NodeState],
    started_unix_s: f64,
    stopped: bool,
) -> RunResult {
    states.iter_mut().for_each(keep_partial);
    let phases = states.iter().map(|s| s.result.phases.len()).max().unwrap_or(0);
    let mut out = RunResult {
        started_unix_s,
        node: iolab_sysstat::hostname(),
        plan: plan.clone(),
        nodes: infos.to_vec(),
        status: Status::Complete,
        ..empty_run()
    };
    for i in 0..phases {
        out.phases.push(merge_phase(i, states));
    }
    let errors: Vec<String> = states.iter().filter_map(|s| s.result.error.clone()).collect();
    out.status = if !errors.is_empty() || states.iter().any(|s| s.result.status == Status::Failed) {
        Status::Failed
    } else if stopped || states.iter().any(|s| s.result.status == Status::Interrupted) {
        Status::Interrupted
    } else {
        Status::Complete
    };
    if !errors.is_empty() {
        out.error = Some(errors.join("; "));
    }
    out
}

fn merge_phase(i: usize, states: &[NodeState]) -> PhaseResult {
    let with: Vec<(&NodeState, &PhaseResult)> =
        states.iter().filter_map(|s| s.result.phases.get(i).map(|p| (s, p))).collect();
    // Each node's window on the coordinator's clock, in i128 ns: no sum of what a node sent
    // can overflow (its times and durations were bounded on arrival).
    let windows: Vec<(i128, i128)> = with
        .iter()
        .map(|(s, p)| {
            let start = s.started.get(i).copied().flatten().and_then(|t| s.local(t)).unwrap_or(0) as i128;
            (start, start + (p.elapsed_s * 1e9) as i128)
        })
        .collect();
    let first_start = windows.iter().map(|w| w.0).min().unwrap_or(0);
    let last_end = windows.iter().map(|w| w.1).max().unwrap_or(0);
    let first_end = windows.iter().map(|w| w.1).min().unwrap_or(0);
    let window_s =
        ((last_end - first_start) as f64 / 1e9).max(with.iter().map(|(_, p)| p.elapsed_s).fold(0.0, f64::max));
    let mut accs: Vec<ClassAcc> = OpClass::ALL.iter().map(|_| ClassAcc::default()).collect();
    let mut out =
        PhaseResult { name: with.first().map(|(_, p)| p.name.clone()).unwrap_or_default(), ..Default::default() };
    let mut timeline: BTreeMap<u64, TimelinePoint> = BTreeMap::new();
    for ((s, p), (start, _)) in with.iter().zip(&windows) {
        for c in OpClass::ALL {
            let t = p.total.get(*c);
            accs[c.index()].merge(&ClassAcc { ops: t.ops, bytes: t.bytes, hist: t.hist.clone() });
        }
        for j in &p.jobs {
            let mut j = j.clone();
            j.node = Some(s.name.clone());
            out.jobs.push(j);
        }
        out.interrupted |= p.interrupted;
        if let Some(v) = &p.verify {
            out.verify.get_or_insert_with(Default::default).merge(v, MERGED_ERRORS);
        }
        out.cpu.user_s += p.cpu.user_s;
        out.cpu.system_s += p.cpu.system_s;
        // The seconds, placed on the common window by the node's start.
        let shift = ((start - first_start) as f64 / 1e9).round() as u64;
        for pt in &p.timeline {
            let sec = (pt.t_s.ceil() as u64).max(1).saturating_add(shift);
            let e = timeline.entry(sec).or_insert_with(|| TimelinePoint { t_s: sec as f64, ..Default::default() });
            add_point(e, pt);
        }
        // Both on the node's own clock: the offset's error does not enter the skew.
        let actual = s.actual.get(i).copied().flatten().or(s.started.get(i).copied().flatten());
        let skew = match (actual, s.scheduled.get(i).copied().flatten()) {
            (Some(a), Some(b)) => a.saturating_sub(b),
            _ => 0,
        };
        out.nodes.push(NodeResult {
            name: s.name.clone(),
            start_skew_ns: skew,
            elapsed_s: p.elapsed_s,
            interrupted: p.interrupted,
            error: s.result.error.clone(),
            total: p.total.clone(),
            cpu: p.cpu,
            system: p.system.clone(),
            verify: p.verify.clone(),
        });
    }
    let mut acc = iolab_model::Acc::default();
    for c in OpClass::ALL {
        *acc.get_mut(*c) = std::mem::take(&mut accs[c.index()]);
    }
    out.total = Totals::from_acc(&acc, window_s);
    out.elapsed_s = window_s;
    out.timeline = timeline.into_values().collect();
    // A personality's figures over the nodes' jobs: counts add up, seconds take the longest,
    // rates are recomputed (iolab_model::figures, the one rule).
    out.roll_up_workload();
    if !with.is_empty() {
        out.first_done_s = Some((first_end - first_start) as f64 / 1e9);
        out.last_done_s = Some((last_end - first_start) as f64 / 1e9);
    }
    out
}

/// The most bad blocks the aggregate's `verify.first_errors` lists, over every node (each
/// node's own list is bounded by its `--max-errors`).
const MERGED_ERRORS: usize = 1000;

/// Sum a node's second into the aggregate's (the latency figures: the worst node's).
fn add_point(into: &mut TimelinePoint, p: &TimelinePoint) {
    into.read_ops = into.read_ops.saturating_add(p.read_ops);
    into.read_bytes = into.read_bytes.saturating_add(p.read_bytes);
    into.write_ops = into.write_ops.saturating_add(p.write_ops);
    into.write_bytes = into.write_bytes.saturating_add(p.write_bytes);
    into.sync_ops = into.sync_ops.saturating_add(p.sync_ops);
    for c in OpClass::ALL {
        into.ops.add(*c, p.ops.get(*c));
    }
    into.lat_p50_ns = into.lat_p50_ns.max(p.lat_p50_ns);
    into.lat_p99_ns = into.lat_p99_ns.max(p.lat_p99_ns);
    into.lat_max_ns = into.lat_max_ns.max(p.lat_max_ns);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_arguments_and_nodes_files() {
        let n = NodeSpec::parse("a=ssh://me@h1,dir=/mnt/x").unwrap();
        assert_eq!(
            (n.name.as_str(), &n.addr, n.dir.as_deref()),
            ("a", &Addr::Ssh("me@h1".into()), Some(Path::new("/mnt/x")))
        );
        assert_eq!(NodeSpec::parse("b=h2:7878").unwrap().addr, Addr::Tcp("h2:7878".into()));
        for bad in ["a", "=h:1", "*=h:1", "a b=h:1", "a=h", "a=h:1,dir=", "a=ftp://x"] {
            assert!(NodeSpec::parse(bad).is_err(), "{bad}");
        }
        let text =
            "[[node]]\nname = \"a\"\naddr = \"ssh://h1\"\ndir = \"/m\"\n[[node]]\nname = \"b\"\naddr = \"h2:1\"\n";
        let f = NodeSpec::parse_file(Path::new("n.toml"), text).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].dir, None);
        let err =
            NodeSpec::parse_file(Path::new("n.toml"), "[[node]]\nname = \"a\"\naddr = \"nowhere\"\n").unwrap_err();
        assert!(err.to_string().contains("n.toml") && err.to_string().contains("nowhere"), "{err}");
        assert!(NodeSpec::parse_file(Path::new("n.toml"), "[[node]]\nname = \"a\"\naddr = \"h:1\"\nuser = \"x\"\n")
            .is_err());
    }

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
        proto::Event { kind: Some(kind) }
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

    #[test]
    fn relative_targets_go_under_the_nodes_dir() {
        let job = |t: &str| {
            iolab_spec::JobPatch { target: Some(t.into()), size: Some(iolab_spec::Bytes::mib(1)), ..Default::default() }
                .resolve("j")
                .unwrap()
        };
        let plan = Plan { phases: vec![iolab_spec::Phase { name: "p".into(), jobs: vec![job("f"), job("/abs/g")] }] };
        let n = NodeSpec::parse("a=exec:///bin/iolab,dir=/mnt/a").unwrap();
        let p = n.localize(&plan);
        assert_eq!(p.phases[0].jobs[0].target, Path::new("/mnt/a/f"));
        assert_eq!(p.phases[0].jobs[1].target, Path::new("/abs/g"));
        // A validated job's file ids are taken below the node's dir.
        let mut v = plan.clone();
        v.phases[0].jobs[0] = iolab_spec::JobPatch {
            target: Some("f".into()),
            rw: Some(iolab_spec::Rw::Write),
            size: Some(iolab_spec::Bytes::mib(1)),
            verify: Some(true),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        let p = n.localize(&v);
        assert_eq!(p.phases[0].jobs[0].verify.as_ref().unwrap().id_root.as_deref(), Some(Path::new("/mnt/a")));
        assert_eq!(p.phases[0].jobs[1].verify, None);
    }
}
