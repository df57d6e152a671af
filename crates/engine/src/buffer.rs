//! Aligned I/O buffers (O_DIRECT needs them) and the data written into them: seeded,
//! incompressible by default, with a chosen share of zeros for `--compressibility`.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Buffers are aligned to 4 KiB, enough for O_DIRECT on any common device.
pub const ALIGN: usize = 4096;

/// `depth` buffers of `len` bytes each, every one 4 KiB aligned, in one allocation.
pub struct BufferPool {
    ptr: NonNull<u8>,
    layout: Layout,
    slot_len: usize,
    slots: usize,
}

// SAFETY: the pool is plain owned memory; access goes through &mut self.
unsafe impl Send for BufferPool {}

/// A pool the allocator could not give (or whose size overflows): an error, never an abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot allocate {slots} I/O buffers of {slot_len} bytes ({} MiB in all); lower the queue depth or the block size", (*slots as u128 * *slot_len as u128) >> 20)]
pub struct NoMemory {
    pub slots: usize,
    pub slot_len: usize,
}

/// A failure point for the tests, in debug builds only: `IOLAB_TEST_REFUSE_BUFFERS_OVER=N` makes
/// an allocation of more than N bytes fail as a refusing allocator would, so a test can hold a
/// run whose allocation fails mid-way (after the memory plan passed) to its promise: an error,
/// exit 2, the phases already measured kept. Release builds read no variable here.
fn refused_for_tests(total: usize) -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var("IOLAB_TEST_REFUSE_BUFFERS_OVER")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|limit| total > limit)
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = total;
        false
    }
}

impl BufferPool {
    /// A pool of small, fixed size (the caller's own, never a user's figures).
    pub fn new(slots: usize, len: usize) -> Self {
        match Self::try_new(slots, len) {
            Ok(p) => p,
            Err(_) => std::alloc::handle_alloc_error(Layout::new::<[u8; ALIGN]>()),
        }
    }

    /// `slots` buffers of `len` bytes (each rounded up to 4 KiB), allocated fallibly: a size
    /// that overflows or an allocator that refuses is an error the caller reports.
    pub fn try_new(slots: usize, len: usize) -> Result<Self, NoMemory> {
        let slots = slots.max(1);
        let fail = NoMemory { slots, slot_len: len };
        let slot_len = len.max(1).checked_next_multiple_of(ALIGN).ok_or(fail)?;
        let fail = NoMemory { slots, slot_len };
        let total = slot_len.checked_mul(slots).ok_or(fail)?.max(ALIGN);
        let layout = Layout::from_size_align(total, ALIGN).map_err(|_| fail)?;
        if refused_for_tests(total) {
            return Err(fail);
        }
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(fail)?;
        Ok(BufferPool { ptr, layout, slot_len, slots })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let s = slot as usize;
        assert!(s < self.slots, "buffer slot {s} out of range");
        // SAFETY: the slot lies inside the allocation and &mut self guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(s * self.slot_len), self.slot_len) }
    }

    /// The whole pool as one iovec, for registering it with io_uring.
    pub(crate) fn as_iovec(&mut self) -> libc::iovec {
        libc::iovec { iov_base: self.ptr.as_ptr() as *mut libc::c_void, iov_len: self.layout.size() }
    }

