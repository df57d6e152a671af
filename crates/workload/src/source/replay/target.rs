//! What a replay expects of its target directory, checked before anything is written and made
//! true by `--prepare`: the files and directories the trace uses before making them (sized to
//! what it reads), the entries it makes with O_EXCL or mkdir (which must not be there: an
//! earlier replay's are removed), and the entries it changes (written, truncated, removed,
//! renamed or replaced), which must be iolab's unless `--overwrite`. Every entry the replay made
//! is marked as iolab's afterwards, so a second replay into the same target runs too. All of it
//! is resolved beneath the target: a link there is refused, never followed.

use super::plan::{ReplayPlan, Step};
use crate::error::{io_error, SourceError};
use crate::owned::{self, Found, Kind as EntryKind};
use iolab_engine::beneath::Beneath;
use iolab_trace::format::{oflags, Kind};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The target as the trace found it, and what the replay does to it.
#[derive(Debug, Default, Clone)]
pub struct Expect {
    /// Files that must exist before the replay, with the bytes its reads need.
    pub files: BTreeMap<PathBuf, u64>,
    /// Directories that must exist (the trace works in them without making them).
    pub dirs: BTreeSet<PathBuf>,
    /// Entries the trace makes that must not exist (O_CREAT|O_EXCL, mkdir).
    pub absent: BTreeSet<PathBuf>,
    /// Entries the replay changes, if they exist before it.
    pub changed: BTreeMap<PathBuf, &'static str>,
    /// Every path the replay names, and the directories above them.
    pub all: BTreeSet<PathBuf>,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    File,
    Dir,
    Gone,
}

fn ancestors(rel: &Path) -> impl Iterator<Item = &Path> {
    rel.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty())
}

impl Expect {
    /// Walk the plan's calls in recorded order, noting what each needs of the entries it names
    /// the first time the trace touches them.
    pub fn of(plan: &ReplayPlan) -> Expect {
        let mut all: Vec<(u64, u32, &Step)> = Vec::new();
        for th in &plan.threads {
            for s in &th.steps {
                all.push((s.op.start_ns, th.tid, s));
            }
        }
        all.sort_by_key(|(t, tid, _)| (*t, *tid));
        let mut w = Walk::default();
        for (_, _, s) in all {
            w.step(plan, s);
        }
        for (rel, n) in w.extent {
            if let Some(need) = w.e.files.get_mut(&rel) {
                *need = (*need).max(n);
            }
        }
        w.e
    }
}

/// What the walk over a trace's calls knows so far.
#[derive(Default)]
struct Walk {
    e: Expect,
    known: HashMap<PathBuf, State>,
    /// Each opening's file position.
    pos: HashMap<u32, u64>,
    /// How far into each file the trace reads.
    extent: HashMap<PathBuf, u64>,
    /// How far into each file the trace has written so far.
    written: HashMap<PathBuf, u64>,
    opened: HashSet<u32>,
    /// Directories the trace made.
    made: HashSet<PathBuf>,
    /// Entries that may be there before the trace.
    pre: HashSet<PathBuf>,
    /// Entries renamed before the trace said what they are: their name now → their name
    /// before the trace. The first call on them settles it (a file until then).
    pending: HashMap<PathBuf, PathBuf>,
}

impl Walk {
    fn settle(&mut self, now: &Path, dir: bool) {
        if let Some(orig) = self.pending.remove(now) {
            if dir {
                self.e.files.remove(&orig);
                self.e.dirs.insert(orig);
            }
        }
    }

    /// The directories above a path, known from now on (as directories unless known).
    fn note_dirs(&mut self, rel: &Path) {
        for a in ancestors(rel) {
            if !self.known.contains_key(a) {
                self.e.dirs.insert(a.to_path_buf());
                self.known.insert(a.to_path_buf(), State::Dir);
            }
        }
        self.e.all.extend(ancestors(rel).map(Path::to_path_buf));
        self.e.all.insert(rel.to_path_buf());
    }

