//! Where a store lives: an SQLite file, or a PostgreSQL server named by a `postgres://` URL;
//! and how it is printed, with a URL's password never shown.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// A results database: `--db PATH` or `--db postgres://USER:PASSWORD@HOST:PORT/DBNAME`.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// An SQLite file (created when a run is first saved).
    File(PathBuf),
    /// A database on a PostgreSQL server.
    Postgres(PgUrl),
}

/// A `postgres://` or `postgresql://` URL, as libpq and tokio-postgres read them. It prints with
/// its password (in the user part or a `password=` parameter) as `***`, by `Display` and `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    raw: String,
}

const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// What a redacted password prints as.
pub const HIDDEN: &str = "***";

impl Target {
    /// A path, or a server's URL when it starts with `postgres://` or `postgresql://`. Never
    /// fails: a URL is read when the store is opened, whose errors never print its password.
    pub fn parse(s: impl Into<OsString>) -> Target {
        let s: OsString = s.into();
        let is_url = SCHEMES.iter().any(|p| s.as_encoded_bytes().starts_with(p.as_bytes()));
        if is_url {
            return Target::Postgres(PgUrl { raw: s.to_string_lossy().into_owned() });
        }
        Target::File(PathBuf::from(s))
    }

    /// The file of an SQLite store; `None` for a server.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Target::File(p) => Some(p),
            Target::Postgres(_) => None,
        }
    }
}

impl From<&Path> for Target {
    fn from(p: &Path) -> Target {
        Target::File(p.to_path_buf())
    }
}

impl From<PathBuf> for Target {
    fn from(p: PathBuf) -> Target {
        Target::File(p)
    }
}

impl From<&PathBuf> for Target {
    fn from(p: &PathBuf) -> Target {
        Target::File(p.clone())
    }
}

impl From<&Target> for Target {
    fn from(t: &Target) -> Target {
        t.clone()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::File(p) => write!(f, "{}", p.display()),
            Target::Postgres(u) => write!(f, "{u}"),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::File(p) => write!(f, "File({p:?})"),
            Target::Postgres(u) => write!(f, "Postgres({u})"),
        }
    }
}

/// The URL's parts as tokio-postgres splits them: everything before the first `@` is the user
/// and, after its first `:`, the password; the query follows the first `?` after that.
struct Parts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    password: Option<&'a str>,
    rest: &'a str,
}

impl PgUrl {
    fn parts(&self) -> Parts<'_> {
        let scheme = SCHEMES.iter().find(|p| self.raw.starts_with(*p)).copied().unwrap_or("");
        let s = &self.raw[scheme.len()..];
        match s.split_once('@') {
            Some((creds, rest)) => {
                let (user, password) = match creds.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (creds, None),
                };
                Parts { scheme, user: Some(user), password, rest }
            }
            None => Parts { scheme, user: None, password: None, rest: s },
        }
    }

    /// The URL as given, password included: for the connection only, never to print.
    pub(crate) fn secret(&self) -> &str {
        &self.raw
    }

    /// Every spelling of the password the URL holds (raw and percent-decoded), so that text about
    /// the connection can be searched for it and cleaned.
    pub(crate) fn passwords(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |p: &str| {
            if !p.is_empty() {
                out.push(p.to_string());
                let decoded = percent_decode(p);
                if decoded != p {
                    out.push(decoded);
                }
            }
        };
        let parts = self.parts();
        if let Some(p) = parts.password {
            add(p);
        }
        for (k, v) in query(parts.rest) {
            if percent_decode(k) == "password" {
                add(v);
            }
        }
        out
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.parts();
        f.write_str(p.scheme)?;
        if let Some(user) = p.user {
            f.write_str(user)?;
            if p.password.is_some() {
                write!(f, ":{HIDDEN}")?;
            }
            f.write_str("@")?;
        }
        match p.rest.split_once('?') {
            None => f.write_str(p.rest),
            Some((head, q)) => {
                write!(f, "{head}?")?;
                for (i, part) in q.split('&').enumerate() {
                    if i > 0 {
                        f.write_str("&")?;
                    }
                    match part.split_once('=') {
                        Some((k, _)) if percent_decode(k) == "password" => write!(f, "{k}={HIDDEN}")?,
                        _ => f.write_str(part)?,
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({self})")
    }
}

/// The `key=value` pairs after the first `?` (raw, not decoded).
fn query(rest: &str) -> impl Iterator<Item = (&str, &str)> {
    rest.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// `%XX` sequences decoded (invalid ones kept as they are; bytes that are not UTF-8 replaced).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every spelling of a password replaced by `***`.
pub(crate) fn scrub(text: &str, passwords: &[String]) -> String {
    let mut t = text.to_string();
    for p in passwords {
        if !p.is_empty() {
            t = t.replace(p.as_str(), HIDDEN);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(s: &str) -> String {
        Target::parse(s).to_string()
    }

    #[test]
    fn paths_and_urls() {
        assert_eq!(Target::parse("results.db"), Target::File("results.db".into()));
        assert_eq!(Target::parse("/x/postgres://y").file(), Some(Path::new("/x/postgres://y")));
        assert!(Target::parse("postgresql://h/db").file().is_none());
    }

    #[test]
    fn passwords_never_print() {
        assert_eq!(shown("postgres://iolab:s3cret@db.lab:5432/results"), "postgres://iolab:***@db.lab:5432/results");
        assert_eq!(shown("postgres://iolab@db.lab/results"), "postgres://iolab@db.lab/results");
        assert_eq!(shown("postgres://db.lab/results?sslmode=require"), "postgres://db.lab/results?sslmode=require");
        assert_eq!(
            shown("postgresql://u@h/d?password=s3cret&sslmode=disable"),
            "postgresql://u@h/d?password=***&sslmode=disable"
        );
        assert_eq!(shown("postgres://u:p%40ss@h/d"), "postgres://u:***@h/d");
        // Whatever tokio-postgres would take for the password is what is hidden.
        assert_eq!(shown("postgres://h:5432/d?application_name=a@b"), "postgres://h:***@b");
        let t = Target::parse("postgres://u:s3cret@h/d");
        assert!(!format!("{t:?}").contains("s3cret"));
        let Target::Postgres(u) = &t else { unreachable!() };
        assert_eq!(u.passwords(), ["s3cret"]);
        let Target::Postgres(u) = Target::parse("postgres://u:p%40ss@h/d?%70assword=x%79") else { unreachable!() };
        assert_eq!(u.passwords(), ["p%40ss", "p@ss", "x%79", "xy"]);
        assert_eq!(scrub("auth for p@ss failed", &u.passwords()), "auth for *** failed");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b%2"), "a b%2");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
        assert_eq!(percent_decode("%"), "%");
    }
}
