//! mmap: the file is mapped shared; a read copies out of the mapping, a write copies into
//! it, and fsync is msync(MS_SYNC) — how databases that map their files do I/O.

use crate::psync::sync_file;
use crate::{buffer::BufferPool, Completion, Engine, EngineError, Op, OpKind};
use memmap2::{MmapOptions, MmapRaw};
use std::fs::File;

pub struct Mmap {
    maps: Vec<(MmapRaw, File, bool)>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Mmap {
    pub fn new(buf_len: usize) -> Self {
        Mmap { maps: Vec::new(), pool: BufferPool::new(1, buf_len), done: Vec::with_capacity(1) }
    }
}

impl Engine for Mmap {
    fn name(&self) -> &'static str {
        "mmap"
    }
    fn depth(&self) -> usize {
        1
    }
    fn add_file(&mut self, file: &File, len: u64) -> Result<u32, EngineError> {
        let setup = |what: &str, source| EngineError::Setup { engine: "mmap", what: what.into(), source };
        let len = usize::try_from(len)
            .map_err(|_| EngineError::Unsupported { engine: "mmap", what: "file too large to map".into() })?;
        if len == 0 {
            return Err(EngineError::Unsupported { engine: "mmap", what: "cannot map an empty file".into() });
        }
        // A file opened read-only can only be mapped read-only; writes to it then fail with EBADF
        // as pwrite would, instead of faulting.
        let (map, writable) = match MmapOptions::new().len(len).map_raw(file) {
            Ok(m) => (m, true),
            Err(_) => {
                (MmapOptions::new().len(len).map_raw_read_only(file).map_err(|e| setup("mapping the file", e))?, false)
            }
        };
        let f = file.try_clone().map_err(|e| setup("dup of the file", e))?;
        self.maps.push((map, f, writable));
        Ok(self.maps.len() as u32 - 1)
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let (map, file, writable) = &self.maps[op.file as usize];
        let len = op.len as usize;
        let in_range = (op.offset as usize).checked_add(len).is_some_and(|end| end <= map.len());
        let r = match op.kind {
            OpKind::Read | OpKind::Write if !in_range => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            OpKind::Write if !writable => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
            OpKind::Read => {
                let dst = self.pool.slot_ptr(op.slot);
                // SAFETY: [offset, offset+len) lies inside the live mapping (checked above) and the
                // slot holds at least `len` bytes (the pool is sized for the largest block).
                // Another process writing the same pages concurrently only changes the bytes seen.
                unsafe { std::ptr::copy_nonoverlapping(map.as_ptr().add(op.offset as usize), dst, len) };
                Ok(len)
            }
            OpKind::Write => {
                let src = self.pool.slot_ptr(op.slot);
                // SAFETY: as for reads; the mapping is shared and writable (opened read-write).
                unsafe { std::ptr::copy_nonoverlapping(src, map.as_mut_ptr().add(op.offset as usize), len) };
                Ok(len)
            }
            k => map.flush().and_then(|_| if k == OpKind::Fsync { sync_file(file, k) } else { Ok(0) }),
        };
        self.done.push(Completion::from_io(op.slot, r));
        Ok(())
    }
    fn commit(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        out.append(&mut self.done);
        Ok(())
    }
}
