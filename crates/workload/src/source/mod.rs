//! Operation sources: what a worker thread does, one operation at a time. The executor's
//! worker loop asks its source for the next operation, issues it through the engine (data
//! calls) or the namespace layer ([`crate::ns`]: open, create, rename, ...), times it into the
//! operation's class, and hands the outcome back. Pacing (`WaitUntil`), barriers (`Drain`) and
//! the end of the work (`Done`) are the source's to say; the deadline, Ctrl-C and errors are the
//! executor's. Today's block workload is [`block::BlockSource`]; personalities, trace replay
//! and validation are each a source in a file of their own.

/// The [`Source`] methods a wrapper (think time, a flow, going on after errors) passes to its
/// `inner` source unchanged, by name: a wrapper writes only the methods it changes, and a method
/// added to the trait is forwarded by adding it here once. `plain` names those no wrapper
/// changes.
macro_rules! forward_to_inner {
    (@ plain) => {
        forward_to_inner!(
            buffer_len,
            setup,
            prime,
            fill,
            checks_reads,
            times_itself,
            take_timings,
            opened,
            file_change,
            figures,
            hole_reads,
            timed_span
        );
    };
    (@ buffer_len) => { fn buffer_len(&self) -> usize { self.inner.buffer_len() } };
    (@ setup) => {
        fn setup(&mut self) -> Result<Vec<$crate::source::SetupFile>, $crate::source::SourceError> {
            self.inner.setup()
        }
    };
    (@ prime) => { fn prime(&mut self, slot: u32, buf: &mut [u8]) { self.inner.prime(slot, buf) } };
    (@ start) => { fn start(&mut self, at: $crate::clock::Stamp) { self.inner.start(at) } };
    (@ next) => {
        fn next(&mut self, ctx: &mut $crate::source::Ctx) -> $crate::source::Next { self.inner.next(ctx) }
    };
    (@ fill) => {
        #[inline]
        fn fill(&mut self, call: &$crate::source::Call, buf: &mut [u8]) { self.inner.fill(call, buf) }
    };
    (@ completed) => {
        #[inline]
        fn completed(
            &mut self,
            call: &$crate::source::Call,
            buf: &[u8],
            result: &std::io::Result<usize>,
        ) -> Result<(), $crate::source::SourceError> {
            self.inner.completed(call, buf, result)
        }
    };
    (@ checks_reads) => { fn checks_reads(&self) -> bool { self.inner.checks_reads() } };
    (@ times_itself) => { fn times_itself(&self) -> bool { self.inner.times_itself() } };
    (@ take_timings) => {
        fn take_timings(&mut self, out: &mut dyn FnMut(iolab_model::OpClass, u64, u64)) { self.inner.take_timings(out) }
    };
    (@ opened) => { fn opened(&mut self, file: u32, f: &std::fs::File) { self.inner.opened(file, f) } };
    (@ file_change) => {
        fn file_change(&mut self) -> Option<$crate::source::FileChange> { self.inner.file_change() }
    };
    (@ figures) => { fn figures(&self) -> Vec<(&'static str, f64)> { self.inner.figures() } };
    (@ timed_span) => { fn timed_span(&self) -> bool { self.inner.timed_span() } };
    (@ hole_reads) => { fn hole_reads(&self) -> Option<(u64, u64)> { self.inner.hole_reads() } };
    (@ io_errors) => { fn io_errors(&self) -> Option<iolab_model::IoErrors> { self.inner.io_errors() } };
    ($($method:ident),+ $(,)?) => { $( forward_to_inner!(@ $method); )+ };
}

/// Expands the list of personality sources into their modules and the two dispatches from a
/// job to its personality: what its threads share, and a thread's source. A personality of the
/// spec's list missing here is a non-exhaustive match.
macro_rules! personality_sources {
    ($( $module:ident => $variant:ident ),+ $(,)?) => {
        $( pub mod $module; )+

        fn shared_of(job: &Job) -> Result<JobShared, SourceError> {
            match &job.workload {
                iolab_spec::Workload::Block(_) | iolab_spec::Workload::Replay(_) => Ok(JobShared(None)),
                $( iolab_spec::Workload::$variant(p) => {
                    Ok(JobShared(Some(Arc::new(PersonalitySource::shared(p, job)?))))
                } )+
            }
        }

        /// Run thread `thread`'s source of the job's personality through `run` (`root` the
        /// job's directory); a block or replay job's is an error (they have sources of their own).
        pub fn run_personality<R: Run>(
            job: &Job,
            thread: u32,
            root: (&Path, Option<&Arc<Beneath>>),
            shared: &JobShared,
            run: R,
        ) -> R::Out {
            match &job.workload {
                iolab_spec::Workload::Block(_) | iolab_spec::Workload::Replay(_) => {
                    run.run(Err::<NoSource, _>(SourceError::Said(format!("job `{}` runs no personality", job.name))))
                }
                $( iolab_spec::Workload::$variant(p) => source_of(p, job, thread, root, shared, run), )+
            }
        }
    };
}

mod backlog;
pub mod block;
mod cmdprio;
mod dedupe;
pub mod flow;
mod mix;
pub mod on_error;
mod pace;
pub mod replay;
pub mod think;
pub mod verify;
pub mod verify_files;

// The personalities' sources, one line each (module => the spec's `Workload` variant): each
// module implements [`PersonalitySource`] for its personality's spec type.
personality_sources! {
    postmark => Postmark,
    maildir => Maildir,
    redolog => Redolog,
    varmail => Varmail,
    bonnie => Bonnie,
    append_log => AppendLog,
    metadata => Metadata,
}

use crate::clock::Stamp;
pub use crate::error::{io_error, CallError, Cause, SourceError};
pub use crate::names::{NameId, Names};
use iolab_engine::beneath::Beneath;
use iolab_engine::OpKind;
use iolab_model::OpClass;
use iolab_spec::Job;
use std::any::Any;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// What the threads of one job share, made once per job before its threads start: the pool a
/// personality's threads work on together (its [`PersonalitySource::Shared`]), or nothing.
#[derive(Clone, Default)]
pub struct JobShared(Option<Arc<dyn Any + Send + Sync>>);

impl JobShared {
    /// What `job`'s threads share.
    pub fn for_job(job: &Job) -> Result<JobShared, SourceError> {
        shared_of(job)
    }
}

/// One worker of a personality's job: what its source is made from.
pub struct Worker<'a, S> {
    pub job: &'a Job,
    /// The thread's number in the job, from 0.
    pub thread: u32,
    /// The job's directory (the target), which the worker's names are under.
    pub root: &'a Path,
    /// The same directory, opened once (none in unit tests that give a path alone): what a
    /// source lays out its files beneath.
    pub dir: Option<&'a Arc<Beneath>>,
    /// What the job's threads share.
    pub shared: &'a Arc<S>,
}

impl<S> Worker<'_, S> {
    /// The job's directory, as a source that lays out files reaches it.
    pub fn job_dir(&self) -> JobDir {
        JobDir { path: self.root.to_path_buf(), dir: self.dir.cloned() }
    }
}

