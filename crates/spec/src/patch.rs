//! Partial jobs: flags, a job file's `[defaults]` and each `[[phase.job]]` are all
//! `JobPatch`es layered onto the built-in defaults, so every front end lands in one `Job`.

use crate::job::{BlockSizes, Dist, EngineKind, Job, JournalSync, Rw, SyncMode, VerifyOn, WorkloadKind};
use crate::personality::Registered;
use crate::units::{duration_serde, Bytes};
#[cfg(feature = "clap")]
use crate::units::{parse_duration, parse_size};
use crate::AppOptions;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// A job with every field optional: what a job file's `[defaults]` and `[[phase.job]]` tables
/// hold and, with the `clap` feature, the command line's job flags. Each option is defined once:
/// the options every workload has and the block workload's here (type, help text from the doc
/// comment, flag, job-file key), each personality's in its own module (`AppOptions`); `resolve`
/// gives the defaults. A job file's table is read key by key ([`crate::table`]): a typo is an
/// error that names the key and the accepted ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
// The derived code reads and writes the fields here, as functions of `JobPatch` that the
// `Serialize` and `Deserialize` below call beside each personality's part.
#[serde(remote = "Self", deny_unknown_fields)]
pub struct JobPatch {
    /// Job name (default: job1).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the job does: block (reads and writes where --rw and --bs say; the default), postmark (PostMark's small-file transactions), maildir (mail delivery: tmp/, fsync, rename into new/), redolog (a block per stride with fsync, against a full sequential initialisation), varmail (filebench's), bonnie (bonnie++'s tests).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_word::<WorkloadKind>, help = WorkloadKind::help()))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadKind>,
    /// File, directory (one file per thread) or, with --device, block device.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, short = 't', value_name = "PATH"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<PathBuf>,
    /// Size of each file, for example 1G, 256M, 100M (dd: bs × count).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, short = 's', value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    /// Start the I/O this far into the file or device (fio's offset): the job uses
    /// [offset, offset + size).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Bytes>,
    /// Each thread's region starts this much further in than the one before (fio's
    /// offset_increment): thread N uses [offset + N × increment, ... + size).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_increment: Option<Bytes>,
    /// Random offsets are multiples of this (fio's blockalign; default: the smallest block
    /// size).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align: Option<Bytes>,
    /// Files per thread in the target directory (fio's nrfiles): each thread works on its own
    /// set, named by --file-names, moving among them as --file-service says.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_name = "N"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nrfiles: Option<u32>,
    /// Each file's size with --nrfiles, or a range LOW-HIGH each file's is drawn from (fio's
    /// filesize); default: --size over the files.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_word::<crate::fileset::SizeRange>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_sizes: Option<crate::fileset::SizeRange>,
    /// Which file the next I/O goes to with --nrfiles: roundrobin[:N] (the default), sequential
    /// or random[:N] (fio's file_service_type).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_word::<crate::fileset::FileService>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_service: Option<crate::fileset::FileService>,
    /// The files' names with --nrfiles: $jobname, $jobnum (the thread), $filenum (fio's
    /// filename_format; default `$jobname.$jobnum.$filenum`).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_name = "FORMAT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_names: Option<String>,
    /// Bytes each thread transfers in a bounded run (default: one pass over --size).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_size: Option<Bytes>,
    /// Access pattern: read, write, randread, randwrite, readwrite, randrw; trim, randtrim, trimwrite (ioctl BLKDISCARD on a block device, fio's; trimwrite trims each block, then writes it; a trim destroys data: --device or --overwrite as for writes).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_word::<Rw>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<Rw>,
    /// Read percentage of readwrite and randrw (default 50).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = clap::value_parser!(u8).range(0..=100)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<u8>,
    /// Block size, or weighted sizes such as 4k:70,64k:30 (default 4k).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, short = 'b', value_parser = parse_word::<BlockSizes>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bs: Option<BlockSizes>,
    /// Block sizes of writes, when they differ from the reads' (--bs): --rw randrw --bs 4k --write-bs 64k (fio's bs=4k,64k).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_word::<BlockSizes>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_bs: Option<BlockSizes>,
    /// Sequential access that moves this far after each block (32 KiB every 1 MiB: --bs 32k --stride 1M).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stride: Option<Bytes>,
    /// Sequential access backwards: each I/O starts this far before the end of the one before, wrapping from the region's start to its end (--bs 4k --backward 8k reads the blocks in reverse order; fio's rw=read:-8k).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backward: Option<Bytes>,
    /// Random offsets: uniform, zipf:1.2, pareto:0.9, normal:10, zoned:50/5:50/95 (ACCESS%/REGION%; a region left blank gets an equal share of the rest), zoned_abs:60/20m:40/80m (fio's random_distribution).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_word::<Dist>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dist: Option<Dist>,
    /// Uniform random offsets visit each block once per pass, as fio's random map (its default without norandommap): a drawn block already done gives way to the next free one, and an I/O is cut short where it would reach a block done.
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_map: Option<bool>,
    /// Strided zones (fio's zonemode=strided): ZONE_SIZE bytes of I/O in a zone of --zone-range bytes, then on to the next zone, --zone-skip bytes past that one's end, from the start again past the region's end (--zone-size 256m --zone-skip 2g samples a disk every 2.25 GiB; random jobs draw their offsets within the zone).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_size: Option<Bytes>,
    /// A zone's length, where --zone-size bytes of I/O are done (default: --zone-size; fio's zonerange).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_range: Option<Bytes>,
    /// Bytes skipped past each zone's end before the next zone (default 0; fio's zoneskip).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_skip: Option<Bytes>,
    /// Seed of offsets and data (same seed, same I/O).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// I/O engine: psync, libaio, io_uring, mmap, null.
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, short = 'e', value_parser = parse_word::<EngineKind>, help = EngineKind::help()))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineKind>,
    /// I/Os in flight per thread (libaio, io_uring).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, short = 'q'))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// libaio: submit once this many are queued (fio's iodepth_batch_submit; 0: the queue depth).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth_batch_submit: Option<u32>,
    /// libaio: wait for at least this many completions (fio's iodepth_batch_complete_min).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth_batch_complete_min: Option<u32>,
    /// libaio: take at most this many completions per call (fio's iodepth_batch_complete_max).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth_batch_complete_max: Option<u32>,
    /// libaio: once the queue is full, drain it to this many before refilling (fio's iodepth_low).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth_low: Option<u32>,
    /// io_uring: a kernel thread polls the submission queue, so queuing an I/O makes no system call, and the job's thread polls the completion queue instead of waiting in the kernel, as fio's sqthread_poll does (each thread keeps a CPU busy while the job runs; the kernel's sleeps after 1 s idle).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqpoll: Option<bool>,
    /// io_uring with --sqpoll: bind the polling thread to this CPU (fio's sqthread_poll_cpu).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_name = "CPU"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqpoll_cpu: Option<u32>,
    /// O_DIRECT: bypass the page cache (dd oflag=direct / iflag=direct).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// none, fsync or fdatasync (after every --fsync-every writes), dsync (dd oflag=dsync), sync (oflag=sync).
    #[cfg_attr(feature = "clap", arg(help_heading = DURABILITY, long, value_parser = parse_word::<SyncMode>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncMode>,
    /// Flush after this many writes (implies --sync fsync).
    #[cfg_attr(feature = "clap", arg(help_heading = DURABILITY, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_every: Option<u64>,
    /// fsync each file once at the end, inside the timing (dd conv=fsync).
    #[cfg_attr(feature = "clap", arg(help_heading = DURABILITY, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_fsync: Option<bool>,
    /// Threads for the job; with a directory target each gets its own file.
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, short = 'j'))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Run for this long (30s, 2m) instead of one pass over the file.
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, short = 'r', value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Duration>,
    /// Run this long first without counting it (10s), or `auto`: until the phase's operations per second are steady over 10 s (range ≤ 20%, excursion ≤ 10% of their mean), the warm-up before dropped and reported.
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_word::<crate::steady::Ramp>, value_name = "TIME|auto"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::steady::Ramp>,
    /// Start the job this long after its phase starts (2s), or a range each thread draws from (1s-5s); its time and rates count from its own start (fio's startdelay).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_word::<crate::Delay>, value_name = "TIME[-TIME]"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_delay: Option<crate::Delay>,
    /// When this job ends (its first thread), end the phase's other jobs too, as fio's exitall.
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_all: Option<bool>,
    /// When this job ends (its first thread), end the run: the phase's other jobs and every later phase, which never starts (fio's exitall with exit_what=all).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_run: Option<bool>,
    /// Never create a file: a target (or a thread's file in a target directory) that does not exist is an error naming it, so a mistyped device name cannot become a new file (fio's allow_file_create=0).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_create: Option<bool>,
    /// Search for the highest queue depth, 1 to --iodepth, at which --latency-percentile of the I/Os completed in each --latency-window take at most this long (10ms, 500us), and report it; the job ends once the depth is found and held one more window, unless --latency-run (fio's latency_target).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_duration, value_name = "TIME"))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<Duration>,
    /// How long each depth of the --latency-target search runs before it is judged (5s; default 0, fio's: judged at each completion).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_duration, value_name = "TIME"))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub latency_window: Option<Duration>,
    /// The percentage of a window's I/Os that must meet --latency-target (99.9; default 100: every one, and one I/O over it lowers the depth at once).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_name = "PERCENT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_percentile: Option<f64>,
    /// Keep adjusting the depth to --latency-target for the whole run instead of ending once it is found (fio's latency_run).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_run: Option<bool>,
    /// Run the job's threads only on these CPUs, as 0-3,6 (fio's cpus_allowed, cpumask).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_word::<crate::cpus::Cpus>, value_name = "LIST"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::cpus::Cpus>,
    /// Run the job's threads on the CPUs of these NUMA nodes, as 0-1 (fio's numa_cpu_nodes; the CPUs read from /sys/devices/system/node when the job starts).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = crate::numa::parse_nodes, value_name = "NODES"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_nodes: Option<crate::cpus::Cpus>,
    /// The NUMA memory policy of the job's threads and their buffers: default, prefer:N, bind:NODES, interleave:NODES, local (fio's numa_mem_policy).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_word::<crate::numa::MemPolicy>, value_name = "POLICY"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_policy: Option<crate::numa::MemPolicy>,
    /// The I/O priority of the job's threads, CLASS[/LEVEL]: rt/0, be/4, idle (ionice's classes; fio's prioclass and prio). The requests they submit inherit it.
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_word::<crate::prio::IoPrio>, value_name = "CLASS[/LEVEL]"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ioprio: Option<crate::prio::IoPrio>,
    /// The nice value of the job's threads, -20 to 19 (fio's nice).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, allow_negative_numbers = true, value_parser = clap::value_parser!(i8).range(-20..=19)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<i8>,
    /// A priority per request for shares of the I/Os, on io_uring and libaio: 20%rt (a fifth of them at rt/0), by direction (20%rt,5%be/2) and block size (64k@25%rt/1:64k@75%be/2) (fio's cmdprio_percentage, cmdprio_class, cmdprio, cmdprio_bssplit).
    #[cfg_attr(feature = "clap", arg(help_heading = ENGINE, long, value_parser = parse_word::<crate::prio::CmdPrio>, value_name = "SHARES"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdprio: Option<crate::prio::CmdPrio>,
    /// Open-loop bandwidth for the job, bytes/s (for example 50M).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Bytes>,
    /// Open-loop IOPS for the job.
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
    // Pacing beyond the job's total rate (crate::pace: fio's rate=R,W, rate_process, rate_min).
    /// On a mixed job, cap reads alone at this bandwidth, bytes/s, writes unpaced unless --write-rate (fio's rate=R,).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_rate: Option<Bytes>,
    /// On a mixed job, cap writes alone at this bandwidth, bytes/s (fio's rate=,W).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_rate: Option<Bytes>,
    /// On a mixed job, cap reads alone at this many IOPS (fio's rate_iops=R,).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_rate_iops: Option<u64>,
    /// On a mixed job, cap writes alone at this many IOPS (fio's rate_iops=,W).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_rate_iops: Option<u64>,
    /// How paced I/Os are spaced: linear (evenly, the default) or poisson (exponential gaps of the same mean; fio's rate_process).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_word::<crate::pace::RateProcess>, value_name = "linear|poisson"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_process: Option<crate::pace::RateProcess>,
    /// End the job with an error when a direction it does moves less than this, bytes/s, over a --rate-cycle (after 2 s; fio's rate_min).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min: Option<Bytes>,
    /// End the job with an error when a direction it does makes fewer IOPS than this over a --rate-cycle (fio's rate_iops_min).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min_iops: Option<u64>,
    /// The window --rate-min is measured over (default 1s; fio's rate_cycle).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub rate_cycle: Option<Duration>,
    // Flow between jobs (crate::flow: fio's flow, flow_id, flow_sleep).
    /// Keep this job's I/O count in proportion to the other jobs of its flow: weights 3 and 1 make 3 I/Os of this job for each of the other (fio's flow).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_name = "WEIGHT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    /// The flow the job belongs to (default 0: one flow for every job with --flow; fio's flow_id).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_name = "ID"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<u32>,
    /// A thread ahead of its flow's share waits for what it has in flight, then sleeps this long before it looks again (default 0: at once; fio's flow_sleep).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub flow_sleep: Option<Duration>,
    /// Passes over the region (--size, or --io-size per pass) in a run without --runtime (fio's loops; default 1).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loops: Option<u64>,
    /// Each thread stops after this many reads and writes, unless the pass, --io-size or --runtime ends it first (fio's number_ios).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_name = "N"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ios: Option<u64>,
    /// Go on after failed I/O of these kinds instead of ending the job at the first (fio's continue_on_error): none (the default), read, write, io (both), verify, all; the errors gone on after are counted and the first named. Which errnos: --ignore-error, else EIO and EILSEQ (fio's).
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_name = "KINDS", value_parser = parse_word::<crate::on_error::ContinueOn>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_on_error: Option<crate::on_error::ContinueOn>,
    /// The errnos --continue-on-error goes on after, per direction (fio's ignore_error): READ,WRITE lists of names or numbers joined by `:`, for example `,ENOSPC` or `EAGAIN,ENOSPC:122`.
    #[cfg_attr(feature = "clap", arg(help_heading = PATTERN, long, value_name = "READ,WRITE", value_parser = parse_word::<crate::on_error::IgnoreError>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_error: Option<crate::on_error::IgnoreError>,
    /// Think time: after each I/O (or each --think-every), let what is in flight complete and stall this long (100us, 2ms), not counted in any latency (fio's thinktime).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_duration, value_name = "TIME"))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub think: Option<Duration>,
    /// Think after this many blocks instead of after each (fio's thinktime_blocks).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_name = "N"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_every: Option<u64>,
    /// Of the think time, spin the CPU this long and sleep the rest (fio's thinktime_spin).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_duration, value_name = "TIME"))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub think_spin: Option<Duration>,
    /// Count --think-every's blocks as issued rather than completed (fio's thinktime_blocks_type=issue).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_on_issue: Option<bool>,
    /// Also think after this much time of I/O, whichever comes first (fio's thinktime_iotime).
    #[cfg_attr(feature = "clap", arg(help_heading = TIMING, long, value_parser = parse_duration, value_name = "TIME"))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub think_iotime: Option<Duration>,
    /// Percent of each written block that compresses (default 0: incompressible).
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, value_parser = clap::value_parser!(u8).range(0..=100)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressibility: Option<u8>,
    /// This percentage of the writes repeat an earlier block's data, so a deduplicating target folds them (fio's dedupe_percentage): by default each repeats the last unique write (fio's dedupe_mode=repeat).
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(1..=100)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<u8>,
    /// With --dedupe: the repeats come from a working set of this percentage of the job's size, the first unique blocks written (fio's dedupe_mode=working_set, dedupe_working_set_percentage).
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(1..=100)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_set: Option<u8>,
    /// With --dedupe-set: one working set shared by every job that sets this, so their files hold each other's blocks (fio's dedupe_global).
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_global: Option<bool>,
    /// Write new data into the buffer before every write, as an application producing its data
    /// would (fio's refill_buffers). Off by default: the same data is written again, only its
    /// first 8 bytes (the offset) change, so the run measures the storage and not iolab's CPU.
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refill_buffers: Option<bool>,
    /// Drop the target's cached pages before each phase (written back first, then
    /// posix_fadvise DONTNEED), and again as each new pass over the file starts on a
    /// time-based or looping buffered job, so reads come from the storage and not from memory:
    /// fio's invalidate=1, which a fio job file gets by default. Off by default for iolab's own
    /// jobs.
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalidate: Option<bool>,
    /// Tell the kernel how the job reads its file (posix_fadvise): pattern (RANDOM for random offsets, which turns readahead off, SEQUENTIAL for sequential ones), random, sequential or none (the default; fio's fadvise_hint, whose default is pattern).
    #[cfg_attr(feature = "clap", arg(help_heading = DATA, long, value_parser = parse_word::<crate::block::Fadvise>, value_name = "HINT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fadvise: Option<crate::block::Fadvise>,
    /// Allow writing into an existing file that iolab did not create.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Read a sparse file as it is: leave its holes and unwritten (fallocated) extents unfilled,
    /// and count the reads that fall in them. By default a file iolab may write (its own, or
    /// any with --overwrite) has them filled before the measured window, as fio lays out a file.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_holes: Option<bool>,
    /// How a new file the job only writes is made before the phase: fallocate (allocated,
    /// unwritten: fio's default fallocate=native), keep (allocated, size 0), truncate (sized,
    /// sparse) or none (empty), no data laid out for it; or data (laid out with data, as a
    /// reader's file: fio's overwrite=1). Default: a random writer's file is laid out with
    /// data, a sequential writer's extended by its writes.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, value_parser = parse_word::<crate::prealloc::Prealloc>, value_name = "HOW"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preallocate: Option<crate::prealloc::Prealloc>,
    /// Write until the filesystem is full: ENOSPC or EDQUOT ends the job (its end, not an
    /// error), as fio's fill_device/fill_fs. Sequential writes to a file only; a file without
    /// --size may grow by the free space the filesystem had when the run was checked.
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_fs: Option<bool>,
    /// Allow a block or character device as target (its data will be overwritten by writes).
    #[cfg_attr(feature = "clap", arg(help_heading = TARGET, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<bool>,

    // Steady state (issue 29; crate::steady): the phase ends when its figure is steady.
    /// End the phase once its figure is steady: snia (SNIA PTS: rounds of --round, judged over the last --ss-window rounds: range within --ss-range and the fitted line's excursion within --ss-excursion of the window's mean; at most --ss-max-rounds; the phase's figures are the window's), or one of fio's criteria: iops, iops_slope, bw, bw_slope, lat, lat_slope with a limit (iops_slope:0.3%; a limit without % is in IOPS, B/s or ns) judged every second over --ss-dur, as fio does.
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_word::<crate::steady::SteadyWord>, value_name = "snia|CRITERION"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyWord>,
    /// SNIA: the length of a round (default 1m; whole seconds).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub round: Option<Duration>,
    /// SNIA: rounds in the measurement window (default 5).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_window: Option<u32>,
    /// SNIA: the most rounds before the phase ends not steady (default 25).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_max_rounds: Option<u32>,
    /// SNIA: the window's range (max - min) may be at most this much of its mean (default 20%).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = crate::steady::parse_percent, value_name = "PCT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_range: Option<f64>,
    /// SNIA: the fitted line's excursion across the window may be at most this much of its mean (default 10%).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = crate::steady::parse_percent, value_name = "PCT"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_excursion: Option<f64>,
    /// SNIA: the figure tracked: iops (the default), bw or lat (mean latency).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_word::<crate::steady::Tracked>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ss_track: Option<crate::steady::Tracked>,
    /// fio's ss_dur: the rolling window a fio criterion is judged over (for example 30s).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub ss_dur: Option<Duration>,
    /// fio's ss_ramp: no samples for this long after the job's start (its --ramp included).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub ss_ramp: Option<Duration>,
    /// fio's ss_interval: one sample per this long (default 1s; whole seconds).
    #[cfg_attr(feature = "clap", arg(help_heading = STEADY, long, value_parser = parse_duration))]
    #[serde(default, with = "duration_serde::option", skip_serializing_if = "Option::is_none")]
    pub ss_interval: Option<Duration>,

    // Data validation (crate::verify; the block workload's writes and reads).
    /// Stamp every written key block (the smallest block size) with its offset, file, a rotating key, writer and time in each 512-byte sector, and check what reads bring in; exit status 1 when any block is wrong.
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// Validation: read and check a block written before just before rewriting it (Vdbench's pre-read; implies --verify).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_before_rewrite: Option<bool>,
    /// Validation: re-read and check every written block when the job ends, untimed (implies --verify).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_after: Option<bool>,
    /// Validation: keep the key map and a journal of every write in this directory, so `iolab verify --journal DIR` can check the files after a crash and a later run can go on from them (implies --verify).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_name = "DIR"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    /// Validation: sync (each journal record durable before its write is issued: seed 004's cost) or async (records left in the page cache; the default).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_parser = parse_word::<JournalSync>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_sync: Option<JournalSync>,
    /// Validation: stop the job after this many bad blocks (default 50; 0 never stops).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_errors: Option<u64>,
    /// Validation across nodes (with --node, two or more): self (the writer checks its reads; the default) or other: in each round every node writes and syncs its own file, then reads and checks the file the next node wrote (IOR's -C), so a node served stale cached data shows stale reads (implies --verify).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_parser = parse_word::<VerifyOn>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_on: Option<VerifyOn>,
    /// Validation across nodes: write-then-read rounds with --verify-on other (default 3; a stale read needs two: the reader cached the round before).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_parser = clap::value_parser!(u32).range(1..=crate::verify::MAX_ROUNDS as i64)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_rounds: Option<u32>,
    /// Validation during a write job (fio's verify_backlog): after every N writes, read back and check the blocks they wrote, timed as reads (implies --verify).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_backlog: Option<u64>,
    /// Validation: how many of the waiting writes one --verify-backlog check reads back (fio's verify_backlog_batch; default N, all of them).
    #[cfg_attr(feature = "clap", arg(help_heading = VALIDATION, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..)))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_backlog_batch: Option<u64>,

    /// Each personality's own options (flags and job-file keys), defined in its module.
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(skip)]
    pub apps: AppOptions,
}

