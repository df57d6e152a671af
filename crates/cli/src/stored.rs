//! The commands on stored runs: `runs`, `show`, `rm`, `export`, `compare`, `report`. Each opens
//! the database that must already exist, resolves RUN selectors, and prints.

use crate::args::{CompareArgs, ExportArgs, ReportArgs, RmArgs, RunsArgs, ShowArgs};
use crate::formats::Format;
use crate::output::print;
use anyhow::{bail, Context, Result};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use iolab_report::compare::{self, CompareOptions, Metric};
use iolab_report::export::{self, Exporter, Input};
use iolab_report::fmt::secs;
use iolab_report::fmt::{days_from_civil, utc};
use iolab_report::format::Options;
use iolab_report::html::ReportOptions;
use iolab_store::{ListFilter, Store, StoredRun};
use iolab_workload::model::{now_unix_s, RunKind};
use iolab_workload::Status;
use std::io::Write;
use std::process::ExitCode;

/// `2026-11-20` (UTC midnight), Unix seconds, or an age such as `90m`, `2d`.
fn parse_since(s: &str) -> Result<f64> {
    if let Some(n) = s.strip_suffix('d').and_then(|n| n.parse::<f64>().ok()) {
        return Ok(now_unix_s() - n * 86400.0);
    }
    if let Ok(d) = iolab_spec::parse_duration(s) {
        if s.ends_with(|c: char| c.is_ascii_alphabetic()) {
            return Ok(now_unix_s() - d.as_secs_f64());
        }
    }
    if let Ok(v) = s.parse::<f64>() {
        return Ok(v);
    }
    let parts: Vec<i64> = s.split('-').filter_map(|p| p.parse().ok()).collect();
    if let [y, m, d] = parts[..] {
        if (1..=12).contains(&m) && (1..=31).contains(&d) {
            return Ok(days_from_civil(y, m, d) as f64 * 86400.0);
        }
    }
    bail!("--since `{s}`: write a date (2026-11-20), Unix seconds, or an age (90m, 12h, 2d)")
}

