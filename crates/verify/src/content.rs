//! Validation of files written at any offset and any length (`--verify` on an application
//! workload or a trace replay, whose writes are not whole key blocks): what each byte of a file
//! should hold is kept as extents (a byte range, the key of the write that put it there, and
//! which of its sectors that write covered whole), so a read of any range is checked without
//! having kept the data. A write's whole 512-byte sectors are stamped as a block workload's are
//! ([`crate::sector`]: header, pattern, checksums); the sectors it covers only in part get the
//! same pattern behind 48 bytes of pattern instead of a header (the sector's [`image`]), so a
//! later write to the rest of the sector, or a read of part of it, still knows what each byte
//! should be. In a file the run created, bytes no write reached are a hole and read as zeros.
//! The classes are the block checker's ([`crate::check`]); a [`crate::Tally`] counts and keeps
//! what is found.

use crate::check::{check_block, Expect, Finding};
use crate::map::UNKNOWN;
use crate::pattern;
use crate::sector::{judge, next_key, Header, Sector, Stamper, HEADER_LEN, MAX_KEY, SECTOR};
use iolab_model::ErrorClass;
use std::collections::BTreeMap;
use std::io;

const S: u64 = SECTOR as u64;

/// What the first 48 bytes of a sector written only in part hold instead of a header (no single
/// write covers it, so none can make its header): fixed words XOR the sector's pattern value.
const HEAD: [u64; HEADER_LEN / 8] = {
    let mut h = [0u64; HEADER_LEN / 8];
    let mut i = 0;
    while i < h.len() {
        h[i] = pattern::BASE[i].rotate_left(29) ^ 0x6865_6164_6c65_7373;
        i += 1;
    }
    h
};

/// The bytes a sector written only in part holds, where the write reached (key `key`).
pub fn image(file_id: u64, sector_offset: u64, key: u8) -> [u8; SECTOR] {
    let w = pattern::word(file_id, sector_offset, key);
    let mut b = [0u8; SECTOR];
    for (c, h) in b[..HEADER_LEN].chunks_exact_mut(8).zip(HEAD) {
        c.copy_from_slice(&(h ^ w).to_le_bytes());
    }
    pattern::fill(&mut b[HEADER_LEN..], w);
    b
}

/// Fill `buf` with what a write of `buf.len()` bytes at `offset` with `key` carries, for the
/// file `stamper` stamps for: whole sectors stamped, the ends of partly covered ones from their
/// image.
pub fn fill(stamper: &mut Stamper, buf: &mut [u8], offset: u64, key: u8, time_ns: u64) {
    let file_id = stamper.file();
    let end = offset + buf.len() as u64;
    let mut p = offset;
    while p < end {
        let s = p & !(S - 1);
        let at = (p - offset) as usize;
        if p == s && s + S <= end {
            let whole_end = end & !(S - 1);
            stamper.stamp(&mut buf[at..(whole_end - offset) as usize], s, key, time_ns);
            p = whole_end;
        } else {
            let hi = (s + S).min(end);
            let img = image(file_id, s, key);
            buf[at..(hi - offset) as usize].copy_from_slice(&img[(p - s) as usize..(hi - s) as usize]);
            p = hi;
        }
    }
}

/// The sectors a byte range touches.
pub fn sectors(offset: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    (offset + len).div_ceil(S) - offset / S
}

/// An error found: its sector's offset, the key expected there, what was found.
pub type Found = (u64, u8, Finding);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    end: u64,
    /// The key of the write (UNKNOWN: not checked, its content is not known).
    key: u8,
    /// The sectors that write covered whole, which hold its stamps: [from, to).
    stamped: (u64, u64),
}

/// What one file should hold.
#[derive(Debug)]
pub struct Content {
    file_id: u64,
    /// The run created the file (or emptied it): bytes no write reached are a hole, and the
    /// file is `size` bytes long. Otherwise only what the run wrote is known.
    known: bool,
    extents: BTreeMap<u64, Extent>,
    size: u64,
    /// The last key given to a write.
    key: u8,
    /// Writes in flight, of any thread.
    writing: u32,
    /// Two writes were in flight together: which landed last is not known, so what they wrote
    /// is not checked.
    contended: bool,
    /// Bumped when a write begins or ends: a read checks only if none did while it was in flight.
    version: u64,
}

