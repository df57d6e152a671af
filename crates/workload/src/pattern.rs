//! Access patterns: where the next I/O goes and how large it is. Sequential, strided,
//! uniform random, zipf and fio's pareto, normal, zoned and zoned_abs, with weighted block sizes and a read/write mix, all seeded so
//! the same job does the same I/O every time.

use iolab_spec::{BlockJob, Dist};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The direction of one data operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// One planned data operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub dir: Dir,
    pub offset: u64,
    pub len: u32,
}

enum Where {
    /// Sequential: the next offset of each direction (reads', writes'), each its own sequence
    /// as fio's `last_pos[ddir]` (a mixed `rw=rw` reads 0, 4k, 8k... and writes 0, 4k, ...).
    Seq {
        pos: [u64; 2],
        step: Option<u64>,
    },
    /// fio's `rw=read:-N` (io_u.c, get_next_seq_offset): the first I/O at the region's start,
    /// each next one `back` bytes before the previous one's end, and from before the start to
    /// `back` before the region's end.
    Back {
        end: Option<u64>,
        back: u64,
    },
    Uniform {
        blocks: u64,
    },
    /// Uniform with fio's random map (`--random-map`): each block once per pass.
    Mapped(Box<BlockMap>),
    Zipf {
        blocks: u64,
        zipf: Zipf<f64>,
        mult: u64,
    },
    /// fio's pareto: rank `(blocks-1) * u^pow`, scattered as zipf's ranks are.
    Pareto {
        blocks: u64,
        pow: f64,
        mult: u64,
    },
    /// fio's normal (lib/gauss.c): the mean of 12 uniform draws over 0..=blocks, plus a uniform
    /// deviation of `dev` blocks centred on 0, scattered as zipf's ranks are.
    Normal {
        blocks: u64,
        dev: u64,
        mult: u64,
    },
    /// fio's zoned and zoned_abs: for each percent 1..=100, the (first block, blocks) of its zone.
    Zoned(Box<[(u64, u64); 100]>),
    /// fio's strided zones (`--zone-size`): sequential or uniform random within each zone.
    Strided(Box<crate::strided::Strided>),
}

/// Generates the accesses of one worker thread.
pub struct Pattern {
    rng: Xoshiro256PlusPlus,
    sizes: Vec<(u32, u32)>,
    total_weight: u32,
    /// The writes' sizes and their total weight, when they differ from the reads' (`write_bs`).
    write_sizes: Option<(Vec<(u32, u32)>, u32)>,
    read_pct: u32,
    /// The smallest size of each direction (reads', writes'): a random map cuts an I/O only to
    /// a multiple of its direction's, as fio's mark_random_map does (`min_bs[ddir]`), so a
    /// direction of one size is never cut.
    min_len: [u64; 2],
    reads: bool,
    writes: bool,
    file_len: u64,
    align: u64,
    wrap: bool,
    remaining: Option<u64>,
    /// Accesses left before the pattern ends (`--max-ios`; `u64::MAX`: no such bound).
    ops_left: u64,
    place: Where,
    held: Option<Access>,
    /// Bytes left in the current pass over the file, when passes are told apart
    /// ([`Pattern::track_passes`]); else so large it never runs out.
    pass_left: u64,
    /// The bytes of a pass (the file's length), 0 when passes are not told apart.
    pass_len: u64,
    /// The first access of a pass that has not started yet, and the accesses left to take
    /// (`ops_left`, set to 0 meanwhile so the pattern gives nothing until [`Pattern::start_pass`]).
    next_pass: Option<(Access, u64)>,
}

