//! iolab's own CPU time, so a run can show what the bench itself cost.

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
    CpuTime { user_s: get(11), system_s: get(12) }
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
}
