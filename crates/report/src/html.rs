//! The HTML report: one self-contained document (inline CSS, inline SVG charts drawn by
//! plotters, nothing fetched from anywhere) that says what was run where, what came out, how
//! the runs compare, and how each phase went second by second. It prints as it reads.

use crate::charts::{self, Dash, LatSet, Series};
use crate::compare::{
    compare, verdict_words, CompareOptions, Comparison, Verdict, ABSENT, MIN_RUNS_FOR_INTERVAL, TOO_FEW_RUNS,
};
pub use crate::markup::escape;
use crate::markup::figure;
use iolab_model::{ClassTotals, OpClass, PhaseResult, TimelinePoint};
use iolab_store::StoredRun;
use std::collections::BTreeSet;
use std::fmt::Write;

#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    pub title: String,
    /// Index (in the runs given) of the run whose group is the comparison's baseline.
    pub baseline: Option<usize>,
    /// Group runs by this label's value in the comparison.
    pub by: Option<String>,
    /// Without `by`: the label selectors given, each with its runs (see
    /// [`CompareOptions::sets`]).
    pub sets: Vec<(String, Vec<i64>)>,
    /// The comparison's noise threshold as a fraction (`None`: compare's default, 2%).
    pub noise: Option<f64>,
    /// A survey's locking check (`iolab survey --node`), a run of its own: its checks and
    /// verdict go into the survey's profile, and its nodes section beside it.
    pub survey_locking: Option<StoredRun>,
}

impl ReportOptions {
    /// The noise threshold the comparison uses, and the report says it used.
    pub fn noise(&self) -> f64 {
        self.noise.unwrap_or(CompareOptions::default().noise)
    }
}

/// A title for runs when the user gives none: what was run, and how many runs.
pub fn default_title(runs: &[StoredRun]) -> String {
    let names: BTreeSet<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    match (runs.len(), names.len()) {
        (0, _) => "iolab report".into(),
        (1, _) => format!("iolab report: {} (run #{})", runs[0].name, runs[0].id),
        (n, 1) => format!("iolab report: {}, {n} runs", runs[0].name),
        (n, _) => {
            let ids: Vec<String> = runs.iter().map(|r| format!("#{}", r.id)).collect();
            if n <= 6 {
                format!("iolab report: runs {}", ids.join(", "))
            } else {
                format!("iolab report: {n} runs")
            }
        }
    }
}

pub use crate::fmt::utc;
use crate::fmt::{count, fmt_binary as bytes_h, ms, num, secs};

/// How a run is named in legends and tables: `#id` and its labels.
fn run_label(r: &StoredRun, by: Option<&str>) -> String {
    let labels: Vec<String> = match by.and_then(|b| r.labels.get(b).map(|v| (b, v))) {
        Some((b, v)) => vec![format!("{b}={v}")],
        None => r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    };
    if labels.is_empty() {
        format!("#{}", r.id)
    } else {
        format!("#{} {}", r.id, labels.join(","))
    }
}

/// A phase name as it appears in a chart marker: letters, digits, `-` and `_`.
fn slug(s: &str) -> String {
    let t: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    if t.is_empty() {
        "phase".into()
    } else {
        t
    }
}

