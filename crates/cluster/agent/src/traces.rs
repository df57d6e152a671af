//! Traces an agent was sent for replay jobs. A replay job names its trace by a path, a length
//! and a CRC-32; on an agent that path means nothing (it is the coordinator's), and reading
//! whatever it names would let a coordinator read any file there (a device never ends; the
//! error would tell a file's size and CRC). So the coordinator ships the trace's bytes, the
//! agent checks their length and CRC and keeps them in its own cache directory (never under
//! its `--allow` directories), and a replay job runs from that copy or not at all. Each agent
//! process keeps its copies in a directory of its own under the cache, removed when it ends.

use crate::allow::Allow;
use iolab_spec::{Plan, Workload};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The largest trace an agent takes (a trace of 4 GiB is far past any strace recording's).
pub const MAX_TRACE: u64 = 4 << 30;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("the agent's trace cache {0} lies under its --allow directories; give --state-dir elsewhere")]
    UnderAllow(PathBuf),
    #[error("the agent's trace cache {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("a trace of {0} bytes is more than the {MAX_TRACE} an agent takes")]
    TooBig(u64),
    #[error(
        "the trace arrived as {got} bytes with CRC-32 {got_crc:08x}; it was announced as {want} bytes, {want_crc:08x}"
    )]
    Damaged { got: u64, got_crc: u32, want: u64, want_crc: u32 },
    #[error("job `{job}`: its trace ({bytes} bytes, CRC-32 {crc:08x}) was not sent to this agent; a replay's trace travels with it from the coordinator (`iolab replay --node`)")]
    NotShipped { job: String, bytes: u64, crc: u32 },
}

/// The traces this agent holds, by (length, CRC-32).
#[derive(Debug)]
pub struct TraceCache {
    dir: PathBuf,
    held: Mutex<HashMap<(u64, u32), PathBuf>>,
}

impl TraceCache {
    /// A cache in a directory of this process's own under `dir` (made, mode 0700), which must
    /// lie outside `allow`.
    pub fn new(dir: &Path, allow: &Allow) -> Result<TraceCache, TraceError> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = dir.join(std::process::id().to_string());
        let io = |source| TraceError::Io { path: dir.clone(), source };
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(io)?;
        let dir = dir.canonicalize().map_err(io)?;
        if allow.contains(&dir) {
            return Err(TraceError::UnderAllow(dir));
        }
        Ok(TraceCache { dir, held: Mutex::new(HashMap::new()) })
    }

    /// The directory this process's copies are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Begin receiving a trace announced as `want` bytes with CRC-32 `want_crc`.
    pub fn begin(&self, want: u64, want_crc: u32) -> Result<Upload<'_>, TraceError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if want > MAX_TRACE {
            return Err(TraceError::TooBig(want));
        }
        let name = format!("{want_crc:08x}-{want}.trace");
        let part = self.dir.join(format!("{name}.{}.part", NEXT.fetch_add(1, Ordering::Relaxed)));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&part)
            .map_err(|source| TraceError::Io { path: part.clone(), source })?;
        Ok(Upload {
            cache: self,
            path: self.dir.join(name),
            part,
            file,
            crc: flate2::Crc::new(),
            got: 0,
            want,
            want_crc,
        })
    }

    /// Point every replay job of the plan at this cache's copy of its trace; refuse a job
    /// whose trace was not sent.
    pub fn rewrite(&self, plan: &mut Plan) -> Result<(), TraceError> {
        let held = self.held.lock().map(|h| h.clone()).unwrap_or_default();
        for job in plan.phases.iter_mut().flat_map(|p| p.jobs.iter_mut()) {
            let name = job.name.clone();
            if let Workload::Replay(r) = &mut job.workload {
                match held.get(&(r.trace_bytes, r.trace_crc32)) {
                    Some(p) => r.trace = p.clone(),
                    None => return Err(TraceError::NotShipped { job: name, bytes: r.trace_bytes, crc: r.trace_crc32 }),
                }
            }
        }
        Ok(())
    }
}

impl Drop for TraceCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A trace being received: its bytes go to a file of the cache, and count once checked.
pub struct Upload<'a> {
    cache: &'a TraceCache,
    path: PathBuf,
    part: PathBuf,
    file: std::fs::File,
    crc: flate2::Crc,
    got: u64,
    want: u64,
    want_crc: u32,
}

