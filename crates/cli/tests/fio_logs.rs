//! fio's per-I/O logs (a job file's write_*_log without log_avg_msec, or `--log-avg-msec 0`):
//! one line per I/O, with the offset and priority columns log_offset and log_prio add, in the
//! format fio 3.33 writes for the same job.

mod common;

use common::{iolab, skip};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new("which").arg(cmd).output().is_ok_and(|o| o.status.success())
}

/// 1 MiB of mixed random 4 KiB I/O at depth 4 on libaio, 30% of it at rt/0 and the rest at the
/// thread's be/3; every I/O logged with its offset and priority.
const JOB: &str = "\
[global]
filename=${TESTFILE}
size=1m
bs=4k
ioengine=libaio
iodepth=4
write_lat_log=p
write_bw_log=p
log_offset=1
log_prio=1

[mixed]
rw=randrw
prioclass=2
prio=3
cmdprio_percentage=30
cmdprio_class=1
";

/// A log's lines as numbers (the priority column read as hex).
fn lines(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|x| match x.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => x.parse().unwrap(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn per_io_logs_have_a_line_per_io_with_offset_and_priority_as_fio_writes_them() {
    let d = common::disk_tempdir();
    let job = d.path().join("prio.fio");
    std::fs::write(&job, JOB).unwrap();
    let ours = d.path().join("iolab");
    std::fs::create_dir(&ours).unwrap();
    let out = iolab()
        .args(["run", "--no-store", "--output", "json"])
        .arg(&job)
        .env("TESTFILE", ours.join("f"))
        .current_dir(&ours)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &v["phases"][0]["total"];
    let (reads, writes) = (total["read"]["ops"].as_u64().unwrap(), total["write"]["ops"].as_u64().unwrap());
    assert_eq!(reads + writes, 256, "1 MiB in 4 KiB I/Os");
    // fio's names: PREFIX_lat.1.log and PREFIX_bw.1.log (thread 1), no IOPS log.
    let names: BTreeSet<String> =
        std::fs::read_dir(&ours).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
    assert_eq!(names, ["f", "p_bw.1.log", "p_lat.1.log"].map(String::from).into(), "{names:?}");
    let lat = lines(&ours.join("p_lat.1.log"));
    let bw = lines(&ours.join("p_bw.1.log"));
    assert_eq!(lat.len() as u64, reads + writes, "one line per I/O");
    assert_eq!(bw.len(), lat.len());
    let mut prios = BTreeSet::new();
    let mut rt = 0;
    let mut last_t = 0;
    for (l, b) in lat.iter().zip(&bw) {
        // time_ms, latency ns, ddir, bs, offset, prio: six columns with log_offset.
        assert_eq!(l.len(), 6, "{l:?}");
        assert!(l[0] >= last_t, "completions in time order: {l:?}");
        last_t = l[0];
        assert!(l[1] > 0, "{l:?}");
        assert!(l[2] <= 1 && l[3] == 4096, "{l:?}");
        assert!(l[4] % 4096 == 0 && l[4] + 4096 <= 1 << 20, "offset within the file: {l:?}");
        // The same I/O in the bandwidth log: bytes x 10^6 / latency in ns.
        assert_eq!((b[0], b[2], b[3], b[4], b[5]), (l[0], l[2], l[3], l[4], l[5]));
        assert_eq!(b[1], 4096 * 1_000_000 / l[1], "{b:?} {l:?}");
        prios.insert(l[5]);
        rt += u64::from(l[5] == 0x2000);
    }
    assert_eq!(lat.iter().filter(|l| l[2] == 0).count() as u64, reads);
    // cmdprio: rt/0 is 0x2000, the thread's be/3 0x4003; about 30% of 256 at rt.
    assert_eq!(prios, [0x2000, 0x4003].into(), "{prios:x?}");
    assert!((40..=115).contains(&rt), "{rt} of 256 at rt/0 (30% asked)");

    if !have("fio") {
        return skip("fio is not installed: the lines were not compared with fio 3.33's");
    }
    let theirs = d.path().join("fio");
    std::fs::create_dir(&theirs).unwrap();
    let fio = Command::new("fio")
        .arg("--output-format=json")
        .arg(&job)
        .env("TESTFILE", theirs.join("f"))
        .current_dir(&theirs)
        .output()
        .unwrap();
    assert!(fio.status.success(), "fio: {}", String::from_utf8_lossy(&fio.stderr));
    // fio writes _lat, _clat and _slat for write_lat_log; iolab's latency runs from issue to
    // completion, fio's _lat: that file and _bw, of the same name, lines and columns.
    for name in ["p_lat.1.log", "p_bw.1.log"] {
        let f = lines(&theirs.join(name));
        let o = lines(&ours.join(name));
        assert_eq!(f.len(), o.len(), "{name}: one line per I/O in both");
        assert!(f.iter().all(|l| l.len() == 6 && l[3] == 4096 && l[4] + 4096 <= 1 << 20), "{name}");
        let fio_prios: BTreeSet<u64> = f.iter().map(|l| l[5]).collect();
        assert_eq!(fio_prios, prios, "{name}: fio's priority values");
    }
    let text = std::fs::read_to_string(theirs.join("p_lat.1.log")).unwrap();
    let first = text.lines().next().unwrap_or("");
    assert!(first.ends_with(", 0x2000") || first.ends_with(", 0x4003"), "fio writes the value in hex: {first}");
}

#[test]
fn per_io_flags_number_each_thread_and_refuse_what_does_not_fit() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    let base = ["run", "--no-store", "--output", "json", "--size", "256k", "--bs", "4k", "--rw", "write"];
    let out = iolab()
        .args(base)
        .arg("--target")
        .arg(&f)
        .args(["--threads", "2", "--write-iops-log", "t", "--log-avg-msec", "0"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ops = v["phases"][0]["total"]["write"]["ops"].as_u64().unwrap();
    // One log per thread, numbered from 1 as fio numbers them; five columns without
    // log_offset, the last 0 (no real-time I/O).
    let (a, b) = (lines(&d.path().join("t_iops.1.log")), lines(&d.path().join("t_iops.2.log")));
    assert_eq!((a.len() + b.len()) as u64, ops);
    assert!(a.iter().chain(&b).all(|l| l.len() == 5 && l[1] == 1 && l[2] == 1 && l[3] == 4096 && l[4] == 0));
    // Again: the logs exist, refused before anything runs.
    let again = iolab()
        .args(base)
        .arg("--target")
        .arg(d.path().join("g"))
        .args(["--write-iops-log", "t", "--log-avg-msec", "0"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("t_iops.1.log exists"));
    assert!(!d.path().join("g").exists());
    // --log-offset belongs to per-I/O logs.
    let bad = iolab()
        .args(base)
        .arg("--target")
        .arg(d.path().join("g"))
        .args(["--write-iops-log", "u", "--log-offset"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--log-offset is a column of the per-I/O logs"));
}

/// Each I/O's offset, in the order of the per-I/O log (`log_offset=1`), of `job` run by
/// `tool` (fio or iolab) in a directory of its own.
fn offsets_of(tool: &str, job: &str, dir: &Path) -> Vec<u64> {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!("[global]\nfilename={}\nwrite_lat_log=z\nlog_offset=1\n{job}", dir.join("f").display());
    let file = dir.join("z.fio");
    std::fs::write(&file, text).unwrap();
    let out = match tool {
        "fio" => Command::new("fio").arg(&file).current_dir(dir).output().unwrap(),
        _ => iolab().args(["run", "--no-store", "--output", "json"]).arg(&file).current_dir(dir).output().unwrap(),
    };
    assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    lines(&dir.join("z_lat.1.log")).iter().map(|l| l[4]).collect()
}

#[test]
fn strided_zones_put_each_io_where_fio_puts_it() {
    if !have("fio") {
        return skip("fio is not installed: the offsets were not compared with fio 3.33's");
    }
    let d = tempfile::tempdir().unwrap();
    // Sequential: 16 KiB in each zone, 48 KiB skipped; 1 MiB of reads go round the file 4 times.
    let seq = "[j]\nsize=1m\nbs=4k\nrw=read\nzonemode=strided\nzonesize=16k\nzoneskip=48k\n";
    let fio = offsets_of("fio", seq, &d.path().join("fio-seq"));
    let ours = offsets_of("iolab", seq, &d.path().join("iolab-seq"));
    assert_eq!(fio.len(), 256);
    assert_eq!(ours, fio, "the same offsets in the same order");
    assert_eq!(ours[..6], [0, 4096, 8192, 12288, 65536, 69632]);
    // Random: 16 KiB drawn in each 64 KiB zone, 64 KiB skipped: the zones in fio's order, each
    // offset within its zone (the draws themselves are each tool's own).
    let rand = "[j]\nsize=1m\nbs=4k\nrw=randread\nzonemode=strided\nzonesize=16k\nzonerange=64k\nzoneskip=64k\n";
    let fio = offsets_of("fio", rand, &d.path().join("fio-rand"));
    let ours = offsets_of("iolab", rand, &d.path().join("iolab-rand"));
    assert_eq!((fio.len(), ours.len()), (256, 256));
    let zone = |o: &u64| (o / (128 << 10), o % (128 << 10) < 64 << 10);
    let (fz, oz): (Vec<_>, Vec<_>) = (fio.iter().map(zone).collect(), ours.iter().map(zone).collect());
    assert!(oz.iter().all(|z| z.1), "every offset in its zone's 64 KiB");
    assert_eq!(oz, fz, "the zones in fio's order");
    assert_eq!(oz.iter().map(|z| z.0).take(9).collect::<Vec<_>>(), [0, 0, 0, 0, 1, 1, 1, 1, 2]);
    // fio's random map: no block twice within a zone's visit.
    for visit in ours.chunks(4) {
        assert_eq!(visit.iter().collect::<BTreeSet<_>>().len(), 4, "{visit:?}");
    }
}

/// `iolab fio` writes the logs a job file or its command line asks for, as fio does (and as
/// `iolab run` does with the same file): one line per I/O under fio's names; a log already
/// there stops the run before anything is written.
#[test]
fn iolab_fio_writes_the_logs_the_job_asks_for() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("prio.fio");
    std::fs::write(&job, JOB).unwrap();
    let out = iolab()
        .args(["fio", "--output-format=json"])
        .arg(&job)
        .env("TESTFILE", d.path().join("f"))
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ios =
        v["jobs"][0]["read"]["total_ios"].as_u64().unwrap() + v["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 256, "1 MiB in 4 KiB I/Os");
    for name in ["p_lat.1.log", "p_bw.1.log"] {
        assert_eq!(lines(&d.path().join(name)).len(), 256, "{name}: a line per I/O");
    }
    // On the command line: --write_lat_log=q as fio's option.
    let cmd = |dir: &Path| {
        iolab()
            .args(["fio", "--name=c", "--rw=randread", "--bs=4k", "--size=256k", "--write_lat_log=q"])
            .arg(format!("--filename={}", dir.join("g").display()))
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let out = cmd(d.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines(&d.path().join("q_lat.1.log")).len(), 64, "256 KiB in 4 KiB reads");
    // Again: q_lat.1.log is there, so nothing runs and the log is kept as it was.
    let before = std::fs::read(d.path().join("q_lat.1.log")).unwrap();
    let out = cmd(d.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("q_lat.1.log exists"), "{err}");
    assert_eq!(std::fs::read(d.path().join("q_lat.1.log")).unwrap(), before);
}
