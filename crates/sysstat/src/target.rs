//! What carries a path's I/O: its mount (filesystem type, options), the block devices under
//! it (through partitions, loop devices and their backing files, device-mapper and md
//! members) and, for network and cluster filesystems, the interfaces and their link speeds.

use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Filesystems whose data or locking crosses the network.
pub const NETWORK_FS: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "fuse.sshfs",
    "ocfs2",
    "gfs2",
    "glusterfs",
    "fuse.glusterfs",
    "ceph",
    "fuse.ceph",
    "9p",
];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    pub name: String,
    /// Link speed in Mb/s: the rate of a root tbf qdisc shaping the interface when there is one
    /// (and it is below the driver's), else /sys/class/net/NAME/speed when the driver reports
    /// one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub fstype: String,
    pub mount_point: String,
    pub mount_source: String,
    pub mount_options: String,
    /// Kernel names of the block devices carrying the I/O, the nearest first (dm-0, loop0, vda...).
    pub devices: Vec<String>,
    /// A network or cluster filesystem.
    pub network: bool,
    pub interfaces: Vec<Interface>,
}

/// Where the system files are; tests point them at fakes.
#[derive(Debug, Clone)]
pub struct SysRoots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for SysRoots {
    fn default() -> Self {
        SysRoots { sys: "/sys".into(), proc: "/proc".into() }
    }
}

struct Mount {
    #[allow(dead_code)] // kept for matching anonymous devices later
    dev: (u32, u32),
    point: String,
    options: String,
    fstype: String,
    source: String,
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo (octal).
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 4]).ok().and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            let (maj, min) = f.get(2)?.split_once(':')?;
            let mut options = f.get(5)?.to_string();
            for o in r.get(2).unwrap_or(&"").split(',') {
                if !o.is_empty() && !options.split(',').any(|x| x == o) {
                    options.push(',');
                    options.push_str(o);
                }
            }
            Some(Mount {
                dev: (maj.parse().ok()?, min.parse().ok()?),
                point: unescape(f.get(4)?),
                options,
                fstype: r.first()?.to_string(),
                source: unescape(r.get(1).unwrap_or(&"")),
            })
        })
        .collect()
}

/// Describe what carries `path`'s I/O. A path that does not exist yet is described by its
/// nearest existing ancestor.
pub fn describe(path: &Path, roots: &SysRoots) -> TargetInfo {
    let mut p = path.to_path_buf();
    while !p.exists() {
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q.to_path_buf(),
            _ => {
                p = PathBuf::from(".");
                break;
            }
        }
    }
    let canon = std::fs::canonicalize(&p).unwrap_or(p.clone());
    let meta = std::fs::metadata(&canon).ok();
    let mounts = parse_mountinfo(&std::fs::read_to_string(roots.proc.join("self/mountinfo")).unwrap_or_default());
    // The mount holding the path: the longest mount point that prefixes it.
    let c = canon.to_string_lossy().to_string();
    let m = mounts
        .iter()
        .filter(|m| c == m.point || c.starts_with(&format!("{}/", m.point.trim_end_matches('/'))) || m.point == "/")
        .max_by_key(|m| m.point.len());
    let mut info = TargetInfo { path: path.display().to_string(), ..Default::default() };
    if let Some(m) = m {
        info.fstype = m.fstype.clone();
        info.mount_point = m.point.clone();
        info.mount_source = m.source.clone();
        info.mount_options = m.options.clone();
    }
    let mut devices = Vec::new();
    // A block device target is described by its own number, not by the /dev it sits in.
    if let Some(md) = meta.as_ref().filter(|m| m.file_type().is_block_device()) {
        block_chain(rustix::fs::major(md.rdev()), rustix::fs::minor(md.rdev()), roots, &mut devices, 0);
        info.devices = devices;
        return info;
    }
    let dev = meta.map(|md| (rustix::fs::major(md.dev()), rustix::fs::minor(md.dev())));
    if let Some((maj, min)) = dev {
        if maj != 0 {
            block_chain(maj, min, roots, &mut devices, 0);
        } else if let Some(m) = m {
            // Filesystems on anonymous devices (btrfs) name their block device as the source.
            if let Ok(sm) = std::fs::metadata(&m.source) {
                if sm.file_type().is_block_device() {
                    block_chain(rustix::fs::major(sm.rdev()), rustix::fs::minor(sm.rdev()), roots, &mut devices, 0);
                }
            }
        }
    }
    info.devices = devices;
    info.network = NETWORK_FS.contains(&info.fstype.as_str());
    if info.network {
        info.interfaces = interfaces_for(&info.mount_source, &info.fstype, roots);
        // A FUSE client may talk to more servers than its source names (a GlusterFS replica
        // writes to every brick's server): the links to all its peers carry the target's I/O.
        if info.fstype.starts_with("fuse.") && roots.proc == Path::new("/proc") {
            for peer in fuse_peers(&info.mount_point, &roots.proc) {
                let named = if peer.is_loopback() { Some("lo".to_string()) } else { route_v4(peer, roots) };
                if let Some(n) = named.filter(|n| !info.interfaces.iter().any(|i| &i.name == n)) {
                    info.interfaces.push(interface(n, roots));
                }
            }
        }
    }
    info
}

