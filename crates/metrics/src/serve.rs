//! The endpoint: `GET /metrics` over HTTP/1.1 on a thread of its own, nothing else. hyper on a
//! single-threaded tokio runtime (both already in the tree through tonic), bounded so a slow or
//! hostile client cannot hold it: at most [`MAX_CONNECTIONS`] at once (more are closed as they
//! come), [`HEADER_TIMEOUT`] to send a request's head, [`CONNECTION_TIMEOUT`] for a connection
//! in all, 8 KiB of request buffered. Read-only: any other path is 404, any other method 405;
//! a request's body is never read. It answers from the board at each scrape, so it answers
//! while the run goes on; [`Endpoint::linger`] keeps it up after the run for a last scrape.

use crate::board::Board;
use crate::encode;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Semaphore};

/// Connections served at once; one more is closed as soon as it is accepted.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client has to send a request's head (each request of a kept-alive connection).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may last, whatever it does.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The bounds a client meets (the constants above, unless a test shortens them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connections: usize,
    pub header: Duration,
    pub connection: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { connections: MAX_CONNECTIONS, header: HEADER_TIMEOUT, connection: CONNECTION_TIMEOUT }
    }
}
/// The one path served.
pub const PATH: &str = "/metrics";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "--metrics-listen {addr}: cannot listen there: {source} (give HOST:PORT, e.g. 127.0.0.1:9464, or a free port)"
    )]
    Bind { addr: String, source: std::io::Error },
    #[error("starting the metrics endpoint: {0}")]
    Start(std::io::Error),
}

/// The running endpoint; dropping it stops it.
pub struct Endpoint {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listen on `addr` (HOST:PORT; port 0 picks a free one) and serve `board` until dropped.
    pub fn start(addr: &str, board: Arc<Board>) -> Result<Endpoint, ServeError> {
        Endpoint::start_with(addr, board, Limits::default())
    }

    /// [`Endpoint::start`] with other bounds.
    pub fn start_with(addr: &str, board: Arc<Board>, limits: Limits) -> Result<Endpoint, ServeError> {
        let bind = |e| ServeError::Bind { addr: addr.to_string(), source: e };
        let listener = std::net::TcpListener::bind(addr).map_err(bind)?;
        listener.set_nonblocking(true).map_err(ServeError::Start)?;
        let local = listener.local_addr().map_err(ServeError::Start)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(ServeError::Start)?;
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-metrics".into())
            .spawn(move || rt.block_on(serve(listener, board, limits, rx)))
            .map_err(ServeError::Start)?;
        Ok(Endpoint { addr: local, stop: Some(tx), thread: Some(thread) })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stay up `linger` after the run, so a last scrape sees its final counts; a Ctrl-C
    /// (`stop` set meanwhile) ends the wait at once. When the run itself was stopped with
    /// Ctrl-C (`stop` already set), the second Ctrl-C ends the process, as it always does.
    pub fn linger(self, linger: Duration, stop: &AtomicBool) {
        let was = stop.load(Ordering::Relaxed);
        let end = Instant::now() + linger;
        while let Some(left) = end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
            if !was && stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, board: Arc<Board>, limits: Limits, mut stop: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let slots = Arc::new(Semaphore::new(limits.connections));
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors or the like: wait a little rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let board = board.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let board = board.clone();
                async move { Ok::<_, Infallible>(answer(&req, &board)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header)
                .max_buf_size(8192)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.connection, conn).await;
            drop(permit);
        });
    }
}

