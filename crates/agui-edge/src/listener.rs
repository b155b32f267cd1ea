//! Accepting connections, with bounds axum's own `serve` does not offer:
//! a cap on open connections (past it, a 503 written straight to the
//! socket, then close), a header-read timeout (slowloris, and kept-alive
//! connections idle between requests), and a write timeout (a client that
//! stopped reading). On drain, the listener closes and every connection
//! finishes its current request, in the time `drain.rs` gives it; one
//! still in its handshake or preface is dropped. TLS (with ALPN) and
//! HTTP/2 hold the same bounds: the handshake or the preface must come
//! within the header-read timeout, `h2.rs` keeps the others per HTTP/2
//! stream, and `bodies.rs` bounds an HTTP/2 connection's request bodies.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::uri::{Authority, PathAndQuery, Scheme};
use axum::http::{HeaderValue, Request, Uri, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::bodies::{Budget, CONNECTION_WINDOW};
pub use crate::drain::AFTER_STOP;
use crate::drain::Ends;
use crate::h2::Watch;
use crate::preface::sniff;
use crate::refusal;
use crate::throttle::LogThrottle;
use crate::tls::{AgreedProtocol, EdgeTls};

/// The bounds of one listener.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub write_timeout: Duration,
    /// What each request body may be: an HTTP/2 connection's bodies in
    /// flight share a budget of a few of them (`bodies.rs`).
    pub max_request_bytes: usize,
}

/// The read buffer of a connection, which bounds a request head.
const MAX_HEAD_BYTES: usize = 64 << 10;

/// Refusals in flight at once; past it, a connection over the cap is
/// closed without a word rather than holding a socket for a 503.
const MAX_REFUSALS: usize = 64;

/// The 503 a connection over the cap gets, written without HTTP parsing.
static REFUSAL: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    let body = refusal::body(
        a2a_agui::ErrorCode::GatewayConnectionsFull,
        "the gateway has all the connections it takes; retry later",
    )
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// HTTP/2 streams one connection may have open at once (browsers open
/// at most 100, curl 100 as well).
const MAX_STREAMS_PER_CONNECTION: u32 = 100;

/// Between HTTP/2 pings on a connection, and how long an answer may take:
/// a peer gone without a FIN is noticed within both.
const H2_PING_EVERY: Duration = Duration::from_secs(20);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// When a listener's connections are asked to finish: `draining` (new
/// requests are refused from then; HTTP/2 clients get a GOAWAY so they
/// open their next stream elsewhere, as HTTP/1.1 clients do on the
/// refusal's `Connection: close`), and `stop` (the listener closes, every
/// connection finishes its current requests within `AFTER_STOP`).
#[derive(Clone)]
pub struct DrainSignals {
    pub draining: CancellationToken,
    pub stop: CancellationToken,
}

/// What the listener counts, for the operator's metrics (the gateway's
/// `agui_gateway_open_connections` and `agui_gateway_refused_connections_total`).
pub trait ConnectionCounts: Send + Sync {
    /// A connection over `max_connections`, refused.
    fn refused_connection(&self);
    /// `delta` is +1 when a connection opens, -1 when it closes.
    fn open_connections(&self, delta: i64);
}

/// How a request came in, for what must not take a client's word for it
/// (the scheme a forwarded request names, the card's base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transport {
    /// Over TLS.
    pub secure: bool,
}

