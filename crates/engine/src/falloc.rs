//! falloc: fio's `ioengine=falloc`, which allocates a file's extents instead of moving data
//! (fio's engines/falloc.c): each write is fallocate(2) of its range with mode 0 (allocating,
//! and growing the file past its end), each read fallocate(2) with FALLOC_FL_KEEP_SIZE
//! (allocating, the size kept), each trim fallocate(2) with PUNCH_HOLE|KEEP_SIZE (freeing the
//! range), each counted as an I/O of its length as fio counts it. Flushes and the other call
//! shapes are made as psync makes them.

use crate::{buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup};
use rustix::fs::FallocateFlags;
use std::fs::File;
use std::io;

pub struct Falloc {
    files: FileTable<File>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Falloc {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Ok(Falloc {
            files: FileTable::default(),
            pool: BufferPool::try_new(1, setup.buf_len).map_err(|e| EngineError::memory(EngineKind::Falloc, e))?,
            done: Vec::with_capacity(1),
        })
    }
}

/// fallocate(2) of `op`'s range with `mode`, counted as `op.len` bytes.
fn allocate(f: &File, op: &Op, mode: FallocateFlags) -> io::Result<usize> {
    rustix::fs::fallocate(f, mode, op.offset, u64::from(op.len)).map(|()| op.len as usize).map_err(io::Error::from)
}

impl Engine for Falloc {
    fn kind(&self) -> EngineKind {
        EngineKind::Falloc
    }
    fn depth(&self) -> usize {
        1
    }
    fn set_file(&mut self, index: u32, file: File, _len: u64) -> Result<(), EngineError> {
        self.files.set("falloc", index, file)
    }
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError> {
        Ok(self.files.take(index))
    }
    fn free_index(&self) -> u32 {
        self.files.free_index()
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    fn perform_now(&mut self, op: Op) -> Result<Completion, EngineError> {
        let r = match self.files.get(op.file) {
            None => Err(calls::no_file()),
            // fallocate(2) takes no per-call flags (its row says so).
            Some(_) if !op.flags.is_empty() => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Some(f) if op.kind.writes() => allocate(f, &op, FallocateFlags::empty()),
            Some(f) if op.kind.reads() => allocate(f, &op, FallocateFlags::KEEP_SIZE),
            // fio's falloc trim: a hole punched, the size kept (not BLKDISCARD, as other engines).
            Some(f) if op.kind == OpKind::Trim => {
                allocate(f, &op, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE)
            }
            Some(f) => calls::perform(f, &op, self.pool.slot_mut(op.slot)),
        };
        Ok(Completion::from_io(op.slot, r))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_write_allocates_its_range_growing_the_file_and_a_read_allocates_keeping_the_size() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::File::create(&path).unwrap();
        let mut e = crate::build(EngineKind::Falloc, Setup::new(1, 65536)).unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        e.set_file(0, f, 0).unwrap();
        let op = |kind, offset, len| Op::new(kind, 0, offset, len, 0);
        let c = e.perform_now(op(OpKind::Write, 65536, 16384)).unwrap();
        if c.result().as_ref().err().and_then(io::Error::raw_os_error) == Some(libc::EOPNOTSUPP) {
            eprintln!("SKIPPED: this filesystem has no fallocate");
            return;
        }
        assert_eq!(c.result().unwrap(), 16384, "counted as a write of its length");
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), 65536 + 16384, "the write grew the file to its range's end");
        let blocks = m.blocks();
        assert!(blocks * 512 >= 16384, "its range is allocated: {blocks} blocks");
        let c = e.perform_now(op(OpKind::Read, 1 << 20, 65536)).unwrap();
        assert_eq!(c.result().unwrap(), 65536, "counted as a read of its length");
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), 65536 + 16384, "a read keeps the size");
        assert!(m.blocks() * 512 >= blocks * 512 + 65536, "and allocates beyond it: {} blocks", m.blocks());
        assert!(std::fs::read(&path).unwrap().iter().all(|b| *b == 0), "no data is written");
        assert!(e.perform_now(op(OpKind::Fsync, 0, 0)).unwrap().result().is_ok());
        // A trim punches a hole: the range is freed, the size kept (fio's falloc trim).
        let before = std::fs::metadata(&path).unwrap().blocks();
        let c = e.perform_now(op(OpKind::Trim, 65536, 16384)).unwrap();
        assert_eq!(c.result().unwrap(), 16384, "counted as a trim of its length");
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), 65536 + 16384, "a trim keeps the size");
        assert!(m.blocks() * 512 + 16384 <= before * 512, "and frees its range: {} blocks from {before}", m.blocks());
    }
}
