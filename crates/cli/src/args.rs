//! The command line, defined once: clap builds `--help`, the shell completions and the
//! man page from these types. The job flags are `iolab_spec::JobPatch` itself (its `clap`
//! feature), the same type a job file's tables become, so each option is defined once.

use crate::formats::{Format, Takes};
use clap::{Args, Parser, Subcommand, ValueEnum};
use iolab_spec::{Bytes, JobPatch};
use iolab_store::Target;
use std::path::PathBuf;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  Profile a directory's storage in about a minute and a quarter:
      iolab survey /mnt/scratch
  dd if=/dev/zero of=/mnt/test bs=100M count=10 (the cluster-filesystem locking check, one node):
      iolab run --target /mnt/test --rw write --bs 100M --size 1000M
  The same with oflag=direct and conv=fsync:
      iolab run --target /mnt/test --rw write --bs 100M --size 1000M --direct --end-fsync
  4 KiB random reads at queue depth 32 for 30 s, JSON for scripts:
      iolab run --target /mnt/f --size 1G --rw randread --engine io_uring --iodepth 32 --runtime 30s --output json
  A job file with phases:
      iolab run jobs/redo-log.toml
  A fio job file, with fio's JSON for the tools that read it:
      iolab run randread.fio --output fio-json > out.json";

#[derive(Parser, Debug)]
#[command(name = "iolab", version, about = "A storage test bench for shared and replicated storage", after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run jobs from flags, a TOML job file or a fio job file.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Print the iolab TOML job file equivalent to a fio job file: what iolab understood.
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(ConvertArgs),
    /// Run a fio command line as fio would (`alias fio='iolab fio'`), with iolab's store behind it.
    #[command(after_help = FIO_EXAMPLES)]
    Fio(FioArgs),
    /// Serve a node for a coordinator (`iolab run --node ...`): over stdin/stdout for ssh.
    #[command(after_help = AGENT_EXAMPLES)]
    Agent(AgentArgs),
    /// Profile the storage under a directory in about a minute and a quarter.
    #[command(after_help = SURVEY_EXAMPLES, mut_arg("output", |a| a.value_parser(Takes("survey"))))]
    Survey(Box<SurveyArgs>),
    /// Run a scenario (steps of jobs on several nodes at once) from a file, or a built-in: locking, scaling, pts-iops, pts-throughput, pts-latency.
    #[command(after_help = SCENARIO_EXAMPLES, mut_arg("output", |a| a.value_parser(Takes("scenario"))))]
    Scenario(Box<ScenarioArgs>),
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
    /// Export stored runs as JSON, CSV (one row per phase × job × direction), fio's JSON or bonnie++'s CSV.
    Export(ExportArgs),
    /// Compare runs: each metric absolute and as % of a baseline, with verdicts for repeated runs.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Write a self-contained HTML report with charts.
    Report(ReportArgs),
    /// Record an application's I/O (eBPF or strace), import strace output, analyse or export a trace.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Replay a recorded trace under a directory: same calls, same flags, per-thread order and timing.
    #[command(after_help = REPLAY_EXAMPLES, mut_arg("output", |a| a.value_parser(Takes("replay"))))]
    Replay(Box<ReplayArgs>),
    /// Check the files of a validated run (--verify --journal DIR) against its journal: after a crash, or from another node.
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(VerifyArgs),
    /// Work on results databases: copy runs between them (SQLite files into a team's PostgreSQL).
    #[command(subcommand)]
    Db(DbCommand),
    /// Precondition a device or file before a qualification run (SNIA PTS): purge it, then write its capacity twice in 128 KiB sequential writes.
    #[command(after_help = PRECONDITION_EXAMPLES)]
    Precondition(PreconditionArgs),
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
  A disk's zones profiled (fio's zonemode=strided): 256 MiB read every 2.25 GiB, round the disk:
      iolab run --target /dev/sdb --device --rw read --bs 64k --direct --zone-size 256m --zone-skip 2g
  io_uring with a kernel thread polling its submission queue (fio's sqthread_poll), bound to CPU 1:
      iolab run --target /mnt/f --size 1G --rw randread --bs 4k --engine io_uring --iodepth 32 --direct --sqpoll --sqpoll-cpu 1
Application workloads in a directory (each works in iolab.JOB or iolab.JOB.THREAD, which it creates and removes):
  PostMark with its configuration file (same seed, same operations as the real postmark):
      iolab run --workload postmark --config pm.cfg --target /mnt/dir
  Mail delivery like Postal: 12 threads, 19 minutes, messages per minute after the first one:
      iolab run --workload maildir --threads 12 --runtime 19m --target /mnt/mail
  The redo-log initialisation, sparse with an fsync per 32 KiB against a full sequential one:
      iolab run --workload redolog --files 4 --size 256M --threads 4 --target /data
  filebench's varmail (16 threads, 60 s):
      iolab run --workload varmail --target /mnt/dir
  PostMark's settings as flags (set size, set number, set transactions):
      iolab run --workload postmark --pm-size 1024 262144 --number 5000 --transactions 10000 --target /mnt/dir
  bonnie++'s tests on a 1 GiB file sized for 512 MiB of RAM (its -s 1024 -r 512), 64×1024 files
  in 4 directories, its CSV line into its HTML table:
      iolab run --workload bonnie --target /mnt/dir --bonnie-size 1G --bonnie-ram 512M --bonnie-files 64:0:0:4 --csv | bon_csv2html > b.html

fio job files (recognised by their [sections], or --format fio):
      iolab run jobs/randread.fio
      iolab run legacy.fio --fio-lenient --size 1G       # skip what iolab does not map; flags win
      iolab run compare.fio --section default            # only [default] (and [global]), as fio's --section
      iolab run randread.fio --output fio-json+ > out.json && fio_jsonplus_clat2csv out.json lat.csv
      iolab run randread.fio --write-bw-log rr --write-lat-log rr   # rr_bw.1.log, rr_lat.1.log
      iolab run randread.fio --write-lat-log rr --log-avg-msec 0 --log-offset --log-prio   # a line per I/O

Data validation, Vdbench-style: stamped blocks, a key map and a journal (then `iolab verify`):
      iolab run --target /mnt/f --size 1G --rw randrw --runtime 1m --verify-after --journal /mnt/jnl

Across nodes: each node writes and syncs f.NODE, the next node reads it back (stale reads of a cache):
      iolab run --node a=ssh://h1,dir=/mnt/share --node b=ssh://h2,dir=/net/share --target f --rw write --size 64M --verify-on other

Live figures for Prometheus and Grafana while a long run goes on (docs/metrics.md):
      iolab run --target /mnt/f --size 10G --rw randwrite --runtime 19m -l config=drbd-C --metrics-listen 0.0.0.0:9464

Exit status: 0 done, 1 validation (--verify) found bad blocks, 2 bad input or an I/O error, 130 interrupted (results so far are printed).";

const VERIFY_EXAMPLES: &str = "\
Examples:
  Random 4 KiB writes stamped and journalled; kill iolab (or lose the machine) mid-run, then check:
      iolab run --target /mnt/x/f --size 1G --rw randwrite --runtime 10m --journal /mnt/x/jnl
      iolab verify --journal /mnt/x/jnl
  Seed 004's cost: the same job with each record durable before its write, against buffered records:
      iolab run --target /mnt/x/f --size 1G --rw randwrite --runtime 30s --journal /mnt/x/jnl --journal-sync sync
      iolab run --target /mnt/x/f --size 1G --rw randwrite --runtime 30s --journal /mnt/x/jnl --journal-sync async
  Another node checks what the writer synced (an older key is then a stale read):
      iolab verify --journal /shared/jnl --as-node n2

Every block the journal's map knows is read back and checked: its sectors' stamps (offset, file,
key, writer, time, checksums) against the key the map expects. A block whose write was pending at
the crash may hold its old or its new key; anything else is an error, classified: corrupted,
lost_write, stale_read, misdirected, torn, never_written. Checked by the node that wrote the files,
the map is then brought up to date and the journal started anew, so a run can go on from it.
Exit status: 0 every block as expected, 1 errors found, 2 bad input or an I/O error.";

const CONVERT_EXAMPLES: &str = "\
Examples:
      iolab convert randread.fio > randread.toml
      iolab convert legacy.fio --fio-lenient      # options iolab does not map become comments

Each job section becomes a [[phase.job]] table; a stonewall starts a new [[phase]]; numjobs is
threads. Options iolab does not map are errors naming their file and line (exit 2), or with
--fio-lenient comments at the top.";

const FIO_EXAMPLES: &str = "\
Examples:
  fio's own command line, on iolab's libaio engine, fio's JSON on stdout:
      iolab fio --name=t --rw=randread --bs=4k --size=64m --ioengine=libaio --iodepth=16 --direct=1 --output-format=json
  Options before the first --name apply to every job; each --name starts one:
      iolab fio --ioengine=libaio --direct=1 --size=1g --filename=/mnt/x/f --name=w --rw=write --bs=1m --name=r --stonewall --rw=randread --bs=4k
  Job files too (read after the command line's jobs), several formats at once, into a file:
      iolab fio randread.fio --output-format=normal,json --output=result.txt
  fio's terse v3 line (as --minimal):
      iolab fio --name=t --rw=read --size=16m --minimal
  iolab's own flags come first: iolab fio --no-store --label cfg=a -- --name=t --rw=read --size=16m

Every option iolab maps from fio job files works here (docs/fio.md); one it does not map is an
error naming it and its place (`<command line>:N`, the Nth argument), or with --fio-lenient a
warning. An option takes its value after `=` or as the next argument (fio's flags such as
--time_based take none). Formats: normal (fio's report layout), terse (v3), json, json+.
--eta, --status-interval, --debug and fio's other display switches are accepted and change
nothing. The run is kept in iolab's store (`iolab show last`) unless --no-store.";

#[derive(Args, Debug)]
pub struct FioArgs {
    /// Run without the fio options iolab does not map (each named as a warning) instead of refusing.
    #[arg(long)]
    pub fio_lenient: bool,
    #[command(flatten)]
    pub save: SaveArgs,
    /// fio's arguments: --name=NAME starts a job, every other --option=value goes to the current
    /// job (before the first --name: to all), job files as they are, --output-format, --output.
    #[arg(value_name = "FIO_ARGS", trailing_var_arg = true, allow_hyphen_values = true, num_args = 1.., required = true)]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The fio job file.
    pub job_file: PathBuf,
    /// Leave out the options iolab does not map (listed as comments) instead of refusing the file.
    #[arg(long)]
    pub fio_lenient: bool,
    /// Only this job section (and [global]); repeat for several (fio's --section).
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,
}

/// How a job file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JobFormat {
    /// fio's when its first section line is [name] and no [[table]] follows; TOML otherwise.
    Auto,
    Toml,
    Fio,
}

/// fio-style logs: averaged from the run's per-second figures, or one line per I/O.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct LogArgs {
    /// Write fio's bandwidth log, PREFIX_bw.N.log (KiB/s; N: the phase, from 1; with
    /// --log-avg-msec 0, the thread, from 1 across the run, as fio numbers them).
    #[arg(long, value_name = "PREFIX")]
    pub write_bw_log: Option<String>,
    /// Write fio's IOPS log, PREFIX_iops.N.log.
    #[arg(long, value_name = "PREFIX")]
    pub write_iops_log: Option<String>,
    /// Write fio's latency log, PREFIX_lat.N.log (latency in ns, issue to completion).
    #[arg(long, value_name = "PREFIX")]
    pub write_lat_log: Option<String>,
    /// The logs' window in ms (fio's log_avg_msec): a whole number of seconds; 0 logs every
    /// I/O, one line each, as fio does without log_avg_msec
    /// (e.g. --write-lat-log rr --log-avg-msec 0 --log-offset).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub log_avg_msec: u64,
    /// With --log-avg-msec 0: each line has the I/O's offset in bytes (fio's log_offset=1).
    #[arg(long)]
    pub log_offset: bool,
    /// With --log-avg-msec 0: the last column is the I/O's priority value in hex, 0x2000 for
    /// rt/0 (fio's log_prio=1); without it, 1 for a real-time I/O and 0 for others.
    #[arg(long)]
    pub log_prio: bool,
    /// A fio job file's jobs that ask for logs (one flag per job in the plan's order); all
    /// jobs when empty.
    #[arg(skip)]
    pub logged: Vec<bool>,
}

/// The logs a fio job file asks for, as the flags would give them.
impl From<iolab_spec::fio::FioLogs> for LogArgs {
    fn from(l: iolab_spec::fio::FioLogs) -> Self {
        LogArgs {
            write_bw_log: l.bw,
            write_iops_log: l.iops,
            write_lat_log: l.lat,
            log_avg_msec: l.avg_msec,
            log_offset: l.offset,
            log_prio: l.prio,
            logged: l.logged,
        }
    }
}

impl LogArgs {
    /// Whether any of fio's logs is asked for.
    pub fn wanted(&self) -> bool {
        self.write_bw_log.is_some() || self.write_iops_log.is_some() || self.write_lat_log.is_some()
    }
    /// Whether the logs are per I/O (`--log-avg-msec 0`), written by the workers as they run.
    pub fn per_io(&self) -> bool {
        self.wanted() && self.log_avg_msec == 0
    }
}

const RUNS_EXAMPLES: &str = "\
RUN selectors, wherever a command takes RUN: an id (42), last, last~N (the one before last is
last~1), all, a range A..B of ids or last~N (3..7, last~4..last, last~4.. for the last five),
or labels such as config=ext4 or config=drbd,proto=C (every run carrying them).

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
  Each node of the last three runs of several nodes against the first run's first node:
      iolab compare last~2 last~1 last --by node

