//! The live line on a terminal: throughput, IOPS, elapsed and ETA, updated each second.
//! It draws on stderr and only when stdout is a terminal, so pipes and JSON stay clean.

use crate::format::{count, rate};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_spec::Phase;
use iolab_workload::results::{PhaseResult, TimelinePoint};
use iolab_workload::{Expect, Sink};

pub struct Progress {
    enabled: bool,
    quiet: bool,
    bar: Option<ProgressBar>,
    by_bytes: bool,
}

impl Progress {
    /// `enabled`: draw the bar; `quiet`: also keep messages off stderr (JSON output).
    pub fn new(enabled: bool, quiet: bool) -> Self {
        Progress { enabled, quiet, bar: None, by_bytes: false }
    }
}

impl Sink for Progress {
    fn message(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn phase_start(&mut self, _index: usize, phase: &Phase, expect: Expect) {
        if !self.enabled {
            return;
        }
        let (len, by_bytes) = match (expect.duration, expect.bytes) {
            (Some(d), _) => (d.as_secs().max(1), false),
            (None, Some(b)) => (b.max(1), true),
            (None, None) => (1, false),
        };
        self.by_bytes = by_bytes;
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix:.bold} [{bar:24}] {msg}  elapsed {elapsed_precise}  ETA {eta_precise}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(phase.name.clone());
        self.bar = Some(bar);
    }

    fn tick(&mut self, _index: usize, p: &TimelinePoint, bytes_so_far: u64) {
        let Some(bar) = &self.bar else { return };
        let bytes = (p.read_bytes + p.write_bytes) as f64;
        let ops = (p.read_ops + p.write_ops) as f64;
        bar.set_message(format!("{}  {} IOPS", rate(bytes), count(ops)));
        if self.by_bytes {
            bar.set_position(bytes_so_far);
        } else {
            bar.set_position(p.t_s as u64);
        }
    }

    fn phase_end(&mut self, _index: usize, _r: &PhaseResult) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
