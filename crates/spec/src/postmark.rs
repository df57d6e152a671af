//! PostMark's options (Katcher, NetApp 1997; version 1.5x): its configuration-file syntax
//! (`set size 1024 262144`, `set number 5000`, ..., `set location DIR [WEIGHT]`, `run`,
//! `quit`), its defaults, and the rules a PostMark job follows. A configuration file is read and
//! parsed when the plan is made, so a plan holding a PostMark job is plain data that can be
//! shipped to another node; it keeps where each setting came from (`pm.cfg line 3: set number
//! 20`, `--number 20`) so that a failure can name it.

use crate::figures::{get, per, Figures, Kind, Kind::*};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::personality::{OwnDirs, Personality};
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// PostMark's options as flags and job-file keys (each unset one is left to the configuration
/// file, then to PostMark's default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(next_help_heading = "PostMark (--workload postmark)"))]
#[serde(deny_unknown_fields)]
pub struct PostmarkOptions {
    /// PostMark: its configuration file (`set size 1024 262144`, `set number 5000`, ...), read when the plan is made.
    #[cfg_attr(feature = "clap", arg(long = "config", value_name = "FILE", value_parser = parse_config_flag))]
    #[serde(
        rename = "config",
        default,
        deserialize_with = "config_or_path",
        skip_serializing_if = "Option::is_none"
    )]
    pub postmark_config: Option<PostmarkConfig>,
    /// PostMark: files in the pool (default 500).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u32>,
    /// PostMark: transactions (default 500).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u32>,
    /// PostMark: chance in 10 of a read over an append, -1 for neither (default 5).
    #[cfg_attr(feature = "clap", arg(long, allow_hyphen_values = true))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_read: Option<i8>,
    /// PostMark: chance in 10 of a create over a delete, -1 for neither (default 5).
    #[cfg_attr(feature = "clap", arg(long, allow_hyphen_values = true))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_create: Option<i8>,
    /// PostMark: subdirectories s0..s{N-1} (used when above 1; default 0).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdirectories: Option<u32>,
    /// PostMark: file sizes, bytes: LOW, or LOW HIGH (`set size`; default 500 10000).
    #[cfg_attr(feature = "clap", arg(long, num_args = 1..=2, value_names = ["LOW", "HIGH"]))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm_size: Option<Vec<u32>>,
    /// PostMark: read block size, bytes (`set read`; default 512).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm_read: Option<u32>,
    /// PostMark: write block size, bytes (`set write`; default 512).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm_write: Option<u32>,
    /// PostMark: C library buffered I/O, 4096-byte system calls (`set buffering`; default true).
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm_buffering: Option<bool>,
    /// PostMark: fsync each file after writing it, before close (not in the original).
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postmark_fsync: Option<bool>,
}

#[cfg(feature = "clap")]
fn parse_config_flag(s: &str) -> Result<PostmarkConfig, String> {
    read_config(std::path::Path::new(s))
}

/// PostMark's settings as a configuration file or the flags give them: each `None` is left to
/// PostMark's default (or to a layer below).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostmarkConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_low: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_high: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_read: Option<i8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_create: Option<i8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdirectories: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffering: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// `set location`s: each a directory name and its weight, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<(String, u32)>>,
    /// Where each setting came from, by name (`number` → "pm.cfg line 2: `set number 20`").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub from: BTreeMap<String, String>,
}

/// A PostMark job, complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostmarkJob {
    /// Smallest file created (bytes; `set size L H`'s L, default 500).
    pub size_low: u32,
    /// Largest file (bytes; H, default 10000); appends grow a file up to it.
    pub size_high: u32,
    /// Files in the pool (`set number`, default 500).
    pub number: u32,
    /// Transactions (`set transactions`, default 500).
    pub transactions: u32,
    /// Read block size (`set read`, default 512).
    pub read: u32,
    /// Write block size (`set write`, default 512).
    pub write: u32,
    /// Chance in 10 of a read over an append (-1: neither; default 5).
    pub bias_read: i8,
    /// Chance in 10 of a create over a delete (-1: neither; default 5).
    pub bias_create: i8,
    /// Subdirectories `s0..s{D-1}` (used when above 1; default 0).
    pub subdirectories: u32,
    /// C library buffered I/O (4096-byte system calls) rather than one call per block.
    pub buffering: bool,
    /// PostMark's seed (`set seed`, default 42); thread t uses seed + t.
    pub pm_seed: u32,
    /// Beyond the original: fsync each file after it is created or appended to, before close.
    pub fsync: bool,
    /// `set location`s: PostMark spreads its files over these directories by weight; iolab
    /// makes each one a directory `loc<N>` inside the thread's own directory under the target
    /// (the names are kept only to be shown). Empty: the thread's directory itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<(String, u32)>,
    /// Where `number`, `transactions` and the biases came from, to name them when the pool
    /// runs dry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub origin: BTreeMap<String, String>,
}