/// A job's directory as a source reaches it: opened once by the executor (beneath an agent's
/// `--allow`), or a path opened when first needed (unit tests of a source alone).
#[derive(Debug, Clone)]
pub struct JobDir {
    pub path: std::path::PathBuf,
    pub dir: Option<Arc<Beneath>>,
}

impl JobDir {
    /// The directory, to resolve a source's paths beneath.
    pub fn beneath(&self) -> Result<Arc<Beneath>, SourceError> {
        match &self.dir {
            Some(d) => Ok(d.clone()),
            None => Beneath::open(&self.path).map(Arc::new).map_err(|e| SourceError::Said(e.to_string())),
        }
    }
}

/// What runs a source: the executor's worker (it wraps the source in validation when the job
/// validates, sets it up and runs the measuring loop). Generic, so each source's loop is
/// compiled for it.
pub trait Run {
    type Out;
    fn run<S: Source>(self, source: Result<S, SourceError>) -> Self::Out;
}

/// A personality as the workload crate knows it: what its job's threads share and the source
/// each thread runs. Implemented for the personality's spec type (its options) in its module.
pub trait PersonalitySource: iolab_spec::Personality {
    /// What the job's threads share (a pool of mailboxes, a file set), made before they start;
    /// `()` for none.
    type Shared: Send + Sync + 'static;
    fn shared(&self, job: &Job) -> Result<Self::Shared, SourceError>;
    /// Hand thread `w.thread`'s source to `run`.
    fn source<R: Run>(&self, w: &Worker<'_, Self::Shared>, run: R) -> R::Out;
}

/// A personality's source for one thread, with its shared state out of `shared`.
fn source_of<P: PersonalitySource, R: Run>(
    p: &P,
    job: &Job,
    thread: u32,
    (root, dir): (&Path, Option<&Arc<Beneath>>),
    shared: &JobShared,
    run: R,
) -> R::Out {
    match shared.0.clone().map(|s| s.downcast::<P::Shared>()) {
        Some(Ok(mine)) => p.source(&Worker { job, thread, root, dir, shared: &mine }, run),
        _ => run.run(Err::<NoSource, _>(SourceError::Said(format!("no shared state for workload {}", P::NAME)))),
    }
}

/// The source type of a worker that has none (its error says why).
pub enum NoSource {}

impl Source for NoSource {
    fn buffer_len(&self) -> usize {
        match *self {}
    }
    fn next(&mut self, _ctx: &mut Ctx) -> Next {
        match *self {}
    }
    fn completed(&mut self, _: &Call, _: &[u8], _: &io::Result<usize>) -> Result<(), SourceError> {
        match *self {}
    }
}

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
                OpKind::Trim => OpClass::Trim,
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
    /// A data call's own I/O priority (IOPRIO_PRIO_VALUE; 0: the thread's): `--cmdprio`.
    pub prio: u16,
}

