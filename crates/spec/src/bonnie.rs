//! bonnie++ 2.0's tests as parameters: per-character and block sequential write, rewrite,
//! per-character and block read, random seeks by several seekers at once (10% rewritten), then
//! sequential and random create/stat/delete of small files; with bonnie++'s sizing (the file is
//! twice the RAM, rounded up to a GiB, unless told; a smaller one is refused unless the RAM is
//! given). Each flag is one of bonnie++'s: `--bonnie-size` its `-s`, `--bonnie-chunk` the
//! chunk of `-s size:chunk`, `--bonnie-seeks` and `--bonnie-seekers` the rest of `-s`,
//! `--bonnie-ram` its `-r`, `--bonnie-char-size` its `-f` (0: skip the per-character tests),
//! `--bonnie-files` its `-n number:max:min:dirs`, `--bonnie-sync` its `-b`.

use crate::figures::{Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
use crate::units::{parse_size, Bytes};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// bonnie++'s options as flags and job-file keys, each one of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "bonnie++ (--workload bonnie)"))]
#[serde(deny_unknown_fields)]
pub struct BonnieOptions {
    /// bonnie: test file size (bonnie++'s -s; default twice the RAM, rounded up to a GiB).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_size: Option<Bytes>,
    /// bonnie: the RAM to size for (bonnie++'s -r; default MemTotal; a --bonnie-size under twice it is refused, 0 skips that check).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_ram: Option<Bytes>,
    /// bonnie: block size of the block tests (bonnie++'s -s size:chunk; default 8k).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_chunk: Option<Bytes>,
    /// bonnie: bytes of the per-character tests (bonnie++'s -f N, in whole MiB; default 3M; 0 skips them, as -f does).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_size))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_char_size: Option<Bytes>,
    /// bonnie: random seeks in all (bonnie++'s -s size:chunk:seeks; default 8192).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_seeks: Option<u32>,
    /// bonnie: seekers doing them at once, each a thread with the file open (bonnie++'s -s size:chunk:seeks:seekers; default 5).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_seekers: Option<u32>,
    /// bonnie: the create tests' files as bonnie++'s -n: NUMBER[:MAX[:MIN[:DIRS]]], NUMBER in multiples of 1024 (default 16, 0 skips them), MAX and MIN file sizes (default 0: empty files), DIRS directories (default 1).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N[:MAX[:MIN[:DIRS]]]", value_parser = crate::patch::parse_word::<BonnieFiles>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_files: Option<BonnieFiles>,
    /// bonnie: no write buffering, bonnie++'s -b: fsync after each seeker's write and each file created, fsync of the directory after each create and delete.
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonnie_sync: Option<bool>,
}

pub mod columns {
    pub const TESTS: [&str; 12] = [
        "putc",
        "put_block",
        "rewrite",
        "getc",
        "get_block",
        "seeks",
        "seq_create",
        "seq_stat",
        "seq_del",
        "ran_create",
        "ran_stat",
        "ran_del",
    ];
    /// %CPU over each test (the CSV's `*_cpu`).
    pub const CPU: [&str; 12] = [
        "putc_cpu",
        "put_block_cpu",
        "rewrite_cpu",
        "getc_cpu",
        "get_block_cpu",
        "seeks_cpu",
        "seq_create_cpu",
        "seq_stat_cpu",
        "seq_del_cpu",
        "ran_create_cpu",
        "ran_stat_cpu",
        "ran_del_cpu",
    ];
    /// Each test's wall time.
    pub const SECS: [&str; 12] = [
        "putc_s",
        "put_block_s",
        "rewrite_s",
        "getc_s",
        "get_block_s",
        "seeks_s",
        "seq_create_s",
        "seq_stat_s",
        "seq_del_s",
        "ran_create_s",
        "ran_stat_s",
        "ran_del_s",
    ];
    /// Each test's longest unit of work (the CSV's latency columns).
    pub const LATENCY: [&str; 12] = [
        "putc_latency_us",
        "put_block_latency_us",
        "rewrite_latency_us",
        "getc_latency_us",
        "get_block_latency_us",
        "seeks_latency_us",
        "seq_create_latency_us",
        "seq_stat_latency_us",
        "seq_del_latency_us",
        "ran_create_latency_us",
        "ran_stat_latency_us",
        "ran_del_latency_us",
    ];
    /// What each test did: bytes, seeks or files.
    pub const AMOUNT: [&str; 12] = [
        "putc_bytes",
        "put_block_bytes",
        "rewrite_bytes",
        "getc_bytes",
        "get_block_bytes",
        "seeks_count",
        "seq_create_files",
        "seq_stat_files",
        "seq_del_files",
        "ran_create_files",
        "ran_stat_files",
        "ran_del_files",
    ];
}

macro_rules! bonnie_figures {
    ($($i:literal)+) => {
        &[$(
            (columns::TESTS[$i], Derived),
            (columns::CPU[$i], Percent),
            (columns::SECS[$i], Seconds),
            (columns::LATENCY[$i], Max),
            (columns::AMOUNT[$i], Count),
        )+]
    };
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BonnieJob {
    /// Size of the test file (`-s`; default twice `ram`, at least 300 MiB, rounded up to a
    /// GiB when more than half a GiB over one).
    pub file_size: Bytes,
    /// The RAM bonnie++ sizes for (`-r`; default MemTotal; 0 skips the size check).
    pub ram: Bytes,
    /// Block size of the block tests (`-s size:chunk`; 8 KiB).
    pub chunk_size: Bytes,
    /// Bytes of the per-character tests (`-f N` in MiB; 3 MiB, bonnie++ 2.0's default, seen
    /// with strace as 3,145,728 one-byte writes; 0 skips them as `-f` does).
    pub char_size: Bytes,
    /// Seeks in all (`-s size:chunk:seeks`; 8192), shared out among the seekers.
    pub seeks: u32,
    /// Seekers doing them at once (`-s size:chunk:seeks:seekers`; 5), the job's threads.
    #[serde(default = "default_seekers")]
    pub seekers: u32,
    /// Files of the create tests in multiples of 1024 (`-n`; 16); 0 skips them.
    pub num_files: u32,
    /// Largest and smallest file of the create tests, bytes (`-n number:max:min`; 0: empty files).
    #[serde(default)]
    pub max_size: u64,
    #[serde(default)]
    pub min_size: u64,
    /// Directories the files are spread over (`-n number:max:min:dirs`; 1).
    #[serde(default = "one")]
    pub dirs: u32,
    /// No write buffering (`-b`): an fsync after each seeker's write, and after each create
    /// an fsync of the file and of its directory, after each delete one of the directory.
    #[serde(default)]
    pub sync: bool,
}

fn default_seekers() -> u32 {
    5
}
fn one() -> u32 {
    1
}

/// bonnie++'s default per-character size (`-f`'s default of 3 MiB).
pub const CHAR_IO_DEFAULT: u64 = 3 << 20;
/// bonnie++'s default file size when it knows no RAM (300 MiB).
pub const DEFAULT_FILE_SIZE: u64 = 300 << 20;

/// The create tests' parameters as `-n` writes them: `NUMBER[:MAX[:MIN[:DIRS]]]`, the number
/// in multiples of 1024 files, the sizes in bytes with an optional k/m/g suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BonnieFiles {
    pub number: u32,
    pub max: u64,
    pub min: u64,
    pub dirs: u32,
}

impl FromStr for BonnieFiles {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() > 4 {
            return Err(format!(
                "`{s}`: bonnie++'s -n is NUMBER[:MAX[:MIN[:DIRS]]] (links and a chunk size are not supported)"
            ));
        }
        let number = parts[0].trim().parse::<u32>().map_err(|_| {
            format!("`{}` is not a number of files (in multiples of 1024, as bonnie++'s -n 16)", parts[0])
        })?;
        let size = |i: usize| -> Result<u64, String> {
            match parts.get(i).map(|p| p.trim()) {
                None | Some("") => Ok(0),
                Some(p) => parse_size(p).map(|b| b.0),
            }
        };
        let dirs = match parts.get(3).map(|p| p.trim()) {
            None | Some("") => 1,
            Some(p) => p.parse::<u32>().map_err(|_| format!("`{p}` is not a number of directories"))?,
        };
        Ok(BonnieFiles { number, max: size(1)?, min: size(2)?, dirs })
    }
}

