//! `iolab survey DIR`: a storage profile in about a minute. The survey is a list of
//! [`Step`]s, each a phase of jobs and a line that reads its result; a later issue adds a
//! step by adding an entry to [`steps`].

use crate::args::{Output, SurveyArgs};
use crate::run_cmd::{emit, execute, exit_code};
use anyhow::{bail, Context, Result};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use iolab_report::fmt::{count, ms, rate};
use iolab_spec::{BlockSizes, Bytes, EngineKind, JobPatch, Phase, Plan, Rw, SyncMode};
use iolab_workload::layout;
use iolab_workload::results::PhaseResult;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What every step may use.
pub struct Ctx {
    pub data: PathBuf,
    pub log: PathBuf,
    pub writer: [PathBuf; 2],
    pub size: Bytes,
    pub time: Duration,
    pub direct: bool,
    pub uring: bool,
}

/// One survey step: its phase's jobs, and how to say its result in a line.
pub struct Step {
    pub key: &'static str,
    pub title: &'static str,
    pub jobs: fn(&Ctx) -> Vec<JobPatch>,
    pub read: fn(&PhaseResult) -> String,
}

fn base(c: &Ctx, name: &str, target: &Path, rw: Rw, bs: Bytes) -> JobPatch {
    JobPatch {
        name: Some(name.into()),
        target: Some(target.to_path_buf()),
        size: Some(c.size),
        rw: Some(rw),
        bs: Some(BlockSizes::single(bs)),
        direct: Some(c.direct),
        runtime: Some(c.time),
        ..Default::default()
    }
}

fn deep(c: &Ctx, mut j: JobPatch) -> JobPatch {
    if c.uring {
        j.engine = Some(EngineKind::IoUring);
        j.iodepth = Some(32);
    } else {
        // Without io_uring, 32 psync threads keep 32 I/Os in flight.
        j.threads = Some(32);
    }
    j
}

fn bw_line(p: &PhaseResult) -> String {
    let t = &p.total;
    let d = if t.write().ops > 0 { &t.write() } else { &t.read() };
    format!("{}   lat p99 {} ms", rate(d.bw_bytes), ms(d.lat_ns.p99))
}

fn iops_line(p: &PhaseResult) -> String {
    let t = &p.total;
    let d = if t.write().ops > 0 { &t.write() } else { &t.read() };
    format!("{} IOPS   lat p50 {} ms  p99 {} ms", count(d.iops), ms(d.lat_ns.p50), ms(d.lat_ns.p99))
}

