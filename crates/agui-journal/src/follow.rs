//! A client following a journaled run: what it missed, then the rest as
//! it is appended, with keep-alive comments while the run is quiet.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::sync::watch;

use crate::error::ResumeError;
use crate::memory::RunLog;

/// The most bytes of ready chunks joined into one write. A client that
/// missed a large run gets it in pieces that share the journal's chunks,
/// never as one copy of it (an unread copy per request would be memory
/// the client chooses).
const JOIN_MAX: usize = 64 << 10;

struct Follower {
    log: Arc<RunLog>,
    /// The number of the last frame read from the log.
    cursor: u64,
    /// Chunks read from the log, not yet handed out.
    pending: VecDeque<Bytes>,
    changes: watch::Receiver<u64>,
    keepalive: Duration,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.log.detach();
    }
}

impl Follower {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(ready) = joined(&mut self.pending) {
                return Some(ready);
            }
            // Marked seen before reading: an append after the read wakes
            // `changed` below, none is missed.
            self.changes.borrow_and_update();
            // The log trimmed past a follower that fell a whole run's
            // bound behind: it ends, and its reconnect is refused (`TooOld`).
            let slice = self.log.read_after(self.cursor).ok()?;
            if !slice.frames.is_empty() {
                self.cursor = slice.last;
                self.pending.extend(slice.frames);
                continue;
            }
            if slice.finished {
                return None;
            }
            tokio::select! {
                changed = self.changes.changed() => changed.ok()?,
                () = tokio::time::sleep(self.keepalive) => {
                    return Some(Bytes::from_static(b": ping\n\n"));
                }
            }
        }
    }
}

/// One write of what is ready: the next chunk, with those after it while
/// they fit in `JOIN_MAX` (a chunk as large alone is handed out as it is).
pub fn joined(pending: &mut VecDeque<Bytes>) -> Option<Bytes> {
    let first = pending.pop_front()?;
    let fits = |len: usize, next: Option<&Bytes>| next.is_some_and(|n| len + n.len() <= JOIN_MAX);
    if !fits(first.len(), pending.front()) {
        return Some(first);
    }
    let mut out = first.to_vec();
    while fits(out.len(), pending.front()) {
        if let Some(next) = pending.pop_front() {
            out.extend_from_slice(&next);
        }
    }
    Some(Bytes::from(out))
}

/// The frames of `log` after number `after`, then live until its terminal
/// event. Refused before any byte when the log no longer holds them.
pub fn follow(
    log: Arc<RunLog>,
    after: u64,
    keepalive: Duration,
) -> Result<impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static, ResumeError> {
    log.read_after(after)?;
    log.attach();
    let follower = Follower {
        changes: log.watch(),
        log,
        cursor: after,
        pending: VecDeque::new(),
        keepalive,
    };
    Ok(futures::stream::unfold(
        follower,
        |mut follower| async move {
            let bytes = follower.next().await?;
            Some((Ok(bytes), follower))
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_chunks_are_joined_up_to_a_bound_and_never_copied_past_it() {
        let big = Bytes::from(vec![b'b'; JOIN_MAX * 4]);
        let mut pending: VecDeque<Bytes> = [
            Bytes::from_static(b"a1"),
            Bytes::from_static(b"a2"),
            big.clone(),
            Bytes::from(vec![b'c'; JOIN_MAX - 1]),
            Bytes::from_static(b"d"),
            Bytes::from_static(b"e"),
        ]
        .into();
        assert_eq!(joined(&mut pending).unwrap(), &b"a1a2"[..]);
        // The large chunk goes out as the journal's own bytes.
        assert_eq!(joined(&mut pending).unwrap().as_ptr(), big.as_ptr());
        assert_eq!(joined(&mut pending).unwrap().len(), JOIN_MAX);
        assert_eq!(joined(&mut pending).unwrap(), &b"e"[..]);
        assert!(joined(&mut pending).is_none());
    }
}
