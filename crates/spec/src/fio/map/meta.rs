//! fio's metadata engines (`ioengine=filecreate|filestat|filedelete|dircreate|dirstat|
//! dirdelete`) onto iolab's metadata workload (crates/spec/src/metadata.rs): such a job moves no
//! data, it makes one call per file (open with O_CREAT, stat, unlink, mkdir, rmdir), so it is
//! mapped here apart from the block job's options. fio's engines/fileoperations.c and a fio
//! 3.33 run (nrfiles=10, bs=4k) agree: each call is one completion-latency sample in the job's
//! direction (reads unless `rw` writes) and counts `bs` bytes, so fio's JSON shows io_bytes
//! 40960, total_ios 10, clat N 10 for all three file engines.

use super::{job_bs, Loc, Out, Problem, Raw, Said};
use crate::fio::FioJob;
use crate::job::Rw;
use crate::metadata::MetaOp;
use crate::patch::JobPatch;
use crate::WorkloadKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The job's metadata engine, if its ioengine is one.
pub(super) fn engine(r: &Raw) -> Option<MetaOp> {
    r.engine.as_ref().and_then(|(e, _)| e.parse().ok())
}

/// A metadata job: its name, directory, threads, files, `bs` and direction; every other option
/// that would change what fio does is named as not mapped.
pub(super) fn finish(r: &Raw, op: MetaOp, section_at: &Loc, name: String, said: &mut Said) -> Result<FioJob, Problem> {
    let mut o = Out { p: JobPatch::default(), from: BTreeMap::new() };
    o.p.name = Some(name.clone());
    o.p.workload = Some(WorkloadKind::Metadata);
    o.p.apps.metadata.meta_op = Some(op);
    if let Some((_, at)) = &r.engine {
        o.set("meta_op", at);
    }
    let what = if op.on_dirs() { "directories" } else { "files" };
    let eng = format!("ioengine={op}");

    // Where: the directory itself, as fio's jobs share it, on iolab's names (fio's default ones).
    let (dir, at) = match &r.directory {
        Some((d, at)) => (PathBuf::from(d), at.clone()),
        None => (PathBuf::from("."), section_at.clone()),
    };
    o.set("target", &at);
    o.p.target = Some(dir.clone());
    if let Some((f, at)) = r.filename.as_ref().or(r.filename_format.as_ref()) {
        said.unmapped(
            at,
            format!("`{f}` with {eng}: iolab names the {what} as fio's default ({name}.N.M), in the job's directory"),
        );
    }
    said.note(&at, format!("{eng}: each thread works on its own {what} {name}.N.0, {name}.N.1, ... in {} itself, as fio's; iolab makes them exclusively (a name already there is refused, never reused) and removes what is left at the end", dir.display()));
    made_before(r, op, &at, &eng, &mut o, said);
    if op == MetaOp::FileCreate {
        said.note(&at, format!("{eng}: the timed call is open(O_CREAT|O_EXCL|O_RDWR), so a name already there is refused; the close after it is not timed; the files are removed at the end"));
        // fio needs create_on_open for its create to be timed; iolab's always is, so the note
        // that iolab creates files before the phase, said while reading this job, is not this
        // job's (an earlier job's stays; a later job it is true of says it again).
        let Said { notes, seen, job_from, .. } = said;
        let mine = notes.split_off((*job_from).min(notes.len()));
        for p in mine {
            if p.message.starts_with("create_on_open:") {
                seen.remove(&(p.at.clone(), p.message.clone()));
            } else {
                notes.push(p);
            }
        }
    }

    if let Some((n, at)) = &r.numjobs {
        o.set("threads", at);
        o.p.threads = Some(u32::try_from(*n).unwrap_or(u32::MAX));
    }
    if let Some((n, at)) = r.files.nrfiles.as_ref() {
        o.set("nrfiles", at);
        o.p.nrfiles = Some(u32::try_from(*n).unwrap_or(u32::MAX));
    }

    // The direction fio counts the calls in, and the bytes it counts for each.
    let rw = match &r.rw {
        Some((rw, _, text, at)) => {
            if rw.is_mixed() {
                said.unmapped(at, format!("rw={text} with {eng}: fio counts the calls as reads or writes as rwmixread draws; iolab counts them all in one direction"));
            } else {
                o.set("rw", at);
                o.p.rw = Some(if rw.writes() { Rw::Write } else { Rw::Read });
            }
            *rw
        }
        None => Rw::Read,
    };
    if let Some((bs, _, at)) = job_bs(r, rw, said) {
        o.set("bs", &at);
        if bs.0.len() > 1 {
            said.note(
                &at,
                format!(
                    "{eng}: fio counts each call as one I/O of its block size; iolab counts the largest, {}",
                    bs.max()
                ),
            );
        }
        o.p.bs = Some(crate::BlockSizes::single(bs.max()));
    }

    // Time: fio's runtime cuts the calls short; time_based repeats them.
    let time_based = r.time_based.as_ref().is_some_and(|t| t.0);
    if let Some((t, at)) = r.runtime.as_ref().filter(|t| !t.0.is_zero()) {
        if time_based {
            said.unmapped(at, format!("time_based with {eng}: fio goes over the {what} again until the runtime is up; iolab makes one call per name"));
        } else {
            o.set("runtime", at);
            o.p.runtime = Some(*t);
        }
    }
    if let Some((v, at)) = &r.start_delay {
        o.set("start_delay", at);
        o.p.start_delay = Some(*v);
    }
    if let Some((c, at)) = &r.cpus {
        o.set("cpus", at);
        o.p.cpus = Some(c.clone());
    }
    if let Some(at) = &r.exitall {
        o.set("exit_all", at);
        o.p.exit_all = Some(true);
    }

    // What fio's sync engine makes nothing of on these calls: said, and the rest named.
    if let Some((d, at)) = r.iodepth.as_ref().filter(|d| d.0 > 1) {
        said.note(at, format!("iodepth={d} has no effect on {eng}, a synchronous engine, as in fio"));
    }
    let not_mapped: [(&str, Option<&Loc>); 14] = [
        ("ramp_time", r.ramp.as_ref().filter(|x| !x.0.is_zero()).map(|x| &x.1)),
        ("rate", r.rate.as_ref().map(|x| &x.1)),
        ("rate_iops", r.rate_iops.as_ref().map(|x| &x.1)),
        ("thinktime", r.thinktime.as_ref().filter(|x| !x.0.is_zero()).map(|x| &x.1)),
        ("loops", r.loops.as_ref().filter(|x| x.0 > 1).map(|x| &x.1)),
        ("number_ios", r.number_ios.as_ref().filter(|x| x.0 > 0).map(|x| &x.1)),
        ("verify", r.verify.as_ref().filter(|x| x.0).map(|x| &x.2)),
        ("sync", r.sync.as_ref().filter(|x| x.0 != crate::SyncMode::None).map(|x| &x.1)),
        ("fsync", r.fsync.as_ref().map(|x| &x.2)),
        ("offset", r.offset.as_ref().map(|x| &x.1)),
        ("io_size", r.io_size.as_ref().map(|x| &x.1)),
        ("random_distribution", r.dist.as_ref().map(|x| &x.1)),
        ("steadystate", r.ss.criterion.as_ref().map(|x| &x.1)),
        ("write_*_log", r.logs.iter().flatten().map(|x| &x.1).next()),
    ];
    for (key, at) in not_mapped {
        if let Some(at) = at {
            said.unmapped(at, format!("{key} with {eng}: not mapped (iolab's metadata workload makes one timed call per name, as fast as it can)"));
        }
    }
    if let Some((true, at)) = &r.direct {
        said.note(at, format!("direct=1 with {eng}: no data moves, so O_DIRECT changes nothing"));
    }
    Ok(FioJob { patch: o.p, from: o.from, at: section_at.clone(), logs: None })
}