    /// Raw pointer to a slot, for engines handing it to the kernel.
    pub(crate) fn slot_ptr(&mut self, slot: u32) -> *mut u8 {
        let s = slot as usize;
        assert!(s < self.slots, "buffer slot {s} out of range");
        // SAFETY: in bounds, as checked above.
        unsafe { self.ptr.as_ptr().add(s * self.slot_len) }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Fill `buf` with seeded data: in every 4 KiB, the first `(100 - compressibility)%` bytes are
/// pseudo-random and the rest zero, so compressors and dedupers see what the user asked for.
pub fn fill_pattern(buf: &mut [u8], seed: u64, compressibility: u8) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let pct = compressibility.min(100) as usize;
    for chunk in buf.chunks_mut(ALIGN) {
        let random = chunk.len() * (100 - pct) / 100;
        rng.fill_bytes(&mut chunk[..random]);
        chunk[random..].fill(0);
    }
}

/// Give a buffer made by [`fill_pattern`] new contents in one pass, as cheaply as a CPU writes
/// memory: the random part of every 4 KiB is XORed, 8 bytes at a time, with `key` (the zero
/// part stays zero, so the compressibility holds). Every byte of the random part is rewritten,
/// so the whole buffer is freshly written by the CPU, as an application's new data is; a
/// different key gives different data.
pub fn refill(buf: &mut [u8], key: u64, compressibility: u8) {
    let pct = compressibility.min(100) as usize;
    for chunk in buf.chunks_mut(ALIGN) {
        let random = chunk.len() * (100 - pct) / 100;
        let (words, tail) = chunk[..random].split_at_mut(random / 8 * 8);
        for w in words.chunks_exact_mut(8) {
            let v = u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) ^ key;
            w.copy_from_slice(&v.to_ne_bytes());
        }
        for (b, k) in tail.iter_mut().zip(key.to_ne_bytes()) {
            *b ^= k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_rewrites_the_random_part_and_keeps_the_zeros() {
        let mut a = vec![0u8; 3 * ALIGN + 100];
        fill_pattern(&mut a, 7, 25);
        let orig = a.clone();
        refill(&mut a, 0x0123_4567_89ab_cdef, 25);
        for (chunk, o) in a.chunks(ALIGN).zip(orig.chunks(ALIGN)) {
            let random = chunk.len() * 75 / 100;
            // The key has no zero byte, so every byte of the random part changes.
            assert!(chunk[..random].iter().zip(&o[..random]).all(|(x, y)| x != y));
            assert!(chunk[random..].iter().all(|&b| b == 0), "the compressible part stays zero");
        }
        let once = a.clone();
        refill(&mut a, 0x0123_4567_89ab_cdef, 25);
        assert_eq!(a, orig, "XOR with the same key twice gives the original back");
        refill(&mut a, 42, 25);
        assert_ne!(a, once, "another key, other data");
    }

    #[test]
    fn a_pool_too_large_is_an_error() {
        let e = BufferPool::try_new(usize::MAX / 2, 1 << 20).err().unwrap();
        assert!(e.to_string().contains("lower the queue depth"), "{e}");
        assert!(BufferPool::try_new(2, usize::MAX).is_err());
        // Larger than any address space: the allocator refuses, no abort.
        assert!(BufferPool::try_new(1 << 20, 1 << 30).is_err());
    }

    #[test]
    fn slots_are_aligned_and_separate() {
        let mut p = BufferPool::new(3, 5000);
        assert_eq!(p.slot_len(), 8192);
        for s in 0..3 {
            assert_eq!(p.slot_ptr(s) as usize % ALIGN, 0);
            p.slot_mut(s).fill(s as u8);
        }
        for s in 0..3 {
            assert!(p.slot_mut(s).iter().all(|&b| b == s as u8));
        }
    }

    #[test]
    fn compressibility_sets_zero_share() {
        let mut b = vec![0u8; 64 * 1024];
        fill_pattern(&mut b, 7, 0);
        let zeros = b.iter().filter(|&&x| x == 0).count();
        assert!(zeros < b.len() / 100, "incompressible data should have few zeros: {zeros}");
        fill_pattern(&mut b, 7, 50);
        let zeros = b.iter().filter(|&&x| x == 0).count();
        assert!((b.len() / 2..b.len() / 2 + b.len() / 50).contains(&zeros), "{zeros}");
        let mut c = vec![0u8; 64 * 1024];
        fill_pattern(&mut c, 7, 50);
        assert_eq!(b, c, "same seed, same data");
    }
}
