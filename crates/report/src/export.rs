//! Exporters: every way iolab writes results out — the JSON of docs/json.md, CSV, the HTML
//! report, the compare table, the terminal summary, a survey's profile, fio's JSON
//! ([`crate::fio_json`]) and bonnie++'s CSV ([`crate::bonnie_csv`]) — behind one small trait, so
//! a command picks one by name ([`crate::format::Format::exporter`]) and hands it what it has (a
//! fresh run, a survey, stored runs, or a comparison). A writer of several files (fio's logs,
//! one per phase and kind) is one exporter per file.

use crate::compare::{render_table, Comparison};
use crate::html::{render, ReportOptions};
use iolab_model::hist::Exported;
use iolab_model::{RunResult, Totals};
use iolab_store::StoredRun;
use serde_json::Value;
use std::io::{self, Write};

/// What there is to export.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// A run that just ended (`iolab run`, `iolab scenario`, `iolab replay`), stored or not.
    Run(&'a RunResult),
    /// A survey that just ended, with the locking check `--node` added beside it: its profile
    /// for people, the two runs side by side in JSON.
    Survey(&'a RunResult, Option<&'a RunResult>),
    /// Runs read back from the results database.
    Stored(&'a [StoredRun]),
    /// A comparison of stored runs.
    Comparison(&'a Comparison),
}

/// Why an export failed: an input the format does not take, or the writing, its cause kept.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{format} cannot export {what}")]
    Refused { format: &'static str, what: &'static str },
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl ExportError {
    /// `format` does not take this input; `what` says what it takes.
    pub fn refused(format: &'static str, what: &'static str) -> ExportError {
        ExportError::Refused { format, what }
    }
}

pub trait Exporter {
    /// The format's name, as `--format`/`--output` spell it.
    fn name(&self) -> &'static str;
    /// Write `input` in this format. An input the format does not take is refused
    /// ([`ExportError::Refused`]).
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError>;
}

fn refuse(format: &'static str, what: &'static str) -> ExportError {
    ExportError::refused(format, what)
}

/// A survey and its locking check, as the JSON of `iolab survey --node` gives them.
#[derive(serde::Serialize)]
struct SurveyJson<T> {
    survey: T,
    locking: T,
}

/// The documented JSON: a run's result object, an array of stored runs, or a comparison.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Run(r) | Input::Survey(r, None) => serde_json::to_writer_pretty(&mut *out, r),
            Input::Survey(r, Some(l)) => serde_json::to_writer_pretty(&mut *out, &SurveyJson { survey: r, locking: l }),
            Input::Stored(rs) => serde_json::to_writer_pretty(&mut *out, rs),
            Input::Comparison(c) => serde_json::to_writer_pretty(&mut *out, c),
        }?;
        Ok(writeln!(out)?)
    }
}

/// The documented JSON with each operation class's latency histogram beside its figures
/// (`--histograms`): `total.classes.<class>.histogram` of every phase, node and job, as
/// [`Exported`] (V2 deflate, base64). Runs only: a comparison has no histograms.
pub struct JsonHistograms;

impl Exporter for JsonHistograms {
    fn name(&self) -> &'static str {
        "json"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        let with_histograms = |r: &RunResult| -> Result<Value, ExportError> {
            let mut v = serde_json::to_value(r)?;
            add_run_histograms(r, &mut v);
            Ok(v)
        };
        let v = match input {
            Input::Run(r) | Input::Survey(r, None) => with_histograms(r)?,
            Input::Survey(r, Some(l)) => {
                serde_json::to_value(SurveyJson { survey: with_histograms(r)?, locking: with_histograms(l)? })?
            }
            Input::Stored(rs) => {
                let mut v = serde_json::to_value(rs)?;
                if let Some(a) = v.as_array_mut() {
                    for (r, rv) in rs.iter().zip(a) {
                        if let Some(res) = rv.get_mut("result") {
                            add_run_histograms(&r.result, res);
                        }
                    }
                }
                v
            }
            Input::Comparison(_) => return Err(refuse("json with histograms", "a comparison; it exports runs")),
        };
        serde_json::to_writer_pretty(&mut *out, &v)?;
        Ok(writeln!(out)?)
    }
}

