//! Reading a file back and checking every key block against what the map expects: the final
//! pass of `--verify-after` and of `iolab verify`. Plain positional reads through the page
//! cache, 1 MiB at a time, whatever engine wrote the file.

use crate::check::{check_block, Expect, Finding};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// How a scan went: key blocks checked against a written key, and whether it stopped early.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scanned {
    pub checked: u64,
    pub stopped: bool,
}

/// Check blocks `0..blocks` of `file` (key block `key_block` bytes, file id `file_id`).
/// `expect(block)` says what each should hold (`None`: skip it); `found(block, finding)` gets
/// each error and returns whether to go on. A block past the file's end reads as zeros.
pub fn scan(
    file: &File,
    file_id: u64,
    key_block: u32,
    blocks: u64,
    expect: &dyn Fn(u64) -> Option<Expect>,
    found: &mut dyn FnMut(u64, Finding) -> bool,
) -> io::Result<Scanned> {
    let kb = key_block as usize;
    let per = ((1usize << 20) / kb).max(1);
    let mut buf = vec![0u8; per * kb];
    let mut out = Scanned::default();
    let mut b = 0u64;
    while b < blocks {
        let n = per.min((blocks - b) as usize);
        let want = n * kb;
        let got = read_full(file, &mut buf[..want], b * key_block as u64)?;
        buf[got..want].fill(0);
        for i in 0..n {
            let block = b + i as u64;
            let Some(e) = expect(block) else { continue };
            if e.key != 0 {
                out.checked += 1;
            }
            let data = &buf[i * kb..(i + 1) * kb];
            if let Some(f) = check_block(data, block * key_block as u64, file_id, &e) {
                if !found(block, f) {
                    out.stopped = true;
                    return Ok(out);
                }
            }
        }
        b += n as u64;
    }
    Ok(out)
}

/// Read as much of `buf` as the file has at `offset` (short only at the end of the file).
pub fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
