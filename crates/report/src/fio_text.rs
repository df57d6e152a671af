//! fio's human-readable (`--output-format=normal`) and terse v3 (`terse`, `--minimal`)
//! reports, for `iolab fio`, rendered from the fio JSON document ([`crate::fio_json`]) so the
//! three formats say the same figures. The normal layout follows fio 3.33's for the lines iolab
//! has figures for (job header, IOPS and bandwidth, latencies and percentiles, per-second
//! bandwidth and IOPS, latency buckets, CPU, depths, run status, disk stats); fio's submission
//! latency line is left out, as fio leaves it out when it has no samples. Terse fields iolab
//! does not measure hold fio's own zero (docs/fio.md lists them).

use serde_json::Value;

/// fio's bucket keys, in its order (a JSON object's keys come back sorted as text).
const DEPTHS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCHES: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];
const LAT_NS_US: [&str; 10] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
const LAT_MS: [&str; 12] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];

/// A bucket object's values in fio's key order.
fn buckets<'a>(v: &'a Value, keys: &'a [&'a str]) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    keys.iter().map(move |k| (*k, f(&v[*k])))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}
fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| v.as_f64().map_or(0, |x| x.max(0.0).round() as u64))
}

/// fio's num2str: a whole number up to `digits` digits as it is, else scaled by 1000 (or 1024)
/// with a suffix and three significant figures.
fn num(v: f64, digits: usize, base: f64, suffixes: &[&str]) -> String {
    let whole = v.round();
    if whole < 10f64.powi(digits as i32) && suffixes.first().is_some_and(|s| s.is_empty()) {
        return format!("{}", whole as u64);
    }
    let mut x = v;
    let mut i = 0;
    while x >= 1000.0 && i + 1 < suffixes.len() {
        x /= base;
        i += 1;
    }
    let s = if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    format!("{s}{}", suffixes[i])
}

