//! Whether a block device is in use (issue 29: raw devices first-class, never one in use): a
//! filesystem on it or on one of its partitions is mounted (/proc/self/mountinfo, the
//! partitions' numbers from /sys/dev/block), or a device mapper or RAID device holds it
//! (/sys/dev/block/M:m/holders). `iolab precondition` and `iolab run --device` writing a block
//! device refuse it in words; the kernel's own claim check (an O_EXCL open) comes after.

/// Why the block device numbered `rdev` must not be written, or None.
pub fn in_use(rdev: u64) -> Option<String> {
    let (maj, min) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let mut numbers = vec![format!("{maj}:{min}")];
    if let Ok(dir) = std::fs::read_dir(format!("/sys/dev/block/{maj}:{min}")) {
        for e in dir.flatten() {
            if e.path().join("partition").exists() {
                if let Ok(dev) = std::fs::read_to_string(e.path().join("dev")) {
                    numbers.push(dev.trim().to_string());
                }
            }
        }
    }
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        // Fields: id, parent, major:minor, root, mount point, ...
        let mounted = info.lines().find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 4 && numbers.iter().any(|n| n == f[2])).then(|| (f[2].to_string(), f[4].to_string()))
        });
        if let Some((dev, at)) = mounted {
            let what = if dev == numbers[0] { "it".to_string() } else { format!("its partition {dev}") };
            return Some(format!("{what} is mounted at {at}; unmount it first (iolab never writes a device in use)"));
        }
    }
    let held: Vec<String> = std::fs::read_dir(format!("/sys/dev/block/{maj}:{min}/holders"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    if !held.is_empty() {
        return Some(format!(
            "it is held by {} (device mapper, RAID); iolab never writes a device in use",
            held.join(", ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_device_under_the_root_filesystem_is_in_use() {
        // The root filesystem's device number is mounted by definition.
        let dev = std::fs::metadata("/").unwrap().dev();
        let why = in_use(dev).expect("the root filesystem's device is mounted");
        assert!(why.contains("mounted at /"), "{why}");
    }
}
