//! The engines as data: each engine is one row of the table below, its name and what it can do
//! (its [`Caps`]). A rule that depends on the engine (a queue depth, O_DIRECT, whether it opens
//! or maps files, whether it moves data at all) asks the row through [`EngineKind::caps`], never
//! compares kinds; the engine crate builds each kind with one exhaustive match, so a new engine
//! is a row here, a module there and the arm the compiler asks for.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How an engine reaches a file's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Files {
    /// Through the descriptors it keeps (read/write system calls, a ring).
    Opens,
    /// Through a memory mapping of each file (its pages must exist: the file is sized first).
    Maps,
    /// Not at all: it completes operations without touching a file (the null engine).
    Ignores,
}

/// What an engine can do, asked wherever a rule depends on the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Performs each operation as it is queued, one at a time (the worker then makes the call
    /// in place, without the completion queue).
    pub synchronous: bool,
    /// The most operations in flight per thread (`--iodepth`).
    pub max_depth: u32,
    /// Opens files with O_DIRECT (`--direct`); `Err` says why it cannot.
    pub direct: Result<(), &'static str>,
    /// How it reaches the data.
    pub files: Files,
    /// Passes an operation's per-call flags (`RWF_*`: preadv2/pwritev2, a ring's `rw_flags`)
    /// through to the kernel.
    pub rw_flags: bool,
    /// Honours fio's batching of submissions and completions ([`QueueBatch`]: libaio).
    pub batches: bool,
    /// Can have a kernel thread poll its submission queue ([`SqPoll`]: io_uring's SQPOLL).
    pub sqpoll: bool,
    /// The engine in a few words, for `--engine`'s help.
    pub about: &'static str,
}

impl Caps {
    /// Whether it keeps the files it is given (and so moves data to and from them).
    pub fn opens_files(&self) -> bool {
        self.files != Files::Ignores
    }
    /// Whether it maps files, so a file must be sized (and readable) before the run.
    pub fn maps_files(&self) -> bool {
        self.files == Files::Maps
    }
}

macro_rules! engines {
    ($( $(#[$m:meta])* $kind:ident => $name:literal, $caps:expr; )+) => {
        /// How an I/O reaches the kernel: one row each, in the table below.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum EngineKind { $( $(#[$m])* #[serde(rename = $name)] $kind ),+ }

        impl EngineKind {
            /// Every engine's name, in the table's order.
            pub const ALL: &'static [&'static str] = &[$($name),+];
            /// Every engine, in the table's order.
            pub const KINDS: &'static [EngineKind] = &[$(EngineKind::$kind),+];
            pub fn as_str(self) -> &'static str {
                match self { $( EngineKind::$kind => $name ),+ }
            }
            /// The engine's row: what it can do.
            #[inline]
            pub const fn caps(self) -> &'static Caps {
                match self { $( EngineKind::$kind => { const C: Caps = $caps; &C } ),+ }
            }
        }
    };
}

engines! {
    /// pread/pwrite, one call at a time (fio's psync).
    Psync => "psync", Caps {
        synchronous: true, max_depth: 1, direct: Ok(()), files: Files::Opens, rw_flags: true, batches: false, sqpoll: false,
        about: "pread/pwrite, one call at a time",
    };
    /// Linux native AIO (io_setup/io_submit/io_getevents, fio's libaio), with fio's batching.
    Libaio => "libaio", Caps {
        synchronous: false, max_depth: 4096, direct: Ok(()), files: Files::Opens, rw_flags: true, batches: true, sqpoll: false,
        about: "Linux native AIO (io_submit/io_getevents), --iodepth operations in flight",
    };
    /// io_uring: a submission and a completion ring, up to 4096 operations in flight.
    IoUring => "io_uring", Caps {
        synchronous: false, max_depth: 4096, direct: Ok(()), files: Files::Opens, rw_flags: true, batches: false, sqpoll: true,
        about: "io_uring, --iodepth operations in flight",
    };
    /// Loads and stores to a shared mapping of each file, msync for flushes.
    Mmap => "mmap", Caps {
        synchronous: true, max_depth: 1,
        direct: Err("memory-mapped I/O goes through the page cache and cannot be direct"),
        files: Files::Maps, rw_flags: false, batches: false, sqpoll: false,
        about: "loads and stores to a mapping of the file",
    };
    /// Completes every operation at once without the kernel: iolab's own cost.
    Null => "null", Caps {
        synchronous: true, max_depth: 1, direct: Ok(()), files: Files::Ignores, rw_flags: false, batches: false, sqpoll: false,
        about: "completes every operation at once, touching nothing: iolab's own cost",
    };
    /// fio's ftruncate engine: each write is ftruncate(2) of the file to its offset.
    Ftruncate => "ftruncate", Caps {
        synchronous: true, max_depth: 1, direct: Ok(()), files: Files::Opens, rw_flags: false, batches: false, sqpoll: false,
        about: "fio's ftruncate: each write sizes the file to its offset with ftruncate(2), reads fail with EINVAL",
    };
    /// fio's falloc engine: each write is fallocate(2) of its range, each read one that keeps
    /// the file's size.
    Falloc => "falloc", Caps {
        synchronous: true, max_depth: 1, direct: Ok(()), files: Files::Opens, rw_flags: false, batches: false, sqpoll: false,
        about: "fio's falloc: each write allocates its range with fallocate(2) (growing the file), each read allocates keeping the size",
    };
}

