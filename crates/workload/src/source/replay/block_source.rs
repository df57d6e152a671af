//! The source that replays a block-level trace's requests ([`super::blocks::BlockPlan`]) onto
//! the job's target, one worker: each request issued once fewer than its recorded depth are in
//! flight, the recorded time after the one before it (`think`, `scale:X`), at its recorded
//! offset from the first (`recorded`), or at once (`afap`). The target is opened twice: as
//! is, and with O_DSYNC for the FUA writes.

use super::blocks::{BlockPlan, BlockStep, DISCARD, FLUSH, FUA, READ, SECURE_ERASE, WRITE, WRITE_ZEROES};
use super::run::ReplayRun;
use crate::clock::Stamp;
use crate::error::io_error;
use crate::layout::Target;
use crate::source::{describe_failure, Call, Ctx, Issue, Next, SetupFile, Source, SourceError};
use iolab_engine::{OpKind, OpenOptions};
use iolab_model::Mismatch;
use iolab_spec::{Job, Timing};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// fallocate's modes: FALLOC_FL_KEEP_SIZE with PUNCH_HOLE (a discard), with ZERO_RANGE (write
/// zeroes).
const PUNCH: u32 = 0x01 | 0x02;
const ZERO: u32 = 0x01 | 0x10;

/// Waits shorter than this with requests in flight are not slept (a nap lasts the timer's slack
/// while the queue drains).
const SHORT_WAIT: Duration = Duration::from_micros(200);

pub struct BlockReplaySource {
    run: Arc<ReplayRun>,
    files: Vec<SetupFile>,
    i: usize,
    start: Option<Stamp>,
    /// When the previous request was issued.
    last: Option<Stamp>,
    due: Option<Stamp>,
    /// The requests in flight: (call, step).
    pending: Vec<(Call, usize)>,
}

impl BlockReplaySource {
    /// The source of a block-level replay onto `target` (as checked or created by the layout).
    pub fn new(run: Arc<ReplayRun>, job: &Job, target: Option<&Target>) -> Result<BlockReplaySource, SourceError> {
        let Some(t) = target else { return Err(said!("a block-level replay needs its target laid out")) };
        let open = |dsync: bool| {
            let opts = OpenOptions { read: true, write: true, direct: job.direct, dsync, ..Default::default() };
            t.at.open(opts).map_err(|e| {
                let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
                    " (this filesystem does not support direct I/O: replay onto a device or a file elsewhere)"
                } else {
                    ""
                };
                io_error("opening", &t.path, hint)(e)
            })
        };
        let path = t.path.display().to_string();
        let files = vec![
            SetupFile { index: 0, file: open(false)?, len: t.size, path: path.clone() },
            SetupFile { index: 1, file: open(true)?, len: t.size, path },
        ];
        Ok(BlockReplaySource { run, files, i: 0, start: None, last: None, due: None, pending: Vec::new() })
    }

    fn plan(&self) -> &BlockPlan {
        // Built only for a block plan (see `new`'s caller).
        self.run.plan().blocks.as_ref().map_or(&EMPTY, |b| b)
    }

    /// When request `i` is due (`now`: when it is first asked for).
    fn due_of(&self, i: usize, now: Stamp) -> Option<Stamp> {
        let steps = &self.plan().steps;
        let s = &steps[i];
        let origin = steps.first().map_or(0, |f| f.issue_ns);
        let scaled = |ns: u64| match self.run.timing() {
            Timing::Scale(x) => Duration::from_nanos((ns as f64 / x) as u64),
            _ => Duration::from_nanos(ns),
        };
        match self.run.timing() {
            Timing::Afap => None,
            Timing::Recorded => Some(self.start? + Duration::from_nanos(s.issue_ns - origin)),
            Timing::Think | Timing::Scale(_) => match (i, self.last) {
                (0, _) | (_, None) => Some(now),
                (_, Some(last)) => Some(last + scaled(s.issue_ns.saturating_sub(steps[i - 1].issue_ns))),
            },
        }
    }

    fn call(s: &BlockStep) -> Call {
        let (kind, file) = match s.op {
            READ => (OpKind::Read, 0),
            WRITE => (OpKind::Write, u32::from(s.flags & FUA != 0)),
            FLUSH => (OpKind::Fdatasync, 0),
            DISCARD | SECURE_ERASE => (OpKind::Fallocate { mode: PUNCH, len: u64::from(s.len) }, 0),
            WRITE_ZEROES => (OpKind::Fallocate { mode: ZERO, len: u64::from(s.len) }, 0),
            _ => (OpKind::Fdatasync, 0),
        };
        let len = if s.op <= WRITE { s.len } else { 0 };
        Call::Data { kind, file, offset: s.offset, len }
    }
}

static EMPTY: BlockPlan =
    BlockPlan { device: String::new(), steps: Vec::new(), extent: 0, max_depth: 0, buffer_len: 4096 };

impl Source for BlockReplaySource {
    fn buffer_len(&self) -> usize {
        self.plan().buffer_len
    }

    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
        Ok(std::mem::take(&mut self.files))
    }

    /// Writes carry data, not zeros (which compressing or deduplicating storage would fold).
    fn prime(&mut self, slot: u32, buf: &mut [u8]) {
        iolab_engine::fill_pattern(buf, 0xb10c ^ u64::from(slot), 0);
    }

    fn start(&mut self, at: Stamp) {
        self.start = Some(at);
    }

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if self.i >= self.plan().steps.len() || ctx.ending || self.run.aborted() {
            return Next::Done;
        }
        let s = self.plan().steps[self.i];
        if ctx.inflight >= s.depth as usize {
            // As deep as the device was: the worker waits for a completion.
            return Next::WaitUntil(ctx.now);
        }
        if self.due.is_none() {
            self.due = self.due_of(self.i, ctx.now).or(Some(ctx.now));
        }
        if let Some(d) = self.due.filter(|d| ctx.now < *d) {
            let left = d.saturating_duration_since(ctx.now);
            if left >= SHORT_WAIT || ctx.inflight == 0 || self.run.timing() == Timing::Recorded {
                return Next::WaitUntil(d);
            }
        }
        let call = Self::call(&s);
        self.pending.push((call, self.i));
        self.i += 1;
        self.due = None;
        self.last = Some(ctx.now);
        Next::Issue(Issue::now(call))
    }

    fn completed(&mut self, call: &Call, _buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        let Some(at) = self.pending.iter().position(|p| p.0 == *call) else { return Ok(()) };
        let (_, i) = self.pending.remove(at);
        let s = self.plan().steps[i];
        let device = &self.plan().device;
        match result {
            Err(_) => {
                self.run.abort();
                let path = format!("request {} of {device}", i + 1);
                Err(describe_failure(call, &path, s.len, s.offset, result))
            }
            Ok(n) if s.op <= WRITE && *n != s.len as usize => {
                let m = Mismatch {
                    tid: 0,
                    call: i as u64 + 1,
                    name: iolab_trace::rings::block_op_name(s.op).to_string(),
                    path: device.clone(),
                    recorded: i64::from(s.len),
                    replayed: *n as i64,
                };
                self.run.mismatch(m, super::blocks::class_of(s.op));
                Ok(())
            }
            Ok(_) => Ok(()),
        }
    }
}

impl Drop for BlockReplaySource {
    fn drop(&mut self) {
        if self.i < self.plan().steps.len() {
            self.run.abort();
        }
    }
}
