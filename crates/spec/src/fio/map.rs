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
    ss: SsRaw,
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
    if !said.unmapped.is_empty() && !lenient {
        return Err(FioError::Unmapped(said.unmapped));
    }
    Ok(FioFile { path: path.to_path_buf(), phases, notes: said.notes, skipped: said.unmapped })
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
        "steadystate"
        | "ss"
        | "steadystate_duration"
        | "ss_dur"
        | "steadystate_ramp_time"
        | "ss_ramp"
        | "steadystate_check_interval"
        | "ss_interval" => read_ss(&mut r.ss, o)?,
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
        _ => said.unmapped(&at, format!("`{}` is not an option iolab maps", o.key)),
    }
    Ok(())
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

/// The block sizes of the directions `rw` uses, if they agree.
fn job_bs(r: &Raw, rw: Rw, said: &mut Said) -> Option<(BlockSizes, Loc)> {
    let source = r.bssplit.as_ref().or(r.bs.as_ref())?;
    let (dirs, text, at) = source;
    let default = Bs::Fixed(4096);
    let used: Vec<&Bs> = [(0, rw.reads()), (1, rw.writes())]
        .into_iter()
        .filter(|(_, u)| *u)
        .map(|(i, _)| dirs[i].as_ref().unwrap_or(&default))
        .collect();
    if used.windows(2).any(|w| w[0] != w[1]) {
        said.unmapped(
            at,
            format!("{text}: reads and writes of different sizes are not mapped (iolab has one size list per job)"),
        );
        return None;
    }
    match block_sizes(used[0]) {
        Some(b) => Some((b, at.clone())),
        None => {
            said.unmapped(at, format!("{text}: more than 256 sizes in the range; not mapped"));
            None
        }
    }
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
    finish_ss(&r.ss, &mut o, said);
    if let Some((d, at)) = &r.dist {
        o.set("dist", at);
        o.p.dist = Some(*d);
    }
    if let Some((v, at)) = &r.seed {
        o.set("seed", at);
        o.p.seed = Some(*v);
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
    if let Some((bs, at)) = job_bs(r, rw, said) {
        o.set("bs", &at);
        o.p.bs = Some(bs);
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
    match o.key.as_str() {
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
}
