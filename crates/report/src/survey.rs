//! The survey's one-page profile, read from its phases: a line per step and what stands out, in
//! words, and with `--node` the locking check beside it (each check's rate, node by node, and
//! the verdict). The terminal and the HTML report print the same rows and the same findings
//! from here (the CLI builds the steps' jobs; this module only reads results, keyed by step
//! name).

use crate::fmt::{count, fmt_decimal, ms, rate};
use crate::system::{self, Finding};
use iolab_model::fidelity::{Direction, Seen};
use iolab_model::{PhaseResult, RunResult};
use iolab_spec::Phase;
use std::collections::BTreeMap;

/// How one step reads: its name in the table, its result in a line, and its one figure for
/// the profile's picture.
pub struct Reading {
    /// The phase name the survey gives the step.
    pub key: &'static str,
    pub title: &'static str,
    read: fn(&PhaseResult) -> String,
    figure: fn(&PhaseResult) -> Option<Figure>,
}

/// A step's one figure: its value in its unit (MB/s, IOPS, commits/s...) and the p99 latency
/// of the operation that bounds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub value: f64,
    pub unit: &'static str,
    pub p99_ns: u64,
}

fn main_dir(p: &PhaseResult) -> &iolab_model::ClassTotals {
    let t = &p.total;
    if t.write().ops > 0 {
        t.write()
    } else {
        t.read()
    }
}

fn bw_fig(p: &PhaseResult) -> Option<Figure> {
    let d = main_dir(p);
    (d.ops > 0).then(|| Figure { value: d.bw_bytes / 1e6, unit: "MB/s", p99_ns: d.lat_ns.p99 })
}

fn iops_fig(p: &PhaseResult) -> Option<Figure> {
    let d = main_dir(p);
    (d.ops > 0).then_some(Figure { value: d.iops, unit: "IOPS", p99_ns: d.lat_ns.p99 })
}

fn commits_fig(p: &PhaseResult) -> Option<Figure> {
    let s = p.total.sync();
    (s.ops > 0).then(|| Figure { value: s.ops as f64 / p.elapsed_s.max(1e-9), unit: "commits/s", p99_ns: s.lat_ns.p99 })
}

fn small_files_fig(p: &PhaseResult) -> Option<Figure> {
    let v = p.workload.get("transactions_per_s").copied()?;
    Some(Figure { value: v, unit: "transactions/s", p99_ns: p.total.get(iolab_model::OpClass::Create).lat_ns.p99 })
}

fn mail_fig(p: &PhaseResult) -> Option<Figure> {
    let v = p.workload.get("messages_per_min").copied()?;
    Some(Figure { value: v, unit: "messages/min", p99_ns: p.total.sync().lat_ns.p99 })
}

fn verified_fig(p: &PhaseResult) -> Option<Figure> {
    let t = &p.total;
    let iops = t.write().iops + t.read().iops;
    (iops > 0.0).then(|| Figure { value: iops, unit: "IOPS", p99_ns: t.write().lat_ns.p99.max(t.read().lat_ns.p99) })
}

/// Each step of a survey's phases with its one figure, in the survey's order: (step's title,
/// its figure), for the profile's picture.
pub fn figures(phases: &[PhaseResult]) -> Vec<(String, Option<Figure>)> {
    readings()
        .into_iter()
        .filter_map(|r| phases.iter().find(|p| p.name == r.key).map(|p| (r.title.to_string(), (r.figure)(p))))
        .collect()
}

fn bw_line(p: &PhaseResult) -> String {
    let t = &p.total;
    let d = if t.write().ops > 0 { t.write() } else { t.read() };
    format!("{}   lat p99 {} ms", rate(d.bw_bytes), ms(d.lat_ns.p99))
}

fn iops_line(p: &PhaseResult) -> String {
    let t = &p.total;
    let d = if t.write().ops > 0 { t.write() } else { t.read() };
    format!("{} IOPS   lat p50 {} ms  p99 {} ms", count(d.iops), ms(d.lat_ns.p50), ms(d.lat_ns.p99))
}

fn commits_line(p: &PhaseResult) -> String {
    let s = p.total.sync();
    format!(
        "{} commits/s   fsync p50 {} ms  p99 {} ms",
        count(s.ops as f64 / p.elapsed_s.max(1e-9)),
        ms(s.lat_ns.p50),
        ms(s.lat_ns.p99)
    )
}

