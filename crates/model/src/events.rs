//! What happens during a run, as it happens: one stream for every producer and every listener.
//! The executor emits it for its own run; an agent forwards it to its coordinator (as the
//! protocol's `Event`); the coordinator hands each node's stream on, with the node's name added
//! by a wrapper ([`Named`]); a run of steps shifts each step's phases to their place in the
//! whole run ([`Shifted`]). The CLI's progress display and recorder, `workload::Keep`, and
//! later live metrics or a steady-state detector are [`Sink`]s: one method, one enum.
//!
//! The stream's guarantees, as the executor keeps them: each finished second ([`Event::Tick`])
//! and each system sample ([`Event::Sample`]) is handed on as it comes and kept by nobody
//! upstream (a sink that wants them keeps them); a second changed by a late report comes again
//! as [`Event::Correct`]; the phase as it stands ([`Event::Progress`]) comes at its start and
//! once a second. The [`PhaseResult`]s of `Progress` and `PhaseEnd` carry no timeline and no
//! system samples: those travel only as `Tick` and `Sample`.

use crate::results::{PhaseResult, TimelinePoint};
use crate::verify::HandedMap;
use iolab_spec::Phase;
use iolab_sysstat::Rates;
use std::time::{Duration, SystemTime};

/// What a phase is expected to take, for progress displays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expect {
    pub duration: Option<Duration>,
    pub bytes: Option<u64>,
}

