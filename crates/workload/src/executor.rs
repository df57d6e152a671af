//! The executor: a plan in, results out. Phases run in order; the jobs of a phase start
//! together at one instant (a barrier, or a wall-clock time given from outside), each thread
//! with its own engine. The framework, not the engine, takes timestamps: an op's latency runs
//! from its issue (or, under a rate, from its scheduled time) to its reaping. Each worker sends
//! its counts once a second; the coordinating thread merges them into totals and a timeline
//! and hands each finished second, each system sample and the phase as it stands to a [`Sink`]
//! as they come, keeping none of them: a run's memory does not grow with its length. Nothing
//! here reads the terminal.

use crate::aggregate::{Aggregator, Msg};
use crate::clock::TscClock;
use crate::cpu;
use crate::layout::{self, LayoutError, Target, TargetKind};
use crate::place::{Place, Roots};
use crate::rendezvous::Rendezvous;
use crate::source::block::BlockSource;
use crate::source::replay::block_source::BlockReplaySource;
use crate::source::replay::{self, Checked, ReplayRun, ReplaySource};
use crate::source::verify::Validating;
use crate::source::verify_files::{FileSet, FilesValidating};
use crate::source::{self, JobShared, Names, NoSource, Run as _, Source, SourceError};
use crate::validation;
use crate::worker::{self, Window};
use iolab_engine::beneath::Beneath;
use iolab_model::*;
use iolab_spec::prealloc::Prealloc;
use iolab_spec::{Job, Phase, Plan, Workload};
use iolab_sysstat::{ProcRoot, Sampler, SysRoots};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Barrier, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// The per-phase start hook: called once every worker of phase `phase` is ready (files open,
/// engines built, buffers filled), before any of them starts. It may wait (for other nodes to
/// be ready, say) and returns the wall-clock instant the phase starts at (`None`: at once).
/// The multi-node coordinator plugs in here.
pub trait StartGate: Send + Sync {
    fn open(&self, phase: usize, stop: &AtomicBool) -> Option<SystemTime>;
}

/// How the outside world steers a run: stop it, or start its phases at agreed instants.
#[derive(Clone, Default)]
pub struct Control {
    pub stop: Arc<AtomicBool>,
    /// Start every phase's measured work no earlier than this wall-clock time.
    pub start_at: Option<SystemTime>,
    /// Asked before each phase starts (see [`StartGate`]).
    pub gate: Option<Arc<dyn StartGate>>,
    /// Sample CPU, disks and network this often beside each phase (None: don't).
    pub sample_interval: Option<Duration>,
    /// The run's own mark (several steps on several nodes): files it creates are noted with
    /// it, and files noted with it may be written again (see [`layout::RunMark`]).
    pub run_mark: Option<layout::RunMark>,
    /// The node's name in validation stamps (`None`: the host name).
    pub node: Option<String>,
    /// Key maps handed over by the coordinator for the files validated (`--verify-on other`).
    pub handed: Vec<iolab_verify::HandedMap>,
    /// The run's lease (an agent's, renewed by its coordinator's heartbeats): once it has run
    /// out, no worker issues anything more and no layout writes ([`crate::lease`]).
    pub lease: Option<Arc<crate::lease::Lease>>,
    /// How the run's paths are reached: as named, or beneath an agent's `--allow` directories
    /// with no link followed ([`crate::place`]).
    pub roots: Roots,
    /// An agent's run on several nodes: a phase judged for steady state does not end when
    /// this node is steady, only once its coordinator has ended it here (every node and the
    /// nodes' sum steady), or at its maximum ([`crate::steady::PhaseEnds`]).
    pub phase_ends: Option<Arc<crate::steady::PhaseEnds>>,
}

