//! The stamp every 512-byte sector of a key block carries: a 48-byte header and 464 bytes of
//! pattern ([`crate::pattern`]). Layout (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `iolV` |
//! | 4 | layout version (1) |
//! | 5 | generation key, 1..=[`MAX_KEY`], rotating |
//! | 6..8 | reserved, 0 |
//! | 8..16 | byte offset of this sector in its file |
//! | 16..24 | file id ([`crate::file_id`]) |
//! | 24..32 | write time, ns since the Unix epoch |
//! | 32..36 | writer node id ([`crate::node_id`] of its name) |
//! | 36..40 | writer thread (the job's thread number) |
//! | 40..44 | CRC-32C of the data bytes 48..512 |
//! | 44..48 | CRC-32C of the header bytes 0..44 |

use crate::pattern;

pub const SECTOR: usize = 512;
pub const HEADER_LEN: usize = 48;
pub const DATA_LEN: usize = SECTOR - HEADER_LEN;
pub const MAGIC: [u8; 4] = *b"iolV";
pub const VERSION: u8 = 1;
/// Keys rotate 1, 2, ..., MAX_KEY, 1, ... (as Vdbench's): 0 means never written.
pub const MAX_KEY: u8 = 126;

/// The key after `k` (the first key after 0, never written, is 1).
#[inline]
pub fn next_key(k: u8) -> u8 {
    if k >= MAX_KEY {
        1
    } else {
        k + 1
    }
}

/// Who wrote a block and when: the fields of a header that are the same in all its sectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub file_id: u64,
    pub key: u8,
    pub time_ns: u64,
    pub node: u32,
    pub thread: u32,
}

/// Stamp a key block: every sector gets its header and pattern. `buf.len()` must be a multiple
/// of 512; `offset` is the block's byte offset in its file.
#[inline]
pub fn stamp_block(buf: &mut [u8], offset: u64, s: &Stamp) {
    for (i, sector) in buf.chunks_exact_mut(SECTOR).enumerate() {
        let off = offset + (i * SECTOR) as u64;
        let w = pattern::word(s.file_id, off, s.key);
        let (h, data) = sector.split_at_mut(HEADER_LEN);
        pattern::fill(data, w);
        h[0..4].copy_from_slice(&MAGIC);
        h[4] = VERSION;
        h[5] = s.key;
        h[6] = 0;
        h[7] = 0;
        h[8..16].copy_from_slice(&off.to_le_bytes());
        h[16..24].copy_from_slice(&s.file_id.to_le_bytes());
        h[24..32].copy_from_slice(&s.time_ns.to_le_bytes());
        h[32..36].copy_from_slice(&s.node.to_le_bytes());
        h[36..40].copy_from_slice(&s.thread.to_le_bytes());
        h[40..44].copy_from_slice(&pattern::crc(w).to_le_bytes());
        let hc = crc32c::crc32c(&h[..44]);
        h[44..48].copy_from_slice(&hc.to_le_bytes());
    }
}

/// A sector's header as read, before it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic_ok: bool,
    pub version: u8,
    pub key: u8,
    pub offset: u64,
    pub file_id: u64,
    pub time_ns: u64,
    pub node: u32,
    pub thread: u32,
    pub data_crc: u32,
    pub header_crc_ok: bool,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

impl Header {
    /// Read the header of a 512-byte sector (`None` if it is shorter).
    pub fn read(sector: &[u8]) -> Option<Header> {
        if sector.len() < SECTOR {
            return None;
        }
        let h = &sector[..HEADER_LEN];
        Some(Header {
            magic_ok: h[0..4] == MAGIC,
            version: h[4],
            key: h[5],
            offset: u64_at(h, 8),
            file_id: u64_at(h, 16),
            time_ns: u64_at(h, 24),
            node: u32_at(h, 32),
            thread: u32_at(h, 36),
            data_crc: u32_at(h, 40),
            header_crc_ok: crc32c::crc32c(&h[..44]) == u32_at(h, 44),
        })
    }
}

