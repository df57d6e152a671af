//! `iolab replay TRACE --target DIR`: a trace becomes a plan of one replay job (one worker per
//! traced thread), checked for safety, prepared, run, stored and reported like any run, then
//! judged for fidelity: replayed operation counts and bytes against the recorded ones, and the
//! elapsed time against the recorded span.

use crate::args::{ReplayArgs, RunOutput};
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
    a.out.check_no_fio("iolab replay")?;
    if !a.target.is_dir() {
        bail!("--target {} is not a directory; make it first (a replay runs inside a directory)", a.target.display());
    }
    let engine: EngineKind = a.engine.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    let f = std::fs::File::open(&a.trace).with_context(|| format!("cannot open {}", a.trace.display()))?;
    let trace =
        Trace::read(std::io::BufReader::new(f)).with_context(|| format!("cannot read {}", a.trace.display()))?;
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
    let (bytes, crc) = replay::fingerprint(&a.trace).with_context(|| format!("{}", a.trace.display()))?;
    let trace_path = a.trace.canonicalize().unwrap_or(a.trace.clone());
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
    let name = format!("replay {}", a.trace.display());
    let plan = Plan { phases: vec![Phase { name: "replay".into(), jobs: vec![job] }] };
    let (result, _) = run_cmd::execute(&plan, &a.out, &a.save, "replay", &name, stop)?;
    let fid = fidelity(&plan_r, &result);
    if a.out.output == RunOutput::Json {
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
    let expected = p.expected();
    let total = r.phases.first().map(|ph| ph.total.clone()).unwrap_or_default();
    let replayed_s = r.phases.first().map(|ph| ph.elapsed_s).unwrap_or(0.0);
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