// The headings `iolab run --help` groups the job's options under (a personality's options are
// under its own, set in its module).
#[cfg(feature = "clap")]
const TARGET: &str = "Target and size";
#[cfg(feature = "clap")]
const PATTERN: &str = "Pattern";
#[cfg(feature = "clap")]
const ENGINE: &str = "Engine, depth and threads";
#[cfg(feature = "clap")]
const DURABILITY: &str = "Durability";
#[cfg(feature = "clap")]
const TIMING: &str = "Timing and rate";
#[cfg(feature = "clap")]
const DATA: &str = "Data";
#[cfg(feature = "clap")]
const VALIDATION: &str = "Validation (--verify)";
#[cfg(feature = "clap")]
const STEADY: &str = "Steady state (--steady-state)";

impl Serialize for JobPatch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        JobPatch::serialize(self, crate::table::Entries(&mut map))?;
        self.apps.write(&mut map)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for JobPatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TableVisitor)
    }
}

/// The options every workload has and the block workload's, read and written by the derived
/// code (without the personalities' part).
struct Own(JobPatch);

impl Serialize for Own {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        JobPatch::serialize(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Own {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        JobPatch::deserialize(d).map(Own)
    }
}

/// Every key a job's table may hold: the options here, then each personality's.
fn all_keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = own_table_keys().to_vec();
        for k in WorkloadKind::PERSONALITIES {
            keys.extend(k.app_keys().0);
        }
        keys
    })
}