fn count(v: f64) -> String {
    num(v, 4, 1000.0, &["", "k", "M", "G", "T"])
}
fn bin_bytes(v: f64) -> String {
    let s = num(v, 0, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"]);
    if v < 1000.0 {
        format!("{}B", v.round() as u64)
    } else {
        s
    }
}
fn dec_bytes(v: f64) -> String {
    let s = num(v, 0, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"]);
    if v < 1000.0 {
        format!("{}B", v.round() as u64)
    } else {
        s
    }
}

/// The normal report of a fio JSON document.
pub fn normal(doc: &Value) -> String {
    let mut out = String::new();
    let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
    for j in &jobs {
        let o = &j["job options"];
        let s = |k: &str| o[k].as_str().unwrap_or("").to_string();
        let bs = o["bs"].as_str().map(|b| format!("{b}B-{b}B")).unwrap_or_else(|| s("bssplit"));
        out.push_str(&format!(
            "{}: (g={}): rw={}, bs=(R) {bs}, (W) {bs}, (T) {bs}, ioengine={}, iodepth={}\n",
            j["jobname"].as_str().unwrap_or(""),
            u(&j["groupid"]),
            s("rw"),
            s("ioengine"),
            s("iodepth"),
        ));
    }
    out.push_str(&format!("{}\n", doc["fio version"].as_str().unwrap_or("iolab")));
    let procs: u64 =
        jobs.iter().map(|j| j["job options"]["numjobs"].as_str().and_then(|n| n.parse().ok()).unwrap_or(1)).sum();
    out.push_str(&format!("Starting {procs} thread{}\n", if procs == 1 { "" } else { "s" }));
    for j in &jobs {
        out.push('\n');
        job(&mut out, j, doc);
    }
    // Run status per group.
    let mut groups: Vec<u64> = jobs.iter().map(|j| u(&j["groupid"])).collect();
    groups.dedup();
    for g in groups {
        out.push_str(&format!("\nRun status group {g} (all jobs):\n"));
        for (dir, name) in [("read", "READ"), ("write", "WRITE")] {
            let in_group: Vec<&Value> = jobs.iter().filter(|j| u(&j["groupid"]) == g).map(|j| &j[dir]).collect();
            let ios: u64 = in_group.iter().map(|d| u(&d["total_ios"])).sum();
            if ios == 0 {
                continue;
            }
            let bytes: f64 = in_group.iter().map(|d| f(&d["io_bytes"])).sum();
            let bws: Vec<f64> = in_group.iter().filter(|d| u(&d["total_ios"]) > 0).map(|d| f(&d["bw_bytes"])).collect();
            let runs: Vec<u64> = in_group.iter().filter(|d| u(&d["total_ios"]) > 0).map(|d| u(&d["runtime"])).collect();
            let run_max = runs.iter().copied().max().unwrap_or(0);
            let agg = if run_max > 0 { bytes * 1000.0 / run_max as f64 } else { 0.0 };
            let (lo, hi) = (bws.iter().cloned().fold(f64::INFINITY, f64::min), bws.iter().cloned().fold(0.0, f64::max));
            out.push_str(&format!(
                "{name:>7}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec\n",
                bin_bytes(agg),
                dec_bytes(agg),
                bin_bytes(lo),
                bin_bytes(hi),
                dec_bytes(lo),
                dec_bytes(hi),
                bin_bytes(bytes),
                dec_bytes(bytes),
                runs.iter().copied().min().unwrap_or(0),
                run_max,
            ));
        }
    }
    let disks = doc["disk_util"].as_array().cloned().unwrap_or_default();
    if !disks.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for d in &disks {
            out.push_str(&format!(
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%\n",
                d["name"].as_str().unwrap_or("?"),
                u(&d["read_ios"]),
                u(&d["write_ios"]),
                u(&d["read_merges"]),
                u(&d["write_merges"]),
                u(&d["read_ticks"]),
                u(&d["write_ticks"]),
                u(&d["in_queue"]),
                f(&d["util"]),
            ));
        }
    }
    out
}

fn job(out: &mut String, j: &Value, doc: &Value) {
    let threads = j["job options"]["numjobs"].as_str().unwrap_or("1");
    out.push_str(&format!(
        "{}: (groupid={}, jobs={threads}): err={:>2}: pid={}: {}\n",
        j["jobname"].as_str().unwrap_or(""),
        u(&j["groupid"]),
        u(&j["error"]),
        std::process::id(),
        doc["time"].as_str().unwrap_or(""),
    ));
    for (dir, name) in [("read", "read"), ("write", "write")] {
        let d = &j[dir];
        if u(&d["total_ios"]) == 0 {
            continue;
        }
        let bw = f(&d["bw_bytes"]);
        out.push_str(&format!(
            "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec)\n",
            count(f(&d["iops"])),
            bin_bytes(bw),
            dec_bytes(bw),
            bin_bytes(f(&d["io_bytes"])),
            u(&d["runtime"]),
        ));
        lat_line(out, "    clat", &d["clat_ns"]);
        lat_line(out, "     lat", &d["lat_ns"]);
        percentiles(out, &d["clat_ns"]["percentile"]);
        if u(&d["bw_samples"]) > 0 {
            out.push_str(&format!(
                "   bw (  KiB/s): min={}, max={}, per={:.2}%, avg={:.2}, stdev={:.2}, samples={}\n",
                u(&d["bw_min"]),
                u(&d["bw_max"]),
                f(&d["bw_agg"]),
                f(&d["bw_mean"]),
                f(&d["bw_dev"]),
                u(&d["bw_samples"]),
            ));
            out.push_str(&format!(
                "   iops        : min={}, max={}, avg={:.2}, stdev={:.2}, samples={}\n",
                u(&d["iops_min"]),
                u(&d["iops_max"]),
                f(&d["iops_mean"]),
                f(&d["iops_stddev"]),
                u(&d["iops_samples"]),
            ));
        }
    }
    for (key, unit, keys) in
        [("latency_ns", "nsec", &LAT_NS_US[..]), ("latency_us", "usec", &LAT_NS_US), ("latency_ms", "msec", &LAT_MS)]
    {
        let cells: Vec<String> = buckets(&j[key], keys)
            .filter(|(_, v)| *v > 0.0)
            .map(|(k, v)| if v < 0.01 { format!("{k}=<0.01%") } else { format!("{k}={v:.2}%") })
            .collect();
        for chunk in cells.chunks(5) {
            out.push_str(&format!("  lat ({unit})   : {}\n", chunk.join(", ")));
        }
    }
    out.push_str(&format!(
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}\n",
        f(&j["usr_cpu"]),
        f(&j["sys_cpu"]),
        u(&j["ctx"]),
        u(&j["majf"]),
        u(&j["minf"]),
    ));
    let levels = |v: &Value, keys: &[&str]| -> String {
        buckets(v, keys).map(|(k, x)| format!("{k}={x:.1}%")).collect::<Vec<_>>().join(", ")
    };
    out.push_str(&format!("  IO depths    : {}\n", levels(&j["iodepth_level"], &DEPTHS)));
    out.push_str(&format!("     submit    : {}\n", levels(&j["iodepth_submit"], &BATCHES)));
    out.push_str(&format!("     complete  : {}\n", levels(&j["iodepth_complete"], &BATCHES)));
    out.push_str(&format!(
        "     issued rwts: total={},{},0,0 short=0,0,0,0 dropped=0,0,0,0\n",
        u(&j["read"]["total_ios"]),
        u(&j["write"]["total_ios"]),
    ));
    out.push_str(&format!(
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}\n",
        u(&j["latency_target"]),
        u(&j["latency_window"]),
        f(&j["latency_percentile"]),
        u(&j["latency_depth"]),
    ));
}