const CSS: &str = r#"
:root { --ink: #1d2329; --muted: #5b6670; --rule: #d5dae0; --head: #f2f4f7; --good: #1a7f37; --bad: #c62828; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1400px; padding: 24px 28px 48px; background: #fff; color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--rule); }
h3 { font-size: 16px; margin: 22px 0 8px; }
p.meta, p.note, .muted { color: var(--muted); }
p.note { font-size: 13px; margin: 6px 0; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; margin: 6px 0 10px; }
th, td { border: 1px solid var(--rule); padding: 3px 8px; vertical-align: top; }
th { background: var(--head); text-align: left; font-weight: 600; }
td.n { text-align: right; white-space: nowrap; }
table.facts th { white-space: nowrap; }
table.facts td { max-width: 420px; overflow-wrap: anywhere; }
.error { color: var(--bad); font-weight: 600; }
.status-complete { color: var(--good); }
.status-failed, .status-interrupted { color: var(--bad); }
.label { display: inline-block; background: var(--head); border: 1px solid var(--rule); border-radius: 3px;
  padding: 0 5px; margin: 1px 2px 1px 0; font-size: 12px; }
.pct { color: var(--muted); }
.verdict { font-weight: 600; white-space: nowrap; }
.v-improved { color: var(--good); }
.v-regressed { color: var(--bad); }
.v-noise { color: var(--muted); font-weight: normal; }
.flag { color: var(--bad); font-weight: 700; }
td.base { background: #fafbfc; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px 18px; }
figure.chart { margin: 0; border: 1px solid var(--rule); padding: 6px; break-inside: avoid; page-break-inside: avoid; }
figure.chart figcaption { font-size: 12px; color: var(--muted); padding: 2px 4px 0; }
svg.plot { display: block; width: 100%; height: auto; }
div.locking { display: contents; }
div.scenario-verdict { border-left: 3px solid var(--rule); padding: 2px 10px; font-size: 13px; min-width: 0; overflow-wrap: anywhere; }
footer { margin-top: 36px; font-size: 12px; color: var(--muted); }
@page { size: A4; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; background: #fff !important; color: #000; }
  h2 { break-after: avoid; page-break-after: avoid; }
  h3 { break-after: avoid; page-break-after: avoid; }
  table { font-size: 8pt; break-inside: auto; }
  th, td { padding: 1px 4px; }
  tr { break-inside: avoid; page-break-inside: avoid; }
  th, td.base, .label { background: #fff !important; }
  .wide { overflow: visible; }
  .charts { display: block; }
  figure.chart { width: 100%; max-width: 13cm; margin: 0 auto 10px; break-inside: avoid; page-break-inside: avoid; }
}
"#;

/// Render the report.
pub fn render(runs: &[StoredRun], opts: &ReportOptions) -> String {
    let title = if opts.title.trim().is_empty() { default_title(runs) } else { opts.title.clone() };
    let now = iolab_model::now_unix_s();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"iolab {v}\">\n<title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <header>\n<h1>{t}</h1>\n<p class=\"meta\">Generated {g} by iolab {v} &middot; {n} run{s}</p>\n</header>\n",
        t = escape(&title),
        g = utc(now),
        v = escape(env!("CARGO_PKG_VERSION")),
        n = runs.len(),
        s = if runs.len() == 1 { "" } else { "s" },
    );
    if runs.is_empty() {
        h.push_str("<p class=\"note\">No runs to report.</p>\n</body>\n</html>\n");
        return h;
    }
    // A survey opens with a picture of its profile, then the profile and findings the terminal
    // showed; two or more surveys side by side in one picture, then each one's profile.
    let is_survey =
        |r: &StoredRun| r.kind == iolab_model::RunKind::Survey || crate::survey::is_survey(&r.result.phases);
    if runs.iter().all(is_survey) {
        if let [r] = runs {
            profile_section(&mut h, runs, &r.result.phases, &r.result.plan.phases, opts.survey_locking.as_ref());
        } else {
            h.push_str("<section id=\"profiles\">\n<h2>Profiles</h2>\n");
            profile_picture(&mut h, runs, opts);
            for r in runs {
                let _ = writeln!(h, "<h3>{}</h3>", escape(&run_label(r, opts.by.as_deref())));
                profile_table(&mut h, &r.result.phases, &r.result.plan.phases);
            }
            h.push_str("</section>\n");
        }
    }
    runs_section(&mut h, runs);
    summary_section(&mut h, runs, opts);
    crate::html_nodes::section(&mut h, runs);
    crate::scenario::alone_section(&mut h, runs);
    if let Some(l) = &opts.survey_locking {
        crate::html_nodes::section(&mut h, std::slice::from_ref(l));
    }
    if runs.len() >= 2 {
        let c = compare(
            runs,
            &CompareOptions {
                by: opts.by.clone(),
                sets: opts.sets.clone(),
                baseline: opts.baseline,
                noise: opts.noise(),
                ..Default::default()
            },
        );
        comparison_section(&mut h, &c, opts);
    }
    charts_section(&mut h, runs, opts);
    let _ = write!(
        h,
        "<footer>iolab {} &middot; MB/s = 10<sup>6</sup> bytes per second, MiB/s = 2<sup>20</sup> bytes per second; \
         latencies are per operation, from HDR histograms.</footer>\n</body>\n</html>\n",
        escape(env!("CARGO_PKG_VERSION"))
    );
    // Whatever a section or a chart's SVG took from names and labels, the page carries no
    // control character (each section escapes its text; this holds it for all).
    if h.chars().any(|c| crate::text::html_safe(c) != c) {
        return h.chars().map(crate::text::html_safe).collect();
    }
    h
}

/// The surveys' profile as one picture (`crate::profile_chart`): each step's figure with its
/// p99, a bar per survey.
fn profile_picture(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    let steps: Vec<Vec<(String, Option<crate::survey::Figure>)>> =
        runs.iter().map(|r| crate::survey::figures(&r.result.phases)).collect();
    let surveys: Vec<crate::profile_chart::Survey> = runs
        .iter()
        .zip(&steps)
        .map(|(r, s)| {
            // Without labels a survey is told apart by where it ran (its name is its directory).
            let mut name = run_label(r, opts.by.as_deref());
            if r.labels.is_empty() && !r.name.is_empty() {
                name = format!("{name} {}", r.name);
            }
            crate::profile_chart::Survey { name, steps: s }
        })
        .collect();
    let svg = crate::profile_chart::svg(&surveys);
    let caption = if runs.len() > 1 {
        "Each step's figure (throughput, IOPS, commits, transactions or messages) with its p99 latency, a bar per survey; each row to its own scale, the longest bar the row's best."
    } else {
        "Each step's figure (throughput, IOPS, commits, transactions or messages) with its p99 latency."
    };
    figure(h, "profile", Some(Ok(svg)), caption, "");
}

/// The survey's one-page profile (a picture of its steps, then step, result, system), its
/// findings and its locking check, as the terminal prints them.
fn profile_section(
    h: &mut String,
    runs: &[StoredRun],
    phases: &[PhaseResult],
    plan: &[iolab_spec::Phase],
    locking: Option<&StoredRun>,
) {
    h.push_str("<section id=\"profile\">\n<h2>Profile</h2>\n");
    profile_picture(h, runs, &ReportOptions::default());
    profile_table(h, phases, plan);
    profile_locking(h, locking);
    h.push_str("</section>\n");
}

/// A survey's table of steps and its findings.
fn profile_table(h: &mut String, phases: &[PhaseResult], plan: &[iolab_spec::Phase]) {
    h.push_str("<div class=\"wide\"><table class=\"summary\">\n<tr><th>step</th><th>result</th><th>system</th></tr>\n");
    for [step, result, system] in crate::survey::rows(phases) {
        let _ =
            writeln!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", escape(&step), escape(&result), escape(&system));
    }
    h.push_str("</table></div>\n");
    let findings = crate::survey::findings(phases, plan);
    if !findings.is_empty() {
        h.push_str("<h3>Findings</h3>\n<ul class=\"findings\">\n");
        for f in findings {
            let _ = writeln!(h, "<li>{}</li>", escape(&f));
        }
        h.push_str("</ul>\n");
    }
}

/// The locking check a survey with `--node` ran, beside its profile.
fn profile_locking(h: &mut String, locking: Option<&StoredRun>) {
    if let Some(l) = locking {
        let _ = writeln!(
            h,
            "<h3 id=\"locking\">The locking check</h3>\n<p class=\"note\">Run #{}: node A alone, node B alone, two writers on A, A and B at once (each node's figures and the bars in Nodes below).</p>\n\
             <div class=\"wide\"><table class=\"summary\">\n<tr><th>check</th><th>all nodes</th><th>each node</th></tr>",
            l.id
        );
        for [step, all, per] in crate::survey::locking_rows(&l.result) {
            let _ =
                writeln!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", escape(&step), escape(&all), escape(&per));
        }
        h.push_str("</table></div>\n<ul class=\"findings\">\n");
        for line in crate::survey::locking_verdict(&l.result) {
            let _ = writeln!(h, "<li>{}</li>", escape(&line));
        }
        h.push_str("</ul>\n");
    }
}

/// The runs' facts: with several runs, what they all share once (host, kernel, device...),
/// then a column per run with only what differs between them.
fn runs_section(h: &mut String, runs: &[StoredRun]) {
    let mut rows: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut row = |_: &mut String, name: &'static str, cell: &dyn Fn(&StoredRun) -> String| {
        rows.push((name, runs.iter().map(cell).collect()));
    };
    let text = |s: &str| if s.is_empty() { "<span class=\"muted\">-</span>".to_string() } else { escape(s) };
    row(h, "name", &|r| text(&r.name));
    row(h, "kind", &|r| text(r.kind.as_str()));
    row(h, "status", &|r| {
        let st = r.result.status.as_str();
        let mut s = format!("<span class=\"status-{st}\">{st}</span>");
        if let Some(e) = &r.result.error {
            let _ = write!(s, "<br><span class=\"error\">{}</span>", escape(e));
        }
        s
    });
    row(h, "labels", &|r| {
        if r.labels.is_empty() {
            return text("");
        }
        r.labels.iter().map(|(k, v)| format!("<span class=\"label\">{}={}</span>", escape(k), escape(v))).collect()
    });
    row(h, "started", &|r| escape(&utc(r.result.started_unix_s)));
    row(h, "duration", &|r| match r.ended_unix_s {
        Some(e) if e >= r.result.started_unix_s => secs(e - r.result.started_unix_s),
        _ => {
            let s: f64 = r.result.phases.iter().map(|p| p.elapsed_s).sum();
            format!("{} measured", secs(s))
        }
    });
    row(h, "phases", &|r| {
        let names: Vec<String> = r.result.phases.iter().map(|p| escape(&p.name)).collect();
        if names.is_empty() {
            text("")
        } else {
            names.join(", ")
        }
    });
    row(h, "iolab", &|r| text(&r.result.iolab_version));
    row(h, "host", &|r| text(&r.host.hostname));
    row(h, "kernel", &|r| text(&r.host.kernel));
    row(h, "CPU", &|r| {
        if r.host.cpu_model.is_empty() {
            format!("{} CPUs", r.host.cpu_count)
        } else {
            format!("{} &times; {}", r.host.cpu_count, escape(&r.host.cpu_model))
        }
    });
    row(h, "memory", &|r| if r.host.memory_bytes > 0 { bytes_h(r.host.memory_bytes as f64) } else { text("") });
    row(h, "filesystem", &|r| text(&r.host.fstype));
    row(h, "mount options", &|r| text(&r.host.mount_options));
    row(h, "device", &|r| {
        let mut s = text(&r.host.device);
        let about: Vec<&str> = [&r.host.device_vendor, &r.host.device_model]
            .into_iter()
            .map(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .collect();
        if !about.is_empty() {
            let _ = write!(s, " ({})", escape(&about.join(" ")));
        }
        if !r.host.device_driver.is_empty() {
            let _ = write!(s, ", driver {}", escape(&r.host.device_driver));
        }
        s
    });
    row(h, "rotational", &|r| text(&r.host.rotational_text()));
    row(h, "scheduler", &|r| text(&r.host.scheduler));
    h.push_str("<section id=\"runs\">\n<h2>Runs</h2>\n");
    let shared = |cells: &Vec<String>| runs.len() > 1 && cells.iter().all(|c| c == &cells[0]);
    if runs.len() > 1 && rows.iter().any(|(_, c)| shared(c)) {
        let _ = writeln!(h, "<p class=\"note\">What all {} runs share:</p>", runs.len());
        h.push_str("<div class=\"wide\"><table class=\"facts shared\">\n");
        for (name, cells) in rows.iter().filter(|(_, c)| shared(c)) {
            let _ = writeln!(h, "<tr><th>{name}</th><td>{}</td></tr>", cells[0]);
        }
        h.push_str("</table></div>\n<p class=\"note\">What differs from run to run:</p>\n");
    }
    h.push_str("<div class=\"wide\"><table class=\"facts\">\n<tr><th></th>");
    for r in runs {
        let _ = write!(h, "<th>run #{}</th>", r.id);
    }
    h.push_str("</tr>\n");
    for (name, cells) in rows.iter().filter(|(_, c)| !shared(c)) {
        let _ = write!(h, "<tr><th>{name}</th>");
        for c in cells {
            let _ = write!(h, "<td>{c}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n</section>\n");
}

fn dir_cells(h: &mut String, d: &ClassTotals) {
    if d.ops == 0 {
        h.push_str(&"<td class=\"n muted\">-</td>".repeat(5));
        return;
    }
    let _ = write!(
        h,
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
        num(d.bw_bytes / 1e6),
        num(d.bw_bytes / 1048576.0),
        num(d.iops),
        ms(d.lat_ns.p50),
        ms(d.lat_ns.p99)
    );
}

fn summary_section(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    h.push_str(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"wide\"><table class=\"summary\">\n\
         <tr><th rowspan=\"2\">run</th><th rowspan=\"2\">phase</th><th rowspan=\"2\">elapsed s</th>\
         <th colspan=\"5\">read</th><th colspan=\"5\">write</th><th colspan=\"2\">fsync</th></tr>\n<tr>",
    );
    for _ in 0..2 {
        h.push_str("<th>MB/s</th><th>MiB/s</th><th>IOPS</th><th>p50 ms</th><th>p99 ms</th>");
    }
    h.push_str("<th>count</th><th>p99 ms</th></tr>\n");
    for r in runs {
        if r.result.phases.is_empty() {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td colspan=\"15\" class=\"muted\">no phase was measured</td></tr>",
                escape(&run_label(r, opts.by.as_deref()))
            );
        }
        for p in &r.result.phases {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}{}</td><td class=\"n\">{:.1}</td>",
                escape(&run_label(r, opts.by.as_deref())),
                escape(&p.name),
                match (p.nodes.len(), p.interrupted) {
                    (0, false) => String::new(),
                    (0, true) => " <span class=\"error\">(interrupted)</span>".to_string(),
                    (n, false) => format!(" <span class=\"muted\">({n} nodes)</span>"),
                    (n, true) =>
                        format!(" <span class=\"muted\">({n} nodes)</span> <span class=\"error\">(interrupted)</span>"),
                },
                p.elapsed_s
            );
            dir_cells(h, p.total.read());
            dir_cells(h, p.total.write());
            if p.total.sync().ops == 0 {
                h.push_str(&"<td class=\"n muted\">-</td>".repeat(2));
            } else {
                let _ = write!(
                    h,
                    "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                    count(p.total.sync().ops as f64),
                    ms(p.total.sync().lat_ns.p99)
                );
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table></div>\n");
    other_classes(h, runs, opts);
    let validated: Vec<(String, String, &iolab_model::VerifyResult)> = runs
        .iter()
        .flat_map(|r| r.result.phases.iter().map(move |p| (r, p)))
        .filter_map(|(r, p)| p.verify.as_ref().map(|v| (run_label(r, opts.by.as_deref()), p.name.clone(), v)))
        .collect();
    crate::verify::html(h, &validated);
    workload_figures(h, runs, opts);
    findings_list(h, runs, opts);
    h.push_str("</section>\n");
}

/// A personality's own figures (PostMark's transactions per second, maildir's messages per
/// minute, bonnie++'s rates...), as `phases[].workload` has them: per phase, a row per figure
/// and a column per run; where a phase mixes personalities, each job's, named `job: figure`.
/// Then the phase's notes.
fn workload_figures(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    let figures_of = |p: &PhaseResult| -> Vec<(String, f64)> {
        if !p.workload.is_empty() {
            return p.workload.iter().map(|(k, v)| (k.clone(), *v)).collect();
        }
        p.jobs.iter().flat_map(|j| j.workload.iter().map(move |(k, v)| (format!("{}: {k}", j.name), *v))).collect()
    };
    let mut phases: Vec<&str> = Vec::new();
    for r in runs {
        for p in &r.result.phases {
            if !figures_of(p).is_empty() && !phases.contains(&p.name.as_str()) {
                phases.push(&p.name);
            }
        }
    }
    for name in phases {
        let cols: Vec<(&StoredRun, &PhaseResult)> =
            runs.iter().filter_map(|r| r.result.phases.iter().find(|p| p.name == name).map(|p| (r, p))).collect();
        let values: Vec<Vec<(String, f64)>> = cols.iter().map(|(_, p)| figures_of(p)).collect();
        let mut rows: Vec<&str> = Vec::new();
        for v in &values {
            for (k, _) in v {
                if !rows.contains(&k.as_str()) {
                    rows.push(k);
                }
            }
        }
        let _ = write!(
            h,
            "<h3>Workload figures: {}</h3>\n<div class=\"wide\"><table class=\"classes\">\n<tr><th>figure</th>",
            escape(name)
        );
        for (r, _) in &cols {
            let _ = write!(h, "<th>{}</th>", escape(&run_label(r, opts.by.as_deref())));
        }
        h.push_str("</tr>\n");
        // In words (`files created per second, mixed phase`), the figure's JSON name beside
        // them as the cell's title, for those who script against it.
        let workload = cols.first().and_then(|(r, _)| {
            let ph = r.result.plan.phases.iter().find(|x| x.name == name)?;
            ph.jobs.iter().find_map(|j| j.workload.kind().map(|k| k.as_str()))
        });
        for k in rows {
            let said = match k.split_once(": ") {
                Some((job, fig)) => format!("{job}: {}", figure_words(workload, fig)),
                None => figure_words(workload, k),
            };
            let _ = write!(h, "<tr><td title=\"{}\">{}</td>", escape(k), escape(&said));
            for v in &values {
                match v.iter().find(|(n, _)| n == k) {
                    Some((_, x)) if x.fract() == 0.0 && x.abs() < 1e15 => {
                        let _ = write!(h, "<td class=\"n\">{}</td>", count(*x));
                    }
                    Some((_, x)) => {
                        let _ = write!(h, "<td class=\"n\">{}</td>", num(*x));
                    }
                    None => h.push_str("<td class=\"n muted\">-</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
        for (_, p) in &cols {
            for n in &p.notes {
                let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(n));
            }
        }
    }
}

/// A personality's figure in words (its own, else the plain rule of
/// [`iolab_spec::figures::words`]).
fn figure_words(workload: Option<&str>, name: &str) -> String {
    iolab_spec::figures::words(iolab_model::figures::PERSONALITIES, workload, name)
}

/// What the terminal prints under each phase (`system::findings`, the fidelity rule's findings,
/// reads in kept holes, the limit line), so the report says what stands out too. A finding
/// of one kind repeated over runs (the same phase, the same device, the same limit) is said
/// once with the runs named. A survey's are in its profile, folded, and not repeated.
fn findings_list(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    // (phase, kind) -> the runs that had it, each with its sentence.
    type Said = ((String, String), Vec<(String, String)>);
    let mut found: Vec<Said> = Vec::new();
    let mut add = |phase: &str, kind: String, run: String, text: String| {
        let key = (phase.to_string(), kind);
        match found.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push((run, text)),
            None => found.push((key, vec![(run, text)])),
        }
    };
    for r in
        runs.iter().filter(|r| !(r.kind == iolab_model::RunKind::Survey || crate::survey::is_survey(&r.result.phases)))
    {
        let label = run_label(r, opts.by.as_deref());
        for p in &r.result.phases {
            let plan = r.result.plan.phases.iter().find(|ph| ph.name == p.name);
            for f in p.system.iter().flat_map(crate::system::findings) {
                let kind = match &f {
                    crate::system::Finding::Saturated { device, .. } => format!("busy {device}"),
                    crate::system::Finding::IoWait(_) => "iowait".to_string(),
                    crate::system::Finding::LinkNear(t) => format!("link {}", t.split(' ').next().unwrap_or("")),
                };
                add(&p.name, kind, label.clone(), f.text());
            }
            for f in crate::system::fidelity(p, plan.map(|ph| ph.jobs.as_slice()).unwrap_or(&[])) {
                let kind = format!(
                    "fidelity {} {} {}",
                    f.kind.as_str(),
                    f.direction.as_str(),
                    f.node.as_deref().unwrap_or("")
                );
                add(&p.name, kind, label.clone(), f.said());
            }
            if let Some(line) = crate::system::holes_line(p) {
                add(&p.name, "holes".into(), label.clone(), line);
            }
            let bounds: Vec<(Option<&str>, &iolab_model::Bound)> = if p.nodes.is_empty() {
                p.limit.iter().map(|b| (None, b)).collect()
            } else {
                p.nodes.iter().filter_map(|n| n.limit.as_ref().map(|b| (Some(n.name.as_str()), b))).collect()
            };
            for (node, b) in bounds {
                let kind =
                    format!("limit {} {} {}", b.by.as_str(), b.subject.as_deref().unwrap_or(""), node.unwrap_or(""));
                add(&p.name, kind, label.clone(), b.line(node));
            }
        }
    }
    if found.is_empty() {
        return;
    }
    h.push_str("<h3>Findings</h3>\n<ul class=\"findings\">\n");
    for ((phase, _), v) in found {
        let (first_run, first_text) = &v[0];
        if v.len() == 1 {
            let _ = writeln!(h, "<li>{}, phase {}: {}</li>", escape(first_run), escape(&phase), escape(first_text));
        } else {
            let names: Vec<&str> = v.iter().map(|(r, _)| r.as_str()).collect();
            let _ = writeln!(
                h,
                "<li>phase {}, in {} runs ({}): {} <span class=\"muted\">(the figures of {}; the others alike)</span></li>",
                escape(&phase),
                v.len(),
                escape(&names.join(", ")),
                escape(first_text),
                escape(first_run)
            );
        }
    }
    h.push_str("</ul>\n");
}

/// Operations other than reads, writes and flushes (creates, renames, ...), when any run has them.
fn other_classes(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    let other = |c: OpClass| !matches!(c, OpClass::Read | OpClass::Write | OpClass::Sync);
    let rows: Vec<(&StoredRun, &PhaseResult, OpClass, &ClassTotals)> = runs
        .iter()
        .flat_map(|r| r.result.phases.iter().map(move |p| (r, p)))
        .flat_map(|(r, p)| p.total.iter().filter(|(c, _)| other(*c)).map(move |(c, t)| (r, p, c, t)))
        .collect();
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<h3>Other operations</h3>\n<div class=\"wide\"><table class=\"classes\">\n<tr><th>run</th><th>phase</th>\
         <th>operation</th><th>count</th><th>per s</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr>\n",
    );
    for (r, p, c, t) in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&run_label(r, opts.by.as_deref())),
            escape(&p.name),
            c.as_str(),
            count(t.ops as f64),
            num(t.iops),
            ms(t.lat_ns.p50),
            ms(t.lat_ns.p99),
            ms(t.lat_ns.max)
        );
    }
    h.push_str("</table></div>\n");
}

fn comparison_section(h: &mut String, c: &Comparison, opts: &ReportOptions) {
    h.push_str("<section id=\"comparison\">\n<h2>Comparison</h2>\n");
    let _ = writeln!(
        h,
        "<p class=\"note\">Each group's mean{}, as a percentage of the baseline <b>{}</b> (of the values as printed). A verdict needs {MIN_RUNS_FOR_INTERVAL} or more runs \
         on each side: a change is <span class=\"verdict v-improved\">improved</span> or \
         <span class=\"verdict v-regressed\">regressed</span> when Welch's t-test finds it significant and its 95% \
         confidence interval lies wholly beyond &plusmn;{n}%; <span class=\"verdict v-noise\">no change</span> when the \
         interval lies wholly inside &plusmn;{n}%; otherwise it is <span class=\"verdict v-noise\">inconclusive</span>, \
         with the interval and about how many more runs of each configuration would decide it. A cell marked \
         <span class=\"flag\">*</span> had a finding: its figure is not (all) what the storage saw (listed below).</p>",
        match (&opts.by, opts.sets.is_empty()) {
            (Some(b), _) => format!(" (runs grouped by <code>{}</code>)", escape(b)),
            (None, false) => " (runs grouped by the selectors given)".to_string(),
            (None, true) => String::new(),
        },
        c.groups.get(c.baseline).map(|g| escape(&g.key)).unwrap_or_default(),
        n = (opts.noise() * 1000.0).round() / 10.0
    );
    if c.rows.is_empty() {
        h.push_str("<p class=\"note\">The baseline has nothing to compare.</p>\n</section>\n");
        return;
    }
    h.push_str("<div class=\"wide\"><table class=\"comparison\">\n<tr><th>phase</th><th>metric</th>");
    for (i, g) in c.groups.iter().enumerate() {
        let ids: Vec<String> = g.run_ids.iter().map(|id| format!("#{id}")).collect();
        let _ = write!(
            h,
            "<th>{}{}<br><span class=\"muted\">n={} ({})</span></th>",
            escape(&g.key),
            if i == c.baseline { " (baseline)" } else { "" },
            g.run_ids.len(),
            ids.join(" ")
        );
    }
    h.push_str("</tr>\n");
    for r in &c.rows {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td>", escape(&r.phase), escape(&r.metric.name()));
        for (i, cell) in r.cells.iter().enumerate() {
            let base = i == c.baseline;
            let cls = if base { "n base" } else { "n" };
            let Some(cell) = cell else {
                let _ = write!(h, "<td class=\"{cls} muted\">{ABSENT}</td>");
                continue;
            };
            let _ = write!(h, "<td class=\"{cls}\">{}", num(cell.mean));
            if !base {
                if let Some(p) = cell.pct_of_baseline {
                    let _ = write!(h, " <span class=\"pct\">({p:.1}%)</span>");
                }
                if let Some(v) = cell.verdict {
                    let cls = match v {
                        Verdict::Improved => "v-improved",
                        Verdict::Regressed => "v-regressed",
                        Verdict::NoChange | Verdict::Inconclusive => "v-noise",
                    };
                    let _ = write!(h, " <span class=\"verdict {cls}\">{}</span>", escape(&verdict_words(cell, v)));
                }
            }
            if !cell.findings.is_empty() {
                let _ = write!(h, " <span class=\"flag\" title=\"{}\">*</span>", escape(&cell.findings.join("; ")));
            }
            h.push_str("</td>");
        }
        h.push_str("</tr>\n");
    }
    let regressions = c.regressions();
    h.push_str("</table></div>\n");
    let notes = c.finding_notes();
    if !notes.is_empty() {
        h.push_str("<p class=\"note\"><span class=\"flag\">*</span> Not (all) what the storage saw:</p>\n<ul class=\"findings\">\n");
        for n in notes {
            let _ = writeln!(h, "<li>{}</li>", escape(&n));
        }
        h.push_str("</ul>\n");
    }
    if c.too_few_runs() {
        let _ = writeln!(
            h,
            "<p class=\"note\">Some changes have no verdict: {TOO_FEW_RUNS} (a verdict needs {MIN_RUNS_FOR_INTERVAL} or more runs of each configuration).</p>"
        );
    }
    let _ = write!(
        h,
        "<p class=\"note\">{}</p>\n</section>\n",
        match regressions {
            0 => "No regressions.".to_string(),
            1 => "<span class=\"verdict v-regressed\">1 regression.</span>".to_string(),
            n => format!("<span class=\"verdict v-regressed\">{n} regressions.</span>"),
        }
    );
}

/// A per-second quantity of a phase's timeline, as (end of the second, value per second). The
/// last second is usually cut short by the phase's end: its value is scaled to its length and
/// plotted where the phase ended, or left out when it is under a quarter of a second.
fn per_second(p: &PhaseResult, f: &dyn Fn(&TimelinePoint) -> f64) -> Vec<(f64, f64)> {
    p.timeline
        .iter()
        .filter_map(|t| {
            let start = (t.t_s - 1.0).max(0.0);
            if p.elapsed_s > start && p.elapsed_s < t.t_s {
                let len = p.elapsed_s - start;
                (len >= 0.25).then(|| (p.elapsed_s, f(t) / len))
            } else {
                Some((t.t_s, f(t)))
            }
        })
        .collect()
}

type CpuField = fn(&iolab_sysstat::CpuPct) -> f64;

/// The runs that have a phase, with the phase.
fn with_phase<'a>(runs: &'a [StoredRun], name: &str) -> Vec<(usize, &'a StoredRun, &'a PhaseResult)> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, r)| r.result.phases.iter().find(|p| p.name == name).map(|p| (i, r, p)))
        .collect()
}

