//! psync: one system call per operation, performed in `queue`, like fio's psync: pread/pwrite,
//! or exactly the call shape asked for (read/write at the position, preadv/pwritev, lseek...).

use crate::{buffer::BufferPool, calls, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup};
use std::fs::File;

pub struct Psync {
    files: FileTable<File>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Psync {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Ok(Psync {
            files: FileTable::default(),
            pool: BufferPool::try_new(1, setup.buf_len).map_err(|e| EngineError::memory(EngineKind::Psync, e))?,
            done: Vec::with_capacity(1),
        })
    }
}

impl Psync {
    /// Every call but plain pread and pwrite (other shapes, per-call flags), or a closed index:
    /// off the hot path.
    #[cold]
    fn other(&mut self, op: Op) -> Completion {
        let r = match self.files.get(op.file) {
            Some(f) => calls::perform(f, &op, self.pool.slot_mut(op.slot)),
            None => Err(calls::no_file()),
        };
        Completion::from_io(op.slot, r)
    }
}

impl Engine for Psync {
    #[inline]
    fn kind(&self) -> EngineKind {
        EngineKind::Psync
    }
    fn depth(&self) -> usize {
        1
    }
    fn set_file(&mut self, index: u32, file: File, _len: u64) -> Result<(), EngineError> {
        self.files.set("psync", index, file)
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
    #[inline(always)]
    fn perform_now(&mut self, op: Op) -> Result<Completion, EngineError> {
        let r = match self.files.get(op.file) {
            // pread and pwrite, the hot path, straight; every other call shape, and a call with
            // flags (preadv2/pwritev2), through `calls`.
            Some(f) if op.kind == OpKind::Read && op.flags.is_empty() => {
                calls::res(rustix::io::pread(f, &mut self.pool.slot_mut(op.slot)[..op.len as usize], op.offset))
            }
            Some(f) if op.kind == OpKind::Write && op.flags.is_empty() => {
                calls::res(rustix::io::pwrite(f, &self.pool.slot_mut(op.slot)[..op.len as usize], op.offset))
            }
            _ => return Ok(self.other(op)),
        };
        Ok(Completion { slot: op.slot, res: r })
    }
    #[inline]
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let c = self.perform_now(op)?;
        self.done.push(c);
        Ok(())
    }
    fn commit(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    #[inline]
    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        out.append(&mut self.done);
        Ok(())
    }
}
