//! A job's start delay within its phase (`--start-delay`, fio's `startdelay`): one time, or a
//! range `LOW-HIGH` from which each of the job's threads draws its own, as fio's clones do. The
//! draw is seeded by the job's seed and the thread, so the same job starts the same way again.

use crate::units::parse_duration;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The longest start delay taken: a day (a typo such as `2000000` seconds is refused, not waited).
pub const MAX_DELAY: Duration = Duration::from_secs(24 * 3600);

/// A start delay: `low` alone, or a uniform draw in [`low`, `high`] per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delay {
    pub low: Duration,
    pub high: Duration,
}

impl Delay {
    pub fn fixed(d: Duration) -> Self {
        Delay { low: d, high: d }
    }

    pub fn is_zero(&self) -> bool {
        self.high.is_zero()
    }

    /// The delay thread `thread` of a job seeded `seed` waits (the same every run).
    pub fn for_thread(&self, seed: u64, thread: u32) -> Duration {
        if self.high <= self.low {
            return self.low;
        }
        let span = (self.high - self.low).as_nanos() as u64;
        let x = mix(seed ^ 0x57A2_7DE1_A700_0000 ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // A uniform draw in [0, span], by the high half of a 128-bit product (no modulo bias to
        // speak of at nanosecond resolution).
        let off = ((x as u128 * (span as u128 + 1)) >> 64) as u64;
        self.low + Duration::from_nanos(off)
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit value from a seed.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl FromStr for Delay {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let one = |t: &str| -> Result<Duration, String> {
            let d = parse_duration(t)?;
            if d > MAX_DELAY {
                return Err(format!("`{t}`: a start delay is at most a day (24h)"));
            }
            Ok(d)
        };
        match s.split_once('-') {
            Some((a, b)) => {
                let (low, high) = (one(a)?, one(b)?);
                if high < low {
                    return Err(format!("`{s}`: the range's high end is below its low end; write LOW-HIGH, as 1s-5s"));
                }
                Ok(Delay { low, high })
            }
            None => one(s).map(Delay::fixed),
        }
    }
}

impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}s", self.low.as_secs_f64())
        } else {
            write!(f, "{}s-{}s", self.low.as_secs_f64(), self.high.as_secs_f64())
        }
    }
}

impl Serialize for Delay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Delay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Delay;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a start delay: a duration such as \"2s\", or a range such as \"1s-5s\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Delay, E> {
                format!("{v}s").parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Delay, E> {
                if v < 0 {
                    return Err(E::custom("a start delay cannot be negative"));
                }
                self.visit_u64(v as u64)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Delay, E> {
                format!("{v}s").parse().map_err(E::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Delay, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_a_time_or_a_range_each_thread_draws_from() {
        let d: Delay = "2s".parse().unwrap();
        assert_eq!(d, Delay::fixed(Duration::from_secs(2)));
        assert_eq!(d.for_thread(1, 7), Duration::from_secs(2));
        let r: Delay = "100ms-300ms".parse().unwrap();
        let draws: Vec<Duration> = (0..64).map(|t| r.for_thread(42, t)).collect();
        assert!(draws.iter().all(|d| *d >= Duration::from_millis(100) && *d <= Duration::from_millis(300)));
        assert!(
            draws.iter().any(|d| *d < Duration::from_millis(150))
                && draws.iter().any(|d| *d > Duration::from_millis(250))
        );
        assert_eq!(draws, (0..64).map(|t| r.for_thread(42, t)).collect::<Vec<_>>(), "the same draw every run");
        assert_eq!(r.to_string().parse::<Delay>().unwrap(), r);
        let e = "5s-1s".parse::<Delay>().unwrap_err();
        assert!(e.contains("high end is below"), "{e}");
        assert!("25h".parse::<Delay>().unwrap_err().contains("at most a day"));
        assert!("soon".parse::<Delay>().is_err());
    }
}