    fn step(&mut self, plan: &ReplayPlan, s: &Step) {
        let op = &s.op;
        let Some(rel) = plan.rel_of(op).map(Path::to_path_buf) else { return };
        for a in ancestors(&rel) {
            self.settle(a, true);
        }
        self.note_dirs(&rel);
        // The first time the trace names it, unless it lies in a directory the trace made
        // (which held nothing before the trace filled it).
        let first = !self.known.contains_key(&rel) && !ancestors(&rel).any(|a| self.made.contains(a));
        // Unless its first call proves it absent (O_EXCL, mkdir), it may be there before:
        // then writing it changes something that was there.
        let excl = (op.kind == Kind::Open && op.flags & oflags::O_CREAT != 0 && op.flags & oflags::O_EXCL != 0)
            || op.kind == Kind::Mkdir;
        if first && !excl {
            self.pre.insert(rel.clone());
        }
        if op.kind != Kind::Rename {
            self.settle(&rel, op.kind == Kind::Mkdir || (op.kind == Kind::Unlink && op.flags & 0x200 != 0));
        }
        match op.kind {
            Kind::Open => self.open(op, rel, first),
            Kind::Mkdir => {
                if first {
                    self.e.absent.insert(rel.clone());
                }
                self.made.insert(rel.clone());
                self.known.insert(rel, State::Dir);
            }
            Kind::Unlink => {
                if first {
                    if op.flags & 0x200 != 0 {
                        self.e.dirs.insert(rel.clone());
                    } else {
                        self.e.files.entry(rel.clone()).or_insert(0);
                    }
                    self.e.changed.entry(rel.clone()).or_insert("remove");
                }
                self.known.insert(rel, State::Gone);
            }
            Kind::Rename => self.rename(plan.paths.get(&(op.offset as u32)), rel, first),
            _ => self.data(op, rel, first),
        }
    }

    fn open(&mut self, op: &iolab_trace::format::Op, rel: PathBuf, first: bool) {
        self.opened.insert(op.file);
        self.pos.insert(op.file, 0);
        let create = op.flags & oflags::O_CREAT != 0;
        if first {
            if create && op.flags & oflags::O_EXCL != 0 {
                self.e.absent.insert(rel.clone());
            } else if !create {
                self.e.files.entry(rel.clone()).or_insert(0);
            }
        }
        if op.flags & oflags::O_TRUNC != 0 && self.known.get(&rel) != Some(&State::File) {
            self.e.changed.entry(rel.clone()).or_insert("truncate");
        }
        self.known.insert(rel, State::File);
    }

    fn rename(&mut self, to: Option<&PathBuf>, rel: PathBuf, first: bool) {
        if first {
            self.e.files.entry(rel.clone()).or_insert(0);
            self.e.changed.entry(rel.clone()).or_insert("rename");
            if let Some(to) = to {
                self.pending.insert(to.clone(), rel.clone());
            }
        } else if let (Some(orig), Some(to)) = (self.pending.remove(&rel), to) {
            self.pending.insert(to.clone(), orig);
        }
        let moved = self.known.get(&rel).copied().unwrap_or(State::File);
        self.known.insert(rel, State::Gone);
        if let Some(to) = to {
            self.note_dirs(to);
            if !self.known.contains_key(to) {
                self.e.changed.entry(to.clone()).or_insert("replace (rename onto)");
            }
            self.known.insert(to.clone(), moved);
        }
    }

    /// A data call: a file that was there before if no replayed open made its opening; a
    /// write to one changes it; a read's end is how much of it must be there.
    fn data(&mut self, op: &iolab_trace::format::Op, rel: PathBuf, first: bool) {
        let k = op.kind;
        // A call on an opening no replayed open made: the file was there before.
        if first && !self.opened.contains(&op.file) {
            self.e.files.entry(rel.clone()).or_insert(0);
            self.known.insert(rel.clone(), State::File);
        }
        if (k.writes() || matches!(k, Kind::Ftruncate | Kind::Fallocate)) && self.pre.contains(&rel) {
            self.e.changed.entry(rel.clone()).or_insert("write");
        }
        let moved = op.result.max(0) as u64;
        let at = match k {
            Kind::Pread | Kind::Pwrite | Kind::Preadv | Kind::Pwritev => Some(op.offset),
            Kind::Read | Kind::Write | Kind::Readv | Kind::Writev => {
                let p = self.pos.entry(op.file).or_insert(0);
                let at = *p;
                *p = p.saturating_add(moved);
                Some(at)
            }
            Kind::Lseek => {
                self.pos.insert(op.file, moved);
                None
            }
            _ => None,
        };
        let end = at.map(|at| at.saturating_add(moved));
        if let (Some(end), true) = (end, k.writes()) {
            let w = self.written.entry(rel.clone()).or_insert(0);
            *w = (*w).max(end);
        }
        if let (Some(end), true) = (end, k.reads()) {
            // A read that brought back bytes past all the trace had written there shows the
            // file was there with them, though its open may have created it (O_CREAT without
            // O_EXCL: fio's files, a database's data files): it must be there, that long.
            if moved > 0 && self.pre.contains(&rel) && end > self.written.get(&rel).copied().unwrap_or(0) {
                self.e.files.entry(rel.clone()).or_insert(0);
            }
            let x = self.extent.entry(rel).or_insert(0);
            *x = (*x).max(end);
        }
    }
}

