//! The live line on a terminal: throughput, IOPS, elapsed and ETA, updated each second.
//! It draws on stderr and only when stdout is a terminal, so pipes and JSON stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_report::fmt::{count, rate};
use iolab_spec::Phase;
use iolab_workload::results::TimelinePoint;
use iolab_workload::{Event, Expect, Sink};

pub struct Progress {
    enabled: bool,
    quiet: bool,
    bar: Option<ProgressBar>,
    expect: Expect,
}

impl Progress {
    /// `enabled`: draw the bar; `quiet`: also keep messages off stderr (JSON output).
    pub fn new(enabled: bool, quiet: bool) -> Self {
        Progress { enabled, quiet, bar: None, expect: Expect::default() }
    }
}

impl Sink for Progress {
    fn event(&mut self, _node: Option<&str>, event: Event<'_>) {
        match event {
            Event::Message(text) => self.message(text),
            Event::PhaseStart { spec, expect, .. } => self.phase_start(spec, expect),
            Event::Tick { point, bytes_so_far, .. } => self.tick(point, bytes_so_far),
            Event::PhaseEnd { .. } => self.phase_end(),
            _ => {}
        }
    }
}

impl Progress {
    fn message(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(b) => b.println(text),
            None => errln!("{text}"),
        }
    }

    fn phase_start(&mut self, phase: &Phase, expect: Expect) {
        if !self.enabled {
            return;
        }
        let len = match (expect.duration, expect.bytes) {
            (Some(d), _) => d.as_millis().max(1) as u64,
            (None, Some(b)) => b.max(1),
            (None, None) => 1,
        };
        self.expect = expect;
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix:.bold} [{bar:24}] {msg}  elapsed {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(phase.name.clone());
        self.bar = Some(bar);
    }

    fn tick(&mut self, p: &TimelinePoint, bytes_so_far: u64) {
        let Some(bar) = &self.bar else { return };
        let bytes = (p.read_bytes + p.write_bytes) as f64;
        let ops = (p.read_ops + p.write_ops) as f64;
        let elapsed = bar.elapsed();
        // The ETA is ours: a time-bounded phase knows its end, a size-bounded one extrapolates.
        let eta = match (self.expect.duration, self.expect.bytes) {
            (Some(d), _) => {
                bar.set_position(elapsed.as_millis() as u64);
                Some(d.saturating_sub(elapsed))
            }
            (None, Some(total)) if bytes_so_far > 0 => {
                bar.set_position(bytes_so_far);
                let left = total.saturating_sub(bytes_so_far) as f64 / bytes_so_far as f64;
                Some(elapsed.mul_f64(left))
            }
            _ => None,
        };
        let eta = eta.map(|d| format!("  ETA {:02}:{:02}", d.as_secs() / 60, d.as_secs() % 60)).unwrap_or_default();
        bar.set_message(format!("{}  {} IOPS{eta}", rate(bytes), count(ops)));
    }

    fn phase_end(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
