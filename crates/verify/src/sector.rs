//! The stamp every 512-byte sector of a key block carries: a 48-byte header and 464 bytes of
//! pattern ([`crate::pattern`]). Layout (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `iolV` |
//! | 4 | layout version (2; 1 is still read, see [`pattern::word_v1`]) |
//! | 5 | generation key, 1..=[`MAX_KEY`], rotating |
//! | 6..8 | reserved, 0 |
//! | 8..16 | byte offset of this sector in its file |
//! | 16..24 | file id ([`crate::file_id`]) |
//! | 24..32 | write time, ns since the Unix epoch |
//! | 32..36 | writer node id ([`crate::node_id`] of its name) |
//! | 36..40 | writer thread (the job's thread number) |
//! | 40..44 | CRC-32C of the data bytes 48..512 |
//! | 44..48 | CRC-32C of the header bytes 0..44 |

use crate::linear::NibbleMap;
use crate::pattern;

pub use crate::layout::{DATA_LEN, HEADER_LEN, SECTOR};
pub const MAGIC: [u8; 4] = *b"iolV";
pub const VERSION: u8 = 2;
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
/// of 512; `offset` is the block's byte offset in its file. (A writer stamping many blocks
/// keeps a [`Stamper`].)
#[inline]
pub fn stamp_block(buf: &mut [u8], offset: u64, s: &Stamp) {
    Stamper::new(s.file_id, s.node, s.thread).stamp(buf, offset, s.key, s.time_ns);
}

/// One writer's stamping: the header fields that change seldom (file, node, thread, the
/// time, which the caller keeps coarse) are laid out and their CRC-32C taken once, and they
/// are redone only when the time moves on. The sectors of a block differ only in their offset, pattern and data
/// checksum, and blocks in their key: each sector's header checksum follows from the kept one
/// by table (CRC-32C is affine: changing a field's bits flips a fixed set of checksum bits,
/// [`HeaderTables`]); the tests check it against the CRC of the bytes. The sectors are written
/// with the widest vector instructions the CPU has (AVX2 where there is one, through pulp's
/// run-time dispatch: 32-byte stores halve the pattern's cost against SSE2's).
pub struct Stamper {
    /// The header with key, offset and data checksum zero.
    tmpl: [u8; HEADER_LEN],
    /// CRC-32C of `tmpl[..44]`.
    crc: u32,
    time_ns: u64,
    /// The widest vector instructions this CPU has: the pattern is written with them (pulp
    /// compiles the loop once per instruction set and picks at run time).
    arch: pulp::Arch,
}

impl Stamper {
    pub fn new(file_id: u64, node: u32, thread: u32) -> Stamper {
        let mut tmpl = [0u8; HEADER_LEN];
        tmpl[0..4].copy_from_slice(&MAGIC);
        tmpl[4] = VERSION;
        tmpl[16..24].copy_from_slice(&file_id.to_le_bytes());
        tmpl[32..36].copy_from_slice(&node.to_le_bytes());
        tmpl[36..40].copy_from_slice(&thread.to_le_bytes());
        Stamper { crc: crc32c::crc32c(&tmpl[..44]), tmpl, time_ns: 0, arch: pulp::Arch::new() }
    }

    /// Stamp for another file from now on (a writer of many files keeps one stamper).
    pub fn set_file(&mut self, file_id: u64) {
        if u64_at(&self.tmpl, 16) != file_id {
            self.tmpl[16..24].copy_from_slice(&file_id.to_le_bytes());
            self.crc = crc32c::crc32c(&self.tmpl[..44]);
        }
    }

    /// The file this stamper stamps for.
    pub fn file(&self) -> u64 {
        u64_at(&self.tmpl, 16)
    }

    /// Stamp a key block with `key`, written at `time_ns` (see [`stamp_block`]).
    #[inline]
    pub fn stamp(&mut self, buf: &mut [u8], offset: u64, key: u8, time_ns: u64) {
        if time_ns != self.time_ns {
            self.tmpl[24..32].copy_from_slice(&time_ns.to_le_bytes());
            self.crc = crc32c::crc32c(&self.tmpl[..44]);
            self.time_ns = time_ns;
        }
        let mut tmpl = self.tmpl;
        tmpl[5] = key;
        self.arch.dispatch(Sectors { buf, offset, key, tmpl: &tmpl, crc: self.crc });
    }
}

/// The body of [`Stamper::stamp`], compiled once per instruction set.
struct Sectors<'a> {
    buf: &'a mut [u8],
    offset: u64,
    key: u8,
    tmpl: &'a [u8; HEADER_LEN],
    crc: u32,
}

