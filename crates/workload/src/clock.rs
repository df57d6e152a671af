//! The workers' clock. Every I/O takes one or two timestamps (one on a synchronous engine, whose
//! completion stamp is the next operation's issue stamp), so their cost is overhead on every
//! operation: `clock_gettime` costs ~25 ns, a read of the CPU's invariant time-stamp counter a
//! few. quanta reads the TSC where the CPU says it is invariant and falls back to the monotonic
//! clock elsewhere; a `Stamp` is nanoseconds since the clock was made. The executor takes any
//! [`Clock`]: [`TscClock`] in real runs, [`FakeClock`] in tests that must not depend on time.

use std::ops::{Add, AddAssign, Sub};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point in time: nanoseconds since its `Clock`'s base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(pub u64);

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

/// What the executor's workers read time from, and sleep on.
pub trait Clock: Send + Sync {
    fn now(&self) -> Stamp;
    /// The stamp of an `Instant` (instants before the base map to the base).
    fn at(&self, i: Instant) -> Stamp;
    fn instant(&self, s: Stamp) -> Instant;
    /// Sleep for `d` (a fake clock just moves on).
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// The real clock: the TSC through quanta.
pub struct TscClock {
    q: quanta::Clock,
    base: Instant,
    base_raw: u64,
    /// Nanoseconds per 2^32 raw ticks: a reading is scaled with one multiply and a fixed shift
    /// (quanta's own scaling shifts by a variable amount, a few ns more per reading).
    ns_per_2_32: u64,
}

impl Clock for TscClock {
    #[inline]
    fn now(&self) -> Stamp {
        TscClock::now(self)
    }
    fn at(&self, i: Instant) -> Stamp {
        TscClock::at(self, i)
    }
    fn instant(&self, s: Stamp) -> Instant {
        TscClock::instant(self, s)
    }
}

/// A clock for tests: time moves only by `step` on each reading and by whatever is slept, so
/// a worker's pacing, barriers and second boundaries can be checked exactly.
pub struct FakeClock {
    base: Instant,
    ns: std::sync::atomic::AtomicU64,
    step_ns: u64,
}

impl FakeClock {
    pub fn new(step: Duration) -> FakeClock {
        FakeClock { base: Instant::now(), ns: Default::default(), step_ns: step.as_nanos() as u64 }
    }
    /// Move time on by `d`.
    pub fn advance(&self, d: Duration) {
        self.ns.fetch_add(d.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Stamp {
        Stamp(self.ns.fetch_add(self.step_ns, std::sync::atomic::Ordering::Relaxed) + self.step_ns)
    }
    fn at(&self, i: Instant) -> Stamp {
        Stamp(i.saturating_duration_since(self.base).as_nanos() as u64)
    }
    fn instant(&self, s: Stamp) -> Instant {
        self.base + Duration::from_nanos(s.0)
    }
    fn sleep(&self, d: Duration) {
        self.advance(d)
    }
}

impl TscClock {
    /// A clock whose base is now. The TSC calibration happens once per process.
    pub fn new() -> TscClock {
        static Q: OnceLock<quanta::Clock> = OnceLock::new();
        let q = Q.get_or_init(quanta::Clock::new).clone();
        let (base, base_raw) = (Instant::now(), q.raw());
        let ns_per_2_32 = q.delta_as_nanos(0, 1 << 32);
        TscClock { q, base, base_raw, ns_per_2_32 }
    }

    #[inline]
    pub fn now(&self) -> Stamp {
        let ticks = self.q.raw().saturating_sub(self.base_raw);
        Stamp(((ticks as u128 * self.ns_per_2_32 as u128) >> 32) as u64)
    }

    /// The stamp of an `Instant` (instants before the base map to the base).
    pub fn at(&self, i: Instant) -> Stamp {
        Stamp(i.saturating_duration_since(self.base).as_nanos() as u64)
    }

    pub fn instant(&self, s: Stamp) -> Instant {
        self.base + Duration::from_nanos(s.0)
    }
}

impl Default for TscClock {
    fn default() -> Self {
        TscClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_monotonic_clock() {
        let c = TscClock::new();
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

    #[test]
    fn the_fake_clock_moves_by_its_step_and_by_sleeps() {
        let c = FakeClock::new(Duration::from_micros(10));
        assert_eq!(Clock::now(&c), Stamp(10_000));
        c.sleep(Duration::from_millis(1));
        assert_eq!(Clock::now(&c), Stamp(1_020_000));
        let i = c.instant(Stamp(5));
        assert_eq!(c.at(i), Stamp(5));
    }
}
