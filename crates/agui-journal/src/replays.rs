//! Thread replays held for the clients reading them.
//!
//! A replay (a whole thread as one `MESSAGES_SNAPSHOT`, or the messages
//! route's body) is up to 16 MiB, built from the journal or the agent for
//! about 10 ms of CPU. A client that asks for it and never reads it must
//! not hold a copy of its own, and one that resets each request must not
//! make the gateway build it each time. So:
//! - one copy per thread, kind and version (`Held`), shared by every
//!   request reading it, and kept for a while after it was built
//!   (`FRESH_FOR`, shorter for what the agent told: its tasks may change
//!   without the journal knowing), so a repeat costs a look-up;
//! - the bytes of all copies alive are bounded for the gateway
//!   (`MAX_HELD`: a copy is refused when there is no room, after older
//!   cached copies no request reads are let go), and the bytes each reader
//!   (a caller, or an anonymous caller's address) has in requests not yet
//!   read out are bounded per reader (`MAX_PER_READER`): an unread replay
//!   costs its budget, never memory of its own;
//! - one build at a time per replay (one waiting finds what the one before
//!   it built). Builds of different threads are not queued behind each
//!   other: one that waits on a slow agent must not hold up replays the
//!   journal answers, and what builds hold is bounded where it is read
//!   (the journal's bytes, `upstream::answer`'s budget).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use crate::identity::{CallerDigest, ThreadRef};

/// The bytes of all replays held at once (read, or cached).
pub const MAX_HELD: usize = 128 << 20;
/// The bytes one reader may have in replays it has not read out.
pub const MAX_PER_READER: usize = 64 << 20;
/// How long a replay built from the journal stays cached: the version
/// check (the thread's runs and whether each ended) sees every change the
/// journal makes.
const FRESH_FOR: Duration = Duration::from_secs(30);
/// How long one built from the agent's tasks does.
const FRESH_FROM_AGENT: Duration = Duration::from_secs(2);
/// Cached replays at most (each also holds its bytes' room).
const MAX_CACHED: usize = 1024;
/// Readers with bytes out at most: past it a new reader waits for room.
const MAX_READERS: usize = 10_000;

/// What a replay is the body of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `connect`'s `MESSAGES_SNAPSHOT` frame.
    Snapshot,
    /// The runtime's messages route's JSON.
    Messages,
}

/// Who reads: a caller with an identity, else the address it calls from
/// (anonymous callers are all one caller to the journal, not here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reader {
    Caller(CallerDigest),
    Address(IpAddr),
}

impl Reader {
    pub fn new(caller: &CallerDigest, address: Option<IpAddr>) -> Reader {
        match address {
            Some(address) if caller.is_anonymous() => Reader::Address(address),
            _ => Reader::Caller(*caller),
        }
    }
}

/// Why a replay is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The reader has `MAX_PER_READER` bytes out.
    ReaderFull,
    /// The gateway holds `MAX_HELD` bytes of replays, or builds are queued
    /// past their deadline.
    Busy,
}

/// One replay's bytes, with their room in `MAX_HELD` (given back when the
/// last request reading them and the cache let go).
#[derive(Debug)]
pub struct Held {
    pub bytes: Bytes,
    _room: Option<OwnedSemaphorePermit>,
}

struct Cached {
    version: u64,
    built: Instant,
    fresh_for: Duration,
    held: Arc<Held>,
}

#[derive(Default)]
struct Book {
    cached: HashMap<(ThreadRef, Kind), Cached>,
    /// Who builds which replay now: one at a time per replay.
    building: HashMap<(ThreadRef, Kind), Arc<tokio::sync::Mutex<()>>>,
    /// Bytes out per reader, removed at zero.
    out: HashMap<Reader, usize>,
}

/// Clones share the replays held (a reload's state keeps them).
#[derive(Clone)]
pub struct Replays {
    book: Arc<Mutex<Book>>,
    /// `MAX_HELD` in KiB.
    room: Arc<Semaphore>,
}

impl Default for Replays {
    fn default() -> Self {
        Replays {
            book: Arc::default(),
            room: Arc::new(Semaphore::new(MAX_HELD >> 10)),
        }
    }
}

