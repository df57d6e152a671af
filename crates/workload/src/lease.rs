//! A run's lease: how long it may go on doing I/O without word from whoever steers it (a
//! coordinator). Each word renews it; once it has run out it is over for good, and a word that
//! comes later (a heartbeat that sat in a socket while the process was stopped) does not bring
//! it back. The workers check it on the clock they already read for every operation: each keeps
//! the deadline as a stamp of its own clock and looks at the shared lease only once its time
//! passes that stamp, so an operation costs one comparison more. That stamp may have been
//! read before the process was stopped (SIGSTOP lands anywhere, say while a write's buffer is
//! filled): so just before each call is made, a worker under a lease also reads the kernel's
//! coarse clock ([`Lease::lapsed_coarse`], a few ns from the vDSO, no system call), and a
//! process resumed (SIGCONT) after its lease ran out issues nothing. A run without a lease (a
//! local run) pays one branch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The instant leases count from (ns since it), one per process.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    Instant::now().saturating_duration_since(base()).as_nanos() as u64
}

/// CLOCK_MONOTONIC_COARSE as ns since [`base`] (the same clock as [`Instant`]'s, read at the
/// last tick; 0 until the base is set, never ahead of [`now_ns`]).
#[inline]
fn coarse_ns() -> u64 {
    use rustix::time::{clock_gettime, ClockId};
    static BASE_NS: OnceLock<u64> = OnceLock::new();
    let ts = |t: rustix::time::Timespec| (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64;
    // The base as CLOCK_MONOTONIC ns (what Instant reads on Linux), taken once.
    let base = *BASE_NS.get_or_init(|| {
        let b = base();
        let fine = ts(clock_gettime(ClockId::Monotonic));
        fine.saturating_sub(Instant::now().saturating_duration_since(b).as_nanos() as u64)
    });
    ts(clock_gettime(ClockId::MonotonicCoarse)).saturating_sub(base)
}

/// A lease that runs out unless renewed.
#[derive(Debug)]
pub struct Lease {
    /// When it runs out: ns since [`base`].
    until_ns: AtomicU64,
}

impl Lease {
    /// A lease that runs for `d` from now.
    pub fn new(d: Duration) -> Lease {
        Lease { until_ns: AtomicU64::new(now_ns().saturating_add(d.as_nanos() as u64)) }
    }

    /// Renew it for `d` from now, unless it has run out already (then it stays out): whether it
    /// was renewed.
    pub fn renew(&self, d: Duration) -> bool {
        let now = now_ns();
        let want = now.saturating_add(d.as_nanos() as u64);
        let mut cur = self.until_ns.load(Ordering::Acquire);
        loop {
            if now >= cur {
                return false;
            }
            match self.until_ns.compare_exchange_weak(cur, want.max(cur), Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(c) => cur = c,
            }
        }
    }

    /// When it runs out.
    pub fn until(&self) -> Instant {
        base() + Duration::from_nanos(self.until_ns.load(Ordering::Acquire))
    }

    /// Whether it has run out.
    pub fn lapsed(&self) -> bool {
        now_ns() >= self.until_ns.load(Ordering::Acquire)
    }

    /// Whether it has run out, on the kernel's coarse monotonic clock (a tick behind at most:
    /// a few ms late, never early): cheap enough to read before every call.
    #[inline]
    pub fn lapsed_coarse(&self) -> bool {
        coarse_ns() >= self.until_ns.load(Ordering::Acquire)
    }

    /// End it now (the run is over: nothing more may be issued).
    pub fn end(&self) {
        self.until_ns.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_renews_until_it_lapses_and_then_stays_out() {
        let l = Lease::new(Duration::from_millis(50));
        assert!(!l.lapsed());
        assert!(l.renew(Duration::from_millis(80)));
        let until = l.until();
        assert!(until > Instant::now() + Duration::from_millis(60));
        // Renewing for less never shortens it.
        assert!(l.renew(Duration::from_millis(1)));
        assert_eq!(l.until(), until);
        std::thread::sleep(Duration::from_millis(100));
        assert!(l.lapsed());
        assert!(!l.renew(Duration::from_secs(10)), "a late word does not bring it back");
        assert!(l.lapsed());
        let l = Lease::new(Duration::from_secs(10));
        l.end();
        assert!(l.lapsed() && !l.renew(Duration::from_secs(1)));
        assert!(l.lapsed_coarse());
    }

    /// The coarse clock is the same clock as the lease's, a tick behind at most.
    #[test]
    fn the_coarse_check_agrees_with_the_lease_within_a_tick() {
        let l = Lease::new(Duration::from_millis(100));
        assert!(!l.lapsed_coarse());
        let fine = now_ns();
        let coarse = coarse_ns();
        assert!(coarse <= fine + 1_000 && fine - coarse.min(fine) < 20_000_000, "fine {fine}, coarse {coarse}");
        std::thread::sleep(Duration::from_millis(130));
        assert!(l.lapsed() && l.lapsed_coarse());
    }
}
