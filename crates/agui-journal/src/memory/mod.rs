//! The embedded journal: runs in this process's memory, bounded.
//!
//! Lock order: the index, then a run's log; never the other way round (an
//! append releases its log before it asks the index for room).

mod log;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

pub use self::log::{RunLog, Slice};
use crate::config::JournalLimits;
use crate::identity::{RunIdentity, ThreadListKey, ThreadRef};
use crate::threads::{ThreadBook, ThreadSummary};

/// Expired runs are swept at most this often (a sweep visits every run).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Clones share one journal (a reload's state keeps its runs).
#[derive(Clone)]
pub struct MemoryJournal {
    shared: Arc<Shared>,
}

struct Shared {
    limits: JournalLimits,
    index: Mutex<Index>,
    /// Bytes held by the runs in the index: their frames and their input
    /// messages.
    bytes: AtomicUsize,
    /// Of those, the input messages' (at most a quarter of `max_bytes`, so
    /// that live runs' inputs, which cannot be evicted, never starve the
    /// frames).
    inputs: AtomicUsize,
}

struct Index {
    runs: HashMap<String, Arc<RunLog>>,
    /// Keys in the order their runs opened.
    order: VecDeque<String>,
    threads: ThreadBook,
    swept: Instant,
}

impl MemoryJournal {
    pub fn new(limits: JournalLimits) -> MemoryJournal {
        MemoryJournal {
            shared: Arc::new(Shared {
                limits,
                index: Mutex::new(Index {
                    runs: HashMap::new(),
                    order: VecDeque::new(),
                    threads: ThreadBook::new(limits.thread_lifetime()),
                    swept: Instant::now(),
                }),
                bytes: AtomicUsize::new(0),
                inputs: AtomicUsize::new(0),
            }),
        }
    }

    /// A new run, with one listener (the client that started it).
    pub fn open(&self, key: String, mut identity: RunIdentity) -> Arc<RunLog> {
        if let Some(thread) = &mut identity.thread {
            let held = self.shared.inputs.load(Ordering::Relaxed);
            if held.saturating_add(thread.input.len()) > self.shared.limits.max_bytes / 4 {
                // Not kept: the thread's replay asks the agent instead.
                thread.input = Bytes::new();
            }
        }
        let log = RunLog::new(key.clone(), identity, Arc::downgrade(&self.shared));
        let Ok(mut index) = self.shared.index.lock() else {
            return log;
        };
        let limits = &self.shared.limits;
        if index.swept.elapsed() >= SWEEP_EVERY {
            index.swept = Instant::now();
            let expired: Vec<String> = index
                .runs
                .values()
                .filter(|run| run.expired(limits.ttl))
                .map(|run| run.key.clone())
                .collect();
            for key in expired {
                self.shared.remove(&mut index, &key);
            }
        }
        while index.runs.len() >= limits.max_runs.max(1) {
            // The oldest finished run, else the oldest of all (its pump
            // goes on; it just cannot be resumed any more).
            let victim = index
                .order
                .iter()
                .find(|k| index.runs.get(*k).is_some_and(|r| r.is_finished()))
                .or(index.order.front())
                .cloned();
            match victim {
                Some(victim) => self.shared.remove(&mut index, &victim),
                None => break,
            }
        }
        if let Some(thread) = &log.identity.thread {
            index.threads.opened(thread, &key);
        }
        // The input messages a replay shows count as the run's frames do,
        // from its start to its removal.
        self.shared
            .bytes
            .fetch_add(log.input_bytes(), Ordering::Relaxed);
        self.shared
            .inputs
            .fetch_add(log.input_bytes(), Ordering::Relaxed);
        index.order.push_back(key.clone());
        index.runs.insert(key, log.clone());
        drop(index);
        if self.shared.bytes.load(Ordering::Relaxed) > limits.max_bytes {
            self.shared.make_room(&log);
        }
        log
    }

    /// The run an event id names, unless it expired.
    pub fn find(&self, key: &str) -> Option<Arc<RunLog>> {
        let index = self.shared.index.lock().ok()?;
        let log = index.runs.get(key)?;
        (!log.expired(self.shared.limits.ttl)).then(|| log.clone())
    }

    /// A thread's run: the one named, else the latest.
    pub fn thread_run(&self, thread: &ThreadRef, run_id: Option<&str>) -> Option<Arc<RunLog>> {
        self.thread_runs(thread, run_id).pop()
    }

