//! The counts both a file's and a ring's summary give (an operation type's count, bytes and
//! time; the access pattern), apart so that `analyze` and `rings` both read them from below.

use serde::Serialize;

/// Count, bytes and time of one operation type.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct OpStat {
    pub ops: u64,
    pub bytes: u64,
    /// Sum of the traced durations (`-T`), seconds.
    pub time_s: f64,
}

/// How data calls move through a file.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    None,
    Sequential,
    Strided { stride: i64 },
    Random,
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::None => write!(f, "-"),
            Pattern::Sequential => write!(f, "sequential"),
            Pattern::Strided { stride } => write!(f, "strided {stride} B"),
            Pattern::Random => write!(f, "random"),
        }
    }
}
