//! The agent as a daemon (`iolab agent --listen`): TLS always, with a certificate made on
//! first start and kept in the state directory; every request carries a shared token. The
//! accept loop does each TLS handshake in its own task with a time limit, so a slow or
//! garbage client is refused and logged while others are served. The coordinator's side pins
//! the agent's certificate by its SHA-256 fingerprint (trust on first use, remembered in a
//! `known_agents` file).

use crate::agent::{log, AgentService};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
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

/// Compare two byte strings in time that depends on their lengths only.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serve the agent on `listener` until the process ends.
pub async fn serve(
    listener: TcpListener,
    service: AgentService,
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
    let svc = tonic::service::interceptor::InterceptedService::new(service.server(), check);
    tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .map_err(|e| TlsError::Serve(e.to_string()))
}

/// Pins an agent's certificate: the fingerprint remembered for its address, or (first use)
/// whatever it shows, noted for the caller to remember.
#[derive(Debug)]
pub struct CertPin {
    pub expect: Option<String>,
    /// The fingerprint the agent showed.
    pub seen: Mutex<Option<String>>,
    provider: Arc<CryptoProvider>,
}

impl CertPin {
    pub fn new(expect: Option<String>) -> CertPin {
        CertPin { expect, seen: Mutex::new(None), provider: provider() }
    }
}

impl ServerCertVerifier for CertPin {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let fp = fingerprint(end_entity);
        if let Ok(mut s) = self.seen.lock() {
            *s = Some(fp.clone());
        }
        match &self.expect {
            Some(want) if *want != fp => {
                Err(rustls::Error::General(format!("certificate {fp} is not the pinned {want}")))
            }
            _ => Ok(ServerCertVerified::assertion()),
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
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

/// A verifier that checks the agent's certificate against the CA certificates of a PEM file
/// (`--ca`), for the host name or address the agent was reached at.
pub fn ca_verifier(ca: &Path) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    let bytes = std::fs::read(ca).map_err(|source| TlsError::File { what: "reading", path: ca.into(), source })?;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut &bytes[..]).flatten() {
        roots.add(c)?;
    }
    if roots.is_empty() {
        return Err(TlsError::Missing { what: "CA certificate", path: ca.into() });
    }
    rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| TlsError::Make(format!("--ca {}: {e}", ca.display())))
}

/// A TLS connection to `addr` (HOST:PORT) with `verifier` checking the agent's certificate
/// for `name` (the pinning verifier ignores it).
pub async fn connect(
    addr: &str,
    name: &str,
    verifier: Arc<dyn ServerCertVerifier>,
) -> io::Result<tonic::transport::Channel> {
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let addr = addr.to_string();
    let name = ServerName::try_from(name.trim_start_matches('[').trim_end_matches(']').to_string())
        .map_err(|e| io::Error::other(format!("`{name}` as a TLS server name: {e}")))?;
    let svc = tower::service_fn(move |_uri: tonic::transport::Uri| {
        let (connector, addr, name) = (connector.clone(), addr.clone(), name.clone());
        async move {
            let tcp = TcpStream::connect(&addr).await?;
            let tls = connector.connect(name, tcp).await?;
            Ok::<_, io::Error>(hyper_util::rt::TokioIo::new(tls))
        }
    });
    tonic::transport::Endpoint::from_static("http://agent.tls")
        .connect_timeout(Duration::from_secs(10))
        .connect_with_connector(svc)
        .await
        .map_err(|e| {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(x) = src {
                s = format!("{s}: {x}");
                src = x.source();
            }
            io::Error::other(s)
        })
}

/// The `known_agents` file: one `ADDR FINGERPRINT` line per agent.
pub struct KnownAgents {
    pub path: PathBuf,
}

impl KnownAgents {
    pub fn get(&self, addr: &str) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        text.lines().filter_map(|l| l.split_once(' ')).find(|(a, _)| *a == addr).map(|(_, f)| f.trim().to_string())
    }
    pub fn add(&self, addr: &str, fp: &str) -> io::Result<()> {
        use std::io::Write;
        if let Some(d) = self.path.parent() {
            std::fs::create_dir_all(d)?;
        }
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        writeln!(f, "{addr} {fp}")
    }
}