impl Pattern {
    /// `file_len`: usable bytes of the file; `wrap`: start over at the end (time-bounded runs);
    /// `budget`: bytes to issue before the pattern ends (`None` = one pass for sequential, `file_len` for random).
    pub fn new(job: &BlockJob, seed: u64, thread: u32, file_len: u64, wrap: bool, budget: Option<u64>) -> Self {
        let seed = seed.wrapping_add((thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let list =
            |bs: &iolab_spec::BlockSizes| -> Vec<(u32, u32)> { bs.0.iter().map(|(b, w)| (b.0 as u32, *w)).collect() };
        let sizes = list(&job.bs);
        let write_sizes = job.write_bs.as_ref().map(|w| {
            let l = list(w);
            let total = l.iter().map(|s| s.1).sum();
            (l, total)
        });
        let every = || sizes.iter().chain(write_sizes.iter().flat_map(|w| w.0.iter())).map(|s| s.0 as u64);
        let max_bs = every().max().unwrap_or(4096);
        let min_bs = every().min().unwrap_or(4096);
        // Random offsets are aligned to the smallest block size, so every I/O stays direct-I/O
        // aligned, unless the job says otherwise (fio's blockalign).
        let align = job.align.map_or(min_bs, |a| a.get());
        let blocks = if file_len >= max_bs { (file_len - max_bs) / align + 1 } else { 1 };
        let place = if let Some(z) = &job.zones {
            Where::Strided(Box::new(crate::strided::Strided::new(z, job.rw.is_random(), job.random_map, align)))
        } else if let Some(back) = job.backward {
            Where::Back { end: None, back: back.0 }
        } else if !job.rw.is_random() {
            Where::Seq { pos: [0, 0], step: job.stride.map(|s| s.0) }
        } else {
            match &job.dist {
                Dist::Uniform if job.random_map => Where::Mapped(Box::new(BlockMap::new(file_len / align))),
                Dist::Uniform => Where::Uniform { blocks },
                Dist::Pareto(h) => {
                    Where::Pareto { blocks, pow: h.ln() / (1.0 - h).ln(), mult: coprime_multiplier(blocks) }
                }
                Dist::Normal(d) => Where::Normal {
                    blocks,
                    // fio: ceil(blocks * dev / 100), at most half the blocks.
                    dev: ((blocks as f64 * d / 100.0).ceil() as u64).min(blocks / 2),
                    mult: coprime_multiplier(blocks),
                },
                Dist::Zoned(z) => Where::Zoned(zone_table(blocks, z.iter().map(|&(a, r)| (a, r as u64)), |at, len| {
                    (pct_of(at, blocks), pct_of(len, blocks))
                })),
                Dist::ZonedAbs(z) => Where::Zoned(zone_table(blocks, z.iter().map(|&(a, r)| (a, r.0)), |at, len| {
                    (at / align, at.saturating_add(len) / align - at / align)
                })),
                &Dist::Zipf(theta) => Where::Zipf {
                    blocks,
                    zipf: Zipf::new(blocks as f64, theta)
                        .unwrap_or_else(|_| Zipf::new(blocks as f64, 1.0).expect("n >= 1")),
                    mult: coprime_multiplier(blocks),
                },
            }
        };
        let remaining = match budget {
            Some(b) => Some(b),
            // A backward pass moves the region's size, as fio's does (it never meets the end);
            // so does a pass through strided zones, going round the region as often as it takes.
            // So does a mixed sequential pass: each direction keeps its own place, so neither
            // meets the end in one pass (fio's io_size: the region's bytes in all).
            None if job.rw.is_random()
                || job.backward.is_some()
                || job.zones.is_some()
                || (job.rw.reads() && job.rw.writes()) =>
            {
                Some(file_len)
            }
            None => None,
        };
        let min_len = {
            let min = |l: &[(u32, u32)]| l.iter().map(|s| s.0 as u64).min().unwrap_or(4096);
            let r = min(&sizes);
            [r, write_sizes.as_ref().map_or(r, |w| min(&w.0))]
        };
        Pattern {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            total_weight: sizes.iter().map(|s| s.1).sum(),
            sizes,
            write_sizes,
            read_pct: job.mix as u32,
            min_len,
            reads: job.rw.reads(),
            writes: job.rw.writes(),
            file_len,
            align,
            wrap,
            remaining,
            ops_left: u64::MAX,
            place,
            held: None,
            pass_left: u64::MAX,
            pass_len: 0,
            next_pass: None,
        }
    }

    /// Tell the passes over the file apart (fio's passes of a time-based or looping job: each
    /// `file_len` bytes issued): at each pass's end the pattern gives `None` once, with
    /// [`Pattern::pass_ended`] true, until [`Pattern::start_pass`]; the caller drops the file's
    /// cached pages there, as fio's invalidate does at each pass.
    pub fn track_passes(&mut self) {
        if self.file_len > 0 {
            (self.pass_len, self.pass_left) = (self.file_len, self.file_len);
        }
    }

    /// The bytes of a pass (0 when passes are not told apart).
    pub fn pass_len(&self) -> u64 {
        self.pass_len
    }

    /// Whether the pattern waits at a pass's end for [`Pattern::start_pass`].
    pub fn pass_ended(&self) -> bool {
        self.next_pass.is_some()
    }

    /// Start the next pass: its first access comes next.
    pub fn start_pass(&mut self) {
        if let Some((a, ops)) = self.next_pass.take() {
            (self.held, self.ops_left) = (Some(a), ops);
        }
    }

    /// An access past the current pass's end: it opens the next pass, held until it starts.
    #[cold]
    #[inline(never)]
    fn pass_over(&mut self, a: Access) -> Option<Access> {
        self.pass_left = self.pass_len.saturating_sub(a.len as u64);
        self.next_pass = Some((a, self.ops_left));
        self.ops_left = 0;
        None
    }

    /// End the pattern after `n` accesses, if nothing ends it first (fio's number_ios).
    pub fn limit_ops(&mut self, n: u64) {
        self.ops_left = n;
    }

    #[inline]
    fn pick_len(&mut self) -> u32 {
        if self.sizes.len() == 1 {
            return self.sizes[0].0;
        }
        let mut x = self.rng.random_range(0..self.total_weight);
        for &(len, w) in &self.sizes {
            if x < w {
                return len;
            }
            x -= w;
        }
        self.sizes[self.sizes.len() - 1].0
    }

    /// A write's size from the writes' own list (`write_bs`).
    #[cold]
    fn pick_write_len(&mut self) -> u32 {
        let Some((sizes, total)) = &self.write_sizes else { return self.pick_len() };
        if sizes.len() == 1 {
            return sizes[0].0;
        }
        let mut x = self.rng.random_range(0..*total);
        for &(len, w) in sizes {
            if x < w {
                return len;
            }
            x -= w;
        }
        sizes[sizes.len() - 1].0
    }

    #[inline]
    fn pick_dir(&mut self) -> Dir {
        match (self.reads, self.writes) {
            (true, false) => Dir::Read,
            (false, true) => Dir::Write,
            _ => {
                if self.rng.random_range(0..100) < self.read_pct {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        }
    }

    /// The next access, or `None` when the pattern is done.
    #[inline(always)]
    pub fn next_access(&mut self) -> Option<Access> {
        if let Some(a) = self.held.take() {
            return Some(a);
        }
        if self.remaining == Some(0) || self.ops_left == 0 {
            return None;
        }
        self.ops_left -= 1;
        let (mut len, dir) = if self.write_sizes.is_none() {
            (self.pick_len(), self.pick_dir())
        } else {
            // Sizes by direction: the direction first.
            match self.pick_dir() {
                Dir::Read => (self.pick_len(), Dir::Read),
                Dir::Write => (self.pick_write_len(), Dir::Write),
            }
        };
        let offset = match &mut self.place {
            Where::Seq { pos, step } => {
                let pos = &mut pos[usize::from(dir == Dir::Write)];
                if *pos + len as u64 > self.file_len {
                    if !self.wrap || self.file_len < len as u64 {
                        // A last partial block, as dd writes one at the end of a count.
                        let left = self.file_len.saturating_sub(*pos);
                        if left == 0 || self.wrap || left % 512 != 0 {
                            return None;
                        }
                        len = left as u32;
                    } else {
                        *pos = 0;
                    }
                }
                let at = *pos;
                *pos += step.unwrap_or(len as u64);
                at
            }
            Where::Back { end, back } => {
                let at = match *end {
                    None => 0,
                    Some(e) => match e.checked_sub(*back) {
                        Some(p) if p + len as u64 <= self.file_len => p,
                        _ => self.file_len.saturating_sub(*back),
                    },
                };
                *end = Some(at + len as u64);
                at
            }
            Where::Uniform { blocks } => self.rng.random_range(0..*blocks) * self.align,
            Where::Mapped(map) => {
                let unit = self.min_len[usize::from(dir == Dir::Write)];
                let (at, cut) = map.take(&mut self.rng, len as u64, self.align, unit, self.file_len, self.wrap)?;
                len = cut as u32;
                at
            }
            Where::Zipf { blocks, zipf, mult } => {
                // Zipf ranks are 1-based; scatter them over the file so hot blocks are not all at its start.
                let rank = (zipf.sample(&mut self.rng) as u64).saturating_sub(1).min(*blocks - 1);
                ((rank as u128 * *mult as u128) % *blocks as u128) as u64 * self.align
            }
            Where::Pareto { .. } | Where::Normal { .. } | Where::Zoned(_) => self.skewed_block() * self.align,
            Where::Strided(z) => z.next(&mut len, &mut self.rng, self.align, self.file_len),
        };
        if let Some(r) = &mut self.remaining {
            if (len as u64) > *r {
                len = (*r).max(self.align.min(len as u64)) as u32;
            }
            *r = r.saturating_sub(len as u64);
        }
        // Passes told apart: one compare per access (never true when they are not).
        if self.pass_left < len as u64 {
            return self.pass_over(Access { dir, offset, len });
        }
        self.pass_left -= len as u64;
        Some(Access { dir, offset, len })
    }
}

impl Pattern {
    /// The access going the other way (a direction ahead of its rate gives way): its size
    /// drawn again from the other direction's list when the two differ (`write_bs`).
    pub fn turn(&mut self, a: Access) -> Access {
        let dir = match a.dir {
            Dir::Read => Dir::Write,
            Dir::Write => Dir::Read,
        };
        let len = match (&self.write_sizes, dir) {
            (None, _) => a.len,
            (Some(_), Dir::Write) => self.pick_write_len(),
            (Some(_), Dir::Read) => self.pick_len(),
        };
        Access { dir, len, ..a }
    }

    /// Give an access back; the next call returns it again (a rate limiter that peeked too early).
    pub fn push_back(&mut self, a: Access) {
        self.held = Some(a);
    }
}

impl Pattern {
    /// The block of a pareto, normal or zoned draw, as fio draws it (kept out of line: only
    /// jobs with these distributions come here).
    #[inline(never)]
    fn skewed_block(&mut self) -> u64 {
        match &self.place {
            Where::Pareto { blocks, pow, mult } => {
                let rank = ((*blocks - 1) as f64 * self.rng.random::<f64>().powf(*pow)) as u64;
                scatter(rank.min(*blocks - 1), *mult, *blocks)
            }
            Where::Normal { blocks, dev, mult } => {
                let (n, dev) = (*blocks, *dev);
                let mut sum: u64 = (0..12).map(|_| self.rng.random_range(0..=n)).sum();
                sum = sum.div_ceil(12);
                if dev > 0 {
                    let mut d = self.rng.random_range(0..dev) as i64 - (dev / 2) as i64;
                    while sum as i64 + d < 0 || sum as i64 + d >= n as i64 {
                        d /= 2;
                    }
                    sum = (sum as i64 + d) as u64;
                }
                scatter(sum.min(n - 1), *mult, n)
            }
            Where::Zoned(table) => {
                let (first, len) = table[self.rng.random_range(0..100usize)];
                first + self.rng.random_range(0..len)
            }
            _ => 0,
        }
    }
}

/// fio's random map (lib/axmap.c, io_u.c): which blocks of a pass are done. A drawn block that is
/// done gives way to the next free one after it (wrapping to the start), and an I/O is cut at
/// the first done block it would reach (fio's mark_random_map); a full map ends the pass, or,
/// time-bounded, starts the next.
pub(crate) struct BlockMap {
    bits: Vec<u64>,
    blocks: u64,
    done: u64,
}

impl BlockMap {
    pub(crate) fn new(blocks: u64) -> BlockMap {
        let blocks = blocks.max(1);
        BlockMap { bits: vec![0; blocks.div_ceil(64) as usize], blocks, done: 0 }
    }

    /// Every block free again.
    pub(crate) fn clear(&mut self) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        self.done = 0;
    }

    fn is_set(&self, b: u64) -> bool {
        self.bits[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// The first free block at or after `from`, else the first from the start.
    fn next_free(&self, from: u64) -> Option<u64> {
        let scan = |lo: u64, hi: u64| -> Option<u64> {
            let mut b = lo;
            while b < hi {
                let w = self.bits[(b / 64) as usize] | ((1u64 << (b % 64)) - 1);
                if w != u64::MAX {
                    let f = (b / 64) * 64 + (!w).trailing_zeros() as u64;
                    return (f < hi).then_some(f);
                }
                b = (b / 64 + 1) * 64;
            }
            None
        };
        scan(from, self.blocks).or_else(|| scan(0, from))
    }

    /// A block for an I/O of `len` bytes and the length it keeps, marked done; `None` when the
    /// pass is over (not `wrap`). A cut keeps a multiple of `unit` (the I/O's direction's
    /// smallest size), at least one: fio cuts `buflen` to the blocks of `min_bs[ddir]` it set.
    pub(crate) fn take(
        &mut self,
        rng: &mut Xoshiro256PlusPlus,
        len: u64,
        align: u64,
        unit: u64,
        file_len: u64,
        wrap: bool,
    ) -> Option<(u64, u64)> {
        if self.done >= self.blocks {
            if !wrap {
                return None;
            }
            self.bits.iter_mut().for_each(|w| *w = 0);
            self.done = 0;
        }
        let drawn = rng.random_range(0..self.blocks);
        let first = if self.is_set(drawn) { self.next_free(drawn)? } else { drawn };
        let want = len.div_ceil(align).max(1);
        let mut run = 0;
        while run < want && first + run < self.blocks && !self.is_set(first + run) {
            let b = first + run;
            self.bits[(b / 64) as usize] |= 1 << (b % 64);
            run += 1;
        }
        self.done += run;
        let mut at = first * align;
        let unit = unit.max(align).min(len);
        let kept = if run * align >= len { len } else { (run * align / unit * unit).max(unit) };
        // An I/O whose direction's smallest size is above the map's block does not fit past the
        // file's end: it ends there instead (fio draws such a direction's offsets only where
        // its block fits).
        if unit > align && at + kept > file_len && kept <= file_len {
            at = (file_len - kept) / align * align;
        }
        Some((at, kept.min(file_len.saturating_sub(at)).max(align.min(len))))
    }
}

/// `rank * mult mod blocks`: a permutation of the blocks, so hot ranks are spread over the file
/// (fio hashes them for the same reason).
#[inline]
fn scatter(rank: u64, mult: u64, blocks: u64) -> u64 {
    ((rank as u128 * mult as u128) % blocks as u128) as u64
}

/// fio's zone index: for each percent 1..=100 of the draws, the (first block, number of blocks)
/// of the zone it falls in. `zones` are (access %, size) in file order; `span` turns the sizes
/// before a zone and its own size into its first block and length, as fio's io_u.c does. Zones
/// past the file's end are cut at it (fio stops with "zoned_abs sizes exceed file size").
fn zone_table(
    blocks: u64,
    zones: impl Iterator<Item = (u8, u64)>,
    span: impl Fn(u64, u64) -> (u64, u64),
) -> Box<[(u64, u64); 100]> {
    let mut table = Box::new([(0, blocks); 100]);
    let (mut pct, mut size) = (0usize, 0u64);
    for (access, len) in zones {
        let (first, n) = span(size, len);
        size = size.saturating_add(len);
        let first = first.min(blocks - 1);
        let span = (first, n.min(blocks - first).max(1));
        for slot in table.iter_mut().skip(pct).take(access as usize) {
            *slot = span;
        }
        pct += access as usize;
    }
    table
}

/// `pct` percent of `blocks`, rounded down as fio's integer arithmetic does.
fn pct_of(pct: u64, blocks: u64) -> u64 {
    (pct as u128 * blocks as u128 / 100) as u64
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A multiplier coprime with `n`, so `rank * m mod n` is a permutation of the blocks.
fn coprime_multiplier(n: u64) -> u64 {
    let mut m = 0x9E37_79B9_7F4A_7C15u64 % n.max(1);
    if n <= 1 {
        return 1;
    }
    while m == 0 || gcd(m, n) != 1 {
        m = (m + 1) % n;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{BlockSizes, Bytes, JobPatch, Rw};

    /// A block job's options, and the seed every test here uses.
    struct J {
        b: BlockJob,
        seed: u64,
    }
    use proptest::prelude::*;

    fn job(rw: Rw, bs: &str) -> J {
        let j =
            JobPatch { target: Some("/x".into()), rw: Some(rw), bs: Some(bs.parse().unwrap()), ..Default::default() }
                .resolve("t")
                .unwrap();
        J { b: j.workload.block().unwrap().clone(), seed: j.seed }
    }

    impl Pattern {
        fn of(j: &J, thread: u32, file_len: u64, wrap: bool, budget: Option<u64>) -> Pattern {
            Pattern::new(&j.b, j.seed, thread, file_len, wrap, budget)
        }
    }

    #[test]
    fn passes_told_apart_pause_at_each_pass_end_and_go_on_with_the_access_they_held() {
        for rw in [Rw::Read, Rw::RandRead] {
            let j = job(rw, "4k");
            let mut p = Pattern::of(&j, 0, 16 << 10, true, Some(u64::MAX));
            p.track_passes();
            let mut seen = Vec::new();
            for pass in 0..3 {
                let offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset).collect();
                assert_eq!(offs.len(), if pass == 0 { 4 } else { 3 }, "{rw}: a pass of 16 KiB in 4 KiB accesses");
                assert!(p.pass_ended(), "{rw}");
                assert!(p.next_access().is_none(), "{rw}: nothing until the next pass starts");
                p.start_pass();
                assert!(!p.pass_ended());
                seen.extend(offs);
                seen.push(p.next_access().unwrap().offset);
            }
            if rw == Rw::Read {
                assert_eq!(seen, [0, 4096, 8192, 12288, 0, 4096, 8192, 12288, 0, 4096, 8192, 12288, 0]);
            }
            // Not told apart: the same accesses, no pause.
            let mut q = Pattern::of(&j, 0, 16 << 10, true, Some(u64::MAX));
            let all: Vec<u64> = (0..13).map(|_| q.next_access().unwrap().offset).collect();
            assert_eq!(all, seen, "{rw}: the passes' accesses are the pattern's own");
        }
    }

    #[test]
    fn a_random_map_visits_each_block_once_and_cuts_what_would_reach_a_done_one() {
        let mut j = job(Rw::RandRead, "4k");
        j.b.random_map = true;
        let mut p = Pattern::of(&j, 0, 1 << 20, false, None);
        let mut offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset).collect();
        assert_eq!(offs.len(), 256, "one pass: each of 256 blocks once");
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), 256);
        // Time-bounded, a full map starts the next pass.
        let mut p = Pattern::of(&j, 0, 1 << 20, true, Some(u64::MAX));
        assert_eq!((0..600).filter_map(|_| p.next_access()).count(), 600);
        // Mixed sizes (fio's iometer bssplit): as the map fills, I/Os are cut at done blocks,
        // so the mean falls below the sizes' (fio 3.33 made 4.95 KB of an 11.3 KB mix).
        let mut j = job(Rw::RandRead, "512:10,1k:5,2k:5,4k:60,8k:2,16k:4,32k:4,64k:10");
        j.b.random_map = true;
        let mut p = Pattern::of(&j, 0, 128 << 20, false, None);
        let lens: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.len as u64).collect();
        let mean = lens.iter().sum::<u64>() as f64 / lens.len() as f64;
        assert_eq!(lens.iter().sum::<u64>(), 128 << 20, "the pass covers the file once");
        assert!(mean < 8000.0 && mean > 2000.0, "mean {mean}");
        j.b.random_map = false;
        let mut p = Pattern::of(&j, 0, 128 << 20, false, None);
        let lens: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.len as u64).collect();
        let mean = lens.iter().sum::<u64>() as f64 / lens.len() as f64;
        assert!(mean > 10_500.0, "without the map, the mix's mean: {mean}");
        // A direction of one size is never cut (fio cuts to its direction's min_bs; fio 3.33's
        // cmdprio-bssplit, reads 64k/40:1m/60 and writes 1m: writes 1024 KiB on average, reads
        // 443 KiB).
        let mut j = job(Rw::RandRw, "64k:40,1m:60");
        j.b.random_map = true;
        j.b.write_bs = Some("1m".parse().unwrap());
        let mut p = Pattern::of(&j, 0, 128 << 20, true, Some(u64::MAX));
        let all: Vec<Access> = (0..4000).filter_map(|_| p.next_access()).collect();
        let (w, r): (Vec<&Access>, Vec<&Access>) = all.iter().partition(|a| a.dir == Dir::Write);
        let cut: Vec<(u64, u32)> = w.iter().filter(|a| a.len != 1 << 20).map(|a| (a.offset, a.len)).collect();
        assert!(w.len() > 1000 && cut.is_empty(), "every write whole: {cut:?}");
        let rmean = r.iter().map(|a| a.len as f64).sum::<f64>() / r.len() as f64;
        assert!(r.iter().any(|a| a.len < 1 << 20 && a.len > 64 << 10), "reads are cut at done blocks");
        assert!(rmean < 640.0 * 1024.0, "reads' mean below the mix's 640 KiB: {rmean}");
    }

    #[test]
    fn a_mixed_sequential_job_keeps_a_place_per_direction_as_fio_3_33_does() {
        // fio 3.33, rw=rw bs=4k size=64k (strace): reads at 0, 4k, 8k, 12k... and writes at 0,
        // 4k, 8k..., each its own sequence, 16 I/Os in all.
        let j = job(Rw::ReadWrite, "4k");
        let mut p = Pattern::of(&j, 0, 64 << 10, false, None);
        let all: Vec<Access> = std::iter::from_fn(|| p.next_access()).collect();
        assert_eq!(all.len(), 16, "the region's bytes in all");
        for dir in [Dir::Read, Dir::Write] {
            let offs: Vec<u64> = all.iter().filter(|a| a.dir == dir).map(|a| a.offset).collect();
            let want: Vec<u64> = (0..offs.len() as u64).map(|i| i * 4096).collect();
            assert_eq!(offs, want, "{dir:?}: from the start, in order");
        }
        assert!(all.iter().any(|a| a.dir == Dir::Read) && all.iter().any(|a| a.dir == Dir::Write));
    }

    #[test]
    fn backwards_goes_as_fio_3_33_does() {
        // fio 3.33 --debug=io, --size=64k --bs=4k --rw=read:-8k: 0, then 0xe000 down to 0 (the
        // last block is never read; the first twice), 16 I/Os.
        let mut j = job(Rw::Read, "4k");
        j.b.backward = Some(Bytes::kib(8));
        let mut p = Pattern::of(&j, 0, 64 << 10, false, None);
        let offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset >> 12).collect();
        assert_eq!(offs, [0, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
        // Time-bounded, it keeps wrapping.
        let mut p = Pattern::of(&j, 0, 64 << 10, true, Some(u64::MAX));
        let offs: Vec<u64> = (0..18).filter_map(|_| p.next_access()).map(|a| a.offset >> 12).collect();
        assert_eq!(offs[15..], [0, 14, 13]);
    }

    #[test]
    fn sequential_one_pass() {
        let j = job(Rw::Write, "4k");
        let mut p = Pattern::of(&j, 0, 16384, false, None);
        let offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset).collect();
        assert_eq!(offs, vec![0, 4096, 8192, 12288]);
    }

    #[test]
    fn redo_log_stride() {
        let mut j = job(Rw::Write, "32k");
        j.b.stride = Some(Bytes::mib(1));
        let mut p = Pattern::of(&j, 0, 4 << 20, false, None);
        let offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset).collect();
        assert_eq!(offs, vec![0, 1 << 20, 2 << 20, 3 << 20]);
    }

