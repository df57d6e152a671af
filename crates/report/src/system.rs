//! The system beside a phase, for people: one compact line (CPU, the target's devices, its
//! network) and, in words, what stands out: a saturated device, high I/O wait, a link near
//! its speed; then the fidelity rule's findings (the figure against what the storage saw),
//! the reads that fell in kept holes, the layout before the window, and the limit line
//! (`iolab_model::fidelity`, `iolab_model::bound`), as the summary and the report print them.

use crate::fmt::{count, fmt_decimal, num};
use iolab_model::PhaseResult;
use iolab_spec::Job;
use iolab_sysstat::{DiskRates, SystemResult};
use std::fmt::Write;

/// Devices worth showing: the target's, else any that was busy.
fn devices(s: &SystemResult) -> Vec<(&String, &DiskRates)> {
    let target: Vec<&String> = s.target.iter().flat_map(|t| &t.devices).collect();
    let mut v: Vec<(&String, &DiskRates)> = s.mean.disks.iter().filter(|(n, _)| target.contains(n)).collect();
    if v.is_empty() {
        v = s.mean.disks.iter().filter(|(_, d)| d.util_pct >= 1.0).collect();
    }
    v
}

/// Interfaces worth showing: the target's when it is on the network, else any moving > 1 MB/s.
fn interfaces(s: &SystemResult) -> Vec<(String, f64, f64, Option<u64>)> {
    let speed =
        |n: &str| s.target.as_ref().and_then(|t| t.interfaces.iter().find(|i| i.name == n)).and_then(|i| i.speed_mbps);
    let on_net: Vec<&str> = s.target.iter().flat_map(|t| &t.interfaces).map(|i| i.name.as_str()).collect();
    s.mean
        .net
        .iter()
        .filter(|(n, r)| on_net.contains(&n.as_str()) || (n.as_str() != "lo" && r.rx_bytes_s.max(r.tx_bytes_s) > 1e6))
        .map(|(n, r)| (n.clone(), r.rx_bytes_s, r.tx_bytes_s, speed(n)))
        .collect()
}

/// A device busier than this (%util) shows its request size and queue size: how the I/O
/// reaches it is then the story (seed 002's slow start rested on ~20 KiB requests).
pub const BUSY_PCT: f64 = 10.0;
/// Merges show when at least this share of a direction's requests were merged (iostat's
/// %rrqm, %wrqm).
pub const MERGED_PCT: f64 = 10.0;
/// Reads' and writes' await show apart when both happen and one is more than this many times
/// the other.
pub const AWAIT_SPLIT: f64 = 2.0;

/// One device in the line: its rates, and the details that matter ([`BUSY_PCT`],
/// [`MERGED_PCT`], [`AWAIT_SPLIT`]).
fn device(out: &mut String, name: &str, d: &DiskRates) {
    let ms = |v: f64| crate::fmt::ms((v * 1e6) as u64);
    let merged = |rqm: f64, ios: f64| if rqm + ios > 0.0 { 100.0 * rqm / (rqm + ios) } else { 0.0 };
    let _ = write!(out, " | {name}");
    if d.r_s > 0.0 {
        let _ = write!(out, " r/s {:.0} rkB/s {:.0}", d.r_s, d.rkb_s);
        if merged(d.rrqm_s, d.r_s) >= MERGED_PCT {
            let _ = write!(out, " rrqm/s {:.0} ({:.0}%)", d.rrqm_s, merged(d.rrqm_s, d.r_s));
        }
    }
    if d.w_s > 0.0 {
        let _ = write!(out, " w/s {:.0} wkB/s {:.0}", d.w_s, d.wkb_s);
        if merged(d.wrqm_s, d.w_s) >= MERGED_PCT {
            let _ = write!(out, " wrqm/s {:.0} ({:.0}%)", d.wrqm_s, merged(d.wrqm_s, d.w_s));
        }
    }
    if d.util_pct >= BUSY_PCT {
        let _ = write!(out, " areq-sz {} KiB aqu-sz {}", crate::fmt::num(d.avgrq_kb), crate::fmt::num(d.avgqu));
    }
    let (r, w) = (d.r_await_ms, d.w_await_ms);
    let split = d.r_s > 0.0 && d.w_s > 0.0 && r.max(w) > AWAIT_SPLIT * r.min(w);
    if split {
        let _ = write!(out, " r_await {} w_await {} ms", ms(r), ms(w));
    } else {
        let _ = write!(out, " await {} ms", ms(await_ms(d)));
    }
    let _ = write!(out, " util {:.0}%", d.util_pct);
}

