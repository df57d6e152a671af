//! Key maps as they travel (`--verify-on other`): a writer's map goes back with its phase's end
//! and on to the reader with its run. Every map that arrives is checked whole
//! (`iolab_verify::handed::check_all`) before anything uses it.

use crate::proto::KeyMap;
use iolab_model::HandedMap;

/// A key map as it travels.
pub fn map_out(m: &HandedMap) -> KeyMap {
    KeyMap { file_id: m.file_id, key_block: m.key_block, keys: m.keys.clone(), writer: m.writer.clone() }
}

/// Key maps as they arrived, checked: a map no writer could have sent is refused whole.
pub fn maps_in(maps: &[KeyMap]) -> Result<Vec<HandedMap>, String> {
    if maps.len() > iolab_verify::handed::MAX_HANDED_MAPS {
        return Err(format!("{} key maps in one message", maps.len()));
    }
    let out: Vec<HandedMap> = maps
        .iter()
        .map(|m| HandedMap {
            file_id: m.file_id,
            key_block: m.key_block,
            keys: m.keys.clone(),
            writer: m.writer.clone(),
        })
        .collect();
    iolab_verify::handed::check_all(&out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuzz_seed_hands_over_a_key_map() {
        use prost::Message;
        let b = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../fuzz/corpus/cluster/start_keys")).unwrap();
        let c = crate::proto::Control::decode(&b[1..]).unwrap();
        let Some(crate::proto::control::Kind::Start(s)) = c.kind else { panic!("not a Start") };
        let maps = maps_in(&s.keys).unwrap();
        assert_eq!(
            (maps[0].key_block, maps[0].keys.as_slice(), maps[0].writer.as_str()),
            (4096, &[1, 2, 0x7f][..], "n2")
        );
    }

    #[test]
    fn hostile_key_maps_are_refused_whole() {
        let good = KeyMap { file_id: 1, key_block: 4096, keys: vec![1, 2, 0], writer: "b".into() };
        assert_eq!(maps_in(std::slice::from_ref(&good)).unwrap()[0].keys, vec![1, 2, 0]);
        let bad = KeyMap { keys: vec![200], ..good.clone() };
        assert!(maps_in(&[good.clone(), bad]).is_err());
        assert!(maps_in(&vec![good; iolab_verify::handed::MAX_HANDED_MAPS + 1]).is_err());
        let m = HandedMap { file_id: 9, key_block: 512, keys: vec![3, 0x7f], writer: "n1".into() };
        assert_eq!(maps_in(&[map_out(&m)]).unwrap(), [m], "a map comes back as it went");
    }
}
