//! A block-level trace (`iolab trace record --level block`) replayed onto a file or a device:
//! one traced device's requests, each at its sector's offset (sector × 512) with its size, in
//! the order the driver was given them, each issued once fewer are in flight than the device
//! had when it was (its queue depth then), with the recorded time between issues (or none:
//! afap). Reads and writes stay reads and writes, a FUA write goes through an O_DSYNC
//! descriptor (the kernel sends it FUA, or a write and a flush), a flush is an fdatasync,
//! discard and secure erase punch a hole, write-zeroes zeroes the range. The target is laid out
//! as a block job's (a file iolab owns or may overwrite, a device with `--device`).

use crate::error::SourceError;
use iolab_model::OpClass;
use iolab_trace::format::BlockIo;
use std::collections::{BTreeMap, HashMap};

/// REQ_FUA, in a request's `flags` (`cmd_flags >> 8`).
pub const FUA: u32 = 1 << 9;

/// The request operations replayed, by the kernel's REQ_OP_* number.
pub const READ: u8 = 0;
pub const WRITE: u8 = 1;
pub const FLUSH: u8 = 2;
pub const DISCARD: u8 = 3;
pub const SECURE_ERASE: u8 = 5;
pub const WRITE_ZEROES: u8 = 9;

/// One request to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockStep {
    pub issue_ns: u64,
    pub complete_ns: u64,
    /// Bytes into the target (the sector × 512).
    pub offset: u64,
    pub len: u32,
    pub op: u8,
    pub flags: u32,
    /// Requests in flight on the device when it was issued, itself included.
    pub depth: u32,
}

/// One device's requests, as a replay issues them.
#[derive(Debug, Clone, Default)]
pub struct BlockPlan {
    /// The traced device (its kernel name).
    pub device: String,
    pub steps: Vec<BlockStep>,
    /// Bytes of the target the requests reach.
    pub extent: u64,
    pub max_depth: u32,
    /// The largest read or write, rounded up to 4 KiB: the engine's buffer.
    pub buffer_len: usize,
}

/// The block devices of a trace and their requests, gathered as the trace streams.
#[derive(Debug, Default)]
pub struct Devices {
    names: HashMap<u32, String>,
    ios: BTreeMap<u32, Vec<BlockIo>>,
}

impl Devices {
    pub fn device(&mut self, dev: u32, name: String) {
        self.names.insert(dev, name);
    }

    pub fn ios(&mut self, dev: u32, ios: Vec<BlockIo>) {
        self.ios.entry(dev).or_default().extend(ios);
    }

    pub fn is_empty(&self) -> bool {
        self.ios.is_empty()
    }

    fn name(&self, dev: u32) -> String {
        self.names.get(&dev).cloned().unwrap_or_else(|| format!("{}:{}", dev >> 20, dev & 0xf_ffff))
    }

    /// The device with the most requests: what a block trace's replay stands the target for
    /// unless told otherwise.
    pub fn busiest(&self) -> Option<String> {
        self.ios.iter().max_by_key(|(_, ios)| ios.len()).map(|(&dev, _)| self.name(dev))
    }

    /// Every device's name, for an error that lists them.
    fn all(&self) -> String {
        self.ios.keys().map(|&d| self.name(d)).collect::<Vec<_>>().join(", ")
    }
}

/// What a block plan recorded, left out and adjusted, for the replay's fidelity.
#[derive(Debug, Default)]
pub struct Counted {
    /// Per class: requests, bytes read or written, device time (issue to completion), ns.
    pub recorded: BTreeMap<OpClass, [u64; 3]>,
    pub left_out: BTreeMap<String, BTreeMap<String, u64>>,
    pub adjusted: BTreeMap<String, u64>,
}

/// The class a request counts under.
pub fn class_of(op: u8) -> OpClass {
    match op {
        READ => OpClass::Read,
        WRITE => OpClass::Write,
        FLUSH => OpClass::Sync,
        _ => OpClass::Allocate,
    }
}

