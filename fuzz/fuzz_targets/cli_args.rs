//! Fuzz the command line: arbitrary arguments (the input split at NUL bytes, any bytes, not
//! only UTF-8) through clap as the binary parses them (`iolab_cli::args::parse_from`), and a
//! `run` from flags on into the spec: its job resolved and its plan validated, as `iolab run`
//! does before touching anything. Nothing may panic; what parses renders its help and errors.
#![no_main]
use iolab_cli::args::{parse_from, Command};
use iolab_spec::{Phase, Plan};
use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

fuzz_target!(|data: &[u8]| {
    let mut args: Vec<OsString> = vec!["iolab".into()];
    args.extend(data.split(|&b| b == 0).take(64).map(|a| OsString::from_vec(a.to_vec())));
    let cli = match parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // The error renders (what the binary prints), whatever was typed.
            let _ = e.render().to_string();
            return;
        }
    };
    let _ = cli.command.json_asked();
    if let Command::Run(a) = cli.command {
        if a.job_file.is_none() {
            if let Ok(job) = a.job.clone().resolve("job1") {
                let _ = job.describe();
                let plan = Plan { phases: vec![Phase { name: job.workload.label(), jobs: vec![job] }] };
                let _ = plan.validate();
            }
        }
    }
});
