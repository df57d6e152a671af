//! Which I/Os of a block job carry a priority of their own (`--cmdprio`, fio's cmdprio.c): one
//! draw from 0-99 per I/O against the shares of its direction that take its size (or any
//! size), added up in order; an I/O in none keeps the thread's priority (0).

use crate::pattern::Dir;
use iolab_spec::prio::{CmdPrio, PrioShare};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub(super) struct Chooser {
    /// Reads' and writes' shares: (size or any, percent, priority value).
    shares: [Vec<(Option<u32>, u8, u16)>; 2],
    rng: Xoshiro256PlusPlus,
}

impl Chooser {
    pub(super) fn new(c: &CmdPrio, seed: u64, thread: u32) -> Chooser {
        let list = |l: &[PrioShare]| l.iter().map(|p| (p.bs.map(|b| b.0 as u32), p.pct, p.prio.value())).collect();
        Chooser {
            shares: [list(&c.read), list(&c.write)],
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x434d_4450 ^ (thread as u64) << 32),
        }
    }

    /// The priority of an I/O going `dir` of `len` bytes (0: the thread's).
    pub(super) fn draw(&mut self, dir: Dir, len: u32) -> u16 {
        let list = &self.shares[if dir == Dir::Read { 0 } else { 1 }];
        if list.is_empty() {
            return 0;
        }
        let p = self.rng.random_range(0..100u32);
        let mut acc = 0u32;
        for &(_, pct, prio) in list.iter().filter(|s| s.0.is_none_or(|b| b == len)) {
            acc += pct as u32;
            if p < acc {
                return prio;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_fall_by_size_and_direction_as_fio_draws_them() {
        let c: CmdPrio = "65536@25%rt/1:65536@75%be/2:1048576@0%rt,20%idle".parse().unwrap();
        let mut ch = Chooser::new(&c, 1, 0);
        let n = 20_000;
        let count = |ch: &mut Chooser, dir, len, want: u16| {
            (0..n).filter(|_| ch.draw(dir, len) == want).count() as f64 / n as f64
        };
        assert!((count(&mut ch, Dir::Read, 65536, 1 << 13 | 1) - 0.25).abs() < 0.02);
        assert!((count(&mut ch, Dir::Read, 65536, 2 << 13 | 2) - 0.75).abs() < 0.02);
        assert_eq!(count(&mut ch, Dir::Read, 1 << 20, 0), 1.0, "a 0% share and no other: the thread's");
        assert_eq!(count(&mut ch, Dir::Read, 4096, 0), 1.0, "a size with no share");
        assert!((count(&mut ch, Dir::Write, 4096, 3 << 13) - 0.20).abs() < 0.02);
    }
}
