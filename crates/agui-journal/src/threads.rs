//! The threads this replica has seen, for a thread's replay and a
//! caller's thread list: per thread its id as the client wrote it, the
//! list it is shown in (`ThreadListKey`: whose it is), when it started and
//! last ran, the journaled runs still kept (oldest first) and the A2A
//! tasks its runs named. A thread outlives
//! its runs' frames (a replay then asks the agent for those tasks).
//!
//! Bounded: `MAX_THREADS` threads, at most `MAX_LISTED` of one list (the
//! one that ran least recently goes first: the list's own, when it is the
//! list that is full, so that one caller cannot push out another's; the
//! anonymous callers' list, everyone's without an identity, has only the
//! book's bound),
//! `RUNS_PER_THREAD` runs and `TASKS_PER_THREAD` tasks each, and for
//! `JournalLimits::thread_lifetime` after its last run. Every id it keeps
//! (the thread's, its runs', its tasks') is at most 1 KiB: the client's
//! are refused past it (`agui::bounds`), the agent's read as none.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::identity::{RunThread, ThreadListKey, ThreadRef};

/// Threads remembered in all.
pub const MAX_THREADS: usize = 10_000;
/// Runs remembered per thread (a replay reads them, oldest first).
pub const RUNS_PER_THREAD: usize = 8;
/// Tasks remembered per thread (a replay from the agent reads them).
pub const TASKS_PER_THREAD: usize = 32;
/// Threads one list shows at most.
pub const MAX_LISTED: usize = 1000;

/// Milliseconds since the Unix epoch (0 before it).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_millis()).ok())
        .unwrap_or(0)
}

/// A thread as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSummary {
    pub id: String,
    pub created_ms: u64,
    pub updated_ms: u64,
}

struct Thread {
    summary: ThreadSummary,
    list: ThreadListKey,
    /// `(run id, run key)`, oldest first.
    runs: VecDeque<(String, String)>,
    tasks: VecDeque<String>,
}

pub(super) struct ThreadBook {
    threads: HashMap<ThreadRef, Thread>,
    /// Least recently run first: who goes when the book (or a list) is
    /// full, or when its lifetime is over.
    order: VecDeque<ThreadRef>,
    /// Threads per list.
    per_list: HashMap<ThreadListKey, usize>,
    /// How long a thread is kept after its last run, in milliseconds.
    lifetime_ms: u64,
}

impl ThreadBook {
    pub(super) fn new(lifetime: Duration) -> ThreadBook {
        ThreadBook {
            threads: HashMap::new(),
            order: VecDeque::new(),
            per_list: HashMap::new(),
            lifetime_ms: u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Whether a thread last run at `updated_ms` is past its lifetime.
    fn expired(&self, updated_ms: u64, now: u64) -> bool {
        now.saturating_sub(updated_ms) > self.lifetime_ms
    }

    /// The thread, unless its lifetime is over.
    fn live(&self, thread: &ThreadRef) -> Option<&Thread> {
        let now = unix_ms();
        self.threads
            .get(thread)
            .filter(|t| !self.expired(t.summary.updated_ms, now))
    }

    /// A run of `thread` opened under `key`.
    pub(super) fn opened(&mut self, thread: &RunThread, key: &str) {
        let now = unix_ms();
        // Threads past their lifetime go, least recently run first.
        while let Some(oldest) = self.order.front().copied() {
            match self.threads.get(&oldest) {
                Some(entry) if !self.expired(entry.summary.updated_ms, now) => break,
                _ => {
                    self.order.pop_front();
                    self.remove(&oldest);
                }
            }
        }
        if self.threads.contains_key(&thread.thread) {
            self.order.retain(|t| *t != thread.thread);
        } else {
            // The anonymous list is everyone's without an identity: it
            // has only the book's bound.
            let full_list = !thread.list.is_anonymous()
                && self.per_list.get(&thread.list).copied().unwrap_or(0) >= MAX_LISTED;
            let victim = if full_list {
                let list = thread.list;
                let threads = &self.threads;
                self.order
                    .iter()
                    .position(|t| threads.get(t).is_some_and(|e| e.list == list))
            } else if self.threads.len() >= MAX_THREADS {
                Some(0)
            } else {
                None
            };
            if let Some(victim) = victim.and_then(|at| self.order.remove(at)) {
                self.remove(&victim);
            }
            *self.per_list.entry(thread.list).or_default() += 1;
        }
        self.order.push_back(thread.thread);
        let entry = self.threads.entry(thread.thread).or_insert_with(|| Thread {
            summary: ThreadSummary {
                id: thread.id.clone(),
                created_ms: now,
                updated_ms: now,
            },
            list: thread.list,
            runs: VecDeque::new(),
            tasks: VecDeque::new(),
        });
        entry.summary.updated_ms = now;
        entry
            .runs
            .push_back((thread.run_id.clone(), key.to_owned()));
        if entry.runs.len() > RUNS_PER_THREAD {
            entry.runs.pop_front();
        }
    }

    fn remove(&mut self, thread: &ThreadRef) {
        let Some(gone) = self.threads.remove(thread) else {
            return;
        };
        if let Some(count) = self.per_list.get_mut(&gone.list) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_list.remove(&gone.list);
            }
        }
    }

    /// The run `key` is no longer kept; the thread is.
    pub(super) fn forget_run(&mut self, thread: &ThreadRef, key: &str) {
        if let Some(entry) = self.threads.get_mut(thread) {
            entry.runs.retain(|(_, k)| k != key);
        }
    }

