//! Why a worker's job ended early, typed: a call that failed or came back short (with its
//! errno, file, offset and length), a file that would not open, the source's own file work, an
//! engine's refusal, or a finding said in words. The executor turns it into the job's `error`
//! text in the results; until then the cause is kept (`source()`, `raw_os_error`).

use iolab_engine::EngineError;
use std::io;
use std::path::PathBuf;

/// A call's failure: the kernel's error, or fewer bytes than asked.
#[derive(Debug)]
pub enum Cause {
    Os(io::Error),
    Short { done: usize, len: u32 },
}

/// A call that failed or came back short, where and why.
#[derive(Debug)]
pub struct CallError {
    /// What the call was, in words (`read`, `write`, `flush`, `create`, ...).
    pub op: &'static str,
    /// The file or name it was made on.
    pub path: String,
    /// Its length and offset, for reads and writes.
    pub at: Option<(u32, u64)>,
    pub cause: Cause,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = self.op;
        write!(f, "{what}")?;
        if let Some((len, offset)) = self.at {
            write!(f, " of {len} bytes at offset {offset}")?;
        }
        write!(f, " in {}: ", self.path)?;
        match &self.cause {
            Cause::Short { done, len } => write!(f, "short {what}: {done} of {len} bytes"),
            Cause::Os(e) if e.raw_os_error() == Some(libc::ENOSPC) => write!(f, "{e}: the filesystem is full"),
            Cause::Os(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Os(e) => Some(e),
            Cause::Short { .. } => None,
        }
    }
}

/// Why a source cannot run (a replay's trace refused, a target not as it expects), or why it,
/// or the worker running it, stopped its job.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A timed call failed or came back short.
    #[error(transparent)]
    Call(#[from] CallError),
    /// File-system work of the source's own, outside the timed calls: opening the files the
    /// work starts with, laying out a pool. `hint` says what to do, when there is something.
    #[error("{what}{}{}: {source}{hint}", if what.is_empty() { "" } else { " " }, path.display())]
    Io { what: &'static str, path: PathBuf, source: io::Error, hint: &'static str },
    /// The engine refused (building it, placing a file, submitting).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The engine refused a file the source placed.
    #[error("{path}: {source}")]
    Place { path: String, source: EngineError },
    /// The system's error, with its context in its words already.
    #[error(transparent)]
    Os(#[from] io::Error),
    /// A trace that cannot be read as one.
    #[error("{}: {source}", path.display())]
    Trace { path: PathBuf, source: iolab_trace::format::FormatError },
    /// A name outside the job's directory.
    #[error("`{}` is not a path inside the job's directory (absolute paths and `..` are refused)", .0.display())]
    Outside(PathBuf),
    /// A failure with what it was part of (the replayed call, the traced thread).
    #[error("{context}: {source}")]
    Context { context: String, source: Box<SourceError> },
    /// What the source says in words: a finding of validation, a refusal, a pool run dry.
    #[error("{0}")]
    Said(String),
}

impl SourceError {
    /// The errno behind it, if the kernel said no.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            SourceError::Call(CallError { cause: Cause::Os(e), .. }) => e.raw_os_error(),
            SourceError::Io { source, .. } | SourceError::Os(source) => source.raw_os_error(),
            SourceError::Context { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// `SourceError::Io` of `what` on `path`, with a hint or none.
pub fn io_error<'a>(
    what: &'static str,
    path: impl Into<PathBuf> + 'a,
    hint: &'static str,
) -> impl FnOnce(io::Error) -> SourceError + 'a {
    move |source| SourceError::Io { what, path: path.into(), source, hint }
}

impl From<String> for SourceError {
    fn from(s: String) -> Self {
        SourceError::Said(s)
    }
}

impl From<&str> for SourceError {
    fn from(s: &str) -> Self {
        SourceError::Said(s.to_string())
    }
}

/// `SourceError::Said` of a `format!`: a refusal or finding in words.
macro_rules! said {
    ($($t:tt)*) => { $crate::error::SourceError::Said(format!($($t)*)) };
}
