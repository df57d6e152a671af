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

/// A stream that tells `closed` when its reading side ends (end of file or an error): the
/// server of a one-connection transport stops then.
pub struct Watched<S> {
    pub inner: S,
    pub closed: Arc<Notify>,
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

/// The agent's side: serve exactly one connection over stdin/stdout, until the coordinator
/// closes it.
pub async fn serve_stdio<A: Agent>(server: AgentServer<A>) -> Result<(), tonic::transport::Error> {
    serve_one(Duplex { read: tokio::io::stdin(), write: tokio::io::stdout() }, Routes::new(server)).await
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
