//! `iolab trace record|import|show|export`: record a program (or a running process) with the
//! eBPF recorder (crates/record) or under strace, or the block requests under a path; convert
//! strace text into iolab's trace format, print what a trace did and what it would take
//! at a device rate and latency, and write it as a fio iolog.

use crate::args::{
    Output, TraceCommand, TraceExportArgs, TraceImportArgs, TraceLevel, TraceRecordArgs, TraceShowArgs, TraceVia,
};
use anyhow::{bail, Context, Result};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use iolab_record::ebpf;
use iolab_report::fmt;
use iolab_report::text::safe;
use iolab_trace::analyze::{analyze_records, Analysis, OpStat};
use iolab_trace::format::{FormatError, Reader, Record};
use iolab_trace::Summary;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// The calls a recording traces (the rest cost ptrace stops for nothing): `%process` for the
/// thread and process tree, and every call the trace format keeps. `?` lets strace skip names
/// this architecture lacks (open, creat on aarch64).
pub const TRACED: &str = "%process,?open,openat,?openat2,?creat,close,dup,dup2,?dup3,fcntl,read,write,pread64,\
pwrite64,readv,writev,preadv,pwritev,?preadv2,?pwritev2,lseek,?_llseek,fsync,fdatasync,sync_file_range,ftruncate,\
fallocate,?unlink,unlinkat,?rename,renameat,?renameat2,?mkdir,mkdirat,chdir,fchdir";

pub fn run(cmd: TraceCommand) -> Result<ExitCode> {
    match cmd {
        TraceCommand::Record(a) => record(a),
        TraceCommand::Import(a) => import(a),
        TraceCommand::Show(a) => show(a),
        TraceCommand::Export(a) => export(a),
    }
}

fn strace_version() -> Result<String> {
    let out = Command::new("strace")
        .arg("-V")
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run strace ({e}); install it (apt-get install strace) and try again"))?;
    let v = String::from_utf8_lossy(&out.stdout);
    Ok(v.lines().next().unwrap_or("strace").to_string())
}

/// Where a command would run from: a path with a `/` as it is, else the first match on $PATH.
fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let ok = |p: &Path| p.is_file() && p.metadata().map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    if name.contains('/') {
        let p = PathBuf::from(name);
        return ok(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| ok(p))
}

/// An output path that is one of the inputs (by device and inode, whatever the spelling) is
/// refused before anything is opened for writing: creating it would truncate what is to be read.
fn refuse_input_as_output(inputs: &[PathBuf], out: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(o) = std::fs::metadata(out) else { return Ok(()) };
    for i in inputs {
        if let Ok(m) = std::fs::metadata(i) {
            if (m.dev(), m.ino()) == (o.dev(), o.ino()) {
                bail!(
                    "-o {} is the input {}: writing the trace there would destroy what it is made from; give another -o",
                    out.display(),
                    i.display()
                );
            }
        }
    }
    Ok(())
}

fn convert(files: &[PathBuf], name: Option<&str>, out: &Path) -> Result<Summary> {
    refuse_input_as_output(files, out)?;
    let f = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let (w, sum) = iolab_trace::import_named(files, name, BufWriter::new(f))?;
    w.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).context("cannot write the trace")?;
    Ok(sum)
}

/// Set by SIGINT and SIGTERM while recording: the recording ends and keeps what it has.
static STOP: AtomicBool = AtomicBool::new(false);

fn on_signals() {
    // Once per process; a second call (tests in one process) keeps the first handler.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
}

