//! `iolab survey DIR`: a storage profile in well under a minute and a half (80 s measured with
//! a release build on /var/tmp of this 2-CPU VM under load: eleven steps of 5 s, PostMark's of
//! 10 s, each after a 1 s warm-up, plus laying out and removing the files). The survey is a list of
//! [`Step`]s, each a phase of jobs; how a step's result reads (its line in the profile, the
//! findings) is `iolab_report::survey`'s, keyed by the step's name, so the terminal and the
//! HTML report say the same. A later issue adds a step here and its reading there.

use crate::args::SurveyArgs;
use crate::live_metrics::Live;
use crate::output::exit_code;
use crate::run_cmd::execute;
use anyhow::{bail, Context, Result};
use iolab_report::export::Input;
use iolab_report::scenario::locking::Locking;
use iolab_report::scenario::Scenario;
use iolab_spec::{BlockSizes, Bytes, EngineKind, JobPatch, Phase, Plan, Rw, SyncMode};
use iolab_workload::layout;
use iolab_workload::model::RunKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What every step may use.
pub struct Ctx {
    /// The directory surveyed (the personalities' steps work in directories of their own in it).
    pub dir: PathBuf,
    pub data: PathBuf,
    pub log: PathBuf,
    pub writer: [PathBuf; 2],
    pub size: Bytes,
    pub time: Duration,
    pub direct: bool,
    pub uring: bool,
}

