//! iolab-sysstat: the system beside a run. Parsers for /proc ([`procfs`]), iostat-compatible
//! rates ([`rates`]), snapshots and the sampler thread ([`sample`]), and the mapping from a
//! path to the devices and interfaces that carry its I/O ([`target`]), with a shaped link's
//! rate ([`qdisc`]).

#![forbid(unsafe_code)]

pub mod host;
pub mod memlimit;
pub mod names;
pub mod procfs;
pub mod qdisc;
pub mod rates;
pub mod sample;
pub mod target;

pub use host::{host_facts, hostname, HostFacts};
pub use names::NameMap;
pub use rates::{CpuPct, DiskRates, NetRates};
pub use sample::{Emit, ProcRoot, Rates, Sampler, Snapshot, SystemResult};
pub use target::{describe, SysRoots, TargetInfo};
