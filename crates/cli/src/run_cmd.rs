//! `iolab run`: flags or a job file become a plan, the plan runs, the result is printed.

use crate::args::{ConvertArgs, LogArgs, OutArgs, RunArgs, SaveArgs};
use crate::formats::Format;
use crate::live_metrics::Live;
use crate::output::exit_code;
use crate::progress::Progress;
use crate::record::{Recorder, Tee};
use anyhow::{Context, Result};
use iolab_report::export::Input;
use iolab_spec::{Phase, Plan, Workload};
use iolab_workload::model::RunKind;
use iolab_workload::{layout, run_plan, Control, Keep, RunResult};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The plan the arguments give (a job file, or the job flags) and the run's name, with the
/// checks that need no machine: `iolab run` here and on several nodes (`cluster_cmd`) alike.
/// fio's logs a fio job file asks for become `args.logs` unless a log flag was given (the
/// flags win over the file, as for job options).
pub fn plan_of(args: &mut RunArgs) -> Result<(Plan, String)> {
    args.out.check()?;
    if args.csv && args.out.machine() {
        anyhow::bail!("--csv prints bonnie++'s CSV line; it does not go with --output {}", args.out.output);
    }
    // `--csv` is bonnie++'s CSV with the progress and notes of the human output.
    let format = if args.csv { Format::BonnieCsv } else { args.out.output };
    let overrides = args.job.clone();
    let plan = match &args.job_file {
        Some(path) => {
            let (plan, logs) = crate::job_file::plan(
                path,
                args.format,
                (args.fio_lenient, &args.section),
                &overrides,
                args.out.machine(),
            )?;
            if let (Some(l), false) = (logs, args.logs.wanted()) {
                args.logs = LogArgs::from(l);
            }
            plan
        }
        None if args.fio_lenient => anyhow::bail!("--fio-lenient goes with a fio job file"),
        None if !args.section.is_empty() => anyhow::bail!("--section picks job sections of a fio job file; give one"),
        None => {
            let job = overrides.resolve("job1")?;
            Plan { phases: vec![Phase { name: job.workload.label(), jobs: vec![job] }] }
        }
    };
    // A job file is named by its path; a run from flags by what its job does ("write 1MiB
    // direct"), so `iolab runs` tells such runs apart.
    let name = match &args.job_file {
        Some(p) => p.display().to_string(),
        None => plan.phases.iter().flat_map(|p| &p.jobs).map(|j| j.describe()).next().unwrap_or_default(),
    };
    if format == Format::BonnieCsv
        && !plan.phases.iter().flat_map(|p| &p.jobs).any(|j| matches!(j.workload, Workload::Bonnie(_)))
    {
        let flag = if args.csv { "--csv" } else { "--output bonnie-csv" };
        anyhow::bail!("{flag} prints bonnie++'s CSV line: it needs --workload bonnie");
    }
    Ok((plan, name))
}

/// `iolab run` on this machine (with `--node`, `cluster_cmd::run` runs it).
pub fn run(mut args: RunArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let (mut plan, name) = plan_of(&mut args)?;
    crate::fio_logs::check(&args.logs, plan.phases.len())?;
    crate::fio_logs::per_io(&args.logs, &mut plan)?;
    if plan.phases.iter().flat_map(|p| &p.jobs).any(|j| j.verify.as_ref().is_some_and(|v| v.on_other)) {
        anyhow::bail!(
            "--verify-on other has a node other than the writer read back: give two nodes or more with --node NAME=ADDR,dir=PATH (their dirs the same shared directory)"
        );
    }
    let live = Live::start(&args.out.metrics, args.out.machine())?;
    let (result, _) = execute(&plan, &args.out, &args.save, (RunKind::Run, &name), &live, stop.clone())?;
    for path in crate::fio_logs::write(&args.logs, &result)? {
        if !args.out.machine() {
            errln!("iolab: wrote {}", path.display());
        }
    }
    if args.cleanup {
        cleanup(&plan, args.out.machine());
    }
    // `--csv` is bonnie++'s CSV with the progress and notes of the human output.
    let format = if args.csv { Format::BonnieCsv } else { args.out.output };
    // The run is measured and kept: a reader gone from stdout does not change its status.
    crate::stdout::unless_closed(crate::output::print(format, args.out.options(), &Input::Run(&result)))?;
    live.linger(&stop, args.out.machine());
    Ok(exit_code(&result))
}