/// The answer to one request.
pub fn answer<B>(req: &Request<B>, board: &Arc<Board>) -> Response<Full<Bytes>> {
    if req.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND, "iolab serves its metrics at /metrics and nothing else\n");
    }
    if req.method() != Method::GET {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "/metrics is read-only: GET it\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    let open_metrics = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("application/openmetrics-text"));
    match encode::render(board, open_metrics) {
        Ok(text) => {
            let mut r = Response::new(Full::new(Bytes::from(text)));
            let ct = if open_metrics { encode::OPENMETRICS } else { encode::TEXT };
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ct));
            r
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the metrics could not be written\n"),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::tests::{phase, plan};
    use crate::feed::RunStart;
    use iolab_model::events::Emit;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    /// One request as raw bytes; what came back, whole.
    fn ask(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn endpoint(limits: Limits) -> (Endpoint, Arc<Board>) {
        let board = Board::new();
        let plan = plan();
        let mut feed = board.begin(RunStart {
            id: "1".into(),
            kind: "run",
            labels: &[],
            plan: &plan,
            node: "n".into(),
            started_unix_s: 0.0,
        });
        feed.progress(0, &phase("write", 4, 1_000));
        (Endpoint::start_with("127.0.0.1:0", board.clone(), limits).unwrap(), board)
    }

    #[test]
    fn get_metrics_is_served_and_nothing_else() {
        let (ep, _board) = endpoint(Limits::default());
        let a = ep.addr();
        let ok = ask(a, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("content-type: text/plain; version=0.0.4"), "{ok}");
        assert!(
            ok.contains("iolab_operations_total{node=\"n\",run_id=\"1\",phase=\"write\",job=\"j\",class=\"read\"} 4"),
            "{ok}"
        );
        let om = ask(a, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\nConnection: close\r\n\r\n");
        assert!(om.contains("content-type: application/openmetrics-text") && om.ends_with("# EOF\n"), "{om}");
        for (req, status) in [
            ("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc", "405"),
            ("PUT /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "405"),
            ("DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "405"),
            ("HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "405"),
            ("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"),
            ("GET /metrics/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"),
            ("GET /../metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"),
            ("POST /api/v1/admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"),
        ] {
            let got = ask(a, req);
            assert!(got.starts_with(&format!("HTTP/1.1 {status}")), "{req:?}: {got}");
            assert!(!got.contains("iolab_"), "{req:?} got metrics: {got}");
        }
        assert!(ask(a, "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").contains("allow: GET"));
        // Not HTTP at all: an error status or a closed connection, never metrics.
        let junk = ask(a, "\x16\x03\x01\x02\x00 hello\r\n\r\n");
        assert!(junk.is_empty() || junk.starts_with("HTTP/1.1 400"), "{junk}");
    }

    #[test]
    fn slow_and_surplus_clients_are_cut_off() {
        let limits = Limits { connections: 2, header: Duration::from_millis(300), connection: Duration::from_secs(2) };
        let (ep, _board) = endpoint(limits);
        let a = ep.addr();
        // Two clients that send half a request and wait hold both slots...
        let mut slow: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut s = TcpStream::connect(a).unwrap();
                s.write_all(b"GET /metr").unwrap();
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        // ...so a third is closed at once, unanswered.
        let t = Instant::now();
        let third = ask(a, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(third.is_empty() && t.elapsed() < Duration::from_secs(2), "{third}");
        // The slow ones are cut off by the header timeout, and the slots come back.
        for s in &mut slow {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = String::new();
            let t = Instant::now();
            let _ = s.read_to_string(&mut buf);
            assert!(t.elapsed() < Duration::from_secs(3), "cut off after the header timeout");
            assert!(!buf.contains("iolab_"));
        }
        let after = ask(a, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(after.starts_with("HTTP/1.1 200"), "{after}");
    }

    #[test]
    fn it_answers_while_the_run_goes_on_and_stops_when_dropped() {
        let (ep, board) = endpoint(Limits::default());
        let a = ep.addr();
        let get = || ask(a, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(get().contains("class=\"read\"} 4"));
        let plan = plan();
        let mut feed = board.begin(RunStart {
            id: "1".into(),
            kind: "run",
            labels: &[],
            plan: &plan,
            node: "n".into(),
            started_unix_s: 0.0,
        });
        // The same run going on (an agent's next step): its phase 0 is the run's phase 2.
        feed.progress(0, &phase("write", 6, 1_000));
        assert!(get().contains("class=\"read\"} 10"), "a phase of the same name keeps counting: {}", get());
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        ep.linger(Duration::from_millis(200), &stop);
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert!(TcpStream::connect(a).is_err(), "the endpoint is gone once dropped");
    }

    #[test]
    fn ctrl_c_ends_the_linger_at_once_and_a_taken_address_is_named() {
        let (ep, _board) = endpoint(Limits::default());
        let taken = ep.addr().to_string();
        let err = Endpoint::start(&taken, Board::new()).err().expect("the address is taken");
        assert!(err.to_string().contains(&taken), "{err}");
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s.store(true, Ordering::Relaxed);
        });
        let t = Instant::now();
        ep.linger(Duration::from_secs(30), &stop);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