/// The state of the target before the replay: which entries were there and not iolab's (never
/// marked afterwards).
#[derive(Debug, Default)]
pub struct Before {
    pub foreign: HashSet<PathBuf>,
}

fn shown(b: &Beneath, rel: &Path) -> String {
    b.root().join(rel).display().to_string()
}

/// Check the target against what the trace expects, writing nothing. `Err`: why the replay
/// may not run, and what to do.
pub fn check(b: &Beneath, e: &Expect, prepare: bool, overwrite: bool) -> Result<Before, SourceError> {
    let mut before = Before::default();
    let look = |rel: &Path| owned::found(b, rel).map_err(io_error("", b.root().join(rel), ""));
    let mut state: BTreeMap<&Path, Found> = BTreeMap::new();
    for rel in &e.all {
        let f = look(rel)?;
        if f == Found::Foreign(EntryKind::Other) || f == Found::Owned(EntryKind::Other) {
            return Err(said!(
                "{} is a symbolic link or a special file; the replay names it and follows no link: remove it or choose another --target",
                shown(b, rel)
            ));
        }
        if matches!(f, Found::Foreign(_)) {
            before.foreign.insert(rel.clone());
        }
        state.insert(rel, f);
    }
    let at = |rel: &Path| state.get(rel).copied().unwrap_or(Found::Absent);
    for rel in &e.absent {
        if let Found::Foreign(_) = at(rel) {
            return Err(said!(
                "the trace creates {} (O_EXCL or mkdir) and it exists, made by something else than iolab; remove it or choose another --target",
                shown(b, rel)
            ));
        }
    }
    for rel in &e.dirs {
        match at(rel).kind() {
            Some(EntryKind::Dir) | None => {}
            Some(_) => {
                return Err(said!("{} must be a directory for the replay (the trace works in it)", shown(b, rel)))
            }
        }
    }
    for (rel, need) in &e.files {
        match at(rel) {
            Found::Absent if !prepare => {
                return Err(said!(
                "{} must exist before the replay (the trace uses it without creating it{}); add --prepare to create it",
                shown(b, rel),
                if *need > 0 { format!(" and reads {need} bytes of it") } else { String::new() }
            ))
            }
            Found::Absent => {}
            f if f.kind() != Some(EntryKind::File) => {
                return Err(said!("{} must be a regular file for the replay", shown(b, rel)))
            }
            f => {
                let have = b.stat(rel).map(|s| s.st_size as u64).unwrap_or(0);
                if prepare && have < *need && matches!(f, Found::Foreign(_)) && !overwrite {
                    return Err(said!(
                        "--prepare would extend {} ({have} bytes; the trace reads {need}), which iolab did not create; pass --overwrite to allow it, or choose another --target",
                        shown(b, rel)
                    ));
                }
            }
        }
    }
    if !overwrite {
        for (rel, how) in &e.changed {
            if let Found::Foreign(k) = at(rel) {
                return Err(said!(
                    "{} exists and iolab did not create it, so the replay will not {how} {}; pass --overwrite to allow it, or choose another --target",
                    shown(b, rel),
                    if k == EntryKind::Dir { "that directory" } else { "it" }
                ));
            }
        }
    }
    Ok(before)
}

