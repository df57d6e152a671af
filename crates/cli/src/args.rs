//! The command line, defined once: clap builds `--help`, the shell completions and the
//! man page from these types. The job flags are `iolab_spec::JobPatch` itself (its `clap`
//! feature), the same type a job file's tables become, so each option is defined once.

use clap::{Args, Parser, Subcommand, ValueEnum};
use iolab_spec::{Bytes, JobPatch};
use std::path::PathBuf;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  Profile a directory's storage in about a minute:
      iolab survey /mnt/scratch
  dd if=/dev/zero of=/mnt/test bs=100M count=10 (the cluster-filesystem locking check, one node):
      iolab run --target /mnt/test --rw write --bs 100M --size 1000M
  The same with oflag=direct and conv=fsync:
      iolab run --target /mnt/test --rw write --bs 100M --size 1000M --direct --end-fsync
  4 KiB random reads at queue depth 32 for 30 s, JSON for scripts:
      iolab run --target /mnt/f --size 1G --rw randread --engine io_uring --iodepth 32 --runtime 30s --output json
  A job file with phases:
      iolab run jobs/redo-log.toml";

#[derive(Parser, Debug)]
#[command(name = "iolab", version, about = "A storage test bench for shared and replicated storage", after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run jobs from flags or a TOML job file.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Profile the storage under a directory in about a minute.
    #[command(after_help = SURVEY_EXAMPLES)]
    Survey(Box<SurveyArgs>),
    /// Show CPU, disk and network figures for the storage under PATH, live, while something else runs.
    #[command(after_help = WATCH_EXAMPLES)]
    Watch(WatchArgs),
    /// List stored runs.
    #[command(after_help = RUNS_EXAMPLES)]
    Runs(RunsArgs),
    /// Show stored runs: their summary, labels and host.
    Show(ShowArgs),
    /// Delete stored runs.
    Rm(RmArgs),
    /// Export stored runs as JSON or CSV (one row per phase × job × direction).
    Export(ExportArgs),
    /// Compare runs: each metric absolute and as % of a baseline, with verdicts for repeated runs.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Write a self-contained HTML report with charts.
    Report(ReportArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout: `iolab man > iolab.1`.
    Man,
}

const RUN_EXAMPLES: &str = "\
Examples:
  Sequential 1 MiB writes, direct, like dd oflag=direct:
      iolab run --target /mnt/x/file --size 2G --rw write --bs 1M --direct
  A database's redo-log initialisation: 32 KiB written at every 1 MiB, fsync after each:
      iolab run --target /data/redo --size 256M --rw write --bs 32k --stride 1M --direct --sync fsync
  70/30 random read/write mix, two block sizes, 4 threads, one file each:
      iolab run --target /mnt/dir --size 1G --rw randrw --mix 70 --bs 4k:70,64k:30 --threads 4 --runtime 1m
  Open-loop 500 IOPS, latency measured from each I/O's scheduled time:
      iolab run --target /mnt/f --size 1G --rw randread --rate-iops 500 --runtime 30s

Exit status: 0 done, 2 bad input or an I/O error, 130 interrupted (results so far are printed).";

const RUNS_EXAMPLES: &str = "\
RUN selectors, wherever a command takes RUN: an id (42), last, last~N (the one before last is
last~1), or labels such as config=ext4 or config=drbd,proto=C (every run carrying them).

Examples:
      iolab runs
      iolab runs --label config=ext4 --since 2d
      iolab show last
      iolab export config=drbd --format csv > drbd.csv
      iolab rm last~3";

const COMPARE_EXAMPLES: &str = "\
Examples:
  Mail delivery on DRBD: every configuration against native ext4, three runs each:
      iolab compare config=ext4 config=drbd-A config=drbd-C --by config --baseline config=ext4
  Two runs, one metric, fail a CI job on a regression:
      iolab compare last~1 last --metric write-mbs --fail-on-regression

Verdicts need 2+ runs on both sides: Welch's t-test at 5% and a 95% confidence interval of the
change wholly beyond --noise. Metrics are CLASS-STAT: STAT one of mbs, iops, p50, p99; CLASS an
operation class (read, write, sync, open, create, close, unlink, rename, mkdir, rmdir, dirsync,
truncate, fallocate, stat, readdir, seek). By default: read-mbs write-mbs read-iops write-iops
read-p50 read-p99 write-p50 write-p99 sync-p99, and the iops and p99 of other classes present.";

/// Where results are kept.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// The results database (default: $XDG_DATA_HOME/iolab/results.db).
    #[arg(long, env = "IOLAB_DB", value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(iolab_store::default_path)
    }
}

