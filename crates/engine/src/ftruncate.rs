//! ftruncate: fio's `ioengine=ftruncate`, which sizes a file instead of writing it: each write
//! is ftruncate(2) of its file to the write's offset (fio's engines/ftruncate.c), counted as a
//! write of its length as fio counts it; a read fails with EINVAL, as in fio. Flushes and the
//! other call shapes are made as psync makes them.

use crate::{buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, Setup};
use std::fs::File;
use std::io;

pub struct Ftruncate {
    files: FileTable<File>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Ftruncate {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Ok(Ftruncate {
            files: FileTable::default(),
            pool: BufferPool::try_new(1, setup.buf_len).map_err(|e| EngineError::memory(EngineKind::Ftruncate, e))?,
            done: Vec::with_capacity(1),
        })
    }
}

impl Engine for Ftruncate {
    fn kind(&self) -> EngineKind {
        EngineKind::Ftruncate
    }
    fn depth(&self) -> usize {
        1
    }
    fn set_file(&mut self, index: u32, file: File, _len: u64) -> Result<(), EngineError> {
        self.files.set("ftruncate", index, file)
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
            // ftruncate(2) takes no per-call flags (its row says so).
            Some(_) if !op.flags.is_empty() => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Some(f) if op.kind.writes() => {
                rustix::fs::ftruncate(f, op.offset).map(|()| op.len as usize).map_err(io::Error::from)
            }
            Some(_) if op.kind.reads() => Err(io::Error::from_raw_os_error(libc::EINVAL)),
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
    use crate::OpKind;

    #[test]
    fn a_write_sizes_the_file_to_its_offset_and_a_read_is_einval() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::write(&path, vec![7u8; 65536]).unwrap();
        let mut e = crate::build(EngineKind::Ftruncate, Setup::new(1, 4096)).unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        e.set_file(0, f, 65536).unwrap();
        let op = |kind, offset| Op::new(kind, 0, offset, 4096, 0);
        for (offset, len) in [(0, 0), (8192, 8192), (4096, 4096)] {
            let c = e.perform_now(op(OpKind::Write, offset)).unwrap();
            assert_eq!(c.result().unwrap(), 4096, "counted as a write of its length");
            assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        }
        let c = e.perform_now(op(OpKind::Read, 0)).unwrap();
        assert_eq!(c.result().unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert!(e.perform_now(op(OpKind::Fsync, 0)).unwrap().result().is_ok());
    }
}