impl Content {
    pub fn new(file_id: u64, known: bool) -> Content {
        Content { file_id, known, extents: BTreeMap::new(), size: 0, key: 0, writing: 0, contended: false, version: 0 }
    }
    pub fn file_id(&self) -> u64 {
        self.file_id
    }
    /// The file's length as the run made it (for a file it did not create, where its writes end).
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn known(&self) -> bool {
        self.known
    }
    /// Whether no write began or ended since `version` was taken, and none is in flight.
    pub fn quiet_since(&self, version: u64) -> bool {
        self.writing == 0 && self.version == version
    }
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A write is about to be issued: its key.
    pub fn begin_write(&mut self) -> u8 {
        if self.writing > 0 {
            self.contended = true;
        }
        self.writing += 1;
        self.version += 1;
        self.key = next_key(self.key);
        self.key
    }

    /// The write of `len` bytes at `offset` with `key` ended: `done` is what the call returned
    /// (`None`: it failed, and what it left is not known).
    pub fn end_write(&mut self, offset: u64, len: u64, key: u8, done: Option<u64>) {
        self.writing = self.writing.saturating_sub(1);
        self.version += 1;
        let contended = self.contended;
        if self.writing == 0 {
            self.contended = false;
        }
        match done {
            Some(n) => {
                let n = n.min(len);
                let end = offset + n;
                if contended {
                    self.put(offset, end, Some((UNKNOWN, (0, 0))));
                } else {
                    self.put(offset, end, Some((key, (offset.next_multiple_of(S), end & !(S - 1)))));
                }
                self.size = self.size.max(end);
            }
            None => {
                self.put(offset, offset + len, Some((UNKNOWN, (0, 0))));
                // The file may have grown: its length is no longer known.
                self.known = false;
                self.size = self.size.max(offset + len);
            }
        }
    }

    /// ftruncate(2) to `len`.
    pub fn truncate(&mut self, len: u64) {
        self.put(len, u64::MAX, None);
        self.size = len;
    }

    /// fallocate(2): `hole` when the range now reads as zeros (punched or zeroed), `keep_size`
    /// when the file's length stays.
    pub fn allocate(&mut self, offset: u64, len: u64, hole: bool, keep_size: bool) {
        if hole {
            self.put(offset, offset.saturating_add(len), None);
        }
        if !keep_size {
            self.size = self.size.max(offset.saturating_add(len));
        }
    }

    /// Stop checking a range (an error was found there).
    pub fn forget(&mut self, offset: u64, len: u64) {
        self.put(offset, offset.saturating_add(len), Some((UNKNOWN, (0, 0))));
    }

    /// Set [lo, hi) to one extent (`None`: a hole).
    fn put(&mut self, lo: u64, hi: u64, e: Option<(u8, (u64, u64))>) {
        if lo >= hi {
            return;
        }
        let mut cut: Vec<u64> = Vec::new();
        if let Some((&s, x)) = self.extents.range(..lo).next_back() {
            if x.end > lo {
                cut.push(s);
            }
        }
        cut.extend(self.extents.range(lo..hi).map(|(s, _)| *s));
        for s in cut {
            let Some(x) = self.extents.remove(&s) else { continue };
            if s < lo {
                self.extents.insert(s, Extent { end: lo, ..x });
            }
            if x.end > hi {
                self.extents.insert(hi, x);
            }
        }
        if let Some((key, stamped)) = e {
            self.extents.insert(lo, Extent { end: hi, key, stamped });
        }
    }

    /// Where the last byte of known content ends.
    fn written_end(&self) -> u64 {
        self.extents.iter().rev().find(|(_, x)| x.key != UNKNOWN).map_or(0, |(_, x)| x.end)
    }

