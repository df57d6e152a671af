//! The steady-state judge of a phase (issue 29), on the coordinating thread: it reads the
//! phase's finished seconds as the aggregator hands them out (the jobs' summed figure), closes
//! SNIA rounds or fio samples, judges each window by `iolab_model::steady` and says when the
//! phase may end. Workers never see it: the executor sets the phase's own stop flag.
//! On several nodes ([`Judge::held`]) a node's judge never ends its phase: it judges every
//! window on, and the coordinator, judging each node and the nodes' sum by the same code
//! ([`Judge::recording`], [`Judge::push`]), ends the phase everywhere ([`PhaseEnds`]).

use iolab_model::steady::{judge_fio, judge_snia, SteadyStateResult, Window};
use iolab_model::TimelinePoint;
use iolab_spec::steady::{SteadyState, Tracked};
use iolab_spec::{Phase, Plan};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// What one stretch of seconds (a round, a sample) moved.
#[derive(Default, Clone, Copy)]
struct Sum {
    ops: f64,
    bytes: f64,
    /// Latency × operations, ns, for the mean.
    lat: f64,
}

impl Sum {
    fn add(&mut self, p: &TimelinePoint) {
        let ops = (p.read_ops + p.write_ops) as f64;
        self.ops += ops;
        self.bytes += (p.read_bytes + p.write_bytes) as f64;
        self.lat += p.read_lat_mean_ns as f64 * p.read_ops as f64 + p.write_lat_mean_ns as f64 * p.write_ops as f64;
    }
    /// The tracked figure over `secs` seconds.
    fn value(&self, t: Tracked, secs: f64) -> f64 {
        match t {
            Tracked::Iops => self.ops / secs,
            Tracked::Bw => self.bytes / secs,
            Tracked::Lat => {
                if self.ops > 0.0 {
                    self.lat / self.ops
                } else {
                    0.0
                }
            }
        }
    }
}

/// The phases the coordinator of a run on several nodes has ended (all nodes steady), each
/// with the round it was steady at: the agent notes them as its coordinator says so, the
/// executor's coordinating thread reads them and ends a phase judged for steady state only
/// then (`Control::phase_ends`).
#[derive(Debug, Default)]
pub struct PhaseEnds(Mutex<BTreeMap<usize, u64>>);

impl PhaseEnds {
    /// Phase `phase` (from 0) is to end, steady at round `round` (from 1).
    pub fn end(&self, phase: usize, round: u64) {
        if let Ok(mut s) = self.0.lock() {
            s.entry(phase).or_insert(round);
        }
    }
    /// The round phase `phase` was ended at, once it was.
    pub fn ended(&self, phase: usize) -> Option<u64> {
        self.0.lock().ok().and_then(|s| s.get(&phase).copied())
    }
}

/// A phase's judge: fed each finished second, it says when the phase is steady.
pub struct Judge {
    crit: SteadyState,
    /// The first second (from the measured window's start) that counts: fio's ss_ramp less the
    /// job's ramp, which the measured seconds already leave out.
    first_sec: i64,
    /// The length of a round or sample, seconds.
    len_s: i64,
    /// The first second past the job's runtime (SNIA: its last round): a partial second after
    /// the deadline (the last I/O completing late) is no round or sample.
    end_sec: i64,
    /// The round or sample being summed (counted from 0) and its sum.
    current: i64,
    sum: Sum,
    /// SNIA: every round's value; fio: the last window's samples.
    values: VecDeque<f64>,
    /// Rounds or samples closed in all.
    measured: u64,
    window: Option<Window>,
    steady_at: Option<u64>,
    /// Several nodes: never ends the phase itself, judges every window on; the verdict is the
    /// last window's.
    held: bool,
    /// Each stretch closed since the last [`Judge::closed`]: its value and whether the window
    /// it ended was steady (kept only when asked, by the coordinator).
    closed: Option<Vec<(f64, bool)>>,
    /// Held: the round the coordinator ended the phase at; nothing after it counts.
    ended_at: Option<u64>,
}

/// A held fio judge keeps this many samples beyond its window, so that one ended a few
/// samples back (its coordinator's word arrived late) can judge that window again.
const HELD_SLACK: usize = 16;

