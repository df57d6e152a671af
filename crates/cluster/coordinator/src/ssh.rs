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
            c.arg(format!("{} agent --stdio --allow {}", bin, sh_quote(&allow.to_string_lossy())));
            Some(c)
        }
        Addr::Tcp(_) | Addr::Join(_) => None,
    }
}

/// Where a copied binary goes on an ssh node: the remote user's cache directory, as the
/// remote shell expands it (`$XDG_CACHE_HOME`, else `~/.cache`).
pub fn remote_copy_path() -> String {
    format!("\"${{XDG_CACHE_HOME:-$HOME/.cache}}/iolab/iolab-{}\"", env!("CARGO_PKG_VERSION"))
}

/// Copy this very binary to an ssh node (same architecture only), streaming it through ssh's
/// stdin, to [`remote_copy_path`]. Returns that path.
pub async fn copy_self(dest: &str) -> std::io::Result<String> {
    let exe = std::env::current_exe()?;
    let bytes = tokio::fs::read(&exe).await?;
    let path = remote_copy_path();
    let arch = std::env::consts::ARCH;
    let dir = "\"${XDG_CACHE_HOME:-$HOME/.cache}/iolab\"";
    let part = format!("{}.part\"", path.trim_end_matches('"'));
    let script = format!(
        "a=$(uname -m); [ \"$a\" = {arch} ] || {{ echo \"the node is $a, this iolab is {arch}\" >&2; exit 3; }}; \
         mkdir -p {dir} && cat > {part} && chmod 755 {part} && mv {part} {path}"
    );
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
}