    #[test]
    fn wrapping_goes_on() {
        let j = job(Rw::Read, "4k");
        let mut p = Pattern::of(&j, 0, 8192, true, Some(5 * 4096));
        let offs: Vec<u64> = std::iter::from_fn(|| p.next_access()).map(|a| a.offset).collect();
        assert_eq!(offs, vec![0, 4096, 0, 4096, 0]);
    }

    #[test]
    fn mix_is_respected() {
        let mut j = job(Rw::RandRw, "4k");
        j.b.mix = 70;
        let mut p = Pattern::of(&j, 0, 1 << 30, true, Some(4096 * 100_000));
        let reads = std::iter::from_fn(|| p.next_access()).filter(|a| a.dir == Dir::Read).count();
        assert!((69_000..71_000).contains(&reads), "{reads}");
    }

    #[test]
    fn weighted_sizes() {
        let j = job(Rw::RandRead, "4k:70,64k:30");
        let mut p = Pattern::of(&j, 0, 1 << 30, true, Some(u64::MAX));
        let big = (0..100_000).filter(|_| p.next_access().unwrap().len == 65536).count();
        assert!((29_000..31_000).contains(&big), "{big}");
    }

    #[test]
    fn zipf_is_skewed() {
        let mut j = job(Rw::RandRead, "4k");
        j.b.dist = Dist::Zipf(1.2);
        let mut p = Pattern::of(&j, 0, 4096 * 10_000, true, Some(u64::MAX));
        let mut counts = std::collections::HashMap::new();
        for _ in 0..50_000 {
            *counts.entry(p.next_access().unwrap().offset).or_insert(0u32) += 1;
        }
        let mut v: Vec<u32> = counts.into_values().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = v.iter().take(10).sum();
        assert!(top10 > 50_000 / 3, "the 10 hottest blocks should get a large share, got {top10}");
    }