/// The keys of the options defined here.
fn own_table_keys() -> &'static [&'static str] {
    crate::table::keys_of::<Own>()
}

/// A job's table, key by key: each key checked against every option's and handed to its part.
struct TableVisitor;

impl<'de> serde::de::Visitor<'de> for TableVisitor {
    type Value = JobPatch;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", crate::table::Expecting)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<JobPatch, A::Error> {
        let mut own = Own(JobPatch::default());
        let mut apps = AppOptions::default();
        while let Some(key) = m.next_key_seed(crate::table::Known(all_keys()))? {
            match AppOptions::owner(&key) {
                Some(owner) => m.next_value_seed(AppValue { apps: &mut apps, owner, key: &key })?,
                None => {
                    let one = m.next_value_seed(crate::table::OneEntry::<Own>::new(&key))?;
                    crate::table::merge(&mut own, one);
                }
            }
        }
        Ok(JobPatch { apps, ..own.0 })
    }
}

/// A personality's option's value, read into its part.
struct AppValue<'a> {
    apps: &'a mut AppOptions,
    owner: WorkloadKind,
    key: &'a str,
}

impl<'de> serde::de::DeserializeSeed<'de> for AppValue<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.apps.read(self.owner, self.key, d)
    }
}

#[cfg(feature = "clap")]
pub(crate) fn parse_word<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, String> {
    s.parse()
}