impl pulp::WithSimd for Sectors<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Sectors { buf, offset, key, tmpl, crc } = self;
        let ht = header_tables();
        let file_id = u64_at(tmpl, 16);
        let seed = pattern::word_seed(file_id, key);
        let fixed = crc ^ ht.key.apply(key as u64) as u32 ^ ht.dc_fixed;
        // A 4 KiB group's value, its part of the data checksum (low half) and of the header's
        // (high half), and the group's offset's part of the header's (redone when a block
        // spans groups).
        let mut group = (u64::MAX, 0, 0, 0);
        for (i, sector) in buf.chunks_exact_mut(SECTOR).enumerate() {
            let off = offset + (i * SECTOR) as u64;
            let g = off & !(pattern::GROUP - 1);
            if g != group.0 {
                let gw = pattern::group_word(seed, off);
                group = (g, gw, ht.data.apply(gw), fixed ^ ht.off.apply(g) as u32);
            }
            let d = pattern::in_group(off);
            let low = off & (pattern::GROUP - 1);
            // The rest of the offset's part: the sector's place in its group.
            let placed = if low.is_multiple_of(SECTOR as u64) { ht.sector[d] } else { ht.off.apply_sparse(low) as u32 };
            let (h, data) = sector.split_at_mut(HEADER_LEN);
            pattern::fill(data, group.1 ^ pattern::DELTA[d]);
            let e = group.2 ^ ht.delta[d];
            h.copy_from_slice(tmpl);
            h[8..16].copy_from_slice(&off.to_le_bytes());
            h[40..44].copy_from_slice(&(ht.pattern_fixed ^ e as u32).to_le_bytes());
            h[44..48].copy_from_slice(&(group.3 ^ placed ^ (e >> 32) as u32).to_le_bytes());
        }
    }
}

/// What the header's fields that change from block to block add to its CRC-32C (over bytes
/// 0..44): CRC-32C is affine, so a field's part is a linear map of its value ([`NibbleMap`]).
struct HeaderTables {
    /// The key (byte 5).
    key: NibbleMap<2>,
    /// The offset (bytes 8..16).
    off: NibbleMap<16>,
    /// From a sector's pattern value: its data checksum's linear part (low 32 bits) and what
    /// that part adds to the header's checksum (high 32 bits).
    data: NibbleMap<16>,
    /// `data` of each [`pattern::DELTA`].
    delta: [u64; 8],
    /// `off` of each sector's offset within its 4 KiB group.
    sector: [u32; 8],
    /// The CRC-32C of the pattern of 0 ([`pattern::crc`]`(0)`), and what it adds to the header's.
    pattern_fixed: u32,
    dc_fixed: u32,
}