/// Make the target what the trace expects: remove what an earlier replay made where the trace
/// makes it anew, make the directories it works in, and with `fill` the files it uses, sized
/// to what it reads. Everything made is marked as iolab's.
pub fn prepare(b: &Beneath, e: &Expect, fill: bool, halt: &crate::layout::Halt) -> Result<(), SourceError> {
    for rel in &e.absent {
        if let Found::Owned(_) = owned::found(b, rel).map_err(io_error("", b.root().join(rel), ""))? {
            owned::remove_tree(b, rel)?;
        }
    }
    for rel in &e.dirs {
        // Parents first (BTreeSet order puts `a` before `a/b`).
        if owned::found(b, rel).map_err(io_error("", b.root().join(rel), ""))? == Found::Absent {
            owned::create_dir(b, rel).map_err(io_error("creating", b.root().join(rel), ""))?;
        }
    }
    if !fill {
        return Ok(());
    }
    let chunk = vec![0x5au8; 1 << 20];
    for (rel, need) in &e.files {
        let f = match owned::found(b, rel).map_err(io_error("", b.root().join(rel), ""))? {
            Found::Absent => owned::create_file(b, rel).map_err(io_error("creating", b.root().join(rel), ""))?,
            _ => {
                let have = b.stat(rel).map(|s| s.st_size as u64).unwrap_or(0);
                if have >= *need {
                    continue;
                }
                b.open_file(rel, iolab_engine::OpenOptions { write: true, append: true, ..Default::default() })
                    .map_err(io_error("opening", b.root().join(rel), ""))?
            }
        };
        let mut w = std::io::BufWriter::new(&f);
        let mut left = need.saturating_sub(f.metadata().map(|m| m.len()).unwrap_or(0));
        while left > 0 {
            if halt.now() {
                return Err(said!("interrupted while preparing {}", shown(b, rel)));
            }
            let n = left.min(chunk.len() as u64) as usize;
            w.write_all(&chunk[..n]).map_err(io_error("filling", b.root().join(rel), ""))?;
            left -= n as u64;
        }
        w.flush().map_err(io_error("filling", b.root().join(rel), ""))?;
        f.sync_all().map_err(io_error("flushing", b.root().join(rel), ""))?;
    }
    Ok(())
}

