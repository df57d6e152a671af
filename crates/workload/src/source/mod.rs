//! Operation sources: what a worker thread does, one operation at a time. The executor's
//! worker loop asks its source for the next operation, issues it through the engine (data
//! calls) or the namespace layer ([`crate::ns`]: open, create, rename, ...), times it into the
//! operation's class, and hands the outcome back. Pacing (`WaitUntil`), barriers (`Drain`) and
//! the end of the work (`Done`) are the source's to say; the deadline, Ctrl-C and errors are the
//! executor's. Today's block workload is [`block::BlockSource`]; personalities, trace replay
//! and validation are each a source in a file of their own.

pub mod append_log;
pub mod block;
pub mod bonnie;
pub mod maildir;
pub mod postmark;
pub mod redolog;
pub mod replay;
pub mod varmail;
pub mod verify;
pub mod verify_files;

use crate::clock::Stamp;
use iolab_engine::beneath::Beneath;
use iolab_engine::OpKind;
use iolab_model::OpClass;
use iolab_spec::{Job, Workload};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// What the threads of one job share, made once per job before its threads start: the pool
/// a personality's threads work on together.
#[derive(Clone, Default)]
pub enum JobShared {
    #[default]
    Nothing,
    /// maildir: the mailboxes every deliverer and reader uses.
    Maildir(Arc<maildir::Pool>),
    /// varmail: filebench's file set.
    Varmail(Arc<varmail::FileSet>),
    /// bonnie: the seekers' tickets.
    Bonnie(Arc<bonnie::Tickets>),
}

impl JobShared {
    pub fn for_job(job: &Job) -> Result<JobShared, String> {
        Ok(match &job.workload {
            Workload::Maildir(m) => JobShared::Maildir(Arc::new(maildir::Pool::new(&job.name, m))),
            Workload::Varmail(v) => JobShared::Varmail(Arc::new(varmail::FileSet::new(&job.name, v, job.seed)?)),
            Workload::Bonnie(b) => JobShared::Bonnie(Arc::new(bonnie::Tickets::new(b, job.seed))),
            _ => JobShared::Nothing,
        })
    }
}

/// A name in the worker's name table (see [`Names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(pub u32);

/// How a namespace `Open` opens its file: the engine's open options, exactly the flags that
/// reach open(2).
pub use iolab_engine::OpenOptions as OpenFlags;

/// One operation a source asks for. Files are numbered by the source: `Open` places the file
/// it opens at index `file` of the worker's file table, data calls and `Close` name that index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A data call the engine makes: pread/pwrite, read/write at the position, preadv/pwritev,
    /// lseek, fsync, fdatasync, ftruncate, fallocate.
    Data {
        kind: OpKind,
        file: u32,
        offset: u64,
        len: u32,
    },
    Open {
        name: NameId,
        file: u32,
        flags: OpenFlags,
    },
    Close {
        file: u32,
    },
    Unlink {
        name: NameId,
    },
    Rename {
        from: NameId,
        to: NameId,
    },
    Mkdir {
        name: NameId,
    },
    Rmdir {
        name: NameId,
    },
    /// fsync of a directory (after creating or renaming in it).
    FsyncDir {
        name: NameId,
    },
    Stat {
        name: NameId,
    },
    /// List a directory: its entries' names reach the source's `completed` (see there).
    Readdir {
        name: NameId,
    },
    /// syncfs(2) of the filesystem that holds `name`: its dirty data and metadata written out
    /// (bonnie++'s sync() after its create and delete tests, for the target's filesystem only).
    SyncFs {
        name: NameId,
    },
}

impl Call {
    /// The class its statistics are kept under.
    #[inline]
    pub fn class(&self) -> OpClass {
        match self {
            Call::Data { kind, .. } => match kind {
                OpKind::Read | OpKind::ReadCur | OpKind::Readv(_) | OpKind::ReadvCur(_) => OpClass::Read,
                OpKind::Write | OpKind::WriteCur | OpKind::Writev(_) | OpKind::WritevCur(_) => OpClass::Write,
                OpKind::Fsync | OpKind::Fdatasync | OpKind::SyncRange { .. } => OpClass::Sync,
                OpKind::Seek(_) => OpClass::Seek,
                OpKind::Ftruncate => OpClass::Truncate,
                OpKind::Fallocate { .. } => OpClass::Allocate,
            },
            Call::Open { flags, .. } if flags.create => OpClass::Create,
            Call::Open { .. } => OpClass::Open,
            Call::Close { .. } => OpClass::Close,
            Call::Unlink { .. } => OpClass::Unlink,
            Call::Rename { .. } => OpClass::Rename,
            Call::Mkdir { .. } => OpClass::Mkdir,
            Call::Rmdir { .. } => OpClass::Rmdir,
            Call::FsyncDir { .. } => OpClass::DirSync,
            Call::Stat { .. } => OpClass::Stat,
            Call::Readdir { .. } => OpClass::Readdir,
            Call::SyncFs { .. } => OpClass::Sync,
        }
    }
}

