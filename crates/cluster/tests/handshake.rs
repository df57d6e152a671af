//! The version handshake over the real TLS transport, in one process: a coordinator of
//! another protocol version is refused with FAILED_PRECONDITION naming both versions, a
//! request without the token with UNAUTHENTICATED.

use iolab_cluster::proto::{agent_client::AgentClient, HelloRequest};
use iolab_cluster::{pin, tls, AgentService, Allow, PROTOCOL_VERSION};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_protocol_version_and_a_missing_token_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let (cert, key) = tls::load_or_make(d.path()).unwrap();
    let fp = tls::fingerprint(&cert);
    // The certificate is kept: a second start finds the same one.
    assert_eq!(tls::fingerprint(&tls::load_or_make(d.path()).unwrap().0), fp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let service = AgentService::new(Allow::new(&[d.path().to_path_buf()]).unwrap());
    tokio::spawn(tls::serve(listener, service.server(), "tok".into(), cert, key, Duration::from_secs(1)));

    let pin = Arc::new(pin::CertPin::new(Some(fp.clone())));
    let ch = pin::connect(&addr, tls::CERT_NAME, pin).await.unwrap();
    let token: tonic::metadata::MetadataValue<_> = "Bearer tok".parse().unwrap();
    let mut client = AgentClient::with_interceptor(ch.clone(), move |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", token.clone());
        Ok(r)
    });
    let ok =
        client.hello(HelloRequest { protocol_version: PROTOCOL_VERSION, iolab_version: "x".into() }).await.unwrap();
    assert_eq!(ok.into_inner().protocol_version, PROTOCOL_VERSION);
    let e = client.hello(HelloRequest { protocol_version: 99, iolab_version: "9.9.9".into() }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(e.message().contains("99") && e.message().contains(&PROTOCOL_VERSION.to_string()), "{}", e.message());

    let mut anon = AgentClient::new(ch);
    let e =
        anon.hello(HelloRequest { protocol_version: PROTOCOL_VERSION, iolab_version: "x".into() }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);

    // A pinned fingerprint the agent does not have: no connection.
    let wrong = Arc::new(pin::CertPin::new(Some("sha256:00".into())));
    assert!(pin::connect(&addr, tls::CERT_NAME, wrong).await.is_err());
}

/// A CA and a certificate it signed for 127.0.0.1, as PEM files in `dir`.
fn ca_and_leaf(dir: &std::path::Path, tag: &str) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap().signed_by(&leaf_key, &issuer).unwrap();
    let paths =
        (dir.join(format!("{tag}-ca.pem")), dir.join(format!("{tag}-cert.pem")), dir.join(format!("{tag}-key.pem")));
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, leaf.pem()).unwrap();
    std::fs::write(&paths.2, leaf_key.serialize_pem()).unwrap();
    paths
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ca_the_agents_certificate_is_checked_against_it() {
    let d = tempfile::tempdir().unwrap();
    let (ca, cert, key) = ca_and_leaf(d.path(), "ours");
    let (other_ca, _, _) = ca_and_leaf(d.path(), "theirs");
    let (cert, key) = tls::load(&cert, &key).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let service = AgentService::new(Allow::new(&[d.path().to_path_buf()]).unwrap());
    tokio::spawn(tls::serve(listener, service.server(), "tok".into(), cert, key, Duration::from_secs(1)));
    let ch = pin::connect(&addr, "127.0.0.1", pin::ca_verifier(&ca).unwrap()).await.unwrap();
    let token: tonic::metadata::MetadataValue<_> = "Bearer tok".parse().unwrap();
    let mut client = AgentClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", token.clone());
        Ok(r)
    });
    client.hello(HelloRequest { protocol_version: PROTOCOL_VERSION, iolab_version: "x".into() }).await.unwrap();
    let e = pin::connect(&addr, "127.0.0.1", pin::ca_verifier(&other_ca).unwrap()).await.unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
}
