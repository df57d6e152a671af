//! The coordinator's half of reaching an agent daemon over TLS: its certificate pinned by its
//! SHA-256 fingerprint (trust on first use, remembered in a `known_agents` file, a changed one
//! refused), or checked against CA certificates given (`--ca`). The serving half is
//! [`crate::tls`].

use crate::provider;
use crate::tls::{fingerprint, TlsError};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;

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
            // Small messages (the clock's exchanges, Go, heartbeats) go at once: with Nagle's
            // algorithm one waits for a delayed ACK, 40 ms, which entered the clock offset.
            tcp.set_nodelay(true)?;
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
