//! The commands on stored runs: `runs`, `show`, `rm`, `export`, `compare`, `report`. Each opens
//! the database that must already exist, resolves RUN selectors, and prints.

use crate::args::{CompareArgs, ExportArgs, ReportArgs, RmArgs, RunsArgs, ShowArgs};
use crate::formats::Format;
use crate::outpath::{database_files, OutPath};
use crate::output::print;
use anyhow::{bail, Context, Result};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use iolab_report::compare::{self, CompareOptions, Metric};
use iolab_report::export::{self, Exporter, Input};
use iolab_report::fmt::secs;
use iolab_report::fmt::{days_from_civil, utc};
use iolab_report::format::Options;
use iolab_report::html::ReportOptions;
use iolab_report::text::safe;
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

/// The filters of `runs` (and `db copy`), from their flags.
pub fn list_filter(
    labels: Vec<(String, String)>,
    name: Option<String>,
    since: Option<&str>,
    status: Option<&str>,
) -> Result<ListFilter> {
    let status = match status {
        None => None,
        Some(s) => Some(s.parse::<Status>().map_err(|e| anyhow::anyhow!("--status: {e}"))?),
    };
    Ok(ListFilter { labels, name_contains: name, since_unix_s: since.map(parse_since).transpose()?, status })
}

/// Labels as shown: `k=v k=v`, control characters escaped.
fn labels_text(l: &std::collections::BTreeMap<String, String>) -> String {
    l.iter().map(|(k, v)| format!("{}={}", safe(k), safe(v))).collect::<Vec<_>>().join(" ")
}

/// The database, opened to read (read-only, never migrated); what the user should know of how
/// it was opened goes to stderr.
fn open_read(db: &crate::args::DbArgs) -> Result<Store> {
    let store = Store::open_read(db.target())?;
    if let Some(note) = store.note() {
        errln!("iolab: note: {note}");
    }
    Ok(store)
}

fn load_all(store: &Store, selectors: &[String]) -> Result<Vec<StoredRun>> {
    let ids = store.resolve_all(selectors)?;
    ids.into_iter().map(|id| store.load(id).map_err(Into::into)).collect()
}

