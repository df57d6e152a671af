//! What limited a figure: the one rule that reads a phase (or one node's share of it) with what
//! iolab samples beside it and names what bounded it, in this order: the `--rate` asked (met),
//! a network link near its speed or shaped rate (every interface the target's traffic
//! crosses), a target device busy with a deep queue, iolab's own threads on CPU, the queue
//! depth given (Little's law: IOPS × latency = operations in flight), else "not clear" with the
//! figures. The executor applies it as each phase ends; the summary prints its line, the JSON
//! keeps it (`phases[].limit`, `phases[].nodes[].limit`), and the scenarios' verdicts (locking,
//! scaling) read their links and disks through its cases ([`link_use`], [`device_use`],
//! [`device_saturated`]). Thresholds: the constants below, documented in docs/fidelity.md.

use crate::fidelity::Observed;
use iolab_spec::units::fmt_decimal;
use iolab_spec::Job;
use iolab_sysstat::SystemResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The rate asked is the limit when the phase did at least this share of it.
pub const RATE_MET: f64 = 0.90;
/// A link carrying this share of its speed or more is full (a 100 Mbit/s link gives about
/// 11–12 MB/s of payload: 90–95%).
pub const LINK_FULL: f64 = 0.80;
/// A device busy this share of the time or more (%util)...
pub const DEVICE_BUSY_PCT: f64 = 90.0;
/// ...with at least this many requests in its queue on average (aqu-sz), or given more than
/// [`SHALLOW_DEPTH`] by iolab, is saturated. One request at a time keeps any device busy
/// 100% of the time without saturating it: that is the queue depth's figure.
pub const DEEP_QUEUE: f64 = 4.0;
/// See [`DEEP_QUEUE`].
pub const SHALLOW_DEPTH: u32 = 4;
/// Where a target has no device figures (a network or FUSE filesystem whose device is
/// elsewhere), CPU I/O wait this high says the storage is saturated.
pub const IOWAIT_HIGH_PCT: f64 = 30.0;
/// iolab's worker threads are CPU-bound when they were runnable (on a CPU, or waiting in the
/// run queue for one: schedstat) this share of the phase or more; where schedstats are not
/// kept, when the process's CPU time is this share of the cores they could use (one per
/// worker, at most the machine's CPUs).
pub const CPU_FULL: f64 = 0.85;
/// The queue depth is the limit when the operations in flight (IOPS × mean latency, Little's
/// law) are this share of the depth given or more: every slot was busy all along.
pub const DEPTH_FULL: f64 = 0.80;

/// What bounded a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// The `--rate` / `--rate-iops` asked, met.
    Rate,
    /// A network link near its speed or its shaped rate.
    Network,
    /// A target device busy with a deep queue.
    Device,
    /// iolab's own threads, CPU-saturated.
    Cpu,
    /// The queue depth given: every slot busy all along.
    QueueDepth,
    /// None of the above: the figures are given.
    NotClear,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Rate => "rate",
            By::Network => "network",
            By::Device => "device",
            By::Cpu => "cpu",
            By::QueueDepth => "queue_depth",
            By::NotClear => "not_clear",
        }
    }
}

/// The limit line: what bounded the figure, what exactly (a device, an interface), the line in
/// words and the figures the rule read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub by: By,
    /// The device or interface named (`vda`, `veth1`), or the option (`--rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub text: String,
    /// `util_pct`, `aqu_sz`, `link_pct`, `link_mbit`, `cpu_pct`, `cpus`, `in_flight`,
    /// `depth`, `rate_asked`, `rate_done` (bytes/s or IOPS, `rate_unit_iops` 1 for IOPS),
    /// `iowait_pct`: those the phase had.
    pub figures: BTreeMap<String, f64>,
}

impl Bound {
    /// `limit: ...`, with the node in front on several nodes.
    pub fn line(&self, node: Option<&str>) -> String {
        match node {
            Some(n) => format!("limit on {n}: {}", self.text),
            None => format!("limit: {}", self.text),
        }
    }
}

/// What the rule needs beside the phase: its jobs (depth, rate), the node's CPUs, and a link
/// speed given by the user (`--link-speed`), which wins over the one interfaces report.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub jobs: &'a [Job],
    pub cpus: usize,
    pub link_mbps: Option<f64>,
}

