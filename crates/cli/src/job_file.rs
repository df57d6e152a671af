//! Job files for `iolab run` and `iolab convert`: iolab's TOML or fio's, told apart by their
//! content (fio's first section line is `[name]`; iolab's files have `[[phase]]`) or by
//! `--format`. A fio file's notes and skipped options go to stderr, each with its line.

use crate::args::JobFormat;
use anyhow::{Context, Result};
use iolab_spec::fio::{self, FioFile};
use iolab_spec::{parse_job_file, JobPatch, Plan};
use std::path::Path;

/// Whether `text` (from `path`) is read as a fio job file.
fn is_fio(path: &Path, text: &str, format: JobFormat) -> bool {
    match format {
        JobFormat::Fio => true,
        JobFormat::Toml => false,
        JobFormat::Auto => path.extension().is_some_and(|e| e == "fio") || fio::looks_like_fio(text),
    }
}

/// Read a fio job file (only the job sections in `only`, when it names any: fio's
/// `--section`), saying on stderr how its options were taken (the notes unless `quiet`; what
/// --fio-lenient left out always).
pub fn read_fio(path: &Path, lenient: bool, only: &[String], quiet: bool) -> Result<FioFile> {
    let f = fio::parse_sections(path, &fio::System, lenient, only)?;
    if !quiet {
        for n in &f.notes {
            errln!("iolab: note: {n}");
        }
    }
    for s in &f.skipped {
        errln!("iolab: warning: left out (--fio-lenient): {s}");
    }
    Ok(f)
}

/// The plan of a job file under the command line's job flags, and the logs a fio job file
/// asks for (`write_bw_log`...).
pub fn plan(
    path: &Path,
    format: JobFormat,
    (lenient, only): (bool, &[String]),
    overrides: &JobPatch,
    quiet: bool,
) -> Result<(Plan, Option<fio::FioLogs>)> {
    let text = iolab_spec::input::read_text(path, "job file", iolab_spec::input::JOB_FILE_MAX)?;
    if is_fio(path, &text, format) {
        let f = read_fio(path, lenient, only, quiet)?;
        return Ok((f.plan(overrides)?, f.logs));
    }
    if !only.is_empty() {
        anyhow::bail!("--section picks job sections of a fio job file; {} reads as iolab's TOML", path.display());
    }
    if lenient {
        anyhow::bail!(
            "--fio-lenient is for fio job files; {} reads as iolab's TOML (--format fio to read it as fio's)",
            path.display()
        );
    }
    Ok((parse_job_file(&text, overrides).with_context(|| format!("{}", path.display()))?, None))
}
