//! Histograms as bytes: HDR's V2 format, which other HDR implementations read, for the store's
//! blobs.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// V2 (uncompressed) bytes of a non-empty histogram, as the store keeps them.
pub fn to_v2(h: &Histogram<u64>) -> Option<Vec<u8>> {
    if h.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    V2Serializer::new().serialize(h, &mut out).ok()?;
    Some(out)
}

/// Read V2 (or V2 deflate) bytes back; the histogram auto-resizes so it can be merged into.
pub fn from_bytes(b: &[u8]) -> Option<Histogram<u64>> {
    let mut h: Histogram<u64> = Deserializer::new().deserialize(&mut &b[..]).ok()?;
    h.auto(true);
    Some(h)
}

#[cfg(test)]
mod tests {
    #[test]
    fn v2_round_trips() {
        let mut h = crate::new_histogram();
        for v in [1_000u64, 20_000, 3_000_000] {
            h.record(v).unwrap();
        }
        let back = super::from_bytes(&super::to_v2(&h).unwrap()).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.max(), h.max());
        assert!(super::from_bytes(b"garbage").is_none());
    }
}