/// Serves `app` on `listener` until `drain.stop` fires, then waits for open
/// connections to finish their requests. With `tls`, every connection is
/// TLS and ALPN picks HTTP/2 or HTTP/1.1; without, a connection that opens
/// with the HTTP/2 preface speaks HTTP/2 (prior knowledge, behind a proxy
/// that does), any other HTTP/1.1.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    counts: Arc<dyn ConnectionCounts>,
    drain: DrainSignals,
    tls: Option<Arc<EdgeTls>>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS));
    let connections = TaskTracker::new();
    // A plain-text 503 means nothing inside a TLS handshake: there, a
    // connection over the cap is closed without a word.
    let refuse_in_words = tls.is_none();
    let protocols = Arc::new(Protocols::new(limits, tls));
    let refused_log = LogThrottle::new();
    loop {
        let accepted = tokio::select! {
            _ = drain.stop.cancelled() => break,
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
            counts.refused_connection();
            if refused_log.due() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connection refused: the gateway has all the connections it takes"
                );
            }
            if refuse_in_words && let Ok(refusal) = refusals.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream).await;
                    drop(refusal);
                });
            }
            continue;
        };
        // Each event must leave at once: no Nagle delay on small writes.
        let _ = stream.set_nodelay(true);
        let open = OpenConnection::new(counts.clone());
        let protocols = protocols.clone();
        let app = app.clone();
        let drain = drain.clone();
        connections.spawn(async move {
            protocols.connection(stream, peer, app, drain).await;
            drop(open);
            drop(slot);
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// How the listener speaks on its connections.
struct Protocols {
    http1: hyper::server::conn::http1::Builder,
    http2: hyper::server::conn::http2::Builder<TokioExecutor>,
    limits: ConnectionLimits,
    tls: Option<Arc<EdgeTls>>,
}

impl Protocols {
    fn new(limits: ConnectionLimits, tls: Option<Arc<EdgeTls>>) -> Protocols {
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            // A request head larger than this gets a 431; hyper's default
            // (about 400 KB) times max_connections would be gigabytes.
            .max_buf_size(MAX_HEAD_BYTES);
        let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
            .initial_connection_window_size(CONNECTION_WINDOW)
            // The same bound on a request head as HTTP/1.1's.
            .max_header_list_size(MAX_HEAD_BYTES as u32)
            .keep_alive_interval(H2_PING_EVERY)
            .keep_alive_timeout(H2_PING_TIMEOUT);
        Protocols {
            http1,
            http2,
            limits,
            tls,
        }
    }

    /// One connection, from its first byte: the TLS handshake or the
    /// preface, then its requests; the first request head must be in
    /// within the header-read timeout of the accept, whatever came first.
    async fn connection(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        app: Router,
        drain: DrainSignals,
    ) {
        let accepted = tokio::time::Instant::now();
        let io = WriteTimeout::new(stream, self.limits.write_timeout);
        let within = self.limits.header_read_timeout;
        let at = Arrival {
            peer,
            accepted,
            secure: self.tls.is_some(),
        };
        match &self.tls {
            // Boxed: a TLS connection's future (rustls's state inline) is
            // several KiB larger than a clear-text one's, and a future is
            // the size of its largest branch: unboxed, every clear-text
            // connection would hold that much for as long as it lives.
            Some(tls) => {
                Box::pin(async move {
                    let stop = drain.stop.clone();
                    let accept = tls.acceptor().accept(io);
                    let Some(io) = opening(&stop, within, accept).await else {
                        return;
                    };
                    let protocol = AgreedProtocol::of_alpn(io.get_ref().1.alpn_protocol());
                    self.requests(io, protocol, at, app, drain).await;
                })
                .await;
            }
            None => {
                let Some((io, protocol)) = opening(&drain.stop, within, sniff(io)).await else {
                    return;
                };
                self.requests(io, protocol, at, app, drain).await;
            }
        }
    }

    async fn requests<I>(
        &self,
        io: I,
        protocol: AgreedProtocol,
        at: Arrival,
        app: Router,
        drain: DrainSignals,
    ) where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io = TokioIo::new(io);
        let Arrival {
            peer,
            accepted,
            secure,
        } = at;
        let transport = Transport { secure };
        match protocol {
            AgreedProtocol::Http1 => {
                let app = app.map_request(move |mut request: Request<Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(peer));
                    request.extensions_mut().insert(transport);
                    own_scheme(&mut request, secure);
                    request
                });
                // What the handshake or the preface left of the first
                // head's time (at least a moment to read what is there).
                // hyper has one timer for every head of a connection: the
                // later ones, and the keep-alive idle limit, get the same
                // (the handshake's milliseconds less than configured).
                let left = self
                    .limits
                    .header_read_timeout
                    .saturating_sub(accepted.elapsed())
                    .max(Duration::from_millis(100));
                let mut http1 = self.http1.clone();
                http1.header_read_timeout(left);
                let connection = http1.serve_connection(io, TowerToHyperService::new(app));
                let ends = Ends {
                    stop: drain.stop,
                    draining: None,
                    watch: None,
                };
                ends.drive(connection, std::future::pending()).await;
            }
            AgreedProtocol::Http2 => {
                let watch = Watch::new(accepted);
                let budget = Budget::for_bodies_of(self.limits.max_request_bytes);
                let service = {
                    let watch = watch.clone();
                    service_fn(move |request: Request<Incoming>| {
                        let mut request = request.map(|body| Body::new(budget.wrap(body)));
                        request.extensions_mut().insert(ConnectInfo(peer));
                        request.extensions_mut().insert(transport);
                        host_from_authority(&mut request);
                        own_scheme(&mut request, secure);
                        let in_flight = watch.request();
                        let watch = watch.clone();
                        let call = app.clone().oneshot(request);
                        async move {
                            let response = call.await?;
                            // Watched before the request is uncounted: the
                            // connection never looks quiet in between.
                            let response = response.map(|body| watch.watched(body));
                            drop(in_flight);
                            Ok::<_, Infallible>(response)
                        }
                    })
                };
                let connection = self.http2.serve_connection(io, service);
                let limits = self.limits;
                let idle = watch
                    .clone()
                    .idle(limits.write_timeout, limits.header_read_timeout);
                let ends = Ends {
                    stop: drain.stop,
                    draining: Some(drain.draining),
                    watch: Some(watch),
                };
                // Boxed, as the TLS branch is (`connection`): an HTTP/1.1
                // connection does not hold the size of HTTP/2's.
                Box::pin(ends.drive(connection, idle)).await;
            }
        }
    }
}