fn record(a: TraceRecordArgs) -> Result<ExitCode> {
    if a.level == TraceLevel::Block {
        return record_block(a);
    }
    if a.pid.is_none() && a.command.is_empty() {
        bail!("nothing to record: give a command after `--` (iolab trace record -o app.trace -- CMD ARGS) or -p PID");
    }
    if let Some(prog) = a.command.first() {
        if find_program(prog).is_none() {
            bail!("command not found: `{prog}` (not an executable path, nor on $PATH)");
        }
    }
    if let Some(pid) = a.pid {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            bail!("no process {pid} to attach to (is it still running?)");
        }
    }
    let via = match a.via {
        Some(v) => v,
        None => match ebpf::unavailable() {
            None => TraceVia::Ebpf,
            Some(why) => {
                errln!("Recording with strace: {}", why_not_ebpf(&why));
                TraceVia::Strace
            }
        },
    };
    on_signals();
    match via {
        TraceVia::Strace => record_strace(a),
        TraceVia::Ebpf => match record_ebpf(&a) {
            Err(e) if a.via.is_none() && e.downcast_ref::<ebpf::EbpfError>().is_some_and(refused_before_start) => {
                let why = e.downcast_ref::<ebpf::EbpfError>().map(why_not_ebpf).unwrap_or_default();
                errln!("Recording with strace: {why}");
                record_strace(a)
            }
            r => r,
        },
    }
}

/// The eBPF recorder could not start (nothing was run yet): strace can take over.
fn refused_before_start(e: &ebpf::EbpfError) -> bool {
    matches!(e, ebpf::EbpfError::NotBuilt(_) | ebpf::EbpfError::Refused(_) | ebpf::EbpfError::Unsupported(_))
}

/// Why the eBPF recorder is not used, in one clause.
fn why_not_ebpf(e: &ebpf::EbpfError) -> String {
    match e {
        ebpf::EbpfError::NotBuilt(why) => {
            format!("this iolab was built without its eBPF recorder ({why}; `--via ebpf` says how to get it)")
        }
        ebpf::EbpfError::Refused(why) => format!("the kernel refused the eBPF recorder ({why}; run as root for it)"),
        e => format!("the eBPF recorder cannot run here: {e}"),
    }
}

fn trace_name(a: &TraceRecordArgs) -> String {
    match a.pid {
        Some(p) => format!("process {p}"),
        None => a.command.join(" "),
    }
}

/// Record with the eBPF recorder into `a.out` (removed again if the recording cannot start).
fn record_ebpf(a: &TraceRecordArgs) -> Result<ExitCode> {
    let what = match a.pid {
        Some(pid) => ebpf::What::Attach(pid),
        None => ebpf::What::Spawn {
            argv: a.command.clone(),
            cwd: std::env::current_dir().context("cannot read the current directory")?,
        },
    };
    let opts = ebpf::Options {
        ring_bytes: ring_bytes(a.buffer.0)?,
        syscalls: true,
        block: Vec::new(),
        duration: None,
        source: trace_name(a),
    };
    if let Some(pid) = a.pid {
        errln!("Recording process {pid} with eBPF; Ctrl-C ends the recording.");
    }
    run_ebpf(a, what, &opts)
}

/// The eBPF ring's size from `--buffer`, checked against what this process may take: the kernel
/// charges the ring to its cgroup and maps its pages twice into its address space.
fn ring_bytes(b: u64) -> Result<u32> {
    if !b.is_power_of_two() || !(4096..=(1 << 30)).contains(&b) {
        bail!("--buffer: {b} bytes; give a power of two from 4 KiB to 1 GiB (such as 32M)");
    }
    let limits = iolab_sysstat::memlimit::MemoryLimits::read();
    iolab_workload::memory::check_buffer("the eBPF recorder's ring buffer", "--buffer", b, 2 * b, &limits)?;
    Ok(b as u32)
}

