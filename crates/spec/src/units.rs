//! Units in types: sizes are `Bytes`, rates are `BytesPerSec`, and both parse the
//! spellings storage people type (`4k`, `100M`, `1GiB`, `32KB`), so no bare integer
//! ever has to carry its unit in a comment.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub const GIB: u64 = 1024 * 1024 * 1024;
    pub fn get(self) -> u64 {
        self.0
    }
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
    pub fn kib(n: u64) -> Self {
        Bytes(n * Self::KIB)
    }
    pub fn mib(n: u64) -> Self {
        Bytes(n * Self::MIB)
    }
    pub fn gib(n: u64) -> Self {
        Bytes(n * Self::GIB)
    }
}

/// Parse a size the way dd and fio users write it.
///
/// A bare number is bytes. Suffixes follow dd: `k`, `K`, `KiB` are 1024; `KB` is 1000;
/// likewise `M`/`MiB`/`MB`, `G`, `T`, `P`. `b` alone means 512-byte blocks, as in dd.
pub fn parse_size(text: &str) -> Result<Bytes, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty size; write a number with an optional suffix such as 4k, 1M, 2GiB".into());
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if s.starts_with('-') {
        return Err(format!("`{text}` is not a size: a size is not negative (for example 4k, 1M, 2GiB)"));
    }
    if num.is_empty() {
        return Err(format!("`{text}` is not a size: it must start with a number (for example 4k, 1M, 2GiB)"));
    }
    let mult: u64 = match suffix.trim() {
        "" | "B" => 1,
        "b" => 512,
        "k" | "K" | "KiB" | "kiB" | "Ki" => 1 << 10,
        "KB" | "kB" => 1_000,
        "m" | "M" | "MiB" | "Mi" => 1 << 20,
        "MB" => 1_000_000,
        "g" | "G" | "GiB" | "Gi" => 1 << 30,
        "GB" => 1_000_000_000,
        "t" | "T" | "TiB" | "Ti" => 1 << 40,
        "TB" => 1_000_000_000_000,
        "p" | "P" | "PiB" | "Pi" => 1 << 50,
        "PB" => 1_000_000_000_000_000,
        other => {
            return Err(format!(
                "`{text}`: unknown size suffix `{other}`; accepted: k/K/KiB (1024), KB (1000), M/MiB, MB, G/GiB, GB, T/TiB, TB, b (512)"
            ))
        }
    };
    let value = if num.contains('.') {
        let f: f64 = num.parse().map_err(|_| format!("`{text}` is not a size"))?;
        let v = f * mult as f64;
        if !v.is_finite() || v > u64::MAX as f64 {
            return Err(format!("`{text}` is too large"));
        }
        v.round() as u64
    } else {
        let n: u64 = num.parse().map_err(|_| format!("`{text}` is too large"))?;
        n.checked_mul(mult).ok_or_else(|| format!("`{text}` is too large"))?
    };
    Ok(Bytes(value))
}

/// Parse a duration: `30` or `30s`, `500ms`, `2m`, `1h`, `100us`; combinations such as `1m30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration; write for example 30s, 500ms, 2m".into());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return secs_to_duration(secs, text);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("`{text}`: number without a unit at the end; write 30s, 500ms, 2m"))?;
        let (num, tail) = rest.split_at(split);
        if num.is_empty() {
            return Err(format!("`{text}` is not a duration (for example 30s, 500ms, 2m, 1h)"));
        }
        let n: f64 = num.parse().map_err(|_| format!("`{text}` is not a duration"))?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            other => return Err(format!("`{text}`: unknown time unit `{other}`; accepted: ns, us, ms, s, m, h")),
        };
        total += n * scale;
        rest = next;
    }
    secs_to_duration(total, text)
}

fn secs_to_duration(secs: f64, text: &str) -> Result<Duration, String> {
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("`{text}` is not a usable duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Format bytes in binary units for humans (`1.5 GiB`).
pub fn fmt_binary(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// Format bytes in decimal units as dd prints them (`1.0 GB`).
pub fn fmt_decimal(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < UNITS.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (unit, m) in [("T", 1u64 << 40), ("G", 1 << 30), ("M", 1 << 20), ("k", 1 << 10)] {
            if v >= m && v.is_multiple_of(m) {
                return write!(f, "{}{unit}", v / m);
            }
        }
        write!(f, "{v}")
    }
}

impl std::str::FromStr for Bytes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size(s)
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: an integer of bytes or a string such as \"4k\", \"1M\", \"2GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                u64::try_from(v).map(Bytes).map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                parse_size(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A data rate in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesPerSec(pub Bytes);

/// serde helpers for `Duration` written as `"30s"` or a number of seconds.
pub mod duration_serde {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}s", d.as_secs_f64()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration: seconds as a number or a string such as \"30s\", \"500ms\", \"2m\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                Ok(Duration::from_secs(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                u64::try_from(v).map(Duration::from_secs).map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                secs_to_duration(v, &v.to_string()).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }

    pub mod option {
        use super::*;
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }
        struct Text(Duration);
        impl<'de> Deserialize<'de> for Text {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                super::deserialize(d).map(Text)
            }
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<Text>::deserialize(d).map(|o| o.map(|t| t.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_follow_dd() {
        assert_eq!(parse_size("4k").unwrap(), Bytes(4096));
        assert_eq!(parse_size("4K").unwrap(), Bytes(4096));
        assert_eq!(parse_size("4KiB").unwrap(), Bytes(4096));
        assert_eq!(parse_size("4KB").unwrap(), Bytes(4000));
        assert_eq!(parse_size("100M").unwrap(), Bytes(100 << 20));
        assert_eq!(parse_size("1MB").unwrap(), Bytes(1_000_000));
        assert_eq!(parse_size("42G").unwrap(), Bytes(42 << 30));
        assert_eq!(parse_size("1.5G").unwrap(), Bytes(3 << 29));
        assert_eq!(parse_size("512").unwrap(), Bytes(512));
        assert_eq!(parse_size("2b").unwrap(), Bytes(1024));
        assert_eq!(parse_size(" 1T ").unwrap(), Bytes(1 << 40));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert!(parse_size("").unwrap_err().contains("empty"));
        assert!(parse_size("k").unwrap_err().contains("start with a number"));
        assert!(parse_size("4q").unwrap_err().contains("unknown size suffix `q`"));
        assert!(parse_size("99999999999999999999").unwrap_err().contains("too large"));
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("5y").unwrap_err().contains("unknown time unit"));
        assert!(parse_duration("-3").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("10s5").is_err());
    }

    #[test]
    fn display_round_trips() {
        for b in [Bytes(4096), Bytes(100 << 20), Bytes(3), Bytes(3 << 30)] {
            assert_eq!(parse_size(&b.to_string()).unwrap(), b);
        }
        assert_eq!(fmt_decimal(1_048_576_000.0), "1.0 GB");
        assert_eq!(fmt_binary(1_048_576_000.0), "1000.0 MiB");
    }

    proptest! {
        #[test]
        fn any_text_parses_or_errs_without_panic(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
        }

        #[test]
        fn integer_with_suffix(n in 0u64..1_000_000, i in 0usize..4) {
            let (suf, m) = [("", 1u64), ("k", 1024), ("M", 1 << 20), ("G", 1 << 30)][i];
            prop_assert_eq!(parse_size(&format!("{n}{suf}")).unwrap(), Bytes(n * m));
        }
    }
}