/// Options every workload takes, by job-file key (validation's: what each workload can do with
/// them is [`crate::verify::VerifyJob::validate`]'s to say).
const COMMON: &[&str] = &[
    "name",
    "workload",
    "target",
    "seed",
    "engine",
    "iodepth",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "sqpoll",
    "sqpoll_cpu",
    "direct",
    "threads",
    "runtime",
    "ramp",
    "start_delay",
    "exit_all",
    "exit_run",
    "no_create",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
    "cpus",
    "numa_nodes",
    "mem_policy",
    "ioprio",
    "nice",
    "verify",
    "verify_before_rewrite",
    "verify_after",
    "journal",
    "journal_sync",
    "max_errors",
    "verify_on",
    "verify_rounds",
    "verify_backlog",
    "verify_backlog_batch",
    "steady_state",
    "round",
    "ss_window",
    "ss_max_rounds",
    "ss_range",
    "ss_excursion",
    "ss_track",
    "ss_dur",
    "ss_ramp",
    "ss_interval",
];

/// The block workload's own options, by job-file key.
const BLOCK: &[&str] = &[
    "size",
    "offset",
    "offset_increment",
    "align",
    "nrfiles",
    "file_sizes",
    "file_service",
    "file_names",
    "io_size",
    "rw",
    "mix",
    "bs",
    "stride",
    "backward",
    "dist",
    "random_map",
    "zone_size",
    "zone_range",
    "zone_skip",
    "cmdprio",
    "sync",
    "fsync_every",
    "end_fsync",
    "rate",
    "rate_iops",
    "read_rate",
    "write_rate",
    "read_rate_iops",
    "write_rate_iops",
    "rate_process",
    "rate_min",
    "rate_min_iops",
    "rate_cycle",
    "flow",
    "flow_id",
    "flow_sleep",
    "compressibility",
    "dedupe",
    "dedupe_set",
    "dedupe_global",
    "refill_buffers",
    "invalidate",
    "fadvise",
    "overwrite",
    "keep_holes",
    "fill_fs",
    "preallocate",
    "device",
    "loops",
    "max_ios",
    "think",
    "think_every",
    "think_spin",
    "think_on_issue",
    "think_iotime",
    "write_bs",
    "continue_on_error",
    "ignore_error",
];

