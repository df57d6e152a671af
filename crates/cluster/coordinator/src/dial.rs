//! Reaching each node and shaking hands: a child over its stdio (`exec://`, `ssh://`, bringing
//! this iolab to an ssh node that has none or another version), an agent daemon over TLS (its
//! certificate pinned on first use, or checked against `--ca`), the handshake that checks the
//! protocol's version, and the node's clock offset measured by the least round trip of
//! [`CLOCK_SAMPLES`] samples.

use crate::error::ClusterError;
use crate::nodes::{Addr, NodeSpec};
use crate::ssh;
use crate::work::Options;
use iolab_cluster_protocol::proto::{self, agent_client::AgentClient};
use iolab_cluster_protocol::{unix_ns, MAX_MESSAGE, PROTOCOL_VERSION};
use iolab_cluster_transport::{pin, stdio, tls};
use iolab_model::NodeInfo;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tonic::transport::Channel;

/// Clock samples per node; the one with the least round trip counts.
const CLOCK_SAMPLES: usize = 8;

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

pub(crate) type Client = AgentClient<tonic::service::interceptor::InterceptedService<Channel, Token>>;

/// A node connected: how it was named, its client, what it said of itself, and the child
/// process that runs it (exec://, ssh://).
pub(crate) struct Conn {
    pub spec: NodeSpec,
    pub client: Client,
    pub info: NodeInfo,
    pub child: Option<tokio::process::Child>,
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

pub(crate) async fn connect_one(spec: NodeSpec, opts: Options) -> Result<Conn, ClusterError> {
    match &spec.addr {
        Addr::Ssh(dest) => match try_connect(&spec, &opts, None).await {
            Ok(c) => Ok(c),
            Err(Failed { bring: Some(why), .. }) => {
                // No iolab there, or another version: bring ours, and say so. A login that
                // failed, or anything else, is reported as it is and nothing is copied.
                let path = ssh::remote_copy_path();
                iolab_cluster_transport::say(&format!(
                    "iolab: node `{}`: {why}; copying this iolab ({}, {}) to {dest}:{path}",
                    spec.name,
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::ARCH
                ));
                let path = ssh::copy_self(dest).await.map_err(|e| spec.err(e.to_string()))?;
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
            err: spec.err(format!("{msg}: no iolab on the node's PATH")),
            bring: Some("no iolab on the node's PATH (exit 127)".into()),
        },
        Some(126) if ssh => Failed {
            err: spec.err(format!("{msg}: the node's iolab does not run")),
            bring: Some("the node's iolab cannot be run (exit 126)".into()),
        },
        Some(255) if ssh => spec
            .err(
                "ssh failed (exit 255: the login was refused or the host is unreachable; ssh's own message is above). \
             Check `ssh HOST true` works without a password (keys, ~/.ssh/config); nothing was copied"
                    .into(),
            )
            .into(),
        Some(code) => spec.err(format!("{msg}; the agent exited with status {code}")).into(),
        None => spec.err(msg).into(),
    }
}

/// What reaching `spec` needs, checked without reaching it: `dir=` for a node whose agent is
/// started here (its `--allow`), the token for an agent daemon, `--listen` and the token for
/// agents that join.
pub(crate) fn reachable(spec: &NodeSpec, opts: &Options) -> Result<(), ClusterError> {
    match &spec.addr {
        // The node's dir= is the agent's --allow there: the only place it does I/O.
        Addr::Exec(_) | Addr::Ssh(_) if spec.dir.is_none() => Err(spec.err(
            "an ssh:// or exec:// node needs dir=PATH (NAME=ADDR,dir=PATH): the agent there does I/O only under it"
                .into(),
        )),
        Addr::Tcp(_) if opts.token.is_none() => {
            Err(spec.err("a HOST:PORT agent wants its token: give --token-file (or IOLAB_TOKEN_FILE)".into()))
        }
        Addr::Join(_) => opts.join_needs(spec).map(|_| ()),
        _ => Ok(()),
    }
}

async fn try_connect(spec: &NodeSpec, opts: &Options, remote_bin: Option<&str>) -> Result<Conn, Failed> {
    reachable(spec, opts)?;
    let spec = spec.clone();
    let (channel, mut child) = match &spec.addr {
        Addr::Exec(_) | Addr::Ssh(_) => {
            let allow = spec.dir.clone().unwrap_or_default();
            let cmd = ssh::agent_command(&spec.addr, &allow, remote_bin)
                .ok_or_else(|| spec.err("no command for this address".into()))?;
            let (ch, child) = stdio::over_child(cmd).await.map_err(|e| spec.err(format!("starting the agent: {e}")))?;
            (ch, Some(child))
        }
        Addr::Tcp(addr) => (tls_channel(&spec, addr, opts).await?, None),
        Addr::Join(_) => return Err(spec.err("a joining node is not dialled".into()).into()),
    };
    let token = match &opts.token {
        Some(t) => {
            Some(format!("Bearer {t}").parse().map_err(|_| spec.err("the token is not printable ASCII".into()))?)
        }
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
                err: spec.err(format!("handshake: {}", e.message())),
                bring: Some(format!("the node's iolab speaks another protocol ({})", e.message())),
            })
        }
        Err(e) => return Err(handshake_failed(&spec, &mut child, format!("handshake: {}", e.message())).await),
    };
    if matches!(spec.addr, Addr::Ssh(_)) && hello.iolab_version != env!("CARGO_PKG_VERSION") {
        let msg = format!("the node runs iolab {}, this is {}", hello.iolab_version, env!("CARGO_PKG_VERSION"));
        return Err(Failed { err: spec.err(msg.clone()), bring: Some(msg) });
    }
    Ok(measure(spec, client, hello, child).await?)
}

