//! The agent as a daemon (`iolab agent --listen`), its serving half: TLS always, with a
//! certificate made on first start and kept in the state directory (or one given); every
//! request carries a shared token. The accept loop does each TLS handshake in its own task
//! with a time limit, so a slow or garbage client is refused and logged while others are
//! served. The coordinator's half, which pins the certificate, is [`crate::pin`].

use crate::{log, provider, same};
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
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("{path}: no {what} in it")]
    Missing { what: &'static str, path: PathBuf },
}

/// `sha256:` and the hex digest of a certificate's DER bytes.
pub fn fingerprint(cert: &[u8]) -> String {
    let d = Sha256::digest(cert);
    format!("sha256:{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The agent's certificate and key: read from `dir`, or made and written there on first start.
pub fn load_or_make(dir: &Path) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    if !cert_path.exists() || !key_path.exists() {
        std::fs::create_dir_all(dir).map_err(|source| TlsError::File { what: "creating", path: dir.into(), source })?;
        let made = rcgen::generate_simple_self_signed(vec![CERT_NAME.to_string()])
            .map_err(|e| TlsError::Make(e.to_string()))?;
        let write = |path: &Path, text: String, mode: u32| {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|source| TlsError::File { what: "writing", path: path.into(), source })
        };
        write(&key_path, made.signing_key.serialize_pem(), 0o600)?;
        write(&cert_path, made.cert.pem(), 0o644)?;
    }
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::File { what: "reading", path: path.into(), source })
    };
    let cert = rustls_pemfile::certs(&mut &read(&cert_path)?[..])
        .next()
        .and_then(Result::ok)
        .ok_or(TlsError::Missing { what: "certificate", path: cert_path })?;
    let key = rustls_pemfile::private_key(&mut &read(&key_path)?[..])
        .ok()
        .flatten()
        .ok_or(TlsError::Missing { what: "private key", path: key_path })?;
    Ok((cert, key))
}

/// A TLS connection as the server sees it, with the peer's address for the log.
pub struct TlsConn {
    inner: tokio_rustls::server::TlsStream<TcpStream>,
    info: TcpConnectInfo,
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

/// Serve the agent's `server` on `listener` until the process ends.
pub async fn serve<A: Agent>(
    listener: TcpListener,
    server: AgentServer<A>,
    token: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    handshake: Duration,
) -> Result<(), TlsError> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<TlsConn, io::Error>>(16);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    log(&format!("accepting: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                let local = tcp.local_addr().ok();
                match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                    Ok(Ok(inner)) => {
                        let info = TcpConnectInfo { local_addr: local, remote_addr: Some(peer) };
                        let _ = tx.send(Ok(TlsConn { inner, info })).await;
                    }
                    Ok(Err(e)) => log(&format!("refused {peer}: TLS handshake: {e}")),
                    Err(_) => {
                        log(&format!("refused {peer}: TLS handshake: nothing within {} s", handshake.as_secs_f64()))
                    }
                }
            });
        }
    });
    let want = format!("Bearer {token}").into_bytes();
    let check = move |req: Request<()>| -> Result<Request<()>, Status> {
        let got = req.metadata().get("authorization").map(|v| v.as_bytes().to_vec()).unwrap_or_default();
        if same(&got, &want) {
            Ok(req)
        } else {
            let peer = req.remote_addr().map(|a: SocketAddr| a.to_string()).unwrap_or_else(|| "?".into());
            let what = if got.is_empty() { "no token" } else { "wrong token" };
            log(&format!("refused {peer}: {what}"));
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
