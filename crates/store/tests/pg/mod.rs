//! A real PostgreSQL server for the tests, started once per test binary: initdb in a scratch
//! directory (as `nobody` when the tests run as root: postgres refuses root), listening on a
//! free port of 127.0.0.1 with password logins (scram-sha-256) and TLS (a CA and a server
//! certificate for `localhost` made for it; the database `tls_only` refuses connections
//! without TLS). A watchdog shell stops the
//! server and removes the directory once the test binary has exited. Where the server cannot be
//! had (no PostgreSQL binaries), the tests that need it say why and skip. A test's store is a
//! schema of its own in the database `iolab_tests` (chosen with `options=-csearch_path%3D...`
//! in its URL, as a team would choose theirs); a test that needs a whole database makes one.
//! Shared by crates/store/tests and crates/cli/tests (the latter through `#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// `matrix!(a, b)`: each test function `fn a(b: Backend)` once per backend, as `sqlite::a` on
/// a file and `postgres::a` on the server (which says why and skips where there is none).
macro_rules! matrix {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $name() {
                super::$name($crate::pg::Backend::Sqlite)
            })*
        }
        mod postgres {
            $(#[test]
            fn $name() {
                if $crate::pg::server().is_some() {
                    super::$name($crate::pg::Backend::Postgres)
                }
            })*
        }
    };
}
pub(crate) use matrix;

pub struct Server {
    pub port: u16,
    pub user: String,
    pub password: String,
    /// The scratch directory (data, socket, log, the CA's certificate).
    pub dir: PathBuf,
    /// The CA that signed the server's certificate (PEM).
    pub ca: PathBuf,
    made: Mutex<()>,
}

/// The database that refuses connections without TLS.
pub const TLS_ONLY: &str = "tls_only";

/// The database the tests' stores are made in, a schema each.
pub const TESTS: &str = "iolab_tests";

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// The binary's server, or why there is none (said once per test that asked, and skipped).
pub fn server() -> Option<&'static Server> {
    match SERVER.get_or_init(start) {
        Ok(s) => Some(s),
        Err(why) => {
            skip(&format!("no PostgreSQL server for this test: {why}"));
            None
        }
    }
}

/// Say why a test did not run: on stderr, and in target/test-skips.txt, which .ci/run prints.
pub fn skip(reason: &str) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    eprintln!("SKIPPED {test}: {reason}");
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/test-skips.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
        use std::io::Write;
        let _ = writeln!(f, "SKIPPED {test}: {reason}");
    }
}

impl Server {
    /// A URL of store `name` (a schema of its own in the tests' database; TLS off: see
    /// [`Server::tls_url`]).
    pub fn url(&self, name: &str) -> String {
        format!("{}&options=-csearch_path%3D{name}", self.db_url(TESTS))
    }

    /// A URL of a whole database (its `public` schema).
    pub fn db_url(&self, db: &str) -> String {
        format!("postgres://{}:{}@127.0.0.1:{}/{db}?sslmode=disable", self.user, self.password, self.port)
    }

    /// A URL of database `db` over TLS, the certificate checked as `sslmode` says.
    pub fn tls_url(&self, db: &str, host: &str, sslmode: &str, rootcert: Option<&Path>) -> String {
        let root = rootcert.map(|p| format!("&sslrootcert={}", p.display())).unwrap_or_default();
        format!("postgres://{}:{}@{host}:{}/{db}?sslmode={sslmode}{root}", self.user, self.password, self.port)
    }

    /// A new, empty store for one test: a schema of its own (cheap: a database costs about
    /// half a second to make); its name starts with `tag`.
    pub fn fresh(&self, tag: &str) -> String {
        let name = unique(tag);
        let mut admin = self.db_client(TESTS);
        admin.batch_execute(&format!("CREATE SCHEMA {name}")).expect("CREATE SCHEMA");
        name
    }

    /// A URL of a fresh store.
    pub fn fresh_url(&self, tag: &str) -> String {
        self.url(&self.fresh(tag))
    }

    /// A new, empty database, for a test that needs one whole.
    pub fn fresh_database(&self, tag: &str) -> String {
        let name = unique(tag);
        let _one_at_a_time = self.made.lock().unwrap_or_else(|e| e.into_inner());
        self.db_client("postgres").batch_execute(&format!("CREATE DATABASE {name}")).expect("CREATE DATABASE");
        name
    }

    /// A plain client of store `name`, for what the tests do behind iolab's back.
    pub fn client(&self, name: &str) -> postgres::Client {
        postgres::Client::connect(&self.url(name), postgres::NoTls).expect("connecting to the test server")
    }

    /// A plain client of a whole database.
    pub fn db_client(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(&self.db_url(db), postgres::NoTls).expect("connecting to the test server")
    }
}

/// `t<N>_<tag>`, unique in this binary.
fn unique(tag: &str) -> String {
    let tag: String = tag.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect();
    format!("t{}_{}", NEXT_DB.fetch_add(1, Ordering::Relaxed), tag.to_lowercase())
}

