//! Following a run another replica holds, through the shared journal: the
//! entries after the client's id, then each new one as it is written
//! (a blocking read on a connection of its own). When the run goes quiet
//! and its lease has lapsed (its replica died), this replica takes the
//! lease and the run over (`relay::take_over`) and keeps following.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_journal::redis::{BLOCK, Entry, RedisJournal, RemoteRun, Tail};
use agui_journal::{self as journal, ResumeError, RunIdentity, RunLog, frame_start};
use bytes::Bytes;
use futures::Stream;
use tokio::sync::OwnedSemaphorePermit;

use crate::obs::metrics::NO_AGENT;
use crate::relay;
use crate::state::AppHandle;
use crate::upstream::Agent;

use super::ResumeRefused;

/// Takeovers one follower starts at most (each releases the lease when it
/// cannot go on).
const MAX_TAKEOVERS: u32 = 3;

struct RemoteFollower {
    state: AppHandle,
    journal: Arc<RedisJournal>,
    tail: Tail,
    remote: RemoteRun,
    /// The number of the last frame handed out.
    cursor: u64,
    ready: VecDeque<Bytes>,
    ended: bool,
    takeovers: u32,
    /// The run is gone from Redis (expired, unshared): nothing more comes.
    gone: bool,
    /// The listeners of a run this replica took over: this follower is
    /// one while it lasts.
    following: Option<Arc<RunLog>>,
    keepalive: Duration,
    last_sent: Instant,
    /// A place under `max_streams`: a remote follower holds a Redis
    /// connection of its own.
    _permit: OwnedSemaphorePermit,
}

impl Drop for RemoteFollower {
    fn drop(&mut self) {
        if let Some(log) = &self.following {
            log.detach();
        }
    }
}

/// Frames of `entries` after `cursor`, in order; `None` when frames are
/// missing (the journal no longer holds them).
fn frames_after(
    key: &str,
    cursor: &mut u64,
    entries: Vec<Entry>,
    out: &mut VecDeque<Bytes>,
) -> Option<bool> {
    let mut ended = false;
    for entry in entries {
        if entry.last <= *cursor {
            continue;
        }
        if entry.first > *cursor + 1 {
            return None;
        }
        let start = if entry.first <= *cursor {
            frame_start(&entry.out, key, *cursor + 1)?
        } else {
            0
        };
        out.push_back(entry.out.slice(start..));
        *cursor = entry.last;
        ended |= entry.terminal;
    }
    Some(ended)
}

impl RemoteFollower {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(ready) = journal::joined(&mut self.ready) {
                self.last_sent = Instant::now();
                return Some(ready);
            }
            if self.ended || self.gone {
                return None;
            }
            let key = self.remote.key.clone();
            let entries = self
                .tail
                .read_after(self.cursor, Some(BLOCK))
                .await
                .inspect_err(|err| {
                    tracing::warn!(run = key, "following a shared run failed: {err}")
                })
                .ok()?;
            if entries.is_empty() {
                self.quiet().await;
                if self.last_sent.elapsed() >= self.keepalive {
                    self.last_sent = Instant::now();
                    return Some(Bytes::from_static(b": ping\n\n"));
                }
                continue;
            }
            self.ended = frames_after(&key, &mut self.cursor, entries, &mut self.ready)?;
        }
    }

    /// Nothing new: if nobody holds the unfinished run, take it over; if
    /// the run is gone, or nobody holds it and this follower gave up
    /// taking it over, the stream ends (without a terminal event: the
    /// client's reconnect then gets a clear 410).
    async fn quiet(&mut self) {
        let key = &self.remote.key;
        if self.journal.is_leased(key).await.unwrap_or(true) {
            return;
        }
        let run = match self.journal.find(key).await {
            Ok(Some(run)) => run,
            Ok(None) => {
                self.gone = true;
                return;
            }
            Err(_) => return,
        };
        if run.done {
            // Its terminal entry is there to read.
            return;
        }
        if self.takeovers >= MAX_TAKEOVERS {
            self.gone = true;
            return;
        }
        if self.journal.take_over(key).await.unwrap_or(false) {
            self.takeovers += 1;
            let identity = RunIdentity {
                owner: run.owner,
                thread: None,
            };
            let log = RunLog::standalone(key.clone(), identity);
            if let Some(previous) = self.following.replace(log.clone()) {
                previous.detach();
            }
            tokio::spawn(relay::take_over(
                self.state.clone(),
                self.journal.clone(),
                run,
                log,
            ));
        }
    }
}

/// The frames of a run held elsewhere after number `after`, then live.
/// Refused before any byte when the journal no longer holds them.
pub async fn follow(
    state: AppHandle,
    journal: Arc<RedisJournal>,
    remote: RemoteRun,
    after: u64,
) -> Result<impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static, ResumeRefused> {
    // A full gateway says so (503, retry): "not resumable" would have the
    // client start the run again while it goes on.
    let agent = state.named(&remote.spec.agent).ok();
    let permit = state.stream_permit(agent.as_deref().map_or(NO_AGENT, Agent::name))?;
    let mut tail = journal
        .tail(&remote.key)
        .await
        .map_err(|_| ResumeError::Unknown)?;
    let written = tail.last_frame().await.map_err(|_| ResumeError::Unknown)?;
    if after > written {
        // An id this run never wrote.
        return Err(ResumeError::Unknown.into());
    }
    let entries = tail
        .read_after(after, None)
        .await
        .map_err(|_| ResumeError::Unknown)?;
    let mut cursor = after;
    let mut ready = VecDeque::new();
    let ended = match frames_after(&remote.key, &mut cursor, entries, &mut ready) {
        Some(ended) => ended || (ready.is_empty() && remote.done),
        None => return Err(ResumeError::TooOld.into()),
    };
    let follower = RemoteFollower {
        keepalive: state.config.keepalive,
        state,
        journal,
        tail,
        remote,
        cursor,
        ready,
        ended,
        takeovers: 0,
        gone: false,
        following: None,
        last_sent: Instant::now(),
        _permit: permit,
    };
    Ok(futures::stream::unfold(
        follower,
        |mut follower| async move {
            let bytes = follower.next().await?;
            Some((Ok(bytes), follower))
        },
    ))
}
