//! The door of a listening agent: every connection must prove the token within the handshake
//! limit (its TLS handshake and a request with the token, together), or it is closed; at most
//! [`Gate::pending_max`] connections wait to prove it at once, the oldest closed to make room
//! for a new one, so silent clients cannot take the descriptors the coordinator needs (the
//! bound follows the process's descriptor limit, keeping [`RESERVE`] for a run; the connection
//! closed to make room is the oldest of the address that holds the most, so a flood from one
//! place cannot push out another's one connection); and what the door turns away is logged
//! once a second, not once a connection ([`Flood`]).

use crate::log;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Descriptors kept for what is not a waiting connection: the coordinator's connection, a
/// run's files, its sampler's /proc files, the runtime's own.
pub const RESERVE: u64 = 40;
/// The most connections that may wait to prove the token at once, however many descriptors.
const PENDING_CEILING: usize = 256;

const PENDING: u8 = 0;
const PROVEN: u8 = 1;
const CLOSED: u8 = 2;

/// One connection's standing at the door.
#[derive(Debug)]
pub struct Standing {
    ip: std::net::IpAddr,
    state: AtomicU8,
    waker: Mutex<Option<Waker>>,
    gate: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    pending: AtomicUsize,
}

impl Standing {
    /// The connection proved the token: it stays.
    pub fn prove(&self) {
        if self.state.compare_exchange(PENDING, PROVEN, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.gate.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
    /// Close it unless it proved the token; whether it was closed now.
    pub fn close_unproven(&self) -> bool {
        if self.state.compare_exchange(PENDING, CLOSED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.gate.pending.fetch_sub(1, Ordering::AcqRel);
            if let Some(w) = self.waker.lock().ok().and_then(|mut w| w.take()) {
                w.wake();
            }
            return true;
        }
        false
    }
    pub fn proven(&self) -> bool {
        self.state.load(Ordering::Acquire) == PROVEN
    }
    pub fn is_closed(&self) -> bool {
        self.closed()
    }
    fn closed(&self) -> bool {
        self.state.load(Ordering::Acquire) == CLOSED
    }
}

/// The door: the connections waiting to prove the token, oldest first, and every connection's
/// standing by its peer address (what a request's interceptor knows of its connection).
pub struct Gate {
    counts: Arc<Counts>,
    queue: Mutex<VecDeque<Arc<Standing>>>,
    by_peer: Mutex<HashMap<SocketAddr, Arc<Standing>>>,
    pending_max: usize,
    pub flood: Flood,
}

impl Gate {
    /// A door for a process whose descriptor limit is `nofile`.
    pub fn new(nofile: u64) -> Gate {
        let room = nofile.saturating_sub(RESERVE) / 2;
        Gate {
            counts: Arc::default(),
            queue: Mutex::new(VecDeque::new()),
            by_peer: Mutex::new(HashMap::new()),
            pending_max: (room as usize).clamp(2, PENDING_CEILING),
            flood: Flood::default(),
        }
    }
    /// A door sized by this process's descriptor limit (its soft limit).
    pub fn for_this_process() -> Gate {
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        Gate::new(lim.current.unwrap_or(1024))
    }
    pub fn pending_max(&self) -> usize {
        self.pending_max
    }
    pub fn pending(&self) -> usize {
        self.counts.pending.load(Ordering::Acquire)
    }

    /// A connection just accepted from `peer`: it waits to prove the token. When the waiting
    /// room is full, the oldest waiting connection is closed to make room (said in the log).
    pub fn admit(&self, peer: SocketAddr) -> Arc<Standing> {
        let s = Arc::new(Standing {
            ip: peer.ip(),
            state: AtomicU8::new(PENDING),
            waker: Mutex::new(None),
            gate: self.counts.clone(),
        });
        self.counts.pending.fetch_add(1, Ordering::AcqRel);
        if let Ok(mut m) = self.by_peer.lock() {
            m.insert(peer, s.clone());
        }
        let mut evicted = 0;
        if let Ok(mut q) = self.queue.lock() {
            q.retain(|x| x.state.load(Ordering::Acquire) == PENDING);
            q.push_back(s.clone());
            while self.pending() > self.pending_max {
                // The oldest of the address that holds the most: a flood from one place does
                // not push out the one connection of another (the coordinator's).
                let mut per_ip: HashMap<std::net::IpAddr, usize> = HashMap::new();
                for x in q.iter() {
                    *per_ip.entry(x.ip).or_default() += 1;
                }
                let Some((&worst, _)) = per_ip.iter().max_by_key(|(_, n)| **n) else { break };
                let Some(at) = q.iter().position(|x| x.ip == worst) else { break };
                if let Some(old) = q.remove(at) {
                    if old.close_unproven() {
                        evicted += 1;
                    }
                }
            }
        }
        if evicted > 0 {
            self.flood.say(
                "evicted",
                &format!(
                    "closed the oldest of {} connections that had not proved the token, to make room (a flood of silent clients?)",
                    self.pending_max
                ),
            );
        }
        s
    }

    /// The standing of the connection from `peer`, if it is open.
    pub fn standing(&self, peer: &SocketAddr) -> Option<Arc<Standing>> {
        self.by_peer.lock().ok().and_then(|m| m.get(peer).cloned())
    }

    /// The connection from `peer` has ended.
    pub fn gone(&self, peer: &SocketAddr) {
        if let Ok(mut m) = self.by_peer.lock() {
            if let Some(s) = m.remove(peer) {
                s.close_unproven();
            }
        }
    }
}

/// A stream that fails at once when its connection is closed at the door (not proven in time,
/// or evicted): hyper and the TLS handshake then drop it, and its descriptor is closed.
pub struct Guarded<S> {
    pub inner: S,
    pub standing: Arc<Standing>,
}

impl<S> Guarded<S> {
    fn check(&self, cx: &Context<'_>) -> io::Result<()> {
        if self.standing.closed() {
            return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "closed: the token was not proved in time"));
        }
        if !self.standing.proven() {
            if let Ok(mut w) = self.standing.waker.lock() {
                *w = Some(cx.waker().clone());
            }
            // Closed between the check and the waker's storing: said now.
            if self.standing.closed() {
                return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "closed"));
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The log of what the door turns away: the first of a kind is said at once; the rest of that
/// kind within the next second are counted and said as one line when the second is over.
#[derive(Default)]
pub struct Flood {
    kinds: Mutex<HashMap<&'static str, Kind>>,
}

struct Kind {
    /// When the last line of this kind was written.
    said: Instant,
    /// Events since, not said yet, and the last one's text.
    more: u64,
    last: String,
}

impl Flood {
    /// An event of `kind`: said now if none of its kind was said this last second, else
    /// counted for [`Flood::flush`].
    pub fn say(&self, kind: &'static str, text: &str) {
        let Ok(mut k) = self.kinds.lock() else { return };
        let now = Instant::now();
        match k.get_mut(kind) {
            Some(x) if now.duration_since(x.said) < Duration::from_secs(1) => {
                x.more += 1;
                x.last = text.to_string();
            }
            _ => {
                k.insert(kind, Kind { said: now, more: 0, last: String::new() });
                drop(k);
                log(text);
            }
        }
    }
    /// Say what was counted of each kind whose second is over (call it every second).
    pub fn flush(&self) {
        let Ok(mut k) = self.kinds.lock() else { return };
        let now = Instant::now();
        for x in k.values_mut() {
            if x.more > 0 && now.duration_since(x.said) >= Duration::from_secs(1) {
                let n = x.more;
                x.more = 0;
                x.said = now;
                log(&format!("... and {n} more like it in the last second, the last: {}", x.last));
            }
        }
    }
    /// Events counted and not said yet, of every kind (for tests).
    pub fn unsaid(&self) -> u64 {
        self.kinds.lock().map(|k| k.values().map(|x| x.more).sum()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_is_bounded_by_the_descriptors_and_the_oldest_goes_first() {
        let g = Gate::new(64);
        assert_eq!(g.pending_max(), 12, "(64 - 40) / 2");
        assert_eq!(Gate::new(10).pending_max(), 2);
        assert_eq!(Gate::new(1 << 20).pending_max(), PENDING_CEILING);
        let peer = |i: u16| SocketAddr::from(([127, 0, 0, 1], 1000 + i));
        let all: Vec<_> = (0..20).map(|i| g.admit(peer(i))).collect();
        assert_eq!(g.pending(), 12);
        assert!(all[..8].iter().all(|s| s.closed()), "the 8 oldest closed");
        assert!(all[8..].iter().all(|s| !s.closed()));
        // One proves the token: it leaves the room and is never closed at the door.
        all[10].prove();
        assert_eq!(g.pending(), 11);
        for i in 20..40 {
            g.admit(peer(i));
        }
        assert!(all[10].proven() && !all[10].closed());
        assert!(g.standing(&peer(10)).is_some_and(|s| s.proven()));
        // A flood from one address does not push out another's one connection.
        let coordinator = g.admit(SocketAddr::from(([10, 0, 0, 1], 5000)));
        for i in 40..100 {
            g.admit(peer(i));
        }
        assert!(!coordinator.is_closed(), "the coordinator's connection waits its turn");
        assert_eq!(g.pending(), 12);
        g.gone(&peer(10));
        assert!(g.standing(&peer(10)).is_none());
        // A closed connection's stream fails at once.
        let mut s = Guarded { inner: tokio::io::empty(), standing: all[0].clone() };
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut b = [0u8; 4];
        let mut rb = ReadBuf::new(&mut b);
        assert!(matches!(Pin::new(&mut s).poll_read(&mut cx, &mut rb), Poll::Ready(Err(_))));
    }

    #[test]
    fn a_flood_is_said_once_a_second() {
        let f = Flood::default();
        for i in 0..1000 {
            f.say("refused", &format!("refused {i}"));
        }
        assert_eq!(f.unsaid(), 999, "one line said, the rest counted");
        f.flush();
        assert_eq!(f.unsaid(), 999, "not before the second is over");
        if let Ok(mut k) = f.kinds.lock() {
            k.get_mut("refused").unwrap().said -= Duration::from_secs(2);
        }
        f.flush();
        assert_eq!(f.unsaid(), 0);
    }
}