Verdicts need 2+ runs on both sides: Welch's t-test at 5% and a 95% confidence interval of the
change wholly beyond --noise. Metrics are CLASS-STAT: STAT one of mbs, iops, p50, p99; CLASS an
operation class (read, write, sync, open, create, close, unlink, rename, mkdir, rmdir, dirsync,
truncate, fallocate, stat, readdir, seek, journal). By default: read-mbs write-mbs read-iops write-iops
read-p50 read-p99 write-p50 write-p99 sync-p99, and the iops and p99 of other classes present.
A personality's figure is a metric too (docs/json.md, Workload figures): messages_per_min,
transactions_per_s, full_s, flowops_per_s, ...; its rates are compared by default.
A steady state's figures are metrics where a run has one (--steady-state, or a pts-* scenario,
compared as its row `steady state`): steady_iops, steady_mbs, steady_lat_ms (the last window's
mean), steady_attained (1 or 0), steady_rounds.";

/// Where results are kept.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// The results database: an SQLite file (default: $XDG_DATA_HOME/iolab/results.db), or a
    /// PostgreSQL database a team shares, postgres://USER[:PASSWORD]@HOST[:PORT]/DBNAME
    /// [?sslmode=verify-full&sslrootcert=CA.pem] (the password there, or in PGPASSWORD; never
    /// printed, never stored).
    #[arg(long, env = "IOLAB_DB", value_name = "PATH|URL", global = true, hide_env_values = true, value_parser = target())]
    pub db: Option<Target>,
}

impl DbArgs {
    pub fn target(&self) -> Target {
        self.db.clone().unwrap_or_else(|| Target::File(iolab_store::default_path()))
    }

    /// A directory of this machine for what is kept beside the results (the agents' keys, a
    /// survey's report): the database file's, or the default database's for a server.
    pub fn local_dir(&self) -> Option<PathBuf> {
        match self.target() {
            Target::File(p) => p.parent().map(PathBuf::from),
            Target::Postgres(_) => iolab_store::default_path().parent().map(PathBuf::from),
        }
    }
}

