//! `iolab replay TRACE --target DIR`: a trace becomes a plan of one replay job (one worker per
//! traced thread), checked for safety, prepared, run, stored and reported like any run, then
//! judged for fidelity: replayed operation counts and bytes against the recorded ones, and the
//! elapsed time against the recorded span.

use crate::args::{Output, ReplayArgs};
use crate::run_cmd;
use anyhow::{bail, Context, Result};
use iolab_spec::{EngineKind, Job, Phase, Plan, ReplayJob, Workload};
use iolab_trace::format::{oflags, Kind, Trace};
use iolab_workload::layout;
use iolab_workload::model::OpClass;
use iolab_workload::source::replay::{self, ReplayPlan};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// One class: recorded against replayed.
#[derive(Debug, Serialize)]
pub struct ClassFidelity {
    pub class: String,
    pub recorded_ops: u64,
    pub replayed_ops: u64,
    pub recorded_bytes: u64,
    pub replayed_bytes: u64,
    pub recorded_mean_ms: f64,
    pub replayed_mean_ms: f64,
    pub replayed_p99_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Fidelity {
    /// Every class's replayed count equals its recorded count.
    pub counts_equal: bool,
    pub classes: Vec<ClassFidelity>,
    /// The recorded span of the replayed calls (first start to last end), seconds.
    pub recorded_s: f64,
    /// The replay's elapsed time, seconds.
    pub replayed_s: f64,
    /// `replayed_s / recorded_s - 1`, percent.
    pub elapsed_error_pct: f64,
    pub threads: usize,
    /// Recorded calls not replayed (other calls, failed calls, files outside the target), by name.
    pub skipped: BTreeMap<String, u64>,
}

pub fn run(a: ReplayArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    a.out.check()?;
    if a.nodes.given() {
        return on_nodes(a, stop);
    }
    if !a.node_trace.is_empty() {
        bail!("--node-trace names a node's trace: give the nodes with --node NAME=ADDR,dir=PATH");
    }
    let Some(trace_file) = a.trace.clone() else { bail!("name the trace to replay") };
    if !a.target.is_dir() {
        bail!("--target {} is not a directory; make it first (a replay runs inside a directory)", a.target.display());
    }
    let engine: EngineKind = a.engine.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    let f = std::fs::File::open(&trace_file).with_context(|| format!("cannot open {}", trace_file.display()))?;
    let trace =
        Trace::read(std::io::BufReader::new(f)).with_context(|| format!("cannot read {}", trace_file.display()))?;
    let strip = a.strip.clone().unwrap_or_else(|| replay::default_strip(&trace));
    let plan_r = ReplayPlan::build(&trace, &strip);
    if plan_r.threads.is_empty() {
        bail!(
            "nothing to replay: no call of the trace touches a file under {} (name the traced data directory with --strip)",
            strip.display()
        );
    }
    let target = a.target.canonicalize().with_context(|| format!("{}", a.target.display()))?;
    prepare(&plan_r, &trace, &target, a.prepare, a.overwrite)?;
    let (bytes, crc) = replay::fingerprint(&trace_file).with_context(|| format!("{}", trace_file.display()))?;
    let trace_path = trace_file.canonicalize().unwrap_or(trace_file.clone());
    let job = Job {
        name: "replay".into(),
        target: target.clone(),
        size: None,
        seed: iolab_spec::DEFAULT_SEED,
        engine,
        iodepth: 1,
        direct: false,
        threads: plan_r.threads.len() as u32,
        runtime: None,
        ramp: Duration::ZERO,
        overwrite: a.overwrite,
        device: false,
        workload: Workload::Replay(ReplayJob {
            trace: trace_path,
            trace_bytes: bytes,
            trace_crc32: crc,
            timing: a.timing,
            strip: strip.clone(),
        }),
    };
    let name = format!("replay {}", trace_file.display());
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] };
    let (result, _) = run_cmd::execute(&plan, &a.out, &a.save, "replay", &name, stop)?;
    let fid = fidelity(&plan_r, &result);
    if a.out.output == Output::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            fidelity: &'a Fidelity,
            run: &'a iolab_workload::RunResult,
        }
        println!("{}", serde_json::to_string_pretty(&Out { fidelity: &fid, run: &result })?);
    } else {
        run_cmd::emit(&result, &a.out)?;
        print_fidelity(&fid);
    }
    let code = run_cmd::exit_code(&result);
    if code == ExitCode::SUCCESS && !fid.counts_equal {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// Refuse to touch files iolab did not create; make the directories and files the replay
/// needs (marked as iolab's), with data where the trace reads (`--prepare`).
fn prepare(p: &ReplayPlan, t: &Trace, target: &Path, fill: bool, overwrite: bool) -> Result<()> {
    let made: HashSet<PathBuf> = t
        .ops
        .iter()
        .flat_map(|(_, o)| o)
        .filter(|o| o.kind == Kind::Mkdir)
        .filter_map(|o| p.paths.get(&o.file).cloned())
        .collect();
    let exclusive: HashSet<PathBuf> = t
        .ops
        .iter()
        .flat_map(|(_, o)| o)
        .filter(|o| o.kind == Kind::Open && o.flags & oflags::O_EXCL != 0)
        .filter_map(|o| p.files.get(&o.file).map(|f| f.rel.clone()))
        .collect();
    let needs = p.needs();
    let mut rels: Vec<&PathBuf> = p.files.values().map(|f| &f.rel).chain(p.paths.values()).collect();
    rels.sort();
    rels.dedup();
    for rel in &rels {
        let path = target.join(rel);
        if path.exists() && !path.is_dir() && !overwrite && !layout::is_owned(&path).unwrap_or(false) {
            bail!(
                "{} exists and iolab did not create it, so the replay will not write to it; pass --overwrite, or choose another --target",
                path.display()
            );
        }
        // Parent directories the trace does not make itself.
        let mut dirs = Vec::new();
        let mut d = rel.parent();
        while let Some(x) = d.filter(|x| !x.as_os_str().is_empty()) {
            if made.contains(x) {
                break;
            }
            dirs.push(x);
            d = x.parent();
        }
        for x in dirs.iter().rev() {
            let full = target.join(x);
            if !full.exists() {
                std::fs::create_dir(&full).with_context(|| format!("creating {}", full.display()))?;
            }
        }
    }
    for f in p.files.values() {
        let path = target.join(&f.rel);
        if exclusive.contains(&f.rel) || made.iter().any(|m| f.rel.starts_with(m)) {
            continue;
        }
        let need = needs.get(&f.rel).copied();
        if !path.exists() {
            if need.is_some() && !fill {
                bail!(
                    "{} must exist before the replay (the trace opens it without O_CREAT or reads it); add --prepare",
                    path.display()
                );
            }
            let tgt = layout::Target {
                path: path.clone(),
                kind: layout::TargetKind::File,
                size: 0,
                existing: 0,
                exists: false,
                layout: false,
            };
            layout::create_target(&tgt).with_context(|| format!("creating {}", path.display()))?;
        }
        if let (Some(size), true) = (need, fill) {
            let have = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if have < size {
                let mut w = std::fs::OpenOptions::new().append(true).open(&path)?;
                let chunk = vec![0x5au8; 1 << 20];
                let mut left = size - have;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    w.write_all(&chunk[..n]).with_context(|| format!("filling {}", path.display()))?;
                    left -= n as u64;
                }
                w.sync_all()?;
            }
        }
    }
    Ok(())
}

