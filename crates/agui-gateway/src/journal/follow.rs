//! A client following a journaled run: what it missed, then the rest as
//! it is appended, with keep-alive comments while the run is quiet.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::sync::watch;

use super::{ResumeError, RunLog};

struct Follower {
    log: Arc<RunLog>,
    /// The number of the last frame handed out.
    cursor: u64,
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
            // Marked seen before reading: an append after the read wakes
            // `changed` below, none is missed.
            self.changes.borrow_and_update();
            // The log trimmed past a follower that fell a whole run's
            // bound behind: it ends, and its reconnect gets 410.
            let slice = self.log.read_after(self.cursor).ok()?;
            if !slice.frames.is_empty() {
                self.cursor = slice.last;
                return Some(join(slice.frames));
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

/// One write for everything that is ready.
fn join(mut frames: Vec<Bytes>) -> Bytes {
    if frames.len() == 1 {
        return frames.pop().unwrap_or_default();
    }
    let mut out = Vec::with_capacity(frames.iter().map(Bytes::len).sum());
    for frame in &frames {
        out.extend_from_slice(frame);
    }
    Bytes::from(out)
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