    /// Check what a read of `asked` bytes at `offset` returned (`buf`). Returns the sectors it
    /// looked at and the errors, each with its sector, the key expected there and the finding.
    pub fn check(&self, buf: &[u8], offset: u64, asked: u64) -> (u64, Vec<Found>) {
        let mut out = Vec::new();
        let got_end = offset + buf.len() as u64;
        let expect_end = if self.known { self.size } else { self.written_end() };
        let want = (offset + asked).min(expect_end);
        if got_end < want && !self.unknown_at(got_end) {
            let s = got_end & !(S - 1);
            out.push((
                s,
                self.key_at(got_end),
                Finding {
                    class: ErrorClass::LostWrite,
                    sector_offset: s,
                    found_key: None,
                    found_time_ns: None,
                    writer: None,
                    detail: format!(
                        "the file ends at byte {got_end}: the {} bytes written after it are gone",
                        want - got_end
                    ),
                },
            ));
        }
        let mut checked = 0;
        // Keys some sector of the read held as expected: a write of one of them that left old
        // data in another sector is torn.
        let mut good: Vec<u8> = Vec::new();
        let short = out.len();
        let mut p = offset;
        while p < got_end {
            let s = p & !(S - 1);
            let hi = (s + S).min(got_end);
            let bytes = &buf[(p - offset) as usize..(hi - offset) as usize];
            let (looked, f) = self.check_sector(bytes, p, s);
            checked += looked as u64;
            match f {
                Some((k, f)) => out.push((s, k, f)),
                None if looked => {
                    let k = self.key_at(p);
                    if !matches!(k, 0 | UNKNOWN) && !good.contains(&k) {
                        good.push(k);
                    }
                }
                None => {}
            }
            p = hi;
        }
        for (_, k, f) in &mut out[short..] {
            if matches!(f.class, ErrorClass::LostWrite | ErrorClass::NeverWritten) && good.contains(k) {
                f.class = ErrorClass::Torn;
                f.detail = format!("part of the write of key {k} landed, not here: {}", f.detail);
            }
        }
        (checked, merge_runs(out))
    }

    fn key_at(&self, at: u64) -> u8 {
        match self.extents.range(..=at).next_back() {
            Some((_, x)) if x.end > at => x.key,
            _ => 0,
        }
    }

    fn unknown_at(&self, at: u64) -> bool {
        matches!(self.extents.range(..=at).next_back(), Some((_, x)) if x.end > at && x.key == UNKNOWN)
    }

    /// Check the bytes [lo, lo + bytes.len()) of the sector at `s`: whether anything was known
    /// of them, and the first error (with the key expected).
    fn check_sector(&self, bytes: &[u8], lo: u64, s: u64) -> (bool, Option<(u8, Finding)>) {
        let hi = lo + bytes.len() as u64;
        let whole = lo == s && bytes.len() == SECTOR;
        // The common case first, without collecting pieces: one write stamped the whole sector.
        if whole {
            if let Some((_, x)) = self.extents.range(..=lo).next_back() {
                if x.end >= hi && x.key != UNKNOWN && x.stamped.0 <= s && s + S <= x.stamped.1 {
                    let e = Expect { key: x.key, ..Default::default() };
                    if check_block(bytes, s, self.file_id, &e).is_none() {
                        return (true, None);
                    }
                }
            }
        }
        // The pieces of the range: extents and the gaps between them.
        let mut pieces: Vec<(u64, u64, Option<Extent>)> = Vec::with_capacity(2);
        let mut at = lo;
        let first = self.extents.range(..=lo).next_back().filter(|(_, x)| x.end > lo).map(|(s, _)| *s).unwrap_or(lo);
        for (&xs, x) in self.extents.range(first..hi) {
            let a = xs.max(lo);
            if a > at {
                pieces.push((at, a, None));
            }
            let b = x.end.min(hi);
            pieces.push((a, b, Some(*x)));
            at = b;
        }
        if at < hi {
            pieces.push((at, hi, None));
        }
        // The common case: one write stamped the whole sector.
        if let [(_, _, Some(x))] = pieces.as_slice() {
            if whole && x.key != UNKNOWN && x.stamped.0 <= s && s + S <= x.stamped.1 {
                let e = Expect { key: x.key, ..Default::default() };
                if check_block(bytes, s, self.file_id, &e).is_none() {
                    return (true, None);
                }
                let f = self.classify(bytes, s, s, s, Some(x.key), Some(bytes), true);
                return (true, Some((x.key, f)));
            }
        }
        let mut looked = false;
        for (a, b, x) in pieces {
            let part = &bytes[(a - lo) as usize..(b - lo) as usize];
            let (expected, skip_header) = match x {
                Some(x) if x.key == UNKNOWN => continue,
                Some(x) => (Some(x.key), x.stamped.0 <= s && s + S <= x.stamped.1),
                None if self.known => (None, false),
                None => continue,
            };
            looked = true;
            let bad = match expected {
                Some(k) => {
                    let img = image(self.file_id, s, k);
                    let h = s + HEADER_LEN as u64;
                    let from = if skip_header { h.max(a) } else { a };
                    let body = (from..b).find(|&o| bytes[(o - lo) as usize] != img[(o - s) as usize]);
                    // The write's header, where this piece holds all of it: intact, of this
                    // place and key.
                    let head_ok = !(skip_header && a == s && b >= h)
                        || header_is(&bytes[(s - lo) as usize..(h - lo) as usize], s, self.file_id, k);
                    if head_ok {
                        body
                    } else {
                        Some(s)
                    }
                }
                None => part.iter().position(|&c| c != 0).map(|i| a + i as u64),
            };
            if let Some(o) = bad {
                let sector = whole.then_some(bytes);
                let f = self.classify(part, a, o, s, expected, sector, skip_header);
                return (true, Some((expected.unwrap_or(0), f)));
            }
        }
        (looked, None)
    }

