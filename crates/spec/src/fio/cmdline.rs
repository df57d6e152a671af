//! fio's command line (`fio --name=a --rw=randread ... [JOBFILE...]`) read into the same
//! sections a job file becomes, so every option the job-file mapping knows works here too
//! (`alias fio='iolab fio'`). As fio's getopt does: `--name=X` starts a job section; every other
//! job option goes into the current section, options before the first `--name` into `[global]`;
//! an option takes its value after `=` or, for every option but fio's flags (`time_based`,
//! `group_reporting`...: fio's `FIO_OPT_STR_SET`), as the next argument; positional arguments
//! are job files, read after the command line's own jobs. fio's own switches (the output
//! format, `--output`, `--eta` and the like) are taken apart from the jobs.

use super::ini::{self, Opt, Section};
use super::{Env, FioError, FioFile, Loc, Problem};
use std::path::{Path, PathBuf};

/// The file name command-line options are located in (`<command line>:3` is the third argument).
pub const WHERE: &str = "<command line>";

/// A report format of `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Normal,
    Terse,
    Json,
    JsonPlus,
}

impl Format {
    fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "normal" => Format::Normal,
            "terse" => Format::Terse,
            "json" => Format::Json,
            "json+" => Format::JsonPlus,
            _ => return None,
        })
    }
}

/// A fio command line as read.
#[derive(Debug, Clone, PartialEq)]
pub struct CmdLine {
    /// `[global]` (options before the first `--name`, when any) and one section per `--name`.
    pub sections: Vec<Section>,
    /// Job files named as positional arguments, in order.
    pub files: Vec<PathBuf>,
    /// The report formats, in the order given (fio's default: normal).
    pub formats: Vec<Format>,
    /// `--output=FILE`: the report goes there instead of stdout.
    pub output: Option<PathBuf>,
    /// fio switches accepted and without effect here (`--eta=never`...), as given.
    pub ignored: Vec<String>,
    /// `--section=NAME`: of the job files, only these job sections (and their `[global]`).
    pub only: Vec<String>,
}

/// fio's switches that change nothing iolab does (progress, ETA, its own debug output...).
const HARMLESS: &[&str] = &[
    "eta",
    "eta-newline",
    "eta-interval",
    "status-interval",
    "debug",
    "warnings-fatal",
    "max-jobs",
    "readonly",
    "terse-version",
    "alloc-size",
    "inflate-log",
    "aux-path",
    "trigger-timeout",
    "trigger-file",
    "trigger",
    "trigger-remote",
];

/// fio's job options that take no value on its command line (`FIO_OPT_STR_SET`: getopt's
/// optional argument, given only after `=`), as fio 3.33 defines them (checked with the installed
/// fio: `--disk_util --parse-only` reads `--parse-only` as disk_util's value, `--exitall
/// --parse-only` does not); every other job option takes the next argument when it has no `=`.
const FLAGS: &[&str] = &[
    "time_based",
    "group_reporting",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "thread",
    "norandommap",
    "exitall",
    "exitall_on_error",
    "zero_buffers",
    "refill_buffers",
];

fn at(i: usize) -> Loc {
    Loc { file: PathBuf::from(WHERE), line: i + 1 }
}

