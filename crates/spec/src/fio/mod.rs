//! fio job files in (issue 13): a job file people have kept for years becomes an iolab
//! [`Plan`], or the iolab TOML job file that says the same (`iolab convert`). [`ini`] reads the
//! text (sections, includes, comments, substitution), [`value`] fio's units, [`map`] the options
//! onto [`JobPatch`]es: `[global]` as fio applies it (to the jobs below it), `stonewall` as a new
//! phase, `numjobs` as threads. Every option iolab does not map is named with its file and line,
//! once: an error, or with `lenient` a warning and the job runs without it.

pub mod cmdline;
pub mod ini;
pub mod map;
pub mod value;

use crate::job::{Phase, Plan};
use crate::patch::JobPatch;
use crate::SpecError;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where something was said: a file and a 1-based line (0: the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub file: PathBuf,
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.file.display()),
            n => write!(f, "{}:{n}", self.file.display()),
        }
    }
}

/// One thing wrong with (or worth saying about) a line of a job file.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub at: Loc,
    pub message: String,
}

impl Problem {
    pub fn new(at: Loc, message: String) -> Self {
        Problem { at, message }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Why a fio job file cannot run: one problem, or every option iolab does not map.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    #[error("{0}")]
    At(Problem),
    #[error("{}", unmapped_text(.0))]
    Unmapped(Vec<Problem>),
}

fn unmapped_text(list: &[Problem]) -> String {
    let mut s = format!(
        "{} option{} iolab does not map from fio (run without {} with --fio-lenient):",
        list.len(),
        if list.len() == 1 { "" } else { "s" },
        if list.len() == 1 { "it" } else { "them" }
    );
    for p in list {
        s.push_str(&format!("\n  {p}"));
    }
    s
}

/// What a job file needs from the world: its text and its includes', the environment, and
/// the values of fio's reserved words. [`System`] is the real one; tests and the fuzzer give
/// their own.
pub trait Env {
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The path a file is known by, to tell an include loop (`None`: use the path as given).
    fn canonical(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    fn var(&self, name: &str) -> Option<String>;
    /// `$pagesize`, `$mb_memory`, `$ncpus`.
    fn keyword(&self, word: &str) -> Option<u64>;
    /// The size of an existing file or block device, which `size=50%` and `offset=10%` are
    /// of (`None`: not there, or not known).
    fn file_size(&self, _path: &Path) -> Option<u64> {
        None
    }
}

/// The files, environment and machine iolab runs on.
pub struct System;

impl Env for System {
    fn read(&self, path: &Path) -> io::Result<String> {
        // A regular file only (a FIFO or a device is refused, never waited on or read for
        // ever), at most one byte over the cap (the caller says the file is too large).
        use std::io::Read;
        let f = crate::input::open_regular(path, "fio job file").map_err(|e| match e {
            crate::input::InputError::Open { err, .. } => err,
            e => io::Error::other(e),
        })?;
        let mut text = String::new();
        f.take(ini::MAX_FILE_BYTES as u64 + 1).read_to_string(&mut text)?;
        Ok(text)
    }
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn file_size(&self, path: &Path) -> Option<u64> {
        use std::io::Seek;
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata(path).ok()?;
        if meta.is_file() {
            return Some(meta.len());
        }
        if meta.file_type().is_block_device() {
            // Opened for reading only, to learn its size.
            return std::fs::File::open(path).ok()?.seek(io::SeekFrom::End(0)).ok();
        }
        None
    }
    fn keyword(&self, word: &str) -> Option<u64> {
        match word {
            "$pagesize" => Some(4096),
            "$ncpus" => std::thread::available_parallelism().ok().map(|n| n.get() as u64),
            "$mb_memory" => std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
                let kb = m.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().trim_end_matches("kB").trim();
                kb.parse::<u64>().ok().map(|k| k / 1024)
            }),
            _ => None,
        }
    }
}

/// A job's table and where each of its iolab fields came from in the fio file.
#[derive(Debug, Clone, PartialEq)]
pub struct FioJob {
    pub patch: JobPatch,
    /// iolab field name -> the line that set it, so a rule broken later names the line.
    pub from: BTreeMap<&'static str, Loc>,
    /// The job's `[section]` line.
    pub at: Loc,
    /// The logs the job asks for (the file's [`FioFile::logs`] gathers them).
    pub logs: Option<JobLogs>,
}

