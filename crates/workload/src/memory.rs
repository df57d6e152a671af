//! Memory planned before any I/O. What a phase's jobs hold at once — each thread's I/O buffers
//! (queue depth × the largest I/O, 4 KiB aligned), the latency histograms of the operation
//! classes it records, its stack, validation's key maps, a replay's calls and buffers — is added
//! up and checked against what this process may take: the smallest of MemAvailable, RLIMIT_AS
//! (beyond the address space already mapped) and the cgroup's memory limit (beyond its usage),
//! with a margin. A plan that does not fit is refused before anything is written, naming the
//! options that make it large; an agent refuses the same way (its coordinator names the node).

use crate::layout::Target;
use iolab_spec::{Job, Workload};
use iolab_sysstat::memlimit::MemoryLimits;

/// The share of what is available a plan may take.
pub const MARGIN: f64 = 0.9;
/// What stays for iolab itself (its code, the store, the progress display) beside the plan.
pub const HEADROOM: u64 = 64 << 20;
/// A worker thread's stack, reserved in the address space (Rust's default).
pub const STACK_BYTES: u64 = 2 << 20;
/// What a worker thread touches beside its buffers and histograms (stack pages, its source's
/// state, its file table): a small, generous figure.
pub const THREAD_BYTES: u64 = 256 << 10;
/// The alignment of engine buffers.
const ALIGN: u64 = 4096;

/// What one job of a phase will hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobNeed {
    pub job: String,
    pub threads: u32,
    pub depth: u32,
    /// One buffer slot, bytes (the largest I/O, aligned).
    pub slot: u64,
    /// The flag that sets the largest I/O (`--bs`, `--record-size`, ...), for the message.
    pub slot_flag: &'static str,
    pub buffers: u64,
    pub histograms: u64,
    pub threads_bytes: u64,
    /// Validation's key maps (a byte per key block of each validated file).
    pub maps: u64,
    /// A replay's calls and buffers, as its plan counted them.
    pub replay: u64,
}

impl JobNeed {
    /// Bytes of memory the job will touch.
    pub fn resident(&self) -> u64 {
        self.buffers
            .saturating_add(self.histograms)
            .saturating_add(self.threads_bytes)
            .saturating_add(self.maps)
            .saturating_add(self.replay)
    }
    /// Bytes of address space: what it touches and its threads' stacks.
    pub fn address_space(&self) -> u64 {
        self.resident().saturating_add((self.threads as u64).saturating_mul(STACK_BYTES))
    }
}

/// Operation classes a job's threads record, at most (each a histogram per thread).
fn classes(job: &Job) -> u64 {
    match &job.workload {
        Workload::Block(b) => 1 + b.rw.writes() as u64 + (b.fsync_every > 0 || b.end_fsync) as u64,
        // A replay or an application touches files by name as well: opens, creates, closes,
        // renames, syncs... all of them, at most.
        _ => iolab_model::OpClass::COUNT as u64,
    }
}

/// The largest I/O of a job and the flag that sets it.
fn slot(job: &Job) -> (u64, &'static str) {
    let len = match &job.workload {
        Workload::Block(b) => {
            return (align(b.max_bs().0), if b.write_bs.is_some() { "--bs/--write-bs" } else { "--bs" })
        }
        Workload::Replay(r) => return (align(r.limits.max_buffer.0), "--max-buffer"),
        w => w.app().map_or(ALIGN, |a| a.buffer_len()),
    };
    (align(len), "the workload's largest I/O")
}

fn align(n: u64) -> u64 {
    n.max(1).div_ceil(ALIGN).saturating_mul(ALIGN)
}

/// What a job will hold, its targets being `targets` (their sizes give the key maps) and a
/// replay's planned memory `replay` (its calls and buffers, for a replay job).
pub fn need(job: &Job, targets: &[Target], replay: Option<u64>) -> JobNeed {
    let threads = job.threads as u64;
    let (slot, slot_flag) = slot(job);
    // A replay's buffers are in its plan's count.
    let buffers = if replay.is_some() { 0 } else { threads.saturating_mul(job.iodepth as u64).saturating_mul(slot) };
    let maps = match (&job.verify, &job.workload) {
        (Some(_), Workload::Block(b)) => {
            let key_block = b.key_block().max(512);
            targets.iter().map(|t| t.size / key_block + 1).sum()
        }
        _ => 0,
    };
    JobNeed {
        job: job.name.clone(),
        threads: job.threads,
        depth: job.iodepth,
        slot,
        slot_flag,
        buffers,
        histograms: threads.saturating_mul(classes(job)).saturating_mul(iolab_model::CLASS_BYTES),
        threads_bytes: threads.saturating_mul(THREAD_BYTES),
        maps,
        replay: replay.unwrap_or(0),
    }
}

