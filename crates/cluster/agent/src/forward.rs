//! The agent's side of a run's events: its executor's stream (`iolab_model::events`) goes to
//! the coordinator as the protocol's events as it comes ([`Forward`], one [`Sink`] like any
//! other), and each phase's start waits for the coordinator's Go ([`Gate`]).

use iolab_cluster_protocol::proto::{self, event, Event};
use iolab_cluster_protocol::{event as ev, events, from_unix_ns, keys, unix_ns};
use iolab_model::events::{Event as RunEvent, Sink};
use iolab_workload::StartGate;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as smpsc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tonic::Status;

/// Where a run's messages to the coordinator go.
pub(crate) type Outbox = mpsc::UnboundedSender<Result<Event, Status>>;

/// The start gate: say Ready, then wait for the coordinator's Go (or a stop).
pub(crate) struct Gate {
    pub tx: Outbox,
    pub go: Mutex<smpsc::Receiver<(u32, i64)>>,
}

impl StartGate for Gate {
    fn open(&self, phase: usize, stop: &AtomicBool) -> Option<SystemTime> {
        let _ = self.tx.send(Ok(ev(event::Kind::Ready(proto::Ready { phase: phase as u32 }))));
        let go = self.go.lock().ok()?;
        while !stop.load(Ordering::Relaxed) {
            match go.recv_timeout(Duration::from_millis(20)) {
                Ok((p, at)) if p as usize == phase => return Some(from_unix_ns(at)),
                Ok(_) => {}
                Err(smpsc::RecvTimeoutError::Timeout) => {}
                Err(smpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
        None
    }
}

/// The run's sink: every event goes to the coordinator as it comes.
pub(crate) struct Forward {
    tx: Outbox,
    /// The current phase's ramp: its measured work begins that long after its start.
    ramp: Duration,
    /// Each phase's measured start, agent clock (ns).
    started: Vec<Option<i64>>,
    /// Key maps to send with the next phase's end.
    maps: Vec<proto::KeyMap>,
}

impl Forward {
    pub fn new(tx: Outbox) -> Forward {
        Forward { tx, ramp: Duration::ZERO, started: Vec::new(), maps: Vec::new() }
    }
}

impl Sink for Forward {
    fn event(&mut self, _node: Option<&str>, event: RunEvent<'_>) {
        match event {
            RunEvent::PhaseStart { spec, .. } => {
                self.ramp = spec.jobs.iter().map(|j| j.ramp).max().unwrap_or_default();
            }
            RunEvent::Started { phase, at, .. } => {
                if self.started.len() <= phase {
                    self.started.resize(phase + 1, None);
                }
                self.started[phase] = Some(unix_ns(at + self.ramp));
            }
            RunEvent::KeyMaps { maps, .. } => self.maps = maps.iter().map(keys::map_out).collect(),
            _ => {}
        }
        let started = event.phase().and_then(|i| self.started.get(i).copied().flatten());
        if let Some(mut kind) = events::encode(&event, self.ramp, started) {
            if let event::Kind::PhaseEnd(p) = &mut kind {
                p.keys = std::mem::take(&mut self.maps);
            }
            let _ = self.tx.send(Ok(ev(kind)));
        }
    }
}
