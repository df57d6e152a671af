//! Maps that are linear over GF(2) (XOR in, XOR out: what CRC-32C is, less its constant part),
//! evaluated from 4-bit tables. A stamp needs three such maps per sector (the pattern's data
//! checksum, and what the offset and that checksum add to the header's); byte tables would take
//! 21 KiB of cache, which the kernel's page-cache copy of every write evicts, while nibble
//! tables take 1 KiB per 64-bit input and stay in L1.

/// A linear map from the low `4 * N` bits of a `u64` to a `u64`: the XOR of one table entry per
/// nibble of the input.
pub struct NibbleMap<const N: usize> {
    t: [[u64; 16]; N],
}

impl<const N: usize> NibbleMap<N> {
    /// The map that agrees with `f` (which must be linear: `f(a ^ b) == f(a) ^ f(b)`) on every
    /// input of `4 * N` bits.
    pub fn new(f: impl Fn(u64) -> u64) -> Self {
        NibbleMap { t: std::array::from_fn(|k| std::array::from_fn(|v| f((v as u64) << (4 * k)))) }
    }

    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        let mut c = 0;
        for (k, t) in self.t.iter().enumerate() {
            c ^= t[(x >> (4 * k)) as usize & 15];
        }
        c
    }

    /// [`Self::apply`] for an input that is mostly zero nibbles (they add nothing and are
    /// skipped).
    #[inline]
    pub fn apply_sparse(&self, mut x: u64) -> u64 {
        let mut c = 0;
        while x != 0 {
            let k = (x.trailing_zeros() / 4) as usize;
            if let Some(t) = self.t.get(k) {
                c ^= t[(x >> (4 * k)) as usize & 15];
            }
            x &= !(15u64 << (4 * k));
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_nibble_map_is_the_linear_map_it_was_made_from(x in any::<u64>(), m in any::<u64>()) {
            // A linear map: each output bit is the parity of the input bits under a mask.
            let f = |v: u64| (0..64).fold(0u64, |o, i| o | ((((v & m.rotate_left(i)).count_ones() & 1) as u64) << i));
            let n = NibbleMap::<16>::new(f);
            prop_assert_eq!(n.apply(x), f(x));
            prop_assert_eq!(n.apply_sparse(x), f(x));
            prop_assert_eq!(n.apply_sparse(x & 0xF0_0F00), f(x & 0xF0_0F00));
        }
    }
}
