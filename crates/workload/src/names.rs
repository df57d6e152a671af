//! The worker's name table: the paths a source names for namespace calls, each checked to lie
//! inside the job's directory, with the directory opened once to resolve names beneath it and the
//! subdirectory the namespace layer ([`crate::ns`]) keeps open between calls.

use crate::error::SourceError;
use iolab_engine::beneath::Beneath;
use rustix::fd::OwnedFd;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A name in the worker's name table (see [`Names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(pub u32);

/// The last subdirectory a worker acted in: its path below the root, resolved beneath it, and
/// the namespace layer's reshaping count when it was resolved (see [`crate::ns`]).
#[derive(Debug, Default)]
pub struct DirCache(pub(crate) Option<(PathBuf, OwnedFd, u64)>);

/// The worker's names: paths under the job's root directory. A source can name nothing outside
/// it: absolute paths and `..` are refused here, and the namespace layer ([`crate::ns`])
/// resolves every name beneath the root ([`Beneath`]), so no symbolic link in the directory
/// leads a call out of it either.
#[derive(Debug, Default)]
pub struct Names {
    root: PathBuf,
    paths: Vec<PathBuf>,
    dir: std::cell::OnceCell<Result<Arc<Beneath>, (io::ErrorKind, String)>>,
    kept: std::cell::RefCell<DirCache>,
}

impl Names {
    pub fn new(root: impl Into<PathBuf>) -> Names {
        Names { root: root.into(), ..Default::default() }
    }
    /// Names under `root`, resolved beneath `dir`: the job's directory as the executor opened
    /// it (once, beneath an agent's `--allow`), never opened again by its path.
    pub fn within(root: impl Into<PathBuf>, dir: Arc<Beneath>) -> Names {
        let names = Names::new(root);
        let _ = names.dir.set(Ok(dir));
        names
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The root, opened once, to resolve names beneath.
    pub fn beneath(&self) -> io::Result<&Beneath> {
        self.dir
            .get_or_init(|| Beneath::open(&self.root).map(Arc::new).map_err(|e| (e.kind(), e.to_string())))
            .as_ref()
            .map(|b| &**b)
            .map_err(|(kind, e)| io::Error::new(*kind, e.clone()))
    }
    /// The subdirectory the namespace layer keeps open between calls.
    pub(crate) fn dir_cache(&self) -> &std::cell::RefCell<DirCache> {
        &self.kept
    }
    /// Register `rel` (relative to the root) and return its id.
    pub fn add(&mut self, rel: impl AsRef<Path>) -> Result<NameId, SourceError> {
        let rel = rel.as_ref();
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(SourceError::Outside(rel.to_path_buf()));
        }
        self.paths.push(self.root.join(rel));
        Ok(NameId(self.paths.len() as u32 - 1))
    }
    /// Point an existing id at another path (same rules as [`Names::add`]), so a source that
    /// names a new file for every operation (a message per delivery) keeps its table small.
    pub fn reuse(&mut self, id: NameId, rel: impl AsRef<Path>) -> Result<(), SourceError> {
        let rel = rel.as_ref();
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(SourceError::Outside(rel.to_path_buf()));
        }
        let path = self.root.join(rel);
        match self.paths.get_mut(id.0 as usize) {
            Some(p) => {
                *p = path;
                Ok(())
            }
            None => Err(SourceError::Said(format!("no name {}", id.0))),
        }
    }
    /// The full path of a name. Unknown ids (a source's bug) resolve to the root's
    /// `.iolab-no-such-name`, which no call can succeed on.
    pub fn path(&self, id: NameId) -> &Path {
        self.paths.get(id.0 as usize).map(PathBuf::as_path).unwrap_or(Path::new("/.iolab-no-such-name"))
    }
    /// A name relative to the root (what the namespace layer resolves beneath it).
    pub fn rel(&self, id: NameId) -> &Path {
        match self.paths.get(id.0 as usize) {
            Some(p) => p.strip_prefix(&self.root).unwrap_or(Path::new(".iolab-no-such-name")),
            None => Path::new(".iolab-no-such-name"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_root() {
        let mut n = Names::new("/data/job");
        let a = n.add("d1/f.0").unwrap();
        assert_eq!(n.path(a), Path::new("/data/job/d1/f.0"));
        for bad in ["/etc/passwd", "../x", "a/../../b"] {
            assert!(n.add(bad).is_err(), "{bad}");
        }
        assert_eq!(n.path(NameId(99)), Path::new("/.iolab-no-such-name"));
        assert_eq!(n.rel(a), Path::new("d1/f.0"));
    }
}
