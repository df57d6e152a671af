//! The data a stamped sector carries: 464 bytes derived from (file id, sector offset, key), so a
//! reader checks a block without having kept it. Each 8-byte word is a fixed random word XOR one
//! 64-bit value mixed from the three ([`word`]), so filling is one XOR pass (as cheap as a copy) and every
//! word differs between two keys, two offsets or two files. The data's CRC-32C is computed from
//! that value through sixteen 16-entry tables (CRC-32C is affine over GF(2), so the CRC of
//! `BASE ^ broadcast(w)` is a fixed part XOR one table entry per nibble of `w`, [`NibbleMap`]),
//! which the tests check against the `crc32c` crate's own CRC of the bytes.

use crate::layout::{DATA_LEN, SECTOR};
use crate::linear::NibbleMap;
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

/// Sectors are grouped by 4 KiB of file offset: the sectors of a group share one mixed value
/// and differ by a fixed word each ([`DELTA`]), so a writer mixes and checksums once per group
/// (the stamp's cost is mostly that: layout version 2). Distinct groups, keys or files still
/// give unrelated values, and the eight sectors of a group differ in every word.
pub const GROUP: u64 = 4096;

/// What each sector of a group adds to the group's value (distinct, nonzero).
pub const DELTA: [u64; 8] = {
    let mut d = [0u64; 8];
    let mut i = 0;
    while i < 8 {
        d[i] = splitmix(0x6465_6c74_6173_6563 ^ i as u64);
        i += 1;
    }
    d
};

/// The value a sector's data words are XORed with: distinct (file, offset, key) give distinct
/// values.
#[inline]
pub fn word(file_id: u64, sector_offset: u64, key: u8) -> u64 {
    word_at(word_seed(file_id, key), sector_offset)
}

/// The half of [`word`] every sector of one file and key shares, so stamping a block mixes it
/// once.
#[inline]
pub fn word_seed(file_id: u64, key: u8) -> u64 {
    splitmix(file_id ^ ((key as u64) << 56) ^ 0x5EC7_0000)
}

/// The value of the 4 KiB group a sector offset falls in.
#[inline]
pub fn group_word(seed: u64, sector_offset: u64) -> u64 {
    splitmix(seed ^ (sector_offset & !(GROUP - 1)))
}

/// Which of its group's sectors the offset is.
#[inline]
pub fn in_group(sector_offset: u64) -> usize {
    ((sector_offset / SECTOR as u64) % 8) as usize
}

/// [`word`] from its shared half and the sector's offset.
#[inline]
pub fn word_at(seed: u64, sector_offset: u64) -> u64 {
    group_word(seed, sector_offset) ^ DELTA[in_group(sector_offset)]
}

/// [`word`] as layout version 1 made it (every sector mixed apart), to read its stamps.
#[inline]
pub fn word_v1(file_id: u64, sector_offset: u64, key: u8) -> u64 {
    splitmix(word_seed(file_id, key) ^ sector_offset)
}

/// Write the data of a sector (`dst` is its 464 data bytes).
#[inline(always)]
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
    /// The CRC-32C of the pattern of 0 (`BASE`'s).
    fixed: u32,
    /// What a value adds to it: the CRC-32C of a broadcast value is linear in the value.
    linear: NibbleMap<16>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let fixed = crc32c::crc32c(&bytes(0));
        Tables { fixed, linear: NibbleMap::new(|w| (crc32c::crc32c(&bytes(w)) ^ fixed) as u64) }
    })
}

/// The CRC-32C of the pattern of `w` (what `crc32c::crc32c(&bytes(w))` returns), in sixteen
/// look-ups of 1 KiB of tables.
#[inline]
pub fn crc(w: u64) -> u32 {
    let t = tables();
    t.fixed ^ t.linear.apply(w) as u32
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
            prop_assert!(!matches(&data, word(f, o ^ 4096, k)));
            prop_assert!(!matches(&data, word_v1(f, o, k)));
        }
    }

    #[test]
    fn the_sectors_of_a_group_differ_in_every_word() {
        for i in 0..8u64 {
            for j in 0..i {
                let a = bytes(word(7, 8192 + 512 * i, 3));
                let b = bytes(word(7, 8192 + 512 * j, 3));
                assert!(a.chunks(8).zip(b.chunks(8)).all(|(x, y)| x != y), "sectors {i} and {j}");
            }
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
