//! TLS to a PostgreSQL server with rustls (ring; no OpenSSL), taking libpq's `sslmode` and
//! `sslrootcert` from the URL with libpq's meanings: `disable` (plain), `prefer` (the default:
//! TLS when the server offers it, its certificate not checked), `require` (TLS or nothing; with
//! `sslrootcert` the certificate is checked as by `verify-ca`), `verify-ca` (the certificate
//! chains to `sslrootcert`), `verify-full` (and names the host). `sslrootcert=system` is the
//! system's CA certificates; without `sslrootcert`, `verify-*` use `~/.postgresql/root.crt` as
//! libpq does. Client certificates (`sslcert`, `sslkey`) are refused by name.

use crate::target::percent_decode;
use postgres::config::SslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Where the CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    File(PathBuf),
    System,
}

/// The URL without the parameters iolab handles itself, and how to make the TLS connection.
#[derive(Debug)]
pub(crate) struct Tls {
    url: String,
    mode: Mode,
    roots: Option<Roots>,
}

impl Tls {
    /// Take `sslmode` and `sslrootcert` out of the URL's parameters.
    pub fn from_url(raw: &str) -> Result<Tls, String> {
        // The parameters follow the first `?` after the credentials (which end at the first `@`).
        let from = raw.find('@').map(|i| i + 1).unwrap_or(0);
        let (head, query) = match raw[from..].find('?') {
            Some(i) => (&raw[..from + i], &raw[from + i + 1..]),
            None => (raw, ""),
        };
        let mut kept = Vec::new();
        let mut mode = None;
        let mut roots = None;
        for part in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            match percent_decode(k).as_str() {
                "sslmode" => {
                    mode = Some(match percent_decode(v).as_str() {
                        "disable" => Mode::Disable,
                        "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-ca" => Mode::VerifyCa,
                        "verify-full" => Mode::VerifyFull,
                        other => {
                            return Err(format!(
                                "sslmode={other}: iolab takes disable, prefer (the default), require, verify-ca or verify-full"
                            ))
                        }
                    })
                }
                "sslrootcert" => {
                    let v = percent_decode(v);
                    roots = Some(if v == "system" { Roots::System } else { Roots::File(v.into()) });
                }
                k @ ("sslcert" | "sslkey" | "sslpassword" | "sslcrl") => {
                    return Err(format!(
                        "{k}: iolab does not log in with client certificates; use a password (in the URL, IOLAB_DB or PGPASSWORD)"
                    ))
                }
                _ => kept.push(part),
            }
        }
        // libpq: `require` with a root certificate named checks it as `verify-ca` does.
        let mode = match (mode.unwrap_or(Mode::Prefer), &roots) {
            (Mode::Require, Some(_)) => Mode::VerifyCa,
            (m, _) => m,
        };
        let url = if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) };
        Ok(Tls { url, mode, roots })
    }

    /// The URL for tokio-postgres.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        }
    }

    pub fn connect(&self, config: &postgres::Config) -> Result<postgres::Client, String> {
        if self.mode == Mode::Disable {
            return config.connect(postgres::NoTls).map_err(|e| super::pg_error::text(&e));
        }
        let provider = Arc::new(ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let client = match self.mode {
            Mode::Prefer | Mode::Require => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
            Mode::VerifyCa | Mode::VerifyFull => {
                let roots = Arc::new(self.roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| format!("the CA certificates: {e}"))?;
                let verifier: Arc<dyn ServerCertVerifier> =
                    if self.mode == Mode::VerifyCa { Arc::new(AnyName(webpki)) } else { webpki };
                builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth()
            }
            Mode::Disable => return Err("TLS is off (sslmode=disable)".into()),
        };
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(client);
        config.connect(tls).map_err(|e| super::pg_error::text(&e))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let mut store = RootCertStore::empty();
        let file = match &self.roots {
            Some(Roots::System) => {
                let found = rustls_native_certs::load_native_certs();
                if found.certs.is_empty() {
                    return Err("sslrootcert=system: no CA certificates found on this system".into());
                }
                let (added, _) = store.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err("sslrootcert=system: none of the system's CA certificates could be read".into());
                }
                return Ok(store);
            }
            Some(Roots::File(p)) => p.clone(),
            None => match std::env::var_os("HOME") {
                Some(h) => PathBuf::from(h).join(".postgresql/root.crt"),
                None => return Err("verify-ca and verify-full need sslrootcert=FILE (the server's CA, PEM)".into()),
            },
        };
        let pem = std::fs::read(&file).map_err(|e| {
            format!("sslrootcert {}: {e}; give the server's CA certificate (PEM) as sslrootcert=FILE", file.display())
        })?;
        let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_slice())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
        let (added, _) = store.add_parsable_certificates(certs);
        if added == 0 {
            return Err(format!("sslrootcert {}: no PEM certificate in it", file.display()));
        }
        Ok(store)
    }
}

/// `prefer` and `require` without a root certificate, as libpq: encrypted, the certificate not
/// checked (its handshake signatures are).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain is checked, the name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_parameters_are_taken_out_of_the_url() {
        let t =
            Tls::from_url("postgres://u:p@h/d?sslmode=verify-full&application_name=x&sslrootcert=%2Fca.pem").unwrap();
        assert_eq!(t.url(), "postgres://u:p@h/d?application_name=x");
        assert_eq!((t.mode, t.roots.clone()), (Mode::VerifyFull, Some(Roots::File("/ca.pem".into()))));
        let t = Tls::from_url("postgres://h/d").unwrap();
        assert_eq!((t.url(), t.mode), ("postgres://h/d", Mode::Prefer));
        assert_eq!(Tls::from_url("postgres://h/d?sslmode=require&sslrootcert=system").unwrap().mode, Mode::VerifyCa);
        assert_eq!(Tls::from_url("postgres://h/d?sslmode=require").unwrap().ssl_mode(), SslMode::Require);
        assert_eq!(Tls::from_url("postgres://h/d?sslmode=disable").unwrap().ssl_mode(), SslMode::Disable);
        for bad in ["postgres://h/d?sslmode=allow", "postgres://h/d?sslmode=bogus", "postgres://h/d?sslcert=c.pem"] {
            assert!(Tls::from_url(bad).is_err(), "{bad}");
        }
    }
}
