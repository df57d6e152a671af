//! iolab-cluster-transport: how an agent and its coordinator reach each other, both halves of
//! each way: over a child's stdin/stdout (`exec://`, `ssh://`: [`stdio`]), over TLS to an agent
//! daemon that wants a token ([`tls`] serves, [`pin`] dials and pins its certificate), and
//! agents placed by a launcher that dial out to their coordinator ([`join`]). Every way ends
//! in one HTTP/2 connection carrying the protocol's gRPC service; which service runs on it is
//! the caller's (the agent's), so nothing here knows the agent or the coordinator.

#![forbid(unsafe_code)]

pub mod gate;
pub mod join;
pub mod pin;
pub mod stdio;
pub mod tls;

use rustls::crypto::{ring, CryptoProvider};
use std::sync::Arc;

/// Log a line on stderr, the agent's log (the serving halves log what they refuse).
pub fn log(text: &str) {
    say(&format!("iolab agent: {text}"));
}

/// One line on stderr, its control characters escaped (what a peer sent, a path in a plan,
/// comes from the network and must not drive the terminal that shows the log), a failed write
/// ignored (`eprintln!` would panic on a closed or full stderr).
pub fn say(text: &str) {
    use std::io::Write;
    let line = format!("{}\n", iolab_spec::shown::safe(text));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Compare two byte strings in time that depends on their lengths only.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}
