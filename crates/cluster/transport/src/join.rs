//! Agents placed by a launcher (Slurm `srun`, `mpirun`, a Kubernetes Indexed Job) connect out
//! to the coordinator instead of being reached by it: `iolab agent --join ADDR` takes its rank
//! from the launcher's variable and dials the coordinator's `--listen` address ([`join`], the
//! agent's half); the coordinator accepts them ([`Rendezvous`], its half). The connection is
//! TLS (the coordinator's certificate is made for the run and not checked) and then runs the
//! same gRPC service as every other transport, the coordinator as the client.
//!
//! Both sides hold the shared token, and each proves it over this very connection: a value
//! derived from the token and the TLS connection's exported keying material (RFC 5705),
//! HMAC-SHA256(token, role || material). The coordinator's requests carry its value; the
//! agent serves nothing else. The agent's value comes back in the handshake; a joiner
//! without it is turned away before it is sent anything. The token itself never travels, and
//! a man in the middle, holding two TLS connections with two different materials, can answer
//! neither side.

use crate::stdio::{one_shot, serve_one};
use crate::{log, provider, same};
use iolab_cluster_protocol::proto::agent_server::{Agent, AgentServer};
use iolab_cluster_protocol::proto::HelloReply;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tonic::service::Routes;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// The label of the keying material both sides derive their proofs from.
const LABEL: &[u8] = b"EXPERIMENTAL-iolab-join-v1";
/// The name the coordinator's certificate is made for (nothing checks it).
const COORDINATOR_NAME: &str = "iolab-coordinator";

/// The launchers' rank variables, in the order they are read.
pub const RANK_VARS: [&str; 4] = ["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "JOB_COMPLETION_INDEX"];

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("no rank: pass --rank N, or start the agent under a launcher that sets one of {}", RANK_VARS.join(", "))]
    NoRank,
    #[error("{var}={value} is not a rank (a number from 0)")]
    BadRank { var: &'static str, value: String },
    #[error("reaching the coordinator at {addr}: {source} (is `iolab run|scenario --listen {addr}` running?)")]
    Connect { addr: String, source: io::Error },
    #[error("TLS with the coordinator at {addr}: {source}")]
    Tls { addr: String, source: io::Error },
    /// (Not the error's source: its text is said once.)
    #[error("TLS setup: {0}")]
    Rustls(rustls::Error),
    #[error("serving the coordinator: {0}")]
    Serve(String),
}

impl From<rustls::Error> for JoinError {
    fn from(e: rustls::Error) -> JoinError {
        JoinError::Rustls(e)
    }
}

/// The rank a launcher gave this process: the first of [`RANK_VARS`] that is set.
pub fn rank_from(get: impl Fn(&str) -> Option<String>) -> Result<(u32, &'static str), JoinError> {
    for var in RANK_VARS {
        if let Some(value) = get(var).filter(|v| !v.trim().is_empty()) {
            let rank = value.trim().parse::<u32>().map_err(|_| JoinError::BadRank { var, value: value.clone() })?;
            return Ok((rank, var));
        }
    }
    Err(JoinError::NoRank)
}

fn key(token: &str) -> ring::hmac::Key {
    ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token.as_bytes())
}

fn message(role: &[u8], material: &[u8]) -> Vec<u8> {
    [role, b"\0", material].concat()
}

/// The value the holder of `token` in `role` ("agent", "coordinator") shows on a connection
/// whose exported keying material is `material`.
pub fn proof(token: &str, role: &str, material: &[u8]) -> Vec<u8> {
    ring::hmac::sign(&key(token), &message(role.as_bytes(), material)).as_ref().to_vec()
}

/// Whether `shown` is the value of `role` on this connection (in constant time).
pub fn proves(token: &str, role: &str, material: &[u8], shown: &[u8]) -> bool {
    ring::hmac::verify(&key(token), &message(role.as_bytes(), material), shown).is_ok()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The `authorization` header the coordinator sends on a joined connection.
pub fn coordinator_header(token: &str, material: &[u8]) -> String {
    format!("Bearer {}", hex(&proof(token, "coordinator", material)))
}

/// The agent's side: dial the coordinator at `addr` (retrying until `patience` runs out, as
/// the launcher may start agents before it), then serve it over that one connection until it
/// closes. `serve` makes the agent's server from its proof of the token on this connection
/// (the handshake answers with it).
pub async fn join<A: Agent>(
    addr: &str,
    token: &str,
    rank: u32,
    patience: Duration,
    serve: impl FnOnce(Vec<u8>) -> AgentServer<A>,
) -> Result<(), JoinError> {
    let deadline = tokio::time::Instant::now() + patience;
    let tcp = loop {
        match TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(e) if tokio::time::Instant::now() + Duration::from_millis(500) < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(source) => return Err(JoinError::Connect { addr: addr.into(), source }),
        }
    };
    let _ = tcp.set_nodelay(true);
    // Any certificate: the proofs, bound to this connection, are what authenticate.
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(crate::pin::CertPin::new(None)))
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let name = ServerName::try_from(COORDINATOR_NAME).map_err(|e| JoinError::Serve(e.to_string()))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
        .map_err(|source| JoinError::Tls { addr: addr.into(), source })?;
    let material = tls
        .get_ref()
        .1
        .export_keying_material([0u8; 32], LABEL, None)
        .map_err(|e| JoinError::Tls { addr: addr.into(), source: io::Error::other(e) })?;
    let want = coordinator_header(token, &material).into_bytes();
    let server = serve(proof(token, "agent", &material));
    log(&format!("connected to the coordinator at {addr} as rank {rank}"));
    let check = move |req: Request<()>| -> Result<Request<()>, Status> {
        let got = req.metadata().get("authorization").map(|v| v.as_bytes().to_vec()).unwrap_or_default();
        if same(&got, &want) {
            Ok(req)
        } else {
            log("refused a request without the coordinator's proof of the token");
            Err(Status::unauthenticated("not the coordinator's proof of the token"))
        }
    };
    serve_one(tls, Routes::new(tonic::service::interceptor::InterceptedService::new(server, check)))
        .await
        .map_err(|e| JoinError::Serve(e.to_string()))
}

