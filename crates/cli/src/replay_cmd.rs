//! `iolab replay TRACE --target DIR`: a trace becomes a plan of one replay job (one worker per
//! traced thread), run, stored and reported like any run. The checks (the trace within its
//! limits, nothing under the target the replay may not touch), `--prepare` and the fidelity
//! are the workload's (`iolab_workload::source::replay`), run by the executor wherever the job
//! runs; here the fidelity it put in the job's result is printed.

use crate::args::ReplayArgs;
use crate::formats::Format;
use crate::live_metrics::Live;
use crate::output::{emit, exit_code};
use crate::run_cmd;
use anyhow::{anyhow, bail, Context, Result};
use iolab_spec::{EngineKind, Job, Phase, Plan, ReplayJob, ReplayLimits, Workload};
use iolab_workload::model::{ReplayFidelity, RunKind};
use iolab_workload::source::replay;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: ReplayArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    a.out.check()?;
    if a.max_errors.is_some() && !(a.verify || a.verify_after) {
        bail!("--max-errors counts validation errors: add --verify");
    }
    if a.nodes.given() {
        return on_nodes(a, stop);
    }
    if !a.node_trace.is_empty() {
        bail!("--node-trace names a node's trace: give the nodes with --node NAME=ADDR,dir=PATH");
    }
    let Some(trace_file) = a.trace.clone() else { bail!("name the trace to replay") };
    let planned = replay_job(&a, &trace_file)?;
    let target = match planned.extent {
        // A block-level trace replays onto a file (made if missing) or, with --device, a device.
        Some(_) => std::path::absolute(&a.target).with_context(|| format!("{}", a.target.display()))?,
        None if !a.target.is_dir() => {
            bail!(
                "--target {} is not a directory; make it first (a replay runs inside a directory)",
                a.target.display()
            )
        }
        None => a.target.canonicalize().with_context(|| format!("{}", a.target.display()))?,
    };
    let mut job = job_of(&a, target, &planned)?;
    if a.engine.is_none() && job.engine == EngineKind::IoUring {
        if let Some(why) = no_uring() {
            errln!(
                "io_uring cannot be used here ({why}): the trace's asynchronous operations are replayed on psync, one at a time in their recorded order (--engine chooses another engine)."
            );
            (job.engine, job.iodepth) = (EngineKind::Psync, 1);
        }
    }
    let name = format!("replay {}", trace_file.display());
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] };
    let live = Live::start(&a.out.metrics, a.out.machine())?;
    let (result, _) = run_cmd::execute(&plan, &a.out, &a.save, (RunKind::Replay, &name), &live, stop.clone())?;
    let fid = result.phases.first().and_then(|p| p.jobs.first()).and_then(|j| j.replay.clone());
    if a.out.output == Format::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            /// The replay job's fidelity (also in `run.phases[0].jobs[0].replay`).
            fidelity: &'a Option<ReplayFidelity>,
            run: &'a iolab_workload::RunResult,
        }
        crate::stdout::unless_closed(
            serde_json::to_string_pretty(&Out { fidelity: &fid, run: &result })
                .map_err(Into::into)
                .and_then(|text| Ok(outln!("{text}")?)),
        )?;
    } else {
        crate::stdout::unless_closed(emit(&result, &a.out).and_then(|_| match &fid {
            Some(f) => Ok(print_fidelity(f)?),
            None => Ok(()),
        }))?;
    }
    live.linger(&stop, a.out.machine());
    let code = exit_code(&result);
    if code == ExitCode::SUCCESS && fid.as_ref().is_some_and(|f| !f.counts_equal || !f.results_equal) {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// Why io_uring cannot replay a trace's asynchronous operations on this machine, if it cannot:
/// the kernel refuses it (a sysctl, seccomp), or `IOLAB_NO_URING` is set (to try the fallback).
fn no_uring() -> Option<String> {
    if std::env::var_os("IOLAB_NO_URING").is_some_and(|v| !v.is_empty()) {
        return Some("IOLAB_NO_URING is set".into());
    }
    iolab_engine::io_uring_available().err().map(|e| e.to_string())
}

/// A trace planned for its replay job: the job's options, its threads, and the engine and depth
/// its asynchronous operations need.
struct Planned {
    r: ReplayJob,
    threads: u32,
    depth: u32,
    async_engine: Option<EngineKind>,
    /// A block-level trace's: bytes of the target its requests reach.
    extent: Option<u64>,
}

/// The job that replays a planned trace under `target` with one worker per traced thread, on
/// `--engine` or, by default, psync (io_uring or libaio for a trace with asynchronous I/O, as
/// deep as its rings went).
fn job_of(a: &ReplayArgs, target: PathBuf, p: &Planned) -> Result<Job> {
    let engine: EngineKind = match &a.engine {
        Some(e) => e.parse().map_err(|e: String| anyhow!(e))?,
        None => p.async_engine.unwrap_or(EngineKind::Psync),
    };
    Ok(Job {
        name: "replay".into(),
        target,
        size: p.extent.map(iolab_spec::Bytes),
        seed: iolab_spec::DEFAULT_SEED,
        engine,
        iodepth: p.depth.clamp(1, engine.caps().max_depth.min(4096)),
        batch: Default::default(),
        // A block-level trace's requests go to the device as they did, past the page cache.
        direct: p.extent.is_some(),
        threads: p.threads,
        runtime: None,
        ramp: Duration::ZERO,
        ramp_auto: false,
        start_delay: Default::default(),
        exit_all: false,
        cpus: None,
        numa: None,
        sched: None,
        overwrite: a.overwrite,
        device: a.device,
        verify: (a.verify || a.verify_after).then(|| iolab_spec::VerifyJob {
            before_rewrite: false,
            after: a.verify_after,
            journal: None,
            journal_sync: iolab_spec::JournalSync::Async,
            max_errors: a.max_errors.unwrap_or(iolab_spec::DEFAULT_MAX_ERRORS),
            on_other: false,
            rounds: 0,
            peer: None,
            id_root: None,
        }),
        steady: None,
        workload: Workload::Replay(p.r.clone()),
    })
}

/// The replay job of one trace as these arguments shape it, and its thread count (the trace
/// read, planned and checked against its limits here, before anything runs).
fn replay_job(a: &ReplayArgs, trace: &Path) -> Result<Planned> {
    let strip = match &a.strip {
        Some(s) => s.clone(),
        None => replay::default_strip_of(trace).map_err(|e| anyhow!(e))?,
    };
    let (bytes, crc) = replay::fingerprint(trace).with_context(|| format!("cannot read {}", trace.display()))?;
    let d = ReplayLimits::default();
    let r = ReplayJob {
        trace: trace.canonicalize().unwrap_or(trace.to_path_buf()),
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
    let checked = replay::plan_for(&r).with_context(|| trace.display().to_string())?;
    let p = &checked.plan;
    let (mut threads, depth, mut async_engine) = (p.threads.len() as u32, p.max_depth, p.async_engine);
    let extent = p.blocks.as_ref().map(|b| b.extent);
    if extent.is_some() {
        // One worker issues the device's requests, asynchronously at the depth they had.
        (threads, async_engine) = (1, Some(EngineKind::IoUring));
    } else if a.device {
        bail!(
            "--device replays a block-level trace (trace record --level block) onto a device; this trace records calls"
        );
    }
    Ok(Planned { r, threads, depth, async_engine, extent })
}

/// `iolab replay --node ...`: the same trace (or each node its own) replayed on several nodes
/// at one start. The coordinator sends each node its trace with the run; the agent keeps it in
/// its own state directory and replays from there; its executor checks, prepares (`--prepare`)
/// and judges the fidelity there, which comes back in its job's result.
fn on_nodes(a: ReplayArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    if a.device {
        bail!(
            "--device cannot be given with --node: a block-level trace is replayed onto one machine's device; run `iolab replay TRACE --target DEVICE --device` on each node"
        );
    }
    let names = crate::cluster_cmd::node_names(&a.nodes)?;
    // Which trace each node replays.
    let mut chosen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for nt in &a.node_trace {
        let (n, f) = nt.split_once('=').with_context(|| format!("--node-trace `{nt}`: expected NAME=FILE"))?;
        if !names.iter().any(|x| x == n) {
            bail!("--node-trace `{nt}`: no node is named `{n}` (the nodes: {})", names.join(", "));
        }
        if chosen.insert(n.to_string(), PathBuf::from(f)).is_some() {
            bail!("--node-trace: node `{n}` is given two traces");
        }
    }
    if let Some(t) = &a.trace {
        for n in &names {
            chosen.insert(n.clone(), t.clone());
        }
    }
    if let Some(n) = names.iter().find(|n| !chosen.contains_key(*n)) {
        bail!("node `{n}` has no trace: give one with --node-trace {n}=FILE");
    }
    // Each distinct trace read, planned and checked once.
    let mut planned: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    for path in chosen.values() {
        if !planned.contains_key(path) {
            planned.insert(path.clone(), replay_job(&a, path)?);
        }
    }
    if let Some(path) = planned.iter().find(|(_, p)| p.extent.is_some()).map(|(path, _)| path) {
        bail!(
            "{} is a block-level trace (trace record --level block): it replays onto one machine's file or device, not on several nodes (--node); run `iolab replay` on each node",
            path.display()
        );
    }
    let job_for = |node: &str| -> Result<Job> { job_of(&a, a.target.clone(), &planned[&chosen[node]]) };
    // The run as a whole: one phase, every node's job named by its node.
    let jobs = names
        .iter()
        .map(|n| {
            let mut j = job_for(n)?;
            j.name = format!("{n}:replay");
            Ok(j)
        })
        .collect::<Result<Vec<Job>>>()?;
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs }] };
    plan.validate()?;
    let name = match &a.trace {
        Some(t) => format!("replay {} on {} nodes", t.display(), names.len()),
        None => format!("replay of {} traces on {} nodes", planned.len(), names.len()),
    };
    let run_mark = iolab_workload::layout::RunMark::new();
    let work = names
        .iter()
        .map(|n| {
            Ok(Some(iolab_cluster::Work {
                plan: std::sync::Arc::new(Plan {
                    phases: vec![Phase { name: "replay".into(), jobs: vec![job_for(n)?] }],
                }),
                // The target directory, made on each node if missing (under its dir=).
                mkdirs: vec![a.target.clone()],
                run_mark: run_mark.clone(),
                keys: Vec::new(),
            }))
        })
        .collect::<Result<Vec<_>>>()?;
    let live = Live::start(&a.out.metrics, a.out.machine())?;
    let on = crate::cluster_cmd::On { nodes: &a.nodes, out: &a.out, save: &a.save, live: &live };
    let result = crate::cluster_cmd::run_each(on, (RunKind::Replay, &name), plan, work, stop.clone())?;
    // Each node's fidelity, judged by its agent against its own trace.
    let mut fids: BTreeMap<String, ReplayFidelity> = BTreeMap::new();
    if let Some(ph) = result.phases.first() {
        for j in &ph.jobs {
            if let (Some(n), Some(f)) = (&j.node, &j.replay) {
                fids.insert(n.clone(), f.clone());
            }
        }
    }
    if a.out.output == Format::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            fidelity_by_node: &'a BTreeMap<String, ReplayFidelity>,
            run: &'a iolab_workload::RunResult,
        }
        crate::stdout::unless_closed(
            serde_json::to_string_pretty(&Out { fidelity_by_node: &fids, run: &result })
                .map_err(Into::into)
                .and_then(|text| Ok(outln!("{text}")?)),
        )?;
    } else {
        crate::stdout::unless_closed(emit(&result, &a.out).and_then(|_| {
            for (n, f) in &fids {
                outln!("\nNode {n}:")?;
                print_fidelity(f)?;
            }
            Ok(())
        }))?;
    }
    live.linger(&stop, a.out.machine());
    let code = exit_code(&result);
    if code == ExitCode::SUCCESS
        && (fids.len() < names.len() || fids.values().any(|f| !f.counts_equal || !f.results_equal))
    {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

fn print_fidelity(f: &ReplayFidelity) -> std::io::Result<()> {
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
    // A block-level trace's replay has no traced thread: its device's requests, on one worker.
    let blocks = f.threads == 0;
    if blocks {
        outln!("\nFidelity (recorded: the traced device's requests, replayed onto the target):\n{t}")?;
    } else {
        outln!(
            "\nFidelity ({} traced threads replayed; recorded: the trace's calls on the files under the target):\n{t}",
            f.threads
        )?;
    }
    outln!(
        "Operation counts {}; results {}.",
        if f.counts_equal { "equal" } else { "DIFFER" },
        if f.results_equal {
            "as recorded".to_string()
        } else {
            format!("DIFFER in {} calls (short/long reads or writes, other lseek positions)", f.mismatched)
        }
    )?;
    for m in &f.mismatches {
        outln!(
            "  {} {} {} {}: recorded {}, replayed {}",
            if blocks { String::from("request") } else { format!("thread {} call", m.tid) },
            m.call,
            m.name,
            m.path,
            m.recorded,
            m.replayed
        )?;
    }
    if f.mismatched as usize > f.mismatches.len() {
        outln!("  ... and {} more", f.mismatched as usize - f.mismatches.len())?;
    }
    if blocks {
        outln!(
            "Elapsed {:.3} s replayed against {:.3} s recorded (the first request's issue to the last one's completion, {:+.1}%).",
            f.replayed_s,
            f.recorded_s,
            f.elapsed_error_pct
        )?;
    } else {
        outln!(
        "Elapsed {:.3} s replayed against {:.3} s recorded ({:+.1}%: the program's first traced call to its last, {:.3} s of it before the first replayed call and {:.3} s after the last, which think, scaled and recorded timing wait too). The busiest traced thread spent {:.3} s in its calls and {:.3} s between them (think time and a tracer's stops; think timing takes {:.3} ms, the least the tracer cost there, off each gap).",
        f.replayed_s, f.recorded_s, f.elapsed_error_pct, f.lead_s, f.tail_s, f.recorded_calls_s, f.recorded_gaps_s, f.tracer_gap_ms
    )?;
    }
    for (why, calls) in &f.left_out {
        let s: Vec<String> = calls.iter().map(|(k, v)| format!("{k} {v}")).collect();
        outln!("Not replayed, {why}: {}", s.join(", "))?;
    }
    for (how, n) in &f.adjusted {
        outln!("Replayed differently: {how}: {n}")?;
    }
    Ok(())
}
