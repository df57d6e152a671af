//! iolab-floor: the least a program can do to issue iolab's I/O, so bench/overhead.sh can
//! say how much of the achievable rate iolab's framework (pattern, timestamps, histograms,
//! per-second reporting) costs. No per-op timing, no statistics; the clock is read once
//! every 1024 operations.
//!
//!   iolab-floor pread FILE SECONDS        4 KiB preads at uniform random 4 KiB-aligned offsets
//!   iolab-floor pwrite /dev/null SECONDS  4 KiB pwrites at random offsets (of a 1 GiB range)
//!
//! Prints one line: `MODE ops=N elapsed_s=S ops_per_s=R`.
//!
//! There is no O_DIRECT mode: for sequential direct writes dd and fio are the peers.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const BS: usize = 4096;
const CHECK_EVERY: u64 = 1024;
/// Offsets for pwrite to /dev/null are drawn from this range (/dev/null has no size).
const NULL_RANGE: u64 = 1 << 30;

/// xorshift64*: fast, good enough for picking block numbers.
struct Rng(u64);

impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in 0..n (the modulo bias is below 2^-30 for any n we use).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: iolab-floor pread FILE SECONDS | iolab-floor pwrite /dev/null SECONDS");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        return usage();
    }
    let (mode, path) = (args[1].as_str(), args[2].as_str());
    let Ok(secs) = args[3].parse::<f64>() else { return usage() };
    if secs.is_nan() || secs <= 0.0 {
        return usage();
    }
    let write = match mode {
        "pread" => false,
        "pwrite" => true,
        _ => return usage(),
    };
    let opened = if write { OpenOptions::new().write(true).open(path) } else { File::open(path) };
    let file = match opened {
        Ok(f) => f,
        Err(e) => {
            eprintln!("iolab-floor: opening {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let range = if write {
        NULL_RANGE
    } else {
        match file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                eprintln!("iolab-floor: sizing {path}: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let blocks = range / BS as u64;
    if blocks == 0 {
        eprintln!("iolab-floor: {path} is smaller than one 4 KiB block");
        return ExitCode::from(2);
    }

    let mut buf = vec![0xa5u8; BS];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let run_for = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut ops = 0u64;
    let elapsed = loop {
        for _ in 0..CHECK_EVERY {
            let off = rng.below(blocks) * BS as u64;
            let r = if write { file.write_at(&buf, off) } else { file.read_at(&mut buf, off) };
            match r {
                Ok(BS) => {}
                Ok(n) => {
                    eprintln!("iolab-floor: short {mode}: {n} of {BS} bytes at offset {off}");
                    return ExitCode::from(1);
                }
                Err(e) => {
                    eprintln!("iolab-floor: {mode} at offset {off}: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        ops += CHECK_EVERY;
        let e = start.elapsed();
        if e >= run_for {
            break e;
        }
    };
    let s = elapsed.as_secs_f64();
    println!("{mode} ops={ops} elapsed_s={s:.3} ops_per_s={:.0}", ops as f64 / s);
    ExitCode::SUCCESS
}