impl fmt::Display for BonnieFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}:{}", self.number, self.max, self.min, self.dirs)
    }
}

impl Serialize for BonnieFiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for BonnieFiles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A job file may write `bonnie_files = 16` or `bonnie_files = "16:100k:1k:10"`.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(u32),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::Number(n) => Ok(BonnieFiles { number: n, max: 0, min: 0, dirs: 1 }),
            Form::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// MemTotal from /proc/meminfo (0 when it cannot be read).
pub fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|k| k * 1024)
        .unwrap_or(0)
}

/// bonnie++'s file size for `ram` when none is given: twice the RAM and at least its default
/// 300 MiB, rounded up to the next GiB when it is more than half a GiB over a whole one
/// (bonnie++.cpp: `if(file_size % 1024 > 512) file_size += 1024 - file_size % 1024`, in MiB).
pub fn size_for_ram(ram: u64) -> u64 {
    let mib = |b: u64| b >> 20;
    let mut size = mib(DEFAULT_FILE_SIZE).max(mib(ram) * 2);
    if ram > 0 && size % 1024 > 512 {
        size += 1024 - size % 1024;
    }
    size << 20
}

impl Personality for BonnieJob {
    const NAME: &'static str = "bonnie";
    const ABOUT: &'static str = "bonnie++'s tests";
    type Options = BonnieOptions;
    const DIRS: OwnDirs = OwnDirs::PerJob;
    const THREADS_IN_WORDS: bool = false;
    const FIGURES: &'static [(&'static str, Kind)] = bonnie_figures!(0 1 2 3 4 5 6 7 8 9 10 11);

    /// Each test's rate from what it did over its time: K/sec for the data tests (bonnie++'s K
    /// is 1024 bytes), seeks/sec, files/sec. A test that did not run has none.
    fn derive(f: &mut Figures) {
        for i in 0..12 {
            let (Some(amount), Some(secs)) =
                (f.get(columns::AMOUNT[i]).copied(), f.get(columns::SECS[i]).copied())
            else {
                continue;
            };
            let unit = if i <= 4 { 1024.0 } else { 1.0 };
            f.insert(columns::TESTS[i].to_string(), crate::figures::per(amount / unit, secs));
        }
    }

    fn resolve(o: &BonnieOptions, p: &JobPatch, name: &str) -> Result<BonnieJob, SpecError> {
        if p.threads.is_some() {
            return Err(SpecError::field(
                name,
                "threads",
                "bonnie++ runs its tests in one process; its concurrent seekers are --bonnie-seekers (5)",
            ));
        }
        let ram = o.bonnie_ram.unwrap_or_else(|| Bytes(mem_total()));
        let size = o.bonnie_size.unwrap_or(Bytes(size_for_ram(ram.0)));
        if o.bonnie_size.is_some() && ram.0 > 0 && size.0 < ram.0.saturating_mul(2) {
            return Err(SpecError::field(
                name,
                "bonnie_size",
                format!(
                    "{size} is less than twice the RAM ({ram}): bonnie++ refuses it (\"File size should be double RAM for good results\"); give the RAM to size for with --bonnie-ram (its -r), or --bonnie-ram 0 to skip the check"
                ),
            ));
        }
        let files = o.bonnie_files.unwrap_or(BonnieFiles { number: 16, max: 0, min: 0, dirs: 1 });
        let char_size = o.bonnie_char_size.unwrap_or(Bytes(CHAR_IO_DEFAULT));
        Ok(BonnieJob {
            file_size: size,
            ram,
            chunk_size: o.bonnie_chunk.unwrap_or(Bytes::kib(8)),
            char_size: Bytes(char_size.0.min(size.0)),
            seeks: o.bonnie_seeks.unwrap_or(8192),
            seekers: o.bonnie_seekers.unwrap_or(5),
            num_files: files.number,
            max_size: files.max,
            min_size: files.min,
            dirs: files.dirs,
            sync: o.bonnie_sync.unwrap_or(false),
        })
    }

    /// bonnie++'s seekers: its tests run in the first.
    fn threads(&self, _asked: Option<u32>) -> u32 {
        self.seekers
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!("{} file, {} chunks, {}×1024 files", self.file_size, self.chunk_size, self.num_files));
        if self.max_size > 0 {
            words.push(format!("of {}-{} bytes", self.min_size, self.max_size));
        }
        if self.dirs > 1 {
            words.push(format!("in {} dirs", self.dirs));
        }
        if self.sync {
            words.push("no write buffering".into());
        }
    }

    /// The test file and the create tests' largest files.
    fn space(&self) -> u64 {
        self.file_size.0 + self.files() * self.max_size
    }

    fn buffer_len(&self) -> u64 {
        self.chunk_size.0
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if job.threads != self.seekers {
            return err("threads", format!("{}: a bonnie job's threads are its {} seekers", job.threads, self.seekers));
        }
        if !(1..=100).contains(&self.seekers) {
            return err("bonnie_seekers", format!("{}: accepted 1 to 100", self.seekers));
        }
        if self.seeks == 0 || self.seeks > 1 << 30 {
            return err("bonnie_seeks", format!("{}: accepted 1 to {}", self.seeks, 1u32 << 30));
        }
        let c = self.chunk_size.0;
        if !(256..=1 << 20).contains(&c) || !c.is_power_of_two() {
            return err(
                "bonnie_chunk",
                format!("{}: bonnie++ takes a power of two from 256 bytes to 1 MiB", self.chunk_size),
            );
        }
        if !self.file_size.0.is_multiple_of(1 << 20) || self.file_size.0 == 0 || self.file_size.0 > 1 << 44 {
            return err(
                "bonnie_size",
                format!("{}: bonnie++ sizes its file in whole MiB, from 1 MiB to 16 TiB", self.file_size),
            );
        }
        if !self.char_size.0.is_multiple_of(1 << 20) {
            return err("bonnie_char_size", format!("{}: bonnie++'s -f counts whole MiB", self.char_size));
        }
        if self.num_files > 1000 {
            return err("bonnie_files", format!("{} (×1024 files): accepted 0 to 1000", self.num_files));
        }
        if self.max_size < self.min_size || self.max_size > 1 << 30 {
            return err(
                "bonnie_files",
                format!(
                    "files of {} to {} bytes: the largest must be at least the smallest, at most 1 GiB",
                    self.min_size, self.max_size
                ),
            );
        }
        if self.dirs == 0 || self.dirs >= 100_000 {
            return err("bonnie_files", format!("{} directories: bonnie++ takes 1 to 99,999", self.dirs));
        }
        if job.runtime.is_some() {
            return err("runtime", "bonnie++ runs each test to its end; it takes no runtime".into());
        }
        // --direct is bonnie++'s -D: the file of the block write test is created with
        // O_DIRECT (the tests after it open it without, as bonnie++ 2.0 does). Its per-character
        // tests write 1 byte at a time, which O_DIRECT refuses: bonnie++ -D then stops with
        // "Can't write() - disk full?", so they must be skipped (its -f).
        if job.direct && self.char_size.0 > 0 {
            return err(
                "direct",
                "bonnie++'s per-character tests are 1-byte calls; direct I/O needs aligned sizes: skip them with --bonnie-char-size 0 (bonnie++ -D -f)".into(),
            );
        }
        if job.direct && !self.chunk_size.0.is_multiple_of(512) {
            return err(
                "bonnie_chunk",
                format!("{}: with direct I/O the chunk must be a multiple of 512 bytes", self.chunk_size),
            );
        }
        Ok(())
    }
}

