//! bonnie++ 2.0's tests as parameters: per-character and block sequential write, rewrite,
//! per-character and block read, random seeks (10% rewritten), then sequential and random
//! create/stat/delete of small files; with bonnie++'s sizing (the file is twice the RAM unless
//! told: `--bonnie-size` is its `-s`, `--bonnie-ram` its `-r`, `--bonnie-files` its `-n`).

use crate::job::Job;
use crate::patch::JobPatch;
use crate::units::Bytes;
use crate::SpecError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BonnieJob {
    /// Size of the test file (`-s`; default twice `ram`).
    pub file_size: Bytes,
    /// The RAM bonnie++ sizes for (`-r`; default: MemTotal from /proc/meminfo).
    pub ram: Bytes,
    /// Block size of the block tests (`-s size:chunk`; 8 KiB).
    pub chunk_size: Bytes,
    /// Bytes of the per-character tests: bonnie++ 2.0 writes and reads the first 3 MiB of the
    /// file one byte per call (seen with strace: 3,145,728 one-byte writes for `-s 64`).
    pub char_size: Bytes,
    /// Seeks in all (bonnie++'s 8192, done by its 5 seekers).
    pub seeks: u32,
    /// Files of the create tests in multiples of 1024 (`-n`; 16); 0 skips them.
    pub num_files: u32,
}

/// bonnie++'s per-character tests stop at 3 MiB.
pub const CHAR_IO_LIMIT: u64 = 3 << 20;

/// MemTotal from /proc/meminfo (0 when it cannot be read).
pub fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|k| k * 1024)
        .unwrap_or(0)
}

impl BonnieJob {
    pub(crate) fn from_patch(p: &JobPatch, _name: &str) -> Result<BonnieJob, SpecError> {
        let ram = p.bonnie_ram.unwrap_or_else(|| Bytes(mem_total()));
        let size = p.bonnie_size.unwrap_or(Bytes(ram.0.saturating_mul(2)));
        Ok(BonnieJob {
            file_size: size,
            ram,
            chunk_size: p.bonnie_chunk.unwrap_or(Bytes::kib(8)),
            char_size: Bytes(size.0.min(CHAR_IO_LIMIT)),
            seeks: 8192,
            num_files: p.bonnie_files.unwrap_or(16),
        })
    }

    pub fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if job.threads != 1 {
            return err("threads", format!("{}: bonnie++ runs its tests in one process; give 1", job.threads));
        }
        if self.chunk_size.0 < 512 || self.chunk_size.0 > 1 << 20 {
            return err("bonnie_chunk", format!("{}: accepted 512 bytes to 1 MiB", self.chunk_size));
        }
        if self.file_size.0 < self.chunk_size.0 || self.file_size.0 > 1 << 44 {
            return err(
                "bonnie_size",
                format!("{}: the file needs one chunk ({}) at least, 16 TiB at most", self.file_size, self.chunk_size),
            );
        }
        if self.num_files > 1000 {
            return err("bonnie_files", format!("{} (×1024 files): accepted 0 to 1000", self.num_files));
        }
        if job.direct {
            return err(
                "direct",
                "bonnie++'s per-character tests are 1-byte calls; direct I/O needs aligned sizes".into(),
            );
        }
        Ok(())
    }

    /// Blocks of `chunk` in the file.
    pub fn blocks(&self) -> u64 {
        self.file_size.0 / self.chunk_size.0.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Workload, WorkloadKind};

    fn job(p: JobPatch) -> Result<Job, SpecError> {
        let j = JobPatch { target: Some("/t".into()), workload: Some(WorkloadKind::Bonnie), ..p }.resolve("b")?;
        j.validate().map(|_| j)
    }
    fn bonnie(j: &Job) -> &BonnieJob {
        match &j.workload {
            Workload::Bonnie(b) => b,
            w => panic!("not bonnie: {w:?}"),
        }
    }

    #[test]
    fn sizes_as_bonnie_does() {
        let j = job(JobPatch::default()).unwrap();
        let b = bonnie(&j);
        assert!(mem_total() > 0, "this Linux has /proc/meminfo");
        assert_eq!((b.ram.0, b.file_size.0), (mem_total(), 2 * mem_total()), "twice the RAM by default");
        assert_eq!((b.chunk_size, b.char_size, b.seeks, b.num_files), (Bytes::kib(8), Bytes(CHAR_IO_LIMIT), 8192, 16));
        let j = job(JobPatch { bonnie_ram: Some(Bytes::mib(512)), ..Default::default() }).unwrap();
        assert_eq!(bonnie(&j).file_size, Bytes::gib(1), "-r 512 makes a 1 GiB file");
        let j = job(JobPatch { bonnie_size: Some(Bytes::mib(1)), ..Default::default() }).unwrap();
        assert_eq!((bonnie(&j).file_size, bonnie(&j).char_size), (Bytes::mib(1), Bytes::mib(1)));
    }

    #[test]
    fn refuses_what_bonnie_cannot_do() {
        let e = |p: JobPatch| job(p).unwrap_err().to_string();
        assert!(e(JobPatch { threads: Some(2), ..Default::default() }).contains("threads"));
        assert!(e(JobPatch { bonnie_size: Some(Bytes(100)), ..Default::default() }).contains("bonnie_size"));
        assert!(e(JobPatch { bonnie_chunk: Some(Bytes(10)), ..Default::default() }).contains("bonnie_chunk"));
        assert!(e(JobPatch { bonnie_files: Some(5000), ..Default::default() }).contains("bonnie_files"));
        assert!(e(JobPatch { direct: Some(true), ..Default::default() }).contains("direct"));
    }
}