/// An operation to issue now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issue {
    pub call: Call,
    /// When it was due (open-loop pacing): latency is measured from here instead of from
    /// the moment it is issued, so a late start is counted against the storage.
    pub due: Option<Stamp>,
    /// Whether the call counts in its class's statistics. A namespace call that is not part
    /// of what the original measures (removing what is left at the end, the directories a
    /// personality made for itself) is made but not counted. Data calls are always counted.
    pub timed: bool,
}

impl Issue {
    pub fn now(call: Call) -> Issue {
        Issue { call, due: None, timed: true }
    }
    /// A namespace call made but not counted (cleanup the original does outside its timing).
    pub fn untimed(call: Call) -> Issue {
        Issue { call, due: None, timed: false }
    }
}

/// What a source wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Issue(Issue),
    /// Nothing is due before this instant; the worker reaps or sleeps meanwhile.
    WaitUntil(Stamp),
    /// Wait until everything in flight has completed, then ask again (a barrier, such as a
    /// flush after N writes).
    Drain,
    /// Wait until everything in flight has completed and every other thread of the job has
    /// reached a barrier too (or ended), then ask again: the stages of a personality that all
    /// its threads pass together (see [`crate::rendezvous`]). The wait is not an operation.
    Barrier,
    /// The source has no more work.
    Done,
}

/// What the worker tells its source when asking for the next operation.
pub struct Ctx<'a> {
    /// The time now (the stamp an operation issued now is timed from).
    pub now: Stamp,
    /// Operations issued and not yet completed.
    pub inflight: usize,
    /// The deadline has passed: finish up (a last flush, say) and return `Done`.
    pub ending: bool,
    /// The worker's name table, to name paths for namespace calls.
    pub names: &'a mut Names,
}

/// A file a source has opened before the measured window, placed at `index`.
pub struct SetupFile {
    pub index: u32,
    pub file: std::fs::File,
    /// Bytes the engine may map (mmap).
    pub len: u64,
    /// The path, for error messages.
    pub path: String,
}

/// A change to a worker's file table that a source asks for between operations (untimed).
pub enum FileChange {
    /// Place this file at its index (an opening another thread made, shared with this one).
    Place(SetupFile),
    /// Take the file at this index out of the table and close it.
    Drop(u32),
}

