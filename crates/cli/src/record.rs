//! Saving a run while it runs: the run row before the first I/O; once a second, in one
//! transaction, the seconds just finished, the system samples taken meanwhile and the phase as
//! it stands (per job and per thread); each phase as it ends; the status at the end. Nothing of
//! the timeline or the samples stays in memory: the result printed at the end reads them back
//! ([`Recorder::fill`]). A database problem during the run is reported once and the
//! measurement goes on.

use crate::args::SaveArgs;
use anyhow::{Context, Result};
use iolab_spec::Plan;
use iolab_store::Store;
use iolab_sysstat::Rates;
use iolab_workload::model::{now_unix_s, RunKind};
use iolab_workload::results::{PhaseResult, RunResult, TimelinePoint};
use iolab_workload::{Event, Sink};

/// Samples held before a write even without a finished second (at `--sample-interval 10ms`,
/// about 2.5 s of them, ~0.4 MiB).
const SAMPLES_HELD: usize = 256;

/// The recording connection's page cache, in KiB.
const RECORDING_CACHE_KIB: u32 = 256;

pub struct Recorder {
    store: Store,
    pub run: i64,
    node: String,
    broken: bool,
    /// What waits for the next write: the phase, its finished seconds and samples.
    phase: usize,
    seconds: Vec<TimelinePoint>,
    samples: Vec<Rates>,
}

impl Recorder {
    /// Open the database and record the run as started; `None` with `--no-store`.
    pub fn begin(save: &SaveArgs, kind: RunKind, name: &str, plan: &Plan) -> Result<Option<Recorder>> {
        if save.no_store {
            return Ok(None);
        }
        let store =
            Store::open(save.db.target()).context("opening the results database (use --no-store to run without it)")?;
        // Recording only appends: a small page cache keeps a long run's memory flat.
        store.limit_cache(RECORDING_CACHE_KIB)?;
        let target = plan.phases.iter().flat_map(|p| &p.jobs).next().map(|j| j.target.clone());
        let target = target.map(|t| iolab_sysstat::describe(&t, &Default::default()));
        let host = iolab_sysstat::host_facts(target.as_ref());
        let labels = save.labels.iter().cloned().collect();
        let run = store.begin_run(kind, name, &labels, &host, plan, now_unix_s())?;
        Ok(Some(Recorder {
            store,
            run,
            node: host.hostname,
            broken: false,
            phase: 0,
            seconds: Vec::new(),
            samples: Vec::new(),
        }))
    }

    fn keep(&mut self, r: iolab_store::Result<()>) {
        if let Err(e) = r {
            if !self.broken {
                errln!("iolab: warning: {e}; the run goes on, unsaved from here");
            }
            self.broken = true;
        }
    }

    /// Write what waits, with the phase as it stands if given.
    fn flush(&mut self, so_far: Option<&PhaseResult>) {
        if self.broken {
            self.seconds.clear();
            self.samples.clear();
            return;
        }
        if self.seconds.is_empty() && self.samples.is_empty() && so_far.is_none() {
            return;
        }
        let res = self.store.add_second(self.run, self.phase, &self.node, &self.seconds, &self.samples, so_far);
        self.seconds.clear();
        self.samples.clear();
        self.keep(res);
    }

    /// Switch to phase `index`, writing what waits for the one before.
    fn at(&mut self, index: usize) {
        if index != self.phase {
            self.flush(None);
            self.phase = index;
        }
    }

    /// Save what follows under another node's name (a run of several nodes: each node's rows,
    /// and the aggregate's under `*`).
    pub fn set_node(&mut self, node: &str) {
        if self.node != node {
            self.flush(None);
            self.node = node.to_string();
        }
    }

    /// Save a run of several nodes' nodes and, for a scenario, its verdict.
    pub fn set_nodes(
        &mut self,
        nodes: &[iolab_workload::model::NodeInfo],
        verdict: Option<&iolab_workload::model::Verdict>,
    ) {
        if self.broken {
            return;
        }
        let mut res = self.store.set_nodes(self.run, nodes);
        if let (Ok(()), Some(v)) = (&res, verdict) {
            res = self.store.set_verdict(self.run, v);
        }
        self.keep(res);
    }

    /// Put the saved seconds and samples back into the result's phases, for printing it.
    pub fn fill(&self, r: &mut RunResult) -> iolab_store::Result<()> {
        for (i, p) in r.phases.iter_mut().enumerate() {
            let (timeline, samples) = self.store.series(self.run, &self.node, i)?;
            p.timeline = timeline;
            if let Some(sys) = &mut p.system {
                sys.samples = samples;
                for s in &mut sys.samples {
                    s.keep_those_of(&sys.mean);
                }
            }
        }
        Ok(())
    }

    /// Save the preconditioning the run followed, or did.
    pub fn set_precondition(&mut self, p: &iolab_workload::model::steady::Precondition) {
        if self.broken {
            return;
        }
        let res = self.store.set_precondition(self.run, p);
        self.keep(res);
    }

    /// The last `iolab precondition` of `target` on this host recorded before this run, linked
    /// to it (saved as this run's preconditioning); `None` when there is none (or the store
    /// cannot say: a warning).
    pub fn link_precondition(
        &mut self,
        target: &std::path::Path,
    ) -> Option<iolab_workload::model::steady::Precondition> {
        if self.broken {
            return None;
        }
        let name = crate::precondition_cmd::target_name(target);
        match self.store.last_precondition(&self.node, &name, self.run) {
            Ok(Some(p)) => {
                self.set_precondition(&p);
                Some(p)
            }
            Ok(None) => None,
            Err(e) => {
                errln!("iolab: warning: looking for the preconditioning of {name}: {e}");
                None
            }
        }
    }

    /// Save the run's plan as it stands (a scenario of rounds grows it round by round).
    pub fn set_plan(&mut self, plan: &Plan) {
        if self.broken {
            return;
        }
        let res = self.store.set_plan(self.run, plan);
        self.keep(res);
    }

    pub fn finish(&mut self, r: &RunResult) {
        let res = self.store.finish_run(self.run, r.status, r.error.as_deref(), now_unix_s());
        self.keep(res);
    }

    pub fn where_(&self) -> String {
        let until = if self.broken { ", up to the database's failure above" } else { "" };
        format!("saved as run {} in {}{until}", self.run, self.store.location())
    }
}

/// Forwards everything to the progress display and the live metrics, and saves what is
/// measured.
pub struct Tee<'a> {
    pub show: &'a mut dyn Sink,
    pub rec: Option<&'a mut Recorder>,
    /// `--metrics-listen`'s feed.
    pub metrics: Option<&'a mut iolab_metrics::Feed>,
}

impl Sink for Tee<'_> {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        self.show.event(node, event);
        if let Some(m) = self.metrics.as_deref_mut() {
            m.event(node, event);
        }
        let Some(r) = self.rec.as_deref_mut() else { return };
        match event {
            Event::Tick { phase, point, .. } | Event::Correct { phase, point } => {
                r.at(phase);
                r.seconds.push(point.clone());
            }
            Event::Sample { phase, rates } => {
                r.at(phase);
                r.samples.push(rates.clone());
                if r.samples.len() >= SAMPLES_HELD {
                    r.flush(None);
                }
            }
            Event::Progress { phase, so_far } => {
                r.at(phase);
                r.flush(Some(so_far));
            }
            Event::PhaseEnd { phase, result } => {
                r.at(phase);
                r.flush(None);
                if !r.broken {
                    let res = r.store.add_phase(r.run, phase, &r.node, result);
                    r.keep(res);
                }
            }
            _ => {}
        }
    }
}
