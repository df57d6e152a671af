//! The parts of a stamp, timed apart (a look at where its time goes).
use std::time::Instant;
fn main() {
    let n = 8_000_000u64;
    let mut d = vec![0u8; 464];
    let t = Instant::now();
    for i in 0..n {
        iolab_verify::pattern::fill(&mut d, std::hint::black_box(i));
        std::hint::black_box(&d);
    }
    println!("fill 464 B: {:.1} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    let mut x = 0u32;
    for i in 0..n {
        x ^= iolab_verify::pattern::crc(std::hint::black_box(i));
    }
    println!("table crc: {:.1} ns {x}", t.elapsed().as_nanos() as f64 / n as f64);
    let h = [7u8; 44];
    let t = Instant::now();
    for _ in 0..n {
        x ^= crc32c::crc32c(std::hint::black_box(&h));
    }
    println!("crc32c 44 B: {:.1} ns {x}", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    for _ in 0..n / 8 {
        x ^= crc32c::crc32c(std::hint::black_box(&d));
    }
    println!("crc32c 464 B: {:.1} ns {x}", t.elapsed().as_nanos() as f64 / (n / 8) as f64);
    let t = Instant::now();
    let mut y = 0u64;
    for i in 0..n {
        y ^= iolab_verify::pattern::word(std::hint::black_box(i), i, 3);
    }
    println!("word: {:.1} ns {y}", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    for _ in 0..n / 8 {
        y ^= iolab_verify::now_ns();
    }
    println!("now_ns: {:.1} ns {y}", t.elapsed().as_nanos() as f64 / (n / 8) as f64);
}