fn fidelity(p: &ReplayPlan, r: &iolab_workload::RunResult) -> Fidelity {
    let total = r.phases.first().map(|ph| ph.total.clone()).unwrap_or_default();
    let replayed_s = r.phases.first().map(|ph| ph.elapsed_s).unwrap_or(0.0);
    fidelity_of(p, &total, replayed_s)
}

/// The fidelity of one replay's totals (one node's, with --node) against its plan.
fn fidelity_of(p: &ReplayPlan, total: &iolab_workload::Totals, replayed_s: f64) -> Fidelity {
    let expected = p.expected();
    let mut rec_time: BTreeMap<OpClass, u64> = BTreeMap::new();
    for th in &p.threads {
        for s in &th.steps {
            let c = expected_class(s.op.kind, s.op.flags);
            *rec_time.entry(c).or_default() += s.op.dur_ns;
        }
    }
    let mut classes = Vec::new();
    let mut equal = true;
    for c in OpClass::ALL {
        let (rops, rbytes) = expected.get(c).copied().unwrap_or((0, 0));
        let got = total.get(*c);
        if rops == 0 && got.ops == 0 {
            continue;
        }
        equal &= rops == got.ops;
        classes.push(ClassFidelity {
            class: c.as_str().to_string(),
            recorded_ops: rops,
            replayed_ops: got.ops,
            recorded_bytes: rbytes,
            replayed_bytes: got.bytes,
            recorded_mean_ms: if rops > 0 {
                rec_time.get(c).copied().unwrap_or(0) as f64 / rops as f64 / 1e6
            } else {
                0.0
            },
            replayed_mean_ms: got.lat_ns.mean as f64 / 1e6,
            replayed_p99_ms: got.lat_ns.p99 as f64 / 1e6,
        });
    }
    let recorded_s = p.recorded_span_ns as f64 / 1e9;
    Fidelity {
        counts_equal: equal,
        classes,
        recorded_s,
        replayed_s,
        elapsed_error_pct: if recorded_s > 0.0 { (replayed_s / recorded_s - 1.0) * 100.0 } else { 0.0 },
        threads: p.threads.len(),
        skipped: p.skipped.clone(),
    }
}