/// The busiest link the target's traffic crosses: its name, bytes per second (the larger of
/// received and sent), speed and share of it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkUse {
    pub iface: Option<String>,
    pub bytes_s: f64,
    pub mbps: f64,
    pub share: f64,
}

/// The rule's network case: the busiest of the target's interfaces with a known speed (every
/// interface it names, for a network filesystem; `given_mbps` wins over what they report).
/// Without interface figures and with a speed given, the I/O rate `io_bytes_s` stands for
/// what crossed the link. `None` when no speed is known.
pub fn link_use(s: Option<&SystemResult>, given_mbps: Option<f64>, io_bytes_s: f64) -> Option<LinkUse> {
    let given = given_mbps.filter(|m| m.is_finite() && *m > 0.0);
    let target = s.and_then(|s| s.target.as_ref());
    let wanted = |name: &str| match target.filter(|t| !t.interfaces.is_empty()) {
        Some(t) => t.interfaces.iter().any(|i| i.name == name),
        None => false,
    };
    let busiest = s.and_then(|s| {
        s.mean
            .net
            .iter()
            .filter(|(n, _)| wanted(n))
            .map(|(n, r)| {
                let speed = target
                    .and_then(|t| t.interfaces.iter().find(|i| &i.name == n))
                    .and_then(|i| i.speed_mbps)
                    .map(|m| m as f64);
                (n, r.rx_bytes_s.max(r.tx_bytes_s), given.or(speed))
            })
            .filter(|(_, b, _)| *b > 0.0)
            .max_by(|a, b| {
                let share = |x: &(&String, f64, Option<f64>)| x.2.map_or(0.0, |m| x.1 * 8.0 / (m * 1e6));
                share(a).total_cmp(&share(b)).then(a.1.total_cmp(&b.1))
            })
    });
    match busiest {
        Some((n, bytes_s, Some(mbps))) => {
            Some(LinkUse { iface: Some(n.clone()), bytes_s, mbps, share: bytes_s * 8.0 / (mbps * 1e6) })
        }
        Some((_, _, None)) => None,
        None => {
            given.map(|mbps| LinkUse { iface: None, bytes_s: io_bytes_s, mbps, share: io_bytes_s * 8.0 / (mbps * 1e6) })
        }
    }
}

/// The busiest of the target's devices: name, %util, queue size (aqu-sz).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceUse {
    pub name: String,
    pub util_pct: f64,
    pub aqu: f64,
}

/// The rule's device case: the busiest device under the target (every sampled one when the
/// target names none).
pub fn device_use(s: &SystemResult) -> Option<DeviceUse> {
    let devices: Vec<&String> = s.target.as_ref().map(|t| t.devices.iter().collect()).unwrap_or_default();
    s.mean
        .disks
        .iter()
        .filter(|(n, _)| devices.is_empty() || devices.contains(n))
        .map(|(n, d)| DeviceUse { name: n.clone(), util_pct: d.util_pct, aqu: d.avgqu })
        .max_by(|a, b| a.util_pct.total_cmp(&b.util_pct).then(a.aqu.total_cmp(&b.aqu)))
}

/// Whether a device is saturated: busy [`DEVICE_BUSY_PCT`] or more with a queue of
/// [`DEEP_QUEUE`] or more, or given more than [`SHALLOW_DEPTH`] operations at once by iolab
/// (`depth`; `None` when the depth is not known or not iolab's, as with buffered writes, and
/// busy alone decides).
pub fn device_saturated(d: &DeviceUse, depth: Option<u32>) -> bool {
    d.util_pct >= DEVICE_BUSY_PCT && (depth.is_none_or(|q| q > SHALLOW_DEPTH) || d.aqu >= DEEP_QUEUE)
}

/// The storage saturated where no device figure says it (a network or FUSE filesystem): CPU I/O
/// wait of [`IOWAIT_HIGH_PCT`] or more.
pub fn iowait_saturated(s: &SystemResult) -> bool {
    device_use(s).is_none() && s.mean.cpu.all.iowait_pct >= IOWAIT_HIGH_PCT
}

