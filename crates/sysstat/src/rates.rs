//! From two snapshots to rates, with sysstat's `iostat -x` definitions, so iolab's figures
//! can be laid beside iostat's. Counters that went backwards are read as a 32-bit wrap when
//! they were near the top, else as a reset (a device that vanished and came back).

use crate::procfs::{CpuTicks, DiskCounters, NetCounters};
use serde::{Deserialize, Serialize};

/// `b - a` for a monotonic counter that may have wrapped at 2^32 or been reset.
pub fn counter_delta(a: u64, b: u64) -> u64 {
    if b >= a {
        b - a
    } else if a <= u32::MAX as u64 && a - b > 1 << 31 {
        b + (1u64 << 32) - a
    } else {
        b
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub user_pct: f64,
    pub nice_pct: f64,
    pub system_pct: f64,
    pub iowait_pct: f64,
    pub irq_pct: f64,
    pub softirq_pct: f64,
    pub steal_pct: f64,
    pub idle_pct: f64,
}

impl CpuPct {
    /// CPU "us" wherever iolab shows it (the terminal's `cpu us`, the report's user line, a
    /// node's row, the scenarios' verdicts): time in user space, niced processes included, as
    /// vmstat counts it.
    pub fn us(&self) -> f64 {
        self.user_pct + self.nice_pct
    }

    /// CPU "sy" wherever iolab shows it: time in the kernel, its hard and soft interrupts
    /// included (where a storage stack spends much of its time), as vmstat counts it. With
    /// [`CpuPct::us`], iowait, steal and idle it makes 100%.
    pub fn sy(&self) -> f64 {
        self.system_pct + self.irq_pct + self.softirq_pct
    }

    pub fn between(a: &CpuTicks, b: &CpuTicks) -> CpuPct {
        let d = |x: u64, y: u64| counter_delta(x, y) as f64;
        let parts = [
            d(a.user, b.user),
            d(a.nice, b.nice),
            d(a.system, b.system),
            d(a.iowait, b.iowait),
            d(a.irq, b.irq),
            d(a.softirq, b.softirq),
            d(a.steal, b.steal),
            d(a.idle, b.idle),
        ];
        let total: f64 = parts.iter().sum();
        if total <= 0.0 {
            return CpuPct { idle_pct: 100.0, ..Default::default() };
        }
        let p = |v: f64| 100.0 * v / total;
        CpuPct {
            user_pct: p(parts[0]),
            nice_pct: p(parts[1]),
            system_pct: p(parts[2]),
            iowait_pct: p(parts[3]),
            irq_pct: p(parts[4]),
            softirq_pct: p(parts[5]),
            steal_pct: p(parts[6]),
            idle_pct: p(parts[7]),
        }
    }

    pub fn max(&self, o: &CpuPct) -> CpuPct {
        CpuPct {
            user_pct: self.user_pct.max(o.user_pct),
            nice_pct: self.nice_pct.max(o.nice_pct),
            system_pct: self.system_pct.max(o.system_pct),
            iowait_pct: self.iowait_pct.max(o.iowait_pct),
            irq_pct: self.irq_pct.max(o.irq_pct),
            softirq_pct: self.softirq_pct.max(o.softirq_pct),
            steal_pct: self.steal_pct.max(o.steal_pct),
            idle_pct: self.idle_pct.max(o.idle_pct),
        }
    }
}

/// One device over an interval, as `iostat -x` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    pub r_s: f64,
    pub w_s: f64,
    pub rkb_s: f64,
    pub wkb_s: f64,
    pub rrqm_s: f64,
    pub wrqm_s: f64,
    /// Average request size in KiB (sysstat's areq-sz).
    pub avgrq_kb: f64,
    /// Average queue size (aqu-sz).
    pub avgqu: f64,
    pub r_await_ms: f64,
    pub w_await_ms: f64,
    pub util_pct: f64,
}

