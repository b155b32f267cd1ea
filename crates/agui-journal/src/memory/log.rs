//! One run's log: its chunks as written, with their first and last frame
//! numbers, its listeners, a watch of its last frame, and its stop signal.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::error::ResumeError;
use crate::frame::after_frame;
use crate::identity::RunIdentity;

/// One run's frames and who listens to them.
pub struct RunLog {
    pub(super) key: String,
    pub(super) identity: RunIdentity,
    journal: Weak<Shared>,
    pub(super) state: Mutex<LogState>,
    /// The number of the last frame appended; a change wakes followers.
    last: watch::Sender<u64>,
    /// The run's A2A task, once the agent named it (what a stop cancels).
    task: Mutex<Option<String>>,
    /// Cancelled when the client stops the run (`request_stop`).
    stopper: Mutex<Option<CancellationToken>>,
}

pub(super) struct LogState {
    pub(super) chunks: VecDeque<Chunk>,
    pub(super) bytes: usize,
    /// The number of the first frame still kept.
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) finished_at: Option<Instant>,
    listeners: usize,
    last_left: Instant,
    /// In the index and counted in its total; an evicted run that still
    /// runs keeps its own bound (`max_run_bytes`) only.
    pub(super) counted: bool,
}

/// Frames `first..=last`, as written: what the converter wrote for several
/// upstream reads in a row, in one buffer. A piece per read cost an
/// allocation, a shared handle and a queue slot per event, about as much
/// again as the frames (issue 42).
pub(super) struct Chunk {
    first: u64,
    last: u64,
    bytes: Frames,
}

/// A chunk's bytes: still taking frames (the newest chunk), or sealed.
enum Frames {
    Open(Vec<u8>),
    Sealed(Bytes),
}

impl Frames {
    fn as_slice(&self) -> &[u8] {
        match self {
            Frames::Open(open) => open,
            Frames::Sealed(sealed) => sealed,
        }
    }

    /// The bytes from `start` on, for a reader (an open chunk's are copied:
    /// it goes on growing).
    fn after(&self, start: usize) -> Bytes {
        match self {
            Frames::Open(open) => Bytes::copy_from_slice(&open[start..]),
            Frames::Sealed(sealed) => sealed.slice(start..),
        }
    }

    /// Takes no more frames: its room shrunk to what it holds (a boxed
    /// slice is exact; `Bytes` from a `Vec` would keep its capacity).
    fn seal(&mut self) {
        if let Frames::Open(open) = self {
            let exact = std::mem::take(open).into_boxed_slice();
            *self = Frames::Sealed(Bytes::from(exact));
        }
    }
}

/// The most a chunk takes before it is sealed: small enough that trimming
/// a run to its bound (`max_run_bytes`, or the journal's `max_bytes`)
/// drops whole chunks and keeps close to it.
fn chunk_room(limits: &crate::config::JournalLimits) -> usize {
    (limits.max_run_bytes.min(limits.max_bytes) / 8).clamp(1, 2048)
}

/// Frames read from a log.
pub struct Slice {
    pub frames: Vec<Bytes>,
    /// The number of the last frame in `frames` (or the cursor, if none).
    pub last: u64,
    /// Nothing will follow: the run wrote its terminal event.
    pub finished: bool,
}

impl Chunk {
    /// The bytes it holds (what the journal counts).
    pub(super) fn len(&self) -> usize {
        self.bytes.as_slice().len()
    }
}

impl LogState {
    /// Drops the oldest chunks (never the last) until at most `keep`
    /// bytes are held.
    pub(super) fn trim_to(&mut self, keep: usize) {
        while self.bytes > keep && self.chunks.len() > 1 {
            if let Some(chunk) = self.chunks.pop_front() {
                self.bytes -= chunk.len();
                self.first = chunk.last + 1;
            }
        }
    }
}

impl RunLog {
    pub(super) fn new(key: String, identity: RunIdentity, journal: Weak<Shared>) -> Arc<RunLog> {
        Arc::new(RunLog {
            key,
            identity,
            journal,
            state: Mutex::new(LogState {
                chunks: VecDeque::new(),
                bytes: 0,
                first: 1,
                last: 0,
                finished_at: None,
                listeners: 1,
                last_left: Instant::now(),
                counted: true,
            }),
            last: watch::channel(0).0,
            task: Mutex::new(None),
            stopper: Mutex::new(None),
        })
    }

    /// The agent named the run's task (its thread keeps it too).
    pub fn note_task(&self, task: &str) {
        if let Ok(mut slot) = self.task.lock() {
            slot.get_or_insert_with(|| task.to_owned());
        }
        if let (Some(thread), Some(journal)) = (&self.identity.thread, self.journal.upgrade())
            && let Ok(mut index) = journal.index.lock()
        {
            index.threads.note_task(&thread.thread, task);
        }
    }

