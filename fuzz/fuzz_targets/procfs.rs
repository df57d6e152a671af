//! Fuzz the /proc parsers (stat, diskstats, net/dev, meminfo, pressure, loadavg), tc's qdisc
//! JSON, and the rates computed from two arbitrary parses: no input may panic or produce a
//! non-finite rate.
#![no_main]
use iolab_sysstat::procfs::*;
use iolab_sysstat::{DiskRates, NetRates};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let (a, b) = s.split_once('\u{0}').unwrap_or((s, s));
    let _ = parse_stat(a);
    let _ = parse_meminfo(a);
    let _ = parse_pressure(a);
    let _ = parse_loadavg(a);
    let _ = iolab_sysstat::qdisc::tbf_rate_mbps(a);
    let (da, db) = (parse_diskstats(a), parse_diskstats(b));
    for (name, x) in &db {
        if let Some(p) = da.get(name) {
            let r = DiskRates::between(p, x, 1.0);
            assert!(r.util_pct.is_finite() && r.w_await_ms.is_finite() && r.avgrq_kb.is_finite());
        }
    }
    let (na, nb) = (parse_netdev(a), parse_netdev(b));
    for (name, x) in &nb {
        if let Some(p) = na.get(name) {
            assert!(NetRates::between(p, x, 0.5).tx_bytes_s.is_finite());
        }
    }
});
