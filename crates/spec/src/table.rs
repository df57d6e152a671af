//! A job's table of options read and written in parts: the options every workload has, and
//! each personality's own, each part a struct deriving serde's traits in its own module.
//! serde's `flatten` would join them but cannot refuse an unknown key (and loses the line a
//! bad value is on), so a table is read key by key instead: each key is checked against every
//! part's names (an unknown key is refused naming it and the accepted ones, at its line) and its
//! value handed to the part that owns it, read by that part's derived code as a table of one
//! entry. Written, each part's fields go into one map, in order.

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::marker::PhantomData;

/// The keys a derived struct reads (its fields, renamed as serde reads them), asked of the
/// struct's own `Deserialize`.
pub fn keys_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let mut catch = Catch(None);
    let _ = T::deserialize(&mut catch);
    catch.0.unwrap_or(&[])
}

/// A deserializer that only notes the field names a struct asks for.
struct Catch(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut Catch {
    type Error = de::value::Error;
    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("fields noted"))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A key of one of `keys`: anything else is refused as serde refuses an unknown field, naming
/// it and the accepted ones (inside the key's deserializer, so a job file's error has its line).
pub struct Known(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Known {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let key = String::deserialize(d)?;
        if self.0.contains(&key.as_str()) {
            Ok(key)
        } else {
            Err(de::Error::unknown_field(&key, self.0))
        }
    }
}

/// The value of `key`, read by `T`'s own `Deserialize` as a table of one entry: `T` with that
/// one field set.
pub struct OneEntry<'k, T> {
    key: &'k str,
    part: PhantomData<T>,
}

impl<'k, T> OneEntry<'k, T> {
    pub fn new(key: &'k str) -> Self {
        OneEntry { key, part: PhantomData }
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for OneEntry<'_, T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::deserialize(Table { key: self.key, value: d })
    }
}

/// One entry, `key` = what `value` holds, as a deserializer of a table.
struct Table<'k, D> {
    key: &'k str,
    value: D,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Table<'_, D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        v.visit_map(Entry { key: Some(self.key), value: Some(self.value) })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct Entry<'k, D> {
    key: Option<&'k str>,
    value: Option<D>,
}

impl<'de, D: Deserializer<'de>> MapAccess<'de> for Entry<'_, D> {
    type Error = D::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, D::Error> {
        match self.key.take() {
            Some(k) => seed.deserialize(IntoDeserializer::<D::Error>::into_deserializer(k)).map(Some),
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, D::Error> {
        match self.value.take() {
            Some(d) => seed.deserialize(d),
            None => Err(de::Error::custom("a table of one entry has one value")),
        }
    }
}

/// `into` with the fields set in `over` taken from it (both are parts whose fields are all
/// optional and skipped when unset).
pub fn merge<T: Serialize + serde::de::DeserializeOwned>(into: &mut T, over: T) {
    let (Ok(serde_json::Value::Object(mut base)), Ok(serde_json::Value::Object(top))) =
        (serde_json::to_value(&*into), serde_json::to_value(&over))
    else {
        *into = over;
        return;
    };
    base.extend(top);
    // Both sides came from valid parts, so their union reads back.
    *into = serde_json::from_value(serde_json::Value::Object(base)).unwrap_or(over);
}

/// A serializer that writes a struct's fields as entries of `map`: how each part of a table
/// goes into the one map the table is written as.
pub struct Entries<'m, M>(pub &'m mut M);

fn only_structs<E: ser::Error>() -> E {
    E::custom("only a struct's fields go into a job's table")
}

impl<'m, M: SerializeMap> Serializer for Entries<'m, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, M::Error> {
        Ok(self)
    }
    fn serialize_bool(self, _: bool) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_i8(self, _: i8) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_i16(self, _: i16) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_i32(self, _: i32) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_i64(self, _: i64) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_u8(self, _: u8) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_u16(self, _: u16) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_u32(self, _: u32) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_u64(self, _: u64) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_f32(self, _: f32) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_f64(self, _: f64) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_char(self, _: char) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_str(self, _: &str) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_none(self) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_unit(self) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(only_structs())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
        Err(only_structs())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
        Err(only_structs())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, M::Error> {
        Err(only_structs())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, M::Error> {
        Err(only_structs())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, M::Error> {
        Err(only_structs())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, M::Error> {
        Err(only_structs())
    }
}

impl<M: SerializeMap> SerializeStruct for Entries<'_, M> {
    type Ok = ();
    type Error = M::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), M::Error> {
        self.0.serialize_entry(key, value)
    }
    fn end(self) -> Result<(), M::Error> {
        Ok(())
    }
}

/// "a job's table of options", for serde's messages.
pub struct Expecting;

impl fmt::Display for Expecting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a job's table of options")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Part {
        #[serde(skip_serializing_if = "Option::is_none")]
        a: Option<u32>,
        #[serde(rename = "bee", skip_serializing_if = "Option::is_none")]
        b: Option<String>,
    }

    #[test]
    fn a_part_names_its_keys_reads_one_entry_and_merges() {
        assert_eq!(keys_of::<Part>(), &["a", "bee"]);
        let v = serde_json::json!(7);
        let one: Part = OneEntry::new("a").deserialize(v).unwrap();
        assert_eq!(one, Part { a: Some(7), b: None });
        let bad = OneEntry::<Part>::new("a").deserialize(serde_json::json!("x")).unwrap_err().to_string();
        assert!(bad.contains("invalid type"), "{bad}");
        let mut p = Part { a: Some(1), b: Some("x".into()) };
        merge(&mut p, Part { a: Some(2), b: None });
        assert_eq!(p, Part { a: Some(2), b: Some("x".into()) });
        let e = Known(keys_of::<Part>()).deserialize(serde_json::json!("c")).unwrap_err().to_string();
        assert_eq!(e, "unknown field `c`, expected `a` or `bee`");
    }
}
