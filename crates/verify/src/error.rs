//! The crate's errors: a journal or map file that cannot be read ([`FormatError`], what a crash
//! or a hostile file produces) and the failures of setting up, finishing and recovering
//! ([`VerifyError`]), each with the file it is about.

use std::path::PathBuf;

/// A journal or map file that is torn, foreign or damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("not an iolab {what} file (its magic is wrong)")]
    Magic { what: &'static str },
    #[error("{what} version {version} is not one this iolab reads (1)")]
    Version { what: &'static str, version: u32 },
    #[error("the {what} is cut short: {have} of {need} bytes")]
    Truncated { what: &'static str, need: u64, have: u64 },
    #[error("the {what} fails its checksum")]
    Checksum { what: &'static str },
    #[error("the {what} is not valid: {why}")]
    Invalid { what: &'static str, why: String },
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Format { path: PathBuf, source: FormatError },
    #[error("{0}")]
    Refused(String),
}

impl VerifyError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VerifyError::Io { path: path.into(), source }
    }
}
