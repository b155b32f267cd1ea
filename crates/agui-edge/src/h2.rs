//! What HTTP/2 needs beyond hyper to keep the listener's bounds per
//! stream. Over HTTP/1.1 the socket carries one response, so the
//! header-read timeout reaps an idle connection and the write timeout a
//! client that stopped reading. Over HTTP/2 neither is seen at the socket:
//! an idle connection keeps answering pings, and a client that stops
//! reading one stream just withholds its flow-control window, so hyper
//! stops polling that stream's body (and with it the upstream call)
//! without any blocked write.
//!
//! So each HTTP/2 connection has a `Watch`: its requests in flight and
//! its open response bodies, looked at every `TICK`. A body that handed
//! hyper a frame and was not polled again within the write timeout has
//! its inner body dropped (what a disconnect does: the run detaches or is
//! cancelled), and hyper resets the stream when it next polls. A
//! connection with nothing in flight for the header-read timeout is closed.
//! The watch also says when a connection asked to finish has nothing open
//! any more (`quiet`), so it closes then rather than when the client does.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;

/// How often a connection's streams are looked at.
const TICK: Duration = Duration::from_secs(1);

/// The most a body hands hyper at once: a frame is "handed over" until
/// hyper asks for the next, so a large event (up to `max_event_bytes`)
/// going out slowly but steadily to a reading client must not look like
/// a stall. 16 KiB is HTTP/2's default frame size.
const MAX_HANDED: usize = 16 << 10;

/// Entries the list of bodies may hold before it is pruned on insert:
/// twice the streams a connection may have open, so a client sending
/// small requests fast cannot grow it between sweeps.
const PRUNE_AT: usize = 200;

/// One HTTP/2 connection's requests and streams.
pub struct Watch {
    started: Instant,
    /// Requests whose response is not made yet.
    in_flight: AtomicUsize,
    /// When a request last came in or a body was last polled (ms since
    /// `started`).
    last_active: AtomicU64,
    bodies: Mutex<Vec<Weak<Stream>>>,
    /// Response bodies hyper still holds (the list above keeps dropped
    /// ones until the next sweep).
    open: AtomicUsize,
    /// Told when the last request in flight or open body goes.
    quieted: Notify,
    /// A request came (a connection without one has nothing to finish).
    asked: AtomicBool,
}

/// A response body's state, shared by the body and the watch.
struct Stream {
    inner: Mutex<Option<Body>>,
    /// When the body last handed hyper a frame that hyper has not asked
    /// past yet (ms since the connection started, plus one; 0: none).
    handed_at: AtomicU64,
}

/// Counts a request in flight while its handler runs (a `Drop`: a
/// request reset before its response is uncounted too).
pub struct UnansweredRequest(Arc<Watch>);

impl Drop for UnansweredRequest {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
        self.0.tell_if_quiet();
    }
}

impl Watch {
    /// The watch of a connection accepted at `accepted` (its idle time
    /// counts from then).
    pub fn new(accepted: Instant) -> Arc<Watch> {
        Arc::new(Watch {
            started: accepted,
            in_flight: AtomicUsize::new(0),
            last_active: AtomicU64::new(0),
            bodies: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            quieted: Notify::new(),
            asked: AtomicBool::new(false),
        })
    }

    /// Whether a request ever came on the connection.
    pub fn was_asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// No request in flight and no response body open.
    pub fn is_quiet(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0 && self.open.load(Ordering::Acquire) == 0
    }

    /// Resolves once the connection may have turned quiet since the last
    /// call (a stored permit: a change before the wait is not missed).
    pub async fn quieted(&self) {
        self.quieted.notified().await;
    }

