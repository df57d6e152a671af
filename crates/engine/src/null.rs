//! null: completes every operation at once without touching the kernel, so a run on it
//! measures iolab's own per-operation cost (fio has the same engine for the same reason).

use crate::{buffer::BufferPool, Completion, Engine, EngineError, Op};
use std::fs::File;

pub struct Null {
    pool: BufferPool,
    files: u32,
    done: Vec<Completion>,
}

impl Null {
    pub fn new(buf_len: usize) -> Self {
        Null { pool: BufferPool::new(1, buf_len), files: 0, done: Vec::with_capacity(1) }
    }
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        "null"
    }
    fn depth(&self) -> usize {
        1
    }
    fn add_file(&mut self, _file: &File, _len: u64) -> Result<u32, EngineError> {
        self.files += 1;
        Ok(self.files - 1)
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    #[inline]
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let n = if op.kind.is_sync() { 0 } else { op.len as i64 };
        self.done.push(Completion { slot: op.slot, res: n });
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
