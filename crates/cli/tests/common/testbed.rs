//! A cluster on one machine for the multi-node tests: brings up scripts/testbed.sh (network
//! namespaces as nodes, tbf-shaped links, sshfs and GlusterFS), reads its `env` facts, and tears
//! it down on drop, also when a test fails.
//!
//! ```ignore
//! let tb = match Testbed::up(8, 2, Fs::Sshfs, "100mbit") { Ok(t) => t, Err(why) => return skip(&why) };
//! let out = tb.exec("n1", "ls", &[tb.sshfs_mount("n2").to_str().unwrap()]).output();
//! ```
//! Each test takes its own `id` (0..9) so testbeds of tests running at once do not meet.
#![allow(clippy::disallowed_macros)] // the tests print their skips with eprintln!, not user text

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which shared filesystems the testbed serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fs {
    Sshfs,
    Gluster,
    Both,
}

impl Fs {
    fn arg(self) -> &'static str {
        match self {
            Fs::Sshfs => "sshfs",
            Fs::Gluster => "gluster",
            Fs::Both => "both",
        }
    }
}

/// A running testbed; `down` runs when it is dropped.
pub struct Testbed {
    id: u8,
    env: BTreeMap<String, String>,
}

/// The script, in the repository (also what a user runs).
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testbed.sh")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

fn have(tool: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path.split(':').chain(["/usr/sbin", "/sbin"]).any(|d| Path::new(d).join(tool).is_file());
    found
}

/// Why this machine cannot run a testbed with `fs`, if it cannot.
pub fn unavailable(fs: Fs) -> Option<String> {
    if !is_root() {
        return Some("the testbed needs root (network namespaces, mounts)".into());
    }
    let mut tools = vec!["ip", "tc", "nsenter", "unshare", "ssh", "ssh-keygen", "sshd"];
    if fs != Fs::Gluster {
        tools.push("sshfs");
    }
    if fs == Fs::Gluster {
        tools.extend(["glusterd", "gluster", "mount.glusterfs"]);
    }
    if let Some(t) = tools.iter().find(|t| !have(t)) {
        return Some(format!(
            "{t} is not installed (apt-get install iproute2 util-linux openssh-server openssh-client sshfs fuse3 glusterfs-server glusterfs-client)"
        ));
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing (the mounts are FUSE)".into());
    }
    match Command::new("unshare").args(["--net", "true"]).status() {
        Ok(s) if s.success() => None,
        _ => Some("cannot make a network namespace here (unshare --net fails)".into()),
    }
}

/// `KEY='value'` lines as `env` prints them.
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

impl Testbed {
    /// Bring up testbed `id` with `nodes` client nodes, `fs`, links shaped to `rate` (`100mbit`).
    /// `Err` is a reason to skip (not root, a tool missing); a testbed that fails to come up on
    /// a machine that has everything panics with the script's output. A Gluster part that fails
    /// is not an error here: see [`Testbed::gluster_error`].
    pub fn up(id: u8, nodes: usize, fs: Fs, rate: &str) -> Result<Testbed, String> {
        Self::up_with(id, nodes, fs, rate, &[])
    }

    /// As [`Testbed::up`], with more options for the script (`["--sshfs-cache", "no"]`).
    pub fn up_with(id: u8, nodes: usize, fs: Fs, rate: &str, extra: &[&str]) -> Result<Testbed, String> {
        if let Some(why) = unavailable(fs) {
            return Err(why);
        }
        let (id_s, nodes_s) = (id.to_string(), nodes.to_string());
        let out = Command::new("bash")
            .arg(script())
            .args(["up", "--id", &id_s, "--nodes", &nodes_s, "--rate", rate, "--fs", fs.arg()])
            .args(extra)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        // Made before the checks below, so a failed `up` is still torn down.
        let mut tb = Testbed { id, env: BTreeMap::new() };
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Status 3: the Gluster part failed (its reason is in `env`), the rest is up.
        let gluster_failed = out.status.code() == Some(3);
        if !out.status.success() && !gluster_failed {
            panic!("testbed.sh up --id {id} failed ({}):\n{stderr}", out.status);
        }
        let env =
            Command::new("bash").arg(script()).args(["env", "--id", &id_s]).output().expect("testbed.sh env runs");
        assert!(env.status.success(), "testbed.sh env failed: {}", String::from_utf8_lossy(&env.stderr));
        tb.env = parse_env(&String::from_utf8_lossy(&env.stdout));
        match tb.gluster_error() {
            Some(why) if gluster_failed && fs == Fs::Gluster => Err(format!("GlusterFS did not start: {why}")),
            _ => Ok(tb),
        }
    }