/// One survey step: its phase's name (the key `iolab_report::survey` reads it by) and jobs.
pub struct Step {
    pub key: &'static str,
    pub jobs: fn(&Ctx) -> Vec<JobPatch>,
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

/// The step `--verify` adds: random 4 KiB reads and writes with every block stamped and every
/// read checked, the whole file read back at the end.
pub fn verify_step() -> Step {
    Step {
        key: "verified-rw",
        jobs: |c| {
            let mut j = base(c, "verified", &c.data, Rw::RandRw, Bytes::kib(4));
            j.verify_after = Some(true);
            vec![j]
        },
    }
}

/// The survey's steps, in order.
pub fn steps() -> Vec<Step> {
    vec![
        Step { key: "seq-write", jobs: |c| vec![base(c, "seqwrite", &c.data, Rw::Write, Bytes::mib(1))] },
        Step { key: "seq-read", jobs: |c| vec![base(c, "seqread", &c.data, Rw::Read, Bytes::mib(1))] },
        Step { key: "rand-read-qd1", jobs: |c| vec![base(c, "randread1", &c.data, Rw::RandRead, Bytes::kib(4))] },
        Step {
            key: "rand-read-qd32",
            jobs: |c| vec![deep(c, base(c, "randread32", &c.data, Rw::RandRead, Bytes::kib(4)))],
        },
        Step { key: "rand-write-qd1", jobs: |c| vec![base(c, "randwrite1", &c.data, Rw::RandWrite, Bytes::kib(4))] },
        Step {
            key: "rand-write-qd32",
            jobs: |c| vec![deep(c, base(c, "randwrite32", &c.data, Rw::RandWrite, Bytes::kib(4)))],
        },
        Step {
            key: "append-fsync",
            jobs: |c| {
                let mut j = base(c, "appendfsync", &c.log, Rw::Write, Bytes::kib(4));
                j.size = Some(Bytes::mib(64).min(c.size));
                j.direct = Some(false);
                j.sync = Some(SyncMode::Fsync);
                j.fsync_every = Some(1);
                vec![j]
            },
        },
        Step { key: "one-writer", jobs: |c| vec![base(c, "writer1", &c.writer[0], Rw::Write, Bytes::mib(1))] },
        Step {
            key: "two-writers",
            jobs: |c| {
                vec![
                    base(c, "writer1", &c.writer[0], Rw::Write, Bytes::mib(1)),
                    base(c, "writer2", &c.writer[1], Rw::Write, Bytes::mib(1)),
                ]
            },
        },
        Step {
            key: "small-files",
            jobs: |c| {
                // PostMark on its defaults (500 files of 500 B to 10 KB), its transactions
                // going on until twice the step's time is up; then it removes its files.
                vec![JobPatch {
                    name: Some("smallfiles".into()),
                    workload: Some(iolab_spec::WorkloadKind::Postmark),
                    target: Some(c.dir.clone()),
                    runtime: Some(c.time * 2),
                    ..Default::default()
                }
                .with::<iolab_spec::PostmarkJob>(|o| o.transactions = Some(100_000_000))]
            },
        },
        Step {
            key: "mail-delivery",
            jobs: |c| {
                // Four delivering threads into one pool of 100 mailboxes: tmp/, fsync, rename, new/ fsync.
                vec![JobPatch {
                    name: Some("mail".into()),
                    workload: Some(iolab_spec::WorkloadKind::Maildir),
                    target: Some(c.dir.clone()),
                    threads: Some(4),
                    runtime: Some(c.time),
                    ..Default::default()
                }]
            },
        },
    ]
}

/// A missing directory is made and marked as iolab's, as a run makes its missing target (and
/// removed at the end unless --keep, when nothing else is in it): whether it was made.
fn make_dir(dir: &Path) -> Result<bool> {
    let made = layout::create_dir_in_run(dir, None)
        .with_context(|| format!("{} is not a directory to profile", dir.display()))?;
    if made {
        errln!("created the directory {} (marked as iolab's)", dir.display());
    }
    Ok(made)
}

/// Remove the survey's files, and its directory if it made it.
fn remove(ctx: &Ctx, made: bool) {
    for p in [&ctx.data, &ctx.log, &ctx.writer[0], &ctx.writer[1]] {
        let _ = layout::remove_owned(p);
    }
    if made {
        let _ = layout::remove_owned_dir(&ctx.dir);
    }
}

/// The survey's plan: each step a phase of its jobs, each after a warm-up (1 s, or half a
/// short step). A flag that makes a step's job invalid (`--step-time 0`) is refused here.
fn plan_of(steps: &[Step], ctx: &Ctx) -> Result<Plan> {
    let ramp = JobPatch {
        ramp: Some(iolab_spec::steady::Ramp::Time(Duration::from_secs(1).min(ctx.time / 2))),
        ..Default::default()
    };
    let mut phases = Vec::new();
    for s in steps {
        let jobs = (s.jobs)(ctx)
            .into_iter()
            .map(|j| ramp.layered(&j).resolve("job"))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("the survey's step `{}`", s.key))?;
        phases.push(Phase { name: s.key.to_string(), jobs });
    }
    Ok(Plan { phases })
}

