//! Per-thread figures in the terminal: when a job has several threads, each thread's end and
//! MB/s (two writers of one job that end at 84 s and 137 s are the finding, not the job's
//! average), and a note wherever jobs' or threads' MB/s do not add up to the figure above them
//! because they ran for different times.

use crate::fmt::{count, num, secs};
use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use iolab_model::{JobResult, PhaseResult};
use std::fmt::Write;

/// Ends further apart than this (and than 1% of the longer) count as different lengths.
const SAME_END_S: f64 = 0.5;

fn apart(a: f64, b: f64) -> bool {
    (a - b).abs() > SAME_END_S.max(a.max(b) * 0.01)
}

/// Bytes per second of reads and writes together.
fn job_bw(j: &JobResult) -> f64 {
    j.total.read().bw_bytes + j.total.write().bw_bytes
}

/// The per-thread table of the jobs with more than one thread, and the notes; empty when there
/// is nothing to say. Lines are indented by two spaces, like the rest of a phase.
pub fn lines(p: &PhaseResult) -> String {
    let mut s = String::new();
    let many: Vec<&JobResult> = p.jobs.iter().filter(|j| j.per_thread.len() > 1).collect();
    if !many.is_empty() {
        let mut t = Table::new();
        t.load_preset(UTF8_BORDERS_ONLY);
        t.set_header(["job", "thread", "elapsed s", "ops", "MB/s", "MiB/s", "ended"]);
        for j in &many {
            for th in &j.per_thread {
                let ended = match &th.error {
                    Some(e) => format!("stopped: {e}"),
                    None if apart(th.elapsed_s, j.elapsed_s) => {
                        format!("{} before the last", secs(j.elapsed_s - th.elapsed_s))
                    }
                    None => "with the last".into(),
                };
                t.add_row([
                    Cell::new(&j.name),
                    Cell::new(th.thread),
                    Cell::new(num(th.elapsed_s)),
                    Cell::new(count(th.ops as f64)),
                    Cell::new(num(th.bw_bytes / 1e6)),
                    Cell::new(num(th.bw_bytes / 1048576.0)),
                    Cell::new(ended),
                ]);
            }
        }
        for c in 1..6 {
            if let Some(col) = t.column_mut(c) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(s, "  per thread:");
        for line in t.to_string().lines() {
            let _ = writeln!(s, "  {line}");
        }
        for j in many {
            let first = j.per_thread.iter().map(|t| t.elapsed_s).fold(f64::INFINITY, f64::min);
            let last = j.per_thread.iter().map(|t| t.elapsed_s).fold(0.0, f64::max);
            if apart(first, last) {
                let sum: f64 = j.per_thread.iter().map(|t| t.bw_bytes).sum();
                let _ = writeln!(
                    s,
                    "  - job {}: its threads ended {} apart ({} to {}); their MB/s add up to {}, the job's {} is all its bytes over its last thread's end",
                    j.name,
                    secs(last - first),
                    secs(first),
                    secs(last),
                    num(sum / 1e6),
                    num(job_bw(j) / 1e6),
                );
            }
        }
    }
    if p.jobs.len() > 1 {
        let first = p.jobs.iter().map(|j| j.elapsed_s).fold(f64::INFINITY, f64::min);
        let last = p.jobs.iter().map(|j| j.elapsed_s).fold(0.0, f64::max);
        let phase_bw = p.total.read().bw_bytes + p.total.write().bw_bytes;
        let sum: f64 = p.jobs.iter().map(job_bw).sum();
        if apart(first, last) {
            let _ = writeln!(
                s,
                "  - the jobs' MB/s add up to {}, the phase's {}: jobs ran {} to {}, and the phase's rate is all bytes over the longest",
                num(sum / 1e6),
                num(phase_bw / 1e6),
                secs(first),
                secs(last),
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{Acc, OpClass, ThreadResult, Totals};

    fn job(name: &str, ends: &[(f64, u64)]) -> JobResult {
        let mut a = Acc::default();
        let bytes: u64 = ends.iter().map(|e| e.1).sum();
        a.record(OpClass::Write, bytes, 1000);
        let elapsed = ends.iter().map(|e| e.0).fold(0.0, f64::max);
        JobResult {
            node: None,
            name: name.into(),
            engine: "psync".into(),
            rw: "write".into(),
            threads: ends.len() as u32,
            files: Vec::new(),
            elapsed_s: elapsed,
            total: Totals::from_acc(&a, elapsed),
            error: None,
            per_thread: ends
                .iter()
                .enumerate()
                .map(|(i, (e, b))| ThreadResult::new(i as u32, *e, 10, *b, None))
                .collect(),
            workload: Default::default(),
            replay: None,
            holes: None,
            latency_target: None,
            io_errors: None,
        }
    }

    fn phase(jobs: Vec<JobResult>) -> PhaseResult {
        let mut a = Acc::default();
        a.record(OpClass::Write, jobs.iter().map(|j| j.total.write().bytes).sum(), 1000);
        let elapsed = jobs.iter().map(|j| j.elapsed_s).fold(0.0, f64::max);
        PhaseResult { elapsed_s: elapsed, total: Totals::from_acc(&a, elapsed), jobs, ..PhaseResult::new("p") }
    }

    #[test]
    fn two_writers_ending_apart_are_shown_and_explained() {
        // Seed 000: two dd writers of 1 GB on one node, ending at 84.1 s and 137.7 s.
        let p = phase(vec![job("dd", &[(84.1481, 1_048_576_000), (137.668, 1_048_576_000)])]);
        let out = lines(&p);
        assert!(out.contains("per thread:"), "{out}");
        assert!(out.contains("84.15") && out.contains("138"), "each thread's end: {out}");
        assert!(out.contains("12.46") && out.contains("7.62"), "each thread's MB/s: {out}");
        assert!(out.contains("53.52 s before the last"), "{out}");
        // 12.46 + 7.62 = 20.08 MB/s against the job's 2,097,152,000 B / 137.668 s = 15.23.
        assert!(out.contains("add up to 20.08, the job's 15.23"), "{out}");
    }

    #[test]
    fn nothing_for_single_threads_and_threads_that_end_together() {
        assert_eq!(lines(&phase(vec![job("a", &[(10.0, 1000)])])), "");
        let together = lines(&phase(vec![job("a", &[(10.0, 1000), (10.02, 1000)])]));
        assert!(together.contains("with the last") && !together.contains("- job"), "{together}");
    }

    #[test]
    fn jobs_of_different_lengths_say_why_they_do_not_add_up() {
        let p = phase(vec![job("a", &[(10.0, 100_000_000)]), job("b", &[(20.0, 100_000_000)])]);
        let out = lines(&p);
        // 10 + 5 MB/s against 200 MB over 20 s = 10 MB/s.
        assert!(out.contains("the jobs' MB/s add up to 15.00, the phase's 10.00"), "{out}");
        let same = phase(vec![job("a", &[(10.0, 100_000_000)]), job("b", &[(10.0, 100_000_000)])]);
        assert_eq!(lines(&same), "", "equal lengths add up: nothing to say");
    }
}
