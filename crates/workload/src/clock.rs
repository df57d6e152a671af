//! The workers' clock. Every I/O takes two timestamps, so their cost is overhead on every
//! operation: `clock_gettime` costs ~25 ns, a read of the CPU's invariant time-stamp counter a
//! few. quanta reads the TSC where the CPU says it is invariant and falls back to the monotonic
//! clock elsewhere; a `Stamp` is nanoseconds since the clock was made.

use std::ops::{Add, AddAssign, Sub};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point in time: nanoseconds since its `Clock`'s base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(u64);

impl Stamp {
    pub fn saturating_duration_since(self, earlier: Stamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Stamp {
    type Output = Stamp;
    fn add(self, d: Duration) -> Stamp {
        Stamp(self.0.saturating_add(d.as_nanos() as u64))
    }
}

impl AddAssign<Duration> for Stamp {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Stamp {
    type Output = Stamp;
    fn sub(self, d: Duration) -> Stamp {
        Stamp(self.0.saturating_sub(d.as_nanos() as u64))
    }
}

impl Sub for Stamp {
    type Output = Duration;
    fn sub(self, earlier: Stamp) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

pub struct Clock {
    q: quanta::Clock,
    base: Instant,
    base_raw: u64,
}

impl Clock {
    /// A clock whose base is now. The TSC calibration happens once per process.
    pub fn new() -> Clock {
        static Q: OnceLock<quanta::Clock> = OnceLock::new();
        let q = Q.get_or_init(quanta::Clock::new).clone();
        let (base, base_raw) = (Instant::now(), q.raw());
        Clock { q, base, base_raw }
    }

    #[inline]
    pub fn now(&self) -> Stamp {
        Stamp(self.q.delta_as_nanos(self.base_raw, self.q.raw()))
    }

    /// The stamp of an `Instant` (instants before the base map to the base).
    pub fn at(&self, i: Instant) -> Stamp {
        Stamp(i.saturating_duration_since(self.base).as_nanos() as u64)
    }

    pub fn instant(&self, s: Stamp) -> Instant {
        self.base + Duration::from_nanos(s.0)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_monotonic_clock() {
        let c = Clock::new();
        let (a, ia) = (c.now(), Instant::now());
        std::thread::sleep(Duration::from_millis(200));
        let (b, ib) = (c.now(), Instant::now());
        let ours = (b - a).as_secs_f64();
        let theirs = (ib - ia).as_secs_f64();
        assert!((ours / theirs - 1.0).abs() < 0.01, "quanta {ours} s vs Instant {theirs} s");
        let back = c.instant(c.at(ib));
        assert!(back.max(ib) - back.min(ib) < Duration::from_micros(1));
        assert!(a < b && b + Duration::from_secs(1) > b && (b - Duration::from_secs(1000)) < a);
    }
}