/// The IPv4 peers of the TCP connections (established) held by the processes that serve a
/// FUSE mount: those whose command line names the mount point, and their children (sshfs's
/// ssh). A GlusterFS client holds one to every brick's server. Processes this user may not
/// look into are left out.
fn fuse_peers(mount_point: &str, proc: &Path) -> Vec<Ipv4Addr> {
    let Ok(rd) = std::fs::read_dir(proc) else { return Vec::new() };
    let pids: Vec<u32> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    let names_mount = |pid: u32| {
        std::fs::read(proc.join(format!("{pid}/cmdline")))
            .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == mount_point.as_bytes()))
    };
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(proc.join(format!("{pid}/stat"))).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let servers: Vec<u32> = pids.iter().copied().filter(|p| names_mount(*p)).collect();
    let mut serving: Vec<u32> = servers.clone();
    serving.extend(pids.iter().copied().filter(|p| parent(*p).is_some_and(|pp| servers.contains(&pp))));
    let mut out: Vec<Ipv4Addr> = Vec::new();
    for pid in serving {
        let Ok(fds) = std::fs::read_dir(proc.join(format!("{pid}/fd"))) else { continue };
        let inodes: Vec<String> = fds
            .flatten()
            .filter_map(|f| std::fs::read_link(f.path()).ok())
            .filter_map(|l| {
                let l = l.to_string_lossy().to_string();
                l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')).map(str::to_string)
            })
            .collect();
        if inodes.is_empty() {
            continue;
        }
        let tcp = std::fs::read_to_string(proc.join(format!("{pid}/net/tcp"))).unwrap_or_default();
        for peer in tcp_peers(&tcp, &inodes) {
            if !out.contains(&peer) {
                out.push(peer);
            }
        }
    }
    out
}

/// The remote addresses of the established connections (state 01) in /proc/net/tcp whose
/// socket inode is one of `inodes`.
fn tcp_peers(text: &str, inodes: &[String]) -> Vec<Ipv4Addr> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(3) != Some(&"01") || !inodes.iter().any(|i| Some(&i.as_str()) == f.get(9)) {
                return None;
            }
            let (addr, _) = f.get(2)?.split_once(':')?;
            Some(Ipv4Addr::from(u32::from_str_radix(addr, 16).ok()?.to_le_bytes()))
        })
        .collect()
}

/// Walk from a device number to the devices under it.
fn block_chain(maj: u32, min: u32, roots: &SysRoots, out: &mut Vec<String>, depth: u32) {
    if depth > 8 {
        return;
    }
    let link = roots.sys.join(format!("dev/block/{maj}:{min}"));
    let Ok(real) = std::fs::canonicalize(&link) else { return };
    let Some(name) = real.file_name().map(|n| n.to_string_lossy().to_string()) else { return };
    push(out, &name);
    // A partition's disk is its parent directory.
    if real.join("partition").exists() {
        if let Some(disk) = real.parent().and_then(|p| p.file_name()) {
            let disk = disk.to_string_lossy().to_string();
            push(out, &disk);
            expand(&roots.sys.join("block").join(&disk), roots, out, depth);
        }
        return;
    }
    expand(&real, roots, out, depth);
}

