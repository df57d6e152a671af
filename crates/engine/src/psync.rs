//! psync: one pread(2)/pwrite(2) per operation, performed in `queue`, like fio's psync.

use crate::{buffer::BufferPool, Completion, Engine, EngineError, Op, OpKind};
use std::fs::File;
use std::os::unix::fs::FileExt;

pub struct Psync {
    files: Vec<File>,
    pool: BufferPool,
    done: Vec<Completion>,
}

impl Psync {
    pub fn new(buf_len: usize) -> Self {
        Psync { files: Vec::new(), pool: BufferPool::new(1, buf_len), done: Vec::with_capacity(1) }
    }
}

pub(crate) fn sync_file(f: &File, kind: OpKind) -> std::io::Result<usize> {
    match kind {
        OpKind::Fdatasync => f.sync_data().map(|_| 0),
        _ => f.sync_all().map(|_| 0),
    }
}

impl Engine for Psync {
    fn name(&self) -> &'static str {
        "psync"
    }
    fn depth(&self) -> usize {
        1
    }
    fn add_file(&mut self, file: &File, _len: u64) -> Result<u32, EngineError> {
        let f = file.try_clone().map_err(|source| EngineError::Setup {
            engine: "psync",
            what: "dup of the file".into(),
            source,
        })?;
        self.files.push(f);
        Ok(self.files.len() as u32 - 1)
    }
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
    #[inline]
    fn queue(&mut self, op: Op) -> Result<(), EngineError> {
        let f = &self.files[op.file as usize];
        let r = match op.kind {
            OpKind::Read => f.read_at(&mut self.pool.slot_mut(op.slot)[..op.len as usize], op.offset),
            OpKind::Write => f.write_at(&self.pool.slot_mut(op.slot)[..op.len as usize], op.offset),
            k => sync_file(f, k),
        };
        self.done.push(Completion::from_io(op.slot, r));
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
