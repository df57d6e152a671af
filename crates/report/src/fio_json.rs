//! fio's `--output-format=json` (and `json+`) layout from an iolab run, for the dashboards,
//! fio-plot and fio's own scripts that read fio's JSON. Each phase's jobs become `jobs[]`
//! (groupid: the phase, as a stonewall makes a group), each job's threads merged as fio's
//! group_reporting merges clones. iolab times one latency per I/O, issue to completion, which
//! is fio's `lat`; it is given as `lat_ns` and as `clat_ns` (where fio's readers look for
//! percentiles), and `slat_ns` has N 0, as fio's synchronous engines report it. `json+` adds
//! `bins`: each HDR bucket that holds I/Os, keyed by its highest value in ns, with its count.
//! What iolab does not measure (context switches, page faults, the queue depth distribution
//! beyond the configured depth) is given as fio's zero or derived from the job, and docs/json.md
//! says which.

use crate::export::{ExportError, Exporter, Input};
use iolab_model::{ClassTotals, JobResult, OpClass, PhaseResult, RunResult};
use iolab_spec::metadata::MetaOp;
use iolab_spec::{Job, MetadataJob, Workload};
use serde_json::{json, Map, Value};
use std::io::Write;

/// fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// The fio JSON exporter; `plus` adds json+'s `bins`.
pub struct FioJson {
    pub plus: bool,
}

impl Exporter for FioJson {
    fn name(&self) -> &'static str {
        if self.plus {
            "fio-json+"
        } else {
            "fio-json"
        }
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        let run = match input {
            Input::Run(r) => *r,
            Input::Stored([one]) => &one.result,
            Input::Stored(_) => {
                return Err(ExportError::refused("fio's JSON", "several runs: it holds one; export one run at a time"))
            }
            Input::Survey(..) => return Err(ExportError::refused("fio-json", "a survey; export its run")),
            Input::Comparison(_) => return Err(ExportError::refused("fio-json", "a comparison")),
        };
        serde_json::to_writer_pretty(&mut *out, &document(run, self.plus))?;
        Ok(writeln!(out)?)
    }
}

/// The whole document.
pub fn document(run: &RunResult, plus: bool) -> Value {
    let mut jobs = Vec::new();
    for (g, phase) in run.phases.iter().enumerate() {
        let plan_jobs = run.plan.phases.get(g).map(|p| p.jobs.as_slice()).unwrap_or(&[]);
        let threads_in_phase: u32 = phase.jobs.iter().map(|j| j.threads.max(1)).sum::<u32>().max(1);
        for j in &phase.jobs {
            let job = plan_jobs.iter().find(|p| p.name == j.name);
            jobs.push(job_value(phase, j, job, g, threads_in_phase, plus));
        }
    }
    let ts = run.started_unix_s;
    json!({
        "fio version": format!("iolab-{}", run.iolab_version),
        "timestamp": ts as i64,
        "timestamp_ms": (ts * 1000.0) as i64,
        "time": crate::fmt::utc(ts),
        "jobs": jobs,
        "disk_util": disk_util(run),
    })
}

/// The errno an error message names (`... (os error 25)`), as the standard library words it.
fn errno_in(text: &str) -> Option<i32> {
    let (_, rest) = text.rsplit_once("(os error ")?;
    rest.split(')').next()?.parse().ok()
}