/// The survey's steps, in order.
pub fn steps() -> Vec<Step> {
    vec![
        Step {
            key: "seq-write",
            title: "sequential write 1 MiB",
            jobs: |c| vec![base(c, "seqwrite", &c.data, Rw::Write, Bytes::mib(1))],
            read: bw_line,
        },
        Step {
            key: "seq-read",
            title: "sequential read 1 MiB",
            jobs: |c| vec![base(c, "seqread", &c.data, Rw::Read, Bytes::mib(1))],
            read: bw_line,
        },
        Step {
            key: "rand-read-qd1",
            title: "random read 4 KiB, QD1",
            jobs: |c| vec![base(c, "randread1", &c.data, Rw::RandRead, Bytes::kib(4))],
            read: iops_line,
        },
        Step {
            key: "rand-read-qd32",
            title: "random read 4 KiB, QD32",
            jobs: |c| vec![deep(c, base(c, "randread32", &c.data, Rw::RandRead, Bytes::kib(4)))],
            read: iops_line,
        },
        Step {
            key: "rand-write-qd1",
            title: "random write 4 KiB, QD1",
            jobs: |c| vec![base(c, "randwrite1", &c.data, Rw::RandWrite, Bytes::kib(4))],
            read: iops_line,
        },
        Step {
            key: "rand-write-qd32",
            title: "random write 4 KiB, QD32",
            jobs: |c| vec![deep(c, base(c, "randwrite32", &c.data, Rw::RandWrite, Bytes::kib(4)))],
            read: iops_line,
        },
        Step {
            key: "append-fsync",
            title: "append 4 KiB + fsync",
            jobs: |c| {
                let mut j = base(c, "appendfsync", &c.log, Rw::Write, Bytes::kib(4));
                j.size = Some(Bytes::mib(64).min(c.size));
                j.direct = Some(false);
                j.sync = Some(SyncMode::Fsync);
                j.fsync_every = Some(1);
                vec![j]
            },
            read: |p| {
                let s = &p.total.sync();
                format!(
                    "{} commits/s   fsync p50 {} ms  p99 {} ms",
                    count(s.ops as f64 / p.elapsed_s.max(1e-9)),
                    ms(s.lat_ns.p50),
                    ms(s.lat_ns.p99)
                )
            },
        },
        Step {
            key: "one-writer",
            title: "one writer, 1 MiB",
            jobs: |c| vec![base(c, "writer1", &c.writer[0], Rw::Write, Bytes::mib(1))],
            read: bw_line,
        },
        Step {
            key: "two-writers",
            title: "two concurrent writers",
            jobs: |c| {
                vec![
                    base(c, "writer1", &c.writer[0], Rw::Write, Bytes::mib(1)),
                    base(c, "writer2", &c.writer[1], Rw::Write, Bytes::mib(1)),
                ]
            },
            read: |p| {
                let each: Vec<String> =
                    p.jobs.iter().map(|j| format!("{:.1}", j.total.write().bw_bytes / 1e6)).collect();
                format!("{} total ({} MB/s each)", rate(p.total.write().bw_bytes), each.join(" + "))
            },
        },
    ]
}

