//! The system beside a phase, for people: one compact line (CPU, the target's devices, its
//! network) and, in words, what stands out: a saturated device, high I/O wait, a link near
//! its speed.

use crate::fmt::fmt_decimal;
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

/// `cpu us 2% sy 9% wa 66% | vda w/s 512 wkB/s 524288 await 1.2 ms util 98% | eth0 tx 11.2 MB/s`
pub fn line(s: &SystemResult) -> String {
    let c = &s.mean.cpu.all;
    let mut out = format!(
        "cpu us {:.0}% sy {:.0}% wa {:.0}%",
        c.user_pct + c.nice_pct,
        c.system_pct + c.irq_pct + c.softirq_pct,
        c.iowait_pct
    );
    for (name, d) in devices(s) {
        let _ = write!(out, " | {name}");
        if d.r_s > 0.0 {
            let _ = write!(out, " r/s {:.0} rkB/s {:.0}", d.r_s, d.rkb_s);
        }
        if d.w_s > 0.0 {
            let _ = write!(out, " w/s {:.0} wkB/s {:.0}", d.w_s, d.wkb_s);
        }
        let wait = if d.w_s >= d.r_s { d.w_await_ms } else { d.r_await_ms };
        let _ = write!(out, " await {} ms util {:.0}%", crate::fmt::ms((wait * 1e6) as u64), d.util_pct);
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

/// The survey's short form: `wa 36% | vda util 89% await 0.4 ms`.
pub fn compact(s: &SystemResult) -> String {
    let mut out = format!("wa {:.0}%", s.mean.cpu.all.iowait_pct);
    for (name, d) in devices(s) {
        let wait = if d.w_s >= d.r_s { d.w_await_ms } else { d.r_await_ms };
        let _ = write!(out, " | {name} util {:.0}% await {} ms", d.util_pct, crate::fmt::ms((wait * 1e6) as u64));
    }
    for (name, rx, tx, _) in interfaces(s) {
        let _ = write!(out, " | {name} {}/s", fmt_decimal(rx.max(tx)));
    }
    out
}

/// Something that stands out in a phase's system figures.
pub enum Finding {
    /// A device busy most of the window.
    Saturated(String),
    /// CPU I/O wait above 20%, in percent.
    IoWait(f64),
    /// A link carrying most of its speed.
    LinkNear(String),
}

impl Finding {
    pub fn text(&self) -> String {
        match self {
            Finding::Saturated(t) | Finding::LinkNear(t) => t.clone(),
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
        if d.util_pct >= 90.0 {
            out.push(Finding::Saturated(format!(
                "{name} was busy {:.0}% of the time (queue {:.1}, await {:.1} ms): the device is at or near its limit (SSDs and NVMe can reach 100% before theirs)",
                d.util_pct,
                d.avgqu,
                d.w_await_ms.max(d.r_await_ms)
            )));
        }
    }
    let wa = s.mean.cpu.all.iowait_pct;
    if wa >= 20.0 {
        out.push(Finding::IoWait(wa));
    }
    for (name, rx, tx, speed) in interfaces(s) {
        if let Some(mbps) = speed {
            let used = rx.max(tx) * 8.0 / (mbps as f64 * 1e6) * 100.0;
            if used >= 80.0 {
                out.push(Finding::LinkNear(format!(
                    "{name} carried {}/s, {used:.0}% of its {mbps} Mb/s link: the network is the limit",
                    fmt_decimal(rx.max(tx))
                )));
            }
        }
    }
    out
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
            DiskRates { w_s: 55.0, wkb_s: 1008.0, w_await_ms: 38.5, avgqu: 2.1, util_pct: 100.0, ..Default::default() },
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
            "cpu us 0% sy 9% wa 67% | sda w/s 55 wkB/s 1008 await 38.5 ms util 100% | eth0 rx 0 B/s tx 11.2 MB/s"
        );
        let f = findings(&s).iter().map(Finding::text).collect::<Vec<_>>().join("\n");
        assert!(
            f.contains("sda was busy 100%") && f.contains("I/O wait 67%") && f.contains("90% of its 100 Mb/s"),
            "{f}"
        );
    }
}