/// Every table, column and row of store `name` as text: equal before and after means nothing
/// was written.
pub fn dump(server: &Server, name: &str) -> String {
    let mut c = server.client(name);
    let mut out = String::new();
    let tables =
        c.query("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename", &[]).unwrap();
    for t in tables {
        let name: String = t.get(0);
        out += &format!("table {name}\n");
        let cols = c
            .query(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
                &[&name],
            )
            .unwrap();
        for col in cols {
            out += &format!("  {} {}\n", col.get::<_, String>(0), col.get::<_, String>(1));
        }
        for r in c.simple_query(&format!("SELECT * FROM {name} ORDER BY 1")).unwrap() {
            if let postgres::SimpleQueryMessage::Row(r) = r {
                let vals: Vec<String> = (0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect();
                out += &format!("  row {}\n", vals.join("|"));
            }
        }
    }
    out
}

fn bin_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("IOLAB_PG_BIN") {
        return Ok(d.into());
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no /usr/lib/postgresql (install Debian's postgresql, or set IOLAB_PG_BIN)".to_string())?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b).ok_or_else(|| "no /usr/lib/postgresql/*/bin/postgres".into())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn id_of(flag: &str) -> Result<u32, String> {
    let o = Command::new("id").args([flag, "nobody"]).output().map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&o.stdout).trim().parse().map_err(|_| "no user nobody".to_string())
}

/// `cmd` as the server's user: `nobody` through setpriv when root, else as is.
fn as_server_user(root: bool, program: &Path) -> Command {
    if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn start() -> Result<Server, String> {
    let bin = bin_dir()?;
    let root = is_root();
    if root && Command::new("setpriv").arg("--version").output().is_err() {
        return Err("running as root and no setpriv to start postgres as nobody".into());
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("iolab-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let owner = if root { Some((id_of("-u")?, id_of("-g")?)) } else { None };
    let give = |p: &Path| -> Result<(), String> {
        if let Some((u, g)) = owner {
            std::os::unix::fs::chown(p, Some(u), Some(g)).map_err(|e| format!("chown {}: {e}", p.display()))?;
        }
        Ok(())
    };
    give(&dir)?;
    let password = format!("pw-{:x}-s3cret", nanos as u64 ^ 0x5eed);
    let pwfile = dir.join("pw");
    std::fs::write(&pwfile, &password).map_err(|e| e.to_string())?;
    give(&pwfile)?;
    let data = dir.join("data");
    let out = as_server_user(root, &bin.join("initdb"))
        .args(["-N", "-U", "iolab", "--auth=scram-sha-256", "-E", "UTF8", "--locale=C"])
        .arg(format!("--pwfile={}", pwfile.display()))
        .arg("-D")
        .arg(&data)
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let _ = std::fs::remove_file(&pwfile);
    // The database `tls_only` takes TLS connections alone.
    let hba = data.join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).map_err(|e| e.to_string())?;
    std::fs::write(&hba, format!("hostnossl {TLS_ONLY} all 127.0.0.1/32 reject\n{rules}"))
        .map_err(|e| e.to_string())?;
    // TLS: a CA of the test's own and a certificate for localhost and 127.0.0.1.
    let ca = dir.join("ca.pem");
    let (cert, key) = certificates(&ca)?;
    for (name, pem) in [("server.crt", &cert), ("server.key", &key)] {
        let p = data.join(name);
        std::fs::write(&p, pem).map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
        give(&p)?;
    }
    let mut last = String::new();
    for _attempt in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())?;
        let log = std::fs::File::create(dir.join("log")).map_err(|e| e.to_string())?;
        give(&dir.join("log"))?;
        let mut child = as_server_user(root, &bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "ssl=on", "-c", "max_connections=200"])
            .args([
                "-c",
                "wal_level=minimal",
                "-c",
                "max_wal_senders=0",
                "-c",
                "full_page_writes=off",
                "-c",
                "synchronous_commit=off",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        let server = Server {
            port,
            user: "iolab".into(),
            password: password.clone(),
            dir: dir.clone(),
            ca: ca.clone(),
            made: Mutex::new(()),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                last = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
                break;
            }
            if let Ok(mut c) = postgres::Client::connect(&server.db_url("postgres"), postgres::NoTls) {
                watch(child.id(), &dir);
                for db in [TLS_ONLY, TESTS] {
                    c.batch_execute(&format!("CREATE DATABASE {db}")).map_err(|e| e.to_string())?;
                }
                return Ok(server);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err("postgres did not accept connections within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Err(format!("postgres did not start: {last}"))
}

/// Stop the server and remove its directory once this test binary has exited.
fn watch(pg: u32, dir: &Path) {
    let me = std::process::id();
    let script = format!(
        "while [ -d /proc/{me} ]; do sleep 0.5; done; kill -INT {pg} 2>/dev/null; \
         for i in 1 2 3 4 5 6 7 8 9 10; do [ -d /proc/{pg} ] || break; sleep 0.5; done; \
         kill -KILL {pg} 2>/dev/null; rm -rf '{}'",
        dir.display()
    );
    let _ = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// A CA (its certificate written to `ca`) and the server's certificate for `localhost` and its
/// key, PEM.
pub fn certificates(ca: &Path) -> Result<(String, String), String> {
    let e = |e: rcgen::Error| e.to_string();
    let ca_key = rcgen::KeyPair::generate().map_err(e)?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "iolab test CA");
    let ca_cert = ca_params.self_signed(&ca_key).map_err(e)?;
    std::fs::write(ca, ca_cert.pem()).map_err(|e| e.to_string())?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().map_err(e)?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).map_err(e)?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &issuer).map_err(e)?;
    Ok((cert.pem(), key.serialize_pem()))
}