impl Issue {
    pub fn now(call: Call) -> Issue {
        Issue { call, due: None, timed: true, prio: 0 }
    }
    /// A namespace call made but not counted (cleanup the original does outside its timing).
    pub fn untimed(call: Call) -> Issue {
        Issue { call, due: None, timed: false, prio: 0 }
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
    fn setup(&mut self) -> Result<Vec<SetupFile>, SourceError> {
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
    /// `..` left out), empty for other namespace calls. An `Err` ends the job with it.
    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError>;
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
    /// Whether the job's time is only its timed calls' stretch: from the thread's start barrier
    /// to its last timed namespace call (fio's metadata engines, whose job time is the calls';
    /// the names made untimed before and removed after are not in it). Otherwise a thread's
    /// time runs from its start to the loop's end.
    fn timed_span(&self) -> bool {
        false
    }
    /// Reads of files whose holes were kept, and how many of them fell in a hole: `(reads,
    /// in_holes)`, when the source counts them (the block workload on a sparse file).
    fn hole_reads(&self) -> Option<(u64, u64)> {
        None
    }
    /// The failed I/Os the source went on after (`--continue-on-error`: the outermost
    /// wrapper, [`on_error::GoingOn`], counts them).
    fn io_errors(&self) -> Option<iolab_model::IoErrors> {
        None
    }
}

/// A failed or short operation, as job errors say it: what, where, why (its errno kept).
pub fn describe_failure(call: &Call, path: &str, len: u32, offset: u64, result: &io::Result<usize>) -> SourceError {
    let op = match call.class() {
        OpClass::Sync => "flush",
        c => c.as_str(),
    };
    let cause = match result {
        Ok(n) => Cause::Short { done: *n, len },
        Err(e) => Cause::Os(match e.raw_os_error() {
            Some(n) => io::Error::from_raw_os_error(n),
            None => io::Error::new(e.kind(), e.to_string()),
        }),
    };
    let at = matches!(call, Call::Data { kind, .. } if kind.moves_data()).then_some((len, offset));
    SourceError::Call(CallError { op, path: path.to_string(), at, cause })
}

#[cfg(test)]
mod tests {
    use super::*;

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
