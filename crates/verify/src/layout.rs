//! A stamped sector's layout, which the header ([`crate::sector`]) and the pattern
//! ([`crate::pattern`]) are both cut to: 512 bytes, a 48-byte header, the pattern in the rest.
//! Its own module so that neither of the two imports the other for it.

pub const SECTOR: usize = 512;
pub const HEADER_LEN: usize = 48;
pub const DATA_LEN: usize = SECTOR - HEADER_LEN;
