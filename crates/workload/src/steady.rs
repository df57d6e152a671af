//! The steady-state judge of a phase (issue 29), on the coordinating thread: it reads the
//! phase's finished seconds as the aggregator hands them out (the jobs' summed figure), closes
//! SNIA rounds or fio samples, judges each window by `iolab_model::steady` and says when the
//! phase may end. Workers never see it: the executor sets the phase's own stop flag.

use iolab_model::steady::{judge_fio, judge_snia, SteadyStateResult, Window};
use iolab_model::TimelinePoint;
use iolab_spec::steady::{SteadyState, Tracked};
use std::collections::VecDeque;
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

/// A phase's judge: fed each finished second, it says when the phase is steady.
pub(crate) struct Judge {
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
}

impl Judge {
    /// The judge of `crit` for a phase whose measured seconds start after `ramp`, of a job
    /// that runs at most `runtime` (SNIA: its rounds).
    pub(crate) fn new(crit: SteadyState, ramp: Duration, runtime: Option<Duration>) -> Judge {
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
        }
    }

    fn tracked(&self) -> Tracked {
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
    pub(crate) fn steady(&self) -> bool {
        self.steady_at.is_some()
    }

    /// A finished second (seconds come in order; one without any I/O may be missing). True
    /// once the phase is steady: the caller ends it.
    pub(crate) fn second(&mut self, p: &TimelinePoint) -> bool {
        if self.steady() {
            return true;
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
    pub(crate) fn finish(&mut self, elapsed: Duration) {
        if self.steady() {
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
        self.measured += 1;
        self.values.push_back(v);
        let n = self.window_len();
        if let SteadyState::Fio(_) = self.crit {
            while self.values.len() > n {
                self.values.pop_front();
            }
        }
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
        }
        steady
    }

    /// SNIA: the window's rounds (from 0) whose counts make the phase's figures, once a window
    /// was judged; fio reports the whole phase, as fio does.
    pub(crate) fn window_rounds(&self) -> Option<(i64, i64)> {
        match (&self.crit, &self.window) {
            (SteadyState::Snia(_), Some(w)) => Some((w.first as i64 - 1, w.last as i64 - 1)),
            _ => None,
        }
    }

    /// The length of a round, seconds (SNIA's figures are kept per round).
    pub(crate) fn round_s(&self) -> Option<i64> {
        matches!(self.crit, SteadyState::Snia(_)).then_some(self.len_s)
    }

    /// What the phase reports: `phases[].steady_state`.
    pub(crate) fn result(&self) -> SteadyStateResult {
        let t = self.tracked();
        let window = self.window_rounds();
        SteadyStateResult {
            method: match self.crit {
                SteadyState::Snia(_) => "snia".into(),
                SteadyState::Fio(_) => "fio".into(),
            },
            criterion: self.crit.describe(),
            tracked: t.word().into(),
            unit: t.unit().into(),
            interval_s: self.len_s as f64,
            values: self.values.iter().copied().collect(),
            first: self.measured + 1 - self.values.len() as u64,
            measured: self.measured,
            window: self.window.clone(),
            attained: self.steady(),
            steady_at: self.steady_at,
            figures_from_s: window.map(|(a, _)| (a * self.len_s) as f64),
            figures_to_s: window.map(|(_, b)| ((b + 1) * self.len_s) as f64),
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