/// The run's events go to a [`Sink`] (iolab_model::events: the one stream of the executor,
/// the agent's forwarding and the coordinator's observer). The seconds of the timeline and the
/// system samples reach a sink only: the [`PhaseResult`]s of `PhaseEnd` and of the returned
/// [`RunResult`] come without them (`timeline` and `system.samples` empty). A sink keeps them
/// (the CLI's store, [`crate::Keep`]) or lets them go.
pub use iolab_model::events::{Expect, NoSink, Sink};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Spec(#[from] iolab_spec::SpecError),
    #[error("job `{job}`: {source}")]
    Replay { job: String, source: SourceError },
    #[error(transparent)]
    Validation(#[from] validation::ValidationError),
    /// The plan needs more memory than this process may take (checked before any I/O).
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    /// A phase's worker thread could not be started (none of its workers did any I/O).
    #[error("could not start worker thread {worker} of {workers} (job `{job}`, {threads} threads): {source}; ask for fewer threads or raise the system's limits (ulimit -u, ulimit -v)")]
    Spawn { worker: usize, workers: usize, job: String, threads: u32, source: std::io::Error },
}

/// Per phase, per job: the replay job's checked plan (None for other workloads).
type Replays = Vec<Vec<Option<Arc<Checked>>>>;
/// Per phase, per job: its targets.
type Targets = Vec<Vec<Vec<Target>>>;
/// A phase made ready: each job's prepared replay (None for other workloads), the files
/// created for it now, each job's targets as they are now, and each job's own directory
/// (a personality's or a replay's, opened once) where it has one, and what its layout did.
struct Prepared {
    runs: Vec<Option<Arc<ReplayRun>>>,
    created: HashSet<PathBuf>,
    targets: Vec<Vec<Target>>,
    dirs: Vec<Option<Arc<Beneath>>>,
    /// What its layout wrote (and how long it took), if anything.
    laid_out: Option<LayoutDone>,
}

/// Check every phase's targets before anything is written; a refusal stops the whole plan.
pub fn check_plan(plan: &Plan) -> Result<Targets, RunError> {
    check_all(plan, None, &mut Place::default()).map(|(targets, _)| targets)
}

/// [`check_plan`] within a run that has its own mark.
pub fn check_plan_in_run(plan: &Plan, run: Option<&layout::RunMark>) -> Result<Targets, RunError> {
    check_all(plan, run, &mut Place::default()).map(|(targets, _)| targets)
}

/// [`check_plan_in_run`], its paths reached through `roots` (beneath an agent's `--allow`).
pub fn check_plan_at(plan: &Plan, run: Option<&layout::RunMark>, roots: &Roots) -> Result<Targets, RunError> {
    check_all(plan, run, &mut Place::new(roots.clone())).map(|(targets, _)| targets)
}

fn check_all(plan: &Plan, run: Option<&layout::RunMark>, place: &mut Place) -> Result<(Targets, Replays), RunError> {
    plan.validate()?;
    place.set_ahead(true);
    let checked = check_phases(plan, run, place);
    place.set_ahead(false);
    checked
}

fn check_phases(plan: &Plan, run: Option<&layout::RunMark>, place: &mut Place) -> Result<(Targets, Replays), RunError> {
    let mut out = Vec::new();
    let mut replays = Vec::new();
    let limits = iolab_sysstat::memlimit::MemoryLimits::read();
    for p in &plan.phases {
        let mut jobs = Vec::new();
        let mut rs: Vec<Option<Arc<Checked>>> = Vec::new();
        for j in &p.jobs {
            if let Workload::Replay(r) = &j.workload {
                // A block-level trace replays onto a file or a device, checked as a block job's.
                let blocks =
                    replay::check_blocks(j, r).map_err(|source| RunError::Replay { job: j.name.clone(), source })?;
                if let Some(c) = blocks {
                    rs.push(Some(c));
                    jobs.push(layout::check_job_at(j, run, place)?);
                    continue;
                }
                // A replay names its own files, under the job's directory: the trace is read,
                // planned within its limits and checked against the target here, wherever the
                // job runs.
                let dir = match place.dir(&j.target) {
                    Ok(d) => d,
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotADirectory
                            || e.kind() == std::io::ErrorKind::NotFound =>
                    {
                        return Err(iolab_spec::SpecError::field(
                            &j.name,
                            "target",
                            format!("{} is not a directory; a replay runs in a directory", j.target.display()),
                        )
                        .into())
                    }
                    Err(e) => {
                        return Err(LayoutError::Refused { path: j.target.clone(), why: e.to_string() }.into());
                    }
                };
                let c = replay::check(j, r, &dir).map_err(|source| RunError::Replay { job: j.name.clone(), source })?;
                rs.push(Some(c));
                jobs.push(Vec::new());
                continue;
            }
            rs.push(None);
            if !j.engine.caps().opens_files() && !j.workload.makes_own_files() {
                // A block job on the null engine opens no file. A personality does real
                // filesystem work (its directories, its files' creation) whatever the engine.
                if j.size.is_none() {
                    return Err(iolab_spec::SpecError::field(&j.name, "size", "the null engine needs --size").into());
                }
                jobs.push(Vec::new());
            } else {
                jobs.push(layout::check_job_at(j, run, place)?);
            }
        }
        // The phase's jobs run at once: their memory is added up before anything is written.
        let needs: Vec<crate::memory::JobNeed> = p
            .jobs
            .iter()
            .zip(&jobs)
            .zip(&rs)
            .map(|((j, t), r): ((&iolab_spec::Job, &Vec<Target>), &Option<Arc<Checked>>)| {
                crate::memory::need(j, t, r.as_ref().map(|c| c.plan.memory))
            })
            .collect();
        crate::memory::check_phase(&p.name, &needs, &limits)?;
        out.push(jobs);
        replays.push(rs);
    }
    Ok((out, replays))
}

/// Run a plan. Refusals return `Err` with nothing written; once I/O has begun, failures and
/// interruptions come back inside the result, beside what was measured.
pub fn run_plan(plan: &Plan, ctl: &Control, sink: &mut dyn Sink) -> Result<RunResult, RunError> {
    let r = run_checked(plan, ctl, sink);
    replay::forget();
    r
}

fn run_checked(plan: &Plan, ctl: &Control, sink: &mut dyn Sink) -> Result<RunResult, RunError> {
    let mut place = Place::new(ctl.roots.clone());
    let (_, replays) = check_all(plan, ctl.run_mark.as_ref(), &mut place)?;
    let mut result = RunResult::begin(plan.clone());
    // Validated files of the phase before, whose key maps a later phase takes on.
    let mut carried = validation::Validated::new();
    // The files this run created, in every phase so far: a disk that fills up leaves them
    // partial, and the error names them.
    let mut made: HashSet<PathBuf> = HashSet::new();
    for (i, (phase, replays)) in plan.phases.iter().zip(replays).enumerate() {
        if ctl.stop.load(Ordering::Relaxed) {
            result.status = Status::Interrupted;
            break;
        }
        let Prepared { runs, created, targets, dirs, laid_out } =
            match prepare_phase(phase, &replays, ctl, &mut place, sink) {
                Ok(r) => r,
                Err(e) => {
                    if result.phases.is_empty() && !matches!(e, LayoutError::Interrupted { .. }) {
                        return Err(e.into()); // nothing measured yet: a plain refusal
                    }
                    result.status =
                        if matches!(e, LayoutError::Interrupted { .. }) { Status::Interrupted } else { Status::Failed };
                    result.error = Some(e.to_string());
                    break;
                }
            };
        let validated = match validation::open(phase, &targets, &created, &carried, ctl.node.as_deref(), &ctl.handed) {
            Ok(v) => v,
            Err(e) => {
                if result.phases.is_empty() {
                    return Err(e.into());
                }
                result.status = Status::Failed;
                result.error = Some(e.to_string());
                break;
            }
        };
        made.extend(created.iter().cloned());
        let file_sets = validation::file_sets(phase, ctl.node.as_deref(), &dirs);
        let mut pr = match run_phase(i, phase, &targets, (&runs, &dirs), (&validated, &file_sets), ctl, sink) {
            Ok(pr) => pr,
            Err(e) => {
                result.status = Status::Failed;
                result.error = Some(format!("phase `{}`: {e}", phase.name));
                break;
            }
        };
        validation::finish(phase, &validated, &mut pr);
        validation::finish_files(phase, &file_sets, &mut pr);
        pr.layout = laid_out;
        judge(&mut pr, phase);
        let maps = validation::handed_out(phase, &validated);
        if !maps.is_empty() {
            sink.key_maps(i, &maps);
        }
        carried = validated;
        // A replay marks what it made and judges its fidelity, into its job's result.
        for (run, job) in runs.iter().zip(pr.jobs.iter_mut()) {
            if let Some(run) = run {
                run.finish(job);
            }
        }
        // A job that ends the run (`--exit-run`, fio's exit_what=all): this phase is its last.
        let ends_run = phase.jobs.iter().find(|j| j.exit_run).map(|j| j.name.clone());
        let skipped: Vec<String> = plan.phases[i + 1..].iter().map(|p| format!("`{}`", p.name)).collect();
        if let (Some(job), false) = (&ends_run, skipped.is_empty()) {
            pr.notes.push(format!(
                "job `{job}` ended the run as it ended (--exit-run, fio's exit_what=all): phase{} {} never started",
                if skipped.len() == 1 { "" } else { "s" },
                skipped.join(", ")
            ));
        }
        sink.phase_end(i, &pr);
        let errors: Vec<String> =
            pr.jobs.iter().filter_map(|j| j.error.clone().map(|e| format!("job `{}`: {e}", j.name))).collect();
        let interrupted = pr.interrupted;
        result.phases.push(pr);
        if !errors.is_empty() {
            result.status = Status::Failed;
            let mut said = errors.join("; ");
            if let Some(left) = partial_files(&errors, &targets, &made) {
                said.push_str(&left);
            }
            result.error = Some(said);
            break;
        }
        if interrupted {
            result.status = Status::Interrupted;
            break;
        }
        if ends_run.is_some() {
            break;
        }
    }
    if result.status == Status::Running {
        result.status = Status::Complete;
    }
    Ok(result)
}

fn prepare_phase(
    phase: &Phase,
    replays: &[Option<Arc<Checked>>],
    ctl: &Control,
    place: &mut Place,
    sink: &mut dyn Sink,
) -> Result<Prepared, LayoutError> {
    let run = ctl.run_mark.as_ref();
    let halt = layout::Halt { stop: &ctl.stop, lease: ctl.lease.as_deref() };
    let seq_writes = phase.jobs.iter().any(|j| j.workload.writes());
    let refused = |path: &std::path::Path, e: std::io::Error| LayoutError::Refused {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    // Replays make their target what the trace expects (re-checked: an earlier phase may have
    // changed it), in the directory opened when the run was checked.
    let mut runs = Vec::new();
    let mut dirs: Vec<Option<Arc<Beneath>>> = Vec::new();
    for (job, checked) in phase.jobs.iter().zip(replays) {
        runs.push(match (&job.workload, checked) {
            (Workload::Replay(r), Some(c)) if c.plan.blocks.is_some() => {
                dirs.push(None);
                Some(ReplayRun::for_blocks(c.clone(), r))
            }
            (Workload::Replay(r), Some(c)) => {
                if r.prepare {
                    sink.message(&format!("preparing {} for the replay", job.target.display()));
                }
                let dir = place.dir(&job.target).map_err(|e| refused(&job.target, e))?;
                let own = dir.try_clone().map_err(|e| refused(&job.target, e))?;
                let replay = ReplayRun::prepare(c.clone(), job, r, own, &halt)
                    .map_err(|source| LayoutError::Source { path: job.target.clone(), source })?;
                dirs.push(Some(dir));
                Some(replay)
            }
            _ => {
                dirs.push(None);
                None
            }
        });
    }
    // Re-check: an earlier phase may have created or grown these files since the run was
    // checked (each reached through what was opened then).
    let mut targets: Vec<Vec<Target>> = Vec::with_capacity(phase.jobs.len());
    for (j, replaying) in phase.jobs.iter().zip(&runs) {
        let files = (j.engine.caps().opens_files() || j.workload.makes_own_files())
            && replaying.as_ref().is_none_or(|r| r.plan().blocks.is_some());
        targets.push(if files { layout::check_job_at(j, run, place)? } else { Vec::new() });
    }
    // A job that fills the filesystem (fio's fill_device) ends at ENOSPC: no space to ask for.
    let fills = |j: &Job| j.workload.block().is_some_and(|b| b.fill_fs);
    let sized: Vec<&Target> = targets.iter().zip(&phase.jobs).filter(|(_, j)| !fills(j)).flat_map(|(t, _)| t).collect();
    layout::check_space(&sized, seq_writes)?;
    personality_dirs(phase, place, run, sink, &mut dirs)?;
    let (created, laid_out) = lay_out_files(phase, &mut targets, run, &halt, sink)?;
    // fio's invalidate: the phase's reads start from the storage, not from what layout or an
    // earlier phase left in memory.
    for (job, ts) in phase.jobs.iter().zip(&targets) {
        if job.workload.block().is_some_and(|b| b.invalidate) && job.engine.caps().opens_files() {
            for t in ts {
                sink.message(&format!("dropping the cached pages of {} (invalidate)", t.path.display()));
                layout::drop_cached(t)?;
            }
        }
    }
    Ok(Prepared { runs, created, targets, dirs, laid_out })
}

/// Create and lay out a phase's files before it starts (each file once, by the job that sets
/// it up): returns the files this run created now and what the layout wrote.
fn lay_out_files(
    phase: &Phase,
    targets: &mut [Vec<Target>],
    run: Option<&layout::RunMark>,
    halt: &layout::Halt,
    sink: &mut dyn Sink,
) -> Result<(HashSet<PathBuf>, Option<LayoutDone>), LayoutError> {
    let mut seen = HashSet::new();
    let mut created = HashSet::new();
    let mut laid_out: Option<LayoutDone> = None;
    let began = Instant::now();
    // A file the phase's jobs share is laid out once, before the phase, if any of them reads
    // it (fio lays out a job's file before the phase: flow.fio's reader would otherwise read
    // past the end its writer has reached): the largest target that needs its data wins.
    let mut lays: HashMap<&std::path::Path, (&Job, &Target)> = HashMap::new();
    for (job, ts) in phase.jobs.iter().zip(targets.iter()).filter(|(j, _)| !j.workload.makes_own_files()) {
        for t in ts.iter().filter(|t| t.layout) {
            let e = lays.entry(t.path.as_path()).or_insert((job, t));
            if t.size > e.1.size {
                *e = (job, t);
            }
        }
    }
    let mut only_preallocated = preallocated_first(phase, targets, &lays);
    for (job, ts) in phase.jobs.iter().zip(targets.iter()) {
        if job.workload.makes_own_files() {
            continue;
        }
        for t in ts {
            if !seen.insert(t.path.clone()) {
                continue;
            }
            let (mut job, mut t) = match only_preallocated.get(t.path.as_path()) {
                Some(&first) => first,
                None => lays.get(t.path.as_path()).copied().unwrap_or((job, t)),
            };
            let created_now = !t.exists;
            if created_now {
                created.insert(t.path.clone());
            }
            layout::create_target_in_run(t, run)?;
            let first_preallocates = job
                .workload
                .block()
                .and_then(|b| b.prealloc)
                .filter(|_| only_preallocated.contains_key(t.path.as_path()));
            if let Some(how) = first_preallocates {
                sink.message(&format!(
                    "preallocating {} ({how}, {} bytes) as its first job, which writes without reading, before the measured window",
                    t.path.display(),
                    t.size
                ));
                layout::preallocate(t, how)?;
                let now =
                    t.at.open(iolab_engine::OpenOptions { read: true, ..Default::default() })
                        .and_then(|f| f.metadata());
                if now.is_ok_and(|m| m.len() >= t.size) {
                    continue;
                }
                // No room made (fallocate unsupported: ext2, sshfs, NFSv3): the readers get the
                // file laid out with data instead, as if no job preallocated it.
                sink.message(&format!(
                    "{}: the filesystem made no room by preallocating it; its readers get it laid out with data",
                    t.path.display()
                ));
                only_preallocated.remove(t.path.as_path());
                let Some(&(j, l)) = lays.get(t.path.as_path()) else { continue };
                (job, t) = (j, l);
            }
            if t.layout {
                let holes = if t.fill_holes { t.empty_bytes() } else { 0 };
                let tail = t.size.saturating_sub(t.existing);
                let what = match (holes, tail) {
                    (0, n) => format!("{n} bytes"),
                    (h, 0) => format!("filling {h} bytes of holes and unwritten extents"),
                    (h, n) => format!("{n} bytes past its end, and {h} bytes of holes and unwritten extents"),
                };
                sink.message(&format!("laying out {} ({what}), before the measured window", t.path.display()));
                let compressibility = job.workload.block().map_or(0, |b| b.compressibility);
                let t0 = Instant::now();
                let mut said = Instant::now();
                let mut progress = |done: u64, total: u64| {
                    if said.elapsed() >= LAYOUT_PROGRESS && done < total {
                        said = Instant::now();
                        sink.message(&format!(
                            "laying out {}: {:.0}% ({} of {} bytes, {:.1} s)",
                            t.path.display(),
                            100.0 * done as f64 / total.max(1) as f64,
                            done,
                            total,
                            t0.elapsed().as_secs_f64()
                        ));
                    }
                };
                let w = layout::lay_out(t, job.seed, compressibility, halt, created_now, &mut progress)?;
                let took = t0.elapsed().as_secs_f64();
                sink.message(&format!(
                    "laid out {}: {} bytes in {took:.2} s ({}/s), not counted in the figures",
                    t.path.display(),
                    w.bytes,
                    iolab_spec::units::fmt_decimal(if took > 0.0 { w.bytes as f64 / took } else { 0.0 })
                ));
                let l = laid_out.get_or_insert_with(LayoutDone::default);
                l.files.push(t.path.display().to_string());
                l.bytes += w.bytes;
                l.holes_filled += w.holes_filled;
            } else if job.engine.caps().maps_files() && t.kind == TargetKind::File && t.existing < t.size {
                layout::set_len(t)?;
            } else if let Some(how) = job.workload.block().and_then(|b| b.prealloc).filter(|_| created_now) {
                sink.message(&format!(
                    "preallocating {} ({how}, {} bytes), before the measured window",
                    t.path.display(),
                    t.size
                ));
                layout::preallocate(t, how)?;
            }
        }
    }
    if let Some(l) = &mut laid_out {
        l.elapsed_s = began.elapsed().as_secs_f64();
    }
    // What a preallocating job left: the file at its size, all of it unwritten extents (or a
    // hole), which the jobs after it read as such, counted (`holes:` beside their figures).
    let only_preallocated: HashSet<PathBuf> = only_preallocated.into_keys().map(Path::to_path_buf).collect();
    for t in targets.iter_mut().flatten().filter(|t| only_preallocated.contains(&t.path)) {
        t.existing = t.size;
        t.layout = false;
        t.fill_holes = false;
        t.empty = vec![(0, t.size)];
    }
    Ok((created, laid_out))
}

/// The new files of a phase a preallocating job is first on, with that job and its target:
/// fio sets a phase's files up job by job (create_serialize=1), and the first job that finds a
/// file smaller than it needs lays it out its own way; a later job that finds it large enough
/// leaves it as it is. So a file whose first job writes without reading and preallocates it
/// (fio's fallocate, the default) is fallocated, not written, and the readers after it read
/// its unwritten extents (flow.fio: fio's reader reads what its writer has not reached, and
/// the device is not asked). Not when a later job needs more than it preallocates (its own
/// layout then writes the file, as fio extends it), nor for `keep` (the file stays empty).
fn preallocated_first<'a>(
    phase: &'a Phase,
    targets: &'a [Vec<Target>],
    lays: &HashMap<&Path, (&'a Job, &'a Target)>,
) -> HashMap<&'a Path, (&'a Job, &'a Target)> {
    let mut first: HashMap<&Path, (&Job, &Target)> = HashMap::new();
    for (job, ts) in phase.jobs.iter().zip(targets).filter(|(j, _)| !j.workload.makes_own_files()) {
        for t in ts.iter().filter(|t| !t.exists && t.kind == TargetKind::File) {
            first.entry(t.path.as_path()).or_insert((job, t));
        }
    }
    first.retain(|path, (job, t)| {
        let sizes =
            matches!(job.workload.block().and_then(|b| b.prealloc), Some(Prealloc::Fallocate | Prealloc::Truncate));
        sizes && !t.layout && lays.get(path).is_some_and(|(_, l)| l.size <= t.size)
    });
    first
}

