//! `iolab`: the command line. Only glue lives here: parse flags, call the libraries,
//! print. Exit codes: 0 done, 1 a finding, 2 bad input or a runtime error, 128 + the signal's
//! number when a signal stopped a run (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT).

#![forbid(unsafe_code)]

#[macro_use]
mod stdout;

mod agent_cmd;
mod cluster_cmd;
mod db_cmd;
mod fio_cmd;
mod fio_logs;
mod job_file;
mod live_metrics;
mod outpath;
mod output;
mod precondition_cmd;
mod progress;
mod pts_cmd;
mod record;
mod replay_cmd;
mod run_cmd;
mod signals;
mod stored;
mod survey;
mod trace_cmd;
mod verify_cmd;
mod watch;

// The command line's types live in the library (the fuzz target parses with them).
use iolab_cli::{args, formats};

use args::{Cli, Command, DbCommand};
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn main() -> ExitCode {
    let cli = match args::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let json = cli.command.json_asked();
    let result = dispatch(cli.command);
    stdout::flush();
    finish(result, json)
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(a) if a.nodes.given() => cluster_cmd::run(*a, stop()),
        Command::Run(a) => run_cmd::run(*a, stop()),
        Command::Convert(a) => run_cmd::convert(a),
        Command::Fio(a) => fio_cmd::run(a, stop()),
        Command::Agent(a) => agent_cmd::run(a),
        Command::Survey(a) => survey::run(*a, stop()),
        Command::Watch(a) => watch::run(a, stop()),
        Command::Scenario(a) => cluster_cmd::scenario(*a, stop()),
        Command::Runs(a) => stored::runs(a),
        Command::Show(a) => stored::show(a),
        Command::Rm(a) => stored::rm(a),
        Command::Export(a) => stored::export(a),
        Command::Compare(a) => stored::compare(a),
        Command::Report(a) => stored::report(a),
        Command::Trace(c) => trace_cmd::run(c),
        Command::Replay(a) => replay_cmd::run(*a, stop()),
        Command::Verify(a) => verify_cmd::run(a),
        Command::Db(DbCommand::Copy(a)) => db_cmd::copy(a),
        Command::Precondition(a) => precondition_cmd::run(a, stop()),
        Command::Completions { shell } => {
            // Made in memory, then written through the one writer (clap_complete panics on a
            // failed write).
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "iolab", &mut text);
            stdout::out().write_all(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            let mut text = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut text)?;
            stdout::out().write_all(&text)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The exit status and the last words of a command: a closed stdout ends it quietly (0 for a
/// listing; a command that measured returns its run's status itself), a full one is said once;
/// any other error is said on stderr (control characters escaped) and, when `--output json`
/// was asked, as a JSON object on stdout.
fn finish(result: anyhow::Result<ExitCode>, json: bool) -> ExitCode {
    match (result, stdout::ended()) {
        (Ok(code), None | Some(stdout::Ended::Closed)) => code,
        (Err(_), Some(stdout::Ended::Closed)) => ExitCode::SUCCESS,
        (_, Some(stdout::Ended::Full)) => {
            let _ = writeln!(std::io::stderr(), "iolab: stdout is full (no space left on the device it goes to)");
            ExitCode::from(2)
        }
        (_, Some(stdout::Ended::Failed)) => {
            let _ = writeln!(std::io::stderr(), "iolab: writing to stdout failed");
            ExitCode::from(2)
        }
        (Err(e), None) => {
            let text = message(&e);
            let _ = writeln!(std::io::stderr(), "Error: {}", iolab_report::text::safe_lines(&text));
            if json {
                error_object(&text);
            }
            ExitCode::from(2)
        }
    }
}

/// An error and its causes, `: `-separated as anyhow's `{:#}` has them, but a cause is said once:
/// one whose words its error's message already holds (a `{source}` in the message) is left out.
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}

/// `{"error": "..."}` on stdout, for a script that asked for JSON (docs/json.md).
fn error_object(text: &str) {
    let obj = serde_json::json!({ "error": text, "exit_status": 2 });
    let _ = outln!("{obj}");
    stdout::flush();
}

/// A command line clap refused (or `--help`, `--version`): its text through the one writer,
/// control characters escaped (clap repeats what was typed); an error object on stdout when
/// `--output json` was asked.
fn clap_error(e: clap::Error) -> ExitCode {
    let text = e.render().to_string();
    if !e.use_stderr() {
        let _ = out!("{text}");
        stdout::flush();
        return match stdout::ended() {
            Some(stdout::Ended::Full | stdout::Ended::Failed) => {
                let _ = writeln!(std::io::stderr(), "iolab: stdout is full (no space left on the device it goes to)");
                ExitCode::from(2)
            }
            _ => ExitCode::SUCCESS,
        };
    }
    let _ = write!(std::io::stderr(), "{}", iolab_report::text::safe_lines(&text));
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    if args::json_in(&args) {
        let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        error_object(&first);
    }
    ExitCode::from(2)
}

fn stop() -> Arc<AtomicBool> {
    signals::stop_on_signals()
}

#[cfg(test)]
mod message_tests {
    use super::message;

    /// An error whose message already says its source, as `#[error("...: {source}")]` does.
    #[derive(Debug)]
    struct Says(std::io::Error);
    impl std::fmt::Display for Says {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "reading job file j.toml: {}", self.0)
        }
    }
    impl std::error::Error for Says {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_is_said_once() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(Says(io()));
        assert_eq!(message(&e), format!("reading job file j.toml: {}", io()));
        let e = anyhow::Error::new(io()).context("opening the results database");
        assert_eq!(message(&e), format!("opening the results database: {}", io()));
    }
}

#[cfg(test)]
mod causes {
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
        assert_eq!(message(&e), "starting the agent: TLS setup: keys may not be consistent: KeyMismatch");
        let e = anyhow::anyhow!("a").context("b");
        assert_eq!(message(&e), "b: a");
    }
}