fn header_tables() -> &'static HeaderTables {
    static T: std::sync::OnceLock<HeaderTables> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let zero = crc32c::crc32c(&[0u8; 44]);
        // The part of the header's checksum a value of `len` bytes at byte `at` adds.
        let field = |at: usize, len: usize, v: u64| {
            let mut h = [0u8; 44];
            h[at..at + len].copy_from_slice(&v.to_le_bytes()[..len]);
            (crc32c::crc32c(&h) ^ zero) as u64
        };
        let pattern_fixed = pattern::crc(0);
        let dc = NibbleMap::<8>::new(|v| field(40, 4, v));
        let data = NibbleMap::new(|w| {
            let lin = (pattern::crc(w) ^ pattern_fixed) as u64;
            lin | dc.apply(lin) << 32
        });
        HeaderTables {
            key: NibbleMap::new(|v| field(5, 1, v)),
            off: NibbleMap::new(|v| field(8, 8, v)),
            delta: pattern::DELTA.map(|d| data.apply(d)),
            sector: std::array::from_fn(|d| field(8, 8, d as u64 * SECTOR as u64) as u32),
            data,
            pattern_fixed,
            dc_fixed: dc.apply(pattern_fixed as u64) as u32,
        }
    })
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
    if !h.header_crc_ok || !h.magic_ok || !(1..=VERSION).contains(&h.version) {
        return Sector::Corrupt { header: h, why: Corruption::HeaderChecksum };
    }
    if h.key == 0 || h.key > MAX_KEY {
        return Sector::Corrupt { header: h, why: Corruption::BadKey };
    }
    let data = &sector[HEADER_LEN..SECTOR];
    // The data is checked against the pattern the header names, wherever it points: a stamp of
    // another place is misdirected only if it is intact.
    let w = match h.version {
        1 => pattern::word_v1(h.file_id, h.offset, h.key),
        _ => pattern::word(h.file_id, h.offset, h.key),
    };
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

    proptest::proptest! {
        #[test]
        fn every_header_checksum_is_the_crc_of_its_bytes(
            block in 0u64..1 << 40, file_id in proptest::prelude::any::<u64>(), key in 1u8..=126,
            time_ns in proptest::prelude::any::<u64>(), node in proptest::prelude::any::<u32>(), thread in proptest::prelude::any::<u32>(),
        ) {
            let mut b = vec![0u8; 4096];
            stamp_block(&mut b, block * 512, &Stamp { file_id, key, time_ns, node, thread });
            for (i, s) in b.chunks(SECTOR).enumerate() {
                proptest::prop_assert_eq!(crc32c::crc32c(&s[..44]), u32_at(s, 44), "sector {}", i);
                proptest::prop_assert_eq!(crc32c::crc32c(&s[HEADER_LEN..]), u32_at(s, 40));
                proptest::prop_assert_eq!(u64_at(s, 8), block * 512 + (i * SECTOR) as u64);
            }
            // Offsets off the 512-byte grid (no key block has one) are stamped right too.
            let odd = block * 512 + 1 + block % 511;
            stamp_block(&mut b, odd, &Stamp { file_id, key, time_ns, node, thread });
            for (i, s) in b.chunks(SECTOR).enumerate() {
                proptest::prop_assert_eq!(crc32c::crc32c(&s[..44]), u32_at(s, 44), "sector {} at {}", i, odd);
                let good = matches!(judge(s, odd + (i * SECTOR) as u64, file_id), Sector::Good { .. });
                proptest::prop_assert!(good, "sector {} at {}", i, odd);
            }
            // One stamper for many blocks, keys and times stamps each as stamp_block does.
            let mut st = Stamper::new(file_id, node, thread);
            for (j, k) in [key, key % 126 + 1, key].into_iter().enumerate() {
                let t = time_ns.wrapping_add((j / 2) as u64);
                let mut a = vec![0u8; 4096];
                st.stamp(&mut a, block * 512 + 4096 * j as u64, k, t);
                let mut e = vec![0u8; 4096];
                stamp_block(&mut e, block * 512 + 4096 * j as u64, &Stamp { file_id, key: k, time_ns: t, node, thread });
                proptest::prop_assert_eq!(&a, &e);
                // The plain scalar copy writes what the vector one (this CPU's) does.
                let mut tmpl = st.tmpl;
                tmpl[5] = k;
                let mut sc = vec![0u8; 4096];
                pulp::WithSimd::with_simd(
                    Sectors { buf: &mut sc, offset: block * 512 + 4096 * j as u64, key: k, tmpl: &tmpl, crc: st.crc },
                    pulp::Scalar::new(),
                );
                proptest::prop_assert_eq!(&a, &sc);
            }
        }
    }

    #[test]
    fn a_layout_1_stamp_still_judges_good() {
        // Version 1 mixed every sector's value apart: a sector as it wrote it.
        let (f, off, key) = (0xF11E, 4608, 9);
        let w = pattern::word_v1(f, off, key);
        let mut s = vec![0u8; SECTOR];
        s[0..4].copy_from_slice(&MAGIC);
        s[4] = 1;
        s[5] = key;
        s[8..16].copy_from_slice(&off.to_le_bytes());
        s[16..24].copy_from_slice(&f.to_le_bytes());
        s[HEADER_LEN..].copy_from_slice(&pattern::bytes(w));
        let dc = crc32c::crc32c(&s[HEADER_LEN..]);
        s[40..44].copy_from_slice(&dc.to_le_bytes());
        let hc = crc32c::crc32c(&s[..44]);
        s[44..48].copy_from_slice(&hc.to_le_bytes());
        assert!(matches!(judge(&s, off, f), Sector::Good { .. }));
        // The same bytes called version 2 do not hold version 2's pattern.
        s[4] = VERSION;
        let hc = crc32c::crc32c(&s[..44]);
        s[44..48].copy_from_slice(&hc.to_le_bytes());
        assert!(matches!(judge(&s, off, f), Sector::Corrupt { why: Corruption::Data { .. }, .. }));
    }

    #[test]
    fn keys_rotate_from_1_to_126() {
        assert_eq!(next_key(0), 1);
        assert_eq!(next_key(125), 126);
        assert_eq!(next_key(126), 1);
    }
}