/// A personality's directory: made (and marked) when missing, as a block job's missing file
/// is, and opened once either way; its threads work beneath it.
fn personality_dirs(
    phase: &Phase,
    place: &mut Place,
    run: Option<&layout::RunMark>,
    sink: &mut dyn Sink,
    dirs: &mut [Option<Arc<Beneath>>],
) -> Result<(), LayoutError> {
    let refused = |path: &std::path::Path, e: std::io::Error| LayoutError::Refused {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    for (ji, job) in phase.jobs.iter().enumerate() {
        if !job.workload.makes_own_files() {
            continue;
        }
        let dir = match place.dir(&job.target) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent =
                    job.target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
                let Some(name) = job.target.file_name() else {
                    return Err(refused(&job.target, std::io::Error::other("it names no directory")));
                };
                let pdir = place.dir(parent).map_err(|e| refused(&job.target, e))?;
                let spot = layout::Spot::at(pdir, name);
                let (made, b) = layout::create_dir_at(&spot, &job.target, run)?;
                if made {
                    sink.message(&format!("created the directory {} (marked as iolab's)", job.target.display()));
                }
                place.made_dir(&job.target, b)
            }
            Err(e) => return Err(refused(&job.target, e)),
        };
        dirs[ji] = Some(dir);
    }
    Ok(())
}

