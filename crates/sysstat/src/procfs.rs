//! Parsers for the /proc files the sampler reads. Each takes the file's text and returns
//! counters; a malformed line is skipped rather than failing the whole sample, since a
//! metric missing for one second is better than a run without metrics.

use std::collections::BTreeMap;

/// Jiffies spent in each CPU state, from one `cpu` line of /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// All ticks; guest time is already inside user, as sysstat counts it.
    pub fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// /proc/stat: the aggregate line and one per CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuStat {
    pub all: CpuTicks,
    pub per_cpu: BTreeMap<u32, CpuTicks>,
}

pub fn parse_stat(text: &str) -> CpuStat {
    let mut out = CpuStat::default();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(name) = f.next() else { continue };
        let Some(rest) = name.strip_prefix("cpu") else { continue };
        let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
        // Kernels before 2.6.11 have no steal, before 2.6 no iowait: missing fields are 0.
        if v.len() < 4 {
            continue;
        }
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        let t = CpuTicks {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        };
        if rest.is_empty() {
            out.all = t;
        } else if let Ok(n) = rest.parse() {
            out.per_cpu.insert(n, t);
        }
    }
    out
}

/// One device's line of /proc/diskstats (times in ms, sizes in 512-byte sectors).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub major: u32,
    pub minor: u32,
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    pub in_flight: u64,
    pub io_ticks: u64,
    pub time_in_queue: u64,
    /// Kernel 4.18+ (18 fields): discards.
    pub dc_ios: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
    /// Kernel 5.5+ (20 fields): flushes.
    pub fl_ios: u64,
    pub fl_ticks: u64,
}

/// /proc/diskstats in its 14-, 18- and 20-field layouts (and the 7-field partition lines of 2.6).
pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 7 {
            continue;
        }
        let (Ok(major), Ok(minor)) = (f[0].parse(), f[1].parse()) else { continue };
        let v: Vec<u64> = f[3..].iter().map_while(|x| x.parse().ok()).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        let d = match v.len() {
            // 2.6 partition lines: reads, read sectors, writes, write sectors.
            4 => DiskCounters {
                major,
                minor,
                rd_ios: g(0),
                rd_sectors: g(1),
                wr_ios: g(2),
                wr_sectors: g(3),
                ..Default::default()
            },
            n if n >= 11 => DiskCounters {
                major,
                minor,
                rd_ios: g(0),
                rd_merges: g(1),
                rd_sectors: g(2),
                rd_ticks: g(3),
                wr_ios: g(4),
                wr_merges: g(5),
                wr_sectors: g(6),
                wr_ticks: g(7),
                in_flight: g(8),
                io_ticks: g(9),
                time_in_queue: g(10),
                dc_ios: g(11),
                dc_sectors: g(13),
                dc_ticks: g(14),
                fl_ios: g(15),
                fl_ticks: g(16),
            },
            _ => continue,
        };
        out.insert(f[2].to_string(), d);
    }
    out
}

/// One interface's counters from /proc/net/dev.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
}

pub fn parse_netdev(text: &str) -> BTreeMap<String, NetCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let v: Vec<u64> = rest.split_whitespace().map_while(|x| x.parse().ok()).collect();
        if v.len() < 16 {
            continue;
        }
        out.insert(
            name.trim().to_string(),
            NetCounters {
                rx_bytes: v[0],
                rx_packets: v[1],
                rx_errs: v[2],
                rx_drop: v[3],
                tx_bytes: v[8],
                tx_packets: v[9],
                tx_errs: v[10],
                tx_drop: v[11],
            },
        );
    }
    out
}

/// The page-cache figures that explain buffered writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub dirty_kb: u64,
    pub writeback_kb: u64,
    pub cached_kb: u64,
}

pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let n = v.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0);
        match k {
            "Dirty" => m.dirty_kb = n,
            "Writeback" => m.writeback_kb = n,
            "Cached" => m.cached_kb = n,
            _ => {}
        }
    }
    m
}

/// Cumulative I/O stall time (µs) from /proc/pressure/io.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    pub some_total_us: u64,
    pub full_total_us: u64,
}

pub fn parse_pressure(text: &str) -> Option<Pressure> {
    let mut p = Pressure::default();
    let mut seen = false;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let kind = f.next();
        let total = f.find_map(|x| x.strip_prefix("total=")).and_then(|x| x.parse().ok());
        match (kind, total) {
            (Some("some"), Some(t)) => {
                p.some_total_us = t;
                seen = true;
            }
            (Some("full"), Some(t)) => p.full_total_us = t,
            _ => {}
        }
    }
    seen.then_some(p)
}

/// The 1-minute load average.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn diskstats_layouts() {
        let text = "\
   8       0 sda 33167 3812 1124805 428735 28338 77604 850432 3304811 0 384521 3733854
   8       1 sda1 35713 1122730 106304 850432
 253       0 vda 100 2 3000 40 500 60 7000 80 1 900 1000 5 0 64 3
 253      16 vdb 100 2 3000 40 500 60 7000 80 1 900 1000 5 0 64 3 7 11
 bogus line
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";
        let d = parse_diskstats(text);
        assert_eq!(d.len(), 5);
        assert_eq!(d["sda"].wr_ios, 28338);
        assert_eq!(d["sda"].io_ticks, 384521);
        assert_eq!(d["sda1"].wr_sectors, 850432);
        assert_eq!(d["vda"].dc_ios, 5);
        assert_eq!(d["vda"].fl_ios, 0);
        assert_eq!(d["vdb"].fl_ios, 7);
        assert_eq!(d["vdb"].fl_ticks, 11);
        assert_eq!((d["vdb"].major, d["vdb"].minor), (253, 16));
    }

    #[test]
    fn stat_old_and_new() {
        let s = parse_stat("cpu  10 0 20 70\ncpu0 5 0 10 35 1 2 3 4 9 9\nintr 1 2 3\n");
        assert_eq!(s.all.total(), 100);
        assert_eq!(s.per_cpu[&0].steal, 4);
        assert_eq!(s.per_cpu[&0].total(), 60, "guest columns are not added again");
    }

    #[test]
    fn netdev_meminfo_pressure() {
        let n =
            parse_netdev("Inter-| Receive\n face |bytes\n  eth0: 114048067 6310 1 2 0 0 0 0 442457 4272 3 4 0 0 0 0\n");
        assert_eq!(n["eth0"].rx_bytes, 114048067);
        assert_eq!(n["eth0"].tx_packets, 4272);
        assert_eq!(n["eth0"].tx_drop, 4);
        let m =
            parse_meminfo("Cached:          3956088 kB\nDirty:                48 kB\nWriteback:             0 kB\n");
        assert_eq!(m, MemInfo { dirty_kb: 48, writeback_kb: 0, cached_kb: 3956088 });
        let p = parse_pressure("some avg10=5.71 avg60=5.68 avg300=4.49 total=61516915\nfull avg10=5.05 avg60=4.64 avg300=1.70 total=20993781\n").unwrap();
        assert_eq!(p.full_total_us, 20993781);
        assert!(parse_pressure("").is_none());
        assert_eq!(parse_loadavg("2.92 4.03 3.09 4/94 28012"), Some(2.92));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC{0,300}") {
            let _ = parse_stat(&s);
            let _ = parse_diskstats(&s);
            let _ = parse_netdev(&s);
            let _ = parse_meminfo(&s);
            let _ = parse_pressure(&s);
            let _ = parse_loadavg(&s);
        }
    }
}
