//! Snapshots of /proc and the sampler thread that takes them beside a run: one sample per
//! interval, plus a summary (mean over the whole window, max over the samples).

use crate::names::NameMap;
use crate::procfs::*;
use crate::rates::{CpuPct, DiskRates, NetRates};
use crate::target::TargetInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where /proc is; tests point it at captured fixtures.
#[derive(Debug, Clone)]
pub struct ProcRoot(pub PathBuf);

impl Default for ProcRoot {
    fn default() -> Self {
        ProcRoot("/proc".into())
    }
}

/// Every counter the sampler reads, at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub cpu: CpuStat,
    pub disks: BTreeMap<String, DiskCounters>,
    pub net: BTreeMap<String, NetCounters>,
    pub mem: MemInfo,
    pub pressure: Option<Pressure>,
    pub load1: Option<f64>,
}

impl Snapshot {
    pub fn read(root: &ProcRoot) -> Snapshot {
        let read = |p: &str| std::fs::read_to_string(root.0.join(p)).unwrap_or_default();
        Snapshot {
            at: Instant::now(),
            cpu: parse_stat(&read("stat")),
            disks: parse_diskstats(&read("diskstats")),
            net: parse_netdev(&read("net/dev")),
            mem: parse_meminfo(&read("meminfo")),
            pressure: parse_pressure(&read("pressure/io")),
            load1: parse_loadavg(&read("loadavg")),
        }
    }
}

/// CPU over an interval: the mean over CPUs (the aggregate line) and each CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    #[serde(flatten)]
    pub all: CpuPct,
    pub per_cpu: Vec<CpuPct>,
}

/// Everything over one interval (a sample) or a whole window (a summary's mean).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// End of the interval, seconds after the window began.
    pub t_s: f64,
    pub cpu: CpuSummary,
    pub disks: NameMap<DiskRates>,
    pub net: NameMap<NetRates>,
    /// Page cache at the end of the interval.
    pub dirty_kb: u64,
    pub writeback_kb: u64,
    pub cached_kb: u64,
    /// Share of the interval some (or all) runnable tasks stalled on I/O (PSI), when the kernel has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_pressure_some_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_pressure_full_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load1: Option<f64>,
}

impl Rates {
    /// Rates between two snapshots; devices and interfaces present in only one are skipped.
    pub fn between(a: &Snapshot, b: &Snapshot, t_s: f64) -> Rates {
        let secs = b.at.saturating_duration_since(a.at).as_secs_f64();
        let per_cpu =
            b.cpu.per_cpu.iter().filter_map(|(n, t)| a.cpu.per_cpu.get(n).map(|p| CpuPct::between(p, t))).collect();
        let pressure = |f: fn(&Pressure) -> u64| match (a.pressure, b.pressure) {
            (Some(x), Some(y)) if secs > 0.0 => {
                Some((crate::rates::counter_delta(f(&x), f(&y)) as f64 / 1e6 / secs * 100.0).min(100.0))
            }
            _ => None,
        };
        Rates {
            t_s,
            cpu: CpuSummary { all: CpuPct::between(&a.cpu.all, &b.cpu.all), per_cpu },
            disks: b
                .disks
                .iter()
                .filter_map(|(n, d)| a.disks.get(n).map(|p| (n.clone(), DiskRates::between(p, d, secs))))
                .collect(),
            net: b
                .net
                .iter()
                .filter_map(|(n, d)| a.net.get(n).map(|p| (n.clone(), NetRates::between(p, d, secs))))
                .collect(),
            dirty_kb: b.mem.dirty_kb,
            writeback_kb: b.mem.writeback_kb,
            cached_kb: b.mem.cached_kb,
            io_pressure_some_pct: pressure(|p| p.some_total_us),
            io_pressure_full_pct: pressure(|p| p.full_total_us),
            load1: b.load1,
        }
    }

    /// Raise each figure to `s`'s where `s`'s is larger (a running maximum over samples, as a
    /// summary's `max` is; `t_s` is left as it is).
    pub fn raise_to(&mut self, s: &Rates) {
        self.cpu.all = self.cpu.all.max(&s.cpu.all);
        for (n, d) in &s.disks {
            let m = self.disks.entry_or_default(n);
            *m = m.max(d);
        }
        for (n, d) in &s.net {
            let m = self.net.entry_or_default(n);
            *m = m.max(d);
        }
        self.dirty_kb = self.dirty_kb.max(s.dirty_kb);
        self.writeback_kb = self.writeback_kb.max(s.writeback_kb);
        self.cached_kb = self.cached_kb.max(s.cached_kb);
        self.io_pressure_some_pct = max_opt(self.io_pressure_some_pct, s.io_pressure_some_pct);
        self.io_pressure_full_pct = max_opt(self.io_pressure_full_pct, s.io_pressure_full_pct);
        self.load1 = max_opt(self.load1, s.load1);
    }