    /// `n` draws of `dist` over `blocks` 4 KiB blocks: each one's block number.
    fn blocks_of(dist: &str, blocks: u64, n: usize) -> Vec<u64> {
        let mut j = job(Rw::RandRead, "4k");
        j.b.dist = dist.parse().unwrap();
        let mut p = Pattern::of(&j, 0, 4096 * blocks, true, Some(u64::MAX));
        (0..n).map(|_| p.next_access().unwrap().offset / 4096).collect()
    }

    /// Pareto's and normal's draws back in rank order (they are scattered over the file).
    fn ranks_of(dist: &str, blocks: u64, n: usize) -> Vec<u64> {
        let mult = coprime_multiplier(blocks);
        let mut rank = vec![0u64; blocks as usize];
        for r in 0..blocks {
            rank[scatter(r, mult, blocks) as usize] = r;
        }
        blocks_of(dist, blocks, n).into_iter().map(|b| rank[b as usize]).collect()
    }

    #[test]
    fn zoned_puts_each_share_in_its_region() {
        let b = blocks_of("zoned:50/5:50/95", 10_000, 100_000);
        let first = b.iter().filter(|&&x| x < 500).count() as f64 / 1e5;
        assert!((first - 0.5).abs() < 0.01, "50% of the draws in the first 5% of the blocks: {first}");
        let b = blocks_of("zoned:60/10:30/20:8/30:2/40", 10_000, 100_000);
        for (lo, hi, want) in [(0, 1000, 0.60), (1000, 3000, 0.30), (3000, 6000, 0.08), (6000, 10_000, 0.02)] {
            let got = b.iter().filter(|&&x| (lo..hi).contains(&x)).count() as f64 / 1e5;
            assert!((got - want).abs() < 0.01, "blocks {lo}..{hi}: {got}, want {want}");
        }
        // Regions adding up to less than 100%: the rest of the file is never touched (fio alike).
        let b = blocks_of("zoned:100/10", 10_000, 10_000);
        assert!(b.iter().all(|&x| x < 1000));
    }

