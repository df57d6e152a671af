//! fio's options onto iolab's [`JobPatch`]: each job section starts from the `[global]`
//! options above it, its own options are read in order (so `kb_base` applies to what follows
//! it), and the result becomes one job table. Phases follow `stonewall`; `numjobs` is threads;
//! per-direction values (`bs=4k,64k`) map when the directions the job does agree.

use super::ini::{Opt, Section};
use super::value::{self, KbBase};
use super::{FioError, FioFile, FioJob, FioPhase, Loc, Problem};
use crate::job::{BlockSizes, Dist, EngineKind, Rw, SyncMode};
use crate::patch::JobPatch;
use crate::units::Bytes;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    size: Option<(u64, Loc)>,
    io_size: Option<(u64, Loc)>,
    offset: Option<(u64, Loc)>,
    rw: Option<(Rw, Option<u64>, String, Loc)>,
    mix: Option<(u8, Loc)>,
    bs: Option<(PerDir<Bs>, String, Loc)>,
    bssplit: Option<(PerDir<Bs>, String, Loc)>,
    engine: Option<(String, Loc)>,
    iodepth: Option<(u64, Loc)>,
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
    dist: Option<(Dist, Loc)>,
    seed: Option<(u64, Loc)>,
    compress: Option<(u8, Loc)>,
    invalidate: Option<(bool, Loc)>,
    stonewall: bool,
    kb: KbBase,
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
    cpus: Option<(crate::cpus::Cpus, Loc)>,
}

/// What mapping gathers across the file: notes and unmapped options, each said once.
#[derive(Default)]
struct Said {
    notes: Vec<Problem>,
    unmapped: Vec<Problem>,
    seen: HashSet<(Loc, String)>,
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

pub fn map(path: &Path, sections: &[Section], lenient: bool) -> Result<FioFile, FioError> {
    let mut said = Said::default();
    let mut globals: Vec<Opt> = Vec::new();
    let mut phases: Vec<FioPhase> = Vec::new();
    for s in sections {
        if s.is_global() {
            globals.extend(s.opts.iter().cloned());
            continue;
        }
        let mut raw = Raw::default();
        for o in globals.iter().chain(&s.opts) {
            read_option(&mut raw, o, &mut said).map_err(FioError::At)?;
        }
        let stonewall = raw.stonewall;
        let job = finish(raw, s, &mut said).map_err(FioError::At)?;
        match phases.last_mut() {
            Some(p) if !stonewall => p.jobs.push(job),
            _ => phases.push(FioPhase { name: String::new(), jobs: vec![job] }),
        }
    }
    if phases.is_empty() {
        let at = sections.first().map(|s| s.at.clone()).unwrap_or(Loc { file: path.to_path_buf(), line: 0 });
        return Err(FioError::At(Problem::new(
            at,
            "no job section: a fio job file needs a [job] beside [global]".into(),
        )));
    }
    name_phases_and_jobs(&mut phases, &mut said);
    exit_all(&mut phases);
    if !said.unmapped.is_empty() && !lenient {
        return Err(FioError::Unmapped(said.unmapped));
    }
    Ok(FioFile { path: path.to_path_buf(), phases, notes: said.notes, skipped: said.unmapped })
}

/// fio's exitall, global once any job sets it: every job's end ends the others of its phase.
fn exit_all(phases: &mut [FioPhase]) {
    let Some(at) = phases.iter().flat_map(|p| &p.jobs).find_map(|j| j.from.get("exit_all").cloned()) else { return };
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
        "size" => r.size = Some((size(o)?, at)),
        "io_size" => r.io_size = Some((size(o)?, at)),
        "offset" => r.offset = Some((size(o)?, at)),
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
        "rate" | "rate_iops" => read_rate(r, o)?,
        "random_distribution" => read_dist(r, o, said)?,
        "randseed" => r.seed = Some((int(o)?, at)),
        "buffer_compress_percentage" => r.compress = Some((pct(o)?, at)),
        "stonewall" => r.stonewall = flag(o)?,
        // Reporting groups: iolab reports each job (its threads merged) as fio does under
        // group_reporting, so these change nothing.
        "new_group" | "group_reporting" => {
            flag(o)?;
        }
        // iolab's workers are always threads.
        "thread" => {
            flag(o)?;
        }
        // iolab draws random offsets independently, as fio does without its random map.
        "norandommap" => {
            if !flag(o)? {
                said.unmapped(&at, "norandommap=0: iolab keeps no random map (each block once per pass)".into());
            }
        }
        // iolab's offsets repeat from the seed, as fio's do under randrepeat=1 (its default).
        "randrepeat" => {
            if !value::boolean(need(o)?).map_err(|e| bad(o, e))? {
                said.unmapped(&at, "randrepeat=0: iolab's offsets always repeat from the seed (randseed)".into());
            }
        }
        "kb_base" => {
            r.kb = match need(o)? {
                "1024" => KbBase(1024),
                "1000" => KbBase(1000),
                other => return Err(bad(o, format!("`{other}`: kb_base is 1024 or 1000"))),
            }
        }
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
        // fio's exitall is global: once any job sets it, every job's end ends its group.
        "exitall" => {
            if flag(o)? {
                r.exitall = Some(at);
            }
        }
        "random_generator" => match need(o)? {
            "tausworthe" | "tausworthe64" => said.note(&at, format!("random_generator={}: iolab draws random offsets with xoshiro256++ seeded by randseed: the same distribution, another sequence", need(o)?)),
            "lfsr" => said.unmapped(&at, "random_generator=lfsr: it never repeats an offset within a pass; iolab draws offsets independently (as fio's norandommap)".into()),
            other => return Err(bad(o, format!("`{other}`: fio's are tausworthe, lfsr and tausworthe64"))),
        },
        "cpus_allowed" => r.cpus = Some((need(o)?.parse().map_err(|e| bad(o, e))?, at)),
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
        "exit_what" => match need(o)? {
            "group" | "stonewall" => {}
            other => said.unmapped(&at, format!("exit_what={other}: iolab ends the phase's jobs (fio's group and stonewall, the same in iolab, where one phase runs at a time)")),
        },
        _ => said.unmapped(&at, format!("`{}` is not an option iolab maps", o.key)),
    }
    Ok(())
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

/// `rw=PATTERN[:MODIFIER]`: fio's patterns (trims are not mapped).
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
            "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
                said.unmapped(&at, format!("{}={v}: iolab does not trim", o.key));
                return Ok(());
            }
            other => return Err(bad(o, format!("unknown pattern `{other}`; fio's are read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite"))),
        };
    let modifier = match modifier {
        None => None,
        Some(m) => Some(value::size(m, kb).map_err(|e| bad(o, e))?),
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
    let iops = o.key == "rate_iops";
    let dirs = per_dir(v, |s| if iops { value::int(s) } else { value::size(s, kb) }).map_err(|e| bad(o, e))?;
    let dirs = dirs.map(|d| d.filter(|v| *v > 0));
    if iops {
        r.rate_iops = Some((dirs, at));
    } else {
        r.rate = Some((dirs, at));
    }
    Ok(())
}

