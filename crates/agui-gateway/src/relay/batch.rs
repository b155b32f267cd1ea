//! Batching: the client gets one write per burst of upstream chunks, not
//! one per chunk. Nothing waits to batch (a lone event leaves at once):
//! after a piece, the relay takes only what the upstream has ready now.
//!
//! reqwest hands a body over one chunk at a time from its connection task,
//! so "ready now" needs that task to run: when the body has nothing, the
//! relay lets the scheduler turn (`yield_turn`) and looks again. Without
//! this, hyper flushes after every chunk and a burst of 200 chunks read in
//! one system call goes out in 200. A lean body (`crate::upstream::lean`) needs no
//! turns: each poll reads the socket itself and hands over all of it.

use std::task::Poll;
use std::time::Instant;

use bytes::Bytes;

use super::{RelayState, Source, keep_scratch, take_scratch};
use crate::upstream::StreamResponse;

/// Output gathered into one piece (`next_batch`) stops growing here.
const BATCH_BYTES: usize = 64 * 1024;

/// Turns of the scheduler a batch waits through for the upstream's next
/// chunk: measured, the connection task needs two to pass on a chunk it
/// has already read.
const IDLE_TURNS: u32 = 2;

/// The turns a batch may take for `response`'s body: none for a lean body,
/// whose every poll hands over all that was read.
pub(super) fn turns_for(response: &StreamResponse) -> u32 {
    if response.handed_one_by_one {
        IDLE_TURNS
    } else {
        0
    }
}

impl RelayState {
    /// The next piece of the response body, or `None` at its end, with
    /// whatever else the upstream has ready joined to it.
    pub(super) async fn next_batch(&mut self) -> Option<Bytes> {
        let first = self.next().await?;
        if first.is_empty() {
            return Some(first);
        }
        let mut more = take_scratch();
        let mut idle_turns = 0;
        while more.len() < BATCH_BYTES && !self.observer.finished && self.deferred.is_none() {
            let Source::Events(body) = &mut self.source else {
                break;
            };
            match std::future::poll_fn(|cx| Poll::Ready(body.as_mut().poll_next(cx))).await {
                Poll::Pending if idle_turns == self.batch_turns => break,
                Poll::Pending => {
                    idle_turns += 1;
                    yield_turn().await;
                }
                Poll::Ready(Some(Ok(bytes))) => {
                    idle_turns = 0;
                    self.last_upstream = Instant::now();
                    self.convert_sse(&bytes, &mut more);
                }
                // An end or an error is the next step's to handle.
                Poll::Ready(end) => self.deferred = Some(end),
            }
        }
        if more.is_empty() {
            keep_scratch(more);
            return Some(first);
        }
        self.last_output = Instant::now();
        let piece = Bytes::from([&first[..], &more[..]].concat());
        keep_scratch(more);
        Some(piece)
    }
}

/// Lets every task already woken run once, then goes on. Not tokio's
/// `yield_now`, which waits for the worker to poll the I/O driver first
/// (a system call when the worker has nothing else to run).
async fn yield_turn() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}
