//! File bodies: a blocking thread reads the file into a bounded channel that the HTTP body
//! reads from, so a slow client slows the reader instead of filling memory, and holds no git
//! worker.

use bytes::Bytes;
use std::fs::File;
use std::io::{self, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// Bytes collected before a chunk is handed to the connection.
const CHUNK_BYTES: usize = 64 << 10;
/// Chunks buffered between the writer and the connection.
const CHANNEL_CHUNKS: usize = 4;
/// How long a writer waits for a client that does not read before it gives up.
const STALL_LIMIT: Duration = Duration::from_secs(60);

/// Starts sending `len` bytes of `file` from `offset`, from the blocking pool, and returns the body
/// that carries them. `hold` (a permit) lives as long as the sending does.
pub fn spawn(
    file: Arc<File>,
    offset: u64,
    len: u64,
    hold: impl Send + 'static,
) -> axum::body::Body {
    spawn_writer(hold, move |sink| {
        crate::pages::copy_file(&file, offset, len, sink)
    })
}

/// Runs `write` on the blocking pool, its output the body returned; a failure cuts the body
/// short. `hold` lives as long as the writing does.
pub fn spawn_writer(
    hold: impl Send + 'static,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
) -> axum::body::Body {
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _hold = hold;
        let mut sink = ChannelWriter {
            tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
            runtime,
        };
        let result = write(&mut sink).and_then(|()| sink.send_pending());
        if let Err(e) = result {
            tracing::warn!("streamed response aborted: {e}");
            // What was written reaches the client (a git error message may end it), then a
            // truncated transfer instead of a complete-looking body.
            let _ = sink.send_pending();
            let _ = sink.send(Err(e));
        }
    });
    axum::body::Body::new(ChannelBody { rx })
}

/// The writer's end: buffers into chunks and sends them, waiting while the channel is full.
struct ChannelWriter {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
    runtime: tokio::runtime::Handle,
}

impl ChannelWriter {
    fn send(&self, item: io::Result<Bytes>) -> io::Result<()> {
        let sent = self
            .runtime
            .block_on(tokio::time::timeout(STALL_LIMIT, self.tx.send(item)));
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "client went away",
            )),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading",
            )),
        }
    }

    fn send_pending(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.send(Ok(Bytes::from(chunk)))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.send_pending()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()
    }
}

/// The connection's end: yields chunks until the writer is done or failed.
struct ChannelBody {
    rx: mpsc::Receiver<io::Result<Bytes>>,
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, io::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|chunk| chunk.map(http_body::Frame::data)))
    }
}