impl EngineKind {
    /// Whether its reads change the file too, so it is opened for writing whatever the job's
    /// direction: falloc's read is fallocate(2) with FALLOC_FL_KEEP_SIZE (it allocates, the
    /// data stay as they were), which a descriptor opened for reading alone cannot make.
    pub fn reads_allocate(self) -> bool {
        matches!(self, EngineKind::Falloc)
    }
}

/// fio's queue-depth knobs, honoured by an engine whose row `batches` (libaio), each as fio's
/// HOWTO defines it; `None` is iolab's own way: submit what the worker queued before it waits,
/// wait for one completion, take as many as are there, refill as soon as a slot is free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueBatch {
    /// Submit as soon as this many are queued (fio's iodepth_batch_submit; 0: the queue depth).
    #[serde(default, rename = "iodepth_batch_submit", skip_serializing_if = "Option::is_none")]
    pub submit: Option<u32>,
    /// Wait for at least this many completions (iodepth_batch_complete_min; 0: look without waiting).
    #[serde(default, rename = "iodepth_batch_complete_min", skip_serializing_if = "Option::is_none")]
    pub complete_min: Option<u32>,
    /// Take at most this many completions per call (iodepth_batch_complete_max; fio's default
    /// is complete_min).
    #[serde(default, rename = "iodepth_batch_complete_max", skip_serializing_if = "Option::is_none")]
    pub complete_max: Option<u32>,
    /// Once the queue is full, let it drain to this many before filling it again (iodepth_low).
    #[serde(default, rename = "iodepth_low", skip_serializing_if = "Option::is_none")]
    pub low: Option<u32>,
}

impl QueueBatch {
    /// No knob set: iolab's own way.
    pub fn is_unset(&self) -> bool {
        *self == QueueBatch::default()
    }
    /// Each knob set, by fio's name, for messages.
    pub fn set(&self) -> Vec<(&'static str, u32)> {
        [
            ("iodepth_batch_submit", self.submit),
            ("iodepth_batch_complete_min", self.complete_min),
            ("iodepth_batch_complete_max", self.complete_max),
            ("iodepth_low", self.low),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// A kernel thread polling the submission queue (io_uring's IORING_SETUP_SQPOLL, fio's
/// `sqthread_poll`), for an engine whose row has `sqpoll`: the worker writes its I/Os into the
/// ring and makes a system call only to wait for completions or to wake the thread once it has
/// slept (after a second without work, the kernel's default idle, which fio keeps too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SqPoll {
    /// Whether the ring has the polling thread (`--sqpoll`, fio's sqthread_poll).
    #[serde(default, rename = "sqpoll", skip_serializing_if = "std::ops::Not::not")]
    pub on: bool,
    /// The CPU the thread is bound to (`--sqpoll-cpu`, fio's sqthread_poll_cpu; IORING_SETUP_SQ_AFF).
    #[serde(default, rename = "sqpoll_cpu", skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
}

impl EngineKind {
    /// The engine a job uses when it names none.
    pub const DEFAULT: EngineKind = EngineKind::Psync;

    /// The engine with the deepest queue, to name when a depth is beyond another's.
    pub fn deepest() -> EngineKind {
        EngineKind::KINDS.iter().copied().max_by_key(|k| k.caps().max_depth).unwrap_or(EngineKind::DEFAULT)
    }

    /// `--engine`'s help: each engine with what it is.
    pub fn help() -> String {
        let each: Vec<String> = EngineKind::KINDS.iter().map(|k| format!("{k} ({})", k.caps().about)).collect();
        format!("I/O engine: {}.", each.join(", "))
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EngineKind::KINDS
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown value `{s}`; accepted: {}", EngineKind::ALL.join(", ")))
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_reads_back_by_name_and_says_what_it_can_do() {
        for k in EngineKind::KINDS {
            assert_eq!(k.as_str().parse::<EngineKind>(), Ok(*k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str(), "stored plans keep the name");
            let c = k.caps();
            assert!(c.max_depth >= 1);
            assert!(!c.synchronous || c.max_depth == 1, "{k}: a synchronous engine has one in flight");
        }
        assert!("aio".parse::<EngineKind>().unwrap_err().contains("accepted: psync, libaio, io_uring, mmap, null"));
        assert!(EngineKind::Libaio.caps().batches && !EngineKind::IoUring.caps().batches);
        assert_eq!(EngineKind::KINDS.iter().filter(|k| k.caps().sqpoll).collect::<Vec<_>>(), [&EngineKind::IoUring]);
        assert_eq!(EngineKind::deepest(), EngineKind::IoUring);
        assert!(EngineKind::Mmap.caps().maps_files() && !EngineKind::Null.caps().opens_files());
    }
}
