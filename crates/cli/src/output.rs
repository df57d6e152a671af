//! Printing a result in the format the flags ask for (the exporters are
//! `iolab_report::export`'s, chosen by `iolab_report::format`), and the exit status a run's
//! result means.

use crate::args::OutArgs;
use anyhow::Result;
use iolab_report::export::Input;
use iolab_report::format::{Format, Options};
use iolab_workload::{RunResult, Status};
use std::process::ExitCode;

/// Print `input` on stdout in `format` (through the one writer, `crate::stdout`).
pub fn print(format: Format, options: Options, input: &Input) -> Result<()> {
    format.exporter(options).export(input, &mut crate::stdout::out())?;
    Ok(())
}

/// Print a run's result on stdout in the format the flags ask for.
pub fn emit(result: &RunResult, out: &OutArgs) -> Result<()> {
    print(out.output, out.options(), &Input::Run(result))
}

/// The exit status a run's result means: 0 done, 1 validation found bad blocks, 2 failed,
/// 128 + the signal's number when one stopped it (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131
/// SIGQUIT; 130 for a run stopped otherwise).
pub fn exit_code(r: &RunResult) -> ExitCode {
    match r.status {
        // Data validation found bad blocks: a finding.
        Status::Complete | Status::Running if r.found_bad_blocks() => ExitCode::from(1),
        Status::Complete | Status::Running => ExitCode::SUCCESS,
        Status::Interrupted => ExitCode::from(crate::signals::interrupted_status()),
        Status::Failed => ExitCode::from(2),
    }
}