    fn tell_if_quiet(&self) {
        if self.is_quiet() {
            self.quieted.notify_one();
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last_active.store(self.now_ms(), Ordering::Relaxed);
    }

    pub fn request(self: &Arc<Self>) -> UnansweredRequest {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.asked.store(true, Ordering::Relaxed);
        self.touch();
        UnansweredRequest(self.clone())
    }

    /// The response's body, watched.
    pub fn watched(self: &Arc<Self>, body: Body) -> Body {
        let stream = Arc::new(Stream {
            inner: Mutex::new(Some(body)),
            handed_at: AtomicU64::new(0),
        });
        if let Ok(mut bodies) = self.bodies.lock() {
            if bodies.len() >= PRUNE_AT {
                bodies.retain(|weak| weak.strong_count() > 0);
            }
            bodies.push(Arc::downgrade(&stream));
        }
        self.open.fetch_add(1, Ordering::AcqRel);
        Body::new(Watched {
            stream,
            watch: self.clone(),
            rest: Bytes::new(),
        })
    }

    /// Drops the bodies stalled for `write_timeout`; true while the
    /// connection has anything open or was active within `idle`.
    fn sweep(&self, write_timeout: Duration, idle: Duration) -> bool {
        self.sweep_at(self.now_ms(), write_timeout, idle)
    }

    fn sweep_at(&self, now: u64, write_timeout: Duration, idle: Duration) -> bool {
        let limit = u64::try_from(write_timeout.as_millis()).unwrap_or(u64::MAX);
        let mut stalled = Vec::new();
        let open = match self.bodies.lock() {
            Ok(mut bodies) => {
                bodies.retain(|weak| {
                    let Some(stream) = weak.upgrade() else {
                        return false;
                    };
                    let handed = stream.handed_at.load(Ordering::Relaxed);
                    if handed != 0 && now.saturating_sub(handed - 1) >= limit {
                        stalled.push(stream);
                        return false;
                    }
                    true
                });
                bodies.len()
            }
            Err(_) => 0,
        };
        for stream in stalled {
            // Dropped here, outside the list's lock: a relay's drop may
            // take a moment (it detaches the run).
            let body = stream.inner.lock().ok().and_then(|mut inner| inner.take());
            if body.is_some() {
                tracing::debug!("an HTTP/2 stream's client stopped reading: its response ends");
            }
            drop(body);
        }
        let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        open > 0
            || self.in_flight.load(Ordering::Relaxed) > 0
            || now.saturating_sub(self.last_active.load(Ordering::Relaxed)) < idle_ms
    }

    /// Resolves when the connection has been idle for `idle`; meanwhile
    /// ends the streams whose client stopped reading.
    pub async fn idle(self: Arc<Self>, write_timeout: Duration, idle: Duration) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if !self.sweep(write_timeout, idle) {
                return;
            }
        }
    }
}

/// A response body the watch can end.
struct Watched {
    stream: Arc<Stream>,
    watch: Arc<Watch>,
    /// What is left of a data frame larger than `MAX_HANDED`.
    rest: Bytes,
}

/// What hyper gets from a body whose client stopped reading.
#[derive(Debug, thiserror::Error)]
#[error("the client stopped reading this stream")]
struct Stalled;

impl Drop for Watched {
    fn drop(&mut self) {
        self.watch.open.fetch_sub(1, Ordering::AcqRel);
        self.watch.tell_if_quiet();
    }
}

