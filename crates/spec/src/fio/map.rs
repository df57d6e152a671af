//! fio's options onto iolab's [`JobPatch`]: each job section starts from the `[global]`
//! options above it, its own options are read in order (so `kb_base` applies to what follows
//! it), and the result becomes one job table. Phases follow `stonewall`; `numjobs` is threads;
//! per-direction values (`bs=4k,64k`) map when the directions the job does agree.

use super::ini::{Opt, Section};
use super::value::{self, KbBase, Region};
use super::{Env, FioError, FioFile, FioJob, FioLogs, FioPhase, JobLogs, Loc, Problem};
use crate::job::{BlockSizes, Dist, EngineKind, Rw, SyncMode};
use crate::patch::JobPatch;
use crate::units::Bytes;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod files;
mod meta;
mod on_error;

/// The options this module reads, after fio's aliases.
fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "io_limit" => "io_size",
        "fileoffset" => "offset",
        "timeout" => "runtime",
        "wait_for_previous" => "stonewall",
        "iodepth_batch" => "iodepth_batch_submit",
        "iodepth_batch_complete" => "iodepth_batch_complete_min",
        "ratemin" => "rate_min",
        "ratecycle" => "rate_cycle",
        k => k,
    }
}

/// A block size as one direction gets it.
#[derive(Debug, Clone, PartialEq)]
enum Bs {
    Fixed(u64),
    Range(u64, u64),
    Split(Vec<(u64, u32)>),
}

type PerDir<T> = [Option<T>; 3];

/// One job's settings as read, each with the line that set it.
#[derive(Default)]
struct Raw {
    name: Option<(String, Loc)>,
    filename: Option<(String, Loc)>,
    directory: Option<(String, Loc)>,
    size: Option<(Region, Loc)>,
    io_size: Option<(Region, Loc)>,
    offset: Option<(Region, Loc)>,
    /// The pattern and its modifier: bytes to move after each block (sequential, may be
    /// negative) or I/Os per random offset (random).
    rw: Option<(Rw, Option<i64>, String, Loc)>,
    mix: Option<(u8, Loc)>,
    bs: Option<(PerDir<Bs>, String, Loc)>,
    bssplit: Option<(PerDir<Bs>, String, Loc)>,
    engine: Option<(String, Loc)>,
    iodepth: Option<(u64, Loc)>,
    /// iodepth_batch_submit, iodepth_batch_complete_min, iodepth_batch_complete_max, iodepth_low.
    batch: [Option<(u64, Loc)>; 4],
    /// io_uring's sqthread_poll and sqthread_poll_cpu.
    sqpoll: Option<(bool, Loc)>,
    sqpoll_cpu: Option<(u32, Loc)>,
    direct: Option<(bool, Loc)>,
    sync: Option<(SyncMode, Loc)>,
    fsync: Option<(SyncMode, u64, Loc)>,
    end_fsync: Option<(bool, Loc)>,
    numjobs: Option<(u64, Loc)>,
    runtime: Option<(Duration, Loc)>,
    time_based: Option<(bool, Loc)>,
    ramp: Option<(Duration, Loc)>,
    rate: Option<(PerDir<u64>, Loc)>,
    rate_iops: Option<(PerDir<u64>, Loc)>,
    // Pacing (crate::pace): floors, the arrival process, the floor's cycle.
    rate_min: Option<(PerDir<u64>, Loc)>,
    rate_iops_min: Option<(PerDir<u64>, Loc)>,
    rate_process: Option<(crate::pace::RateProcess, Loc)>,
    rate_cycle: Option<(Duration, Loc)>,
    // Flow between jobs (crate::flow).
    flow: Option<(u32, Loc)>,
    flow_id: Option<(u32, Loc)>,
    flow_sleep: Option<(Duration, Loc)>,
    // fio's random map: norandommap, and random_generator=lfsr (which needs none).
    norandommap: Option<(bool, Loc)>,
    lfsr: Option<Loc>,
    randrepeat: Option<(bool, Loc)>,
    fadvise: Option<(crate::block::Fadvise, Loc)>,
    // Dedupe (the block job's `dedupe`): percentage, working set (mode, its percentage).
    dedupe: Option<(u8, Loc)>,
    dedupe_working_set: Option<(bool, Loc)>,
    dedupe_set_pct: Option<(u8, Loc)>,
    dedupe_global: Option<(bool, Loc)>,
    // Priorities (crate::prio): prio, prioclass, nice, cmdprio_*, log_prio.
    prio: Option<(u8, Loc)>,
    prioclass: Option<(u8, Loc)>,
    nice: Option<(i8, Loc)>,
    cmdprio_pct: Option<(PerDir<u64>, Loc)>,
    cmdprio_class: Option<(PerDir<u8>, Loc)>,
    cmdprio_level: Option<(PerDir<u8>, Loc)>,
    cmdprio_bssplit: Option<(String, Loc)>,
    dist: Option<(Dist, Loc)>,
    seed: Option<(u64, Loc)>,
    compress: Option<(u8, Loc)>,
    invalidate: Option<(bool, Loc)>,
    stonewall: bool,
    kb: KbBase,
    // fio-syntax: filename templates, percentages and zones.
    filename_format: Option<(String, Loc)>,
    offset_align: Option<(u64, Loc)>,
    zonemode: Option<(String, Loc)>,
    // fio's strided zones (zonemode=strided: finish_zones).
    zonesize: Option<(u64, Loc)>,
    zonerange: Option<(u64, Loc)>,
    zoneskip: Option<(Region, Loc)>,
    // fio-syntax: the verify family and the logs.
    verify: Option<(bool, String, Loc)>,
    do_verify: Option<(bool, Loc)>,
    verify_fatal: Option<(bool, Loc)>,
    // verify_backlog, verify_backlog_batch (fio-errors).
    verify_backlog: [Option<(u64, Loc)>; 2],
    logs: [Option<(String, Loc)>; 3],
    log_avg_msec: Option<(u64, Loc)>,
    // fio's per-I/O logs' columns (crate::io_log).
    log_offset: Option<(bool, Loc)>,
    log_prio: Option<(bool, Loc)>,
    blockalign: Option<(PerDir<u64>, String, Loc)>,
    // Start, think time and counts (issue 27's executor capabilities).
    start_delay: Option<(crate::Delay, Loc)>,
    thinktime: Option<(Duration, Loc)>,
    thinktime_spin: Option<(Duration, Loc)>,
    thinktime_blocks: Option<(u64, Loc)>,
    thinktime_on_issue: Option<(bool, Loc)>,
    thinktime_iotime: Option<(Duration, Loc)>,
    loops: Option<(u64, Loc)>,
    number_ios: Option<(u64, Loc)>,
    exitall: Option<Loc>,
    /// exit_what=all (with exitall anywhere: the run ends with this job).
    exit_what_all: Option<Loc>,
    /// allow_file_create=0: no file is created.
    no_create: Option<Loc>,
    /// latency_target's search (crate::latency_target): target, window, percentile, run.
    lat_target: Option<(Duration, Loc)>,
    lat_window: Option<(Duration, Loc)>,
    lat_pct: Option<(f64, Loc)>,
    lat_run: Option<(bool, Loc)>,
    cpus: Option<(crate::cpus::Cpus, Loc)>,
    numa_nodes: Option<(crate::cpus::Cpus, Loc)>,
    mem_policy: Option<(crate::numa::MemPolicy, Loc)>,
    ss: SsRaw,
    /// Several files per job and job order by name (fio-files).
    files: files::FilesRaw,
    /// continue_on_error and ignore_error (fio-errors).
    on_error: on_error::OnErrorRaw,
}

/// What mapping gathers across the file: notes and unmapped options, each said once.
#[derive(Default)]
struct Said {
    notes: Vec<Problem>,
    unmapped: Vec<Problem>,
    seen: HashSet<(Loc, String)>,
    /// The first of `notes` said while reading the job at hand (the ones before are earlier
    /// jobs').
    job_from: usize,
}

impl Said {
    fn note(&mut self, at: &Loc, text: String) {
        if self.seen.insert((at.clone(), text.clone())) {
            self.notes.push(Problem::new(at.clone(), text));
        }
    }
    fn unmapped(&mut self, at: &Loc, text: String) {
        if self.seen.insert((at.clone(), text.clone())) {
            self.unmapped.push(Problem::new(at.clone(), text));
        }
    }
}

/// Map the sections; `env` tells the size of a file a percentage is of.
pub fn map(path: &Path, sections: &[Section], env: &dyn Env, lenient: bool) -> Result<FioFile, FioError> {
    let mut said = Said::default();
    let mut globals: Vec<&Section> = Vec::new();
    let mut phases: Vec<FioPhase> = Vec::new();
    // The job each phase was opened to wait for (`wait_for`), if any.
    let mut waits: Vec<Option<String>> = Vec::new();
    for s in sections {
        if s.is_global() {
            globals.push(s);
            continue;
        }
        let mut raw = Raw::default();
        said.job_from = said.notes.len();
        for g in globals.iter().copied().chain([s]) {
            read_section(&mut raw, &g.opts, &mut said).map_err(FioError::At)?;
        }
        let stonewall = raw.stonewall;
        let wait_for = raw.files.wait_for.clone();
        let logs = job_logs(&raw, s);
        let mut job = finish(raw, s, env, &mut said).map_err(FioError::At)?;
        job.logs = logs;
        files::place(&mut phases, &mut waits, job, stonewall, wait_for, &mut said).map_err(FioError::At)?;
    }
    if phases.is_empty() {
        let at = sections.first().map(|s| s.at.clone()).unwrap_or(Loc { file: path.to_path_buf(), line: 0 });
        return Err(FioError::At(Problem::new(
            at,
            "no job section: a fio job file needs a [job] beside [global]".into(),
        )));
    }
    name_phases_and_jobs(&mut phases, &mut said);
    let logs = file_logs(&phases, &mut said);
    exit_all(&mut phases);
    if !said.unmapped.is_empty() && !lenient {
        return Err(FioError::Unmapped(said.unmapped));
    }
    Ok(FioFile { path: path.to_path_buf(), phases, notes: said.notes, skipped: said.unmapped, logs })
}

/// A job's logs as fio would name them: the prefix given, or the job's name for a bare
/// `write_bw_log`; the window with it.
fn job_logs(r: &Raw, s: &Section) -> Option<JobLogs> {
    if r.logs.iter().all(Option::is_none) {
        return None;
    }
    let name = r.name.as_ref().map_or(s.name.as_str(), |n| n.0.as_str());
    let prefixes = r.logs.clone().map(|l| l.map(|(p, at)| (if p.is_empty() { name.to_string() } else { p }, at)));
    Some(JobLogs { prefixes, avg: r.log_avg_msec.clone(), offset: r.log_offset.clone(), prio: r.log_prio.clone() })
}

/// The file's logs. Without log_avg_msec fio logs every I/O, and so does iolab: each thread
/// of the jobs that ask writes its own per-I/O log (`crate::io_log`), with the offset and
/// priority columns log_offset and log_prio add. With log_avg_msec iolab writes one averaged
/// log of each kind per phase, its jobs and threads as one (a note), windows of whole seconds.
/// Either way the jobs that ask for a kind must agree on its prefix and window.
fn file_logs(phases: &[FioPhase], said: &mut Said) -> Option<FioLogs> {
    let mut out = FioLogs { avg_msec: 1000, ..Default::default() };
    let mut any = false;
    // The window (0: per I/O) and where it was first set.
    let mut avg: Option<(u64, Loc)> = None;
    for p in phases {
        let with: Vec<&FioJob> = p.jobs.iter().filter(|j| j.logs.is_some()).collect();
        out.logged.extend(p.jobs.iter().map(|j| j.logs.is_some()));
        if with.is_empty() {
            continue;
        }
        let averaged = with.iter().any(|j| j.logs.as_ref().is_some_and(|l| l.avg.as_ref().is_some_and(|a| a.0 > 0)));
        if averaged && (p.jobs.len() > 1 || p.jobs.iter().any(|j| j.patch.threads.unwrap_or(1) > 1)) {
            said.note(&with[0].at, format!("phase `{}`: fio logs each job's threads apart (per_job_logs=1); iolab logs the phase's jobs and threads as one", p.name));
        }
        for j in with {
            let Some(l) = &j.logs else { continue };
            for (slot, prefix) in [&mut out.bw, &mut out.iops, &mut out.lat].into_iter().zip(&l.prefixes) {
                let Some((prefix, at)) = prefix else { continue };
                any = true;
                match slot {
                    Some(have) if have != prefix => said.unmapped(
                        at,
                        format!(
                            "log prefix `{prefix}` beside `{have}`: iolab writes each kind of log under one prefix"
                        ),
                    ),
                    _ => *slot = Some(prefix.clone()),
                }
            }
            let first = || l.prefixes.iter().flatten().next().map(|p| p.1.clone()).unwrap_or_else(|| j.at.clone());
            let (ms, at) = l.avg.clone().unwrap_or_else(|| (0, first()));
            match &avg {
                _ if ms > 0 && ms % 1000 != 0 => said.unmapped(
                    &at,
                    format!("log_avg_msec={ms}: iolab keeps per-second figures; its averaged logs average whole seconds (1000, 2000...), and without log_avg_msec it logs every I/O"),
                ),
                Some((have, _)) if ms != *have => said.unmapped(
                    &at,
                    match ms {
                        0 => format!("no log_avg_msec (every I/O logged) beside log_avg_msec={have}: iolab's logs have one window"),
                        _ => format!("log_avg_msec={ms} beside {}: iolab's logs have one window", if *have == 0 { "logs of every I/O".to_string() } else { have.to_string() }),
                    },
                ),
                Some(_) => {}
                None => avg = Some((ms, at)),
            }
            for (want, set, key) in [(&l.offset, &mut out.offset, "log_offset"), (&l.prio, &mut out.prio, "log_prio")] {
                match want {
                    Some((true, at)) if ms > 0 => said.unmapped(
                        at,
                        format!("{key}=1 with log_avg_msec={ms}: iolab's averaged logs are per-second figures, with no column for each I/O's {}; without log_avg_msec it logs every I/O with it", if key == "log_offset" { "offset" } else { "priority" }),
                    ),
                    Some((true, _)) => *set = true,
                    _ => {}
                }
            }
        }
    }
    if let Some((ms, _)) = avg {
        out.avg_msec = ms;
    }
    any.then_some(out)
}

