//! A key block judged whole: its sectors ([`crate::sector::judge`]) against what the key map
//! expects, and the error class when they disagree. The order of the tests is the taxonomy's:
//! a failed checksum is corruption whatever else is wrong; an intact stamp of another place is
//! a misdirected write; an intact stamp of this place with another key in every sector is a
//! lost write (or, seen from another node after the writer synced, a stale read); sectors that
//! disagree among themselves are a torn block; no stamp at all where one was written is data
//! never written.

use crate::sector::{judge, Corruption, Header, Sector, SECTOR};
use iolab_model::ErrorClass;

/// What the map says a block should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Expect {
    /// The key of the last write (0: never written).
    pub key: u8,
    /// A write was pending (a crash): this key, the block's previous one, is accepted too, in any
    /// sector (0: no stamp is accepted, the block was never written before).
    pub alt: Option<u8>,
    /// A wrong key is a stale read: the reader is not the writer's node, and the writer synced.
    pub stale: bool,
    /// Any intact stamp of this place is accepted (another node reading what the writer had not
    /// synced: it may see the old data, or none).
    pub any_key: bool,
}

/// An error found in a block, before it is named with its file and writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: ErrorClass,
    /// Byte offset of the first bad sector.
    pub sector_offset: u64,
    pub found_key: Option<u8>,
    pub found_time_ns: Option<u64>,
    /// The bad sector's writer (node id, thread), from its header.
    pub writer: Option<(u32, u32)>,
    pub detail: String,
}

fn finding(class: ErrorClass, at: u64, h: Option<&Header>, intact: bool, detail: String) -> Finding {
    Finding {
        class,
        sector_offset: at,
        found_key: h.filter(|_| intact).map(|h| h.key),
        found_time_ns: h.map(|h| h.time_ns),
        writer: h.map(|h| (h.node, h.thread)),
        detail,
    }
}