fn job_value(
    phase: &PhaseResult,
    j: &JobResult,
    job: Option<&Job>,
    group: usize,
    threads_in_phase: u32,
    plus: bool,
) -> Value {
    let runtime_ms = (j.elapsed_s * 1000.0).round() as u64;
    // iolab's CPU time is the process's over the phase: each job gets its threads' share.
    let share = j.threads.max(1) as f64 / threads_in_phase as f64;
    let cpu_pct = |s: f64| if j.elapsed_s > 0.0 { s * share / j.elapsed_s * 100.0 } else { 0.0 };
    let samples = (phase.jobs.len() == 1).then_some(&phase.timeline[..]);
    let mut v = Map::new();
    v.insert("jobname".into(), json!(j.name));
    v.insert("groupid".into(), json!(group));
    // fio's `error` is the errno that ended the job (25 for a trim of a regular file): the one
    // iolab's message names, else 1.
    v.insert("error".into(), json!(j.error.as_deref().map_or(0, |e| errno_in(e).unwrap_or(1))));
    // fio's continue_on_error figures, given whenever the job goes on after errors: how many
    // and the first one's errno, which fio 3.33 also gives as the job's `error`.
    let goes_on = job.and_then(|j| j.workload.block()).is_some_and(|b| b.on_error.is_some());
    if goes_on || j.io_errors.is_some() {
        let (count, first) = j.io_errors.as_ref().map_or((0, 0), |e| (e.count, e.first.errno));
        v.insert("total_err".into(), json!(count));
        v.insert("first_error".into(), json!(first));
        if j.error.is_none() {
            v.insert("error".into(), json!(first));
        }
    }
    v.insert("eta".into(), json!(0));
    v.insert("elapsed".into(), json!(phase.elapsed_s.round() as u64));
    v.insert("job options".into(), Value::Object(job.map(job_options).unwrap_or_default()));
    // A metadata job's calls are fio's I/Os in the job's one direction (see `meta_calls`).
    let calls = job.and_then(|p| match &p.workload {
        Workload::Metadata(m) => Some((meta_calls(j, m), m.writes)),
        _ => None,
    });
    for (name, class) in [("read", Some(OpClass::Read)), ("write", Some(OpClass::Write)), ("trim", Some(OpClass::Trim))]
    {
        let dir = match (&calls, class) {
            (Some((t, writes)), Some(c)) => {
                let mut d = direction(((c == OpClass::Write) == *writes).then_some(t), runtime_ms, None, class, plus);
                d["lat_ns"] = json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
                d
            }
            _ => direction(class.map(|c| j.total.get(c)), runtime_ms, samples, class, plus),
        };
        v.insert(name.into(), dir);
    }
    let sync = j.total.get(OpClass::Sync);
    let mut sync_lat = latency(sync, true, plus);
    if sync.ops == 0 {
        sync_lat = json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    }
    v.insert("sync".into(), json!({"total_ios": sync.ops, "lat_ns": sync_lat}));
    v.insert("job_runtime".into(), json!(runtime_ms));
    v.insert("usr_cpu".into(), json!(cpu_pct(phase.cpu.user_s)));
    v.insert("sys_cpu".into(), json!(cpu_pct(phase.cpu.system_s)));
    // Not measured by iolab: fio's zero.
    v.insert("ctx".into(), json!(0));
    v.insert("majf".into(), json!(0));
    v.insert("minf".into(), json!(0));
    let depth = job.map(|j| j.iodepth).unwrap_or(1);
    v.insert("iodepth_level".into(), depth_levels(depth));
    v.insert("iodepth_submit".into(), batch_levels());
    v.insert("iodepth_complete".into(), batch_levels());
    let (ns, us, ms) = latency_buckets(j);
    v.insert("latency_ns".into(), ns);
    v.insert("latency_us".into(), us);
    v.insert("latency_ms".into(), ms);
    // A latency target's search: the depth it reached, the target in ns, the window in us.
    match &j.latency_target {
        Some(t) => {
            v.insert("latency_depth".into(), json!(t.depth));
            v.insert("latency_target".into(), json!(t.target_ns));
            v.insert("latency_percentile".into(), json!(t.percentile));
            v.insert("latency_window".into(), json!(t.window_ns / 1000));
        }
        None => {
            v.insert("latency_depth".into(), json!(depth));
            v.insert("latency_target".into(), json!(0));
            v.insert("latency_percentile".into(), json!(100.0));
            v.insert("latency_window".into(), json!(0));
        }
    }
    Value::Object(v)
}

/// A metadata job's calls as fio's metadata engines count them (engines/fileoperations.c; a fio
/// 3.33 run with nrfiles=10, bs=4k showed io_bytes 40960, total_ios 10, clat N 10, lat N 0): each
/// call one I/O of `bs` bytes, its time a completion latency, no total latency.
fn meta_calls(j: &JobResult, m: &MetadataJob) -> ClassTotals {
    let class = match m.op {
        MetaOp::FileCreate => OpClass::Create,
        MetaOp::FileStat | MetaOp::DirStat => OpClass::Stat,
        MetaOp::FileDelete => OpClass::Unlink,
        MetaOp::DirCreate => OpClass::Mkdir,
        MetaOp::DirDelete => OpClass::Rmdir,
    };
    let mut t = j.total.get(class).clone();
    t.bytes = t.ops.saturating_mul(m.io_size.0);
    t.bw_bytes = t.iops * m.io_size.0 as f64;
    t
}

