//! A job's queue-depth search under a latency target (`--latency-target`, fio's
//! `latency_target`, `latency_window`, `latency_percentile`, `latency_run`): the job looks for
//! the highest number of I/Os in flight, from 1 to its iodepth, at which `percentile` percent of
//! the I/Os completed in each `window` take no longer than `target`. The search itself runs in
//! the workload (`iolab_workload::depth_search`); this is what a job asks of it.

use crate::units::duration_serde;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the search holds each window to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    /// The latency an I/O must not exceed (fio's latency_target).
    #[serde(with = "duration_serde")]
    pub target: Duration,
    /// How long each depth is tried before it is judged (fio's latency_window; 0, fio's
    /// default: judged at each reap that completed an I/O).
    #[serde(default, with = "duration_serde")]
    pub window: Duration,
    /// The share of a window's I/Os that must meet the target, 0 to 100 (fio's
    /// latency_percentile, 100 by default: every one, and one over the target lowers the depth
    /// at once).
    #[serde(default = "all")]
    pub percentile: f64,
    /// Keep adjusting the depth for the whole run instead of ending the job once the depth is
    /// found and held for one more window (fio's latency_run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run: bool,
}

fn all() -> f64 {
    100.0
}

impl LatencyTarget {
    /// The target with fio's defaults: a window of 0 and a percentile of 100.
    pub fn new(target: Duration) -> Self {
        LatencyTarget { target, window: Duration::ZERO, percentile: 100.0, run: false }
    }

    /// `Err((field, message))` when a value is outside what the search takes.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.target.is_zero() {
            return Err(("latency_target", "a latency target is above 0 (10ms, 500us)".into()));
        }
        if !(0.0..=100.0).contains(&self.percentile) {
            return Err((
                "latency_percentile",
                format!("{} is not a percentile from 0 to 100 (99.9)", self.percentile),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_fios_and_bad_values_name_their_field() {
        let t = LatencyTarget::new(Duration::from_millis(10));
        assert_eq!((t.window, t.percentile, t.run), (Duration::ZERO, 100.0, false));
        assert!(t.check().is_ok());
        assert_eq!(LatencyTarget { percentile: -1.0, ..t }.check().unwrap_err().0, "latency_percentile");
        assert_eq!(LatencyTarget { percentile: f64::NAN, ..t }.check().unwrap_err().0, "latency_percentile");
        assert_eq!(LatencyTarget { percentile: 100.5, ..t }.check().unwrap_err().0, "latency_percentile");
        assert_eq!(LatencyTarget::new(Duration::ZERO).check().unwrap_err().0, "latency_target");
        let back: LatencyTarget = serde_json::from_str(r#"{"target":"10ms"}"#).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn a_setting_without_the_target_is_refused_naming_both() {
        let p = crate::JobPatch {
            target: Some("/d/f".into()),
            latency_window: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        let e = p.resolve("j").unwrap_err().to_string();
        assert!(e.contains("--latency-window") && e.contains("--latency-target"), "{e}");
        let p = crate::JobPatch { latency_target: Some(Duration::from_millis(2)), latency_percentile: Some(99.9), ..p };
        let t = p.resolve("j").unwrap().latency_target.unwrap();
        assert_eq!((t.target, t.window, t.percentile), (Duration::from_millis(2), Duration::from_secs(1), 99.9));
    }
}