/// The size of the C library's stdio buffer: what a buffered PostMark's system calls move.
pub const STDIO_BUFFER: u32 = 4096;

impl Personality for PostmarkJob {
    const NAME: &'static str = "postmark";
    const ABOUT: &'static str = "PostMark's small-file transactions";
    type Options = PostmarkOptions;
    const DIRS: OwnDirs = OwnDirs::PerThread;
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[
        ("transactions", "transactions"),
        ("created", "files created"),
        ("created_alone", "files created alone (creation phase)"),
        ("created_mixed", "files created, mixed phase"),
        ("read", "files read"),
        ("appended", "files appended to"),
        ("deleted", "files deleted"),
        ("deleted_alone", "files deleted alone (deletion phase)"),
        ("deleted_mixed", "files deleted, mixed phase"),
        ("bytes_read", "bytes read"),
        ("bytes_written", "bytes written"),
        ("elapsed_s", "seconds in all"),
        ("creation_s", "seconds creating the file pool"),
        ("transactions_s", "seconds of transactions"),
        ("deletion_s", "seconds deleting the pool"),
        ("transactions_per_s", "transactions per second"),
        ("created_per_s", "files created per second"),
        ("created_alone_per_s", "files created per second, creation phase"),
        ("created_mixed_per_s", "files created per second, mixed phase"),
        ("read_per_s", "files read per second"),
        ("appended_per_s", "files appended to per second"),
        ("deleted_per_s", "files deleted per second"),
        ("deleted_alone_per_s", "files deleted per second, deletion phase"),
        ("deleted_mixed_per_s", "files deleted per second, mixed phase"),
        ("bytes_read_per_s", "bytes read per second"),
        ("bytes_written_per_s", "bytes written per second"),
    ];
    const FIGURES: &'static [(&'static str, Kind)] = &[
        ("transactions", Count),
        ("created", Count),
        ("created_alone", Count),
        ("created_mixed", Count),
        ("read", Count),
        ("appended", Count),
        ("deleted", Count),
        ("deleted_alone", Count),
        ("deleted_mixed", Count),
        ("bytes_read", Count),
        ("bytes_written", Count),
        ("elapsed_s", Seconds),
        ("creation_s", Seconds),
        ("transactions_s", Seconds),
        ("deletion_s", Seconds),
        ("transactions_per_s", Derived),
        ("created_per_s", Derived),
        ("created_alone_per_s", Derived),
        ("created_mixed_per_s", Derived),
        ("read_per_s", Derived),
        ("appended_per_s", Derived),
        ("deleted_per_s", Derived),
        ("deleted_alone_per_s", Derived),
        ("deleted_mixed_per_s", Derived),
        ("bytes_read_per_s", Derived),
        ("bytes_written_per_s", Derived),
    ];

    /// Rates as PostMark divides them: creations, reads, appends and deletions mixed with
    /// transactions over the transactions' time; the pool's creation and deletion over their
    /// own; totals and bytes over all of it.
    fn derive(f: &mut Figures) {
        let (e, t, c, d) = (get(f, "elapsed_s"), get(f, "transactions_s"), get(f, "creation_s"), get(f, "deletion_s"));
        let rates = [
            ("transactions_per_s", per(get(f, "transactions"), t)),
            ("created_per_s", per(get(f, "created"), e)),
            ("created_alone_per_s", per(get(f, "created_alone"), c)),
            ("created_mixed_per_s", per(get(f, "created_mixed"), t)),
            ("read_per_s", per(get(f, "read"), t)),
            ("appended_per_s", per(get(f, "appended"), t)),
            ("deleted_per_s", per(get(f, "deleted"), e)),
            ("deleted_alone_per_s", per(get(f, "deleted_alone"), d)),
            ("deleted_mixed_per_s", per(get(f, "deleted_mixed"), t)),
            ("bytes_read_per_s", per(get(f, "bytes_read"), e)),
            ("bytes_written_per_s", per(get(f, "bytes_written"), e)),
        ];
        for (k, v) in rates {
            f.insert(k.to_string(), v);
        }
    }

    fn resolve(o: &PostmarkOptions, p: &JobPatch, name: &str) -> Result<PostmarkJob, SpecError> {
        let c = o.postmark_config.clone().unwrap_or_default();
        let seed = match c.seed {
            Some(s) => s,
            None => match p.seed {
                None => 42,
                Some(s) => u32::try_from(s).ok().filter(|s| *s > 0).ok_or_else(|| {
                    SpecError::field(name, "seed", format!("PostMark's seed is 1 to {}, not {s}", u32::MAX))
                })?,
            },
        };
        let (size_low, size_high) = match o.pm_size.as_deref() {
            Some([low]) => (*low, *low),
            Some([low, high]) => (*low, *high),
            Some(other) => {
                return Err(SpecError::field(
                    name,
                    "pm_size",
                    format!("{} values: give LOW, or LOW HIGH, as `set size` does", other.len()),
                ))
            }
            None => {
                let low = c.size_low.unwrap_or(500);
                (low, c.size_high.unwrap_or(if c.size_low.is_some() { low } else { 10000 }))
            }
        };
        // Where the settings that can run the pool dry came from.
        let mut origin = BTreeMap::new();
        for (k, flag) in [
            ("number", o.number.map(|v| v.to_string())),
            ("transactions", o.transactions.map(|v| v.to_string())),
            ("bias_create", o.bias_create.map(|v| v.to_string())),
        ] {
            let said = match flag {
                Some(v) => Some(format!("--{} {v}", k.replace('_', "-"))),
                None => c.from.get(k).cloned(),
            };
            if let Some(s) = said {
                origin.insert(k.to_string(), s);
            }
        }
        Ok(PostmarkJob {
            size_low,
            size_high,
            number: o.number.or(c.number).unwrap_or(500),
            transactions: o.transactions.or(c.transactions).unwrap_or(500),
            read: o.pm_read.or(c.read).unwrap_or(512),
            write: o.pm_write.or(c.write).unwrap_or(512),
            bias_read: o.bias_read.or(c.bias_read).unwrap_or(5),
            bias_create: o.bias_create.or(c.bias_create).unwrap_or(5),
            subdirectories: o.subdirectories.or(c.subdirectories).unwrap_or(0),
            buffering: o.pm_buffering.or(c.buffering).unwrap_or(true),
            pm_seed: seed,
            fsync: o.postmark_fsync.unwrap_or(false),
            locations: c.locations.unwrap_or_default(),
            origin,
        })
    }

    fn describe(&self, _job: &Job, words: &mut Vec<String>) {
        words.push(format!(
            "{} files {} transactions {}-{} bytes",
            self.number, self.transactions, self.size_low, self.size_high
        ));
        if self.fsync {
            words.push("fsync".into());
        }
    }

    fn buffer_len(&self) -> u64 {
        self.chunk() as u64
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        let err = |field: &str, message: String| Err(SpecError::field(&job.name, field, message));
        if self.size_low == 0 || self.size_high < self.size_low || self.size_high > 1 << 30 {
            return err(
                "size",
                format!(
                    "file sizes {} to {}: the low bound must be at least 1, the high at least the low and at most 1 GiB",
                    self.size_low, self.size_high
                ),
            );
        }
        if self.number == 0 || self.number > 1 << 29 {
            return err("number", format!("{} files: accepted 1 to {}", self.number, 1u32 << 29));
        }
        if self.transactions == 0 || self.transactions > i32::MAX as u32 {
            return err("transactions", format!("{}: accepted 1 to {}", self.transactions, i32::MAX));
        }
        for (f, v) in [("read", self.read), ("write", self.write)] {
            if v == 0 || v > 1 << 24 {
                return err(f, format!("a {f} block of {v} bytes: accepted 1 to 16 MiB"));
            }
        }
        for (f, v) in [("bias_read", self.bias_read), ("bias_create", self.bias_create)] {
            if !(-1..=10).contains(&v) {
                return err(f, format!("{v}: a bias is 0 to 10 (chances in 10), or -1 to disable"));
            }
        }
        if self.subdirectories > 100_000 {
            return err("subdirectories", format!("{}: accepted 0 to 100000", self.subdirectories));
        }
        if self.locations.len() > 1000 || self.locations.iter().any(|(_, w)| *w == 0) {
            return err("config", "`set location`: at most 1000 locations, each with a weight of 1 or more".into());
        }
        if job.direct {
            // PostMark opens its files with plain open(2) and writes any size: it has no direct
            // I/O to reproduce.
            return err("direct", "PostMark's files have any size; direct I/O needs aligned sizes".into());
        }
        Ok(())
    }
}