/// After the replay: mark every entry it made (those not there before, or iolab's already:
/// a rename replaces an inode) and drop stale manifest lines. Entries that were there and not
/// iolab's stay unmarked.
pub fn finish(b: &Beneath, e: &Expect, before: &Before) -> Vec<String> {
    let mut problems = Vec::new();
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for rel in &e.all {
        dirs.insert(rel.parent().map(Path::to_path_buf).unwrap_or_default());
        if before.foreign.contains(rel) {
            continue;
        }
        match owned::found(b, rel) {
            Ok(Found::Foreign(EntryKind::File | EntryKind::Dir)) => {
                if let Err(err) = owned::mark(b, rel) {
                    problems.push(format!("marking {} as iolab's: {err}", shown(b, rel)));
                }
            }
            Ok(_) => {}
            Err(err) => problems.push(format!("{}: {err}", shown(b, rel))),
        }
    }
    for d in dirs {
        let _ = owned::prune_manifest(b, &d);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::super::plan::tests::{job, records};
    use super::*;
    use iolab_spec::Timing;
    use std::sync::atomic::AtomicBool;

    const TREE: &str = "\
1  1.0 mkdir(\"/d/new\", 0755) = 0 <0.000001>
1  1.1 openat(AT_FDCWD</d>, \"/d/new/f\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3</d/new/f> <0.000001>
1  1.2 write(3</d/new/f>, \"x\", 100) = 100 <0.000001>
1  1.3 close(3</d/new/f>) = 0 <0.000001>
1  1.4 openat(AT_FDCWD</d>, \"/d/old/data\", O_RDONLY) = 3</d/old/data> <0.000001>
1  1.5 pread64(3</d/old/data>, \"\"..., 4096, 8192) = 4096 <0.000001>
1  1.6 close(3</d/old/data>) = 0 <0.000001>
1  1.7 rename(\"/d/new/f\", \"/d/keep\") = 0 <0.000001>
1  1.8 unlink(\"/d/junk\") = 0 <0.000001>
1  1.9 unlinkat(AT_FDCWD</d>, \"/d/gone\", AT_REMOVEDIR) = 0 <0.000001>
";

    fn expect() -> Expect {
        let p = ReplayPlan::build(records(TREE).into_iter(), &job("/d", Timing::Afap)).unwrap();
        Expect::of(&p)
    }

    #[test]
    fn a_file_read_past_what_the_trace_wrote_was_there_though_opened_with_o_creat() {
        let text = "\
1  1.0 openat(AT_FDCWD</d>, \"/d/log\", O_RDWR|O_CREAT, 0644) = 3</d/log> <0.000001>
1  1.1 pwrite64(3</d/log>, \"x\"..., 8192, 0) = 8192 <0.000001>
1  1.2 pread64(3</d/log>, \"\"..., 4096, 4096) = 4096 <0.000001>
1  1.3 openat(AT_FDCWD</d>, \"/d/db\", O_RDWR|O_CREAT, 0644) = 4</d/db> <0.000001>
1  1.4 pwrite64(4</d/db>, \"x\"..., 4096, 0) = 4096 <0.000001>
1  1.5 pread64(4</d/db>, \"\"..., 4096, 65536) = 4096 <0.000001>
";
        let p = ReplayPlan::build(records(text).into_iter(), &job("/d", Timing::Afap)).unwrap();
        let e = Expect::of(&p);
        // The log's read was of what it had written; the data file's brought back bytes it never
        // wrote: it was there, 68 KiB long at least (--prepare makes it so).
        assert_eq!(e.files, [(PathBuf::from("db"), 69632)].into_iter().collect());
        assert_eq!(e.changed.get(Path::new("db")), Some(&"write"));
    }

    #[test]
    fn what_the_trace_expects_of_the_target() {
        let e = expect();
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(e.absent, [p("new")].into_iter().collect(), "mkdir new; new/f is created inside it");
        assert_eq!(e.dirs, [p("gone"), p("old")].into_iter().collect());
        assert_eq!(e.files, [(p("junk"), 0), (p("old/data"), 12288)].into_iter().collect());
        assert_eq!(e.changed.keys().cloned().collect::<Vec<_>>(), vec![p("gone"), p("junk"), p("keep")]);
    }

    #[test]
    fn foreign_entries_are_refused_owned_ones_reset_and_made_ones_marked() {
        let d = tempfile::tempdir().unwrap();
        let b = Beneath::open(d.path()).unwrap();
        let e = expect();
        let stop = AtomicBool::new(false);
        let stop = crate::layout::Halt::stop(&stop);
        let err = check(&b, &e, false, false).unwrap_err().to_string();
        assert!(err.contains("must exist") && err.contains("--prepare"), "{err}");
        // A directory the trace removes, made by someone else: refused, even with --prepare.
        std::fs::create_dir(d.path().join("gone")).unwrap();
        let err = check(&b, &e, true, false).unwrap_err().to_string();
        assert!(err.contains("gone") && err.contains("remove that directory") && err.contains("--overwrite"), "{err}");
        std::fs::remove_dir(d.path().join("gone")).unwrap();
        let before = check(&b, &e, true, false).unwrap();
        prepare(&b, &e, true, &stop).unwrap();
        assert_eq!(std::fs::metadata(d.path().join("old/data")).unwrap().len(), 12288);
        assert!(d.path().join("gone").is_dir() && d.path().join("junk").is_file());
        // What the replay would do, by hand; then everything it made is marked.
        std::fs::create_dir(d.path().join("new")).unwrap();
        std::fs::write(d.path().join("keep"), b"x").unwrap();
        std::fs::remove_file(d.path().join("junk")).unwrap();
        std::fs::remove_dir(d.path().join("gone")).unwrap();
        assert!(finish(&b, &e, &before).is_empty());
        for rel in ["new", "keep", "old", "old/data"] {
            assert!(matches!(owned::found(&b, Path::new(rel)).unwrap(), Found::Owned(_)), "{rel}");
        }
        // A second replay: `new` (iolab's) is removed and made again; nothing is refused.
        let again = check(&b, &e, true, false).unwrap();
        assert!(again.foreign.is_empty());
        prepare(&b, &e, true, &stop).unwrap();
        assert!(!d.path().join("new").exists());
        // A link where the trace works is refused, not followed.
        let out = tempfile::tempdir().unwrap();
        std::fs::remove_file(d.path().join("old/data")).unwrap();
        std::fs::remove_dir(d.path().join("old")).unwrap();
        std::os::unix::fs::symlink(out.path(), d.path().join("old")).unwrap();
        let err = check(&b, &e, true, true).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }
}