/// Each workload's own options, by job-file key: the block workload's, or a personality's own
/// and the block options it takes too.
fn own_keys(kind: WorkloadKind) -> Vec<&'static str> {
    match kind {
        WorkloadKind::Block => BLOCK.to_vec(),
        app => {
            let (own, shared) = app.app_keys();
            own.iter().chain(shared).copied().collect()
        }
    }
}

/// Whether the option `key` means anything to workload `kind`.
fn applies(key: &str, kind: WorkloadKind) -> bool {
    COMMON.contains(&key) || own_keys(kind).contains(&key)
}

/// The seed used when none is given, so two runs of the same command do the same I/O.
pub const DEFAULT_SEED: u64 = 0x10_1AB;

impl JobPatch {
    /// Fields set in `over` win over those set in `self`. Layering goes through the serde
    /// form, so it needs no list of fields: a new option layers as soon as it is declared.
    pub fn layered(&self, over: &JobPatch) -> JobPatch {
        let (Ok(serde_json::Value::Object(mut base)), Ok(serde_json::Value::Object(top))) =
            (serde_json::to_value(self), serde_json::to_value(over))
        else {
            return over.clone();
        };
        base.extend(top);
        // Both sides came from valid patches, so their union reads back.
        serde_json::from_value(serde_json::Value::Object(base)).unwrap_or_else(|_| over.clone())
    }

