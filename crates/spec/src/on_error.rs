//! Errors a block job goes on after (`--continue-on-error`, `--ignore-error`: fio's
//! continue_on_error and ignore_error). By default a job ends at its first failed I/O and
//! names it; with these, a failed read or write whose errno is in its direction's list is
//! counted (how many, and the first one) and the job goes on, as fio's td_non_fatal_error
//! decides: the direction must be one `continue_on_error` names, and the errno one of that
//! direction's `ignore_error` list (EIO and EILSEQ when none is given).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// fio's `continue_on_error` words: which directions' errors a job goes on after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContinueOn {
    None,
    Read,
    Write,
    Io,
    Verify,
    All,
}

impl ContinueOn {
    pub const WORDS: &'static str = "none, read, write, io (read and write), verify, all (or fio's 0 and 1)";

    fn reads(self) -> bool {
        matches!(self, ContinueOn::Read | ContinueOn::Io | ContinueOn::All)
    }
    fn writes(self) -> bool {
        matches!(self, ContinueOn::Write | ContinueOn::Io | ContinueOn::All)
    }
}

impl FromStr for ContinueOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "none" | "0" | "false" => ContinueOn::None,
            "read" => ContinueOn::Read,
            "write" => ContinueOn::Write,
            "io" => ContinueOn::Io,
            "verify" => ContinueOn::Verify,
            "all" | "1" | "true" => ContinueOn::All,
            other => return Err(format!("`{other}` is not a kind of error; accepted: {}", Self::WORDS)),
        })
    }
}

impl fmt::Display for ContinueOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContinueOn::None => "none",
            ContinueOn::Read => "read",
            ContinueOn::Write => "write",
            ContinueOn::Io => "io",
            ContinueOn::Verify => "verify",
            ContinueOn::All => "all",
        })
    }
}

/// The errno names fio's ignore_error takes (options.c's str2error: errno 1 to 34 by name);
/// any other error is given by its number.
const NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD", "EAGAIN", "ENOMEM",
    "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE",
    "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// fio's errors a job goes on after when no list is given (td_error.c's __NON_FATAL_ERR).
pub const NON_FATAL: [i32; 2] = [libc::EIO, libc::EILSEQ];

/// An errno's name where fio knows it, else its number.
pub fn errno_name(e: i32) -> String {
    match e {
        1..=34 => NAMES[e as usize - 1].to_string(),
        libc::EILSEQ => "EILSEQ".into(),
        libc::EDQUOT => "EDQUOT".into(),
        _ => e.to_string(),
    }
}

/// fio's `ignore_error`: a list per direction (read, write, verify), each of errno names or
/// numbers separated by `:`; an empty list leaves that direction's default. Kept in job files
/// and plans as fio writes it (`",ENOSPC"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreError {
    pub read: Option<Vec<i32>>,
    pub write: Option<Vec<i32>>,
    pub verify: Option<Vec<i32>>,
}

impl Serialize for IgnoreError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IgnoreError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for IgnoreError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(',').collect();
        if parts.len() > 3 {
            return Err(format!("`{s}`: at most three lists (read, write, verify), separated by commas"));
        }
        let list = |p: &str| -> Result<Option<Vec<i32>>, String> {
            let p = p.trim();
            if p.is_empty() {
                return Ok(None);
            }
            p.split(':')
                .map(|e| {
                    let e = e.trim();
                    let n = match NAMES.iter().position(|n| *n == e) {
                        Some(i) => i as i32 + 1,
                        None => e.parse::<i32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                            format!(
                                "`{e}` is not an error: give an errno by number (122) or by one of fio's names ({})",
                                NAMES.join(", ")
                            )
                        })?,
                    };
                    Ok(n)
                })
                .collect::<Result<Vec<i32>, String>>()
                .map(Some)
        };
        let mut out = IgnoreError::default();
        for (i, p) in parts.iter().enumerate() {
            let l = list(p)?;
            match i {
                0 => out.read = l,
                1 => out.write = l,
                _ => out.verify = l,
            }
        }
        Ok(out)
    }
}

impl fmt::Display for IgnoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // fio's names where it has one, else the number: what FromStr reads back.
        let name = |e: i32| match e {
            1..=34 => NAMES[e as usize - 1].to_string(),
            _ => e.to_string(),
        };
        let l = |v: &Option<Vec<i32>>| {
            v.as_ref().map(|v| v.iter().map(|e| name(*e)).collect::<Vec<_>>().join(":")).unwrap_or_default()
        };
        write!(f, "{},{}", l(&self.read), l(&self.write))?;
        if self.verify.is_some() {
            write!(f, ",{}", l(&self.verify))?;
        }
        Ok(())
    }
}