impl PostmarkJob {
    /// Where a setting came from ("pm.cfg line 2: `set number 20`", "--number 20", or
    /// PostMark's default).
    pub fn origin_of(&self, key: &str) -> String {
        self.origin.get(key).cloned().unwrap_or_else(|| format!("PostMark's default {key}"))
    }

    /// The size of each read call: unbuffered, the read block; buffered, what glibc's `fread`
    /// does (a request of at least its 4096-byte buffer goes straight to read(2) in whole
    /// buffers: `set read 8192` reads 8192 bytes a call, strace shows; smaller ones fill the
    /// buffer 4096 bytes at a time).
    pub fn read_call(&self) -> u32 {
        match self.buffering {
            false => self.read,
            true if self.read >= STDIO_BUFFER => self.read / STDIO_BUFFER * STDIO_BUFFER,
            true => STDIO_BUFFER,
        }
    }

    /// The size of each write call: unbuffered, the write block; buffered, glibc's 4096-byte
    /// buffer flushed as it fills.
    pub fn write_call(&self) -> u32 {
        if self.buffering {
            STDIO_BUFFER
        } else {
            self.write
        }
    }

    /// The largest system call's size (the engine's buffer).
    pub fn chunk(&self) -> u32 {
        self.read_call().max(self.write_call())
    }
}