fn charts_section(h: &mut String, runs: &[StoredRun], opts: &ReportOptions) {
    let mut phases: Vec<&str> = Vec::new();
    for r in runs {
        for p in &r.result.phases {
            if !phases.contains(&p.name.as_str()) {
                phases.push(&p.name);
            }
        }
    }
    h.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n");
    if phases.is_empty() {
        h.push_str("<p class=\"note\">No phases, no charts.</p>\n");
    }
    let mut slugs: Vec<String> = Vec::new();
    for name in phases {
        let mut s = slug(name);
        if slugs.contains(&s) {
            s = format!("{s}-{}", slugs.len() + 1);
        }
        slugs.push(s.clone());
        let _ = write!(h, "<h3>Phase {}</h3>\n<div class=\"charts\">\n", escape(name));
        phase_charts(h, &s, name, &with_phase(runs, name), opts);
        h.push_str("</div>\n");
    }
    h.push_str("</section>\n");
}

fn phase_charts(
    h: &mut String,
    slug: &str,
    name: &str,
    rp: &[(usize, &StoredRun, &PhaseResult)],
    opts: &ReportOptions,
) {
    let c = PhaseCharts { slug, name, ph: escape(name), rp, by: opts.by.as_deref(), multi: rp.len() > 1 };
    c.rates(h);
    c.latency(h);
    c.steady(h);
    let sys = c.sampled();
    c.cpu(h, &sys);
    c.disks(h, &sys);
}