/// What one sector holds, judged against where it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sector {
    /// No stamp at all (zeros, laid-out data, another program's bytes).
    Unstamped,
    /// A stamp whose header or data checksum fails.
    Corrupt { header: Header, why: Corruption },
    /// An intact stamp of another place: `header.offset`/`header.file_id` say where.
    Elsewhere { header: Header },
    /// An intact stamp of this place.
    Good { header: Header },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    HeaderChecksum,
    BadKey,
    /// The data is not the pattern the header names (its CRC-32C is given).
    Data {
        found_crc: u32,
    },
    DataChecksumField,
}

/// Judge a 512-byte sector read from `offset` of the file `file_id`. A sector "looks stamped"
/// when its magic, its file id or its offset (other than 0, which zeros also hold) is right:
/// one flipped bit cannot hide the first two, so a damaged stamp reads as corrupt, never as
/// unstamped.
#[inline]
pub fn judge(sector: &[u8], offset: u64, file_id: u64) -> Sector {
    let Some(h) = Header::read(sector) else { return Sector::Unstamped };
    if !(h.magic_ok || h.file_id == file_id || (h.offset == offset && offset != 0)) {
        return Sector::Unstamped;
    }
    if !h.header_crc_ok || !h.magic_ok || h.version != VERSION {
        return Sector::Corrupt { header: h, why: Corruption::HeaderChecksum };
    }
    if h.key == 0 || h.key > MAX_KEY {
        return Sector::Corrupt { header: h, why: Corruption::BadKey };
    }
    let data = &sector[HEADER_LEN..SECTOR];
    // The data is checked against the pattern the header names, wherever it points: a stamp of
    // another place is misdirected only if it is intact.
    let w = pattern::word(h.file_id, h.offset, h.key);
    if !pattern::matches(data, w) {
        return Sector::Corrupt { header: h, why: Corruption::Data { found_crc: crc32c::crc32c(data) } };
    }
    if pattern::crc(w) != h.data_crc {
        return Sector::Corrupt { header: h, why: Corruption::DataChecksumField };
    }
    if h.offset != offset || h.file_id != file_id {
        return Sector::Elsewhere { header: h };
    }
    Sector::Good { header: h }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(key: u8) -> Stamp {
        Stamp { file_id: 0xF11E, key, time_ns: 1_700_000_000_000_000_000, node: 7, thread: 3 }
    }

    #[test]
    fn a_stamped_block_judges_good_in_every_sector() {
        let mut b = vec![0u8; 4096];
        stamp_block(&mut b, 8192, &stamp(5));
        for (i, s) in b.chunks(SECTOR).enumerate() {
            match judge(s, 8192 + (i * SECTOR) as u64, 0xF11E) {
                Sector::Good { header } => {
                    assert_eq!((header.key, header.node, header.thread), (5, 7, 3));
                }
                other => panic!("sector {i}: {other:?}"),
            }
            // The data checksum field is the real CRC-32C of the data bytes.
            assert_eq!(crc32c::crc32c(&s[HEADER_LEN..]), u32_at(s, 40));
        }
    }

    #[test]
    fn every_single_bit_flip_reads_as_corrupt() {
        let mut b = vec![0u8; SECTOR];
        stamp_block(&mut b, 0, &stamp(9));
        for bit in 0..SECTOR * 8 {
            let mut x = b.clone();
            x[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(judge(&x, 0, 0xF11E), Sector::Corrupt { .. }), "bit {bit}");
        }
    }

    #[test]
    fn zeros_are_unstamped_and_other_places_are_elsewhere() {
        assert_eq!(judge(&[0u8; SECTOR], 512, 0xF11E), Sector::Unstamped);
        let mut b = vec![0u8; SECTOR];
        stamp_block(&mut b, 1024, &stamp(2));
        assert!(matches!(judge(&b, 512, 0xF11E), Sector::Elsewhere { .. }));
        assert!(matches!(judge(&b, 1024, 0xBEEF), Sector::Elsewhere { .. }));
    }

    #[test]
    fn keys_rotate_from_1_to_126() {
        assert_eq!(next_key(0), 1);
        assert_eq!(next_key(125), 126);
        assert_eq!(next_key(126), 1);
    }
}
