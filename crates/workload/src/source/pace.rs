//! When a paced block job's next I/O is due, and whether it keeps its floor: one schedule for
//! the job's total rate (`--rate`, `--rate-iops`) or one per direction on a mixed job
//! (`--read-rate`, `--write-rate`: a direction ahead of its rate gives way to the other, as
//! fio's `rate_ddir` does), evenly spaced or a Poisson process (`--rate-process`), and the
//! floor of `--rate-min`, judged as fio's `__check_min_rate` does: at completions, over at
//! least a cycle since the last judgement, after the first 2 s.

use crate::clock::Stamp;
use crate::pattern::Dir;
use iolab_spec::pace::{Pacing, Rate, RateProcess, SETTLE};
use iolab_spec::{BlockJob, Bytes};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Duration;

/// One schedule: an I/O every `interval` (on average, for a Poisson process).
struct Lane {
    interval: Duration,
    next: Stamp,
}

enum Lanes {
    /// No rate: only a floor is kept.
    Free,
    /// The job's total rate: reads and writes share one schedule.
    Total(Lane),
    /// Each direction its own (`None`: that direction runs flat out).
    PerDir([Option<Lane>; 2]),
}

/// What the source does with the access it drew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// Issue it, timed from this due instant (`None`: from its issue).
    Go(Option<Stamp>),
    /// Issue it the other way (its own direction is ahead of its rate, the other is not).
    Turn(Option<Stamp>),
    /// Keep it: nothing is due before this instant.
    Wait(Stamp),
}

/// The floor: bytes or I/Os per second each direction the job does must keep.
struct Floor {
    /// Per thread, per second.
    min: f64,
    iops: bool,
    cycle: Duration,
    dirs: [bool; 2],
    /// Completed (bytes, I/Os) per direction.
    done: [(u64, u64); 2],
    /// The last judgement: when, and what was done then.
    last: Option<(Stamp, [(u64, u64); 2])>,
    settle_until: Stamp,
    /// The job's floor, as asked, for the error.
    asked: Rate,
}

pub(super) struct Pacer {
    lanes: Lanes,
    poisson: Option<Xoshiro256PlusPlus>,
    floor: Option<Floor>,
    /// A mixed job whose both directions have a share: a direction ahead of its rate gives way.
    turns: bool,
    /// The time as last seen by `next` (the floor is judged at completions, which have none).
    now: Stamp,
    failed: Option<String>,
}

fn index(d: Dir) -> usize {
    match d {
        Dir::Read => 0,
        Dir::Write => 1,
    }
}