/// Plan the replay of device `name`'s requests (`name` may be `/dev/NAME`); `max_buffer` is
/// the largest request allowed.
pub fn plan(devices: Devices, name: &str, max_buffer: u64) -> Result<(BlockPlan, Counted), SourceError> {
    let want = name.strip_prefix("/dev/").unwrap_or(name);
    let Some(dev) = devices.ios.keys().copied().find(|&d| devices.name(d) == want) else {
        return Err(said!(
            "the block trace has no requests of device `{want}`; its devices: {} (name one with --strip)",
            devices.all()
        ));
    };
    let device = devices.name(dev);
    let mut ios = devices.ios.into_iter().find(|(d, _)| *d == dev).map(|(_, v)| v).unwrap_or_default();
    ios.sort_by_key(|io| (io.issue_ns, io.sector));
    let mut counted = Counted::default();
    let mut kept: Vec<BlockIo> = Vec::with_capacity(ios.len());
    for io in ios {
        let why = match io.op {
            _ if io.error != 0 => Some("failed when traced"),
            READ | WRITE | FLUSH | DISCARD | SECURE_ERASE | WRITE_ZEROES => None,
            _ => Some("block requests iolab does not replay"),
        };
        let why =
            why.or_else(|| (io.op <= WRITE && u64::from(io.bytes) > max_buffer).then_some("larger than --max-buffer"));
        if let Some(why) = why {
            let op = iolab_trace::rings::block_op_name(io.op).to_string();
            *counted.left_out.entry(why.to_string()).or_default().entry(op).or_default() += 1;
            continue;
        }
        kept.push(io);
    }
    // Requests in flight at each issue: those issued up to it less those completed before it.
    let mut completes: Vec<u64> = kept.iter().map(|io| io.complete_ns.max(io.issue_ns)).collect();
    completes.sort_unstable();
    let mut p = BlockPlan { device, ..Default::default() };
    let mut biggest = 0u64;
    for (i, io) in kept.iter().enumerate() {
        let done = completes.partition_point(|&c| c < io.issue_ns);
        let depth = (i + 1).saturating_sub(done).max(1) as u32;
        let offset = io.sector.saturating_mul(512);
        let step = BlockStep {
            issue_ns: io.issue_ns,
            complete_ns: io.complete_ns.max(io.issue_ns),
            offset,
            len: if io.op == FLUSH { 0 } else { io.bytes },
            op: io.op,
            flags: io.flags,
            depth,
        };
        if io.op <= WRITE {
            biggest = biggest.max(u64::from(io.bytes));
        }
        if io.op != FLUSH {
            p.extent = p.extent.max(offset.saturating_add(u64::from(io.bytes)));
        }
        if io.op == WRITE && io.flags & FUA != 0 {
            *counted.adjusted.entry("FUA writes made through an O_DSYNC descriptor".into()).or_default() += 1;
        }
        p.max_depth = p.max_depth.max(depth);
        let r = counted.recorded.entry(class_of(io.op)).or_default();
        r[0] += 1;
        r[1] += if io.op <= WRITE { u64::from(io.bytes) } else { 0 };
        r[2] = r[2].saturating_add(step.complete_ns - step.issue_ns);
        p.steps.push(step);
    }
    if p.steps.is_empty() {
        return Err(said!("nothing to replay: the block trace has no request of {} that iolab replays", p.device));
    }
    p.buffer_len = biggest.max(4096).div_ceil(4096).saturating_mul(4096) as usize;
    Ok((p, counted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(issue_ns: u64, complete_ns: u64, sector: u64, bytes: u32, op: u8, flags: u32) -> BlockIo {
        BlockIo { queued_ns: 0, issue_ns, complete_ns, sector, bytes, op, flags, error: 0 }
    }

    #[test]
    fn requests_keep_their_offsets_sizes_and_the_depth_they_were_issued_at() {
        let mut d = Devices::default();
        d.device(7 << 20 | 3, "loop3".into());
        d.device(8 << 20, "sda".into());
        // Completion order: a block trace's records.
        d.ios(7 << 20 | 3, vec![io(20, 50, 8, 4096, WRITE, FUA), io(10, 60, 0, 4096, WRITE, 0)]);
        d.ios(7 << 20 | 3, vec![io(70, 80, 0, 0, FLUSH, 0), io(90, 95, 16, 65536, READ, 0), io(96, 97, 0, 0, 34, 0)]);
        d.ios(8 << 20, vec![io(1, 2, 0, 512, READ, 0)]);
        assert_eq!(d.busiest().as_deref(), Some("loop3"));
        let e = plan(Devices { ..Default::default() }, "loop3", 1 << 20).unwrap_err().to_string();
        assert!(e.contains("no requests of device `loop3`"), "{e}");
        let (p, c) = plan(d, "/dev/loop3", 1 << 20).unwrap();
        let got: Vec<(u64, u64, u32, u8, u32)> =
            p.steps.iter().map(|s| (s.issue_ns, s.offset, s.len, s.op, s.depth)).collect();
        assert_eq!(
            got,
            vec![(10, 0, 4096, WRITE, 1), (20, 4096, 4096, WRITE, 2), (70, 0, 0, FLUSH, 1), (90, 8192, 65536, READ, 1)]
        );
        assert_eq!((p.extent, p.max_depth, p.buffer_len), (8192 + 65536, 2, 65536));
        assert_eq!(c.recorded[&OpClass::Write][1], 8192);
        assert_eq!(c.recorded[&OpClass::Sync][0], 1);
        assert_eq!(c.adjusted.values().sum::<u64>(), 1, "the FUA write");
        assert_eq!(c.left_out.values().flat_map(|m| m.values()).sum::<u64>(), 1, "op 34 (zone append) left out");
    }
}