impl DiskRates {
    /// `secs`: the interval's length in seconds.
    pub fn between(a: &DiskCounters, b: &DiskCounters, secs: f64) -> DiskRates {
        if secs <= 0.0 {
            return DiskRates::default();
        }
        let d = |x: u64, y: u64| counter_delta(x, y) as f64;
        let (rd, wr) = (d(a.rd_ios, b.rd_ios), d(a.wr_ios, b.wr_ios));
        let (rs, ws) = (d(a.rd_sectors, b.rd_sectors), d(a.wr_sectors, b.wr_sectors));
        let await_ms = |ticks: f64, ios: f64| if ios > 0.0 { ticks / ios } else { 0.0 };
        let ios = rd + wr + d(a.dc_ios, b.dc_ios);
        let sectors = rs + ws + d(a.dc_sectors, b.dc_sectors);
        DiskRates {
            r_s: rd / secs,
            w_s: wr / secs,
            rkb_s: rs / 2.0 / secs,
            wkb_s: ws / 2.0 / secs,
            rrqm_s: d(a.rd_merges, b.rd_merges) / secs,
            wrqm_s: d(a.wr_merges, b.wr_merges) / secs,
            avgrq_kb: if ios > 0.0 { sectors / 2.0 / ios } else { 0.0 },
            avgqu: d(a.time_in_queue, b.time_in_queue) / 1000.0 / secs,
            r_await_ms: await_ms(d(a.rd_ticks, b.rd_ticks), rd),
            w_await_ms: await_ms(d(a.wr_ticks, b.wr_ticks), wr),
            util_pct: (d(a.io_ticks, b.io_ticks) / 10.0 / secs).min(100.0),
        }
    }

    pub fn is_idle(&self) -> bool {
        self.r_s == 0.0 && self.w_s == 0.0 && self.util_pct == 0.0
    }

    pub fn max(&self, o: &DiskRates) -> DiskRates {
        DiskRates {
            r_s: self.r_s.max(o.r_s),
            w_s: self.w_s.max(o.w_s),
            rkb_s: self.rkb_s.max(o.rkb_s),
            wkb_s: self.wkb_s.max(o.wkb_s),
            rrqm_s: self.rrqm_s.max(o.rrqm_s),
            wrqm_s: self.wrqm_s.max(o.wrqm_s),
            avgrq_kb: self.avgrq_kb.max(o.avgrq_kb),
            avgqu: self.avgqu.max(o.avgqu),
            r_await_ms: self.r_await_ms.max(o.r_await_ms),
            w_await_ms: self.w_await_ms.max(o.w_await_ms),
            util_pct: self.util_pct.max(o.util_pct),
        }
    }
}

/// One interface over an interval. Errors and drops are counts in the interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NetRates {
    pub rx_bytes_s: f64,
    pub tx_bytes_s: f64,
    pub rx_packets_s: f64,
    pub tx_packets_s: f64,
    pub rx_errs: u64,
    pub tx_errs: u64,
    pub rx_drop: u64,
    pub tx_drop: u64,
}

impl NetRates {
    pub fn between(a: &NetCounters, b: &NetCounters, secs: f64) -> NetRates {
        if secs <= 0.0 {
            return NetRates::default();
        }
        let d = counter_delta;
        NetRates {
            rx_bytes_s: d(a.rx_bytes, b.rx_bytes) as f64 / secs,
            tx_bytes_s: d(a.tx_bytes, b.tx_bytes) as f64 / secs,
            rx_packets_s: d(a.rx_packets, b.rx_packets) as f64 / secs,
            tx_packets_s: d(a.tx_packets, b.tx_packets) as f64 / secs,
            rx_errs: d(a.rx_errs, b.rx_errs),
            tx_errs: d(a.tx_errs, b.tx_errs),
            rx_drop: d(a.rx_drop, b.rx_drop),
            tx_drop: d(a.tx_drop, b.tx_drop),
        }
    }

