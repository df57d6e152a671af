//! A run's events on the wire: the agent turns each event of its executor's stream
//! (`iolab_model::events`) into a message of the protocol's `Event` ([`encode`]); the
//! coordinator reads them back ([`point`], [`rates`], `wire::unpack`), checks them against the
//! node's plan and hands them on as events of the same stream, the node's name added.
//! Bulky values travel as their JSON, histograms as HDR V2 bytes ([`crate::wire`]).

use crate::proto::{self, event::Kind};
use crate::{unix_ns, wire};
use iolab_model::{Event, PhaseResult, TimelinePoint};
use iolab_sysstat::Rates;
use std::time::Duration;

/// A phase result as it travels in Progress and PhaseEnd, with its measured start (agent
/// clock, ns; 0: not known).
pub fn phase(phase: usize, result: &PhaseResult, started_unix_ns: i64) -> proto::Phase {
    proto::Phase { phase: phase as u32, result: Some(wire::pack(result)), started_unix_ns, keys: Vec::new() }
}

/// The message an event becomes, for an agent whose current phase has `ramp` before its
/// measured work and whose phases' measured starts are `started` (agent clock, ns). `None`:
/// the event does not travel by itself (a phase about to be prepared; key maps, which go with
/// the phase's end).
pub fn encode(event: &Event<'_>, ramp: Duration, started: Option<i64>) -> Option<Kind> {
    Some(match *event {
        Event::Message(text) => Kind::Message(proto::Message { text: text.into() }),
        Event::Started { phase, at, ran } => Kind::PhaseStart(proto::PhaseStart {
            phase: phase as u32,
            started_unix_ns: unix_ns(at + ramp),
            actual_unix_ns: unix_ns(ran),
        }),
        Event::Tick { phase, point, bytes_so_far } => Kind::Tick(proto::Tick {
            phase: phase as u32,
            point_json: serde_json::to_vec(point).unwrap_or_default(),
            bytes_so_far,
        }),
        Event::Correct { phase, point } => Kind::Correct(proto::Tick {
            phase: phase as u32,
            point_json: serde_json::to_vec(point).unwrap_or_default(),
            bytes_so_far: 0,
        }),
        Event::Sample { phase, rates } => Kind::Sample(proto::Sample {
            phase: phase as u32,
            rates_json: serde_json::to_vec(rates).unwrap_or_default(),
        }),
        Event::Progress { phase: i, so_far } => Kind::Progress(phase(i, so_far, started.unwrap_or(0))),
        Event::PhaseEnd { phase: i, result } => Kind::PhaseEnd(phase(i, result, started.unwrap_or(0))),
        Event::PhaseStart { .. } | Event::KeyMaps { .. } => return None,
    })
}

/// The second a Tick or Correct carries.
pub fn point(t: &proto::Tick) -> Result<TimelinePoint, serde_json::Error> {
    serde_json::from_slice(&t.point_json)
}

/// The system sample a Sample carries.
pub fn rates(s: &proto::Sample) -> Result<Rates, serde_json::Error> {
    serde_json::from_slice(&s.rates_json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn events_travel_and_come_back() {
        let point = TimelinePoint { t_s: 2.0, write_ops: 7, write_lat_mean_ns: 1234, ..Default::default() };
        let Some(Kind::Tick(t)) =
            encode(&Event::Tick { phase: 1, point: &point, bytes_so_far: 9 }, Duration::ZERO, None)
        else {
            panic!("a tick travels as a Tick")
        };
        assert_eq!((t.phase, t.bytes_so_far), (1, 9));
        let back = super::point(&t).unwrap();
        assert_eq!((back.write_ops, back.write_lat_mean_ns), (7, 1234));
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let Some(Kind::PhaseStart(s)) = encode(&Event::Started { phase: 0, at, ran: at }, Duration::from_secs(2), None)
        else {
            panic!("a start travels as a PhaseStart")
        };
        assert_eq!(
            (s.actual_unix_ns, s.started_unix_ns),
            (100_000_000_000, 102_000_000_000),
            "measured after the ramp"
        );
        let r = PhaseResult { name: "p".into(), elapsed_s: 1.5, ..Default::default() };
        let Some(Kind::PhaseEnd(p)) = encode(&Event::PhaseEnd { phase: 0, result: &r }, Duration::ZERO, Some(5)) else {
            panic!("a phase's end travels as a PhaseEnd")
        };
        assert_eq!(p.started_unix_ns, 5);
        assert_eq!(wire::unpack(p.result.as_ref().unwrap()).unwrap().elapsed_s, 1.5);
        assert!(encode(&Event::KeyMaps { phase: 0, maps: &[] }, Duration::ZERO, None).is_none());
    }
}
