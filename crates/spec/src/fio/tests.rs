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
}

fn mem(files: &[(&str, &str)]) -> Mem {
    Mem { files: files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect(), vars: HashMap::new() }
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
ioengine=libaio
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
    assert!(f.notes.iter().any(|n| n.message.contains("libaio runs on io_uring") && n.at.line == 5), "{:?}", f.notes);
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
    let e = err_of("[j]\nfilename=/f\nsize=1m\nrw=randrw\nbs=8k,32k\n");
    assert!(e.contains("job.fio:5") && e.contains("different sizes"), "{e}");
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
    assert!(e.starts_with("/j/job.fio:2:") && e.contains("${DIR}` is not set"), "{e}");
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
    let text =
        "[global]\nverify=md5\ngtod_reduce=1\nnorandommap\n[a]\nfilename=/f\nsize=1m\n[b]\nfilename=/g\nsize=1m\n\
                random_distribution=pareto:0.9\nioengine=rbd\n";
    let e = parse_one(text).unwrap_err();
    let FioError::Unmapped(list) = &e else { panic!("{e}") };
    let lines: Vec<usize> = list.iter().map(|p| p.at.line).collect();
    assert_eq!(lines, [2, 3, 11, 12], "{e}");
    let text_e = e.to_string();
    assert!(text_e.contains("4 options iolab does not map") && text_e.contains("--fio-lenient"), "{text_e}");
    assert!(text_e.contains("/j/job.fio:2: `verify`"), "{text_e}");
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