/// A phase that does not fit in the memory this process may take.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MemoryError(pub String);

/// Bytes in words: `256 GiB`, `3.9 GiB`, `512 MiB`.
pub fn words(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (u, size) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if v >= 100.0 || v.fract() == 0.0 { format!("{v:.0} {u}") } else { format!("{v:.1} {u}") };
        }
    }
    format!("{n} bytes")
}

/// Check a phase's jobs against the limits: `Err` naming what is too large and which options
/// lower it.
pub fn check_phase(phase: &str, needs: &[JobNeed], limits: &MemoryLimits) -> Result<(), MemoryError> {
    let resident: u64 = needs.iter().map(JobNeed::resident).fold(0, u64::saturating_add);
    let space: u64 = needs.iter().map(JobNeed::address_space).fold(0, u64::saturating_add);
    let Some(room) = Room::over(resident, space, limits) else { return Ok(()) };
    let parts: Vec<String> = needs.iter().filter(|n| n.resident() > 0).map(describe).collect();
    let biggest = needs.iter().max_by_key(|n| n.resident());
    let lower = biggest.map_or_else(String::new, |n| {
        let mut opts = Vec::new();
        if n.buffers >= n.histograms.max(n.maps).max(n.replay) {
            opts.push(format!("--threads, --iodepth or {}", n.slot_flag));
        } else if n.histograms >= n.maps.max(n.replay) {
            opts.push("--threads".to_string());
        } else if n.maps >= n.replay {
            opts.push("--size of the validated files (validation keeps a byte per block in memory)".to_string());
        } else {
            opts.push("--max-memory (or replay part of the trace: --strip a narrower directory)".to_string());
        }
        format!("; lower {} of job `{}`", opts.join(", "), n.job)
    });
    Err(MemoryError(format!(
        "phase `{phase}` would hold {} of memory ({}); this process may take about {}{lower}",
        words(if room.address_space { space } else { resident }),
        parts.join("; "),
        room.said(),
    )))
}

/// Where a plan does not fit: the smallest room under the limits and what they are.
struct Room {
    smallest: u64,
    said: Vec<String>,
    /// The address space is what is short (the need to name is the mapped one).
    address_space: bool,
}

impl Room {
    /// `Some` where `resident` bytes touched and `space` bytes mapped exceed any limit (less
    /// the margin and iolab's own headroom).
    fn over(resident: u64, space: u64, limits: &MemoryLimits) -> Option<Room> {
        let cap = |free: u64| ((free as f64 * MARGIN) as u64).saturating_sub(HEADROOM);
        let mut over: Vec<String> = Vec::new();
        let mut smallest: Option<u64> = None;
        let mut said: Vec<String> = Vec::new();
        let mut consider = |need: u64, free: u64, what: String| {
            let c = cap(free);
            smallest = Some(smallest.map_or(c, |s: u64| s.min(c)));
            said.push(what.clone());
            if need > c {
                over.push(what);
            }
        };
        if let Some(a) = limits.available {
            consider(resident, a, format!("MemAvailable {}", words(a)));
        }
        if let Some((max, usage)) = limits.cgroup {
            let free = max.saturating_sub(usage);
            consider(resident, free, format!("the cgroup's memory limit {} ({} in use)", words(max), words(usage)));
        }
        if let Some((limit, used)) = limits.address_space {
            let free = limit.saturating_sub(used);
            consider(space, free, format!("RLIMIT_AS {} ({} mapped already)", words(limit), words(used)));
        }
        (!over.is_empty()).then(|| Room {
            smallest: smallest.unwrap_or(0),
            address_space: over.iter().any(|o| o.starts_with("RLIMIT_AS")),
            said,
        })
    }

    fn said(&self) -> String {
        format!(
            "{} ({}, {:.0}% of it less {} for iolab itself)",
            words(self.smallest),
            self.said.join(", "),
            MARGIN * 100.0,
            words(HEADROOM)
        )
    }
}

/// A buffer outside any phase checked as a phase is: the eBPF recorder's ring (`what`, set by
/// `flag`), `resident` bytes the kernel charges to this process's cgroup and `mapped` bytes of
/// its address space (the ring's pages are mapped twice, so a record wraps without a copy).
pub fn check_buffer(
    what: &str,
    flag: &str,
    resident: u64,
    mapped: u64,
    limits: &MemoryLimits,
) -> Result<(), MemoryError> {
    let Some(room) = Room::over(resident, mapped, limits) else { return Ok(()) };
    Err(MemoryError(format!(
        "{what} would hold {} of memory; this process may take about {}; lower {flag}",
        words(if room.address_space { mapped } else { resident }),
        room.said()
    )))
}