/// `--db`'s parser: a path, or a URL read when the database is opened (so that no error of
/// clap's ever prints it, password and all).
fn target() -> impl clap::builder::TypedValueParser<Value = Target> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().map(Target::parse)
}

/// Labels and saving, for commands that run I/O.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Stored results")]
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

/// The longest label key, in characters.
pub const LABEL_KEY_MAX: usize = 64;
/// The longest label value, in characters.
pub const LABEL_VALUE_MAX: usize = 256;

/// `KEY=VALUE`: the key 1 to 64 of A-Z a-z 0-9 _ . -, the value up to 256 characters and none
/// of them a control character (labels are shown in tables, CSV cells and HTML).
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    let Some((k, v)) = s.split_once('=').map(|(k, v)| (k.trim(), v)).filter(|(k, _)| !k.is_empty()) else {
        return Err(format!(
            "`{}` is not a label; write KEY=VALUE, for example config=ext4",
            iolab_report::text::safe(&s.chars().take(80).collect::<String>())
        ));
    };
    let key_chars = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if k.chars().count() > LABEL_KEY_MAX || !k.chars().all(key_chars) {
        return Err(format!(
            "label key `{}`: a key is 1 to {LABEL_KEY_MAX} characters of A-Z a-z 0-9 _ . - (config, fs.type, run-id)",
            iolab_report::text::safe(&k.chars().take(80).collect::<String>())
        ));
    }
    if v.chars().count() > LABEL_VALUE_MAX {
        return Err(format!("label `{k}`: the value is {} characters; at most {LABEL_VALUE_MAX}", v.chars().count()));
    }
    if v.chars().any(iolab_report::text::unsafe_char) {
        return Err(format!(
            "label `{k}`: the value `{}` holds a control character (shown escaped); a value is printable text",
            iolab_report::text::safe(v)
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The --journal directory of the validated run (its maps name the files to check).
    #[arg(long, value_name = "DIR")]
    pub journal: PathBuf,
    /// Check as this node (default: this host's name). Another node than the writer leaves the
    /// journal as it is, and an older key in a block the writer had synced is a stale read.
    #[arg(long, value_name = "NAME")]
    pub as_node: Option<String>,
    /// Bad blocks to list per file before stopping (0: check everything, list the first 1,000).
    #[arg(long, default_value_t = iolab_spec::verify::DEFAULT_MAX_ERRORS)]
    pub max_errors: u64,
    /// human: a summary; json: a run's JSON with one phase, `verify` (docs/json.md).
    #[arg(long, short = 'o', value_parser = Takes("verify"), default_value = "human")]
    pub output: Format,
    #[command(flatten)]
    pub save: SaveArgs,
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
    #[arg(long, short = 'o', value_parser = Takes("runs"), default_value = "human")]
    pub output: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Runs to show (see `iolab runs --help` for selectors).
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[arg(long, short = 'o', value_parser = Takes("show"), default_value = "human")]
    pub output: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
#[command(after_help = RM_EXAMPLES)]
pub struct RmArgs {
    /// Runs to delete (see `iolab runs --help` for selectors: all, 3..7, last~4.. among them).
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Delete more than one run without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Delete a run even while the iolab process recording it still runs (it then saves
    /// nothing more).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

const RM_EXAMPLES: &str = "\
Examples:
      iolab rm last
      iolab rm 3..7 --yes          # several runs: asks first unless --yes
      iolab rm config=old -y
A run still being recorded (its iolab process alive on this host) is refused unless --force.";

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// What to write on stdout (fio's JSON holds one run).
    #[arg(long, short = 'f', value_parser = Takes("export"), default_value = "json")]
    pub format: Format,
    /// With --format json: each operation class's latency histogram beside its figures (HDR V2
    /// deflate in base64, docs/json.md), for tools that merge or re-percentile them.
    #[arg(long)]
    pub histograms: bool,
    #[command(flatten)]
    pub logs: LogArgs,
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
    /// Group runs by this label (repeated runs of one configuration); `--by node` makes each
    /// node of runs of several nodes a configuration (its share of each phase).
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
    #[arg(long, short = 'o', value_parser = Takes("compare"), default_value = "human")]
    pub output: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Where to write the report. An existing file is replaced only if iolab wrote it (a
    /// report of an earlier `iolab report`), or with --overwrite.
    #[arg(long, short = 'o', default_value = "iolab-report.html")]
    pub out: PathBuf,
    /// Replace the file at --out even if iolab did not write it.
    #[arg(long)]
    pub overwrite: bool,
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

const PRECONDITION_EXAMPLES: &str = "\
Examples:
  A raw SSD before `--steady-state snia` runs (not mounted, no partition of it in use):
      iolab precondition /dev/nvme1n1 --device
  A secure erase of the range instead of a plain discard:
      iolab precondition /dev/sdb --device --purge secure
  A test file of 8 GiB, created by iolab, purged with a punched hole, then filled twice:
      iolab precondition /mnt/array/qual.dat --size 8G
  The purge alone (see what the device does with a discard), as JSON:
      iolab precondition /dev/sdb --device --passes 0 --output json";

fn parse_purge(s: &str) -> Result<iolab_workload::precondition::Purge, String> {
    s.parse()
}

#[derive(Args, Debug)]
pub struct PreconditionArgs {
    /// The block device (with --device) or file to precondition.
    pub target: PathBuf,
    /// The target is a block device: everything on it is destroyed. Refused while it or a partition of it is mounted or held.
    #[arg(long)]
    pub device: bool,
    /// A file's size: created at this size when missing (4G, 512M).
    #[arg(long, short = 's', value_parser = iolab_spec::parse_size)]
    pub size: Option<iolab_spec::Bytes>,
    /// Write into an existing file iolab did not create.
    #[arg(long)]
    pub overwrite: bool,
    /// auto (discard a device, punch a file; none where the target refuses, said), discard, secure (BLKSECDISCARD), punch, none.
    #[arg(long, default_value = "auto", value_parser = parse_purge)]
    pub purge: iolab_workload::precondition::Purge,
    /// Times the capacity is written after the purge (SNIA PTS: 2; 0: the purge alone).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub passes: u32,
    /// The fill's write size (SNIA PTS: 128k; a multiple of 4 KiB).
    #[arg(long, default_value = "128k", value_parser = iolab_spec::parse_size)]
    pub bs: iolab_spec::Bytes,
    /// human: progress on stderr and a summary; json: the outcome as one object.
    #[arg(long, short = 'o', value_parser = Takes("precondition"), default_value = "human")]
    pub output: Format,
    /// No progress line.
    #[arg(long)]
    pub no_progress: bool,
    /// Where the preconditioning is kept (a run of kind `precondition`), so that a later run on
    /// the same target links to it (`iolab show` says which, when and what ran between).
    #[command(flatten)]
    pub save: SaveArgs,
}

const WATCH_EXAMPLES: &str = "\
Examples:
  Watch the disk under a database's directory while it starts:
      iolab watch /localdisk/cluster
  Ten samples as JSON lines, for a script:
      iolab watch /mnt/nfs --count 10 --output json
  Keep what was seen as a run, to list, show and chart later:
      iolab watch /localdisk/cluster --label node=a --label what=startup
      iolab report last -o startup.html
  The same figures for Prometheus, at http://HOST:9464/metrics (docs/metrics.md):
      iolab watch /localdisk/cluster --metrics-listen 0.0.0.0:9464";

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
    #[arg(long, short = 'o', value_parser = Takes("watch"), default_value = "human")]
    pub output: Format,
    /// Store the samples in this results database (a file or a postgres:// URL), as a run of
    /// kind `watch` with one phase (`iolab runs`, `show` and `report` read it); --label alone
    /// stores in the default one.
    #[arg(long, value_name = "PATH|URL", value_parser = target())]
    pub db: Option<Target>,
    /// Store the samples, filed under this label, KEY=VALUE (repeatable).
    #[arg(long = "label", short = 'l', value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

impl WatchArgs {
    /// Where to store the samples: `--db`, else with a `--label` the default database
    /// (`IOLAB_DB` or the XDG path); `None` to print only.
    pub fn store_target(&self) -> Option<Target> {
        match (&self.db, self.labels.is_empty()) {
            (Some(p), _) => Some(p.clone()),
            (None, false) => Some(
                std::env::var_os("IOLAB_DB")
                    .map(Target::parse)
                    .unwrap_or_else(|| Target::File(iolab_store::default_path())),
            ),
            (None, true) => None,
        }
    }
}

const SURVEY_EXAMPLES: &str = "\
Examples:
      iolab survey /mnt/scratch
      iolab survey /mnt/nfs --size 4G --step-time 10s
      iolab survey /mnt/drbd --verify      # and a step that checks every block it reads
      iolab survey /tmp/x --output json > profile.json";

/// `trace_cmd`'s name for the one format type.
pub use crate::formats::Format as Output;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A job file, iolab's TOML or fio's; flags given beside it override every job in it.
    pub job_file: Option<PathBuf>,
    /// How to read the job file.
    #[arg(long, value_enum, default_value_t = JobFormat::Auto)]
    pub format: JobFormat,
    /// fio job files: run without the options iolab does not map (each named as a warning)
    /// instead of refusing the file.
    #[arg(long)]
    pub fio_lenient: bool,
    /// fio job files: only this job section (and [global]); repeat for several (fio's --section).
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,
    /// Remove the files this run created (only those) when it ends.
    #[arg(long)]
    pub cleanup: bool,
    /// The job's options (each defined once, on `JobPatch`, with its job-file key), under their
    /// headings: target and size, pattern, engine, durability, timing, data, validation, each
    /// personality's own.
    #[command(flatten)]
    pub job: JobPatch,
    /// With --workload bonnie: print bonnie++'s CSV line (what its -q prints; bon_csv2html and
    /// bon_csv2txt read it) instead of the summary, progress and notes still shown (as
    /// --output bonnie-csv, which shows neither).
    #[arg(long, help_heading = "bonnie++ (--workload bonnie)")]
    pub csv: bool,
    /// Run the jobs on these nodes at once (each node runs every job) instead of here.
    #[command(flatten)]
    pub nodes: NodeArgs,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub logs: LogArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Serve one coordinator over stdin/stdout (how `ssh host iolab agent --stdio` is used).
    #[arg(long)]
    pub stdio: bool,
    /// Serve as a daemon on HOST:PORT, over TLS (needs --token-file).
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "stdio")]
    pub listen: Option<String>,
    /// Connect out to a coordinator started with --listen ADDR and serve it (TLS, needs
    /// --token-file): for agents a launcher places (srun, mpirun, a Kubernetes Indexed Job).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["stdio", "listen"])]
    pub join: Option<String>,
    /// With --join: this agent's rank [default: the launcher's SLURM_PROCID,
    /// OMPI_COMM_WORLD_RANK, PMI_RANK or JOB_COMPLETION_INDEX].
    #[arg(long, requires = "join")]
    pub rank: Option<u32>,
    /// With --join: how long to keep trying to reach the coordinator.
    #[arg(long, value_parser = parse_dur, default_value = "120s", requires = "join")]
    pub join_timeout: Duration,
    /// The shared token every request must carry (the file's first line; refused if empty).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Where the agent keeps its certificate (daemon) and the traces it is sent for replay
    /// (each agent process in a directory of its own under traces/, removed when it ends)
    /// [default: $XDG_STATE_HOME/iolab/agent or ~/.local/state/iolab/agent].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Serve this certificate (PEM, for example one your CA signed) instead of the one made
    /// on first start.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// How long a client has to finish its TLS handshake.
    #[arg(long, value_parser = parse_dur, default_value = "10s", hide = true)]
    pub handshake_timeout: Duration,
    /// Do I/O only under these directories (repeatable); without one, the agent does none.
    #[arg(long, value_name = "DIR")]
    pub allow: Vec<PathBuf>,
    /// Serve this node's live figures for Prometheus at http://HOST:PORT/metrics, for as long
    /// as the agent runs (its runs' series, labelled run_id by the run's mark; a coordinator's
    /// own --metrics-listen serves every node's). Off by default.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
}

const AGENT_EXAMPLES: &str = "\
Examples:
  What a coordinator runs over ssh (nothing listens):
      iolab agent --stdio --allow /mnt/shared
  A daemon over TLS; the coordinator gives the same token and pins the printed fingerprint:
      head -c 32 /dev/urandom | base64 > ~/.iolab-token
      iolab agent --listen 0.0.0.0:7878 --token-file ~/.iolab-token --allow /mnt/shared
      iolab run --node n1=host1:7878,dir=/mnt/shared --token-file ~/.iolab-token --target f --rw write --size 1G
  Placed by a launcher (docs/launchers.md): each agent dials the coordinator with its rank:
      iolab run --listen 0.0.0.0:7700 --expect 4 --token-file ~/.iolab-token --target f --size 1G &
      srun -N4 iolab agent --join coordinator-host:7700 --token-file ~/.iolab-token --allow /scratch/$USER
  A daemon that also serves its node's live figures for Prometheus (docs/metrics.md):
      iolab agent --listen 0.0.0.0:7878 --token-file ~/.iolab-token --allow /mnt/shared --metrics-listen 0.0.0.0:9465
  Try several nodes on one machine:
      iolab run --node a=exec://$(command -v iolab),dir=/tmp/a --node b=exec://$(command -v iolab),dir=/tmp/b \\
          --target f --rw write --size 64M
";

/// `--metrics-listen` and `--metrics-linger`, for commands that run I/O or sample.
#[derive(Args, Debug, Clone)]
pub struct MetricsArgs {
    /// Serve the run's live figures for Prometheus at http://HOST:PORT/metrics while it runs
    /// (OpenMetrics or Prometheus text, read-only; docs/metrics.md lists the series), e.g.
    /// 127.0.0.1:9464; off by default.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
    /// How long /metrics stays up after the run, so the last scrape sees the final counts
    /// (Ctrl-C ends the wait at once).
    #[arg(long, value_name = "DURATION", value_parser = parse_dur, default_value = "15s")]
    pub metrics_linger: Duration,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Output")]
pub struct OutArgs {
    /// What to print on stdout; every format but human prints nothing else there (and no
    /// progress line).
    #[arg(long, short = 'o', value_parser = Takes("run"), default_value = "human")]
    pub output: Format,
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
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

impl OutArgs {
    /// Refuse flags that do not go together, before anything runs.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.histograms && self.output != Format::Json {
            anyhow::bail!("--histograms goes with --output json; the summary prints percentiles");
        }
        Ok(())
    }

    /// Machine-readable output on stdout: no chatter there or on stderr.
    pub fn machine(&self) -> bool {
        self.output.is_machine()
    }

    /// What the format is asked for with, beside its name.
    pub fn options(&self) -> iolab_report::format::Options {
        iolab_report::format::Options { histograms: self.histograms }
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
    /// Add a validated step: 4 KiB random reads and writes with every block stamped and each read
    /// checked, the file read back at the end (exit status 1 on a bad block).
    #[arg(long)]
    pub verify: bool,
    /// Add the locking check on these nodes to the profile (node A and B: the first two,
    /// each writing under its dir=, one step of --step-time each): see `iolab scenario locking`.
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// The link speed the locking check's verdict reads the nodes' throughput against.
    #[arg(long, value_name = "SPEED", value_parser = parse_link_speed)]
    pub link_speed: Option<f64>,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}

impl NodeArgs {
    /// Whether any node is named (the run goes to the nodes, not here).
    pub fn given(&self) -> bool {
        !self.node.is_empty() || self.nodes_file.is_some() || self.expect.is_some()
    }
}

/// The nodes a run or a scenario uses, and how strictly their clocks are checked.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Several nodes")]
pub struct NodeArgs {
    /// A node, NAME=ADDR[,dir=PATH] (repeatable, in order: a scenario's node A is the first).
    /// ADDR is ssh://[user@]host (the system ssh runs `iolab agent --stdio` there), HOST:PORT
    /// (an `iolab agent --listen` daemon), join:RANK (an `iolab agent --join` placed by a
    /// launcher, see --listen) or exec://PATH (a local agent, for trying). dir= is where that
    /// node's relative targets live, as each node may mount the shared filesystem at its own
    /// path; ssh:// and exec:// nodes need it, as it is the one directory their agent may use
    /// (its --allow). A node without iolab on its PATH, or with another version, gets a copy of
    /// this one (same architecture) in its ~/.cache/iolab, and iolab says so; a refused ssh
    /// login is reported and nothing is copied.
    #[arg(long = "node", value_name = "NAME=ADDR[,dir=PATH]")]
    pub node: Vec<String>,
    /// A TOML file of nodes (name, address, dir), read before the --node flags.
    #[arg(long = "nodes", value_name = "FILE")]
    pub nodes_file: Option<PathBuf>,
    /// Run even when a node's clock is more than 1 s off the coordinator's (the start skew
    /// and the per-node timelines are then only as good as the clocks).
    #[arg(long)]
    pub ignore_clock: bool,
    /// The shared token of HOST:PORT agents (the file's first line).
    #[arg(long, value_name = "FILE", env = "IOLAB_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Check HOST:PORT agents' certificates against this CA (PEM) instead of pinning them
    /// (trust on first use, kept in `known_agents` beside the results database).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Wait on HOST:PORT for agents a launcher started with `iolab agent --join` (TLS; each
    /// proves the --token-file token); they are the join:RANK nodes and those of --expect.
    #[arg(long = "listen", value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Wait for N agents to join --listen, ranks 0 to N-1, named rank0, rank1, ...; a join:RANK
    /// node given by name takes that rank's place. Relative targets go under each one's dir=,
    /// else under its only --allow directory.
    #[arg(long, value_name = "N", requires = "listen", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub expect: Option<u32>,
    /// How long to wait for every agent to join.
    #[arg(long, value_parser = parse_dur, default_value = "120s")]
    pub join_timeout: Duration,
}

const SCENARIO_EXAMPLES: &str = "\
Built-ins:
  locking   the cluster filesystem's locking check on a shared directory: node A alone, node B alone, two writers
            on A at once, A and B at once (a dd-like 1M write of 1G with a final fsync unless the
            job flags say otherwise), then a verdict: the baseline range, the cost of disk-internal
            concurrency, the cost of the cluster filesystem, and whether a link is the limit.
            A and B are the first two nodes given. --shared-file makes every writer write one file.
  scaling   the same job on 1, 2, ..., N nodes at once (--clients N stops earlier), each node in
            its own subdirectory, with the aggregate, per-client share and efficiency per count.

Examples:
  The locking check on two OCFS2 nodes over SSH, on one shared file, 100 Mbit link:
      iolab scenario locking --node n1=ssh://root@er-40021,dir=/var/lib/mysql \\
          --node n2=ssh://root@er-20026,dir=/var/lib/mysql --shared-file --size 1000M --bs 100M \\
          --link-speed 100mbit
  PostMark on one to four clients at once, each in its own directory:
      iolab scenario scaling --nodes clients.toml --workload postmark --clients 4
  Three rounds of the locking check, direct I/O, JSON with the verdict for a script:
      iolab scenario locking --node a=10.0.0.1:7700 --node b=10.0.0.2:7700 --direct --repeat 3 \\
          --output json
  SNIA PTS's IOPS test on a raw device of this machine (purge, 2x fill, 1-minute cells until
  4k 0/100 IOPS is steady; its convergence, window and tables in `iolab report`):
      iolab scenario pts-iops --target /dev/nvme1n1 --device
  PTS's latency test on a file, 30 s cells, at most 10 rounds:
      iolab scenario pts-latency --target /mnt/x/pts.dat --size 8G --runtime 30s --ss-max-rounds 10
  Your own steps (docs/scenarios.md), with the job flags over every job:
      iolab scenario my-steps.toml --node a=ssh://a,dir=/mnt/x --node b=ssh://b,dir=/mnt/x --size 256M

Targets in a scenario are relative to each node's dir= (an absolute target stays as it is);
--target names the built-ins' working directory (default iolab-locking, iolab-scaling).";

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// A scenario file (TOML, see docs/scenarios.md) or a built-in's name: locking, scaling,
    /// pts-iops, pts-throughput, pts-latency.
    #[arg(value_name = "FILE|NAME")]
    pub scenario: String,
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// locking: every writer writes one file, iolab-locking/shared.dat (both nodes on one file);
    /// without it each writer writes its own.
    #[arg(long)]
    pub shared_file: bool,
    /// The speed of the network link each node reaches the storage over, for the verdict: 100mbit,
    /// 1gbit, 10gbit, or a number of Mb/s. Wins over what the interface reports (a veth, a
    /// shaped link or an sshfs/FUSE path may report none or the wrong one).
    #[arg(long, value_name = "SPEED", value_parser = parse_link_speed)]
    pub link_speed: Option<f64>,
    /// scaling: stop at this many nodes at once (default: every node given).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub clients: Option<u32>,
    /// pts-*: the matrix's read percentages instead of the test's own (pts-iops: 100,95,65,50,35,5,0).
    #[arg(long, value_name = "PCT,...", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(0..=100))]
    pub pts_mixes: Option<Vec<u8>>,
    /// pts-*: the matrix's block sizes instead of the test's own (pts-iops: 1024k,128k,64k,32k,16k,8k,4k,512).
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', value_parser = iolab_spec::parse_size)]
    pub pts_bs: Option<Vec<iolab_spec::Bytes>>,
    /// pts-*: skip the purge and the workload-independent preconditioning (2 x the capacity in
    /// 128 KiB sequential writes); the report says the figures followed none.
    #[arg(long)]
    pub no_precondition: bool,
    /// Run the whole sequence of steps this many times (steps are named `A alone #2`...); with a
    /// file, over its `repeat` (default: the file's, else 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=iolab_spec::scenario::MAX_REPEAT as i64))]
    pub repeat: Option<u32>,
    /// The job's options, over every job of the scenario (each defined once, on `JobPatch`).
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

// ---- trace (issue 11): `iolab trace record|import|show|export` ----

const TRACE_EXAMPLES: &str = "\
Examples:
  Record a program's I/O, io_uring and libaio included (eBPF as root; strace otherwise):
      iolab trace record -o app.trace -- ./redo /data 4 16
  Attach to a running process until Ctrl-C:
      iolab trace record -o db.trace -p 4242
  With strace (ptrace; its cost is measured and taken off the recorded times):
      iolab trace record --via strace -o app.trace -- ./redo /data 4 16
  The block requests under /data for a minute (blktrace's view), then as a fio iolog:
      iolab trace record --level block --under /data --duration 1m -o blk.trace
      iolab trace export --fio blk.trace -o blk.iolog
  Convert strace output made elsewhere (one -f file, or the per-thread files of -ff):
      iolab trace import -o app.trace ndbd.strace
      iolab trace import -o app.trace t.8877 t.8878 t.8879
  What it did, and what it would take at 50 MB/s and 5 ms per I/O:
      iolab trace show app.trace --rate 50MB --latency 5ms
  A fio iolog v3 for fio's read_iolog=, the traced files remapped under /mnt/test:
      iolab trace export --fio app.trace -o app.iolog --target /mnt/test
      fio --name=replay --read_iolog=app.iolog";

const DB_COPY_EXAMPLES: &str = "\
Examples:
  Every run of this machine's database into the team's:
      iolab db copy ~/.local/share/iolab/results.db postgres://iolab@db.lab/results
  One configuration's runs, the password in the environment rather than on the command line:
      PGPASSWORD=... iolab db copy a.db postgres://iolab@db.lab/results --label config=drbd-C
  Back out of the server into a file, for a laptop:
      iolab db copy postgres://iolab@db.lab/results mine.db config=ext4 last

A run keeps an identity (`uid`) wherever it is copied: one already in TO is recognised and left
as it is, so the copy can be run as often as wanted and copies nothing twice. Runs still being
recorded are left for a later copy. Each run is written in one transaction: a copy that is
stopped leaves whole runs only. A URL's password is never printed.";

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Copy runs from one results database to another, with everything they hold.
    #[command(after_help = DB_COPY_EXAMPLES)]
    Copy(DbCopyArgs),
}

#[derive(Args, Debug)]
pub struct DbCopyArgs {
    /// The database to copy from: an SQLite file or a postgres:// URL.
    #[arg(value_name = "FROM", value_parser = target())]
    pub from: Target,
    /// The database to copy to: an SQLite file (made if missing) or a postgres:// URL (the
    /// database must exist on the server; iolab makes its tables).
    #[arg(value_name = "TO", value_parser = target())]
    pub to: Target,
    /// Runs to copy (selectors: ids, last, last~N, labels; default: every run).
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// Only runs with this label (KEY=VALUE, repeatable).
    #[arg(long = "label", short = 'l', value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Only runs whose name or kind contains this.
    #[arg(long)]
    pub name: Option<String>,
    /// Only runs started since: a date (2026-11-20, UTC), Unix seconds, or an age (90m, 2d).
    #[arg(long)]
    pub since: Option<String>,
    /// Only runs with this status: complete, interrupted, failed.
    #[arg(long)]
    pub status: Option<String>,
    /// human: a line per run on stderr and the count; json: the count ({copied, present,
    /// running, rows}).
    #[arg(long, short = 'o', value_parser = Takes("db copy"), default_value = "human")]
    pub output: Format,
}

#[derive(Subcommand, Debug)]
#[command(after_help = TRACE_EXAMPLES)]
pub enum TraceCommand {
    /// Record a command's (or a running process's) I/O, or the block requests under a path, as a trace.
    #[command(after_help = TRACE_EXAMPLES)]
    Record(TraceRecordArgs),
    /// Convert strace output (-f into one file, or the per-thread files of -ff) into a trace.
    #[command(after_help = TRACE_EXAMPLES)]
    Import(TraceImportArgs),
    /// Per thread and per file: counts, bytes, sizes, access pattern, flushes, O_DIRECT, time.
    #[command(after_help = TRACE_EXAMPLES)]
    Show(TraceShowArgs),
    /// Export a trace for other tools (fio iolog v3).
    #[command(after_help = TRACE_EXAMPLES)]
    Export(TraceExportArgs),
}

/// How `trace record` sees the program.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceVia {
    /// eBPF in the kernel: the kernel's times, io_uring and libaio, little cost (root or CAP_BPF).
    Ebpf,
    /// strace (ptrace): everywhere ptrace is allowed; slows the program, sees no async I/O.
    Strace,
}

/// What `trace record` records.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceLevel {
    /// The program's system calls and asynchronous I/O.
    Syscall,
    /// The block requests on the devices under --under (blktrace's view; eBPF only).
    Block,
}

#[derive(Args, Debug)]
pub struct TraceRecordArgs {
    /// Where the trace goes.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Attach to this running process (and its threads) instead of running a command; Ctrl-C or SIGTERM ends the recording.
    #[arg(short = 'p', long = "pid", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// ebpf or strace [default: ebpf where the kernel and privileges allow it, else strace].
    #[arg(long, value_enum)]
    pub via: Option<TraceVia>,
    /// syscall: the program's calls; block: the block requests on the devices under --under.
    #[arg(long, value_enum, default_value_t = TraceLevel::Syscall)]
    pub level: TraceLevel,
    /// --level block: record the devices that carry this path's I/O [default: the current directory].
    #[arg(long, value_name = "PATH")]
    pub under: Option<PathBuf>,
    /// --level block without a command or -p: stop after this long (else at Ctrl-C or SIGTERM).
    #[arg(long, value_parser = parse_dur)]
    pub duration: Option<Duration>,
    /// The eBPF recorder's ring buffer (a power of two; events that do not fit are counted as lost).
    #[arg(long, value_parser = parse_bytes, default_value = "32M")]
    pub buffer: Bytes,
    /// Keep strace's own output beside the trace (FILE.strace).
    #[arg(long)]
    pub keep_strace: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// human: a summary; json: the import summary.
    #[arg(long, value_parser = Takes("trace"), default_value = "human")]
    pub output: Format,
}

#[derive(Args, Debug)]
pub struct TraceImportArgs {
    /// Where the trace goes.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// strace output: one file, or the per-thread files of `strace -ff` (NAME.TID).
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// Take strace's own cost off the gaps between calls, as `trace record --via strace` does:
    /// `measure` measures it on this machine (strace -f --seccomp-bpf, as the recorder runs it:
    /// right when the strace ran here), or give it as CALL,GAP, the cost inside each call and in
    /// the gap after it (`120us,140us`).
    #[arg(long, value_name = "measure|CALL,GAP", value_parser = parse_strace_cost)]
    pub strace_cost: Option<StraceCost>,
    #[arg(long, value_parser = Takes("trace"), default_value = "human")]
    pub output: Format,
}

/// strace's cost per traced call for `trace import --strace-cost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StraceCost {
    /// Measured on this machine.
    Measure,
    /// Given: inside each call's duration and in the gap after it.
    Given { call: Duration, gap: Duration },
}