    fn keep(&mut self, disks: &std::collections::BTreeSet<String>, nets: &std::collections::BTreeSet<String>) {
        self.disks.retain(|k, _| disks.contains(k));
        self.net.retain(|k, _| nets.contains(k));
    }
}

/// What a phase's system looked like: the mean over the window, the worst second, the samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemResult {
    pub interval_s: f64,
    /// The window's mean: rates between its first and last snapshot.
    #[serde(flatten)]
    pub mean: Rates,
    /// The largest value of each field over the samples.
    pub max: Rates,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetInfo>,
    pub samples: Vec<Rates>,
}

impl SystemResult {
    /// Summarise a window. Devices and interfaces that did nothing are left out, unless they
    /// carry the target's I/O.
    pub fn summarise(
        first: &Snapshot,
        last: &Snapshot,
        mut samples: Vec<Rates>,
        interval: Duration,
        target: Option<TargetInfo>,
    ) -> SystemResult {
        let t_end = last.at.saturating_duration_since(first.at).as_secs_f64();
        let mut mean = Rates::between(first, last, t_end);
        let wanted_disks: std::collections::BTreeSet<String> = mean
            .disks
            .iter()
            .filter(|(n, d)| !d.is_idle() || target.as_ref().is_some_and(|t| t.devices.contains(n)))
            .map(|(n, _)| n.clone())
            .collect();
        let wanted_nets: std::collections::BTreeSet<String> = mean
            .net
            .iter()
            .filter(|(n, d)| {
                !d.is_idle() || target.as_ref().is_some_and(|t| t.interfaces.iter().any(|i| &i.name == *n))
            })
            .map(|(n, _)| n.clone())
            .collect();
        mean.keep(&wanted_disks, &wanted_nets);
        let mut max = Rates { t_s: t_end, ..Default::default() };
        for s in &mut samples {
            s.keep(&wanted_disks, &wanted_nets);
            max.raise_to(s);
        }
        SystemResult { interval_s: interval.as_secs_f64(), mean, max, target, samples }
    }

    /// Summarise a window whose samples were handed on as they were taken: `max_so_far` is
    /// their running maximum ([`Rates::raise_to`]); the summary's `samples` stay empty.
    pub fn summarise_streamed(
        first: &Snapshot,
        last: &Snapshot,
        max_so_far: &Rates,
        interval: Duration,
        target: Option<TargetInfo>,
    ) -> SystemResult {
        let mut r = Self::summarise(first, last, Vec::new(), interval, target);
        let mut max = max_so_far.clone();
        max.t_s = r.max.t_s;
        max.cpu.per_cpu = Vec::new();
        max.keep_those_of(&r.mean);
        r.max = max;
        r
    }
}

impl Rates {
    /// Keep only the devices and interfaces a window's summary kept (its mean's), as
    /// [`SystemResult::summarise`] does to the samples it holds; for samples read back one by one.
    pub fn keep_those_of(&mut self, mean: &Rates) {
        self.disks.retain(|n, _| mean.disks.contains_key(n));
        self.net.retain(|n, _| mean.net.contains_key(n));
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// Where a sampler's samples go: kept for the summary, or handed on one by one as taken.
pub type Emit = Box<dyn FnMut(Rates) + Send>;

enum Out {
    Keep(Vec<Rates>),
    Emit(Emit),
}

impl Out {
    fn put(&mut self, s: Rates) {
        match self {
            Out::Keep(v) => v.push(s),
            Out::Emit(f) => f(s),
        }
    }
}

/// What the sampler thread hands back: the window's first and latest snapshot, the running
/// maximum, and where samples go.
type Taken = (Snapshot, Snapshot, Rates, Out);

/// A thread that snapshots /proc every `interval` from a start instant until stopped. Its memory
/// does not grow with the run when samples are streamed ([`Sampler::streaming`]): it holds two
/// snapshots and a running maximum.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Option<Taken>>,
    interval: Duration,
    root: ProcRoot,
    target: Option<TargetInfo>,
}

/// Keep a sample small, so a long run's memory stays flat: the target's devices and interfaces
/// and whatever was active; per-CPU figures only in the window's mean.
fn trim(s: &mut Rates, target: Option<&TargetInfo>) {
    s.cpu.per_cpu = Vec::new();
    s.disks.retain(|n, d| !d.is_idle() || target.is_some_and(|t| t.devices.contains(n)));
    s.net.retain(|n, r| !r.is_idle() || target.is_some_and(|t| t.interfaces.iter().any(|i| &i.name == n)));
}

impl Sampler {
    /// Take the first snapshot at `from` (now, if that has passed) and one every `interval`
    /// after it; the samples are kept and come back in the summary's `samples`.
    pub fn start(root: ProcRoot, interval: Duration, from: Instant, target: Option<TargetInfo>) -> Sampler {
        Self::spawn(root, interval, from, target, Out::Keep(Vec::new()))
    }