impl Judge {
    /// The judge of `crit` for a phase whose measured seconds start after `ramp`, of a job
    /// that runs at most `runtime` (SNIA: its rounds).
    pub fn new(crit: SteadyState, ramp: Duration, runtime: Option<Duration>) -> Judge {
        let end_sec = match &crit {
            SteadyState::Snia(s) => (s.round_s() as i64).saturating_mul(s.max_rounds as i64),
            SteadyState::Fio(_) => runtime.map_or(i64::MAX, |r| r.as_secs() as i64),
        };
        let (first_sec, len_s) = match &crit {
            SteadyState::Snia(s) => (0, s.round_s() as i64),
            SteadyState::Fio(f) => {
                let skip = f.ramp.saturating_sub(ramp);
                (skip.as_secs() as i64 + i64::from(skip.subsec_nanos() > 0), f.interval.as_secs().max(1) as i64)
            }
        };
        Judge {
            crit,
            first_sec,
            len_s,
            end_sec,
            current: 0,
            sum: Sum::default(),
            values: VecDeque::new(),
            measured: 0,
            window: None,
            steady_at: None,
            held: false,
            closed: None,
            ended_at: None,
        }
    }

    /// The judge of `phase`, if a job of it asks for steady state: the executor's, and the
    /// coordinator's for each node of a run on several nodes (the same seconds judged alike).
    pub fn for_phase(phase: &Phase) -> Option<Judge> {
        let crit = Plan::steady_of(phase)?;
        let ramp = phase.jobs.iter().map(|j| j.ramp).max().unwrap_or_default();
        let runtime = phase.jobs.iter().find(|j| j.steady.is_some()).and_then(|j| j.runtime);
        Some(Judge::new(crit, ramp, runtime))
    }

    /// A judge that never ends its phase (several nodes: the coordinator does): it judges
    /// every window on, and its verdict is the last window's.
    pub fn held(mut self) -> Judge {
        self.held = true;
        self
    }

    /// A held judge that keeps what each stretch closed, for [`Judge::closed`].
    pub fn recording(mut self) -> Judge {
        self.held = true;
        self.closed = Some(Vec::new());
        self
    }