fn writers_line(p: &PhaseResult) -> String {
    let each: Vec<String> = p.jobs.iter().map(|j| crate::fmt::num(j.total.write().bw_bytes / 1e6)).collect();
    format!("{} total ({} MB/s each)", rate(p.total.write().bw_bytes), each.join(" + "))
}

fn small_files_line(p: &PhaseResult) -> String {
    let f = |k: &str| p.workload.get(k).copied().unwrap_or(0.0);
    let c = p.total.get(iolab_model::OpClass::Create);
    format!(
        "{} transactions/s ({} files created/s)   create p99 {} ms",
        count(f("transactions_per_s")),
        count(f("created_per_s")),
        ms(c.lat_ns.p99)
    )
}

fn mail_line(p: &PhaseResult) -> String {
    let f = |k: &str| p.workload.get(k).copied().unwrap_or(0.0);
    let s = p.total.sync();
    format!("{} messages/min   fsync p99 {} ms", count(f("messages_per_min")), ms(s.lat_ns.p99))
}

fn verified_line(p: &PhaseResult) -> String {
    let t = &p.total;
    match &p.verify {
        Some(v) if v.errors.total() > 0 => format!(
            "{} BAD BLOCK(S) of {} checked: {}",
            count(v.errors.total() as f64),
            count(v.checked() as f64),
            crate::verify::errors_words(v)
        ),
        Some(v) => format!(
            "{} blocks checked, none bad   write {} IOPS, read {} IOPS",
            count(v.checked() as f64),
            count(t.write().iops),
            count(t.read().iops)
        ),
        None => String::new(),
    }
}

/// The survey's steps as they read, in order.
pub fn readings() -> Vec<Reading> {
    let r = |key, title, read, figure| Reading { key, title, read, figure };
    vec![
        r("seq-write", "sequential write 1 MiB", bw_line, bw_fig),
        r("seq-read", "sequential read 1 MiB", bw_line, bw_fig),
        r("rand-read-qd1", "random read 4 KiB, QD1", iops_line, iops_fig),
        r("rand-read-qd32", "random read 4 KiB, QD32", iops_line, iops_fig),
        r("rand-write-qd1", "random write 4 KiB, QD1", iops_line, iops_fig),
        r("rand-write-qd32", "random write 4 KiB, QD32", iops_line, iops_fig),
        r("append-fsync", "append 4 KiB + fsync", commits_line, commits_fig),
        r("one-writer", "one writer, 1 MiB", bw_line, bw_fig),
        r("two-writers", "two concurrent writers", writers_line, bw_fig),
        r("small-files", "small files (PostMark)", small_files_line, small_files_fig),
        r("mail-delivery", "mail delivery (maildir, 4 threads)", mail_line, mail_fig),
        r("verified-rw", "validated random read/write 4 KiB (--verify)", verified_line, verified_fig),
    ]
}

/// The title of a step (its key when iolab does not know it).
fn title_of(key: &str) -> String {
    readings().into_iter().find(|r| r.key == key).map_or_else(|| key.to_string(), |r| r.title.to_string())
}

/// Are these the phases of a survey? (Every phase is a known step.)
pub fn is_survey(phases: &[PhaseResult]) -> bool {
    let known = readings();
    !phases.is_empty() && phases.iter().all(|p| known.iter().any(|r| r.key == p.name))
}

/// The profile's rows: step, result, system (CPU I/O wait and the target's devices).
pub fn rows(phases: &[PhaseResult]) -> Vec<[String; 3]> {
    let known = readings();
    phases
        .iter()
        .map(|p| {
            let mark = if p.interrupted { " (interrupted)" } else { "" };
            let (title, line) = match known.iter().find(|r| r.key == p.name) {
                Some(r) => (r.title.to_string(), (r.read)(p)),
                None => (p.name.clone(), String::new()),
            };
            let sys = p.system.as_ref().map(system::compact).unwrap_or_default();
            [format!("{title}{mark}"), line, sys]
        })
        .collect()
}

