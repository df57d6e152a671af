//! Keeping a run's seconds and system samples in memory, for callers without a store (`iolab
//! run --no-store`, tests): the executor hands them out as they are measured and keeps none;
//! [`Keep`] collects them beside another sink and puts them back into the result at the end.
//! Its memory grows with the run's length, as the whole result's did before they streamed.

use crate::executor::{run_plan, Control, RunError, Sink};
use iolab_model::{Event, RunResult, TimelinePoint};
use iolab_spec::Plan;
use iolab_sysstat::Rates;

/// Forwards everything to `inner` and keeps each phase's seconds and samples.
pub struct Keep<'a> {
    inner: &'a mut dyn Sink,
    timeline: Vec<Vec<TimelinePoint>>,
    samples: Vec<Vec<Rates>>,
}

impl<'a> Keep<'a> {
    pub fn new(inner: &'a mut dyn Sink) -> Self {
        Keep { inner, timeline: Vec::new(), samples: Vec::new() }
    }

    fn phase(&mut self, index: usize) {
        if self.timeline.len() <= index {
            self.timeline.resize_with(index + 1, Vec::new);
            self.samples.resize_with(index + 1, Vec::new);
        }
    }

    /// Put the kept seconds and samples into `r`'s phases (in time order; samples only where
    /// the phase has a system summary, trimmed to the devices it kept).
    pub fn fill(self, r: &mut RunResult) {
        for ((p, mut tl), mut samples) in r.phases.iter_mut().zip(self.timeline).zip(self.samples) {
            tl.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
            p.timeline = tl;
            if let Some(sys) = &mut p.system {
                for s in &mut samples {
                    s.keep_those_of(&sys.mean);
                }
                sys.samples = samples;
            }
        }
    }
}

impl Sink for Keep<'_> {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        match event {
            Event::PhaseStart { phase, .. } => self.phase(phase),
            Event::Tick { phase, point, .. } => {
                self.phase(phase);
                self.timeline[phase].push(point.clone());
            }
            Event::Correct { phase, point } => {
                self.phase(phase);
                match self.timeline[phase].iter_mut().find(|p| p.t_s == point.t_s) {
                    Some(p) => *p = point.clone(),
                    None => self.timeline[phase].push(point.clone()),
                }
            }
            Event::Sample { phase, rates } => {
                self.phase(phase);
                self.samples[phase].push(rates.clone());
            }
            _ => {}
        }
        self.inner.event(node, event)
    }
}

/// [`run_plan`] with the result as whole as it was before seconds and samples streamed out:
/// timeline and samples kept in memory and put back.
pub fn run_plan_kept(plan: &Plan, ctl: &Control, sink: &mut dyn Sink) -> Result<RunResult, RunError> {
    let mut keep = Keep::new(sink);
    let mut r = run_plan(plan, ctl, &mut keep)?;
    keep.fill(&mut r);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{Acc, Emit, PhaseResult};

    fn point(t_s: f64, reads: u64) -> TimelinePoint {
        let mut a = Acc::default();
        for _ in 0..reads {
            a.record(iolab_model::OpClass::Read, 4096, 1000);
        }
        let mut p = TimelinePoint { t_s, ..Default::default() };
        p.add(&a);
        p
    }

    #[test]
    fn a_correction_replaces_its_second_and_seconds_come_back_in_order() {
        let mut none = crate::NoSink;
        let mut k = Keep::new(&mut none);
        k.tick(0, &point(1.0, 3), 0);
        k.tick(0, &point(2.0, 4), 0);
        k.correct(0, &point(1.0, 5));
        k.correct(0, &point(0.5, 1)); // a second never ticked is added
        let mut r = RunResult {
            nodes: Vec::new(),
            verdict: None,
            precondition: None,
            schema_version: 1,
            iolab_version: String::new(),
            node: String::new(),
            started_unix_s: 0.0,
            status: iolab_model::Status::Complete,
            error: None,
            plan: Plan { phases: Vec::new() },
            phases: vec![PhaseResult {
                verify: None,
                workload: Default::default(),
                notes: Vec::new(),
                nodes: Vec::new(),
                started_unix_s: None,
                first_done_s: None,
                last_done_s: None,
                findings: Vec::new(),
                limit: None,
                holes: None,
                layout: None,
                steady_state: None,
                warmup: None,
                name: "p".into(),
                elapsed_s: 2.0,
                interrupted: false,
                total: Default::default(),
                jobs: Vec::new(),
                timeline: Vec::new(),
                cpu: Default::default(),
                system: None,
            }],
        };
        k.fill(&mut r);
        let tl = &r.phases[0].timeline;
        assert_eq!(tl.iter().map(|p| p.t_s).collect::<Vec<_>>(), [0.5, 1.0, 2.0]);
        assert_eq!(tl.iter().map(|p| p.read_ops).collect::<Vec<_>>(), [1, 5, 4]);
    }
}
