//! The agent as a daemon (`iolab agent --listen`), its serving half: TLS always, with a
//! certificate made on first start and kept in the state directory (or one given); every
//! request carries a shared token. The accept loop does each TLS handshake in its own task
//! with a time limit, which covers the first request's token too ([`crate::gate`]: a client
//! that says nothing, or never the token, is closed; those waiting are bounded), so a slow,
//! silent or garbage client is refused and logged while others are served. The coordinator's
//! half, which pins the certificate, is [`crate::pin`].

use crate::gate::{Gate, Guarded};
use crate::{provider, same};
use iolab_cluster_protocol::proto::agent_server::{Agent, AgentServer};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::{Connected, TcpConnectInfo};
use tonic::{Request, Status};

/// The name the agent's certificate is made for (its identity is the pinned fingerprint).
pub const CERT_NAME: &str = "iolab-agent";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{what} {path}: {source}")]
    File { what: &'static str, path: PathBuf, source: io::Error },
    #[error("making the agent's certificate: {0}")]
    Make(String),
    #[error("serving: {0}")]
    Serve(String),
    /// (Not the error's source: its text is said once.)
    #[error("TLS setup: {0}")]
    Rustls(rustls::Error),
    #[error("{dir}/cert.pem and {dir}/key.pem are not one pair (left by two agents that made them at once?): remove both and the agent makes a new pair at its next start (coordinators that pinned the old certificate then refuse it: remove its line from their known_agents)", dir = dir.display())]
    Mismatch { dir: PathBuf },
    #[error("{path}: no {what} in it")]
    Missing { what: &'static str, path: PathBuf },
}

impl From<rustls::Error> for TlsError {
    fn from(e: rustls::Error) -> TlsError {
        TlsError::Rustls(e)
    }
}

/// `sha256:` and the hex digest of a certificate's DER bytes.
pub fn fingerprint(cert: &[u8]) -> String {
    let d = Sha256::digest(cert);
    format!("sha256:{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The agent's certificate and key: read from `dir`, or made and written there on first start.
///
/// Several agents may share one state directory and start at the same instant (`srun
/// --ntasks-per-node=2`, a home directory shared over NFS): the pair is made and read under an
/// exclusive lock on `dir/.tls.lock`, each file written whole under a name of its own and
/// renamed into place, so every agent reads one finished pair, the first one made.
pub fn load_or_make(dir: &Path) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    use rustix::fs::{flock, FlockOperation};
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::create_dir_all(dir).map_err(|source| TlsError::File { what: "creating", path: dir.into(), source })?;
    let lock_path = dir.join(".tls.lock");
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| TlsError::File { what: "opening", path: lock_path.clone(), source })?;
    flock(&lock, FlockOperation::LockExclusive).map_err(|e| TlsError::File {
        what: "locking",
        path: lock_path,
        source: e.into(),
    })?;
    if !cert_path.exists() || !key_path.exists() {
        let made = rcgen::generate_simple_self_signed(vec![CERT_NAME.to_string()])
            .map_err(|e| TlsError::Make(e.to_string()))?;
        // The key first: a cert.pem is never there without its key.
        write_whole(&key_path, made.signing_key.serialize_pem().as_bytes(), 0o600)?;
        write_whole(&cert_path, made.cert.pem().as_bytes(), 0o644)?;
    }
    let (cert, key) = load(&cert_path, &key_path)?;
    drop(lock);
    // A pair that does not belong together (an older iolab's race) is said as such.
    if let Err(rustls::Error::InconsistentKeys(_)) =
        rustls::sign::CertifiedKey::from_der(vec![cert.clone()], key.clone_key(), &provider())
    {
        return Err(TlsError::Mismatch { dir: dir.into() });
    }
    Ok((cert, key))
}

/// Write `bytes` to `path` whole or not at all: a file of this process's own beside it,
/// flushed, then renamed over `path`.
fn write_whole(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if let Err(source) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(TlsError::File { what: "writing", path: path.into(), source });
    }
    Ok(())
}

/// A TLS connection as the server sees it, with the peer's address for the log, guarded at
/// the door ([`crate::gate`]): closed when it has not proved the token in time.
pub struct TlsConn {
    inner: tokio_rustls::server::TlsStream<Guarded<TcpStream>>,
    info: TcpConnectInfo,
    gate: Arc<Gate>,
}

impl Drop for TlsConn {
    fn drop(&mut self) {
        if let Some(peer) = self.info.remote_addr {
            self.gate.gone(&peer);
        }
    }
}

