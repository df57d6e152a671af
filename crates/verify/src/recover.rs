//! Recovery (`iolab verify --journal DIR`): for each file whose map the directory holds, replay
//! its journal over the map, read the file back and check every block the map knows. A block
//! whose write was pending at the crash may hold its old or its new key (or both, torn between
//! sectors); anything else is an error. Read by the node that wrote the file, the map is then
//! folded: pending blocks take the key found, bad blocks are marked not to be checked again,
//! the map is saved with the next epoch and the journal starts anew, so a run can go on. Read
//! by another node (`--as-node`), nothing is changed, and an older key in a block the writer
//! had synced is a stale read.

use crate::check::{check_block, Expect, Finding};
use crate::error::VerifyError;
use crate::journal::{replay, Journal, JournalHeader, Replayed, JOURNAL_HEADER};
use crate::map::{MapFile, UNKNOWN, UNSYNCED};
use crate::scan::{read_full, scan};
use crate::sector::{Header, SECTOR};
use crate::tracked::{journal_path, load_map, save_map, When};
use crate::writer_words;
use iolab_model::{BlockError, ErrorCounts, VerifyResult};
use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// One file recovered.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub map: PathBuf,
    pub file: String,
    /// The node that wrote it (the map's).
    pub writer: String,
    pub result: VerifyResult,
    /// Journal records replayed, records skipped as damaged, bytes of a torn last record.
    pub records: u64,
    pub bad_records: u64,
    pub torn_tail: u64,
    /// The map was folded and the journal started anew.
    pub folded: bool,
}

/// Recover every file whose map is in `dir`, checking as node `reader`, keeping at most
/// `max_errors` errors per file (0: every error is counted, the first 1000 kept).
pub fn recover_dir(dir: &Path, reader: &str, max_errors: u64) -> Result<Vec<Recovered>, VerifyError> {
    let mut maps: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| VerifyError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "map"))
        .collect();
    maps.sort();
    if maps.is_empty() {
        return Err(VerifyError::Refused(format!(
            "{} holds no map (`*.map`): it is not the --journal directory of a validated run",
            dir.display()
        )));
    }
    maps.iter().map(|m| recover_file(dir, m, reader, max_errors)).collect()
}

/// Replay a map's journal (if it applies to the map's epoch).
pub fn replay_journal(path: &Path, m: &MapFile) -> Result<Replayed, VerifyError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replayed::default()),
        Err(e) => return Err(VerifyError::io(path, e)),
    };
    let mut head = [0u8; JOURNAL_HEADER];
    let got = read_full(&f, &mut head, 0).map_err(|e| VerifyError::io(path, e))?;
    let h = JournalHeader::decode(&head[..got]).map_err(|source| VerifyError::Format { path: path.into(), source })?;
    if h.file_id != m.file_id || h.key_block != m.key_block {
        return Err(VerifyError::Refused(format!("{} belongs to another file than its map", path.display())));
    }
    if h.epoch != m.epoch {
        return Ok(Replayed::default()); // a journal the map already includes
    }
    f.seek(std::io::SeekFrom::Start(JOURNAL_HEADER as u64)).map_err(|e| VerifyError::io(path, e))?;
    let mut r = std::io::BufReader::new(f).take(u64::MAX);
    replay(&m.keys, &mut r).map_err(|e| VerifyError::io(path, e))
}