/// The errors a job goes on after, per direction (`None`: its first error ends the job).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnError {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Vec<i32>>,
}

impl OnError {
    /// What `continue_on_error` and `ignore_error` give (`None`: nothing to go on after).
    pub fn of(on: Option<ContinueOn>, ignore: Option<&IgnoreError>) -> Option<OnError> {
        let on = on?;
        let list = |l: Option<&Vec<i32>>| l.cloned().unwrap_or_else(|| NON_FATAL.to_vec());
        let e = OnError {
            read: on.reads().then(|| list(ignore.and_then(|i| i.read.as_ref()))),
            write: on.writes().then(|| list(ignore.and_then(|i| i.write.as_ref()))),
        };
        (e.read.is_some() || e.write.is_some()).then_some(e)
    }

    /// Whether a failed call (a read when `read`, else a write, flush or other data call, as
    /// fio counts them) with errno `e` is one the job goes on after. EILSEQ is fio's verify
    /// error, never an I/O's.
    pub fn goes_on(&self, read: bool, e: i32) -> bool {
        let l = if read { &self.read } else { &self.write };
        l.as_ref().is_some_and(|l| l.contains(&e))
    }

    /// In a few words, for `Job::describe`.
    pub fn describe(&self) -> String {
        let l = |d: &str, v: &Option<Vec<i32>>| {
            v.as_ref().map(|v| format!("{d} {}", v.iter().map(|e| errno_name(*e)).collect::<Vec<_>>().join("/")))
        };
        let parts: Vec<String> = [l("read", &self.read), l("write", &self.write)].into_iter().flatten().collect();
        format!("goes on after {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_words_and_lists_give_the_errors_a_job_goes_on_after() {
        // enospc-pressure.fio: continue_on_error=write, ignore_error=,ENOSPC.
        let i: IgnoreError = ",ENOSPC".parse().unwrap();
        let e = OnError::of(Some(ContinueOn::Write), Some(&i)).unwrap();
        assert!(e.goes_on(false, 28) && !e.goes_on(false, 5) && !e.goes_on(true, 28) && !e.goes_on(true, 5));
        // Without a list, fio's non-fatal errors: EIO and EILSEQ.
        let e = OnError::of(Some(ContinueOn::Io), None).unwrap();
        assert!(e.goes_on(true, 5) && e.goes_on(false, 5) && !e.goes_on(false, 28));
        // The HOWTO's example: EAGAIN on reads; ENOSPC and 122 (EDQUOT) on writes.
        let i: IgnoreError = "EAGAIN,ENOSPC:122".parse().unwrap();
        assert_eq!((i.read.clone(), i.write.clone()), (Some(vec![11]), Some(vec![28, 122])));
        assert_eq!(i.to_string(), "EAGAIN,ENOSPC:122");
        assert_eq!(i.to_string().parse::<IgnoreError>(), Ok(i.clone()), "read back as written");
        assert_eq!(serde_json::to_value(&i).unwrap(), serde_json::json!("EAGAIN,ENOSPC:122"));
        // A list alone does not go on: continue_on_error must name the direction (fio alike).
        assert_eq!(OnError::of(None, Some(&i)), None);
        assert_eq!(OnError::of(Some(ContinueOn::None), Some(&i)), None);
        assert_eq!(OnError::of(Some(ContinueOn::Verify), None), None);
        assert_eq!("1".parse::<ContinueOn>(), Ok(ContinueOn::All));
        let e = "sometimes".parse::<ContinueOn>().unwrap_err();
        assert!(e.contains("none, read, write, io"), "{e}");
        let e = "ENOTANERROR".parse::<IgnoreError>().unwrap_err();
        assert!(e.contains("ENOTANERROR") && e.contains("ENOSPC"), "{e}");
        assert!("a,b,c,d".parse::<IgnoreError>().is_err());
    }

    #[test]
    fn a_job_file_takes_fios_words() {
        let text = "[[phase]]\n[[phase.job]]\ntarget='/x'\nsize='1M'\nrw='randwrite'\ncontinue_on_error='write'\nignore_error=',ENOSPC:122'\n";
        let plan = crate::file::parse_job_file(text, &crate::JobPatch::default()).unwrap();
        let b = plan.phases[0].jobs[0].workload.block().unwrap();
        assert_eq!(b.on_error.as_deref(), Some(&OnError { read: None, write: Some(vec![28, 122]) }));
        let e = crate::file::parse_job_file(&text.replace("'write'", "'often'"), &crate::JobPatch::default());
        assert!(e.unwrap_err().to_string().contains("continue_on_error"));
    }
}