    #[test]
    fn zoned_abs_counts_bytes_from_the_start() {
        // 60% in the first 20 MiB (5120 blocks), 40% in the next 80 MiB, of a 200 MiB file.
        let b = blocks_of("zoned_abs:60/20m:40/80m", 51_200, 100_000);
        let first = b.iter().filter(|&&x| x < 5120).count() as f64 / 1e5;
        assert!((first - 0.6).abs() < 0.01, "{first}");
        assert!(b.iter().all(|&x| x < 25_600), "nothing past 100 MiB");
        // A zone past the file's end is cut at it, however large.
        assert!(blocks_of("zoned_abs:50/1m:50/1g", 1000, 10_000).iter().all(|&x| x < 1000));
        assert!(blocks_of("zoned_abs:50/16383P:50/16383P", 1000, 10_000).iter().all(|&x| x < 1000));
    }

    #[test]
    fn pareto_gives_h_of_the_io_to_1_minus_h_of_the_blocks() {
        // fio's rank (n-1) u^(ln h / ln(1-h)): the top (1-h) of the ranks get h of the draws.
        for (h, top) in [(0.9, 0.1), (0.8, 0.2)] {
            let r = ranks_of(&format!("pareto:{h}"), 10_000, 100_000);
            let hot = r.iter().filter(|&&x| x as f64 >= 9999.0 * (1.0 - top)).count() as f64 / 1e5;
            assert!((hot - h).abs() < 0.01, "pareto:{h}: the top {top} of the blocks got {hot}");
        }
    }