    pub fn is_idle(&self) -> bool {
        self.rx_bytes_s == 0.0 && self.tx_bytes_s == 0.0
    }

    pub fn max(&self, o: &NetRates) -> NetRates {
        NetRates {
            rx_bytes_s: self.rx_bytes_s.max(o.rx_bytes_s),
            tx_bytes_s: self.tx_bytes_s.max(o.tx_bytes_s),
            rx_packets_s: self.rx_packets_s.max(o.rx_packets_s),
            tx_packets_s: self.tx_packets_s.max(o.tx_packets_s),
            rx_errs: self.rx_errs.max(o.rx_errs),
            tx_errs: self.tx_errs.max(o.tx_errs),
            rx_drop: self.rx_drop.max(o.rx_drop),
            tx_drop: self.tx_drop.max(o.tx_drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_and_reset() {
        assert_eq!(counter_delta(10, 15), 5);
        assert_eq!(counter_delta(u32::MAX as u64 - 4, 5), 10, "32-bit wrap");
        assert_eq!(counter_delta(1000, 7), 7, "reset: the counter restarted");
        assert_eq!(counter_delta(u64::MAX - 1, 3), 3, "64-bit counters do not wrap in practice: a reset");
    }

    #[test]
    fn iostat_definitions() {
        // sysstat's own example from seed 002: 55 w/s of ~18 KiB, disk busy all second.
        let a = DiskCounters {
            wr_ios: 1000,
            wr_merges: 100,
            wr_sectors: 50_000,
            wr_ticks: 9000,
            io_ticks: 5000,
            time_in_queue: 20_000,
            ..Default::default()
        };
        let b = DiskCounters {
            wr_ios: 1055,
            wr_merges: 293,
            wr_sectors: 52_016,
            wr_ticks: 9000 + 2120,
            io_ticks: 6000,
            time_in_queue: 22_130,
            ..Default::default()
        };
        let r = DiskRates::between(&a, &b, 1.0);
        assert_eq!(r.w_s, 55.0);
        assert_eq!(r.wrqm_s, 193.0);
        assert_eq!(r.wkb_s, 1008.0);
        assert!((r.avgrq_kb - 2016.0 / 2.0 / 55.0).abs() < 1e-9);
        assert!((r.w_await_ms - 38.545).abs() < 0.01);
        assert!((r.avgqu - 2.13).abs() < 1e-9);
        assert_eq!(r.util_pct, 100.0);
        let half = DiskRates::between(&a, &b, 2.0);
        assert_eq!(half.util_pct, 50.0);
        assert_eq!(half.w_s, 27.5);
        assert_eq!(half.w_await_ms, r.w_await_ms, "await does not depend on the interval");
    }

    #[test]
    fn cpu_percentages_sum_to_100() {
        let a = CpuTicks { user: 100, system: 50, idle: 800, iowait: 50, ..Default::default() };
        let b = CpuTicks { user: 110, system: 60, idle: 860, iowait: 70, ..Default::default() };
        let p = CpuPct::between(&a, &b);
        assert_eq!((p.user_pct, p.system_pct, p.idle_pct, p.iowait_pct), (10.0, 10.0, 60.0, 20.0));
        let idle = CpuPct::between(&a, &a);
        assert_eq!(idle.idle_pct, 100.0);
    }

    #[test]
    fn us_and_sy_count_nice_and_interrupts_and_make_100_with_the_rest() {
        let a = CpuTicks::default();
        let b = CpuTicks { user: 10, nice: 5, system: 20, irq: 3, softirq: 7, iowait: 15, steal: 0, idle: 40 };
        let p = CpuPct::between(&a, &b);
        assert_eq!((p.us(), p.sy()), (15.0, 30.0));
        assert_eq!(p.us() + p.sy() + p.iowait_pct + p.steal_pct + p.idle_pct, 100.0);
    }
}