/// fio's exitall, global once any job sets it: every job's end ends the others of its phase
/// (and, for a job with exit_what=all, the run). Without it exit_what does nothing.
fn exit_all(phases: &mut [FioPhase]) {
    let Some(at) = phases.iter().flat_map(|p| &p.jobs).find_map(|j| j.from.get("exit_all").cloned()) else {
        for j in phases.iter_mut().flat_map(|p| p.jobs.iter_mut()) {
            j.patch.exit_run = None;
            j.from.remove("exit_run");
        }
        return;
    };
    for j in phases.iter_mut().flat_map(|p| p.jobs.iter_mut()) {
        j.patch.exit_all = Some(true);
        j.from.entry("exit_all").or_insert_with(|| at.clone());
    }
}

/// Job names unique within a phase (fio allows repeats; iolab keys results by name) and each
/// phase named after its first job.
fn name_phases_and_jobs(phases: &mut [FioPhase], said: &mut Said) {
    let mut phase_names = HashSet::new();
    for p in phases.iter_mut() {
        let mut names = HashSet::new();
        for j in &mut p.jobs {
            let base = j.patch.name.clone().unwrap_or_default();
            let mut name = base.clone();
            let mut n = 1;
            while !names.insert(name.clone()) {
                n += 1;
                name = format!("{base}-{n}");
            }
            if name != base {
                said.note(&j.at, format!("a second job named `{base}` in this phase is `{name}`"));
            }
            j.patch.name = Some(name);
        }
        let base = p.jobs[0].patch.name.clone().unwrap_or_default();
        let mut name = base.clone();
        let mut n = 1;
        while !phase_names.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        p.name = name;
    }
}

/// One section's options in order, a repeated key's last value winning (as fio's parser
/// stores each in turn), except `kb_base`, which fio sorts first (its option priority), so it
/// applies to the section's sizes above it too (checked with fio 3.33: `size=4k` then
/// `kb_base=1000` is 4000 bytes).
fn read_section(r: &mut Raw, opts: &[Opt], said: &mut Said) -> Result<(), Problem> {
    if let Some(kb) = opts.iter().rev().find(|o| o.key == "kb_base" && o.unset.is_none()) {
        read_option(r, kb, said)?;
    }
    for o in opts {
        match &o.unset {
            // fio 3.33 reads the empty value (and refuses it where a value is needed); the
            // option is not read here, and the job's other options still are.
            Some(why) => said.unmapped(&o.at, why.clone()),
            None => read_option(r, o, said)?,
        }
    }
    Ok(())
}

fn need(o: &Opt) -> Result<&str, Problem> {
    match o.value.as_deref() {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(Problem::new(o.at.clone(), format!("`{}` needs a value ({}=...)", o.key, o.key))),
    }
}

/// Options that take no value or a boolean (`time_based`, `stonewall`): bare means on.
fn flag(o: &Opt) -> Result<bool, Problem> {
    match o.value.as_deref() {
        None => Ok(true),
        Some(v) => value::boolean(v).map_err(|e| bad(o, e)),
    }
}

fn bad(o: &Opt, e: String) -> Problem {
    Problem::new(o.at.clone(), format!("{}: {e}", o.key))
}