    /// The stretches closed since the last call: each one's value, and whether the window it
    /// ended was judged steady.
    pub fn closed(&mut self) -> Vec<(f64, bool)> {
        self.closed.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Held: the coordinator ended the phase at round (or sample) `round`, counted from 1,
    /// every node and the nodes' sum steady there. Rounds this node closed after it (its word
    /// came while they ran) are forgotten, that window judged again; nothing later counts.
    pub fn end_at(&mut self, round: u64) {
        if self.ended_at.is_some() {
            return;
        }
        self.ended_at = Some(round);
        if self.measured > round {
            let extra = (self.measured - round) as usize;
            let keep = self.values.len().saturating_sub(extra);
            self.values.truncate(keep);
            self.measured = round;
            self.steady_at = None;
            self.window = None;
            self.judge_window();
        }
    }

    /// A stretch's value given whole (the coordinator's aggregate: the nodes' values of one
    /// round); true once steady, as [`Judge::second`].
    pub fn push(&mut self, v: f64) -> bool {
        self.close_with(v)
    }

    /// What is tracked (a round's value of several nodes adds up, but for latency).
    pub fn tracked(&self) -> Tracked {
        match &self.crit {
            SteadyState::Snia(s) => s.tracked,
            SteadyState::Fio(f) => f.criterion.tracked,
        }
    }

    /// Rounds or samples a window holds.
    fn window_len(&self) -> usize {
        match &self.crit {
            SteadyState::Snia(s) => s.window as usize,
            SteadyState::Fio(f) => f.samples() as usize,
        }
    }

    /// Whether the phase was judged steady.
    pub fn steady(&self) -> bool {
        self.steady_at.is_some()
    }

    /// A finished second (seconds come in order; one without any I/O may be missing). True
    /// once the phase is steady: the caller ends it.
    pub fn second(&mut self, p: &TimelinePoint) -> bool {
        if self.steady() && !self.held {
            return true;
        }
        if self.ended_at.is_some() {
            return false;
        }
        let sec = p.t_s.round() as i64 - 1;
        if sec < self.first_sec || sec >= self.end_sec {
            return false;
        }
        let idx = (sec - self.first_sec) / self.len_s;
        // Stretches that ended before this second are closed (a silent second leaves a gap).
        while self.current < idx {
            if self.close() {
                return true;
            }
        }
        self.sum.add(p);
        // The stretch's last second closes it at once.
        if (sec - self.first_sec + 1) % self.len_s == 0 {
            return self.close();
        }
        false
    }

    /// The phase ended after `elapsed` of measured time: a stretch it covered whole is closed
    /// (its last seconds may have been silent), a partial one dropped.
    pub fn finish(&mut self, elapsed: Duration) {
        if (self.steady() && !self.held) || self.ended_at.is_some() {
            return;
        }
        let secs = (elapsed.as_secs() as i64).min(self.end_sec) - self.first_sec;
        while secs > 0 && (self.current + 1) * self.len_s <= secs {
            if self.close() {
                return;
            }
        }
    }

    /// Close the current stretch: its value, then the window judged once it is full.
    fn close(&mut self) -> bool {
        let v = self.sum.value(self.tracked(), self.len_s as f64);
        self.sum = Sum::default();
        self.current += 1;
        self.close_with(v)
    }

    /// A stretch's value: the window judged once it is full. A held judge says false.
    fn close_with(&mut self, v: f64) -> bool {
        self.measured += 1;
        self.values.push_back(v);
        let n = self.window_len();
        if let SteadyState::Fio(_) = self.crit {
            let most = if self.held { n + HELD_SLACK } else { n };
            while self.values.len() > most {
                self.values.pop_front();
            }
        }
        let steady = self.judge_window();
        if let Some(c) = self.closed.as_mut() {
            c.push((v, steady));
        }
        steady && !self.held
    }

    /// The window ending at the last stretch judged, once full: whether it is steady.
    fn judge_window(&mut self) -> bool {
        let n = self.window_len();
        if self.values.len() < n {
            return false;
        }
        let first = self.measured + 1 - n as u64;
        let last: Vec<f64> = self.values.iter().skip(self.values.len() - n).copied().collect();
        let w = match &self.crit {
            SteadyState::Snia(s) => judge_snia(&last, first, s),
            SteadyState::Fio(f) => judge_fio(&last, first, &f.criterion),
        };
        let steady = w.steady;
        self.window = Some(w);
        if steady {
            self.steady_at = Some(self.measured);
        } else if self.held {
            self.steady_at = None;
        }
        steady
    }

    /// SNIA: the window's rounds (from 0) whose counts make the phase's figures, once a window
    /// was judged; fio reports the whole phase, as fio does.
    pub fn window_rounds(&self) -> Option<(i64, i64)> {
        match (&self.crit, &self.window) {
            (SteadyState::Snia(_), Some(w)) => Some((w.first as i64 - 1, w.last as i64 - 1)),
            _ => None,
        }
    }

    /// The length of a round, seconds (SNIA's figures are kept per round).
    pub fn round_s(&self) -> Option<i64> {
        matches!(self.crit, SteadyState::Snia(_)).then_some(self.len_s)
    }

    /// What the phase reports: `phases[].steady_state`.
    pub fn result(&self) -> SteadyStateResult {
        let t = self.tracked();
        let window = self.window_rounds();
        // fio reports the last window's samples (a held judge keeps a few more).
        let shown = match self.crit {
            SteadyState::Fio(_) => self.values.len().min(self.window_len()),
            SteadyState::Snia(_) => self.values.len(),
        };
        let values: Vec<f64> = self.values.iter().skip(self.values.len() - shown).copied().collect();
        SteadyStateResult {
            method: match self.crit {
                SteadyState::Snia(_) => "snia".into(),
                SteadyState::Fio(_) => "fio".into(),
            },
            criterion: self.crit.describe(),
            tracked: t.word().into(),
            unit: t.unit().into(),
            interval_s: self.len_s as f64,
            first: self.measured + 1 - values.len() as u64,
            values,
            measured: self.measured,
            window: self.window.clone(),
            attained: self.steady(),
            steady_at: self.steady_at,
            figures_from_s: window.map(|(a, _)| (a * self.len_s) as f64),
            figures_to_s: window.map(|(_, b)| ((b + 1) * self.len_s) as f64),
            nodes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::steady::{FioSteady, Snia};

    fn sec(t: u64, ops: u64) -> TimelinePoint {
        TimelinePoint { t_s: t as f64, read_ops: ops, read_bytes: ops * 4096, ..Default::default() }
    }

    #[test]
    fn rounds_close_on_their_last_second_and_the_fifth_steady_one_ends_the_phase() {
        let s = Snia { round: Duration::from_secs(2), ..Snia::PTS };
        let mut j = Judge::new(SteadyState::Snia(s), Duration::ZERO, None);
        let mut ended = None;
        for t in 1..=20 {
            if j.second(&sec(t, 100 + t % 2)) {
                ended = Some(t);
                break;
            }
        }
        assert_eq!(ended, Some(10), "5 rounds of 2 s");
        let r = j.result();
        assert_eq!((r.measured, r.steady_at, r.attained), (5, Some(5), true));
        assert_eq!(r.values, vec![100.5; 5]);
        assert_eq!(j.window_rounds(), Some((0, 4)));
        assert_eq!((r.figures_from_s, r.figures_to_s), (Some(0.0), Some(10.0)));
    }

    #[test]
    fn a_rate_that_climbs_every_round_is_never_steady() {
        let s = Snia { round: Duration::from_secs(1), max_rounds: 12, ..Snia::PTS };
        let mut j = Judge::new(SteadyState::Snia(s), Duration::ZERO, None);
        for t in 1..=12 {
            assert!(!j.second(&sec(t, 100 * t)), "second {t}");
        }
        // The last I/O completing past the deadline makes a 13th second of 1 op: no round.
        assert!(!j.second(&sec(13, 1)));
        j.finish(Duration::from_secs(13));
        let r = j.result();
        assert!(!r.attained && r.measured == 12 && r.values.len() == 12, "{r:?}");
        assert!(r.verdict().starts_with("not steady after 12 rounds"), "{}", r.verdict());
    }

    #[test]
    fn a_held_judge_never_ends_its_phase_and_its_verdict_is_the_last_window() {
        let s = Snia { round: Duration::from_secs(1), max_rounds: 9, ..Snia::PTS };
        let mut j = Judge::new(SteadyState::Snia(s), Duration::ZERO, None).recording();
        // Steady from round 5; round 8 jumps, breaking the windows that hold it.
        for t in 1..=9 {
            assert!(!j.second(&sec(t, if t == 8 { 300 } else { 100 })), "second {t}");
        }
        let closed: Vec<bool> = j.closed().iter().map(|c| c.1).collect();
        assert_eq!(closed, [false, false, false, false, true, true, true, false, false]);
        let r = j.result();
        assert_eq!((r.measured, r.values.len(), r.attained, r.steady_at), (9, 9, false, None));
        assert_eq!(j.window_rounds(), Some((4, 8)), "the last window's rounds make the figures");
        assert!(j.closed().is_empty(), "each stretch said once");
        // Its coordinator ended the phase at round 7 (its word came two rounds late): rounds
        // 8 and 9 are forgotten, the window of rounds 3-7 judged again, nothing later counts.
        j.end_at(7);
        assert!(!j.second(&sec(10, 100)));
        j.finish(Duration::from_secs(11));
        let r = j.result();
        assert_eq!((r.measured, r.values, r.attained, r.steady_at), (7, vec![100.0; 7], true, Some(7)));
        assert_eq!(j.window_rounds(), Some((2, 6)));
    }

    #[test]
    fn fio_samples_start_after_ss_ramp_and_silent_seconds_count_as_nothing() {
        let f = FioSteady {
            criterion: "iops:5%".parse().unwrap(),
            dur: Duration::from_secs(4),
            ramp: Duration::from_secs(3),
            interval: Duration::from_secs(1),
        };
        // The job's own ramp of 1 s is inside ss_ramp: 2 measured seconds are skipped.
        let mut j = Judge::new(SteadyState::Fio(f), Duration::from_secs(1), None);
        assert!(!j.second(&sec(1, 5000)) && !j.second(&sec(2, 5000)));
        assert!(!j.second(&sec(3, 100)) && !j.second(&sec(4, 100)));
        // Second 5 is silent: its sample is 0 when second 6 arrives, and breaks the window.
        assert!(!j.second(&sec(6, 100)));
        for t in 7..=8 {
            assert!(!j.second(&sec(t, 100)), "{t}");
        }
        assert!(j.second(&sec(9, 100)), "four samples of 100 after the gap");
        let r = j.result();
        assert_eq!((r.measured, r.steady_at), (7, Some(7)));
        assert_eq!(r.values, vec![100.0; 4]);
        assert_eq!(j.window_rounds(), None, "fio reports the whole phase");
    }
}
