//! fio's latency_target search (`--latency-target`), as fio's io_u.c makes it: the job's limit
//! on I/Os in flight starts at 1 and moves between windows, while the engine's queue stays at
//! the job's iodepth. After each `window`, if `percentile` percent of the I/Os completed in it
//! took at most `target`, the depth goes up (doubling until a depth fails, then halfway to the
//! lowest depth that failed); else it comes down halfway to the highest depth that held, with
//! the I/Os in flight drained first. Once a success leaves the depth where it was, the depth is
//! found: the job runs one more window at it and ends (unless `run`: it keeps adjusting). With a
//! percentile of 100 a single I/O over the target lowers the depth at once, and at depth 1 ends
//! the job with an error, as fio's "max latency exceeded". The worker loop ([`crate::worker`])
//! feeds it each completion's latency and follows its verdicts.

use crate::clock::Stamp;
use iolab_spec::LatencyTarget;
use std::time::Duration;

/// What the worker loop does after a completion was fed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go on (the limit may have risen).
    Go,
    /// The limit came down (or the final window begins): let the I/Os in flight complete first.
    Drain,
    /// The depth is found and held for its last window: the job ends.
    Done,
    /// Percentile 100, depth 1 and an I/O over the target: the job ends with this error.
    Exceeded(Duration),
}

/// The search's state (fio's latency_qd, latency_qd_low, latency_qd_high and the window's
/// counts).
#[derive(Debug, Clone)]
pub struct DepthSearch {
    cfg: LatencyTarget,
    target_ns: u64,
    /// The engine's depth: the most the limit reaches (fio's iodepth).
    max: u32,
    qd: u32,
    low: u32,
    high: u32,
    /// Successes in a row at one below `high` (fio raises `high` by 1 after 3).
    stable: u32,
    /// The window's start, its I/Os and those over the target.
    since: Stamp,
    ios: u64,
    failed: u64,
    /// The depth is found; this is the window that confirms it.
    end_run: bool,
    /// The measured window's start (after the ramp): checks wait for it, and the search
    /// starts again there as fio's reset of its statistics restarts it.
    t0: Stamp,
    restarted: bool,
    done: bool,
}

impl DepthSearch {
    /// The search for a job whose engine keeps up to `max` I/Os in flight, starting at `start`
    /// with its measured window from `t0`.
    pub fn new(cfg: LatencyTarget, max: usize, start: Stamp, t0: Stamp) -> Self {
        let max = (max as u32).max(1);
        DepthSearch {
            cfg,
            target_ns: cfg.target.as_nanos().min(u64::MAX as u128) as u64,
            max,
            qd: 1,
            low: 1,
            high: max,
            stable: 0,
            since: start,
            ios: 0,
            failed: 0,
            end_run: false,
            t0,
            restarted: t0 <= start,
            done: false,
        }
    }

    /// How many I/Os may be in flight now.
    #[inline(always)]
    pub fn limit(&self) -> usize {
        self.qd as usize
    }

    /// The depth reached (fio's latency_depth): the one found, once [`DepthSearch::found`].
    pub fn depth(&self) -> u32 {
        self.qd
    }

    /// Whether the search settled: the depth was found (and, without `run`, held one more
    /// window).
    pub fn found(&self) -> bool {
        self.end_run
    }

    fn new_cycle(&mut self, now: Stamp) {
        self.since = now;
        self.ios = 0;
        self.failed = 0;
    }

    /// fio's lat_target_init: back to depth 1, its counts from `now`.
    fn restart(&mut self, now: Stamp) {
        self.qd = 1;
        self.low = 1;
        self.high = self.max;
        self.stable = 0;
        self.new_cycle(now);
    }

    /// A data I/O completed at `now` after `lat_ns`: count it, and judge the window once it
    /// has run its time.
    pub fn completed(&mut self, lat_ns: u64, now: Stamp) -> Verdict {
        if self.done {
            return Verdict::Go;
        }
        if !self.restarted && now >= self.t0 {
            // fio resets its statistics at the ramp's end, and the search with them.
            self.restarted = true;
            if !self.end_run {
                self.restart(now);
            }
        }
        self.ios += 1;
        if lat_ns > self.target_ns {
            if self.cfg.percentile >= 100.0 {
                if self.qd == 1 {
                    return Verdict::Exceeded(Duration::from_nanos(lat_ns));
                }
                self.failed_at(now);
                return Verdict::Drain;
            }
            self.failed += 1;
        }
        // fio checks only outside the ramp, and a window with no I/O is not judged.
        if now < self.t0 || now.saturating_duration_since(self.since) < self.cfg.window {
            return Verdict::Go;
        }
        let share = (self.ios - self.failed) as f64 * 100.0 / self.ios as f64;
        if share >= self.cfg.percentile {
            self.succeeded(now)
        } else {
            if self.qd == 1 {
                // fio stays at 1 (its __lat_target_failed gives up there) and starts a new window.
                self.new_cycle(now);
                return Verdict::Go;
            }
            self.failed_at(now);
            Verdict::Drain
        }
    }