/// One job's `write_*_log` prefixes (bw, iops, lat) and `log_avg_msec`, with their lines.
#[derive(Debug, Clone, PartialEq)]
pub struct JobLogs {
    pub prefixes: [Option<(String, Loc)>; 3],
    pub avg: Option<(u64, Loc)>,
    /// `log_offset` and `log_prio`, where set.
    pub offset: Option<(bool, Loc)>,
    pub prio: Option<(bool, Loc)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FioPhase {
    pub name: String,
    pub jobs: Vec<FioJob>,
}

/// A fio job file as iolab understood it.
#[derive(Debug, Clone, PartialEq)]
pub struct FioFile {
    pub path: PathBuf,
    pub phases: Vec<FioPhase>,
    /// How an option was taken (`libaio runs on io_uring`), one per line.
    pub notes: Vec<Problem>,
    /// Options left out under `lenient` (otherwise they are the error).
    pub skipped: Vec<Problem>,
    /// fio's logs the file asks for (`write_bw_log`...), which `iolab run` writes unless its
    /// own log flags say otherwise.
    pub logs: Option<FioLogs>,
}

/// `write_bw_log`, `write_iops_log`, `write_lat_log` (their prefixes), `log_avg_msec`,
/// `log_offset` and `log_prio`, as iolab's `--write-bw-log`... flags take them: per-I/O logs
/// of each thread (no log_avg_msec), or averaged logs of each phase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FioLogs {
    pub bw: Option<String>,
    pub iops: Option<String>,
    pub lat: Option<String>,
    /// The averaging window in ms, a whole number of seconds; 0: every I/O is logged.
    pub avg_msec: u64,
    /// Per-I/O logs' offset column (log_offset=1) and priority value (log_prio=1).
    pub offset: bool,
    pub prio: bool,
    /// Which jobs ask for logs, one flag per job in the plan's order.
    pub logged: Vec<bool>,
}

/// Read and map a fio job file. `lenient`: options iolab does not map become `skipped`
/// instead of the error.
pub fn parse(path: &Path, env: &dyn Env, lenient: bool) -> Result<FioFile, FioError> {
    parse_sections(path, env, lenient, &[])
}

/// [`parse`] with fio's `--section`: only the job sections named in `only` (and every
/// `[global]`), when it names any. The others are never mapped, so a variable they use and
/// the environment does not set troubles nothing, as in fio.
pub fn parse_sections(path: &Path, env: &dyn Env, lenient: bool, only: &[String]) -> Result<FioFile, FioError> {
    let sections = only_sections(ini::read(path, env).map_err(FioError::At)?, only, path).map_err(FioError::At)?;
    map::map(path, &sections, env, lenient)
}

/// fio's `--section=NAME` (several allowed): the `[global]` sections and the job sections
/// named; a name that no job section of the file has is an error naming those it has.
pub fn only_sections(sections: Vec<ini::Section>, only: &[String], path: &Path) -> Result<Vec<ini::Section>, Problem> {
    if only.is_empty() {
        return Ok(sections);
    }
    let jobs: Vec<&str> = sections.iter().filter(|s| !s.is_global()).map(|s| s.name.as_str()).collect();
    if let Some(missing) = only.iter().find(|n| !jobs.contains(&n.as_str())) {
        return Err(Problem::new(
            Loc { file: path.to_path_buf(), line: 0 },
            format!("--section {missing}: the file has no such job section; its sections are {}", jobs.join(", ")),
        ));
    }
    Ok(sections.into_iter().filter(|s| s.is_global() || only.contains(&s.name)).collect())
}