pub(crate) fn new_client(
    channel: Channel,
    header: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
) -> Client {
    AgentClient::with_interceptor(channel, Token(header)).max_decoding_message_size(MAX_MESSAGE)
}

/// A connected node's clock, measured: the sample with the least round trip counts.
pub(crate) async fn measure(
    spec: NodeSpec,
    mut client: Client,
    hello: proto::HelloReply,
    child: Option<tokio::process::Child>,
) -> Result<Conn, ClusterError> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_SAMPLES {
        let t0 = SystemTime::now();
        let i0 = Instant::now();
        let r = client.clock(proto::Empty {}).await.map_err(|e| spec.err(format!("clock: {}", e.message())))?;
        let rtt = i0.elapsed();
        let mid = unix_ns(t0) + (rtt.as_nanos() / 2) as i64;
        let Some(offset) = r.into_inner().unix_ns.checked_sub(mid) else {
            return Err(spec.err("its clock answered a time out of range".into()));
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
        // The node read its clock somewhere within the round trip: the midpoint's error is at
        // most half of it (NTP's bound).
        clock_offset_uncertainty_ns: rtt_ns / 2,
        dir: spec.dir.as_ref().map(|d| d.display().to_string()),
    };
    Ok(Conn { spec, client, info, child })
}

/// A TLS channel to an agent daemon, its certificate pinned (remembered on first use).
async fn tls_channel(spec: &NodeSpec, addr: &str, opts: &Options) -> Result<Channel, ClusterError> {
    if let Some(ca) = &opts.ca {
        let v = pin::ca_verifier(ca).map_err(|e| spec.err(e.to_string()))?;
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        return pin::connect(addr, host, v).await.map_err(|e| spec.err(format!("TLS connection: {e}")));
    }
    let known = opts.known_agents.clone().map(|path| pin::KnownAgents { path });
    let expect = known.as_ref().and_then(|k| k.get(addr));
    let pinned = Arc::new(pin::CertPin::new(expect.clone()));
    let ch = pin::connect(addr, tls::CERT_NAME, pinned.clone()).await;
    let seen = pinned.seen.lock().ok().and_then(|s| s.clone());
    match (&expect, &seen) {
        (Some(want), Some(got)) if want != got => {
            let file = known.as_ref().map(|k| k.path.display().to_string()).unwrap_or_default();
            return Err(spec.err(format!(
                    "the agent's certificate changed: {got}, but {want} was pinned. If the agent was \
                     reinstalled (check the fingerprint it prints at start), remove the line `{addr} {want}` from {file}"
                ),
            ));
        }
        _ => {}
    }
    let ch = ch.map_err(|e| spec.err(format!("TLS connection: {e}")))?;
    if let (None, Some(got), Some(k)) = (&expect, &seen, &known) {
        k.add(addr, got).map_err(|e| spec.err(format!("remembering its fingerprint in {}: {e}", k.path.display())))?;
    }
    Ok(ch)
}