/// `cpu us 2% sy 9% wa 66% | vda w/s 512 wkB/s 524288 areq-sz 1024 KiB aqu-sz 1.20 await 1.20
/// ms util 98% | eth0 tx 11.2 MB/s`: request and queue size when the device is busy, merges
/// when many requests were merged, and reads' and writes' await apart when they differ.
pub fn line(s: &SystemResult) -> String {
    let c = &s.mean.cpu.all;
    let mut out = format!("cpu us {:.0}% sy {:.0}% wa {:.0}%", c.us(), c.sy(), c.iowait_pct);
    for (name, d) in devices(s) {
        device(&mut out, name, d);
    }
    if devices(s).is_empty() {
        if let Some(t) = &s.target {
            let _ = write!(out, " | {} (no block device)", t.fstype);
        }
    }
    for (name, rx, tx, _) in interfaces(s) {
        let _ = write!(out, " | {name} rx {}/s tx {}/s", fmt_decimal(rx), fmt_decimal(tx));
    }
    out
}

/// A device's await as the short forms show it: the await of the direction that moved more
/// requests (writes on a tie). The survey's table and its findings both use this one.
pub fn await_ms(d: &DiskRates) -> f64 {
    if d.w_s >= d.r_s {
        d.w_await_ms
    } else {
        d.r_await_ms
    }
}

/// A latency in ms from /proc's milliseconds, formatted as every other latency.
fn ms_of(v: f64) -> String {
    crate::fmt::ms((v * 1e6) as u64)
}

/// The survey's short form: `wa 36% | vda util 89% await 0.4 ms`.
pub fn compact(s: &SystemResult) -> String {
    let mut out = format!("wa {:.0}%", s.mean.cpu.all.iowait_pct);
    for (name, d) in devices(s) {
        let _ = write!(out, " | {name} util {:.0}% await {} ms", d.util_pct, ms_of(await_ms(d)));
    }
    for (name, rx, tx, _) in interfaces(s) {
        let _ = write!(out, " | {name} {}/s", fmt_decimal(rx.max(tx)));
    }
    out
}

/// What the target's devices wrote, bytes per second (None when the target has no block
/// device: tmpfs, a network filesystem).
pub fn target_write_bytes_s(s: &SystemResult) -> Option<f64> {
    let target: Vec<&String> = s.target.iter().flat_map(|t| &t.devices).collect();
    let d: Vec<&DiskRates> = s.mean.disks.iter().filter(|(n, _)| target.contains(n)).map(|(_, d)| d).collect();
    // A device stack (dm on top of a disk) counts each write at every level: take the largest.
    (!d.is_empty()).then(|| d.iter().map(|d| d.wkb_s * 1024.0).fold(0.0, f64::max))
}

/// What a saturated device means, in words.
pub const SATURATED: &str = "the device is at or near its limit (SSDs and NVMe can reach 100% before theirs)";

/// Something that stands out in a phase's system figures.
pub enum Finding {
    /// A device busy most of the window: its name, %util, queue size and await ([`await_ms`]).
    Saturated { device: String, util_pct: f64, queue: f64, await_ms: f64 },
    /// CPU I/O wait above 20%, in percent.
    IoWait(f64),
    /// A link carrying most of its speed.
    LinkNear(String),
}