/// What stands out, in words: the survey's own comparisons between steps, then the system's
/// findings, each kind folded into one line when several steps share it (a disk busy in every
/// step is one line naming the steps, not nine lines). `plan` is the run's planned phases (the
/// steps' jobs): with them, buffered writes that stayed in the page cache are found too (a
/// survey on a filesystem that refuses O_DIRECT writes buffered).
pub fn findings(phases: &[PhaseResult], plan: &[Phase]) -> Vec<String> {
    let mut out = between_steps(phases);
    for p in phases {
        if let Some(v) = p.verify.as_ref().filter(|v| v.errors.total() > 0) {
            let first = v.first_errors.first().map(|e| format!("; the first: {e}")).unwrap_or_default();
            out.push(format!(
                "{}: the storage returned wrong data: {}{first}",
                title_of(&p.name),
                crate::verify::errors_words(v)
            ));
        }
    }
    // The fidelity rule's findings (the figure against what the storage saw), one line per
    // kind naming its steps: buffered writes that stayed in the page cache, reads from the
    // page cache or from holes, a device that moved much more than asked.
    let mut by_kind: Vec<(Seen, Direction, Vec<String>)> = Vec::new();
    for p in phases {
        let jobs = plan.iter().find(|ph| ph.name == p.name).map(|ph| ph.jobs.as_slice()).unwrap_or(&[]);
        for f in system::fidelity(p, jobs) {
            let on = if f.kind == Seen::WritesInCache { "the device".to_string() } else { f.seen_on.clone() };
            let node = f.node.as_deref().map(|n| format!("{n}: ")).unwrap_or_default();
            let step = format!(
                "{node}{} (iolab {}/s, {on} {}/s)",
                title_of(&p.name),
                fmt_decimal(f.issued_bytes_s),
                fmt_decimal(f.seen_bytes_s)
            );
            match by_kind.iter_mut().find(|(k, d, _)| *k == f.kind && *d == f.direction) {
                Some((_, _, steps)) => steps.push(step),
                None => by_kind.push((f.kind, f.direction, vec![step])),
            }
        }
    }
    for (kind, dir, steps) in by_kind {
        let steps = steps.join(", ");
        out.push(match kind {
            Seen::WritesInCache => {
                format!("writes stayed in the page cache during: {steps}; {}", crate::summary::CACHED_ADVICE)
            }
            Seen::ReadsFromCache => format!(
                "reads were served from the page cache during: {steps}; the figures are memory's, not the storage's"
            ),
            Seen::ReadsInHoles | Seen::ReadsUnseen => format!(
                "reads the device did not see (holes or unwritten extents) during: {steps}; the figures are not the storage's"
            ),
            Seen::MovedMore => format!(
                "the storage moved much more than iolab {} during: {steps} (read-ahead, write amplification, replication, or other I/O on it)",
                if dir == Direction::Read { "read" } else { "wrote" }
            ),
        });
    }
    // Busy devices, by device: each step with its %util, queue and await (the await the
    // table shows, `system::await_ms`).
    let mut busy: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut waits = Vec::new();
    for p in phases {
        let title = title_of(&p.name);
        for f in p.system.iter().flat_map(system::findings) {
            match f {
                Finding::Saturated { device, util_pct, queue, await_ms } => {
                    busy.entry(device).or_default().push(format!(
                        "{title} ({util_pct:.0}%, queue {queue:.1}, await {} ms)",
                        ms((await_ms * 1e6) as u64)
                    ));
                }
                Finding::IoWait(wa) => waits.push(format!("{title} ({wa:.0}%)")),
                other => out.push(format!("{title}: {}", other.text())),
            }
        }
    }
    for (device, steps) in busy {
        if let [one] = steps.as_slice() {
            out.push(format!("{device} was busy 90% of the time or more during {one}: {}", system::SATURATED));
        } else {
            out.push(format!(
                "{device} was busy 90% of the time or more in {} steps: {}; {}",
                steps.len(),
                steps.join(", "),
                system::SATURATED
            ));
        }
    }
    if !waits.is_empty() {
        out.push(format!("CPU I/O wait above 20% (time idle waiting for storage) during: {}", waits.join(", ")));
    }
    out
}

