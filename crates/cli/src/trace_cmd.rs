//! `iolab trace record|import|show|export`: run a program under strace (or attach to one),
//! convert strace text into iolab's trace format, print what a trace did and what it would take
//! at a device rate and latency, and write it as a fio iolog.

use crate::args::{Output, TraceCommand, TraceExportArgs, TraceImportArgs, TraceRecordArgs, TraceShowArgs};
use anyhow::{bail, Context, Result};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use iolab_report::fmt;
use iolab_trace::analyze::{analyze_records, Analysis, OpStat};
use iolab_trace::format::{FormatError, Reader, Record};
use iolab_trace::Summary;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

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

fn convert(files: &[PathBuf], name: Option<&str>, out: &Path) -> Result<Summary> {
    let f = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let (w, sum) = iolab_trace::import_named(files, name, BufWriter::new(f))?;
    w.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).context("cannot write the trace")?;
    Ok(sum)
}

fn record(a: TraceRecordArgs) -> Result<ExitCode> {
    let version = strace_version()?;
    let raw = {
        let mut s = a.out.clone().into_os_string();
        s.push(".strace");
        PathBuf::from(s)
    };
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-ttt", "-T", "-y", "-s", "0", "-e"]).arg(format!("trace={TRACED}")).arg("-o").arg(&raw);
    let status = if let Some(pid) = a.pid {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            bail!("no process {pid} to attach to (is it still running?)");
        }
        c.arg("-p").arg(pid.to_string());
        // Ctrl-C reaches strace too (same terminal), which detaches; iolab waits and converts.
        let _ = ctrlc::set_handler(|| {});
        eprintln!("Recording process {pid} with {version}; Ctrl-C ends the recording.");
        c.status().context("cannot start strace")?
    } else {
        let Some(prog) = a.command.first() else {
            bail!(
                "nothing to record: give a command after `--` (iolab trace record -o app.trace -- CMD ARGS) or -p PID"
            );
        };
        if find_program(prog).is_none() {
            bail!("command not found: `{prog}` (not an executable path, nor on $PATH)");
        }
        c.arg("--seccomp-bpf").arg("--").args(&a.command).stdin(Stdio::inherit());
        c.status().context("cannot start strace")?
    };
    if !raw.exists() {
        bail!("strace wrote no output ({status}); is ptrace allowed here (kernel.yama.ptrace_scope, containers)?");
    }
    let name = match a.pid {
        Some(p) => format!("process {p}"),
        None => a.command.join(" "),
    };
    let sum = convert(std::slice::from_ref(&raw), Some(&name), &a.out)?;
    if !a.keep_strace {
        let _ = std::fs::remove_file(&raw);
    }
    print_summary(&sum, &a.out, a.output)?;
    if a.pid.is_none() && !status.success() {
        eprintln!("Note: the command ended with {status}; its trace is kept.");
    }
    Ok(ExitCode::SUCCESS)
}

fn import(a: TraceImportArgs) -> Result<ExitCode> {
    let sum = convert(&a.files, None, &a.out)?;
    print_summary(&sum, &a.out, a.output)?;
    Ok(ExitCode::SUCCESS)
}

fn print_summary(sum: &Summary, out: &Path, output: Output) -> Result<()> {
    if output == Output::Json {
        println!("{}", serde_json::to_string_pretty(sum)?);
        return Ok(());
    }
    println!(
        "{}: {} calls of {} threads on {} openings, from {} lines ({})",
        out.display(),
        fmt::count(sum.ops as f64),
        sum.threads,
        sum.files,
        fmt::count(sum.lines as f64),
        iolab_spec::units::fmt_decimal(sum.bytes as f64),
    );
    if sum.bad_lines > 0 {
        println!("{} lines not understood (skipped):", fmt::count(sum.bad_lines as f64));
        for b in &sum.bad {
            println!("  {}:{}: {}: {}", b.source, b.line, b.reason, b.text);
        }
        if sum.bad_lines as usize > sum.bad.len() {
            println!("  ... and {} more", sum.bad_lines as usize - sum.bad.len());
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
    let mut out = BufWriter::new(std::io::stdout().lock());
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

fn sizes(h: &BTreeMap<u64, u64>) -> String {
    if h.is_empty() {
        return "-".into();
    }
    h.iter().map(|(b, n)| format!("{}:{}", iolab_spec::units::fmt_binary(*b as f64), n)).collect::<Vec<_>>().join(" ")
}

fn print_analysis(w: &mut dyn Write, an: &Analysis) -> std::io::Result<()> {
    writeln!(
        w,
        "{}: {} calls of {} threads in {}{}",
        an.source,
        fmt::count(an.ops as f64),
        an.threads.len() as u64 + an.threads_summed.saturating_sub(1),
        fmt::secs(an.elapsed_s),
        if an.bad_lines > 0 { format!(" ({} lines not understood at import)", an.bad_lines) } else { String::new() }
    )?;
    writeln!(w, "\nAll threads (time is the calls' traced duration, -T):\n{}", op_table(&an.totals))?;
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
            op_table(&t.ops)
        )?;
    }
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
            f.path.clone(),
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
    eprintln!("{} iolog entries written ({})", ex.entries, acts.join(", "));
    for (why, n) in &ex.left_out {
        eprintln!("left out: {n} calls, {why}");
    }
    if let Some(m) = &remap {
        eprintln!("paths under {} remapped under {}", m.strip.display(), m.target.display());
    }
    Ok(ExitCode::SUCCESS)
}
