//! What stamping and checking a 4 KiB key block costs on this CPU, without any I/O:
//! `cargo run --release -p iolab-verify --example stamp_cost`.
use iolab_verify::{check_block, stamp_block, Expect, Stamp};
use std::time::Instant;

fn main() {
    let n = 1_000_000u64;
    let mut buf = vec![0u8; 4096];
    let s = Stamp { file_id: 0xF11E, key: 1, time_ns: 0, node: 1, thread: 0 };
    let t = Instant::now();
    for i in 0..n {
        let st = Stamp { key: (i % 126) as u8 + 1, time_ns: iolab_verify::now_ns(), ..s };
        stamp_block(&mut buf, (i % 65536) * 4096, &st);
        std::hint::black_box(&buf);
    }
    let stamp = t.elapsed().as_nanos() as f64 / n as f64;
    stamp_block(&mut buf, 8192, &s);
    let e = Expect { key: 1, ..Default::default() };
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(check_block(std::hint::black_box(&buf), 8192, 0xF11E, &e));
    }
    let check = t.elapsed().as_nanos() as f64 / n as f64;
    println!("stamp a 4 KiB key block (with the time): {stamp:.0} ns; check it: {check:.0} ns");
}
