//! The content checker against a file kept in memory: clean histories of writes at any offset
//! and length read back without a finding, and 1,000 injected faults of each kind are each
//! found, with their class, at their sector.

use super::*;

/// A small deterministic generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A file in memory and what the checker knows of it.
struct File {
    disk: Vec<u8>,
    c: Content,
    st: Stamper,
}

impl File {
    fn new(id: u64) -> File {
        File { disk: Vec::new(), c: Content::new(id, true), st: Stamper::new(id, 7, 0) }
    }
    /// The bytes a write of `len` at `offset` carries, with its key (the checker told).
    fn make(&mut self, offset: u64, len: u64) -> (Vec<u8>, u8) {
        let key = self.c.begin_write();
        let mut b = vec![0u8; len as usize];
        fill(&mut self.st, &mut b, offset, key, 1 << 20);
        (b, key)
    }
    fn land(&mut self, offset: u64, b: &[u8]) {
        let end = offset as usize + b.len();
        if self.disk.len() < end {
            self.disk.resize(end, 0);
        }
        self.disk[offset as usize..end].copy_from_slice(b);
    }
    fn write(&mut self, offset: u64, len: u64) -> u8 {
        let (b, key) = self.make(offset, len);
        self.land(offset, &b);
        self.c.end_write(offset, len, key, Some(len));
        key
    }
    fn read(&self, offset: u64, len: u64) -> (u64, Vec<(u64, u8, Finding)>) {
        let lo = (offset as usize).min(self.disk.len());
        let hi = (offset as usize + len as usize).min(self.disk.len());
        self.c.check(&self.disk[lo..hi], offset, len)
    }
    fn read_all(&self) -> Vec<(u64, u8, Finding)> {
        self.read(0, self.disk.len() as u64 + 4096).1
    }
    /// A history of writes of any length, at any offset, most within 64 KiB.
    fn history(rng: &mut Rng, id: u64) -> File {
        let mut f = File::new(id);
        for _ in 0..1 + rng.below(12) {
            let off = if rng.below(3) == 0 { f.disk.len() as u64 } else { rng.below(64 << 10) };
            let max = if rng.below(2) == 0 { 700 } else { 16 << 10 };
            let len = 1 + rng.below(max);
            f.write(off, len);
        }
        f
    }
}

#[test]
fn clean_histories_read_back_without_a_finding_whatever_the_read() {
    let mut rng = Rng(1);
    for t in 0..2000 {
        let mut f = File::history(&mut rng, t);
        if t % 7 == 0 {
            f.c.truncate(f.disk.len() as u64 / 2);
            f.disk.truncate(f.disk.len() / 2);
        }
        let (checked, found) = f.read(0, f.disk.len() as u64);
        assert!(found.is_empty(), "trial {t}: {found:?}");
        assert_eq!(checked, sectors(0, f.disk.len() as u64), "trial {t}");
        for _ in 0..8 {
            let off = rng.below(f.disk.len() as u64 + 1);
            let len = 1 + rng.below(9000);
            let found = f.read(off, len).1;
            assert!(found.is_empty(), "trial {t}, read of {len} at {off}: {found:?}");
        }
    }
}

/// Inject `n` faults with `inject` (which returns the sector it expects named and the class)
/// and check that the whole-file read finds exactly that.
fn each_found(seed: u64, inject: impl Fn(&mut Rng, &mut File) -> Option<(u64, ErrorClass)>) {
    let mut rng = Rng(seed);
    let mut done = 0;
    let mut t = 0;
    while done < 1000 {
        t += 1;
        let mut f = File::history(&mut rng, t);
        let Some((sector, class)) = inject(&mut rng, &mut f) else { continue };
        let found = f.read_all();
        assert_eq!(found.len(), 1, "trial {t}: one finding expected, got {found:?}");
        let (s, _, x) = &found[0];
        assert_eq!((*s, x.class), (sector, class), "trial {t}: {}", x.detail);
        done += 1;
    }
}

#[test]
fn a_flipped_bit_is_corruption_where_it_is() {
    each_found(2, |rng, f| {
        let at = rng.below(f.disk.len() as u64);
        // Only in written bytes (a hole's byte flipped is corruption too, tested below).
        if f.c.key_at(at) == 0 {
            return None;
        }
        f.disk[at as usize] ^= 1 << rng.below(8);
        Some((at & !511, ErrorClass::Corrupted))
    });
}

#[test]
fn a_dropped_overwrite_is_a_lost_write_and_a_dropped_first_write_reads_as_never_written() {
    each_found(3, |rng, f| {
        let len = f.disk.len() as u64;
        let off = rng.below(len);
        let n = (1 + rng.below(3000)).min(len - off);
        // Over bytes all written before (an older key) or all holes (zeros).
        let before: Vec<u8> = (off..off + n).map(|o| f.c.key_at(o)).collect();
        let never = before.iter().all(|&k| k == 0);
        if !never && before.contains(&0) {
            return None;
        }
        let (_, key) = f.make(off, n);
        f.c.end_write(off, n, key, Some(n));
        let class = if never { ErrorClass::NeverWritten } else { ErrorClass::LostWrite };
        Some((off & !511, class))
    });
}

