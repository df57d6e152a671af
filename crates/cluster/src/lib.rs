//! iolab-cluster: iolab on several nodes at once. The agent ([`agent`]) runs plans on its node
//! under its `--allow` directories ([`allow`]); the coordinator ([`coordinator`]) reaches the
//! agents ([`connect`]: over `ssh` or a local child's stdio, [`stdio`]), measures their clock
//! offsets, starts every phase on all of them at one instant, streams their seconds and
//! merges their results into one aggregate; [`cross`] runs validation across nodes (`--verify-on
//! other`) as rounds of such runs. They speak gRPC ([`proto`], from
//! proto/agent.proto); results travel packed by [`wire`]. Nothing here draws on a terminal.

#![forbid(unsafe_code)]

pub mod agent;
pub mod allow;
pub mod connect;
pub mod coordinator;
pub mod cross;
pub mod join;
pub mod stdio;
pub mod tls;
pub mod traces;
pub mod wire;

/// The generated gRPC types and service stubs of `iolab.agent.v1`.
#[allow(clippy::all)]
pub mod proto {
    tonic::include_proto!("iolab.agent.v1");
}

pub use agent::{AgentService, PROTOCOL_VERSION};
pub use allow::Allow;
pub use coordinator::{Cluster, ClusterError, ClusterResult, NodeSpec, Observer, Options, Work};
