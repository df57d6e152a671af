//! fio's strided zones (`--zone-size`, `--zone-range`, `--zone-skip`; zonemode=strided): where
//! a block pattern's next I/O goes when the region is visited zone by zone, as fio 3.33's
//! io_u.c (setup_strided_zone_mode) moves it. One of [`crate::pattern`]'s placements, so a job
//! without zones has nothing added per I/O.

use crate::pattern::BlockMap;
use iolab_spec::block::Zones;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// One thread's walk through the zones: the zone's start and the bytes done in it, the
/// sequential position, and for random offsets with a random map, the zone's map.
pub(crate) struct Strided {
    size: u64,
    range: u64,
    skip: u64,
    /// The zone's start, from the region's start (fio's file_offset).
    base: u64,
    /// Bytes of I/O issued in this zone (fio's zone_bytes).
    done: u64,
    /// The next sequential offset (fio's last_pos); `None`: random offsets.
    pos: Option<u64>,
    /// Random offsets visit each block of the zone once per visit (fio's random map, which it
    /// resets for each zone).
    map: Option<Box<BlockMap>>,
}

impl Strided {
    pub(crate) fn new(z: &Zones, random: bool, random_map: bool, align: u64) -> Strided {
        Strided {
            size: z.size.0,
            range: z.range.0,
            skip: z.skip.0,
            base: 0,
            done: 0,
            pos: (!random).then_some(0),
            map: (random && random_map).then(|| Box::new(BlockMap::new(z.range.0 / align))),
        }
    }

    /// The offset (from the region's start) of the next I/O of `len` bytes in a region of
    /// `file_len` bytes; `len` may come back shorter where a random map cuts it.
    pub(crate) fn next(&mut self, len: &mut u32, rng: &mut Xoshiro256PlusPlus, align: u64, file_len: u64) -> u64 {
        // This zone's bytes are done: the next zone, range + skip on; from the start again
        // once that is past the region's end.
        if self.done >= self.size {
            self.done = 0;
            self.base += self.range + self.skip;
            if self.base >= file_len {
                self.base = 0;
            }
            if let Some(p) = &mut self.pos {
                *p = self.base;
            }
        }
        // Every `range` bytes of a zone visited for longer than its range, fio starts its
        // random map afresh (and a sequential pass goes round the zone again, below).
        if self.done.is_multiple_of(self.range) {
            if let Some(m) = &mut self.map {
                m.clear();
            }
        }
        let span = self.range.min(file_len.saturating_sub(self.base));
        let l = *len as u64;
        let at = match &mut self.pos {
            Some(p) => {
                if *p >= self.base + self.range || *p + l > self.base + span {
                    *p = self.base;
                }
                let at = *p;
                *p += l;
                at
            }
            None => match &mut self.map {
                Some(m) => {
                    let (at, cut) = m.take(rng, l, align, align, span, true).unwrap_or((0, l));
                    *len = cut as u32;
                    self.base + at
                }
                None => {
                    let blocks = if span >= l { (span - l) / align + 1 } else { 1 };
                    self.base + rng.random_range(0..blocks) * align
                }
            },
        };
        self.done += *len as u64;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::Bytes;
    use rand::SeedableRng;

    fn offsets(z: Zones, random: bool, map: bool, n: usize, file_len: u64) -> Vec<u64> {
        let mut s = Strided::new(&z, random, map, 4096);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        (0..n)
            .map(|_| {
                let mut len = 4096;
                s.next(&mut len, &mut rng, 4096, file_len)
            })
            .collect()
    }

    #[test]
    fn sequential_zones_are_fios() {
        // fio 3.33, rw=read bs=4k size=8m zonemode=strided zonesize=16k zoneskip=48k
        // (write_iolog): 0 4096 8192 12288 65536 ... and after the last zone, 0 again.
        let z = Zones { size: Bytes::kib(16), range: Bytes::kib(16), skip: Bytes::kib(48) };
        let o = offsets(z, false, false, 516, 8 << 20);
        assert_eq!(o[..8], [0, 4096, 8192, 12288, 65536, 69632, 73728, 77824]);
        assert_eq!(o[508..], [8323072, 8327168, 8331264, 8335360, 0, 4096, 8192, 12288]);
        // zonesize above zonerange: round the zone again until zonesize bytes are done.
        let z = Zones { size: Bytes::kib(16), range: Bytes::kib(8), skip: Bytes(0) };
        assert_eq!(offsets(z, false, false, 6, 1 << 20), [0, 4096, 0, 4096, 8192, 12288]);
    }

    #[test]
    fn random_offsets_stay_in_their_zone() {
        // fio 3.33, rw=randread zonesize=16k zonerange=64k zoneskip=64k: four offsets in
        // [0, 64k), four in [128k, 192k), ...; with the random map no block twice in a visit.
        let z = Zones { size: Bytes::kib(16), range: Bytes::kib(64), skip: Bytes::kib(64) };
        for map in [false, true] {
            let o = offsets(z, true, map, 64, 8 << 20);
            for (i, chunk) in o.chunks(4).enumerate() {
                let base = i as u64 * (128 << 10);
                assert!(chunk.iter().all(|&x| x >= base && x + 4096 <= base + (64 << 10)), "{map} {i}: {chunk:?}");
                if map {
                    let mut c = chunk.to_vec();
                    c.sort();
                    c.dedup();
                    assert_eq!(c.len(), 4, "{chunk:?}");
                }
            }
        }
    }
}