    /// Asks the run to end now (its client stopped it): `false` when it
    /// has ended, or nothing relays it.
    pub fn request_stop(&self) -> bool {
        if self.is_finished() {
            return false;
        }
        let Ok(stopper) = self.stopper.lock() else {
            return false;
        };
        match stopper.as_ref() {
            Some(token) if !token.is_cancelled() => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// What ends the run when its client stops it (`request_stop`).
    pub fn set_stopper(&self, token: CancellationToken) {
        if let Ok(mut stopper) = self.stopper.lock() {
            *stopper = Some(token);
        }
    }

    pub fn task(&self) -> Option<String> {
        self.task.lock().ok().and_then(|slot| slot.clone())
    }

    /// A log in no journal, keeping no frames: the listeners of a run
    /// whose frames live elsewhere (a run taken over, kept in Redis).
    pub fn standalone(key: String, identity: RunIdentity) -> Arc<RunLog> {
        RunLog::new(key, identity, Weak::new())
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// The bytes of the input messages kept with the run.
    pub(super) fn input_bytes(&self) -> usize {
        self.identity.thread.as_ref().map_or(0, |t| t.input.len())
    }

    /// What the converter wrote for one upstream read: frames up to
    /// number `last`, the run's terminal event among them if `terminal`.
    pub fn append(&self, last: u64, bytes: Bytes, terminal: bool) {
        let Some(journal) = self.journal.upgrade() else {
            return;
        };
        let total = {
            let Ok(mut state) = self.state.lock() else {
                return;
            };
            if terminal {
                state.finished_at = Some(Instant::now());
            }
            let before = state.bytes;
            if last > state.last {
                let first = state.last + 1;
                let room = chunk_room(&journal.limits);
                state.bytes += bytes.len();
                state.last = last;
                match state.chunks.back_mut() {
                    Some(Chunk {
                        last: chunk_last,
                        bytes: Frames::Open(open),
                        ..
                    }) if open.len() + bytes.len() <= room => {
                        grow(open, bytes.len(), room);
                        open.extend_from_slice(&bytes);
                        *chunk_last = last;
                    }
                    back => {
                        if let Some(back) = back {
                            back.bytes.seal();
                        }
                        let frames = if bytes.len() >= room {
                            Frames::Sealed(bytes)
                        } else {
                            let mut open = Vec::new();
                            grow(&mut open, bytes.len(), room);
                            open.extend_from_slice(&bytes);
                            Frames::Open(open)
                        };
                        state.chunks.push_back(Chunk {
                            first,
                            last,
                            bytes: frames,
                        });
                    }
                }
            }
            if terminal && let Some(back) = state.chunks.back_mut() {
                back.bytes.seal();
            }
            state.trim_to(journal.limits.max_run_bytes);
            if state.counted {
                journal.adjust(before, state.bytes)
            } else {
                0
            }
        };
        self.last.send_replace(last);
        if total > journal.limits.max_bytes {
            journal.make_room(self);
        }
    }

    /// The run ended without writing its terminal event (the process is
    /// going away): followers stop waiting.
    pub fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.finished_at.get_or_insert_with(Instant::now);
            if let Some(back) = state.chunks.back_mut() {
                back.bytes.seal();
            }
        }
        self.last.send_modify(|_| {});
    }

    pub fn is_finished(&self) -> bool {
        self.state
            .lock()
            .map_or(true, |state| state.finished_at.is_some())
    }

    pub(super) fn expired(&self, ttl: Duration) -> bool {
        self.state.lock().map_or(true, |state| {
            state.finished_at.is_some_and(|at| at.elapsed() >= ttl)
        })
    }

    /// The frames after number `after`, from the first kept one on.
    pub fn read_after(&self, after: u64) -> Result<Slice, ResumeError> {
        let state = self.state.lock().map_err(|_| ResumeError::Unknown)?;
        if after > state.last {
            // An id this run never wrote.
            return Err(ResumeError::Unknown);
        }
        if after < state.last && after + 1 < state.first {
            return Err(ResumeError::TooOld);
        }
        let mut frames = Vec::new();
        for chunk in state.chunks.iter().filter(|c| c.last > after) {
            // From past frame `after`: what a chunk holds between two
            // frames (the inspector's tapped events) goes with the next.
            let start = if chunk.first > after {
                0
            } else {
                after_frame(chunk.bytes.as_slice(), &self.key, after).ok_or(ResumeError::TooOld)?
            };
            frames.push(chunk.bytes.after(start));
        }
        Ok(Slice {
            frames,
            last: state.last.max(after),
            finished: state.finished_at.is_some(),
        })
    }

    pub fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    /// A client started following the run.
    pub fn attach(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.listeners += 1;
        }
    }

    /// A client stopped following the run.
    pub fn detach(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.listeners = state.listeners.saturating_sub(1);
            if state.listeners == 0 {
                state.last_left = Instant::now();
            }
        }
    }

    /// When a run nobody follows is given up (`None` while someone does).
    pub fn abandon_at(&self, grace: Duration) -> Option<Instant> {
        let state = self.state.lock().ok()?;
        (state.listeners == 0).then(|| state.last_left + grace)
    }
}

/// Room for `more` bytes, growing by half again rather than doubling (the
/// newest chunk of every live run has its slack), never past `room`.
fn grow(open: &mut Vec<u8>, more: usize, room: usize) {
    let needed = open.len() + more;
    if needed > open.capacity() {
        let target = (open.len() + open.len() / 2)
            .max(256)
            .clamp(needed, room.max(needed));
        open.reserve_exact(target - open.len());
    }
}