    /// A thread's runs still kept (the one named, else all), oldest first.
    pub fn thread_runs(&self, thread: &ThreadRef, run_id: Option<&str>) -> Vec<Arc<RunLog>> {
        let Ok(index) = self.shared.index.lock() else {
            return Vec::new();
        };
        let ttl = self.shared.limits.ttl;
        let runs = index.threads.runs(thread, run_id);
        runs.iter()
            .filter_map(|key| index.runs.get(key))
            .filter(|log| !log.expired(ttl))
            .cloned()
            .collect()
    }

    /// The A2A tasks a thread's runs named, oldest first.
    pub fn thread_tasks(&self, thread: &ThreadRef) -> Vec<String> {
        self.shared
            .index
            .lock()
            .map(|index| index.threads.tasks(thread))
            .unwrap_or_default()
    }

    /// A caller's threads with an agent, the latest to run first.
    pub fn threads(&self, list: &ThreadListKey) -> Vec<ThreadSummary> {
        self.shared
            .index
            .lock()
            .map(|index| index.threads.list(list))
            .unwrap_or_default()
    }

    /// Runs and bytes held (frames and input messages) (for metrics and tests).
    pub fn usage(&self) -> (usize, usize) {
        let runs = self.shared.index.lock().map_or(0, |index| index.runs.len());
        (runs, self.shared.bytes.load(Ordering::Relaxed))
    }
}

impl Shared {
    fn remove(&self, index: &mut Index, key: &str) {
        let Some(log) = index.runs.remove(key) else {
            return;
        };
        index.order.retain(|k| k != key);
        if let Some(thread) = &log.identity.thread {
            index.threads.forget_run(&thread.thread, key);
        }
        self.bytes.fetch_sub(log.input_bytes(), Ordering::Relaxed);
        self.inputs.fetch_sub(log.input_bytes(), Ordering::Relaxed);
        if let Ok(mut state) = log.state.lock() {
            if state.counted {
                self.bytes.fetch_sub(state.bytes, Ordering::Relaxed);
            }
            state.counted = false;
            // A finished run's frames go now; a live one keeps what its
            // followers still read.
            if state.finished_at.is_some() {
                state.bytes = 0;
                state.chunks.clear();
                state.first = state.last + 1;
            }
        }
    }

    /// Over `max_bytes`: finished runs go, oldest first; if that is not
    /// enough, `growing` loses its oldest frames.
    fn make_room(&self, growing: &RunLog) {
        let Ok(mut index) = self.index.lock() else {
            return;
        };
        while self.bytes.load(Ordering::Relaxed) > self.limits.max_bytes {
            let victim = index
                .order
                .iter()
                .find(|k| index.runs.get(*k).is_some_and(|r| r.is_finished()))
                .cloned();
            match victim {
                Some(victim) => self.remove(&mut index, &victim),
                None => break,
            }
        }
        drop(index);
        if let Ok(mut state) = growing.state.lock() {
            let over = self
                .bytes
                .load(Ordering::Relaxed)
                .saturating_sub(self.limits.max_bytes);
            if over > 0 && state.counted {
                let before = state.bytes;
                state.trim_to(before.saturating_sub(over));
                self.adjust(before, state.bytes);
            }
        }
    }

