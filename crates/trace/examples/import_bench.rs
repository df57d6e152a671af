//! The parser's throughput on one core: import strace text files into a trace written to
//! nowhere, then print MB/s of text and the process's peak resident memory (VmHWM).
//! `cargo run --release -p iolab-trace --example import_bench -- FILE...` (bench/trace/parser.sh).

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if files.is_empty() {
        eprintln!("usage: import_bench FILE...");
        std::process::exit(2);
    }
    let t = Instant::now();
    let (_, sum) = match iolab_trace::import_files(&files, std::io::sink()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("import_bench: {e}");
            std::process::exit(2);
        }
    };
    let s = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|st| {
            st.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .unwrap_or_default();
    println!(
        "{{\"bytes\": {}, \"lines\": {}, \"ops\": {}, \"threads\": {}, \"bad_lines\": {}, \"seconds\": {s:.3}, \"mb_per_s\": {:.1}, \"cpu_seconds\": {cpu:.3}, \"mb_per_cpu_s\": {:.1}, \"peak_rss_kib\": {hwm}}}",
        sum.bytes,
        sum.lines,
        sum.ops,
        sum.threads,
        sum.bad_lines,
        sum.bytes as f64 / 1e6 / s,
        sum.bytes as f64 / 1e6 / cpu
    );
}

/// User + system CPU seconds of this process (/proc/self/stat, 100 ticks a second): on a
/// shared machine the wall clock counts other processes' time too.
fn cpu_seconds() -> f64 {
    let st = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = st.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}