/// Put each phase's, each node's and each job's histograms into the run's JSON, which
/// mirrors `r`.
fn add_run_histograms(r: &RunResult, v: &mut Value) {
    let Some(phases) = v.get_mut("phases").and_then(Value::as_array_mut) else { return };
    for (p, pv) in r.phases.iter().zip(phases) {
        if let Some(t) = pv.get_mut("total") {
            add_histograms(&p.total, t);
        }
        if let Some(nodes) = pv.get_mut("nodes").and_then(Value::as_array_mut) {
            for (n, nv) in p.nodes.iter().zip(nodes) {
                if let Some(t) = nv.get_mut("total") {
                    add_histograms(&n.total, t);
                }
            }
        }
        let Some(jobs) = pv.get_mut("jobs").and_then(Value::as_array_mut) else { continue };
        for (j, jv) in p.jobs.iter().zip(jobs) {
            if let Some(t) = jv.get_mut("total") {
                add_histograms(&j.total, t);
            }
        }
    }
}

/// `classes.<class>.histogram` for every class of `t` that has a non-empty histogram (a phase
/// rebuilt from the seconds of a killed run has none).
fn add_histograms(t: &Totals, v: &mut Value) {
    for (class, ct) in t.iter() {
        let Some(e) = ct.hist.as_ref().and_then(Exported::of) else { continue };
        let Some(obj) = v.get_mut("classes").and_then(|c| c.get_mut(class.as_str())).and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Ok(h) = serde_json::to_value(e) {
            obj.insert("histogram".into(), h);
        }
    }
}

/// One row per run × phase × job × operation class.
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Stored(rs) => Ok(out.write_all(crate::csv::to_csv(rs).as_bytes())?),
            _ => Err(refuse("csv", "this; it exports stored runs")),
        }
    }
}

/// The self-contained HTML report of stored runs.
pub struct Html(pub ReportOptions);

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Stored(rs) => Ok(out.write_all(render(rs, &self.0).as_bytes())?),
            _ => Err(refuse("html", "this; it reports stored runs")),
        }
    }
}

/// The comparison as a terminal table.
pub struct CompareTable;

impl Exporter for CompareTable {
    fn name(&self) -> &'static str {
        "table"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Comparison(c) => Ok(writeln!(out, "{}", render_table(c))?),
            _ => Err(refuse("the compare table", "runs; give it a comparison")),
        }
    }
}

/// The human summary: per phase, dd-style lines and a table of jobs per operation class.
pub struct Summary;

impl Exporter for Summary {
    fn name(&self) -> &'static str {
        "human"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Run(r) | Input::Survey(r, _) => write!(out, "{}", crate::summary::render(r))?,
            Input::Stored(rs) => rs.iter().try_for_each(|r| write!(out, "{}", crate::summary::render(&r.result)))?,
            Input::Comparison(_) => return Err(refuse("the summary", "a comparison; use the compare table")),
        }
        Ok(())
    }
}

/// A survey's one-page profile: its steps, what stands out, the locking check beside it.
pub struct SurveyProfile;

impl Exporter for SurveyProfile {
    fn name(&self) -> &'static str {
        "human"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Survey(r, locking) => Ok(write!(out, "{}", crate::survey::profile(r, *locking))?),
            _ => Err(refuse("the survey's profile", "this; give it a survey")),
        }
    }
}

/// `human`, whatever the input: a run's summary, a survey's profile, each stored run's summary,
/// the compare table.
pub struct Human;

