//! A PostgreSQL client error in words, for the backend and its TLS connection alike (below both).

use std::error::Error as StdError;

/// An error in words: the server's message (with its detail and hint) for one the server
/// sent, else the client's with its causes (a refused connection, a TLS handshake).
pub(crate) fn text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut t = format!("{}: {}", db.severity(), db.message());
        if let Some(d) = db.detail() {
            t += &format!(" ({d})");
        }
        if let Some(h) = db.hint() {
            t += &format!("; {h}");
        }
        return t;
    }
    let mut t = e.to_string();
    let mut src = StdError::source(e);
    while let Some(s) = src {
        let more = s.to_string();
        if more.contains(&t) {
            t = more;
        } else if !t.contains(&more) {
            t = format!("{t}: {more}");
        }
        src = s.source();
    }
    if t.contains("password missing") {
        t += "; give it in the URL (postgres://USER:PASSWORD@HOST/DB, best through IOLAB_DB) or in PGPASSWORD";
    }
    t
}
