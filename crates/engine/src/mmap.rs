//! mmap: the file is mapped shared; a read copies out of the mapping, a write copies into
//! it, and fsync is msync(MS_SYNC) — how databases that map their files do I/O. Reads and
//! writes at the position keep a position per file as read(2)/write(2) would.

use crate::{
    buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup, Whence,
};
use memmap2::{MmapOptions, MmapRaw};
use std::fs::File;

struct Mapped {
    map: MmapRaw,
    file: File,
    writable: bool,
    pos: u64,
}

pub struct Mmap {
    maps: FileTable<Mapped>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Mmap {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Ok(Mmap {
            maps: FileTable::default(),
            pool: BufferPool::try_new(1, setup.buf_len).map_err(|e| EngineError::memory(EngineKind::Mmap, e))?,
            done: Vec::with_capacity(1),
        })
    }

    fn perform(&mut self, op: Op) -> std::io::Result<usize> {
        let Some(m) = self.maps.get_mut(op.file) else { return Err(calls::no_file()) };
        let len = op.len as usize;
        let at = match op.kind {
            OpKind::ReadCur | OpKind::WriteCur | OpKind::ReadvCur(_) | OpKind::WritevCur(_) => m.pos,
            _ => op.offset,
        };
        let in_range = (at as usize).checked_add(len).is_some_and(|end| end <= m.map.len());
        let einval = || std::io::Error::from_raw_os_error(libc::EINVAL);
        let r = match op.kind {
            // Loads and stores take no per-call flags (its row says so).
            _ if !op.flags.is_empty() => Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            k if (k.reads() || k.writes()) && !in_range => Err(einval()),
            k if k.writes() && !m.writable => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
            k if k.reads() => {
                let dst = self.pool.slot_ptr(op.slot);
                // SAFETY: [at, at+len) lies inside the live mapping (checked above) and the
                // slot holds at least `len` bytes (the pool is sized for the largest block).
                // Another process writing the same pages concurrently only changes the bytes seen.
                unsafe { std::ptr::copy_nonoverlapping(m.map.as_ptr().add(at as usize), dst, len) };
                Ok(len)
            }
            k if k.writes() => {
                let src = self.pool.slot_ptr(op.slot);
                // SAFETY: as for reads; the mapping is shared and writable (opened read-write).
                unsafe { std::ptr::copy_nonoverlapping(src, m.map.as_mut_ptr().add(at as usize), len) };
                Ok(len)
            }
            // The position is the engine's (reads and writes do not move the descriptor's).
            OpKind::Seek(w) => {
                let to = match w {
                    Whence::Set => Some(op.offset as i64),
                    Whence::Cur => (m.pos as i64).checked_add(op.offset as i64),
                    Whence::End => (m.map.len() as i64).checked_add(op.offset as i64),
                    Whence::Data | Whence::Hole => {
                        rustix::fs::seek(&m.file, w.seek_from(op.offset)).ok().map(|p| p as i64)
                    }
                };
                match to {
                    Some(p) if p >= 0 => {
                        m.pos = p as u64;
                        Ok(p as usize)
                    }
                    _ => Err(einval()),
                }
            }
            OpKind::Fsync | OpKind::Fdatasync => m.map.flush().and_then(|_| calls::perform(&m.file, &op, &mut [])),
            _ => calls::perform(&m.file, &op, &mut []),
        };
        if matches!(op.kind, OpKind::ReadCur | OpKind::WriteCur | OpKind::ReadvCur(_) | OpKind::WritevCur(_)) {
            if let Ok(n) = r {
                m.pos += n as u64;
            }
        }
        r
    }
}

impl Engine for Mmap {
    #[inline]
    fn kind(&self) -> EngineKind {
        EngineKind::Mmap
    }
    fn depth(&self) -> usize {
        1
    }
    fn set_file(&mut self, index: u32, file: File, len: u64) -> Result<(), EngineError> {
        let setup = |what: &str, source| EngineError::Setup { engine: "mmap", what: what.into(), source };
        let len = usize::try_from(len)
            .map_err(|_| EngineError::Unsupported { engine: "mmap", what: "file too large to map".into() })?;
        if len == 0 {
            return Err(EngineError::Unsupported { engine: "mmap", what: "cannot map an empty file".into() });
        }
        // A file opened read-only can only be mapped read-only; writes to it then fail with EBADF
        // as pwrite would, instead of faulting.
        let (map, writable) = match MmapOptions::new().len(len).map_raw(&file) {
            Ok(m) => (m, true),
            Err(_) => {
                (MmapOptions::new().len(len).map_raw_read_only(&file).map_err(|e| setup("mapping the file", e))?, false)
            }
        };
        self.maps.set("mmap", index, Mapped { map, file, writable, pos: 0 })
    }
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError> {
        Ok(self.maps.take(index).map(|m| m.file))
    }
    fn free_index(&self) -> u32 {
        self.maps.free_index()
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    #[inline]
    fn perform_now(&mut self, op: Op) -> Result<Completion, EngineError> {
        Ok(Completion::from_io(op.slot, self.perform(op)))
    }
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let c = self.perform_now(op)?;
        self.done.push(c);
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
