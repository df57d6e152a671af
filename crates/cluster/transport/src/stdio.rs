//! Byte pipes as one HTTP/2 connection: the agent serves over its stdin/stdout
//! (`iolab agent --stdio`, [`serve_stdio`]), the coordinator talks over a child's (`ssh host
//! iolab agent --stdio`, or `exec://PATH` locally: [`over_child`]). No socket listens either
//! way. [`Watched`] (a stream that says when its reading side ends) also carries a joined
//! agent's one TLS connection ([`crate::join`]).

use hyper_util::rt::TokioIo;
use iolab_cluster_protocol::proto::agent_server::{Agent, AgentServer};
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{Child, Command};
use tokio::sync::Notify;
use tokio_stream::StreamExt;
use tonic::service::Routes;
use tonic::transport::{Channel, Endpoint};

/// A reading half and a writing half joined into one duplex stream.
pub struct Duplex<R, W> {
    pub read: R,
    pub write: W,
}

impl<R: AsyncRead + Unpin, W: Unpin> AsyncRead for Duplex<R, W> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl<R: Unpin, W: AsyncWrite + Unpin> AsyncWrite for Duplex<R, W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.write).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_shutdown(cx)
    }
}

/// A stream that tells `closed` when its reading side ends (end of file or an error), or when
/// the server lets go of it (the connection ended: malformed input the HTTP/2 server gave up
/// on): the server of a one-connection transport stops then.
pub struct Watched<S> {
    pub inner: S,
    pub closed: Arc<Notify>,
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        self.closed.notify_one();
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &r {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.closed.notify_one();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
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

impl<S> tonic::transport::server::Connected for Watched<S> {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

/// Serve `routes` on exactly one connection, `io`, until its reading side ends.
pub(crate) async fn serve_one<S>(io: S, routes: Routes) -> Result<(), tonic::transport::Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let closed = Arc::new(Notify::new());
    let io = Watched { inner: io, closed: closed.clone() };
    // One connection, and no end to the stream of them: the server stops when it ends.
    let incoming = tokio_stream::once(Ok::<_, io::Error>(io)).chain(tokio_stream::pending());
    tonic::transport::Server::builder()
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, async move { closed.notified().await })
        .await
}

/// How serving over stdin/stdout ended badly.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    #[error("stdin ended before a coordinator said anything; `iolab agent --stdio` is started by `iolab run --node NAME=ssh://HOST,dir=DIR` (or exec://PATH), not by hand")]
    Silent,
    #[error("stdin is not a coordinator's HTTP/2 stream (it began with {0}); `iolab agent --stdio` is started by `iolab run --node NAME=ssh://HOST,dir=DIR` (or exec://PATH)")]
    Malformed(String),
}

/// HTTP/2's client connection preface: what a coordinator sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A reading half that keeps the first bytes read, to tell a coordinator from anything else.
struct Opening<R> {
    inner: R,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Opening<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Ok(mut seen) = self.seen.lock() {
            if seen.len() < PREFACE.len() {
                let new = &buf.filled()[before..];
                let take = new.len().min(PREFACE.len() - seen.len());
                seen.extend_from_slice(&new[..take]);
            }
        }
        r
    }
}

/// The agent's side: serve exactly one connection over stdin/stdout, until the coordinator
/// closes it. Input that is no coordinator's (garbage, a JSON line, nothing at all) ends it at
/// once with an error, never a wait.
pub async fn serve_stdio<A: Agent>(server: AgentServer<A>) -> Result<(), StdioError> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let read = Opening { inner: tokio::io::stdin(), seen: seen.clone() };
    serve_one(Duplex { read, write: tokio::io::stdout() }, Routes::new(server)).await?;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    if seen.is_empty() {
        return Err(StdioError::Silent);
    }
    if !PREFACE.starts_with(&seen) || seen.len() < PREFACE.len() {
        let shown: String = seen.escape_ascii().to_string().chars().take(60).collect();
        return Err(StdioError::Malformed(format!("`{shown}`")));
    }
    Ok(())
}

/// The coordinator's side: a gRPC channel over a child's stdin/stdout; the child dies with the
/// channel's owner.
pub async fn over_child(mut cmd: Command) -> io::Result<(Channel, Child)> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    // Its own process group: a Ctrl-C at the terminal reaches the coordinator, which stops the
    // agents itself, and not the agents (or ssh) directly, which would die mid-run.
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let (Some(write), Some(read)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("the agent's stdio was not piped"));
    };
    let channel =
        one_shot(Duplex { read, write }, "http://agent.stdio", "the agent's pipe is used up (it cannot reconnect)")
            .await
            .map_err(|e| io::Error::other(format!("HTTP/2 over the agent's stdio: {e}")))?;
    Ok((channel, child))
}

/// A client channel over one connection already made (it cannot reconnect: a second dial says
/// `gone`).
pub(crate) async fn one_shot<S>(
    io: S,
    uri: &'static str,
    gone: &'static str,
) -> Result<Channel, tonic::transport::Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = Arc::new(Mutex::new(Some(io)));
    let connector = tower::service_fn(move |_uri: tonic::transport::Uri| {
        let io = io.lock().ok().and_then(|mut g| g.take());
        async move { io.map(TokioIo::new).ok_or_else(|| io::Error::other(gone)) }
    });
    Endpoint::from_static(uri).connect_with_connector(connector).await
}