    /// A sector read whole whose stamp explains it: another place's intact stamp (misdirected)
    /// or an intact stamp of this place with another key than `expected` (a lost write).
    fn by_stamp(&self, sec: &[u8], s: u64, piece: std::ops::Range<u64>, expected: Option<u8>) -> Option<Finding> {
        let (a, b) = (piece.start, piece.end);
        let (class, key, detail) = match judge(sec, s, self.file_id) {
            Sector::Elsewhere { header } => {
                let whose = if header.file_id == self.file_id {
                    "this file".to_string()
                } else {
                    format!("file id {:#018x}", header.file_id)
                };
                let detail = format!("the sector holds the stamp of offset {} of {whose}", header.offset);
                (ErrorClass::Misdirected, header.key, detail)
            }
            Sector::Good { header } if expected.is_some_and(|k| k != header.key) => {
                let detail = format!(
                    "the sector holds an intact stamp of key {}: the write of key {} to bytes {a}..{b} never reached it",
                    header.key,
                    expected.unwrap_or(0)
                );
                (ErrorClass::LostWrite, header.key, detail)
            }
            _ => return None,
        };
        let h = Header::read(sec)?;
        Some(Finding {
            class,
            sector_offset: s,
            found_key: Some(key),
            found_time_ns: Some(h.time_ns),
            writer: Some((h.node, h.thread)),
            detail,
        })
    }