/// A configuration file that cannot be used, naming its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ConfigError {
    pub line: usize,
    pub message: String,
}

/// Parse a PostMark configuration file (one command a line, as PostMark's own prompt reads
/// them; `run` and `quit` accepted, lines after `quit` ignored; blank lines and `#` comments
/// skipped). Unknown commands and bad numbers are errors naming the line.
pub fn parse_config(text: &str) -> Result<PostmarkConfig, ConfigError> {
    let mut c = PostmarkConfig::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let said = format!("line {line}: `{}`", raw.trim());
        let err = |message: String| ConfigError { line, message };
        let words: Vec<&str> = raw.split_whitespace().collect();
        let num = |w: Option<&&str>, what: &str| -> Result<u32, ConfigError> {
            let w = w.ok_or_else(|| err(format!("`{}` needs {what}", raw.trim())))?;
            match w.parse::<u32>() {
                Ok(v) if v > 0 && v <= i32::MAX as u32 => Ok(v),
                _ => Err(err(format!("`{w}` is not {what} (a whole number from 1 to {})", i32::MAX))),
            }
        };
        let no_more = |n: usize| -> Result<(), ConfigError> {
            match words.get(n) {
                Some(extra) => Err(err(format!("unexpected `{extra}` after `{}`", words[..n].join(" ")))),
                None => Ok(()),
            }
        };
        match words.as_slice() {
            [] => {}
            [w, ..] if w.starts_with('#') => {}
            ["run", ..] | ["show", ..] | ["help", ..] => {}
            ["quit"] | ["exit"] => break,
            ["set", "size", rest @ ..] => {
                let low = num(rest.first(), "a file size in bytes")?;
                let high = match rest.get(1) {
                    Some(_) => num(rest.get(1), "a file size in bytes")?,
                    None => low,
                };
                if high < low {
                    return Err(err(format!("the high bound {high} is below the low bound {low}")));
                }
                no_more(4)?;
                c.size_low = Some(low);
                c.size_high = Some(high);
            }
            ["set", "subdirectories", rest @ ..] => {
                // 0 and 1 are PostMark's "no subdirectories" (its default is 0).
                let v = match rest.first().map(|w| w.parse::<u32>()) {
                    Some(Ok(v)) if v <= 100_000 => v,
                    _ => {
                        return Err(err(format!(
                            "`{}` is not a number of subdirectories (0 to 100000)",
                            rest.first().unwrap_or(&"")
                        )))
                    }
                };
                no_more(3)?;
                c.subdirectories = Some(v);
            }
            ["set", "location", rest @ ..] => {
                // PostMark's forms: `set location DIR [WEIGHT]` (the list is DIR alone), `+DIR
                // [WEIGHT]` (added), `-DIR` (removed).
                let Some(first) = rest.first() else {
                    return Err(err("`set location` needs a directory name".into()));
                };
                let weight = match rest.get(1) {
                    None => 1,
                    Some(w) => match w.parse::<u32>() {
                        Ok(v) if v > 0 && v <= 1_000_000 => v,
                        _ => return Err(err(format!("`{w}` is not a weight (a whole number from 1 to 1000000)"))),
                    },
                };
                no_more(4)?;
                let list = c.locations.get_or_insert_with(Vec::new);
                if let Some(dir) = first.strip_prefix('+') {
                    list.push((dir.to_string(), weight));
                } else if let Some(dir) = first.strip_prefix('-') {
                    let before = list.len();
                    list.retain(|(d, _)| d != dir);
                    if list.len() == before {
                        return Err(err(format!("`set location -{dir}`: no location `{dir}` was set")));
                    }
                } else {
                    *list = vec![(first.to_string(), weight)];
                }
            }
            ["set", "bias", which @ ("read" | "create"), rest @ ..] => {
                let v = rest.first().and_then(|w| w.parse::<i8>().ok()).filter(|v| (-1..=10).contains(v));
                let Some(v) = v else {
                    return Err(err(format!(
                        "`set bias {which}` needs 0 to 10 (chances in 10), or -1 to disable, not `{}`",
                        rest.first().unwrap_or(&"")
                    )));
                };
                no_more(4)?;
                if *which == "read" {
                    c.bias_read = Some(v)
                } else {
                    c.bias_create = Some(v);
                    c.from.insert("bias_create".into(), said.clone());
                }
            }
            ["set", "buffering", rest @ ..] => {
                c.buffering = Some(match rest.first() {
                    Some(&"true") => true,
                    Some(&"false") => false,
                    other => {
                        return Err(err(format!("`set buffering` needs true or false, not `{}`", other.unwrap_or(&""))))
                    }
                });
                no_more(3)?;
            }
            ["set", "report", rest @ ..] => {
                if !matches!(rest.first(), Some(&"verbose") | Some(&"terse")) {
                    return Err(err("`set report` needs verbose or terse".into()));
                }
            }
            ["set", what @ ("number" | "transactions" | "read" | "write" | "seed"), rest @ ..] => {
                let v = num(rest.first(), &format!("a {what}"))?;
                no_more(3)?;
                if matches!(*what, "number" | "transactions") {
                    c.from.insert(what.to_string(), said.clone());
                }
                let slot = match *what {
                    "number" => &mut c.number,
                    "transactions" => &mut c.transactions,
                    "read" => &mut c.read,
                    "write" => &mut c.write,
                    _ => &mut c.seed,
                };
                *slot = Some(v);
            }
            _ => {
                return Err(err(format!(
                    "unknown command `{}`; accepted: set size|number|transactions|read|write|bias read|bias create|subdirectories|location|buffering|seed|report, run, show, quit",
                    raw.trim()
                )))
            }
        }
    }
    Ok(c)
}