/// How often a long layout says how far it got.
const LAYOUT_PROGRESS: Duration = Duration::from_secs(2);

/// A phase's figure beside what the storage saw ([`iolab_model::fidelity`]) and what bounded
/// it ([`iolab_model::bound`]), judged on this node as the phase ends.
fn judge(pr: &mut PhaseResult, phase: &Phase) {
    pr.findings = iolab_model::fidelity::findings(pr.observed(), &phase.jobs, None);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ctx = iolab_model::bound::Context { jobs: &phase.jobs, cpus, link_mbps: None };
    pr.limit = Some(iolab_model::bound::judge(pr.observed(), &ctx));
}

struct Shared {
    start: OnceLock<Instant>,
    /// When the first worker ran after the start (ns after it; `u64::MAX` until one has):
    /// where the phase's I/O began, which a loaded node's scheduler may make later than the
    /// start instant, and which the node reports as its start.
    first_run: AtomicU64,
    /// Set once every worker thread is started (`true`) or one failed to start (`false`, and
    /// the started ones leave without touching the barriers).
    spawned: (Mutex<Option<bool>>, Condvar),
    ready: Barrier,
    go: Barrier,
}

impl Shared {
    fn set_spawned(&self, all: bool) {
        if let Ok(mut s) = self.spawned.0.lock() {
            *s = Some(all);
        }
        self.spawned.1.notify_all();
    }
    /// Wait until every worker thread is started; `false` if one could not be.
    fn all_spawned(&self) -> bool {
        let Ok(mut s) = self.spawned.0.lock() else { return false };
        loop {
            match *s {
                Some(all) => return all,
                None => match self.spawned.1.wait(s) {
                    Ok(g) => s = g,
                    Err(_) => return false,
                },
            }
        }
    }
}

/// Wait until a wall-clock instant (no-op if it has passed), waking at least every 50 ms to
/// check for a stop; the last stretch is one sleep to the instant. (Yielding in a loop for the
/// last 2 ms instead made every one of 64 agents on 2 cores runnable at once, and the
/// scheduler's time slices then spread their starts over ~50 ms; timer wake-ups cost less.)
fn sleep_until(at: SystemTime, stop: &AtomicBool) {
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// A job's own directory, opened once (none for a job on a device).
type JobDir = Option<Arc<Beneath>>;

/// Run one phase. `Err` when its worker threads could not all be started (the system's limit
/// on threads or memory): none of them did any I/O then.
fn run_phase(
    index: usize,
    phase: &Phase,
    targets: &[Vec<Target>],
    (runs, dirs): (&[Option<Arc<ReplayRun>>], &[JobDir]),
    (validated, file_sets): (&validation::Validated, &[Option<Arc<FileSet>>]),
    ctl: &Control,
    sink: &mut dyn Sink,
) -> Result<PhaseResult, RunError> {
    let max_ramp = phase.jobs.iter().map(|j| j.ramp).max().unwrap_or_default();
    let workers: usize = phase.jobs.iter().map(|j| j.threads as usize).sum();
    let expect = Expect {
        duration: phase
            .jobs
            .iter()
            .filter_map(|j| j.runtime.map(|r| r + j.start_delay.high))
            .max()
            .map(|r| r + max_ramp),
        bytes: if phase.jobs.iter().all(|j| j.runtime.is_none()) {
            Some(phase.jobs.iter().zip(targets).map(|(j, ts)| budget_bytes(j, ts) * j.threads as u64).sum())
        } else {
            None
        },
    };
    sink.phase_start(index, phase, expect);
    let shared = Shared {
        start: OnceLock::new(),
        first_run: AtomicU64::new(u64::MAX),
        spawned: (Mutex::new(None), Condvar::new()),
        ready: Barrier::new(workers + 1),
        go: Barrier::new(workers + 1),
    };
    let (tx, rx) = mpsc::channel::<Msg>();
    // A phase with a job that ends the others (`--exit-all`), or judged for steady state, gives
    // its workers a stop flag of its own, which the coordinating thread sets when such a job
    // ends, once the phase is steady, or when the run is stopped; any other phase's workers
    // watch the run's.
    let steady = Plan::steady_of(phase);
    let phase_stop = AtomicBool::new(false);
    let exits = phase.jobs.iter().any(|j| j.exit_all || j.exit_run).then_some(&phase_stop);
    let worker_stop: &AtomicBool = if exits.is_some() || steady.is_some() { &phase_stop } else { &ctl.stop };
    // What each job's threads share: their barrier, and a personality's pool.
    let per_job: Vec<(Rendezvous, Result<JobShared, SourceError>)> =
        phase.jobs.iter().map(|j| (Rendezvous::new(j.threads as usize), JobShared::for_job(j))).collect();
    let flows = flows_of(phase);

    std::thread::scope(|s| {
        let mut w = 0;
        for (ji, (job, ts)) in phase.jobs.iter().zip(targets).enumerate() {
            for t in 0..job.threads {
                let tx = tx.clone();
                let shared = &shared;
                let stop = worker_stop;
                let lease = ctl.lease.as_deref();
                // The thread's files: its own set with --nrfiles, its own file in a directory, or
                // the one target the threads share.
                let per = job.workload.block().and_then(|b| b.files.as_ref()).map_or(1, |f| f.count as usize);
                let mine: &[Target] = if ts.is_empty() {
                    &[]
                } else if per > 1 {
                    ts.get(t as usize * per..(t as usize + 1) * per).unwrap_or(&[])
                } else {
                    std::slice::from_ref(&ts[(t as usize) % ts.len()])
                };
                let target = mine.first();
                let worker = w;
                let run = runs.get(ji).cloned().flatten();
                let dir = dirs.get(ji).cloned().flatten();
                let tracked = target.filter(|_| job.verify.is_some()).and_then(|t| validated.get(&t.path).cloned());
                let together = &per_job[ji];
                let flow = flows.get(ji).cloned().flatten();
                let files = file_sets.get(ji).cloned().flatten();
                let started =
                    std::thread::Builder::new().name(format!("iolab-{}-{t}", job.name)).spawn_scoped(s, move || {
                        if shared.all_spawned() {
                            worker_main(
                                ji,
                                worker,
                                t,
                                job,
                                mine,
                                (run, dir),
                                (tracked, files),
                                max_ramp,
                                shared,
                                (together, flow),
                                (stop, lease),
                                tx,
                            )
                        }
                    });
                if let Err(source) = started {
                    shared.set_spawned(false);
                    let (job, threads) = (job.name.clone(), job.threads);
                    return Err(RunError::Spawn { worker: w + 1, workers, job, threads, source });
                }
                w += 1;
            }
        }
        shared.set_spawned(true);
        drop(tx);
        let phase_start = release(index, &shared, ctl, sink);
        let begins = start_delays(phase).into_iter().map(|d| phase_start + d).collect();
        let judge = crate::steady::Judge::for_phase(phase)
            .map(|j| if ctl.phase_ends.is_some() { j.held() } else { j })
            .map(|j| (j, worker_stop));
        Ok(coordinate(index, phase, targets, rx, (phase_start + max_ramp, begins), judge, (ctl, exits), sink))
    })
}

/// Each worker's start delay (`--start-delay`), in worker order: the same draw its thread makes.
fn start_delays(phase: &Phase) -> Vec<Duration> {
    phase.jobs.iter().flat_map(|j| (0..j.threads).map(|t| j.start_delay.for_thread(j.seed, t))).collect()
}

/// Wait until `at` (no-op if it has passed), waking at least every 50 ms to check for a stop.
fn sleep_until_instant(at: Instant, stop: &AtomicBool) {
    loop {
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// When a job ended on a full filesystem: the files this run created among the phase's
/// targets, left partial, named with the way to remove them.
fn partial_files(errors: &[String], targets: &[Vec<Target>], made: &HashSet<PathBuf>) -> Option<String> {
    if !errors.iter().any(|e| e.contains("the filesystem is full")) {
        return None;
    }
    let mut left: Vec<&PathBuf> = targets.iter().flatten().map(|t| &t.path).filter(|p| made.contains(*p)).collect();
    left.sort();
    left.dedup();
    if left.is_empty() {
        return None;
    }
    let names: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("'{}'", n.replace('\'', "'\\''"))).collect();
    Some(format!(
        ". The partial file{} created by this run {} left: {}; remove {} with `rm {}` (or run again with less --size)",
        if names.len() == 1 { "" } else { "s" },
        if names.len() == 1 { "is" } else { "are" },
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
        quoted.join(" ")
    ))
}

/// Once every worker is ready: ask the phase's start gate, wait for the agreed instant and
/// release the workers (see [`StartGate`]); the phase's start.
fn release(index: usize, shared: &Shared, ctl: &Control, sink: &mut dyn Sink) -> Instant {
    shared.ready.wait();
    // A phase started at an agreed instant (several nodes) is started by this thread at
    // real-time priority where the system allows it, so that other work on the node (other
    // agents' workers on a shared test machine) cannot hold back its start; normal again
    // once the workers are released.
    let mut realtime = None;
    if let Some(at) = ctl.gate.as_ref().and_then(|g| g.open(index, &ctl.stop)) {
        realtime = iolab_engine::realtime::Realtime::enter().ok();
        sleep_until(at, &ctl.stop);
    }
    if let Some(at) = ctl.start_at {
        sleep_until(at, &ctl.stop);
    }
    let phase_start = Instant::now();
    let started_at = SystemTime::now();
    let _ = shared.start.set(phase_start);
    shared.go.wait();
    drop(realtime);
    // When the first worker ran, for the start skew (waited for a second at
    // most: a worker runs at once unless the node is very loaded).
    let waited = Instant::now();
    let mut first = shared.first_run.load(Ordering::Acquire);
    while first == u64::MAX && waited.elapsed() < Duration::from_secs(1) && !ctl.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_micros(100));
        first = shared.first_run.load(Ordering::Acquire);
    }
    let ran = if first == u64::MAX { Duration::ZERO } else { Duration::from_nanos(first) };
    sink.started(index, started_at, started_at + ran);
    phase_start
}

