//! Exporters: every way iolab writes results out — the JSON of docs/json.md, CSV, the HTML
//! report, the compare table and the terminal summary — behind one small trait, so a command
//! picks one by name and hands it what it has (a fresh run, stored runs, or a comparison).

use crate::compare::{render_table, Comparison};
use crate::html::{render, ReportOptions};
use iolab_model::RunResult;
use iolab_store::StoredRun;
use std::io::{self, Write};

/// What there is to export.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// A run that just ended (`iolab run`, `iolab survey`), stored or not.
    Run(&'a RunResult),
    /// Runs read back from the results database.
    Stored(&'a [StoredRun]),
    /// A comparison of stored runs.
    Comparison(&'a Comparison),
}

pub trait Exporter {
    /// The format's name, as `--format`/`--output` spell it.
    fn name(&self) -> &'static str;
    /// Write `input` in this format. An input the format does not take is an `InvalidInput` error.
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()>;
}

fn refuse(format: &str, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{format} cannot export {what}"))
}

/// The documented JSON: a run's result object, an array of stored runs, or a comparison.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()> {
        match input {
            Input::Run(r) => serde_json::to_writer_pretty(&mut *out, r),
            Input::Stored(rs) => serde_json::to_writer_pretty(&mut *out, rs),
            Input::Comparison(c) => serde_json::to_writer_pretty(&mut *out, c),
        }
        .map_err(io::Error::other)?;
        writeln!(out)
    }
}

/// One row per run × phase × job × operation class.
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()> {
        match input {
            Input::Stored(rs) => out.write_all(crate::csv::to_csv(rs).as_bytes()),
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
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()> {
        match input {
            Input::Stored(rs) => out.write_all(render(rs, &self.0).as_bytes()),
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
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()> {
        match input {
            Input::Comparison(c) => writeln!(out, "{}", render_table(c)),
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
    fn export(&self, input: &Input, out: &mut dyn Write) -> io::Result<()> {
        match input {
            Input::Run(r) => write!(out, "{}", crate::summary::render(r)),
            Input::Stored(rs) => rs.iter().try_for_each(|r| write!(out, "{}", crate::summary::render(&r.result))),
            Input::Comparison(_) => Err(refuse("the summary", "a comparison; use the compare table")),
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
}