/// Run a plan with the progress line the output mode allows, saving it unless told not to and
/// feeding `live`'s endpoint. Returns the result and the stored run's id.
pub fn execute(
    plan: &Plan,
    out: &OutArgs,
    save: &SaveArgs,
    (kind, name): (RunKind, &str),
    live: &Live,
    stop: Arc<AtomicBool>,
) -> Result<(RunResult, Option<i64>)> {
    let json = out.machine();
    let draw = !json && !out.no_progress && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let mut progress = Progress::new(draw, json);
    let sample_interval = (!out.sample_interval.is_zero()).then_some(out.sample_interval);
    let ctl = Control { stop, sample_interval, ..Default::default() };
    // Refusals come before the run is recorded: check the plan's targets first.
    iolab_workload::check_plan(plan)?;
    let mut rec = Recorder::begin(save, kind, name, plan)?;
    // The preconditioning of the target this run follows, if one is stored (issue 29).
    let target = plan.phases.iter().flat_map(|p| &p.jobs).map(|j| j.target.clone()).next();
    let precondition = match (rec.as_mut(), target) {
        (Some(r), Some(t)) => r.link_precondition(&t),
        _ => None,
    };
    // With the store, seconds and samples go to it as they are measured and are read back at
    // the end; without it (--no-store) they are kept in memory, which grows with the run.
    let stored = rec.is_some();
    let mut feed = live.feed(rec.as_ref().map(|r| r.run), kind, &save.labels, plan);
    let mut tee = Tee { show: &mut progress, rec: rec.as_mut(), metrics: feed.as_mut() };
    let outcome = if stored {
        run_plan(plan, &ctl, &mut tee)
    } else {
        let mut keep = Keep::new(&mut tee);
        run_plan(plan, &ctl, &mut keep).map(|mut r| {
            keep.fill(&mut r);
            r
        })
    };
    if let Some(f) = feed.as_mut() {
        f.finish(outcome.as_ref().map_or(iolab_workload::Status::Failed, |r| r.status));
    }
    let mut result = match outcome {
        Ok(r) => RunResult { precondition, ..r },
        Err(e) => {
            // A refusal found at the first phase's layout (no space): nothing was measured.
            if let Some(r) = rec.as_mut() {
                r.finish(&RunResult::failed(plan.clone(), e.to_string()));
            }
            return Err(e.into());
        }
    };
    if let Some(r) = rec.as_mut() {
        r.finish(&result);
        if let Err(e) = r.fill(&mut result) {
            errln!("iolab: warning: reading the run's seconds and samples back: {e}");
        }
        if !json {
            errln!("iolab: {}", r.where_());
        }
    }
    Ok((result, rec.map(|r| r.run)))
}

/// Remove the plan's files that iolab created; others are left and named.
pub fn cleanup(plan: &Plan, quiet: bool) {
    let mut seen = std::collections::HashSet::new();
    for job in plan.phases.iter().flat_map(|p| &p.jobs) {
        for path in layout::job_paths(job) {
            if !seen.insert(path.clone()) {
                continue;
            }
            match layout::remove_owned(&path) {
                Ok(true) if !quiet => errln!("removed {}", path.display()),
                Ok(false) if path.exists() && !quiet => errln!("kept {}: iolab did not create it", path.display()),
                Err(e) => errln!("could not remove {}: {e}", path.display()),
                _ => {}
            }
        }
    }
}

/// `iolab convert JOB.fio`: the iolab TOML job file that says what the fio file says.
pub fn convert(a: ConvertArgs) -> Result<ExitCode> {
    let f = crate::job_file::read_fio(&a.job_file, a.fio_lenient, &a.section, false)?;
    // The file must make a plan as it stands (every rule checked), not only parse.
    f.plan(&Default::default()).with_context(|| format!("{}", a.job_file.display()))?;
    out!("{}", f.to_toml())?;
    Ok(ExitCode::SUCCESS)
}
