//! Where a run's paths lead, resolved once. A local run's paths are the user's own: each job's
//! directory is opened as named (its links followed, as the user meant them), once, and
//! everything in it is reached through that descriptor from then on. An agent's paths are its
//! coordinator's words and must stay under its `--allow` directories: those are opened once when
//! the agent starts ([`Allowed`]), and every directory a run uses is resolved beneath one of
//! them with no symbolic link followed at all (openat2 `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`,
//! or the `O_NOFOLLOW` walk), so a link or a directory swapped in while the run goes on leads
//! nowhere: the run is refused, or goes on in the directories it opened.

use crate::layout::Spot;
use iolab_engine::beneath::Beneath;
use rustix::fs::{Mode, OFlags};
use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// How a run's directories are found.
#[derive(Debug, Clone, Default)]
pub enum Roots {
    /// As named (a local run).
    #[default]
    Named,
    /// Beneath an agent's allowed directories, no link followed.
    Allowed(Arc<Allowed>),
}

/// An agent's `--allow` directories, each opened once (as named: the operator's own paths),
/// everything beneath them resolved strictly.
#[derive(Debug, Default)]
pub struct Allowed {
    roots: Vec<Beneath>,
}

fn not_allowed(path: &Path, roots: &[Beneath]) -> io::Error {
    let allowed: Vec<String> = roots.iter().map(|r| r.root().display().to_string()).collect();
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} is not under the agent's --allow directories ({})", path.display(), allowed.join(", ")),
    )
}

impl Allowed {
    /// Open each of `dirs` (absolute, canonical: what `--allow` resolved to).
    pub fn open(dirs: &[PathBuf]) -> io::Result<Allowed> {
        let roots = dirs
            .iter()
            .map(|d| {
                Beneath::open_strict(d).map_err(|e| io::Error::new(e.kind(), format!("--allow {}: {e}", d.display())))
            })
            .collect::<io::Result<_>>()?;
        Ok(Allowed { roots })
    }

    /// The allowed directory that holds `path` (lexically: `path` as the agent resolved it),
    /// and `path` below it.
    fn root_of<'a>(&self, path: &'a Path) -> io::Result<(&Beneath, &'a Path)> {
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(not_allowed(path, &self.roots));
        }
        self.roots
            .iter()
            .filter_map(|r| path.strip_prefix(r.root()).ok().map(|rel| (r, rel)))
            .max_by_key(|(r, _)| r.root().as_os_str().len())
            .ok_or_else(|| not_allowed(path, &self.roots))
    }

    /// The directory `dir`, opened beneath the allowed directory that holds it.
    pub fn dir(&self, dir: &Path) -> io::Result<Beneath> {
        let (root, rel) = self.root_of(dir)?;
        if rel.as_os_str().is_empty() {
            return root.try_clone();
        }
        root.subdir(rel)
    }

    /// Make `dir` and the directories above it that are missing, each with mkdirat in the one
    /// above, opened beneath the allowed directory that holds it, no link followed.
    pub fn make_dirs(&self, dir: &Path) -> io::Result<()> {
        let (root, rel) = self.root_of(dir)?;
        let mut at = root.try_clone()?;
        for c in rel.components() {
            let Component::Normal(name) = c else { continue };
            let name = Path::new(name);
            match at.mkdir(name) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(io::Error::new(e.kind(), format!("making {}: {e}", at.root().join(name).display())))
                }
            }
            at = at.subdir(name)?;
        }
        Ok(())
    }

    pub fn dirs(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.root().to_path_buf()).collect()
    }
}

impl Roots {
    /// The directory `dir`, opened once: as named (a local run; `""` is the current
    /// directory), or beneath the allowed directory that holds it.
    pub fn dir(&self, dir: &Path) -> io::Result<Beneath> {
        match self {
            Roots::Named => {
                let d = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
                Beneath::open(d)
            }
            Roots::Allowed(a) => a.dir(dir),
        }
    }

