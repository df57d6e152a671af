//! What a personality is to the spec: the [`Personality`] trait its module implements (its
//! options as flags and job-file keys, its defaults, rules, directories, space, words, notes and
//! figures), and [`personalities!`], which the crate's one list of personalities (in lib.rs)
//! expands into everything that has to know them all: the [`Workload`](crate::Workload) enum and
//! its serde form, [`WorkloadKind`](crate::WorkloadKind), the personalities' part of
//! [`JobPatch`] ([`AppOptions`](crate::AppOptions)), the figure tables, and the dispatch from a
//! job to its personality ([`Workload::app`](crate::Workload::app)). Adding a personality is a
//! module and a line in that list; the workload crate's own list adds its sources.

use crate::figures::{Figures, Kind};
use crate::job::Job;
use crate::patch::JobPatch;
use crate::SpecError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::time::Duration;

/// Where a personality works under its target directory ([`Job::own_dirs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnDirs {
    /// `iolab.<job>.<thread>`: each thread works alone (PostMark's pools, the redo log's
    /// creators).
    PerThread,
    /// `iolab.<job>`: the job's threads share what is in it (maildir's mailboxes, varmail's file
    /// set, bonnie++'s file and its seekers).
    PerJob,
    /// The target directory itself, on names the job makes exclusively (fio's metadata
    /// engines, whose jobs share their directory and contend for its lock).
    Target,
}

/// What the command line needs of a personality's options: clap's `Args` with the `clap`
/// feature, nothing without it.
#[cfg(feature = "clap")]
pub trait Flags: clap::Args {}
#[cfg(feature = "clap")]
impl<T: clap::Args> Flags for T {}
#[cfg(not(feature = "clap"))]
pub trait Flags {}
#[cfg(not(feature = "clap"))]
impl<T> Flags for T {}

/// A personality's own options: each an `Option` (unset: its default), a flag and a job-file
/// key of the same name, defined once in a struct deriving serde's traits and clap's `Args`.
pub trait Options:
    Default + Clone + PartialEq + Debug + Serialize + DeserializeOwned + Flags + Send + Sync + 'static
{
}
impl<T: Default + Clone + PartialEq + Debug + Serialize + DeserializeOwned + Flags + Send + Sync + 'static> Options
    for T
{
}

/// An application personality as the spec knows it: the job's resolved options (the type
/// implementing this, which is the job's `Workload` variant and its serde form in a plan) and
/// everything a job of it needs before it runs.
pub trait Personality:
    Sized + Clone + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The workload's name: `--workload NAME`, `workload = "NAME"`, `jobs[].rw` in results.
    const NAME: &'static str;
    /// What it does, in a few words, for `--workload`'s help.
    const ABOUT: &'static str;
    /// Its own options (flags and job-file keys).
    type Options: Options;
    /// Options every block job has that this personality takes too, by job-file key (the redo
    /// log's file size, block and stride are `size`, `bs` and `stride`).
    const SHARED_KEYS: &'static [&'static str] = &[];
    /// Where it works under the target directory.
    const DIRS: OwnDirs;
    /// Its figures, under the original tool's names, with their kinds.
    const FIGURES: &'static [(&'static str, Kind)] = &[];
    /// Its figures in words, for people (`created_mixed_per_s`: "files created per second,
    /// mixed phase"); a figure not here is said by [`crate::figures::words`]' plain rule.
    const FIGURE_WORDS: &'static [(&'static str, &'static str)] = &[];
    /// Its rates from its other figures (see [`crate::figures`]).
    fn derive(_figures: &mut Figures) {}

    /// The job's options with the personality's defaults where the patch says nothing; `name`
    /// is the job's, for errors.
    fn resolve(options: &Self::Options, patch: &JobPatch, name: &str) -> Result<Self, SpecError>;
    /// The job's threads, `asked` being `--threads` (default: 1, or as asked).
    fn threads(&self, asked: Option<u32>) -> u32 {
        asked.unwrap_or(1)
    }
    /// The job's runtime, `asked` being `--runtime` (default: as asked).
    fn runtime(&self, asked: Option<Duration>) -> Option<Duration> {
        asked
    }
    /// The personality's rules, each error naming its field (the job's common fields are given
    /// for the rules that involve them, `direct` among them).
    fn validate(&self, job: &Job) -> Result<(), SpecError>;
    /// Its options in a few words, after its name, for `Job::describe`.
    fn describe(&self, job: &Job, words: &mut Vec<String>);
    /// Whether `Job::describe` says the job's threads (bonnie's are its seekers, said its way).
    const THREADS_IN_WORDS: bool = true;
    /// Bytes its largest files take, checked against the free space before anything is written.
    fn space(&self) -> u64 {
        0
    }
    /// Bytes of a thread's I/O buffer, per slot (the engine has one slot per queue depth): what
    /// the source's `buffer_len` is, and what the memory planned before a run counts.
    fn buffer_len(&self) -> u64;
    /// What a reader of the results should know that the figures do not say.
    fn notes(&self, _job: &Job) -> Vec<String> {
        Vec::new()
    }
}