    pub(super) fn note_task(&mut self, thread: &ThreadRef, task: &str) {
        if let Some(entry) = self.threads.get_mut(thread)
            && !entry.tasks.iter().any(|t| t == task)
        {
            entry.tasks.push_back(task.to_owned());
            if entry.tasks.len() > TASKS_PER_THREAD {
                entry.tasks.pop_front();
            }
        }
    }

    /// The keys of the thread's runs (the one named, else all), oldest first.
    pub(super) fn runs(&self, thread: &ThreadRef, run_id: Option<&str>) -> Vec<String> {
        let Some(entry) = self.live(thread) else {
            return Vec::new();
        };
        entry
            .runs
            .iter()
            .filter(|(id, _)| run_id.is_none_or(|wanted| wanted == id))
            .map(|(_, key)| key.clone())
            .collect()
    }

    pub(super) fn tasks(&self, thread: &ThreadRef) -> Vec<String> {
        self.live(thread)
            .map(|entry| entry.tasks.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The list's threads, the latest to run first.
    pub(super) fn list(&self, list: &ThreadListKey) -> Vec<ThreadSummary> {
        let now = unix_ms();
        let mut listed: Vec<ThreadSummary> = self
            .threads
            .values()
            .filter(|t| t.list == *list && !self.expired(t.summary.updated_ms, now))
            .map(|t| t.summary.clone())
            .collect();
        listed.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(a.id.cmp(&b.id)));
        listed.truncate(MAX_LISTED);
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::CallerDigest;

    fn run(caller: &str, thread: &str, run_id: &str) -> RunThread {
        let caller = CallerDigest::of_scope(caller);
        RunThread {
            thread: ThreadRef::new("a", &caller, thread),
            id: thread.to_owned(),
            list: ThreadListKey::new("a", &caller),
            run_id: run_id.to_owned(),
            input: bytes::Bytes::new(),
        }
    }

    #[test]
    fn threads_keep_their_runs_and_tasks_bounded_and_list_per_caller() {
        let mut book = ThreadBook::new(Duration::from_secs(3600));
        let t1 = run("alice", "t1", "r0");
        for n in 0..RUNS_PER_THREAD + 2 {
            let mut r = t1.clone();
            r.run_id = format!("r{n}");
            book.opened(&r, &format!("k{n}"));
        }
        let keys = book.runs(&t1.thread, None);
        assert_eq!(keys.len(), RUNS_PER_THREAD);
        assert_eq!(keys.first().map(String::as_str), Some("k2"));
        assert_eq!(book.runs(&t1.thread, Some("r5")), ["k5"]);
        book.forget_run(&t1.thread, "k5");
        assert!(book.runs(&t1.thread, Some("r5")).is_empty());
        for n in 0..TASKS_PER_THREAD + 3 {
            book.note_task(&t1.thread, &format!("task{n}"));
            book.note_task(&t1.thread, &format!("task{n}"));
        }
        let tasks = book.tasks(&t1.thread);
        assert_eq!(tasks.len(), TASKS_PER_THREAD);
        assert_eq!(tasks[0], "task3");
        book.opened(&run("bob", "t2", "r"), "kb");
        assert_eq!(
            book.list(&t1.list)
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>(),
            ["t1"]
        );
        // One caller's flood pushes out only that caller's own threads,
        // the least recently run first.
        let carol = run("carol", "c", "r").list;
        for n in 0..MAX_LISTED + 5 {
            book.opened(&run("carol", &format!("c{n}"), "r"), "k");
            if n == MAX_LISTED - 1 {
                book.opened(&run("carol", "c0", "r"), "k");
            }
        }
        let listed = book.list(&carol);
        assert_eq!(listed.len(), MAX_LISTED);
        assert!(listed.iter().any(|t| t.id == "c0"));
        assert!(!listed.iter().any(|t| t.id == "c1"));
        assert_eq!(book.list(&t1.list).len(), 1);
        // Anonymous callers share one list, which only the book bounds.
        for n in 0..MAX_LISTED + 5 {
            book.opened(&run("", &format!("a{n}"), "r"), "k");
        }
        assert_eq!(book.list(&run("", "a0", "r").list).len(), MAX_LISTED);
        assert!(book.runs(&run("", "a0", "r").thread, None).len() == 1);
        // Many callers: the book holds `MAX_THREADS` in all.
        for caller in 0..=MAX_THREADS / MAX_LISTED {
            for n in 0..MAX_LISTED {
                book.opened(&run(&format!("u{caller}"), &format!("u{n}"), "r"), "k");
            }
        }
        assert_eq!(book.threads.len(), MAX_THREADS);
        assert_eq!(book.per_list.values().sum::<usize>(), MAX_THREADS);
    }

    #[test]
    fn threads_go_after_their_lifetime() {
        let mut book = ThreadBook::new(Duration::ZERO);
        let old = run("alice", "old", "r");
        book.opened(&old, "k1");
        std::thread::sleep(Duration::from_millis(5));
        assert!(book.list(&old.list).is_empty());
        assert!(book.runs(&old.thread, None).is_empty());
        book.opened(&run("alice", "new", "r"), "k2");
        assert!(
            !book.threads.contains_key(&old.thread),
            "swept when a run opens"
        );
        assert_eq!(book.per_list.get(&old.list), Some(&1));
    }
}