#[test]
fn a_write_landing_elsewhere_is_misdirected_where_it_landed() {
    each_found(4, |rng, f| {
        // A whole-sector write meant for `off` lands on written sectors at `to`.
        let len = f.disk.len() as u64 & !511;
        if len < 4096 {
            return None;
        }
        let n = 512 * (1 + rng.below(4));
        let off = rng.below((len - n) / 512) * 512;
        let to = rng.below((len - n) / 512) * 512;
        if to < off + n && off < to + n || (to..to + n).any(|o| matches!(f.c.key_at(o), 0 | UNKNOWN)) {
            return None;
        }
        let (b, key) = f.make(off, n);
        f.land(to, &b);
        // Where it was meant to go the old data stays: read only where it landed.
        f.c.end_write(off, n, key, Some(n));
        f.c.forget(off, n);
        Some((to, ErrorClass::Misdirected))
    });
}

#[test]
fn a_write_of_which_only_the_first_sectors_landed_is_torn() {
    each_found(5, |rng, f| {
        let len = f.disk.len() as u64 & !511;
        if len < 4096 {
            return None;
        }
        let n = 512 * (2 + rng.below(6));
        let off = rng.below((len - n) / 512 + 1) * 512;
        if (off..off + n).any(|o| matches!(f.c.key_at(o), 0 | UNKNOWN)) {
            return None;
        }
        let (b, key) = f.make(off, n);
        let landed = 512 * (1 + rng.below(n / 512 - 1));
        f.land(off, &b[..landed as usize]);
        f.c.end_write(off, n, key, Some(n));
        Some((off + landed, ErrorClass::Torn))
    });
}

#[test]
fn a_truncated_file_is_a_lost_write_at_its_new_end_and_a_hole_must_read_as_zeros() {
    each_found(6, |rng, f| {
        let len = f.disk.len() as u64;
        let cut = rng.below(len);
        if f.c.key_at(cut) == 0 && f.c.key_at(len - 1) == 0 {
            return None;
        }
        f.disk.truncate(cut as usize);
        Some((cut & !511, ErrorClass::LostWrite))
    });
    each_found(7, |rng, f| {
        let at = rng.below(f.disk.len() as u64);
        if f.c.key_at(at) != 0 {
            return None;
        }
        f.disk[at as usize] = 1 + rng.below(255) as u8;
        Some((at & !511, ErrorClass::Corrupted))
    });
}

#[test]
fn contended_and_failed_writes_are_not_checked_and_a_file_not_created_only_where_written() {
    let mut f = File::new(9);
    f.write(0, 10_000);
    // Two writes in flight together: either may have landed last.
    let (b1, k1) = f.make(100, 2000);
    let (b2, k2) = f.make(1000, 2000);
    f.land(1000, &b2);
    f.land(100, &b1);
    f.c.end_write(1000, 2000, k2, Some(2000));
    f.c.end_write(100, 2000, k1, Some(2000));
    assert!(f.read_all().is_empty());
    // A write that failed: its range is not known, nor the file's length.
    let (_, k) = f.make(9000, 5000);
    f.c.end_write(9000, 5000, k, None);
    f.disk[9500] ^= 1;
    assert!(f.read_all().is_empty());
    assert!(!f.c.known());
    // A file the run did not create: what it holds before is not checked, what it wrote is.
    let mut g = File { disk: vec![0xAB; 8192], c: Content::new(10, false), st: Stamper::new(10, 7, 0) };
    g.write(1000, 3000);
    assert!(g.read_all().is_empty());
    g.disk[2000] ^= 1;
    let found = g.read_all();
    assert_eq!((found.len(), found[0].0, found[0].2.class), (1, 1536, ErrorClass::Corrupted));
}

#[test]
fn any_bytes_read_anywhere_are_judged_without_a_panic() {
    // What a read brings in is the storage's to say: garbage, stamps of other places, headers
    // with hostile fields; every read is judged, never a panic.
    let mut rng = Rng(8);
    for t in 0..3000 {
        let f = File::history(&mut rng, t);
        let off = rng.below(80 << 10);
        let len = 1 + rng.below(20_000);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if t % 3 == 0 && len >= 512 {
            // A header-shaped sector with random fields.
            junk[..4].copy_from_slice(&crate::sector::MAGIC);
            junk[4] = (rng.next() % 4) as u8;
            junk[5] = rng.next() as u8;
        }
        if t % 5 == 0 {
            // Another file's real data.
            let g = File::history(&mut rng, t + 1_000_000);
            let n = g.disk.len().min(junk.len());
            junk[..n].copy_from_slice(&g.disk[..n]);
        }
        let got = rng.below(len + 1);
        let _ = f.c.check(&junk[..got as usize], off, len);
    }
}