/// One direction: fio's counts, rates, latencies and per-second bandwidth and IOPS samples
/// (from the phase's seconds when the phase has this one job; none otherwise).
fn direction(
    t: Option<&ClassTotals>,
    runtime_ms: u64,
    samples: Option<&[iolab_model::TimelinePoint]>,
    class: Option<OpClass>,
    plus: bool,
) -> Value {
    let empty = ClassTotals::default();
    let t = t.unwrap_or(&empty);
    let runtime = if t.ops > 0 { runtime_ms } else { 0 };
    let mut v = Map::new();
    v.insert("io_bytes".into(), json!(t.bytes));
    v.insert("io_kbytes".into(), json!(t.bytes / 1024));
    v.insert("bw_bytes".into(), json!(t.bw_bytes.round() as u64));
    v.insert("bw".into(), json!((t.bw_bytes / 1024.0).round() as u64));
    v.insert("iops".into(), json!(t.iops));
    v.insert("runtime".into(), json!(runtime));
    v.insert("total_ios".into(), json!(t.ops));
    v.insert("short_ios".into(), json!(0));
    v.insert("drop_ios".into(), json!(0));
    v.insert("slat_ns".into(), json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}));
    v.insert("clat_ns".into(), latency(t, true, plus));
    v.insert("lat_ns".into(), latency(t, false, false));
    // The timeline keeps reads and writes per second; trims have no samples.
    let per_s: Vec<(f64, f64)> = match (samples, class) {
        (Some(s), Some(c @ (OpClass::Read | OpClass::Write))) if t.ops > 0 => s
            .iter()
            .map(|p| match c {
                OpClass::Read => (p.read_bytes as f64 / 1024.0, p.read_ops as f64),
                _ => (p.write_bytes as f64 / 1024.0, p.write_ops as f64),
            })
            .collect(),
        _ => Vec::new(),
    };
    let kib: Vec<f64> = per_s.iter().map(|x| x.0).collect();
    let ops: Vec<f64> = per_s.iter().map(|x| x.1).collect();
    let (bmin, bmax, bmean, bdev) = stats(&kib);
    v.insert("bw_min".into(), json!(bmin.round() as u64));
    v.insert("bw_max".into(), json!(bmax.round() as u64));
    v.insert("bw_agg".into(), json!(if kib.is_empty() { 0.0 } else { 100.0 }));
    v.insert("bw_mean".into(), json!(bmean));
    v.insert("bw_dev".into(), json!(bdev));
    v.insert("bw_samples".into(), json!(kib.len()));
    let (imin, imax, imean, idev) = stats(&ops);
    v.insert("iops_min".into(), json!(imin.round() as u64));
    v.insert("iops_max".into(), json!(imax.round() as u64));
    v.insert("iops_mean".into(), json!(imean));
    v.insert("iops_stddev".into(), json!(idev));
    v.insert("iops_samples".into(), json!(ops.len()));
    Value::Object(v)
}

/// min, max, mean and sample standard deviation (fio's), zeros for no samples.
fn stats(xs: &[f64]) -> (f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, var.sqrt())
}