pub fn run(a: SurveyArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    a.out.check()?;
    let made = make_dir(&a.dir)?;
    let free = layout::free_bytes(&a.dir).with_context(|| format!("checking free space in {}", a.dir.display()))?;
    // Four files: the data file, two writers' files and a small log; leave room to spare.
    let size = match a.size {
        Some(s) => s,
        None => Bytes((free / 8).min(Bytes::GIB) / Bytes::MIB * Bytes::MIB),
    };
    if size.0 < Bytes::mib(16).0 {
        if made {
            let _ = layout::remove_owned_dir(&a.dir);
        }
        bail!(
            "{} has {} free, too little for a survey (it needs at least 64 MiB); free space or pick another directory",
            a.dir.display(),
            iolab_report::fmt::fmt_binary(free as f64)
        );
    }
    let ctx = Ctx {
        dir: a.dir.clone(),
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
    let mut steps = steps();
    if a.verify {
        steps.push(verify_step());
    }
    let plan = plan_of(&steps, &ctx)?;
    let json = a.out.machine();
    if !json {
        errln!(
            "iolab survey of {}: {} steps of {} s on a {} file, {} I/O{}",
            a.dir.display(),
            steps.len(),
            a.step_time.as_secs_f64(),
            size,
            if ctx.direct { "direct" } else { "buffered (the filesystem refuses O_DIRECT)" },
            if ctx.uring { "" } else { "; io_uring unavailable, queue depth 32 uses 32 threads" }
        );
    }
    // With nodes, seed 000's locking check beside the profile, each check one step long: its
    // steps made (and so checked) before anything runs.
    let locking = if !a.nodes.given() {
        None
    } else {
        let nodes: Vec<String> = crate::cluster_cmd::node_names(&a.nodes)?;
        let patch =
            JobPatch { runtime: Some(a.step_time), size: Some(size.min(Bytes::mib(256))), ..Default::default() };
        let steps = Locking.steps(&nodes, &patch, &Default::default())?;
        Some((nodes, steps))
    };
    let live = Live::start(&a.out.metrics, json)?;
    let name = a.dir.display().to_string();
    let (result, run) = execute(&plan, &a.out, &a.save, (RunKind::Survey, &name), &live, stop.clone())?;
    let locking = match locking {
        None => None,
        Some((nodes, steps)) => {
            if !json {
                errln!("iolab survey: the locking check on {}", nodes.join(" and "));
            }
            let on = crate::cluster_cmd::On { nodes: &a.nodes, out: &a.out, save: &a.save, live: &live };
            Some(crate::cluster_cmd::run_scenario(on, &Locking, &steps, a.link_speed, stop.clone())?)
        }
    };
    // The report reads the stored runs, as every report does: the survey's, and the locking
    // check's for its profile.
    let report = match run {
        Some(id) => {
            let db = a.save.db.target();
            let store = iolab_store::Store::open_read(db.clone())?;
            let stored = store.load(id)?;
            let locking_run = locking.as_ref().and_then(|_| crate::stored::survey_locking(&store, &stored));
            let dir = a.save.db.local_dir().unwrap_or_else(|| Path::new(".").into());
            let out = dir.join("reports").join(format!("survey-{id}.html"));
            let opts = iolab_report::html::ReportOptions { survey_locking: locking_run, ..Default::default() };
            // The survey's own report, by the output rule: a file there that iolab did not
            // write is left alone (the run is kept; `iolab report` writes it elsewhere).
            let out = crate::outpath::OutPath {
                path: &out,
                flag: "the survey's report",
                overwrite: false,
                inputs: crate::outpath::database_files(db.file()),
            };
            match crate::stored::write_report(&[stored], &out, opts) {
                Ok(p) => Some(p),
                Err(e) => {
                    errln!("iolab: warning: no report: {e:#}; `iolab report {id} -o FILE` writes one");
                    None
                }
            }
        }
        None => None,
    };
    if !a.keep {
        remove(&ctx, made);
    }
    // The profile (human), or the survey's JSON beside its locking check's.
    let printed = crate::output::print(a.out.output, a.out.options(), &Input::Survey(&result, locking.as_ref()))
        .and_then(|_| {
            match (&report, json, run) {
                (Some(r), true, _) => errln!("iolab: report: {}", r.display()),
                (Some(r), false, _) => {
                    outln!("report: {} (open it in a browser; `iolab report` makes others)", r.display())?
                }
                (None, false, None) => outln!("no report: the run was not saved (--no-store)")?,
                (None, _, _) => {}
            }
            Ok(())
        });
    crate::stdout::unless_closed(printed)?;
    live.linger(&stop, json);
    Ok(exit_code(&result))
}

#[cfg(test)]
mod tests {
    /// Every step the survey runs has a reading in the report (the same order), so the profile
    /// and the HTML never miss one.
    #[test]
    fn every_step_reads_in_the_report() {
        let steps: Vec<&str> = super::steps().iter().chain([&super::verify_step()]).map(|s| s.key).collect();
        let readings: Vec<&str> = iolab_report::survey::readings().iter().map(|r| r.key).collect();
        assert_eq!(steps, readings);
    }
}
