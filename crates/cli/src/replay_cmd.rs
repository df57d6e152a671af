//! `iolab replay TRACE --target DIR`: a trace becomes a plan of one replay job (one worker per
//! traced thread), run, stored and reported like any run. The checks (the trace within its
//! limits, nothing under the target the replay may not touch), `--prepare` and the fidelity
//! are the workload's (`iolab_workload::source::replay`), run by the executor wherever the job
//! runs; here the fidelity it put in the job's result is printed.

use crate::args::{Output, ReplayArgs};
use crate::run_cmd;
use anyhow::{anyhow, bail, Context, Result};
use iolab_spec::{EngineKind, Job, Phase, Plan, ReplayJob, ReplayLimits, Workload};
use iolab_workload::model::ReplayFidelity;
use iolab_workload::source::replay;
use serde::Serialize;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: ReplayArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    a.out.check()?;
    if !a.target.is_dir() {
        bail!("--target {} is not a directory; make it first (a replay runs inside a directory)", a.target.display());
    }
    let engine: EngineKind = a.engine.parse().map_err(|e: String| anyhow!(e))?;
    let strip = match &a.strip {
        Some(s) => s.clone(),
        None => replay::default_strip_of(&a.trace).map_err(|e| anyhow!(e))?,
    };
    let target = a.target.canonicalize().with_context(|| format!("{}", a.target.display()))?;
    let (bytes, crc) = replay::fingerprint(&a.trace).with_context(|| format!("cannot read {}", a.trace.display()))?;
    let trace_path = a.trace.canonicalize().unwrap_or(a.trace.clone());
    let d = ReplayLimits::default();
    let r = ReplayJob {
        trace: trace_path,
        trace_bytes: bytes,
        trace_crc32: crc,
        timing: a.timing,
        strip,
        prepare: a.prepare,
        limits: ReplayLimits {
            max_wait: a.max_wait.unwrap_or(d.max_wait),
            max_buffer: a.max_buffer.unwrap_or(d.max_buffer),
            max_threads: a.max_threads.unwrap_or(d.max_threads),
            max_memory: a.max_memory.unwrap_or(d.max_memory),
        },
    };
    let threads = replay::plan_for(&r).map_err(|e| anyhow!(e))?.plan.threads.len() as u32;
    let job = Job {
        name: "replay".into(),
        target,
        size: None,
        seed: iolab_spec::DEFAULT_SEED,
        engine,
        iodepth: 1,
        direct: false,
        threads,
        runtime: None,
        ramp: Duration::ZERO,
        overwrite: a.overwrite,
        device: false,
        workload: Workload::Replay(r),
    };
    let name = format!("replay {}", a.trace.display());
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] };
    let (result, _) = run_cmd::execute(&plan, &a.out, &a.save, "replay", &name, stop)?;
    let fid = result.phases.first().and_then(|p| p.jobs.first()).and_then(|j| j.replay.clone());
    if a.out.output == Output::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            /// The replay job's fidelity (also in `run.phases[0].jobs[0].replay`).
            fidelity: &'a Option<ReplayFidelity>,
            run: &'a iolab_workload::RunResult,
        }
        println!("{}", serde_json::to_string_pretty(&Out { fidelity: &fid, run: &result })?);
    } else {
        run_cmd::emit(&result, &a.out)?;
        if let Some(f) = &fid {
            print_fidelity(f);
        }
    }
    let code = run_cmd::exit_code(&result);
    if code == ExitCode::SUCCESS && fid.as_ref().is_some_and(|f| !f.counts_equal || !f.results_equal) {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

fn print_fidelity(f: &ReplayFidelity) {
    use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY).set_header([
        "class",
        "recorded ops",
        "replayed ops",
        "recorded bytes",
        "replayed bytes",
        "short/long",
        "recorded mean ms",
        "replayed mean ms",
        "replayed p99 ms",
    ]);
    for c in &f.classes {
        t.add_row([
            c.class.clone(),
            c.recorded_ops.to_string(),
            c.replayed_ops.to_string(),
            c.recorded_bytes.to_string(),
            c.replayed_bytes.to_string(),
            if c.short + c.long > 0 { format!("{}/{}", c.short, c.long) } else { "-".into() },
            format!("{:.3}", c.recorded_mean_ms),
            format!("{:.3}", c.replayed_mean_ms),
            format!("{:.3}", c.replayed_p99_ms),
        ]);
    }
    println!(
        "\nFidelity ({} traced threads replayed; recorded: the trace's calls on the files under the target):\n{t}",
        f.threads
    );
    println!(
        "Operation counts {}; results {}.",
        if f.counts_equal { "equal" } else { "DIFFER" },
        if f.results_equal {
            "as recorded".to_string()
        } else {
            format!("DIFFER in {} calls (short/long reads or writes, other lseek positions)", f.mismatched)
        }
    );
    for m in &f.mismatches {
        println!(
            "  thread {} call {} {} {}: recorded {}, replayed {}",
            m.tid, m.call, m.name, m.path, m.recorded, m.replayed
        );
    }
    if f.mismatched as usize > f.mismatches.len() {
        println!("  ... and {} more", f.mismatched as usize - f.mismatches.len());
    }
    println!(
        "Elapsed {:.3} s replayed against {:.3} s recorded under strace ({:+.1}%). The busiest traced thread spent {:.3} s in its calls and {:.3} s between them (think time and strace's stops; think timing takes {:.3} ms, the least strace cost there, off each gap).",
        f.replayed_s, f.recorded_s, f.elapsed_error_pct, f.recorded_calls_s, f.recorded_gaps_s, f.tracer_gap_ms
    );
    for (why, calls) in &f.left_out {
        let s: Vec<String> = calls.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("Not replayed, {why}: {}", s.join(", "));
    }
    for (how, n) in &f.adjusted {
        println!("Replayed differently: {how}: {n}");
    }
}
