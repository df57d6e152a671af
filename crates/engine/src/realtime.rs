//! A thread briefly at real-time priority: the moment a node's phase starts must not wait behind
//! other work on the node. With 64 agents on 2 CPUs, each agent's workers, released at the
//! instant, kept the CPUs from the agents whose start had not yet run (a 1 MiB write is a few
//! hundred microseconds of copying), and the starts spread over ~10 ms; a waking SCHED_FIFO
//! thread runs before any normal one. Only the thread that waits for the instant takes it, only
//! where the system allows (root or CAP_SYS_NICE), and only until the workers are released.

use std::io;

/// The calling thread at SCHED_FIFO priority 1 until dropped; then its policy and priority as
/// they were (its nice value is kept by the kernel across the change).
pub struct Realtime {
    policy: libc::c_int,
    param: libc::sched_param,
    /// Not `Send`: the policy is the making thread's, so it is restored on that thread.
    _here: std::marker::PhantomData<*const ()>,
}

impl Realtime {
    /// `Err` when the system refuses (no privilege, a container's limits): run as before then.
    pub fn enter() -> io::Result<Realtime> {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread; `param` is a valid sched_param to write to.
        let policy = unsafe { libc::sched_getscheduler(0) };
        if policy < 0 || unsafe { libc::sched_getparam(0, &mut param) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let fifo = libc::sched_param { sched_priority: 1 };
        // SAFETY: as above; SCHED_RESET_ON_FORK keeps any child of this thread off real time.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &fifo) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Realtime { policy, param, _here: std::marker::PhantomData })
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        // SAFETY: pid 0 names the calling thread (a Realtime is not Send: it is dropped on the
        // thread that made it); `param` is the thread's own earlier parameter.
        unsafe { libc::sched_setscheduler(0, self.policy, &self.param) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_at_real_time_returns_to_its_policy() {
        // SAFETY: reads the calling thread's policy.
        let before = unsafe { libc::sched_getscheduler(0) };
        match Realtime::enter() {
            Ok(rt) => {
                // SAFETY: as above.
                let during = unsafe { libc::sched_getscheduler(0) };
                assert_eq!(during & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO);
                drop(rt);
            }
            // Unprivileged: refused, nothing changed.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}"),
        }
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, before);
    }
}