impl Exporter for Human {
    fn name(&self) -> &'static str {
        "human"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        match input {
            Input::Run(_) | Input::Stored(_) => Summary.export(input, out),
            Input::Survey(..) => SurveyProfile.export(input, out),
            Input::Comparison(_) => CompareTable.export(input, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_refuses_what_it_does_not_take() {
        let mut out = Vec::new();
        let c = crate::compare::compare(&[], &Default::default());
        assert!(Csv.export(&Input::Comparison(&c), &mut out).is_err());
        assert!(Summary.export(&Input::Comparison(&c), &mut out).is_err());
        assert!(CompareTable.export(&Input::Stored(&[]), &mut out).is_err());
        Json.export(&Input::Comparison(&c), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v["rows"].as_array().unwrap().is_empty());
        out.clear();
        Csv.export(&Input::Stored(&[]), &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("run_id,kind,"));
    }

    fn run_with_histograms() -> RunResult {
        use iolab_model::{Acc, JobResult, OpClass, PhaseResult, Status};
        let mut a = Acc::default();
        for i in 1..=1000u64 {
            a.record(OpClass::Write, 4096, i * 1_000);
        }
        a.record(OpClass::Sync, 0, 2_000_000);
        let total = Totals::from_acc(&a, 1.0);
        let job = JobResult {
            node: None,
            name: "job1".into(),
            engine: "psync".into(),
            rw: "write".into(),
            threads: 1,
            files: Vec::new(),
            elapsed_s: 1.0,
            total: total.clone(),
            error: None,
            per_thread: Vec::new(),
            workload: Default::default(),
            replay: None,
            holes: None,
            latency_target: None,
            io_errors: None,
        };
        let phase = PhaseResult { elapsed_s: 1.0, total, jobs: vec![job], ..PhaseResult::new("write") };
        RunResult {
            iolab_version: "0".into(),
            status: Status::Complete,
            phases: vec![phase],
            ..RunResult::new(iolab_spec::Plan { phases: Vec::new() }, "n", 0.0)
        }
    }

    #[test]
    fn histograms_ride_in_json_only_when_asked_for() {
        let r = run_with_histograms();
        let mut plain = Vec::new();
        Json.export(&Input::Run(&r), &mut plain).unwrap();
        assert!(!String::from_utf8_lossy(&plain).contains("histogram"));
        let mut out = Vec::new();
        JsonHistograms.export(&Input::Run(&r), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let p = &v["phases"][0];
        for t in [&p["total"], &p["jobs"][0]["total"]] {
            for class in ["write", "sync"] {
                let c = &t["classes"][class];
                let e: Exported = serde_json::from_value(c["histogram"].clone()).unwrap();
                let h = e.decode().unwrap();
                assert_eq!(h.len(), c["ops"].as_u64().unwrap());
                assert_eq!(h.value_at_quantile(0.99), c["lat_ns"]["p99"].as_u64().unwrap());
            }
            // The schema-1 objects stay as they were; the histogram is under `classes` only.
            assert!(t["write"].get("histogram").is_none());
        }
        // Everything else is the plain JSON, untouched.
        let mut stripped = v.clone();
        for class in ["write", "sync"] {
            let p = &mut stripped["phases"][0];
            p["total"]["classes"][class].as_object_mut().unwrap().remove("histogram");
            p["jobs"][0]["total"]["classes"][class].as_object_mut().unwrap().remove("histogram");
        }
        assert_eq!(stripped, serde_json::from_slice::<serde_json::Value>(&plain).unwrap());
        let c = crate::compare::compare(&[], &Default::default());
        assert!(JsonHistograms.export(&Input::Comparison(&c), &mut out).is_err());
    }

    /// A survey alone prints as a run; with its locking check, as `{survey, locking}` (each run's
    /// own JSON, with histograms when asked); for people, as its profile.
    #[test]
    fn a_survey_exports_alone_as_its_run_and_beside_its_locking_check_as_two() {
        let (s, l) = (run_with_histograms(), run_with_histograms());
        let json = |e: &dyn Exporter, i: Input| {
            let mut out = Vec::new();
            e.export(&i, &mut out).unwrap();
            serde_json::from_slice::<Value>(&out).unwrap()
        };
        assert_eq!(json(&Json, Input::Survey(&s, None)), json(&Json, Input::Run(&s)));
        let both = json(&Json, Input::Survey(&s, Some(&l)));
        assert_eq!(both.as_object().unwrap().keys().collect::<Vec<_>>(), ["locking", "survey"]);
        assert_eq!(both["survey"], json(&Json, Input::Run(&s)));
        let hist = json(&JsonHistograms, Input::Survey(&s, Some(&l)));
        for k in ["survey", "locking"] {
            assert_eq!(hist[k]["phases"][0]["total"]["classes"]["write"]["histogram"]["count"], 1000, "{k}");
        }
        let mut text = Vec::new();
        Human.export(&Input::Survey(&s, None), &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("step") && text.contains("result") && !text.contains("the locking check"), "{text}");
        assert!(SurveyProfile.export(&Input::Run(&s), &mut Vec::new()).is_err());
    }

    #[test]
    fn stored_runs_carry_their_histograms_and_cut_off_phases_none() {
        let mut r = run_with_histograms();
        // A phase rebuilt from a killed run's seconds has counts but no histogram.
        let mut cut = r.phases[0].clone();
        for c in [iolab_model::OpClass::Write, iolab_model::OpClass::Sync] {
            cut.total.get_mut(c).hist = None;
        }
        cut.jobs.clear();
        r.phases.push(cut);
        let stored = StoredRun {
            id: 7,
            uid: String::new(),
            kind: iolab_model::RunKind::Run,
            name: "flags".into(),
            labels: Default::default(),
            host: Default::default(),
            pid: 1,
            ended_unix_s: None,
            result: r,
        };
        let mut out = Vec::new();
        JsonHistograms.export(&Input::Stored(std::slice::from_ref(&stored)), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let phases = &v[0]["result"]["phases"];
        assert_eq!(phases[0]["total"]["classes"]["write"]["histogram"]["count"], 1000);
        assert_eq!(phases[1]["total"]["classes"]["write"]["ops"], 1000);
        assert!(phases[1]["total"]["classes"]["write"].get("histogram").is_none());
    }
}