fn push(out: &mut Vec<String>, name: &str) {
    if !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

/// Loop devices lead to their backing file's devices; dm and md to their members (`slaves`).
fn expand(dev_dir: &Path, roots: &SysRoots, out: &mut Vec<String>, depth: u32) {
    if let Ok(backing) = std::fs::read_to_string(dev_dir.join("loop/backing_file")) {
        let backing = backing.trim();
        if let Ok(m) = std::fs::metadata(backing) {
            let (maj, min) = (rustix::fs::major(m.dev()), rustix::fs::minor(m.dev()));
            if maj != 0 {
                block_chain(maj, min, roots, out, depth + 1);
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(dev_dir.join("slaves")) {
        let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
        names.sort();
        for n in names {
            if let Ok(t) = std::fs::read_to_string(roots.sys.join("class/block").join(&n).join("dev")) {
                if let Some((a, b)) = t.trim().split_once(':') {
                    if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                        block_chain(a, b, roots, out, depth + 1);
                    }
                }
            }
        }
    }
}

/// The server a network mount talks to, from its source: `host:/path`, `//host/share`,
/// `user@host:path`, `mon1,mon2:/path`.
pub fn server_of(source: &str) -> Option<String> {
    let s = source.trim();
    let s = s.rsplit_once('@').map(|(_, h)| h).unwrap_or(s);
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().filter(|h| !h.is_empty()).map(String::from);
    }
    let host = if let Some(rest) = s.strip_prefix("//") {
        rest.split('/').next()?
    } else {
        let before = s.split(":/").next()?;
        let before = before.rsplit_once(':').map(|(h, _)| h).unwrap_or(before);
        let before = before.split(',').next()?;
        before.rsplit('@').next()?
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| host.to_string())
}

fn speed(name: &str, roots: &SysRoots) -> Option<u64> {
    let t = std::fs::read_to_string(roots.sys.join("class/net").join(name).join("speed")).ok()?;
    t.trim().parse::<i64>().ok().filter(|v| *v > 0).map(|v| v as u64)
}

/// The IPv4 route for an address, from /proc/net/route (longest prefix wins).
fn route_v4(addr: Ipv4Addr, roots: &SysRoots) -> Option<String> {
    let text = std::fs::read_to_string(roots.proc.join("net/route")).ok()?;
    let ip = u32::from_le_bytes(addr.octets());
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dest = u32::from_str_radix(f.get(1)?, 16).ok()?;
            let mask = u32::from_str_radix(f.get(7)?, 16).ok()?;
            (ip & mask == dest).then(|| (mask.count_ones(), f[0].to_string()))
        })
        .max_by_key(|(bits, _)| *bits)
        .map(|(_, n)| n)
}

/// An interface with its speed: a shaped link runs at its tbf rate (`tc` sees this machine's
/// interfaces only, so not for another root: tests), else the driver's.
fn interface(n: String, roots: &SysRoots) -> Interface {
    let real = roots.sys == std::path::Path::new("/sys");
    let driver = speed(&n, roots);
    let shaped = if real { crate::qdisc::shaped_mbps(&n) } else { None };
    let speed_mbps = match (shaped, driver) {
        (Some(s), Some(d)) => Some(s.min(d)),
        (s, d) => s.or(d),
    };
    Interface { speed_mbps, name: n }
}