/// A run's system summary with samples, and the run's position among the phase's runs.
type Sampled<'a> = Vec<(usize, &'a StoredRun, &'a iolab_sysstat::SystemResult)>;

/// One phase's charts across the runs that have it: each run in its own colour and dash when
/// there are several.
struct PhaseCharts<'a> {
    slug: &'a str,
    name: &'a str,
    /// The phase's name escaped for HTML.
    ph: String,
    rp: &'a [(usize, &'a StoredRun, &'a PhaseResult)],
    by: Option<&'a str>,
    multi: bool,
}

impl PhaseCharts<'_> {
    fn label(&self, r: &StoredRun) -> String {
        run_label(r, self.by)
    }

    /// One line per run of a per-second quantity.
    fn per_sec(&self, f: &dyn Fn(&TimelinePoint) -> f64) -> Vec<Series> {
        self.rp
            .iter()
            .enumerate()
            .map(|(k, (_, r, p))| {
                let (color, dash) = charts::run_style(k);
                Series { label: self.label(r), points: per_second(p, f), color, dash }
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    }

    /// The steady-state convergence of each run that judged the phase (issue 29): every round,
    /// the window shaded, the limits band, the fitted line; the verdict under it.
    fn steady(&self, h: &mut String) {
        for (k, (_, r, p)) in self.rp.iter().enumerate() {
            let Some(ss) = &p.steady_state else { continue };
            let what = if ss.method == "snia" { "round" } else { "sample" };
            let values: Vec<(f64, f64)> =
                ss.values.iter().enumerate().map(|(i, v)| ((ss.first + i as u64) as f64, *v)).collect();
            let who = if self.multi { format!(" ({})", escape(&self.label(r))) } else { String::new() };
            let verdict: Vec<String> = crate::summary::steady_lines(ss).iter().map(|l| escape(l)).collect();
            figure(
                h,
                &format!("steady-{}-{k}", self.slug),
                Some(charts::convergence_chart(
                    &format!("{}: steady state", self.name),
                    what,
                    &format!("{} ({})", ss.tracked, ss.unit),
                    &values,
                    ss.window.as_ref(),
                )),
                &format!("Steady state of phase {}{who}: {}", self.ph, verdict.join("<br>")),
                &format!("Phase {}: no steady-state rounds.", self.ph),
            );
        }
    }

    /// Throughput and IOPS, one line per run.
    fn rates(&self, h: &mut String) {
        let (name, ph, slug) = (self.name, &self.ph, self.slug);
        let tput = self.per_sec(&|t| (t.read_bytes + t.write_bytes) as f64 / 1e6);
        let log = charts::wants_log(&tput);
        let log_note = if log {
            format!(
                " The runs differ by {:.0}&times;, so the axis is logarithmic (a second with no I/O sits on its floor).",
                charts::spread(&tput)
            )
        } else {
            String::new()
        };
        figure(
            h,
            &format!("throughput-{slug}"),
            (!tput.is_empty()).then(|| {
                let title = format!("{name}: throughput");
                if log {
                    charts::line_chart_log(&title, "time (s)", "MB/s (log scale)", &tput)
                } else {
                    charts::line_chart(&title, "time (s)", "MB/s", &tput, None)
                }
            }),
            &format!(
                "Read + write MB/s (10<sup>6</sup> B/s) in each second of phase {ph}{}; a last, partial second is scaled to its length.{log_note}",
                if self.multi { ", per run" } else { "" }
            ),
            &format!("Phase {ph}: no per-second timeline, so no throughput chart."),
        );
        let iops = self.per_sec(&|t| (t.read_ops + t.write_ops) as f64);
        let log = charts::wants_log(&iops);
        figure(
            h,
            &format!("iops-{slug}"),
            (!iops.is_empty()).then(|| {
                let title = format!("{name}: IOPS");
                if log {
                    charts::line_chart_log(&title, "time (s)", "IOPS (log scale)", &iops)
                } else {
                    charts::line_chart(&title, "time (s)", "IOPS", &iops, None)
                }
            }),
            &format!(
                "Reads + writes completed in each second of phase {ph}.{}",
                if log { " The runs differ by more than 10&times;, so the axis is logarithmic." } else { "" }
            ),
            &format!("Phase {ph}: no per-second timeline, so no IOPS chart."),
        );
    }

    /// Latency percentiles: one set per run and operation class. With several runs each run
    /// keeps its colour and the class takes the dash; one run's classes take the colours.
    fn latency(&self, h: &mut String) {
        let (name, ph, slug, multi) = (self.name, &self.ph, self.slug, self.multi);
        let mut classes: Vec<OpClass> = Vec::new();
        for (c, _) in self.rp.iter().flat_map(|(_, _, p)| p.total.iter()) {
            if !classes.contains(&c) {
                classes.push(c);
            }
        }
        let mut sets = Vec::new();
        for (k, (_, r, p)) in self.rp.iter().enumerate() {
            for (class, c) in p.total.iter() {
                let (d, l) = (class.index(), &c.lat_ns);
                let dir = if class == OpClass::Sync { "fsync" } else { class.as_str() };
                let v = |ns: u64| ns as f64 / 1e6;
                let nth_class = classes.iter().position(|c| *c == class).unwrap_or(0);
                let (color, dash) = match (multi, classes.len()) {
                    (false, _) => (d, Dash::Solid),
                    (true, 1) => charts::run_style(k),
                    (true, _) => (charts::run_style(k).0, Dash::nth(nth_class)),
                };
                sets.push(LatSet {
                    label: if multi { format!("{dir} {}", self.label(r)) } else { dir.to_string() },
                    ms: [v(l.p50), v(l.p90), v(l.p99), v(l.p999), v(l.max)],
                    color,
                    dash,
                });
            }
        }
        figure(
            h,
            &format!("latency-{slug}"),
            (!sets.is_empty()).then(|| charts::latency_chart(&format!("{name}: latency percentiles"), &sets)),
            &format!(
                "Completion latency of phase {ph} over the whole phase, per operation class{}.",
                match (multi, classes.len()) {
                    (false, _) => "",
                    (true, 1) => " and run",
                    (true, _) => " and run (colour per run, line style per class)",
                }
            ),
            &format!("Phase {ph}: no operations completed, so no latency chart."),
        );
    }

    /// The runs whose phase has system samples.
    fn sampled(&self) -> Sampled<'_> {
        self.rp
            .iter()
            .enumerate()
            .filter_map(|(k, (_, r, p))| p.system.as_ref().filter(|s| !s.samples.is_empty()).map(|s| (k, *r, s)))
            .collect()
    }

    /// CPU: with several runs, colour per run and line style per state; one run's states take
    /// the colours. User and system as the terminal's `us` and `sy` count them.
    fn cpu(&self, h: &mut String, sys: &Sampled) {
        let (name, ph, slug, multi) = (self.name, &self.ph, self.slug, self.multi);
        let mut cpu = Vec::new();
        for (k, r, s) in sys {
            let states: [(&str, CpuField); 3] =
                [("user", |c| c.us()), ("system", |c| c.sy()), ("iowait", |c| c.iowait_pct)];
            for (i, (st, f)) in states.into_iter().enumerate() {
                let (color, dash) = if multi { (charts::run_style(*k).0, Dash::nth(i)) } else { (i, Dash::Solid) };
                cpu.push(Series {
                    label: if multi { format!("{st} {}", self.label(r)) } else { st.to_string() },
                    points: s.samples.iter().map(|x| (x.t_s, f(&x.cpu.all))).collect(),
                    color,
                    dash,
                });
            }
        }
        let cpu_top = cpu.iter().flat_map(|s| &s.points).map(|p| p.1).fold(0.0f64, f64::max);
        let cpu_top = (cpu_top * 1.15).clamp(5.0, 100.0);
        figure(
            h,
            &format!("cpu-{slug}"),
            (!cpu.is_empty()).then(|| {
                charts::line_chart(&format!("{name}: CPU"), "time (s)", "% of all CPUs", &cpu, Some(cpu_top))
            }),
            &format!(
                "Whole-machine CPU time in user (nice included), system (interrupts included) and iowait during phase {ph}, as sampled beside it{}.",
                if multi { " (colour per run: user solid, system dashed, iowait dotted)" } else { "" }
            ),
            &format!("Phase {ph}: the system was not sampled (no samples), so no CPU chart."),
        );
    }

    /// Disks: the target's devices, or all present; utilisation and await.
    fn disks(&self, h: &mut String, sys: &Sampled) {
        let (name, ph, slug, multi) = (self.name, &self.ph, self.slug, self.multi);
        let mut util = Vec::new();
        let mut wait = Vec::new();
        let mut n = 0;
        for (k, r, s) in sys {
            let mut devices: Vec<String> = match &s.target {
                Some(t) if !t.devices.is_empty() => t.devices.clone(),
                _ => Vec::new(),
            };
            let present: BTreeSet<&String> = s.samples.iter().flat_map(|x| x.disks.keys()).collect();
            devices.retain(|d| present.contains(d));
            if devices.is_empty() {
                devices = present.into_iter().cloned().collect();
            }
            for d in &devices {
                let who = if multi { format!("{d} {}", self.label(r)) } else { d.clone() };
                let pts = |f: fn(&iolab_sysstat::DiskRates) -> f64| -> Vec<(f64, f64)> {
                    s.samples.iter().filter_map(|x| x.disks.get(d).map(|v| (x.t_s, f(v)))).collect()
                };
                util.push(Series { label: who.clone(), points: pts(|v| v.util_pct), color: n, dash: Dash::nth(*k) });
                wait.push(Series {
                    label: format!("r {who}"),
                    points: pts(|v| v.r_await_ms),
                    color: n,
                    dash: Dash::Solid,
                });
                wait.push(Series {
                    label: format!("w {who}"),
                    points: pts(|v| v.w_await_ms),
                    color: n,
                    dash: Dash::Dashed,
                });
                n += 1;
            }
        }
        figure(
            h,
            &format!("disk-util-{slug}"),
            (!util.is_empty()).then(|| {
                charts::line_chart(&format!("{name}: disk utilisation"), "time (s)", "% busy", &util, Some(100.0))
            }),
            &format!("Share of each interval the device was busy (iostat's %util) during phase {ph}."),
            &format!(
                "Phase {ph}: no disk samples (not sampled, or no block device did I/O), so no disk utilisation chart."
            ),
        );
        figure(
            h,
            &format!("disk-await-{slug}"),
            (!wait.is_empty())
                .then(|| charts::line_chart(&format!("{name}: disk await"), "time (s)", "ms", &wait, None)),
            &format!("Mean time a read (solid) or write (dashed) request spent at the device, queue included (iostat's r_await and w_await), during phase {ph}."),
            &format!("Phase {ph}: no disk samples (not sampled, or no block device did I/O), so no disk await chart."),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_escapes() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_767_225_599.5), "2025-12-31 23:59:59 UTC");
        assert_eq!(escape(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(slug("seq write/4k"), "seq-write-4k");
    }

    #[test]
    fn the_last_partial_second_is_scaled_or_left_out() {
        let pt = |t_s: f64, read_ops: u64| TimelinePoint { t_s, read_ops, ..Default::default() };
        let mut p = PhaseResult {
            elapsed_s: 2.5,
            total: Default::default(),
            timeline: vec![pt(1.0, 100), pt(2.0, 120), pt(3.0, 50)],
            ..PhaseResult::new("p")
        };
        let ops = |t: &TimelinePoint| t.read_ops as f64;
        assert_eq!(per_second(&p, &ops), vec![(1.0, 100.0), (2.0, 120.0), (2.5, 100.0)]);
        p.elapsed_s = 2.1;
        assert_eq!(per_second(&p, &ops), vec![(1.0, 100.0), (2.0, 120.0)]);
    }
}