fn recover_file(dir: &Path, map_path: &Path, reader: &str, max_errors: u64) -> Result<Recovered, VerifyError> {
    let Some(m) = load_map(map_path)? else {
        return Err(VerifyError::Refused(format!("{} disappeared", map_path.display())));
    };
    let jp = journal_path(dir, m.file_id);
    let rep = replay_journal(&jp, &m)?;
    let last_sync = rep.last_sync();
    let other_node = reader != m.node;
    let blocks = m.keys.len() as u64;
    // Per block: what it should hold.
    let expect_of = |b: u64| -> Option<(Expect, bool)> {
        let (key, pending, unsynced) = match rep.blocks.get(&b) {
            Some(s) => (s.key, s.pending, s.last_write > last_sync),
            None => {
                let raw = m.keys[b as usize];
                (raw & !UNSYNCED, None, raw & UNSYNCED != 0)
            }
        };
        if key == UNKNOWN && pending.is_none() {
            return None;
        }
        let e = match pending {
            Some(new) => Expect { key: new, alt: Some(if key == UNKNOWN { 0 } else { key }), ..Default::default() },
            None => Expect { key, ..Default::default() },
        };
        let e = if other_node { Expect { stale: !unsynced, any_key: unsynced, ..e } } else { e };
        Some((e, pending.is_some()))
    };
    let file = std::fs::File::open(&m.path).map_err(|e| VerifyError::io(&m.path, e))?;
    let names = [m.node.as_str(), reader];
    let mut counts = ErrorCounts::default();
    let mut first: Vec<BlockError> = Vec::new();
    let mut bad: Vec<u64> = Vec::new();
    let keep = if max_errors == 0 { 1000 } else { max_errors as usize };
    let mut found = |b: u64, f: Finding| {
        counts.add(f.class, 1);
        bad.push(b);
        if first.len() < keep {
            let expected = expect_of(b).map_or(0, |e| e.0.key);
            first.push(BlockError {
                class: f.class,
                file: m.path.clone(),
                offset: b * m.key_block as u64,
                sector_offset: f.sector_offset,
                expected_key: expected,
                found_key: f.found_key,
                found_time_unix_ns: f.found_time_ns,
                writer: f.writer.map(|(n, t)| writer_words(n, t, &names)),
                detail: f.detail,
                when: When::Recovery.as_str().into(),
            });
        }
        max_errors == 0 || counts.total() < max_errors
    };
    let expect = |b: u64| expect_of(b).map(|e| e.0);
    let s =
        scan(&file, m.file_id, m.key_block, blocks, &expect, &mut found).map_err(|e| VerifyError::io(&m.path, e))?;
    let pending: Vec<u64> =
        rep.blocks.iter().filter(|(b, s)| **b != u64::MAX && s.pending.is_some()).map(|(b, _)| *b).collect();
    let mut folded = false;
    if !other_node {
        // Fold: the keys as they are now known, bad blocks not checked again.
        let mut keys = m.keys.clone();
        for (b, st) in &rep.blocks {
            if let Some(k) = keys.get_mut(*b as usize) {
                let unsynced = if st.last_write > last_sync { UNSYNCED } else { 0 };
                *k = st.key | unsynced;
            }
        }
        for b in &pending {
            let key = found_key(&file, *b, m.key_block, m.file_id).unwrap_or(UNKNOWN);
            keys[*b as usize] = key | UNSYNCED;
        }
        for b in &bad {
            keys[*b as usize] = UNKNOWN;
        }
        let epoch = m.epoch + 1;
        save_map(dir, &MapFile { epoch, keys, ..m.clone() })?;
        let header = JournalHeader { key_block: m.key_block, file_id: m.file_id, epoch, blocks };
        Journal::create(&jp, &header, false).map_err(|e| VerifyError::io(&jp, e))?;
        folded = true;
    }
    let result = VerifyResult {
        key_block: m.key_block as u64,
        checked_after: s.checked,
        errors: counts,
        first_errors: first,
        stopped: s.stopped,
        journal: Some(dir.display().to_string()),
        pending: pending.len() as u64,
        ..Default::default()
    };
    Ok(Recovered {
        map: map_path.to_path_buf(),
        file: m.path.clone(),
        writer: m.node.clone(),
        result,
        records: rep.records,
        bad_records: rep.bad_records,
        torn_tail: rep.torn_tail,
        folded,
    })
}

/// The key a block holds now, if all its sectors agree on one (a pending write's outcome); 0
/// if none holds a stamp.
fn found_key(file: &std::fs::File, block: u64, key_block: u32, file_id: u64) -> Option<u8> {
    let mut buf = vec![0u8; key_block as usize];
    let got = read_full(file, &mut buf, block * key_block as u64).ok()?;
    if got < buf.len() {
        return None;
    }
    let stamped = |s: &[u8]| Header::read(s).is_some_and(|h| h.magic_ok || h.file_id == file_id);
    if !buf.chunks_exact(SECTOR).any(stamped) {
        return Some(0); // a first write that never landed: still never written
    }
    let keys: Vec<u8> = buf
        .chunks_exact(SECTOR)
        .map(|s| Header::read(s).filter(|h| h.header_crc_ok && h.magic_ok).map(|h| h.key))
        .collect::<Option<Vec<u8>>>()?;
    let k = *keys.first()?;
    let e = Expect { key: k, ..Default::default() };
    let ok = check_block(&buf, block * key_block as u64, file_id, &e).is_none();
    (ok && keys.iter().all(|x| *x == k)).then_some(k)
}

/// Files a directory's maps describe, by file id (for tools listing a journal directory).
pub fn files_of(dir: &Path) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if let Ok(Some(m)) = load_map(&e.path()) {
                out.insert(m.file_id, m.path);
            }
        }
    }
    out
}
