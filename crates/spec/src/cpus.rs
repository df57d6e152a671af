//! The CPUs a job's threads may run on (`--cpus`, fio's cpus_allowed and cpumask): a list such
//! as `0-3,6`, kept sorted, each thread pinned to the whole set before the start.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The highest CPU number taken (the kernel's CPU_SETSIZE is 1024).
pub const MAX_CPU: u32 = 1023;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpus(pub Vec<u32>);

impl Cpus {
    /// The CPUs of a hexadecimal mask (fio's cpumask: bit N is CPU N).
    pub fn from_mask(mask: u64) -> Option<Cpus> {
        let list: Vec<u32> = (0..64).filter(|b| mask >> b & 1 == 1).collect();
        (!list.is_empty()).then_some(Cpus(list))
    }
}

impl FromStr for Cpus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let num = |t: &str| -> Result<u32, String> {
            let n: u32 =
                t.trim().parse().map_err(|_| format!("`{t}` is not a CPU number; write a list such as 0-3,6"))?;
            if n > MAX_CPU {
                return Err(format!("CPU {n}: the highest is {MAX_CPU}"));
            }
            Ok(n)
        };
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if b < a {
                        return Err(format!("`{part}`: a range runs from low to high, as 0-3"));
                    }
                    out.extend(a..=b);
                }
                None => out.push(num(part)?),
            }
        }
        if out.is_empty() {
            return Err("no CPU given; write a list such as 0-3,6".into());
        }
        out.sort_unstable();
        out.dedup();
        Ok(Cpus(out))
    }
}

impl fmt::Display for Cpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end += 1;
            }
            parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for Cpus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_reads_and_prints_as_the_kernel_writes_it() {
        let c: Cpus = "6, 0-3,2".parse().unwrap();
        assert_eq!(c.0, vec![0, 1, 2, 3, 6]);
        assert_eq!(c.to_string(), "0-3,6");
        assert_eq!(Cpus::from_mask(0x5).unwrap().0, vec![0, 2]);
        assert!(Cpus::from_mask(0).is_none());
        assert!("3-1".parse::<Cpus>().unwrap_err().contains("low to high"));
        assert!("2000".parse::<Cpus>().unwrap_err().contains("highest"));
        assert!("".parse::<Cpus>().is_err());
    }
}