/// A connection's opening (the TLS handshake, the preface) within
/// `within`; none if it fails, or at `stop`: a connection that has not
/// sent its first request has nothing to finish, and is dropped at once.
async fn opening<T, E>(
    stop: &CancellationToken,
    within: Duration,
    opened: impl Future<Output = Result<T, E>>,
) -> Option<T> {
    tokio::select! {
        () = stop.cancelled() => None,
        opened = tokio::time::timeout(within, opened) => opened.ok()?.ok(),
    }
}

/// Where and when a connection came in, and whether over TLS.
#[derive(Clone, Copy)]
struct Arrival {
    peer: SocketAddr,
    accepted: tokio::time::Instant,
    secure: bool,
}

/// The request's URI names the scheme the connection is, whatever the
/// client wrote (an absolute-form `https://…` target over clear text, an
/// HTTP/2 `:scheme`): what reads the URI (the card's base) can trust it.
/// Over TLS an origin-form target becomes absolute with its `Host` as the
/// authority; one whose `Host` is no authority keeps no scheme (and the
/// `Transport` extension still says TLS).
fn own_scheme<B>(request: &mut Request<B>, secure: bool) {
    // The common case (clear text, origin form) is left as it came, before
    // any copy of the URI.
    if !secure && request.uri().scheme().is_none() {
        return;
    }
    let mut parts = request.uri().clone().into_parts();
    if parts.authority.is_none() {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|host| Authority::try_from(host.as_bytes()).ok());
        let Some(host) = host else {
            return;
        };
        parts.authority = Some(host);
    }
    parts.scheme = Some(if secure { Scheme::HTTPS } else { Scheme::HTTP });
    if parts.path_and_query.is_none() {
        parts.path_and_query = Some(PathAndQuery::from_static("/"));
    }
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

/// HTTP/2 carries the host as `:authority`, which hyper puts in the URI;
/// the gateway's readers of `Host` (forwarding, logs, CORS) get it there.
/// A `Host` beside it that says otherwise is replaced (RFC 9113 8.3.1:
/// the two must agree; the authority is what the card is built from).
fn host_from_authority<B>(request: &mut Request<B>) {
    let host = request
        .uri()
        .authority()
        .and_then(|authority| HeaderValue::from_str(authority.as_str()).ok());
    if let Some(host) = host {
        request.headers_mut().insert(header::HOST, host);
    }
}

/// Counts a connection in the open-connections gauge while it lives (a
/// `Drop`, so a connection task that ends any way uncounts it).
struct OpenConnection(Arc<dyn ConnectionCounts>);

impl OpenConnection {
    fn new(counts: Arc<dyn ConnectionCounts>) -> OpenConnection {
        counts.open_connections(1);
        OpenConnection(counts)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections(-1);
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
