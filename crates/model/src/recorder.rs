//! A worker's recording buffer for the hot path: latencies go into flat counts laid out as the
//! HDR histogram lays out its buckets (3 significant digits from 1 ns), so recording one is a
//! shift and an increment. An [`Acc`] is settled from it once a second; the histogram that comes
//! out is exactly the one recording each value into HDR directly would give.
//!
//! Recording straight into `hdrhistogram` cost ~5 ns per operation (bounds, auto-resize,
//! min/max and total updates), 5% of a 4 KiB write to /dev/null.

use crate::class::OpClass;
use crate::stats::{new_histogram, Acc, LAT_MAX_NS};

/// Half the number of sub-buckets per bucket, as a power of two (HDR, 3 digits: 2048 per bucket).
const SUB_HALF_MAG: u32 = 10;
const SUB_MASK: u64 = (1 << (SUB_HALF_MAG + 1)) - 1;
/// HDR's `leading_zero_count_base` for a lowest value of 1 (unit magnitude 0).
const LZ_BASE: u32 = 64 - (SUB_HALF_MAG + 1);
/// Latencies up to this go into the flat counts; slower ones (rare) straight into HDR.
pub const FLAT_MAX_NS: u64 = (1 << 31) - 1;
/// Number of flat counts: the index of [`FLAT_MAX_NS`] plus one.
const FLAT_LEN: usize = index_of(FLAT_MAX_NS) + 1;
/// Bytes of an HDR histogram grown to [`LAT_MAX_NS`]'s range (33 half-buckets of 1,024 u64s).
pub const HDR_MAX_BYTES: u64 = 33 * 1024 * 8;
/// Bytes a worker holds per operation class it uses, at most: its flat counts and the second
/// settled from them into HDR on its way to the aggregator. What a run's memory plan counts.
pub const CLASS_BYTES: u64 = (FLAT_LEN * 4) as u64 + HDR_MAX_BYTES;

/// The HDR index of a value (HDR's `index_for`, for lowest value 1 and 3 digits).
#[inline]
const fn index_of(v: u64) -> usize {
    let bucket = LZ_BASE - (v | SUB_MASK).leading_zeros();
    let sub = v >> bucket;
    (((bucket as u64 + 1) << SUB_HALF_MAG) + sub - (1 << SUB_HALF_MAG)) as usize
}

/// The lowest value at an HDR index (HDR's `value_for`): recording it lands on the same index.
#[inline]
fn value_at(index: usize) -> u64 {
    let mut bucket = (index >> SUB_HALF_MAG) as i64 - 1;
    let mut sub = (index as u64 & ((1 << SUB_HALF_MAG) - 1)) + (1 << SUB_HALF_MAG);
    if bucket < 0 {
        sub -= 1 << SUB_HALF_MAG;
        bucket = 0;
    }
    sub << bucket
}

#[cold]
fn new_counts() -> Box<[u32]> {
    vec![0u32; FLAT_LEN].into_boxed_slice()
}

#[derive(Default)]
struct Flat {
    ops: u64,
    bytes: u64,
    /// Made on the class's first operation. u32: a second holds far fewer than 2^32 operations.
    counts: Option<Box<[u32]>>,
}

/// Counts for one worker between two settlements.
#[derive(Default)]
pub struct Recorder {
    flat: [Flat; OpClass::COUNT],
    /// Operations slower than [`FLAT_MAX_NS`], recorded directly.
    slow: Acc,
}

impl Recorder {
    #[inline(always)]
    pub fn record(&mut self, class: OpClass, bytes: u64, lat_ns: u64) {
        if lat_ns > FLAT_MAX_NS {
            self.slow.record(class, bytes, lat_ns.min(LAT_MAX_NS));
            return;
        }
        let f = &mut self.flat[class.index()];
        f.ops += 1;
        f.bytes += bytes;
        let counts = f.counts.get_or_insert_with(new_counts);
        // index_of(FLAT_MAX_NS) < FLAT_LEN, so this index is in range.
        counts[index_of(lat_ns.max(1))] += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.flat.iter().all(|f| f.ops == 0) && self.slow.is_empty()
    }

    /// Everything recorded since the last call, as an `Acc`; the recorder starts again empty.
    pub fn take(&mut self) -> Acc {
        let mut acc = std::mem::take(&mut self.slow);
        for (class, f) in OpClass::ALL.iter().zip(self.flat.iter_mut()) {
            if f.ops == 0 {
                continue;
            }
            let a = acc.get_mut(*class);
            a.ops += std::mem::take(&mut f.ops);
            a.bytes += std::mem::take(&mut f.bytes);
            let h = a.hist.get_or_insert_with(new_histogram);
            if let Some(counts) = f.counts.as_mut() {
                for (i, n) in counts.iter_mut().enumerate().filter(|(_, n)| **n != 0) {
                    // The histogram auto-resizes and every flat value is below LAT_MAX_NS.
                    let _ = h.record_n(value_at(i), u64::from(std::mem::take(n)));
                }
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_hdr_indexes() {
        let h = new_histogram();
        for v in [1u64, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 123_456, 999_999_999, FLAT_MAX_NS] {
            let i = index_of(v);
            assert!(i < FLAT_LEN, "{v}");
            assert_eq!(value_at(i), h.lowest_equivalent(v), "{v}");
            assert_eq!(index_of(value_at(i)), i, "{v}");
        }
    }

    #[test]
    fn settles_to_exactly_the_histogram_of_direct_recording() {
        let mut r = Recorder::default();
        let mut direct = Acc::default();
        // A spread of latencies: 1 ns to 3 s (the slow ones bypass the flat counts).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for k in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lat = match k % 4 {
                0 => 1 + x % 2_000,
                1 => x % 2_000_000,
                2 => x % 100_000_000,
                _ => x % 3_000_000_000,
            };
            let class = if k % 3 == 0 { OpClass::Write } else { OpClass::Read };
            r.record(class, 4096, lat);
            direct.record(class, 4096, lat);
        }
        let got = r.take();
        assert!(r.is_empty(), "take empties the recorder");
        for class in [OpClass::Read, OpClass::Write] {
            let (a, b) = (got.get(class), direct.get(class));
            assert_eq!((a.ops, a.bytes), (b.ops, b.bytes), "{class:?}");
            let (ha, hb) = (a.hist.as_ref().unwrap(), b.hist.as_ref().unwrap());
            assert_eq!(ha.len(), hb.len());
            assert_eq!((ha.min(), ha.max()), (hb.min(), hb.max()), "{class:?}");
            assert_eq!(ha.mean(), hb.mean(), "{class:?}");
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(ha.value_at_quantile(q), hb.value_at_quantile(q), "{class:?} q{q}");
            }
        }
        assert!(got.get(OpClass::Sync).is_empty());
        // A second round starts from zero.
        r.record(OpClass::Sync, 0, 5_000);
        let again = r.take();
        assert_eq!(again.get(OpClass::Sync).ops, 1);
        assert!(again.get(OpClass::Read).is_empty());
    }

    #[test]
    fn the_memory_a_class_takes_is_what_hdr_grows_to() {
        let mut h = new_histogram();
        let _ = h.record(LAT_MAX_NS);
        assert_eq!(h.distinct_values() as u64 * 8, HDR_MAX_BYTES);
        const { assert!(CLASS_BYTES > HDR_MAX_BYTES && CLASS_BYTES < 400 << 10) };
    }
}
