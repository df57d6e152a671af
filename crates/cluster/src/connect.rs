//! Reaching an agent: `exec://PATH` runs `PATH agent --stdio` here (tests, one machine);
//! `ssh://[user@]host` runs the system `ssh` (the user's keys, config, jump hosts apply) with
//! `iolab agent --stdio` there. Either way the gRPC connection runs over the child's
//! stdin/stdout and nothing listens.

use crate::stdio::Duplex;
use hyper_util::rt::TokioIo;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::process::{Child, Command};
use tonic::transport::{Channel, Endpoint};

/// How a node is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Addr {
    /// A local agent process (`exec://PATH`).
    Exec(PathBuf),
    /// `ssh://[user@]host`: the destination as ssh takes it.
    Ssh(String),
    /// `HOST:PORT`: an agent daemon (TLS).
    Tcp(String),
    /// `join:RANK`: an agent that joins the coordinator's `--listen` address
    /// (`iolab agent --join`), placed by a launcher that gave it this rank.
    Join(u32),
}

impl Addr {
    pub fn parse(s: &str) -> Result<Addr, String> {
        if let Some(p) = s.strip_prefix("exec://") {
            if p.is_empty() {
                return Err(format!("`{s}`: exec:// needs the path of an iolab binary"));
            }
            Ok(Addr::Exec(PathBuf::from(p)))
        } else if let Some(h) = s.strip_prefix("ssh://") {
            let h = h.trim_end_matches('/');
            if h.is_empty() || h.starts_with('-') || h.contains(char::is_whitespace) {
                return Err(format!("`{s}`: ssh:// needs a host, as ssh://[user@]host"));
            }
            Ok(Addr::Ssh(h.to_string()))
        } else if let Some(r) = s.strip_prefix("join:") {
            r.parse::<u32>()
                .map(Addr::Join)
                .map_err(|_| format!("`{s}`: join:RANK takes the agent's rank, a number from 0"))
        } else if let Some((host, port)) = s.rsplit_once(':') {
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(format!("`{s}`: not HOST:PORT (the port is a number up to 65535)"));
            }
            Ok(Addr::Tcp(s.to_string()))
        } else {
            Err(format!("`{s}`: an address is ssh://[user@]host, HOST:PORT, join:RANK or exec://PATH"))
        }
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Exec(p) => write!(f, "exec://{}", p.display()),
            Addr::Ssh(h) => write!(f, "ssh://{h}"),
            Addr::Tcp(a) => f.write_str(a),
            Addr::Join(r) => write!(f, "join:{r}"),
        }
    }
}

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

/// A gRPC channel over a child's stdin/stdout; the child dies with the channel's owner.
pub async fn over_child(mut cmd: Command) -> std::io::Result<(Channel, Child)> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    // Its own process group: a Ctrl-C at the terminal reaches the coordinator, which stops the
    // agents itself, and not the agents (or ssh) directly, which would die mid-run.
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let (Some(write), Some(read)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the agent's stdio was not piped"));
    };
    let io = Arc::new(Mutex::new(Some(Duplex { read, write, closed: None })));
    let connector = tower::service_fn(move |_uri: tonic::transport::Uri| {
        let io = io.lock().ok().and_then(|mut g| g.take());
        async move {
            io.map(TokioIo::new)
                .ok_or_else(|| std::io::Error::other("the agent's pipe is used up (it cannot reconnect)"))
        }
    });
    let channel = Endpoint::from_static("http://agent.stdio")
        .connect_with_connector(connector)
        .await
        .map_err(|e| std::io::Error::other(format!("HTTP/2 over the agent's stdio: {e}")))?;
    Ok((channel, child))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(Addr::parse("exec:///bin/iolab").unwrap(), Addr::Exec("/bin/iolab".into()));
        assert_eq!(Addr::parse("ssh://me@host").unwrap(), Addr::Ssh("me@host".into()));
        assert_eq!(Addr::parse("10.0.0.1:7000").unwrap(), Addr::Tcp("10.0.0.1:7000".into()));
        assert_eq!(Addr::parse("join:3").unwrap(), Addr::Join(3));
        assert_eq!(Addr::Join(3).to_string(), "join:3");
        assert!(Addr::parse("join:x").is_err() && Addr::parse("join:-1").is_err());
        for bad in ["ssh://", "ssh://-oProxyCommand=x", "host", "host:port", "exec://", ":80"] {
            assert!(Addr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(sh_quote("a'b"), "'a'\\''b'");
    }
}