/// One thing that happened in a run. `phase` is the phase's index in the run (0-based).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A line for the user (laying out a file, a node lost).
    Message(&'a str),
    /// A phase is about to be prepared (files laid out, workers started).
    PhaseStart { phase: usize, spec: &'a Phase, expect: Expect },
    /// The phase's clock began: its workers were released at `at` (after its start gate; a
    /// ramp, if any, is part of the phase from here); the first of them ran at `ran` (later
    /// than `at` on a loaded machine: where its I/O truly began, what a start skew measures).
    Started { phase: usize, at: SystemTime, ran: SystemTime },
    /// A finished second of the phase, and the bytes moved so far.
    Tick { phase: usize, point: &'a TimelinePoint, bytes_so_far: u64 },
    /// A second already ticked, changed by a worker's late report: it replaces the earlier one.
    Correct { phase: usize, point: &'a TimelinePoint },
    /// A system sample (CPU, disks, network), as it is taken.
    Sample { phase: usize, rates: &'a Rates },
    /// The phase as it stands: per job and per thread so far, `interrupted` set (what a run
    /// killed now would have measured).
    Progress { phase: usize, so_far: &'a PhaseResult },
    /// The key maps of the files the phase wrote with `--verify-on other`, just before its end
    /// (an agent sends them with it, for the coordinator to hand to the reader).
    KeyMaps { phase: usize, maps: &'a [HandedMap] },
    /// The phase ended, with its result.
    PhaseEnd { phase: usize, result: &'a PhaseResult },
}

impl Event<'_> {
    /// The phase the event belongs to (`None`: a message).
    pub fn phase(&self) -> Option<usize> {
        match *self {
            Event::Message(_) => None,
            Event::PhaseStart { phase, .. }
            | Event::Started { phase, .. }
            | Event::Tick { phase, .. }
            | Event::Correct { phase, .. }
            | Event::Sample { phase, .. }
            | Event::Progress { phase, .. }
            | Event::KeyMaps { phase, .. }
            | Event::PhaseEnd { phase, .. } => Some(phase),
        }
    }

    /// The same event with its phase moved `by` places on.
    pub fn shifted(self, by: usize) -> Self {
        let mut e = self;
        match &mut e {
            Event::Message(_) => {}
            Event::PhaseStart { phase, .. }
            | Event::Started { phase, .. }
            | Event::Tick { phase, .. }
            | Event::Correct { phase, .. }
            | Event::Sample { phase, .. }
            | Event::Progress { phase, .. }
            | Event::KeyMaps { phase, .. }
            | Event::PhaseEnd { phase, .. } => *phase += by,
        }
        e
    }
}

/// Receives a run's events as they happen. `node` names the node they happened on in a run of
/// several (`None`: this process's own run). A sink runs on the thread that coordinates the
/// run, never on a worker's: what it does costs no I/O its time, but it should not block.
pub trait Sink {
    fn event(&mut self, node: Option<&str>, event: Event<'_>);
}

/// A sink that ignores everything.
pub struct NoSink;

impl Sink for NoSink {
    fn event(&mut self, _node: Option<&str>, _event: Event<'_>) {}
}

/// Every event of `inner`'s stream as node `node`'s (the coordinator wraps its sink so for each
/// node whose events it follows).
pub struct Named<'a> {
    pub node: &'a str,
    pub inner: &'a mut dyn Sink,
}

impl Sink for Named<'_> {
    fn event(&mut self, _node: Option<&str>, event: Event<'_>) {
        self.inner.event(Some(self.node), event)
    }
}

/// Every event's phase moved `by` places on: a step of a run of steps is a run of its own whose
/// phase 0 is the whole run's phase `by`.
pub struct Shifted<'a> {
    pub by: usize,
    pub inner: &'a mut dyn Sink,
}

impl Sink for Shifted<'_> {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        self.inner.event(node, event.shifted(self.by))
    }
}

/// Emitting events, one call each (what the executor calls; a sink implements [`Sink::event`]
/// alone). Every method sends its event as this process's own (`node` absent).
pub trait Emit: Sink {
    fn message(&mut self, text: &str) {
        self.event(None, Event::Message(text))
    }
    fn phase_start(&mut self, phase: usize, spec: &Phase, expect: Expect) {
        self.event(None, Event::PhaseStart { phase, spec, expect })
    }
    fn started(&mut self, phase: usize, at: SystemTime, ran: SystemTime) {
        self.event(None, Event::Started { phase, at, ran })
    }
    fn tick(&mut self, phase: usize, point: &TimelinePoint, bytes_so_far: u64) {
        self.event(None, Event::Tick { phase, point, bytes_so_far })
    }
    fn correct(&mut self, phase: usize, point: &TimelinePoint) {
        self.event(None, Event::Correct { phase, point })
    }
    fn sample(&mut self, phase: usize, rates: &Rates) {
        self.event(None, Event::Sample { phase, rates })
    }
    fn progress(&mut self, phase: usize, so_far: &PhaseResult) {
        self.event(None, Event::Progress { phase, so_far })
    }
    fn key_maps(&mut self, phase: usize, maps: &[HandedMap]) {
        self.event(None, Event::KeyMaps { phase, maps })
    }
    fn phase_end(&mut self, phase: usize, result: &PhaseResult) {
        self.event(None, Event::PhaseEnd { phase, result })
    }
}

impl<T: Sink + ?Sized> Emit for T {}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sink heard: (node, phase, kind).
    #[derive(Default)]
    struct Heard(Vec<(Option<String>, Option<usize>, &'static str)>);

    impl Sink for Heard {
        fn event(&mut self, node: Option<&str>, event: Event<'_>) {
            let kind = match event {
                Event::Message(_) => "message",
                Event::Tick { .. } => "tick",
                Event::PhaseEnd { .. } => "end",
                _ => "other",
            };
            self.0.push((node.map(String::from), event.phase(), kind));
        }
    }

    #[test]
    fn wrappers_name_the_node_and_shift_the_phase() {
        let mut heard = Heard::default();
        {
            let mut shifted = Shifted { by: 3, inner: &mut heard };
            let mut named = Named { node: "a", inner: &mut shifted };
            named.tick(0, &TimelinePoint::default(), 7);
            named.message("hello");
            named.phase_end(1, &PhaseResult::default());
        }
        heard.tick(2, &TimelinePoint::default(), 0);
        let a = Some("a".to_string());
        assert_eq!(
            heard.0,
            [(a.clone(), Some(3), "tick"), (a.clone(), None, "message"), (a, Some(4), "end"), (None, Some(2), "tick")]
        );
    }
}
