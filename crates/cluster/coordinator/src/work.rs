//! What a run on several nodes takes and gives: how the coordinator behaves ([`Options`]),
//! what each node does ([`Work`]), and what each node and the whole measured ([`NodeRun`],
//! [`ClusterResult`]). Plain data.

use crate::error::ClusterError;
use crate::nodes::NodeSpec;
use iolab_model::{HandedMap, PhaseResult, RunResult, Status};
use iolab_spec::Plan;
use iolab_workload::layout::RunMark;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What one node does in a run: its plan, and the directories to make first (relative ones
/// under its `dir`), within a run of its own mark (a scenario passes the same mark to every
/// step, so a later step may write the files an earlier one created: `layout::RunMark`). The
/// plan is shared, not copied, between the nodes that run the same one.
#[derive(Debug, Clone)]
pub struct Work {
    pub plan: Arc<Plan>,
    pub mkdirs: Vec<PathBuf>,
    pub run_mark: RunMark,
    /// Key maps handed to the node with its run (`--verify-on other`).
    pub keys: Vec<HandedMap>,
}

impl Work {
    /// `plan` within a run of `mark`, nothing else.
    pub fn plan(plan: Arc<Plan>, mark: &RunMark) -> Work {
        Work { plan, mkdirs: Vec::new(), run_mark: mark.clone(), keys: Vec::new() }
    }
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

/// One node's run as the coordinator saw it: how it ended and what it measured.
#[derive(Debug, Clone)]
pub struct NodeRun {
    pub name: String,
    pub status: Status,
    pub error: Option<String>,
    /// When its run began, in Unix seconds on the coordinator's clock.
    pub started_unix_s: f64,
    /// Its phases, with their seconds, in order (each with its start: `started_unix_s`).
    pub phases: Vec<PhaseResult>,
}

/// A run on several nodes: each node's own, and the aggregate.
#[derive(Debug, Clone)]
pub struct ClusterResult {
    /// Per node that took part, in `--node` order: its run as it measured it.
    pub nodes: Vec<NodeRun>,
    /// The merged run: aggregate phases with `jobs[].node` and `nodes[]`, top-level `nodes`.
    pub aggregate: RunResult,
    /// Per node, as `nodes`: the key maps it handed over at its phases' ends (the latest of
    /// each file; `--verify-on other`), checked on arrival.
    pub key_maps: Vec<Vec<HandedMap>>,
}

impl Options {
    /// What agents that join need: the address to listen on and the shared token.
    pub(crate) fn join_needs(&self, spec: &NodeSpec) -> Result<(String, String), ClusterError> {
        let Some(listen) = self.listen.clone() else {
            return Err(ClusterError::Join(format!(
                "node `{}` joins (join:RANK): give --listen HOST:PORT for agents to join at",
                spec.name
            )));
        };
        let Some(token) = self.token.clone() else {
            return Err(ClusterError::Join("agents that join need the shared token: give --token-file".into()));
        };
        Ok((listen, token))
    }
}
