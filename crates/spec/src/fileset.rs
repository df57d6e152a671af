//! Several files per thread of a block job (fio's `nrfiles`, `filesize`, `file_service_type`,
//! `filename_format`): how many files each thread works on, their sizes and names in the job's
//! directory, and how its I/O moves from one to the next.

use crate::units::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The most files one thread takes (each is opened for the whole phase).
pub const MAX_FILES: u32 = 65_536;

/// fio's default file names: `$jobname.$jobnum.$filenum` (init.c).
pub const DEFAULT_NAMES: &str = "$jobname.$jobnum.$filenum";

/// Which file the next I/O goes to (fio's file_service_type; fio's default is roundrobin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileService {
    /// The next file after every `n` I/Os.
    RoundRobin(u32),
    /// Each file to its end before the next.
    Sequential,
    /// A file drawn at random for every `n` I/Os.
    Random(u32),
}

impl fmt::Display for FileService {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            FileService::RoundRobin(1) => write!(f, "roundrobin"),
            FileService::RoundRobin(n) => write!(f, "roundrobin:{n}"),
            FileService::Sequential => write!(f, "sequential"),
            FileService::Random(1) => write!(f, "random"),
            FileService::Random(n) => write!(f, "random:{n}"),
        }
    }
}

impl FromStr for FileService {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, n) = match s.trim().split_once(':') {
            Some((k, n)) => {
                let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("`{s}`: the number after `:` is how many I/Os go to a file before the next (1 or more)")
                })?;
                (k.trim(), n)
            }
            None => (s.trim(), 1),
        };
        match kind {
            "roundrobin" => Ok(FileService::RoundRobin(n)),
            "random" => Ok(FileService::Random(n)),
            "sequential" if n == 1 => Ok(FileService::Sequential),
            _ => Err(format!("`{s}`: accepted: roundrobin[:N], sequential, random[:N]")),
        }
    }
}

/// A file size, or a range `LOW-HIGH` each file's size is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeRange {
    pub low: Bytes,
    pub high: Bytes,
}

impl fmt::Display for SizeRange {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}", self.low)
        } else {
            write!(f, "{}-{}", self.low, self.high)
        }
    }
}

impl FromStr for SizeRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (low, high) = match s.split_once('-') {
            Some((a, b)) => (crate::units::parse_size(a)?, crate::units::parse_size(b)?),
            None => {
                let v = crate::units::parse_size(s)?;
                (v, v)
            }
        };
        if low.0 == 0 || high < low {
            return Err(format!("`{s}`: a file size above 0, or a range LOW-HIGH with LOW <= HIGH"));
        }
        Ok(SizeRange { low, high })
    }
}

macro_rules! as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
as_text!(FileService);
as_text!(SizeRange);

/// A block job's files per thread, in its directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSet {
    /// Files per thread (2 or more).
    pub count: u32,
    /// Each file's size; `None`: the job's size shared evenly among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<SizeRange>,
    pub service: FileService,
    /// The names, with `$jobname`, `$jobnum` (the thread) and `$filenum` (any case).
    pub names: String,
}

impl FileSet {
    /// File `file` of thread `thread` of job `job`, by the name format.
    pub fn name(&self, job: &str, thread: u32, file: u32) -> String {
        let mut out = self.names.clone();
        for (k, v) in [("$jobname", job.to_string()), ("$jobnum", thread.to_string()), ("$filenum", file.to_string())] {
            while let Some(i) = out.to_ascii_lowercase().find(k) {
                out.replace_range(i..i + k.len(), &v);
            }
        }
        out
    }

    /// The size of file `file` of thread `thread`: drawn from the range (seeded, so the same
    /// every run) and rounded down to the smallest block size as fio does
    /// (filesetup.c, get_rand_file_size), else the job's `size` over the files.
    pub fn size_of(&self, job_size: Option<Bytes>, seed: u64, thread: u32, file: u32, min_bs: u64) -> Option<u64> {
        match self.size {
            Some(r) if r.low == r.high => Some(r.low.0),
            Some(r) => {
                let x = mix(seed ^ 0xF11E_5E70 ^ ((thread as u64) << 32 | file as u64));
                let span = r.high.0 - r.low.0;
                let v = r.low.0 + ((x as u128 * (span as u128 + 1)) >> 64) as u64;
                let v = v - v % min_bs.max(1);
                Some(v.max(min_bs))
            }
            None => job_size.map(|s| s.0 / self.count as u64),
        }
    }

    /// The rules a file set keeps (names that stay in the directory and tell files apart).
    pub fn check(&self, threads: u32) -> Result<(), String> {
        if self.count < 2 || self.count > MAX_FILES {
            return Err(format!("{}: files per thread are 2 to {MAX_FILES} (1 is the job's one target)", self.count));
        }
        let lower = self.names.to_ascii_lowercase();
        if !lower.contains("$filenum") {
            return Err(format!("`{}`: the names need $filenum, or the files would share one name", self.names));
        }
        if threads > 1 && !lower.contains("$jobnum") {
            return Err(format!(
                "`{}`: with {threads} threads the names need $jobnum, or the threads would share files",
                self.names
            ));
        }
        if self.names.contains('/') || self.names.is_empty() {
            return Err(format!("`{}`: a name within the job's directory, without `/`", self.names));
        }
        Ok(())
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_sizes_and_names_read_and_print_as_fio_writes_them() {
        for s in ["roundrobin", "roundrobin:4", "sequential", "random", "random:2"] {
            assert_eq!(s.parse::<FileService>().unwrap().to_string(), s);
        }
        assert!("gauss".parse::<FileService>().unwrap_err().contains("accepted"));
        assert!("random:0".parse::<FileService>().is_err());
        let r: SizeRange = "1m-2m".parse().unwrap();
        assert_eq!((r.low, r.high), (Bytes::mib(1), Bytes::mib(2)));
        assert!("2m-1m".parse::<SizeRange>().is_err());
        let set = FileSet { count: 4, size: Some(r), service: FileService::RoundRobin(1), names: DEFAULT_NAMES.into() };
        assert_eq!(set.name("t", 1, 3), "t.1.3");
        for f in 0..4 {
            let v = set.size_of(None, 7, 0, f, 4096).unwrap();
            assert!((1 << 20..=2 << 20).contains(&v) && v.is_multiple_of(4096), "{v}");
        }
        assert!(set.check(2).is_ok());
        let one = FileSet { names: "x.$filenum".into(), ..set.clone() };
        assert!(one.check(2).unwrap_err().contains("$jobnum"));
        assert!(one.check(1).is_ok());
    }
}