fn labels_text(l: &std::collections::BTreeMap<String, String>) -> String {
    l.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

fn load_all(store: &Store, selectors: &[String]) -> Result<Vec<StoredRun>> {
    let ids = store.resolve_all(selectors)?;
    ids.into_iter().map(|id| store.load(id).map_err(Into::into)).collect()
}

pub fn runs(a: RunsArgs) -> Result<ExitCode> {
    let store = Store::open_existing(&a.db.path())?;
    let status = match a.status.as_deref() {
        None => None,
        Some(s) => Some(s.parse::<Status>().map_err(|e| anyhow::anyhow!("--status: {e}"))?),
    };
    let filter = ListFilter {
        labels: a.labels,
        name_contains: a.name,
        since_unix_s: a.since.as_deref().map(parse_since).transpose()?,
        status,
    };
    let list = store.list(&filter)?;
    let mut out = std::io::stdout().lock();
    if a.output == Format::Json {
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(["id", "started", "kind", "name", "status", "phases", "node", "labels"]);
    for r in &list {
        t.add_row([
            r.id.to_string(),
            utc(r.started_unix_s),
            r.kind.to_string(),
            r.name.clone(),
            r.status.to_string(),
            r.phases.to_string(),
            r.node.clone(),
            labels_text(&r.labels),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{} run(s) in {}", list.len(), store.path().display())?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(a: ShowArgs) -> Result<ExitCode> {
    let store = Store::open_existing(&a.db.path())?;
    let runs = load_all(&store, &a.runs)?;
    if a.output != Format::Human {
        print(a.output, Options::default(), &Input::Stored(&runs))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for r in &runs {
        let h = &r.host;
        writeln!(
            out,
            "run {}: {} {} ({}), started {}",
            r.id,
            r.kind,
            r.name,
            r.result.status,
            utc(r.result.started_unix_s)
        )?;
        if let Some(end) = r.ended_unix_s {
            writeln!(out, "  took {}", secs(end - r.result.started_unix_s))?;
        }
        if !r.labels.is_empty() {
            writeln!(out, "  labels: {}", labels_text(&r.labels))?;
        }
        writeln!(
            out,
            "  host: {} ({} CPUs: {}, {:.1} GiB), kernel {}",
            h.hostname,
            h.cpu_count,
            h.cpu_model,
            h.memory_bytes as f64 / 1073741824.0,
            h.kernel
        )?;
        if !h.fstype.is_empty() {
            let driver =
                if h.device_driver.is_empty() { String::new() } else { format!(", driver {}", h.device_driver) };
            let rot = h.rotational_text();
            let rot = if rot.is_empty() { rot } else { format!(", rotational {rot}") };
            writeln!(
                out,
                "  storage: {} ({}) on {} {}{driver}{rot}, scheduler {}",
                h.fstype, h.mount_options, h.device, h.device_model, h.scheduler
            )?;
        }
        for n in &r.result.nodes {
            let dir = n.dir.as_deref().map(|d| format!(", dir {d}")).unwrap_or_default();
            // The offset's uncertainty (half the round trip), where the run kept it.
            let within = match n.clock_offset_uncertainty_ns {
                0 => String::new(),
                u => format!(" (offset ± {} ms)", iolab_report::fmt::num(u as f64 / 1e6)),
            };
            writeln!(
                out,
                "  node {}: {} ({}, iolab {}), clock offset {} ms, rtt {} ms{dir}{within}",
                n.name,
                n.address,
                n.hostname,
                n.iolab_version,
                iolab_report::fmt::num(n.clock_offset_ns as f64 / 1e6),
                iolab_report::fmt::num(n.rtt_ns as f64 / 1e6)
            )?;
        }
        export::Summary.export(&Input::Run(&r.result), &mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rm(a: RmArgs) -> Result<ExitCode> {
    let store = Store::open_existing(&a.db.path())?;
    let ids = store.resolve_all(&a.runs)?;
    let n = store.remove(&ids)?;
    eprintln!("removed {n} run(s): {}", ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "));
    Ok(ExitCode::SUCCESS)
}

pub fn export(a: ExportArgs) -> Result<ExitCode> {
    if a.histograms && a.format != Format::Json {
        bail!("--histograms goes with --format json; {} has no place for them", a.format.name().to_uppercase());
    }
    let store = Store::open_existing(&a.db.path())?;
    let runs = load_all(&store, &a.runs)?;
    let logs = a.logs.write_bw_log.is_some() || a.logs.write_iops_log.is_some() || a.logs.write_lat_log.is_some();
    if (a.format.is_fio() || logs) && runs.len() != 1 {
        bail!("fio's JSON and logs hold one run; {} runs matched: name one (an id, or last)", runs.len());
    }
    if let Some(r) = runs.first() {
        crate::fio_logs::check(&a.logs, r.result.phases.len())?;
        for path in crate::fio_logs::write(&a.logs, &r.result)? {
            eprintln!("iolab: wrote {}", path.display());
        }
    }
    print(a.format, Options { histograms: a.histograms }, &Input::Stored(&runs))?;
    Ok(ExitCode::SUCCESS)
}

/// The position in `runs` of the first run the baseline selector names.
fn baseline_index(store: &Store, runs: &[StoredRun], sel: Option<&str>) -> Result<Option<usize>> {
    let Some(sel) = sel else { return Ok(None) };
    let ids = store.resolve(sel)?;
    match runs.iter().position(|r| ids.contains(&r.id)) {
        Some(i) => Ok(Some(i)),
        None => bail!("the baseline `{sel}` is not among the runs compared; add it to the list"),
    }
}

pub fn compare(a: CompareArgs) -> Result<ExitCode> {
    let store = Store::open_existing(&a.db.path())?;
    let mut selectors = a.runs.clone();
    if let Some(b) = &a.baseline {
        selectors.insert(0, b.clone());
    }
    let runs = load_all(&store, &selectors)?;
    let metrics = a.metrics.iter().map(|m| Metric::parse(m)).collect::<Result<Vec<_>, _>>()?;
    if !(0.0..100.0).contains(&a.noise) {
        bail!("--noise {}: give a percentage from 0 to 100", a.noise);
    }
    let opts = CompareOptions {
        by: a.by.clone(),
        baseline: baseline_index(&store, &runs, a.baseline.as_deref())?,
        metrics,
        noise: a.noise / 100.0,
        ..Default::default()
    };
    let c = compare::compare(&runs, &opts);
    print(a.output, Options::default(), &Input::Comparison(&c))?;
    if a.output == Format::Human && c.too_few_runs() {
        println!(
            "(repeat each configuration's runs under one --label and compare with --by CONFIG-KEY to get verdicts)"
        );
    }
    if a.fail_on_regression && c.regressions() > 0 {
        eprintln!("iolab: {} metric(s) regressed", c.regressions());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn report(a: ReportArgs) -> Result<ExitCode> {
    let store = Store::open_existing(&a.db.path())?;
    let mut selectors = a.runs.clone();
    if let Some(b) = &a.baseline {
        selectors.insert(0, b.clone());
    }
    let runs = load_all(&store, &selectors)?;
    if !(0.0..100.0).contains(&a.noise) {
        bail!("--noise {}: give a percentage from 0 to 100", a.noise);
    }
    // A survey alone: its locking check (a run of its own) goes into its profile.
    let survey_locking = match runs.as_slice() {
        [r] if r.kind == RunKind::Survey => survey_locking(&store, r),
        _ => None,
    };
    let opts = ReportOptions {
        title: a.title.unwrap_or_default(),
        baseline: baseline_index(&store, &runs, a.baseline.as_deref())?,
        by: a.by,
        noise: Some(a.noise / 100.0),
        survey_locking,
    };
    let path = write_report(&runs, &a.out, opts)?;
    println!("report: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The locking check a survey with `--node` ran: the `locking` scenario stored after it by the
/// same process.
pub fn survey_locking(store: &Store, survey: &StoredRun) -> Option<StoredRun> {
    let f = iolab_store::ListFilter {
        name_contains: Some("locking".into()),
        since_unix_s: Some(survey.result.started_unix_s - 1.0),
        ..Default::default()
    };
    store
        .list(&f)
        .ok()?
        .into_iter()
        .filter(|r| r.kind == RunKind::Scenario && r.id > survey.id)
        .filter_map(|r| store.load(r.id).ok())
        .find(|r| r.pid == survey.pid)
}

/// Render stored runs to a self-contained HTML file; returns its path.
pub fn write_report(runs: &[StoredRun], out: &std::path::Path, opts: ReportOptions) -> Result<std::path::PathBuf> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut html = Vec::new();
    export::Html(opts).export(&Input::Stored(runs), &mut html)?;
    std::fs::write(out, html).with_context(|| format!("writing the report to {}", out.display()))?;
    Ok(out.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 11, 22), 20779);
        assert_eq!(utc(20779.0 * 86400.0 + 3661.0), "2026-11-22 01:01:01 UTC");
        assert_eq!(parse_since("2026-11-22").unwrap(), 20779.0 * 86400.0);
        assert!(parse_since("2d").unwrap() < now_unix_s() - 172_000.0);
        assert!(parse_since("90m").unwrap() > now_unix_s() - 5500.0);
        assert!(parse_since("yesterday").is_err());
    }
}
