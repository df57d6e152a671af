//! Where an agent may do I/O: only under its `--allow` directories. A target is resolved
//! through its nearest existing ancestor (canonicalised, so a symlink cannot lead out), and a
//! path with `..` is refused outright. That check says where a plan's paths are; the run then
//! reaches them through the allowed directories opened once when the agent started
//! ([`Allow::opened`], iolab_workload's `place::Allowed`), beneath them with no link followed,
//! so a link swapped in after the check leads nowhere.

use iolab_spec::Plan;
use iolab_workload::place::Allowed;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Why a target was refused.
#[derive(Debug, thiserror::Error)]
pub enum AllowError {
    #[error("target {0}: `..` is not allowed in an agent's targets")]
    DotDot(PathBuf),
    #[error("target {path} resolves to {resolved}, outside the agent's --allow directories ({allowed})")]
    Outside { path: PathBuf, resolved: PathBuf, allowed: String },
    #[error("target {0} is relative: an agent takes only absolute paths (give the node dir=PATH, which relative targets are joined to)")]
    Relative(PathBuf),
    #[error("target {0}: the agent was started without --allow, so it does no I/O anywhere")]
    NoneAllowed(PathBuf),
    #[error("--allow {0}: {1}")]
    BadAllow(PathBuf, std::io::Error),
}

/// The directories an agent may work under, canonicalised, and opened once.
#[derive(Debug, Clone)]
pub struct Allow {
    dirs: Vec<PathBuf>,
    opened: Arc<Allowed>,
}

impl Default for Allow {
    fn default() -> Allow {
        Allow { dirs: Vec::new(), opened: Arc::new(Allowed::default()) }
    }
}

impl Allow {
    pub fn new(dirs: &[PathBuf]) -> Result<Allow, AllowError> {
        let dirs: Vec<PathBuf> = dirs
            .iter()
            .map(|d| d.canonicalize().map_err(|e| AllowError::BadAllow(d.clone(), e)))
            .collect::<Result<_, _>>()?;
        let opened = Allowed::open(&dirs).map_err(|e| AllowError::BadAllow(PathBuf::new(), e))?;
        Ok(Allow { dirs, opened: Arc::new(opened) })
    }

    /// The allowed directories as opened when the agent started: what its runs reach their
    /// paths through.
    pub fn opened(&self) -> Arc<Allowed> {
        self.opened.clone()
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The path as it would really be reached, checked against the allowed directories.
    pub fn check(&self, path: &Path) -> Result<PathBuf, AllowError> {
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(AllowError::DotDot(path.to_path_buf()));
        }
        if !path.is_absolute() {
            return Err(AllowError::Relative(path.to_path_buf()));
        }
        if self.dirs.is_empty() {
            return Err(AllowError::NoneAllowed(path.to_path_buf()));
        }
        let resolved = resolve(path);
        if self.dirs.iter().any(|d| resolved.starts_with(d)) {
            Ok(resolved)
        } else {
            let allowed = self.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
            Err(AllowError::Outside { path: path.to_path_buf(), resolved, allowed })
        }
    }

    /// Refuse any target of `plan` outside the allowed directories, before anything is written,
    /// whatever the engine: a personality on the null engine still makes its directories and
    /// files.
    pub fn check_plan(&self, plan: &Plan) -> Result<(), String> {
        for job in plan.phases.iter().flat_map(|p| &p.jobs) {
            self.check(&job.target).map_err(|e| format!("job `{}`: {e}", job.name))?;
            for p in iolab_workload::layout::job_paths(job) {
                self.check(&p).map_err(|e| format!("job `{}`: {e}", job.name))?;
            }
            // Validation's journal (its key maps and records) is written there too.
            if let Some(dir) = job.verify.as_ref().and_then(|v| v.journal.as_ref()) {
                self.check(dir).map_err(|e| format!("job `{}`: its --journal: {e}", job.name))?;
            }
        }
        Ok(())
    }

    /// The plan with every job's target as the agent resolved it (through the nearest existing
    /// ancestor, canonical): what the run then reaches beneath the opened directories.
    pub fn resolve_plan(&self, plan: &mut Plan) -> Result<(), String> {
        for job in plan.phases.iter_mut().flat_map(|p| &mut p.jobs) {
            job.target = self.check(&job.target).map_err(|e| format!("job `{}`: {e}", job.name))?;
        }
        Ok(())
    }

    /// Whether `path` (absolute) resolves under one of the allowed directories.
    pub fn contains(&self, path: &Path) -> bool {
        let resolved = resolve(path);
        self.dirs.iter().any(|d| resolved.starts_with(d))
    }
}

/// Canonicalise the nearest existing ancestor and put the rest back on.
fn resolve(path: &Path) -> PathBuf {
    let abs =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = cur.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return abs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_outside_dotdot_and_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let allowed = d.path().join("ok");
        let other = d.path().join("other");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&other, allowed.join("link")).unwrap();
        let a = Allow::new(std::slice::from_ref(&allowed)).unwrap();
        assert!(a.check(&allowed.join("f")).is_ok());
        assert!(a.check(&allowed.join("new/dir/f")).is_ok());
        assert!(matches!(a.check(&allowed.join("../other/f")), Err(AllowError::DotDot(_))));
        assert!(matches!(a.check(&allowed.join("link/f")), Err(AllowError::Outside { .. })));
        assert!(matches!(a.check(&other.join("f")), Err(AllowError::Outside { .. })));
        assert!(matches!(Allow::default().check(&allowed), Err(AllowError::NoneAllowed(_))));
        assert!(matches!(a.check(Path::new("f")), Err(AllowError::Relative(_))));
        assert!(a.contains(&allowed.join("x")) && !a.contains(&other) && !a.contains(&allowed.join("link/x")));
    }
}