/// Check a key block read from `offset` of file `file_id`: `None` when it holds what `e` allows.
pub fn check_block(buf: &[u8], offset: u64, file_id: u64, e: &Expect) -> Option<Finding> {
    let n = buf.len() / SECTOR;
    // The common case first, without collecting anything: every sector intact with the key.
    let mut judged: [Option<Sector>; 16] = [None; 16];
    let mut all_expected = e.key != 0;
    for (i, s) in buf.chunks_exact(SECTOR).enumerate() {
        let at = offset + (i * SECTOR) as u64;
        let j = judge(s, at, file_id);
        all_expected &= matches!(j, Sector::Good { header } if header.key == e.key);
        if i < judged.len() {
            judged[i] = Some(j);
        }
    }
    if all_expected {
        return None;
    }
    // Something differs: look at every sector (blocks of more than 16 sectors are judged again).
    let sectors: Vec<Sector> = if n <= judged.len() {
        judged.iter().take(n).flatten().copied().collect()
    } else {
        buf.chunks_exact(SECTOR).enumerate().map(|(i, s)| judge(s, offset + (i * SECTOR) as u64, file_id)).collect()
    };
    let at = |i: usize| offset + (i * SECTOR) as u64;
    for (i, s) in sectors.iter().enumerate() {
        if let Sector::Corrupt { header, why } = s {
            let detail = match why {
                Corruption::HeaderChecksum => "the sector's header fails its checksum".to_string(),
                Corruption::BadKey => format!("the header's key {} is out of range (1 to 126)", header.key),
                Corruption::Data { found_crc } => format!(
                    "the data is not the pattern its header names (data CRC-32C {found_crc:#010x}, header says {:#010x})",
                    header.data_crc
                ),
                Corruption::DataChecksumField => "the header's data checksum does not match its data".to_string(),
            };
            return Some(finding(ErrorClass::Corrupted, at(i), Some(header), false, detail));
        }
    }
    for (i, s) in sectors.iter().enumerate() {
        if let Sector::Elsewhere { header } = s {
            // In a block the map says was never written, only a stamp of this file elsewhere is
            // a finding (another file's stamps may be a copy made before the journal began).
            if e.key == 0 && header.file_id != file_id {
                continue;
            }
            let whose = if header.file_id == file_id {
                "this file".to_string()
            } else {
                format!("file id {:#018x}", header.file_id)
            };
            let detail = format!("the sector holds the stamp of offset {} of {whose}", header.offset);
            return Some(finding(ErrorClass::Misdirected, at(i), Some(header), true, detail));
        }
    }
    if e.key == 0 || e.any_key {
        return None;
    }
    let key_of = |s: &Sector| match s {
        Sector::Good { header } => Some(header.key),
        _ => None,
    };
    let allowed = |s: &Sector| match key_of(s) {
        Some(k) => k == e.key || e.alt == Some(k),
        None => e.alt == Some(0),
    };
    if sectors.iter().all(allowed) {
        return None;
    }
    let header_of = |s: &Sector| match s {
        Sector::Good { header } => Some(*header),
        _ => None,
    };
    let stamped: Vec<u8> = sectors.iter().filter_map(key_of).collect();
    if stamped.is_empty() {
        return Some(finding(
            ErrorClass::NeverWritten,
            at(0),
            None,
            false,
            format!("none of its {n} sectors holds a stamp"),
        ));
    }
    let first_bad = sectors.iter().position(|s| key_of(s) != Some(e.key)).unwrap_or(0);
    let h = header_of(&sectors[first_bad]);
    if stamped.len() == n && stamped.iter().all(|k| *k == stamped[0]) {
        let (class, why) = if e.stale {
            (ErrorClass::StaleRead, "read by another node after the writer synced".to_string())
        } else {
            (ErrorClass::LostWrite, "the last write to it never reached it".to_string())
        };
        let detail = format!("all {n} sectors hold key {}, not {}: {why}", stamped[0], e.key);
        return Some(finding(class, at(first_bad), h.as_ref(), true, detail));
    }
    // Sectors disagree: name each key and how many sectors hold it.
    let mut kinds: Vec<(Option<u8>, usize)> = Vec::new();
    for s in &sectors {
        let k = key_of(s);
        match kinds.iter_mut().find(|x| x.0 == k) {
            Some(x) => x.1 += 1,
            None => kinds.push((k, 1)),
        }
    }
    let parts: Vec<String> = kinds
        .iter()
        .map(|(k, c)| match k {
            Some(k) => format!("key {k} in {c}"),
            None => format!("no stamp in {c}"),
        })
        .collect();
    let detail = format!("its {n} sectors disagree: {} (expected key {})", parts.join(", "), e.key);
    Some(finding(ErrorClass::Torn, at(first_bad), h.as_ref(), h.is_some(), detail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sector::{stamp_block, Stamp};

    const F: u64 = 0xABCD;

    fn block(key: u8, offset: u64) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        stamp_block(&mut b, offset, &Stamp { file_id: F, key, time_ns: 1, node: 1, thread: 0 });
        b
    }

    fn expect(key: u8) -> Expect {
        Expect { key, ..Default::default() }
    }

    #[test]
    fn the_right_key_passes_and_each_fault_has_its_class() {
        let b = block(4, 8192);
        assert_eq!(check_block(&b, 8192, F, &expect(4)), None);
        // Bit flip.
        let mut x = b.clone();
        x[3000] ^= 0x10;
        let f = check_block(&x, 8192, F, &expect(4)).unwrap();
        assert_eq!((f.class, f.sector_offset), (ErrorClass::Corrupted, 8192 + 5 * 512));
        // Lost write: the previous key everywhere.
        let f = check_block(&block(3, 8192), 8192, F, &expect(4)).unwrap();
        assert_eq!((f.class, f.found_key), (ErrorClass::LostWrite, Some(3)));
        let f = check_block(&block(3, 8192), 8192, F, &Expect { stale: true, ..expect(4) }).unwrap();
        assert_eq!(f.class, ErrorClass::StaleRead);
        // Misdirected: another block's data.
        let f = check_block(&block(4, 0), 8192, F, &expect(4)).unwrap();
        assert_eq!((f.class, f.sector_offset), (ErrorClass::Misdirected, 8192));
        // Torn: the second half still old.
        let mut t = b.clone();
        t[2048..].copy_from_slice(&block(3, 8192)[2048..]);
        let f = check_block(&t, 8192, F, &expect(4)).unwrap();
        assert_eq!((f.class, f.sector_offset, f.found_key), (ErrorClass::Torn, 8192 + 2048, Some(3)));
        // Never written.
        let f = check_block(&[0u8; 4096], 8192, F, &expect(4)).unwrap();
        assert_eq!(f.class, ErrorClass::NeverWritten);
    }

    #[test]
    fn a_pending_write_may_hold_old_new_or_both() {
        let new = block(4, 0);
        let old = block(3, 0);
        let e = Expect { key: 4, alt: Some(3), ..Default::default() };
        assert_eq!(check_block(&new, 0, F, &e), None);
        assert_eq!(check_block(&old, 0, F, &e), None);
        let mut mixed = new.clone();
        mixed[1024..].copy_from_slice(&old[1024..]);
        assert_eq!(check_block(&mixed, 0, F, &e), None);
        // A key that is neither is still a finding.
        assert_eq!(check_block(&block(2, 0), 0, F, &e).unwrap().class, ErrorClass::LostWrite);
        // A first write pending: no stamp is fine too.
        let first = Expect { key: 1, alt: Some(0), ..Default::default() };
        assert_eq!(check_block(&[0u8; 4096], 0, F, &first), None);
    }

    #[test]
    fn never_written_blocks_are_only_checked_for_stamps_of_this_file_elsewhere() {
        assert_eq!(check_block(&[7u8; 4096], 0, F, &expect(0)), None);
        assert_eq!(check_block(&block(1, 0), 0, F, &expect(0)), None);
        assert_eq!(check_block(&block(1, 4096), 0, F, &expect(0)).unwrap().class, ErrorClass::Misdirected);
    }
}
