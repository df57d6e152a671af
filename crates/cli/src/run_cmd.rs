//! `iolab run`: flags or a job file become a plan, the plan runs, the result is printed.

use crate::args::{OutArgs, Output, RunArgs};
use crate::progress::Progress;
use crate::summary;
use anyhow::{Context, Result};
use iolab_spec::{parse_job_file, Phase, Plan};
use iolab_workload::{layout, run_plan, Control, RunResult, Status};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn run(args: RunArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let overrides = args.job.patch();
    let plan = match &args.job_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading job file {}", path.display()))?;
            parse_job_file(&text, &overrides).with_context(|| format!("{}", path.display()))?
        }
        None => {
            let job = overrides.resolve("job1")?;
            Plan { phases: vec![Phase { name: job.rw.to_string(), jobs: vec![job] }] }
        }
    };
    let result = execute(&plan, &args.out, stop)?;
    if args.cleanup {
        cleanup(&plan, args.out.output == Output::Json);
    }
    emit(&result, &args.out)?;
    Ok(exit_code(&result))
}

/// Run a plan with the progress line the output mode allows.
pub fn execute(plan: &Plan, out: &OutArgs, stop: Arc<AtomicBool>) -> Result<RunResult> {
    let json = out.output == Output::Json;
    let draw = !json && !out.no_progress && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let mut sink = Progress::new(draw, json);
    let sample_interval = (!out.sample_interval.is_zero()).then_some(out.sample_interval);
    let ctl = Control { stop, start_at: None, sample_interval };
    Ok(run_plan(plan, &ctl, &mut sink)?)
}

pub fn emit(result: &RunResult, out: &OutArgs) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match out.output {
        Output::Json => {
            serde_json::to_writer_pretty(&mut stdout, result)?;
            writeln!(stdout)?;
        }
        Output::Human => write!(stdout, "{}", summary::render(result))?,
    }
    Ok(())
}

pub fn exit_code(r: &RunResult) -> ExitCode {
    match r.status {
        Status::Complete | Status::Running => ExitCode::SUCCESS,
        Status::Interrupted => ExitCode::from(130),
        Status::Failed => ExitCode::from(2),
    }
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
                Ok(true) if !quiet => eprintln!("removed {}", path.display()),
                Ok(false) if path.exists() && !quiet => eprintln!("kept {}: iolab did not create it", path.display()),
                Err(e) => eprintln!("could not remove {}: {e}", path.display()),
                _ => {}
            }
        }
    }
}
