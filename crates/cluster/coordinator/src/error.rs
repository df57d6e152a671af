//! Why a run on several nodes could not start: a node argument or file that does not parse,
//! a node that cannot be reached or shaken hands with, a clock too far off, two nodes of one
//! name, agents that did not join. Each names the node and says what to do.

use std::path::PathBuf;

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
