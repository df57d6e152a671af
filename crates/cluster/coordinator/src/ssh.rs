//! Starting an agent as a child: `exec://PATH` runs `PATH agent --stdio` here (tests, one
//! machine); `ssh://[user@]host` runs the system `ssh` (the user's keys, config, jump hosts
//! apply) with `iolab agent --stdio` there, and brings this very binary to a node that has
//! no iolab or another version. The connection then runs over the child's stdin/stdout
//! (`iolab_cluster_transport::stdio`) and nothing listens.

use crate::nodes::Addr;
use std::path::Path;
use std::process::Stdio;
use tokio::process::Command;

/// Quote a word for the remote POSIX shell ssh hands its command to.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The command that starts an agent for `addr`, allowed under `allow`; over ssh, the remote
/// binary is `remote_bin`, else `IOLAB_REMOTE_BIN`, else `iolab`.
pub fn agent_command(addr: &Addr, allow: &Path, remote_bin: Option<&str>) -> Option<Command> {
    match addr {
        Addr::Exec(bin) => {
            let mut c = Command::new(bin);
            c.arg("agent").arg("--stdio").arg("--allow").arg(allow);
            Some(c)
        }
        Addr::Ssh(dest) => {
            let mut c = Command::new("ssh");
            if let Some(cfg) = std::env::var_os("IOLAB_SSH_CONFIG") {
                c.arg("-F").arg(cfg);
            }
            c.args(["-o", "BatchMode=yes", "-T", "--"]).arg(dest);
            let bin = remote_bin
                .map(str::to_string)
                .unwrap_or_else(|| std::env::var("IOLAB_REMOTE_BIN").unwrap_or_else(|_| "iolab".into()));
            c.arg(remote_agent(&bin, allow));
            Some(c)
        }
        Addr::Tcp(_) | Addr::Join(_) => None,
    }
}

/// The remote shell's command that starts the agent: a binary that is not there is an expected
/// miss, told by exit 127 alone (no "command not found" from the shell), which the coordinator
/// reads as the cue to bring its own.
fn remote_agent(bin: &str, allow: &Path) -> String {
    format!(
        "command -v {bin} >/dev/null 2>&1 || exit 127; exec {bin} agent --stdio --allow {}",
        sh_quote(&allow.to_string_lossy())
    )
}

/// Where a copied binary goes on an ssh node: the remote user's cache directory, as the
/// remote shell expands it (`$XDG_CACHE_HOME`, else `~/.cache`).
pub fn remote_copy_path() -> String {
    format!("\"${{XDG_CACHE_HOME:-$HOME/.cache}}/iolab/iolab-{}\"", env!("CARGO_PKG_VERSION"))
}

/// The remote shell's script that receives the binary on its stdin: the architecture checked,
/// the bytes written to a name of this copy's own (the host and the shell's PID: nodes sharing
/// a home directory copy at once), made executable and renamed into place, which is atomic, so
/// an agent started meanwhile finds the old binary or the new one whole, never half of it.
fn copy_script(arch: &str, version: &str) -> String {
    format!(
        "a=$(uname -m); [ \"$a\" = {arch} ] || {{ echo \"the node is $a, this iolab is {arch}\" >&2; exit 3; }}; \
         d=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/iolab\"; p=\"$d/.iolab-{version}.$(uname -n).$$.part\"; \
         mkdir -p \"$d\" && cat > \"$p\" && chmod 755 \"$p\" && mv -f \"$p\" \"$d/iolab-{version}\" || {{ rm -f \"$p\"; exit 1; }}"
    )
}

/// Copy this very binary to an ssh node (same architecture only), streaming it through ssh's
/// stdin, to [`remote_copy_path`]. Returns that path.
pub async fn copy_self(dest: &str) -> std::io::Result<String> {
    let exe = std::env::current_exe()?;
    let bytes = tokio::fs::read(&exe).await?;
    let path = remote_copy_path();
    let arch = std::env::consts::ARCH;
    let script = copy_script(arch, env!("CARGO_PKG_VERSION"));
    let mut c = Command::new("ssh");
    if let Some(cfg) = std::env::var_os("IOLAB_SSH_CONFIG") {
        c.arg("-F").arg(cfg);
    }
    c.args(["-o", "BatchMode=yes", "-T", "--"]).arg(dest).arg(script);
    c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::inherit()).kill_on_drop(true);
    let mut child = c.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        stdin.write_all(&bytes).await?;
        stdin.shutdown().await?;
    }
    let status = child.wait().await?;
    if !status.success() {
        return Err(std::io::Error::other(format!("copying iolab to {dest}:{path} failed ({status})")));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_for_the_remote_shell_is_quoted() {
        assert_eq!(sh_quote("a'b"), "'a'\\''b'");
    }

    /// The shell scripts, run by a real `sh`: a missing binary is exit 127 and nothing said; a
    /// copy lands whole under its name, its part file gone.
    #[test]
    fn the_remote_scripts_miss_quietly_and_copy_whole() {
        let d = tempfile::tempdir().unwrap();
        let sh = |script: &str, input: &[u8]| {
            use std::io::Write;
            let mut c = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .env("XDG_CACHE_HOME", d.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(input).unwrap();
            c.wait_with_output().unwrap()
        };
        let out = sh(&remote_agent("/nowhere/iolab", Path::new("/data")), b"");
        assert_eq!(out.status.code(), Some(127));
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = sh(&copy_script(std::env::consts::ARCH, "9.9"), b"#!/bin/sh\necho hi\n");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let dir = d.path().join("iolab");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["iolab-9.9"], "no part file left");
        let out = sh(&remote_agent(&dir.join("iolab-9.9").display().to_string(), Path::new("/data")), b"");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
        let out = sh(&copy_script("no-such-arch", "9.9"), b"x");
        assert_eq!(out.status.code(), Some(3));
    }
}
