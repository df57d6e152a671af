//! fio's per-I/O logs (`--log-avg-msec 0`; fio's write_*_log without log_avg_msec): the
//! worker's observer ([`crate::worker::Observe`]) keeps each completed read, write or trim as a
//! small record in a batch; a full batch goes to the thread's writer thread over a bounded
//! channel, which writes fio 3.33's lines (`time_ms, value, ddir, bs[, offset], prio`) to
//! `PREFIX_KIND.N.log`. Memory is bounded (at most [`QUEUE`] batches of [`BATCH`] records per
//! thread); when the writer falls behind, a batch that finds the channel full is dropped and
//! counted, and the count is said with the files ([`Written::lost`], [`take_written`]).

use crate::clock::Stamp;
use crate::error::SourceError;
use crate::source::Call;
use crate::worker::Observe;
use iolab_spec::io_log::{IoLog, IoLogKind};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Records per batch handed to the writer (32 bytes each).
pub const BATCH: usize = 4096;
/// Batches the channel holds before the worker drops one (4 MiB of records per thread).
pub const QUEUE: usize = 32;

/// One completed I/O.
#[derive(Debug, Clone, Copy)]
struct Rec {
    /// Completion, in ms since the measured window began.
    t_ms: u64,
    lat_ns: u64,
    offset: u64,
    bytes: u32,
    prio: u16,
    /// fio's data direction: 0 read, 1 write, 2 trim.
    ddir: u8,
}

/// What one thread's logs came to: the files, the lines each has, and the I/Os not logged
/// because the writer fell behind (or the error that stopped it).
#[derive(Debug, Clone)]
pub struct Written {
    pub files: Vec<PathBuf>,
    /// Lines in each file (every file of a thread has one line per logged I/O).
    pub lines: u64,
    /// I/Os completed but not logged: their batch found the writer's channel full.
    pub lost: u64,
    /// Why the writer stopped early, with the file.
    pub error: Option<String>,
}

static WRITTEN: Mutex<Vec<Written>> = Mutex::new(Vec::new());

/// The per-I/O logs finished since the last call (each thread's, as it ended).
pub fn take_written() -> Vec<Written> {
    WRITTEN.lock().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default()
}

/// One worker thread's per-I/O logging: the observer the loop is compiled with when the job
/// asks for per-I/O logs.
pub struct IoLogger {
    t0: Stamp,
    /// Each slot's call's own priority (0: the thread's, `default_prio`).
    prios: Vec<u16>,
    default_prio: u16,
    batch: Vec<Rec>,
    tx: Option<SyncSender<Vec<Rec>>>,
    lost: u64,
    writer: Option<JoinHandle<Result<u64, String>>>,
    files: Vec<PathBuf>,
}

impl IoLogger {
    /// Create thread `thread`'s files (never an existing one) and start its writer. `depth`:
    /// the engine's slots; `default_prio`: the thread's I/O priority value (0 when unset).
    pub fn open(log: &IoLog, thread: u32, depth: usize, default_prio: u16) -> Result<IoLogger, SourceError> {
        let mut outs = Vec::new();
        let mut files = Vec::new();
        for (kind, name) in log.files(thread) {
            let path = PathBuf::from(name);
            let f = File::options().write(true).create_new(true).open(&path).map_err(|e| SourceError::Io {
                what: "creating the per-I/O log",
                path: path.clone(),
                hint: if e.kind() == io::ErrorKind::AlreadyExists {
                    " (iolab does not overwrite it: remove it or choose another prefix)"
                } else {
                    ""
                },
                source: e,
            })?;
            outs.push((kind, BufWriter::with_capacity(1 << 16, f), path.clone()));
            files.push(path);
        }
        let (tx, rx) = sync_channel::<Vec<Rec>>(QUEUE);
        let (offset, prio) = (log.offset, log.prio);
        let writer = std::thread::Builder::new()
            .name(format!("iolab-log-{}", log.first + thread))
            .spawn(move || write_all(rx, outs, offset, prio))
            .map_err(|e| SourceError::Said(format!("starting the per-I/O log's writer thread: {e}")))?;
        Ok(IoLogger {
            t0: Stamp(0),
            prios: vec![0; depth.max(1)],
            default_prio,
            batch: Vec::with_capacity(BATCH),
            tx: Some(tx),
            lost: 0,
            writer: Some(writer),
            files,
        })
    }

    /// The measured window's start: I/Os completed before it (the ramp) are not logged, and
    /// each line's time counts from it, as fio's does after its ramp.
    pub fn begin(&mut self, t0: Stamp) {
        self.t0 = t0;
    }

    /// Hand the full batch to the writer; if its channel is full, the batch is counted lost.
    #[cold]
    #[inline(never)]
    fn hand_over(&mut self) {
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let Some(tx) = &self.tx else {
            self.lost += full.len() as u64;
            return;
        };
        match tx.try_send(full) {
            Ok(()) => {}
            Err(TrySendError::Full(mut b)) | Err(TrySendError::Disconnected(mut b)) => {
                self.lost += b.len() as u64;
                b.clear();
                self.batch = b;
            }
        }
    }

    /// Write what is left, wait for the writer, and say what was written ([`take_written`]).
    /// An error writing the files is returned (the job's error).
    pub fn finish(mut self) -> Result<Written, SourceError> {
        let rest = std::mem::take(&mut self.batch);
        if let Some(tx) = self.tx.take() {
            if !rest.is_empty() {
                // Off the measured path: wait for room rather than drop the last batch.
                if let Err(e) = tx.send(rest) {
                    self.lost += e.0.len() as u64;
                }
            }
        }
        let outcome = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the per-I/O log's writer thread panicked".into()),
            None => Ok(0),
        };
        let (lines, error) = match outcome {
            Ok(n) => (n, None),
            Err(e) => (0, Some(e)),
        };
        let w = Written { files: self.files.clone(), lines, lost: self.lost, error };
        if let Ok(mut all) = WRITTEN.lock() {
            all.push(w.clone());
        }
        match &w.error {
            Some(e) => Err(SourceError::Said(e.clone())),
            None => Ok(w),
        }
    }
}

