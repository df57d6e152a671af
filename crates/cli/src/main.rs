//! `iolab`: the command line. Only glue lives here: parse flags, call the libraries,
//! print. Exit codes: 0 done, 1 a finding, 2 bad input or a runtime error, 130 interrupted.

#![forbid(unsafe_code)]

mod agent_cmd;
mod args;
mod cluster_cmd;
mod fio_logs;
mod formats;
mod job_file;
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

use args::{Cli, Command};
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
            eprintln!("Error: {}", said_once(&e));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes in one line, each cause said once: a cause whose text its error
/// already carries (a library error that prints its source, as many do) is not repeated.
fn said_once(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source, and gives it as its source too.
    #[derive(Debug)]
    struct Repeats(std::io::Error);
    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "TLS setup: {}", self.0)
        }
    }
    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_says_each_cause_once() {
        let inner = std::io::Error::other("keys may not be consistent: KeyMismatch");
        let e = anyhow::Error::new(Repeats(inner)).context("starting the agent");
        assert_eq!(said_once(&e), "starting the agent: TLS setup: keys may not be consistent: KeyMismatch");
        let e = anyhow::anyhow!("a").context("b");
        assert_eq!(said_once(&e), "b: a");
    }
}
