//! A barrier for the workers of one job, which a worker that has finished leaves: a source
//! returns [`crate::source::Next::Barrier`] where every thread of its job must line up before
//! any goes on (the redo log's sparse pass before its full pass, bonnie++'s seekers starting
//! together, the last one out removing a shared directory). A worker that ends, fails or never
//! started counts as arrived at every later barrier, so the others never wait for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug)]
struct State {
    /// Workers still running (not left).
    parties: usize,
    /// Workers waiting at the current barrier.
    arrived: usize,
    /// Barriers released so far: a waiter goes on when it changes.
    generation: u64,
}

/// The barrier of one job's workers.
#[derive(Debug)]
pub struct Rendezvous {
    state: Mutex<State>,
    cv: Condvar,
}

impl Rendezvous {
    /// A barrier for `parties` workers.
    pub fn new(parties: usize) -> Rendezvous {
        Rendezvous { state: Mutex::new(State { parties, arrived: 0, generation: 0 }), cv: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn release(&self, s: &mut State) {
        s.arrived = 0;
        s.generation += 1;
        self.cv.notify_all();
    }

    /// Wait until every worker still running has arrived too. Returns false when `stop` was
    /// set meanwhile (the worker stops; it no longer counts as waiting).
    pub fn wait(&self, stop: &AtomicBool) -> bool {
        let mut s = self.lock();
        s.arrived += 1;
        if s.arrived >= s.parties {
            self.release(&mut s);
            return true;
        }
        let generation = s.generation;
        loop {
            let (g, _) = self.cv.wait_timeout(s, Duration::from_millis(50)).unwrap_or_else(|e| e.into_inner());
            s = g;
            if s.generation != generation {
                return true;
            }
            if stop.load(Ordering::Relaxed) {
                s.arrived = s.arrived.saturating_sub(1);
                return false;
            }
        }
    }

    /// A worker is done: it waits at no later barrier, and one that was waiting only for it
    /// goes on.
    pub fn leave(&self) {
        let mut s = self.lock();
        s.parties = s.parties.saturating_sub(1);
        if s.arrived > 0 && s.arrived >= s.parties {
            self.release(&mut s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn nobody_passes_before_everyone_arrived_and_a_leaver_does_not_hold_them_up() {
        let r = Arc::new(Rendezvous::new(4));
        let stop = Arc::new(AtomicBool::new(false));
        let passed = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let (r, stop, passed) = (r.clone(), stop.clone(), passed.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20 * i));
                    assert!(r.wait(&stop));
                    passed.fetch_add(1, Ordering::SeqCst);
                    // A second barrier: the three of them only (the fourth has left).
                    assert!(r.wait(&stop));
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(passed.load(Ordering::SeqCst), 0, "the fourth worker has neither arrived nor left");
        r.leave();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(passed.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_stop_frees_a_waiter() {
        let r = Rendezvous::new(2);
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        assert!(!r.wait(&stop));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(r.lock().arrived, 0);
    }
}
