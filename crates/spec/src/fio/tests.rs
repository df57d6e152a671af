//! The fio job parser against job files in memory: what maps, what is refused, and where.

use super::*;
use crate::job::{Dist, EngineKind, Rw, SyncMode};
use crate::units::Bytes;
use std::collections::HashMap;
use std::time::Duration;

/// Files and variables in memory.
#[derive(Default)]
pub(crate) struct Mem {
    pub files: HashMap<PathBuf, String>,
    pub vars: HashMap<String, String>,
    /// Sizes of files and devices a percentage is of.
    pub sizes: HashMap<PathBuf, u64>,
}

impl Env for Mem {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file or directory"))
    }
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
    fn keyword(&self, word: &str) -> Option<u64> {
        match word {
            "$pagesize" => Some(4096),
            "$ncpus" => Some(2),
            "$mb_memory" => Some(1000),
            _ => None,
        }
    }
    fn file_size(&self, path: &Path) -> Option<u64> {
        self.sizes.get(path).copied()
    }
}

fn mem(files: &[(&str, &str)]) -> Mem {
    Mem {
        files: files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect(),
        vars: HashMap::new(),
        sizes: HashMap::new(),
    }
}

fn parse_one(text: &str) -> Result<FioFile, FioError> {
    parse(Path::new("/j/job.fio"), &mem(&[("/j/job.fio", text)]), false)
}

