//! SplitMix64's finaliser: the block source's and dedupe's keys for written data, one function
//! below both.

/// A well-mixed 64-bit key from a counter (SplitMix64's finaliser), so consecutive writes get
/// unrelated data.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
