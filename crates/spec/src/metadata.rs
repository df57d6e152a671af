//! fio's metadata engines as a personality (`--workload metadata`): each thread creates, stats
//! or deletes its own files (`filecreate`, `filestat`, `filedelete`) or directories
//! (`dircreate`, `dirstat`, `dirdelete`) once each, every call timed, in the target directory
//! itself (as fio's jobs work in their shared directory), on names it makes exclusively; the
//! job's time runs from its start barrier to its last timed call. Its options and rules are here; its source is crates/workload/src/source/metadata.rs;
//! fio's job files and command lines reach it through crates/spec/src/fio/map/meta.rs.

use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The call each file or directory gets, named as fio's engine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetaOp {
    /// open(O_CREAT|O_RDWR) of a new file (then closed, untimed).
    FileCreate,
    /// stat(2) of a file iolab created before the timed calls.
    FileStat,
    /// unlink(2) of a file iolab created before the timed calls.
    FileDelete,
    /// mkdir(2) of a new directory.
    DirCreate,
    /// stat(2) of a directory iolab made before the timed calls.
    DirStat,
    /// rmdir(2) of a directory iolab made before the timed calls.
    DirDelete,
}

impl MetaOp {
    pub const ALL: [MetaOp; 6] =
        [MetaOp::FileCreate, MetaOp::FileStat, MetaOp::FileDelete, MetaOp::DirCreate, MetaOp::DirStat, MetaOp::DirDelete];

    /// fio's name for the engine.
    pub fn as_str(self) -> &'static str {
        match self {
            MetaOp::FileCreate => "filecreate",
            MetaOp::FileStat => "filestat",
            MetaOp::FileDelete => "filedelete",
            MetaOp::DirCreate => "dircreate",
            MetaOp::DirStat => "dirstat",
            MetaOp::DirDelete => "dirdelete",
        }
    }

    /// Whether it works on directories rather than files.
    pub fn on_dirs(self) -> bool {
        matches!(self, MetaOp::DirCreate | MetaOp::DirStat | MetaOp::DirDelete)
    }

    /// Whether what it works on must exist before its timed calls (iolab makes it, untimed).
    pub fn needs_existing(self) -> bool {
        !matches!(self, MetaOp::FileCreate | MetaOp::DirCreate)
    }
}

impl fmt::Display for MetaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MetaOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        MetaOp::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = MetaOp::ALL.iter().map(|o| o.as_str()).collect();
            format!("`{s}`: accepted {}", names.join(", "))
        })
    }
}

/// The metadata workload's own options (how many each thread works on is `--nrfiles`, the
/// bytes fio counts per call `--bs`, fio's direction `--rw`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "fio's metadata engines (--workload metadata; also --nrfiles, --bs, --rw)"))]
#[serde(deny_unknown_fields)]
pub struct MetadataOptions {
    /// metadata: the call each file or directory gets: filecreate, filestat, filedelete,
    /// dircreate, dirstat or dirdelete (fio's engines).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_op: Option<MetaOp>,
}

/// A metadata job, complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataJob {
    pub op: MetaOp,
    /// Files (or directories) each thread works on, one timed call each.
    pub files: u64,
    /// Bytes fio counts for each call (its `bs`; no data moves): what fio's JSON shows.
    pub io_size: Bytes,
    /// Whether fio counts the calls as writes (its `rw` writes) rather than reads.
    pub writes: bool,
    /// Bytes written into each file made before `filestat` or `filedelete` (fio's `filesize`,
    /// which fio lays out): a file with data costs more to delete than an empty one.
    #[serde(default, skip_serializing_if = "Bytes::is_zero")]
    pub file_size: Bytes,
}

/// Files or directories a thread may work on.
pub const MAX_META_FILES: u64 = 1 << 20;

