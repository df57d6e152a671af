//! fio's file-set options (`filesize`, `nrfiles`, `fill_device`, `create_serialize`), where a
//! job's I/O lands in them (`offset_increment`, `blockalign`) and its job order by name
//! (`wait_for`), read here apart from the rest of the mapping so the family stays in one
//! place (issue 27).

use super::{bad, flag, min_block_size, need, Loc, Out, Problem, Raw, Region, Said};
use crate::fio::ini::Opt;
use crate::fio::value::{self, KbBase};
use crate::fio::{FioJob, FioPhase};
use crate::job::Rw;
use crate::units::Bytes;

/// What a job section set of this family, each with its line.
#[derive(Default)]
pub(super) struct FilesRaw {
    /// `filesize`: one size, or a range `lo-hi` fio draws each file's size from.
    pub(super) filesize: Option<(u64, u64, String, Loc)>,
    pub(super) nrfiles: Option<(u64, Loc)>,
    /// `wait_for`: the job (by name) this one starts after.
    pub(super) wait_for: Option<(String, Loc)>,
    /// `fill_device` (`fill_fs`): write until the filesystem is full.
    fill: Option<(bool, Loc)>,
    file_service: Option<(String, Loc)>,
    openfiles: Option<(u64, Loc)>,
    offset_increment: Option<(Region, String, Loc)>,
    /// `fallocate`: how fio makes a new file a job only writes.
    fallocate: Option<(crate::prealloc::Prealloc, Loc)>,
    /// `overwrite`: a write-only job's new file laid out with data first.
    overwrite: Option<(bool, Loc)>,
}

