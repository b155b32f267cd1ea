//! How a connection is asked to finish, and how long it then has. The
//! gateway's exit waits for its connections, so every way a connection
//! is asked ends in a bounded time: the grace is the grace, with no
//! hidden seconds after it.
//!
//! - `stop` (the grace is over, or nothing was in flight): the connection
//!   finishes what it has (a stream ends with the relay's `RUN_ERROR`)
//!   within `AFTER_STOP`, then it is dropped, whether or not its client
//!   reads.
//! - `draining` (HTTP/2's, new requests refused): a GOAWAY at once, so the
//!   client opens its next stream elsewhere; the connection closes as
//!   soon as its streams are done (HTTP/1.1 clients get the drain's
//!   `Connection: close` instead).
//! - idle for the header-read timeout (HTTP/2's `Watch::idle`): the same
//!   goodbye.
//!
//! Once asked, an HTTP/2 connection with nothing open has `GOODBYE` for
//! hyper's GOAWAY, ping and last GOAWAY (one round trip for a client that
//! answers pings), then it is dropped: a client that does not answer
//! cannot hold it open. At `stop`, one that never sent a request (still in
//! hyper's handshake, say) is dropped at once, as `listener` drops one
//! still in its TLS handshake or preface, and as hyper closes an HTTP/1.1
//! connection that has not sent a whole request head.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulConnection;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use crate::h2::Watch;

/// What a connection may take after `stop` to send its streams' last
/// frames (the relay's `RUN_ERROR`) and close; then it is dropped.
pub const AFTER_STOP: Duration = Duration::from_millis(500);

/// What a connection asked to finish, with nothing open, may take to say
/// goodbye.
const GOODBYE: Duration = Duration::from_millis(250);

/// What asks a connection to finish.
pub(crate) struct Ends {
    pub stop: CancellationToken,
    /// HTTP/2's: a GOAWAY at once when draining.
    pub draining: Option<CancellationToken>,
    /// HTTP/2's: what the connection has open.
    pub watch: Option<Arc<Watch>>,
}

/// Why the connection is ending, and so what bounds its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    No,
    /// Draining: a stream opened after the GOAWAY was sent is still
    /// served (the GOAWAY names no last stream until its ping returns).
    Draining,
    /// Stopped, or idle: nothing new is served.
    Finally,
}

impl Ends {
    /// Drives `connection` to its end, bounded once it is asked to finish
    /// (on `stop`, on `draining`, or when `idle` resolves).
    pub async fn drive<C>(self, connection: C, idle: impl Future<Output = ()>)
    where
        C: GracefulConnection,
    {
        let mut connection = std::pin::pin!(connection);
        let mut idle = std::pin::pin!(idle);
        let draining = async {
            match &self.draining {
                Some(draining) => draining.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let mut draining = std::pin::pin!(draining);
        let mut asked = Asked::No;
        let mut stopped = false;
        let mut deadline = Deadline::default();
        loop {
            tokio::select! {
                _ = connection.as_mut() => return,
                () = self.stop.cancelled(), if !stopped => {
                    if self.watch.as_ref().is_some_and(|watch| !watch.was_asked()) {
                        // Still in hyper's handshake, or never sent a
                        // request: nothing to finish.
                        return;
                    }
                    stopped = true;
                    if asked == Asked::No {
                        connection.as_mut().graceful_shutdown();
                    }
                    asked = Asked::Finally;
                    deadline.by(AFTER_STOP);
                    if self.is_quiet() {
                        deadline.by(GOODBYE);
                    }
                }
                () = &mut draining, if asked == Asked::No => {
                    asked = Asked::Draining;
                    connection.as_mut().graceful_shutdown();
                    if self.is_quiet() {
                        deadline.by(GOODBYE);
                    }
                }
                () = &mut idle, if asked == Asked::No => {
                    // As a drain: hyper's first GOAWAY leaves room for a
                    // stream the client opened meanwhile, which is then
                    // served, not cut when the goodbye's time is up.
                    asked = Asked::Draining;
                    connection.as_mut().graceful_shutdown();
                    deadline.by(GOODBYE);
                }
                () = quieted(self.watch.as_deref()) => {
                    if asked != Asked::No && self.is_quiet() {
                        deadline.by(GOODBYE);
                    }
                }
                () = deadline.reached() => {
                    // A draining connection that took a stream meanwhile
                    // serves it (`stop` bounds that too).
                    if asked == Asked::Finally || self.is_quiet() {
                        return;
                    }
                    deadline = Deadline::default();
                }
            }
        }
    }

    fn is_quiet(&self) -> bool {
        self.watch.as_ref().is_some_and(|watch| watch.is_quiet())
    }
}

/// Resolves when an HTTP/2 connection may have turned quiet (a fresh wait
/// each time: the watch keeps a notice given while nobody waited).
async fn quieted(watch: Option<&Watch>) {
    match watch {
        Some(watch) => watch.quieted().await,
        None => std::future::pending().await,
    }
}

/// The earliest end a connection was given, if any.
#[derive(Default)]
struct Deadline(Option<Pin<Box<Sleep>>>);

impl Deadline {
    /// At the latest `within` from now.
    fn by(&mut self, within: Duration) {
        let at = Instant::now() + within;
        match &mut self.0 {
            Some(sleep) if sleep.deadline() <= at => {}
            Some(sleep) => sleep.as_mut().reset(at),
            None => self.0 = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    async fn reached(&mut self) {
        match &mut self.0 {
            Some(sleep) => sleep.as_mut().await,
            None => std::future::pending().await,
        }
    }
}