/// A generator of operations for one worker thread.
pub trait Source: Send {
    /// Bytes the largest data operation moves: the size of each engine buffer.
    fn buffer_len(&self) -> usize;
    /// Open the files the work starts with. Runs before the start barrier, untimed.
    fn setup(&mut self) -> Result<Vec<SetupFile>, String> {
        Ok(Vec::new())
    }
    /// Fill a buffer slot once before the run (data that writes will carry).
    fn prime(&mut self, _slot: u32, _buf: &mut [u8]) {}
    /// The worker's start instant (after the barrier, before the ramp).
    fn start(&mut self, _at: Stamp) {}
    /// The next operation.
    fn next(&mut self, ctx: &mut Ctx) -> Next;
    /// Just before a data call that writes is queued: stamp its buffer.
    fn fill(&mut self, _call: &Call, _buf: &mut [u8]) {}
    /// Whether `completed` looks at what reads brought in (a validator does; fetching the
    /// buffer costs a call per read, so sources that don't look say no).
    fn checks_reads(&self) -> bool {
        false
    }
    /// After an operation completed: `buf` is the slot's buffer for data calls (what a read
    /// brought in), for `Readdir` the names it listed (each followed by a NUL byte, `.` and
    /// `..` left out), empty for other namespace calls. An `Err` ends the job with that message.
    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), String>;
    /// Whether the source does work of its own that it times (a validator's journal writes):
    /// the worker then hands it [`Source::take_timings`] after each call and takes a data call's
    /// issue stamp after `next` and `fill`, so that work is not counted in the call's latency.
    fn times_itself(&self) -> bool {
        false
    }
    /// The source's own timed work since the last call, as (class, bytes, ns), into `out`.
    fn take_timings(&mut self, _out: &mut dyn FnMut(OpClass, u64, u64)) {}
    /// A file this source's `Open` just opened, before the engine takes it (a source sharing
    /// the opening with other threads keeps a duplicate of it).
    fn opened(&mut self, _file: u32, _f: &std::fs::File) {}
    /// Changes to the file table, asked for until `None` after each `next` with nothing in
    /// flight, before the operation it returned is issued.
    fn file_change(&mut self) -> Option<FileChange> {
        None
    }
    /// A personality's own figures at the end (PostMark's transactions, files created, ...),
    /// under the original's names: counts are summed over threads, `*_s` seconds take the
    /// longest thread's; they go to `phases[].workload` in the results.
    fn figures(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// The worker's names: paths under the job's root directory. A source can name nothing outside
/// it: absolute paths and `..` are refused here, and the namespace layer ([`crate::ns`])
/// resolves every name beneath the root ([`Beneath`]), so no symbolic link in the directory
/// leads a call out of it either.
#[derive(Debug, Default)]
pub struct Names {
    root: PathBuf,
    paths: Vec<PathBuf>,
    dir: std::cell::OnceCell<Result<Beneath, String>>,
    kept: std::cell::RefCell<crate::ns::DirCache>,
}

impl Names {
    pub fn new(root: impl Into<PathBuf>) -> Names {
        Names { root: root.into(), ..Default::default() }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The root, opened once, to resolve names beneath.
    pub fn beneath(&self) -> io::Result<&Beneath> {
        self.dir
            .get_or_init(|| Beneath::open(&self.root).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.clone()))
    }
    /// The subdirectory the namespace layer keeps open between calls.
    pub(crate) fn dir_cache(&self) -> &std::cell::RefCell<crate::ns::DirCache> {
        &self.kept
    }
    /// Register `rel` (relative to the root) and return its id.
    pub fn add(&mut self, rel: impl AsRef<Path>) -> Result<NameId, String> {
        let rel = rel.as_ref();
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(format!(
                "`{}` is not a path inside the job's directory (absolute paths and `..` are refused)",
                rel.display()
            ));
        }
        self.paths.push(self.root.join(rel));
        Ok(NameId(self.paths.len() as u32 - 1))
    }
    /// Point an existing id at another path (same rules as [`Names::add`]), so a source that
    /// names a new file for every operation (a message per delivery) keeps its table small.
    pub fn reuse(&mut self, id: NameId, rel: impl AsRef<Path>) -> Result<(), String> {
        let rel = rel.as_ref();
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(format!(
                "`{}` is not a path inside the job's directory (absolute paths and `..` are refused)",
                rel.display()
            ));
        }
        let path = self.root.join(rel);
        match self.paths.get_mut(id.0 as usize) {
            Some(p) => {
                *p = path;
                Ok(())
            }
            None => Err(format!("no name {}", id.0)),
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

/// A failed or short operation in words, as job errors say it: what, where, why.
pub fn describe_failure(call: &Call, path: &str, len: u32, offset: u64, result: &io::Result<usize>) -> String {
    let what = match call.class() {
        OpClass::Sync => "flush",
        c => c.as_str(),
    };
    let why = match result {
        Ok(n) => format!("short {what}: {n} of {len} bytes"),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => format!("{e}: the filesystem is full"),
        Err(e) => e.to_string(),
    };
    let at = if matches!(call, Call::Data { kind, .. } if kind.reads() || kind.writes()) {
        format!(" of {len} bytes at offset {offset}")
    } else {
        String::new()
    };
    format!("{what}{at} in {path}: {why}")
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

    #[test]
    fn classes_of_calls() {
        let d = |kind| Call::Data { kind, file: 0, offset: 0, len: 0 };
        assert_eq!(d(OpKind::ReadCur).class(), OpClass::Read);
        assert_eq!(d(OpKind::Writev(2)).class(), OpClass::Write);
        assert_eq!(d(OpKind::Fdatasync).class(), OpClass::Sync);
        let create = OpenFlags { write: true, create: true, ..Default::default() };
        assert_eq!(Call::Open { name: NameId(0), file: 1, flags: create }.class(), OpClass::Create);
        assert_eq!(Call::FsyncDir { name: NameId(0) }.class(), OpClass::DirSync);
    }
}