/// fio's unit for a latency line: nsec, usec when min > 2 µs, max > 100 µs and the stdev > 1 µs,
/// msec likewise a thousand times over.
fn lat_line(out: &mut String, name: &str, l: &Value) {
    if u(&l["N"]) == 0 {
        return;
    }
    let (mut min, mut max, mut mean, mut dev) = (f(&l["min"]), f(&l["max"]), f(&l["mean"]), f(&l["stddev"]));
    let unit = if min > 2e6 && max > 99_999_999.0 && dev > 1e6 {
        (min, max, mean, dev) = (min / 1e6, max / 1e6, mean / 1e6, dev / 1e6);
        "msec"
    } else if min > 2000.0 && max > 99_999.0 && dev > 1000.0 {
        (min, max, mean, dev) = (min / 1e3, max / 1e3, mean / 1e3, dev / 1e3);
        "usec"
    } else {
        "nsec"
    };
    out.push_str(&format!(
        "{name} ({unit}): min={}, max={}, avg={mean:.2}, stdev={dev:.2}\n",
        num(min.floor(), 6, 1000.0, &["", "k", "M", "G"]),
        num(max.floor(), 6, 1000.0, &["", "k", "M", "G"]),
    ));
}

/// fio's percentile block: four a line, values as wide as the widest, in the unit the range
/// asks for.
fn percentiles(out: &mut String, p: &Value) {
    let Some(m) = p.as_object() else { return };
    let mut rows: Vec<(f64, u64)> = m.iter().filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, u(v)))).collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    if rows.is_empty() {
        return;
    }
    let (minv, maxv) = (rows.iter().map(|r| r.1).min().unwrap_or(0), rows.iter().map(|r| r.1).max().unwrap_or(0));
    let (div, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1000, "usec")
    } else {
        (1, "nsec")
    };
    let vals: Vec<u64> = rows.iter().map(|r| r.1 / div).collect();
    let width = vals.iter().map(|v| v.to_string().len()).max().unwrap_or(1);
    out.push_str(&format!("    clat percentiles ({unit}):\n"));
    let cells: Vec<String> = rows.iter().zip(&vals).map(|((q, _), v)| format!("{q:5.2}th=[{v:>width$}]")).collect();
    let lines: Vec<String> = cells.chunks(4).map(|c| c.join(", ")).collect();
    for (i, l) in lines.iter().enumerate() {
        let end = if i + 1 < lines.len() { "," } else { "" };
        out.push_str(&format!("     | {l}{end}\n"));
    }
}