/// Read fio's arguments (without the program name).
pub fn read_args(args: &[String]) -> Result<CmdLine, Problem> {
    let mut cmd = CmdLine {
        sections: Vec::new(),
        files: Vec::new(),
        formats: Vec::new(),
        output: None,
        ignored: Vec::new(),
        only: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let here = at(i);
        let Some(opt) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-').filter(|s| !s.is_empty())) else {
            cmd.files.push(PathBuf::from(arg));
            i += 1;
            continue;
        };
        let (key, inline) = match opt.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (opt.to_string(), None),
        };
        // The value after `=`, or (for an option that takes one) the next argument.
        let value = |takes: bool, i: &mut usize| -> Option<String> {
            if inline.is_some() || !takes {
                return inline.clone();
            }
            let next = args.get(*i + 1)?;
            *i += 1;
            Some(next.clone())
        };
        match key.as_str() {
            "output-format" => {
                let v = value(true, &mut i).ok_or_else(|| Problem::new(here.clone(), needs("--output-format")))?;
                for f in v.split(',') {
                    let f = Format::parse(f.trim()).ok_or_else(|| {
                        Problem::new(
                            here.clone(),
                            format!("--output-format: `{f}` is not a format; accepted: normal, terse, json, json+ (several joined with commas)"),
                        )
                    })?;
                    if !cmd.formats.contains(&f) {
                        cmd.formats.push(f);
                    }
                }
            }
            "minimal" => cmd.formats = vec![Format::Terse],
            "append-terse" => {
                if !cmd.formats.contains(&Format::Terse) {
                    cmd.formats.push(Format::Terse);
                }
            }
            "output" => {
                let v = value(true, &mut i).ok_or_else(|| Problem::new(here.clone(), needs("--output")))?;
                cmd.output = Some(PathBuf::from(v));
            }
            "section" => {
                let v = value(true, &mut i).ok_or_else(|| Problem::new(here.clone(), needs("--section")))?;
                cmd.only.push(v);
            }
            k if HARMLESS.contains(&k) => {
                let v = value(!matches!(k, "readonly" | "warnings-fatal"), &mut i);
                cmd.ignored.push(v.map_or_else(|| format!("--{k}"), |v| format!("--{k}={v}")));
            }
            "parse-only"
            | "client"
            | "server"
            | "daemonize"
            | "remote-config"
            | "showcmd"
            | "cmdhelp"
            | "enghelp"
            | "crctest"
            | "cpuclock-test"
            | "merge-blktrace-only"
            | "bandwidth-log"
            | "idle-prof"
            | "latency-log"
            | "write_bw_log" => {
                return Err(Problem::new(
                    here,
                    format!("--{key}: fio's switch is not supported by `iolab fio`; run fio itself for it, or `iolab run` with iolab's own flags"),
                ));
            }
            "name" => {
                let v = value(true, &mut i).ok_or_else(|| Problem::new(here.clone(), needs("--name")))?;
                if v.is_empty() {
                    return Err(Problem::new(here, "--name: a job needs a name".into()));
                }
                cmd.sections.push(Section { name: v.clone(), at: here.clone(), opts: Vec::new() });
                // fio keeps the name as the job's option too.
                let section = cmd.sections.last_mut().ok_or_else(|| Problem::new(here.clone(), "no section".into()))?;
                section.opts.push(Opt { key: "name".into(), value: Some(v), at: here, unset: None });
            }
            "" => return Err(Problem::new(here, "`--` alone is not a fio option".into())),
            k => {
                let v = value(!FLAGS.contains(&k), &mut i);
                if cmd.sections.is_empty() {
                    cmd.sections.push(Section { name: "global".into(), at: here.clone(), opts: Vec::new() });
                }
                if let Some(s) = cmd.sections.last_mut() {
                    s.opts.push(Opt { key: k.to_string(), value: v, at: here, unset: None });
                }
            }
        }
        i += 1;
    }
    if cmd.formats.is_empty() {
        cmd.formats.push(Format::Normal);
    }
    Ok(cmd)
}

fn needs(flag: &str) -> String {
    format!("{flag} needs a value ({flag}=VALUE)")
}

