//! `iolab scenario pts-iops|pts-throughput|pts-latency` (issue 29): a scenario of rounds on
//! this machine. The purge and the workload-independent preconditioning first
//! (`iolab_workload::precondition`, skipped with `--no-precondition`, which the report says);
//! then the scenario's steps (one round: a phase per cell of its matrix) run again and again,
//! each round's phases after the last, until the scenario finds its tracked cell steady or the
//! rule's maximum rounds ran. Saved as one run of kind `scenario` whose phases are every
//! round's cells, its plan growing round by round, with the scenario's verdict (the steady
//! state, the rule, the preconditioning). The judging reads finished phases between rounds:
//! nothing of it runs on the I/O path.

use crate::args::ScenarioArgs;
use crate::output::{emit, exit_code};
use crate::progress::Progress;
use crate::record::{Recorder, Tee};
use anyhow::{bail, Context, Result};
use iolab_report::scenario::pts::{phase_name, rule_figures};
use iolab_report::scenario::Scenario;
use iolab_spec::{Phase, Plan};
use iolab_workload::model::events::Shifted;
use iolab_workload::model::{Limit, RunKind, Verdict};
use iolab_workload::precondition::{precondition, Purge, Request};
use iolab_workload::{check_plan, run_plan, Control, Keep, RunResult, Status};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// PTS's workload-independent preconditioning: twice the capacity in 128 KiB writes.
const FILL_PASSES: u32 = 2;
const FILL_BS: u64 = 128 * 1024;

pub fn run(args: ScenarioArgs, sc: &dyn Scenario, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let Some(rule) = sc.rounds(&args.job) else { bail!("{} is no scenario of rounds", sc.name()) };
    if !args.nodes.node.is_empty() || args.nodes.nodes_file.is_some() || args.nodes.expect.is_some() {
        bail!("{} runs on this machine, on the device or file --target names: drop --node/--nodes/--expect", sc.name());
    }
    args.out.check()?;
    let json = args.out.machine();
    let opts = args.builtin_options();
    let host = iolab_sysstat::hostname();
    let round = sc.steps(std::slice::from_ref(&host), &args.job, &opts).with_context(|| args.scenario.clone())?;
    let Some(target) = args.job.target.clone() else { bail!("{} needs --target", sc.name()) };

    // The verdict's figures carry the rule from the start, so the rounds are judged by it.
    let mut conditions: Vec<String> = Vec::new();
    let mut figures: Vec<(String, f64)> = rule_figures(&rule);
    let own = preconditioned(&args, sc, &target, &stop, opts.no_precondition, &mut conditions, &mut figures)?;

    let cells = round.steps.len();
    let round_plan = |r: u32| Plan {
        phases: round
            .steps
            .iter()
            .map(|st| Phase {
                name: phase_name(r, &st.name),
                jobs: st.parts.iter().flat_map(|p| p.jobs.clone()).collect(),
            })
            .collect(),
    };
    check_plan(&round_plan(1))?;
    let mut overall = RunResult::begin(Plan { phases: Vec::new() });
    overall.verdict = Some(Verdict {
        scenario: sc.name().into(),
        limit: Limit::None,
        reasons: Vec::new(),
        figures: figures.iter().cloned().collect(),
    });
    overall.precondition = own;
    let mut rec = Recorder::begin(&args.save, RunKind::Scenario, &round.name, &round_plan(1))?;
    if let (Some(r), Some(p)) = (rec.as_mut(), overall.precondition.as_ref()) {
        r.set_precondition(p);
    }
    let stored = rec.is_some();
    let draw = !json && !args.out.no_progress && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let mut progress = Progress::new(draw, json);
    let sample_interval = (!args.out.sample_interval.is_zero()).then_some(args.out.sample_interval);
    let ctl = Control { stop: stop.clone(), sample_interval, ..Default::default() };
    for r in 1..=rule.max_rounds {
        if stop.load(Ordering::Relaxed) {
            overall.status = Status::Interrupted;
            break;
        }
        let plan = round_plan(r);
        overall.plan.phases.extend(plan.phases.iter().cloned());
        if let Some(rc) = rec.as_mut() {
            rc.set_plan(&overall.plan);
        }
        if !json {
            errln!("iolab: {}: round {r} (at most {}), {cells} cell(s)", sc.name(), rule.max_rounds);
        }
        let first = overall.phases.len();
        let ran = {
            let mut tee = Tee { show: &mut progress, rec: rec.as_mut(), metrics: None };
            let mut shifted = Shifted { by: first, inner: &mut tee };
            if stored {
                run_plan(&plan, &ctl, &mut shifted)
            } else {
                let mut keep = Keep::new(&mut shifted);
                run_plan(&plan, &ctl, &mut keep).map(|mut x| {
                    keep.fill(&mut x);
                    x
                })
            }
        };
        let result = match ran {
            Ok(x) => x,
            Err(e) => {
                (overall.status, overall.error) = (Status::Failed, Some(format!("round {r}: {e}")));
                break;
            }
        };
        overall.phases.extend(result.phases);
        if result.status != Status::Complete {
            overall.status = result.status;
            overall.error = result.error.map(|e| format!("round {r}: {e}"));
            break;
        }
        if let Some(ss) = sc.steady(&overall) {
            if !json {
                errln!("iolab: {}: after round {r}: {}", sc.name(), ss.verdict());
            }
            if ss.attained {
                break;
            }
        }
    }
    if overall.status == Status::Running {
        overall.status = Status::Complete;
    }
    // The verdict: the scenario's (the steady state), the rule and the preconditioning kept.
    if let Some(mut v) = sc.verdict(&overall, None) {
        v.reasons.extend(conditions);
        v.figures.extend(figures);
        overall.verdict = Some(v);
    }
    if let Some(mut rc) = rec {
        rc.set_plan(&overall.plan);
        rc.set_nodes(&[], overall.verdict.as_ref());
        rc.finish(&overall);
        if let Err(e) = rc.fill(&mut overall) {
            errln!("iolab: warning: reading the run's seconds and samples back: {e}");
        }
        if !json {
            errln!("iolab: {}", rc.where_());
        }
    }
    crate::stdout::unless_closed(emit(&overall, &args.out))?;
    Ok(exit_code(&overall))
}

