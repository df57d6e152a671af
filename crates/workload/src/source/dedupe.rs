//! The data of a block job's writes under `--dedupe` (fio's get_buf_state): each write draws
//! whether it repeats earlier data; a unique write gets the next key of the thread's sequence, a
//! repeat the last unique write's key (fio's dedupe_mode=repeat) or one of the first
//! `working set` keys, the first unique blocks written (working_set). The buffer is made from
//! its key alone (fill_pattern, with the job's compressibility), and carries no offset stamp,
//! so equal keys are equal blocks.

use iolab_spec::block::Dedupe;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub(super) struct Dedup {
    pct: u32,
    /// Keys in the working set (`None`: repeat the last unique write).
    set: Option<u64>,
    base: u64,
    /// Unique writes so far.
    unique: u64,
    rng: Xoshiro256PlusPlus,
}

impl Dedup {
    /// `blocks`: the job's region in blocks of its mean size (the working set's percentage is
    /// of it).
    pub(super) fn new(d: Dedupe, seed: u64, thread: u32, blocks: u64) -> Dedup {
        let base = seed ^ 0x4445_4455_5045 ^ (thread as u64) << 48;
        Dedup {
            pct: d.pct as u32,
            set: d.working_set.map(|p| (blocks * p as u64 / 100).max(1)),
            base,
            unique: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(base),
        }
    }

    fn key(&self, i: u64) -> u64 {
        super::mix::splitmix64(self.base.wrapping_add(i))
    }

    /// The key of the next write's data.
    pub(super) fn next_key(&mut self) -> u64 {
        let repeat = self.rng.random_range(1..=100u32) <= self.pct;
        match (repeat, self.set) {
            (true, Some(n)) => {
                let i = self.rng.random_range(0..n);
                self.key(i)
            }
            (true, None) if self.unique > 0 => self.key(self.unique - 1),
            _ => {
                self.unique += 1;
                self.key(self.unique - 1)
            }
        }
    }
}
