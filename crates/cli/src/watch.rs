//! `iolab watch [PATH]`: the system metrics of a run, live, while some other program does the
//! I/O: seed 002's diagnosis of a database without `iostat -x 1` in a second shell.

use crate::args::{Output, WatchArgs};
use anyhow::Result;
use iolab_sysstat::{describe, ProcRoot, Rates, Snapshot, SysRoots, SystemResult};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(serde::Serialize)]
struct Line<'a> {
    unix_s: f64,
    #[serde(flatten)]
    rates: &'a Rates,
    target: &'a iolab_sysstat::TargetInfo,
}

pub fn run(a: WatchArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let path = a.path.unwrap_or_else(|| ".".into());
    if !path.exists() {
        anyhow::bail!("{} does not exist; give a file or directory on the storage to watch", path.display());
    }
    let target = describe(&path, &SysRoots::default());
    let json = a.output == Output::Json;
    let mut out = std::io::stdout().lock();
    if !json {
        let devs = if target.devices.is_empty() { "no block device".to_string() } else { target.devices.join(" > ") };
        writeln!(
            out,
            "watching {}: {} on {} ({}), {devs}",
            path.display(),
            target.fstype,
            target.mount_point,
            target.mount_source
        )?;
    }
    let interval = a.interval.max(Duration::from_millis(10));
    let root = ProcRoot::default();
    let start = Snapshot::read(&root);
    let mut prev = start.clone();
    let mut n = 0u64;
    while a.count.is_none_or(|c| n < c) {
        let due = start.at + interval * (n as u32 + 1);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        let cur = Snapshot::read(&root);
        let mut rates = Rates::between(&prev, &cur, cur.at.saturating_duration_since(start.at).as_secs_f64());
        rates.disks.retain(|name, d| target.devices.contains(name) || !d.is_idle());
        rates.net.retain(|name, r| target.interfaces.iter().any(|i| &i.name == name) || !r.is_idle());
        let unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        if json {
            serde_json::to_writer(&mut out, &Line { unix_s, rates: &rates, target: &target })?;
            writeln!(out)?;
        } else {
            let view = SystemResult { mean: rates, target: Some(target.clone()), ..Default::default() };
            writeln!(out, "{:>7.1}s  {}", view.mean.t_s, iolab_report::system::line(&view))?;
        }
        out.flush()?;
        prev = cur;
        n += 1;
    }
    Ok(ExitCode::SUCCESS)
}