/// The depth the jobs give (threads × iodepth of the jobs that are not paced), 0 when all are.
pub fn depth_given(jobs: &[Job]) -> u32 {
    jobs.iter()
        .filter(|j| j.workload.block().is_none_or(|b| b.rate.is_none() && b.rate_iops.is_none()))
        .map(|j| j.threads.saturating_mul(j.iodepth.max(1)))
        .sum()
}

/// Operations in flight on average: Σ over classes of operations × mean latency, over the
/// elapsed time (Little's law).
pub fn in_flight(o: &Observed) -> f64 {
    if o.elapsed_s <= 0.0 {
        return 0.0;
    }
    o.total.iter().map(|(_, c)| c.ops as f64 * c.lat_ns.mean as f64 / 1e9).sum::<f64>() / o.elapsed_s
}

/// The rule (see the module): what bounded the phase observed.
pub fn judge(o: Observed, c: &Context) -> Bound {
    let mut fig = BTreeMap::new();
    let io_bytes_s = o.total.read().bw_bytes + o.total.write().bw_bytes;
    let iops: f64 = o.total.iter().map(|(_, t)| t.iops).sum();
    let workers: u32 = c.jobs.iter().map(|j| j.threads).sum();
    let depth = depth_given(c.jobs);
    let flight = in_flight(&o);
    let cpu_s = o.cpu.user_s + o.cpu.system_s;
    let cores = (workers.max(1) as usize).min(c.cpus.max(1)) as f64;
    // The workers' own account (schedstat): on a CPU or waiting for one, over the window they
    // ran (the ramp included, as the account is).
    let ramp = c.jobs.iter().map(|j| j.ramp.as_secs_f64()).fold(0.0, f64::max);
    let window = (o.elapsed_s + ramp) * workers.max(1) as f64;
    let (on, waiting) = (o.cpu.workers_on_cpu_s, o.cpu.workers_waiting_s);
    let sched = on > 0.0 && window > 0.0;
    let cpu_share = if sched {
        (on + waiting) / window
    } else if o.elapsed_s > 0.0 {
        cpu_s / (o.elapsed_s * cores)
    } else {
        0.0
    };
    let cpu = CpuUse { share: cpu_share, sched, on, waiting, window, cpu_s };
    fig.insert("cpu_pct".to_string(), cpu_share * 100.0);
    if sched {
        fig.insert("on_cpu_pct".to_string(), 100.0 * on / window);
        fig.insert("waiting_cpu_pct".to_string(), 100.0 * waiting / window);
    }
    fig.insert("cpus".to_string(), c.cpus as f64);
    fig.insert("in_flight".to_string(), flight);
    if depth > 0 {
        fig.insert("depth".to_string(), depth as f64);
    }
    let device = o.system.and_then(device_use);
    if let Some(d) = &device {
        fig.insert("util_pct".to_string(), d.util_pct);
        fig.insert("aqu_sz".to_string(), d.aqu);
    }
    if let Some(s) = o.system {
        fig.insert("iowait_pct".to_string(), s.mean.cpu.all.iowait_pct);
    }
    let link = link_use(o.system, c.link_mbps, io_bytes_s);
    if let Some(l) = &link {
        fig.insert("link_pct".to_string(), l.share * 100.0);
        fig.insert("link_mbit".to_string(), l.mbps);
    }
    let bound = |by: By, subject: Option<String>, text: String, figures: BTreeMap<String, f64>| Bound {
        by,
        subject,
        text,
        figures,
    };

    // 1. The rate asked, met.
    if let Some((flag, text)) = rate_met(c.jobs, iops, io_bytes_s, &mut fig) {
        return bound(By::Rate, Some(flag), text, fig);
    }
    // 2. A link near its speed.
    if let Some(l) = link.as_ref().filter(|l| l.share >= LINK_FULL) {
        let on = l.iface.clone().unwrap_or_else(|| "the link".to_string());
        let carried = if l.iface.is_some() { "carried" } else { "moved over it (its I/O)" };
        return bound(
            By::Network,
            l.iface.clone(),
            format!(
                "the network: {on} {carried} {}/s, {:.0}% of its {} Mbit/s",
                fmt_decimal(l.bytes_s),
                l.share * 100.0,
                trim(l.mbps)
            ),
            fig,
        );
    }
    // 3. A device busy with a deep queue. Buffered writes reach the device through the
    // kernel's writeback, not at iolab's depth: busy alone decides then.
    let buffered_writes = c.jobs.iter().any(|j| j.workload.writes() && !j.direct);
    let depth_known = (!c.jobs.is_empty() && !buffered_writes).then_some(depth.max(1));
    if let Some(d) = device.as_ref().filter(|d| device_saturated(d, depth_known)) {
        return bound(
            By::Device,
            Some(d.name.clone()),
            format!(
                "the device: {} busy {:.0}% of the time with {:.1} requests queued on average",
                d.name, d.util_pct, d.aqu
            ),
            fig,
        );
    }
    if let Some(s) = o.system.filter(|s| iowait_saturated(s)) {
        return bound(
            By::Device,
            None,
            format!(
                "the storage: CPU I/O wait {:.0}% (no device of the target is sampled here)",
                s.mean.cpu.all.iowait_pct
            ),
            fig,
        );
    }
    // 4. iolab's own threads on CPU.
    if cpu_share >= CPU_FULL && workers > 0 {
        let text = cpu_text(&cpu, workers, c.cpus, cores, o.elapsed_s);
        return bound(By::Cpu, None, text, fig);
    }
    // 5. The queue depth given (Little's law).
    if depth > 0 && flight >= DEPTH_FULL * depth as f64 {
        let lat_ms = if iops > 0.0 { flight / iops * 1e3 } else { 0.0 };
        return bound(
            By::QueueDepth,
            None,
            format!(
                "the queue depth given: {depth} in flight ({}), and IOPS × latency = {} × {} ms = {:.2} in flight: every slot was busy all along; a deeper queue (--iodepth, --threads) may go faster",
                depth_words(c.jobs),
                count(iops),
                short(lat_ms),
                flight
            ),
            fig,
        );
    }
    // 6. Not clear: the figures.
    let text = not_clear(device.as_ref(), link.as_ref(), cpu_share, (depth, flight), o.system.is_some());
    bound(By::NotClear, None, text, fig)
}

