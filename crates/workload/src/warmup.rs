//! `--ramp auto` (issue 29): where a phase's warm-up ends, judged on the coordinating thread
//! from its finished seconds (the operations of every class in each), by SNIA PTS's rule on a
//! short window (`iolab_spec::steady::AUTO_RAMP`: 10 one-second values, range ≤ 20% and
//! excursion ≤ 10% of their mean). The first steady window's first second is the first that
//! counts; the aggregator drops what came before. Workers never see it.

use iolab_model::steady::{judge_snia, Warmup, Window};
use iolab_model::TimelinePoint;
use iolab_spec::steady::AUTO_RAMP;
use std::collections::VecDeque;

/// What the judge says after a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Nothing decided.
    Nothing,
    /// Seconds before this one can start no steady window any more: they are warm-up.
    Before(i64),
    /// The warm-up ended: this second is the first that counts.
    Ended(i64),
}

/// The warm-up judge of a phase.
pub(crate) struct WarmupJudge {
    /// The last window's seconds and their values.
    values: VecDeque<(i64, f64)>,
    /// The next second expected (a silent second is a zero).
    next: i64,
    ended: Option<i64>,
    last: Option<Window>,
}

impl WarmupJudge {
    pub(crate) fn new() -> WarmupJudge {
        WarmupJudge { values: VecDeque::new(), next: 0, ended: None, last: None }
    }

    /// A finished second (`t_s` its end, seconds from the phase's start).
    pub(crate) fn second(&mut self, p: &TimelinePoint) -> Heard {
        if self.ended.is_some() {
            return Heard::Nothing;
        }
        let sec = p.t_s.round() as i64 - 1;
        if sec < self.next {
            return Heard::Nothing; // a second corrected after the fact: judged already
        }
        let mut heard = Heard::Nothing;
        while self.next < sec {
            heard = self.push(self.next, 0.0);
            if let Heard::Ended(_) = heard {
                return heard;
            }
        }
        match self.push(sec, p.ops.total() as f64) {
            Heard::Nothing => heard,
            h => h,
        }
    }

    fn push(&mut self, sec: i64, v: f64) -> Heard {
        self.next = sec + 1;
        self.values.push_back((sec, v));
        let n = AUTO_RAMP.window as usize;
        if self.values.len() < n {
            return Heard::Nothing;
        }
        while self.values.len() > n {
            self.values.pop_front();
        }
        let first = self.values[0].0;
        let y: Vec<f64> = self.values.iter().map(|(_, v)| *v).collect();
        let w = judge_snia(&y, (first + 1) as u64, &AUTO_RAMP);
        let steady = w.steady;
        self.last = Some(w);
        if steady {
            self.ended = Some(first);
            Heard::Ended(first)
        } else {
            // The next window starts one second later: this one's first second is warm-up.
            Heard::Before(first + 1)
        }
    }

    /// The second the warm-up ended at, if it did.
    #[cfg(test)]
    fn ended(&self) -> Option<i64> {
        self.ended
    }

    /// What to report, with what the aggregator dropped.
    pub(crate) fn result(&self, dropped_ops: u64, dropped_bytes: u64) -> Warmup {
        Warmup {
            found: self.ended.is_some(),
            dropped_s: self.ended.unwrap_or(0) as f64,
            dropped_ops: if self.ended.is_some() { dropped_ops } else { 0 },
            dropped_bytes: if self.ended.is_some() { dropped_bytes } else { 0 },
            window_s: AUTO_RAMP.window,
            range_pct: AUTO_RAMP.range_pct,
            excursion_pct: AUTO_RAMP.excursion_pct,
            window: self.last.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(sec: i64, ops: u64) -> TimelinePoint {
        let mut p = TimelinePoint { t_s: (sec + 1) as f64, ..Default::default() };
        p.ops.add(iolab_model::OpClass::Write, ops);
        p
    }

    #[test]
    fn a_fast_start_is_dropped_up_to_the_first_steady_window() {
        // 900 a second for 4 s, then 300: the first steady window is seconds 4..13.
        let mut j = WarmupJudge::new();
        let mut heard = Vec::new();
        for s in 0..20 {
            heard.push(j.second(&point(s, if s < 4 { 900 } else { 300 })));
        }
        assert!(heard[..9].iter().all(|h| *h == Heard::Nothing), "{heard:?}");
        assert_eq!(heard[9], Heard::Before(1));
        assert_eq!(heard[12], Heard::Before(4));
        assert_eq!(heard[13], Heard::Ended(4));
        assert!(heard[14..].iter().all(|h| *h == Heard::Nothing));
        assert_eq!(j.ended(), Some(4));
        let r = j.result(3600, 3600 * 4096);
        assert!(r.found && r.dropped_s == 4.0 && r.dropped_ops == 3600);
        let w = r.window.unwrap();
        assert_eq!((w.first, w.last, w.mean), (5, 14, 300.0));
    }

    #[test]
    fn a_silent_second_is_a_zero_and_a_figure_that_never_settles_drops_nothing() {
        let mut j = WarmupJudge::new();
        // Seconds 0..9 at 100 but second 5 silent (missing): not steady.
        for s in (0..10).filter(|s| *s != 5) {
            assert!(!matches!(j.second(&point(s, 100)), Heard::Ended(_)));
        }
        assert_eq!(j.last.as_ref().map(|w| w.min), Some(0.0));
        // Rising 10% a second: never steady.
        let mut j = WarmupJudge::new();
        for s in 0..60 {
            j.second(&point(s, (100.0 * 1.1f64.powi(s as i32)) as u64));
        }
        let r = j.result(5, 5);
        assert!(!r.found && r.dropped_s == 0.0 && r.dropped_ops == 0, "{r:?}");
        assert!(r.said().contains("nothing dropped"), "{}", r.said());
    }
}
