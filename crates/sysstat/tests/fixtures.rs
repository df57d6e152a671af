//! Captured and reconstructed /proc files from three kernel generations, two snapshots each,
//! one second apart: the rates must come out as iostat computes them, through 32-bit counter
//! wrap-around and with devices that vanish or appear between the snapshots.

use iolab_sysstat::{ProcRoot, Rates, Snapshot};
use std::path::PathBuf;
use std::time::Duration;

fn pair(kernel: &str) -> Rates {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let a = Snapshot::read(&ProcRoot(dir.join(format!("{kernel}-a"))));
    let mut b = Snapshot::read(&ProcRoot(dir.join(format!("{kernel}-b"))));
    b.at = a.at + Duration::from_secs(1);
    Rates::between(&a, &b, 1.0)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn kernel_2_6_32_fourteen_fields_wraps_and_hotplug() {
    let r = pair("2.6.32");
    // CPU: deltas user 10, system 30, idle 100, iowait 50 of 190 ticks.
    assert!(close(r.cpu.all.user_pct, 1000.0 / 190.0));
    assert!(close(r.cpu.all.system_pct, 3000.0 / 190.0));
    assert!(close(r.cpu.all.iowait_pct, 5000.0 / 190.0));
    assert!(close(r.cpu.all.idle_pct, 10000.0 / 190.0));
    assert_eq!(r.cpu.per_cpu.len(), 2);
    // sda's write counter wrapped at 2^32: 4294967000 -> 704 is 1000 writes.
    let sda = r.disks["sda"];
    assert!(close(sda.w_s, 1000.0), "{sda:?}");
    assert!(close(sda.wrqm_s, 193.0));
    assert!(close(sda.wkb_s, 1008.0));
    assert!(close(sda.w_await_ms, 2.12));
    assert!(close(sda.avgqu, 2.13));
    assert!(close(sda.util_pct, 100.0));
    // A 2.6 partition line (4 counters) still gives its write rate.
    assert!(close(r.disks["sda1"].wkb_s, 1008.0));
    // sdb vanished and sdc appeared: neither has two snapshots, neither is reported.
    assert!(!r.disks.contains_key("sdb") && !r.disks.contains_key("sdc"));
    // eth0's receive bytes wrapped too.
    let eth = r.net["eth0"];
    assert!(close(eth.rx_bytes_s, 12_000_000.0), "{eth:?}");
    assert!(close(eth.tx_bytes_s, 12_000_000.0));
    assert_eq!(eth.rx_drop, 1);
    assert_eq!(r.dirty_kb, 204_800);
    assert_eq!(r.writeback_kb, 40_960);
    assert_eq!(r.load1, Some(1.97));
    assert_eq!(r.io_pressure_some_pct, None, "no PSI before 4.20");
}

#[test]
fn kernel_4_19_eighteen_fields_with_discards() {
    let r = pair("4.19");
    let v = r.disks["vda"];
    assert!(close(v.r_s, 100.0) && close(v.rkb_s, 800.0) && close(v.r_await_ms, 1.0));
    assert!(close(v.w_s, 500.0) && close(v.wkb_s, 8000.0) && close(v.w_await_ms, 5.0));
    assert!(close(v.util_pct, 99.0));
    assert!(close(v.avgqu, 2.6));
    // Request size counts discards, as sysstat 12 does: (1600 + 16000 + 800) sectors / 610 requests.
    assert!(close(v.avgrq_kb, 18400.0 / 2.0 / 610.0), "{v:?}");
}

#[test]
fn kernel_6_18_twenty_fields_captured() {
    // Captured on this project's machine around a 64 MiB `dd oflag=direct`.
    let r = pair("6.18");
    let v = r.disks["vda"];
    assert!(close(v.w_s, 131.0), "{v:?}");
    assert!(close(v.wkb_s, 131_096.0 / 2.0));
    assert!(close(v.util_pct, 4.0));
    assert!(r.io_pressure_some_pct.is_some());
    assert!(r.disks["loop0"].w_s == 0.0);
    assert_eq!(r.cpu.per_cpu.len(), 2);
    let sum = r.cpu.all.user_pct
        + r.cpu.all.system_pct
        + r.cpu.all.idle_pct
        + r.cpu.all.iowait_pct
        + r.cpu.all.irq_pct
        + r.cpu.all.softirq_pct
        + r.cpu.all.steal_pct
        + r.cpu.all.nice_pct;
    assert!(close(sum, 100.0));
}

#[test]
fn missing_files_give_empty_figures_not_errors() {
    let a = Snapshot::read(&ProcRoot("/nonexistent".into()));
    let r = Rates::between(&a, &a, 0.0);
    assert!(r.disks.is_empty() && r.net.is_empty());
}