fn parse_strace_cost(s: &str) -> Result<StraceCost, String> {
    if s.trim() == "measure" {
        return Ok(StraceCost::Measure);
    }
    let (call, gap) = s.split_once(',').ok_or_else(|| {
        format!("`{s}`: give `measure`, or CALL,GAP (strace's cost inside a call and after it: 120us,140us)")
    })?;
    Ok(StraceCost::Given { call: parse_dur(call.trim())?, gap: parse_dur(gap.trim())? })
}

#[derive(Args, Debug)]
pub struct TraceShowArgs {
    pub trace: PathBuf,
    /// Device rate for the time model (bytes per second: 50MB is 50,000,000, 50M is 50 MiB).
    #[arg(long, value_parser = parse_bytes)]
    pub rate: Option<Bytes>,
    /// Device latency per I/O and per flush for the time model.
    #[arg(long, value_parser = parse_dur)]
    pub latency: Option<Duration>,
    #[arg(long, value_parser = Takes("trace"), default_value = "human")]
    pub output: Format,
}

#[derive(Args, Debug)]
pub struct TraceExportArgs {
    /// Write a fio iolog version 3 (replay with `fio --read_iolog=FILE`).
    #[arg(long, required = true)]
    pub fio: bool,
    pub trace: PathBuf,
    /// Where the log goes (stdout if not given).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Remap the traced files under this directory (as `iolab replay --target` does); files
    /// outside the traced directory are left out.
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// The traced directory --target stands for (default: the common directory of the files
    /// the trace writes).
    #[arg(long, value_name = "PREFIX", requires = "target")]
    pub strip: Option<PathBuf>,
}