/// The object-safe face of a [`Personality`], what [`Workload::app`](crate::Workload::app)
/// returns: every rule and word of a job's personality without knowing which it is.
pub trait App {
    fn name(&self) -> &'static str;
    fn dirs(&self) -> OwnDirs;
    fn threads(&self, asked: Option<u32>) -> u32;
    fn runtime(&self, asked: Option<Duration>) -> Option<Duration>;
    fn validate(&self, job: &Job) -> Result<(), SpecError>;
    fn describe(&self, job: &Job, words: &mut Vec<String>);
    fn threads_in_words(&self) -> bool;
    fn space(&self) -> u64;
    fn buffer_len(&self) -> u64;
    fn notes(&self, job: &Job) -> Vec<String>;
}

impl<P: Personality> App for P {
    fn name(&self) -> &'static str {
        P::NAME
    }
    fn dirs(&self) -> OwnDirs {
        P::DIRS
    }
    fn threads(&self, asked: Option<u32>) -> u32 {
        Personality::threads(self, asked)
    }
    fn runtime(&self, asked: Option<Duration>) -> Option<Duration> {
        Personality::runtime(self, asked)
    }
    fn validate(&self, job: &Job) -> Result<(), SpecError> {
        Personality::validate(self, job)
    }
    fn describe(&self, job: &Job, words: &mut Vec<String>) {
        Personality::describe(self, job, words)
    }
    fn threads_in_words(&self) -> bool {
        P::THREADS_IN_WORDS
    }
    fn space(&self) -> u64 {
        Personality::space(self)
    }
    fn buffer_len(&self) -> u64 {
        Personality::buffer_len(self)
    }
    fn notes(&self, job: &Job) -> Vec<String> {
        Personality::notes(self, job)
    }
}

/// A personality's place in [`AppOptions`](crate::AppOptions): its options there, by its type.
pub trait Registered: Personality {
    fn options(apps: &crate::AppOptions) -> &Self::Options;
    fn options_mut(apps: &mut crate::AppOptions) -> &mut Self::Options;
}