    #[test]
    fn normal_spread_follows_fios_deviation() {
        // fio's gauss: the mean of 12 uniform draws over 0..=n (sd n/12), plus a uniform
        // deviation of dev% of n (variance dev^2/12).
        let n = 12_000u64;
        for (d, want) in [
            (0.0f64, 1000.0f64),
            (10.0, (1e6 + 1200f64.powi(2) / 12.0).sqrt()),
            (50.0, (1e6 + 6000f64.powi(2) / 12.0).sqrt()),
        ] {
            let r = ranks_of(&format!("normal:{d}"), n, 100_000);
            let mean = r.iter().sum::<u64>() as f64 / 1e5;
            let sd = (r.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 1e5).sqrt();
            assert!((mean - 6000.0).abs() < 30.0, "normal:{d}: mean {mean}");
            assert!((sd / want - 1.0).abs() < 0.03, "normal:{d}: sd {sd}, want {want}");
        }
    }

    #[test]
    fn same_seed_same_sequence() {
        let j = job(Rw::RandRw, "4k:50,8k:50");
        let a: Vec<Access> = {
            let mut p = Pattern::of(&j, 3, 1 << 20, true, Some(1 << 22));
            std::iter::from_fn(|| p.next_access()).collect()
        };
        let b: Vec<Access> = {
            let mut p = Pattern::of(&j, 3, 1 << 20, true, Some(1 << 22));
            std::iter::from_fn(|| p.next_access()).collect()
        };
        assert_eq!(a, b);
        let c: Vec<Access> = {
            let mut p = Pattern::of(&j, 4, 1 << 20, true, Some(1 << 22));
            std::iter::from_fn(|| p.next_access()).collect()
        };
        assert_ne!(a, c, "threads get different streams");
    }