/// What the stat and delete engines need made before their timed calls: files of `filesize`
/// bytes each (fio lays them out with data), or directories; said as a note.
fn made_before(r: &Raw, op: MetaOp, at: &Loc, eng: &str, o: &mut Out, said: &mut Said) {
    match op {
        MetaOp::FileStat | MetaOp::FileDelete => {
            let size = match r.files.filesize.clone() {
                Some((lo, hi, text, fat)) if lo != hi => {
                    said.unmapped(&fat, format!("filesize={text} with {eng}: fio draws each file's size from the range; iolab's files have one size, write it"));
                    "empty".to_string()
                }
                Some((lo, _, _, fat)) if lo > 0 => {
                    o.set("file_sizes", &fat);
                    o.p.file_sizes = Some(crate::fileset::SizeRange { low: crate::Bytes(lo), high: crate::Bytes(lo) });
                    format!("with {} each, written and flushed, as fio lays them out", crate::Bytes(lo))
                }
                _ => "empty".to_string(),
            };
            said.note(at, format!("{eng}: iolab creates the files ({size}) before the timed calls, untimed, and removes what is left after"));
        }
        MetaOp::DirStat | MetaOp::DirDelete => said.note(
            at,
            format!(
                "{eng}: iolab makes the directories before the timed calls, untimed, and removes what is left after"
            ),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::fio::tests::{err_of_text, plan_of_text};
    use crate::metadata::{MetaOp, MetadataJob};
    use crate::{Bytes, Workload};
    use std::path::Path;

    fn meta(text: &str) -> (MetadataJob, u32, std::path::PathBuf) {
        let p = plan_of_text(text);
        let j = &p.phases[0].jobs[0];
        let Workload::Metadata(m) = &j.workload else { panic!("{:?}", j.workload) };
        (m.clone(), j.threads, j.target.clone())
    }

    #[test]
    fn each_engine_is_a_metadata_job_over_nrfiles() {
        for op in MetaOp::ALL {
            let (m, threads, target) = meta(&format!("[t]\nioengine={op}\nnrfiles=10\ndirectory=/data\n"));
            assert_eq!(m, MetadataJob { op, files: 10, io_size: Bytes::kib(4), writes: false, file_size: Bytes(0) });
            assert_eq!((threads, target.as_path()), (1, Path::new("/data")));
        }
        let (m, threads, _) =
            meta("[global]\nioengine=filestat\nfilesize=4k\nnrfiles=200\nthread\nnumjobs=2\n[t0]\nbs=8k\nrw=write\n");
        assert_eq!((m.files, m.io_size, m.writes, threads), (200, Bytes::kib(8), true, 2));
        // fio lays out filestat's and filedelete's files with filesize bytes; filecreate's are empty.
        assert_eq!(m.file_size, Bytes::kib(4));
        let (m, _, _) = meta("[t]\nioengine=filecreate\nfilesize=4k\nnrfiles=2\n");
        assert_eq!(m.file_size, Bytes(0));
    }

    #[test]
    fn create_on_open_is_said_only_of_the_jobs_it_is_true_of() {
        for (text, n) in [
            ("[global]\ncreate_on_open=1\n[c]\nioengine=filecreate\n[b]\nrw=write\nsize=1m\n", 1),
            ("[global]\ncreate_on_open=1\n[b]\nrw=write\nsize=1m\n[c]\nioengine=filecreate\n", 1),
            ("[global]\ncreate_on_open=1\n[c]\nioengine=filecreate\n", 0),
        ] {
            let mut m = crate::fio::tests::Mem::default();
            m.files.insert(std::path::PathBuf::from("/j/job.fio"), text.to_string());
            let f = crate::fio::parse(Path::new("/j/job.fio"), &m, false).unwrap_or_else(|e| panic!("{e}"));
            let notes: Vec<&str> = f.notes.iter().map(|n| n.message.as_str()).collect();
            assert_eq!(notes.iter().filter(|n| n.starts_with("create_on_open:")).count(), n, "{text}: {notes:?}");
        }
    }

    #[test]
    fn what_does_not_apply_is_named() {
        for (extra, said) in [
            ("filename=f\n", "`f` with ioengine=filecreate"),
            ("time_based\nruntime=5\n", "time_based with ioengine=filecreate"),
            ("rw=randrw\n", "rw=randrw with ioengine=filecreate"),
            ("rate_iops=100\n", "rate_iops with ioengine=filecreate"),
        ] {
            let e = err_of_text(&format!("[t]\nioengine=filecreate\nnrfiles=4\n{extra}"));
            assert!(e.contains(said), "{extra}: {e}");
        }
    }
}
