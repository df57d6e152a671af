//! Operation classes: every kind of operation iolab times gets its own counters and latency
//! histogram, so a personality's creates or a replay's renames are measured like reads and
//! writes. Results, the store, CSV, HTML and compare loop over [`OpClass::ALL`].

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! classes {
    ($($variant:ident => $word:literal, $doc:literal;)+) => {
        /// A class of operation, as statistics are kept.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpClass { $( #[doc = $doc] $variant ),+ }

        impl OpClass {
            /// Every class, in the order tables show them.
            pub const ALL: &'static [OpClass] = &[$(OpClass::$variant),+];
            pub const COUNT: usize = Self::ALL.len();
            /// The class's name in JSON, CSV and `--metric`.
            pub fn as_str(self) -> &'static str {
                match self { $( OpClass::$variant => $word ),+ }
            }
            /// What the class counts, for help and docs.
            pub fn describe(self) -> &'static str {
                match self { $( OpClass::$variant => $doc ),+ }
            }
        }

        impl FromStr for OpClass {
            type Err = crate::words::UnknownWord;
            fn from_str(s: &str) -> Result<Self, crate::words::UnknownWord> {
                match s {
                    $( $word => Ok(OpClass::$variant), )+
                    other => Err(crate::words::UnknownWord::new("operation class", other, [$($word),+])),
                }
            }
        }
    };
}

classes! {
    Read => "read", "reads: pread, read after lseek, preadv";
    Write => "write", "writes: pwrite, write after lseek, pwritev";
    Trim => "trim", "trims: a block device's range discarded (BLKDISCARD), as fio's rw=trim";
    Sync => "sync", "flushes of a file: fsync or fdatasync";
    Open => "open", "opens of an existing file";
    Create => "create", "opens with O_CREAT";
    Close => "close", "closes";
    Unlink => "unlink", "file removals";
    Rename => "rename", "renames";
    Mkdir => "mkdir", "directories made";
    Rmdir => "rmdir", "directories removed";
    DirSync => "dirsync", "fsync of a directory";
    Truncate => "truncate", "ftruncate";
    Allocate => "fallocate", "fallocate";
    Stat => "stat", "stat of a path";
    Readdir => "readdir", "directory listings";
    Seek => "seek", "lseek";
    Journal => "journal", "the validation journal's writes (--journal): a record before each data write, with the completions of those before it";
}

impl OpClass {
    /// The class's position in per-class arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
    /// Classes whose operations move data (bytes and bandwidth mean something).
    pub fn moves_data(self) -> bool {
        matches!(self, OpClass::Read | OpClass::Write | OpClass::Trim)
    }
}

impl fmt::Display for OpClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A count per class. Written in JSON as an object of the classes that have any
/// (`{"read": 120, "create": 4}`); classes a newer iolab knows and this one does not are skipped
/// when read back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassCounts(pub [u64; OpClass::COUNT]);

impl ClassCounts {
    pub fn get(&self, c: OpClass) -> u64 {
        self.0[c.index()]
    }
    pub fn add(&mut self, c: OpClass, n: u64) {
        self.0[c.index()] = self.0[c.index()].saturating_add(n);
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// The classes with a non-zero count.
    pub fn iter(&self) -> impl Iterator<Item = (OpClass, u64)> + '_ {
        OpClass::ALL.iter().map(|c| (*c, self.0[c.index()])).filter(|(_, n)| *n > 0)
    }
}

impl Serialize for ClassCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.iter().count()))?;
        for (c, n) in self.iter() {
            m.serialize_entry(c.as_str(), &n)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for ClassCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ClassCounts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of operation class to count")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClassCounts, A::Error> {
                let mut out = ClassCounts::default();
                while let Some(k) = map.next_key::<String>()? {
                    let n: u64 = map.next_value()?;
                    if let Ok(c) = k.parse::<OpClass>() {
                        out.0[c.index()] = n;
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indexes_are_positions() {
        for (i, c) in OpClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.as_str().parse::<OpClass>().unwrap(), *c);
        }
        assert!("sideways".parse::<OpClass>().unwrap_err().to_string().contains("fallocate"));
    }

    #[test]
    fn counts_serialize_as_a_sparse_object() {
        let mut c = ClassCounts::default();
        c.add(OpClass::Read, 3);
        c.add(OpClass::Create, 1);
        let j = serde_json::to_string(&c).unwrap();
        assert_eq!(j, r#"{"read":3,"create":1}"#);
        let back: ClassCounts = serde_json::from_str(r#"{"read":3,"create":1,"teleport":9}"#).unwrap();
        assert_eq!(back, c);
    }
}