fn read_option(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<(), Problem> {
    let at = o.at.clone();
    let kb = r.kb;
    let size = |o: &Opt| -> Result<u64, Problem> { value::size(need(o)?, kb).map_err(|e| bad(o, e)) };
    let region = |o: &Opt| -> Result<Region, Problem> { value::region(need(o)?, kb).map_err(|e| bad(o, e)) };
    let int = |o: &Opt| -> Result<u64, Problem> { value::int(need(o)?).map_err(|e| bad(o, e)) };
    let time = |o: &Opt| -> Result<Duration, Problem> { value::time(need(o)?).map_err(|e| bad(o, e)) };
    let pct = |o: &Opt| -> Result<u8, Problem> {
        let v = int(o)?;
        u8::try_from(v).ok().filter(|v| *v <= 100).ok_or_else(|| bad(o, format!("{v} is not a percentage (0 to 100)")))
    };
    match canonical(&o.key) {
        "name" => r.name = Some((need(o)?.to_string(), at)),
        "description" => {}
        "filename" => r.filename = Some((need(o)?.to_string(), at)),
        "directory" => r.directory = Some((need(o)?.to_string(), at)),
        "size" => r.size = Some((region(o)?, at)),
        "io_size" => r.io_size = Some((region(o)?, at)),
        "offset" => r.offset = Some((region(o)?, at)),
        // fio-syntax: filename templates, a percentage offset's alignment, zones.
        "filename_format" => r.filename_format = Some((need(o)?.to_string(), at)),
        "offset_align" => r.offset_align = Some((size(o)?, at)),
        "zonemode" => {
            let v = need(o)?;
            match v {
                "none" | "strided" | "zbd" => r.zonemode = Some((v.to_string(), at)),
                other => return Err(bad(o, format!("`{other}`: fio's zone modes are none, strided, zbd"))),
            }
        }
        "zonesize" => r.zonesize = Some((size(o)?, at)),
        "zonerange" => r.zonerange = Some((size(o)?, at)),
        "zoneskip" => r.zoneskip = Some((region(o)?, at)),
        "rw" => read_rw(r, o, said)?,
        "rwmixread" => r.mix = Some((pct(o)?, at)),
        "rwmixwrite" => r.mix = Some((100 - pct(o)?, at)),
        "bs" | "bsrange" => read_bs(r, o)?,
        "bssplit" => {
            let v = need(o)?;
            let dirs = per_dir(v, |s| value::split(s, kb).map(Bs::Split)).map_err(|e| bad(o, e))?;
            r.bssplit = Some((dirs, format!("bssplit={v}"), at));
        }
        "ioengine" => r.engine = Some((need(o)?.to_string(), at)),
        "iodepth" => r.iodepth = Some((int(o)?, at)),
        "iodepth_batch_submit" => r.batch[0] = Some((int(o)?, at)),
        "iodepth_batch_complete_min" => r.batch[1] = Some((int(o)?, at)),
        "iodepth_batch_complete_max" => r.batch[2] = Some((int(o)?, at)),
        "iodepth_low" => r.batch[3] = Some((int(o)?, at)),
        "direct" => r.direct = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "buffered" => r.direct = Some((!value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "sync" => {
            let mode = match need(o)? {
                "none" | "0" => SyncMode::None,
                "sync" | "1" => SyncMode::Sync,
                "dsync" => SyncMode::Dsync,
                other => return Err(bad(o, format!("`{other}`: fio's are none (0), sync (1), dsync"))),
            };
            r.sync = Some((mode, at));
        }
        "fsync" | "fdatasync" => {
            let n = int(o)?;
            let mode = if o.key == "fsync" { SyncMode::Fsync } else { SyncMode::Fdatasync };
            if n == 0 {
                if r.fsync.as_ref().is_some_and(|f| f.0 == mode) {
                    r.fsync = None;
                }
            } else {
                r.fsync = Some((mode, n, at));
            }
        }
        "end_fsync" => r.end_fsync = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "invalidate" => r.invalidate = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "numjobs" => {
            let n = int(o)?;
            if n == 0 {
                return Err(bad(o, "0 jobs run nothing".into()));
            }
            r.numjobs = Some((n, at));
        }
        "runtime" => r.runtime = Some((time(o)?, at)),
        "time_based" => r.time_based = Some((flag(o)?, at)),
        "ramp_time" => r.ramp = Some((time(o)?, at)),
        "steadystate"
        | "ss"
        | "steadystate_duration"
        | "ss_dur"
        | "steadystate_ramp_time"
        | "ss_ramp"
        | "steadystate_check_interval"
        | "ss_interval" => read_ss(&mut r.ss, o)?,
        "rate" | "rate_iops" | "rate_min" | "rate_iops_min" => read_rate(r, o)?,
        "rate_process" => r.rate_process = Some((need(o)?.parse().map_err(|e| bad(o, e))?, at)),
        "rate_cycle" => {
            let ms = int(o)?;
            if ms == 0 {
                return Err(bad(o, "a cycle of 0 ms measures nothing".into()));
            }
            r.rate_cycle = Some((Duration::from_millis(ms), at));
        }
        "random_distribution" => read_dist(r, o, said)?,
        "randseed" => r.seed = Some((int(o)?, at)),
        "buffer_compress_percentage" => r.compress = Some((pct(o)?, at)),
        "stonewall" => r.stonewall = flag(o)?,
        // Reporting groups: iolab reports each job (its threads merged) as fio does under
        // group_reporting, so these change nothing.
        "new_group" | "group_reporting" => {
            flag(o)?;
        }
        // fio 3.33 with gtod_reduce=1 reports no latency (clat and lat N 0); iolab measures
        // every I/O as always.
        "gtod_reduce" => {
            if flag(o)? {
                said.note(&at, "gtod_reduce: fio then measures no latency; iolab measures each I/O's as always".into());
            }
        }
        // fio registers its tiobench profile's `threads` for every job; it has no effect
        // without profile=tiobench (fio 3.33 ran one job for threads=3).
        "threads" => {
            need(o)?;
            said.note(&at, "threads: fio's tiobench profile option, which changes nothing in a job of its own (numjobs sets the threads)".into());
        }
        // iolab's workers are always threads.
        "thread" => {
            flag(o)?;
        }
        // fio keeps a random map unless norandommap: iolab's `random_map`.
        "norandommap" => r.norandommap = Some((flag(o)?, at)),
        // iolab's offsets repeat from the seed, as fio's do under randrepeat=1 (its default).
        "randrepeat" => r.randrepeat = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "kb_base" => {
            r.kb = match need(o)? {
                "1024" => KbBase(1024),
                "1000" => KbBase(1000),
                other => return Err(bad(o, format!("`{other}`: kb_base is 1024 or 1000"))),
            }
        }
        _ => {
            if !read_verify_or_log(r, o, said)?
                && !read_capability(r, o, said)?
                && !read_data(r, o, said)?
                && !files::read(&mut r.files, o, kb, said)?
                && !on_error::read(&mut r.on_error, o)?
            {
                said.unmapped(&at, format!("`{}` is not an option iolab maps", o.key));
            }
        }
    }
    Ok(())
}

/// What fio puts in its buffers and tells the kernel: dedupe and the fadvise hint (`Ok(false)`:
/// not one of them).
fn read_data(r: &mut Raw, o: &Opt, _said: &mut Said) -> Result<bool, Problem> {
    let at = o.at.clone();
    let pct = |o: &Opt| -> Result<u8, Problem> {
        let v = value::int(need(o)?).map_err(|e| bad(o, e))?;
        u8::try_from(v).ok().filter(|v| *v <= 100).ok_or_else(|| bad(o, format!("{v} is not a percentage (0 to 100)")))
    };
    match canonical(&o.key) {
        "dedupe_percentage" => r.dedupe = Some((pct(o)?, at)),
        "fadvise_hint" => {
            use crate::block::Fadvise;
            let h = match need(o)? {
                "0" | "false" | "no" => Fadvise::None,
                "1" | "true" | "yes" => Fadvise::Pattern,
                "random" => Fadvise::Random,
                "sequential" => Fadvise::Sequential,
                other => return Err(bad(o, format!("`{other}`: fio's hints are 0, 1, sequential and random"))),
            };
            r.fadvise = Some((h, at));
        }
        "dedupe_mode" => {
            let ws = match need(o)? {
                "repeat" => false,
                "working_set" => true,
                other => {
                    return Err(bad(
                        o,
                        format!("`{other}`: fio's dedupe modes are repeat (the default) and working_set"),
                    ))
                }
            };
            r.dedupe_working_set = Some((ws, at));
        }
        "dedupe_working_set_percentage" => r.dedupe_set_pct = Some((pct(o)?, at)),
        "dedupe_global" => r.dedupe_global = Some((flag(o)?, at)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// fio's verify family and its logs (`Ok(false)`: not one of them).
fn read_verify_or_log(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<bool, Problem> {
    let at = o.at.clone();
    let kb = r.kb;
    let int = |o: &Opt| -> Result<u64, Problem> { value::int(need(o)?).map_err(|e| bad(o, e)) };
    match canonical(&o.key) {
        "verify" => {
            let v = need(o)?;
            let on = match v {
                "0" | "null" => false,
                "md5" | "crc64" | "crc32c" | "crc32c-intel" | "crc32" | "crc16" | "crc7" | "xxhash" | "sha512"
                | "sha256" | "sha1" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "meta" | "pattern" => true,
                other => return Err(bad(o, format!("`{other}`: fio's are md5, crc64, crc32c, crc32c-intel, crc32, crc16, crc7, xxhash, sha1, sha256, sha512, sha3-224...512, meta, pattern, null"))),
            };
            r.verify = Some((on, v.to_string(), at));
        }
        "do_verify" => r.do_verify = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        "verify_fatal" => r.verify_fatal = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        // How fio checks, where iolab's stamp does the same or more: said, not mapped further.
        "verify_async" | "verify_interval" | "verify_offset" | "verify_pattern" | "verify_dump"
        | "verify_state_save" | "verify_async_cpus" => {
            need(o)?;
            said.note(&at, format!("{}: {}", o.key, verify_detail(&o.key)));
        }
        "verify_backlog" => r.verify_backlog[0] = Some((int(o)?, at)),
        "verify_backlog_batch" => r.verify_backlog[1] = Some((int(o)?, at)),
        "verify_only" => said.unmapped(
            &at,
            "verify_only: iolab checks an earlier run's files with `iolab verify --journal DIR` (that run's --journal)"
                .into(),
        ),
        "verify_state_load" => said.unmapped(
            &at,
            "verify_state_load: iolab's equivalent is the journal (`--journal DIR`, then `iolab verify --journal DIR`)"
                .into(),
        ),
        "write_bw_log" | "write_iops_log" | "write_lat_log" => {
            let i = match o.key.as_str() {
                "write_bw_log" => 0,
                "write_iops_log" => 1,
                _ => 2,
            };
            // Bare, fio names the log after the job.
            r.logs[i] = Some((o.value.clone().unwrap_or_default().trim().to_string(), at));
        }
        "log_avg_msec" => r.log_avg_msec = Some((int(o)?, at)),
        "log_offset" => r.log_offset = Some((flag(o)?, at)),
        "blockalign" | "ba" => {
            let v = need(o)?;
            let dirs = per_dir(v, |s| value::size(s, kb)).map_err(|e| bad(o, e))?;
            r.blockalign = Some((dirs, format!("{}={v}", o.key), at));
        }
        "per_job_logs" => {
            flag(o)?;
            said.note(&at, "per_job_logs: iolab writes one log per phase, its jobs and threads together".into());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Start delays, think time, counts, job ends, submission and CPUs: the executor's
/// capabilities fio's options map onto (`Ok(false)`: not one of them).
fn read_capability(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<bool, Problem> {
    let at = o.at.clone();
    let int = |o: &Opt| -> Result<u64, Problem> { value::int(need(o)?).map_err(|e| bad(o, e)) };
    let time = |o: &Opt| -> Result<Duration, Problem> { value::time(need(o)?).map_err(|e| bad(o, e)) };
    match canonical(&o.key) {
        // Start, think time and counts (issue 27's executor capabilities).
        "startdelay" => r.start_delay = Some((start_delay(need(o)?).map_err(|e| bad(o, e))?, at)),
        "thinktime" => r.thinktime = Some((micros(need(o)?).map_err(|e| bad(o, e))?, at)),
        "thinktime_spin" => r.thinktime_spin = Some((micros(need(o)?).map_err(|e| bad(o, e))?, at)),
        "thinktime_blocks" => r.thinktime_blocks = Some((int(o)?, at)),
        "thinktime_blocks_type" => {
            let on_issue = match need(o)? {
                "complete" => false,
                "issue" => true,
                other => return Err(bad(o, format!("`{other}`: fio's are complete (the default) and issue"))),
            };
            r.thinktime_on_issue = Some((on_issue, at));
        }
        "thinktime_iotime" => r.thinktime_iotime = Some((time(o)?, at)),
        "loops" => r.loops = Some((int(o)?, at)),
        "number_ios" => r.number_ios = Some((int(o)?, at)),
        // io_uring's submission-queue polling thread and its CPU.
        "sqthread_poll" => r.sqpoll = Some((flag(o)?, at)),
        "sqthread_poll_cpu" => {
            let cpu = int(o)?;
            r.sqpoll_cpu = Some((u32::try_from(cpu).map_err(|_| bad(o, format!("{cpu} is not a CPU number")))?, at));
        }
        // fio's exitall is global: once any job sets it, every job's end ends its group.
        "exitall" => {
            if flag(o)? {
                r.exitall = Some(at);
            }
        }
        "random_generator" => match need(o)? {
            "tausworthe" | "tausworthe64" => said.note(&at, format!("random_generator={}: iolab draws random offsets with xoshiro256++ seeded by randseed: the same distribution, another sequence", need(o)?)),
            "lfsr" => r.lfsr = Some(at),
            other => return Err(bad(o, format!("`{other}`: fio's are tausworthe, lfsr and tausworthe64"))),
        },
        "flow" | "flow_id" => {
            let v = need(o)?;
            // fio reads flow as a signed weight; a negative one is no weight iolab takes.
            let n = v.parse::<u32>().map_err(|_| bad(o, format!("`{v}` is not a whole number from 0 up")))?;
            if o.key == "flow" {
                r.flow = Some((n, at));
            } else {
                r.flow_id = Some((n, at));
            }
        }
        "flow_sleep" => r.flow_sleep = Some((micros(need(o)?).map_err(|e| bad(o, e))?, at)),
        "prio" => r.prio = Some((crate::prio::IoPrio::level_of(need(o)?).map_err(|e| bad(o, e))?, at)),
        "prioclass" => r.prioclass = Some((crate::prio::IoPrio::class_of(need(o)?).map_err(|e| bad(o, e))?, at)),
        "nice" => {
            let v = need(o)?;
            let n = v.parse::<i8>().ok().filter(|n| (-20..=19).contains(n));
            r.nice = Some((n.ok_or_else(|| bad(o, format!("`{v}`: a nice value is -20 to 19")))?, at));
        }
        "cmdprio_percentage" => {
            let d = per_dir(need(o)?, |s| value::int(s).and_then(|p| if p <= 100 { Ok(p) } else { Err(format!("{p} is not a percentage (0 to 100)")) }));
            r.cmdprio_pct = Some((d.map_err(|e| bad(o, e))?, at));
        }
        "cmdprio_class" => r.cmdprio_class = Some((per_dir(need(o)?, crate::prio::IoPrio::class_of).map_err(|e| bad(o, e))?, at)),
        "cmdprio" => r.cmdprio_level = Some((per_dir(need(o)?, crate::prio::IoPrio::level_of).map_err(|e| bad(o, e))?, at)),
        "cmdprio_bssplit" => r.cmdprio_bssplit = Some((need(o)?.to_string(), at)),
        // fio's per-I/O logs then hold each I/O's priority value (file_logs).
        "log_prio" => r.log_prio = Some((flag(o)?, at)),
        // The queue-depth search (crate::latency_target); times in microseconds without a unit.
        "latency_target" => r.lat_target = Some((micros(need(o)?).map_err(|e| bad(o, e))?, at)),
        "latency_window" => r.lat_window = Some((micros(need(o)?).map_err(|e| bad(o, e))?, at)),
        "latency_percentile" => {
            let v = need(o)?;
            let p = v.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p));
            r.lat_pct = Some((p.ok_or_else(|| bad(o, format!("`{v}` is not a percentile from 0 to 100 (99.9)")))?, at));
        }
        "latency_run" => r.lat_run = Some((flag(o)?, at)),
        "cpus_allowed" => r.cpus = Some((need(o)?.parse().map_err(|e| bad(o, e))?, at)),
        // fio parses both against the machine (libnuma) as it reads the file; iolab reads the
        // nodes' CPUs when the job starts, so a file converts anywhere and runs where its
        // nodes are.
        "numa_cpu_nodes" => {
            let v = need(o)?;
            let nodes = crate::numa::parse_nodes(v).map_err(|e| bad(o, e))?;
            r.numa_nodes = Some((nodes, at));
        }
        "numa_mem_policy" => r.mem_policy = Some((need(o)?.parse().map_err(|e| bad(o, e))?, at)),
        "cpumask" => {
            let v = need(o)?;
            let mask = value::int(v).ok().and_then(crate::cpus::Cpus::from_mask);
            r.cpus = Some((mask.ok_or_else(|| bad(o, format!("`{v}` is not a mask of CPUs 0-63 (0x3 is CPUs 0 and 1)")))?, at));
        }
        "cpus_allowed_policy" => {
            if need(o)? != "shared" {
                said.unmapped(&at, format!("cpus_allowed_policy={}: iolab runs every thread of a job on the whole set (fio's shared)", need(o)?));
            }
        }
        "io_submit_mode" => match need(o)? {
            "inline" => {}
            "offload" => said.note(&at, "io_submit_mode=offload: iolab's job threads submit and reap their own I/O; a paced job's latency runs from each I/O's due instant, the coordinated omission offload is there to avoid".into()),
            other => return Err(bad(o, format!("`{other}`: fio's are inline (the default) and offload"))),
        },
        // group and stonewall: the phase's jobs (the same in iolab, where one phase runs at a
        // time); all: the run's, later phases included.
        "allow_file_create" => r.no_create = if flag(o)? { None } else { Some(at) },
        "exit_what" => match need(o)? {
            "group" | "stonewall" => r.exit_what_all = None,
            "all" => r.exit_what_all = Some(at),
            other => return Err(bad(o, format!("`{other}`: fio's are group (the default), stonewall and all"))),
        },
        _ => return Ok(false),
    }
    Ok(true)
}

/// A seed no earlier reading of the file had: the process's random hash keys and the time.
fn fresh_seed() -> u64 {
    use std::hash::BuildHasher;
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    std::collections::hash_map::RandomState::new().hash_one(t)
}

/// What iolab does where fio's verify options tune how fio checks.
fn verify_detail(key: &str) -> &'static str {
    match key {
        "verify_async" | "verify_async_cpus" => "iolab checks in the thread that did the I/O",
        "verify_interval" | "verify_offset" => "iolab stamps and checks every 512-byte sector, its header first",
        "verify_pattern" => "iolab writes its own stamp (offset, file, key, writer, time, CRC-32Cs) and a pattern derived from them, not this one",
        "verify_dump" => "iolab reports each bad block (file, offset, first bad sector, expected and found key) rather than dumping it",
        _ => "fio's verify state files have iolab's journal (--journal DIR) as their equivalent; none is kept",
    }
}

/// A time that is in microseconds without a unit (fio's thinktime, thinktime_spin).
fn micros(v: &str) -> Result<Duration, String> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return value::time(&format!("{v}us"));
    }
    value::time(v)
}

/// fio's `startdelay=irange(time)`: a time (seconds without a unit) or a range `LOW-HIGH`,
/// each clone drawing its own from the range.
fn start_delay(v: &str) -> Result<crate::Delay, String> {
    let (low, high) = match v.split_once('-') {
        Some((a, b)) => (value::time(a)?, value::time(b)?),
        None => {
            let d = value::time(v)?;
            (d, d)
        }
    };
    if high < low {
        return Err(format!("`{v}`: the range's high end is below its low end"));
    }
    if high > crate::delay::MAX_DELAY {
        return Err(format!("`{v}`: iolab takes a start delay of at most a day"));
    }
    Ok(crate::Delay { low, high })
}

/// `rw=PATTERN[:MODIFIER]`: fio's patterns (all but randtrimwrite).
fn read_rw(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<(), Problem> {
    let (at, kb) = (o.at.clone(), r.kb);
    let v = need(o)?;
    let (word, modifier) = match v.split_once(':') {
        Some((w, m)) => (w.trim(), Some(m.trim())),
        None => (v, None),
    };
    let rw = match word {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            "randtrimwrite" => {
                said.unmapped(&at, format!("{}={v}: iolab's trimwrite is sequential (use trimwrite)", o.key));
                return Ok(());
            }
            other => return Err(bad(o, format!("unknown pattern `{other}`; fio's are read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite"))),
        };
    // options.c str_rw_cb: after a random pattern fio takes a count (atoi), after a sequential
    // one a signed size (str_to_decimal).
    let modifier = match modifier {
        None => None,
        Some(m) if rw.is_random() => Some(m.parse::<u32>().map(i64::from).map_err(|_| {
            bad(o, format!("`{m}`: after a random pattern fio takes a whole number of I/Os per random offset (it reads only the digits before anything else: `4k` is 4)"))
        })?),
        Some(m) => {
            let (neg, digits) = match m.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, m.strip_prefix('+').unwrap_or(m)),
            };
            let n = value::size(digits, kb).map_err(|e| bad(o, e))?;
            let n = i64::try_from(n).map_err(|_| bad(o, format!("`{m}` is too large")))?;
            Some(if neg { -n } else { n })
        }
    };
    r.rw = Some((rw, modifier, v.to_string(), at));
    Ok(())
}

/// `bs` and `bsrange`, per direction.
fn read_bs(r: &mut Raw, o: &Opt) -> Result<(), Problem> {
    let (at, kb) = (o.at.clone(), r.kb);
    let v = need(o)?;
    let range = canonical(&o.key) == "bsrange";
    let dirs = per_dir(v, |s| {
        if range {
            value::range(s, kb).map(|(a, b)| if a == b { Bs::Fixed(a) } else { Bs::Range(a, b) })
        } else {
            value::size(s, kb).map(Bs::Fixed)
        }
    })
    .map_err(|e| bad(o, e))?;
    if dirs.iter().flatten().any(|b| matches!(b, Bs::Fixed(0) | Bs::Range(0, _))) {
        return Err(bad(o, "a block size must be above 0".into()));
    }
    r.bs = Some((dirs, format!("{}={v}", o.key), at));
    Ok(())
}

/// `rate` and `rate_iops`, per direction (0: no rate).
fn read_rate(r: &mut Raw, o: &Opt) -> Result<(), Problem> {
    let (at, kb) = (o.at.clone(), r.kb);
    let v = need(o)?;
    let key = canonical(&o.key);
    let iops = key.starts_with("rate_iops");
    let dirs = per_dir(v, |s| if iops { value::int(s) } else { value::size(s, kb) }).map_err(|e| bad(o, e))?;
    let dirs = Some((dirs.map(|d| d.filter(|v| *v > 0)), at));
    match key {
        "rate_iops" => r.rate_iops = dirs,
        "rate_min" => r.rate_min = dirs,
        "rate_iops_min" => r.rate_iops_min = dirs,
        _ => r.rate = dirs,
    }
    Ok(())
}

/// `random_distribution`: random (uniform), zipf:THETA, pareto:H, normal:DEV, zoned and
/// zoned_abs (one set of zones for every direction; fio's optional center is not mapped).
fn read_dist(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<(), Problem> {
    let at = o.at.clone();
    let v = need(o)?;
    let kb = r.kb;
    let dist = match v.split_once(':') {
        None if v == "random" => Dist::Uniform,
        Some((name @ ("zipf" | "pareto" | "normal"), x)) if !x.contains([':', ',']) => {
            format!("{name}:{x}").parse().map_err(|e: String| bad(o, e))?
        }
        Some(("zoned", z)) if !z.contains(',') => Dist::zoned(v, z, false, |_| Ok(0)).map_err(|e| bad(o, e))?,
        Some(("zoned_abs", z)) if !z.contains(',') => {
            Dist::zoned(v, z, true, |t| value::size(t, kb)).map_err(|e| bad(o, e))?
        }
        _ => {
            said.unmapped(
                &at,
                format!(
                    "random_distribution={v}: iolab maps random, zipf:THETA, pareto:H, normal:DEV, zoned and \
                     zoned_abs, without a center and with one set of zones for all directions"
                ),
            );
            return Ok(());
        }
    };
    r.dist = Some((dist, at));
    Ok(())
}

/// A per-direction value (`8k,32k`) read with `f`; empty entries stay `None` (fio's default).
fn per_dir<T>(v: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<PerDir<T>, String> {
    let [a, b, c] = value::per_direction(v);
    Ok([a.map(|s| f(&s)).transpose()?, b.map(|s| f(&s)).transpose()?, c.map(|s| f(&s)).transpose()?])
}

/// fio's choice of a size in a range: minbs + maxbs × U[0,1), rounded down to a multiple of
/// minbs, capped at maxbs (io_u.c, get_next_buflen). Each candidate's weight is the length of
/// the interval that lands on it.
fn range_sizes(lo: u64, hi: u64) -> Option<Vec<(u64, u64)>> {
    const MAX_SIZES: u64 = 256;
    if hi / lo > MAX_SIZES {
        return None;
    }
    let (start, end) = (lo, lo + hi);
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut v = lo;
    while v < end {
        let len = (v + lo).min(end) - v.max(start);
        let size = v.min(hi);
        match out.last_mut() {
            Some(last) if last.0 == size => last.1 += len,
            _ => out.push((size, len)),
        }
        v += lo;
    }
    Some(out)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn block_sizes(bs: &Bs) -> Option<BlockSizes> {
    match bs {
        Bs::Fixed(b) => Some(BlockSizes::single(Bytes(*b))),
        Bs::Range(lo, hi) => {
            let list = range_sizes(*lo, *hi)?;
            let g = list.iter().fold(0, |g, x| gcd(g, x.1)).max(1);
            Some(BlockSizes(list.into_iter().map(|(b, w)| (Bytes(b), (w / g) as u32)).collect()))
        }
        Bs::Split(list) => Some(BlockSizes(list.iter().map(|(b, p)| (Bytes(*b), *p)).collect())),
    }
}

/// The block sizes of the directions `rw` uses: the one list, or on a mixed job whose reads
/// and writes differ, the reads' and the writes' (`write_bs`).
fn job_bs(r: &Raw, rw: Rw, said: &mut Said) -> Option<(BlockSizes, Option<BlockSizes>, Loc)> {
    let source = r.bssplit.as_ref().or(r.bs.as_ref())?;
    let (dirs, text, at) = source;
    let default = Bs::Fixed(4096);
    // A trim job's sizes are the third of the list (fio's trims'); trimwrite writes each block
    // at its trim's size.
    if rw == Rw::TrimWrite && dirs[1] != dirs[2] {
        said.unmapped(
            at,
            format!("{text}: trimwrite's writes are not the trims' size; iolab writes each block at its trim's"),
        );
    }
    let used: Vec<&Bs> = [(0, rw.reads()), (1, rw.writes() && !rw.trims()), (2, rw.trims())]
        .into_iter()
        .filter(|(_, u)| *u)
        .map(|(i, _)| dirs[i].as_ref().unwrap_or(&default))
        .collect();
    let lists: Option<Vec<BlockSizes>> = used.iter().map(|b| block_sizes(b)).collect();
    let Some(mut lists) = lists else {
        said.unmapped(at, format!("{text}: more than 256 sizes in the range; not mapped"));
        return None;
    };
    let write = (lists.len() == 2 && lists[0] != lists[1]).then(|| lists.remove(1));
    Some((lists.swap_remove(0), write, at.clone()))
}

/// A per-direction rate for the directions `rw` uses: one value for a one-direction job (a
/// mixed job's go to [`mixed_rates`]).
fn job_rate(rates: &Option<(PerDir<u64>, Loc)>, rw: Rw) -> Option<(u64, Loc)> {
    let (dirs, at) = rates.as_ref()?;
    if rw.is_mixed() {
        return None;
    }
    // fio keeps a rate per direction: reads, writes, trims (trimwrite's writes pace it).
    let v = if rw.reads() {
        dirs[0]
    } else if matches!(rw, Rw::Trim | Rw::RandTrim) {
        dirs[2]
    } else {
        dirs[1]
    }?;
    Some((v, at.clone()))
}

/// A mixed job's rates: fio caps reads and writes each (`rate=1m` caps both at 1 MiB/s,
/// `rate=,500k` writes alone), iolab's `--read-rate` and `--write-rate` (and their IOPS forms).
/// Where a direction has both, fio takes the bandwidth (backend.c, setup_rate).
fn mixed_rates(r: &Raw, threads: u64, o: &mut Out, said: &mut Said) {
    let per = |v: u64| v.saturating_mul(threads);
    for (i, word) in [(0, "reads"), (1, "writes")] {
        let bytes = r.rate.as_ref().and_then(|(d, at)| d[i].map(|v| (v, at)));
        let iops = r.rate_iops.as_ref().and_then(|(d, at)| d[i].map(|v| (v, at)));
        if let (Some(_), Some((_, at))) = (bytes, iops) {
            said.note(at, format!("rate_iops for {word}: fio paces by the bandwidth (rate) when a direction has both"));
        }
        match (bytes, iops) {
            (Some((v, at)), _) => {
                o.set(if i == 0 { "read_rate" } else { "write_rate" }, at);
                *(if i == 0 { &mut o.p.read_rate } else { &mut o.p.write_rate }) = Some(Bytes(per(v)));
            }
            (None, Some((v, at))) => {
                o.set(if i == 0 { "read_rate_iops" } else { "write_rate_iops" }, at);
                *(if i == 0 { &mut o.p.read_rate_iops } else { &mut o.p.write_rate_iops }) = Some(per(v));
            }
            (None, None) => {}
        }
    }
}

/// fio's flow, flow_id and flow_sleep (only with a weight, as fio ignores the others without).
fn job_flow(r: &Raw, o: &mut Out) {
    let Some((w, at)) = r.flow.as_ref().filter(|f| f.0 > 0) else { return };
    o.set("flow", at);
    o.p.flow = Some(*w);
    if let Some((id, at)) = &r.flow_id {
        o.set("flow_id", at);
        o.p.flow_id = Some(*id);
    }
    if let Some((t, at)) = r.flow_sleep.as_ref().filter(|t| !t.0.is_zero()) {
        o.set("flow_sleep", at);
        o.p.flow_sleep = Some(*t);
    }
}

/// fio's rate_min and rate_iops_min (per clone, for each direction the job does) onto iolab's
/// `--rate-min` (the job's, each direction it does), when the directions agree.
fn job_floor(r: &Raw, rw: Rw, threads: u64, o: &mut Out, said: &mut Said) {
    for (floor, iops) in [(&r.rate_min, false), (&r.rate_iops_min, true)] {
        let Some((dirs, at)) = floor else { continue };
        let used: Vec<Option<u64>> =
            [(0, rw.reads()), (1, rw.writes())].iter().filter(|d| d.1).map(|d| dirs[d.0]).collect();
        let Some(v) = used[0] else {
            if used.iter().any(Option::is_some) {
                said.unmapped(
                    at,
                    "a floor for one direction of a mixed job: iolab's --rate-min holds each direction the job does"
                        .into(),
                );
            }
            continue;
        };
        if used.iter().any(|u| *u != Some(v)) {
            said.unmapped(
                at,
                "different floors for reads and writes: iolab's --rate-min holds each direction to one".into(),
            );
            continue;
        }
        let key = if iops { "rate_min_iops" } else { "rate_min" };
        o.set(key, at);
        if iops {
            o.p.rate_min_iops = Some(v.saturating_mul(threads));
        } else {
            o.p.rate_min = Some(Bytes(v.saturating_mul(threads)));
        }
        if threads > 1 {
            said.note(
                at,
                format!(
                    "{key} is per job in fio: iolab holds each of the {threads} threads to its share of {}",
                    v.saturating_mul(threads)
                ),
            );
        }
    }
    if let Some((p, at)) = &r.rate_process {
        o.set("rate_process", at);
        o.p.rate_process = Some(*p);
    }
    if let Some((c, at)) = &r.rate_cycle {
        if o.p.rate_min.is_some() || o.p.rate_min_iops.is_some() {
            o.set("rate_cycle", at);
            o.p.rate_cycle = Some(*c);
        } else {
            said.note(at, "rate_cycle without rate_min: fio 3.33 uses the cycle only to judge rate_min; iolab paces each I/O by its schedule, as fio does".into());
        }
    }
}

/// The patch a section becomes, and where each of its options was set.
struct Out {
    p: JobPatch,
    from: BTreeMap<&'static str, Loc>,
}

impl Out {
    fn set(&mut self, field: &'static str, at: &Loc) {
        self.from.insert(field, at.clone());
    }
}

fn finish(mut r: Raw, s: &Section, env: &dyn Env, said: &mut Said) -> Result<FioJob, Problem> {
    if let Some(op) = meta::engine(&r) {
        let (name, _) = r.name.clone().unwrap_or((s.name.clone(), s.at.clone()));
        return meta::finish(&r, op, &s.at, name, said);
    }
    let mut o = Out { p: JobPatch::default(), from: BTreeMap::new() };
    finish_where(&mut r, s, env, &mut o, said)?;
    let rw = finish_pattern(&r, &mut o, said);
    finish_zones(&r, &mut o, said)?;
    files::finish(&r, rw, &mut o, said);
    let threads = finish_engine(&r, rw, &mut o, said);
    finish_durability(&r, &mut o, said);
    finish_verify(&r, rw, &mut o, said);
    on_error::finish(&r.on_error, &mut o, said);
    files::finish_place(&r, rw, &mut o, said);
    finish_time(&r, rw, threads, &mut o, said);
    finish_ss(&r.ss, &mut o, said);
    if let Some((d, at)) = &r.dist {
        o.set("dist", at);
        o.p.dist = Some(d.clone());
    }
    finish_random_map(&r, rw, &mut o, said);
    finish_prio(&r, &mut o).map_err(|(at, m)| Problem::new(at, m))?;
    // fio advises the kernel of the pattern unless fadvise_hint=0 (its default is 1): RANDOM
    // turns readahead off, so buffered random reads miss as fio's do.
    match &r.fadvise {
        Some((h, at)) => {
            o.set("fadvise", at);
            o.p.fadvise = Some(*h);
        }
        None => o.p.fadvise = Some(crate::block::Fadvise::Pattern),
    }
    // fio's dedupe_percentage (0: none), its working set 5% unless given.
    if let Some((p, at)) = r.dedupe.as_ref().filter(|d| d.0 > 0) {
        o.set("dedupe", at);
        o.p.dedupe = Some(*p);
        if let Some((true, at)) = &r.dedupe_working_set {
            o.set("dedupe_set", at);
            o.p.dedupe_set = Some(r.dedupe_set_pct.as_ref().map_or(5, |s| s.0).max(1));
            // Shared by the jobs that set it; fio ignores it outside working_set mode.
            if let Some((true, at)) = &r.dedupe_global {
                o.set("dedupe_global", at);
                o.p.dedupe_global = Some(true);
            }
        }
    }
    if let Some((v, at)) = &r.seed {
        o.set("seed", at);
        o.p.seed = Some(*v);
    } else if let Some((false, at)) = &r.randrepeat {
        // fio seeds from the time at each run; iolab draws a seed each time it reads the file
        // (and a run keeps it in its stored plan).
        o.set("seed", at);
        o.p.seed = Some(fresh_seed());
        said.note(at, "randrepeat=0: a new seed each time the file is read, as fio seeds each run anew (`iolab convert` writes the one it drew; a run keeps its own in its stored plan)".into());
    }
    if let Some((v, at)) = &r.start_delay {
        o.set("start_delay", at);
        o.p.start_delay = Some(*v);
        if r.ramp.as_ref().is_some_and(|(t, _)| !t.is_zero()) {
            said.note(at, "startdelay with ramp_time: fio ramps each job from its own start; iolab's ramp is the phase's, from the phase's start, and a job delayed past it is measured from its start".into());
        }
    }
    finish_counts(&r, &mut o);
    if let Some((c, at)) = &r.cpus {
        o.set("cpus", at);
        o.p.cpus = Some(c.clone());
    }
    if let Some((n, at)) = &r.numa_nodes {
        o.set("numa_nodes", at);
        o.p.numa_nodes = Some(n.clone());
    }
    if let Some((m, at)) = &r.mem_policy {
        o.set("mem_policy", at);
        o.p.mem_policy = Some(m.clone());
    }
    if let Some(at) = &r.exitall {
        o.set("exit_all", at);
        o.p.exit_all = Some(true);
    }
    if let Some(at) = &r.no_create {
        o.set("no_create", at);
        o.p.no_create = Some(true);
    }
    // Kept only where exitall is set somewhere (fio ignores exit_what without it): exit_all().
    if let Some(at) = &r.exit_what_all {
        o.set("exit_run", at);
        o.p.exit_run = Some(true);
    }
    // latency_target's search; its settings alone do nothing in fio, and nothing here.
    if let Some((t, at)) = &r.lat_target {
        o.set("latency_target", at);
        o.p.latency_target = Some(*t);
        if let Some((w, at)) = &r.lat_window {
            o.set("latency_window", at);
            o.p.latency_window = Some(*w);
        }
        if let Some((p, at)) = &r.lat_pct {
            o.set("latency_percentile", at);
            o.p.latency_percentile = Some(*p);
        }
        if let Some((v, at)) = &r.lat_run {
            o.set("latency_run", at);
            o.p.latency_run = Some(*v);
        }
    }
    if let Some((v, at)) = &r.compress {
        o.set("compressibility", at);
        o.p.compressibility = Some(*v);
    }
    // fio drops the file's cached pages before a job unless told not to (invalidate=1 is its
    // default), so its reads come from the storage; the job file gets the same.
    o.p.invalidate = Some(match &r.invalidate {
        Some((v, at)) => {
            o.set("invalidate", at);
            *v
        }
        None => true,
    });
    Ok(FioJob { patch: o.p, from: o.from, at: s.at.clone(), logs: None })
}

/// Think time, passes and an I/O count (issue 27's executor capabilities). fio ignores the
/// thinktime_* options without a thinktime, and so does this.
fn finish_counts(r: &Raw, o: &mut Out) {
    if let Some((t, at)) = r.thinktime.as_ref().filter(|t| !t.0.is_zero()) {
        o.set("think", at);
        o.p.think = Some(*t);
        if let Some((v, at)) = &r.thinktime_spin {
            o.set("think_spin", at);
            o.p.think_spin = Some((*v).min(*t));
        }
        if let Some((v, at)) = &r.thinktime_blocks {
            o.set("think_every", at);
            o.p.think_every = Some((*v).max(1));
        }
        if let Some((true, at)) = &r.thinktime_on_issue {
            o.set("think_on_issue", at);
            o.p.think_on_issue = Some(true);
        }
        if let Some((v, at)) = r.thinktime_iotime.as_ref().filter(|v| !v.0.is_zero()) {
            o.set("think_iotime", at);
            o.p.think_iotime = Some(*v);
        }
    }
    // loops=1 and number_ios=0 are fio's defaults: nothing to say.
    if let Some((n, at)) = r.loops.as_ref().filter(|n| n.0 > 1) {
        o.set("loops", at);
        o.p.loops = Some(*n);
    }
    if let Some((n, at)) = r.number_ios.as_ref().filter(|n| n.0 > 0) {
        o.set("max_ios", at);
        o.p.max_ios = Some(*n);
    }
}

/// The job's name, its file (or directory) and the region of it.
fn finish_where(r: &mut Raw, s: &Section, env: &dyn Env, o: &mut Out, said: &mut Said) -> Result<(), Problem> {
    let (name, at) = r.name.clone().unwrap_or((s.name.clone(), s.at.clone()));
    o.set("name", &at);
    o.p.name = Some(name.clone());
    let threads = r.numjobs.as_ref().map_or(1, |n| n.0);

    // Where: fio's filename (under directory), else a file named by filename_format, else a
    // directory (one file per thread, as fio's jobname.N.0 files), else the current directory.
    let fmt = r.filename_format.clone();
    let target: (PathBuf, Loc, bool) = match files::set_target(r, &name, threads, o, said) {
        Some(t) => t,
        None => match (&r.filename, &fmt, &r.directory) {
            (Some((f, at)), _, d) => {
                // `a:b` is two files; `\:` is a colon in a name (fio's HOWTO).
                let names = split_files(f);
                if names.len() > 1 {
                    said.unmapped(at, format!("filename={f}: several files in one job are not mapped"));
                }
                let f = &names[0];
                if let Some(k) = FORMAT_KEYWORDS.iter().find(|k| find_ci(f, k).is_some()) {
                    said.note(at, format!("filename={f}: fio keeps `{k}` in a filename as written (fio 3.33 named the file so): it expands $jobname, $jobnum, $filenum and $clientuid in filename_format only"));
                }
                let path = match d {
                    Some((d, _)) if !Path::new(f).is_absolute() => Path::new(d).join(f),
                    _ => PathBuf::from(f),
                };
                (path, at.clone(), true)
            }
            (None, Some((fmt, at)), d) => {
                let (fmt, at) = (fmt.clone(), at.clone());
                let under = |p: &str| match d {
                    Some((d, _)) => Path::new(d).join(p),
                    None => PathBuf::from(p),
                };
                let per_thread = threads > 1 && find_ci(&fmt, "$jobnum").is_some();
                if per_thread {
                    // Each clone its own file: iolab's directory target, its own names.
                    let (dir, file) = fmt.rsplit_once('/').unwrap_or(("", &fmt));
                    if dir.contains('$') || !file.to_ascii_lowercase().contains("$jobnum") {
                        said.unmapped(&at, format!("filename_format={fmt}: a keyword in the directory part with numjobs={threads} is not mapped"));
                    }
                    said.note(&at, format!("filename_format={fmt}: each of the {threads} threads gets its own file as in fio, named iolab.{name}.N by iolab rather than by the format"));
                    (under(if dir.is_empty() { "." } else { dir }), at, false)
                } else {
                    (under(&expand_format(&fmt, &name)), at, true)
                }
            }
            (None, None, Some((d, at))) => {
                if d.contains(':') {
                    said.unmapped(at, format!("directory={d}: several directories are not mapped"));
                }
                (PathBuf::from(d), at.clone(), false)
            }
            (None, None, None) => (PathBuf::from("."), s.at.clone(), false),
        },
    };
    o.set("target", &target.1);
    o.p.target = Some(target.0.clone());

    files::apply(r, said);
    resolve_regions(r, &target.0, target.2, env, said)?;
    if let Some((Region::Bytes(v), at)) = &r.size {
        o.set("size", at);
        o.p.size = Some(Bytes(*v));
    }
    if let Some((Region::Bytes(v), at)) = r.offset.as_ref().filter(|o| o.0 != Region::Bytes(0)) {
        o.set("offset", at);
        o.p.offset = Some(Bytes(*v));
    }
    Ok(())
}

/// fio's list of files: names split at each `:` not escaped as `\:` (never empty).
fn split_files(list: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                if let Some(s) = out.last_mut() {
                    s.push(':');
                }
            }
            ':' => out.push(String::new()),
            c => {
                if let Some(s) = out.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    out
}

/// filename_format's keywords (init.c, make_filename; matched in any case).
const FORMAT_KEYWORDS: [&str; 4] = ["$jobname", "$jobnum", "$filenum", "$clientuid"];

fn find_ci(text: &str, word: &str) -> Option<usize> {
    text.to_ascii_lowercase().find(&word.to_ascii_lowercase())
}

/// A format's one file: `$jobname` the job's name, `$jobnum` and `$filenum` 0 (the first
/// clone's first file), `$clientuid` empty (fio fills it in client/server mode only; fio 3.33
/// run alone named `c.$clientuid.x` `c..x`).
fn expand_format(fmt: &str, name: &str) -> String {
    let mut out = fmt.to_string();
    for (k, v) in [("$jobname", name), ("$jobnum", "0"), ("$filenum", "0"), ("$clientuid", "")] {
        while let Some(i) = find_ci(&out, k) {
            out.replace_range(i..i + k.len(), v);
        }
    }
    out
}

/// `size`, `offset` and `io_size` in bytes, as fio works them out (filesetup.c): a percentage
/// of the file's size, an offset rounded up to `offset_align` (else the smallest block size),
/// a size rounded down to the smallest block size and capped at what is past the offset;
/// 0% and 100% are the whole file. Zones count only under `zonemode=zbd`; elsewhere fio leaves
/// the option unset (checked with fio 3.33: `size=8z` is the whole file, `offset=8z` 0).
fn resolve_regions(r: &mut Raw, target: &Path, is_file: bool, env: &dyn Env, said: &mut Said) -> Result<(), Problem> {
    let zbd = r.zonemode.as_ref().filter(|z| z.0 == "zbd");
    if let Some((mode, at)) = zbd {
        said.unmapped(
            at,
            format!("zonemode={mode}: zoned block devices are hardware-specific; iolab does not drive their zones"),
        );
    }
    let zoned = zbd.is_some_and(|z| z.0 == "zbd");
    for (what, slot) in [("size", &mut r.size), ("offset", &mut r.offset), ("io_size", &mut r.io_size)] {
        if let Some((Region::Zones(n), at)) = slot.clone() {
            if !zoned {
                said.note(&at, format!("{what}={n}z: fio counts zones only under zonemode=zbd and otherwise leaves {what} unset, as iolab does here"));
            }
            *slot = None;
        }
    }
    let percent =
        [("size", &r.size), ("offset", &r.offset), ("io_size", &r.io_size)].into_iter().find_map(|(what, v)| match v {
            Some((Region::Percent(p), at)) if *p != 0 && *p != 100 => Some((format!("{what}={p}%"), at.clone())),
            _ => None,
        });
    let Some((pct_what, pct_at)) = percent else {
        for slot in [&mut r.size, &mut r.offset, &mut r.io_size] {
            if matches!(slot, Some((Region::Percent(_), _))) {
                *slot = None;
            }
        }
        return Ok(());
    };
    if !is_file {
        said.unmapped(
            &pct_at,
            format!("{pct_what}: a percentage of the size of files fio names itself (no filename) is not mapped; give filename or a size"),
        );
        for slot in [&mut r.size, &mut r.offset, &mut r.io_size] {
            if matches!(slot, Some((Region::Percent(_), _))) {
                *slot = None;
            }
        }
        return Ok(());
    }
    let Some(file) = env.file_size(target).filter(|n| *n > 0) else {
        return Err(Problem::new(
            pct_at,
            format!(
                "{pct_what}: a percentage is of the size of {}, which does not exist or is empty; give a size (fio needs one too)",
                target.display()
            ),
        ));
    };
    let min_bs = min_block_size(r);
    let offset = match &r.offset {
        Some((Region::Percent(p), _)) if *p > 0 => {
            let raw = file * u64::from(*p) / 100;
            let align = r.offset_align.as_ref().map_or(min_bs, |a| a.0).max(1);
            raw.div_ceil(align) * align
        }
        Some((Region::Bytes(b), _)) => *b,
        _ => 0,
    };
    if let Some((Region::Percent(p), at)) = r.offset.clone() {
        r.offset = (p > 0).then(|| (Region::Bytes(offset), at.clone()));
        if p > 0 {
            said.note(&at, format!("offset={p}%: {offset} bytes of {}'s {file}, worked out now (a file that changes size later is not followed)", target.display()));
        }
    }
    if let Some((Region::Percent(p), at)) = r.size.clone() {
        if p == 0 || p == 100 {
            r.size = None;
        } else {
            let mut n = (file * u64::from(p) / 100).min(file.saturating_sub(offset));
            n -= n % min_bs.max(1);
            if n == 0 {
                return Err(Problem::new(at, format!("size={p}% of {file} bytes is less than one block (fio: blocksize is larger than data set range)")));
            }
            said.note(&at, format!("size={p}%: {n} bytes of {}'s {file}, worked out now", target.display()));
            r.size = Some((Region::Bytes(n), at));
        }
    }
    if let Some((Region::Percent(p), at)) = r.io_size.clone() {
        if p == 0 || p == 100 {
            r.io_size = None;
        } else {
            let region = match &r.size {
                Some((Region::Bytes(b), _)) => *b,
                _ => file.saturating_sub(offset),
            };
            let n = region * u64::from(p) / 100;
            said.note(&at, format!("io_size={p}%: {n} bytes, worked out now"));
            r.io_size = Some((Region::Bytes(n), at));
        }
    }
    Ok(())
}

/// fio's td_min_bs: the smallest block size of any direction (4k where one is not given).
fn min_block_size(r: &Raw) -> u64 {
    let source = r.bssplit.as_ref().or(r.bs.as_ref());
    let mut min = u64::MAX;
    for i in 0..3 {
        let v = match source.and_then(|s| s.0[i].as_ref()) {
            None => 4096,
            Some(Bs::Fixed(b)) => *b,
            Some(Bs::Range(lo, _)) => *lo,
            Some(Bs::Split(list)) => list.iter().map(|x| x.0).min().unwrap_or(4096),
        };
        min = min.min(v);
    }
    min
}

/// The access pattern: rw, the read mix, the block sizes and a sequential pattern's hole.
/// fio's strided zones: zonemode=strided with zonesize (zonerange, zoneskip) becomes
/// `--zone-size` (`--zone-range`, `--zone-skip`). fio 3.33 refuses zonesize without a zone
/// mode ("--zonemode=none and --zonesize are not compatible"), and so does iolab; under
/// zonemode=zbd they are the zoned device's, refused with it.
fn finish_zones(r: &Raw, o: &mut Out, said: &mut Said) -> Result<(), Problem> {
    let mode = r.zonemode.as_ref().map(|m| m.0.as_str());
    if mode == Some("zbd") {
        return Ok(());
    }
    let Some((size, at)) = &r.zonesize else {
        if let (Some("strided"), Some((_, at))) = (mode, &r.zonemode) {
            return Err(Problem::new(
                at.clone(),
                "zonemode=strided needs zonesize, the bytes of I/O in each zone (fio 3.33 refuses it without one)"
                    .into(),
            ));
        }
        return Ok(());
    };
    if mode != Some("strided") {
        return Err(Problem::new(
            at.clone(),
            "zonesize: fio 3.33 refuses it without zonemode=strided (\"--zonemode=none and --zonesize are not compatible\"); add zonemode=strided".into(),
        ));
    }
    o.set("zone_size", at);
    o.p.zone_size = Some(Bytes(*size));
    if let Some((range, at)) = &r.zonerange {
        o.set("zone_range", at);
        o.p.zone_range = Some(Bytes(*range));
    }
    match &r.zoneskip {
        Some((Region::Bytes(n), at)) => {
            o.set("zone_skip", at);
            o.p.zone_skip = Some(Bytes(*n));
        }
        Some((other, at)) => said.unmapped(
            at,
            format!(
                "zoneskip={}: zones and percentages count only under zonemode=zbd; give bytes under zonemode=strided",
                match other {
                    Region::Zones(n) => format!("{n}z"),
                    Region::Percent(p) => format!("{p}%"),
                    Region::Bytes(n) => n.to_string(),
                }
            ),
        ),
        None => {}
    }
    Ok(())
}

fn finish_pattern(r: &Raw, o: &mut Out, said: &mut Said) -> Rw {
    let rw = match &r.rw {
        Some((rw, modifier, text, at)) => {
            o.set("rw", at);
            // A sequential pattern's hole (`rw=write:4k`) becomes a stride below, once the block
            // size is known. What fio does was checked with fio 3.33 --debug=io.
            match modifier {
                Some(m) if rw.is_random() && *m > 1 => said.unmapped(
                    at,
                    format!("rw={text}: fio issues {m} I/Os one after another at each random offset before it draws the next; iolab draws a new offset for every I/O"),
                ),
                Some(m) if !rw.is_random() && *m < 0 && rw.is_mixed() => said.unmapped(
                    at,
                    format!("rw={text}: fio keeps a position per direction, each going back {}; iolab's mixed pattern has one position", -m),
                ),
                _ => {}
            }
            *rw
        }
        None => Rw::Read,
    };
    o.p.rw = Some(rw);
    if let Some((m, at)) = &r.mix {
        if rw.is_mixed() {
            o.set("mix", at);
            o.p.mix = Some(*m);
        }
    }
    if let Some((bs, write, at)) = job_bs(r, rw, said) {
        o.set("bs", &at);
        o.p.bs = Some(bs);
        if let Some(w) = write {
            o.set("write_bs", &at);
            o.p.write_bs = Some(w);
        }
    }
    if let Some((_, Some(back), text, at)) = &r.rw {
        if !rw.is_random() && !rw.is_mixed() && *back < 0 {
            let back = back.unsigned_abs();
            let bs = o.p.bs.clone().unwrap_or(BlockSizes::single(Bytes(4096)));
            if back > bs.max().0 {
                o.set("backward", at);
                o.p.backward = Some(Bytes(back));
            } else {
                said.unmapped(at, format!("rw={text}: each I/O starts {back} before the previous one's end, overlapping it and moving forwards; iolab's forward stride is at least the block size"));
            }
        }
    }
    if let Some((_, Some(hole), text, at)) = &r.rw {
        if !rw.is_random() && *hole > 0 {
            let bs = o.p.bs.clone().unwrap_or(BlockSizes::single(Bytes(4096)));
            if bs.0.len() == 1 {
                o.set("stride", at);
                o.p.stride = Some(Bytes(bs.max().0 + *hole as u64));
                if !r.time_based.as_ref().is_some_and(|t| t.0) {
                    said.note(at, format!("rw={text}: fio moves `size` bytes in all (size / bs I/Os), wrapping to the file's start to pass over the blocks again; iolab makes one pass (size / stride I/Os)"));
                }
            } else {
                said.unmapped(at, format!("rw={text}: a hole after each block with several block sizes is not mapped"));
            }
        }
    }

    rw
}

/// fio's prio, prioclass and nice onto the job's threads (a level without a class is
/// best-effort's, a class without a level has level 0: fio 3.33's ioprio_set), and its
/// cmdprio_* onto per-request shares: cmdprio_percentage of each direction at cmdprio_class
/// (default rt) and cmdprio (default 0), or cmdprio_bssplit's `bs/pct[/class/level]` entries.
fn finish_prio(r: &Raw, o: &mut Out) -> Result<(), (Loc, String)> {
    use crate::prio::{CmdPrio, IoPrio, PrioShare};
    if let Some(at) = r.prio.as_ref().map(|p| &p.1).or(r.prioclass.as_ref().map(|p| &p.1)) {
        o.set("ioprio", at);
        o.p.ioprio =
            Some(IoPrio { class: r.prioclass.as_ref().map_or(2, |c| c.0), level: r.prio.as_ref().map_or(0, |p| p.0) });
    }
    if let Some((n, at)) = &r.nice {
        o.set("nice", at);
        o.p.nice = Some(*n);
    }
    let class = |i: usize| r.cmdprio_class.as_ref().and_then(|c| c.0[i]).unwrap_or(1);
    let level = |i: usize| r.cmdprio_level.as_ref().and_then(|c| c.0[i]).unwrap_or(0);
    let shares = match (&r.cmdprio_pct, &r.cmdprio_bssplit) {
        (Some(_), Some((_, at))) => {
            return Err((
                at.clone(),
                "cmdprio_bssplit and cmdprio_percentage exclude each other (fio refuses both)".into(),
            ))
        }
        (Some((pct, at)), None) => {
            let dir = |i: usize| -> Vec<PrioShare> {
                pct[i]
                    .filter(|p| *p > 0)
                    .map(|p| PrioShare { bs: None, pct: p as u8, prio: IoPrio { class: class(i), level: level(i) } })
                    .into_iter()
                    .collect()
            };
            Some((CmdPrio { read: dir(0), write: dir(1) }, at))
        }
        (None, Some((text, at))) => {
            let [rd, wr, _] = value::per_direction(text);
            let dir = |i: usize, t: Option<String>| -> Result<Vec<PrioShare>, String> {
                let mut out = Vec::new();
                for e in t.unwrap_or_default().split(':').map(str::trim).filter(|e| !e.is_empty()) {
                    let parts: Vec<&str> = e.split('/').collect();
                    let (bs, pct, prio) = match parts.as_slice() {
                        [b, p] => (b, p, IoPrio { class: class(i), level: level(i) }),
                        [b, p, c, l] => (b, p, IoPrio { class: IoPrio::class_of(c)?, level: IoPrio::level_of(l)? }),
                        _ => {
                            return Err(format!("`{e}`: fio's entries are bs/percentage or bs/percentage/class/level"))
                        }
                    };
                    let bs = value::size(bs, r.kb)?;
                    let pct = value::int(pct)?;
                    if pct > 100 {
                        return Err(format!("{pct} is not a percentage (0 to 100)"));
                    }
                    if pct > 0 {
                        out.push(PrioShare { bs: Some(Bytes(bs)), pct: pct as u8, prio });
                    }
                }
                Ok(out)
            };
            let c = CmdPrio {
                read: dir(0, rd).map_err(|e| (at.clone(), format!("cmdprio_bssplit: {e}")))?,
                write: dir(1, wr).map_err(|e| (at.clone(), format!("cmdprio_bssplit: {e}")))?,
            };
            Some((c, at))
        }
        (None, None) => None,
    };
    if let Some((c, at)) = shares {
        if !c.read.is_empty() || !c.write.is_empty() {
            o.set("cmdprio", at);
            o.p.cmdprio = Some(c);
        }
    }
    Ok(())
}

/// fio's random map, its default for uniform random offsets (each block once per pass, an I/O
/// cut at a block done): iolab's `random_map`, unless `norandommap`. `random_generator=lfsr`
/// never repeats an offset within a pass and keeps no map (so cuts no I/O): the map gives the
/// same with one block size, not with several. fio's other distributions take offsets busy or
/// not (io_u.c sets IO_U_F_BUSY_OK), so the map changes nothing there.
fn finish_random_map(r: &Raw, rw: Rw, o: &mut Out, said: &mut Said) {
    let uniform = matches!(o.p.dist, None | Some(Dist::Uniform));
    if !rw.is_random() || !uniform || r.norandommap.as_ref().is_some_and(|n| n.0) {
        return;
    }
    if let Some(at) = &r.lfsr {
        if o.p.bs.as_ref().is_some_and(|b| b.0.len() > 1) || o.p.write_bs.is_some() {
            said.unmapped(at, "random_generator=lfsr with several block sizes: fio's LFSR visits each block once and keeps every I/O's size; iolab's random map cuts an I/O at a block done".into());
            return;
        }
        said.note(
            at,
            "random_generator=lfsr: each block once per pass, as iolab's random map does (another sequence)".into(),
        );
    }
    let at = r.norandommap.as_ref().map(|n| &n.1).or(r.rw.as_ref().map(|r| &r.3));
    if let Some(at) = at {
        o.set("random_map", at);
    }
    o.p.random_map = Some(true);
}

/// Threads, the engine, its depth and O_DIRECT; the job's threads.
fn finish_engine(r: &Raw, rw: Rw, o: &mut Out, said: &mut Said) -> u64 {
    let threads = r.numjobs.as_ref().map(|n| n.0).unwrap_or(1);
    if let Some((n, at)) = &r.numjobs {
        o.set("threads", at);
        o.p.threads = Some(u32::try_from(*n).unwrap_or(u32::MAX));
    }

    // The engine: fio's synchronous engines are psync here; its asynchronous ones io_uring.
    let engine = match &r.engine {
        None => EngineKind::DEFAULT,
        Some((e, at)) => {
            o.set("engine", at);
            match e.as_str() {
                "psync" => EngineKind::Psync,
                "sync" | "pvsync" => {
                    said.note(at, format!("ioengine={e} runs as psync (pread/pwrite): the same I/O, one call each"));
                    EngineKind::Psync
                }
                "io_uring" => EngineKind::IoUring,
                "libaio" => EngineKind::Libaio,
                "posixaio" => {
                    said.note(at, format!("ioengine={e} runs on io_uring, at the same queue depth"));
                    EngineKind::IoUring
                }
                "mmap" => EngineKind::Mmap,
                "null" => EngineKind::Null,
                "ftruncate" => {
                    if rw.reads() {
                        let text = r.rw.as_ref().map_or("read", |x| x.2.as_str());
                        said.unmapped(at, format!("ioengine=ftruncate with rw={text}: fio fails each read with EINVAL; its writes are ftruncate(2) to their offsets"));
                    }
                    EngineKind::Ftruncate
                }
                // fio's engines/falloc.c: a write is fallocate(2) of its range, a read one with
                // FALLOC_FL_KEEP_SIZE (a trim's hole punch comes with rw=trim, not mapped here).
                "falloc" => EngineKind::Falloc,
                other => {
                    said.unmapped(
                        at,
                        format!(
                            "ioengine={other}: iolab's engines are psync, libaio, io_uring, mmap, null, ftruncate and falloc"
                        ),
                    );
                    EngineKind::Psync
                }
            }
        }
    };
    o.p.engine = Some(engine);
    if let Some((d, at)) = &r.iodepth {
        if engine.caps().max_depth > 1 {
            o.set("iodepth", at);
            o.p.iodepth = Some(u32::try_from(*d).unwrap_or(u32::MAX));
        } else if *d > 1 {
            said.note(at, format!("iodepth={d} has no effect on the synchronous engine {engine}, as in fio"));
        }
    }
    finish_batch(r, engine, o, said);
    finish_sqpoll(r, o, said);
    if let Some((d, at)) = &r.direct {
        o.set("direct", at);
        o.p.direct = Some(*d);
    }

    threads
}

/// fio's batching (iodepth_batch_submit, iodepth_batch_complete_min/max, iodepth_low) on an
/// engine that batches (libaio), with fio's defaults where the job sets none (submit each I/O
/// as it comes, wait for one completion and take one per call), so the engine makes the calls
/// fio makes; the depth they are read against is fio's (an iodepth_low above it is the depth).
fn finish_batch(r: &Raw, engine: EngineKind, o: &mut Out, said: &mut Said) {
    const KEYS: [&str; 4] =
        ["iodepth_batch_submit", "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low"];
    if !engine.caps().batches {
        for (key, v) in KEYS.iter().zip(&r.batch) {
            if let Some((n, at)) = v {
                said.note(at, format!("{key}={n}: iolab's {engine} submits what is queued and takes every completion there; only libaio batches as fio says"));
            }
        }
        return;
    }
    let depth = r.iodepth.as_ref().map_or(1, |d| d.0).clamp(1, u32::MAX as u64);
    let get = |i: usize| r.batch[i].as_ref().map(|(n, _)| (*n).min(depth) as u32);
    let submit = get(0).or(Some(1));
    let complete_min = get(1).or(Some(1));
    let complete_max = get(2).or(complete_min);
    let low = get(3);
    for (key, v) in KEYS.iter().zip(&r.batch) {
        if let Some((_, at)) = v {
            o.set(key, at);
        }
    }
    o.p.iodepth_batch_submit = submit;
    o.p.iodepth_batch_complete_min = complete_min;
    o.p.iodepth_batch_complete_max = complete_max;
    o.p.iodepth_low = low;
}

/// io_uring's sqthread_poll (and its CPU, sqthread_poll_cpu) onto `sqpoll`. They are options of
/// fio's io_uring engine alone: fio refuses them with another engine (posixaio included, which
/// iolab runs on io_uring); sqthread_poll_cpu without sqthread_poll has no effect in fio.
fn finish_sqpoll(r: &Raw, o: &mut Out, said: &mut Said) {
    let io_uring = r.engine.as_ref().is_some_and(|(e, _)| e == "io_uring");
    if !io_uring {
        let engine = r.engine.as_ref().map_or("psync", |(e, _)| e.as_str());
        if let Some((_, at)) = &r.sqpoll {
            said.unmapped(
                at,
                format!("sqthread_poll is an option of fio's io_uring engine; fio refuses it with ioengine={engine}"),
            );
        }
        if let Some((_, at)) = &r.sqpoll_cpu {
            said.unmapped(
                at,
                format!(
                    "sqthread_poll_cpu is an option of fio's io_uring engine; fio refuses it with ioengine={engine}"
                ),
            );
        }
        return;
    }
    match (&r.sqpoll, &r.sqpoll_cpu) {
        (Some((true, at)), cpu) => {
            o.set("sqpoll", at);
            o.p.sqpoll = Some(true);
            if let Some((c, at)) = cpu {
                o.set("sqpoll_cpu", at);
                o.p.sqpoll_cpu = Some(*c);
            }
        }
        (_, Some((c, at))) => {
            said.note(at, format!("sqthread_poll_cpu={c} has no effect without sqthread_poll, as in fio"));
        }
        _ => {}
    }
}

/// fio's verify onto iolab's validation: `verify=TYPE` stamps what the job writes and checks
/// what it reads (iolab's own stamp, CRC-32C, for every type); `do_verify` (1 by default) is
/// the read-back of everything written after the writes (`verify_after`); fio keeps checking
/// after a bad block unless `verify_fatal=1` (`max_errors` 0, else 1).
fn finish_verify(r: &Raw, rw: Rw, o: &mut Out, said: &mut Said) {
    let Some((true, kind, at)) = &r.verify else { return };
    o.set("verify", at);
    o.p.verify = Some(true);
    said.note(at, format!("verify={kind}: iolab stamps each 512-byte sector with its offset, file, key and CRC-32Cs and checks that, not fio's {kind} header"));
    let after = r.do_verify.as_ref().is_none_or(|d| d.0);
    if rw.writes() && after {
        o.set("verify_after", r.do_verify.as_ref().map_or(at, |d| &d.1));
        o.p.verify_after = Some(true);
        said.note(at, "do_verify: after the writes every written block is read back and checked (fio counts those reads in its read figures, iolab apart from the run's)".into());
    }
    // verify_backlog=N: every N writes read back and checked during the run (0: off, fio's
    // default); verify_backlog_batch, how many of them (0: N).
    if let Some((n, bat)) = r.verify_backlog[0].as_ref().filter(|b| b.0 > 0 && rw.writes()) {
        o.set("verify_backlog", bat);
        o.p.verify_backlog = Some(*n);
        if let Some((b, bat)) = r.verify_backlog[1].as_ref().filter(|b| b.0 > 0) {
            o.set("verify_backlog_batch", bat);
            o.p.verify_backlog_batch = Some(*b);
        }
    }
    let fatal = r.verify_fatal.as_ref().is_some_and(|f| f.0);
    o.set("max_errors", r.verify_fatal.as_ref().map_or(at, |f| &f.1));
    o.p.max_errors = Some(if fatal { 1 } else { 0 });
}

/// O_SYNC/O_DSYNC writes or a flush every N writes, and the final fsync.
fn finish_durability(r: &Raw, o: &mut Out, said: &mut Said) {
    // Durability: O_SYNC/O_DSYNC writes or a flush every N writes; iolab has one of them.
    match (&r.sync, &r.fsync) {
        (Some((mode, at)), Some((_, _, fat))) if *mode != SyncMode::None => {
            said.unmapped(fat, format!("fsync with sync={mode} (set at {at}): iolab has either O_SYNC/O_DSYNC writes or a flush every N writes"));
            o.set("sync", at);
            o.p.sync = Some(*mode);
        }
        (_, Some((mode, n, at))) => {
            o.set("sync", at);
            o.set("fsync_every", at);
            o.p.sync = Some(*mode);
            o.p.fsync_every = Some(*n);
        }
        (Some((mode, at)), None) => {
            o.set("sync", at);
            o.p.sync = Some(*mode);
        }
        (None, None) => {}
    }
    if let Some((e, at)) = &r.end_fsync {
        o.set("end_fsync", at);
        o.p.end_fsync = Some(*e);
    }
}

/// The runtime (and what fio's runtime without time_based means), io_size, the ramp and the
/// rates (fio's per clone, iolab's the job's).
fn finish_time(r: &Raw, rw: Rw, threads: u64, o: &mut Out, said: &mut Said) {
    // Time: iolab's runtime loops over the file until the time is up (fio's time_based);
    // fio's runtime alone is one pass cut short at the runtime: iolab's runtime with io_size.
    let time_based = r.time_based.as_ref().is_some_and(|t| t.0);
    match &r.runtime {
        Some((t, at)) if !t.is_zero() => {
            o.set("runtime", at);
            o.p.runtime = Some(*t);
            if !time_based {
                match (&r.io_size, &r.size) {
                    (None, Some((Region::Bytes(sz), sat))) => {
                        o.set("io_size", sat);
                        o.p.io_size = Some(Bytes(*sz));
                    }
                    (None, None) => said.note(at, "runtime without time_based and without size: one pass over the existing file is not known here, so the job runs for the runtime".into()),
                    _ => {}
                }
            }
        }
        _ => {
            if let Some((true, at)) = &r.time_based {
                said.note(at, "time_based without a runtime: one pass, as in fio".into());
            }
        }
    }
    if let Some((Region::Bytes(v), at)) = &r.io_size {
        o.set("io_size", at);
        o.p.io_size = Some(Bytes(*v));
    }
    if let Some((t, at)) = &r.ramp {
        if !t.is_zero() {
            o.set("ramp", at);
            o.p.ramp = Some(crate::steady::Ramp::Time(*t));
            // fio 3.33, size=4m at 512 IOPS with ramp_time=1: 1024 I/Os in all, 511 reported
            // over 997 ms: on a size-bounded job the ramp's I/O counts toward the size.
            if o.p.runtime.is_none() && o.p.io_size.is_none() {
                if let Some(sz) = o.p.size {
                    o.set("io_size", at);
                    o.p.io_size = Some(sz);
                    said.note(at, "ramp_time on a size-bounded job: its I/O counts toward the size and is not reported, as in fio".into());
                }
            }
        }
    }

    // fio's rates are per clone; iolab's are the job's, shared among its threads.
    if rw.is_mixed() {
        mixed_rates(r, threads, o, said);
    }
    job_floor(r, rw, threads, o, said);
    job_flow(r, o);
    if let Some((v, at)) = job_rate(&r.rate, rw) {
        o.set("rate", &at);
        o.p.rate = Some(Bytes(v.saturating_mul(threads)));
        if threads > 1 {
            said.note(
                &at,
                format!("rate is per job in fio: {threads} jobs make {} B/s in all", v.saturating_mul(threads)),
            );
        }
    }
    if let Some((v, at)) = job_rate(&r.rate_iops, rw) {
        o.set("rate_iops", &at);
        o.p.rate_iops = Some(v.saturating_mul(threads));
        if threads > 1 {
            said.note(
                &at,
                format!("rate_iops is per job in fio: {threads} jobs make {} IOPS in all", v.saturating_mul(threads)),
            );
        }
    }
}

// Steady state (issue 29): fio's `steadystate`/`ss`, `ss_dur`, `ss_ramp` and `ss_interval`
// onto `--steady-state CRITERION`, `--ss-dur`, `--ss-ramp`, `--ss-interval`. As in fio, the
// criterion judges nothing without a window (`ss_dur` unset or 0), and a window without a
// criterion takes fio's default, `iops_slope:0.01%`.

/// A job's steady-state options as read.
#[derive(Default, Clone)]
struct SsRaw {
    criterion: Option<(crate::steady::FioCriterion, Loc)>,
    dur: Option<(Duration, Loc)>,
    ramp: Option<(Duration, Loc)>,
    interval: Option<(Duration, Loc)>,
}

fn read_ss(ss: &mut SsRaw, o: &Opt) -> Result<(), Problem> {
    let at = o.at.clone();
    let time = |o: &Opt| -> Result<Duration, Problem> { value::time(need(o)?).map_err(|e| bad(o, e)) };
    match canonical(&o.key) {
        "steadystate" | "ss" => ss.criterion = Some((need(o)?.parse().map_err(|e: String| bad(o, e))?, at)),
        "steadystate_duration" | "ss_dur" => ss.dur = Some((time(o)?, at)),
        "steadystate_ramp_time" | "ss_ramp" => ss.ramp = Some((time(o)?, at)),
        _ => ss.interval = Some((time(o)?, at)),
    }
    Ok(())
}

fn finish_ss(ss: &SsRaw, o: &mut Out, said: &mut Said) {
    let Some((dur, dat)) = ss.dur.as_ref().filter(|(d, _)| !d.is_zero()) else {
        if let Some((c, at)) = &ss.criterion {
            said.note(
                at,
                format!("ss={c} without ss_dur: fio judges no steady state without its window, nor does iolab"),
            );
        }
        return;
    };
    let criterion = ss.criterion.as_ref().map_or(crate::steady::FioCriterion::FIO_DEFAULT, |(c, _)| *c);
    o.set("steady_state", ss.criterion.as_ref().map_or(dat, |(_, at)| at));
    o.p.steady_state = Some(crate::steady::SteadyWord::Fio(criterion));
    o.set("ss_dur", dat);
    o.p.ss_dur = Some(*dur);
    if let Some((r, at)) = &ss.ramp {
        o.set("ss_ramp", at);
        o.p.ss_ramp = Some(*r);
    }
    if let Some((i, at)) = &ss.interval {
        o.set("ss_interval", at);
        o.p.ss_interval = Some(*i);
    }
}

#[cfg(test)]
mod steady_tests {
    use crate::fio::tests::plan_of_text;
    use crate::steady::{FioTest, SteadyState, Tracked};
    use std::time::Duration;

    #[test]
    fn fio_steady_state_options_map_with_their_aliases_and_defaults() {
        let plan = plan_of_text(
            "[a]\nfilename=/d/f\nsize=1m\nrw=randwrite\ntime_based\nruntime=60\nsteadystate=iops_slope:0.3%\nss_dur=20\nss_ramp=5s\n",
        );
        let Some(SteadyState::Fio(f)) = plan.phases[0].jobs[0].steady else { panic!("no criterion") };
        assert_eq!((f.criterion.tracked, f.criterion.test, f.criterion.limit), (Tracked::Iops, FioTest::Slope, 0.3));
        assert!(f.criterion.percent);
        assert_eq!(
            (f.dur, f.ramp, f.interval),
            (Duration::from_secs(20), Duration::from_secs(5), Duration::from_secs(1))
        );
        // A window alone takes fio's default criterion; the long names are fio's too.
        let plan = plan_of_text("[a]\nfilename=/d/f\nsize=1m\nsteadystate_duration=10\nsteadystate_check_interval=2\n");
        let Some(SteadyState::Fio(f)) = plan.phases[0].jobs[0].steady else { panic!("no criterion") };
        assert_eq!(f.criterion.to_string(), "iops_slope:0.01%");
        assert_eq!(f.samples(), 5);
        // A criterion without a window judges nothing, as in fio.
        let plan = plan_of_text("[a]\nfilename=/d/f\nsize=1m\nss=bw:10%\n");
        assert_eq!(plan.phases[0].jobs[0].steady, None);
    }

    #[test]
    fn a_bad_criterion_is_named_at_its_line() {
        let e = crate::fio::tests::err_of_text("[a]\nfilename=/d/f\nsize=1m\nss=iops_slop:1%\nss_dur=10\n");
        assert!(e.contains("job.fio:4: ss: `iops_slop`") && e.contains("iops_slope") && !e.contains("snia"), "{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_weigh_sizes_as_fio_draws_them() {
        // 4k-16k: minbs + maxbs × U, rounded down to 4k, capped at 16k: a quarter each.
        assert_eq!(range_sizes(4096, 16384).unwrap(), vec![(4096, 4096), (8192, 4096), (12288, 4096), (16384, 4096)]);
        // 4k-10k: [4k,8k) 4k, [8k,12k) 8k, [12k,14k) capped to 10k.
        assert_eq!(range_sizes(4096, 10240).unwrap(), vec![(4096, 4096), (8192, 4096), (10240, 2048)]);
        assert!(range_sizes(512, 1 << 20).is_none());
        let b = block_sizes(&Bs::Range(4096, 10240)).unwrap();
        assert_eq!(b.to_string(), "4k:2,8k:2,10k:1");
    }

    fn job_of(text: &str) -> Result<crate::Job, String> {
        let env = super::super::tests::Mem {
            files: [(PathBuf::from("/j/job.fio"), text.to_string())].into_iter().collect(),
            vars: Default::default(),
            sizes: Default::default(),
        };
        let f = super::super::parse(Path::new("/j/job.fio"), &env, false).map_err(|e| e.to_string())?;
        let plan = f.plan(&JobPatch::default()).map_err(|e| e.to_string())?;
        Ok(plan.phases[0].jobs[0].clone())
    }

    #[test]
    fn startdelay_thinktime_loops_and_number_ios_map() {
        use crate::Delay;
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nstartdelay=2\n").unwrap();
        assert_eq!(j.start_delay, Delay::fixed(Duration::from_secs(2)));
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nstartdelay=500ms-3s\n").unwrap();
        assert_eq!(j.start_delay, Delay { low: Duration::from_millis(500), high: Duration::from_secs(3) });
        let e = job_of("[a]\nfilename=/d/f\nstartdelay=5-1\n").unwrap_err();
        assert!(e.contains("/j/job.fio:3") && e.contains("high end is below"), "{e}");

        // thinktime is in microseconds without a unit; its family only with it, as in fio.
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nthinktime=250\nthinktime_spin=50\nthinktime_blocks=8\nthinktime_blocks_type=issue\n").unwrap();
        let t = j.workload.block().unwrap().think.as_deref().copied().unwrap();
        assert_eq!(
            (t.time, t.spin, t.every, t.on_issue),
            (Duration::from_micros(250), Duration::from_micros(50), Some(8), true)
        );
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nthinktime=1s\nthinktime_iotime=9\n").unwrap();
        let t = j.workload.block().unwrap().think.as_deref().copied().unwrap();
        assert_eq!((t.time, t.iotime, t.blocks()), (Duration::from_secs(1), Some(Duration::from_secs(9)), u64::MAX));
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nthinktime_blocks=8\n").unwrap();
        assert!(j.workload.block().unwrap().think.is_none(), "thinktime_blocks alone does nothing in fio");
        assert!(job_of("[a]\nfilename=/d/f\nthinktime=1\nthinktime_blocks_type=later\n")
            .unwrap_err()
            .contains("complete"));

        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nloops=3\nnumber_ios=100\n").unwrap();
        let b = j.workload.block().unwrap();
        assert_eq!((b.loops, b.max_ios), (Some(3), Some(100)));
        assert_eq!(b.budget_bytes(1 << 20), 3 << 20, "three passes over the region");
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nloops=1\nnumber_ios=0\n").unwrap();
        let b = j.workload.block().unwrap();
        assert_eq!((b.loops, b.max_ios), (None, None), "fio's defaults");
    }

    #[test]
    fn exitall_anywhere_ends_every_phase_at_its_first_job_end() {
        let env = super::super::tests::Mem {
            files: [(
                PathBuf::from("/j/job.fio"),
                "[a]\nfilename=/d/f\nsize=1m\n[b]\nfilename=/d/g\nsize=1m\nexitall\n[c]\nstonewall\nfilename=/d/h\nsize=1m\n".to_string(),
            )]
            .into_iter()
            .collect(),
            vars: Default::default(),
            sizes: Default::default(),
        };
        let f = super::super::parse(Path::new("/j/job.fio"), &env, false).unwrap();
        let plan = f.plan(&JobPatch::default()).unwrap();
        assert!(plan.phases.iter().flat_map(|p| &p.jobs).all(|j| j.exit_all), "fio's exitall is global");
        // exit_what=all with exitall: the run ends with the job; without exitall, nothing.
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nexitall\nexit_what=all\n").unwrap();
        assert!(j.exit_all && j.exit_run);
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nexit_what=all\n").unwrap();
        assert!(!j.exit_all && !j.exit_run, "fio's exit_what needs exitall");
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nexitall\nexit_what=stonewall\n").unwrap();
        assert!(j.exit_all && !j.exit_run);
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nexitall\nexit_what=some\n").unwrap_err();
        assert!(e.contains("exit_what") && e.contains("stonewall and all"), "{e}");
        assert!(!job_of("[a]\nfilename=/d/f\nsize=1m\n").unwrap().exit_all);
    }

    #[test]
    fn rates_per_direction_floors_and_the_arrival_process_map() {
        use crate::pace::{Rate, RateProcess};
        let b = |text: &str| job_of(text).map(|j| j.workload.block().cloned().unwrap());
        // rate=1m on randrw caps each direction (fio's rate is per direction and per clone).
        let j = b("[a]\nfilename=/d/f\nsize=1m\nrw=randrw\nrate=1m\nnumjobs=2\n").unwrap();
        let p = j.pace.unwrap();
        assert_eq!(
            (p.read, p.write, j.rate),
            (Some(Rate::Bytes(Bytes::mib(2))), Some(Rate::Bytes(Bytes::mib(2))), None)
        );
        // rate_iops=,50: writes alone; rate=1m,2m: each its own.
        let p = b("[a]\nfilename=/d/f\nsize=1m\nrw=rw\nrate_iops=,50\n").unwrap().pace.unwrap();
        assert_eq!((p.read, p.write), (None, Some(Rate::Iops(50))));
        let p = b("[a]\nfilename=/d/f\nsize=1m\nrw=randrw\nrate=1m,2m\n").unwrap().pace.unwrap();
        assert_eq!((p.read, p.write), (Some(Rate::Bytes(Bytes::mib(1))), Some(Rate::Bytes(Bytes::mib(2)))));
        // ratemin (fio's alias), ratecycle, rate_process=poisson.
        let j =
            b("[a]\nfilename=/d/f\nsize=1m\nrate=1250\nratemin=1024\nratecycle=500\nrate_process=poisson\n").unwrap();
        let p = j.pace.unwrap();
        assert_eq!(
            (j.rate, p.min, p.cycle, p.process),
            (Some(Bytes(1250)), Some(Rate::Bytes(Bytes(1024))), Duration::from_millis(500), RateProcess::Poisson)
        );
        let p = b("[a]\nfilename=/d/f\nsize=1m\nrw=randrw\nrate_iops_min=10\n").unwrap().pace.unwrap();
        assert_eq!(p.min, Some(Rate::Iops(10)));
        // fio 3.33: "minimum rate exceeds rate"; a floor for one direction of a mixed job.
        let e = b("[a]\nfilename=/d/f\nsize=1m\nrate=100k\nratemin=1m\n").unwrap_err();
        assert!(e.contains("rate_min") && e.contains("above the rate"), "{e}");
        let e = b("[a]\nfilename=/d/f\nsize=1m\nrw=randrw\nrate_min=,1m\n").unwrap_err();
        assert!(e.contains("one direction of a mixed job"), "{e}");
        assert!(b("[a]\nfilename=/d/f\nsize=1m\nrate_process=bursty\n").unwrap_err().contains("poisson"));
    }

    #[test]
    fn numa_nodes_and_memory_policies_map() {
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nnuma_cpu_nodes=0-1\nnuma_mem_policy=interleave:0-1\n").unwrap();
        let n = j.numa.unwrap();
        assert_eq!(n.nodes, Some(crate::cpus::Cpus(vec![0, 1])));
        assert_eq!(n.mem, Some(crate::numa::MemPolicy::Interleave(crate::cpus::Cpus(vec![0, 1]))));
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nnuma_mem_policy=prefer:0-1\n").unwrap_err();
        assert!(e.contains("prefer takes one node"), "{e}");
        assert!(job_of("[a]\nfilename=/d/f\nsize=1m\nnuma_cpu_nodes=x\n").unwrap_err().contains("not a node number"));
    }

    #[test]
    fn priorities_of_threads_and_requests_map() {
        use crate::prio::{IoPrio, PrioShare};
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nprio=5\nnice=3\n").unwrap();
        // fio 3.33 under strace: a level alone is best-effort's.
        assert_eq!(j.sched.unwrap().ioprio, Some(IoPrio { class: 2, level: 5 }));
        assert_eq!(j.sched.unwrap().nice, Some(3));
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nioengine=libaio\nprioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\n").unwrap();
        assert_eq!(j.sched.unwrap().ioprio, Some(IoPrio { class: 3, level: 0 }));
        let c = j.workload.block().unwrap().cmdprio.clone().unwrap();
        assert_eq!(c.read, [PrioShare { bs: None, pct: 20, prio: IoPrio { class: 1, level: 0 } }]);
        // fio's cmdprio-bssplit.fio, its advanced entries; 0% entries keep the thread's.
        let j = job_of(
            "[a]\nfilename=/d/f\nsize=4m\nrw=randrw\nioengine=libaio\nbssplit=64k/40:1024k/60,1024k/100\n\
                        cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n",
        )
        .unwrap();
        let c = j.workload.block().unwrap().cmdprio.clone().unwrap();
        assert_eq!(c.read.len(), 2);
        assert_eq!(
            c.read[1],
            PrioShare { bs: Some(crate::Bytes::kib(64)), pct: 75, prio: IoPrio { class: 3, level: 2 } }
        );
        assert!(c.write.is_empty());
        let e = job_of(
            "[a]\nfilename=/d/f\nsize=1m\nrw=randread\nioengine=libaio\ncmdprio_percentage=5\ncmdprio_bssplit=4k/5\n",
        )
        .unwrap_err();
        assert!(e.contains("exclude each other"), "{e}");
        // A synchronous engine has no per-request priority.
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\ncmdprio_percentage=5\n").unwrap_err();
        assert!(e.contains("io_uring's SQE or libaio's iocb"), "{e}");
        // log_prio=1 is a column of the per-I/O logs (file_logs); averaged logs have none.
        assert!(job_of("[a]\nfilename=/d/f\nsize=1m\nlog_prio=1\n").is_ok());
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nlog_prio=1\nwrite_lat_log=x\nlog_avg_msec=1000\n").unwrap_err();
        assert!(e.contains("log_prio=1 with log_avg_msec=1000"), "{e}");
    }

    #[test]
    fn randrepeat_0_draws_a_seed_each_reading_and_randseed_wins() {
        let text = "[a]\nfilename=/d/f\nsize=1m\nrw=randread\nrandrepeat=0\n";
        let seeds: std::collections::HashSet<u64> = (0..4).map(|_| job_of(text).unwrap().seed).collect();
        assert_eq!(seeds.len(), 4, "a new seed each reading: {seeds:?}");
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nrandrepeat=0\nrandseed=7\n").unwrap();
        assert_eq!(j.seed, 7);
        let a = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\n").unwrap().seed;
        assert_eq!(a, job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nrandrepeat=1\n").unwrap().seed);
    }

    /// allow_file_create=0: the job creates no file (`--no-create`); 1 (fio's default): as ever.
    #[test]
    fn allow_file_create_0_is_no_create() {
        let base = "[a]\nfilename=/d/f\nsize=1m\n";
        assert!(job_of(&format!("{base}allow_file_create=0\n")).unwrap().no_create);
        assert!(!job_of(&format!("{base}allow_file_create=1\n")).unwrap().no_create);
        assert!(!job_of(base).unwrap().no_create);
    }

    /// latency_target and its settings map onto the job's search, times in microseconds without
    /// a unit as fio reads them; the settings alone do nothing (fio's too); a bad percentile
    /// names the key.
    #[test]
    fn latency_target_maps_to_the_depth_search() {
        let base = "[a]\nfilename=/d/f\nsize=1m\nioengine=libaio\niodepth=128\n";
        let t = job_of(&format!("{base}latency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\n"))
            .unwrap()
            .latency_target
            .unwrap();
        assert_eq!(t.target, Duration::from_millis(500));
        assert_eq!(t.window, Duration::from_secs(5));
        assert_eq!((t.percentile, t.run), (99.9, false));
        let t = job_of(&format!("{base}latency_target=10ms\nlatency_run=1\n")).unwrap().latency_target.unwrap();
        assert_eq!((t.target, t.window, t.percentile, t.run), (Duration::from_millis(10), Duration::ZERO, 100.0, true));
        assert_eq!(job_of(&format!("{base}latency_window=5s\nlatency_percentile=50\n")).unwrap().latency_target, None);
        let e = job_of(&format!("{base}latency_target=1ms\nlatency_percentile=101\n")).unwrap_err();
        assert!(e.contains("latency_percentile") && e.contains("0 to 100"), "{e}");
    }

    #[test]
    fn dedupe_percentages_and_modes_map() {
        let d = |text: &str| job_of(text).map(|j| j.workload.block().unwrap().dedupe);
        let base = "[a]\nfilename=/d/f\nsize=1m\nrw=write\n";
        assert_eq!(
            d(&format!("{base}dedupe_percentage=50\n")).unwrap(),
            Some(crate::block::Dedupe { pct: 50, working_set: None, global: false })
        );
        // fio's working set is 5% unless given.
        let ws = d(&format!("{base}dedupe_percentage=50\ndedupe_mode=working_set\n")).unwrap();
        assert_eq!(ws.unwrap().working_set, Some(5));
        let ws = d(&format!("{base}dedupe_percentage=50\ndedupe_mode=working_set\ndedupe_working_set_percentage=50\n"))
            .unwrap();
        assert_eq!(ws.unwrap().working_set, Some(50));
        // dedupe_global shares the working set; in repeat mode fio ignores it.
        let ws = format!("{base}dedupe_percentage=50\ndedupe_mode=working_set\n");
        assert!(d(&format!("{ws}dedupe_global=1\n")).unwrap().unwrap().global);
        assert!(!d(&format!("{ws}dedupe_global=0\n")).unwrap().unwrap().global);
        assert!(!d(&format!("{base}dedupe_percentage=50\ndedupe_global=1\n")).unwrap().unwrap().global);
        assert!(d(&format!("{base}dedupe_mode=spread\n")).unwrap_err().contains("working_set"));
    }

    #[test]
    fn fadvise_hint_maps_with_fios_default() {
        use crate::block::Fadvise;
        let f = |text: &str| job_of(text).unwrap().workload.block().unwrap().fadvise;
        assert_eq!(f("[a]\nfilename=/d/f\nsize=1m\nrw=randread\n"), Fadvise::Pattern, "fio's default is 1");
        assert_eq!(f("[a]\nfilename=/d/f\nsize=1m\nfadvise_hint=0\n"), Fadvise::None);
        assert_eq!(f("[a]\nfilename=/d/f\nsize=1m\nfadvise_hint=random\n"), Fadvise::Random);
        assert_eq!(Fadvise::Pattern.random_for(crate::Rw::RandRead), Some(true));
        assert_eq!(Fadvise::Pattern.random_for(crate::Rw::Read), Some(false));
    }

    #[test]
    fn flow_weights_ids_and_sleeps_map() {
        let b = |text: &str| job_of(text).map(|j| j.workload.block().cloned().unwrap());
        let f = b("[a]\nfilename=/d/f\nsize=1m\nflow=8\nflow_id=2\nflow_sleep=1000\n").unwrap().flow.unwrap();
        assert_eq!((f.weight, f.id, f.sleep), (8, 2, Duration::from_millis(1)));
        // Without a weight fio ignores the rest; so does the mapping.
        assert_eq!(b("[a]\nfilename=/d/f\nsize=1m\nflow_sleep=1000\nflow_id=3\n").unwrap().flow, None);
        assert!(b("[a]\nfilename=/d/f\nsize=1m\nflow=-1\n").unwrap_err().contains("from 0 up"));
    }

    #[test]
    fn fios_random_map_is_the_default_for_uniform_random_offsets() {
        let map = |text: &str| job_of(text).unwrap().workload.block().unwrap().random_map;
        assert!(map("[a]\nfilename=/d/f\nsize=1m\nrw=randrw\n"));
        assert!(map("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nnorandommap=0\n"));
        assert!(!map("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nnorandommap\n"));
        // Sequential, or another distribution (fio takes busy offsets there): no map.
        assert!(!map("[a]\nfilename=/d/f\nsize=1m\nrw=read\n"));
        assert!(!map("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.1\n"));
    }

    #[test]
    fn random_generator_and_io_submit_mode_say_how_iolab_runs_them() {
        assert!(job_of("[a]\nfilename=/d/f\nsize=1m\nrandom_generator=tausworthe64\nio_submit_mode=inline\n").is_ok());
        // lfsr: each block once per pass, iolab's random map with one block size; with several,
        // the map's cut I/Os are not fio's (it keeps every size): not mapped.
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nrandom_generator=lfsr\n").unwrap();
        assert!(j.workload.block().unwrap().random_map);
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nrw=randread\nbssplit=4k/50:8k/50\nrandom_generator=lfsr\n")
            .unwrap_err();
        assert!(e.contains("random_generator=lfsr") && e.contains("several block sizes"), "{e}");
        assert!(job_of("[a]\nfilename=/d/f\nrandom_generator=mt\n").unwrap_err().contains("tausworthe64"));
        assert!(job_of("[a]\nfilename=/d/f\nsize=1m\nio_submit_mode=offload\n").is_ok());
        assert!(job_of("[a]\nfilename=/d/f\nio_submit_mode=later\n").unwrap_err().contains("inline"));
    }

    /// `iolab convert` of these options gives TOML that runs as the same plan.
    #[test]
    fn the_new_options_convert_to_toml_that_plans_the_same() {
        let text = "[global]\nfilename=/d/f\nsize=1m\nexitall\n\
                    [a]\nrw=randrw\nbssplit=4k/50:8k/50,64k/100\nstartdelay=500ms-3\nthinktime=250\nthinktime_spin=50\n\
                    thinktime_blocks=8\nthinktime_blocks_type=issue\nthinktime_iotime=9\nloops=3\nnumber_ios=100\n";
        let env = super::super::tests::Mem {
            files: [(PathBuf::from("/j/job.fio"), text.to_string())].into_iter().collect(),
            vars: Default::default(),
            sizes: Default::default(),
        };
        let f = super::super::parse(Path::new("/j/job.fio"), &env, false).unwrap();
        let toml_text = f.to_toml();
        let back =
            crate::parse_job_file(&toml_text, &JobPatch::default()).unwrap_or_else(|e| panic!("{e}\n{toml_text}"));
        assert_eq!(back, f.plan(&JobPatch::default()).unwrap(), "{toml_text}");
        let b = back.phases[0].jobs[0].workload.block().unwrap().clone();
        assert!(
            b.write_bs.is_some() && b.think.is_some() && b.loops == Some(3) && b.max_ios == Some(100),
            "{toml_text}"
        );
    }
}
