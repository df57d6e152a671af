//! iolab-coordinator: runs plans on several nodes at once. It reaches every node
//! ([`nodes`] names them; [`dial`] dials, shakes hands and measures each clock; [`joins`]
//! accepts agents that join), checks what it can before contacting any ([`Cluster::preflight`]),
//! then runs one plan per node ([`drive`]): each phase starts on every node at one instant,
//! after every node reported its phase ready; each node's events are followed and checked
//! ([`follow`]) and handed on as they come to one [`Sink`] (`iolab_model::events`), each
//! node's name added; heartbeats keep the agents' lease; a lost node stops the others. What
//! the nodes measured is merged by the one rule of `iolab_model::merge` ([`aggregate`]).
//! It imports the protocol and the transports, never the agent; nothing here draws on a
//! terminal.

#![forbid(unsafe_code)]

mod aggregate;
mod dial;
mod drive;
pub mod error;
mod follow;
mod joins;
pub mod nodes;
mod offline;
mod ship;
pub mod ssh;
mod steady;
pub mod work;

pub use error::ClusterError;
pub use nodes::{Addr, NodeSpec};
pub use offline::follow_events;
pub use work::{ClusterResult, NodeRun, Options, Work};

use crate::dial::Conn;
use iolab_model::events::Sink;
use iolab_model::NodeInfo;
use iolab_spec::Plan;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Past this clock offset a run warns; past [`CLOCK_REFUSE`] it refuses (unless told not to).
pub const CLOCK_WARN: Duration = Duration::from_millis(50);
pub const CLOCK_REFUSE: Duration = Duration::from_secs(1);

/// Connected nodes, ready to run plans.
pub struct Cluster {
    rt: tokio::runtime::Runtime,
    conns: Vec<Conn>,
    opts: Options,
}

fn no_duplicates(specs: &[NodeSpec]) -> Result<(), ClusterError> {
    let mut names = HashSet::new();
    match specs.iter().find(|s| !names.insert(&s.name)) {
        Some(s) => Err(ClusterError::Duplicate(s.name.clone())),
        None => Ok(()),
    }
}

impl Cluster {
    /// Check what can be checked before any node is contacted: the nodes' names, what each
    /// way of reaching a node needs (`dir=` for `exec://` and `ssh://`, the token for HOST:PORT
    /// and `join:`, `--listen` for `join:`), and each node's plan as it will run there (its
    /// targets joined to its `dir=`, every job rule of `iolab run`). `work` is per node, as
    /// `specs` (`None`: the node sits out).
    pub fn preflight(specs: &[NodeSpec], work: &[Option<Work>], opts: &Options) -> Result<(), ClusterError> {
        no_duplicates(specs)?;
        for s in specs {
            dial::reachable(s, opts)?;
        }
        for (s, w) in specs.iter().zip(work) {
            let Some(w) = w else { continue };
            let local = s.localize(&w.plan);
            local.validate().map_err(|e| s.err(format!("its plan: {e}")))?;
            let relative = local.phases.iter().flat_map(|p| &p.jobs).find(|j| j.target.is_relative());
            if let (Some(j), Addr::Tcp(_)) = (relative, &s.addr) {
                return Err(s.err(format!(
                    "job `{}`: target {} is relative, and an agent takes only absolute paths: give the node dir=PATH (NAME=ADDR,dir=PATH)",
                    j.name,
                    j.target.display()
                )));
            }
        }
        Ok(())
    }

    /// Connect every node at once, shake hands and measure clocks. `warn` hears warnings.
    pub fn connect(specs: &[NodeSpec], opts: Options, warn: &mut dyn FnMut(&str)) -> Result<Cluster, ClusterError> {
        no_duplicates(specs)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let conns = rt.block_on(connect_all(specs, &opts))?;
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

    /// The nodes' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.conns.iter().map(|c| c.spec.name.clone()).collect()
    }

    /// Run one plan per node at once (`None`: the node sits this one out), each node's phase i
    /// starting at one instant with the others'; a lost node stops the others and its failure
    /// is kept with what was measured; setting `stop` stops every agent. `plan` names the run as a whole (the
    /// aggregate's `plan`); the per-node plans must have as many phases. Results come in node
    /// order, for the nodes that took part.
    pub fn run_each(
        &mut self,
        plan: &Plan,
        work: &[Option<Work>],
        stop: Arc<AtomicBool>,
        sink: &mut dyn Sink,
    ) -> ClusterResult {
        let started_unix_s = iolab_model::now_unix_s();
        let opts = &self.opts;
        let mut taking: Vec<(&mut Conn, &Work)> =
            self.conns.iter_mut().zip(work).filter_map(|(c, w)| w.as_ref().map(|w| (c, w))).collect();
        let infos: Vec<NodeInfo> = taking.iter().map(|(c, _)| c.info.clone()).collect();
        let (mut states, across) = self.rt.block_on(drive::drive(&mut taking, opts, &stop, sink));
        let stopped = stop.load(Ordering::Relaxed);
        let mut aggregate = aggregate::aggregate(plan, &infos, &mut states, started_unix_s, stopped);
        aggregate::steady(&mut aggregate, &states, &across);
        let key_maps = states.iter_mut().map(|s| std::mem::take(&mut s.maps)).collect();
        let nodes = states.into_iter().map(|s| s.run).collect();
        ClusterResult { nodes, aggregate, key_maps }
    }
}

/// Dial every node that is dialled, and wait for those that join, at once; in the order given.
async fn connect_all(specs: &[NodeSpec], opts: &Options) -> Result<Vec<Conn>, ClusterError> {
    let dialled: Vec<&NodeSpec> = specs.iter().filter(|s| !matches!(s.addr, Addr::Join(_))).collect();
    let joining: Vec<NodeSpec> = specs.iter().filter(|s| matches!(s.addr, Addr::Join(_))).cloned().collect();
    let tasks: Vec<_> = dialled.iter().map(|s| tokio::spawn(dial::connect_one((*s).clone(), opts.clone()))).collect();
    let joins = (!joining.is_empty()).then(|| tokio::spawn(joins::accept_joins(joining, opts.clone())));
    let mut out = Vec::new();
    for (t, s) in tasks.into_iter().zip(dialled) {
        let r = t.await.map_err(|e| s.err(format!("connecting: {e}")))?;
        out.push(r?);
    }
    if let Some(j) = joins {
        out.extend(j.await.map_err(|e| ClusterError::Join(format!("waiting for agents to join: {e}")))??);
    }
    out.sort_by_key(|c| specs.iter().position(|s| s.name == c.spec.name));
    Ok(out)
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