/// fio's latency object from a class's histogram: with `percentile` (clat), and json+'s `bins`.
fn latency(t: &ClassTotals, percentiles: bool, bins: bool) -> Value {
    let mut v = Map::new();
    let h = t.hist.as_ref().filter(|h| !h.is_empty());
    match h {
        Some(h) => {
            v.insert("min".into(), json!(h.min()));
            v.insert("max".into(), json!(h.max()));
            v.insert("mean".into(), json!(h.mean()));
            v.insert("stddev".into(), json!(h.stdev()));
            v.insert("N".into(), json!(h.len()));
        }
        // A run read back without histograms (cut off mid-phase) keeps its summary figures.
        None => {
            v.insert("min".into(), json!(t.lat_ns.min));
            v.insert("max".into(), json!(t.lat_ns.max));
            v.insert("mean".into(), json!(t.lat_ns.mean as f64));
            v.insert("stddev".into(), json!(0.0));
            v.insert("N".into(), json!(t.ops));
        }
    }
    if percentiles && t.ops > 0 {
        let mut p = Map::new();
        for q in PERCENTILES {
            let val = match h {
                Some(h) => h.value_at_quantile(q / 100.0),
                None => 0,
            };
            p.insert(format!("{q:.6}"), json!(val));
        }
        v.insert("percentile".into(), Value::Object(p));
    }
    if bins {
        if let Some(h) = h {
            let mut b = Map::new();
            for it in h.iter_recorded() {
                b.insert(h.highest_equivalent(it.value_iterated_to()).to_string(), json!(it.count_at_value()));
            }
            v.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(v)
}

/// The job's options under fio's names, as fio echoes them in `job options` (fio-plot reads
/// rw, bs, iodepth and numjobs from there).
fn job_options(j: &Job) -> Map<String, Value> {
    let mut o = Map::new();
    let mut put = |k: &str, v: String| {
        o.insert(k.into(), Value::String(v));
    };
    put("name", j.name.clone());
    put("filename", j.target.display().to_string());
    if let Some(s) = j.size {
        put("size", s.0.to_string());
    }
    put("ioengine", j.engine.to_string());
    put("iodepth", j.iodepth.to_string());
    if j.sqpoll.on {
        put("sqthread_poll", "1".into());
        if let Some(c) = j.sqpoll.cpu {
            put("sqthread_poll_cpu", c.to_string());
        }
    }
    put("numjobs", j.threads.to_string());
    put("direct", if j.direct { "1" } else { "0" }.into());
    if let Some(r) = j.runtime {
        put("runtime", format!("{}ms", r.as_millis()));
        put("time_based", "1".into());
    }
    if !j.ramp.is_zero() {
        put("ramp_time", format!("{}ms", j.ramp.as_millis()));
    }
    put("randseed", j.seed.to_string());
    match &j.workload {
        Workload::Block(b) => {
            put(
                "rw",
                match b.rw {
                    iolab_spec::Rw::ReadWrite => "rw".to_string(),
                    other => other.to_string(),
                },
            );
            if b.rw.is_mixed() {
                put("rwmixread", b.mix.to_string());
            }
            if b.bs.0.len() == 1 {
                put("bs", b.bs.max().0.to_string());
            } else {
                let w: u64 = b.bs.0.iter().map(|x| x.1 as u64).sum::<u64>().max(1);
                let parts: Vec<String> =
                    b.bs.0.iter().map(|(s, wt)| format!("{}/{}", s.0, *wt as u64 * 100 / w)).collect();
                put("bssplit", parts.join(":"));
            }
            if let Some(s) = b.io_size {
                put("io_size", s.0.to_string());
            }
            match b.sync {
                iolab_spec::SyncMode::Fsync => put("fsync", b.fsync_every.to_string()),
                iolab_spec::SyncMode::Fdatasync => put("fdatasync", b.fsync_every.to_string()),
                iolab_spec::SyncMode::Sync => put("sync", "sync".into()),
                iolab_spec::SyncMode::Dsync => put("sync", "dsync".into()),
                iolab_spec::SyncMode::None => {}
            }
            if b.end_fsync {
                put("end_fsync", "1".into());
            }
            if let Some(r) = b.rate {
                put("rate", r.0.to_string());
            }
            if let Some(r) = b.rate_iops {
                put("rate_iops", r.to_string());
            }
            if b.dist != iolab_spec::Dist::Uniform {
                // iolab writes every distribution as fio does (`zipf:1.2`, `zoned:50/5:50/95`).
                put("random_distribution", b.dist.to_string());
            }
        }
        other => put("iolab_workload", other.label()),
    }
    o
}

/// fio's `iodepth_level`: iolab does not sample the depth in flight; the configured depth's
/// bucket holds every I/O (exact for the synchronous engines, an upper bound for io_uring).
fn depth_levels(depth: u32) -> Value {
    let keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let idx = match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    };
    Value::Object(
        keys.iter().enumerate().map(|(i, k)| (k.to_string(), json!(if i == idx { 100.0 } else { 0.0 }))).collect(),
    )
}

/// fio's submit/complete batch buckets: not measured by iolab; the 1-4 bucket, as fio reports
/// a synchronous engine.
fn batch_levels() -> Value {
    let keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    Value::Object(keys.iter().map(|k| (k.to_string(), json!(if *k == "4" { 100.0 } else { 0.0 }))).collect())
}

/// fio's `latency_ns`/`_us`/`_ms`: the share of reads, writes and trims (in %) whose latency falls in
/// each of fio's buckets ("4" holds [2, 4), ">=2000" ms the rest), from the histograms.
fn latency_buckets(j: &JobResult) -> (Value, Value, Value) {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut counts_ns = [0u64; 10];
    let mut counts_us = [0u64; 10];
    let mut counts_ms = [0u64; 12];
    let mut total = 0u64;
    for c in [OpClass::Read, OpClass::Write, OpClass::Trim] {
        let Some(h) = j.total.get(c).hist.as_ref() else { continue };
        for it in h.iter_recorded() {
            let v = h.median_equivalent(it.value_iterated_to());
            let n = it.count_at_value();
            total += n;
            let bucket = |x: u64| EDGES.iter().position(|e| x < *e).unwrap_or(9);
            if v < 1000 {
                counts_ns[bucket(v)] += n;
            } else if v < 1_000_000 {
                counts_us[bucket(v / 1000)] += n;
            } else {
                let ms = v / 1_000_000;
                let i = if ms < 1000 {
                    bucket(ms)
                } else if ms < 2000 {
                    10
                } else {
                    11
                };
                counts_ms[i] += n;
            }
        }
    }
    let pct = |n: u64| if total > 0 { n as f64 * 100.0 / total as f64 } else { 0.0 };
    let obj = |counts: &[u64], extra: &[&str]| -> Value {
        let keys = EDGES.iter().map(|e| e.to_string()).chain(extra.iter().map(|s| s.to_string()));
        Value::Object(keys.zip(counts).map(|(k, n)| (k, json!(pct(*n)))).collect())
    };
    (obj(&counts_ns, &[]), obj(&counts_us, &[]), obj(&counts_ms, &["2000", ">=2000"]))
}

/// fio's `disk_util[]` from the system samples beside each phase: counts are the rates times
/// the phase's window, summed over the phases; util is the windows' weighted mean.
fn disk_util(run: &RunResult) -> Vec<Value> {
    #[derive(Default)]
    struct D {
        r: f64,
        w: f64,
        rm: f64,
        wm: f64,
        rt: f64,
        wt: f64,
        q: f64,
        util_s: f64,
        secs: f64,
    }
    let mut disks: std::collections::BTreeMap<String, D> = Default::default();
    for p in &run.phases {
        let Some(sys) = &p.system else { continue };
        let t = p.elapsed_s;
        for (name, d) in sys.mean.disks.iter() {
            let e = disks.entry(name.clone()).or_default();
            e.r += d.r_s * t;
            e.w += d.w_s * t;
            e.rm += d.rrqm_s * t;
            e.wm += d.wrqm_s * t;
            e.rt += d.r_await_ms * d.r_s * t;
            e.wt += d.w_await_ms * d.w_s * t;
            e.q += d.avgqu * t * 1000.0;
            e.util_s += d.util_pct * t;
            e.secs += t;
        }
    }
    disks
        .into_iter()
        .map(|(name, d)| {
            json!({
                "name": name,
                "read_ios": d.r.round() as u64,
                "write_ios": d.w.round() as u64,
                "read_merges": d.rm.round() as u64,
                "write_merges": d.wm.round() as u64,
                "read_ticks": d.rt.round() as u64,
                "write_ticks": d.wt.round() as u64,
                "in_queue": d.q.round() as u64,
                "util": if d.secs > 0.0 { d.util_s / d.secs } else { 0.0 },
            })
        })
        .collect()
}
