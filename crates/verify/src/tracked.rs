//! One data file under validation during a run: its key map (shared by the threads writing
//! it), its journal, and what was checked and found. The workload's validating source stamps
//! and checks through it; the executor opens it before the phase and finishes it after
//! (`--verify-after`, then the map saved with the journal).

use crate::check::{Expect, Finding};
use crate::error::VerifyError;
use crate::handed::HandedMap;
use crate::journal::{Journal, JournalHeader, JOURNAL_HEADER};
use crate::map::{KeyMap, MapFile, UNKNOWN, UNSYNCED};
use crate::scan::scan;
use crate::tally::Tally;
pub use crate::tally::When;
use crate::{file_id, file_id_under, node_id};
use iolab_model::VerifyResult;
use std::path::{Path, PathBuf};

/// How a run validates (the job's `--verify` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Keep the map and the journal here (`--journal DIR`).
    pub journal: Option<PathBuf>,
    /// `--journal-sync sync`: each record before a write is durable before the write.
    pub sync: bool,
    /// Stop checking (and the job) after this many errors; 0 never stops.
    pub max_errors: u64,
    /// This node's name (written into every header as its id).
    pub node: String,
    /// File ids are of the path below this directory (the node's `dir=` in a run of several
    /// nodes, so every node names a shared file alike: [`crate::file_id_under`]); `None`: of
    /// the canonical path.
    pub id_root: Option<PathBuf>,
    /// The file was written by this other node (`--verify-on other`): its keys are handed over
    /// ([`Tracked::take_keys`]), and an older key read is a stale read, not a lost write.
    pub peer: Option<String>,
}

pub struct Tracked {
    pub path: PathBuf,
    pub display: String,
    pub file_id: u64,
    pub key_block: u32,
    pub map: KeyMap,
    pub journal: Option<Journal>,
    pub node: String,
    pub node_id: u32,
    /// The node that wrote the file, when it is another (see [`Options::peer`]).
    pub peer: Option<String>,
    dir: Option<PathBuf>,
    /// The file as the run opened it (once): read back and flushed through it, not by its
    /// name (see [`Tracked::hold`]).
    file: Option<std::fs::File>,
    epoch: u64,
    tally: Tally,
}

/// Where a file's map and journal live in a journal directory.
pub fn map_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.map"))
}
pub fn journal_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.jnl"))
}

/// Save a map where a crash leaves either the old one or the new one: a temporary file,
/// flushed, renamed over, the directory flushed.
pub fn save_map(dir: &Path, m: &MapFile) -> Result<(), VerifyError> {
    let path = map_path(dir, m.file_id);
    let tmp = dir.join(format!("{:016x}.map.tmp", m.file_id));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| VerifyError::io(p, e)
    };
    {
        let f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        std::io::Write::write_all(&mut &f, &m.encode()).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    Ok(())
}

