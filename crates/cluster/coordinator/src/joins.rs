//! Agents placed by a launcher that join the coordinator (`join:RANK` nodes): the coordinator
//! listens on `--listen` (iolab_cluster_transport::join's rendezvous) until every rank it
//! waits for has connected and proved it holds the token.

use crate::dial::{measure, new_client, Conn};
use crate::error::ClusterError;
use crate::nodes::{Addr, NodeSpec};
use crate::work::Options;
use iolab_cluster_protocol::proto;
use iolab_cluster_protocol::PROTOCOL_VERSION;
use std::path::PathBuf;
use std::time::Duration;

/// Wait for every `join:RANK` node to connect to `--listen` (within the patience), each
/// proving it holds the token on its own connection; a joiner of a rank not wanted, or twice,
/// or without the proof, is turned away and the wait goes on.
pub(crate) async fn accept_joins(mut wanted: Vec<NodeSpec>, opts: Options) -> Result<Vec<Conn>, ClusterError> {
    let Some(first) = wanted.first() else { return Ok(Vec::new()) };
    let (listen, token) = opts.join_needs(first)?;
    let rv = iolab_cluster_transport::join::Rendezvous::bind(&listen, &token)
        .await
        .map_err(|e| ClusterError::Join(format!("listening on {listen} for agents to join: {e}")))?;
    iolab_cluster_transport::say(&format!(
        "iolab: waiting for {} agent(s) to join on {} (iolab agent --join ADDR --token-file FILE --allow DIR)",
        wanted.len(),
        rv.local_addr()
    ));
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
                iolab_cluster_transport::say(&format!("iolab: turned away a joiner at {}: {}", j.peer, e.message()));
                continue;
            }
            Err(_) => {
                iolab_cluster_transport::say(&format!(
                    "iolab: turned away a joiner at {}: no handshake within 10 s",
                    j.peer
                ));
                continue;
            }
        };
        if !rv.proven(&j, &hello) {
            iolab_cluster_transport::say(&format!(
                "iolab: turned away a joiner at {}: it did not prove it holds the token",
                j.peer
            ));
            continue;
        }
        let Some(at) = wanted.iter().position(|s| s.addr == Addr::Join(hello.rank)) else {
            iolab_cluster_transport::say(&format!(
                "iolab: turned away a joiner at {}: rank {} is not wanted or already joined",
                j.peer, hello.rank
            ));
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