    /// fio's __lat_target_failed above depth 1: halfway down to the highest depth that held.
    fn failed_at(&mut self, now: Stamp) {
        self.high = self.qd;
        if self.qd == self.low {
            self.low = self.low.saturating_sub(1).max(1);
        }
        self.qd = ((self.qd + self.low) / 2).max(1);
        self.stable = 0;
        self.new_cycle(now);
    }

    /// fio's lat_target_success: up (doubling before any failure, else halfway to the lowest
    /// depth that failed); the same depth twice is the depth found.
    fn succeeded(&mut self, now: Stamp) -> Verdict {
        let was = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.max { (self.qd + self.high) / 2 } else { self.qd.saturating_mul(2) };
        self.qd = self.qd.clamp(1, self.max);
        let mut verdict = Verdict::Go;
        if !self.cfg.run && self.qd == was {
            if self.end_run {
                self.done = true;
                verdict = Verdict::Done;
            } else {
                self.end_run = true;
                verdict = Verdict::Drain;
            }
        }
        self.new_cycle(now);
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cfg(pct: f64) -> LatencyTarget {
        LatencyTarget { target: Duration::from_millis(10), window: Duration::from_secs(1), percentile: pct, run: false }
    }

    /// Feed windows of I/Os whose latency is `lat(depth)` until the search ends; the depths
    /// it tried, window by window.
    fn search(max: usize, pct: f64, lat: impl Fn(u32) -> u64) -> (Vec<u32>, DepthSearch) {
        let mut s = DepthSearch::new(cfg(pct), max, Stamp(0), Stamp(0));
        let mut tried = vec![s.depth()];
        let mut now = Stamp(0);
        for _ in 0..10_000 {
            now += Duration::from_millis(100);
            match s.completed(lat(s.depth()), now) {
                Verdict::Done => return (tried, s),
                Verdict::Exceeded(_) => break,
                _ => {}
            }
            if *tried.last().unwrap() != s.depth() {
                tried.push(s.depth());
            }
        }
        (tried, s)
    }

    #[test]
    fn doubles_then_bisects_and_ends_at_the_highest_depth_within_the_target() {
        // Latency grows 1 ms per I/O in flight: depths up to 10 meet 10 ms.
        let (tried, s) = search(128, 99.9, |d| d as u64 * MS);
        assert!(s.found());
        assert_eq!(s.depth(), 10, "tried {tried:?}");
        assert_eq!(&tried[..5], &[1, 2, 4, 8, 16], "doubling until a depth fails");
        assert!(tried.iter().all(|d| *d <= 16));
    }

    #[test]
    fn a_target_nothing_meets_stays_at_depth_1() {
        let (tried, s) = search(64, 99.0, |_| 50 * MS);
        assert_eq!(tried, vec![1]);
        assert_eq!(s.depth(), 1);
        assert!(!s.found(), "a depth that fails is not found");
    }

    #[test]
    fn at_100_percent_one_io_over_lowers_at_once_and_ends_the_job_at_depth_1() {
        let mut s = DepthSearch::new(cfg(100.0), 8, Stamp(0), Stamp(0));
        let mut now = Stamp(0);
        for _ in 0..3 {
            now += Duration::from_secs(1);
            assert_eq!(s.completed(MS, now), Verdict::Go);
        }
        assert_eq!(s.depth(), 8);
        assert_eq!(s.completed(20 * MS, now), Verdict::Drain, "no wait for the window's end");
        assert_eq!(s.depth(), 6);
        let mut s = DepthSearch::new(cfg(100.0), 8, Stamp(0), Stamp(0));
        assert_eq!(s.completed(20 * MS, Stamp(1)), Verdict::Exceeded(Duration::from_millis(20)));
    }

    #[test]
    fn the_depth_stays_within_the_engines_and_latency_run_never_ends() {
        let mut s = DepthSearch::new(LatencyTarget { run: true, ..cfg(99.0) }, 4, Stamp(0), Stamp(0));
        let mut now = Stamp(0);
        for _ in 0..50 {
            now += Duration::from_secs(1);
            assert_ne!(s.completed(MS, now), Verdict::Done);
            assert!(s.limit() <= 4);
        }
        assert_eq!(s.depth(), 4);
    }

    #[test]
    fn nothing_is_judged_in_the_ramp_and_the_search_starts_again_after_it() {
        let t0 = Stamp(10_000 * MS);
        let mut s = DepthSearch::new(cfg(99.0), 16, Stamp(0), t0);
        for i in 1..50 {
            assert_eq!(s.completed(MS, Stamp(i * 200 * MS)), Verdict::Go);
        }
        assert_eq!(s.depth(), 1, "no window judged in the ramp");
        s.completed(MS, t0 + Duration::from_secs(2));
        assert_eq!(s.depth(), 1, "the first window after the ramp starts at its end");
        s.completed(MS, t0 + Duration::from_millis(3100));
        assert_eq!(s.depth(), 2);
    }
}
