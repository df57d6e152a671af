//! Printing a result in the format the flags ask for (the exporters are
//! `iolab_report::export`'s, chosen by `iolab_report::format`), and the exit status a run's
//! result means.

use crate::args::OutArgs;
use anyhow::Result;
use iolab_report::export::Input;
use iolab_report::format::{Format, Options};
use iolab_workload::{RunResult, Status};
use std::process::ExitCode;

/// Print `input` on stdout in `format`.
pub fn print(format: Format, options: Options, input: &Input) -> Result<()> {
    format.exporter(options).export(input, &mut std::io::stdout().lock())?;
    Ok(())
}

/// Print a run's result on stdout in the format the flags ask for.
pub fn emit(result: &RunResult, out: &OutArgs) -> Result<()> {
    print(out.output, out.options(), &Input::Run(result))
}

/// The exit status a run's result means: 0 done, 1 validation found bad blocks, 2 failed, 130
/// interrupted.
pub fn exit_code(r: &RunResult) -> ExitCode {
    match r.status {
        // Data validation found bad blocks: a finding.
        Status::Complete | Status::Running if r.found_bad_blocks() => ExitCode::from(1),
        Status::Complete | Status::Running => ExitCode::SUCCESS,
        Status::Interrupted => ExitCode::from(130),
        Status::Failed => ExitCode::from(2),
    }
}
