//! Every format iolab writes results in, named once: the word `--output` and `--format` take,
//! what it holds, and the exporter that writes it ([`Format::exporter`]). Which command takes
//! which formats is the CLI's one list (its `output` module); an exporter refuses an input it
//! cannot write (a CSV of a comparison) with [`crate::export::ExportError::Refused`].

use crate::bonnie_csv::BonnieCsv;
use crate::export::{Csv, Exporter, Human, Json, JsonHistograms};
use crate::fio_json::FioJson;
use iolab_model::UnknownWord;
use std::fmt;
use std::str::FromStr;

/// A way to write results out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// For people: a run's summary, a survey's profile, the compare table, a list.
    Human,
    /// The documented JSON (docs/json.md).
    Json,
    /// One row per run × phase × job × operation class.
    Csv,
    /// fio's `--output-format=json` layout (docs/fio.md).
    FioJson,
    /// fio's json+: each latency histogram's bins beside fio's JSON.
    FioJsonPlus,
    /// bonnie++'s CSV line (what its `-q` prints; bon_csv2html and bon_csv2txt read it).
    BonnieCsv,
}

/// What a format is asked for with, beside its name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// JSON: each operation class's latency histogram beside its figures (`--histograms`).
    pub histograms: bool,
}

impl Format {
    pub const ALL: [Format; 6] =
        [Format::Human, Format::Json, Format::Csv, Format::FioJson, Format::FioJsonPlus, Format::BonnieCsv];

    /// The word `--output` and `--format` take.
    pub fn name(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::FioJson => "fio-json",
            Format::FioJsonPlus => "fio-json+",
            Format::BonnieCsv => "bonnie-csv",
        }
    }

    /// What the format holds, a line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Format::Human => "for people: a summary, a survey's profile, a table",
            Format::Json => "the documented JSON (docs/json.md), for scripts",
            Format::Csv => "one row per run × phase × job × operation class",
            Format::FioJson => "fio's --output-format=json layout (docs/fio.md)",
            Format::FioJsonPlus => "fio's json+, with each latency histogram's bins",
            Format::BonnieCsv => "bonnie++'s CSV line (--workload bonnie), for bon_csv2html and bon_csv2txt",
        }
    }

    /// Whether stdout carries the format alone (everything but `human`): no progress line and
    /// no chatter, so a script can read it.
    pub fn is_machine(self) -> bool {
        self != Format::Human
    }

    /// Whether the format is fio's JSON, which holds one run.
    pub fn is_fio(self) -> bool {
        matches!(self, Format::FioJson | Format::FioJsonPlus)
    }

    /// The exporter that writes this format.
    pub fn exporter(self, o: Options) -> Box<dyn Exporter> {
        match self {
            Format::Human => Box::new(Human),
            Format::Json if o.histograms => Box::new(JsonHistograms),
            Format::Json => Box::new(Json),
            Format::Csv => Box::new(Csv),
            Format::FioJson => Box::new(FioJson { plus: false }),
            Format::FioJsonPlus => Box::new(FioJson { plus: true }),
            Format::BonnieCsv => Box::new(BonnieCsv),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = UnknownWord;
    fn from_str(s: &str) -> Result<Format, UnknownWord> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownWord::new("output format", s, Format::ALL.map(Format::name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_name_and_an_exporter_of_that_name() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
            assert_eq!(f.exporter(Options::default()).name(), f.name());
            assert_eq!(f.is_machine(), f != Format::Human);
        }
        // The words users give today.
        for w in ["human", "json", "csv", "fio-json", "fio-json+"] {
            assert!(w.parse::<Format>().is_ok(), "{w}");
        }
        assert!("xml".parse::<Format>().unwrap_err().to_string().contains("bonnie-csv"));
    }
}