pub fn run(a: SurveyArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    a.out.check()?;
    if !a.dir.is_dir() {
        bail!("{} is not a directory; give the directory to profile (create it first)", a.dir.display());
    }
    let free = layout::free_bytes(&a.dir).with_context(|| format!("checking free space in {}", a.dir.display()))?;
    // Four files: the data file, two writers' files and a small log; leave room to spare.
    let size = match a.size {
        Some(s) => s,
        None => Bytes((free / 8).min(Bytes::GIB) / Bytes::MIB * Bytes::MIB),
    };
    if size.0 < Bytes::mib(16).0 {
        bail!(
            "{} has {} free, too little for a survey (it needs at least 64 MiB); free space or pick another directory",
            a.dir.display(),
            iolab_report::fmt::fmt_binary(free as f64)
        );
    }
    let ctx = Ctx {
        data: a.dir.join("iolab-survey.data"),
        log: a.dir.join("iolab-survey.log"),
        writer: [a.dir.join("iolab-survey.w1"), a.dir.join("iolab-survey.w2")],
        size,
        time: a.step_time,
        direct: iolab_engine::open::direct_supported(&a.dir),
        uring: iolab_engine::io_uring_available().is_ok(),
    };
    // The log must start empty for its writes to be appends.
    let _ = layout::remove_owned(&ctx.log);
    let steps = steps();
    let plan = Plan {
        phases: steps
            .iter()
            .map(|s| Phase {
                name: s.key.to_string(),
                jobs: (s.jobs)(&ctx)
                    .into_iter()
                    .map(|j| {
                        JobPatch { ramp: Some(Duration::from_secs(1).min(a.step_time / 2)), ..Default::default() }
                            .layered(&j)
                    })
                    .map(|j| j.resolve("job"))
                    .collect::<Result<Vec<_>, _>>()
                    .expect("survey steps are valid jobs"),
            })
            .collect(),
    };
    let json = a.out.output == Output::Json;
    if !json {
        eprintln!(
            "iolab survey of {}: {} steps of {} s on a {} file, {} I/O{}",
            a.dir.display(),
            steps.len(),
            a.step_time.as_secs_f64(),
            size,
            if ctx.direct { "direct" } else { "buffered (the filesystem refuses O_DIRECT)" },
            if ctx.uring { "" } else { "; io_uring unavailable, queue depth 32 uses 32 threads" }
        );
    }
    let (result, run) = execute(&plan, &a.out, &a.save, "survey", &a.dir.display().to_string(), stop)?;
    // The report reads the stored run, as every report does.
    let report = match run {
        Some(id) => {
            let db = a.save.db.path();
            let stored = iolab_store::Store::open_existing(&db).and_then(|s| s.load(id))?;
            let out = db.parent().unwrap_or(Path::new(".")).join("reports").join(format!("survey-{id}.html"));
            Some(crate::stored::write_report(&[stored], &out, Default::default())?)
        }
        None => None,
    };
    if !a.keep {
        for p in [&ctx.data, &ctx.log, &ctx.writer[0], &ctx.writer[1]] {
            let _ = layout::remove_owned(p);
        }
    }
    if json {
        emit(&result, &a.out)?;
        if let Some(r) = &report {
            eprintln!("iolab: report: {}", r.display());
        }
        return Ok(exit_code(&result));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(["step", "result", "system"]);
    for (s, p) in steps.iter().zip(&result.phases) {
        let mark = if p.interrupted { " (interrupted)" } else { "" };
        let sys = p.system.as_ref().map(iolab_report::system::compact).unwrap_or_default();
        t.add_row([format!("{}{mark}", s.title), (s.read)(p), sys]);
    }
    println!("{t}");
    for line in findings(&result.phases) {
        println!("- {line}");
    }
    // Devices and links step by step; I/O wait, which most steps of a disk survey show, in one line.
    let mut waits = Vec::new();
    for (s, p) in steps.iter().zip(&result.phases) {
        for f in p.system.iter().flat_map(iolab_report::system::findings) {
            match f {
                iolab_report::system::Finding::IoWait(wa) => waits.push(format!("{} ({wa:.0}%)", s.title)),
                other => println!("- {}: {}", s.title, other.text()),
            }
        }
    }
    if !waits.is_empty() {
        println!("- CPU I/O wait above 20% (time idle waiting for storage) during: {}", waits.join(", "));
    }
    if let Some(e) = &result.error {
        println!("stopped early: {e}");
    }
    match &report {
        Some(r) => println!("report: {} (open it in a browser; `iolab report` makes others)", r.display()),
        None => println!("no report: the run was not saved (--no-store)"),
    }
    Ok(exit_code(&result))
}

/// What stands out, in words.
fn findings(phases: &[PhaseResult]) -> Vec<String> {
    let mut out = Vec::new();
    let get = |k: &str| phases.iter().find(|p| p.name == k);
    if let (Some(one), Some(two)) = (get("one-writer"), get("two-writers")) {
        let (a, b) = (one.total.write().bw_bytes, two.total.write().bw_bytes);
        if a > 0.0 && b > 0.0 {
            let pct = 100.0 * b / a;
            let what = if pct >= 110.0 {
                "one writer alone does not saturate the storage"
            } else if pct >= 90.0 {
                "the storage shares well between writers"
            } else if pct >= 60.0 {
                "concurrency costs some throughput (seek or lock contention)"
            } else {
                "concurrent writers collapse: the medium or its locking saturates (two writers on one node, as in the cluster-filesystem locking check)"
            };
            out.push(format!("two writers together reach {pct:.0}% of one writer's throughput: {what}"));
        }
    }
    if let (Some(q1), Some(q32)) = (get("rand-read-qd1"), get("rand-read-qd32")) {
        if q1.total.read().iops > 0.0 {
            out.push(format!(
                "random reads scale {:.1}x from queue depth 1 to 32",
                q32.total.read().iops / q1.total.read().iops
            ));
        }
    }
    if let Some(f) = get("append-fsync") {
        if f.total.sync().lat_ns.p99 > 10_000_000 {
            out.push(
                "fsync p99 above 10 ms: every commit waits on the device (a database that syncs every commit, such as a redo log, would crawl)".into(),
            );
        }
    }
    out
}
