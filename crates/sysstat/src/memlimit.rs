//! How much memory this process may take: the system's MemAvailable, the address space left
//! under RLIMIT_AS, and what its cgroup's memory limit leaves (cgroup v2's `memory.max`, or
//! v1's `memory.limit_in_bytes`, the smallest on the way to the root, less what the cgroup
//! uses). What a plan is checked against before any I/O (`iolab_workload::memory`).

use std::path::{Path, PathBuf};

/// The limits found; `None` where there is none or it could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryLimits {
    /// /proc/meminfo's MemAvailable, bytes.
    pub available: Option<u64>,
    /// RLIMIT_AS (soft), bytes, and the process's address space now (VmSize).
    pub address_space: Option<(u64, u64)>,
    /// The cgroup's limit and its usage now, bytes.
    pub cgroup: Option<(u64, u64)>,
}

/// A limit at or above this is no limit (cgroup v1 writes "no limit" as a page-rounded 2^63).
const UNLIMITED: u64 = 1 << 62;

impl MemoryLimits {
    /// The limits of this process, from /proc and /sys.
    pub fn read() -> MemoryLimits {
        Self::read_under(Path::new("/proc"), Path::new("/sys/fs/cgroup"))
    }

    /// [`MemoryLimits::read`] under other roots (tests).
    pub fn read_under(proc: &Path, cgroup_root: &Path) -> MemoryLimits {
        let read = |p: PathBuf| std::fs::read_to_string(p).ok();
        let available = read(proc.join("meminfo")).and_then(|t| kib_field(&t, "MemAvailable:"));
        let rlimit = rustix::process::getrlimit(rustix::process::Resource::As).current.filter(|&l| l < UNLIMITED);
        let vm_size = read(proc.join("self/status")).and_then(|t| kib_field(&t, "VmSize:")).unwrap_or(0);
        let cgroup = read(proc.join("self/cgroup")).and_then(|t| cgroup_limit(&t, cgroup_root));
        MemoryLimits { available, address_space: rlimit.map(|l| (l, vm_size)), cgroup }
    }
}

/// A `Key:  N kB` line's value in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse::<u64>().ok().map(|k| k.saturating_mul(1024))
}

fn number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The smallest memory limit from the process's cgroup up to the root, and its cgroup's usage.
fn cgroup_limit(self_cgroup: &str, root: &Path) -> Option<(u64, u64)> {
    for line in self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        // v2: "0::/path", files memory.max and memory.current.
        // v1: "N:memory:/path" (or "memory,..."), files memory.limit_in_bytes and memory.usage_in_bytes.
        let (base, max_file, usage_file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes", "memory.usage_in_bytes")
        } else {
            continue;
        };
        let own = base.join(rel);
        if !own.join(usage_file).exists() {
            continue;
        }
        let usage = number(&own.join(usage_file)).unwrap_or(0);
        let mut limit: Option<u64> = None;
        let mut dir = Some(own.as_path());
        while let Some(d) = dir.filter(|d| d.starts_with(&base)) {
            if let Some(l) = number(&d.join(max_file)).filter(|&l| l < UNLIMITED) {
                limit = Some(limit.map_or(l, |m| m.min(l)));
            }
            dir = d.parent();
        }
        if let Some(l) = limit {
            return Some((l, usage));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_status_fields_read_in_bytes() {
        let t = "MemTotal:       24684084 kB\nMemFree:         2344484 kB\nMemAvailable:   20980576 kB\n";
        assert_eq!(kib_field(t, "MemAvailable:"), Some(20_980_576 * 1024));
        assert_eq!(kib_field(t, "VmSize:"), None);
    }

    #[test]
    fn a_cgroup_limit_is_the_smallest_on_the_way_up() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        // v2, a limit above and a tighter one on the process's own cgroup.
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/memory.max"), "8589934592\n").unwrap();
        std::fs::write(root.join("a/b/memory.max"), "max\n").unwrap();
        std::fs::write(root.join("a/b/memory.current"), "1048576\n").unwrap();
        assert_eq!(cgroup_limit("0::/a/b\n", root), Some((8 << 30, 1 << 20)));
        std::fs::write(root.join("a/b/memory.max"), "4294967296\n").unwrap();
        assert_eq!(cgroup_limit("0::/a/b\n", root), Some((4 << 30, 1 << 20)));
        // v1, "no limit" as 2^63 rounded down to a page.
        std::fs::create_dir_all(root.join("memory/c")).unwrap();
        std::fs::write(root.join("memory/c/memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        std::fs::write(root.join("memory/c/memory.usage_in_bytes"), "5\n").unwrap();
        assert_eq!(cgroup_limit("4:memory:/c\n1:cpu:/\n", root), None);
        std::fs::write(root.join("memory/c/memory.limit_in_bytes"), "1073741824\n").unwrap();
        assert_eq!(cgroup_limit("4:cpu,memory:/c\n", root), Some((1 << 30, 5)));
    }
}
