//! `iolab`: the command line. Only glue lives here: parse flags, call the libraries,
//! print. Exit codes: 0 done, 1 a finding, 2 bad input or a runtime error, 130 interrupted.

#![forbid(unsafe_code)]

mod agent_cmd;
mod args;
mod cluster_cmd;
mod db_cmd;
mod fio_logs;
mod formats;
mod job_file;
mod live_metrics;
mod output;
mod progress;
mod record;
mod replay_cmd;
mod run_cmd;
mod stored;
mod survey;
mod trace_cmd;
mod verify_cmd;
mod watch;

use args::{Cli, Command, DbCommand};
use clap::{CommandFactory, Parser};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) if a.nodes.given() => cluster_cmd::run(*a, stop_on_ctrl_c()),
        Command::Run(a) => run_cmd::run(*a, stop_on_ctrl_c()),
        Command::Convert(a) => run_cmd::convert(a),
        Command::Agent(a) => agent_cmd::run(a),
        Command::Survey(a) => survey::run(*a, stop_on_ctrl_c()),
        Command::Watch(a) => watch::run(a, stop_on_ctrl_c()),
        Command::Scenario(a) => cluster_cmd::scenario(*a, stop_on_ctrl_c()),
        Command::Runs(a) => stored::runs(a),
        Command::Show(a) => stored::show(a),
        Command::Rm(a) => stored::rm(a),
        Command::Export(a) => stored::export(a),
        Command::Compare(a) => stored::compare(a),
        Command::Report(a) => stored::report(a),
        Command::Trace(c) => trace_cmd::run(c),
        Command::Replay(a) => replay_cmd::run(*a, stop_on_ctrl_c()),
        Command::Verify(a) => verify_cmd::run(a),
        Command::Db(DbCommand::Copy(a)) => db_cmd::copy(a),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "iolab", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .map(|_| ExitCode::SUCCESS)
            .map_err(Into::into),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// First Ctrl-C (or SIGTERM): stop issuing, finish in-flight I/O, report. Second: quit now.
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\niolab: stopping; finishing the I/O in flight (Ctrl-C again to quit at once)");
    });
    stop
}
