//! Listening in on the agent's runs beside the coordinator (`iolab agent --metrics-listen`):
//! a [`Tap`] is asked for a sink at each run's start and hears every event the run's executor
//! emits, on the run's own thread, as the coordinator's `Forward` does; it is told how the run
//! ended. The agent knows nothing of what listens (the CLI plugs its live metrics in).

use iolab_model::events::Sink;
use iolab_model::Status;
use iolab_spec::Plan;

/// Whatever listens to the agent's runs.
pub trait Tap: Send + Sync {
    /// A run for node `node` (the coordinator's name for it; may be empty) begins; `run` is the
    /// run's mark (32 hex digits), the same for every step of one run of the coordinator's.
    fn begin(&self, node: &str, run: Option<&str>, plan: &Plan) -> Box<dyn Tapped>;
}

/// One run's listener.
pub trait Tapped: Sink + Send {
    /// The run ended so.
    fn end(&mut self, status: Status);
}

/// Two sinks hearing one stream, the coordinator's first.
pub(crate) struct Both<'a> {
    pub first: &'a mut dyn Sink,
    pub second: Option<&'a mut dyn Tapped>,
}

impl Sink for Both<'_> {
    fn event(&mut self, node: Option<&str>, event: iolab_model::Event<'_>) {
        self.first.event(node, event);
        if let Some(s) = self.second.as_deref_mut() {
            s.event(node, event);
        }
    }
}