    /// Whether paths are resolved strictly (an agent's run).
    pub fn strict(&self) -> bool {
        matches!(self, Roots::Allowed(_))
    }
}

/// A run's directories and targets as opened: each directory and each target path is opened
/// once in a run, and every phase and job that names it again gets what was opened then.
#[derive(Debug, Default)]
pub struct Place {
    pub roots: Roots,
    dirs: HashMap<PathBuf, Arc<Beneath>>,
    spots: HashMap<PathBuf, Arc<Spot>>,
    /// The plan is being checked before anything runs: a file an earlier phase creates does
    /// not exist yet.
    ahead: bool,
}

impl Place {
    pub fn new(roots: Roots) -> Place {
        Place { roots, dirs: HashMap::new(), spots: HashMap::new(), ahead: false }
    }

    /// Whether the plan is being checked ahead of the run (see [`Place::set_ahead`]).
    pub fn ahead(&self) -> bool {
        self.ahead
    }

    /// Say that what follows checks the plan before anything runs (or, `false`, a phase as it
    /// starts).
    pub fn set_ahead(&mut self, ahead: bool) {
        self.ahead = ahead;
    }

    /// The directory `dir`, opened the first time it is asked for.
    pub fn dir(&mut self, dir: &Path) -> io::Result<Arc<Beneath>> {
        if let Some(d) = self.dirs.get(dir) {
            return Ok(d.clone());
        }
        let d = Arc::new(self.roots.dir(dir)?);
        self.dirs.insert(dir.to_path_buf(), d.clone());
        Ok(d)
    }

    /// Note a directory made by the run (opened as it was made).
    pub fn made_dir(&mut self, dir: &Path, b: Beneath) -> Arc<Beneath> {
        let d = Arc::new(b);
        self.dirs.insert(dir.to_path_buf(), d.clone());
        d
    }

    /// The spot of `path`, if it was made already.
    pub fn spot(&self, path: &Path) -> Option<Arc<Spot>> {
        self.spots.get(path).cloned()
    }

    /// Keep the spot of `path`.
    pub fn keep_spot(&mut self, path: &Path, spot: &Arc<Spot>) {
        self.spots.entry(path.to_path_buf()).or_insert_with(|| spot.clone());
    }

    pub fn strict(&self) -> bool {
        self.roots.strict()
    }
}

/// The flags an entry of a directory is opened with to look at it (no I/O: O_PATH), following
/// a final link only in a local run (the user named it), never in a strict one.
pub(crate) fn look_flags(b: &Beneath) -> OFlags {
    if b.is_strict() {
        OFlags::PATH | OFlags::NOFOLLOW
    } else {
        OFlags::PATH
    }
}

/// Open the entry `name` of `b` to look at it (see [`look_flags`]).
pub(crate) fn look(b: &Beneath, name: &Path) -> io::Result<rustix::fd::OwnedFd> {
    b.resolve(name, look_flags(b), Mode::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_directories_are_reached_beneath_its_allowed_ones_and_through_no_link() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("ok")).unwrap();
        let allowed = d.path().join("ok").canonicalize().unwrap();
        let outside = d.path().join("out");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("link")).unwrap();
        std::fs::create_dir(allowed.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", allowed.join("inner")).unwrap();
        let a = Allowed::open(std::slice::from_ref(&allowed)).unwrap();
        assert!(a.dir(&allowed).is_ok());
        assert!(a.dir(&allowed.join("sub")).is_ok());
        for bad in [allowed.join("link"), allowed.join("inner"), outside.clone(), allowed.join("sub/../../out")] {
            assert!(a.dir(&bad).is_err(), "{}", bad.display());
        }
        a.make_dirs(&allowed.join("new/deeper")).unwrap();
        assert!(allowed.join("new/deeper").is_dir());
        assert!(a.make_dirs(&allowed.join("link/made")).is_err());
        assert!(!outside.join("made").exists(), "nothing made through a link");
        assert!(a.make_dirs(&outside.join("x")).is_err());
    }
}