/// Read a map file, if there is one.
pub fn load_map(path: &Path) -> Result<Option<MapFile>, VerifyError> {
    match std::fs::read(path) {
        Ok(b) => MapFile::decode(&b).map(Some).map_err(|source| VerifyError::Format { path: path.into(), source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(VerifyError::io(path, e)),
    }
}

impl Tracked {
    /// Start validating `path` (`size` bytes, `key_block` per key block). With a journal
    /// directory, a map kept there from an earlier run is taken up (the file must be the one it
    /// describes, and its journal must have been closed cleanly or recovered by `iolab verify`);
    /// `created_now` says the file was just created, so a map of written blocks cannot apply.
    ///
    /// Without a journal, `carry` (the same file validated by the run's previous phase) hands
    /// its map on, so a phase that reads checks what an earlier one wrote.
    pub fn open(
        path: &Path,
        size: u64,
        key_block: u32,
        opts: &Options,
        created_now: bool,
        carry: Option<&Tracked>,
    ) -> Result<Tracked, VerifyError> {
        if key_block == 0 || !key_block.is_multiple_of(512) {
            return Err(VerifyError::Refused(format!(
                "a key block of {key_block} bytes: validation needs a multiple of 512 (the sector its stamps are made of)"
            )));
        }
        let canonical = std::fs::canonicalize(path).map_err(|e| VerifyError::io(path, e))?;
        let display = canonical.display().to_string();
        let id = match &opts.id_root {
            Some(root) => file_id_under(&canonical, root),
            None => file_id(&canonical),
        };
        let blocks = size / key_block as u64;
        let mut epoch = 1;
        let mut keys: Option<Vec<u8>> = None;
        let mut journal = None;
        if let Some(dir) = &opts.journal {
            std::fs::create_dir_all(dir).map_err(|e| VerifyError::io(dir, e))?;
            let mp = map_path(dir, id);
            let jp = journal_path(dir, id);
            if let Some(m) = load_map(&mp)? {
                if m.path != display || m.key_block != key_block || m.keys.len() as u64 != blocks {
                    return Err(VerifyError::Refused(format!(
                        "{} describes {} with {} blocks of {} bytes, not {display} with {blocks} of {key_block}; use another journal directory",
                        mp.display(),
                        m.path,
                        m.keys.len(),
                        m.key_block
                    )));
                }
                if created_now && m.keys.iter().any(|k| k & !UNSYNCED != 0) {
                    return Err(VerifyError::Refused(format!(
                        "{display} was just created, but {} says blocks of it were written; use another journal directory (or remove that map)",
                        mp.display()
                    )));
                }
                if let Some(n) = unclean_records(&jp, m.epoch)? {
                    return Err(VerifyError::Refused(format!(
                        "the journal {} holds {n} records of a run that did not end cleanly; check the file first with `iolab verify --journal {}`",
                        jp.display(),
                        dir.display()
                    )));
                }
                epoch = m.epoch;
                keys = Some(m.keys);
            } else {
                save_map(
                    dir,
                    &MapFile {
                        key_block,
                        file_id: id,
                        epoch,
                        node: opts.node.clone(),
                        path: display.clone(),
                        keys: vec![0; blocks as usize],
                    },
                )?;
            }
            let header = JournalHeader { key_block, file_id: id, epoch, blocks };
            journal = Some(Journal::create(&jp, &header, opts.sync).map_err(|e| VerifyError::io(&jp, e))?);
        } else if let Some(c) = carry.filter(|c| c.key_block == key_block && c.blocks() == blocks && !created_now) {
            keys = Some(c.map.snapshot());
        }
        Ok(Tracked {
            path: canonical,
            display,
            file_id: id,
            key_block,
            map: KeyMap::new(blocks, keys.as_deref()),
            journal,
            node: opts.node.clone(),
            node_id: node_id(&opts.node),
            peer: opts.peer.clone(),
            dir: opts.journal.clone(),
            file: None,
            epoch,
            tally: Tally::new(&opts.node, opts.peer.as_deref(), key_block as u64, opts.max_errors),
        })
    }

    pub fn blocks(&self) -> u64 {
        self.map.len()
    }

    /// Read the file back and flush it through `file` (the descriptor the run opened it by),
    /// never by its name again.
    pub fn hold(mut self, file: std::fs::File) -> Tracked {
        self.file = Some(file);
        self
    }

    /// The file to read back or flush: the one held, or (without one) the path opened now.
    fn opened(&self, write: bool) -> Result<std::fs::File, VerifyError> {
        match &self.file {
            Some(f) => f.try_clone(),
            None => std::fs::OpenOptions::new().read(!write).write(write).open(&self.path),
        }
        .map_err(|e| VerifyError::io(&self.path, e))
    }

    /// Take the keys the coordinator handed over for this file (its own from an earlier run of
    /// the same rounds, or another node's): before the phase's I/O begins.
    pub fn take_keys(&self, h: &HandedMap) -> Result<(), VerifyError> {
        if h.file_id != self.file_id || h.key_block != self.key_block || h.keys.len() as u64 != self.blocks() {
            return Err(VerifyError::Refused(format!(
                "the key map handed over for {} (file id {:#018x}, {} blocks of {} bytes, from node {}) is not this file's (file id {:#018x}, {} blocks of {})",
                self.display,
                h.file_id,
                h.keys.len(),
                h.key_block,
                h.writer,
                self.file_id,
                self.blocks(),
                self.key_block
            )));
        }
        self.map.load(&h.keys);
        Ok(())
    }

    /// The keys as they stand, to hand to another node.
    pub fn handed(&self) -> HandedMap {
        HandedMap {
            file_id: self.file_id,
            key_block: self.key_block,
            keys: self.map.snapshot(),
            writer: self.node.clone(),
        }
    }

    /// Key blocks stamped.
    #[inline]
    pub fn wrote(&self, blocks: u64) {
        self.tally.wrote(blocks);
    }
    /// Key blocks checked.
    #[inline]
    pub fn checked(&self, when: When, blocks: u64) {
        self.tally.checked(when, blocks);
    }

    /// The `--max-errors` limit was reached: stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.tally.stopped()
    }

    /// Record an error found in `block`; returns whether to go on.
    pub fn found(&self, block: u64, expected: u8, f: Finding, when: When) -> bool {
        let go_on = self.tally.found(&self.display, block * self.key_block as u64, expected, f, when);
        // A block found bad is not checked again (its later reads would repeat the finding).
        self.map.mark(block, UNKNOWN);
        go_on
    }

    /// Read the whole file back and check every block the map knows (`--verify-after`).
    pub fn verify_after(&self) -> Result<(), VerifyError> {
        let file = self.opened(false)?;
        let map = &self.map;
        let expect = |b: u64| match map.key(b) {
            UNKNOWN => None,
            key => Some(Expect { key, ..Default::default() }),
        };
        let mut found = |b: u64, f: Finding| {
            let k = map.key(b);
            self.found(b, k, f, When::After)
        };
        let s = scan(&file, self.file_id, self.key_block, self.blocks(), &expect, &mut found)
            .map_err(|e| VerifyError::io(&self.path, e))?;
        self.checked(When::After, s.checked);
        Ok(())
    }

    /// The run is over: with a journal, make the data durable, save the map with the next
    /// epoch and start the journal anew (a crash in between leaves the new map with an old
    /// journal, which no longer applies).
    pub fn finish(&self) -> Result<(), VerifyError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        self.opened(true)?.sync_data().map_err(|e| VerifyError::io(&self.path, e))?;
        let epoch = self.epoch + 1;
        save_map(
            dir,
            &MapFile {
                key_block: self.key_block,
                file_id: self.file_id,
                epoch,
                node: self.node.clone(),
                path: self.display.clone(),
                keys: self.map.snapshot(),
            },
        )?;
        let jp = journal_path(dir, self.file_id);
        let header = JournalHeader { key_block: self.key_block, file_id: self.file_id, epoch, blocks: self.blocks() };
        Journal::create(&jp, &header, false).map_err(|e| VerifyError::io(&jp, e))?;
        Ok(())
    }

    /// What was stamped, checked and found.
    pub fn result(&self) -> VerifyResult {
        VerifyResult {
            journal: self.dir.as_ref().map(|d| d.display().to_string()),
            journal_sync: self.journal.as_ref().map(|j| if j.sync { "sync" } else { "async" }.to_string()),
            ..self.tally.result()
        }
    }
}

/// Valid records in the journal at `path` written against map epoch `epoch` (`None`: no
/// journal, another epoch's, or no records: nothing to recover).
fn unclean_records(path: &Path, epoch: u64) -> Result<Option<u64>, VerifyError> {
    let b = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(VerifyError::io(path, e)),
    };
    let h = crate::journal::JournalHeader::decode(&b)
        .map_err(|source| VerifyError::Format { path: path.into(), source })?;
    if h.epoch != epoch {
        return Ok(None);
    }
    let n = b[JOURNAL_HEADER..]
        .chunks_exact(crate::journal::RECORD)
        .filter(|r| crate::journal::Record::decode(r).is_some())
        .count() as u64;
    Ok((n > 0).then_some(n))
}
