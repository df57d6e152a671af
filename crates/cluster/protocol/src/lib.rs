//! iolab-cluster-protocol: what an agent and its coordinator say to each other, and nothing
//! else. The gRPC messages and service of proto/agent.proto ([`proto`]), the protocol's
//! version and its lease ([`LEASE`], [`BEAT`]), iolab's own data packed for the wire: a phase
//! result with its histograms ([`wire`]), a key map ([`keys`]), a run's events ([`events`]),
//! how a run ended ([`done`]). The bottom layer of the cluster crates: the transports, the
//! agent and the coordinator import it; it imports none of them.

#![forbid(unsafe_code)]

pub mod done;
pub mod events;
pub mod keys;
pub mod wire;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The generated gRPC types and service stubs of `iolab.agent.v1`.
#[allow(clippy::all)]
pub mod proto {
    tonic::include_proto!("iolab.agent.v1");
}

/// The protocol version this build speaks (see proto/agent.proto). 2: key maps handed over
/// with Start and PhaseEnd (`--verify-on other`). 3: Done carries the run's status, error and
/// start (no longer the whole result as JSON). 4: EndPhase, steady state judged across the
/// nodes by the coordinator. 5: a trim class (histograms per class one more per job).
pub const PROTOCOL_VERSION: u32 = 5;

/// How long an agent runs on without hearing from its coordinator, and how long a coordinator
/// waits on a silent node before it takes it for lost.
pub const LEASE: Duration = Duration::from_millis(4500);

/// How long an agent's I/O may go on past the last word it heard from its coordinator: a beat
/// less than [`LEASE`], so an agent's lease has always run out by the time its coordinator
/// takes it for lost (each side's last word came within a beat of the other's), and an agent
/// resumed after that (SIGSTOP, SIGCONT) issues nothing.
pub const IO_LEASE: Duration = Duration::from_millis(4000);

/// How often each side says it is there: the coordinator's heartbeat, the agent's Alive. Nine
/// beats fit in a lease, so a few late ones (a loaded machine, a retransmission) lose nothing,
/// and a silent peer is noticed within 5 s of its last word.
pub const BEAT: Duration = Duration::from_millis(500);

/// The largest message either side decodes (a phase result with its histograms, a key map of
/// 16 Mi blocks).
pub const MAX_MESSAGE: usize = 64 << 20;

/// A wall-clock instant in ns since the Unix epoch (0 before it).
pub fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// The instant `ns` since the Unix epoch names (the epoch for a negative one).
pub fn from_unix_ns(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
}

/// An event of the run stream, as sent.
pub fn event(kind: proto::event::Kind) -> proto::Event {
    proto::Event { kind: Some(kind) }
}