/// The comparisons only a survey can make: two writers against one, queue depth 32 against 1,
/// commit latency.
fn between_steps(phases: &[PhaseResult]) -> Vec<String> {
    let mut out = Vec::new();
    let get = |k: &str| phases.iter().find(|p| p.name == k);
    if let (Some(one), Some(two)) = (get("one-writer"), get("two-writers")) {
        let (a, b) = (one.total.write().bw_bytes, two.total.write().bw_bytes);
        if a > 0.0 && b > 0.0 {
            let pct = 100.0 * b / a;
            let what = if pct >= 110.0 {
                "one writer alone does not saturate the storage"
            } else if pct >= 90.0 {
                "the storage shares well between writers"
            } else if pct >= 60.0 {
                "concurrency costs some throughput (seek or lock contention)"
            } else {
                "concurrent writers collapse: the medium or its locking saturates (two writers on one node, as in the cluster-filesystem locking check)"
            };
            out.push(format!("two writers together reach {pct:.0}% of one writer's throughput: {what}"));
        }
    }
    if let (Some(q1), Some(q32)) = (get("rand-read-qd1"), get("rand-read-qd32")) {
        if q1.total.read().iops > 0.0 {
            out.push(format!(
                "random reads scale {:.1}x from queue depth 1 to 32",
                q32.total.read().iops / q1.total.read().iops
            ));
        }
    }
    if let Some(f) = get("append-fsync") {
        if f.total.sync().lat_ns.p99 > 10_000_000 {
            out.push(
                "fsync p99 above 10 ms: every commit waits on the device (a database that syncs every commit, such as a redo log, would crawl)".into(),
            );
        }
    }
    out
}

/// The locking check's rows: each check, the rate of all its nodes together, and each node's.
pub fn locking_rows(l: &RunResult) -> Vec<[String; 3]> {
    l.phases
        .iter()
        .map(|p| {
            let per: Vec<String> =
                p.nodes.iter().map(|n| format!("{} {}", n.name, rate(n.total.write().bw_bytes))).collect();
            [p.name.clone(), rate(p.total.write().bw_bytes), per.join(", ")]
        })
        .collect()
}

/// The locking check's conclusion in lines: the limit, then each reason; or why there is none.
pub fn locking_verdict(l: &RunResult) -> Vec<String> {
    match &l.verdict {
        Some(v) => std::iter::once(format!("limit: {}", v.limit.as_str())).chain(v.reasons.iter().cloned()).collect(),
        None => vec![format!("no verdict: {}", l.error.as_deref().unwrap_or("the check did not complete"))],
    }
}

