//! The data of a block job's writes under `--dedupe` (fio's get_buf_state): each write draws
//! whether it repeats earlier data; a unique write gets the next key of the thread's sequence, a
//! repeat the last unique write's key (fio's dedupe_mode=repeat) or one of the first
//! `working set` keys, the first unique blocks written (working_set). The buffer is made from
//! its key alone (fill_pattern, with the job's compressibility), and carries no offset stamp,
//! so equal keys are equal blocks. Each job's and thread's keys are their own (the job's name
//! is in them), so two jobs write no block alike, as fio's; a shared working set
//! (`--dedupe-global`, fio's dedupe_global) draws from one sequence of the seed's alone, so
//! every job that sets it repeats blocks the others repeat too. (fio's shared set is the
//! participating threads' first unique blocks in turn; iolab's shared blocks are written only
//! as repeats: in fio 3.33's dedupe-global.fio at 4 MiB per file, 431 of b's 1024 blocks are
//! also in a, and 0 without dedupe_global.)

use iolab_spec::block::Dedupe;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub(super) struct Dedup {
    pct: u32,
    /// Keys in the working set (`None`: repeat the last unique write).
    set: Option<u64>,
    base: u64,
    /// Where the working set's keys start: `base` (the thread's first unique blocks), or the
    /// seed's shared sequence (`global`).
    set_base: u64,
    /// Unique writes so far.
    unique: u64,
    rng: Xoshiro256PlusPlus,
}

impl Dedup {
    /// `blocks`: the job's region in blocks of its mean size (the working set's percentage is
    /// of it).
    pub(super) fn new(d: Dedupe, seed: u64, job: &str, thread: u32, blocks: u64) -> Dedup {
        // The job's name in its keys (FNV-1a), so that jobs of one seed write distinct blocks.
        let name = job.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let base = seed ^ 0x4445_4455_5045 ^ (thread as u64) << 48 ^ super::mix::splitmix64(name);
        let set_base = if d.global { super::mix::splitmix64(seed ^ 0x474C_4F42_414C) } else { base };
        Dedup {
            pct: d.pct as u32,
            set: d.working_set.map(|p| (blocks * p as u64 / 100).max(1)),
            base,
            set_base,
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
                super::mix::splitmix64(self.set_base.wrapping_add(i))
            }
            (true, None) if self.unique > 0 => self.key(self.unique - 1),
            _ => {
                self.unique += 1;
                self.key(self.unique - 1)
            }
        }
    }
}