/// The coordinating thread while the workers run: their seconds merged into totals and a
/// timeline, system samples beside the measured window (from `t0`, after the ramp), each handed
/// to the sink as it comes; the phase's result once every worker has ended. A phase judged for
/// steady state (`judge`, with the flag its workers watch) has each finished second judged
/// here, off the workers' path, and its flag set once steady.
#[allow(clippy::too_many_arguments)]
fn coordinate(
    index: usize,
    phase: &Phase,
    targets: &[Vec<Target>],
    rx: mpsc::Receiver<Msg>,
    (t0, begins): (Instant, Vec<Instant>),
    judge: Option<(crate::steady::Judge, &AtomicBool)>,
    (ctl, exits): (&Control, Option<&AtomicBool>),
    sink: &mut dyn Sink,
) -> PhaseResult {
    let (mut judge, phase_stop) = match judge {
        Some((j, s)) => (Some(j), Some(s)),
        None => (None, None),
    };
    // Samples come over their own channel, so a sampler never keeps the workers' channel
    // open; the coordinating thread hands them on as they arrive.
    let (sample_tx, sample_rx) = mpsc::channel::<iolab_sysstat::Rates>();
    // The first job's target stands for the phase's storage.
    let sampler = ctl.sample_interval.map(|iv| {
        let target = targets.iter().flatten().next().map(|t| iolab_sysstat::describe(&t.path, &SysRoots::default()));
        let emit: iolab_sysstat::Emit = Box::new(move |r| {
            let _ = sample_tx.send(r);
        });
        Sampler::streaming(ProcRoot::default(), iv, t0, target, emit)
    });
    let cpu0 = cpu::process_cpu();
    let threads: Vec<u32> = phase.jobs.iter().map(|j| j.threads).collect();
    let mut agg = Aggregator::new(&threads, t0);
    agg.starts(begins);
    if let Some(j) = &judge {
        if let (Some(len), Some(iolab_spec::SteadyState::Snia(s))) = (j.round_s(), Plan::steady_of(phase)) {
            agg.keep_rounds(len, s.window as usize);
        }
    }
    // --ramp auto: the warm-up judged here, second by second, off the workers' path.
    let mut warm = phase.jobs.iter().any(|j| j.ramp_auto).then(crate::warmup::WarmupJudge::new);
    if warm.is_some() {
        agg.judge_warmup();
    }
    // The phase and its jobs exist from their start: a run killed in its first second still
    // shows them, with nothing measured.
    sink.progress(index, &agg.result(phase, targets, Instant::now(), CpuTime::default(), true));
    let mut hand_on = |agg: &mut Aggregator, sink: &mut dyn Sink, all: bool| {
        while let Ok(r) = sample_rx.try_recv() {
            sink.sample(index, &r);
        }
        let now = Instant::now();
        let points = agg.finalize(now, all);
        for p in &points {
            sink.tick(index, p, agg.bytes_so_far());
        }
        if let Some(w) = warm.as_mut() {
            for p in &points {
                agg.warmup(w.second(p));
            }
        }
        if let (Some(j), Some(stop)) = (judge.as_mut(), phase_stop) {
            for p in &points {
                if j.second(p) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            if let Some(round) = ctl.phase_ends.as_ref().and_then(|e| e.ended(index)) {
                j.end_at(round);
                stop.store(true, Ordering::Relaxed);
            }
            if ctl.stop.load(Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        for p in agg.corrections() {
            sink.correct(index, &p);
        }
        if !points.is_empty() && !all {
            let cpu = cpu::process_cpu().since(cpu0);
            sink.progress(index, &agg.result(phase, targets, now, cpu, true));
        }
    };
    while agg.alive > 0 {
        if let Some(stop) = exits {
            if ctl.stop.load(Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => {
                if let (Some(stop), Msg::Done { job, .. }) = (exits, &m) {
                    if phase.jobs.get(*job).is_some_and(|j| j.exit_all || j.exit_run) {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                agg.take(m)
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        hand_on(&mut agg, sink, false);
    }
    hand_on(&mut agg, sink, true);
    let cpu1 = cpu::process_cpu();
    let system = sampler.and_then(|s| s.finish());
    // The sampler's last sample, taken as it finished.
    while let Ok(r) = sample_rx.try_recv() {
        sink.sample(index, &r);
    }
    let end = Instant::now();
    if let Some(j) = judge.as_mut() {
        j.finish(end.saturating_duration_since(t0));
        if let Some((a, b)) = j.window_rounds() {
            agg.set_window(a, b);
        }
    }
    let mut r = agg.result(phase, targets, end, cpu1.since(cpu0), ctl.stop.load(Ordering::Relaxed));
    unwritten_at_end(&mut r, targets);
    r.system = system;
    r.steady_state = judge.map(|j| j.result());
    let (ops, bytes) = agg.dropped();
    r.warmup = warm.map(|w| w.result(ops, bytes));
    r
}

/// A preallocated shared file ([`preallocated_first`]) as the phase ended: the share its
/// writes left unwritten, beside the reads counted in its unwritten extents as the phase
/// began (a reader that ran after its writer finished found data everywhere).
fn unwritten_at_end(r: &mut PhaseResult, targets: &[Vec<Target>]) {
    let share = |t: &Target| -> Option<f64> {
        let f = t.at.open(iolab_engine::OpenOptions { read: true, ..Default::default() }).ok()?;
        // Buffered writes not yet written back leave their extents unwritten in the map (and
        // pages a read cached hide them from lseek): written back first, after the window.
        f.sync_data().ok()?;
        let empty: u64 = iolab_engine::extents::empty_ranges(&f, 0, t.size).ok()?.iter().map(|(a, b)| b - a).sum();
        Some(empty as f64 / t.size.max(1) as f64)
    };
    for (j, ts) in r.jobs.iter_mut().zip(targets) {
        if let Some(h) = j.holes.as_mut().filter(|h| h.preallocated) {
            h.unwritten_at_end = ts.iter().filter(|t| t.preallocated()).filter_map(share).reduce(f64::max);
        }
    }
    let end = r.jobs.iter().filter_map(|j| j.holes.and_then(|h| h.unwritten_at_end)).reduce(f64::max);
    if let Some(h) = r.holes.as_mut().filter(|h| h.preallocated) {
        h.unwritten_at_end = end;
    }
}

/// Bytes one thread of a size-bounded job transfers.
fn budget_bytes(job: &Job, ts: &[Target]) -> u64 {
    if let Some(b) = job.workload.block().filter(|b| b.files.is_some() && b.io_size.is_none()) {
        // Several files per thread (--nrfiles): one pass over each of thread 0's files.
        let per = b.files.as_ref().map_or(1, |f| f.count as usize);
        let off = b.offset_of(0);
        return ts.iter().take(per).map(|t| b.budget_bytes(t.size.saturating_sub(off))).sum();
    }
    let size = ts.first().map(|t| t.size).or(job.size.map(|s| s.0)).unwrap_or(0);
    // Only the block workload moves a known number of bytes; the others go by their own steps.
    job.workload.block().map_or(0, |b| {
        let past = size.saturating_sub(b.offset());
        b.budget_bytes(job.size.map_or(past, |s| s.0.min(past)))
    })
}

/// What a job's threads share: their barrier, and a personality's pool.
type Together = (Rendezvous, Result<JobShared, SourceError>);

#[allow(clippy::too_many_arguments)]
fn worker_main(
    job_idx: usize,
    worker: usize,
    thread: u32,
    job: &Job,
    targets: &[Target],
    (run, dir): (Option<Arc<ReplayRun>>, Option<Arc<Beneath>>),
    (tracked, files): (Option<Arc<iolab_verify::Tracked>>, Option<Arc<FileSet>>),
    ramp: Duration,
    shared: &Shared,
    (together, flow): (&Together, Option<Arc<source::flow::Flow>>),
    (stop, lease): (&AtomicBool, Option<&crate::lease::Lease>),
    tx: Sender<Msg>,
) {
    // A private descriptor table spares the kernel a file reference per I/O (see the engine).
    // Where it is refused (seccomp), the worker just shares the process's table. A replay's
    // threads keep the shared table, as the traced threads did: they hand descriptors to one
    // another.
    if run.is_none() {
        let _ = iolab_engine::private_fd_table();
    }
    // The directory the worker's names are resolved beneath, opened when the run was checked:
    // the job's own (a personality's, a replay's), or its target's.
    let target = targets.first();
    let root = match (&dir, target) {
        (Some(d), _) => Root { path: d.root().to_path_buf(), dir: Some(d.clone()) },
        (None, Some(t)) => Root { path: t.at.dir().root().to_path_buf(), dir: Some(t.at.dir().clone()) },
        (None, None) => Root { path: job.target.clone(), dir: None },
    };
    let (barrier, pool) = together;
    let delay = job.start_delay.for_thread(job.seed, thread);
    let w = Work { job_idx, worker, thread, job, root, ramp, delay, shared, barrier, stop, lease, tx };
    let pool = match pool {
        Ok(p) => p.clone(),
        Err(e) => return drive(Err::<NoSource, _>(SourceError::Said(e.to_string())), w),
    };
    match &job.workload {
        Workload::Block(b) => match (tracked, &job.verify) {
            (Some(t), Some(v)) => {
                let s = Validating::new(BlockSource::new(job, b, thread, targets), t, thread, v.before_rewrite)
                    .with_backlog(v.backlog, v.backlog_batch);
                flowing(b, flow, s, w)
            }
            _ => flowing(b, flow, BlockSource::new(job, b, thread, targets), w),
        },
        Workload::Replay(_) if run.as_ref().is_some_and(|r| r.plan().blocks.is_some()) => {
            drive(run.ok_or_else(|| "no replay".into()).and_then(|r| BlockReplaySource::new(r, job, target)), w)
        }
        Workload::Replay(_) => {
            let source = match run {
                Some(r) => ReplaySource::new(r, thread),
                None => Err(SourceError::Said("the replay was not prepared".into())),
            };
            Files { files, thread, w }.run(source)
        }
        _ => {
            let root = w.root.path.clone();
            let dir = w.root.dir.clone();
            source::run_personality(job, thread, (&root, dir.as_ref()), &pool, Files { files, thread, w })
        }
    }
}

/// Drive a block job's source, inside its think time when it has one: only such a job runs the
/// wrapper, so the others' loop has nothing added per operation.
/// Run a block source inside its job's flow, when it has one (fio's flow), then its think time.
fn flowing<S: Source>(b: &iolab_spec::BlockJob, flow: Option<Arc<source::flow::Flow>>, source: S, w: Work) {
    match (flow, b.flow.as_deref().copied()) {
        (Some(f), Some(share)) => thinking(b, source::flow::Flowing::new(source, f, share), w),
        _ => thinking(b, source, w),
    }
}

/// Each job's flow in the phase (fio's flow_id), every thread's weight counted before any starts.
fn flows_of(phase: &Phase) -> Vec<Option<Arc<source::flow::Flow>>> {
    let share = |j: &Job| j.workload.block().and_then(|b| b.flow.as_deref().copied());
    let mut weights: std::collections::BTreeMap<u32, u64> = Default::default();
    for j in &phase.jobs {
        if let Some(f) = share(j) {
            *weights.entry(f.id).or_default() += f.weight as u64 * j.threads as u64;
        }
    }
    let flows: std::collections::BTreeMap<u32, Arc<source::flow::Flow>> =
        weights.into_iter().map(|(id, w)| (id, source::flow::Flow::new(w))).collect();
    phase.jobs.iter().map(|j| share(j).and_then(|f| flows.get(&f.id).cloned())).collect()
}

fn thinking<S: Source>(b: &iolab_spec::BlockJob, source: S, w: Work) {
    match b.think.as_deref().copied() {
        Some(t) => going_on(b, source::think::Thinking::new(source, t), w),
        None => going_on(b, source, w),
    }
}

/// Drive a block source inside the errors its job goes on after, when it has any
/// (`--continue-on-error`): only such a job runs the wrapper.
fn going_on<S: Source>(b: &iolab_spec::BlockJob, source: S, w: Work) {
    match b.on_error.as_deref() {
        Some(e) => drive(Ok(source::on_error::GoingOn::new(source, e.clone())), w),
        None => drive(Ok(source), w),
    }
}

/// Run an application workload's or a replay's source, inside its validation when the job has
/// a file set (`--verify`).
struct Files<'a> {
    files: Option<Arc<FileSet>>,
    thread: u32,
    w: Work<'a>,
}

impl source::Run for Files<'_> {
    type Out = ();
    fn run<S: Source>(self, source: Result<S, SourceError>) {
        match self.files {
            Some(set) => drive(source.map(|s| FilesValidating::new(s, set, self.thread)), self.w),
            None => drive(source, self.w),
        }
    }
}

/// Where a worker's names are resolved: its directory's path (for messages) and the directory,
/// opened once (none for a job without files).
struct Root {
    path: std::path::PathBuf,
    dir: Option<Arc<Beneath>>,
}

/// What a worker runs with, beside its source.
struct Work<'a> {
    job_idx: usize,
    worker: usize,
    /// The thread's index within its job.
    thread: u32,
    job: &'a Job,
    root: Root,
    ramp: Duration,
    /// This thread's start delay (`--start-delay`): it starts this long after the phase.
    delay: Duration,
    shared: &'a Shared,
    /// Where the job's threads line up ([`crate::source::Next::Barrier`]).
    barrier: &'a Rendezvous,
    stop: &'a AtomicBool,
    lease: Option<&'a crate::lease::Lease>,
    tx: Sender<Msg>,
}

/// Set up, wait at the barriers, run the source, report.
fn drive<S: Source>(source: Result<S, SourceError>, w: Work) {
    let Work { job_idx, worker, thread, job, root, ramp, delay, shared, barrier, stop, lease, tx } = w;
    // NUMA placement first (`--mem-policy`: the engine's buffers are made under it).
    let placed = job.numa.as_ref().map(crate::numa::place).transpose().map(Option::flatten);
    let (mut source, setup) = match (source, placed) {
        (Ok(mut s), Ok(nodes_cpus)) => {
            // On the CPUs of its nodes (`--numa-nodes`) before its buffers are touched.
            let setup = match nodes_cpus.as_ref().map(pin).transpose() {
                Ok(_) => set_up(job, &mut s),
                Err(e) => Err(e),
            };
            (Some(s), setup)
        }
        (Ok(s), Err(e)) => (Some(s), Err(e)),
        (Err(e), _) => (None, Err(e)),
    };
    // Pinned to the job's CPUs (`--cpus`) before the start; a set the system refuses (no such
    // CPU online) is the job's error.
    let setup = match (setup, &job.cpus) {
        (Ok(e), Some(c)) => pin(c).map(|_| e),
        (s, _) => s,
    };
    // Its I/O priority and nice value (`--ioprio`, `--nice`), on this thread.
    let setup = match (setup, &job.sched) {
        (Ok(e), Some(s)) => schedule(s).map(|_| e),
        (s, _) => s,
    };
    // Its per-I/O logs (`--log-avg-msec 0`): the files made and their writer started now.
    let (setup, mut io_log) = match (setup, &job.io_log) {
        (Ok(mut e), Some(log)) => {
            let prio = job.sched.and_then(|s| s.ioprio).map_or(0, |p| p.value());
            match crate::io_log::IoLogger::open(log, thread, e.as_dyn().depth(), prio) {
                Ok(l) => (Ok(e), Some(l)),
                Err(err) => (Err(err), None),
            }
        }
        (s, _) => (s, None),
    };
    // The clock before the start (its first making in a process calibrates it, which took
    // milliseconds out of the first phase's start).
    let clk = TscClock::new();
    shared.ready.wait();
    shared.go.wait();
    let sched0 = crate::cpu::thread_sched();
    let start = *shared.start.get().expect("start set before the go barrier");
    shared.first_run.fetch_min(start.elapsed().as_nanos() as u64, Ordering::AcqRel);
    let (sec, acc, end, error, depth, span) = match (setup, source.as_mut()) {
        (Ok(mut engine), Some(source)) => {
            // A delayed thread starts within the phase; its runtime counts from its own start
            // or the end of the phase's ramp, whichever is later (the ramp is the phase's).
            let begin = start + delay;
            if !delay.is_zero() {
                sleep_until_instant(begin, stop);
            }
            let measured_from = (start + ramp).max(begin);
            let w = Window {
                start: clk.at(begin),
                t0: clk.at(start + ramp),
                deadline: job.runtime.map(|r| clk.at(measured_from + r)),
            };
            let mut report = |sec, acc| {
                let _ = tx.send(Msg::Interval { job: job_idx, worker, sec, acc });
            };
            let mut names = match root.dir {
                Some(d) => Names::within(root.path, d),
                None => Names::new(root.path),
            };
            if let Some(l) = io_log.as_mut() {
                l.begin(w.t0);
            }
            let log = io_log.as_mut();
            let latency = job.latency_target;
            let (end, depth) = engine.run(Loop {
                source,
                names: &mut names,
                clk: &clk,
                w,
                stop,
                lease,
                barrier,
                report: &mut report,
                log,
                latency,
            });
            // A source timed only between its start barrier and its last timed call.
            let span = source.timed_span().then(|| end.timed_span()).flatten();
            let span = span.map(|(a, b)| (clk.instant(a), clk.instant(b)));
            (end.sec, end.acc, clk.instant(end.end), end.error, depth, span)
        }
        (Err(e), _) => (0, Acc::default(), start, Some(e), None, None),
        (Ok(_), None) => (0, Acc::default(), start, Some(SourceError::Said("no source".into())), None, None),
    };
    // Done: the job's other threads wait for this one at no later barrier.
    barrier.leave();
    // The per-I/O log written out; a failure to write it is the job's error if it had none.
    let error = match io_log.map(crate::io_log::IoLogger::finish) {
        Some(Err(e)) if error.is_none() => Some(e),
        _ => error,
    };
    let figures = source.as_ref().map(|s| s.figures()).unwrap_or_default();
    let holes = source.as_ref().and_then(|s| s.hole_reads());
    let io_errors = source.as_ref().and_then(|s| s.io_errors()).map(Box::new);
    let sched1 = crate::cpu::thread_sched();
    let sched = (sched1.0.saturating_sub(sched0.0), sched1.1.saturating_sub(sched0.1));
    // The job's error goes into its results as text: what failed, where and why.
    let error = error.map(|e| e.to_string());
    let _ = tx.send(Msg::Done {
        job: job_idx,
        worker,
        sec,
        acc,
        end,
        error,
        figures,
        holes,
        io_errors,
        sched,
        depth,
        span,
    });
}

/// The calling thread's I/O priority and nice value.
fn schedule(s: &iolab_spec::prio::Sched) -> Result<(), SourceError> {
    if let Some(p) = s.ioprio {
        iolab_engine::prio::set_ioprio(p.value()).map_err(|e| {
            SourceError::Said(format!("--ioprio {p}: the system refused it ({e}); rt needs root or CAP_SYS_ADMIN"))
        })?;
    }
    if let Some(n) = s.nice {
        iolab_engine::prio::set_nice(n).map_err(|e| {
            SourceError::Said(format!(
                "--nice {n}: the system refused it ({e}); a value below 0 needs root or CAP_SYS_NICE"
            ))
        })?;
    }
    Ok(())
}

/// Pin the calling thread to `cpus` (sched_setaffinity on this thread).
fn pin(cpus: &iolab_spec::cpus::Cpus) -> Result<(), SourceError> {
    let mut set = rustix::thread::CpuSet::new();
    for c in &cpus.0 {
        set.set(*c as usize);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| {
        SourceError::Said(format!(
            "--cpus {cpus}: the system refused to run the job's threads there ({e}); see the CPUs online in /sys/devices/system/cpu/online"
        ))
    })
}

/// The worker loop on the engine inside an [`iolab_engine::AnyEngine`]: compiled once per
/// engine and source, so no operation goes through dynamic dispatch.
struct Loop<'a, S: ?Sized> {
    source: &'a mut S,
    names: &'a mut Names,
    clk: &'a TscClock,
    w: Window,
    stop: &'a AtomicBool,
    lease: Option<&'a crate::lease::Lease>,
    barrier: &'a Rendezvous,
    report: &'a mut dyn FnMut(i64, Acc),
    /// The per-I/O logger when the job asks for one: the loop is then compiled with it as its
    /// observer; otherwise with none, so that loop has nothing added per operation.
    log: Option<&'a mut crate::io_log::IoLogger>,
    /// The job's latency target, searched for the depth that meets it.
    latency: Option<iolab_spec::LatencyTarget>,
}

impl<S: Source + ?Sized> iolab_engine::Visit for Loop<'_, S> {
    /// How the loop ended, and where a latency target's search got to (its depth, found).
    type Out = (worker::WorkerEnd, Option<(u32, bool)>);
    fn visit<E: iolab_engine::Engine>(self, e: &mut E) -> Self::Out {
        let Loop { source, names, clk, w, stop, lease, barrier, report, log, latency } = self;
        let mut search = latency.map(|cfg| crate::depth_search::DepthSearch::new(cfg, e.depth(), w.start, w.t0));
        let gates = (lease, search.as_mut());
        let end = match log {
            Some(l) => worker::run_leased(source, e, names, clk, w, stop, gates, barrier, report, l),
            None => worker::run_leased(source, e, names, clk, w, stop, gates, barrier, report, &mut worker::Unobserved),
        };
        (end, search.map(|s| (s.depth(), s.found())))
    }
}

/// Build the worker's engine and open the source's files, before the start barrier.
fn set_up(job: &Job, source: &mut dyn Source) -> Result<iolab_engine::AnyEngine, SourceError> {
    let setup = iolab_engine::Setup {
        batch: job.batch,
        sqpoll: job.sqpoll,
        ..iolab_engine::Setup::new(job.iodepth as usize, source.buffer_len())
    };
    let mut any = iolab_engine::build_any(job.engine, setup)?;
    let engine = any.as_dyn();
    for f in source.setup()? {
        engine.set_file(f.index, f.file, f.len).map_err(|e| SourceError::Place { path: f.path, source: e })?;
    }
    for slot in 0..engine.depth() as u32 {
        source.prime(slot, engine.buffer(slot));
    }
    Ok(any)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{Bytes, EngineKind, JobPatch, Rw};
    use std::sync::Mutex;

    /// Holds each phase for a while after its workers are ready, and notes when it was asked.
    struct Hold {
        asked: Mutex<Vec<(usize, Instant)>>,
        delay: Duration,
    }

    impl StartGate for Hold {
        fn open(&self, phase: usize, _stop: &AtomicBool) -> Option<SystemTime> {
            self.asked.lock().unwrap().push((phase, Instant::now()));
            Some(SystemTime::now() + self.delay)
        }
    }

    #[test]
    fn every_phase_starts_when_its_gate_says() {
        let job = |name: &str| {
            JobPatch {
                name: Some(name.into()),
                target: Some("/nowhere".into()),
                size: Some(Bytes::mib(1)),
                rw: Some(Rw::Read),
                engine: Some(EngineKind::Null),
                runtime: Some(Duration::from_millis(100)),
                ..Default::default()
            }
            .resolve("j")
            .unwrap()
        };
        let plan = Plan {
            phases: vec![
                Phase { name: "a".into(), jobs: vec![job("a")] },
                Phase { name: "b".into(), jobs: vec![job("b")] },
            ],
        };
        let gate = Arc::new(Hold { asked: Mutex::new(Vec::new()), delay: Duration::from_millis(300) });
        let ctl = Control { gate: Some(gate.clone()), ..Default::default() };
        let t = Instant::now();
        let r = run_plan(&plan, &ctl, &mut NoSink).unwrap();
        let took = t.elapsed();
        let asked = gate.asked.lock().unwrap().clone();
        assert_eq!(asked.iter().map(|a| a.0).collect::<Vec<_>>(), vec![0, 1]);
        // Phase b was asked for only after phase a had waited 300 ms and run 100 ms.
        assert!(asked[1].1 - asked[0].1 >= Duration::from_millis(400), "{asked:?}");
        assert!(took >= Duration::from_millis(800), "{took:?}");
        assert!(r.phases.iter().all(|p| (0.09..0.3).contains(&p.elapsed_s)), "the wait is not measured");
    }

    #[test]
    fn a_personality_on_the_null_engine_is_checked_like_any_other() {
        let d = tempfile::tempdir().unwrap();
        let job = |target: &std::path::Path| {
            JobPatch {
                target: Some(target.into()),
                workload: Some(iolab_spec::WorkloadKind::Varmail),
                engine: Some(EngineKind::Null),
                threads: Some(1),
                runtime: Some(Duration::from_millis(200)),
                ..Default::default()
            }
            .resolve("j")
            .unwrap()
        };
        let plan =
            |target: &std::path::Path| Plan { phases: vec![Phase { name: "p".into(), jobs: vec![job(target)] }] };
        // A file is no directory to work in, whatever the engine.
        let file = d.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = run_plan(&plan(&file), &Control::default(), &mut NoSink).unwrap_err();
        assert!(err.to_string().contains("needs a directory"), "{err}");
        // A directory of the job's name left there: refused, and nothing in it touched.
        let work = d.path().join("work");
        std::fs::create_dir_all(work.join("iolab.j")).unwrap();
        std::fs::write(work.join("iolab.j/mine"), b"keep").unwrap();
        let err = run_plan(&plan(&work), &Control::default(), &mut NoSink).unwrap_err();
        assert!(err.to_string().contains("exists already"), "{err}");
        assert_eq!(std::fs::read_dir(work.join("iolab.j")).unwrap().count(), 1);
    }

    #[derive(Default)]
    struct Seen {
        ticks: usize,
        samples: usize,
        progress: Vec<f64>,
    }

    impl Sink for Seen {
        fn event(&mut self, _node: Option<&str>, event: Event<'_>) {
            match event {
                Event::Tick { .. } => self.ticks += 1,
                Event::Sample { .. } => self.samples += 1,
                Event::Progress { so_far, .. } => {
                    assert!(so_far.interrupted && so_far.jobs.len() == 1 && so_far.jobs[0].per_thread.len() == 2);
                    self.progress.push(so_far.elapsed_s);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn seconds_samples_and_the_phase_so_far_go_to_the_sink_and_stay_out_of_the_result() {
        let job = JobPatch {
            target: Some("/nowhere".into()),
            size: Some(Bytes::mib(1)),
            rw: Some(Rw::Read),
            engine: Some(EngineKind::Null),
            threads: Some(2),
            rate_iops: Some(1000),
            runtime: Some(Duration::from_millis(2300)),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        let plan = Plan { phases: vec![Phase { name: "a".into(), jobs: vec![job] }] };
        let ctl = Control { sample_interval: Some(Duration::from_millis(100)), ..Default::default() };
        let mut seen = Seen::default();
        let r = run_plan(&plan, &ctl, &mut seen).unwrap();
        let p = &r.phases[0];
        assert!(p.timeline.is_empty());
        assert!(p.system.as_ref().is_some_and(|s| s.samples.is_empty() && s.mean.cpu.all.idle_pct >= 0.0));
        assert_eq!(seen.ticks, 3, "2.3 s: three seconds");
        assert!((20..=25).contains(&seen.samples), "{} samples of 100 ms in 2.3 s", seen.samples);
        assert!(seen.progress.len() >= 3 && seen.progress.windows(2).all(|w| w[0] <= w[1]), "{:?}", seen.progress);
        assert!(seen.progress[0] < 0.1, "the phase is there from its start: {:?}", seen.progress);
        assert_eq!(p.jobs[0].per_thread.len(), 2);
    }

    #[test]
    fn a_file_a_phase_writes_and_reads_is_laid_out_before_it() {
        // fio's flow.fio: one job writes the file from its start while another reads it at
        // random: the file is laid out to its size before the phase, as fio lays it out.
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("shared");
        let job = |name: &str, rw| {
            JobPatch {
                name: Some(name.into()),
                target: Some(file.clone()),
                size: Some(Bytes::mib(4)),
                rw: Some(rw),
                engine: Some(EngineKind::Psync),
                runtime: Some(Duration::from_millis(300)),
                ..Default::default()
            }
            .resolve(name)
            .unwrap()
        };
        let plan = Plan {
            phases: vec![Phase { name: "p".into(), jobs: vec![job("writer", Rw::Write), job("reader", Rw::RandRead)] }],
        };
        let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
        let p = &r.phases[0];
        assert!(p.jobs.iter().all(|j| j.error.is_none()), "{:?}", p.jobs.iter().map(|j| &j.error).collect::<Vec<_>>());
        assert!(p.jobs[1].total.read().ops > 0, "the reader read");
        let laid = p.layout.as_ref().expect("the file was laid out before the phase");
        assert_eq!((laid.files.len(), laid.bytes), (1, 4 << 20), "{laid:?}");
    }
}