/// The terse v3 lines of a fio JSON document, one per job (fio 3.33's layout, the disks on
/// the same line as fio prints them when run locally).
pub fn terse(doc: &Value) -> String {
    let version = doc["fio version"].as_str().unwrap_or("iolab");
    let mut out = String::new();
    for j in doc["jobs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let mut x: Vec<String> = vec![
            "3".into(),
            version.into(),
            j["jobname"].as_str().unwrap_or("").into(),
            u(&j["groupid"]).to_string(),
            u(&j["error"]).to_string(),
        ];
        for dir in ["read", "write"] {
            let d = &j[dir];
            x.push(u(&d["io_kbytes"]).to_string());
            x.push(u(&d["bw"]).to_string());
            x.push(format!("{}", f(&d["iops"]).round() as u64));
            x.push(u(&d["runtime"]).to_string());
            for l in ["slat_ns", "clat_ns"] {
                usec4(&mut x, &d[l]);
            }
            let p: Vec<(f64, u64)> = d["clat_ns"]["percentile"]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, u(v)))).collect())
                .unwrap_or_default();
            let mut p = p;
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            for i in 0..20 {
                match p.get(i) {
                    Some((q, v)) => x.push(format!("{q:.6}%={}", v / 1000)),
                    None => x.push("0%=0".into()),
                }
            }
            usec4(&mut x, &d["lat_ns"]);
            x.push(u(&d["bw_min"]).to_string());
            x.push(u(&d["bw_max"]).to_string());
            x.push(format!("{:.6}%", f(&d["bw_agg"])));
            x.push(format!("{:.6}", f(&d["bw_mean"])));
            x.push(format!("{:.6}", f(&d["bw_dev"])));
        }
        x.push(format!("{:.6}%", f(&j["usr_cpu"])));
        x.push(format!("{:.6}%", f(&j["sys_cpu"])));
        x.push(u(&j["ctx"]).to_string());
        x.push(u(&j["majf"]).to_string());
        x.push(u(&j["minf"]).to_string());
        x.extend(buckets(&j["iodepth_level"], &DEPTHS).map(|(_, v)| format!("{v:.1}%")));
        x.extend(buckets(&j["latency_us"], &LAT_NS_US).map(|(_, v)| format!("{v:.2}%")));
        x.extend(buckets(&j["latency_ms"], &LAT_MS).map(|(_, v)| format!("{v:.2}%")));
        for d in doc["disk_util"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            x.push(d["name"].as_str().unwrap_or("?").into());
            for k in ["read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue"] {
                x.push(u(&d[k]).to_string());
            }
            x.push(format!("{:.2}%", f(&d["util"])));
        }
        out.push_str(&x.join(";"));
        out.push('\n');
    }
    out
}