/// One option of the family (`Ok(false)`: not one of them).
pub(super) fn read(f: &mut FilesRaw, o: &Opt, kb: KbBase, said: &mut Said) -> Result<bool, Problem> {
    let at = o.at.clone();
    match o.key.as_str() {
        // fio's filesize is a size or a range `lo-hi` (a `:` works as the dash, as in bsrange).
        "filesize" => {
            let v = need(o)?;
            let (lo, hi) = match v.split_once(['-', ':']) {
                Some((lo, hi)) => (value::size(lo, kb), value::size(hi, kb)),
                None => (value::size(v, kb), value::size(v, kb)),
            };
            let (lo, hi) = (lo.map_err(|e| bad(o, e))?, hi.map_err(|e| bad(o, e))?);
            if lo == 0 || hi < lo {
                return Err(bad(o, format!("`{v}`: a file size above 0, or a range lo-hi with lo <= hi")));
            }
            f.filesize = Some((lo, hi, v.to_string(), at));
        }
        "nrfiles" | "nr_files" => {
            let n = value::int(need(o)?).map_err(|e| bad(o, e))?;
            if n == 0 {
                return Err(bad(o, "0: a job has at least one file".into()));
            }
            f.nrfiles = Some((n, at));
        }
        "wait_for" => f.wait_for = Some((need(o)?.trim().to_string(), at)),
        "file_service_type" => f.file_service = Some((need(o)?.trim().to_string(), at)),
        "openfiles" => f.openfiles = Some((value::int(need(o)?).map_err(|e| bad(o, e))?, at)),
        "offset_increment" => {
            let v = need(o)?;
            f.offset_increment = Some((value::region(v, kb).map_err(|e| bad(o, e))?, v.to_string(), at));
        }
        "fill_device" | "fill_fs" => f.fill = Some((value::boolean(need(o)?).map_err(|e| bad(o, e))?, at)),
        // fio lays out one job's files after another's unless create_serialize=0; iolab lays
        // out a phase's files one after another before it starts, so the I/O measured is the
        // same either way (only the layout's order, and with it the files' places, may differ).
        "create_serialize" => {
            flag(o)?;
        }
        // fio pre-creates a job's files when it starts unless create_on_open; iolab creates a
        // phase's files before the phase, untimed either way: the I/O measured is the same.
        "create_on_open" => {
            if flag(o)? {
                said.note(&at, "create_on_open: iolab creates a phase's files before it starts (fio's default); the open that creates them is timed by neither".into());
            }
        }
        // How fio makes a new file a job only writes (HOWTO: none, native, posix, keep,
        // truncate; 0 and 1 the old none and posix): see `finish`.
        // fio's filesetup.c lays a new file out with data for a job that writes with
        // overwrite=1, as for a reader (`new_layout`), so its writes overwrite written blocks.
        "overwrite" => f.overwrite = Some((flag(o)?, at)),
        "fallocate" => {
            let v = need(o)?;
            let how = crate::prealloc::Prealloc::of_fio(v)
                .ok_or_else(|| bad(o, format!("`{v}`: fio's are none, native, posix, keep and truncate")))?;
            f.fallocate = Some((how, at));
        }
        // fio dumps every error (1, its default) or only the fatal ones; without
        // continue_on_error every error is fatal, and iolab reports the one that ended the job.
        "error_dump" => {
            flag(o)?;
        }
        "unlink" => {
            if flag(o)? {
                said.unmapped(
                    &at,
                    "unlink=1: iolab keeps the files it made; `iolab run --cleanup` removes them after the run".into(),
                );
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `filesize` onto the job's region before the regions are worked out: with one file, fio
/// makes the file `filesize` bytes and `size` becomes only the default for `io_size` (fio's
/// HOWTO; fio 3.33: `filesize=1m size=64k` laid out 1 MiB and read 64 KiB, `filesize=1m`
/// alone read the 1 MiB). A `time_based` job loops over the file until its runtime ends, so
/// there `size` bounds nothing (fio 3.33, `filesize=1m size=256k time_based runtime=1`: 169 MiB
/// read in 1 s). Several files per job are not mapped yet.
pub(super) fn apply(r: &mut Raw, said: &mut Said) {
    if r.files.nrfiles.as_ref().is_some_and(|n| n.0 > 1) {
        return; // set_target took them
    }
    let Some((lo, hi, text, at)) = r.files.filesize.clone() else { return };
    if lo != hi {
        said.unmapped(&at, format!("filesize={text}: fio draws each file's size from the range (fio 3.33 made a 1168 KiB file for 1m-2m); iolab's file has one size, write it"));
        return;
    }
    let time_based = r.time_based.as_ref().is_some_and(|t| t.0);
    if r.io_size.is_none() && !time_based {
        r.io_size = r.size.take();
    }
    r.size = Some((Region::Bytes(lo), at));
}

/// Several files per thread (`nrfiles` above 1) onto iolab's `nrfiles`: the files go in
/// `directory` (else the current directory) named by `filename_format` (fio's default
/// `$jobname.$jobnum.$filenum`), each `filesize` bytes or drawn from its range, else `size`
/// shared among them (fio's HOWTO); `size` is then only the default for `io_size`, as with
/// one file. `file_service_type` roundrobin, sequential and random (with fio's `:N`) map.
/// `None` for a job of one file.
pub(super) fn set_target(
    r: &mut Raw,
    name: &str,
    threads: u64,
    o: &mut Out,
    said: &mut Said,
) -> Option<(std::path::PathBuf, Loc, bool)> {
    let (n, at) = r.files.nrfiles.clone().filter(|n| n.0 > 1)?;
    if let Some((f, fat)) = &r.filename {
        said.unmapped(fat, format!("filename={f} with nrfiles={n}: fio then works on that one name; iolab's several files are named by filename_format in the directory"));
    }
    match u32::try_from(n) {
        Ok(v) if v <= crate::fileset::MAX_FILES => {
            o.set("nrfiles", &at);
            o.p.nrfiles = Some(v);
        }
        _ => said
            .unmapped(&at, format!("nrfiles={n}: iolab takes at most {} files per thread", crate::fileset::MAX_FILES)),
    }
    if let Some((lo, hi, _, fat)) = r.files.filesize.clone() {
        o.set("file_sizes", &fat);
        o.p.file_sizes = Some(crate::fileset::SizeRange { low: Bytes(lo), high: Bytes(hi) });
        let time_based = r.time_based.as_ref().is_some_and(|t| t.0);
        if r.io_size.is_none() && !time_based {
            r.io_size = r.size.take();
        } else {
            r.size = None;
        }
    }
    if let Some((v, sat)) = &r.files.file_service {
        match v.parse::<crate::fileset::FileService>() {
            Ok(fs) => {
                o.set("file_service", sat);
                o.p.file_service = Some(fs);
            }
            Err(_) => said.unmapped(
                sat,
                format!("file_service_type={v}: iolab moves among files by roundrobin[:N], sequential or random[:N]"),
            ),
        }
    }
    if let Some((k, oat)) = r.files.openfiles.as_ref().filter(|k| k.0 < n) {
        said.unmapped(
            oat,
            format!("openfiles={k} with nrfiles={n}: iolab keeps every file of the set open for the phase"),
        );
    }
    let names = match &r.filename_format {
        Some((f, fat)) => {
            o.set("file_names", fat);
            o.p.file_names = Some(f.clone());
            f.clone()
        }
        None => crate::fileset::DEFAULT_NAMES.to_string(),
    };
    if let Some((d, dat)) = r.directory.as_ref().filter(|d| d.0.contains(':')) {
        said.unmapped(dat, format!("directory={d}: several directories are not mapped"));
    }
    let dir = r.directory.as_ref().map_or_else(|| std::path::PathBuf::from("."), |d| std::path::PathBuf::from(&d.0));
    let set =
        crate::fileset::FileSet { count: 2, size: None, service: crate::fileset::FileService::RoundRobin(1), names };
    let last = set.name(name, threads.saturating_sub(1) as u32, (n - 1) as u32);
    said.note(
        &at,
        format!(
            "nrfiles={n}: each thread's own files in {}, named as fio names them ({} to {last})",
            dir.display(),
            set.name(name, 0, 0)
        ),
    );
    Some((dir, at, false))
}

/// `fill_device` onto `fill_fs`: fio writes until ENOSPC (or EDQUOT) and ends the job there,
/// without an error (fio 3.33 on an 8 MiB tmpfs: 8 MiB written, `error` 0), or at `size` when
/// one is given (2 MiB for `size=2m`). fio fills the filesystem first for a read job; iolab
/// fills with sequential writes only.
pub(super) fn finish(r: &Raw, rw: Rw, o: &mut Out, said: &mut Said) {
    // fio's layout of a new file for a job that does not read (filesetup.c, extend_file): the
    // file is made as `fallocate` says (default native: fallocate(2) mode 0 over its size,
    // fio 3.33's strace) and no data is written; a job that reads gets its data laid out.
    if !rw.reads() && !r.files.fill.as_ref().is_some_and(|f| f.0) {
        let (how, at) = match (&r.files.overwrite, &r.files.fallocate) {
            (Some((true, at)), _) => (crate::prealloc::Prealloc::Data, Some(at)),
            (_, Some((how, at))) => (*how, Some(at)),
            _ => (crate::prealloc::Prealloc::Fallocate, None),
        };
        if let Some(at) = at {
            o.set("preallocate", at);
        }
        o.p.preallocate = Some(how);
    }
    let Some((true, at)) = &r.files.fill else { return };
    if rw != Rw::Write {
        said.unmapped(at, format!("fill_device with rw={rw}: iolab fills a filesystem with sequential writes (rw=write) only; fio fills it first for reads"));
        return;
    }
    o.set("fill_fs", at);
    o.p.fill_fs = Some(true);
}

/// Where each thread's I/O lands: `offset_increment` (fio 3.33, numjobs=2 with 1m: clone 0
/// at 0, clone 1 at 1 MiB, in each job apart) and `blockalign` (fio 3.33, bs=512 with 4k: 50
/// random offsets, all multiples of 4 KiB). iolab has one alignment for reads and writes.
pub(super) fn finish_place(r: &Raw, rw: Rw, o: &mut Out, said: &mut Said) {
    match &r.files.offset_increment {
        Some((Region::Bytes(0), _, _)) | None => {}
        Some((Region::Bytes(v), _, at)) => {
            o.set("offset_increment", at);
            o.p.offset_increment = Some(Bytes(*v));
        }
        Some((Region::Percent(_), text, at)) => said.unmapped(
            at,
            format!("offset_increment={text}: a percentage of the file's size is not mapped; give the bytes"),
        ),
        // fio counts zones only under zonemode=zbd and leaves the option unset elsewhere.
        Some((Region::Zones(_), text, at)) => said.note(
            at,
            format!(
                "offset_increment={text}: zones count only under zonemode=zbd; fio leaves it unset, and so does iolab"
            ),
        ),
    }
    let Some((dirs, text, at)) = &r.blockalign else { return };
    // The directions the job does: reads take the first value, writes the second.
    let used: Vec<usize> = [(rw.reads(), 0), (rw.writes(), 1)].into_iter().filter(|d| d.0).map(|d| d.1).collect();
    let given: Vec<u64> = used.iter().filter_map(|d| dirs[*d]).collect();
    let min = min_block_size(r);
    match given.first() {
        None => {}
        Some(&a) if given.iter().any(|g| *g != a) || (given.len() < used.len() && a != min) => {
            said.unmapped(at, format!("{text}: reads and writes aligned apart; iolab aligns both to one size"))
        }
        Some(&a) if a == min => {}
        Some(&a) => {
            o.set("align", at);
            o.p.align = Some(Bytes(a));
        }
    }
}

/// Put a job into the phases: a new phase at `stonewall`, or at `wait_for=X` when the phase
/// so far is X's alone (fio then starts the job as X ends, as a new phase does); else the last
/// phase. `waits[i]` is the waitee that opened phase `i`, so a later job that fio would start
/// beside X (neither stonewall nor the same wait_for) is named rather than delayed.
pub(super) fn place(
    phases: &mut Vec<FioPhase>,
    waits: &mut Vec<Option<String>>,
    job: FioJob,
    stonewall: bool,
    wait_for: Option<(String, Loc)>,
    said: &mut Said,
) -> Result<(), Problem> {
    let name = job.patch.name.clone().unwrap_or_default();
    let named = |x: &str| phases.iter().flat_map(|p| &p.jobs).filter(|j| j.patch.name.as_deref() == Some(x)).count();
    let new_phase = |phases: &mut Vec<FioPhase>, waits: &mut Vec<Option<String>>, job, wait: Option<String>| {
        phases.push(FioPhase { name: String::new(), jobs: vec![job] });
        waits.push(wait);
    };
    if let Some((x, at)) = &wait_for {
        // fio's HOWTO: the waitee is defined before the waiter and has a unique name (fio 3.33
        // refuses a later or unknown one: "waitee job X unknown").
        match named(x) {
            0 => {
                return Err(Problem::new(
                    at.clone(),
                    format!("wait_for={x}: no job named `{x}` above this one; fio needs the job waited for defined first (fio 3.33: \"{name}: waitee job {x} unknown\")"),
                ))
            }
            1 => {}
            n => {
                return Err(Problem::new(
                    at.clone(),
                    format!("wait_for={x}: {n} jobs are named `{x}`; fio's HOWTO: a job waited for must have a unique name"),
                ))
            }
        }
    }
    let Some(last) = phases.last() else {
        new_phase(phases, waits, job, None);
        return Ok(());
    };
    if stonewall {
        new_phase(phases, waits, job, None);
        return Ok(());
    }
    let opened_by = waits.last().cloned().flatten();
    match (&wait_for, opened_by) {
        (Some((x, _)), Some(w)) if *x == w => {}
        (Some((x, at)), _) => {
            let others: Vec<&str> =
                last.jobs.iter().filter_map(|j| j.patch.name.as_deref()).filter(|n| n != x).collect();
            if others.is_empty() {
                new_phase(phases, waits, job, Some(x.clone()));
                return Ok(());
            }
            if last.jobs.iter().any(|j| j.patch.name.as_deref() == Some(x.as_str())) {
                said.unmapped(
                    at,
                    format!("wait_for={x}: fio starts `{name}` as `{x}` ends while `{}` still run beside it; iolab starts a job with its phase, or after the whole phase", others.join("`, `")),
                );
            }
            // Else `x` ended with an earlier phase, before this one started: nothing to wait.
        }
        (None, Some(w)) => {
            let at = job.at.clone();
            said.unmapped(
                &at,
                format!("`{name}` starts with `{w}` in fio, but follows a job that waits for `{w}` (wait_for); iolab would start it after `{w}` too: give it stonewall or wait_for={w}, or move it above"),
            );
        }
        (None, None) => {}
    }
    if let Some(p) = phases.last_mut() {
        p.jobs.push(job);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::fio::tests::{err_of_text, plan_of_text, Mem};
    use crate::fio::{parse, FioFile};
    use crate::units::Bytes;
    use crate::Workload;
    use std::path::{Path, PathBuf};

    fn lenient(text: &str) -> FioFile {
        let mut m = Mem::default();
        m.files.insert(PathBuf::from("/j/job.fio"), text.to_string());
        parse(Path::new("/j/job.fio"), &m, true).unwrap_or_else(|e| panic!("{e}"))
    }

    fn skipped(text: &str) -> Vec<String> {
        lenient(text).skipped.iter().map(|p| p.message.clone()).collect()
    }

    fn phases(text: &str) -> Vec<Vec<String>> {
        plan_of_text(text).phases.iter().map(|p| p.jobs.iter().map(|j| j.name.clone()).collect()).collect()
    }

    /// fio's examples/waitfor.fio in small: each job waits for the one above it.
    const CHAIN: &str =
        "[global]\nfilename=/data/f\nfilesize=128m\n[writers]\nrw=write\nbs=128k\nnumjobs=4\nruntime=10\n\
        [readers]\nnew_group\nwait_for=writers\nrw=randread\nbs=4k\nnumjobs=4\nruntime=10\n\
        [writers2]\nwait_for=readers\nrw=randwrite\nbs=4k\n";

    #[test]
    fn wait_for_the_phase_so_far_starts_a_new_phase() {
        assert_eq!(phases(CHAIN), [vec!["writers"], vec!["readers"], vec!["writers2"]]);
        // A second waiter for the same job starts with the first, as in fio.
        let two = format!("{CHAIN}[readers2]\nwait_for=readers\nrw=randread\n");
        assert_eq!(phases(&two), [vec!["writers"], vec!["readers"], vec!["writers2", "readers2"]]);
        // A job waiting for one that ended in an earlier phase starts with its own phase
        // (fio 3.33: a 2 s waiter of a 1 s job beside a 3 s job ended the run at 3.4 s).
        let done = "[a]\nfilename=/data/f\nsize=1m\n[b]\nstonewall\nfilename=/data/f\nsize=1m\n[c]\nwait_for=a\nfilename=/data/f\nsize=1m\n";
        assert_eq!(phases(done), [vec!["a"], vec!["b", "c"]]);
    }

    #[test]
    fn wait_for_beside_other_jobs_or_before_its_job_is_named() {
        // fio starts `b` as `a` ends while `c` still runs: iolab's phases cannot say that.
        let beside = "[global]\nfilename=/data/f\nsize=1m\n[a]\n[c]\n[b]\nwait_for=a\n";
        let s = skipped(beside);
        assert!(s.iter().any(|m| m.contains("wait_for=a") && m.contains("`c` still run")), "{s:?}");
        // A job after a waiter that does not wait itself started beside the waitee in fio.
        let after = format!("{CHAIN}[late]\nrw=read\n");
        let s = skipped(&after);
        assert!(s.iter().any(|m| m.contains("`late` starts with `readers`")), "{s:?}");
        // fio 3.33 refuses a waitee defined later or nowhere: "b: waitee job zz unknown".
        let e = err_of_text("[b]\nfilename=/data/f\nsize=64k\nwait_for=zz\n[zz]\nfilename=/data/f\nsize=64k\n");
        assert!(e.contains("wait_for=zz") && e.contains("waitee job zz unknown") && e.contains(":4"), "{e}");
        let e = err_of_text("[a]\nfilename=/data/f\nsize=1m\n[a]\nfilename=/data/f\nsize=1m\n[b]\nwait_for=a\nfilename=/data/f\nsize=1m\n");
        assert!(e.contains("2 jobs are named `a`"), "{e}");
    }

    #[test]
    fn filesize_is_the_file_and_size_the_io() {
        let p = plan_of_text(CHAIN);
        let j = &p.phases[0].jobs[0];
        assert_eq!(
            (j.size, j.workload.block().and_then(|b| b.io_size)),
            (Some(Bytes::mib(128)), Some(Bytes::mib(128)))
        );
        // fio 3.33: filesize=1m size=64k laid out 1 MiB and read 64 KiB.
        let p = plan_of_text("[t]\nfilename=/data/f\nfilesize=1m\nsize=64k\nrw=read\n");
        let j = &p.phases[0].jobs[0];
        assert_eq!((j.size, j.workload.block().and_then(|b| b.io_size)), (Some(Bytes::mib(1)), Some(Bytes::kib(64))));
        // time_based loops over the file for the runtime: size bounds nothing there.
        let p = plan_of_text("[t]\nfilename=/data/f\nfilesize=1m\nsize=256k\nrw=read\ntime_based\nruntime=1\n");
        let j = &p.phases[0].jobs[0];
        assert_eq!((j.size, j.workload.block().and_then(|b| b.io_size)), (Some(Bytes::mib(1)), None));
        let s = skipped("[t]\nfilename=/data/f\nfilesize=1m-2m\n");
        assert!(s.iter().any(|m| m.contains("filesize=1m-2m")), "{s:?}");
        assert!(skipped("[t]\nfilename=/data/f\nnrfiles=1\nfilesize=1m\n").is_empty());
        let e = err_of_text("[t]\nfilename=/data/f\nfilesize=2m-1m\n");
        assert!(e.contains("filesize") && e.contains("lo <= hi"), "{e}");
    }

    #[test]
    fn fill_device_is_fill_fs_on_sequential_writes() {
        let p = plan_of_text("[w]\nfilename=/data/f\nrw=write\nbs=64k\nfill_device=1\ncreate_serialize=0\n");
        let b = p.phases[0].jobs[0].workload.block().cloned().unwrap();
        assert!(b.fill_fs);
        assert_eq!(p.phases[0].jobs[0].size, None);
        let p = plan_of_text("[w]\nfilename=/data/f\nrw=write\nfill_fs=0\n");
        assert!(!p.phases[0].jobs[0].workload.block().unwrap().fill_fs);
        // fio fills the filesystem before a read job; iolab does not.
        let s = skipped("[r]\nfilename=/data/f\nsize=1m\nrw=randread\nfill_device=1\n");
        assert!(s.iter().any(|m| m.contains("fill_device with rw=randread")), "{s:?}");
        // iolab's own rule: filling takes sequential writes.
        let e = crate::JobPatch {
            rw: Some(crate::Rw::RandWrite),
            fill_fs: Some(true),
            target: Some("/data/f".into()),
            ..Default::default()
        }
        .resolve("j")
        .and_then(|j| j.validate())
        .unwrap_err()
        .to_string();
        assert!(e.contains("fill_fs") && e.contains("sequential writes"), "{e}");
    }

    #[test]
    fn offset_increment_and_blockalign_map() {
        let p = plan_of_text(
            "[t]\nfilename=/data/f\nsize=64k\nnumjobs=2\noffset_increment=1m\nrw=randread\nbs=512\nblockalign=4k\n",
        );
        let b = p.phases[0].jobs[0].workload.block().cloned().unwrap();
        assert_eq!((b.offset_increment.map(|v| v.get()), b.align.map(|v| v.get())), (Some(1 << 20), Some(4096)));
        assert_eq!(b.offset_of(1), 1 << 20);
        // blockalign equal to the smallest block size is iolab's own default: nothing set.
        let p = plan_of_text("[t]\nfilename=/data/f\nsize=64k\nrw=randread\nbs=4k\nblockalign=4k\n");
        assert_eq!(p.phases[0].jobs[0].workload.block().unwrap().align, None);
        // jesd219.fio's line, on a mixed job: one value for both directions.
        let p = plan_of_text("[t]\nfilename=/data/f\nsize=1m\nrw=randrw\nbssplit=512/50:4k/50\nblockalign=4k\n");
        assert_eq!(p.phases[0].jobs[0].workload.block().unwrap().align.map(|v| v.get()), Some(4096));
        let s = skipped("[t]\nfilename=/data/f\nsize=1m\nrw=randrw\nbs=512\nblockalign=4k,8k\n");
        assert!(s.iter().any(|m| m.contains("blockalign=4k,8k") && m.contains("one size")), "{s:?}");
        let s = skipped("[t]\nfilename=/data/f\nsize=1m\nnumjobs=2\noffset_increment=10%\n");
        assert!(s.iter().any(|m| m.contains("offset_increment=10%")), "{s:?}");
        // iolab's rule: a direct job's offsets stay on 512-byte boundaries.
        let e = err_of_text("[t]\nfilename=/data/f\nsize=1m\ndirect=1\nnumjobs=2\noffset_increment=100\n");
        assert!(e.contains("offset_increment") && e.contains("512"), "{e}");
    }

    #[test]
    fn nrfiles_is_a_set_of_files_per_thread_named_as_fio_names_them() {
        let text = "[t]\ndirectory=/data\nnrfiles=4\nfilesize=1m-2m\nfile_service_type=roundrobin:2\nnumjobs=2\nrw=write\nopenfiles=4\n";
        let p = plan_of_text(text);
        let j = &p.phases[0].jobs[0];
        let set = j.workload.block().and_then(|b| b.files.clone()).unwrap();
        assert_eq!(j.target, PathBuf::from("/data"));
        assert_eq!((set.count, set.size.map(|r| (r.low, r.high))), (4, Some((Bytes::mib(1), Bytes::mib(2)))));
        assert_eq!((set.service.to_string(), set.name("t", 1, 3)), ("roundrobin:2".to_string(), "t.1.3".to_string()));
        assert!(lenient(text).notes.iter().any(|n| n.message.contains("t.0.0 to t.1.3")));
        // Without filesize the job's size is shared among the files, as fio shares it.
        let p = plan_of_text("[t]\nnrfiles=4\nsize=4m\nfilename_format=f.$jobnum.$filenum\n");
        let j = &p.phases[0].jobs[0];
        let set = j.workload.block().and_then(|b| b.files.clone()).unwrap();
        assert_eq!(
            (j.target.clone(), set.size_of(j.size, 1, 0, 0, 4096), set.name("t", 0, 2)),
            (PathBuf::from("."), Some(1 << 20), "f.0.2".into())
        );
        for (extra, what) in [
            ("filename=/data/f\n", "filename=/data/f with nrfiles=4"),
            ("openfiles=1\n", "openfiles=1 with nrfiles=4"),
            ("file_service_type=zipf:1.2\n", "file_service_type=zipf:1.2"),
        ] {
            let s = skipped(&format!("[t]\ndirectory=/data\nnrfiles=4\nsize=4m\n{extra}"));
            assert!(s.iter().any(|m| m.contains(what)), "{what}: {s:?}");
        }
        // A format without $filenum would give the files one name: iolab's rule names it.
        let e = err_of_text("[t]\ndirectory=/data\nnrfiles=4\nsize=4m\nfilename_format=same\n");
        assert!(e.contains("$filenum"), "{e}");
    }

    #[test]
    fn file_creation_options_say_what_iolab_does() {
        let f = lenient("[t]\nfilename=/data/f\nsize=1m\nrw=write\ncreate_on_open=1\nfallocate=posix\nunlink=0\n");
        assert!(f.skipped.is_empty(), "{:?}", f.skipped);
        let notes: Vec<&str> = f.notes.iter().map(|n| n.message.as_str()).collect();
        assert!(notes.iter().any(|n| n.contains("create_on_open")), "{notes:?}");
        // fio makes a write-only job's new file by fallocate (its default, native, as posix);
        // a reader's is laid out with data, so it says nothing there; fill_device fills instead.
        let prealloc = |text: &str| {
            let p = plan_of_text(text);
            let Workload::Block(b) = &p.phases[0].jobs[0].workload else { panic!() };
            b.prealloc
        };
        use crate::prealloc::Prealloc;
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=randwrite\n"), Some(Prealloc::Fallocate));
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=write\nfallocate=posix\n"), Some(Prealloc::Fallocate));
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=write\nfallocate=none\n"), Some(Prealloc::None));
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=write\nfallocate=keep\n"), Some(Prealloc::Keep));
        // overwrite=1: laid out with data first, whatever fallocate says.
        assert_eq!(
            prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=write\noverwrite=1\nfallocate=keep\n"),
            Some(Prealloc::Data)
        );
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=write\noverwrite=0\n"), Some(Prealloc::Fallocate));
        assert_eq!(prealloc("[t]\nfilename=/data/f\nsize=1m\nrw=randrw\n"), None);
        assert_eq!(prealloc("[t]\nfilename=/data/f\nrw=write\nfill_device=1\n"), None);
        let s = skipped("[t]\nfilename=/data/f\nsize=1m\nunlink=1\n");
        assert!(s.iter().any(|m| m.contains("--cleanup")), "{s:?}");
        let e = err_of_text("[t]\nfilename=/data/f\nsize=1m\nfallocate=sometimes\n");
        assert!(e.contains("fallocate") && e.contains("none, native"), "{e}");
    }

    #[test]
    fn the_command_line_takes_them_too() {
        let args: Vec<String> =
            "--filename=/data/f --filesize=1m --name=a --rw=write --name=b --wait_for=a --rw=read --size=64k"
                .split_whitespace()
                .map(String::from)
                .collect();
        let f = crate::fio::cmdline::read_args(&args)
            .unwrap()
            .map(&Mem::default(), false)
            .unwrap_or_else(|e| panic!("{e}"));
        let p = f.plan(&crate::JobPatch::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.phases.len(), 2);
        let b = &p.phases[1].jobs[0];
        assert_eq!((b.size, b.workload.block().and_then(|w| w.io_size)), (Some(Bytes::mib(1)), Some(Bytes::kib(64))));
    }
}