/// One agent that joined, as the coordinator accepted it.
pub struct Joiner {
    pub channel: Channel,
    /// The `authorization` header the coordinator's requests carry on this connection.
    pub header: String,
    /// The connection's exported keying material, to check the agent's proof against.
    pub material: [u8; 32],
    pub peer: String,
}

/// The coordinator's side: a TLS listener with a certificate made for this run.
pub struct Rendezvous {
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    token: String,
}

impl Rendezvous {
    pub async fn bind(addr: &str, token: &str) -> io::Result<Rendezvous> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let made = rcgen::generate_simple_self_signed(vec![COORDINATOR_NAME.to_string()]).map_err(io::Error::other)?;
        let cert = CertificateDer::from(made.cert.der().to_vec());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(io::Error::other)?;
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Rendezvous { listener, acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(cfg)), token: token.to_string() })
    }

    pub fn local_addr(&self) -> String {
        self.listener.local_addr().map(|a| a.to_string()).unwrap_or_default()
    }

    /// The next connection, through TLS (each handshake within `handshake`; a failed one is
    /// said and the next connection taken).
    pub async fn next(&self, handshake: Duration) -> io::Result<Joiner> {
        loop {
            let (tcp, peer) = self.listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let tls = match tokio::time::timeout(handshake, self.acceptor.accept(tcp)).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    crate::say(&format!("iolab: refused a joiner at {peer}: TLS handshake: {e}"));
                    continue;
                }
                Err(_) => {
                    crate::say(&format!(
                        "iolab: refused a joiner at {peer}: no TLS handshake within {} s",
                        handshake.as_secs()
                    ));
                    continue;
                }
            };
            let Ok(material) = tls.get_ref().1.export_keying_material([0u8; 32], LABEL, None) else {
                continue;
            };
            let channel = match one_shot(tls, "http://agent.join", "a joined agent cannot reconnect").await {
                Ok(c) => c,
                Err(e) => {
                    crate::say(&format!("iolab: refused a joiner at {peer}: HTTP/2: {e}"));
                    continue;
                }
            };
            let header = coordinator_header(&self.token, &material);
            return Ok(Joiner { channel, header, material, peer: peer.to_string() });
        }
    }

    /// Whether a handshake's reply proves the agent holds the token on this connection.
    pub fn proven(&self, j: &Joiner, hello: &HelloReply) -> bool {
        !hello.join_proof.is_empty() && proves(&self.token, "agent", &j.material, &hello.join_proof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_the_launchers_variables_in_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(rank_from(env(&[("SLURM_PROCID", "3")])).unwrap(), (3, "SLURM_PROCID"));
        assert_eq!(rank_from(env(&[("PMI_RANK", "1"), ("OMPI_COMM_WORLD_RANK", "2")])).unwrap().0, 2);
        assert_eq!(rank_from(env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap(), (0, "JOB_COMPLETION_INDEX"));
        assert!(matches!(rank_from(env(&[])), Err(JoinError::NoRank)));
        assert!(matches!(rank_from(env(&[("SLURM_PROCID", "-1")])), Err(JoinError::BadRank { .. })));
    }

    #[test]
    fn proofs_depend_on_the_token_the_role_and_the_connection() {
        let m = [7u8; 32];
        let p = proof("tok", "agent", &m);
        assert!(proves("tok", "agent", &m, &p));
        assert!(!proves("other", "agent", &m, &p));
        assert!(!proves("tok", "coordinator", &m, &p));
        assert!(!proves("tok", "agent", &[8u8; 32], &p));
        assert_ne!(coordinator_header("tok", &m), format!("Bearer {}", hex(&p)));
    }
}
