//! Counting while running: per-direction op and byte counters with HDR latency histograms
//! that merge exactly (across seconds, threads, jobs and, later, nodes).

use hdrhistogram::Histogram;

/// Latencies are recorded in nanoseconds, 3 significant digits, from 1 ns up to an hour.
pub const LAT_MAX_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    // Starts small (1 s range) and grows when a slower op arrives, so quick runs stay light.
    let mut h = Histogram::new_with_bounds(1, 1_000_000_000, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Counters and latency of one direction (read, write or sync).
#[derive(Clone, Debug)]
pub struct DirAcc {
    pub ops: u64,
    pub bytes: u64,
    pub hist: Histogram<u64>,
}

impl Default for DirAcc {
    fn default() -> Self {
        DirAcc { ops: 0, bytes: 0, hist: new_histogram() }
    }
}

impl DirAcc {
    #[inline]
    pub fn record(&mut self, bytes: u64, lat_ns: u64) {
        self.ops += 1;
        self.bytes += bytes;
        // Auto-resizing histograms only fail beyond u64 range; clamp keeps it infallible.
        let _ = self.hist.record(lat_ns.clamp(1, LAT_MAX_NS));
    }

    pub fn merge(&mut self, other: &DirAcc) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        // Both histograms auto-resize, so `add` cannot run out of range.
        let _ = self.hist.add(&other.hist);
    }

    pub fn reset(&mut self) {
        self.ops = 0;
        self.bytes = 0;
        self.hist.reset();
    }

    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }
}

/// Everything one worker (or job, or phase) counted.
#[derive(Clone, Debug, Default)]
pub struct Acc {
    pub read: DirAcc,
    pub write: DirAcc,
    pub sync: DirAcc,
}

impl Acc {
    pub fn merge(&mut self, other: &Acc) {
        self.read.merge(&other.read);
        self.write.merge(&other.write);
        self.sync.merge(&other.sync);
    }
    pub fn reset(&mut self) {
        self.read.reset();
        self.write.reset();
        self.sync.reset();
    }
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty() && self.sync.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Merging per-thread histograms gives the histogram of all values.
        #[test]
        fn merge_equals_recording_everything(a in prop::collection::vec(1u64..10_000_000_000, 0..300),
                                              b in prop::collection::vec(1u64..10_000_000_000, 0..300)) {
            let mut x = DirAcc::default();
            let mut y = DirAcc::default();
            let mut all = DirAcc::default();
            for v in &a { x.record(4096, *v); all.record(4096, *v); }
            for v in &b { y.record(4096, *v); all.record(4096, *v); }
            x.merge(&y);
            prop_assert_eq!(x.ops, all.ops);
            prop_assert_eq!(x.bytes, all.bytes);
            prop_assert_eq!(x.hist.len(), all.hist.len());
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(x.hist.value_at_quantile(q), all.hist.value_at_quantile(q));
            }
            prop_assert_eq!(x.hist.max(), all.hist.max());
            prop_assert_eq!(x.hist.min(), all.hist.min());
        }
    }

    #[test]
    fn huge_latency_is_clamped_not_lost() {
        let mut d = DirAcc::default();
        d.record(0, u64::MAX);
        assert_eq!(d.ops, 1);
        assert_eq!(d.hist.len(), 1);
        assert!(d.hist.max() >= LAT_MAX_NS / 2);
    }

    #[test]
    fn percentiles_within_precision() {
        let mut d = DirAcc::default();
        for v in 1..=100_000u64 {
            d.record(0, v * 1000);
        }
        let p99 = d.hist.value_at_quantile(0.99) as f64;
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 0.001, "{p99}");
    }
}