const REPLAY_EXAMPLES: &str = "\
Examples:
  Replay a recorded program's I/O under /mnt/test, creating the files it needs first:
      iolab trace record -o redo.trace -- ./redo /data 4 16
      iolab replay redo.trace --target /mnt/test --prepare
  As fast as possible, or with the think time halved, labelled for `iolab compare`:
      iolab replay redo.trace --target /mnt/test --timing afap -l config=ssd
      iolab replay redo.trace --target /mnt/test --timing scale:2
  A trace with long idle gaps, or one large read, that the limits refuse:
      iolab replay db.trace --target /mnt/test --max-wait 2h --max-buffer 256M
  A block-level recording onto a file (made if missing), or onto a device it overwrites:
      iolab trace record --level block --under /data --duration 1m -o blk.trace
      iolab replay blk.trace --target /mnt/test/blk.img
      iolab replay blk.trace --target /dev/nvme1n1 --device --strip nvme0n1
  The same trace on two nodes at one start, each under its own directory of the shared mount:
      iolab replay redo.trace --target run1 --node a=ssh://n1,dir=/mnt/ocfs2/a --node b=ssh://n2,dir=/mnt/ocfs2/b
  One trace per node (each node's own recording), at one start:
      iolab replay --node-trace a=n1.trace --node-trace b=n2.trace --target run1 --node a=ssh://n1,dir=/mnt/x \\
          --node b=ssh://n2,dir=/mnt/x

With --node, iolab sends each node its trace (the agent checks its length and CRC and keeps it
in its own state directory, never under its --allow directories); --target is relative to each
node's dir=; --prepare makes the files the trace needs on each node.

The traced files under the common directory of those the program writes (or --strip PREFIX)
are replayed under --target, every path resolved beneath it (no link is followed out of it);
other files (libraries, /proc, sockets) are skipped and counted. The replay changes only files
and directories iolab made (unless --overwrite) and marks what it makes as iolab's, so it can
run again into the same target. A trace is untrusted: waits, buffers, threads and memory are
bounded (--max-wait, --max-buffer, --max-threads, --max-memory).
Exit status: 0 done and faithful (replayed counts and results equal the recorded ones), 1 they
differ, 2 bad input or an I/O error, 130 interrupted.";

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace (from `iolab trace record` or `iolab trace import`); with --node, every node
    /// replays it.
    #[arg(required_unless_present = "node_trace")]
    pub trace: Option<PathBuf>,
    /// The directory the traced files are replayed under (with --node: relative to each node's
    /// dir=, or absolute).
    #[arg(long)]
    pub target: PathBuf,
    /// With --node: this node replays this trace, NAME=FILE (repeatable; one per node, instead
    /// of one trace for all).
    #[arg(long, value_name = "NAME=FILE", conflicts_with = "trace")]
    pub node_trace: Vec<String>,
    /// Replay on these nodes at one start instead of here.
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// think: keep each thread's gaps between calls; recorded: each call at its recorded instant;
    /// afap: no waits; scale:X: gaps divided by X.
    #[arg(long, default_value = "think", value_parser = |s: &str| s.parse::<iolab_spec::Timing>())]
    pub timing: iolab_spec::Timing,
    /// Create the files the trace reads or expects to exist, with data up to the extent it reads.
    #[arg(long)]
    pub prepare: bool,
    /// The traced directory that --target stands for (default: the common directory of the files the trace writes); for a block-level trace, the traced device (default: the one with the most requests).
    #[arg(long, value_name = "PREFIX")]
    pub strip: Option<PathBuf>,
    /// The engine that makes the data calls [default: psync, the calls synchronous as traced;
    /// for a trace with io_uring operations io_uring, with libaio's only libaio, as deep as the
    /// rings went].
    #[arg(long)]
    pub engine: Option<String>,
    /// Allow the replay to change (write, truncate, rename, remove) files and directories under
    /// --target that iolab did not create.
    #[arg(long)]
    pub overwrite: bool,
    /// A block-level trace (trace record --level block) replayed onto the block device --target
    /// names, whose data it overwrites (as `iolab run --device`).
    #[arg(long)]
    pub device: bool,
    /// The longest wait before one call (think time, or a recorded offset) [default: 10m].
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    pub max_wait: Option<Duration>,
    /// The largest read or write one call may make; each replay thread has one buffer this
    /// big at most [default: 64M].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_buffer: Option<Bytes>,
    /// Replay threads, one per traced thread with calls to replay [default: 256].
    #[arg(long, value_name = "N")]
    pub max_threads: Option<u32>,
    /// Memory the replay may hold: its calls (about 100 bytes each) and its threads' buffers
    /// [default: 1G].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_memory: Option<Bytes>,
    /// Validate the data: every write stamped, every read checked against what the replay wrote
    /// there (errors in `phases[].verify`, exit status 1).
    #[arg(long)]
    pub verify: bool,
    /// With --verify: read every file the replay wrote back, before it removes it and at the end.
    #[arg(long)]
    pub verify_after: bool,
    /// With --verify: stop after this many errors (0: never) [default: 50].
    #[arg(long, value_name = "N")]
    pub max_errors: Option<u64>,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}