impl Upload<'_> {
    fn io(&self, source: std::io::Error) -> TraceError {
        TraceError::Io { path: self.part.clone(), source }
    }
    /// The next chunk (more than announced is an error at once).
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), TraceError> {
        self.got += chunk.len() as u64;
        if self.got > self.want {
            return Err(self.damaged());
        }
        self.crc.update(chunk);
        self.file.write_all(chunk).map_err(|e| self.io(e))
    }
    fn damaged(&self) -> TraceError {
        TraceError::Damaged { got: self.got, got_crc: self.crc.sum(), want: self.want, want_crc: self.want_crc }
    }
    /// Check the whole and keep it; returns where it is.
    pub fn finish(self) -> Result<PathBuf, TraceError> {
        if self.got != self.want || self.crc.sum() != self.want_crc {
            return Err(self.damaged());
        }
        self.file.sync_all().map_err(|e| self.io(e))?;
        std::fs::rename(&self.part, &self.path).map_err(|e| self.io(e))?;
        if let Ok(mut h) = self.cache.held.lock() {
            h.insert((self.want, self.want_crc), self.path.clone());
        }
        Ok(self.path.clone())
    }
}

impl Drop for Upload<'_> {
    fn drop(&mut self) {
        // A finished upload was renamed away; an unfinished one leaves nothing behind.
        let _ = std::fs::remove_file(&self.part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crc(b: &[u8]) -> u32 {
        let mut c = flate2::Crc::new();
        c.update(b);
        c.sum()
    }

    #[test]
    fn a_trace_is_kept_only_whole_and_outside_allow() {
        let d = tempfile::tempdir().unwrap();
        let allowed = d.path().join("work");
        std::fs::create_dir_all(&allowed).unwrap();
        let allow = Allow::new(std::slice::from_ref(&allowed)).unwrap();
        assert!(matches!(TraceCache::new(&allowed.join("cache"), &allow), Err(TraceError::UnderAllow(_))));
        let cache = TraceCache::new(&d.path().join("cache"), &allow).unwrap();
        let bytes = b"a trace's bytes".to_vec();
        // Damaged: another CRC, too short, too long. Nothing is kept.
        for (data, want) in [(&b"a trace's bytez"[..], bytes.len()), (&bytes[..4], bytes.len()), (&bytes[..], 4)] {
            let mut u = cache.begin(want as u64, crc(&bytes)).unwrap();
            let r = u.write(data).and_then(|_| u.finish());
            assert!(matches!(r, Err(TraceError::Damaged { .. })), "{r:?}");
        }
        assert!(matches!(cache.begin(MAX_TRACE + 1, 0), Err(TraceError::TooBig(_))));
        let mut u = cache.begin(bytes.len() as u64, crc(&bytes)).unwrap();
        u.write(&bytes[..5]).unwrap();
        u.write(&bytes[5..]).unwrap();
        let kept = u.finish().unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), bytes);
        assert_eq!(std::fs::read_dir(kept.parent().unwrap()).unwrap().count(), 1, "no part files left");
        // A plan's replay job runs from the copy; one whose trace was not sent is refused.
        let job = |len: u64, crc32: u32| iolab_spec::Job {
            workload: Workload::Replay(iolab_spec::ReplayJob {
                trace: "/dev/zero".into(),
                trace_bytes: len,
                trace_crc32: crc32,
                timing: iolab_spec::Timing::Afap,
                strip: "/data".into(),
                prepare: false,
                limits: Default::default(),
            }),
            ..iolab_spec::JobPatch { target: Some(allowed.clone()), ..Default::default() }.resolve("r").unwrap()
        };
        let mut plan = Plan {
            phases: vec![iolab_spec::Phase { name: "p".into(), jobs: vec![job(bytes.len() as u64, crc(&bytes))] }],
        };
        cache.rewrite(&mut plan).unwrap();
        let Workload::Replay(r) = &plan.phases[0].jobs[0].workload else { unreachable!() };
        assert_eq!(r.trace, kept);
        let mut other = Plan { phases: vec![iolab_spec::Phase { name: "p".into(), jobs: vec![job(7, 7)] }] };
        assert!(matches!(cache.rewrite(&mut other), Err(TraceError::NotShipped { .. })));
        let dir = kept.parent().unwrap().to_path_buf();
        drop(cache);
        assert!(!dir.exists(), "the agent's copies go with it");
    }
}