impl Watched {
    /// The next at most `MAX_HANDED` bytes of `rest`.
    fn next_piece(&mut self) -> Bytes {
        let take = self.rest.len().min(MAX_HANDED);
        self.rest.split_to(take)
    }
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        this.stream.handed_at.store(0, Ordering::Relaxed);
        let polled = if this.rest.is_empty() {
            let Ok(mut inner) = this.stream.inner.lock() else {
                return Poll::Ready(Some(Err(axum::Error::new(Stalled))));
            };
            let Some(body) = inner.as_mut() else {
                return Poll::Ready(Some(Err(axum::Error::new(Stalled))));
            };
            let polled = Pin::new(body).poll_frame(cx);
            drop(inner);
            match polled {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        this.rest = data;
                        Poll::Ready(Some(Ok(Frame::data(this.next_piece()))))
                    }
                    Err(frame) => Poll::Ready(Some(Ok(frame))),
                },
                other => other,
            }
        } else {
            // The inner body may have been dropped meanwhile: what it
            // handed over before goes out still only if it was not.
            if this
                .stream
                .inner
                .lock()
                .map_or(true, |inner| inner.is_none())
            {
                return Poll::Ready(Some(Err(axum::Error::new(Stalled))));
            }
            Poll::Ready(Some(Ok(Frame::data(this.next_piece()))))
        };
        if let Poll::Ready(Some(Ok(_))) = &polled {
            let now = this.watch.now_ms();
            this.watch.last_active.store(now, Ordering::Relaxed);
            this.stream.handed_at.store(now + 1, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        // Never while a watched body lives: a body the watch dropped must
        // end in an error (a reset), not a clean end of stream.
        self.rest.is_empty()
            && self
                .stream
                .inner
                .lock()
                .is_ok_and(|inner| inner.as_ref().is_some_and(http_body::Body::is_end_stream))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let inner = self
            .stream
            .inner
            .lock()
            .ok()
            .and_then(|inner| inner.as_ref().map(http_body::Body::size_hint))
            .unwrap_or_default();
        let rest = self.rest.len() as u64;
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower().saturating_add(rest));
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(rest));
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    async fn next(body: &mut Body) -> Option<Result<Frame<Bytes>, axum::Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
    }

    #[tokio::test]
    async fn a_body_not_polled_after_a_frame_is_dropped_and_an_idle_connection_ends() {
        let (write, idle) = (Duration::from_secs(60), Duration::from_secs(100));
        let watch = Watch::new(Instant::now());
        let request = watch.request();
        // A body that would stream for ever; the drop of its source shows
        // the watch ended it.
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let source = tokio_stream::wrappers::ReceiverStream::new(rx);
        let mut body = watch.watched(Body::from_stream(source));
        drop(request);
        tx.send(Ok(Bytes::from_static(b"data: 1\n\n"))).await.ok();
        let frame = next(&mut body).await.expect("a frame").expect("data");
        assert_eq!(
            frame.into_data().ok(),
            Some(Bytes::from_static(b"data: 1\n\n"))
        );
        // Polled again and waiting on the source: not stalled, whatever
        // the time.
        let waiting = futures::poll!(std::pin::pin!(next(&mut body)));
        assert!(waiting.is_pending());
        assert!(watch.sweep_at(120_000, write, idle));
        assert!(!tx.is_closed());
        // A frame handed over and never asked past: dropped after the
        // write timeout, and the next poll is an error.
        tx.send(Ok(Bytes::from_static(b"data: 2\n\n"))).await.ok();
        assert!(next(&mut body).await.is_some());
        assert!(watch.sweep_at(30_000, write, idle));
        assert!(!tx.is_closed());
        assert!(watch.sweep_at(61_000, write, idle), "active within `idle`");
        assert!(tx.is_closed(), "the stalled body's source was dropped");
        assert!(matches!(next(&mut body).await, Some(Err(_))));
        drop(body);
        // Nothing open, nothing in flight: idle once `idle` has passed.
        assert!(watch.sweep_at(90_000, write, idle));
        assert!(!watch.sweep_at(101_000, write, idle));
    }

    #[tokio::test]
    async fn the_watch_says_when_the_last_request_or_body_goes() {
        let watch = Watch::new(Instant::now());
        assert!(watch.is_quiet() && !watch.was_asked());
        let request = watch.request();
        assert!(!watch.is_quiet() && watch.was_asked());
        // The body is watched before the request is uncounted.
        let body = watch.watched(Body::from("ok"));
        drop(request);
        assert!(!watch.is_quiet());
        drop(body);
        assert!(watch.is_quiet());
        // Told, and the notice kept until someone waits.
        let told = tokio::time::timeout(Duration::from_millis(100), watch.quieted()).await;
        assert!(told.is_ok());
    }

    #[tokio::test]
    async fn a_large_frame_goes_out_in_pieces_each_of_which_is_progress() {
        let watch = Watch::new(Instant::now());
        let big = Bytes::from(vec![b'x'; 40 << 10]);
        let mut body = watch.watched(Body::from(big.clone()));
        let mut pieces = Vec::new();
        while let Some(frame) = next(&mut body).await {
            let data = frame.expect("data").into_data().expect("a data frame");
            pieces.push(data.len());
        }
        assert_eq!(pieces, [16 << 10, 16 << 10, 8 << 10]);
        // Many small responses on one connection: the list stays bounded.
        for _ in 0..1_000 {
            drop(watch.watched(Body::from("ok")));
        }
        assert!(watch.bodies.lock().expect("not poisoned").len() <= PRUNE_AT);
    }
}