impl ScenarioArgs {
    /// The built-ins' options these flags give.
    pub fn builtin_options(&self) -> iolab_spec::BuiltinOptions {
        iolab_spec::BuiltinOptions {
            shared_file: self.shared_file,
            clients: self.clients,
            repeat: self.repeat.unwrap_or(1),
            pts_mixes: self.pts_mixes.clone(),
            pts_bs: self.pts_bs.clone(),
            no_precondition: self.no_precondition,
        }
    }
}

/// A link speed in Mb/s: `100mbit`, `1gbit`, `10Gbit/s`, `100mbps`, `2.5gbit` or a bare number of
/// Mb/s.
pub fn parse_link_speed(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix("/s").unwrap_or(&t);
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "m" | "mbit" | "mbps" | "mb" => 1.0,
        "g" | "gbit" | "gbps" | "gb" => 1000.0,
        "k" | "kbit" | "kbps" | "kb" => 0.001,
        "t" | "tbit" | "tbps" => 1e6,
        other => {
            return Err(format!("`{s}`: unknown unit `{other}`; write 100mbit, 1gbit, 10gbit or a number of Mb/s"))
        }
    };
    let v: f64 =
        num.parse().map_err(|_| format!("`{s}` is not a link speed; write 100mbit, 1gbit or a number of Mb/s"))?;
    let mbps = v * scale;
    if !(mbps.is_finite() && mbps > 0.0) {
        return Err(format!("`{s}`: a link speed must be above 0"));
    }
    Ok(mbps)
}