/// Expands the crate's one list of personalities (lib.rs), one `module::Type as Variant` line
/// each, into: the modules; the `Workload` enum (block, replay and each personality) and its
/// serde form (its fields beside a `workload` tag, as plans have always been stored);
/// `WorkloadKind`; `AppOptions` (each personality's options, flattened into `JobPatch` for the
/// command line and read key by key from job files); the figure tables; and the dispatch.
macro_rules! personalities {
    ($( $module:ident :: $ty:ident as $variant:ident ),+ $(,)?) => {
        $( pub mod $module; pub use $module::$ty; )+

        /// What a job does, with the options only that workload has.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Workload {
            /// Reads and writes where an access pattern says: dd-like streams, random and mixed I/O.
            Block($crate::block::BlockJob),
            /// The calls of a recorded trace, one worker per traced thread (`iolab replay`).
            Replay($crate::replay::ReplayJob),
            $( $variant($ty), )+
        }

        /// Which workload a job runs (`workload = "..."`, `--workload`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum WorkloadKind { Block, $( $variant ),+ }

        impl WorkloadKind {
            pub const ALL: &'static [&'static str] = &["block", $( <$ty as $crate::Personality>::NAME ),+];
            /// Every personality, in the list's order.
            pub const PERSONALITIES: &'static [WorkloadKind] = &[$( WorkloadKind::$variant ),+];
            pub fn as_str(self) -> &'static str {
                match self {
                    WorkloadKind::Block => "block",
                    $( WorkloadKind::$variant => <$ty as $crate::Personality>::NAME, )+
                }
            }
            /// The personality's own options, by job-file key, and the block options it shares.
            pub(crate) fn app_keys(self) -> (&'static [&'static str], &'static [&'static str]) {
                match self {
                    WorkloadKind::Block => (&[], &[]),
                    $( WorkloadKind::$variant => (
                        $crate::table::keys_of::<<$ty as $crate::Personality>::Options>(),
                        <$ty as $crate::Personality>::SHARED_KEYS,
                    ), )+
                }
            }
            /// The workload a patch asks for, resolved with its defaults.
            pub(crate) fn resolve(self, patch: &$crate::JobPatch, name: &str) -> Result<Workload, $crate::SpecError> {
                Ok(match self {
                    WorkloadKind::Block => Workload::Block($crate::block::BlockJob::from_patch(patch, name)?),
                    $( WorkloadKind::$variant => Workload::$variant(<$ty as $crate::Personality>::resolve(
                        &patch.apps.$module, patch, name,
                    )?), )+
                })
            }
            /// `--workload`'s help: each workload with what it does.
            pub fn help() -> String {
                let mut each = vec!["block (reads and writes where --rw and --bs say; the default)".to_string()];
                $( each.push(format!("{} ({})", <$ty as $crate::Personality>::NAME, <$ty as $crate::Personality>::ABOUT)); )+
                format!("What the job does: {}.", each.join(", "))
            }
        }

        impl Workload {
            /// The job's personality, if it is one: its rules and words, whichever it is.
            pub fn app(&self) -> Option<&dyn $crate::personality::App> {
                match self {
                    Workload::Block(_) | Workload::Replay(_) => None,
                    $( Workload::$variant(p) => Some(p), )+
                }
            }
            /// The workload's kind (a replay is none: it is not chosen with `--workload`).
            pub fn kind(&self) -> Option<WorkloadKind> {
                match self {
                    Workload::Block(_) => Some(WorkloadKind::Block),
                    Workload::Replay(_) => None,
                    $( Workload::$variant(_) => Some(WorkloadKind::$variant), )+
                }
            }
        }

        /// The serialized form: the workload's fields beside a `workload` tag.
        impl serde::Serialize for Workload {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                fn tagged<T: serde::Serialize, S: serde::Serializer>(tag: &'static str, v: &T, s: S) -> Result<S::Ok, S::Error> {
                    #[derive(serde::Serialize)]
                    struct Tagged<'a, T> {
                        workload: &'static str,
                        #[serde(flatten)]
                        fields: &'a T,
                    }
                    Tagged { workload: tag, fields: v }.serialize(s)
                }
                match self {
                    Workload::Block(b) => tagged("block", b, s),
                    Workload::Replay(r) => tagged("replay", r, s),
                    $( Workload::$variant(p) => tagged(<$ty as $crate::Personality>::NAME, p, s), )+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for Workload {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
                // Plans stored before workloads had names are block jobs.
                let kind = match fields.remove("workload") {
                    None => "block".to_string(),
                    Some(serde_json::Value::String(k)) => k,
                    Some(other) => return Err(D::Error::custom(format!("`workload` must be a name, not {other}"))),
                };
                let value = serde_json::Value::Object(fields);
                let read = |w: Result<Workload, serde_json::Error>| w.map_err(D::Error::custom);
                match kind.as_str() {
                    "block" => read(serde_json::from_value(value).map(Workload::Block)),
                    "replay" => read(serde_json::from_value(value).map(Workload::Replay)),
                    $( n if n == <$ty as $crate::Personality>::NAME => read(serde_json::from_value(value).map(Workload::$variant)), )+
                    other => {
                        let names: Vec<&str> = ["block", "replay"].into_iter().chain(WorkloadKind::ALL[1..].iter().copied()).collect();
                        Err(D::Error::custom(format!("unknown workload `{other}`; accepted: {}", names.join(", "))))
                    }
                }
            }
        }

        /// Every personality's own options: the part of [`JobPatch`]($crate::JobPatch) that
        /// is theirs, one field per personality, flattened into the command line's flags.
        #[derive(Debug, Clone, Default, PartialEq)]
        #[cfg_attr(feature = "clap", derive(clap::Args))]
        pub struct AppOptions {
            $(
                #[cfg_attr(feature = "clap", command(flatten))]
                pub $module: <$ty as $crate::Personality>::Options,
            )+
        }

        $(
            impl $crate::personality::Registered for $ty {
                fn options(apps: &AppOptions) -> &Self::Options {
                    &apps.$module
                }
                fn options_mut(apps: &mut AppOptions) -> &mut Self::Options {
                    &mut apps.$module
                }
            }
        )+

        impl AppOptions {
            /// The personality whose option `key` is (a job-file key).
            pub(crate) fn owner(key: &str) -> Option<WorkloadKind> {
                WorkloadKind::PERSONALITIES.iter().copied().find(|k| k.app_keys().0.contains(&key))
            }
            /// Read `key`'s value into its personality's options.
            pub(crate) fn read<'de, D: serde::Deserializer<'de>>(
                &mut self,
                owner: WorkloadKind,
                key: &str,
                d: D,
            ) -> Result<(), D::Error> {
                use serde::de::DeserializeSeed;
                match owner {
                    WorkloadKind::Block => Err(serde::de::Error::custom(format!("`{key}` is no personality's"))),
                    $( WorkloadKind::$variant => {
                        let one = $crate::table::OneEntry::new(key).deserialize(d)?;
                        $crate::table::merge(&mut self.$module, one);
                        Ok(())
                    } )+
                }
            }
            /// Write every personality's options set into `map`.
            pub(crate) fn write<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                $( serde::Serialize::serialize(&self.$module, $crate::table::Entries(&mut *map))?; )+
                Ok(())
            }
        }

        /// Every personality's figures, in the list's order.
        pub const FIGURE_TABLES: &[$crate::figures::FigureTable] = &[$(
            $crate::figures::FigureTable {
                workload: <$ty as $crate::Personality>::NAME,
                figures: <$ty as $crate::Personality>::FIGURES,
                words: <$ty as $crate::Personality>::FIGURE_WORDS,
                derive: <$ty as $crate::Personality>::derive,
            },
        )+];
    };
}