/// The rate asked, when every job is paced and the rate was met: the flag and the line. The
/// asked and done figures go into `fig` either way.
fn rate_met(jobs: &[Job], iops: f64, io_bytes_s: f64, fig: &mut BTreeMap<String, f64>) -> Option<(String, String)> {
    let paced: Vec<&Job> =
        jobs.iter().filter(|j| j.workload.block().is_some_and(|b| b.rate.is_some() || b.rate_iops.is_some())).collect();
    if paced.is_empty() || paced.len() != jobs.len() {
        return None;
    }
    let by_iops = paced.iter().all(|j| j.workload.block().is_some_and(|b| b.rate.is_none()));
    let asked: f64 = paced
        .iter()
        .filter_map(|j| j.workload.block())
        .map(|b| if by_iops { b.rate_iops.unwrap_or(0) as f64 } else { b.rate.map_or(0.0, |r| r.0 as f64) })
        .sum();
    let done = if by_iops { iops } else { io_bytes_s };
    fig.insert("rate_asked".to_string(), asked);
    fig.insert("rate_done".to_string(), done);
    if by_iops {
        fig.insert("rate_unit_iops".to_string(), 1.0);
    }
    let words = |v: f64| if by_iops { format!("{v:.0} IOPS") } else { format!("{}/s", fmt_decimal(v)) };
    if asked > 0.0 && done >= RATE_MET * asked {
        let flag = if by_iops { "--rate-iops" } else { "--rate" };
        return Some((
            flag.to_string(),
            format!("the rate asked ({flag}): {} asked, {} done", words(asked), words(done)),
        ));
    }
    None
}

/// How iolab's workers used the CPU: from their own schedstat account where it was read
/// (`sched`: on a CPU `on` s, waiting for one `waiting` s, of `window` thread-seconds), else
/// from the process's CPU time `cpu_s`; `share` is the fraction busy either way.
struct CpuUse {
    share: f64,
    sched: bool,
    on: f64,
    waiting: f64,
    window: f64,
    cpu_s: f64,
}