fn plan_of(text: &str) -> Plan {
    parse_one(text).unwrap_or_else(|e| panic!("{e}")).plan(&JobPatch::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// A job file's plan, for tests beside the mapping (`map.rs`'s steady-state block).
pub(crate) fn plan_of_text(text: &str) -> Plan {
    plan_of(text)
}

/// A job file's error in words, for tests beside the mapping.
pub(crate) fn err_of_text(text: &str) -> String {
    err_of(text)
}

fn err_of(text: &str) -> String {
    match parse_one(text) {
        Ok(f) => f.plan(&JobPatch::default()).map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        Err(e) => e.to_string(),
    }
}

const SEQ_THEN_RANDOM: &str = "\
; two phases: a sequential write, then random reads on the same file
[global]
filename=/data/f
size=1g
ioengine=posixaio
direct=1
iodepth=32   ; deep queue

[seq-write]
rw=write
bs=1m

[rand-read]
stonewall
rw=randread
bs=4k
numjobs=4
runtime=30
time_based
randseed=42
";

#[test]
fn global_and_jobs_become_phases_of_jobs() {
    let f = parse_one(SEQ_THEN_RANDOM).unwrap();
    assert!(f.notes.iter().any(|n| n.message.contains("posixaio runs on io_uring") && n.at.line == 5), "{:?}", f.notes);
    let plan = f.plan(&JobPatch::default()).unwrap();
    assert_eq!(plan.phases.len(), 2);
    assert_eq!(plan.phases[0].name, "seq-write");
    let w = &plan.phases[0].jobs[0];
    assert_eq!(w.target, PathBuf::from("/data/f"));
    assert_eq!(w.size, Some(Bytes::gib(1)));
    assert_eq!(w.engine, EngineKind::IoUring);
    assert_eq!(w.iodepth, 32);
    assert!(w.direct);
    let b = w.workload.block().unwrap();
    assert_eq!(b.rw, Rw::Write);
    assert_eq!(b.bs.to_string(), "1M");
    assert_eq!(w.runtime, None);
    let r = &plan.phases[1].jobs[0];
    assert_eq!(r.name, "rand-read");
    assert_eq!(r.threads, 4);
    assert_eq!(r.runtime, Some(Duration::from_secs(30)));
    assert_eq!(r.seed, 42);
    assert_eq!(r.workload.block().unwrap().io_size, None, "time_based runs for the runtime");
}

#[test]
fn jobs_without_stonewall_share_a_phase_and_global_applies_below_it_only() {
    let plan = plan_of(
        "[a]\nfilename=/t/a\nsize=1m\n[global]\nbs=64k\n[b]\nfilename=/t/b\nsize=1m\n[b]\nfilename=/t/c\nsize=1m\n",
    );
    assert_eq!(plan.phases.len(), 1);
    let jobs = &plan.phases[0].jobs;
    assert_eq!(jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), ["a", "b", "b-2"]);
    assert_eq!(jobs[0].workload.block().unwrap().bs.to_string(), "4k");
    assert_eq!(jobs[1].workload.block().unwrap().bs.to_string(), "64k");
}

#[test]
fn a_fio_job_drops_the_cache_first_unless_it_says_not_to() {
    let b = |text: &str| plan_of(text).phases[0].jobs[0].workload.block().unwrap().invalidate;
    assert!(b("[j]\nfilename=/f\nsize=1m\nrw=read\n"), "fio's default is invalidate=1");
    assert!(!b("[j]\nfilename=/f\nsize=1m\nrw=read\ninvalidate=0\n"));
    assert!(b("[global]\ninvalidate=1\n[j]\nfilename=/f\nsize=1m\n"));
}

#[test]
fn options_map_with_fio_units_and_semantics() {
    let plan = plan_of(
        "[j]\nname=mixed\ndirectory=/d\nrw=randrw\nrwmixwrite=30\nbssplit=4k/50:64k/\nsize=10m\nruntime=2m\n\
         random_distribution=zipf:1.1\nbuffer_compress_percentage=40\nfdatasync=16\nend_fsync=1\nramp_time=500ms\n\
         offset=1m\n",
    );
    let j = &plan.phases[0].jobs[0];
    let b = j.workload.block().unwrap();
    assert_eq!(j.name, "mixed");
    assert_eq!(j.target, PathBuf::from("/d"));
    assert_eq!(b.rw, Rw::RandRw);
    assert_eq!(b.mix, 70);
    assert_eq!(b.bs.to_string(), "4k:50,64k:50");
    assert_eq!(j.size, Some(Bytes::mib(10)));
    // runtime without time_based: one pass, cut at the runtime.
    assert_eq!(j.runtime, Some(Duration::from_secs(120)));
    assert_eq!(b.io_size, Some(Bytes::mib(10)));
    assert_eq!(b.dist, Dist::Zipf(1.1));
    assert_eq!(b.compressibility, 40);
    assert_eq!((b.sync, b.fsync_every), (SyncMode::Fdatasync, 16));
    assert!(b.end_fsync);
    assert_eq!(j.ramp, Duration::from_millis(500));
    assert_eq!(b.offset, Some(Bytes::mib(1)));
}

#[test]
fn ranges_holes_rates_and_sync_engines() {
    let plan = plan_of(
        "[global]\nkb_base=1000\n[j]\nfilename=/f\nsize=1m\nrw=write:4k\nbs=4k\nsync=dsync\nrate=1m\nnumjobs=2\n\
         ioengine=sync\niodepth=8\n[k]\nfilename=/g\nsize=1M\nbsrange=4KiB-10KiB\nrate_iops=100\nbuffered=0\n",
    );
    let j = &plan.phases[0].jobs[0];
    let b = j.workload.block().unwrap();
    // kb_base=1000: 4k is 4000 bytes.
    assert_eq!(b.bs.max(), Bytes(4000));
    assert_eq!(b.stride, Some(Bytes(8000)));
    assert_eq!(b.sync, SyncMode::Dsync);
    assert_eq!(b.rate, Some(Bytes(2_000_000)), "fio's rate is per clone");
    assert_eq!((j.engine, j.iodepth), (EngineKind::Psync, 1));
    let k = &plan.phases[0].jobs[1];
    let kb = k.workload.block().unwrap();
    assert_eq!(kb.bs.to_string(), "4k:2,8k:2,10k:1");
    assert_eq!(kb.rate_iops, Some(100));
    assert!(k.direct);
}

#[test]
fn per_direction_block_sizes_map_when_the_job_uses_one_of_them() {
    let plan = plan_of("[j]\nfilename=/f\nsize=1m\nrw=randwrite\nbs=8k,32k\n");
    assert_eq!(plan.phases[0].jobs[0].workload.block().unwrap().bs.to_string(), "32k");
    // A mixed job whose directions differ: the reads' sizes and the writes' (was refused before
    // iolab had per-direction sizes).
    let plan = plan_of("[j]\nfilename=/f\nsize=1m\nrw=randrw\nbs=8k,32k\n");
    let b = plan.phases[0].jobs[0].workload.block().unwrap().clone();
    assert_eq!((b.bs.to_string(), b.write_bs.map(|w| w.to_string())), ("8k".into(), Some("32k".into())));
}

#[test]
fn includes_are_relative_to_the_including_file() {
    let env = mem(&[
        ("/j/main.fio", "[global]\ninclude inc/common.fio\n[job]\nrw=write\ninclude inc/job.fio\n"),
        ("/j/inc/common.fio", "; shared\nsize=4m\ninclude deeper.fio\n"),
        ("/j/inc/deeper.fio", "bs=16k\n"),
        ("/j/inc/job.fio", "filename=/x/y\n"),
    ]);
    let f = parse(Path::new("/j/main.fio"), &env, false).unwrap();
    let plan = f.plan(&JobPatch::default()).unwrap();
    let j = &plan.phases[0].jobs[0];
    assert_eq!(j.size, Some(Bytes::mib(4)));
    assert_eq!(j.workload.block().unwrap().bs.to_string(), "16k");
    assert_eq!(j.target, PathBuf::from("/x/y"));
    assert_eq!(f.phases[0].jobs[0].from["bs"], Loc { file: "/j/inc/deeper.fio".into(), line: 1 });
}

#[test]
fn environment_and_reserved_words() {
    let mut env =
        mem(&[("/j/job.fio", "[j]\nfilename=${DIR}/f\nsize=${SIZE}\nnumjobs=$ncpus\nio_size=2*$mb_memory\n")]);
    env.vars.insert("DIR".into(), "/data".into());
    env.vars.insert("SIZE".into(), "64m".into());
    let plan = parse(Path::new("/j/job.fio"), &env, false).unwrap().plan(&JobPatch::default()).unwrap();
    let j = &plan.phases[0].jobs[0];
    assert_eq!(j.target, PathBuf::from("/data/f"));
    assert_eq!(j.size, Some(Bytes::mib(64)));
    assert_eq!(j.threads, 2);
    assert_eq!(j.workload.block().unwrap().io_size, Some(Bytes(2000)));
    env.vars.remove("DIR");
    let e = parse(Path::new("/j/job.fio"), &env, false).unwrap_err().to_string();
    // Named with its line among the job's other problems (fio 3.33 reads an empty value).
    assert!(e.contains("/j/job.fio:2: `${DIR}` is not set"), "{e}");
}

#[test]
fn an_unset_variable_is_named_beside_the_files_other_problems() {
    // fio's xnvme-zoned.fio: its hardware-specific zone mode, and the variables its comments
    // tell the user to set.
    let u = unmapped_of("[global]\nzonemode=zbd\nfilename=/f\nsize=1m\n[default]\n[override]\nrw=${NOPE_RW}\n");
    assert!(u.iter().any(|p| p.contains("zonemode=zbd")), "{u:?}");
    assert!(u.iter().any(|p| p.contains("job.fio:7: `${NOPE_RW}` is not set")), "{u:?}");
}

#[test]
fn bad_input_names_file_and_line() {
    for (text, line, what) in [
        ("[global]\nsize=1m\n[job\nrw=read\n", 3, "unclosed section"),
        ("size=1m\n[job]\n", 1, "before any [section]"),
        ("[job]\nsize=4q\n", 2, "unknown unit `q`"),
        ("[job]\nsize=1.5g\n", 2, "fractions"),
        ("[job]\nruntime=10sec\n", 2, "microseconds"),
        ("[job]\nrw=sideways\n", 2, "unknown pattern"),
        ("[job]\nbs\n", 2, "needs a value"),
        ("[job]\ninclude missing.fio\n", 2, "cannot read /j/missing.fio"),
        ("[job]\nnumjobs=0\n", 2, "0 jobs"),
        ("[job]\nsize=$HOME\n", 2, "fio substitutes only"),
        ("[global]\nsize=1m\n", 1, "no job section"),
        ("[[phase]]\n", 1, "TOML"),
        ("[job]\nfilename=/f\nsize=1m\nbs=1000\ndirect=1\n", 4, "multiple of 512"),
    ] {
        let e = err_of(text);
        assert!(e.contains(&format!("/j/job.fio:{line}:")) && e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn include_loops_are_refused_with_the_chain() {
    let env = mem(&[("/j/a.fio", "[j]\ninclude b.fio\n"), ("/j/b.fio", "size=1m\ninclude a.fio\n")]);
    let e = parse(Path::new("/j/a.fio"), &env, false).unwrap_err().to_string();
    assert!(e.starts_with("/j/b.fio:2: include loop: /j/a.fio -> /j/b.fio -> /j/a.fio"), "{e}");
    let env = mem(&[("/j/a.fio", "[j]\ninclude b.fio\n"), ("/j/b.fio", "[k]\n")]);
    let e = parse(Path::new("/j/a.fio"), &env, false).unwrap_err().to_string();
    assert!(e.starts_with("/j/b.fio:1:") && e.contains("options only"), "{e}");
}

#[test]
fn unmapped_options_are_all_named_once_or_skipped_when_lenient() {
    let text = "[global]\nlockmem=1m\ngtod_cpu=1\nnorandommap\n[a]\nfilename=/f\nsize=1m\n[b]\nfilename=/g\nsize=1m\n\
                random_distribution=zipf:1.2:0.25\nioengine=rbd\n";
    let e = parse_one(text).unwrap_err();
    let FioError::Unmapped(list) = &e else { panic!("{e}") };
    let lines: Vec<usize> = list.iter().map(|p| p.at.line).collect();
    assert_eq!(lines, [2, 3, 11, 12], "{e}");
    let text_e = e.to_string();
    assert!(text_e.contains("4 options iolab does not map") && text_e.contains("--fio-lenient"), "{text_e}");
    assert!(text_e.contains("/j/job.fio:2: `lockmem`"), "{text_e}");
    let f = parse(Path::new("/j/job.fio"), &mem(&[("/j/job.fio", text)]), true).unwrap();
    assert_eq!(f.skipped.len(), 4);
    let plan = f.plan(&JobPatch::default()).unwrap();
    assert_eq!(plan.phases[0].jobs[1].workload.block().unwrap().dist, Dist::Uniform);
}

#[test]
fn flags_override_the_file() {
    let f = parse_one(SEQ_THEN_RANDOM).unwrap();
    let plan = f.plan(&JobPatch { size: Some(Bytes::mib(8)), ..Default::default() }).unwrap();
    assert!(plan.phases.iter().flat_map(|p| &p.jobs).all(|j| j.size == Some(Bytes::mib(8))));
}

#[test]
fn converted_toml_is_the_same_plan() {
    for text in [SEQ_THEN_RANDOM, "[j]\nfilename=/f\nsize=1m\nrw=randrw\nbsrange=4k-16k\nrwmixread=80\nruntime=1m\n"] {
        let f = parse_one(text).unwrap();
        let toml_text = f.to_toml();
        let back =
            crate::parse_job_file(&toml_text, &JobPatch::default()).unwrap_or_else(|e| panic!("{e}\n{toml_text}"));
        assert_eq!(back, f.plan(&JobPatch::default()).unwrap(), "{toml_text}");
        assert!(toml_text.starts_with("# iolab job file converted from the fio job file /j/job.fio"));
    }
}

#[test]
fn converted_toml_keeps_control_characters_out_of_its_comments() {
    // Found by the fio_job fuzz target: a NUL in an option's name went into a TOML comment.
    let f = parse(Path::new("/j/job.fio"), &mem(&[("/j/job.fio", "[j]\nfilename=/f\nsize=1m\nru\0ns\r=1\n")]), true)
        .unwrap();
    let toml_text = f.to_toml();
    assert!(toml_text.contains("ru\\u{0}ns"), "{toml_text}");
    assert_eq!(crate::parse_job_file(&toml_text, &JobPatch::default()).unwrap(), f.plan(&JobPatch::default()).unwrap());
}

#[test]
fn recognised_by_content() {
    assert!(looks_like_fio(SEQ_THEN_RANDOM));
    assert!(looks_like_fio("# c\n[job1]\nrw=read\n"));
    assert!(!looks_like_fio("[defaults]\ntarget='x'\n[[phase]]\n[[phase.job]]\n"));
    assert!(!looks_like_fio("[[phase]]\n"));
    assert!(!looks_like_fio("target = 'x'\n"));
}

proptest::proptest! {
    /// Arbitrary text, and the example with one line replaced, parse or fail without panic.
    #[test]
    fn any_text_is_a_job_file_or_an_error(s in "\\PC{0,300}", line in 0usize..30, junk in "\\PC{0,30}") {
        let _ = parse_one(&s).map(|f| { let _ = f.plan(&JobPatch::default()); f.to_toml() });
        let mut lines: Vec<String> = SEQ_THEN_RANDOM.lines().map(String::from).collect();
        let i = line % lines.len();
        lines[i] = junk;
        let _ = parse_one(&lines.join("\n")).map(|f| { let _ = f.plan(&JobPatch::default()); f.to_toml() });
    }
}

/// ioengine=libaio runs on iolab's libaio engine, with fio's batching: its defaults (one I/O
/// per io_submit, one completion per io_getevents) where the file sets none, its values
/// (aliases included) where it does, and iodepth_low capped at the depth.
#[test]
fn libaio_runs_on_libaio_with_fios_batching() {
    let f = parse_one("[a]\nfilename=/data/f\nsize=1m\nioengine=libaio\niodepth=16\n").unwrap();
    assert!(!f.notes.iter().any(|n| n.message.contains("io_uring")), "{:?}", f.notes);
    let plan = f.plan(&JobPatch::default()).unwrap();
    let j = &plan.phases[0].jobs[0];
    assert_eq!((j.engine, j.iodepth), (EngineKind::Libaio, 16));
    let want = crate::engine::QueueBatch { submit: Some(1), complete_min: Some(1), complete_max: Some(1), low: None };
    assert_eq!(j.batch, want);
    let f = parse_one(
        "[a]\nfilename=/data/f\nsize=1m\nioengine=libaio\niodepth=16\niodepth_batch=8\niodepth_batch_complete=4\niodepth_batch_complete_max=16\niodepth_low=64\n",
    )
    .unwrap();
    let j = &f.plan(&JobPatch::default()).unwrap().phases[0].jobs[0];
    let want =
        crate::engine::QueueBatch { submit: Some(8), complete_min: Some(4), complete_max: Some(16), low: Some(16) };
    assert_eq!(j.batch, want);
    let f = parse_one("[a]\nfilename=/data/f\nsize=1m\nioengine=io_uring\niodepth=16\niodepth_batch=8\n").unwrap();
    assert!(f.notes.iter().any(|n| n.message.contains("only libaio batches")), "{:?}", f.notes);
    assert!(f.plan(&JobPatch::default()).unwrap().phases[0].jobs[0].batch.is_unset());
}

// fio's syntax in full (issue 27 item 2). Each claim about fio was checked with fio 3.33
// (`fio --debug=io`, or its JSON's io_bytes/total_ios, on a 64 KiB scratch file), as noted.

fn unmapped_of(text: &str) -> Vec<String> {
    match parse_one(text) {
        Err(FioError::Unmapped(list)) => list.into_iter().map(|p| p.to_string()).collect(),
        Err(e) => panic!("{e}"),
        Ok(_) => Vec::new(),
    }
}

fn notes_of(text: &str) -> Vec<String> {
    parse_one(text).unwrap_or_else(|e| panic!("{e}")).notes.iter().map(|p| p.to_string()).collect()
}

#[test]
fn rw_modifiers_as_fio_reads_them() {
    // fio 3.33, rw=read:-8k, bs=4k, 64 KiB: offsets 0, 56k, 52k, ... 4k, 0: backwards.
    // iolab's `backward` (the pattern's test checks that sequence).
    let b = plan_of("[j]\nfilename=/f\nsize=64k\nrw=read:-8k\n").phases[0].jobs[0].workload.block().unwrap().clone();
    assert_eq!((b.rw, b.backward, b.stride), (Rw::Read, Some(Bytes::kib(8)), None));
    // Backwards on a mixed job (fio keeps a position per direction), or by less than a block
    // (forwards, overlapping): not mapped, with the reason.
    let u = unmapped_of("[j]\nfilename=/f\nsize=64k\nrw=rw:-8k\n");
    assert!(
        u.len() == 1 && u[0].contains("job.fio:4: rw=rw:-8k") && u[0].contains("a position per direction"),
        "{u:?}"
    );
    let u = unmapped_of("[j]\nfilename=/f\nsize=64k\nrw=read:-2k\n");
    assert!(u.len() == 1 && u[0].contains("overlapping it and moving forwards"), "{u:?}");
    // fio 3.33, rw=randread:4: 0, 4k, 8k, 12k, then 44k, 48k, 52k, 56k: four in a row per offset.
    let u = unmapped_of("[j]\nfilename=/f\nsize=64k\nrw=randread:4\n");
    assert!(u.len() == 1 && u[0].contains("4 I/Os one after another at each random offset"), "{u:?}");
    // One I/O per offset is iolab's random pattern.
    assert_eq!(
        plan_of("[j]\nfilename=/f\nsize=64k\nrw=randread:1\n").phases[0].jobs[0].workload.block().unwrap().rw,
        Rw::RandRead
    );
    assert!(err_of("[j]\nfilename=/f\nsize=64k\nrw=randread:4k\n").contains("`4k` is 4"));
    // fio 3.33, rw=read:4k, bs=4k, 64 KiB: 0, 8k, ... 56k, then 0, 8k again (16 I/Os in all).
    let text = "[j]\nfilename=/f\nsize=64k\nrw=read:4k\n";
    let b = plan_of(text).phases[0].jobs[0].workload.block().unwrap().clone();
    assert_eq!(b.stride, Some(Bytes::kib(8)));
    assert!(notes_of(text).iter().any(|n| n.contains("wrapping to the file's start")), "{:?}", notes_of(text));
    assert_eq!(
        plan_of("[j]\nfilename=/f\nsize=64k\nrw=read:+4k\n").phases[0].jobs[0].workload.block().unwrap().stride,
        Some(Bytes::kib(8))
    );
}

#[test]
fn filename_keywords_are_fios() {
    // fio 3.33 named the file `x.$jobnum` for filename=x.$jobnum: the keywords are
    // filename_format's only.
    let text = "[j]\nfilename=/d/x.$jobnum\nsize=1m\n";
    assert_eq!(plan_of(text).phases[0].jobs[0].target, PathBuf::from("/d/x.$jobnum"));
    assert!(notes_of(text)
        .iter()
        .any(|n| n.contains("expands $jobname, $jobnum, $filenum and $clientuid in filename_format only")));
    // Elsewhere an unknown $word is refused, with what fio substitutes.
    let e = err_of("[j]\nfilename=/f\nsize=$jobnum\n");
    assert!(
        e.contains("job.fio:3:") && e.contains("$clientuid in filename_format") && e.contains("keep `$jobnum` as text"),
        "{e}"
    );
    // fio 3.33: filename_format=y.$jobname.$jobnum.$filenum made y.u.0.0 and y.u.1.0 for
    // numjobs=2; c.$clientuid.$JOBNAME.x made c..c.x (keywords in any case, $clientuid empty
    // when not client/server).
    let j = |t: &str| plan_of(t).phases[0].jobs[0].clone();
    assert_eq!(
        j("[u]\ndirectory=/d\nfilename_format=y.$jobname.$jobnum.$filenum\nsize=1m\n").target,
        PathBuf::from("/d/y.u.0.0")
    );
    assert_eq!(j("[c]\nfilename_format=/d/c.$clientuid.$JOBNAME.x\nsize=1m\n").target, PathBuf::from("/d/c..c.x"));
    // Clones sharing the format's one name share the file; with $jobnum each has its own.
    let shared = j("[u]\nfilename_format=/d/shared.$filenum\nsize=1m\nnumjobs=2\n");
    assert_eq!((shared.target, shared.threads), (PathBuf::from("/d/shared.0"), 2));
    let text = "[u]\ndirectory=/d\nfilename_format=y.$jobnum\nsize=1m\nnumjobs=2\n";
    assert_eq!(j(text).target, PathBuf::from("/d/."));
    assert!(notes_of(text).iter().any(|n| n.contains("own file as in fio, named iolab.u.N")));
}

fn with_file(text: &str, size: u64) -> Result<FioFile, FioError> {
    let mut env = mem(&[("/j/job.fio", text)]);
    env.sizes.insert(PathBuf::from("/f"), size);
    parse(Path::new("/j/job.fio"), &env, false)
}

#[test]
fn percentages_are_of_the_files_size() {
    let job = |t: &str| {
        let f = with_file(t, 64 << 10).unwrap_or_else(|e| panic!("{e}"));
        f.plan(&JobPatch::default()).unwrap_or_else(|e| panic!("{e}")).phases[0].jobs[0].clone()
    };
    // fio 3.33 on 64 KiB: size=50% read 0..28k (8 I/Os); offset=25% started at 16k; both: 16k..28k.
    assert_eq!(job("[j]\nfilename=/f\nsize=50%\n").size, Some(Bytes::kib(32)));
    let j = job("[j]\nfilename=/f\noffset=25%\n");
    assert_eq!((j.size, j.workload.block().unwrap().offset), (None, Some(Bytes::kib(16))));
    let j = job("[j]\nfilename=/f\noffset=25%\nsize=25%\n");
    assert_eq!((j.size, j.workload.block().unwrap().offset), (Some(Bytes::kib(16)), Some(Bytes::kib(16))));
    // offset=10% (6553.6 bytes) rounded up to the smallest block: 8k with bs=4k and bs=8k.
    assert_eq!(job("[j]\nfilename=/f\noffset=10%\nbs=8k\n").workload.block().unwrap().offset, Some(Bytes::kib(8)));
    assert_eq!(
        job("[j]\nfilename=/f\noffset=10%\noffset_align=16k\n").workload.block().unwrap().offset,
        Some(Bytes::kib(16))
    );
    // 0% and 100% are the whole file; fio read all 16 blocks for size=0%, size=100%, offset=0%.
    for t in ["size=0%", "size=100%", "offset=0%"] {
        let j = job(&format!("[j]\nfilename=/f\n{t}\n"));
        assert_eq!((j.size, j.workload.block().unwrap().offset), (None, None), "{t}");
    }
    assert_eq!(
        job("[j]\nfilename=/f\nsize=32k\nio_size=50%\n").workload.block().unwrap().io_size,
        Some(Bytes::kib(16))
    );
    // fio 3.33, size=1% of 64 KiB: "blocksize is larger than data set range".
    let e = with_file("[j]\nfilename=/f\nsize=1%\n", 64 << 10).unwrap_err().to_string();
    assert!(e.contains("job.fio:3:") && e.contains("less than one block"), "{e}");
    let e = err_of("[j]\nfilename=/nothere\nsize=50%\n");
    assert!(e.contains("job.fio:3:") && e.contains("/nothere, which does not exist"), "{e}");
    let u = unmapped_of("[j]\ndirectory=/d\nsize=50%\n");
    assert!(u.iter().any(|p| p.contains("files fio names itself")), "{u:?}");
}

#[test]
fn zone_units_count_under_zonemode_zbd_only() {
    // fio 3.33 without zonemode: size=8z read the whole 64 KiB file, offset=8z started at 0.
    let text = "[j]\nfilename=/f\nsize=8z\noffset=8z\n";
    let j = plan_of(text).phases[0].jobs[0].clone();
    assert_eq!((j.size, j.workload.block().unwrap().offset), (None, None));
    assert!(notes_of(text).iter().any(|n| n.contains("size=8z: fio counts zones only under zonemode=zbd")));
    let u = unmapped_of("[j]\nfilename=/f\nsize=8z\nzonemode=zbd\n");
    assert!(u.iter().any(|p| p.contains("zonemode=zbd: zoned block devices are hardware-specific")), "{u:?}");
    assert!(plan_of("[j]\nfilename=/f\nsize=1m\nzonemode=none\n").phases[0].jobs[0].size == Some(Bytes::mib(1)));
    // fio 3.33: "bs: 'z' suffix isn't applicable".
    assert!(err_of("[j]\nfilename=/f\nsize=1m\nbs=8z\n").contains("isn't applicable"));
}

#[test]
fn kb_base_applies_to_its_whole_section_and_repeated_keys_take_the_last_value() {
    // fio 3.33: size=64k then kb_base=1000 in one section is 64000 bytes (64 I/Os of 1000);
    // a job's kb_base leaves [global]'s size=64k at 65536 (65 I/Os).
    let j = |t: &str| plan_of(t).phases[0].jobs[0].clone();
    assert_eq!(j("[j]\nfilename=/f\nsize=64k\nkb_base=1000\n").size, Some(Bytes(64_000)));
    let k = j("[global]\nsize=64k\n[j]\nfilename=/f\nkb_base=1000\nbs=1k\n");
    assert_eq!((k.size, k.workload.block().unwrap().bs.max()), (Some(Bytes(65_536)), Bytes(1000)));
    assert_eq!(j("[global]\nkb_base=1000\n[j]\nfilename=/f\nsize=64k\n").size, Some(Bytes(64_000)));
    // fio 3.33: size=8k then size=4k did 4 I/Os of 1000 bytes; rw=randwrite then rw=read, bs=1k
    // then bs=2k read 8192 bytes in 4 I/Os.
    let k = j("[j]\nfilename=/f\nsize=8k\nsize=4k\nrw=randwrite\nrw=read\nbs=1k\nbs=2k\n");
    let b = k.workload.block().unwrap();
    assert_eq!((k.size, b.rw, b.bs.max()), (Some(Bytes::kib(4)), Rw::Read, Bytes::kib(2)));
}

// Options that map onto what iolab has (issue 27 item 1, the fio-syntax part).

#[test]
fn the_verify_family_maps_onto_validation() {
    // basic-verify.fio: a random write job with verify=crc32c and do_verify's default (1).
    let text = "[w]\nfilename=/f\nsize=1m\nrw=randwrite\nbs=4k\nverify=crc32c\n";
    let j = plan_of(text).phases[0].jobs[0].clone();
    let v = j.verify.clone().expect("validation on");
    assert!(v.after, "do_verify=1: everything written is read back after the writes");
    assert_eq!(v.max_errors, 0, "fio keeps checking after a bad block unless verify_fatal=1");
    assert!(notes_of(text).iter().any(|n| n.contains("not fio's crc32c header")));
    // surface-scan.fio: write with do_verify=0, then read and check.
    let plan = plan_of(
        "[global]\nfilename=/f\nsize=1m\nbs=64k\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n\
         [write]\nrw=write\ndo_verify=0\n[read]\nstonewall\nrw=read\ndo_verify=1\nverify_fatal=1\n",
    );
    let (w, r) = (&plan.phases[0].jobs[0], &plan.phases[1].jobs[0]);
    assert!(w.verify.as_ref().is_some_and(|v| !v.after));
    assert!(r.verify.as_ref().is_some_and(|v| !v.after && v.max_errors == 1), "{:?}", r.verify);
    // verify=0 and verify=null are off.
    assert!(plan_of("[j]\nfilename=/f\nsize=1m\nverify=0\n").phases[0].jobs[0].verify.is_none());
    let u = unmapped_of("[j]\nfilename=/f\nsize=1m\nrw=write\nverify=md5\nverify_backlog=1\nverify_only=1\n");
    assert!(u.len() == 1 && u[0].contains("iolab verify --journal"), "{u:?}");
    // verify_backlog: the writes read back and checked during the run, in batches.
    let v = |text: &str| plan_of(text).phases[0].jobs[0].verify.clone();
    let b = v("[j]\nfilename=/f\nsize=1m\nrw=randwrite\nverify=crc32c\nverify_backlog=1024\nverify_backlog_batch=16\n");
    assert_eq!(b.map(|b| (b.backlog, b.backlog_batch)), Some((1024, 16)));
    let b = v("[j]\nfilename=/f\nsize=1m\nrw=write\nverify=crc32c\nverify_backlog=1\n");
    assert_eq!(b.map(|b| (b.backlog, b.backlog_batch)), Some((1, 0)));
    // Without verify, fio checks nothing: no validation.
    assert!(v("[j]\nfilename=/f\nsize=1m\nrw=write\nverify_backlog=8\n").is_none());
    assert!(err_of("[j]\nfilename=/f\nsize=1m\nverify=sha7\n").contains("job.fio:4: verify: `sha7`"));
}

#[test]
fn logs_from_the_job_file_are_iolabs_per_phase_or_per_io_logs() {
    // A file with write_bw_log in every section (the user file).
    let f = parse_one(
        "[global]\nfilename=/f\nsize=1m\nlog_avg_msec=2000\n[a]\nrw=read\nwrite_bw_log=cdm\nwrite_lat_log=cdm\n\
         [b]\nstonewall\nrw=write\nwrite_bw_log=cdm\nwrite_iops_log\n",
    )
    .unwrap();
    let logs = f.logs.clone().unwrap();
    // The converted file says which flags write them (the TOML has no place for a run's logs).
    assert!(
        f.to_toml().contains(
            "# run it with: iolab run THIS.toml --write-bw-log cdm --write-iops-log b --write-lat-log cdm --log-avg-msec 2000 (the file's logs)"
        ),
        "{}",
        f.to_toml()
    );
    assert_eq!(
        logs,
        FioLogs {
            bw: Some("cdm".into()),
            iops: Some("b".into()),
            lat: Some("cdm".into()),
            avg_msec: 2000,
            logged: vec![true, true],
            ..Default::default()
        }
    );
    // Without log_avg_msec fio logs each I/O, and so does iolab (window 0), with the offset
    // and priority columns log_offset and log_prio add; only the jobs that ask are logged.
    let text = "[a]\nfilename=/f\nsize=1m\nwrite_bw_log=x\nlog_offset=1\nlog_prio=1\n[b]\nfilename=/g\nsize=1m\n";
    let f = parse_one(text).unwrap();
    let toml = f.to_toml();
    assert!(toml.contains("THIS.toml --write-bw-log x --log-avg-msec 0 --log-offset --log-prio"), "{toml}");
    assert!(toml.contains("logs only some of its jobs"), "{toml}");
    let l = f.logs.unwrap();
    assert_eq!((l.avg_msec, l.offset, l.prio, l.logged), (0, true, true, vec![true, false]));
    assert!(!notes_of(text).iter().any(|n| n.contains("fio logs every I/O")));
    let u = unmapped_of(
        "[a]\nfilename=/f\nsize=1m\nwrite_bw_log=x\nlog_avg_msec=500\n[b]\nfilename=/g\nsize=1m\nwrite_bw_log=y\n",
    );
    assert!(
        u.iter().any(|p| p.contains("log_avg_msec=500")) && u.iter().any(|p| p.contains("`y` beside `x`")),
        "{u:?}"
    );
    // One window: per-I/O beside averaged is refused, naming both.
    let u = unmapped_of(
        "[a]\nfilename=/f\nsize=1m\nwrite_bw_log=x\nlog_avg_msec=1000\n[b]\nfilename=/g\nsize=1m\nwrite_bw_log=x\n",
    );
    assert!(u.iter().any(|p| p.contains("no log_avg_msec (every I/O logged) beside log_avg_msec=1000")), "{u:?}");
    assert!(parse_one("[a]\nfilename=/f\nsize=1m\n").unwrap().logs.is_none());
}

#[test]
fn a_crystaldiskmark_file_with_a_ramp_on_size_bounded_jobs_runs() {
    // fio 3.33, size=4m at 512 IOPS with ramp_time=1: 1024 I/Os in all, 511 reported.
    let plan = plan_of(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/f\nsize=64m\nramp_time=5s\n\
         [SEQ1M-Q8T1-Read]\nrw=read\nbs=1m\niodepth=8\n[RND4K-Q1T1-Write]\nwait_for_previous\nrw=randwrite\nbs=4k\n",
    );
    assert_eq!(plan.phases.len(), 2);
    for j in plan.phases.iter().flat_map(|p| &p.jobs) {
        assert_eq!((j.ramp, j.runtime), (Duration::from_secs(5), None));
        assert_eq!(j.workload.block().unwrap().io_size, Some(Bytes::mib(64)), "the ramp counts toward the size");
    }
}

#[test]
fn submission_log_offset_and_alignment_options_map_where_iolab_does_the_same() {
    assert!(parse_one("[j]\nfilename=/f\nsize=1m\nio_submit_mode=inline\nlog_offset=0\nblockalign=4k\n").is_ok());
    // offload maps with a note (iolab's threads submit their own I/O; see the capabilities' test).
    // blockalign below the smallest block size maps onto `align` (fio-files); log_offset=1 is
    // the per-I/O logs' column, which averaged logs do not have.
    let u = unmapped_of(
        "[j]\nfilename=/f\nsize=1m\nio_submit_mode=offload\nlog_offset=1\nbs=8k\nblockalign=4k\nwrite_bw_log=b\nlog_avg_msec=1000\n",
    );
    assert!(u.len() == 1 && u[0].contains("log_offset=1 with log_avg_msec=1000"), "{u:?}");
    let p = plan_of("[j]\nfilename=/f\nsize=1m\nrw=randread\nbs=8k\nblockalign=4k\n");
    assert_eq!(p.phases[0].jobs[0].workload.block().and_then(|b| b.align).map(|v| v.get()), Some(4096));
}

#[test]
fn an_include_is_found_as_fio_finds_it() {
    // fio 3.33 run from B on ../A/main.fio with `include inc.fio`: B/inc.fio (size=4k) was
    // read, not A/inc.fio (size=8k); without B/inc.fio, A/inc.fio.
    let files = [("/A/main.fio", "[j]\nfilename=/f\ninclude inc.fio\n"), ("/A/inc.fio", "size=8k\n")];
    let size = |env: &Mem| {
        parse(Path::new("/A/main.fio"), env, false).unwrap().plan(&JobPatch::default()).unwrap().phases[0].jobs[0].size
    };
    assert_eq!(size(&mem(&files)), Some(Bytes::kib(8)));
    let mut env = mem(&files);
    env.files.insert(PathBuf::from("inc.fio"), "size=4k\n".into());
    assert_eq!(size(&env), Some(Bytes::kib(4)));
}

#[test]
fn an_escaped_colon_is_part_of_a_filename() {
    // fio's HOWTO: `filename=/dev/dsk/foo@3,0\:c` names /dev/dsk/foo@3,0:c.
    assert_eq!(
        plan_of("[j]\nfilename=/d/foo@3,0\\:c\nsize=1m\n").phases[0].jobs[0].target,
        PathBuf::from("/d/foo@3,0:c")
    );
    let u = unmapped_of("[j]\nfilename=/d/a:/d/b\nsize=1m\n");
    assert!(u.len() == 1 && u[0].contains("several files"), "{u:?}");
}

#[test]
fn random_distribution_maps_pareto_normal_and_zones() {
    let dist = |v: &str| {
        plan_of(&format!("[j]\nfilename=/f\nsize=1g\nrw=randread\nrandom_distribution={v}\n")).phases[0].jobs[0]
            .workload
            .block()
            .unwrap()
            .dist
            .clone()
    };
    assert_eq!(dist("pareto:0.9"), Dist::Pareto(0.9));
    assert_eq!(dist("normal:10"), Dist::Normal(10.0));
    assert_eq!(dist("zoned:60/10:30/20:8/30:2/40"), Dist::Zoned(vec![(60, 10), (30, 20), (8, 30), (2, 40)]));
    // fio's sizes: with kb_base=1000, 20m is 20 MB.
    assert_eq!(dist("zoned_abs:60/20m:40/80m"), Dist::ZonedAbs(vec![(60, Bytes::mib(20)), (40, Bytes::mib(80))]));
    let d = plan_of("[j]\nkb_base=1000\nfilename=/f\nsize=1g\nrw=randread\nrandom_distribution=zoned_abs:100/20m\n")
        .phases[0]
        .jobs[0]
        .workload
        .block()
        .unwrap()
        .dist
        .clone();
    assert_eq!(d, Dist::ZonedAbs(vec![(100, Bytes(20_000_000))]));
    // fio refuses these too: access shares not adding up to 100, pareto's h outside (0, 1).
    for bad in ["zoned:50/10:40/90", "pareto:1.5", "normal:101", "zoned:50/60:50/60"] {
        let e = err_of(&format!("[j]\nfilename=/f\nsize=1g\nrw=randread\nrandom_distribution={bad}\n"));
        assert!(e.contains("random_distribution"), "{bad}: {e}");
    }
    // A center, and zones per direction: not mapped, and said.
    for v in ["zipf:1.2:0.25", "normal:10:0.5", "zoned:100/100,50/50:50/50"] {
        let u = unmapped_of(&format!("[j]\nfilename=/f\nsize=1g\nrw=randread\nrandom_distribution={v}\n"));
        assert!(u.iter().any(|s| s.contains("random_distribution")), "{v}: {u:?}");
    }
}

#[test]
fn dist_flag_forms_round_trip_and_bad_ones_say_what_is_accepted() {
    for s in ["uniform", "zipf:1.2", "pareto:0.9", "normal:10", "zoned:50/5:30/15:20/80", "zoned_abs:60/20M:40/80M"] {
        let d: Dist = s.parse().unwrap();
        assert_eq!(d.to_string(), s);
    }
    assert_eq!(
        "zoned_abs:60/20m:40/1g".parse::<Dist>().unwrap(),
        Dist::ZonedAbs(vec![(60, Bytes::mib(20)), (40, Bytes::gib(1))])
    );
    for (bad, says) in [
        ("pareto:0", "above 0 and below 1"),
        ("pareto:x", "pareto:0.9"),
        ("normal:-1", "0 to 100"),
        ("zoned:50/5:30/15", "add up to 80"),
        ("zoned:50/60:50/50", "add up to 110"),
        ("zoned:50-5", "ACCESS%/SIZE"),
        ("zoned:101/5", "access percentage"),
        ("zoned_abs:100/lots", "size"),
        ("gauss:3", "accepted: uniform"),
    ] {
        let e = bad.parse::<Dist>().unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// fio 3.33's zoned regions left blank (options.c's zone_split_ddir; offsets counted from
/// fio's --write_iolog on a 100 MiB file, 25600 reads of 4 KiB): `20/`, `20/0` and `20` each get
/// what the others leave (80%: 20.1% of reads in the last 80%), several blanks share it equally
/// (`50/10:25/:25/`: 24.7% in 10-55%, 25.0% in 55-100%), a blank left nothing is an empty zone
/// fio barely reads (refused).
#[test]
fn zoned_regions_left_blank_share_the_rest_as_fios_do() {
    let rest = Dist::Zoned(vec![(50, 5), (30, 15), (20, 80)]);
    for s in ["zoned:50/5:30/15:20/", "zoned:50/5:30/15:20/0", "zoned:50/5:30/15:20", "zoned:50/5:30/15:20/80"] {
        assert_eq!(s.parse::<Dist>().unwrap(), rest, "{s}");
    }
    assert_eq!("zoned:50/10:25/:25/".parse::<Dist>().unwrap(), Dist::Zoned(vec![(50, 10), (25, 45), (25, 45)]));
    // fio's integer division: 100 - 10 = 90 over 4 blanks, 22 each (88 of 100).
    assert_eq!(
        "zoned:40/10:15/:15/:15/:15/".parse::<Dist>().unwrap(),
        Dist::Zoned(vec![(40, 10), (15, 22), (15, 22), (15, 22), (15, 22)])
    );
    for bad in ["zoned:100/", "zoned:50/100:50/"] {
        let e = bad.parse::<Dist>().unwrap_err();
        assert!(e.contains("left blank") && e.contains("0%"), "{bad}: {e}");
    }
    // zoned_abs keeps its sizes: a zone without one is refused.
    assert!("zoned_abs:50/1m:50".parse::<Dist>().unwrap_err().contains("ACCESS%/SIZE"));
    // rand-zones.fio's distribution, read from its job file.
    let d = plan_of("[j]\nfilename=/f\nsize=2g\nrw=randread\nnorandommap\nrandom_distribution=zoned:50/5:30/15:20/\n")
        .phases[0]
        .jobs[0]
        .workload
        .block()
        .unwrap()
        .dist
        .clone();
    assert_eq!(d, rest);
}

#[test]
fn huge_zone_sizes_do_not_overflow() {
    let d: Dist = "zoned_abs:50/16383P:50/16383P".parse().unwrap();
    assert!(matches!(d, Dist::ZonedAbs(z) if z.len() == 2));
}

#[test]
fn strided_zones_map_and_zonesize_without_a_zone_mode_is_refused_as_fio_refuses_it() {
    use crate::block::Zones;
    // fio's disk-zone-profile.fio: 256m of each zone, 2g skipped after it.
    let plan = plan_of("[j]\nfilename=/f\nsize=8g\nbs=64k\nrw=read\nzonemode=strided\nzonesize=256m\nzoneskip=2g\n");
    let b = plan.phases[0].jobs[0].workload.block().unwrap();
    assert_eq!(b.zones.as_deref(), Some(&Zones { size: Bytes::mib(256), range: Bytes::mib(256), skip: Bytes::gib(2) }));
    let plan = plan_of("[j]\nfilename=/f\nsize=8m\nrw=randread\nzonemode=strided\nzonesize=16k\nzonerange=64k\n");
    let b = plan.phases[0].jobs[0].workload.block().unwrap();
    assert_eq!(b.zones.as_deref(), Some(&Zones { size: Bytes::kib(16), range: Bytes::kib(64), skip: Bytes(0) }));
    // fio 3.33: "fio: --zonemode=none and --zonesize are not compatible."
    for text in
        ["[j]\nfilename=/f\nsize=1m\nzonesize=16k\n", "[j]\nfilename=/f\nsize=1m\nzonemode=none\nzonesize=16k\n"]
    {
        let e = parse_one(text).unwrap_err().to_string();
        assert!(e.contains("--zonemode=none and --zonesize are not compatible"), "{e}");
    }
    let e = parse_one("[j]\nfilename=/f\nsize=1m\nzonemode=strided\n").unwrap_err().to_string();
    assert!(e.contains("zonemode=strided needs zonesize"), "{e}");
    // Zone units count zbd's zones only; zbd itself stays refused as hardware.
    let u = unmapped_of("[j]\nfilename=/f\nsize=1m\nzonemode=strided\nzonesize=16k\nzoneskip=2z\n");
    assert!(u.len() == 1 && u[0].contains("zoneskip=2z"), "{u:?}");
    let u = unmapped_of("[j]\nfilename=/f\nsize=1m\nzonemode=zbd\nzonesize=16k\nzoneskip=2z\n");
    assert!(u.len() == 1 && u[0].contains("zonemode=zbd: zoned block devices are hardware-specific"), "{u:?}");
    // A zone range larger than the region is refused naming the field.
    let e = parse_one("[j]\nfilename=/f\nsize=1m\nzonemode=strided\nzonesize=16k\nzonerange=2m\n")
        .unwrap()
        .plan(&JobPatch::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("zone_range") && e.contains("larger than the region"), "{e}");
}

/// io_uring's sqthread_poll (bare or =1) and sqthread_poll_cpu map onto `sqpoll`; =0 is off;
/// the CPU alone does nothing (a note, as in fio); with another engine both are refused, as fio
/// refuses them (posixaio too, though iolab runs it on io_uring).
#[test]
fn sqthread_poll_maps_on_io_uring_alone() {
    use crate::engine::SqPoll;
    let base = "[a]\nfilename=/d/f\nsize=1m\nrw=randread\nioengine=io_uring\n";
    let job = |extra: &str| plan_of(&format!("{base}{extra}")).phases[0].jobs[0].clone();
    assert_eq!(job("sqthread_poll\n").sqpoll, SqPoll { on: true, cpu: None });
    assert_eq!(job("sqthread_poll=1\nsqthread_poll_cpu=1\n").sqpoll, SqPoll { on: true, cpu: Some(1) });
    assert_eq!(job("sqthread_poll=0\n").sqpoll, SqPoll::default());
    assert_eq!(job("").sqpoll, SqPoll::default());
    assert_eq!(job("sqthread_poll_cpu=1\n").sqpoll, SqPoll::default());
    let notes = notes_of(&format!("{base}sqthread_poll_cpu=1\n"));
    assert!(notes.iter().any(|n| n.contains("sqthread_poll_cpu=1 has no effect without sqthread_poll")), "{notes:?}");
    for engine in ["libaio", "psync", "posixaio"] {
        let u = unmapped_of(&format!("[a]\nfilename=/d/f\nsize=1m\nioengine={engine}\nsqthread_poll=1\n"));
        assert!(
            u.iter().any(|m| m.contains("sqthread_poll is an option of fio's io_uring engine")
                && m.contains(&format!("ioengine={engine}"))),
            "{engine}: {u:?}"
        );
    }
    let u = unmapped_of("[a]\nfilename=/d/f\nsize=1m\nsqthread_poll=1\n");
    assert!(u.iter().any(|m| m.contains("ioengine=psync")), "fio's default engine: {u:?}");
}

#[test]
fn continue_on_error_and_ignore_error_map_as_fio_decides_which_errors_it_goes_on_after() {
    use crate::on_error::OnError;
    let on = |text: &str| plan_of(text).phases[0].jobs[0].workload.block().and_then(|b| b.on_error.clone());
    // Off, or a list alone: the first error ends the job, as in fio (nothing unmapped).
    let off = "[t]\nfilename=/data/f\nsize=1m\ncontinue_on_error=none\nerror_dump=1\nignore_error=,\n";
    assert!(unmapped_of(off).is_empty() && on(off).is_none());
    let alone = "[t]\nfilename=/data/f\nsize=1m\nignore_error=,ENOSPC\n";
    assert!(on(alone).is_none() && notes_of(alone).iter().any(|n| n.contains("without continue_on_error")));
    // enospc-pressure.fio's: write errors with ENOSPC (28) only.
    let e = on("[t]\nfilename=/data/f\nsize=1m\nrw=randwrite\ncontinue_on_error=write\nignore_error=,ENOSPC\n");
    assert_eq!(e.as_deref(), Some(&OnError { read: None, write: Some(vec![28]) }));
    // all without a list: fio's non-fatal EIO and EILSEQ both ways, and a note on verify.
    let all = "[t]\nfilename=/data/f\nsize=1m\ncontinue_on_error=all\n";
    assert_eq!(on(all).as_deref(), Some(&OnError { read: Some(vec![5, 84]), write: Some(vec![5, 84]) }));
    assert!(notes_of(all).iter().any(|n| n.contains("max_errors")));
    let e = err_of("[t]\nfilename=/data/f\nsize=1m\ncontinue_on_error=sometimes\n");
    assert!(e.contains("continue_on_error") && e.contains("none, read"), "{e}");
    let e = err_of("[t]\nfilename=/data/f\nsize=1m\ncontinue_on_error=io\nignore_error=ENOSPACE\n");
    assert!(e.contains("ignore_error") && e.contains("`ENOSPACE` is not an error"), "{e}");
}

#[test]
fn trims_map_with_the_trims_block_size() {
    // bs=R,W,T: a trim job takes the third (fio's trims'); one value applies to all three.
    for (rw, want) in [("trim", Rw::Trim), ("randtrim", Rw::RandTrim), ("trimwrite", Rw::TrimWrite)] {
        let plan = plan_of(&format!("[t]\nfilename=/dev/sdx\nsize=4m\nrw={rw}\nbs=4k,64k,64k\n"));
        let b = plan.phases[0].jobs[0].workload.block().unwrap().clone();
        assert_eq!((b.rw, b.bs.max(), b.write_bs), (want, Bytes::kib(64), None), "{rw}");
    }
    let b = plan_of("[t]\nfilename=/dev/sdx\nsize=4m\nrw=randtrim\nbs=64k\n").phases[0].jobs[0]
        .workload
        .block()
        .unwrap()
        .clone();
    assert_eq!((b.rw, b.bs.max()), (Rw::RandTrim, Bytes::kib(64)));
    // trimwrite writes each block at its trim's size: writes sized apart are not mapped.
    let e = err_of("[t]\nfilename=/dev/sdx\nsize=4m\nrw=trimwrite\nbs=4k,8k,64k\n");
    assert!(e.contains("trimwrite's writes are not the trims' size"), "{e}");
    let e = err_of("[t]\nfilename=/dev/sdx\nsize=4m\nrw=randtrimwrite\n");
    assert!(e.contains("randtrimwrite"), "{e}");
    // What a trim leaves cannot be validated.
    let e = err_of("[t]\nfilename=/dev/sdx\nsize=4m\nrw=trim\nverify=crc32c\n");
    assert!(e.contains("verify") && e.contains("trim"), "{e}");
}