/// `random_distribution`: random (uniform) and zipf:THETA.
fn read_dist(r: &mut Raw, o: &Opt, said: &mut Said) -> Result<(), Problem> {
    let at = o.at.clone();
    let v = need(o)?;
    let dist = match v.split_once(':') {
        None if v == "random" => Dist::Uniform,
        Some(("zipf", theta)) if !theta.contains([':', ',']) => {
            format!("zipf:{theta}").parse().map_err(|e: String| bad(o, e))?
        }
        _ => {
            said.unmapped(&at, format!("random_distribution={v}: iolab maps random and zipf:THETA"));
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
    let used: Vec<&Bs> = [(0, rw.reads()), (1, rw.writes())]
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

/// A per-direction rate for the directions `rw` uses: one value for a one-direction job.
fn job_rate(rates: &Option<(PerDir<u64>, Loc)>, rw: Rw, what: &str, said: &mut Said) -> Option<(u64, Loc)> {
    let (dirs, at) = rates.as_ref()?;
    if rw.is_mixed() {
        if dirs[0].is_some() || dirs[1].is_some() {
            said.unmapped(at, format!("{what} on a mixed job caps reads and writes each; iolab's caps the job's total, so it is not mapped"));
        }
        return None;
    }
    let v = if rw.reads() { dirs[0] } else { dirs[1] }?;
    Some((v, at.clone()))
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

fn finish(r: Raw, s: &Section, said: &mut Said) -> Result<FioJob, Problem> {
    let mut o = Out { p: JobPatch::default(), from: BTreeMap::new() };
    finish_where(&r, s, &mut o, said);
    let rw = finish_pattern(&r, &mut o, said);
    let threads = finish_engine(&r, &mut o, said);
    finish_durability(&r, &mut o, said);
    finish_time(&r, rw, threads, &mut o, said);
    if let Some((d, at)) = &r.dist {
        o.set("dist", at);
        o.p.dist = Some(*d);
    }
    if let Some((v, at)) = &r.seed {
        o.set("seed", at);
        o.p.seed = Some(*v);
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
    if let Some(at) = &r.exitall {
        o.set("exit_all", at);
        o.p.exit_all = Some(true);
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
    Ok(FioJob { patch: o.p, from: o.from, at: s.at.clone() })
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
fn finish_where(r: &Raw, s: &Section, o: &mut Out, said: &mut Said) {
    let (name, at) = r.name.clone().unwrap_or((s.name.clone(), s.at.clone()));
    o.set("name", &at);
    o.p.name = Some(name);

    // Where: fio's filename (under directory), else a directory (one file per thread, as
    // fio's jobname.N.0 files), else the current directory.
    let target: (PathBuf, Loc) = match (&r.filename, &r.directory) {
        (Some((f, at)), d) => {
            if f.contains(':') {
                said.unmapped(at, format!("filename={f}: several files in one job are not mapped"));
            }
            let path = match d {
                Some((d, _)) if !Path::new(f).is_absolute() => Path::new(d).join(f),
                _ => PathBuf::from(f),
            };
            (path, at.clone())
        }
        (None, Some((d, at))) => {
            if d.contains(':') {
                said.unmapped(at, format!("directory={d}: several directories are not mapped"));
            }
            (PathBuf::from(d), at.clone())
        }
        (None, None) => (PathBuf::from("."), s.at.clone()),
    };
    o.set("target", &target.1);
    o.p.target = Some(target.0);
    if let Some((v, at)) = &r.size {
        o.set("size", at);
        o.p.size = Some(Bytes(*v));
    }
    if let Some((v, at)) = r.offset.as_ref().filter(|o| o.0 > 0) {
        o.set("offset", at);
        o.p.offset = Some(Bytes(*v));
    }
}

/// The access pattern: rw, the read mix, the block sizes and a sequential pattern's hole.
fn finish_pattern(r: &Raw, o: &mut Out, said: &mut Said) -> Rw {
    let rw = match &r.rw {
        Some((rw, modifier, text, at)) => {
            o.set("rw", at);
            // A sequential pattern's hole (`rw=write:4k`) becomes a stride below, once the block
            // size is known.
            if let Some(m) = modifier.filter(|m| rw.is_random() && *m > 1) {
                said.unmapped(at, format!("rw={text}: {m} I/Os per random offset is not mapped"));
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
    if let Some((_, Some(hole), text, at)) = &r.rw {
        if !rw.is_random() && *hole > 0 {
            let bs = o.p.bs.clone().unwrap_or(BlockSizes::single(Bytes(4096)));
            if bs.0.len() == 1 {
                o.set("stride", at);
                o.p.stride = Some(Bytes(bs.max().0 + hole));
            } else {
                said.unmapped(at, format!("rw={text}: a hole after each block with several block sizes is not mapped"));
            }
        }
    }

    rw
}

/// Threads, the engine, its depth and O_DIRECT; the job's threads.
fn finish_engine(r: &Raw, o: &mut Out, said: &mut Said) -> u64 {
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
                "libaio" | "posixaio" => {
                    said.note(at, format!("ioengine={e} runs on io_uring, at the same queue depth"));
                    EngineKind::IoUring
                }
                "mmap" => EngineKind::Mmap,
                "null" => EngineKind::Null,
                other => {
                    said.unmapped(at, format!("ioengine={other}: iolab's engines are psync, io_uring, mmap and null"));
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
    if let Some((d, at)) = &r.direct {
        o.set("direct", at);
        o.p.direct = Some(*d);
    }

    threads
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
                    (None, Some((sz, sat))) => {
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
    if let Some((v, at)) = &r.io_size {
        o.set("io_size", at);
        o.p.io_size = Some(Bytes(*v));
    }
    if let Some((t, at)) = &r.ramp {
        if !t.is_zero() {
            o.set("ramp", at);
            o.p.ramp = Some(*t);
        }
    }

    // fio's rates are per clone; iolab's are the job's, shared among its threads.
    if let Some((v, at)) = job_rate(&r.rate, rw, "rate", said) {
        o.set("rate", &at);
        o.p.rate = Some(Bytes(v.saturating_mul(threads)));
        if threads > 1 {
            said.note(
                &at,
                format!("rate is per job in fio: {threads} jobs make {} B/s in all", v.saturating_mul(threads)),
            );
        }
    }
    if let Some((v, at)) = job_rate(&r.rate_iops, rw, "rate_iops", said) {
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
        let t = j.workload.block().unwrap().think.unwrap();
        assert_eq!(
            (t.time, t.spin, t.every, t.on_issue),
            (Duration::from_micros(250), Duration::from_micros(50), Some(8), true)
        );
        let j = job_of("[a]\nfilename=/d/f\nsize=1m\nthinktime=1s\nthinktime_iotime=9\n").unwrap();
        let t = j.workload.block().unwrap().think.unwrap();
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
        };
        let f = super::super::parse(Path::new("/j/job.fio"), &env, false).unwrap();
        let plan = f.plan(&JobPatch::default()).unwrap();
        assert!(plan.phases.iter().flat_map(|p| &p.jobs).all(|j| j.exit_all), "fio's exitall is global");
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nexitall\nexit_what=all\n").unwrap_err();
        assert!(e.contains("exit_what=all"), "{e}");
        assert!(!job_of("[a]\nfilename=/d/f\nsize=1m\n").unwrap().exit_all);
    }

    #[test]
    fn random_generator_and_io_submit_mode_say_how_iolab_runs_them() {
        assert!(job_of("[a]\nfilename=/d/f\nsize=1m\nrandom_generator=tausworthe64\nio_submit_mode=inline\n").is_ok());
        let e = job_of("[a]\nfilename=/d/f\nsize=1m\nrandom_generator=lfsr\n").unwrap_err();
        assert!(e.contains("random_generator=lfsr") && e.contains("norandommap"), "{e}");
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
