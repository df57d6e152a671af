//! `iolab watch [PATH]`: the system metrics of a run, live, while some other program does the
//! I/O: seed 002's diagnosis of a database without `iostat -x 1` in a second shell. With `--db`
//! or `--label` what it sampled is stored as a run of kind `watch` (one phase, `watch`, with the
//! samples and their summary), so `iolab runs`, `show` and `report` read it like any run.

use crate::args::WatchArgs;
use crate::formats::Format;
use crate::live_metrics::Live;
use anyhow::{Context, Result};
use iolab_spec::{Phase, Plan};
use iolab_store::{Store, Target};
use iolab_sysstat::{describe, ProcRoot, Rates, Snapshot, SysRoots, SystemResult, TargetInfo};
use iolab_workload::model::{now_unix_s, RunKind};
use iolab_workload::Emit;
use iolab_workload::{PhaseResult, Status};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(serde::Serialize)]
struct Line<'a> {
    unix_s: f64,
    #[serde(flatten)]
    rates: &'a Rates,
    target: &'a iolab_sysstat::TargetInfo,
}

/// The name of a watch's one phase.
const PHASE: &str = "watch";

/// A watch being stored: the run row from the start, each sample as it is taken, the phase's
/// summary at the end. A database problem is reported once and the watch goes on, unsaved.
struct Saver {
    store: Store,
    run: i64,
    node: String,
    broken: bool,
    /// The largest value of each figure so far (the summary's `max`), so no sample is kept in memory.
    max: Rates,
}

impl Saver {
    fn begin(db: &Target, labels: &[(String, String)], path: &Path, target: &TargetInfo) -> Result<Saver> {
        let store = Store::open(db).context("opening the results database to store the watch")?;
        let host = iolab_sysstat::host_facts(Some(target));
        let plan = watch_plan();
        let labels = labels.iter().cloned().collect();
        let name = format!("watch {}", path.display());
        let run = store.begin_run(RunKind::Watch, &name, &labels, &host, &plan, now_unix_s())?;
        let saver = Saver { store, run, node: host.hostname, broken: false, max: Rates::default() };
        // The phase from the start, marked cut short until it ends, so a watch that is killed
        // still reads back with the samples it saved.
        saver.store.add_phase(run, 0, &saver.node, &phase(0.0, true, None))?;
        Ok(saver)
    }

    fn keep(&mut self, r: iolab_store::Result<()>) {
        if let Err(e) = r {
            if !self.broken {
                errln!("iolab: warning: {e}; the watch goes on, unsaved from here");
            }
            self.broken = true;
        }
    }

    fn sample(&mut self, s: &Rates) {
        self.max.raise_to(s);
        if !self.broken {
            let r = self.store.add_sample(self.run, 0, &self.node, s);
            self.keep(r);
        }
    }

    fn finish(&mut self, summary: SystemResult) {
        if self.broken {
            return;
        }
        let mut summary = summary;
        self.max.t_s = summary.mean.t_s;
        summary.max = std::mem::take(&mut self.max);
        let r = self.store.add_phase(self.run, 0, &self.node, &phase(summary.mean.t_s, false, Some(summary)));
        self.keep(r);
        let r = self.store.finish_run(self.run, Status::Complete, None, now_unix_s());
        self.keep(r);
    }
}

/// A watch's plan: its one phase, no job.
fn watch_plan() -> Plan {
    Plan { phases: vec![Phase { name: PHASE.into(), jobs: Vec::new() }] }
}

/// The watch's one phase: no I/O of iolab's own, only the system beside it.
fn phase(elapsed_s: f64, interrupted: bool, system: Option<SystemResult>) -> PhaseResult {
    PhaseResult { elapsed_s, interrupted, system: Some(system.unwrap_or_default()), ..PhaseResult::new(PHASE) }
}

pub fn run(a: WatchArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let path = a.path.clone().unwrap_or_else(|| ".".into());
    if !path.exists() {
        anyhow::bail!("{} does not exist; give a file or directory on the storage to watch", path.display());
    }
    let target = describe(&path, &SysRoots::default());
    let json = a.output == Format::Json;
    let mut saver = match a.store_target() {
        Some(db) => Some(Saver::begin(&db, &a.labels, &path, &target)?),
        None => None,
    };
    let live = Live::start(&a.metrics, json)?;
    let mut feed = live.feed(saver.as_ref().map(|s| s.run), RunKind::Watch, &a.labels, &watch_plan());
    let mut out = crate::stdout::out();
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
    // --duration is a number of lines: as many whole intervals as fit, at least one.
    let by_time = a.duration.map(|d| (d.as_secs_f64() / interval.as_secs_f64()).floor().max(1.0) as u64);
    let lines = match (a.count, by_time) {
        (Some(c), Some(t)) => Some(c.min(t)),
        (c, t) => c.or(t),
    };
    let root = ProcRoot::default();
    let start = Snapshot::read(&root);
    let mut prev = start.clone();
    let mut n = 0u64;
    let mut failed = None;
    'watch: while lines.is_none_or(|c| n < c) {
        let due = start.at + interval * (n as u32 + 1);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                break 'watch;
            }
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        let cur = Snapshot::read(&root);
        let mut rates = Rates::between(&prev, &cur, cur.at.saturating_duration_since(start.at).as_secs_f64());
        rates.disks.retain(|name, d| target.devices.contains(name) || !d.is_idle());
        rates.net.retain(|name, r| target.interfaces.iter().any(|i| &i.name == name) || !r.is_idle());
        let unix_s = now_unix_s();
        if let Some(s) = &mut saver {
            s.sample(&rates);
        }
        if let Some(f) = feed.as_mut() {
            f.sample(0, &rates);
        }
        prev = cur;
        n += 1;
        let shown = if json {
            serde_json::to_writer(&mut out, &Line { unix_s, rates: &rates, target: &target })
                .map_err(std::io::Error::from)
                .and_then(|_| writeln!(out))
        } else {
            let view = SystemResult { mean: rates.clone(), target: Some(target.clone()), ..Default::default() };
            writeln!(out, "{:>7.1}s  {}", view.mean.t_s, iolab_report::system::line(&view))
        };
        // A reader gone from stdout ends the watch as Ctrl-C does: what was sampled is kept.
        if let Err(e) = shown.and_then(|_| out.flush()) {
            failed = Some(e);
            break;
        }
    }
    if let Some(mut s) = saver {
        // The window's mean runs from the first snapshot to the last sample taken.
        s.finish(SystemResult::summarise(&start, &prev, Vec::new(), interval, Some(target)));
        if !json && failed.is_none() {
            writeln!(out, "stored as run {} in {}", s.run, s.store.location())?;
        } else {
            errln!("iolab: stored as run {} in {}", s.run, s.store.location());
        }
    }
    if let Some(f) = feed.as_mut() {
        f.finish(Status::Complete);
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    live.linger(&stop, json);
    Ok(ExitCode::SUCCESS)
}
