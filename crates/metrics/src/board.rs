//! What the endpoint shows: each run's figures, node by node and phase by phase, as the latest
//! events left them. One lock guards them, taken by the thread that coordinates the run (as it
//! hands an event on, see [`crate::feed`]) and by the server (as it answers a scrape); a worker
//! never takes it. The figures are cumulative as the events carry them (the phase so far, once a
//! second), so nothing here grows with a run's length: its size is nodes × phases × jobs ×
//! classes.

use crate::buckets::Folded;
use iolab_model::{ErrorCounts, OpClass, PhaseResult, Status};
use iolab_spec::Plan;
use iolab_sysstat::Rates;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Runs kept on the board: the current one and the one before it (a survey's profile and its
/// locking check; an agent's previous run, for a last scrape). An older run's series go.
pub const KEEP_RUNS: usize = 2;

/// The figures every feed writes and every scrape reads.
#[derive(Debug, Default)]
pub struct Board {
    figures: Mutex<Figures>,
}

impl Board {
    pub fn new() -> Arc<Board> {
        Arc::new(Board::default())
    }

    /// The figures, locked (a feed or a scrape; neither holds it for long). A feed that
    /// panicked while holding it left figures that are still figures: the lock is taken anyway.
    pub fn lock(&self) -> MutexGuard<'_, Figures> {
        self.figures.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Every run on the board, the latest last.
#[derive(Debug, Default)]
pub struct Figures {
    pub runs: Vec<RunFigures>,
}

impl Figures {
    pub fn run_mut(&mut self, id: &str) -> Option<&mut RunFigures> {
        self.runs.iter_mut().find(|r| r.id == id)
    }
}

/// One run: what it is, how far it got, and each node's figures.
#[derive(Debug)]
pub struct RunFigures {
    /// The `run_id` label: the stored run's id, or what stands for it (see docs/metrics.md).
    pub id: String,
    /// What made it: a `RunKind` word (`run`, `survey`...), or `agent` for a node's share of
    /// a coordinator's run.
    pub kind: String,
    /// The run's labels, made valid ([`crate::labels::of_run`]).
    pub labels: Vec<(String, String)>,
    pub started_unix_s: f64,
    pub status: Status,
    /// The run's phases as planned, by index: name and expected length when time-bounded.
    pub planned: Vec<Planned>,
    /// Phases that ended (on one machine; on several nodes, their merged end).
    pub ended: BTreeSet<usize>,
    /// A run of steps: the step running (0-based) and how many.
    pub step: Option<(usize, usize)>,
    pub nodes: BTreeMap<String, NodeFigures>,
}

/// A phase as planned.
#[derive(Debug, Clone)]
pub struct Planned {
    pub name: String,
    /// Ramp and runtime when every job of the phase is time-bounded.
    pub expected_s: Option<f64>,
}

impl Planned {
    pub fn of(plan: &Plan) -> Vec<Planned> {
        plan.phases
            .iter()
            .map(|p| {
                let each: Option<Vec<f64>> =
                    p.jobs.iter().map(|j| j.runtime.map(|r| (r + j.ramp).as_secs_f64())).collect();
                let expected_s = each.filter(|v| !v.is_empty()).map(|v| v.into_iter().fold(0.0, f64::max));
                Planned { name: p.name.clone(), expected_s }
            })
            .collect()
    }
}

/// One node's figures in a run.
#[derive(Debug, Default)]
pub struct NodeFigures {
    /// By the phase's index in the run.
    pub phases: BTreeMap<usize, PhaseFigures>,
    /// Reads and writes in flight, on average over the last second (completions × mean latency).
    pub in_flight: Option<f64>,
    /// The last system sample.
    pub system: Option<Rates>,
    /// Network errors and drops over the samples taken, per interface.
    pub net: BTreeMap<String, NetCounts>,
}

/// An interface's errors and drops, added up over the samples.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetCounts {
    pub rx_errs: u64,
    pub tx_errs: u64,
    pub rx_drop: u64,
    pub tx_drop: u64,
}

/// One phase on one node, as its latest progress or its end said.
#[derive(Debug, Clone, Default)]
pub struct PhaseFigures {
    pub name: String,
    pub running: bool,
    pub elapsed_s: f64,
    pub jobs: Vec<JobFigures>,
    pub verify: Option<VerifyFigures>,
}

#[derive(Debug, Clone, Default)]
pub struct JobFigures {
    pub name: String,
    /// Workers the job lost to an error.
    pub errors: u64,
    pub classes: Vec<(OpClass, ClassFigures)>,
}

#[derive(Debug, Clone, Default)]
pub struct ClassFigures {
    pub ops: u64,
    pub bytes: u64,
    pub latency: Folded,
}

/// Data validation's counts in a phase.
#[derive(Debug, Clone, Default)]
pub struct VerifyFigures {
    pub written: u64,
    pub checked: u64,
    pub errors: ErrorCounts,
}

impl PhaseFigures {
    /// A phase's figures from its result (as it stands, or as it ended).
    pub fn of(r: &PhaseResult, running: bool) -> PhaseFigures {
        let jobs = r
            .jobs
            .iter()
            .map(|j| {
                let lost = j.per_thread.iter().filter(|t| t.error.is_some()).count() as u64;
                JobFigures {
                    name: j.name.clone(),
                    errors: if lost == 0 && j.error.is_some() { 1 } else { lost },
                    classes: j
                        .total
                        .iter()
                        .map(|(c, t)| {
                            let latency = t.hist.as_ref().map(Folded::of).unwrap_or_default();
                            (c, ClassFigures { ops: t.ops, bytes: t.bytes, latency })
                        })
                        .collect(),
                }
            })
            .collect();
        let verify = r.verify.as_ref().map(|v| VerifyFigures {
            written: v.blocks_written,
            checked: v.checked(),
            errors: v.errors,
        });
        PhaseFigures { name: r.name.clone(), running, elapsed_s: r.elapsed_s, jobs, verify }
    }
}
