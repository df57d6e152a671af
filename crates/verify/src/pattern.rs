//! The data a stamped sector carries: 464 bytes derived from (file id, sector offset, key), so a
//! reader checks a block without having kept it. Each 8-byte word is a fixed random word XOR one
//! 64-bit value mixed from the three, so filling is one XOR pass (as cheap as a copy) and every
//! word differs between two keys, two offsets or two files. The data's CRC-32C is computed from
//! that value through eight 256-entry tables (CRC-32C is affine over GF(2), so the CRC of
//! `BASE ^ broadcast(w)` is a fixed part XOR one table entry per byte of `w`), which the tests
//! check against the `crc32c` crate's own CRC of the bytes.

use crate::sector::DATA_LEN;
use std::sync::OnceLock;

/// 8-byte words of data in a sector.
pub const WORDS: usize = DATA_LEN / 8;

const fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The fixed random words every sector's data is XORed from (the same on every node and run).
pub const BASE: [u64; WORDS] = {
    let mut b = [0u64; WORDS];
    let mut i = 0;
    while i < WORDS {
        b[i] = splitmix(0x696f_6c61_6256_4552 ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        i += 1;
    }
    b
};

/// The value a sector's data words are XORed with: distinct (file, offset, key) give unrelated
/// values.
#[inline]
pub fn word(file_id: u64, sector_offset: u64, key: u8) -> u64 {
    splitmix(splitmix(file_id ^ ((key as u64) << 56) ^ 0x5EC7_0000) ^ sector_offset)
}

/// Write the data of a sector (`dst` is its 464 data bytes).
#[inline]
pub fn fill(dst: &mut [u8], w: u64) {
    for (chunk, b) in dst.chunks_exact_mut(8).zip(BASE.iter()) {
        chunk.copy_from_slice(&(b ^ w).to_le_bytes());
    }
}

/// Whether `data` (a sector's 464 data bytes) is exactly the pattern of `w`.
#[inline]
pub fn matches(data: &[u8], w: u64) -> bool {
    if data.len() != DATA_LEN {
        return false;
    }
    let mut diff = 0u64;
    for (chunk, b) in data.chunks_exact(8).zip(BASE.iter()) {
        let mut x = [0u8; 8];
        x.copy_from_slice(chunk);
        diff |= u64::from_le_bytes(x) ^ b ^ w;
    }
    diff == 0
}

/// The pattern of `w`, as bytes (for tests and fault injectors).
pub fn bytes(w: u64) -> Vec<u8> {
    let mut v = vec![0u8; DATA_LEN];
    fill(&mut v, w);
    v
}

struct Tables {
    fixed: u32,
    t: [[u32; 256]; 8],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let base: Vec<u8> = BASE.iter().flat_map(|w| w.to_le_bytes()).collect();
        let zero = crc32c::crc32c(&[0u8; DATA_LEN]);
        let bcast = |w: u64| -> Vec<u8> { (0..WORDS).flat_map(|_| w.to_le_bytes()).collect() };
        let d: Vec<u32> = (0..64).map(|j| crc32c::crc32c(&bcast(1u64 << j)) ^ zero).collect();
        let mut t = [[0u32; 256]; 8];
        for (k, table) in t.iter_mut().enumerate() {
            for (b, e) in table.iter_mut().enumerate() {
                *e = (0..8).filter(|i| b >> i & 1 == 1).fold(0, |acc, i| acc ^ d[8 * k + i]);
            }
        }
        Tables { fixed: crc32c::crc32c(&base), t }
    })
}

/// The CRC-32C of the pattern of `w` (what `crc32c::crc32c(&bytes(w))` returns), in eight
/// table look-ups.
#[inline]
pub fn crc(w: u64) -> u32 {
    let t = tables();
    let b = w.to_le_bytes();
    let mut c = t.fixed;
    for (k, byte) in b.iter().enumerate() {
        c ^= t.t[k][*byte as usize];
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn table_crc_is_the_crc_of_the_bytes(w in any::<u64>()) {
            prop_assert_eq!(crc(w), crc32c::crc32c(&bytes(w)));
        }

        #[test]
        fn a_pattern_matches_its_own_value_only(f in any::<u64>(), o in any::<u64>(), k in 1u8..=126) {
            let w = word(f, o, k);
            let data = bytes(w);
            prop_assert!(matches(&data, w));
            prop_assert!(!matches(&data, word(f, o, k % 126 + 1)));
            prop_assert!(!matches(&data, word(f, o ^ 512, k)));
            prop_assert!(!matches(&data, word(f ^ 1, o, k)));
        }
    }

    #[test]
    fn every_word_changes_with_the_key() {
        let a = bytes(word(7, 4096, 1));
        let b = bytes(word(7, 4096, 2));
        assert!(a.chunks(8).zip(b.chunks(8)).all(|(x, y)| x != y));
        // Not a constant or zero-filled pattern: dedupe and compression cannot fold it.
        assert!(a.iter().filter(|&&x| x == 0).count() < 16);
    }
}