/// The CPU case's line.
fn cpu_text(u: &CpuUse, workers: u32, cpus: usize, cores: f64, elapsed_s: f64) -> String {
    if u.sched {
        let held = if u.waiting / u.window >= 0.2 {
            format!(
                "; waiting for a CPU {:.0}% of it: other work on the machine's {cpus} CPU(s) held them",
                100.0 * u.waiting / u.window,
            )
        } else {
            String::new()
        };
        format!(
            "iolab's own threads on CPU: {workers} worker thread(s) were runnable {:.0}% of the phase (on a CPU {:.0}%){held}",
            u.share * 100.0,
            100.0 * u.on / u.window
        )
    } else {
        format!(
            "iolab's own threads on CPU: {workers} worker thread(s) used {:.2} s of CPU per second, {:.0}% of the {} CPU(s) they could use",
            if elapsed_s > 0.0 { u.cpu_s / elapsed_s } else { 0.0 },
            u.share * 100.0,
            cores as usize
        )
    }
}

/// The line when no case holds: the figures the cases read.
fn not_clear(
    device: Option<&DeviceUse>,
    link: Option<&LinkUse>,
    cpu_share: f64,
    (depth, flight): (u32, f64),
    sampled: bool,
) -> String {
    let mut parts = Vec::new();
    if let Some(d) = device {
        parts.push(format!("{} {:.0}% busy, queue {:.1}", d.name, d.util_pct, d.aqu));
    }
    if let Some(l) = link {
        parts.push(format!("{} {:.0}% of its link", l.iface.as_deref().unwrap_or("the link"), l.share * 100.0));
    }
    parts.push(format!("iolab's threads runnable {:.0}% of the time", cpu_share * 100.0));
    if depth > 0 {
        parts.push(format!("{flight:.2} of {depth} in flight"));
    }
    if !sampled {
        parts.push("no system figures (sampling off)".to_string());
    }
    format!("not clear: {}", parts.join(", "))
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn count(v: f64) -> String {
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn short(ms: f64) -> String {
    crate::fidelity::pct_words(ms)
}

/// `QD32 × 1 thread`, `1 thread`, `QD1 × 4 threads + 2 threads`: how the depth was given.
fn depth_words(jobs: &[Job]) -> String {
    let parts: Vec<String> = jobs
        .iter()
        .filter(|j| j.workload.block().is_none_or(|b| b.rate.is_none() && b.rate_iops.is_none()))
        .map(|j| {
            let t = if j.threads == 1 { "1 thread".to_string() } else { format!("{} threads", j.threads) };
            if j.iodepth > 1 {
                format!("QD{} × {t}", j.iodepth)
            } else {
                format!("QD1 × {t}")
            }
        })
        .collect();
    parts.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CpuTime, Totals};
    use crate::stats::Acc;
    use crate::OpClass;
    use iolab_spec::{Bytes, EngineKind, JobPatch, Rw};
    use iolab_sysstat::target::Interface;
    use iolab_sysstat::{DiskRates, NetRates, TargetInfo};

    fn totals(ops: u64, lat_ns: u64, secs: f64) -> Totals {
        let mut a = Acc::default();
        for _ in 0..ops {
            a.record(OpClass::Read, 4096, lat_ns);
        }
        Totals::from_acc(&a, secs)
    }

    fn job(f: impl FnOnce(&mut JobPatch)) -> Vec<Job> {
        let mut p = JobPatch { target: Some("/t".into()), rw: Some(Rw::RandRead), ..Default::default() };
        f(&mut p);
        vec![p.resolve("j").unwrap()]
    }

    fn disk(util: f64, aqu: f64) -> SystemResult {
        let mut s = SystemResult::default();
        s.mean.disks.insert("loop0".into(), DiskRates { util_pct: util, avgqu: aqu, ..Default::default() });
        s.target = Some(TargetInfo { devices: vec!["loop0".into()], ..Default::default() });
        s
    }

    fn obs<'a>(t: &'a Totals, s: Option<&'a SystemResult>, cpu_s: f64) -> Observed<'a> {
        Observed {
            total: t,
            elapsed_s: 1.0,
            cpu: CpuTime { system_s: cpu_s, ..Default::default() },
            system: s,
            holes: None,
        }
    }

    #[test]
    fn qd1_is_the_queue_depth_and_qd32_on_a_busy_device_is_the_device() {
        // QD1: 10,000 IOPS at 0.098 ms, the device 98% busy with one request queued.
        let t = totals(10_000, 98_000, 1.0);
        let s = disk(98.0, 0.98);
        let c = Context { jobs: &job(|_| {}), cpus: 2, link_mbps: None };
        let b = judge(obs(&t, Some(&s), 0.2), &c);
        assert_eq!(b.by, By::QueueDepth, "{}", b.text);
        assert!(b.text.contains("1 in flight (QD1 × 1 thread)") && b.text.contains("= 0.98 in flight"), "{}", b.text);
        // QD32: the device 100% busy with 31 requests queued.
        let t = totals(40_000, 790_000, 1.0);
        let s = disk(100.0, 31.0);
        let jobs = job(|p| {
            p.engine = Some(EngineKind::IoUring);
            p.iodepth = Some(32)
        });
        let b = judge(obs(&t, Some(&s), 0.3), &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!((b.by, b.subject.as_deref()), (By::Device, Some("loop0")), "{}", b.text);
        assert!(b.text.contains("loop0 busy 100% of the time with 31.0 requests queued"), "{}", b.text);
    }

    #[test]
    fn cpu_rate_link_and_not_clear() {
        let t = totals(1000, 1000, 1.0);
        let jobs = job(|_| {});
        let b = judge(obs(&t, None, 0.97), &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!(b.by, By::Cpu, "{}", b.text);
        assert!(b.text.contains("97% of the 1 CPU(s)"), "{}", b.text);
        // With the workers' own account: runnable all along, half of it waiting for a CPU.
        let o = Observed {
            cpu: CpuTime { workers_on_cpu_s: 0.5, workers_waiting_s: 0.48, ..Default::default() },
            ..obs(&t, None, 0.5)
        };
        let b = judge(o, &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!(b.by, By::Cpu, "{}", b.text);
        assert!(b.text.contains("runnable 98% of the phase (on a CPU 50%); waiting for a CPU 48%"), "{}", b.text);
        // A rate met.
        let jobs = job(|p| p.rate = Some(Bytes(1000)));
        let b = judge(obs(&totals(1, 10_000, 1.0), None, 0.0), &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!(b.by, By::Rate);
        assert_eq!(b.text, "the rate asked (--rate): 1.0 kB/s asked, 4.1 kB/s done");
        // A shaped link: every interface of the target is looked at.
        let mut s = SystemResult::default();
        for (n, tx) in [("g11c", 2e6), ("g21c", 11.8e6)] {
            s.mean.net.insert(n.into(), NetRates { tx_bytes_s: tx, ..Default::default() });
        }
        s.target = Some(TargetInfo {
            network: true,
            interfaces: vec![
                Interface { name: "g11c".into(), speed_mbps: Some(100) },
                Interface { name: "g21c".into(), speed_mbps: Some(100) },
            ],
            ..Default::default()
        });
        let jobs = job(|_| {});
        let b = judge(obs(&t, Some(&s), 0.1), &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!((b.by, b.subject.as_deref()), (By::Network, Some("g21c")), "{}", b.text);
        assert!(b.text.contains("g21c carried 11.8 MB/s, 94% of its 100 Mbit/s"), "{}", b.text);
        // Nothing full, the depth not used up: not clear, with the figures.
        let t = totals(100, 1000, 1.0);
        let s = disk(40.0, 0.5);
        let b = judge(obs(&t, Some(&s), 0.1), &Context { jobs: &jobs, cpus: 2, link_mbps: None });
        assert_eq!(b.by, By::NotClear);
        assert!(b.text.starts_with("not clear: loop0 40% busy, queue 0.5, iolab's threads runnable 10%"), "{}", b.text);
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(v["by"], "not_clear");
        assert_eq!(v["figures"]["util_pct"], 40.0);
    }
}
