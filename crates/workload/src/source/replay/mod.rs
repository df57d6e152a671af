//! Trace replay as an operation source: one worker per traced thread returns that thread's
//! recorded calls in program order — lseek then write stays `Seek` then `WriteCur`, pwrite stays
//! `Write`, readv/writev stay vectored at the file position, opens keep their flags (O_DIRECT
//! gets the engine's aligned buffers) — with the thread's think time between calls (or the
//! recorded instants, none, or scaled gaps). Threads wait for one another only on a shared path
//! or its directory, in the order the trace saw (ROOT/ARTC, SOSP'13), and threads that shared a
//! descriptor share one open file description (one file position). Paths are remapped under
//! the job's directory and resolved beneath it.
//!
//! The executor runs every replay job through [`check`] (the trace is the one planned, within
//! its limits, and the target holds nothing the replay may not touch), [`run::ReplayRun::prepare`]
//! (the target made as the trace expects it) and, after the workers, [`run::ReplayRun::finish`]
//! (what the replay made marked as iolab's; the fidelity into the job's result), wherever the
//! job runs: on this machine or on an agent.

pub mod block_source;
pub mod blocks;
pub mod plan;
pub mod rings;
pub mod run;
pub mod target;
#[cfg(test)]
mod tests;

pub use plan::{default_strip, ReplayPlan};
pub use run::{ReplayRun, ReplaySource};

use super::{io_error, SourceError};
use iolab_spec::{Job, ReplayJob};
use iolab_trace::format::Reader;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The engine's open flags for a recorded open's bits.
pub fn open_flags(bits: u32) -> super::OpenFlags {
    use iolab_trace::format::oflags;
    super::OpenFlags {
        read: bits & 3 != oflags::O_WRONLY,
        write: bits & 3 != 0,
        create: bits & oflags::O_CREAT != 0,
        exclusive: bits & oflags::O_EXCL != 0,
        truncate: bits & oflags::O_TRUNC != 0,
        append: bits & oflags::O_APPEND != 0,
        direct: bits & oflags::O_DIRECT != 0,
        dsync: bits & oflags::O_DSYNC != 0 && bits & oflags::O_SYNC != oflags::O_SYNC,
        sync: bits & oflags::O_SYNC == oflags::O_SYNC,
    }
}

/// CRC-32 and length of a file: what a plan records and a job checks.
/// A trace must be a regular file: a FIFO or a device is refused, never read for ever.
pub fn fingerprint(path: &Path) -> io::Result<(u64, u32)> {
    use std::io::Read;
    let mut f = open_trace(path)?;
    let mut crc = flate2::Crc::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        crc.update(&buf[..n]);
    }
    Ok((crc.amount() as u64, crc.sum()))
}

/// A trace file opened for reading, if it is a regular file.
fn open_trace(path: &Path) -> io::Result<std::fs::File> {
    iolab_spec::input::open_regular(path, "trace").map_err(|e| match e {
        iolab_spec::input::InputError::Open { err, .. } => err,
        e => io::Error::other(e),
    })
}

/// The records of a trace file, one at a time.
pub fn records(
    path: &Path,
) -> Result<impl Iterator<Item = Result<iolab_trace::Record, iolab_trace::format::FormatError>>, SourceError> {
    let f = open_trace(path).map_err(io_error("cannot open", path, ""))?;
    let mut r =
        Reader::new(io::BufReader::new(f)).map_err(|source| SourceError::Trace { path: path.to_path_buf(), source })?;
    Ok(std::iter::from_fn(move || r.next_record().transpose()))
}

/// The traced directory a trace file's replay stands the target for (see [`default_strip`]).
pub fn default_strip_of(path: &Path) -> Result<std::path::PathBuf, SourceError> {
    default_strip(records(path)?).map_err(|source| SourceError::Trace { path: path.to_path_buf(), source })
}

/// Read and plan a replay job's trace, checking it is the file the plan named.
pub fn load(r: &ReplayJob) -> Result<ReplayPlan, SourceError> {
    let (bytes, crc) = fingerprint(&r.trace).map_err(io_error("cannot read the trace", &r.trace, ""))?;
    if (bytes, crc) != (r.trace_bytes, r.trace_crc32) {
        return Err(said!(
            "the trace {} is not the one planned ({bytes} bytes, CRC-32 {crc:08x}; the plan says {} bytes, {:08x})",
            r.trace.display(),
            r.trace_bytes,
            r.trace_crc32
        ));
    }
    ReplayPlan::build(records(&r.trace)?, r)
}

/// A replay job's plan and what it expects of its target, checked.
#[derive(Debug)]
pub struct Checked {
    pub plan: ReplayPlan,
    pub expect: target::Expect,
}

type Cache = Mutex<Vec<(String, Arc<Checked>)>>;
/// Plans checked by this process, so `check_plan` then `run_plan` read a trace once; emptied
/// at the end of each run ([`forget`]).
static CHECKED: Cache = Mutex::new(Vec::new());

/// What a plan depends on: the job's replay options (trace, timing, strip, limits).
fn key(r: &ReplayJob) -> String {
    format!("{r:?}")
}

/// Check a replay job before anything is written: the trace is the one planned and within its
/// limits, it replays something, and the target holds nothing it may not touch (files iolab did
/// not make that the replay would change, links where it works, files it needs and
/// `--prepare` is not given to make).
/// `b` is the job's directory, opened once by the caller.
pub fn check(job: &Job, r: &ReplayJob, b: &iolab_engine::beneath::Beneath) -> Result<Arc<Checked>, SourceError> {
    let checked = plan_for(r)?;
    target::check(b, &checked.expect, r.prepare, job.overwrite)?;
    if job.threads as usize != checked.plan.threads.len() {
        return Err(said!(
            "the trace has {} threads to replay; the job asks for {} (one worker per traced thread)",
            checked.plan.threads.len(),
            job.threads
        ));
    }
    Ok(checked)
}

/// A block-level trace's replay job checked (`None` for a call trace's): one worker, and a
/// size that reaches as far as the trace's requests. Its target, a file or a device, is then
/// checked and laid out as a block job's.
pub fn check_blocks(job: &Job, r: &ReplayJob) -> Result<Option<Arc<Checked>>, SourceError> {
    let checked = plan_for(r)?;
    let Some(b) = &checked.plan.blocks else { return Ok(None) };
    if job.threads != 1 {
        return Err(said!("a block-level trace replays on one thread; the job asks for {}", job.threads));
    }
    if job.size.is_none_or(|s| s.0 < b.extent) {
        return Err(said!(
            "the trace's requests on {} reach {} bytes in; the job's size must be at least that",
            b.device,
            b.extent
        ));
    }
    Ok(Some(checked))
}

/// A replay job's plan (read once per run; see [`forget`]), without looking at the target:
/// what a caller building the job asks for the number of threads.
pub fn plan_for(r: &ReplayJob) -> Result<Arc<Checked>, SourceError> {
    let k = key(r);
    let cached = CHECKED.lock().ok().and_then(|c| c.iter().find(|(x, _)| *x == k).map(|(_, p)| p.clone()));
    let checked = match cached {
        Some(c) => c,
        None => {
            let plan = load(r)?;
            let expect = target::Expect::of(&plan);
            let c = Arc::new(Checked { plan, expect });
            if let Ok(mut cache) = CHECKED.lock() {
                if cache.len() >= 4 {
                    cache.remove(0);
                }
                cache.push((k, c.clone()));
            }
            c
        }
    };
    Ok(checked)
}

/// Let go of the plans checked so far.
pub fn forget() {
    if let Ok(mut c) = CHECKED.lock() {
        c.clear();
    }
}
