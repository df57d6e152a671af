//! Fuzz the small parsers flags go through: sizes, durations, block-size lists, distributions,
//! bonnie++'s `-n` (`--bonnie-files N:MAX:MIN:DIRS`).
#![no_main]
use iolab_spec::{BlockSizes, Dist};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(b) = iolab_spec::parse_size(s) {
            // Display of a parsed size parses back to the same size.
            assert_eq!(iolab_spec::parse_size(&b.to_string()), Ok(b));
        }
        let _ = iolab_spec::parse_duration(s);
        if let Ok(bs) = s.parse::<BlockSizes>() {
            assert!(bs.min().0 > 0);
            let _ = bs.mean();
        }
        let _ = s.parse::<Dist>();
        if let Ok(f) = s.parse::<iolab_spec::bonnie::BonnieFiles>() {
            // What parses writes out and parses back the same.
            assert_eq!(f.to_string().parse::<iolab_spec::bonnie::BonnieFiles>(), Ok(f));
        }
    }
});
