//! Key maps handed from node to node by the coordinator (`--verify-on other`): the writer's map
//! of a file travels with its phase's result, and goes with the reader's next run, so the
//! reader knows the keys the writer wrote without trusting the storage under test (a map or a
//! journal on the shared filesystem could itself be stale). Every map arrives over the network,
//! so [`check`] bounds and checks it before it is used.

use crate::map::UNKNOWN;
use crate::sector::MAX_KEY;

/// The most key blocks a handed map may hold: 16 Mi blocks (64 GiB of 4 KiB key blocks), one
/// byte each, well under the 64 MiB a message between coordinator and agent may carry.
pub const MAX_HANDED_BLOCKS: usize = 16 << 20;
/// The most maps one message may carry (one per validated file of a phase).
pub const MAX_HANDED_MAPS: usize = 1024;
/// The longest writer name a map may carry.
const MAX_WRITER: usize = 255;

/// One file's keys as its writer left them after syncing it: plain data, defined in the model
/// so that the event stream (`iolab_model::events`) can carry it.
pub use iolab_model::HandedMap;

/// Refuse a map no writer could have sent: a key block that is not a multiple of 512, too many
/// blocks, a key out of range, a writer name that is empty, too long or not printable.
pub fn check(m: &HandedMap) -> Result<(), String> {
    if m.key_block == 0 || !m.key_block.is_multiple_of(512) {
        return Err(format!("a key map with key blocks of {} bytes (not a multiple of 512)", m.key_block));
    }
    if m.keys.len() > MAX_HANDED_BLOCKS {
        return Err(format!("a key map of {} blocks (at most {MAX_HANDED_BLOCKS})", m.keys.len()));
    }
    if let Some(k) = m.keys.iter().find(|k| **k > MAX_KEY && **k != UNKNOWN) {
        return Err(format!("a key map holding key {k:#04x} (keys are 1 to {MAX_KEY}, 0 or {UNKNOWN:#04x})"));
    }
    if m.writer.is_empty()
        || m.writer.len() > MAX_WRITER
        || !m.writer.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!("a key map whose writer is named `{}`", m.writer.escape_debug()));
    }
    Ok(())
}

/// Check a message's maps as a whole: how many, then each.
pub fn check_all(maps: &[HandedMap]) -> Result<(), String> {
    if maps.len() > MAX_HANDED_MAPS {
        return Err(format!("{} key maps in one message (at most {MAX_HANDED_MAPS})", maps.len()));
    }
    maps.iter().try_for_each(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_maps_a_writer_could_send_pass() {
        let good = HandedMap { file_id: 7, key_block: 4096, keys: vec![0, 1, 126, UNKNOWN], writer: "n1".into() };
        assert_eq!(check(&good), Ok(()));
        let bad = [
            HandedMap { key_block: 0, ..good.clone() },
            HandedMap { key_block: 4000, ..good.clone() },
            HandedMap { keys: vec![127 + 1], ..good.clone() },
            HandedMap { keys: vec![0x80], ..good.clone() },
            HandedMap { keys: vec![0; MAX_HANDED_BLOCKS + 1], ..good.clone() },
            HandedMap { writer: String::new(), ..good.clone() },
            HandedMap { writer: "a b".into(), ..good.clone() },
            HandedMap { writer: "x".repeat(300), ..good.clone() },
        ];
        for b in &bad {
            assert!(check(b).is_err(), "{:?}", (b.key_block, b.keys.len(), &b.writer));
        }
        assert!(check_all(&vec![good.clone(); MAX_HANDED_MAPS + 1]).is_err());
        assert!(check_all(&[good.clone(), bad[2].clone()]).is_err());
        assert!(check_all(&[good]).is_ok());
    }
}
