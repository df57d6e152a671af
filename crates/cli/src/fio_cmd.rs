//! `iolab fio ARGS...`: a fio command line (`--name=` sections, job options, job files,
//! `--output-format`, `--output`) read by `iolab_spec::fio::cmdline` into the jobs a fio job
//! file becomes, run as `iolab run` runs a plan (the store, system figures and findings behind
//! it), and reported in fio's formats: normal, terse, json, json+, rendered from one fio JSON
//! document so they agree.

use crate::args::{FioArgs, LogArgs, MetricsArgs, OutArgs};
use crate::live_metrics::Live;
use crate::outpath::{database_files, OutPath};
use crate::output::exit_code;
use anyhow::{Context, Result};
use iolab_report::fio_json::document;
use iolab_report::fio_text;
use iolab_report::format::Format;
use iolab_spec::fio::cmdline::{self, Format as FioFormat};
use iolab_spec::fio::{self};
use iolab_spec::JobPatch;
use iolab_workload::model::RunKind;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: FioArgs, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let cmd = cmdline::read_args(&a.args).map_err(fio::FioError::At)?;
    let file = cmd.map(&fio::System, a.fio_lenient)?;
    for n in &file.notes {
        errln!("iolab: note: {n}");
    }
    for s in &file.skipped {
        errln!("iolab: warning: left out (--fio-lenient): {s}");
    }
    let mut plan = file.plan(&JobPatch::default())?;
    // The logs the job file or the command line's write_*_log ask for, as `iolab run` writes them.
    let logs = file.logs.clone().map(LogArgs::from).unwrap_or_default();
    crate::fio_logs::check(&logs, plan.phases.len())?;
    crate::fio_logs::per_io(&logs, &mut plan)?;
    // Refuse an --output iolab may not write before anything runs.
    let inputs = database_files(a.save.db.target().file());
    let out_path = cmd.output.as_deref().map(|p| OutPath { path: p, flag: "--output", overwrite: false, inputs });
    if let Some(o) = &out_path {
        o.check()?;
    }
    // fio prints its report and nothing else on stdout: iolab's run is quiet there.
    let out = OutArgs {
        output: Format::FioJson,
        no_progress: true,
        sample_interval: Duration::from_secs(1),
        histograms: false,
        metrics: MetricsArgs { metrics_listen: None, metrics_linger: Duration::ZERO },
    };
    let name = std::iter::once("fio".to_string()).chain(a.args.iter().cloned()).collect::<Vec<_>>().join(" ");
    let live = Live::start(&out.metrics, true)?;
    let (result, id) = crate::run_cmd::execute(&plan, &out, &a.save, (RunKind::Run, &name), &live, stop)?;
    for path in crate::fio_logs::write(&logs, &result)? {
        errln!("iolab: wrote {}", path.display());
    }
    let mut text = String::new();
    for f in &cmd.formats {
        let doc = document(&result, *f == FioFormat::JsonPlus);
        match f {
            FioFormat::Normal => text.push_str(&fio_text::normal(&doc)),
            FioFormat::Terse => text.push_str(&fio_text::terse(&doc)),
            FioFormat::Json | FioFormat::JsonPlus => {
                text.push_str(&serde_json::to_string_pretty(&doc).context("writing fio's JSON")?);
                text.push('\n');
            }
        }
    }
    match &out_path {
        Some(o) => o.write(text.as_bytes())?,
        None => crate::stdout::unless_closed(crate::stdout::out().write_all(text.as_bytes()).map_err(Into::into))?,
    }
    // As fio says a job's error on stderr beside its report (`fio: pid=N, err=17/...`).
    if let Some(e) = &result.error {
        errln!("iolab: {e}");
    }
    if let Some(id) = id {
        errln!("iolab: run {id} kept: iolab show {id}");
    }
    Ok(exit_code(&result))
}