impl FioFile {
    /// The plan: each job's table under `overrides` (the command line's job flags), resolved
    /// and checked. A broken rule names the fio line that set the field, where one did.
    pub fn plan(&self, overrides: &JobPatch) -> Result<Plan, SpecError> {
        let mut phases = Vec::new();
        for p in &self.phases {
            let mut jobs = Vec::new();
            for (k, j) in p.jobs.iter().enumerate() {
                let patch = j.patch.layered(overrides);
                let job = patch
                    .resolve(&format!("job{}", k + 1))
                    .and_then(|job| job.validate().map(|_| job))
                    .map_err(|e| self.located(j, e))?;
                jobs.push(job);
            }
            phases.push(Phase { name: p.name.clone(), jobs });
        }
        let plan = Plan { phases };
        plan.validate()?;
        Ok(plan)
    }

    fn located(&self, j: &FioJob, e: SpecError) -> SpecError {
        let at = match &e {
            SpecError::Field { field, .. } => j.from.get(field.as_str()).unwrap_or(&j.at),
            _ => &j.at,
        };
        SpecError::plain(format!("{at}: {e}"))
    }

    /// The iolab TOML job file that says the same: one `[[phase]]` per phase, each job's table
    /// holding what the fio file set (iolab's defaults are fio's for what it leaves out), with
    /// the notes and skipped options as comments.
    pub fn to_toml(&self) -> String {
        #[derive(serde::Serialize)]
        struct PhaseOut<'a> {
            name: &'a str,
            job: Vec<&'a JobPatch>,
        }
        #[derive(serde::Serialize)]
        struct FileOut<'a> {
            phase: Vec<PhaseOut<'a>>,
        }
        let file = FileOut {
            phase: self
                .phases
                .iter()
                .map(|p| PhaseOut { name: &p.name, job: p.jobs.iter().map(|j| &j.patch).collect() })
                .collect(),
        };
        let mut out = comment(&format!("iolab job file converted from the fio job file {}", self.path.display()));
        match &self.logs {
            // The logs are the run's, not the TOML's: the flags that ask for them.
            Some(l) => {
                out.push_str(&comment(&format!("run it with: iolab run THIS.toml{} (the file's logs)", log_flags(l))));
                if l.logged.iter().any(|x| !x) {
                    out.push_str("# (the fio file logs only some of its jobs; with the flags every job is logged)\n");
                }
            }
            None => out.push_str("# run it with: iolab run THIS.toml\n"),
        }
        for n in &self.notes {
            out.push_str(&comment(&format!("note: {n}")));
        }
        for s in &self.skipped {
            out.push_str(&comment(&format!("not mapped, left out: {s}")));
        }
        out.push('\n');
        out.push_str(&toml::to_string(&file).unwrap_or_else(|e| format!("# cannot write TOML: {e}\n")));
        out
    }
}

/// The `iolab run` flags that write the logs `l` (a prefix quoted for the shell when it needs it).
fn log_flags(l: &FioLogs) -> String {
    let quote = |p: &str| {
        if !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/+,:=@%".contains(&b)) {
            p.to_string()
        } else {
            format!("'{}'", p.replace('\'', "'\\''"))
        }
    };
    let mut out = String::new();
    for (flag, p) in [("--write-bw-log", &l.bw), ("--write-iops-log", &l.iops), ("--write-lat-log", &l.lat)] {
        if let Some(p) = p {
            out.push_str(&format!(" {flag} {}", quote(p)));
        }
    }
    out.push_str(&format!(" --log-avg-msec {}", l.avg_msec));
    if l.offset {
        out.push_str(" --log-offset");
    }
    if l.prio {
        out.push_str(" --log-prio");
    }
    out
}

/// A TOML comment line; control characters (which TOML forbids in comments, and which a job
/// file's text may hold) are written as escapes.
fn comment(text: &str) -> String {
    let mut s = String::from("# ");
    for c in text.chars() {
        if c.is_control() && c != '\t' {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    s.push('\n');
    s
}

/// Whether a job file's text is fio's rather than iolab's TOML: its first section line is a
/// single-bracket `[name]` and no line opens a `[[` table (iolab's TOML has `[[phase]]`).
pub fn looks_like_fio(text: &str) -> bool {
    let mut first_section = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("[[") {
            return false;
        }
        if first_section.is_none() && line.starts_with('[') {
            first_section = Some(line);
        }
    }
    first_section.is_some_and(|s| s != "[defaults]")
}

#[cfg(test)]
mod tests;