#[cfg(test)]
mod scenario_args_tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn link_speeds_read_as_mbit_per_second() {
        assert_eq!(parse_link_speed("100mbit"), Ok(100.0));
        assert_eq!(parse_link_speed("1gbit"), Ok(1000.0));
        assert_eq!(parse_link_speed("10Gbit/s"), Ok(10_000.0));
        assert_eq!(parse_link_speed("2.5gbit"), Ok(2500.0));
        assert_eq!(parse_link_speed("100"), Ok(100.0));
        assert!(parse_link_speed("0").unwrap_err().contains("above 0"));
        assert!(parse_link_speed("fast").is_err());
        assert!(parse_link_speed("100 furlongs").unwrap_err().contains("furlongs"));
        assert!(parse_link_speed("").is_err());
    }

    #[test]
    fn scenario_flags_parse() {
        let cli = Cli::try_parse_from([
            "iolab",
            "scenario",
            "locking",
            "--node",
            "n1=ssh://root@a,dir=/var/lib/mysql",
            "--node",
            "n2=10.0.0.2:7700",
            "--shared-file",
            "--link-speed",
            "100mbit",
            "--repeat",
            "3",
            "--size",
            "1000M",
            "--bs",
            "100M",
            "--ignore-clock",
            "--output",
            "json",
        ])
        .unwrap();
        let Command::Scenario(a) = cli.command else { panic!("not a scenario") };
        assert_eq!(a.scenario, "locking");
        assert_eq!(a.nodes.node.len(), 2);
        assert!(a.shared_file && a.nodes.ignore_clock);
        assert_eq!(a.link_speed, Some(100.0));
        assert_eq!(a.builtin_options().repeat, 3);
        assert_eq!(a.job.size, Some(iolab_spec::Bytes::mib(1000)));
        assert!(Cli::try_parse_from(["iolab", "scenario", "scaling", "--clients", "0"]).is_err());
        assert!(Cli::try_parse_from(["iolab", "scenario", "scaling", "--repeat", "0"]).is_err());

        let cli =
            Cli::try_parse_from(["iolab", "run", "--node", "a=ssh://a", "--nodes", "n.toml", "--target", "f"]).unwrap();
        let Command::Run(r) = cli.command else { panic!("not a run") };
        assert_eq!(r.nodes.node, ["a=ssh://a"]);
        assert_eq!(r.nodes.nodes_file, Some(PathBuf::from("n.toml")));
        assert!(!r.nodes.ignore_clock);
    }
}

