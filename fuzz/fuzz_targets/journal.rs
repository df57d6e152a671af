//! Fuzz the files a crash may tear and a hostile user may write: validation's key maps and
//! journals (`iolab verify --journal DIR` reads both), and the stamped blocks of data files it
//! checks. The first byte picks the parser; nothing may panic, and what decodes re-encodes.
#![no_main]
use iolab_verify::journal::{replay, JournalHeader, Record, JOURNAL_HEADER};
use iolab_verify::map::MapFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 3 {
        0 => {
            if let Ok(m) = MapFile::decode(rest) {
                assert_eq!(MapFile::decode(&m.encode()).as_ref(), Ok(&m));
            }
        }
        1 => {
            // A journal file: its header, then records replayed over a map of a few blocks.
            if let Ok(h) = JournalHeader::decode(rest) {
                assert_eq!(JournalHeader::decode(&h.encode()), Ok(h));
            }
            let body = rest.get(JOURNAL_HEADER.min(rest.len())..).unwrap_or(&[]);
            let keys: Vec<u8> = rest.iter().take(64).copied().collect();
            let mut r = body;
            if let Ok(rep) = replay(&keys, &mut r) {
                assert!(rep.records + rep.bad_records <= body.len() as u64 / 16);
                for (b, s) in &rep.blocks {
                    assert!(*b == u64::MAX || (*b as usize) < keys.len());
                    assert!(s.pending.is_none_or(|k| (1..=126).contains(&k)));
                }
            }
            for c in body.chunks_exact(16) {
                if let Some(rec) = Record::decode(c) {
                    assert_eq!(Record::decode(&rec.encode()), Some(rec));
                }
            }
        }
        _ => {
            // A data block as read back: any bytes, checked against any expectation.
            let n = (rest.len() / 512).min(32) * 512;
            if n == 0 || rest.len() < 3 {
                return;
            }
            let e = iolab_verify::Expect {
                key: rest[0] % 128,
                alt: (rest[1] & 1 == 1).then_some(rest[1] >> 1),
                stale: rest[2] & 1 == 1,
                any_key: rest[2] & 2 == 2,
            };
            let _ = iolab_verify::check_block(&rest[..n], u64::from(rest[0]) * 4096, 0xF11E, &e);
        }
    }
});
