//! A scenario's steps as a run of steps: each step runs each part's jobs on its node at one
//! instant (a one-phase plan per node, its working directories made first), the nodes a step
//! does not name sitting it out. The scenario itself (its steps, its verdict, its chart) is
//! the report's `Scenario`; this is only how its expanded steps run.

use crate::steps::{Step, Steps};
use iolab_coordinator::Work;
use iolab_spec::{Phase, Plan, StepPlan};
use iolab_workload::layout::RunMark;
use std::sync::Arc;

/// An expanded scenario on the cluster's nodes (`names`, in the cluster's order).
pub struct ScenarioSteps<'a> {
    pub plan: &'a StepPlan,
    pub names: Vec<String>,
}

impl ScenarioSteps<'_> {
    /// Step `i` as one phase of the whole run: every part's jobs, named by their node.
    fn phase(&self, i: usize) -> Phase {
        let st = &self.plan.steps[i];
        let jobs = st
            .parts
            .iter()
            .flat_map(|p| {
                p.jobs.iter().map(move |j| {
                    let mut j = j.clone();
                    j.name = format!("{}:{}", p.node, j.name);
                    j
                })
            })
            .collect();
        Phase { name: st.name.clone(), jobs }
    }
}

impl Steps for ScenarioSteps<'_> {
    fn plan(&self) -> Plan {
        Plan { phases: (0..self.plan.steps.len()).map(|i| self.phase(i)).collect() }
    }
    fn count(&self) -> usize {
        self.plan.steps.len()
    }
    fn step(&mut self, i: usize, mark: &RunMark) -> Result<Step, String> {
        let st = &self.plan.steps[i];
        let work = self
            .names
            .iter()
            .map(|n| {
                st.parts.iter().find(|p| &p.node == n).map(|p| Work {
                    plan: Arc::new(Plan { phases: vec![Phase { name: st.name.clone(), jobs: p.jobs.clone() }] }),
                    mkdirs: p.mkdirs.clone(),
                    run_mark: mark.clone(),
                    keys: Vec::new(),
                })
            })
            .collect();
        Ok(Step { name: st.name.clone(), plan: Arc::new(Plan { phases: vec![self.phase(i)] }), work })
    }
}