pub fn runs(a: RunsArgs) -> Result<ExitCode> {
    let store = open_read(&a.db)?;
    let filter = list_filter(a.labels, a.name, a.since.as_deref(), a.status.as_deref())?;
    let list = store.list(&filter)?;
    let mut out = crate::stdout::out();
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
            safe(&r.name).into_owned(),
            r.status.to_string(),
            r.phases.to_string(),
            safe(&r.node).into_owned(),
            labels_text(&r.labels),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{} run(s) in {}", list.len(), safe(&store.location().to_string()))?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(a: ShowArgs) -> Result<ExitCode> {
    let store = open_read(&a.db)?;
    let runs = load_all(&store, &a.runs)?;
    if a.output != Format::Human {
        print(a.output, Options::default(), &Input::Stored(&runs))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::stdout::out();
    for r in &runs {
        let h = &r.host;
        writeln!(
            out,
            "run {}: {} {} ({}), started {}",
            r.id,
            r.kind,
            safe(&r.name),
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

/// `iolab rm RUN...`: a run still being recorded is refused unless `--force`; more than one
/// run is deleted only once the user says yes (a terminal's answer, or `--yes`).
pub fn rm(a: RmArgs) -> Result<ExitCode> {
    let store = Store::open_existing(a.db.target())?;
    let ids = store.resolve_all(&a.runs)?;
    let listed = store.list(&ListFilter::default())?;
    let running: Vec<&iolab_store::RunSummary> =
        listed.iter().filter(|r| ids.contains(&r.id) && r.status == Status::Running).collect();
    if !running.is_empty() && !a.force {
        let which: Vec<String> = running.iter().map(|r| format!("{} (on {})", r.id, safe(&r.node))).collect();
        bail!(
            "run {} is still running: its iolab process is alive (or on another host, where iolab cannot tell), and deleting it would lose what it goes on saving; wait for it or stop it, or pass --force",
            which.join(", ")
        );
    }
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    if ids.len() > 1 && !a.yes && !confirm(&format!("delete {} runs ({list}) from {}?", ids.len(), store.location()))? {
        bail!("nothing deleted; pass --yes to delete {} runs without being asked", ids.len());
    }
    let n = store.remove(&ids)?;
    errln!("removed {n} run(s): {list}");
    Ok(ExitCode::SUCCESS)
}

/// Ask on the terminal; `false` without one (a script gives --yes).
fn confirm(question: &str) -> Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        errln!("iolab: {question} (not asked: stdin is not a terminal)");
        return Ok(false);
    }
    {
        use std::io::Write as _;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "iolab: {} [y/N] ", iolab_report::text::safe(question));
        let _ = err.flush();
    }
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).context("reading the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

pub fn export(a: ExportArgs) -> Result<ExitCode> {
    if a.histograms && a.format != Format::Json {
        bail!("--histograms goes with --format json; {} has no place for them", a.format.name().to_uppercase());
    }
    let store = open_read(&a.db)?;
    let runs = load_all(&store, &a.runs)?;
    let logs = a.logs.write_bw_log.is_some() || a.logs.write_iops_log.is_some() || a.logs.write_lat_log.is_some();
    if (a.format.is_fio() || logs) && runs.len() != 1 {
        bail!("fio's JSON and logs hold one run; {} runs matched: name one (an id, or last)", runs.len());
    }
    if let Some(r) = runs.first() {
        crate::fio_logs::check_stored(&a.logs, r.result.phases.len())?;
        for path in crate::fio_logs::write(&a.logs, &r.result)? {
            errln!("iolab: wrote {}", path.display());
        }
    }
    print(a.format, Options { histograms: a.histograms }, &Input::Stored(&runs))?;
    Ok(ExitCode::SUCCESS)
}

/// The label selectors among `selectors` (`config=a`, `config=a,proto=C`), each with the runs it
/// names: the configurations `compare` and `report` group by when no `--by` is given.
fn selector_sets(store: &Store, selectors: &[String]) -> Result<Vec<(String, Vec<i64>)>> {
    let mut sets: Vec<(String, Vec<i64>)> = Vec::new();
    for sel in selectors.iter().filter(|s| s.contains('=')) {
        if sets.iter().any(|(name, _)| name == sel) {
            continue;
        }
        sets.push((sel.clone(), store.resolve(sel)?));
    }
    Ok(sets)
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
    let store = open_read(&a.db)?;
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
        sets: if a.by.is_none() { selector_sets(&store, &selectors)? } else { Vec::new() },
        baseline: baseline_index(&store, &runs, a.baseline.as_deref())?,
        metrics,
        noise: a.noise / 100.0,
        ..Default::default()
    };
    let c = compare::compare(&runs, &opts);
    print(a.output, Options::default(), &Input::Comparison(&c))?;
    if a.output == Format::Human && c.too_few_runs() {
        outln!(
            "(repeat each configuration's runs under one --label and name each configuration's label (config=a config=b), or compare with --by CONFIG-KEY, to get verdicts)"
        )?;
    }
    if a.fail_on_regression && c.regressions() > 0 {
        errln!("iolab: {} metric(s) regressed", c.regressions());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn report(a: ReportArgs) -> Result<ExitCode> {
    let store = open_read(&a.db)?;
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
        sets: if a.by.is_none() { selector_sets(&store, &selectors)? } else { Vec::new() },
        by: a.by,
        noise: Some(a.noise / 100.0),
        survey_locking,
    };
    if a.out.as_os_str() == "-" {
        export::Html(opts).export(&Input::Stored(&runs), &mut crate::stdout::out())?;
        return Ok(ExitCode::SUCCESS);
    }
    let out = OutPath { path: &a.out, flag: "-o", overwrite: a.overwrite, inputs: database_files(store.path()) };
    let path = write_report(&runs, &out, opts)?;
    outln!("report: {}", path.display())?;
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

/// Render stored runs to a self-contained HTML file, by the output rule (`crate::outpath`:
/// a file iolab wrote, or `--overwrite`; never an input); returns its path.
pub fn write_report(runs: &[StoredRun], out: &OutPath, opts: ReportOptions) -> Result<std::path::PathBuf> {
    out.check()?;
    let mut html = Vec::new();
    export::Html(opts).export(&Input::Stored(runs), &mut html)?;
    out.write(&html).with_context(|| format!("writing the report to {}", out.path.display()))?;
    Ok(out.path.to_path_buf())
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