/// A job file's `config`: a path to a configuration file (read now, at plan time) or the
/// settings as a table (how a stored or shipped plan holds them).
fn config_or_path<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<PostmarkConfig>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Path(String),
        Table(PostmarkConfig),
    }
    match Option::<Either>::deserialize(d)? {
        None => Ok(None),
        Some(Either::Table(c)) => Ok(Some(c)),
        Some(Either::Path(p)) => read_config(std::path::Path::new(&p)).map(Some).map_err(serde::de::Error::custom),
    }
}

/// Read and parse a configuration file, the error naming the file and line; where each
/// setting came from names the file too.
pub fn read_config(path: &std::path::Path) -> Result<PostmarkConfig, String> {
    let text = crate::input::read_text(path, "PostMark configuration", crate::input::JOB_FILE_MAX)
        .map_err(|e| e.to_string())?;
    let mut c = parse_config(&text).map_err(|e| format!("PostMark configuration {}, {e}", path.display()))?;
    for v in c.from.values_mut() {
        *v = format!("{} {v}", path.display());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003s_configuration_parses() {
        let c = parse_config(
            "set size 1024 262144\nset number 5000\nset transactions 10000\nset read 8192\nset write 8192\nset bias read 7\nset bias create 3\nrun\nquit\nnonsense after quit\n",
        )
        .unwrap();
        assert_eq!(
            (c.size_low, c.size_high, c.number, c.transactions),
            (Some(1024), Some(262144), Some(5000), Some(10000))
        );
        assert_eq!((c.read, c.write, c.bias_read, c.bias_create), (Some(8192), Some(8192), Some(7), Some(3)));
        assert_eq!(parse_config("set size 700\n").unwrap().size_high, Some(700));
        assert_eq!(
            parse_config("set buffering false\nset subdirectories 10\nset seed 7").unwrap().buffering,
            Some(false)
        );
        // PostMark's default of no subdirectories can be written out.
        assert_eq!(parse_config("set subdirectories 0").unwrap().subdirectories, Some(0));
        let l =
            parse_config("set location /mnt/a 2\nset location +/mnt/b\nset location +/mnt/c 5\nset location -/mnt/b\n")
                .unwrap();
        assert_eq!(l.locations, Some(vec![("/mnt/a".to_string(), 2), ("/mnt/c".to_string(), 5)]));
        assert_eq!(
            parse_config("set location /x\nset location /y").unwrap().locations,
            Some(vec![("/y".to_string(), 1)])
        );
        let f = parse_config("# pool\nset number 20\nset transactions 500\nset bias create 0\n").unwrap().from;
        assert_eq!(f["number"], "line 2: `set number 20`");
        assert_eq!(f["bias_create"], "line 4: `set bias create 0`");
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &str| parse_config(t).unwrap_err().to_string();
        assert!(
            e("set number 5\nset nmber 5\n").starts_with("line 2: unknown command `set nmber 5`"),
            "{}",
            e("set nmber 5")
        );
        assert!(e("\nset number 5x").starts_with("line 2: `5x` is not a number"));
        assert!(e("set number 0").contains("line 1"));
        assert!(e("set size 10 5").contains("below the low bound"));
        assert!(e("set bias read 11").contains("0 to 10"));
        assert!(e("set buffering maybe").contains("true or false"));
        assert!(e("set number 5 6").contains("unexpected `6`"));
        assert!(e("set location").contains("directory name"));
        assert!(e("set location /a 0").contains("weight"));
        assert!(e("set location -/nowhere").contains("no location"));
        assert!(e("set subdirectories -1").contains("subdirectories"));
        assert!(e("set transactions 99999999999").contains("not a transactions"));
    }
}

#[cfg(test)]
mod plan_data {
    use crate::{JobPatch, Plan, WorkloadKind};

    /// A plan with each personality is plain data: it goes to JSON and back unchanged (how it
    /// is stored and shipped to other nodes), the PostMark settings inside it, not a path.
    #[test]
    fn every_personality_round_trips_as_plan_data() {
        let cfg = super::parse_config("set number 70\nset size 100 900\nset seed 9\n").unwrap();
        let jobs = [
            WorkloadKind::Postmark,
            WorkloadKind::Maildir,
            WorkloadKind::Redolog,
            WorkloadKind::Varmail,
            WorkloadKind::Bonnie,
        ]
        .into_iter()
        .map(|w| {
            JobPatch {
                name: Some(w.to_string()),
                workload: Some(w),
                target: Some("/data".into()),
                runtime: (w != WorkloadKind::Bonnie).then(|| std::time::Duration::from_secs(10)),
                ..Default::default()
            }
            .with::<crate::PostmarkJob>(|o| o.postmark_config = (w == WorkloadKind::Postmark).then(|| cfg.clone()))
            .resolve("j")
            .unwrap()
        })
        .collect();
        let plan = Plan { phases: vec![crate::Phase { name: "p".into(), jobs }] };
        plan.validate().unwrap();
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains("\"number\":70") && json.contains("\"pm_seed\":9"), "{json}");
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan);
    }
}