    /// Name what a piece [a, a + part.len()) of the sector at `s` holds instead of the key
    /// `expected` (`None`: a hole); `bad` is its first wrong byte, `sector` the whole sector when
    /// it was read whole, `stamped` whether the write expected there stamped the sector.
    #[allow(clippy::too_many_arguments)]
    fn classify(
        &self,
        part: &[u8],
        a: u64,
        bad: u64,
        s: u64,
        expected: Option<u8>,
        sector: Option<&[u8]>,
        stamped: bool,
    ) -> Finding {
        let f = |class, found_key: Option<u8>, detail: String| Finding {
            class,
            sector_offset: s,
            found_key,
            found_time_ns: None,
            writer: None,
            detail,
        };
        let b = a + part.len() as u64;
        if let Some(found) = sector.and_then(|sec| self.by_stamp(sec, s, a..b, expected)) {
            return found;
        }
        let Some(k) = expected else {
            let n = part.iter().filter(|&&c| c != 0).count();
            return f(
                ErrorClass::Corrupted,
                None,
                format!("bytes {a}..{b} were never written and should read as zeros; {n} of them do not, the first at {bad}"),
            );
        };
        // An intact header of this place: its key explains the header's bytes.
        let header = sector.and_then(Header::read).filter(|h| {
            h.header_crc_ok
                && h.magic_ok
                && h.offset == s
                && h.file_id == self.file_id
                && (1..=MAX_KEY).contains(&h.key)
        });
        // What each whole 8-byte word of the piece holds: the expected key's bytes, zeros, an
        // older key's bytes of this place, or none of them.
        let mut images: Vec<Option<[u8; SECTOR]>> = vec![None; MAX_KEY as usize + 1];
        let mut image_of = |key: u8| *images[key as usize].get_or_insert_with(|| image(self.file_id, s, key));
        let (mut new, mut zero, mut old, mut other) = (0u32, 0u32, None::<u8>, None::<u64>);
        let mut o = a.next_multiple_of(8);
        while o + 8 <= b {
            let pos = (o - s) as usize;
            let word = &part[(o - a) as usize..(o - a) as usize + 8];
            let in_header = pos < HEADER_LEN;
            if in_header && header.is_some() {
                // A header's bytes: the intact stamp says whose they are.
                match header {
                    Some(h) if h.key == k => new += 1,
                    Some(h) => {
                        old.get_or_insert(h.key);
                    }
                    None => {}
                }
            } else if in_header && stamped {
                // A header the write made, damaged or read in part: its bytes (zeros among them)
                // are no evidence of what else the sector holds.
            } else if word == &image_of(k)[pos..pos + 8] {
                new += 1;
            } else if word.iter().all(|&c| c == 0) {
                zero += 1;
            } else if let Some(k2) = (1..=MAX_KEY).filter(|&k2| k2 != k).find(|&k2| word == &image_of(k2)[pos..pos + 8])
            {
                old.get_or_insert(k2);
            } else if let Some(k2) = (!in_header).then(|| older(word, pos, k, &mut image_of)).flatten() {
                // (Zeros were counted above: this is an older key, or two across their edge.)
                old.get_or_insert(k2);
            } else if !in_header {
                other.get_or_insert(o);
            }
            // (An unexplained word of the header's bytes may be part of an older header that a
            // later write overlapped: not evidence either way.)
            o += 8;
        }
        let wrong = {
            let img = image_of(k);
            let header_end = if stamped { s + HEADER_LEN as u64 } else { s };
            (a.max(header_end)..b).filter(|&o| part[(o - a) as usize] != img[(o - s) as usize]).count()
        };
        // Bytes of the header's place that fit an older header of this place (the fields a
        // reader can know: magic, version, offset, file id): older data, key unknown.
        let mut old_header = false;
        if new == 0 && zero == 0 && old.is_none() && other.is_none() {
            // Too few bytes for a whole word: judge them together.
            match older(part, (a - s) as usize, k, &mut image_of) {
                Some(0) => zero = 1,
                Some(k2) => old = Some(k2),
                None if b <= s + HEADER_LEN as u64 && fits_header(part, (a - s) as usize, s, self.file_id) => {
                    old_header = true
                }
                None => other = Some(bad),
            }
        }
        if let Some(at) = other.or((zero == 0 && old.is_none() && !old_header).then_some(bad)) {
            return f(
                ErrorClass::Corrupted,
                None,
                format!(
                    "{wrong} of bytes {a}..{b} are neither the pattern of key {k} nor older data, the first at {at}"
                ),
            );
        }
        if new > 0 {
            return f(
                ErrorClass::Torn,
                old,
                format!("bytes {a}..{b} hold key {k} in part and older data in the rest: part of the write landed"),
            );
        }
        match old {
            Some(k2) => f(
                ErrorClass::LostWrite,
                Some(k2),
                format!("bytes {a}..{b} hold key {k2}, not {k}: the last write to them never reached them"),
            ),
            None if old_header => f(
                ErrorClass::LostWrite,
                None,
                format!("bytes {a}..{b} hold part of an older stamp's header, not key {k}: the last write to them never reached them"),
            ),
            None => f(ErrorClass::NeverWritten, None, format!("bytes {a}..{b}, written with key {k}, read as zeros")),
        }
    }