    /// Like [`Sampler::start`], but each sample goes to `emit` as it is taken (the last one from
    /// [`Sampler::finish`]) and the summary's `samples` stay empty.
    pub fn streaming(
        root: ProcRoot,
        interval: Duration,
        from: Instant,
        target: Option<TargetInfo>,
        emit: Emit,
    ) -> Sampler {
        Self::spawn(root, interval, from, target, Out::Emit(emit))
    }

    fn spawn(root: ProcRoot, interval: Duration, from: Instant, target: Option<TargetInfo>, mut out: Out) -> Sampler {
        let interval = interval.max(Duration::from_millis(10));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r, tgt) = (stop.clone(), root.clone(), target.clone());
        // Sleep in short steps so a stop is noticed quickly; false if stopped first.
        let wait_until = move |due: Instant, s: &AtomicBool| -> bool {
            loop {
                if s.load(Ordering::Relaxed) {
                    return false;
                }
                let now = Instant::now();
                if now >= due {
                    return true;
                }
                std::thread::sleep((due - now).min(Duration::from_millis(20)));
            }
        };
        let handle = std::thread::Builder::new()
            .name("iolab-sampler".into())
            .spawn(move || {
                if !wait_until(from, &s) {
                    return None;
                }
                let first = Snapshot::read(&r);
                let mut prev = first.clone();
                let mut max = Rates::default();
                for k in 1u32.. {
                    if !wait_until(first.at + interval * k, &s) {
                        break;
                    }
                    let cur = Snapshot::read(&r);
                    let mut sample =
                        Rates::between(&prev, &cur, cur.at.saturating_duration_since(first.at).as_secs_f64());
                    trim(&mut sample, tgt.as_ref());
                    max.raise_to(&sample);
                    out.put(sample);
                    prev = cur;
                }
                Some((first, prev, max, out))
            })
            .expect("spawning the sampler thread");
        Sampler { stop, handle, interval, root, target }
    }

    /// Stop, take the last snapshot, and summarise the window; `None` if it never began.
    pub fn finish(self) -> Option<SystemResult> {
        self.stop.store(true, Ordering::Relaxed);
        let (first, prev, mut max, mut out) = self.handle.join().ok().flatten()?;
        let last = Snapshot::read(&self.root);
        // The last partial interval counts too, when it is long enough to mean something.
        if last.at.saturating_duration_since(prev.at) >= self.interval / 5 {
            let mut sample = Rates::between(&prev, &last, last.at.saturating_duration_since(first.at).as_secs_f64());
            trim(&mut sample, self.target.as_ref());
            max.raise_to(&sample);
            out.put(sample);
        }
        Some(match out {
            Out::Keep(kept) => SystemResult::summarise(&first, &last, kept, self.interval, self.target),
            Out::Emit(_) => SystemResult::summarise_streamed(&first, &last, &max, self.interval, self.target),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_sees_this_machine() {
        let s = Sampler::start(ProcRoot::default(), Duration::from_millis(50), Instant::now(), None);
        std::thread::sleep(Duration::from_millis(230));
        let r = s.finish().expect("sampled");
        assert!((4..=6).contains(&r.samples.len()), "{}", r.samples.len());
        // Every state counts: a niced build beside the test shows as nice, not user.
        let c = &r.mean.cpu.all;
        let total = c.user_pct
            + c.nice_pct
            + c.system_pct
            + c.irq_pct
            + c.softirq_pct
            + c.steal_pct
            + c.idle_pct
            + c.iowait_pct;
        assert!(total > 50.0, "{:?}", r.mean.cpu);
        assert!(r.samples.windows(2).all(|w| w[0].t_s < w[1].t_s));
    }

    #[test]
    fn a_streaming_sampler_hands_each_sample_on_and_keeps_the_same_summary() {
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = got.clone();
        let emit: Emit = Box::new(move |r| sink.lock().unwrap().push(r));
        let s = Sampler::streaming(ProcRoot::default(), Duration::from_millis(50), Instant::now(), None, emit);
        std::thread::sleep(Duration::from_millis(230));
        let r = s.finish().expect("sampled");
        assert!(r.samples.is_empty(), "streamed samples are not kept");
        let mut got = got.lock().unwrap().clone();
        assert!((4..=6).contains(&got.len()), "{}", got.len());
        assert!(got.windows(2).all(|w| w[0].t_s < w[1].t_s));
        // The running maximum is the maximum of what was handed on.
        let mut max = Rates::default();
        for g in &mut got {
            g.keep_those_of(&r.mean);
            max.raise_to(g);
        }
        assert_eq!(r.max.cpu.all, max.cpu.all);
        assert_eq!(r.max.dirty_kb, max.dirty_kb);
        assert_eq!(r.max.disks, max.disks);
    }

    #[test]
    fn stopped_before_start_gives_nothing() {
        let s =
            Sampler::start(ProcRoot::default(), Duration::from_secs(1), Instant::now() + Duration::from_secs(60), None);
        assert!(s.finish().is_none());
    }
}
