//! The one fixed set of latency buckets every `iolab_operation_latency_seconds` histogram is
//! exposed with, and how a class's HDR histogram (3 significant digits, ns) folds into it. A
//! fixed set, the same on every node, run and version, is what lets Prometheus add histograms
//! across nodes and jobs and take `histogram_quantile` over them (docs/metrics.md lists it).

use hdrhistogram::Histogram;

/// How many finite bounds; `+Inf` follows them.
pub const COUNT: usize = 25;

/// The buckets' upper bounds in ns: 1, 2.5 and 5 of each decade from 100 ns to 10 s (page-cache
/// hits to a stalled array).
pub const BOUNDS_NS: [u64; COUNT] = [
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// A histogram folded into the fixed buckets: the count in each (not cumulative; the encoder
/// adds them up), the count above the last bound, and the sum of the latencies.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    pub buckets: [u64; COUNT],
    pub over: u64,
    /// The latencies' sum in seconds (HDR's: each value as its bucket's middle, within 0.1%).
    pub sum_s: f64,
}

impl Default for Folded {
    fn default() -> Self {
        Folded { buckets: [0; COUNT], over: 0, sum_s: 0.0 }
    }
}

impl Folded {
    /// Fold an HDR histogram: each recorded value counts under the first bound at or above the
    /// lowest value its HDR bucket holds (so a value recorded exactly at a bound counts under
    /// that bound; HDR's resolution is 0.1% of the value).
    pub fn of(h: &Histogram<u64>) -> Folded {
        let mut f = Folded::default();
        for v in h.iter_recorded() {
            let value = h.lowest_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            match BOUNDS_NS.iter().position(|b| value <= *b) {
                Some(i) => f.buckets[i] = f.buckets[i].saturating_add(n),
                None => f.over = f.over.saturating_add(n),
            }
        }
        f.sum_s = h.mean() * h.len() as f64 / 1e9;
        f
    }

    /// Every value counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().fold(self.over, |a, b| a.saturating_add(*b))
    }

    /// Add another fold (another job's, another phase's of the same name).
    pub fn add(&mut self, o: &Folded) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets) {
            *a = a.saturating_add(b);
        }
        self.over = self.over.saturating_add(o.over);
        self.sum_s += o.sum_s;
    }

    /// The buckets as the encoder takes them: (upper bound in seconds, count in that bucket),
    /// `+Inf` last (OpenMetrics's encoder writes only the buckets it is given).
    pub fn per_bucket(&self) -> [(f64, u64); COUNT + 1] {
        let mut out = [(f64::INFINITY, self.over); COUNT + 1];
        for (i, o) in out.iter_mut().take(COUNT).enumerate() {
            *o = (BOUNDS_NS[i] as f64 / 1e9, self.buckets[i]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = iolab_model::new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn values_land_under_the_first_bound_at_or_above_them() {
        // 90 ns and 100 ns under 100 ns; 101 under 250; 2.5 µs under 2.5 µs; 20 s over all.
        let f = Folded::of(&hist(&[90, 100, 101, 2_500, 999_999, 1_000_000, 20_000_000_000]));
        assert_eq!((f.buckets[0], f.buckets[1]), (2, 1));
        assert_eq!(f.buckets[4], 1, "2.5 µs is its own bound's");
        assert_eq!(f.buckets[12], 2, "999,999 ns (within HDR's 0.1%) and 1 ms count under 1 ms");
        assert_eq!(f.over, 1);
        assert_eq!(f.count(), 7);
        let h = hist(&[90, 100, 101, 2_500, 999_999, 1_000_000, 20_000_000_000]);
        assert!((f.sum_s - h.mean() * 7.0 / 1e9).abs() < 1e-12);
    }

    #[test]
    fn counts_at_each_bound_agree_with_the_histogram_within_its_resolution() {
        let values: Vec<u64> = (0..5000u64).map(|i| 50 + i * i * 97 % 3_000_000_000).collect();
        let h = hist(&values);
        let f = Folded::of(&h);
        let mut cum = 0;
        for (i, b) in BOUNDS_NS.iter().enumerate() {
            cum += f.buckets[i];
            let exact = values.iter().filter(|v| **v <= *b).count() as u64;
            let lo = values.iter().filter(|v| **v as f64 <= *b as f64 * 0.998).count() as u64;
            let hi = values.iter().filter(|v| **v as f64 <= *b as f64 * 1.002).count() as u64;
            assert!((lo..=hi).contains(&cum), "le {b}: {cum} against {exact}");
        }
        assert_eq!(f.count(), values.len() as u64);
    }

    #[test]
    fn folds_add_like_the_histograms_they_came_from() {
        let (a, b) = (hist(&[300, 4_000, 70_000]), hist(&[300, 9_000_000]));
        let mut f = Folded::of(&a);
        f.add(&Folded::of(&b));
        let mut both = a.clone();
        both.add(&b).unwrap();
        assert_eq!(f.buckets, Folded::of(&both).buckets);
        assert!((f.sum_s - Folded::of(&both).sum_s).abs() < 1e-12);
        assert_eq!(Folded::of(&iolab_model::new_histogram()), Folded::default());
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }
}
