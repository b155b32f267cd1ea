//! Accepting connections, with bounds axum's own `serve` does not offer:
//! a cap on open connections (past it, a 503 written straight to the
//! socket, then close), a header-read timeout (slowloris, and kept-alive
//! connections idle between requests), and a write timeout (a client that
//! stopped reading). On drain, the listener closes and every connection
//! finishes its current request.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::obs::metrics::Metrics;
use crate::obs::throttle::LogThrottle;

/// The bounds of one listener.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub write_timeout: Duration,
}

/// The read buffer of a connection, which bounds a request head.
const MAX_HEAD_BYTES: usize = 64 << 10;

/// Refusals in flight at once; past it, a connection over the cap is
/// closed without a word rather than holding a socket for a 503.
const MAX_REFUSALS: usize = 64;

/// The 503 a connection over the cap gets, written without HTTP parsing.
static REFUSAL: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    let body = serde_json::json!({ "error": {
        "code": a2a_agui::ErrorCode::GatewayConnectionsFull.as_str(),
        "message": "the gateway has all the connections it takes; retry later",
        "side": a2a_agui::ErrorCode::GatewayConnectionsFull.side().as_str(),
    } })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// Serves `app` on `listener` until `draining` fires, then waits for open
/// connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    draining: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        // A request head larger than this gets a 431; hyper's default
        // (about 400 KB) times max_connections would be gigabytes.
        .max_buf_size(MAX_HEAD_BYTES);
    let refused_log = LogThrottle::new();
    loop {
        let accepted = tokio::select! {
            _ = draining.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors, mostly: wait for some to close
                // rather than spin.
                if refused_log.due() {
                    tracing::warn!("accepting a connection failed: {err}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics.count_refused_connection();
            if refused_log.due() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connection refused: the gateway has all the connections it takes"
                );
            }
            if let Ok(refusal) = refusals.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream).await;
                    drop(refusal);
                });
            }
            continue;
        };
        // Each event must leave at once: no Nagle delay on small writes.
        let _ = stream.set_nodelay(true);
        let app = app
            .clone()
            .map_request(move |mut request: axum::http::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
        let io = TokioIo::new(WriteTimeout::new(stream, limits.write_timeout));
        let connection = builder.serve_connection(io, TowerToHyperService::new(app));
        let connection = graceful.watch(connection);
        let open = OpenConnection::new(metrics.clone());
        tokio::spawn(async move {
            let _ = connection.await;
            drop(open);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Counts a connection in the open-connections gauge while it lives (a
/// `Drop`, so a connection task that ends any way uncounts it).
struct OpenConnection(Arc<Metrics>);

impl OpenConnection {
    fn new(metrics: Arc<Metrics>) -> OpenConnection {
        metrics.count_open_connection(1);
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.count_open_connection(-1);
    }
}

async fn refuse(mut stream: TcpStream) {
    let write = async {
        stream.write_all(&REFUSAL).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// A socket whose writes may stay blocked only so long: a client that
/// stops reading would otherwise hold its stream, and the upstream call
/// behind it, for ever. Reads are not timed here (the header-read timeout
/// and the relay's idle timer cover them).
struct WriteTimeout {
    stream: TcpStream,
    limit: Duration,
    /// Armed while a write is blocked.
    blocked: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl WriteTimeout {
    fn new(stream: TcpStream, limit: Duration) -> WriteTimeout {
        WriteTimeout {
            stream,
            limit,
            blocked: None,
        }
    }

    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.blocked = None;
            return poll;
        }
        let limit = self.limit;
        let timer = self
            .blocked
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}