impl Observe for IoLogger {
    #[inline(always)]
    fn issued(&mut self, slot: u32, prio: u16) {
        if let Some(p) = self.prios.get_mut(slot as usize) {
            *p = prio;
        }
    }

    #[inline(always)]
    fn completed(&mut self, slot: u32, now: Stamp, lat_ns: u64, call: &Call, _bytes: u64) {
        let Call::Data { kind, offset, len, .. } = *call else { return };
        let ddir = if kind.reads() {
            0
        } else if kind.writes() {
            1
        } else {
            return;
        };
        if now < self.t0 {
            return;
        }
        let own = self.prios.get(slot as usize).copied().unwrap_or(0);
        self.batch.push(Rec {
            t_ms: (now.0 - self.t0.0) / 1_000_000,
            lat_ns,
            offset,
            // fio's bs column: the request's length.
            bytes: len,
            prio: if own == 0 { self.default_prio } else { own },
            ddir,
        });
        if self.batch.len() >= BATCH {
            self.hand_over();
        }
    }
}

/// The writer thread: each batch's records as lines in each file; the lines written per file.
fn write_all(
    rx: Receiver<Vec<Rec>>,
    mut outs: Vec<(IoLogKind, BufWriter<File>, PathBuf)>,
    offset: bool,
    prio: bool,
) -> Result<u64, String> {
    let mut lines = 0u64;
    let mut line = String::with_capacity(96);
    while let Ok(batch) = rx.recv() {
        for r in &batch {
            for (kind, out, path) in outs.iter_mut() {
                line.clear();
                format_line(&mut line, *kind, r, offset, prio);
                out.write_all(line.as_bytes()).map_err(|e| format!("writing {}: {e}", path.display()))?;
            }
        }
        lines += batch.len() as u64;
    }
    for (_, out, path) in outs.iter_mut() {
        out.flush().map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(lines)
}

/// One line as fio 3.33 writes it per I/O: `time_ms, value, ddir, bs, offset, prio` (offset
/// with log_offset only; prio in hex with log_prio, else 1 for real-time and 0 for others).
fn format_line(out: &mut String, kind: IoLogKind, r: &Rec, offset: bool, prio: bool) {
    use std::fmt::Write as _;
    let value = match kind {
        IoLogKind::Lat => r.lat_ns,
        IoLogKind::Iops => 1,
        // fio's per-I/O bandwidth: bytes x 10^6 / the latency in ns.
        IoLogKind::Bw if r.lat_ns == 0 => 0,
        IoLogKind::Bw => r.bytes as u64 * 1_000_000 / r.lat_ns,
    };
    let _ = write!(out, "{}, {value}, {}, {}, ", r.t_ms, r.ddir, r.bytes);
    if offset {
        let _ = write!(out, "{}, ", r.offset);
    }
    if prio {
        let _ = writeln!(out, "0x{:04x}", r.prio);
    } else {
        let _ = writeln!(out, "{}", u8::from(r.prio >> 13 == 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_engine::OpKind;

    /// A writer that falls behind (here: one that never reads): the worker never waits, and
    /// every I/O it could not hand over is counted.
    #[test]
    fn a_full_channel_drops_the_batch_and_counts_it() {
        let (tx, rx) = sync_channel::<Vec<Rec>>(1);
        let mut l = IoLogger {
            t0: Stamp(0),
            prios: vec![0; 1],
            default_prio: 0,
            batch: Vec::with_capacity(BATCH),
            tx: Some(tx),
            lost: 0,
            writer: None,
            files: Vec::new(),
        };
        let call = Call::Data { kind: OpKind::Read, file: 0, offset: 4096, len: 4096 };
        for i in 0..3 * BATCH as u64 + 5 {
            l.issued(0, 0);
            l.completed(0, Stamp(i * 1000), 1000, &call, 4096);
        }
        // The first batch fits the channel; the second and third find it full.
        assert_eq!(l.lost, 2 * BATCH as u64);
        assert_eq!(rx.try_recv().map(|b| b.len()).ok(), Some(BATCH));
        drop(rx);
        let w = l.finish().unwrap();
        assert_eq!(w.lost, 2 * BATCH as u64 + 5, "the last 5, with the writer gone, too");
    }

    #[test]
    fn lines_are_fio_3_33_s() {
        let r = Rec { t_ms: 3, lat_ns: 292_544, offset: 12288, bytes: 4096, prio: 0x2000, ddir: 0 };
        let mut s = String::new();
        format_line(&mut s, IoLogKind::Bw, &r, true, true);
        format_line(&mut s, IoLogKind::Iops, &r, true, true);
        format_line(&mut s, IoLogKind::Lat, &r, false, false);
        let idle = Rec { prio: 0x6000, ddir: 1, ..r };
        format_line(&mut s, IoLogKind::Lat, &idle, false, false);
        // Lines fio 3.33 wrote for such an I/O (libaio, cmdprio_class=1, log_offset=1, log_prio=1).
        assert_eq!(
            s,
            "3, 14001, 0, 4096, 12288, 0x2000\n3, 1, 0, 4096, 12288, 0x2000\n3, 292544, 0, 4096, 1\n3, 292544, 1, 4096, 0\n"
        );
    }
}