impl BonnieJob {
    /// Blocks of `chunk` in the file.
    pub fn blocks(&self) -> u64 {
        self.file_size.0 / self.chunk_size.0.max(1)
    }

    /// Files of the create tests.
    pub fn files(&self) -> u64 {
        self.num_files as u64 * 1024
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
    fn o(options: BonnieOptions) -> JobPatch {
        JobPatch::default().with::<BonnieJob>(|o| *o = options)
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
        assert_eq!((b.ram.0, b.file_size.0), (mem_total(), size_for_ram(mem_total())), "twice the RAM by default");
        assert_eq!(
            (b.chunk_size, b.char_size, b.seeks, b.num_files),
            (Bytes::kib(8), Bytes(CHAR_IO_DEFAULT), 8192, 16)
        );
        assert_eq!((b.seekers, j.threads, b.dirs, b.sync), (5, 5, 1, false), "5 seekers, the job's threads");
        // bonnie++'s rounding, in MiB: 2 × 700 = 1400 is 376 over a GiB (kept), 2 × 800 =
        // 1600 is 576 over (rounded up to 2048); never under its 300 MiB default.
        assert_eq!(size_for_ram(700 << 20), 1400 << 20);
        assert_eq!(size_for_ram(800 << 20), 2048 << 20);
        assert_eq!(size_for_ram(100 << 20), 300 << 20);
        assert_eq!(size_for_ram(0), 300 << 20);
        let j = job(o(BonnieOptions { bonnie_ram: Some(Bytes::mib(512)), ..Default::default() })).unwrap();
        assert_eq!(bonnie(&j).file_size, Bytes::gib(1), "-r 512 makes a 1 GiB file");
        let j = job(o(BonnieOptions { bonnie_size: Some(Bytes::mib(1)), bonnie_ram: Some(Bytes(0)), ..Default::default() }))
            .unwrap();
        assert_eq!((bonnie(&j).file_size, bonnie(&j).char_size), (Bytes::mib(1), Bytes::mib(1)));
        let j = job(o(BonnieOptions { bonnie_size: Some(Bytes::mib(2048)), bonnie_ram: Some(Bytes::mib(1024)), bonnie_files: Some("2:64k:1k:10".parse().unwrap()), bonnie_seekers: Some(3), bonnie_char_size: Some(Bytes(0)), ..Default::default() }))
        .unwrap();
        let b = bonnie(&j);
        assert_eq!(
            (b.num_files, b.max_size, b.min_size, b.dirs, b.seekers, b.char_size),
            (2, 65536, 1024, 10, 3, Bytes(0))
        );
        assert_eq!(j.threads, 3);
    }

    #[test]
    fn refuses_what_bonnie_refuses() {
        let e = |p: JobPatch| job(p).unwrap_err().to_string();
        let small = |p: JobPatch| p.with::<BonnieJob>(|o| o.bonnie_ram = Some(Bytes(0)));
        assert!(e(JobPatch { threads: Some(2), ..Default::default() }).contains("--bonnie-seekers"));
        let twice =
            e(o(BonnieOptions { bonnie_size: Some(Bytes::mib(100)), bonnie_ram: Some(Bytes::mib(64)), ..Default::default() }));
        assert!(twice.contains("twice the RAM") && twice.contains("--bonnie-ram 0"), "{twice}");
        assert!(e(small(o(BonnieOptions { bonnie_size: Some(Bytes(100)), ..Default::default() }))).contains("whole MiB"));
        assert!(e(small(o(BonnieOptions { bonnie_chunk: Some(Bytes(3000)), ..Default::default() }))).contains("power of two"));
        assert!(e(small(o(BonnieOptions { bonnie_files: Some("5000".parse().unwrap()), ..Default::default() })))
            .contains("bonnie_files"));
        assert!(e(small(o(BonnieOptions { bonnie_files: Some("1:1k:4k".parse().unwrap()), ..Default::default() })))
            .contains("largest"));
        assert!(e(small(JobPatch { direct: Some(true), ..Default::default() })).contains("direct"));
        // --direct is bonnie++'s -D, which stops at the per-character tests' first 1-byte write:
        // taken without them (-f), and with a chunk O_DIRECT can move.
        let direct = |o: BonnieOptions| small(JobPatch { direct: Some(true), ..Default::default() }.with::<BonnieJob>(|x| {
            x.bonnie_char_size = o.bonnie_char_size;
            x.bonnie_chunk = o.bonnie_chunk;
            x.bonnie_size = Some(Bytes::mib(16));
        }));
        assert!(e(direct(BonnieOptions::default())).contains("--bonnie-char-size 0"));
        assert!(job(direct(BonnieOptions { bonnie_char_size: Some(Bytes(0)), ..Default::default() })).is_ok());
        let chunk = BonnieOptions { bonnie_char_size: Some(Bytes(0)), bonnie_chunk: Some(Bytes(256)), ..Default::default() };
        assert!(e(direct(chunk)).contains("multiple of 512"));
        assert!(e(small(JobPatch { runtime: Some(std::time::Duration::from_secs(3)), ..Default::default() }))
            .contains("runtime"));
        assert!("1:2:3:4:5".parse::<BonnieFiles>().is_err());
        assert!("x".parse::<BonnieFiles>().unwrap_err().contains("number of files"));
    }
}