/// Whether a format is JSON: a failed command then prints an error object on stdout.
fn is_json(f: Format) -> bool {
    f == Format::Json || f.is_fio()
}

impl Command {
    /// Whether JSON was asked for on stdout (`--output json`, `export --format json`, fio's
    /// JSON): a command that fails then prints `{"error": ...}` there (docs/json.md).
    pub fn json_asked(&self) -> bool {
        match self {
            Command::Run(a) => is_json(a.out.output),
            Command::Survey(a) => is_json(a.out.output),
            Command::Scenario(a) => is_json(a.out.output),
            Command::Replay(a) => is_json(a.out.output),
            Command::Watch(a) => is_json(a.output),
            Command::Precondition(a) => is_json(a.output),
            Command::Runs(a) => is_json(a.output),
            Command::Show(a) => is_json(a.output),
            Command::Compare(a) => is_json(a.output),
            Command::Verify(a) => is_json(a.output),
            Command::Export(a) => is_json(a.format),
            Command::Trace(TraceCommand::Record(a)) => is_json(a.output),
            Command::Trace(TraceCommand::Import(a)) => is_json(a.output),
            Command::Trace(TraceCommand::Show(a)) => is_json(a.output),
            _ => false,
        }
    }
}

/// Whether arguments clap refused ask for JSON output (`--output json`, `--output=json`,
/// `-o json` where `-o` is the output format, `--format json` of `export`), so the refusal is
/// printed as an error object on stdout too.
pub fn json_in(args: &[String]) -> bool {
    let command = args.iter().find(|a| !a.starts_with('-')).map(String::as_str).unwrap_or("");
    // `report -o` and `trace ... -o` name a file, not a format.
    let short_is_format = !matches!(command, "report" | "trace");
    let jsonish = |v: &str| matches!(v, "json" | "fio-json" | "fio-json+");
    args.iter().enumerate().any(|(i, a)| {
        let next = args.get(i + 1).map(String::as_str).unwrap_or("");
        match a.as_str() {
            "--output" => jsonish(next),
            "--format" => command == "export" && jsonish(next),
            "-o" => short_is_format && jsonish(next),
            "-f" => command == "export" && jsonish(next),
            a => {
                a.strip_prefix("--output=").is_some_and(jsonish)
                    || (command == "export" && a.strip_prefix("--format=").is_some_and(jsonish))
                    || (short_is_format && a.strip_prefix("-o").is_some_and(|v| jsonish(v.trim_start_matches('='))))
            }
        }
    })
}

#[cfg(test)]
mod input_tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn json_is_found_where_it_is_the_output_format() {
        assert!(json_in(&words("run --threads -1 --output json")));
        assert!(json_in(&words("runs -o json --since x")));
        assert!(json_in(&words("runs -ojson")));
        assert!(json_in(&words("run --output=json")));
        assert!(json_in(&words("export last --format json")));
        assert!(json_in(&words("export last -f fio-json")));
        assert!(!json_in(&words("report last -o json")), "report's -o is a file");
        assert!(!json_in(&words("trace import -o json x.strace")), "trace's -o is a file");
        assert!(!json_in(&words("run --target json")));
        assert!(!json_in(&words("run --format json")), "run's --format is the job file's");
    }

    #[test]
    fn labels_have_a_character_set_and_a_length() {
        assert_eq!(parse_label("config=ext4 barrier=0"), Ok(("config".into(), "ext4 barrier=0".into())));
        assert_eq!(parse_label(" fs.type =xfs"), Ok(("fs.type".into(), "xfs".into())));
        assert_eq!(parse_label("k="), Ok(("k".into(), String::new())));
        let e = parse_label("\u{1b}[31mred=x").unwrap_err();
        assert!(e.contains("A-Z a-z 0-9 _ . -") && e.contains("\\e[31mred") && !e.contains('\u{1b}'), "{e}");
        let e = parse_label("k=\u{1b}]0;title\u{7}").unwrap_err();
        assert!(e.contains("control character") && !e.contains('\u{1b}'), "{e}");
        let e = parse_label(&format!("k={}", "v".repeat(10_240))).unwrap_err();
        assert!(e.contains("10240 characters; at most 256"), "{e}");
        let e = parse_label(&format!("{}=v", "k".repeat(65))).unwrap_err();
        assert!(e.contains("1 to 64"), "{e}");
        assert!(parse_label("novalue").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_label("a\nb=c").is_err());
    }
}

/// The command line as iolab reads it: clap's, with every subcommand taking a negative number
/// as a value, so `--threads -1` is refused naming `--threads` (not taken for a flag `-1`).
pub fn command() -> clap::Command {
    fn negatives(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true).mut_subcommands(negatives)
    }
    negatives(<Cli as clap::CommandFactory>::command())
}

/// Parse arguments (the program's name first) as the binary does.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut matches = command().try_get_matches_from(negative_values(args))?;
    <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
}

/// A value that starts like a negative size or duration (`--bs -4k`, `--runtime -1m`) joined to
/// its option (`--bs=-4k`), so the option's own check refuses it by name ("invalid value '-4k'
/// for '--bs'") instead of clap's "unexpected argument '-4'". No iolab flag is a dash and a
/// digit, so such a word is never a flag; a bare negative number is already a value
/// (`allow_negative_numbers`).
fn negative_values<I, T>(args: I) -> Vec<std::ffi::OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    // Past `--` every word is a positional as given.
    let mut ended = false;
    for a in args {
        let a: std::ffi::OsString = a.into();
        let negative = a.to_str().is_some_and(|s| {
            let b = s.as_bytes();
            b.len() > 1 && b[0] == b'-' && (b[1].is_ascii_digit() || b[1] == b'.')
        });
        let after_option = out.last().and_then(|p| p.to_str()).is_some_and(|p| {
            p.starts_with('-') && p.len() > 1 && p != "--" && !p.contains('=') && !p.as_bytes()[1].is_ascii_digit()
        });
        if negative && after_option && !ended {
            if let Some(prev) = out.last_mut() {
                prev.push("=");
                prev.push(&a);
                continue;
            }
        }
        ended |= a == "--";
        out.push(a);
    }
    out
}

#[cfg(test)]
mod negative_tests {
    #[test]
    fn a_negative_number_is_a_value_refused_by_its_option() {
        for (args, flag) in [
            (&["iolab", "run", "--target", "/x", "--threads", "-1"][..], "--threads"),
            (&["iolab", "run", "--target", "/x", "--iodepth", "-8"][..], "--iodepth"),
            (&["iolab", "watch", ".", "--interval", "-1"][..], "--interval"),
        ] {
            let e = super::parse_from(args).err().unwrap().to_string();
            assert!(e.contains(flag) && e.contains("invalid value '-"), "{args:?}: {e}");
        }
        // A negative size or duration is named by its option too, not taken for a flag.
        for (args, flag) in [
            (&["iolab", "run", "--target", "/x", "--bs", "-4k"][..], "--bs"),
            (&["iolab", "run", "--target", "/x", "--size", "-1.5m"][..], "--size"),
            (&["iolab", "run", "--target", "/x", "--runtime", "-1m"][..], "--runtime"),
        ] {
            let e = super::parse_from(args).err().unwrap().to_string();
            assert!(e.contains(flag) && e.contains("invalid value '-"), "{args:?}: {e}");
        }
        assert!(super::parse_from(["iolab", "runs"]).is_ok());
    }
}
