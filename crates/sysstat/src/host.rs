//! Facts about the machine a run happened on, so a result read months later says what it
//! measured: host, kernel, CPU, memory, and the target's filesystem and device.

use crate::target::TargetInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpu_count: u32,
    pub memory_bytes: u64,
    #[serde(default)]
    pub fstype: String,
    #[serde(default)]
    pub mount_options: String,
    /// The target's nearest whole-disk device and what /sys says of it.
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub device_model: String,
    /// The kernel's `queue/rotational` flag: what the device (or its driver) claims, not what
    /// the medium is (virtio disks and many SAN LUNs say 1 whatever is behind them).
    #[serde(default)]
    pub rotational: Option<bool>,
    #[serde(default)]
    pub scheduler: String,
    /// The device's driver (`virtio_blk`, `sd`, `nvme`...), from /sys/block/DEV/device/driver.
    #[serde(default)]
    pub device_driver: String,
    #[serde(default)]
    pub device_vendor: String,
}

impl HostFacts {
    /// The rotational flag in words, as the kernel gives it, with what it cannot tell: `1 (the
    /// kernel's queue/rotational; virtio_blk reports 1 whatever the medium)`. Empty when unknown.
    pub fn rotational_text(&self) -> String {
        let Some(rot) = self.rotational else { return String::new() };
        let driver = self.device_driver.as_str();
        let caveat = match (rot, driver) {
            (true, "virtio_blk" | "xen_blkfront" | "vmw_pvscsi") => {
                format!("; {driver} reports 1 whatever the medium")
            }
            (true, "sd") => "; a SCSI/SAN LUN reports what its array tells, often 1 for flash".to_string(),
            (true, _) => "; it is what the device claims".to_string(),
            (false, _) => String::new(),
        };
        format!("{} (the kernel's queue/rotational{caveat})", if rot { 1 } else { 0 })
    }
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// This machine's name, as every part of iolab spells it (results' `node`, the store's runs,
/// host facts): the kernel's node name (`uname -n`).
pub fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// Gather the facts, for the storage under `target` when given.
pub fn host_facts(target: Option<&TargetInfo>) -> HostFacts {
    let uname = rustix::system::uname();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "model name").map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    let cpu_count = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    let mut f = HostFacts {
        hostname: hostname(),
        kernel: uname.release().to_string_lossy().into_owned(),
        cpu_model,
        cpu_count,
        memory_bytes,
        ..Default::default()
    };
    if let Some(t) = target {
        f.fstype = t.fstype.clone();
        f.mount_options = t.mount_options.clone();
        // The last device of the chain is the one furthest down: the disk itself.
        if let Some(disk) = t.devices.iter().rev().find(|d| Path::new("/sys/block").join(d).exists()) {
            let q = Path::new("/sys/block").join(disk);
            f.device = disk.clone();
            f.device_model = read(q.join("device/model"));
            f.device_vendor = read(q.join("device/vendor"));
            f.device_driver = std::fs::read_link(q.join("device/driver"))
                .ok()
                .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            f.rotational = match read(q.join("queue/rotational")).as_str() {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            };
            let sched = read(q.join("queue/scheduler"));
            f.scheduler = sched
                .split_whitespace()
                .find_map(|s| s.strip_prefix('[').and_then(|s| s.strip_suffix(']')))
                .unwrap_or(&sched)
                .to_string();
        }
    }
    f
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rotational_flag_says_what_the_kernel_says() {
        let f = |rot, driver: &str| super::HostFacts {
            rotational: rot,
            device_driver: driver.into(),
            ..Default::default()
        };
        assert_eq!(
            f(Some(true), "virtio_blk").rotational_text(),
            "1 (the kernel's queue/rotational; virtio_blk reports 1 whatever the medium)"
        );
        assert!(f(Some(true), "sd").rotational_text().contains("SAN LUN"));
        assert_eq!(f(Some(false), "nvme").rotational_text(), "0 (the kernel's queue/rotational)");
        assert_eq!(f(None, "").rotational_text(), "");
        assert!(!f(Some(true), "ahci").rotational_text().contains("HDD"), "never a guess at the medium");
    }

    #[test]
    fn facts_of_this_machine() {
        let t = crate::describe(std::path::Path::new("/"), &Default::default());
        let f = super::host_facts(Some(&t));
        assert!(!f.hostname.is_empty() && !f.kernel.is_empty() && f.cpu_count >= 1 && f.memory_bytes > 0, "{f:?}");
        assert_eq!(f.fstype, t.fstype);
    }
}