impl CmdLine {
    /// The command line's sections followed by each job file's, mapped as one job file is:
    /// `[global]` options apply to every job after them, as fio's command-line globals do.
    pub fn map(&self, env: &dyn Env, lenient: bool) -> Result<FioFile, FioError> {
        let mut sections = self.sections.clone();
        if !self.only.is_empty() && self.files.is_empty() {
            return Err(FioError::At(Problem::new(
                at(0),
                "--section picks job sections of a job file; give one".into(),
            )));
        }
        for f in &self.files {
            let read = ini::read(f, env).map_err(FioError::At)?;
            sections.extend(super::only_sections(read, &self.only, f).map_err(FioError::At)?);
        }
        if !sections.iter().any(|s| !s.is_global()) {
            let at = self.sections.first().map_or_else(|| at(0), |s| s.at.clone());
            return Err(FioError::At(Problem::new(
                at,
                "no job: name one with --name=NAME (options before it apply to every job), or give a job file".into(),
            )));
        }
        super::map::map(Path::new(WHERE), &sections, env, lenient)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn names_start_jobs_and_earlier_options_are_global() {
        let c = read_args(&args(
            "--ioengine=libaio --direct 1 --name=a --rw randread --bs=4k --time_based --runtime 5 --name=b --rw=write --output-format=json,terse --output out.json --eta=never job.fio",
        ))
        .unwrap();
        let names: Vec<&str> = c.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["global", "a", "b"]);
        let kv = |s: &Section| -> Vec<(String, Option<String>)> {
            s.opts.iter().map(|o| (o.key.clone(), o.value.clone())).collect()
        };
        assert_eq!(
            kv(&c.sections[0]),
            [("ioengine".into(), Some("libaio".into())), ("direct".into(), Some("1".into()))]
        );
        assert_eq!(
            kv(&c.sections[1]),
            [
                ("name".into(), Some("a".into())),
                ("rw".into(), Some("randread".into())),
                ("bs".into(), Some("4k".into())),
                ("time_based".into(), None),
                ("runtime".into(), Some("5".into())),
            ]
        );
        assert_eq!(c.formats, [Format::Json, Format::Terse]);
        assert_eq!(c.output, Some(PathBuf::from("out.json")));
        assert_eq!(c.ignored, ["--eta=never"]);
        assert_eq!(c.files, [PathBuf::from("job.fio")]);
        assert_eq!(c.sections[1].opts[1].at.to_string(), "<command line>:5", "the argument's place");
        // A boolean option takes the next argument, as fio's getopt gives it; a flag does not.
        let c = read_args(&args("--name=a --disk_util 0 --exitall x.fio")).unwrap();
        assert_eq!(c.sections[0].opts[1].value.as_deref(), Some("0"));
        assert_eq!((c.sections[0].opts[2].value.as_deref(), c.files.len()), (None, 1));
    }

    #[test]
    fn formats_and_refusals_name_the_argument() {
        assert_eq!(read_args(&args("--name=a")).unwrap().formats, [Format::Normal]);
        assert_eq!(read_args(&args("--minimal --name=a")).unwrap().formats, [Format::Terse]);
        let e = read_args(&args("--name=a --output-format=xml")).unwrap_err().to_string();
        assert!(e.contains("`xml` is not a format") && e.contains("json+"), "{e}");
        let e = read_args(&args("--name=a --client=x")).unwrap_err().to_string();
        assert!(e.contains("--client") && e.contains("<command line>:2"), "{e}");
        // --section picks sections of job files: without one it has nothing to pick.
        let c = read_args(&args("--name=a --filename=/f --size=1m --section=x")).unwrap();
        assert_eq!(c.only, ["x"]);
        let e = c.map(&crate::fio::System, false).unwrap_err().to_string();
        assert!(e.contains("--section") && e.contains("job file"), "{e}");
        let e = read_args(&args("--name")).unwrap_err().to_string();
        assert!(e.contains("--name needs a value"), "{e}");
    }

    #[test]
    fn the_acceptance_line_maps_to_one_libaio_job() {
        let c = read_args(&args(
            "--name=t --rw=randread --bs=4k --size=64m --ioengine=libaio --iodepth=16 --direct=1 --filename=/data/t --output-format=json",
        ))
        .unwrap();
        let f = c.map(&super::super::System, false).unwrap();
        let plan = f.plan(&crate::JobPatch::default()).unwrap();
        let j = &plan.phases[0].jobs[0];
        assert_eq!((j.name.as_str(), j.engine, j.iodepth, j.direct), ("t", crate::EngineKind::Libaio, 16, true));
        assert_eq!(j.size, Some(crate::units::Bytes::mib(64)));
        // A bad option is one error naming it and its argument.
        let c = read_args(&args("--name=t --rw=randread --bogus_opt=3 --filename=/data/t")).unwrap();
        let e = c.map(&super::super::System, false).unwrap_err().to_string();
        assert!(e.contains("bogus_opt") && e.contains("<command line>:3"), "{e}");
        let e = read_args(&args("--rw=read")).unwrap().map(&super::super::System, false).unwrap_err().to_string();
        assert!(e.contains("--name=NAME"), "{e}");
    }
}
