//! An append-only log, as a database's write-ahead log or a message queue's segment is written:
//! fixed-size records appended at the end of one file (O_APPEND), an fsync after every N of
//! them, by each thread into a log of its own. It is the example personality of
//! docs/architecture.md: its options, defaults, rules, words and figures are this file; its
//! source is crates/workload/src/source/append_log.rs; each is one line in its crate's list.

use crate::figures::{get, per, Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
#[cfg(feature = "clap")]
use crate::units::parse_size;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};

/// The log's own options (how often it is flushed is `--fsync-every`, as for the block
/// workload).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "Append-only log (--workload append-log; also --fsync-every)"))]
#[serde(deny_unknown_fields)]
pub struct AppendLogOptions {
    /// append-log: the size of each record appended (default 4k).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_size: Option<Bytes>,
    /// append-log: records each thread appends (default: until --runtime is up).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
}

/// An append-only log job, complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendLogJob {
    /// Bytes each record takes.
    pub record_size: Bytes,
    /// Records each thread appends; `None`: until the runtime is up.
    pub records: Option<u64>,
    /// An fsync after every this many records (0: none; default 1, a commit per record).
    pub fsync_every: u64,
}

impl Personality for AppendLogJob {
    const NAME: &'static str = "append-log";
    const ABOUT: &'static str = "records appended to a log with an fsync every --fsync-every";
    type Options = AppendLogOptions;
    const SHARED_KEYS: &'static [&'static str] = &["fsync_every"];
    const DIRS: OwnDirs = OwnDirs::PerThread;
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[
        ("records", "records appended"),
        ("bytes_appended", "bytes appended"),
        ("fsyncs", "fsyncs"),
        ("elapsed_s", "seconds in all"),
        ("records_per_s", "records appended per second"),
        ("fsyncs_per_s", "fsyncs per second"),
    ];
    const FIGURES: &'static [(&'static str, Kind)] = &[
        ("records", Count),
        ("bytes_appended", Count),
        ("fsyncs", Count),
        ("elapsed_s", Seconds),
        ("records_per_s", Derived),
        ("fsyncs_per_s", Derived),
    ];

    /// Records and fsyncs over the longest thread's time.
    fn derive(f: &mut Figures) {
        let el = get(f, "elapsed_s");
        let (records, fsyncs) = (per(get(f, "records"), el), per(get(f, "fsyncs"), el));
        f.insert("records_per_s".into(), records);
        f.insert("fsyncs_per_s".into(), fsyncs);
    }

    fn resolve(o: &AppendLogOptions, p: &JobPatch, name: &str) -> Result<AppendLogJob, SpecError> {
        if p.runtime.is_none() && o.records.is_none() {
            return Err(SpecError::field(
                name,
                "runtime",
                "the log is appended to until --runtime is up or --records are written; add one (--runtime 30s, say)",
            ));
        }
        Ok(AppendLogJob {
            record_size: o.record_size.unwrap_or(Bytes::kib(4)),
            records: o.records,
            fsync_every: p.fsync_every.unwrap_or(1),
        })
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!("records of {}", self.record_size));
        match self.fsync_every {
            0 => words.push("no fsync".into()),
            1 => words.push("fsync each".into()),
            n => words.push(format!("fsync every {n}")),
        }
        if let Some(n) = self.records {
            words.push(format!("{n} records"));
        }
    }

    /// Each thread's log at its full length, when it is bounded.
    fn space(&self) -> u64 {
        self.records.map_or(0, |n| n.saturating_mul(self.record_size.0))
    }

    fn buffer_len(&self) -> u64 {
        self.record_size.0
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.record_size.0 == 0 || self.record_size.0 > 64 << 20 {
            return err("record_size", format!("{}: accepted 1 byte to 64 MiB", self.record_size));
        }
        if self.records == Some(0) {
            return err("records", "0 records appends nothing".into());
        }
        if job.direct && !self.record_size.0.is_multiple_of(4096) {
            return err(
                "record_size",
                format!("{}: with direct I/O each record must be a multiple of 4 KiB (a log written with O_DIRECT appends whole blocks)", self.record_size),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Plan, Workload, WorkloadKind};

    fn job(f: impl FnOnce(&mut JobPatch)) -> Result<Job, SpecError> {
        let mut p = JobPatch {
            workload: Some("append-log".parse::<WorkloadKind>().unwrap()),
            target: Some("/data".into()),
            ..Default::default()
        };
        f(&mut p);
        let j = p.resolve("log")?;
        Plan { phases: vec![crate::Phase { name: "p".into(), jobs: vec![j.clone()] }] }.validate()?;
        Ok(j)
    }

    #[test]
    fn its_options_defaults_and_rules() {
        let j = job(|p| p.apps.append_log.records = Some(100)).unwrap();
        let Workload::AppendLog(a) = &j.workload else { panic!("{:?}", j.workload) };
        assert_eq!((a.record_size, a.records, a.fsync_every), (Bytes::kib(4), Some(100), 1));
        assert_eq!(j.own_dirs(), vec!["iolab.log.0"]);
        assert_eq!(j.describe(), "append-log records of 4k fsync each 100 records");
        let j = job(|p| {
            p.runtime = Some(std::time::Duration::from_secs(5));
            p.fsync_every = Some(8);
            p.threads = Some(2);
            p.apps.append_log.record_size = Some(Bytes(512));
        })
        .unwrap();
        assert_eq!(j.describe(), "append-log records of 512 fsync every 8 2 threads");
        assert_eq!(j.own_dirs(), vec!["iolab.log.0", "iolab.log.1"]);
        let e = |f: fn(&mut JobPatch)| job(f).unwrap_err().to_string();
        assert!(e(|_| {}).contains("--runtime"), "unbounded");
        assert!(e(|p| p.apps.append_log.records = Some(0)).contains("records"));
        assert!(e(|p| {
            p.apps.append_log.records = Some(1);
            p.direct = Some(true);
            p.apps.append_log.record_size = Some(Bytes(1000));
        })
        .contains("4 KiB"));
        // Another workload's option is refused naming the log's.
        let e = job(|p| {
            p.apps.append_log.records = Some(1);
            p.rw = Some(crate::Rw::Write);
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--rw") && e.contains("--record-size, --records, --fsync-every"), "{e}");
    }

    #[test]
    fn a_job_file_and_a_stored_plan_read_it_back() {
        let plan = crate::parse_job_file(
            "[[phase]]\n[[phase.job]]\nworkload = 'append-log'\ntarget = '/d'\nrecord_size = '8k'\nrecords = 10\nfsync_every = 4\n",
            &JobPatch::default(),
        )
        .unwrap();
        let j = &plan.phases[0].jobs[0];
        assert_eq!(
            j.workload,
            Workload::AppendLog(AppendLogJob { record_size: Bytes::kib(8), records: Some(10), fsync_every: 4 })
        );
        let back: Plan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
        let e = crate::parse_job_file(
            "[[phase]]\n[[phase.job]]\nworkload = 'append-log'\ntarget = '/d'\nrecord = '8k'\n",
            &JobPatch::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `record`") && e.contains("record_size") && e.contains("line 5"), "{e}");
    }
}