impl Connected for TlsConn {
    type ConnectInfo = TcpConnectInfo;
    fn connect_info(&self) -> TcpConnectInfo {
        self.info.clone()
    }
}

impl AsyncRead for TlsConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serve the agent's `server` on `listener` until the process ends. Each connection has
/// `handshake` to finish its TLS handshake and send a request with the token, or it is closed;
/// the connections still to prove it are bounded by the descriptors the process may open
/// ([`Gate`]); what is turned away is logged once a second.
pub async fn serve<A: Agent>(
    listener: TcpListener,
    server: AgentServer<A>,
    token: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    handshake: Duration,
) -> Result<(), TlsError> {
    serve_gated(listener, server, token, cert, key, handshake, Arc::new(Gate::for_this_process())).await
}

/// [`serve`] with a door of the caller's.
pub async fn serve_gated<A: Agent>(
    listener: TcpListener,
    server: AgentServer<A>,
    token: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    handshake: Duration,
    gate: Arc<Gate>,
) -> Result<(), TlsError> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<TlsConn, io::Error>>(16);
    let flusher = gate.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            flusher.flood.flush();
        }
    });
    let limit = handshake.as_secs_f64();
    let door = gate.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    door.flood.say("accept", &format!("accepting: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let standing = door.admit(peer);
            let (acceptor, tx, gate) = (acceptor.clone(), tx.clone(), door.clone());
            // The limit covers the handshake and the token: past it, an unproven connection
            // is closed, whatever stage it is at.
            let deadline = tokio::time::Instant::now() + handshake;
            tokio::spawn(async move {
                let local = tcp.local_addr().ok();
                let guarded = Guarded { inner: tcp, standing: standing.clone() };
                match tokio::time::timeout_at(deadline, acceptor.accept(guarded)).await {
                    Ok(Ok(inner)) => {
                        let info = TcpConnectInfo { local_addr: local, remote_addr: Some(peer) };
                        let _ = tx.send(Ok(TlsConn { inner, info, gate: gate.clone() })).await;
                        tokio::time::sleep_until(deadline).await;
                        if standing.close_unproven() {
                            gate.flood.say(
                                "unproven",
                                &format!("closed {peer}: no request with the token within {limit} s of connecting"),
                            );
                        }
                    }
                    // Closed at the door (evicted: said there).
                    Ok(Err(_)) if standing.is_closed() => gate.gone(&peer),
                    Ok(Err(e)) => {
                        gate.gone(&peer);
                        gate.flood.say("tls", &format!("refused {peer}: TLS handshake: {e}"));
                    }
                    Err(_) => {
                        gate.gone(&peer);
                        gate.flood.say("tls-time", &format!("refused {peer}: TLS handshake: nothing within {limit} s"));
                    }
                }
            });
        }
    });
    let want = format!("Bearer {token}").into_bytes();
    let check = move |req: Request<()>| -> Result<Request<()>, Status> {
        let got = req.metadata().get("authorization").map(|v| v.as_bytes().to_vec()).unwrap_or_default();
        let peer = req.remote_addr();
        if same(&got, &want) {
            if let Some(s) = peer.and_then(|p| gate.standing(&p)) {
                s.prove();
            }
            Ok(req)
        } else {
            let shown = peer.map(|a: SocketAddr| a.to_string()).unwrap_or_else(|| "?".into());
            let what = if got.is_empty() { "no token" } else { "wrong token" };
            gate.flood.say("token", &format!("refused {shown}: {what}"));
            Err(Status::unauthenticated(format!("{what}: the agent wants the token of its --token-file")))
        }
    };
    let svc = tonic::service::interceptor::InterceptedService::new(server, check);
    tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .map_err(|e| TlsError::Serve(e.to_string()))
}

/// A certificate and key from PEM files (`iolab agent --cert --key`, one signed by your CA).
pub fn load(cert: &Path, key: &Path) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::File { what: "reading", path: path.into(), source })
    };
    let c = rustls_pemfile::certs(&mut &read(cert)?[..])
        .next()
        .and_then(Result::ok)
        .ok_or(TlsError::Missing { what: "certificate", path: cert.into() })?;
    let k = rustls_pemfile::private_key(&mut &read(key)?[..])
        .ok()
        .flatten()
        .ok_or(TlsError::Missing { what: "private key", path: key.into() })?;
    Ok((c, k))
}