    /// A counted run went from `before` to `after` bytes. Called with that
    /// run's lock held, as every change of a run's share of the total is,
    /// so that eviction (which uncounts a run under its lock) and appends
    /// never both take the same bytes off. Returns the new total.
    fn adjust(&self, before: usize, after: usize) -> usize {
        if after >= before {
            self.bytes.fetch_add(after - before, Ordering::Relaxed) + (after - before)
        } else {
            self.bytes
                .fetch_sub(before - after, Ordering::Relaxed)
                .saturating_sub(before - after)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ResumeError;
    use crate::identity::{CallerDigest, Owner, RunThread};

    const KEY: &str = "0123456789abcdef";

    fn anyone() -> CallerDigest {
        CallerDigest::of_scope("")
    }

    fn identity(thread: Option<(&str, &str)>) -> RunIdentity {
        RunIdentity {
            owner: Owner::of("a", &anyone(), "POST", "/agui", b"{}"),
            thread: thread.map(|(t, r)| RunThread {
                thread: ThreadRef::new("a", &anyone(), t),
                id: t.to_owned(),
                list: ThreadListKey::new("a", &anyone()),
                run_id: r.to_owned(),
                input: Bytes::new(),
            }),
        }
    }

    fn frames(from: u64, to: u64) -> Bytes {
        let mut out = String::new();
        for n in from..=to {
            out.push_str(&format!("id: {KEY}.{n}\ndata: {{\"n\":{n}}}\n\n"));
        }
        Bytes::from(out)
    }

    fn joined(slice: &Slice) -> String {
        slice
            .frames
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect()
    }

    #[test]
    fn reads_resume_inside_a_chunk_and_across_chunks() {
        let journal = MemoryJournal::new(JournalLimits::default());
        let log = journal.open(KEY.to_owned(), identity(None));
        log.append(3, frames(1, 3), false);
        log.append(12, frames(4, 12), true);
        for after in 0..=12 {
            let slice = log.read_after(after).unwrap();
            let expected = if after == 12 {
                String::new()
            } else {
                String::from_utf8_lossy(&frames(after + 1, 12)).into_owned()
            };
            assert_eq!(joined(&slice), expected, "after {after}");
            assert_eq!(slice.last, 12);
            assert!(slice.finished);
        }
        assert_eq!(log.read_after(13).err(), Some(ResumeError::Unknown));
        // Frame 1 is not mistaken for frame 11, nor frame 2 for frame 12.
        assert!(joined(&log.read_after(10).unwrap()).starts_with(&format!("id: {KEY}.11\n")));
    }

    #[test]
    fn a_live_run_s_frames_share_a_few_buffers_and_read_back_exactly() {
        let journal = MemoryJournal::new(JournalLimits::default());
        let log = journal.open(KEY.to_owned(), identity(None));
        for n in 1..=50 {
            log.append(n, frames(n, n), false);
            // What a follower reads of the open chunk is what was written.
            let slice = log.read_after(n - 1).unwrap();
            assert_eq!(joined(&slice), String::from_utf8_lossy(&frames(n, n)));
        }
        let chunks = log.state.lock().unwrap().chunks.len();
        assert!(chunks <= 3, "{chunks} chunks for 50 frames");
        log.append(51, frames(51, 51), true);
        for after in [0, 1, 17, 33, 49, 50] {
            let slice = log.read_after(after).unwrap();
            let expected = String::from_utf8_lossy(&frames(after + 1, 51)).into_owned();
            assert_eq!(joined(&slice), expected, "after {after}");
            assert!(slice.finished);
        }
    }

    #[test]
    fn shared_buffers_keep_the_run_s_bound_and_what_goes_between_frames() {
        // Room for 256 bytes a chunk: about six frames share one.
        let limits = JournalLimits {
            max_run_bytes: 2048,
            ..JournalLimits::default()
        };
        let journal = MemoryJournal::new(limits);
        let log = journal.open(KEY.to_owned(), identity(None));
        // Each piece: a tapped upstream event (no id), then its frame;
        // every tenth piece larger than a chunk's room.
        let piece = |n: u64| {
            let mut piece = format!("event: a2a\ndata: {{\"tap\":{n}}}\n\n").into_bytes();
            piece.extend_from_slice(&frames(n, n));
            if n.is_multiple_of(10) {
                piece.extend_from_slice(format!(": {}\n\n", "p".repeat(300)).as_bytes());
            }
            Bytes::from(piece)
        };
        let mut written = Vec::new();
        for n in 1..=120 {
            let bytes = piece(n);
            written.push(bytes.clone());
            log.append(n, bytes, false);
            let state = log.state.lock().unwrap();
            let held: usize = state.chunks.iter().map(|c| c.len()).sum();
            assert_eq!(state.bytes, held, "counted bytes are the chunks' bytes");
            assert!(state.bytes <= 2048 + 400, "{} bytes after {n}", state.bytes);
            drop(state);
            assert!(journal.usage().1 <= 2048 + 400, "{:?}", journal.usage());
        }
        let first = log.state.lock().unwrap().first;
        assert!(first > 1, "the run was trimmed");
        assert_eq!(log.read_after(first - 2).err(), Some(ResumeError::TooOld));
        // From any frame kept on: exactly the pieces after it, taps and
        // all, wherever it falls in a chunk.
        for after in first - 1..=120 {
            let slice = log.read_after(after).unwrap();
            let expected: Vec<u8> = written[after as usize..].concat();
            assert_eq!(
                joined(&slice),
                String::from_utf8_lossy(&expected),
                "after {after}"
            );
        }
    }

    #[test]
    fn a_run_keeps_its_latest_bytes_and_refuses_older_ids() {
        let limits = JournalLimits {
            max_run_bytes: 200,
            ..JournalLimits::default()
        };
        let journal = MemoryJournal::new(limits);
        let log = journal.open(KEY.to_owned(), identity(None));
        for n in 1..=20 {
            log.append(n, frames(n, n), false);
        }
        let (_, bytes) = journal.usage();
        assert!(bytes <= 200, "{bytes}");
        assert_eq!(log.read_after(1).err(), Some(ResumeError::TooOld));
        let slice = log.read_after(19).unwrap();
        assert_eq!(joined(&slice), String::from_utf8_lossy(&frames(20, 20)));
        // The latest frame is kept even when it alone is too large.
        log.append(21, Bytes::from(vec![b'x'; 500]), false);
        assert_eq!(log.read_after(20).unwrap().frames.len(), 1);
    }

    #[test]
    fn the_journal_bounds_runs_bytes_and_time() {
        let limits = JournalLimits {
            max_runs: 3,
            max_bytes: 1_000,
            ttl: Duration::ZERO,
            ..JournalLimits::default()
        };
        let journal = MemoryJournal::new(limits);
        let keys: Vec<String> = (0..5).map(|i| format!("{i:016x}")).collect();
        let live = journal.open(keys[0].clone(), identity(None));
        for key in &keys[1..] {
            let log = journal.open(key.clone(), identity(None));
            log.append(1, Bytes::from_static(b"id: x.1\n\n"), true);
        }
        // Finished runs went first; the live one stayed.
        assert_eq!(journal.usage().0, 3);
        assert!(journal.find(&keys[0]).is_some());
        // A zero TTL: finished runs are gone for lookups at once.
        assert!(journal.find(&keys[4]).is_none());
        for n in 1..=100 {
            live.append(n, Bytes::from(vec![b'y'; 100]), false);
        }
        assert!(journal.usage().1 <= 1_000, "{:?}", journal.usage());
    }

    #[test]
    fn an_evicted_live_run_no_longer_counts_and_never_makes_the_total_wrap() {
        let limits = JournalLimits {
            max_runs: 1,
            max_run_bytes: 64,
            max_bytes: 1_000,
            ..JournalLimits::default()
        };
        let journal = MemoryJournal::new(limits);
        let evicted = journal.open(KEY.to_owned(), identity(None));
        evicted.append(1, frames(1, 1), false);
        let kept = journal.open("f".repeat(16), identity(None));
        // The evicted run goes on (its followers still read it), trimming
        // itself, but its bytes are no longer the journal's.
        for n in 2..=6 {
            evicted.append(n, frames(n, n), false);
        }
        assert_eq!(journal.usage(), (1, 0));
        kept.append(1, frames(1, 1), false);
        assert_eq!(journal.usage(), (1, frames(1, 1).len()));
        assert!(evicted.read_after(5).is_ok());
    }

    #[test]
    fn threads_find_their_latest_or_named_run() {
        let journal = MemoryJournal::new(JournalLimits::default());
        journal.open("a".repeat(16), identity(Some(("t1", "r1"))));
        journal.open("b".repeat(16), identity(Some(("t1", "r2"))));
        journal.open("c".repeat(16), identity(Some(("t2", "r1"))));
        let t1 = ThreadRef::new("a", &anyone(), "t1");
        assert_eq!(journal.thread_run(&t1, None).unwrap().key(), "b".repeat(16));
        assert_eq!(
            journal.thread_run(&t1, Some("r1")).unwrap().key(),
            "a".repeat(16)
        );
        assert!(journal.thread_run(&t1, Some("r9")).is_none());
        assert!(
            journal
                .thread_run(
                    &ThreadRef::new("a", &CallerDigest::of_scope("key:b"), "t1"),
                    None
                )
                .is_none()
        );
    }

    #[test]
    fn listeners_decide_when_a_run_is_abandoned() {
        let journal = MemoryJournal::new(JournalLimits::default());
        let log = journal.open(KEY.to_owned(), identity(None));
        assert_eq!(log.abandon_at(Duration::from_secs(1)), None);
        log.attach();
        log.detach();
        assert_eq!(log.abandon_at(Duration::from_secs(1)), None);
        log.detach();
        assert!(log.abandon_at(Duration::from_secs(1)).is_some());
    }
}