/// The profile `iolab survey` prints: the table of steps, what stands out, why it stopped
/// early if it did, and the locking check beside it (`--node`).
pub fn profile(survey: &RunResult, locking: Option<&RunResult>) -> String {
    use std::fmt::Write;
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(["step", "result", "system"]);
    for row in rows(&survey.phases) {
        t.add_row(row);
    }
    let mut out = format!("{t}\n");
    for line in findings(&survey.phases, &survey.plan.phases) {
        let _ = writeln!(out, "- {line}");
    }
    if let Some(e) = &survey.error {
        let _ = writeln!(out, "stopped early: {e}");
    }
    if let Some(l) = locking {
        out.push_str("the locking check:\n");
        for [step, all, per] in locking_rows(l) {
            let _ = writeln!(out, "  {step:<10} {all} ({per})");
        }
        for (i, line) in locking_verdict(l).iter().enumerate() {
            let _ = writeln!(out, "  {}{line}", if i == 0 { "" } else { "- " });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{Acc, OpClass, Totals};
    use iolab_sysstat::{DiskRates, SystemResult, TargetInfo};

    /// A step's phase: `ops` writes of 1 MiB in 1 s at 1 ms each, the target disk `vda` as given.
    fn step(key: &str, disk: DiskRates, iowait: f64) -> PhaseResult {
        let mut a = Acc::default();
        for _ in 0..100 {
            a.record(OpClass::Write, 1 << 20, 1_000_000);
        }
        let mut s = SystemResult::default();
        s.mean.cpu.all.iowait_pct = iowait;
        s.mean.disks.insert("vda".into(), disk);
        s.target = Some(TargetInfo { devices: vec!["vda".into()], ..Default::default() });
        PhaseResult { elapsed_s: 1.0, total: Totals::from_acc(&a, 1.0), system: Some(s), ..PhaseResult::new(key) }
    }

    fn busy(r_s: f64, r_await: f64, w_s: f64, w_await: f64) -> DiskRates {
        DiskRates {
            r_s,
            r_await_ms: r_await,
            w_s,
            w_await_ms: w_await,
            avgqu: 1.7,
            util_pct: 94.0,
            ..Default::default()
        }
    }

    /// Issue 8: the table said "await 0.415 ms" (the dominant direction's) and the finding
    /// "await 1.0 ms" (the larger of read and write) for the same step.
    #[test]
    fn the_table_and_the_findings_show_the_same_await() {
        // Mostly writes at 0.415 ms, a few reads at 1.0 ms.
        let p = vec![step("seq-write", busy(3.0, 1.0, 2000.0, 0.415), 10.0)];
        let row = &rows(&p)[0];
        assert!(row[2].contains("await 0.415 ms"), "{row:?}");
        let f = findings(&p, &[]).join("\n");
        assert!(f.contains("await 0.415 ms") && !f.contains("1.0 ms") && !f.contains("1.00 ms"), "{f}");
        assert!(f.contains("sequential write 1 MiB (94%, queue 1.7"), "{f}");
    }

    #[test]
    fn findings_that_repeat_over_steps_fold_into_one_line() {
        let keys = ["seq-write", "seq-read", "rand-read-qd32", "one-writer", "two-writers"];
        let p: Vec<PhaseResult> = keys.iter().map(|k| step(k, busy(0.0, 0.0, 100.0, 0.3), 40.0)).collect();
        let f = findings(&p, &[]);
        let disk: Vec<&String> = f.iter().filter(|l| l.contains("vda was busy")).collect();
        assert_eq!(disk.len(), 1, "one line for the busy disk: {f:#?}");
        assert!(disk[0].contains("in 5 steps") && disk[0].contains("two concurrent writers (94%"), "{}", disk[0]);
        let wait: Vec<&String> = f.iter().filter(|l| l.contains("I/O wait")).collect();
        assert_eq!(wait.len(), 1, "{f:#?}");
        assert!(wait[0].contains("sequential read 1 MiB (40%)"), "{}", wait[0]);
        // One busy step reads as one step.
        let one = findings(&p[..1], &[]);
        assert!(
            one.iter().any(|l| l.starts_with("vda was busy 90% of the time or more during sequential write")),
            "{one:#?}"
        );
    }

    #[test]
    fn a_survey_is_known_by_its_steps() {
        let p = vec![step("seq-write", DiskRates::default(), 0.0), step("two-writers", DiskRates::default(), 0.0)];
        assert!(is_survey(&p));
        assert!(!is_survey(&[step("randwrite", DiskRates::default(), 0.0)]));
        assert!(!is_survey(&[]));
        assert_eq!(rows(&p)[1][0], "two concurrent writers");
    }

    /// A survey that ran buffered (the filesystem refused O_DIRECT): the writing steps whose
    /// data stayed in the page cache are one finding naming them; the same steps written
    /// direct, or with the device keeping up, are not in it.
    #[test]
    fn buffered_steps_whose_writes_stayed_in_the_page_cache_are_one_finding() {
        use iolab_spec::{JobPatch, Rw};
        let plan = |direct: bool| -> Vec<Phase> {
            ["seq-write", "one-writer", "seq-read"]
                .into_iter()
                .map(|k| {
                    let rw = if k == "seq-read" { Rw::Read } else { Rw::Write };
                    let j = JobPatch {
                        target: Some("/t".into()),
                        rw: Some(rw),
                        direct: Some(direct),
                        ..Default::default()
                    };
                    Phase { name: k.into(), jobs: vec![j.resolve(k).expect("a valid job")] }
                })
                .collect()
        };
        // iolab wrote about 105 MB/s a step; the disk 0.1 MB/s in the first two, 100 MB/s in the third.
        let idle = DiskRates { wkb_s: 100.0, ..Default::default() };
        let kept_up = DiskRates { wkb_s: 100_000.0, ..Default::default() };
        let p = vec![step("seq-write", idle, 0.0), step("one-writer", idle, 0.0), step("seq-read", kept_up, 0.0)];
        let f = findings(&p, &plan(false));
        let cached: Vec<&String> = f.iter().filter(|l| l.contains("page cache")).collect();
        assert_eq!(cached.len(), 1, "{f:#?}");
        assert!(
            cached[0].starts_with(
                "writes stayed in the page cache during: sequential write 1 MiB (iolab 104.9 MB/s, the device 102.4 kB/s), one writer, 1 MiB ("
            ) && cached[0].ends_with("--direct to bypass the cache")
                && !cached[0].contains("sequential read"),
            "{}",
            cached[0]
        );
        assert!(!findings(&p, &plan(true)).iter().any(|l| l.contains("page cache")), "direct steps");
        assert!(!findings(&p, &[]).iter().any(|l| l.contains("page cache")), "no plan, no jobs to judge");
    }
}
