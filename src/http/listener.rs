//! Accepting connections within the process's file descriptors. Every connection holds one,
//! and so do the packs, temporary files and pipes of the work it asks for: connections past
//! [`Connections::cap`] (under three quarters of `RLIMIT_NOFILE`) are answered a bare 503 with
//! `Retry-After` and closed, so that the ones admitted still find descriptors for their
//! pages. When `accept` itself fails (`EMFILE`, `ENFILE`, `ENOBUFS`) the loop waits a short,
//! growing time for descriptors to be freed instead of spinning, and says so in the log.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Descriptors kept for what is not a connection, at least (a quarter of the limit if more),
/// besides those of the connections being shed.
const RESERVE: usize = 64;
/// Over-cap connections being answered their 503 at once; more are closed unanswered.
const MAX_SHEDDING: usize = 32;
/// How long a shed connection's request is waited for (and its rest drained) at most.
const SHED_PATIENCE: Duration = Duration::from_millis(500);
/// The first and the longest wait after a failed `accept`.
const MIN_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_millis(200);

const SHED_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    Content-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n\
    Content-Length: 47\r\nConnection: close\r\n\r\n\
    The server is busy: too many connections open.\n";

/// The connections open and shed, with the bound they are held to.
pub struct Connections {
    cap: usize,
    open: Arc<AtomicUsize>,
    shedding: Arc<AtomicUsize>,
    open_gauge: Gauge,
    shed: Counter,
    accept_errors: Counter,
}

impl Connections {
    /// Connections bounded by the process's open-file limit (as [`raise_open_file_limit`]
    /// left it).
    pub fn for_this_process() -> Connections {
        Connections::with_cap(cap_for(open_file_limit()))
    }

    pub fn with_cap(cap: usize) -> Connections {
        Connections {
            cap: cap.max(1),
            open: Arc::new(AtomicUsize::new(0)),
            shedding: Arc::new(AtomicUsize::new(0)),
            open_gauge: Gauge::default(),
            shed: Counter::default(),
            accept_errors: Counter::default(),
        }
    }

    /// The most connections served at once.
    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "connections_open",
            "Connections being served",
            self.open_gauge.clone(),
        );
        registry.register(
            "connections_shed",
            "Connections answered 503 and closed on arrival: more were open than the file descriptors allow",
            self.shed.clone(),
        );
        registry.register(
            "accept_errors",
            "Failed accepts (out of file descriptors), each followed by a short wait",
            self.accept_errors.clone(),
        );
    }
}

/// The connections a process with `limit` open files serves at once.
pub fn cap_for(limit: usize) -> usize {
    limit
        .saturating_sub(RESERVE.max(limit / 4) + MAX_SHEDDING)
        .max(8)
}

/// The soft `RLIMIT_NOFILE` (unlimited counts as a large number).
pub fn open_file_limit() -> usize {
    match rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => 1 << 20,
    }
}

/// Raises the soft open-file limit to the hard one (systemd and most shells start services
/// at 1024 with a far higher hard limit); returns the limit in force.
pub fn raise_open_file_limit() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::debug!("open-file limit not raised: {e}");
        }
    }
    open_file_limit()
}

/// A TCP listener that admits at most [`Connections::cap`] connections at once.
pub struct Bounded {
    listener: TcpListener,
    connections: Arc<Connections>,
    backoff: Duration,
    last_warning: Option<Instant>,
}

impl Bounded {
    pub fn new(listener: TcpListener, connections: Arc<Connections>) -> Bounded {
        Bounded {
            listener,
            connections,
            backoff: MIN_BACKOFF,
            last_warning: None,
        }
    }

    /// Logs a failed accept (at most once a second) and waits before the next.
    async fn back_off(&mut self, e: &io::Error) {
        let c = &self.connections;
        c.accept_errors.inc();
        if self
            .last_warning
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            let open = c.open.load(Ordering::Relaxed);
            tracing::warn!(
                "accepting a connection failed ({e}), {open} connections open; waiting for \
                 file descriptors to be freed"
            );
            self.last_warning = Some(Instant::now());
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Answers an over-cap connection with a 503 from a task of its own, once fewer than
    /// [`MAX_SHEDDING`] are being answered (until then the next ones wait in the backlog).
    async fn shed(&self, stream: TcpStream) {
        let c = &self.connections;
        c.shed.inc();
        while c.shedding.fetch_add(1, Ordering::AcqRel) >= MAX_SHEDDING {
            c.shedding.fetch_sub(1, Ordering::AcqRel);
            tokio::time::sleep(MIN_BACKOFF).await;
        }
        let slot = Slot(Arc::clone(&c.shedding), None);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(SHED_PATIENCE, refuse(stream)).await;
            drop(slot);
        });
    }
}

/// Reads the request's head (so that closing does not reset the connection before the
/// client reads the answer), writes the 503 and drains what else comes until the client
/// closes.
async fn refuse(mut stream: TcpStream) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    let mut seen = Vec::new();
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.len() < 16 << 10 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    stream.write_all(SHED_RESPONSE).await?;
    stream.shutdown().await?;
    while stream.read(&mut buf).await? > 0 {}
    Ok(())
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

impl axum::serve::Listener for Bounded {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, addr)) => {
                    self.backoff = MIN_BACKOFF;
                    let c = &self.connections;
                    if c.open.fetch_add(1, Ordering::AcqRel) >= c.cap {
                        c.open.fetch_sub(1, Ordering::AcqRel);
                        self.shed(stream).await;
                        continue;
                    }
                    c.open_gauge.inc();
                    let slot = Slot(Arc::clone(&c.open), Some(c.open_gauge.clone()));
                    return (
                        Connection {
                            stream,
                            _slot: slot,
                        },
                        addr,
                    );
                }
                Err(e) if is_connection_error(&e) => {}
                Err(e) => self.back_off(&e).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// A place among the connections open (or being shed), given back on drop.
struct Slot(Arc<AtomicUsize>, Option<Gauge>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
        if let Some(gauge) = &self.1 {
            gauge.dec();
        }
    }
}

/// An admitted connection: the stream, holding its place until it is closed.
pub struct Connection {
    pub stream: TcpStream,
    _slot: Slot,
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::cap_for;

    #[test]
    fn the_cap_leaves_descriptors_for_the_work() {
        assert_eq!(cap_for(256), 160);
        assert_eq!(cap_for(1024), 736);
        assert_eq!(cap_for(20), 8);
    }
}