impl Finding {
    pub fn text(&self) -> String {
        match self {
            Finding::Saturated { device, util_pct, queue, await_ms } => format!(
                "{device} was busy {util_pct:.0}% of the time (queue {queue:.1}, await {} ms): {SATURATED}",
                ms_of(*await_ms)
            ),
            Finding::LinkNear(t) => t.clone(),
            Finding::IoWait(wa) => {
                format!(
                    "CPU I/O wait {wa:.0}%: CPU time went idle waiting for storage (a sign of slow or saturated disks)"
                )
            }
        }
    }
}

/// What stands out in a phase's system figures.
pub fn findings(s: &SystemResult) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, d) in devices(s) {
        if d.util_pct >= iolab_model::bound::DEVICE_BUSY_PCT {
            out.push(Finding::Saturated {
                device: name.clone(),
                util_pct: d.util_pct,
                queue: d.avgqu,
                await_ms: await_ms(d),
            });
        }
    }
    let wa = s.mean.cpu.all.iowait_pct;
    if wa >= 20.0 {
        out.push(Finding::IoWait(wa));
    }
    for (name, rx, tx, speed) in interfaces(s) {
        if let Some(mbps) = speed {
            let used = rx.max(tx) * 8.0 / (mbps as f64 * 1e6) * 100.0;
            if used >= iolab_model::bound::LINK_FULL * 100.0 {
                out.push(Finding::LinkNear(format!(
                    "{name} carried {}/s, {used:.0}% of its {mbps} Mb/s link: the network is the limit",
                    fmt_decimal(rx.max(tx))
                )));
            }
        }
    }
    out
}

/// The fidelity rule's findings of a phase: those it keeps (judged on each node as it ended,
/// every node's on several), or, for a phase stored before the rule (no limit line either),
/// judged now from its figures and `jobs`.
pub fn fidelity(p: &PhaseResult, jobs: &[Job]) -> Vec<iolab_model::Finding> {
    if !p.findings.is_empty() || !p.nodes.is_empty() || p.limit.is_some() {
        return p.findings.clone();
    }
    iolab_model::fidelity::findings(p.observed(), jobs, None)
}

/// The limit line of a phase (`limit: ...`), or on several nodes each node's
/// (`limit on n1: ...`); none for a phase stored before the rule.
pub fn limit_lines(p: &PhaseResult) -> Vec<String> {
    if p.nodes.is_empty() {
        p.limit.iter().map(|b| b.line(None)).collect()
    } else {
        p.nodes.iter().filter_map(|n| n.limit.as_ref().map(|b| b.line(Some(&n.name)))).collect()
    }
}

/// `holes: 62.5% of reads (6,250 of 10,000) fell in holes or unwritten extents, where 62.5%
/// of the region read holds no data`, when a file's holes were kept and read.
pub fn holes_line(p: &PhaseResult) -> Option<String> {
    let h = p.holes.filter(|h| h.reads > 0)?;
    if h.preallocated {
        return Some(format!(
            "holes: {}% of reads ({} of {}) fell in the unwritten extents the file began the phase with (preallocated, as fio lays out a file whose first job writes without reading): only those where nothing had been written yet never reached the device{}",
            num(100.0 * h.share()),
            count(h.in_holes as f64),
            count(h.reads as f64),
            h.unwritten_at_end.map_or(String::new(), |u| format!("; {}% of the file was still unwritten when the phase ended", num(100.0 * u)))
        ));
    }
    Some(format!(
        "holes: {}% of reads ({} of {}) fell in holes or unwritten extents, where {}% of the region read holds no data: those reads never reached the device",
        num(100.0 * h.share()),
        count(h.in_holes as f64),
        count(h.reads as f64),
        num(100.0 * h.hole_share)
    ))
}