/// The purge and the workload-independent fill before the rounds (or the words saying there was
/// none): what the report's test conditions say, the verdict's figures, and the record kept.
fn preconditioned(
    args: &ScenarioArgs,
    sc: &dyn Scenario,
    target: &std::path::Path,
    stop: &Arc<AtomicBool>,
    skip: bool,
    conditions: &mut Vec<String>,
    figures: &mut Vec<(String, f64)>,
) -> Result<Option<iolab_workload::model::steady::Precondition>> {
    let json = args.out.machine();
    let mut own = None;
    if skip {
        conditions.push(
            "preconditioning: none (--no-precondition): the figures follow whatever the target held before".into(),
        );
        figures.push(("precondition.skipped".into(), 1.0));
    } else if sc.precondition() {
        let req = Request {
            target: target.to_path_buf(),
            device: args.job.device.unwrap_or(false),
            size: args.job.size.map(|s| s.0),
            overwrite: args.job.overwrite.unwrap_or(false),
            purge: Purge::Auto,
            passes: FILL_PASSES,
            bs: FILL_BS,
        };
        let tty = std::io::stderr().is_terminal();
        let show = !json && !args.out.no_progress;
        let out = precondition(&req, stop, &mut crate::precondition_cmd::progress_line(show, tty))
            .with_context(|| format!("preconditioning {}", target.display()))?;
        if show && tty {
            errln!();
        }
        if out.interrupted {
            bail!("interrupted while preconditioning {}: nothing measured", target.display());
        }
        let said = crate::precondition_cmd::lines(&out);
        if !json {
            for l in &said {
                errln!("iolab: {l}");
            }
        }
        conditions.push(format!("purge: {} ({})", out.purge, out.purge_said));
        conditions.push(format!(
            "preconditioning (workload independent): {} pass(es) over {} bytes in {} KiB sequential writes{}, {:.1} s",
            out.passes,
            out.capacity_bytes,
            out.bs / 1024,
            if out.direct { " (O_DIRECT)" } else { "" },
            out.fill_s
        ));
        own = Some(crate::precondition_cmd::record_of(&out, &crate::precondition_cmd::target_name(target)));
        figures.push(("precondition.bytes_written".into(), out.bytes_written as f64));
        figures.push(("precondition.capacity_bytes".into(), out.capacity_bytes as f64));
        figures.push(("precondition.purge_s".into(), out.purge_s as f64));
        figures.push(("precondition.fill_s".into(), out.fill_s));
    }

    Ok(own)
}
