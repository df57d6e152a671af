//! null: completes every operation at once without touching the kernel, so a run on it
//! measures iolab's own per-operation cost (fio has the same engine for the same reason).

use crate::{buffer::BufferPool, Completion, Engine, EngineError, EngineKind, FileTable, Op, OpKind, Setup};
use std::fs::File;

pub struct Null {
    pool: BufferPool,
    files: FileTable<()>,
    done: Vec<Completion>,
}

impl Null {
    pub fn new(setup: Setup) -> Result<Self, EngineError> {
        Ok(Null {
            pool: BufferPool::try_new(1, setup.buf_len).map_err(|e| EngineError::memory(EngineKind::Null, e))?,
            files: FileTable::default(),
            done: Vec::with_capacity(1),
        })
    }
}

impl Engine for Null {
    #[inline]
    fn kind(&self) -> EngineKind {
        EngineKind::Null
    }
    fn depth(&self) -> usize {
        1
    }
    fn set_file(&mut self, index: u32, _file: File, _len: u64) -> Result<(), EngineError> {
        self.files.set("null", index, ())
    }
    fn take_file(&mut self, index: u32) -> Result<Option<File>, EngineError> {
        self.files.take(index);
        Ok(None)
    }
    fn free_index(&self) -> u32 {
        self.files.free_index()
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    #[inline]
    fn perform_now(&mut self, op: Op) -> Result<Completion, EngineError> {
        let n = match op.kind {
            // No kernel to pass per-call flags to (its row says so).
            _ if !op.flags.is_empty() => -(libc::EOPNOTSUPP as i64),
            k if k.reads() || k.writes() => op.len as i64,
            OpKind::Seek(_) => op.offset as i64,
            OpKind::Trim => op.len as i64,
            _ => 0,
        };
        Ok(Completion { slot: op.slot, res: n })
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
