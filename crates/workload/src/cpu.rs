//! iolab's own CPU time, so a run can show what the bench itself cost, and each worker
//! thread's time on a CPU and waiting for one, so the limit rule can tell a CPU-bound worker.

use crate::results::CpuTime;

/// User and system CPU seconds of this process so far, from /proc/self/stat.
pub fn process_cpu() -> CpuTime {
    let Ok(text) = std::fs::read_to_string("/proc/self/stat") else { return CpuTime::default() };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let Some(rest) = text.rfind(')').map(|i| &text[i + 1..]) else { return CpuTime::default() };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = rustix::param::clock_ticks_per_second().max(1) as f64;
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / ticks;
    CpuTime { user_s: get(11), system_s: get(12), ..Default::default() }
}

/// This thread's time on a CPU and time runnable but waiting for one, in ns, from
/// /proc/thread-self/schedstat (zeros where the kernel keeps no schedstats).
pub fn thread_sched() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") else { return (0, 0) };
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_moves_forward() {
        let a = super::process_cpu();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 100 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let b = super::process_cpu();
        assert!(b.user_s + b.system_s > a.user_s + a.system_s, "{x}");
    }

    #[test]
    fn a_busy_thread_is_on_cpu_or_waiting_for_one() {
        let (run0, wait0) = super::thread_sched();
        if run0 == 0 {
            eprintln!("no schedstats here: nothing to check");
            return;
        }
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 200 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let (run1, wait1) = super::thread_sched();
        // Spinning, the thread is runnable all along: on a CPU or in the run queue.
        let runnable = (run1 - run0 + wait1 - wait0) as f64 / t.elapsed().as_nanos() as f64;
        assert!(runnable > 0.9, "{runnable} {x}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let (run2, wait2) = super::thread_sched();
        assert!((run2 - run1 + wait2 - wait1) < 50_000_000, "asleep, it is neither");
    }
}
