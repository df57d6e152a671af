//! `NameMap`: a small map from device or interface name to figures, kept as a sorted `Vec`.
//! A run keeps one per sample, and a `BTreeMap`'s nodes cost kilobytes even for two entries;
//! this costs what its entries do. It reads and writes as a JSON object, like a map.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

#[derive(Debug, Clone, PartialEq)]
pub struct NameMap<T>(Vec<(String, T)>);

impl<T> Default for NameMap<T> {
    fn default() -> Self {
        NameMap(Vec::new())
    }
}

impl<T> NameMap<T> {
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    pub fn get(&self, name: &str) -> Option<&T> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    pub fn insert(&mut self, name: String, v: T) {
        match self.find(&name) {
            Ok(i) => self.0[i].1 = v,
            Err(i) => self.0.insert(i, (name, v)),
        }
    }

    /// The entry for `name`, inserted with its default value if missing.
    pub fn entry_or_default(&mut self, name: &str) -> &mut T
    where
        T: Default,
    {
        let i = match self.find(name) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name.to_string(), T::default()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// Keep the entries `keep` says yes to, and give back the memory of the others.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut T) -> bool) {
        self.0.retain_mut(|(n, v)| keep(n, v));
        self.0.shrink_to_fit();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &T)> {
        self.0.iter().map(|(n, v)| (n, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(n, _)| n)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T> FromIterator<(String, T)> for NameMap<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(it: I) -> Self {
        let mut v: Vec<(String, T)> = it.into_iter().collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        v.shrink_to_fit();
        NameMap(v)
    }
}

impl<'a, T> IntoIterator for &'a NameMap<T> {
    type Item = (&'a String, &'a T);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, T)>, fn(&'a (String, T)) -> (&'a String, &'a T)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, v)| (n, v))
    }
}

impl<T> std::ops::Index<&str> for NameMap<T> {
    type Output = T;
    fn index(&self, name: &str) -> &T {
        self.get(name).unwrap_or_else(|| panic!("no entry named {name}"))
    }
}

impl<T: Serialize> Serialize for NameMap<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NameMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = NameMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of names to figures")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<NameMap<T>, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, T>()? {
                    v.push((k, x));
                }
                Ok(v.into_iter().collect())
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_sorted_map_and_reads_as_json_object() {
        let mut m: NameMap<u32> = [("vdb".to_string(), 2), ("vda".to_string(), 1)].into_iter().collect();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["vda", "vdb"]);
        m.insert("sda".into(), 3);
        *m.entry_or_default("vda") += 10;
        *m.entry_or_default("loop0") += 5;
        assert_eq!((m["vda"], m["loop0"], m.get("nope")), (11, 5, None));
        m.retain(|n, _| n != "vdb");
        assert!(!m.contains_key("vdb") && m.len() == 3);
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, r#"{"loop0":5,"sda":3,"vda":11}"#);
        assert_eq!(serde_json::from_str::<NameMap<u32>>(&j).unwrap(), m);
    }
}