impl Pacer {
    /// The pacing of one of `threads` threads of the job (`None`: the job is not paced and has
    /// no floor: the source's one branch per I/O).
    pub(super) fn new(b: &BlockJob, threads: u32, seed: u64, thread: u32) -> Option<Pacer> {
        let per_thread = |v: f64| v / threads.max(1) as f64;
        let interval = |rate: Rate, mean_bs: f64| -> Duration {
            let per_s = match rate {
                Rate::Bytes(Bytes(b)) => per_thread(b as f64) / mean_bs,
                Rate::Iops(n) => per_thread(n as f64),
            };
            Duration::from_secs_f64(1.0 / per_s.max(1e-9))
        };
        let lane = |interval: Duration| Lane { interval, next: Stamp(0) };
        let pace = b.pace.as_deref();
        let total = match (b.rate, b.rate_iops) {
            (Some(bw), _) => Some(Rate::Bytes(bw)),
            (_, Some(n)) => Some(Rate::Iops(n)),
            _ => None,
        };
        let lanes = match (total, pace) {
            (Some(r), _) => Lanes::Total(lane(interval(r, b.mean_bs()))),
            (None, Some(Pacing { read, write, .. })) if read.is_some() || write.is_some() => Lanes::PerDir([
                read.map(|r| lane(interval(r, b.bs.mean()))),
                write.map(|r| lane(interval(r, b.write_sizes().mean()))),
            ]),
            _ => Lanes::Free,
        };
        let dirs =
            [b.rw.reads() && (!b.rw.is_mixed() || b.mix > 0), b.rw.writes() && (!b.rw.is_mixed() || b.mix < 100)];
        let floor = pace.and_then(|p| p.min.map(|m| (m, p.cycle))).map(|(asked, cycle)| Floor {
            min: match asked {
                Rate::Bytes(Bytes(b)) => per_thread(b as f64),
                Rate::Iops(n) => per_thread(n as f64),
            },
            iops: matches!(asked, Rate::Iops(_)),
            cycle,
            dirs,
            done: [(0, 0); 2],
            last: None,
            settle_until: Stamp(0),
            asked,
        });
        if matches!(lanes, Lanes::Free) && floor.is_none() {
            return None;
        }
        let poisson = pace
            .filter(|p| p.process == RateProcess::Poisson)
            .map(|_| Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0050_4541_4345_u64 ^ (thread as u64) << 40));
        Some(Pacer { lanes, poisson, floor, turns: dirs[0] && dirs[1], now: Stamp(0), failed: None })
    }

    /// The job's threads were released at `at`: the schedules and the floor's settling start.
    pub(super) fn start(&mut self, at: Stamp) {
        self.now = at;
        match &mut self.lanes {
            Lanes::Free => {}
            Lanes::Total(l) => l.next = at,
            Lanes::PerDir(ls) => ls.iter_mut().flatten().for_each(|l| l.next = at),
        }
        if let Some(f) = &mut self.floor {
            f.settle_until = at + SETTLE;
        }
    }

    /// The earliest a paced job's next I/O could be due (its last slot, at the end).
    pub(super) fn next_due(&self) -> Option<Stamp> {
        match &self.lanes {
            Lanes::Free => None,
            Lanes::Total(l) => Some(l.next),
            Lanes::PerDir(ls) => ls.iter().flatten().map(|l| l.next).min(),
        }
    }

    /// The gap to the next I/O after one due now.
    fn gap(rng: &mut Option<Xoshiro256PlusPlus>, interval: Duration) -> Duration {
        match rng {
            None => interval,
            // fio: -ln(U) times the mean gap, U uniform in (0, 1].
            Some(r) => interval.mul_f64(-(1.0 - r.random::<f64>()).ln()),
        }
    }

    /// Whether an access going `dir` may be issued at `now`.
    pub(super) fn admit(&mut self, now: Stamp, dir: Dir) -> Admit {
        self.now = now;
        let rng = &mut self.poisson;
        let mut take = |l: &mut Lane| {
            let due = l.next;
            l.next += Self::gap(rng, l.interval);
            due
        };
        match &mut self.lanes {
            Lanes::Free => Admit::Go(None),
            Lanes::Total(l) if l.next <= now => Admit::Go(Some(take(l))),
            Lanes::Total(l) => Admit::Wait(l.next),
            Lanes::PerDir(ls) => {
                let (d, o) = (index(dir), 1 - index(dir));
                match &ls[d] {
                    None => return Admit::Go(None),
                    Some(l) if l.next <= now => return Admit::Go(ls[d].as_mut().map(&mut take)),
                    Some(_) => {}
                }
                if !self.turns {
                    return Admit::Wait(ls[d].as_ref().map_or(now, |l| l.next));
                }
                match &ls[o] {
                    None => Admit::Turn(None),
                    Some(l) if l.next <= now => Admit::Turn(ls[o].as_mut().map(&mut take)),
                    // Both ahead: wait for the earlier (the access turns then, if it is the other's).
                    Some(l) => Admit::Wait(l.next.min(ls[d].as_ref().map_or(l.next, |m| m.next))),
                }
            }
        }
    }

    /// A completed I/O of `bytes` going `dir`: the floor judged when a cycle has passed since
    /// its last judgement (an error once it is missed).
    pub(super) fn completed(&mut self, dir: Dir, bytes: u64) -> Result<(), String> {
        let Some(f) = &mut self.floor else { return Ok(()) };
        let d = &mut f.done[index(dir)];
        d.0 += bytes;
        d.1 += 1;
        let now = self.now;
        if now < f.settle_until {
            return Ok(());
        }
        let Some((at, before)) = f.last else {
            f.last = Some((now, f.done));
            return Ok(());
        };
        let spent = now - at;
        if spent < f.cycle {
            return Ok(());
        }
        for (i, name) in [(0, "reads"), (1, "writes")] {
            if !f.dirs[i] {
                continue;
            }
            let moved = if f.iops { f.done[i].1 - before[i].1 } else { f.done[i].0 - before[i].0 };
            let rate = moved as f64 / spent.as_secs_f64();
            if rate < f.min {
                let (got, asked) = match f.asked {
                    Rate::Bytes(b) => {
                        (format!("{} B/s", rate as u64), format!("--rate-min {b} ({:.0} B/s a thread)", f.min))
                    }
                    Rate::Iops(n) => {
                        (format!("{rate:.1} IOPS"), format!("--rate-min-iops {n} ({:.1} a thread)", f.min))
                    }
                };
                self.failed = Some(format!(
                    "{name} fell below the floor: {got} over the last {:.2} s, under {asked} (fio's rate_min ends the job likewise)",
                    spent.as_secs_f64()
                ));
                return Err(self.failed.clone().unwrap_or_default());
            }
        }
        f.last = Some((now, f.done));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::JobPatch;

    fn job(p: JobPatch) -> BlockJob {
        let j = JobPatch { target: Some("/tmp/x".into()), size: Some(Bytes::mib(1)), ..p }.resolve("t").unwrap();
        j.workload.block().unwrap().clone()
    }

    #[test]
    fn a_direction_ahead_of_its_rate_gives_way_to_the_other() {
        let b = job(JobPatch { rw: Some(iolab_spec::Rw::RandRw), write_rate_iops: Some(10), ..Default::default() });
        let mut p = Pacer::new(&b, 1, 1, 0).unwrap();
        p.start(Stamp(0));
        // The first write is due at once; the next 100 ms later; reads are never paced.
        assert_eq!(p.admit(Stamp(0), Dir::Write), Admit::Go(Some(Stamp(0))));
        assert_eq!(p.admit(Stamp(1_000), Dir::Write), Admit::Turn(None));
        assert_eq!(p.admit(Stamp(2_000), Dir::Read), Admit::Go(None));
        assert_eq!(p.admit(Stamp(100_000_000), Dir::Write), Admit::Go(Some(Stamp(100_000_000))));
    }

    #[test]
    fn poisson_gaps_keep_the_mean_and_vary() {
        let b = job(JobPatch {
            rw: Some(iolab_spec::Rw::RandRead),
            rate_iops: Some(1000),
            rate_process: Some(RateProcess::Poisson),
            ..Default::default()
        });
        let mut p = Pacer::new(&b, 1, 7, 0).unwrap();
        p.start(Stamp(0));
        let mut dues = Vec::new();
        for _ in 0..20_000 {
            // Always late: each admit takes the next slot.
            if let Admit::Go(Some(d)) = p.admit(Stamp(u64::MAX / 2), Dir::Read) {
                dues.push(d.0 as f64);
            }
        }
        let gaps: Vec<f64> = dues.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        // Exponential gaps: mean 1 ms, standard deviation equal to the mean.
        assert!((mean - 1e6).abs() < 0.03e6, "mean gap {mean} ns");
        assert!((sd / mean - 1.0).abs() < 0.05, "sd/mean {}", sd / mean);
    }
}
