//! Which output formats each command takes: the one list ([`TAKES`]), and the
//! `--output`/`--format` parser that holds a command to its list and says what it takes. The
//! formats themselves and their exporters are `iolab_report::format`'s.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
pub use iolab_report::format::Format;
use iolab_report::format::Format::{BonnieCsv, Csv, FioJson, FioJsonPlus, Human, Json};
use std::ffi::OsStr;

/// Every command that prints results, and the formats it takes (the first is its default):
/// the one place that says so. `--help` lists them from here, and the parser refuses others.
pub const TAKES: &[(&str, &[Format])] = &[
    ("run", &[Human, Json, FioJson, FioJsonPlus, BonnieCsv]),
    ("scenario", &[Human, Json, FioJson, FioJsonPlus]),
    ("survey", &[Human, Json]),
    ("replay", &[Human, Json]),
    ("export", &[Json, Csv, FioJson, FioJsonPlus, BonnieCsv]),
    ("compare", &[Human, Json]),
    ("show", &[Human, Json]),
    ("runs", &[Human, Json]),
    ("watch", &[Human, Json]),
    ("verify", &[Human, Json]),
    ("trace", &[Human, Json]),
    ("db copy", &[Human, Json]),
    ("precondition", &[Human, Json]),
];

/// The formats `command` takes.
pub fn formats_of(command: &str) -> &'static [Format] {
    TAKES.iter().find(|(c, _)| *c == command).map(|(_, f)| *f).unwrap_or(&[])
}

/// The parser of a command's `--output` (or `export --format`): the formats it takes, each
/// with its help; another format is refused naming what the command takes and which commands
/// write that one.
#[derive(Clone, Copy)]
pub struct Takes(pub &'static str);

impl TypedValueParser for Takes {
    type Value = Format;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<Format, clap::Error> {
        let text = value.to_string_lossy();
        let takes = formats_of(self.0);
        let found = text.parse::<Format>().ok().filter(|f| takes.contains(f));
        found.ok_or_else(|| {
            let flag = arg.and_then(|a| a.get_long()).unwrap_or("output");
            let names: Vec<&str> = takes.iter().map(|f| f.name()).collect();
            let mut msg = format!("--{flag} `{text}`: `iolab {}` writes {}", self.0, names.join(", "));
            if let Ok(f) = text.parse::<Format>() {
                let elsewhere: Vec<String> =
                    TAKES.iter().filter(|(_, fs)| fs.contains(&f)).map(|(c, _)| format!("iolab {c}")).collect();
                msg.push_str(&format!(" ({f} is for {})", elsewhere.join(", ")));
            }
            clap::Error::raw(ErrorKind::InvalidValue, msg + "\n").with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(formats_of(self.0).iter().map(|f| PossibleValue::new(f.name()).help(f.help()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The command `path` names (`["trace", "show"]`).
    fn sub(path: &[&str]) -> clap::Command {
        let mut c = crate::args::Cli::command();
        c.build();
        for p in path {
            c = c.find_subcommand(p).unwrap_or_else(|| panic!("no subcommand {p}")).clone();
        }
        c
    }

    /// What `--help` offers for a command's format flag is the list above, default first.
    #[test]
    fn each_command_offers_the_formats_it_takes() {
        let flags: &[(&[&str], &str, &str)] = &[
            (&["run"], "output", "run"),
            (&["scenario"], "output", "scenario"),
            (&["survey"], "output", "survey"),
            (&["replay"], "output", "replay"),
            (&["export"], "format", "export"),
            (&["compare"], "output", "compare"),
            (&["show"], "output", "show"),
            (&["runs"], "output", "runs"),
            (&["watch"], "output", "watch"),
            (&["verify"], "output", "verify"),
            (&["trace", "record"], "output", "trace"),
            (&["trace", "import"], "output", "trace"),
            (&["trace", "show"], "output", "trace"),
            (&["db", "copy"], "output", "db copy"),
            (&["precondition"], "output", "precondition"),
        ];
        for (path, flag, command) in flags {
            let c = sub(path);
            let a = c.get_arguments().find(|a| a.get_id() == *flag).unwrap_or_else(|| panic!("{path:?} --{flag}"));
            let offered: Vec<String> = a.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
            let takes: Vec<&str> = formats_of(command).iter().map(|f| f.name()).collect();
            assert_eq!(offered, takes, "{path:?}");
            let default: Vec<_> = a.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            assert_eq!(default, [takes[0]], "{path:?}: the default is the first format");
        }
        assert_eq!(flags.len(), TAKES.len() + 2, "every command in TAKES is checked");
    }

    #[test]
    fn a_format_a_command_does_not_write_is_refused_with_where_it_goes() {
        use clap::Parser;
        let e = crate::args::Cli::try_parse_from(["iolab", "survey", "/tmp", "--output", "fio-json"]).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`iolab survey` writes human, json"), "{text}");
        assert!(text.contains("fio-json is for iolab run, iolab scenario, iolab export"), "{text}");
        let e = crate::args::Cli::try_parse_from(["iolab", "export", "1", "--format", "xml"]).unwrap_err();
        assert!(e.to_string().contains("`iolab export` writes json, csv, fio-json, fio-json+, bonnie-csv"), "{e}");
    }
}
