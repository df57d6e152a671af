//! `iolab verify --journal DIR`: check the files of a validated run against the maps and
//! journals it kept, after a crash or from another node (iolab-verify's recovery), print what
//! was found and keep it as a run of kind `verify` with one phase, `verify`.

use crate::args::VerifyArgs;
use crate::formats::Format;
use anyhow::{Context, Result};
use iolab_report::export::Input;
use iolab_spec::{Phase, Plan};
use iolab_store::Store;
use iolab_workload::model::{now_unix_s, RunKind, VerifyResult};
use iolab_workload::{PhaseResult, RunResult, Status};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(a: VerifyArgs) -> Result<ExitCode> {
    if !a.journal.is_dir() {
        anyhow::bail!("{} is not a directory; give the --journal DIR of a validated run", a.journal.display());
    }
    let node = a.as_node.clone().unwrap_or_else(iolab_sysstat::hostname);
    let started = now_unix_s();
    let t = Instant::now();
    let files = iolab_verify::recover_dir(&a.journal, &node, a.max_errors)
        .with_context(|| format!("checking the files of {}", a.journal.display()))?;
    let keep = if a.max_errors == 0 { 1000 } else { a.max_errors as usize };
    let mut v = VerifyResult::default();
    for f in &files {
        v.merge(&f.result, keep);
    }
    let phase = PhaseResult { elapsed_s: t.elapsed().as_secs_f64(), verify: Some(v), ..PhaseResult::new("verify") };
    let plan = Plan { phases: vec![Phase { name: "verify".into(), jobs: Vec::new() }] };
    let result =
        RunResult { status: Status::Complete, phases: vec![phase], ..RunResult::new(plan, node.clone(), started) };
    let json = a.output == Format::Json;
    if !a.save.no_store {
        match save(&a, &result) {
            Ok(w) if !json => errln!("iolab: {w}"),
            Ok(_) => {}
            Err(e) => errln!("iolab: warning: the check is not saved: {e:#}"),
        }
    }
    let code = if result.found_bad_blocks() { ExitCode::from(1) } else { ExitCode::SUCCESS };
    crate::stdout::unless_closed(print(&a, &files, &result))?;
    Ok(code)
}

/// What was found, on stdout.
fn print(a: &VerifyArgs, files: &[iolab_verify::Recovered], result: &RunResult) -> Result<()> {
    if a.output == Format::Json {
        crate::output::print(a.output, Default::default(), &Input::Run(result))?;
    } else {
        for f in files {
            let replay = if f.records + f.bad_records + f.torn_tail == 0 {
                "journal closed cleanly".to_string()
            } else {
                format!(
                    "{} journal records replayed, {} damaged skipped, {} bytes of a torn last record",
                    f.records, f.bad_records, f.torn_tail
                )
            };
            let fold = if f.folded { "; map brought up to date" } else { "; map left as it is (not the writer)" };
            outln!("{} (written by {}): {replay}{fold}", f.file, f.writer)?;
        }
        out!("{}", iolab_report::summary::render(result))?;
    }
    Ok(())
}

fn save(a: &VerifyArgs, r: &RunResult) -> Result<String> {
    let store =
        Store::open(a.save.db.target()).context("opening the results database (use --no-store to check without it)")?;
    let host = iolab_sysstat::host_facts(None);
    let labels = a.save.labels.iter().cloned().collect();
    let name = format!("verify {}", a.journal.display());
    let run = store.begin_run(RunKind::Verify, &name, &labels, &host, &r.plan, r.started_unix_s)?;
    store.add_phase(run, 0, &host.hostname, &r.phases[0])?;
    store.finish_run(run, r.status, None, now_unix_s())?;
    Ok(format!("saved as run {run} in {}", store.location()))
}