fn interfaces_for(source: &str, _fstype: &str, roots: &SysRoots) -> Vec<Interface> {
    let to_iface = |n: String| interface(n, roots);
    if let Some(host) = server_of(source) {
        if let Some(ip) = (host.as_str(), 0).to_socket_addrs().ok().and_then(|mut a| a.next()).map(|a| a.ip()) {
            if ip.is_loopback() {
                return vec![to_iface("lo".into())];
            }
            if let IpAddr::V4(v4) = ip {
                if let Some(n) = route_v4(v4, roots) {
                    return vec![to_iface(n)];
                }
            }
        }
    }
    // Cluster filesystems (OCFS2, GFS2) and unresolvable servers: every interface that is up.
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(roots.sys.join("class/net")) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            let up = std::fs::read_to_string(e.path().join("operstate")).map(|s| s.trim() == "up").unwrap_or(false);
            if n != "lo" && up {
                out.push(to_iface(n));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_from_sources() {
        assert_eq!(server_of("nfs1.example:/export/home").as_deref(), Some("nfs1.example"));
        assert_eq!(server_of("//fileserver/share").as_deref(), Some("fileserver"));
        assert_eq!(server_of("root@127.0.0.1:/srv").as_deref(), Some("127.0.0.1"));
        assert_eq!(server_of("10.0.0.1,10.0.0.2:6789:/").as_deref(), Some("10.0.0.1"));
        assert_eq!(server_of("[::1]:/x").as_deref(), Some("::1"));
    }

    #[test]
    fn mountinfo_fields_and_escapes() {
        let m = parse_mountinfo(
            "29 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n40 29 0:50 / /mnt/my\\040dir rw - nfs4 srv:/x rw,vers=4.2\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].options, "rw,relatime,discard");
        assert_eq!(m[0].dev, (254, 0));
        assert_eq!(m[1].point, "/mnt/my dir");
        assert_eq!(m[1].fstype, "nfs4");
    }

    /// A fake /sys: dm-0 over loop0, whose backing file sits on partition vda1 of vda; and md0
    /// over two partitions. The chains must come out nearest first.
    #[test]
    fn chains_through_dm_md_loop_and_partitions() {
        use std::os::unix::fs::symlink;
        let sys = tempfile::tempdir().unwrap();
        let s = sys.path();
        let mk = |p: &str| std::fs::create_dir_all(s.join(p)).unwrap();
        let backing = tempfile::NamedTempFile::new_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let m = std::fs::metadata(backing.path()).unwrap();
        let (bmaj, bmin) = (rustix::fs::major(m.dev()), rustix::fs::minor(m.dev()));
        for d in [
            "devices/virtual/block/dm-0/slaves/loop0",
            "devices/virtual/block/loop0/loop",
            "devices/pci/block/vda/vda1",
            "devices/virtual/block/md0/slaves/sda1",
            "devices/virtual/block/md0/slaves/sdb1",
            "devices/pci/block/sda/sda1",
            "devices/pci/block/sdb/sdb1",
            "dev/block",
            "class/block/loop0",
            "class/block/sda1",
            "class/block/sdb1",
            "block",
        ] {
            mk(d);
        }
        std::fs::write(
            s.join("devices/virtual/block/loop0/loop/backing_file"),
            format!("{}\n", backing.path().display()),
        )
        .unwrap();
        for p in [
            "devices/pci/block/vda/vda1/partition",
            "devices/pci/block/sda/sda1/partition",
            "devices/pci/block/sdb/sdb1/partition",
        ] {
            std::fs::write(s.join(p), "1\n").unwrap();
        }
        std::fs::write(s.join("class/block/loop0/dev"), "7:0\n").unwrap();
        std::fs::write(s.join("class/block/sda1/dev"), "8:1\n").unwrap();
        std::fs::write(s.join("class/block/sdb1/dev"), "8:17\n").unwrap();
        symlink("../../devices/virtual/block/dm-0", s.join("dev/block/253:0")).unwrap();
        symlink("../../devices/virtual/block/loop0", s.join("dev/block/7:0")).unwrap();
        symlink("../../devices/pci/block/vda/vda1", s.join(format!("dev/block/{bmaj}:{bmin}"))).unwrap();
        symlink("../../devices/virtual/block/md0", s.join("dev/block/9:0")).unwrap();
        symlink("../../devices/pci/block/sda/sda1", s.join("dev/block/8:1")).unwrap();
        symlink("../../devices/pci/block/sdb/sdb1", s.join("dev/block/8:17")).unwrap();
        symlink("../devices/pci/block/vda", s.join("block/vda")).unwrap();
        symlink("../devices/pci/block/sda", s.join("block/sda")).unwrap();
        symlink("../devices/pci/block/sdb", s.join("block/sdb")).unwrap();
        let roots = SysRoots { sys: s.to_path_buf(), proc: "/proc".into() };
        let mut out = Vec::new();
        block_chain(253, 0, &roots, &mut out, 0);
        assert_eq!(out, ["dm-0", "loop0", "vda1", "vda"]);
        let mut out = Vec::new();
        block_chain(9, 0, &roots, &mut out, 0);
        assert_eq!(out, ["md0", "sda1", "sda", "sdb1", "sdb"]);
        let mut out = Vec::new();
        block_chain(1, 99, &roots, &mut out, 0);
        assert!(out.is_empty(), "an unknown device maps to nothing, without error");
    }

    #[test]
    fn established_tcp_peers_of_given_sockets() {
        // A GlusterFS client's table: two bricks' connections, a listener, a closing one.
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0164B50A:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 867056 1 0 100 0 0 10 0
   1: 010BB50A:BFFD 01C9B50A:D7F3 01 00000000:00000000 02:0000044F 00000000     0        0 868164 2 0 20 4 0 42 -1
   2: 0115B50A:BFFF 01CAB50A:E819 01 00000000:00000000 02:0000044F 00000000     0        0 868166 2 0 20 4 0 43 -1
   4: 0115B50A:BFFD 01CAB50A:5DC7 06 00000000:00000000 03:000013EF 00000000     0        0 0 3 0
   5: 010BB50A:BFFE 0100007F:5DC7 01 00000000:00000000 03:000013EE 00000000     0        0 999 3 0
";
        let inodes = vec!["868164".to_string(), "868166".to_string(), "867056".to_string()];
        assert_eq!(tcp_peers(tcp, &inodes), [Ipv4Addr::new(10, 181, 201, 1), Ipv4Addr::new(10, 181, 202, 1)]);
        assert!(tcp_peers("garbage\n1: x y z", &inodes).is_empty());
    }

    #[test]
    fn this_machine_root() {
        let t = describe(Path::new("/"), &SysRoots::default());
        assert!(!t.fstype.is_empty(), "{t:?}");
        assert_eq!(t.mount_point, "/");
    }
}