    /// Read the whole file back and check it (`--verify-after`): sectors checked and errors.
    pub fn check_file(&self, file: &std::fs::File) -> io::Result<(u64, Vec<Found>)> {
        const CHUNK: u64 = 1 << 20;
        let len = file.metadata()?.len().max(self.size);
        let mut buf = vec![0u8; CHUNK as usize];
        let (mut checked, mut found) = (0, Vec::new());
        let mut at = 0;
        while at < len {
            let ask = CHUNK.min(len - at);
            let n = crate::scan::read_full(file, &mut buf[..ask as usize], at)?;
            let (c, f) = self.check(&buf[..n], at, ask);
            checked += c;
            found.extend(f);
            if (n as u64) < ask {
                break;
            }
            at += ask;
        }
        Ok((checked, found))
    }
}

/// Whether `bytes`, at `pos` in their sector, are older data than key `k`: zeros (`Some(0)`),
/// one older key's bytes, or two older writes' bytes on either side of one edge (a word or a
/// short piece across the end of one write and the start of the next); the key found.
fn older(bytes: &[u8], pos: usize, k: u8, image_of: &mut dyn FnMut(u8) -> [u8; SECTOR]) -> Option<u8> {
    let mut side = |r: std::ops::Range<usize>| {
        let b = &bytes[r.clone()];
        if b.iter().all(|&c| c == 0) {
            return Some(0);
        }
        (1..=MAX_KEY).filter(|&k2| k2 != k).find(|&k2| *b == image_of(k2)[pos + r.start..pos + r.end])
    };
    if let Some(x) = side(0..bytes.len()) {
        return Some(x);
    }
    (1..bytes.len()).find_map(|p| {
        let x = side(0..p)?;
        let y = side(p..bytes.len())?;
        (x != y).then_some(x.max(y))
    })
}

/// One error for a run of adjacent sectors with the same class (one lost
/// write of 3,000 bytes is one error, not six), its detail saying how many sectors it spans.
fn merge_runs(found: Vec<Found>) -> Vec<Found> {
    let mut out: Vec<(u64, u8, Finding, u64)> = Vec::with_capacity(found.len());
    for (s, k, f) in found {
        match out.last_mut() {
            Some((s0, _, f0, n)) if f0.class == f.class && *s0 + *n * S == s => *n += 1,
            _ => out.push((s, k, f, 1)),
        }
    }
    out.into_iter()
        .map(|(s, k, mut f, n)| {
            if n > 1 {
                f.detail = format!("{} (the {} sectors from here alike)", f.detail, n);
            }
            (s, k, f)
        })
        .collect()
}

/// Whether `bytes` at `pos` of the header's place of sector `s` fit a header of that sector:
/// the magic, a version, a key, the reserved zeros, the offset and the file id where they fall.
fn fits_header(bytes: &[u8], pos: usize, s: u64, file_id: u64) -> bool {
    let mut want = [None::<u8>; HEADER_LEN];
    for (i, m) in crate::sector::MAGIC.iter().enumerate() {
        want[i] = Some(*m);
    }
    want[6] = Some(0);
    want[7] = Some(0);
    for (i, x) in s.to_le_bytes().iter().chain(file_id.to_le_bytes().iter()).enumerate() {
        want[8 + i] = Some(*x);
    }
    bytes.iter().enumerate().all(|(i, &c)| match (pos + i, want.get(pos + i)) {
        (4, _) => (1..=crate::sector::VERSION).contains(&c),
        (5, _) => (1..=MAX_KEY).contains(&c),
        (_, Some(Some(w))) => c == *w,
        (_, Some(None)) => true,
        (_, None) => false,
    })
}

/// Whether a sector's 48 header bytes are an intact header of offset `s` of `file_id` with `key`
/// (its data checksum aside: a later write may have changed part of the data).
fn header_is(h: &[u8], s: u64, file_id: u64, key: u8) -> bool {
    let u64_at = |i: usize| h.get(i..i + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    let crc = h.get(44..48).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes);
    h.len() == HEADER_LEN
        && h[0..4] == crate::sector::MAGIC
        && h[5] == key
        && u64_at(8) == Some(s)
        && u64_at(16) == Some(file_id)
        && crc == Some(crc32c::crc32c(&h[..44]))
}

#[cfg(test)]
mod tests;
