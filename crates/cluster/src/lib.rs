//! iolab-cluster: iolab on several nodes at once, in one-way layers, each a crate of its own so
//! the compiler keeps them apart:
//!
//! 1. [`protocol`] (iolab-cluster-protocol): the gRPC messages of proto/agent.proto, the
//!    protocol's version and lease, iolab's data packed for the wire;
//! 2. [`transport`] (iolab-cluster-transport): both halves of each way to reach an agent (a
//!    child's stdio, TLS with a token, agents that join);
//! 3. [`agent`] (iolab-agent) and [`coordinator`] (iolab-coordinator), which never import each
//!    other: the service a node runs, and the side that reaches the nodes, starts each phase
//!    on all of them at one instant, follows their events and merges their results;
//! 4. this crate: runs of steps on the connected nodes ([`steps`]): a scenario's steps
//!    ([`scenario`]), the rounds of validation across nodes ([`rounds`]), a plain run.
//!
//! Nothing here draws on a terminal.

#![forbid(unsafe_code)]

pub mod rounds;
pub mod scenario;
pub mod steps;

pub use iolab_agent as agent;
pub use iolab_cluster_protocol as protocol;
pub use iolab_cluster_transport as transport;
pub use iolab_coordinator as coordinator;

pub use iolab_agent::{AgentService, Allow, Tap, Tapped};
pub use iolab_cluster_protocol::{proto, wire, PROTOCOL_VERSION};
pub use iolab_cluster_transport::{join, pin, stdio, tls};
pub use iolab_coordinator::{Addr, Cluster, ClusterError, ClusterResult, NodeRun, NodeSpec, Options, Work};
