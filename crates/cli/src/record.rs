//! Saving a run while it runs: the run row before the first I/O, each second of the timeline
//! as it is measured, each phase as it ends, the status at the end. A database problem during
//! the run is reported once and the measurement goes on.

use crate::args::SaveArgs;
use anyhow::{Context, Result};
use iolab_spec::Plan;
use iolab_store::Store;
use iolab_workload::results::{PhaseResult, RunResult, TimelinePoint};
use iolab_workload::{Expect, Sink};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Recorder {
    store: Store,
    pub run: i64,
    node: String,
    broken: bool,
}

fn now_unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl Recorder {
    /// Open the database and record the run as started; `None` with `--no-store`.
    pub fn begin(save: &SaveArgs, kind: &str, name: &str, plan: &Plan) -> Result<Option<Recorder>> {
        if save.no_store {
            return Ok(None);
        }
        let path = save.db.path();
        let store = Store::open(&path).context("opening the results database (use --no-store to run without it)")?;
        let target = plan.phases.iter().flat_map(|p| &p.jobs).next().map(|j| j.target.clone());
        let target = target.map(|t| iolab_sysstat::describe(&t, &Default::default()));
        let host = iolab_sysstat::host_facts(target.as_ref());
        let labels = save.labels.iter().cloned().collect();
        let run = store.begin_run(kind, name, &labels, &host, plan, now_unix())?;
        Ok(Some(Recorder { store, run, node: host.hostname, broken: false }))
    }

    fn keep(&mut self, r: iolab_store::Result<()>) {
        if let Err(e) = r {
            if !self.broken {
                eprintln!("iolab: warning: {e}; the run goes on, unsaved from here");
            }
            self.broken = true;
        }
    }

    pub fn finish(&mut self, r: &RunResult) {
        let res = self.store.finish_run(self.run, r.status, r.error.as_deref(), now_unix());
        self.keep(res);
    }

    pub fn where_(&self) -> String {
        format!("saved as run {} in {}", self.run, self.store.path().display())
    }
}

/// Forwards everything to the progress display and saves what is measured.
pub struct Tee<'a> {
    pub show: &'a mut dyn Sink,
    pub rec: Option<&'a mut Recorder>,
}

impl Sink for Tee<'_> {
    fn message(&mut self, text: &str) {
        self.show.message(text)
    }
    fn phase_start(&mut self, index: usize, phase: &iolab_spec::Phase, expect: Expect) {
        self.show.phase_start(index, phase, expect)
    }
    fn tick(&mut self, index: usize, point: &TimelinePoint, bytes: u64) {
        self.show.tick(index, point, bytes);
        if let Some(r) = self.rec.as_deref_mut().filter(|r| !r.broken) {
            let res = r.store.add_tick(r.run, index, &r.node, point);
            r.keep(res);
        }
    }
    fn phase_end(&mut self, index: usize, result: &PhaseResult) {
        self.show.phase_end(index, result);
        if let Some(r) = self.rec.as_deref_mut().filter(|r| !r.broken) {
            let res = r.store.add_phase(r.run, index, &r.node, result);
            r.keep(res);
        }
    }
}
