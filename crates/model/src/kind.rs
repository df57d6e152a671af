//! What kind of run a stored run is: which command made it. The database keeps the word
//! ([`RunKind::as_str`]), as it has since schema 1, so runs stored by any iolab read back; a
//! word this iolab does not know is refused by name (a later kind is a schema change).

use crate::words::UnknownWord;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The command that made a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `iolab run`, on one machine or with `--node`.
    Run,
    /// `iolab survey`.
    Survey,
    /// `iolab watch --db`/`--label`: samples only, one job-less phase.
    Watch,
    /// `iolab scenario` (and the locking check of `iolab survey --node`).
    Scenario,
    /// `iolab replay`.
    Replay,
    /// `iolab verify --journal`.
    Verify,
    /// `iolab precondition`: the purge and fill, kept so later runs on the target link to it.
    Precondition,
}

impl RunKind {
    pub const ALL: [RunKind; 7] = [
        RunKind::Run,
        RunKind::Survey,
        RunKind::Watch,
        RunKind::Scenario,
        RunKind::Replay,
        RunKind::Verify,
        RunKind::Precondition,
    ];

    /// The word stored in the database, printed by `iolab runs` and in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Run => "run",
            RunKind::Survey => "survey",
            RunKind::Watch => "watch",
            RunKind::Scenario => "scenario",
            RunKind::Replay => "replay",
            RunKind::Verify => "verify",
            RunKind::Precondition => "precondition",
        }
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunKind {
    type Err = UnknownWord;
    fn from_str(s: &str) -> Result<RunKind, UnknownWord> {
        RunKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownWord::new("run kind", s, RunKind::ALL.map(RunKind::as_str)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_words_databases_hold() {
        // The words every iolab so far has stored: they must keep reading back.
        for (k, w) in RunKind::ALL.into_iter().zip(["run", "survey", "watch", "scenario", "replay", "verify"]) {
            assert_eq!(k.as_str(), w);
            assert_eq!(w.parse::<RunKind>().unwrap(), k);
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{w}\""));
            assert_eq!(serde_json::from_str::<RunKind>(&format!("\"{w}\"")).unwrap(), k);
        }
        let e = "steady".parse::<RunKind>().unwrap_err().to_string();
        assert!(e.contains("`steady`") && e.contains("run, survey, watch, scenario, replay, verify"), "{e}");
    }
}
