//! The request bodies in flight on one HTTP/2 connection, bounded
//! together. Each body is bounded by `max_request_bytes`, which over
//! HTTP/1.1 bounds a connection too (one request at a time); over HTTP/2
//! a connection carries up to 100 streams, so without a shared bound one
//! connection could hold 100 bodies being read.
//!
//! Every HTTP/2 request body is wrapped in a `Budgeted` body that charges
//! the connection's `Budget` for the bytes it hands on, and gives them
//! back when it is dropped. The gateway reads a body whole before using it
//! (the gateway's `http::agui_routes::read_body`), so what a body handed on and what its
//! reader holds are the same bytes, until the read ends and the body is
//! dropped. A body that would take the connection past its budget fails
//! with `BodiesInFlight` at once (the reader answers 503 and hyper resets
//! the stream, which frees what HTTP/2 buffered for it) rather than
//! waiting: a stream waiting for budget would keep its unread data in the
//! connection's flow-control window, which the bodies holding the budget
//! need to finish. So the connection always makes progress: bodies that
//! fit are read to their end.
//!
//! What HTTP/2 buffers for a body not read yet is bounded by the
//! connection's flow-control window (`CONNECTION_WINDOW`).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::BoxError;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// How many whole bodies of `max_request_bytes` one connection's bodies in
/// flight may hold between them: a client sending a few large requests at
/// once is served, 100 streams stalled mid-body are not held.
pub const BODIES_PER_CONNECTION: usize = 4;

/// HTTP/2's connection-level receive window: what the client may send
/// ahead of what the gateway has read, on all streams together (hyper's
/// default, set here because the bound above counts on it).
pub const CONNECTION_WINDOW: u32 = 1 << 20;

/// One connection's budget of request body bytes in flight.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    /// One body's own bound (`max_request_bytes`).
    per_body: usize,
    taken: AtomicUsize,
}

impl Budget {
    /// The budget of a connection whose bodies may each be
    /// `max_request_bytes`.
    pub fn for_bodies_of(max_request_bytes: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit: max_request_bytes.saturating_mul(BODIES_PER_CONNECTION),
            per_body: max_request_bytes,
            taken: AtomicUsize::new(0),
        })
    }

    /// Takes `bytes`, or none if that would pass the limit.
    fn take(&self, bytes: usize) -> bool {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                taken.checked_add(bytes).filter(|&sum| sum <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.taken.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// `body`, charged to this budget while it lives.
    pub fn wrap<B>(self: &Arc<Self>, body: B) -> Budgeted<B> {
        Budgeted {
            inner: body,
            budget: self.clone(),
            held: 0,
        }
    }
}

/// Why a body stopped: its connection's bodies in flight are at their
/// budget.
#[derive(Debug, thiserror::Error)]
#[error("the request bodies in flight on this connection reached {limit} bytes")]
pub struct BodiesInFlight {
    pub limit: usize,
}

/// A request body charged to its connection's budget.
pub struct Budgeted<B> {
    inner: B,
    budget: Arc<Budget>,
    /// What this body has taken.
    held: usize,
}

impl<B> Drop for Budgeted<B> {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

impl<B> Body for Budgeted<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                if this.held.saturating_add(len) > this.budget.per_body {
                    // Past its own bound: every reader refuses it as too
                    // large (413, RESOURCE_EXHAUSTED), which is the answer
                    // it should get, not the connection's 503; it keeps
                    // nothing of it.
                    return Poll::Ready(Some(Ok(frame)));
                }
                if !this.budget.take(len) {
                    return Poll::Ready(Some(Err(Box::new(BodiesInFlight {
                        limit: this.budget.limit,
                    }))));
                }
                this.held += len;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn body(
        chunks: &[usize],
    ) -> http_body_util::StreamBody<
        impl futures::Stream<Item = Result<Frame<Bytes>, std::convert::Infallible>> + Unpin,
    > {
        let frames: Vec<_> = chunks
            .iter()
            .map(|&len| Ok(Frame::data(Bytes::from(vec![b'x'; len]))))
            .collect();
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn bodies_share_the_budget_and_give_it_back_when_dropped() {
        let budget = Budget::for_bodies_of(100);
        assert_eq!(budget.limit, 400);
        let mut bodies: Vec<_> = [&[60, 40][..], &[100], &[100], &[90], &[20]]
            .into_iter()
            .map(|chunks| budget.wrap(body(chunks)))
            .collect();
        for read in &mut bodies[..4] {
            while let Some(frame) = read.frame().await {
                assert!(frame.is_ok());
            }
        }
        // 390 taken: 20 more would pass 400.
        let refused = bodies[4]
            .frame()
            .await
            .and_then(Result::err)
            .expect("refused");
        assert!(
            refused.downcast_ref::<BodiesInFlight>().is_some(),
            "{refused}"
        );
        bodies.truncate(3);
        assert_eq!(budget.taken.load(Ordering::Relaxed), 300);
        bodies.clear();
        assert_eq!(budget.taken.load(Ordering::Relaxed), 0);
        let mut whole = budget.wrap(body(&[100]));
        assert!(whole.frame().await.is_some_and(|f| f.is_ok()));
        assert!(whole.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_body_past_its_own_bound_is_its_readers_to_refuse() {
        let budget = Budget::for_bodies_of(100);
        let mut big = budget.wrap(body(&[60, 60]));
        assert!(big.frame().await.is_some_and(|f| f.is_ok()));
        // Not the connection's refusal: the reader sees 120 bytes and
        // answers too large; nothing more is taken.
        assert!(big.frame().await.is_some_and(|f| f.is_ok()));
        assert_eq!(budget.taken.load(Ordering::Relaxed), 60);
    }
}
