//! The nodes as the user names them: `NAME=ADDR[,dir=PATH]` on the command line or `[[node]]`
//! tables in a nodes file ([`NodeSpec`]), how each is reached ([`Addr`]: a local child, ssh,
//! an agent daemon, an agent that joins), and a plan as a node runs it (relative targets joined
//! to its `dir=`). Checked as parsed: a bad name or address is refused with what is accepted.

use crate::error::ClusterError;
use iolab_spec::Plan;
use std::path::{Path, PathBuf};

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

/// One node as the user named it: `NAME=ADDR[,dir=PATH]`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(deserialize_with = "de_addr")]
    pub addr: Addr,
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

fn de_addr<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Addr, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    Addr::parse(&s).map_err(serde::de::Error::custom)
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n != "*" && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl NodeSpec {
    /// Parse `NAME=ADDR[,dir=PATH]`.
    pub fn parse(s: &str) -> Result<NodeSpec, ClusterError> {
        let err = |m: &str| ClusterError::NodeArg(s.into(), m.into());
        let (name, rest) = s.split_once('=').ok_or_else(|| err("expected NAME=ADDR[,dir=PATH]"))?;
        if !valid_name(name) {
            return Err(err("a node's name is letters, digits, `-`, `_` and `.`"));
        }
        let (addr, opts) = match rest.split_once(",dir=") {
            Some((a, d)) => (a, Some(d)),
            None => (rest, None),
        };
        let addr = Addr::parse(addr).map_err(|m| err(&m))?;
        let dir = match opts {
            Some("") => return Err(err("dir= needs a path")),
            Some(d) => Some(PathBuf::from(d)),
            None => None,
        };
        Ok(NodeSpec { name: name.into(), addr, dir })
    }

    /// Parse a nodes file: `[[node]]` tables with `name`, `addr` and optionally `dir`.
    pub fn parse_file(path: &Path, text: &str) -> Result<Vec<NodeSpec>, ClusterError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            node: Vec<NodeSpec>,
        }
        let f: File =
            toml::from_str(text).map_err(|e| ClusterError::NodesFile { path: path.into(), msg: e.to_string() })?;
        for n in &f.node {
            if !valid_name(&n.name) {
                let msg = format!("node name `{}`: letters, digits, `-`, `_` and `.` only", n.name);
                return Err(ClusterError::NodesFile { path: path.into(), msg });
            }
        }
        Ok(f.node)
    }

    /// The plan as this node runs it: relative targets joined to its `dir`.
    pub fn localize(&self, plan: &Plan) -> Plan {
        let mut p = plan.clone();
        for j in p.phases.iter_mut().flat_map(|ph| ph.jobs.iter_mut()) {
            j.target = self.localize_path(&j.target);
            // Validated files are named by their path below the node's dir, so a file every
            // node sees (a share mounted at another path on each) has one id on all of them.
            if let (Some(v), Some(dir)) = (j.verify.as_mut(), &self.dir) {
                v.id_root = Some(dir.clone());
            }
        }
        p
    }

    /// An error about this node, naming it and its address.
    pub(crate) fn err(&self, msg: String) -> ClusterError {
        ClusterError::Node { node: self.name.clone(), addr: self.addr.to_string(), msg }
    }

    /// A path as this node reaches it: a relative one joined to its `dir`.
    pub fn localize_path(&self, path: &Path) -> PathBuf {
        match &self.dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_arguments_and_nodes_files() {
        let n = NodeSpec::parse("a=ssh://me@h1,dir=/mnt/x").unwrap();
        assert_eq!(
            (n.name.as_str(), &n.addr, n.dir.as_deref()),
            ("a", &Addr::Ssh("me@h1".into()), Some(Path::new("/mnt/x")))
        );
        assert_eq!(NodeSpec::parse("b=h2:7878").unwrap().addr, Addr::Tcp("h2:7878".into()));
        for bad in ["a", "=h:1", "*=h:1", "a b=h:1", "a=h", "a=h:1,dir=", "a=ftp://x"] {
            assert!(NodeSpec::parse(bad).is_err(), "{bad}");
        }
        let text =
            "[[node]]\nname = \"a\"\naddr = \"ssh://h1\"\ndir = \"/m\"\n[[node]]\nname = \"b\"\naddr = \"h2:1\"\n";
        let f = NodeSpec::parse_file(Path::new("n.toml"), text).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].dir, None);
        let err =
            NodeSpec::parse_file(Path::new("n.toml"), "[[node]]\nname = \"a\"\naddr = \"nowhere\"\n").unwrap_err();
        assert!(err.to_string().contains("n.toml") && err.to_string().contains("nowhere"), "{err}");
        assert!(NodeSpec::parse_file(Path::new("n.toml"), "[[node]]\nname = \"a\"\naddr = \"h:1\"\nuser = \"x\"\n")
            .is_err());
    }

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
    }

    #[test]
    fn relative_targets_go_under_the_nodes_dir() {
        let job = |t: &str| {
            iolab_spec::JobPatch { target: Some(t.into()), size: Some(iolab_spec::Bytes::mib(1)), ..Default::default() }
                .resolve("j")
                .unwrap()
        };
        let plan = Plan { phases: vec![iolab_spec::Phase { name: "p".into(), jobs: vec![job("f"), job("/abs/g")] }] };
        let n = NodeSpec::parse("a=exec:///bin/iolab,dir=/mnt/a").unwrap();
        let p = n.localize(&plan);
        assert_eq!(p.phases[0].jobs[0].target, Path::new("/mnt/a/f"));
        assert_eq!(p.phases[0].jobs[1].target, Path::new("/abs/g"));
        // A validated job's file ids are taken below the node's dir.
        let mut v = plan.clone();
        v.phases[0].jobs[0] = iolab_spec::JobPatch {
            target: Some("f".into()),
            rw: Some(iolab_spec::Rw::Write),
            size: Some(iolab_spec::Bytes::mib(1)),
            verify: Some(true),
            ..Default::default()
        }
        .resolve("j")
        .unwrap();
        let p = n.localize(&v);
        assert_eq!(p.phases[0].jobs[0].verify.as_ref().unwrap().id_root.as_deref(), Some(Path::new("/mnt/a")));
        assert_eq!(p.phases[0].jobs[1].verify, None);
    }
}