impl Replays {
    /// The cached replay of `thread` at `version`, while fresh.
    pub fn cached(&self, thread: &ThreadRef, kind: Kind, version: u64) -> Option<Arc<Held>> {
        let mut book = self.lock();
        let key = (*thread, kind);
        let cached = book.cached.get(&key)?;
        if cached.version == version && cached.built.elapsed() < cached.fresh_for {
            return Some(cached.held.clone());
        }
        book.cached.remove(&key);
        None
    }

    /// A turn to build `thread`'s replay of `kind`, waited for until
    /// `deadline`: after whoever builds the same one now (look in the
    /// cache again then).
    pub async fn build_turn(
        &self,
        thread: &ThreadRef,
        kind: Kind,
        deadline: tokio::time::Instant,
    ) -> Result<Turn<'_>, Refused> {
        let key = (*thread, kind);
        let same = self.lock().building.entry(key).or_default().clone();
        let turn = tokio::time::timeout_at(deadline, same.clone().lock_owned()).await;
        drop(same);
        match turn {
            Ok(own) => Ok(Turn {
                key,
                book: &self.book,
                own: Some(own),
            }),
            Err(_) => {
                forget_build(&self.book, &key);
                Err(Refused::Busy)
            }
        }
    }

    /// Holds `bytes` as `thread`'s replay at `version`, cached; refused
    /// when `MAX_HELD` has no room even after the cached replays nobody
    /// reads are let go.
    pub fn hold(
        &self,
        thread: &ThreadRef,
        kind: Kind,
        version: u64,
        from_agent: bool,
        bytes: Bytes,
    ) -> Result<Arc<Held>, Refused> {
        let room = if bytes.is_empty() {
            None
        } else {
            let kib = u32::try_from(bytes.len().div_ceil(1024)).map_err(|_| Refused::Busy)?;
            Some(self.room_for(kib)?)
        };
        let held = Arc::new(Held { bytes, _room: room });
        let mut book = self.lock();
        if book.cached.len() >= MAX_CACHED {
            let oldest = book
                .cached
                .iter()
                .min_by_key(|(_, cached)| cached.built)
                .map(|(key, _)| *key);
            if let Some(oldest) = oldest {
                book.cached.remove(&oldest);
            }
        }
        let fresh_for = if from_agent {
            FRESH_FROM_AGENT
        } else {
            FRESH_FOR
        };
        book.cached.insert(
            (*thread, kind),
            Cached {
                version,
                built: Instant::now(),
                fresh_for,
                held: held.clone(),
            },
        );
        Ok(held)
    }

    fn room_for(&self, kib: u32) -> Result<OwnedSemaphorePermit, Refused> {
        loop {
            if let Ok(room) = self.room.clone().try_acquire_many_owned(kib) {
                return Ok(room);
            }
            // Let go of the oldest cached copy only the cache holds: its
            // room comes back now. None left: the gateway is full.
            let mut book = self.lock();
            let idle = book
                .cached
                .iter()
                .filter(|(_, cached)| Arc::strong_count(&cached.held) == 1)
                .min_by_key(|(_, cached)| cached.built)
                .map(|(key, _)| *key);
            match idle {
                Some(key) => {
                    book.cached.remove(&key);
                }
                None => return Err(Refused::Busy),
            }
        }
    }

    /// `held` for `reader`, counted against its `MAX_PER_READER` until the
    /// returned `Reading` is dropped (read out, or the request gone).
    pub fn read(&self, reader: Reader, held: Arc<Held>) -> Result<Reading, Refused> {
        let len = held.bytes.len();
        let mut book = self.lock();
        if !book.out.contains_key(&reader) && book.out.len() >= MAX_READERS {
            return Err(Refused::Busy);
        }
        let out = book.out.entry(reader).or_default();
        if out.saturating_add(len) > MAX_PER_READER {
            if *out == 0 {
                book.out.remove(&reader);
            }
            return Err(Refused::ReaderFull);
        }
        *out += len;
        Ok(Reading {
            held,
            reader,
            book: self.book.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A turn to build one replay.
pub struct Turn<'a> {
    key: (ThreadRef, Kind),
    book: &'a Arc<Mutex<Book>>,
    own: Option<OwnedMutexGuard<()>>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        drop(self.own.take());
        forget_build(self.book, &self.key);
    }
}

/// Removes `key`'s build lock once only the map refers to it (no one
/// builds or waits).
fn forget_build(book: &Mutex<Book>, key: &(ThreadRef, Kind)) {
    let mut book = book.lock().unwrap_or_else(PoisonError::into_inner);
    if book
        .building
        .get(key)
        .is_some_and(|lock| Arc::strong_count(lock) == 1)
    {
        book.building.remove(key);
    }
}

/// A request reading a replay: its bytes count against its reader until
/// this is dropped.
pub struct Reading {
    held: Arc<Held>,
    reader: Reader,
    book: Arc<Mutex<Book>>,
}

impl Reading {
    pub fn bytes(&self) -> &Bytes {
        &self.held.bytes
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(out) = book.out.get_mut(&self.reader) {
            *out = out.saturating_sub(self.held.bytes.len());
            if *out == 0 {
                book.out.remove(&self.reader);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(id: &str) -> ThreadRef {
        ThreadRef::new("a", &CallerDigest::of_scope(""), id)
    }

    #[test]
    fn a_replay_is_shared_while_its_version_holds() {
        let replays = Replays::default();
        let t = thread("t");
        let held = replays
            .hold(&t, Kind::Snapshot, 7, false, Bytes::from_static(b"abc"))
            .unwrap();
        let again = replays.cached(&t, Kind::Snapshot, 7).unwrap();
        assert!(Arc::ptr_eq(&held, &again));
        assert!(replays.cached(&t, Kind::Messages, 7).is_none());
        assert!(replays.cached(&t, Kind::Snapshot, 8).is_none());
        // The version moved on: the old copy is gone from the cache.
        assert!(replays.cached(&t, Kind::Snapshot, 7).is_none());
    }

    #[test]
    fn a_reader_has_a_budget_of_bytes_out() {
        let replays = Replays::default();
        let reader = Reader::Address(IpAddr::from([127, 0, 0, 1]));
        let other = Reader::Address(IpAddr::from([127, 0, 0, 2]));
        let big = Bytes::from(vec![b'x'; 10 << 20]);
        let held = replays
            .hold(&thread("t"), Kind::Snapshot, 1, false, big)
            .unwrap();
        let readings: Vec<Reading> = (0..MAX_PER_READER / (10 << 20))
            .map(|_| replays.read(reader, held.clone()).unwrap())
            .collect();
        assert_eq!(
            replays.read(reader, held.clone()).err(),
            Some(Refused::ReaderFull)
        );
        assert!(replays.read(other, held.clone()).is_ok());
        drop(readings);
        assert!(replays.read(reader, held).is_ok());
        assert!(replays.lock().out.is_empty());
    }

    #[test]
    fn held_bytes_are_bounded_and_idle_copies_make_room() {
        let replays = Replays::default();
        let chunk = || Bytes::from(vec![b'x'; 16 << 20]);
        let mut read = Vec::new();
        for n in 0..MAX_HELD / (16 << 20) {
            let held = replays
                .hold(&thread(&n.to_string()), Kind::Snapshot, 1, false, chunk())
                .unwrap();
            if n % 2 == 0 {
                read.push(held);
            }
        }
        // Half are cached only: each new copy lets one go.
        for n in 0..MAX_HELD / (32 << 20) {
            assert!(
                replays
                    .hold(
                        &thread(&format!("new{n}")),
                        Kind::Snapshot,
                        1,
                        false,
                        chunk()
                    )
                    .map(|held| read.push(held))
                    .is_ok()
            );
        }
        // Every copy is read now: no room.
        assert_eq!(
            replays
                .hold(&thread("full"), Kind::Snapshot, 1, false, chunk())
                .err(),
            Some(Refused::Busy)
        );
        read.clear();
        assert!(
            replays
                .hold(&thread("room"), Kind::Snapshot, 1, false, chunk())
                .is_ok()
        );
    }
}
