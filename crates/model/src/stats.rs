//! Counting while running: per-class operation and byte counters with HDR latency histograms
//! that merge exactly (across seconds, threads, jobs and nodes). A class's histogram is made on
//! its first operation, so a job pays only for the classes it uses.

use crate::class::OpClass;
use hdrhistogram::Histogram;

/// Latencies are recorded in nanoseconds, 3 significant digits, from 1 ns up to an hour.
pub const LAT_MAX_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    // Starts small (1 s range) and grows when a slower op arrives, so quick runs stay light.
    let mut h = Histogram::new_with_bounds(1, 1_000_000_000, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Counters and latency of one class.
#[derive(Clone, Debug, Default)]
pub struct ClassAcc {
    pub ops: u64,
    pub bytes: u64,
    /// `None` until the first operation.
    pub hist: Option<Histogram<u64>>,
}

impl ClassAcc {
    #[inline]
    pub fn record(&mut self, bytes: u64, lat_ns: u64) {
        self.ops += 1;
        self.bytes += bytes;
        // Auto-resizing histograms only fail beyond u64 range; clamp keeps it infallible.
        let _ = self.hist.get_or_insert_with(new_histogram).record(lat_ns.clamp(1, LAT_MAX_NS));
    }

    pub fn merge(&mut self, other: &ClassAcc) {
        // Saturating: a merged figure may come from another node's message.
        self.ops = self.ops.saturating_add(other.ops);
        self.bytes = self.bytes.saturating_add(other.bytes);
        if let Some(o) = other.hist.as_ref().filter(|h| !h.is_empty()) {
            // Both histograms auto-resize, so `add` cannot run out of range.
            let _ = self.hist.get_or_insert_with(new_histogram).add(o);
        }
    }

    pub fn reset(&mut self) {
        self.ops = 0;
        self.bytes = 0;
        if let Some(h) = &mut self.hist {
            h.reset();
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }
}

/// Everything one worker (or job, or phase) counted, one entry per [`OpClass`].
#[derive(Clone, Debug, Default)]
pub struct Acc {
    classes: [ClassAcc; OpClass::COUNT],
}

impl Acc {
    #[inline]
    pub fn record(&mut self, class: OpClass, bytes: u64, lat_ns: u64) {
        self.classes[class.index()].record(bytes, lat_ns);
    }
    #[inline]
    pub fn get(&self, class: OpClass) -> &ClassAcc {
        &self.classes[class.index()]
    }
    pub fn get_mut(&mut self, class: OpClass) -> &mut ClassAcc {
        &mut self.classes[class.index()]
    }
    /// The classes that saw operations.
    pub fn iter(&self) -> impl Iterator<Item = (OpClass, &ClassAcc)> {
        OpClass::ALL.iter().map(|c| (*c, &self.classes[c.index()])).filter(|(_, a)| !a.is_empty())
    }
    pub fn merge(&mut self, other: &Acc) {
        for (c, a) in other.iter() {
            self.classes[c.index()].merge(a);
        }
    }
    pub fn reset(&mut self) {
        self.classes.iter_mut().for_each(ClassAcc::reset);
    }
    pub fn is_empty(&self) -> bool {
        self.classes.iter().all(ClassAcc::is_empty)
    }
    /// Bytes moved by every class.
    pub fn bytes(&self) -> u64 {
        self.classes.iter().map(|a| a.bytes).sum()
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
            let mut x = ClassAcc::default();
            let mut y = ClassAcc::default();
            let mut all = ClassAcc::default();
            for v in &a { x.record(4096, *v); all.record(4096, *v); }
            for v in &b { y.record(4096, *v); all.record(4096, *v); }
            x.merge(&y);
            prop_assert_eq!(x.ops, all.ops);
            prop_assert_eq!(x.bytes, all.bytes);
            let (xh, ah) = (x.hist.unwrap_or_else(new_histogram), all.hist.unwrap_or_else(new_histogram));
            prop_assert_eq!(xh.len(), ah.len());
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(xh.value_at_quantile(q), ah.value_at_quantile(q));
            }
            prop_assert_eq!(xh.max(), ah.max());
            prop_assert_eq!(xh.min(), ah.min());
        }
    }

    #[test]
    fn huge_latency_is_clamped_not_lost() {
        let mut d = ClassAcc::default();
        d.record(0, u64::MAX);
        assert_eq!(d.ops, 1);
        let h = d.hist.unwrap();
        assert_eq!(h.len(), 1);
        assert!(h.max() >= LAT_MAX_NS / 2);
    }

    #[test]
    fn percentiles_within_precision() {
        let mut d = ClassAcc::default();
        for v in 1..=100_000u64 {
            d.record(0, v * 1000);
        }
        let p99 = d.hist.unwrap().value_at_quantile(0.99) as f64;
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 0.001, "{p99}");
    }

    #[test]
    fn classes_are_kept_apart_and_only_used_ones_allocate() {
        let mut a = Acc::default();
        a.record(OpClass::Create, 0, 1000);
        a.record(OpClass::Write, 4096, 2000);
        assert_eq!(a.iter().map(|(c, _)| c).collect::<Vec<_>>(), vec![OpClass::Write, OpClass::Create]);
        assert!(a.get(OpClass::Read).hist.is_none());
        let mut b = Acc::default();
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.get(OpClass::Create).ops, 2);
        assert_eq!(b.bytes(), 8192);
    }
}