/// A job's share, in words: `job `job1`: 512 threads × --iodepth 512 × 1 MiB buffers = 256 GiB,
/// histograms 1.0 GiB`.
fn describe(n: &JobNeed) -> String {
    let mut parts = Vec::new();
    if n.buffers > 0 {
        parts.push(format!(
            "{} thread{} × --iodepth {} × {} buffers ({}) = {}",
            n.threads,
            if n.threads == 1 { "" } else { "s" },
            n.depth,
            words(n.slot),
            n.slot_flag,
            words(n.buffers)
        ));
    }
    if n.histograms > 0 {
        parts.push(format!("latency histograms {}", words(n.histograms)));
    }
    if n.maps > 0 {
        parts.push(format!("validation's key maps {}", words(n.maps)));
    }
    if n.replay > 0 {
        parts.push(format!("the replay's calls and buffers {}", words(n.replay)));
    }
    format!("job `{}`: {}", n.job, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorders_ring_is_checked_as_a_phase_is() {
        let small = MemoryLimits { available: Some(1 << 30), ..Default::default() };
        let e = check_buffer("the eBPF ring buffer", "--buffer", 1 << 30, 2 << 30, &small).unwrap_err().to_string();
        assert!(e.contains("the eBPF ring buffer would hold 1 GiB") && e.contains("lower --buffer"), "{e}");
        assert!(e.contains("MemAvailable 1 GiB"), "{e}");
        let space = MemoryLimits { address_space: Some((1 << 30, 100 << 20)), ..Default::default() };
        let e = check_buffer("the ring", "--buffer", 256 << 20, 1 << 30, &space).unwrap_err().to_string();
        assert!(e.contains("would hold 1 GiB") && e.contains("RLIMIT_AS"), "{e}");
        assert!(check_buffer("the ring", "--buffer", 32 << 20, 64 << 20, &small).is_ok());
        assert!(check_buffer("the ring", "--buffer", 1 << 30, 2 << 30, &MemoryLimits::default()).is_ok());
    }
    use iolab_spec::{Bytes, JobPatch};

    fn job(flags: JobPatch) -> Job {
        JobPatch { target: Some("/tmp/x".into()), size: Some(Bytes::gib(1)), ..flags }.resolve("job1").unwrap()
    }

    #[test]
    fn buffers_are_threads_times_depth_times_the_largest_io() {
        let j = job(JobPatch {
            threads: Some(512),
            iodepth: Some(512),
            engine: Some(iolab_spec::EngineKind::IoUring),
            bs: Some("1m".parse().unwrap()),
            ..Default::default()
        });
        let n = need(&j, &[], None);
        assert_eq!(n.buffers, 256 << 30);
        assert_eq!(n.slot, 1 << 20);
        let limits =
            MemoryLimits { available: Some(20 << 30), address_space: Some((4 << 30, 100 << 20)), cgroup: None };
        let e = check_phase("write", std::slice::from_ref(&n), &limits).unwrap_err().to_string();
        assert!(e.contains("512 threads × --iodepth 512 × 1 MiB buffers (--bs) = 256 GiB"), "{e}");
        assert!(e.contains("RLIMIT_AS 4 GiB"), "{e}");
        assert!(e.contains("lower --threads, --iodepth or --bs of job `job1`"), "{e}");
        // The same job where nothing limits it but a large machine's memory.
        let big = MemoryLimits { available: Some(1 << 40), address_space: None, cgroup: None };
        assert!(check_phase("write", &[n], &big).is_ok());
    }

    #[test]
    fn a_small_job_fits_and_each_limit_counts() {
        let n = need(&job(JobPatch::default()), &[], None);
        assert!(n.resident() < 8 << 20, "{n:?}");
        for limits in [
            MemoryLimits { available: Some(1 << 30), ..Default::default() },
            MemoryLimits { cgroup: Some((1 << 30, 100 << 20)), ..Default::default() },
            MemoryLimits { address_space: Some((1 << 30, 200 << 20)), ..Default::default() },
            MemoryLimits::default(),
        ] {
            assert!(check_phase("p", std::slice::from_ref(&n), &limits).is_ok(), "{limits:?}");
        }
        let tight = MemoryLimits { cgroup: Some((1 << 30, 1 << 30)), ..Default::default() };
        let e = check_phase("p", &[n], &tight).unwrap_err().to_string();
        assert!(e.contains("the cgroup's memory limit 1 GiB (1 GiB in use)"), "{e}");
    }

    #[test]
    fn words_read_as_sizes() {
        assert_eq!(words(256 << 30), "256 GiB");
        assert_eq!(words((39 << 30) / 10), "3.9 GiB");
        assert_eq!(words(512), "512 bytes");
    }
}