/// min, max, mean, stdev of a latency object, in µs as terse has them.
fn usec4(x: &mut Vec<String>, l: &Value) {
    x.push((u(&l["min"]) / 1000).to_string());
    x.push((u(&l["max"]) / 1000).to_string());
    x.push(format!("{:.6}", f(&l["mean"]) / 1000.0));
    x.push(format!("{:.6}", f(&l["stddev"]) / 1000.0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "fio version": "iolab-0.1.0",
            "jobs": [{
                "jobname": "t", "groupid": 0, "error": 0,
                "job options": {"rw": "randread", "bs": "4096", "ioengine": "libaio", "iodepth": "16", "numjobs": "1"},
                "read": {"io_bytes": 16777216, "io_kbytes": 16384, "bw_bytes": 109655461, "bw": 107085, "iops": 26771.3,
                         "runtime": 153, "total_ios": 4096,
                         "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
                         "clat_ns": {"min": 29000, "max": 10409000, "mean": 590420.0, "stddev": 1279330.0, "N": 4096,
                                     "percentile": {"1.000000": 157000, "50.000000": 180000, "99.990000": 10421000}},
                         "lat_ns": {"min": 29000, "max": 10409000, "mean": 590420.0, "stddev": 1279330.0, "N": 4096},
                         "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0},
                "write": {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0,
                          "slat_ns": {"N": 0}, "clat_ns": {"N": 0}, "lat_ns": {"N": 0}},
                "usr_cpu": 1.5, "sys_cpu": 17.11, "ctx": 0, "majf": 0, "minf": 0,
                "iodepth_level": {"1": 0.0, "2": 0.0, "4": 0.0, "8": 0.0, "16": 100.0, "32": 0.0, ">=64": 0.0},
                "latency_us": {"2": 0.0, "4": 0.0, "10": 0.0, "20": 0.0, "50": 0.05, "100": 0.1, "250": 79.37, "500": 4.86, "750": 1.95, "1000": 2.32},
                "latency_ms": {"2": 3.15, "4": 5.86, "10": 1.95, "20": 0.39, "50": 0.0, "100": 0.0, "250": 0.0, "500": 0.0, "750": 0.0, "1000": 0.0, "2000": 0.0, ">=2000": 0.0},
                "latency_depth": 16, "latency_target": 0, "latency_window": 0, "latency_percentile": 100.0
            }],
            "disk_util": [{"name": "vda", "read_ios": 3221, "write_ios": 0, "read_merges": 0, "write_merges": 0,
                           "read_ticks": 418, "write_ticks": 0, "in_queue": 418, "util": 8.45}]
        })
    }

    /// The lines fio 3.33 printed for the same figures (its run of this job, by hand).
    #[test]
    fn normal_reads_as_fios() {
        let t = normal(&doc());
        for line in [
            "t: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, iodepth=16",
            "  read: IOPS=26.8k, BW=105MiB/s (110MB/s)(16.0MiB/153msec)",
            "    clat (usec): min=29, max=10409, avg=590.42, stdev=1279.33",
            "     lat (usec): min=29, max=10409, avg=590.42, stdev=1279.33",
            "    clat percentiles (usec):",
            "     |  1.00th=[  157], 50.00th=[  180], 99.99th=[10421]",
            "  lat (usec)   : 50=0.05%, 100=0.10%, 250=79.37%, 500=4.86%, 750=1.95%",
            "  lat (usec)   : 1000=2.32%",
            "  lat (msec)   : 2=3.15%, 4=5.86%, 10=1.95%, 20=0.39%",
            "  IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=100.0%, 32=0.0%, >=64=0.0%",
            "     issued rwts: total=4096,0,0,0 short=0,0,0,0 dropped=0,0,0,0",
            "   READ: bw=105MiB/s (110MB/s), 105MiB/s-105MiB/s (110MB/s-110MB/s), io=16.0MiB (16.8MB), run=153-153msec",
            "  vda: ios=3221/0, merge=0/0, ticks=418/0, in_queue=418, util=8.45%",
        ] {
            assert!(t.lines().any(|l| l == line), "missing:\n{line}\nin:\n{t}");
        }
        assert!(!t.contains("slat"), "no submission latency line without samples, as fio");
    }

    #[test]
    fn terse_has_v3s_fields_in_order() {
        let t = terse(&doc());
        let x: Vec<&str> = t.trim_end().split(';').collect();
        // 5 + 2 x 41 + 5 cpu + 7 depths + 10 + 12 latency buckets + 9 disk = 130, as fio 3.33's.
        assert_eq!(x.len(), 130, "{t}");
        assert_eq!(&x[..9], ["3", "iolab-0.1.0", "t", "0", "0", "16384", "107085", "26771", "153"]);
        assert_eq!(&x[13..17], ["29", "10409", "590.420000", "1279.330000"]);
        assert_eq!(x[17], "1.000000%=157");
        assert_eq!(x[36], "0%=0");
        assert_eq!(x[87], "1.500000%");
        assert_eq!(x[96], "100.0%");
        assert_eq!(&x[121..], ["vda", "3221", "0", "0", "0", "418", "0", "418", "8.45%"]);
    }
}
