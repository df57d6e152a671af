//! Fuzz histogram decoding: the store's blobs (V2 or V2 deflate bytes) and the `histogram`
//! objects of exported JSON. Any input gives a histogram or an error, never a panic or a buffer
//! sized from a length the input does not back; what decodes re-encodes to the same histogram.
#![no_main]
use iolab_model::hist::{decode, to_v2, to_v2_deflate, Exported};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = decode(data) {
        for bytes in [to_v2(&h), to_v2_deflate(&h)].into_iter().flatten() {
            assert!(decode(&bytes).expect("iolab's own encoding decodes") == h);
        }
    }
    if let Ok(e) = serde_json::from_slice::<Exported>(data) {
        if let Ok(h) = e.decode() {
            assert_eq!(h.len(), e.count);
        }
    }
});