    /// A fact from `testbed.sh env` (`TESTBED_RATE`, `NODE_n1_MGMT_ADDR`, ...).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    fn fact(&self, key: &str) -> &str {
        self.get(key).unwrap_or_else(|| panic!("testbed {} has no {key}: {:?}", self.id, self.env))
    }

    pub fn id(&self) -> u8 {
        self.id
    }

    /// `n1`, `n2`, ...
    pub fn nodes(&self) -> Vec<String> {
        self.fact("TESTBED_NODES").split_whitespace().map(String::from).collect()
    }

    /// `ssh -F` this file reaches every node by name, as root, in the node's network namespace.
    pub fn ssh_config(&self) -> PathBuf {
        self.fact("TESTBED_SSH_CONFIG").into()
    }

    /// `ssh -F ssh_config NODE`; add the remote command with `.arg(..)`.
    pub fn ssh(&self, node: &str) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(self.ssh_config()).arg(node);
        c
    }

    pub fn netns(&self, node: &str) -> String {
        self.fact(&format!("NODE_{node}_NETNS")).into()
    }

    /// The node's address on the management network (reachable from the root namespace).
    pub fn mgmt_addr(&self, node: &str) -> String {
        self.fact(&format!("NODE_{node}_MGMT_ADDR")).into()
    }

    /// Where `node` has the sshfs export mounted (a global path: every process sees it).
    pub fn sshfs_mount(&self, node: &str) -> PathBuf {
        self.fact(&format!("NODE_{node}_SSHFS_MOUNT")).into()
    }

    /// The sshfs server's exported directory, as the server itself sees it.
    pub fn sshfs_export(&self) -> PathBuf {
        self.fact("TESTBED_SSHFS_EXPORT").into()
    }

    /// Why the Gluster part is not usable, if it is not (a reason to skip).
    pub fn gluster_error(&self) -> Option<&str> {
        if self.get("TESTBED_GLUSTER_VOLUME").is_none() {
            return Some("this testbed was brought up without Gluster");
        }
        self.get("TESTBED_GLUSTER_ERROR")
    }

    /// Where `node` has the Gluster volume mounted.
    pub fn gluster_mount(&self, node: &str) -> PathBuf {
        self.fact(&format!("NODE_{node}_GLUSTER_MOUNT")).into()
    }

    /// The two bricks of the replica-2 volume (each holds every file).
    pub fn gluster_bricks(&self) -> Vec<PathBuf> {
        self.fact("TESTBED_GLUSTER_BRICKS").split_whitespace().map(PathBuf::from).collect()
    }

    /// The tbf rate of every client<->server link (`100mbit`).
    pub fn rate(&self) -> &str {
        self.fact("TESTBED_RATE")
    }

    /// `program args` in `node`'s network namespace (`nsenter --net`: the global mounts stay
    /// visible), ready to spawn or run.
    pub fn exec(&self, node: &str, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net=/var/run/netns/{}", self.netns(node))).arg(program).args(args);
        c
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let out = Command::new("bash").arg(script()).args(["down", "--id", &self.id.to_string()]).output();
        if let Ok(o) = out {
            if !o.status.success() {
                eprintln!("testbed.sh down --id {} failed: {}", self.id, String::from_utf8_lossy(&o.stderr));
            }
        }
    }
}

/// dd's own MB/s (10^6 bytes per second) from its last stderr line
/// (`33554432 bytes (34 MB, 32 MiB) copied, 2.84 s, 11.8 MB/s`), computed from the bytes and
/// seconds it printed rather than its rounded figure.
pub fn dd_mb_per_s(stderr: &str) -> Option<f64> {
    let line = stderr.lines().rev().find(|l| l.contains(" copied, "))?;
    let bytes: f64 = line.split_whitespace().next()?.parse().ok()?;
    let secs: f64 = line.split(" copied, ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    (secs > 0.0).then(|| bytes / secs / 1e6)
}

/// Start `dd if=/dev/zero of=FILE bs=1M count=MIB conv=fsync` in `node`'s namespace.
pub fn spawn_dd(tb: &Testbed, node: &str, file: &Path, mib: u32) -> std::process::Child {
    tb.exec(
        node,
        "dd",
        &["if=/dev/zero", &format!("of={}", file.display()), "bs=1M", &format!("count={mib}"), "conv=fsync"],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("dd starts")
}

/// Wait for a dd from [`spawn_dd`] and return its MB/s; panics with dd's words if it failed.
pub fn wait_dd(child: std::process::Child) -> f64 {
    let out = child.wait_with_output().expect("dd runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dd failed: {err}");
    dd_mb_per_s(&err).unwrap_or_else(|| panic!("no rate in dd's output: {err}"))
}