/// `layout: 268.4 MB written before the measured window (268.4 MB of it into holes and
/// unwritten extents) in 1.92 s, not counted in the figures`.
pub fn layout_line(p: &PhaseResult) -> Option<String> {
    let l = p.layout.as_ref().filter(|l| l.bytes > 0)?;
    let holes = if l.holes_filled > 0 {
        format!(" ({} of it into holes and unwritten extents)", fmt_decimal(l.holes_filled as f64))
    } else {
        String::new()
    };
    Some(format!(
        "layout: {} written before the measured window{holes} in {}, not counted in the figures",
        fmt_decimal(l.bytes as f64),
        crate::fmt::secs(l.elapsed_s)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_sysstat::target::Interface;
    use iolab_sysstat::{NetRates, TargetInfo};

    #[test]
    fn seed_000_numbers_read_back_in_words() {
        let mut s = SystemResult::default();
        s.mean.cpu.all.iowait_pct = 66.6;
        s.mean.cpu.all.system_pct = 8.9;
        s.mean.disks.insert(
            "sda".into(),
            DiskRates {
                w_s: 55.0,
                wkb_s: 1008.0,
                avgrq_kb: 18.3,
                w_await_ms: 38.5,
                avgqu: 2.1,
                util_pct: 100.0,
                ..Default::default()
            },
        );
        s.mean.net.insert("eth0".into(), NetRates { tx_bytes_s: 11.2e6, ..Default::default() });
        s.target = Some(TargetInfo {
            fstype: "ocfs2".into(),
            devices: vec!["sda".into()],
            network: true,
            interfaces: vec![Interface { name: "eth0".into(), speed_mbps: Some(100) }],
            ..Default::default()
        });
        assert_eq!(
            line(&s),
            "cpu us 0% sy 9% wa 67% | sda w/s 55 wkB/s 1008 areq-sz 18.30 KiB aqu-sz 2.10 await 38.5 ms util 100% | eth0 rx 0 B/s tx 11.2 MB/s"
        );
        let f = findings(&s).iter().map(Finding::text).collect::<Vec<_>>().join("\n");
        assert!(
            f.contains("sda was busy 100%") && f.contains("I/O wait 67%") && f.contains("90% of its 100 Mb/s"),
            "{f}"
        );
    }

    fn one_disk(d: DiskRates) -> String {
        let mut s = SystemResult::default();
        s.mean.disks.insert("vda".into(), d);
        s.target = Some(TargetInfo { devices: vec!["vda".into()], ..Default::default() });
        line(&s)
    }

    /// What `iolab watch` prints per device: the details show only when they matter.
    #[test]
    fn request_size_merges_and_the_await_split_show_when_they_matter() {
        // Idle enough: rates, one await, util; nothing else.
        let quiet =
            DiskRates { w_s: 20.0, wkb_s: 400.0, avgrq_kb: 20.0, w_await_ms: 0.4, util_pct: 3.0, ..Default::default() };
        assert_eq!(one_disk(quiet), "cpu us 0% sy 0% wa 0% | vda w/s 20 wkB/s 400 await 0.400 ms util 3%");
        // Busy with ~20 KiB requests (seed 002): request and queue size appear.
        let busy = DiskRates { w_s: 2000.0, wkb_s: 40_000.0, avgqu: 1.6, util_pct: 85.0, ..quiet };
        assert_eq!(
            one_disk(busy),
            "cpu us 0% sy 0% wa 0% | vda w/s 2000 wkB/s 40000 areq-sz 20.00 KiB aqu-sz 1.60 await 0.400 ms util 85%"
        );
        // A third of the writes merged: wrqm/s and its share; 5% merged stays out.
        let merged = DiskRates { wrqm_s: 1000.0, ..busy };
        assert!(one_disk(merged).contains(" wkB/s 40000 wrqm/s 1000 (33%) areq-sz"));
        assert!(!one_disk(DiskRates { wrqm_s: 100.0, ..busy }).contains("wrqm"));
        // Reads and writes at 0.3 and 5 ms: both awaits; at 0.3 and 0.5 ms, the dominant one.
        let mixed = DiskRates { r_s: 500.0, rkb_s: 2000.0, r_await_ms: 0.3, w_await_ms: 5.0, ..busy };
        let l = one_disk(mixed);
        assert!(l.contains(" r_await 0.300 w_await 5.00 ms util 85%") && l.contains(" r/s 500 rkB/s 2000"), "{l}");
        let close = one_disk(DiskRates { w_await_ms: 0.5, ..mixed });
        assert!(close.contains(" await 0.500 ms") && !close.contains("r_await"), "{close}");
    }
}
