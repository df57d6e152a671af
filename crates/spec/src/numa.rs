//! NUMA placement of a job's threads (`--numa-nodes`, `--mem-policy`: fio's numa_cpu_nodes and
//! numa_mem_policy): the threads run on the CPUs of the given nodes (each node's
//! /sys/devices/system/node/nodeN/cpulist, read by the worker when it starts, so a plan names
//! nodes and the machine that runs it says which CPUs they are), and their memory, the I/O
//! buffers among it, is placed by the kernel's policy (set_mempolicy) before they are made.

use crate::cpus::Cpus;

/// A list of NUMA nodes, as 0-1 (`--numa-nodes`, fio's numa_cpu_nodes): a CPU list's syntax, its
/// errors naming nodes.
pub fn parse_nodes(s: &str) -> Result<Cpus, String> {
    s.parse::<Cpus>().map_err(|e| e.replace("CPU", "node"))
}
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The memory policy of a job's threads (fio's `numa_mem_policy=MODE[:NODES]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// The system's default.
    Default,
    /// Prefer this node, fall back to others.
    Prefer(u32),
    /// Only these nodes.
    Bind(Cpus),
    /// Pages spread round-robin over these nodes.
    Interleave(Cpus),
    /// The node of the CPU that touches the page first.
    Local,
}

impl FromStr for MemPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (mode, nodes) = match s.split_once(':') {
            Some((m, n)) => (m.trim(), Some(n.trim())),
            None => (s.trim(), None),
        };
        let list = |n: Option<&str>| -> Result<Cpus, String> {
            let n = n.ok_or_else(|| format!("`{s}`: {mode} takes nodes, as {mode}:0-1"))?;
            parse_nodes(n).map_err(|e| format!("`{n}`: {e}"))
        };
        match mode {
            "default" | "local" if nodes.is_some() => Err(format!("`{s}`: {mode} takes no nodes")),
            "default" => Ok(MemPolicy::Default),
            "local" => Ok(MemPolicy::Local),
            "prefer" => {
                let l = list(nodes)?;
                match l.0.as_slice() {
                    [one] => Ok(MemPolicy::Prefer(*one)),
                    _ => Err(format!("`{s}`: prefer takes one node, as prefer:0")),
                }
            }
            "bind" => Ok(MemPolicy::Bind(list(nodes)?)),
            "interleave" => Ok(MemPolicy::Interleave(list(nodes)?)),
            other => {
                Err(format!("`{other}`: a memory policy is default, prefer:N, bind:NODES, interleave:NODES or local"))
            }
        }
    }
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Default => write!(f, "default"),
            MemPolicy::Local => write!(f, "local"),
            MemPolicy::Prefer(n) => write!(f, "prefer:{n}"),
            MemPolicy::Bind(n) => write!(f, "bind:{n}"),
            MemPolicy::Interleave(n) => write!(f, "interleave:{n}"),
        }
    }
}

impl Serialize for MemPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for MemPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a job's threads run and their memory lies.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Numa {
    /// Run on the CPUs of these nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Cpus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<MemPolicy>,
}

/// Where the kernel lists a node's CPUs.
pub fn cpulist_path(node: u32) -> String {
    format!("/sys/devices/system/node/node{node}/cpulist")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_list_error_names_nodes() {
        assert_eq!(parse_nodes("0-1"), Ok(Cpus(vec![0, 1])));
        let e = parse_nodes("a").unwrap_err();
        assert!(e.contains("`a` is not a node number") && !e.contains("CPU"), "{e}");
    }

    #[test]
    fn policies_read_as_fio_writes_them() {
        assert_eq!("bind:0".parse(), Ok(MemPolicy::Bind(Cpus(vec![0]))));
        assert_eq!("interleave:0-1".parse(), Ok(MemPolicy::Interleave(Cpus(vec![0, 1]))));
        assert_eq!("prefer:1".parse(), Ok(MemPolicy::Prefer(1)));
        assert_eq!("local".parse(), Ok(MemPolicy::Local));
        assert!("prefer:0-1".parse::<MemPolicy>().unwrap_err().contains("one node"));
        assert!("bind".parse::<MemPolicy>().unwrap_err().contains("takes nodes"));
        assert!("spread:0".parse::<MemPolicy>().unwrap_err().contains("interleave"));
        for p in ["bind:0-3", "interleave:0,2", "prefer:1", "local", "default"] {
            assert_eq!(p.parse::<MemPolicy>().unwrap().to_string(), p);
        }
    }
}