/// `iolab replay --node ...`: the same trace (or each node its own) replayed on several nodes
/// at one start. The coordinator sends each node its trace with the run; the agent keeps it in
/// its own state directory and replays from there. Fidelity is judged per node.
fn on_nodes(a: ReplayArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    if a.prepare {
        bail!(
            "--prepare makes the files here, not on the nodes: with --node, replay a trace that creates its files, or prepare them on each node (iolab replay --prepare there)"
        );
    }
    let engine: EngineKind = a.engine.parse().map_err(|e: String| anyhow::anyhow!(e))?;
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
    // Each distinct trace read, planned and fingerprinted once.
    struct Planned {
        plan: ReplayPlan,
        job: ReplayJob,
        threads: u32,
    }
    let mut planned: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    for path in chosen.values() {
        if planned.contains_key(path) {
            continue;
        }
        let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let trace =
            Trace::read(std::io::BufReader::new(f)).with_context(|| format!("cannot read {}", path.display()))?;
        let strip = a.strip.clone().unwrap_or_else(|| replay::default_strip(&trace));
        let plan = ReplayPlan::build(&trace, &strip);
        if plan.threads.is_empty() {
            bail!(
                "{}: nothing to replay: no call of the trace touches a file under {} (name the traced data directory with --strip)",
                path.display(),
                strip.display()
            );
        }
        let (bytes, crc) = replay::fingerprint(path).with_context(|| format!("{}", path.display()))?;
        let threads = plan.threads.len() as u32;
        let job = ReplayJob {
            trace: path.canonicalize().unwrap_or(path.clone()),
            trace_bytes: bytes,
            trace_crc32: crc,
            timing: a.timing,
            strip,
        };
        planned.insert(path.clone(), Planned { plan, job, threads });
    }
    let job_for = |node: &str| -> Job {
        let p = &planned[&chosen[node]];
        Job {
            name: "replay".into(),
            target: a.target.clone(),
            size: None,
            seed: iolab_spec::DEFAULT_SEED,
            engine,
            iodepth: 1,
            direct: false,
            threads: p.threads,
            runtime: None,
            ramp: Duration::ZERO,
            overwrite: a.overwrite,
            device: false,
            workload: Workload::Replay(p.job.clone()),
        }
    };
    // The run as a whole: one phase, every node's job named by its node.
    let jobs = names
        .iter()
        .map(|n| {
            let mut j = job_for(n);
            j.name = format!("{n}:replay");
            j
        })
        .collect();
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs }] };
    plan.validate()?;
    let name = match &a.trace {
        Some(t) => format!("replay {} on {} nodes", t.display(), names.len()),
        None => format!("replay of {} traces on {} nodes", planned.len(), names.len()),
    };
    let work = |names: &[String]| -> Result<Vec<Option<iolab_cluster::Work>>> {
        let run_mark = layout::RunMark::new();
        Ok(names
            .iter()
            .map(|n| {
                Some(iolab_cluster::Work {
                    plan: Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job_for(n)] }] },
                    // The target directory, made on each node if missing (under its dir=).
                    mkdirs: vec![a.target.clone()],
                    run_mark: run_mark.clone(),
                })
            })
            .collect())
    };
    let result = crate::cluster_cmd::run_each(&a.nodes, &a.out, &a.save, "replay", &name, &plan, work, stop)?;
    // Each node against its own trace's plan.
    let mut fids: BTreeMap<String, Fidelity> = BTreeMap::new();
    if let Some(ph) = result.phases.first() {
        for nr in &ph.nodes {
            if let Some(path) = chosen.get(&nr.name) {
                fids.insert(nr.name.clone(), fidelity_of(&planned[path].plan, &nr.total, nr.elapsed_s));
            }
        }
    }
    if a.out.output == Output::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            fidelity_by_node: &'a BTreeMap<String, Fidelity>,
            run: &'a iolab_workload::RunResult,
        }
        println!("{}", serde_json::to_string_pretty(&Out { fidelity_by_node: &fids, run: &result })?);
    } else {
        run_cmd::emit(&result, &a.out)?;
        for (n, f) in &fids {
            println!("\nNode {n}:");
            print_fidelity(f);
        }
    }
    let code = run_cmd::exit_code(&result);
    if code == ExitCode::SUCCESS && (fids.len() < names.len() || fids.values().any(|f| !f.counts_equal)) {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

fn expected_class(k: Kind, flags: u32) -> OpClass {
    match k {
        Kind::Open if flags & oflags::O_CREAT != 0 => OpClass::Create,
        Kind::Open => OpClass::Open,
        Kind::Close => OpClass::Close,
        k if k.reads() => OpClass::Read,
        k if k.writes() => OpClass::Write,
        k if k.is_sync() => OpClass::Sync,
        Kind::Lseek => OpClass::Seek,
        Kind::Ftruncate => OpClass::Truncate,
        Kind::Fallocate => OpClass::Allocate,
        Kind::Unlink if flags & 0x200 != 0 => OpClass::Rmdir,
        Kind::Unlink => OpClass::Unlink,
        Kind::Rename => OpClass::Rename,
        Kind::Mkdir => OpClass::Mkdir,
        _ => OpClass::Stat,
    }
}

fn print_fidelity(f: &Fidelity) {
    use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY).set_header([
        "class",
        "recorded ops",
        "replayed ops",
        "recorded bytes",
        "replayed bytes",
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
            format!("{:.3}", c.recorded_mean_ms),
            format!("{:.3}", c.replayed_mean_ms),
            format!("{:.3}", c.replayed_p99_ms),
        ]);
    }
    println!("\nFidelity ({} traced threads replayed):\n{t}", f.threads);
    println!(
        "Operation counts {}; elapsed {:.3} s replayed against {:.3} s recorded ({:+.1}%).",
        if f.counts_equal { "equal" } else { "DIFFER" },
        f.replayed_s,
        f.recorded_s,
        f.elapsed_error_pct
    );
    if !f.skipped.is_empty() {
        let s: Vec<String> = f.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("Not replayed (other calls, failed calls, files outside the target): {}", s.join(", "));
    }
}