impl Personality for MetadataJob {
    const NAME: &'static str = "metadata";
    const ABOUT: &'static str = "fio's metadata engines: each thread creates, stats or deletes --nrfiles files or directories, each call timed";
    type Options = MetadataOptions;
    const SHARED_KEYS: &'static [&'static str] = &["nrfiles", "bs", "rw", "file_sizes"];
    const DIRS: OwnDirs = OwnDirs::Target;

    fn resolve(o: &MetadataOptions, p: &JobPatch, name: &str) -> Result<MetadataJob, SpecError> {
        let Some(op) = o.meta_op else {
            return Err(SpecError::field(
                name,
                "meta_op",
                "say the call: filecreate, filestat, filedelete, dircreate, dirstat or dirdelete (--meta-op filecreate, say)",
            ));
        };
        let file_size = match &p.file_sizes {
            None => Bytes(0),
            Some(r) if r.low != r.high => {
                return Err(SpecError::field(name, "file_sizes", format!("{r}: the metadata workload's files have one size")))
            }
            Some(_) if !matches!(op, MetaOp::FileStat | MetaOp::FileDelete) => {
                return Err(SpecError::field(
                    name,
                    "file_sizes",
                    format!("only filestat and filedelete find files with data; {op} makes its own, empty"),
                ))
            }
            Some(r) => r.low,
        };
        Ok(MetadataJob {
            op,
            files: p.nrfiles.map_or(1, u64::from),
            io_size: p.bs.as_ref().map_or(Bytes::kib(4), |b| b.max()),
            writes: p.rw.is_some_and(|r| r.writes()),
            file_size,
        })
    }

    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        if self.files == 0 || self.files > MAX_META_FILES {
            return Err(SpecError::field(
                &job.name,
                "nrfiles",
                format!("{}: accepted 1 to {MAX_META_FILES} per thread", self.files),
            ));
        }
        Ok(())
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        let what = if self.op.on_dirs() { "directories" } else { "files" };
        words.push(format!("{} of {} {what}", self.op, self.files));
        if !self.file_size.is_zero() {
            words.push(format!("of {} each", self.file_size));
        }
    }

    /// The data of one thread's files made before `filestat` or `filedelete`.
    fn space(&self) -> u64 {
        self.files.saturating_mul(self.file_size.0)
    }

    fn buffer_len(&self) -> u64 {
        512
    }

    fn notes(&self, _job: &Job) -> Vec<String> {
        let mut n = vec![
            "each thread works in the target directory itself, on names <job>.<thread>.<n> it makes exclusively (a name already there is refused); what is left is removed at the end, untimed; the job's time runs from its start barrier to its last timed call".to_string(),
        ];
        if self.op.needs_existing() {
            let what = match (self.op.on_dirs(), self.file_size.is_zero()) {
                (true, _) => "directories are made".to_string(),
                (false, true) => "files are created empty".to_string(),
                (false, false) => format!("files are created with {} each, written and flushed", self.file_size),
            };
            n.push(format!("{}: the {what} before the timed calls, untimed", self.op));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Plan, Workload, WorkloadKind};

    fn job(f: impl FnOnce(&mut JobPatch)) -> Result<Job, SpecError> {
        let mut p = JobPatch {
            workload: Some("metadata".parse::<WorkloadKind>().unwrap()),
            target: Some("/data".into()),
            ..Default::default()
        };
        f(&mut p);
        let j = p.resolve("m")?;
        Plan { phases: vec![crate::Phase { name: "p".into(), jobs: vec![j.clone()] }] }.validate()?;
        Ok(j)
    }

    #[test]
    fn its_options_defaults_and_rules() {
        let j = job(|p| p.apps.metadata.meta_op = Some(MetaOp::FileStat)).unwrap();
        let Workload::Metadata(m) = &j.workload else { panic!("{:?}", j.workload) };
        assert_eq!(m, &MetadataJob { op: MetaOp::FileStat, files: 1, io_size: Bytes::kib(4), writes: false, file_size: Bytes(0) });
        assert!(j.own_dirs().is_empty(), "it works in the target itself");
        assert_eq!(j.describe(), "metadata filestat of 1 files");
        let j = job(|p| {
            p.apps.metadata.meta_op = Some(MetaOp::DirCreate);
            p.nrfiles = Some(10);
            p.rw = Some(crate::Rw::Write);
            p.bs = Some(crate::BlockSizes::single(Bytes::kib(8)));
        })
        .unwrap();
        let Workload::Metadata(m) = &j.workload else { panic!("{:?}", j.workload) };
        assert_eq!((m.files, m.io_size, m.writes), (10, Bytes::kib(8), true));
        assert!(job(|_| {}).unwrap_err().to_string().contains("meta_op"));
        let size = |op, lo, hi| {
            job(|p| {
                p.apps.metadata.meta_op = Some(op);
                p.file_sizes = Some(crate::fileset::SizeRange { low: Bytes::kib(lo), high: Bytes::kib(hi) });
            })
        };
        let j = size(MetaOp::FileDelete, 4, 4).unwrap();
        assert!(matches!(&j.workload, Workload::Metadata(m) if m.file_size == Bytes::kib(4)));
        assert!(size(MetaOp::FileDelete, 4, 8).unwrap_err().to_string().contains("one size"));
        assert!(size(MetaOp::FileCreate, 4, 4).unwrap_err().to_string().contains("only filestat and filedelete"));
        assert_eq!("dirstat".parse::<MetaOp>(), Ok(MetaOp::DirStat));
        assert!("mknod".parse::<MetaOp>().unwrap_err().contains("filecreate, filestat"));
    }

    #[test]
    fn a_job_file_and_a_stored_plan_read_it_back() {
        let plan = crate::parse_job_file(
            "[[phase]]\n[[phase.job]]\nworkload = 'metadata'\ntarget = '/d'\nmeta_op = 'filedelete'\nnrfiles = 200\n",
            &JobPatch::default(),
        )
        .unwrap();
        let j = &plan.phases[0].jobs[0];
        assert_eq!(
            j.workload,
            Workload::Metadata(MetadataJob {
                op: MetaOp::FileDelete,
                files: 200,
                io_size: Bytes::kib(4),
                writes: false,
                file_size: Bytes(0)
            })
        );
        let back: Plan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
    }
}
