//! iolab's trace support: the strace text parser ([`line`], [`import`]), the versioned trace
//! format ([`format`], docs/trace-format.md), the analysis `iolab trace show` prints
//! ([`analyze`], with [`rings`] for asynchronous I/O rings and block devices) and the fio iolog export ([`fio`]). It depends on no other iolab crate: the
//! workload crate reads traces through it to replay them.
#![forbid(unsafe_code)]

pub mod analyze;
pub mod fio;
pub mod format;
pub mod import;
pub mod line;
pub mod overhead;
pub mod rings;
pub mod stat;

pub use format::{FileInfo, Kind, Op, Record, Trace};
pub use import::{BadLine, Held, Importer, Summary};

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write the trace: {0}")]
    Write(std::io::Error),
    #[error("no strace output given")]
    Nothing,
}

/// The tid in a `-ff` file's name (`out.1234` → 1234).
pub fn ff_tid(path: &Path) -> Option<u32> {
    path.extension().and_then(|e| e.to_str()).and_then(|e| e.parse().ok())
}

/// Convert strace output files into a trace written to `out`. Several files whose names end in
/// `.TID` are `-ff` per-thread files and are merged by time; one file is read as it is (its
/// lines carry their pid when made with `-f`).
pub fn import_files<W: Write>(paths: &[PathBuf], out: W) -> Result<(W, Summary), ImportError> {
    import_named(paths, None, out)
}

/// [`import_files`] with the trace's source named (the recorded command line, say).
pub fn import_named<W: Write>(paths: &[PathBuf], name: Option<&str>, out: W) -> Result<(W, Summary), ImportError> {
    if paths.is_empty() {
        return Err(ImportError::Nothing);
    }
    let source = match name {
        Some(n) => n.to_string(),
        None => paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "),
    };
    let mut imp = Importer::new(out, &source).map_err(ImportError::Write)?;
    let open =
        |p: &PathBuf| File::open(p).map(BufReader::new).map_err(|e| ImportError::Read { path: p.clone(), source: e });
    if paths.len() == 1 {
        // One file read in 256 KiB: fewer reads, and fewer lines that straddle two of them.
        let r = File::open(&paths[0])
            .map(|f| BufReader::with_capacity(256 << 10, f))
            .map_err(|e| ImportError::Read { path: paths[0].clone(), source: e })?;
        let name = paths[0].display().to_string();
        imp.read_file(r, &name, None).map_err(|e| ImportError::Read { path: paths[0].clone(), source: e })?;
    } else {
        let mut ins = Vec::new();
        for p in paths {
            ins.push((open(p)?, p.display().to_string(), ff_tid(p)));
        }
        imp.read_merged(ins).map_err(|e| ImportError::Read { path: paths[0].clone(), source: e })?;
    }
    imp.finish().map_err(ImportError::Write)
}