fn run_ebpf(a: &TraceRecordArgs, what: ebpf::What, opts: &ebpf::Options) -> Result<ExitCode> {
    let f = File::create(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let rec = match ebpf::record(what, opts, BufWriter::new(f), &STOP) {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&a.out);
            return Err(e.into());
        }
    };
    rec.out.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).context("cannot write the trace")?;
    for n in &rec.notes {
        errln!("Note: {n}");
    }
    let s = &rec.summary;
    if a.output == Output::Json {
        outln!("{}", serde_json::to_string_pretty(s)?)?;
    } else {
        let mut what = vec![format!("{} calls", fmt::count(s.ops as f64))];
        if s.async_ops > 0 {
            what.push(format!("{} asynchronous I/Os on {} rings", fmt::count(s.async_ops as f64), s.rings));
        }
        if s.block_ios > 0 || !opts.block.is_empty() {
            what.push(format!("{} block requests", fmt::count(s.block_ios as f64)));
        }
        outln!(
            "{}: {} of {} threads in {} processes on {} openings (eBPF)",
            a.out.display(),
            what.join(", "),
            s.threads,
            s.processes,
            s.files
        )?;
    }
    for (why, n) in &s.lost {
        errln!("Warning: {} events not kept: {why} (counted in the trace)", fmt::count(*n as f64));
    }
    if a.output != Output::Json && s.kernel_runs > 0 {
        errln!(
            "The recorder's kernel programs ran {} times for {} ({} ns each); reading the events took {} of CPU.",
            fmt::count(s.kernel_runs as f64),
            fmt::secs(s.kernel_ns as f64 / 1e9),
            s.kernel_ns / s.kernel_runs,
            fmt::secs(s.reader_cpu_ns as f64 / 1e9)
        );
    }
    if let Some(st) = rec.status.filter(|st| !st.success()) {
        errln!("Note: the command ended with {st}; its trace is kept.");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--level block`: the block requests on the devices under a path, while a command runs, a
/// process lives, for --duration or until Ctrl-C.
fn record_block(a: TraceRecordArgs) -> Result<ExitCode> {
    if a.via == Some(TraceVia::Strace) {
        bail!("--level block records with eBPF only (strace sees system calls, not the block layer)");
    }
    if let Some(e) = ebpf::unavailable() {
        return Err(e.into());
    }
    let under = match &a.under {
        Some(p) => p.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let info = iolab_sysstat::target::describe(&under, &iolab_sysstat::target::SysRoots::default());
    let mut block = Vec::new();
    for name in &info.devices {
        // Partitions' requests are the whole disk's in the block layer.
        let sys = Path::new("/sys/class/block").join(name);
        let disk = if sys.join("partition").exists() {
            std::fs::canonicalize(&sys)
                .ok()
                .and_then(|p| p.parent().and_then(|d| d.file_name()).map(|d| d.to_string_lossy().into_owned()))
                .unwrap_or_else(|| name.clone())
        } else {
            name.clone()
        };
        let Ok(dev) = std::fs::read_to_string(Path::new("/sys/class/block").join(&disk).join("dev")) else { continue };
        let Some((maj, min)) = dev.trim().split_once(':') else { continue };
        let (Ok(maj), Ok(min)) = (maj.parse::<u32>(), min.parse::<u32>()) else { continue };
        let d = maj << 20 | min;
        if !block.iter().any(|(x, _)| *x == d) {
            block.push((d, disk));
        }
    }
    if block.is_empty() {
        bail!(
            "no block device carries {} ({} on {}): nothing for --level block to record",
            under.display(),
            info.fstype,
            info.mount_source
        );
    }
    let names: Vec<String> = block.iter().map(|(_, n)| n.clone()).collect();
    let what = match (a.pid, a.command.is_empty()) {
        (Some(pid), _) => ebpf::What::Attach(pid),
        (None, false) => ebpf::What::Spawn {
            argv: a.command.clone(),
            cwd: std::env::current_dir().context("cannot read the current directory")?,
        },
        (None, true) => ebpf::What::Watch,
    };
    if matches!(what, ebpf::What::Watch) && a.duration.is_none() {
        errln!("Recording the block requests of {}; Ctrl-C ends the recording.", names.join(", "));
    } else {
        errln!("Recording the block requests of {}.", names.join(", "));
    }
    let opts = ebpf::Options {
        ring_bytes: ring_bytes(a.buffer.0)?,
        syscalls: false,
        block,
        duration: a.duration,
        source: format!("block requests of {} (under {})", names.join(", "), under.display()),
    };
    on_signals();
    run_ebpf(&a, what, &opts)
}

fn record_strace(a: TraceRecordArgs) -> Result<ExitCode> {
    let version = strace_version()?;
    let raw = {
        let mut s = a.out.clone().into_os_string();
        s.push(".strace");
        PathBuf::from(s)
    };
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-ttt", "-T", "-y", "-s", "0", "-e"]).arg(format!("trace={TRACED}")).arg("-o").arg(&raw);
    if let Some(pid) = a.pid {
        c.arg("-p").arg(pid.to_string());
        errln!("Recording process {pid} with {version}; Ctrl-C ends the recording.");
    } else {
        c.arg("--seccomp-bpf").arg("--").args(&a.command).stdin(Stdio::inherit());
    }
    let mut child = c.spawn().context("cannot start strace")?;
    // SIGINT or SIGTERM: strace is told to detach (it does on SIGINT), and what it wrote is
    // converted. A terminal's Ctrl-C reaches strace (and the command) by itself too.
    let mut told = false;
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for strace")? {
            break st;
        }
        if STOP.load(Ordering::SeqCst) && !told {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if !raw.exists() {
        bail!("strace wrote no output ({status}); is ptrace allowed here (kernel.yama.ptrace_scope, containers)?");
    }
    let name = trace_name(&a);
    let sum = convert(std::slice::from_ref(&raw), Some(&name), &a.out)?;
    if !a.keep_strace {
        let _ = std::fs::remove_file(&raw);
    }
    print_summary(&sum, &a.out, a.output)?;
    if sum.ops > 0 {
        take_off_strace(&a.out, a.pid.is_none(), None)?;
    }
    if a.pid.is_none() && !status.success() {
        errln!("Note: the command ended with {status}; its trace is kept.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Take strace's own cost off a trace it recorded (crates/trace/src/overhead.rs): measure it
/// now, with the recording's options, on as many processes as the trace had threads at once
/// (or take the cost `given`), and write the trace again with it taken off and said.
fn take_off_strace(trace: &Path, seccomp: bool, given: Option<iolab_trace::overhead::Cost>) -> Result<()> {
    use iolab_trace::overhead::{correct, Shape};
    let shape = Shape::of(records(trace)?, None).with_context(|| format!("cannot read {}", trace.display()))?;
    let k = shape.concurrency.clamp(1, 8);
    let cost = match given {
        Some(c) => c,
        None => calibrate(k, seccomp).context("cannot measure strace's cost per call")?,
    };
    let shape = Shape::of(records(trace)?, Some(&cost)).with_context(|| format!("cannot read {}", trace.display()))?;
    let tmp = {
        let mut s = trace.as_os_str().to_owned();
        s.push(".corrected");
        PathBuf::from(s)
    };
    let f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let done = correct(records(trace)?, &shape, &cost, BufWriter::new(f));
    let (w, o) = match done {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e).context("cannot write the corrected trace");
        }
    };
    w.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).context("cannot write the trace")?;
    std::fs::rename(&tmp, trace).with_context(|| format!("cannot replace {}", trace.display()))?;
    errln!(
        "strace's cost measured: {} in each call (kept in the durations), {} in each gap (taken off) ({}); the span under strace {} (`trace show` says more)",
        fmt_us(o.call_ns),
        fmt_us(o.gap_ns),
        o.method,
        fmt::secs(o.recorded_span_ns as f64 / 1e9)
    );
    Ok(())
}

/// Calls each calibrating process makes under strace (two per byte copied).
const CALIBRATION_BYTES: u32 = 2000;

/// strace's cost per traced call, measured now: `k` dd processes at once copying one byte at
/// a time from /dev/zero to /dev/null (a read and a write per byte, nothing between) under
/// strace with the recording's options; one dd without strace gives what the calls cost alone.
fn calibrate(k: usize, seccomp: bool) -> Result<iolab_trace::overhead::Cost> {
    use iolab_trace::format::{Kind, Trace};
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    // Alone: per byte, a read, a write and the loop around them.
    let n_alone = 200_000u32;
    let t = std::time::Instant::now();
    let st = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", &format!("count={n_alone}"), "status=none"])
        .status()
        .context("cannot run dd")?;
    if !st.success() {
        bail!("dd failed ({st})");
    }
    let alone_ns = t.elapsed().as_nanos() as f64 / f64::from(n_alone);
    let out = dir.path().join("cal.strace");
    let script = format!(
        "i=0; while [ $i -lt {k} ]; do dd if=/dev/zero of=/dev/null bs=1 count={CALIBRATION_BYTES} status=none & i=$((i+1)); done; wait"
    );
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-ttt", "-T", "-y", "-s", "0", "-e"]).arg(format!("trace={TRACED}")).arg("-o").arg(&out);
    if seccomp {
        c.arg("--seccomp-bpf");
    }
    let st = c.args(["--", "sh", "-c", &script]).stdin(Stdio::null()).status().context("cannot run strace")?;
    if !st.success() {
        bail!("strace sh -c '{script}' failed ({st})");
    }
    let bytes = Vec::new();
    let (bytes, _) = iolab_trace::import_named(&[out], Some("calibration"), bytes)?;
    let t = Trace::read(&bytes[..])?;
    let (mut durs, mut n_durs, mut gaps, mut n_gaps) = (0u64, 0u64, 0u64, 0u64);
    for (_, ops) in &t.ops {
        let dd: Vec<_> = ops
            .iter()
            .filter(|o| {
                matches!(o.kind, Kind::Read | Kind::Write)
                    && t.files.get(&o.file).is_some_and(|f| f.path == "/dev/zero" || f.path == "/dev/null")
            })
            .collect();
        for o in &dd {
            durs += o.dur_ns;
            n_durs += 1;
        }
        for w in dd.windows(2) {
            gaps += w[1].start_ns.saturating_sub(w[0].start_ns + w[0].dur_ns);
            n_gaps += 1;
        }
    }
    if n_durs < 100 || n_gaps < 100 {
        bail!("the calibration's trace has {n_durs} calls of dd (strace did not see them)");
    }
    // Without strace a byte's read, write and loop took alone_ns: a quarter of it to each
    // call and to each gap.
    let call_ns = (durs as f64 / n_durs as f64 - alone_ns / 4.0).max(0.0) as u64;
    let gap_ns = (gaps as f64 / n_gaps as f64 - alone_ns / 4.0).max(0.0) as u64;
    Ok(iolab_trace::overhead::Cost {
        call_ns,
        gap_ns,
        method: format!(
            "measured at record time: {k} dd process{} under strace, {n_durs} calls, against dd alone",
            if k == 1 { "" } else { "es at once" }
        ),
    })
}

fn import(a: TraceImportArgs) -> Result<ExitCode> {
    let sum = convert(&a.files, None, &a.out)?;
    print_summary(&sum, &a.out, a.output)?;
    if let (Some(c), true) = (a.strace_cost, sum.ops > 0) {
        let given = match c {
            crate::args::StraceCost::Measure => None,
            crate::args::StraceCost::Given { call, gap } => Some(iolab_trace::overhead::Cost {
                call_ns: call.as_nanos().min(u64::MAX as u128) as u64,
                gap_ns: gap.as_nanos().min(u64::MAX as u128) as u64,
                method: "given to trace import (--strace-cost)".into(),
            }),
        };
        take_off_strace(&a.out, true, given)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(sum: &Summary, out: &Path, output: Output) -> Result<()> {
    if output == Output::Json {
        outln!("{}", serde_json::to_string_pretty(sum)?)?;
        return Ok(());
    }
    outln!(
        "{}: {} calls of {} threads on {} openings, from {} lines ({})",
        out.display(),
        fmt::count(sum.ops as f64),
        sum.threads,
        sum.files,
        fmt::count(sum.lines as f64),
        iolab_spec::units::fmt_decimal(sum.bytes as f64),
    )?;
    if sum.bad_lines > 0 {
        outln!("{} lines not understood (skipped):", fmt::count(sum.bad_lines as f64))?;
        for b in &sum.bad {
            outln!("  {}:{}: {}: {}", safe(&b.source), b.line, b.reason, safe(&b.text))?;
        }
        if sum.bad_lines as usize > sum.bad.len() {
            outln!("  ... and {} more", sum.bad_lines as usize - sum.bad.len())?;
        }
    }
    Ok(())
}

fn records(path: &Path) -> Result<impl Iterator<Item = Result<Record, FormatError>>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut r = Reader::new(BufReader::new(f)).with_context(|| format!("cannot read the trace {}", path.display()))?;
    Ok(std::iter::from_fn(move || r.next_record().transpose()))
}

/// Write to stdout through `f`; a reader that went away (`| head`) ends the output quietly.
/// `f`'s own write errors are said to be stdout's; other errors (a bad trace) say what they are.
fn to_stdout(f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<ExitCode> {
    let mut out = BufWriter::new(crate::stdout::out());
    match f(&mut out).and_then(|_| out.flush().context("writing to stdout")) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            // Nothing more can be written; drop what is buffered without a second error.
            std::mem::forget(out);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e),
    }
}

fn show(a: TraceShowArgs) -> Result<ExitCode> {
    let model = match (a.rate, a.latency) {
        (None, None) => None,
        (r, l) => Some((r.map(|r| r.0 as f64).unwrap_or(0.0), l.map(|l| l.as_secs_f64()).unwrap_or(0.0))),
    };
    // Read as a stream: memory holds the threads and the openings, not the calls.
    let an = analyze_records(records(&a.trace)?, model)
        .with_context(|| format!("cannot read the trace {}", a.trace.display()))?;
    if a.output == Output::Json {
        return to_stdout(|w| {
            serde_json::to_writer_pretty(&mut *w, &an).map_err(std::io::Error::from)?;
            writeln!(w).context("writing to stdout")
        });
    }
    to_stdout(|w| print_analysis(w, &an).context("writing to stdout"))
}

fn op_table(ops: &BTreeMap<String, OpStat>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY).set_header(["call", "count", "bytes", "time", "mean ms"]);
    let mut v: Vec<_> = ops.iter().collect();
    v.sort_by(|a, b| b.1.time_s.total_cmp(&a.1.time_s).then(b.1.ops.cmp(&a.1.ops)));
    for (name, s) in v {
        t.add_row([
            name.clone(),
            fmt::count(s.ops as f64),
            if s.bytes > 0 { iolab_spec::units::fmt_decimal(s.bytes as f64) } else { "-".into() },
            fmt::secs(s.time_s),
            fmt::ms((s.time_s / s.ops.max(1) as f64 * 1e9) as u64),
        ]);
    }
    t
}

fn fmt_us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

fn sizes(h: &BTreeMap<u64, u64>) -> String {
    if h.is_empty() {
        return "-".into();
    }
    h.iter().map(|(b, n)| format!("{}:{}", iolab_spec::units::fmt_binary(*b as f64), n)).collect::<Vec<_>>().join(" ")
}

fn print_analysis(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    print_origin(w, an)?;
    let time_is = if an.via.as_deref() == Some("ebpf") {
        "time is the calls' duration, and for asynchronous I/O the time from submission to completion"
    } else {
        "time is the calls' traced duration, -T"
    };
    writeln!(w, "\nAll threads ({time_is}):\n{}", op_table(&an.totals))?;
    for t in &an.threads {
        let who = if t.tid == 0 {
            format!("{} more threads, summed", an.threads_summed)
        } else {
            format!("Thread {} (process {})", t.tid, t.tgid)
        };
        writeln!(
            w,
            "\n{who}: {} calls in {}; read {}, written {}, {} flushes; access {}; sizes (count per power-of-two bucket) {}\n{}",
            fmt::count(t.ops.values().map(|s| s.ops).sum::<u64>() as f64),
            fmt::secs(t.span_s),
            iolab_spec::units::fmt_decimal(t.read_bytes as f64),
            iolab_spec::units::fmt_decimal(t.written_bytes as f64),
            t.syncs,
            t.pattern,
            sizes(&t.sizes),
            op_table(&t.ops.iter().chain(&t.submitted).map(|(k, v)| (k.clone(), v.clone())).collect())
        )?;
    }
    print_rings(w, an)?;
    print_devices(w, an)?;
    print_files(w, an)?;
    print_model(w, an)
}

/// What the trace is: its source, calls and threads, how it was recorded, the tracer's cost taken off, what was lost.
fn print_origin(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    writeln!(
        w,
        "{}: {} calls of {} threads in {}{}",
        an.source,
        fmt::count(an.ops as f64),
        an.threads.len() as u64 + an.threads_summed.saturating_sub(1),
        fmt::secs(an.elapsed_s),
        if an.bad_lines > 0 { format!(" ({} lines not understood at import)", an.bad_lines) } else { String::new() }
    )?;
    match an.via.as_deref() {
        Some("ebpf") => {
            writeln!(w, "Recorded with eBPF ({}): times are the kernel's.", an.via_detail.as_deref().unwrap_or(""))?
        }
        Some(v) => writeln!(w, "Recorded with {v} ({}).", an.via_detail.as_deref().unwrap_or(""))?,
        None => {}
    }
    if let Some(o) = &an.overhead {
        writeln!(
            w,
            "The tracer's cost: {} in each call's duration (kept: strace cannot tell a short call from its own stops), {} in each gap after a call ({}); {} taken off the calls and {} off the gaps; the span under the tracer was {}.",
            fmt_us(o.call_ns),
            fmt_us(o.gap_ns),
            o.method,
            fmt::secs(o.calls_taken_ns as f64 / 1e9),
            fmt::secs(o.gaps_taken_ns as f64 / 1e9),
            fmt::secs(o.recorded_span_ns as f64 / 1e9),
        )?;
    }
    if an.cpu_wait_s > 0.0 {
        writeln!(
            w,
            "The threads waited {} for a CPU between their calls (the scheduler's run-queue time): replay's think timing does not wait it.",
            fmt::secs(an.cpu_wait_s)
        )?;
    }
    if an.lost.is_empty() {
        if an.via.is_some() {
            writeln!(w, "Nothing was lost while recording.")?;
        }
    } else {
        for (why, n) in &an.lost {
            writeln!(w, "Not kept while recording: {} events, {why}.", fmt::count(*n as f64))?;
        }
    }
    Ok(())
}

/// Each asynchronous ring (io_uring, libaio): its traffic, depth in flight and operations.
fn print_rings(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    for r in &an.rings {
        writeln!(
            w,
            "\nRing {} ({}, process {}, {} entries, submitted by thread {}): read {}, written {}, {} flushes; access {}; sizes {}{}\n  depth in flight: max {}, mean {}; at submission {}\n  mean depth per {} s: {}\n{}",
            r.ring,
            r.kind,
            r.tgid,
            r.entries,
            r.threads.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "),
            iolab_spec::units::fmt_decimal(r.read_bytes as f64),
            iolab_spec::units::fmt_decimal(r.written_bytes as f64),
            r.syncs,
            r.pattern,
            sizes(&r.sizes),
            {
                let mut extra = Vec::new();
                if r.fixed_files > 0 {
                    extra.push(format!("{} on registered files", r.fixed_files));
                }
                if r.fixed_buffers > 0 {
                    extra.push(format!("{} on registered buffers", r.fixed_buffers));
                }
                if r.unknown_files > 0 {
                    extra.push(format!("{} on files the trace cannot name", r.unknown_files));
                }
                if r.unfinished > 0 {
                    extra.push(format!("{} never completed within the trace", r.unfinished));
                }
                if r.failed > 0 {
                    extra.push(format!("{} failed", r.failed));
                }
                if extra.is_empty() {
                    String::new()
                } else {
                    format!("; {}", extra.join(", "))
                }
            },
            r.max_depth,
            fmt::num(r.mean_depth),
            r.depth_at_submit.iter().map(|(d, n)| format!("{d}:{n}")).collect::<Vec<_>>().join(" "),
            fmt::num(r.depth_slice_s),
            r.depth_over_time.iter().map(|d| format!("{d:.1}")).collect::<Vec<_>>().join(" "),
            op_table(&r.ops)
        )?;
    }
    Ok(())
}

/// Each block device of a block-level trace: its traffic, queue and device times, depth.
fn print_devices(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    for d in &an.devices {
        writeln!(
            w,
            "\nDevice {} ({}): read {}, written {}, {} flushes (flush requests, FUA, PREFLUSH){}; access {}; sizes {}\n  mean queue {} ms, device {} ms; depth max {}, mean {}; mean depth per {} s: {}\n{}",
            d.name,
            d.dev,
            iolab_spec::units::fmt_decimal(d.read_bytes as f64),
            iolab_spec::units::fmt_decimal(d.written_bytes as f64),
            d.flushes,
            if d.errors > 0 { format!(", {} errors", d.errors) } else { String::new() },
            d.pattern,
            sizes(&d.sizes),
            fmt::num(d.mean_queue_ms),
            fmt::num(d.mean_device_ms),
            d.max_depth,
            fmt::num(d.mean_depth),
            fmt::num(d.depth_slice_s),
            d.depth_over_time.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" "),
            op_table(&d.ops)
        )?;
    }
    Ok(())
}

/// The files table.
fn print_files(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    let mut ft = Table::new();
    ft.load_preset(UTF8_BORDERS_ONLY).set_header([
        "file",
        "opened",
        "flags",
        "read",
        "written",
        "pattern",
        "sizes",
        "flushes",
        "writes/flush",
    ]);
    for f in an.files.iter().filter(|f| f.read_bytes + f.written_bytes > 0 || f.syncs > 0 || f.openings > 0) {
        ft.add_row([
            safe(&f.path).into_owned(),
            f.openings.to_string(),
            f.flags.clone(),
            iolab_spec::units::fmt_decimal(f.read_bytes as f64),
            iolab_spec::units::fmt_decimal(f.written_bytes as f64),
            f.pattern.to_string(),
            sizes(&f.sizes),
            f.syncs.to_string(),
            f.writes_per_sync.map(fmt::num).unwrap_or_else(|| "-".into()),
        ]);
    }
    writeln!(w, "\nFiles (sizes: count per power-of-two bucket):\n{ft}")?;
    Ok(())
}

/// The time model: what the trace would take at the device's rate and latency, beside what it took.
fn print_model(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    if let Some(m) = &an.model {
        writeln!(
            w,
            "\nTime model: {} at {} + {} I/Os × {} ms = {}; the trace took {} ({}).",
            iolab_spec::units::fmt_decimal(m.bytes as f64),
            fmt::rate(m.rate_bytes_per_s),
            fmt::count(m.ios as f64),
            fmt::num(m.latency_s * 1e3),
            fmt::secs(m.modelled_s),
            fmt::secs(m.recorded_s),
            if m.modelled_s > 0.0 { format!("{:.2}× the model", m.recorded_s / m.modelled_s) } else { "-".into() }
        )?;
        if !m.skipped.is_empty() {
            let s: Vec<String> = m
                .skipped
                .iter()
                .map(|(k, v)| format!("{k}: {} calls, {}", v.calls, iolab_spec::units::fmt_decimal(v.bytes as f64)))
                .collect();
            writeln!(w, "Not storage, left out of the model: {}.", s.join("; "))?;
        }
    }
    Ok(())
}

fn export(a: TraceExportArgs) -> Result<ExitCode> {
    let _ = a.fio;
    let remap = match &a.target {
        None => None,
        Some(t) => {
            let strip = match &a.strip {
                Some(s) => s.clone(),
                None => iolab_workload::source::replay::default_strip_of(&a.trace).map_err(|e| anyhow::anyhow!(e))?,
            };
            Some(iolab_trace::fio::Remap { strip, target: t.clone() })
        }
    };
    let ex = match &a.out {
        Some(p) => {
            let mut w = BufWriter::new(File::create(p).with_context(|| format!("cannot create {}", p.display()))?);
            let ex = iolab_trace::fio::export(records(&a.trace)?, remap.as_ref(), &mut w)?;
            w.flush()?;
            ex
        }
        None => {
            let mut ex = None;
            let recs = records(&a.trace)?;
            let code = to_stdout(|w| {
                ex = Some(iolab_trace::fio::export(recs, remap.as_ref(), w).map_err(|e| match e {
                    iolab_trace::fio::ExportError::Io(e) => anyhow::Error::from(e).context("writing to stdout"),
                    e => anyhow::Error::from(e).context(format!("cannot read the trace {}", a.trace.display())),
                })?);
                Ok(())
            })?;
            match ex {
                Some(ex) => ex,
                None => return Ok(code),
            }
        }
    };
    let acts: Vec<String> = ex.actions.iter().map(|(k, v)| format!("{k} {v}")).collect();
    errln!("{} iolog entries written ({})", ex.entries, acts.join(", "));
    for (why, n) in &ex.left_out {
        errln!("left out: {n} calls, {why}");
    }
    if let Some(m) = &remap {
        errln!("paths under {} remapped under {}", m.strip.display(), m.target.display());
    }
    Ok(ExitCode::SUCCESS)
}
