//! Byte pipes as one HTTP/2 connection: the agent serves over its stdin/stdout
//! (`iolab agent --stdio`), the coordinator talks over a child's (`ssh host iolab agent
//! --stdio`, or `exec://PATH` locally). No socket listens either way.

use crate::agent::AgentService;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_stream::StreamExt;

/// A reading half and a writing half joined into one duplex stream.
pub struct Duplex<R, W> {
    pub read: R,
    pub write: W,
    /// Told when the reading half ends (end of file or an error).
    pub closed: Option<Arc<Notify>>,
}

impl<R: AsyncRead + Unpin, W: Unpin> AsyncRead for Duplex<R, W> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.read).poll_read(cx, buf);
        let ended = match &r {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            if let Some(n) = &self.closed {
                n.notify_one();
            }
        }
        r
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

impl<R, W> tonic::transport::server::Connected for Duplex<R, W> {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

/// Serve exactly one connection over stdin/stdout, until the coordinator closes it.
pub async fn serve_stdio(service: AgentService) -> Result<(), tonic::transport::Error> {
    let closed = Arc::new(Notify::new());
    let io = Duplex { read: tokio::io::stdin(), write: tokio::io::stdout(), closed: Some(closed.clone()) };
    // One connection, and no end to the stream of them: the server stops when stdin ends.
    let incoming = tokio_stream::once(Ok::<_, io::Error>(io)).chain(tokio_stream::pending());
    tonic::transport::Server::builder()
        .add_service(service.server())
        .serve_with_incoming_shutdown(incoming, async move { closed.notified().await })
        .await
}