/// Labels and saving, for commands that run I/O.
#[derive(Args, Debug, Clone)]
pub struct SaveArgs {
    /// A label to file the run under, KEY=VALUE (repeatable): --label config="ext4 barrier=0".
    #[arg(long = "label", short = 'l', value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Do not save the run in the results database. The run's seconds and system samples are
    /// then kept in memory for the output, so its memory grows with its length (about 1.5 KiB a
    /// sample); with the database they go to it as they are measured and memory stays flat.
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not a label; write KEY=VALUE, for example config=ext4")),
    }
}

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Only runs with this label (KEY=VALUE, repeatable).
    #[arg(long = "label", short = 'l', value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Only runs whose name or kind contains this.
    #[arg(long)]
    pub name: Option<String>,
    /// Only runs started since: a date (2026-11-20, UTC), Unix seconds, or an age (90m, 2d).
    #[arg(long)]
    pub since: Option<String>,
    /// Only runs with this status: running, complete, interrupted, failed.
    #[arg(long)]
    pub status: Option<String>,
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Runs to show (see `iolab runs --help` for selectors).
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[arg(long, short = 'f', value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// With --format json: each operation class's latency histogram beside its figures (HDR V2
    /// deflate in base64, docs/json.md), for tools that merge or re-percentile them.
    #[arg(long)]
    pub histograms: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare (selectors; a label selector brings every matching run).
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// The run (or, with --by, the configuration of the run) the others are measured against.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Group runs by this label (repeated runs of one configuration).
    #[arg(long)]
    pub by: Option<String>,
    /// Only these metrics (repeatable).
    #[arg(long = "metric", short = 'm')]
    pub metrics: Vec<String>,
    /// Changes within ±this percentage are noise.
    #[arg(long, default_value_t = 2.0)]
    pub noise: f64,
    /// Exit 1 when any metric regressed.
    #[arg(long)]
    pub fail_on_regression: bool,
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Where to write the report.
    #[arg(long, short = 'o', default_value = "iolab-report.html")]
    pub out: PathBuf,
    #[arg(long)]
    pub baseline: Option<String>,
    #[arg(long)]
    pub by: Option<String>,
    #[arg(long)]
    pub title: Option<String>,
    /// The comparison's noise threshold: changes within ±this percentage are noise.
    #[arg(long, default_value_t = 2.0)]
    pub noise: f64,
    #[command(flatten)]
    pub db: DbArgs,
}

const WATCH_EXAMPLES: &str = "\
Examples:
  Watch the disk under a database's directory while it starts:
      iolab watch /localdisk/cluster
  Ten samples as JSON lines, for a script:
      iolab watch /mnt/nfs --count 10 --output json
  Keep what was seen as a run, to list, show and chart later:
      iolab watch /localdisk/cluster --label node=a --label what=startup
      iolab report last -o startup.html";

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// A file or directory on the storage to watch (default: the current directory).
    pub path: Option<PathBuf>,
    /// Time between lines.
    #[arg(long, short = 'i', value_parser = parse_dur, default_value = "1s")]
    pub interval: Duration,
    /// Stop after this many lines (default: until Ctrl-C).
    #[arg(long, short = 'c')]
    pub count: Option<u64>,
    /// Stop after this long (30s, 5m), as many lines as fit (default: until Ctrl-C).
    #[arg(long, short = 'd', value_parser = parse_dur)]
    pub duration: Option<Duration>,
    /// human: one line per interval; json: one JSON object per line.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    /// Store the samples in this results database, as a run of kind `watch` with one phase
    /// (`iolab runs`, `show` and `report` read it); --label alone stores in the default one.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Store the samples, filed under this label, KEY=VALUE (repeatable).
    #[arg(long = "label", short = 'l', value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
}

impl WatchArgs {
    /// Where to store the samples: `--db`, else with a `--label` the default database
    /// (`IOLAB_DB` or the XDG path); `None` to print only.
    pub fn store_path(&self) -> Option<PathBuf> {
        match (&self.db, self.labels.is_empty()) {
            (Some(p), _) => Some(p.clone()),
            (None, false) => {
                Some(std::env::var_os("IOLAB_DB").map(PathBuf::from).unwrap_or_else(iolab_store::default_path))
            }
            (None, true) => None,
        }
    }
}

const SURVEY_EXAMPLES: &str = "\
Examples:
      iolab survey /mnt/scratch
      iolab survey /mnt/nfs --size 4G --step-time 10s
      iolab survey /tmp/x --output json > profile.json";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Human,
    Json,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A TOML job file; flags given beside it override every job in it.
    pub job_file: Option<PathBuf>,
    /// The job's options (each defined once, on `JobPatch`, with its job-file key).
    #[command(flatten)]
    pub job: JobPatch,
    /// Remove the files this run created (only those) when it ends.
    #[arg(long)]
    pub cleanup: bool,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Args, Debug)]
pub struct OutArgs {
    /// human: a summary; json: the documented schema (docs/json.md) on stdout.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    /// Never draw the live progress line.
    #[arg(long)]
    pub no_progress: bool,
    /// Sample CPU, disks and network this often beside each phase; 0 turns sampling off.
    #[arg(long, value_parser = parse_dur, default_value = "1s")]
    pub sample_interval: Duration,
    /// With --output json: each operation class's latency histogram beside its figures (HDR V2
    /// deflate in base64, docs/json.md), for tools that merge or re-percentile them.
    #[arg(long)]
    pub histograms: bool,
}

impl OutArgs {
    /// Refuse flags that do not go together, before anything runs.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.histograms && self.output != Output::Json {
            anyhow::bail!("--histograms goes with --output json; the summary prints percentiles");
        }
        Ok(())
    }
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    iolab_spec::parse_size(s)
}
fn parse_dur(s: &str) -> Result<Duration, String> {
    iolab_spec::parse_duration(s)
}

#[derive(Args, Debug)]
pub struct SurveyArgs {
    /// Directory to profile; iolab creates its files there and removes them afterwards.
    pub dir: PathBuf,
    /// Size of the test file (default: 1 GiB, or less when space is short).
    #[arg(long, value_parser = parse_bytes)]
    pub size: Option<Bytes>,
    /// Measured time of each step.
    #[arg(long, value_parser = parse_dur, default_value = "5s")]
    pub step_time: Duration,
    /// Keep the survey's files afterwards (to rerun faster).
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}
