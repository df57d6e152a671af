//! bonnie++'s CSV line from a run of `--workload bonnie` (`iolab run --csv`, `--output
//! bonnie-csv`, `iolab export --format bonnie-csv`): what bonnie++ 2.0's `-q` prints, which its
//! own bon_csv2html and bon_csv2txt read. The figures are the model's, under bonnie++'s names
//! (`iolab_model::figures::bonnie`); the job's settings come from the run's plan.

use crate::export::{ExportError, Exporter, Input};
use iolab_model::figures::bonnie::{CPU, LATENCY, TESTS};
use iolab_model::RunResult;
use iolab_spec::{BonnieJob, Workload};
use std::collections::BTreeMap;
use std::io::Write;

/// The seek test's place in [`TESTS`]: its rate keeps a decimal under 1,000 seeks/s, as
/// bonnie++ prints it.
const SEEKS: usize = 5;

/// One CSV line per bonnie job of each phase; runs without one are refused.
pub struct BonnieCsv;

impl Exporter for BonnieCsv {
    fn name(&self) -> &'static str {
        "bonnie-csv"
    }
    fn export(&self, input: &Input, out: &mut dyn Write) -> Result<(), ExportError> {
        let runs: Vec<&RunResult> = match input {
            Input::Run(r) | Input::Survey(r, _) => vec![r],
            Input::Stored(rs) => rs.iter().map(|r| &r.result).collect(),
            Input::Comparison(_) => return Err(ExportError::refused("bonnie-csv", "a comparison; it exports runs")),
        };
        let lines: Vec<String> = runs.into_iter().flat_map(lines).collect();
        if lines.is_empty() {
            return Err(ExportError::refused("bonnie-csv", "runs without a bonnie job (--workload bonnie)"));
        }
        lines.iter().try_for_each(|l| writeln!(out, "{l}"))?;
        Ok(())
    }
}

/// Each bonnie job's line, in the plan's order, from its phase's figures.
fn lines(r: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    for (phase, result) in r.plan.phases.iter().zip(&r.phases) {
        for j in &phase.jobs {
            if let Workload::Bonnie(b) = &j.workload {
                out.push(csv_line(b, &j.name, j.seed, &result.workload));
            }
        }
    }
    out
}

/// bonnie++'s latency as it prints it: whole µs under a tenth of a second, whole ms under 100
/// s, else whole seconds (bon_time.cpp's `print_latency`).
fn latency_text(us: f64) -> String {
    let s = us / 1e6;
    if us <= 0.0 {
        String::new()
    } else if s > 99.999999 {
        format!("{}s", s as u64)
    } else if s > 0.099999 {
        format!("{}ms", (s * 1000.0) as u64)
    } else {
        format!("{}us", us as u64)
    }
}

/// bonnie++'s sizes in its CSV (`print_size`): the largest unit that divides the value.
fn size_text(mut v: u64, units: &[char]) -> String {
    let mut i = 0;
    while v > 0 && v.is_multiple_of(1024) && i + 1 < units.len() {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", units[i]).trim_end().to_string()
}

/// bonnie++ 2.0's CSV line (its `-q` output, what bon_csv2html and bon_csv2txt read): format
/// 1.98, version, name, concurrency, seed, size, chunk size, seeks, seekers, the six I/O tests
/// with %CPU, the create tests' parameters and results, then the twelve tests' latencies.
/// Rates are printed whatever the test's length (bonnie++ prints `+++++` under half a second;
/// the JSON has each test's seconds).
pub fn csv_line(b: &BonnieJob, name: &str, seed: u64, f: &BTreeMap<String, f64>) -> String {
    let get = |k: &str| f.get(k).copied();
    let int = |k: &str| get(k).map(|x| format!("{}", x.max(0.0) as u64)).unwrap_or_default();
    let mut cols: Vec<String> = vec![
        "1.98".into(),
        "2.00a".into(),
        name.replace(',', " "),
        "1".into(),
        (seed as u32).to_string(),
        size_text(b.file_size.0 >> 20, &['M', 'G']),
        if b.chunk_size.0 == 8192 { String::new() } else { size_text(b.chunk_size.0, &[' ', 'k', 'm']) },
        b.seeks.to_string(),
        b.seekers.to_string(),
    ];
    for t in 0..6 {
        cols.push(match (t, get(TESTS[t])) {
            (SEEKS, Some(x)) if x < 1000.0 => format!("{x:.1}"),
            (SEEKS, Some(x)) => format!("{x:.0}"),
            _ => int(TESTS[t]),
        });
        cols.push(int(CPU[t]));
    }
    if b.num_files > 0 {
        cols.push(b.num_files.to_string());
        match (b.max_size, b.min_size) {
            (0, _) => cols.extend([String::new(), String::new()]),
            (max, 0) => cols.extend([max.to_string(), String::new()]),
            (max, min) => cols.extend([max.to_string(), min.to_string()]),
        }
        // bonnie++ 2.0 never prints the file chunk size (its print_size writes past the NUL).
        cols.push(String::new());
        cols.push(if b.dirs > 1 { b.dirs.to_string() } else { String::new() });
    } else {
        cols.extend(std::iter::repeat_n(String::new(), 5));
    }
    for t in 6..12 {
        cols.push(int(TESTS[t]));
        cols.push(int(CPU[t]));
    }
    for l in LATENCY {
        cols.push(get(l).map(latency_text).unwrap_or_default());
    }
    cols.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seek_test_is_where_bonnie_puts_it() {
        assert_eq!(TESTS[SEEKS], "seeks");
    }

    #[test]
    fn a_run_without_a_bonnie_job_is_refused() {
        let r = RunResult::new(iolab_spec::Plan { phases: Vec::new() }, "n", 0.0);
        let mut out = Vec::new();
        let e = BonnieCsv.export(&Input::Run(&r), &mut out).unwrap_err();
        assert!(matches!(e, ExportError::Refused { .. }) && e.to_string().contains("--workload bonnie"), "{e}");
        assert!(out.is_empty());
    }

    #[test]
    fn bonnie_s_latency_and_size_texts() {
        assert_eq!(latency_text(5609.4), "5609us");
        assert_eq!(latency_text(104_000.0), "104ms");
        assert_eq!(latency_text(150e6), "150s");
        assert_eq!(latency_text(0.0), "");
        assert_eq!(size_text(1024, &['M', 'G']), "1G");
        assert_eq!(size_text(16, &['M', 'G']), "16M");
        assert_eq!(size_text(4096, &[' ', 'k', 'm']), "4k");
    }
}