    proptest! {
        #[test]
        fn offsets_in_range_and_aligned(
            rw in prop_oneof![Just(Rw::Read), Just(Rw::Write), Just(Rw::RandRead), Just(Rw::RandWrite), Just(Rw::ReadWrite), Just(Rw::RandRw)],
            sizes in prop::collection::vec((1u64..=64, 1u32..10), 1..4),
            blocks in 1u64..5000,
            dist in 0usize..6,
            wrap in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let bs = BlockSizes(sizes.iter().map(|(k, w)| (Bytes(k * 512), *w)).collect());
            let min = bs.min().0;
            let file_len = bs.max().0 * blocks;
            let mut j = job(rw, "4k");
            j.b.bs = bs;
            j.seed = seed;
            j.b.dist = ["uniform", "zipf:1.1", "pareto:0.7", "normal:20", "zoned:30/50:70/50", "zoned_abs:70/64k:30/1m"][dist].parse().unwrap();
            let mut p = Pattern::of(&j, 0, file_len, wrap, Some(file_len * 2));
            let mut n = 0;
            while let Some(a) = p.next_access() {
                prop_assert!(a.offset + a.len as u64 <= file_len, "{a:?} past {file_len}");
                prop_assert_eq!(a.len % 512, 0);
                if rw.is_random() {
                    prop_assert_eq!(a.offset % min, 0);
                }
                n += 1;
                prop_assert!(n <= 2 * file_len / 512 + 1);
            }
        }
    }
}