    /// The options set here, by their job-file key (the flag is `--` and the key with `-` for
    /// `_`).
    fn set_keys(&self) -> Vec<String> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m.into_iter().map(|(k, _)| k).collect(),
            _ => Vec::new(),
        }
    }

    /// This patch without the options that do not apply to workload `kind`: how a job file's
    /// `[defaults]` reach a job (defaults for block jobs do not trouble a PostMark job beside
    /// them).
    pub fn for_workload(&self, kind: WorkloadKind) -> JobPatch {
        let Ok(serde_json::Value::Object(mut m)) = serde_json::to_value(self) else { return self.clone() };
        m.retain(|k, _| applies(k, kind));
        serde_json::from_value(serde_json::Value::Object(m)).unwrap_or_else(|_| self.clone())
    }

    /// The steady-state options as set here (checked by [`crate::steady::SteadyOptions::resolve`]).
    pub fn steady(&self) -> crate::steady::SteadyOptions {
        crate::steady::SteadyOptions {
            word: self.steady_state,
            round: self.round,
            window: self.ss_window,
            max_rounds: self.ss_max_rounds,
            range: self.ss_range,
            excursion: self.ss_excursion,
            track: self.ss_track,
            dur: self.ss_dur,
            ramp: self.ss_ramp,
            interval: self.ss_interval,
        }
    }

    /// The submission-queue polling asked for: `--sqpoll-cpu` is a setting of `--sqpoll`.
    fn sqpoll(&self, name: &str) -> Result<crate::engine::SqPoll, SpecError> {
        let on = self.sqpoll.unwrap_or(false);
        if let (false, Some(cpu)) = (on, self.sqpoll_cpu) {
            return Err(SpecError::field(
                name,
                "sqpoll_cpu",
                format!("--sqpoll-cpu {cpu} binds the polling thread of --sqpoll; give --sqpoll too"),
            ));
        }
        Ok(crate::engine::SqPoll { on, cpu: self.sqpoll_cpu })
    }

    /// The queue-depth search asked for (`--latency-target` and its settings), checked.
    fn latency_target(&self, name: &str) -> Result<Option<crate::LatencyTarget>, SpecError> {
        let Some(target) = self.latency_target else {
            let set = [
                ("latency_window", self.latency_window.is_some()),
                ("latency_percentile", self.latency_percentile.is_some()),
                ("latency_run", self.latency_run.is_some()),
            ];
            if let Some((field, _)) = set.iter().find(|s| s.1) {
                return Err(SpecError::field(
                    name,
                    field,
                    format!(
                        "--{} is a setting of --latency-target's search; give --latency-target too",
                        field.replace('_', "-")
                    ),
                ));
            }
            return Ok(None);
        };
        let mut t = crate::LatencyTarget::new(target);
        t.window = self.latency_window.unwrap_or(t.window);
        t.percentile = self.latency_percentile.unwrap_or(t.percentile);
        t.run = self.latency_run.unwrap_or(false);
        t.check().map_err(|(field, message)| SpecError::field(name, field, message))?;
        Ok(Some(t))
    }

    /// This patch with personality `P`'s options changed by `f` (how code and tests set them).
    pub fn with<P: Registered>(mut self, f: impl FnOnce(&mut P::Options)) -> JobPatch {
        f(P::options_mut(&mut self.apps));
        self
    }

    /// The workload this patch asks for (block when it names none).
    pub fn kind(&self) -> WorkloadKind {
        self.workload.unwrap_or(WorkloadKind::Block)
    }

    /// Fill the gaps with iolab's defaults. An option that does not apply to the job's
    /// workload (`--rw` with PostMark, `--config` with varmail) is refused, naming it. The job's
    /// rules are checked once, by [`Plan::validate`](crate::Plan::validate), whatever built the
    /// plan.
    pub fn resolve(&self, default_name: &str) -> Result<Job, SpecError> {
        let name = self.name.clone().unwrap_or_else(|| default_name.to_string());
        let kind = self.kind();
        if let Some(k) = self.set_keys().into_iter().find(|k| !applies(k, kind)) {
            let takes: Vec<String> = own_keys(kind).iter().map(|k| format!("--{}", k.replace('_', "-"))).collect();
            return Err(SpecError::field(
                &name,
                &k,
                format!(
                    "--{} (`{k}` in a job file) does not apply to workload {kind}; its own options are {}",
                    k.replace('_', "-"),
                    if takes.is_empty() { "none".to_string() } else { takes.join(", ") }
                ),
            ));
        }
        let target = self.target.clone().ok_or_else(|| {
            SpecError::field(
                &name,
                "target",
                "no target given; name a file or a directory (or a block device with --device)",
            )
        })?;
        let workload = kind.resolve(self, &name)?;
        let steady = self.steady().resolve().map_err(|(field, message)| SpecError::field(&name, field, message))?;
        let mut runtime = workload.runtime(self.runtime);
        if let Some(crate::steady::SteadyState::Snia(s)) = &steady {
            // A SNIA phase runs at most its rounds; the runtime is theirs.
            if self.runtime.is_some() {
                return Err(SpecError::field(
                    &name,
                    "runtime",
                    format!(
                        "--steady-state snia runs at most --ss-max-rounds x --round ({} x {}s); set those instead of --runtime",
                        s.max_rounds,
                        s.round_s()
                    ),
                ));
            }
            runtime = Some(Duration::from_secs(s.round_s().saturating_mul(s.max_rounds as u64)));
        }
        Ok(Job {
            target,
            size: self.size,
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            engine: self.engine.unwrap_or(EngineKind::DEFAULT),
            iodepth: self.iodepth.unwrap_or(1),
            batch: crate::engine::QueueBatch {
                submit: self.iodepth_batch_submit,
                complete_min: self.iodepth_batch_complete_min,
                complete_max: self.iodepth_batch_complete_max,
                low: self.iodepth_low,
            },
            sqpoll: self.sqpoll(&name)?,
            direct: self.direct.unwrap_or(false),
            threads: workload.app().map_or(self.threads.unwrap_or(1), |a| a.threads(self.threads)),
            runtime,
            ramp: match self.ramp {
                Some(crate::steady::Ramp::Time(d)) => d,
                _ => Duration::ZERO,
            },
            ramp_auto: self.ramp == Some(crate::steady::Ramp::Auto),
            start_delay: self.start_delay.unwrap_or_default(),
            exit_all: self.exit_all.unwrap_or(false),
            exit_run: self.exit_run.unwrap_or(false),
            no_create: self.no_create.unwrap_or(false),
            latency_target: self.latency_target(&name)?,
            cpus: self.cpus.clone(),
            numa: (self.numa_nodes.is_some() || self.mem_policy.is_some())
                .then(|| crate::numa::Numa { nodes: self.numa_nodes.clone(), mem: self.mem_policy.clone() }),
            sched: (self.ioprio.is_some() || self.nice.is_some())
                .then_some(crate::prio::Sched { ioprio: self.ioprio, nice: self.nice }),
            steady,
            overwrite: self.overwrite.unwrap_or(false),
            device: self.device.unwrap_or(false),
            verify: crate::verify::VerifyJob::from_patch(self, &name)?,
            io_log: None,
            workload,
            name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's batching is libaio's: on another engine, or above the depth, one error naming the key.
    #[test]
    fn batching_belongs_to_libaio_and_stays_within_the_depth() {
        let job = |engine, low| {
            JobPatch {
                target: Some("/t".into()),
                engine: Some(engine),
                iodepth: Some(16),
                iodepth_low: Some(low),
                ..Default::default()
            }
            .resolve("j")
            .unwrap()
        };
        let j = job(EngineKind::Libaio, 4);
        j.validate().unwrap();
        assert_eq!(j.batch.low, Some(4));
        let e = job(EngineKind::IoUring, 4).validate().unwrap_err().to_string();
        assert!(e.contains("iodepth_low") && e.contains("only libaio takes it"), "{e}");
        let e = job(EngineKind::Libaio, 17).validate().unwrap_err().to_string();
        assert!(e.contains("iodepth_low") && e.contains("above the queue depth (16)"), "{e}");
    }

    /// --sqpoll is io_uring's: another engine is refused naming it and the engine to use;
    /// --sqpoll-cpu needs --sqpoll; the job says it in its few words.
    #[test]
    fn sqpoll_belongs_to_io_uring_and_its_cpu_to_sqpoll() {
        let patch = |engine, sqpoll, cpu| JobPatch {
            target: Some("/t".into()),
            engine: Some(engine),
            iodepth: Some(8),
            sqpoll,
            sqpoll_cpu: cpu,
            ..Default::default()
        };
        let j = patch(EngineKind::IoUring, Some(true), Some(1)).resolve("j").unwrap();
        j.validate().unwrap();
        assert_eq!(j.sqpoll, crate::engine::SqPoll { on: true, cpu: Some(1) });
        assert!(j.describe().contains("QD8 sqpoll on CPU 1"), "{}", j.describe());
        let j = patch(EngineKind::IoUring, Some(true), None).resolve("j").unwrap();
        assert!(j.describe().ends_with("io_uring QD8 sqpoll"), "{}", j.describe());
        let e = patch(EngineKind::Libaio, Some(true), None).resolve("j").unwrap().validate().unwrap_err().to_string();
        assert!(e.contains("sqpoll") && e.contains("engine `libaio`") && e.contains("--engine io_uring"), "{e}");
        let e = patch(EngineKind::IoUring, None, Some(1)).resolve("j").unwrap_err().to_string();
        assert!(e.contains("sqpoll_cpu") && e.contains("give --sqpoll too"), "{e}");
        let j = patch(EngineKind::Libaio, Some(false), None).resolve("j").unwrap();
        j.validate().unwrap();
        assert!(!j.sqpoll.on);
    }

    #[test]
    fn a_job_describes_itself_in_a_few_words() {
        let d = |p: JobPatch| JobPatch { target: Some("/t".into()), ..p }.resolve("j").unwrap().describe();
        assert_eq!(
            d(JobPatch {
                rw: Some(Rw::Write),
                bs: Some("1M".parse().unwrap()),
                direct: Some(true),
                ..Default::default()
            }),
            "write 1M direct"
        );
        assert_eq!(
            d(JobPatch {
                rw: Some(Rw::RandWrite),
                engine: Some(EngineKind::IoUring),
                iodepth: Some(32),
                threads: Some(4),
                fsync_every: Some(8),
                ..Default::default()
            }),
            "randwrite 4k fsync every 8 io_uring QD32 4 threads"
        );
        assert_eq!(d(JobPatch { rw: Some(Rw::RandRw), mix: Some(70), ..Default::default() }), "randrw 70% reads 4k");
        assert_eq!(
            d(JobPatch { rate_iops: Some(500), end_fsync: Some(true), ..Default::default() }),
            "read 4k end fsync at 500 IOPS"
        );
    }

    #[test]
    fn an_option_another_workload_takes_is_refused_naming_it() {
        let r = |p: JobPatch| JobPatch { target: Some("/t".into()), ..p }.resolve("j");
        let e = r(JobPatch {
            workload: Some(WorkloadKind::Postmark),
            rw: Some(Rw::RandRead),
            bs: Some("1M".parse().unwrap()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--bs") && e.contains("workload postmark") && e.contains("--config"), "{e}");
        let cfg = crate::postmark::parse_config("set number 5").unwrap();
        let e = r(JobPatch { workload: Some(WorkloadKind::Varmail), ..Default::default() }
            .with::<crate::PostmarkJob>(|o| o.postmark_config = Some(cfg)))
        .unwrap_err()
        .to_string();
        assert!(e.contains("--config (`config` in a job file) does not apply to workload varmail"), "{e}");
        let number = |n| JobPatch::default().with::<crate::PostmarkJob>(|o| o.number = Some(n));
        let e = r(number(5)).unwrap_err().to_string();
        assert!(e.contains("--number") && e.contains("workload block"), "{e}");
        // Every option belongs to some workload or to all.
        let all = JobPatch { name: Some("n".into()), ..Default::default() };
        assert!(r(all).is_ok());
        // A job file's defaults are filtered, not refused.
        let d = JobPatch { rw: Some(Rw::Write), ..number(7) };
        assert_eq!(d.for_workload(WorkloadKind::Postmark), number(7));
    }

    /// Each key of a job's table is one option's: the common and block options here, or one
    /// personality's own (a key two parts claimed would be read into the first and its flag
    /// defined twice).
    #[test]
    fn every_key_belongs_to_one_part() {
        let keys = all_keys();
        let unique: std::collections::BTreeSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        for k in WorkloadKind::PERSONALITIES {
            let (own, shared) = k.app_keys();
            assert!(!own.is_empty(), "{k} has options of its own");
            for key in own {
                assert_eq!(AppOptions::owner(key), Some(*k));
            }
            assert!(shared.iter().all(|s| BLOCK.contains(s)), "{k} shares block options only: {shared:?}");
        }
        // A table with every kind of part reads back as written.
        let p = JobPatch { rw: Some(Rw::Write), threads: Some(3), ..Default::default() }
            .with::<crate::BonnieJob>(|o| o.bonnie_seeks = Some(9))
            .with::<crate::AppendLogJob>(|o| o.records = Some(7));
        let back: JobPatch = toml::from_str(&toml::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn layering_keeps_every_kind_of_value_and_the_top_wins() {
        let base = JobPatch {
            bs: Some("4k:70,64k:30".parse().unwrap()),
            dist: Some("zipf:1.1".parse().unwrap()),
            seed: Some(u64::MAX),
            runtime: Some(Duration::from_millis(1500)),
            direct: Some(true),
            threads: Some(2),
            ..Default::default()
        };
        let top = JobPatch { threads: Some(8), rw: Some(Rw::RandRw), ..Default::default() };
        let l = base.layered(&top);
        assert_eq!(l.bs, base.bs);
        assert_eq!(l.dist, base.dist);
        assert_eq!(l.seed, Some(u64::MAX));
        assert_eq!(l.runtime, Some(Duration::from_millis(1500)));
        assert_eq!(l.direct, Some(true));
        assert_eq!(l.threads, Some(8));
        assert_eq!(l.rw, Some(Rw::RandRw));
        assert_eq!(JobPatch::default().layered(&JobPatch::default()), JobPatch::default());
    }
}
