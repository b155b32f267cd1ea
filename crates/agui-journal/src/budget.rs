//! Token budgets per caller: what a caller's runs spent (their
//! `totalTokens`, input plus output) in a fixed window, numbered
//! `floor(unix time / window)` so that every replica counts the same one;
//! a caller at or past the budget is refused until the window turns.
//!
//! Counted in Redis when the journal is shared (`RedisJournal::
//! budget_charge`: one key per caller and window, gone after the window),
//! else in this process, for at most `MAX_CALLERS` callers: past that, the
//! windows that are over go first, then the caller that spent least.
//! Callers are `CallerDigest::budget_tag`s, never a credential.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::redis::{RedisJournal, SharedError};

/// Callers counted at once in memory.
pub const MAX_CALLERS: usize = 100_000;

/// How long a window's key outlives the window in Redis: a replica whose
/// clock is a little behind still finds it.
const KEEP_AFTER: u64 = 60;

/// A caller at or past its budget.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the caller's token budget ({budget} tokens per {window_secs} s) is spent: it frees in {retry_after_secs} s"
)]
pub struct Exceeded {
    pub budget: u64,
    pub window_secs: u64,
    /// Until the window turns (at least 1).
    pub retry_after_secs: u64,
}

pub struct Budgets {
    /// Tokens per caller and window.
    budget: u64,
    window_secs: u64,
    /// Shared with the `resized` budgets a reload makes.
    book: Arc<Mutex<SpendBook>>,
    shared: Option<Arc<RedisJournal>>,
}

impl Budgets {
    /// `budget` tokens per caller every `window` (at least a second).
    pub fn new(budget: u64, window: Duration) -> Budgets {
        Budgets {
            budget,
            window_secs: window.as_secs().max(1),
            book: Arc::new(Mutex::new(SpendBook::new(MAX_CALLERS))),
            shared: None,
        }
    }

    /// Counted in `journal`, for every replica sharing it.
    pub fn shared_by(self, journal: Arc<RedisJournal>) -> Budgets {
        Budgets {
            shared: Some(journal),
            ..self
        }
    }

    /// The same counts under a new `budget` and `window` (a reload): what
    /// callers spent in the current window stays spent while the window
    /// keeps its length; a window of another length starts afresh.
    pub fn resized(&self, budget: u64, window: Duration) -> Budgets {
        Budgets {
            budget,
            window_secs: window.as_secs().max(1),
            book: self.book.clone(),
            shared: self.shared.clone(),
        }
    }

    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    fn window(&self, now: u64) -> u64 {
        now / self.window_secs
    }

    /// Whether caller `tag` may start a run at `now` (unix seconds); an
    /// error when Redis did not answer (the caller decides what that
    /// means).
    pub async fn check(&self, tag: &str, now: u64) -> Result<Result<(), Exceeded>, SharedError> {
        let window = self.window(now);
        let spent = match &self.shared {
            Some(journal) => journal.budget_spent(&key(tag, window)).await?,
            None => self.book.lock().map_or(0, |book| book.spent(tag, window)),
        };
        if spent < self.budget {
            return Ok(Ok(()));
        }
        let turns = window.saturating_add(1).saturating_mul(self.window_secs);
        Ok(Err(Exceeded {
            budget: self.budget,
            window_secs: self.window_secs,
            retry_after_secs: turns.saturating_sub(now).max(1),
        }))
    }

    /// Counts `tokens` against caller `tag` in the window of `now`.
    pub async fn charge(&self, tag: &str, tokens: u64, now: u64) -> Result<(), SharedError> {
        let window = self.window(now);
        match &self.shared {
            Some(journal) => {
                let ends = window.saturating_add(1).saturating_mul(self.window_secs);
                let keep = Duration::from_secs(ends.saturating_sub(now) + KEEP_AFTER);
                journal.budget_charge(&key(tag, window), tokens, keep).await
            }
            None => {
                self.charge_here(tag, tokens, now);
                Ok(())
            }
        }
    }

    /// `charge` in this process's count, at once (not shared: nothing to
    /// wait for).
    pub fn charge_here(&self, tag: &str, tokens: u64, now: u64) {
        if self.shared.is_none()
            && let Ok(mut book) = self.book.lock()
        {
            book.charge(tag, self.window(now), tokens);
        }
    }
}

/// A caller's count in one window, in Redis: hash-tagged by caller (one
/// Redis Cluster slot per caller), at most ~70 bytes.
fn key(tag: &str, window: u64) -> String {
    format!("{{budget:{tag}}}:{window}")
}

/// What callers spent in memory, each in its latest window.
struct SpendBook {
    spent: HashMap<String, (u64, u64)>,
    max: usize,
}

impl SpendBook {
    fn new(max: usize) -> SpendBook {
        SpendBook {
            spent: HashMap::new(),
            max,
        }
    }

    fn spent(&self, tag: &str, window: u64) -> u64 {
        match self.spent.get(tag) {
            Some((at, tokens)) if *at == window => *tokens,
            _ => 0,
        }
    }

    /// Checked before the map grows: a new caller past `max` first makes
    /// the windows that are over go, then the caller that spent least.
    fn charge(&mut self, tag: &str, window: u64, tokens: u64) {
        if let Some((at, spent)) = self.spent.get_mut(tag) {
            if *at != window {
                *at = window;
                *spent = 0;
            }
            *spent = spent.saturating_add(tokens);
            return;
        }
        if self.spent.len() >= self.max {
            self.spent.retain(|_, (at, _)| *at >= window);
        }
        if self.spent.len() >= self.max {
            let least = self
                .spent
                .iter()
                .min_by_key(|(_, (_, spent))| *spent)
                .map(|(tag, _)| tag.clone());
            if let Some(least) = least {
                self.spent.remove(&least);
            }
        }
        self.spent.insert(tag.to_owned(), (window, tokens));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_caller_at_its_budget_waits_for_the_window_to_turn() {
        let budgets = Budgets::new(50, Duration::from_secs(100));
        {
            // Window 10 is [1000, 1100).
            assert!(budgets.check("a", 1000).await.unwrap().is_ok());
            budgets.charge("a", 42, 1001).await.unwrap();
            assert!(budgets.check("a", 1002).await.unwrap().is_ok());
            budgets.charge("a", 42, 1003).await.unwrap();
            let refused = budgets.check("a", 1030).await.unwrap().unwrap_err();
            assert_eq!(refused.retry_after_secs, 70);
            assert_eq!((refused.budget, refused.window_secs), (50, 100));
            // Another caller is not.
            assert!(budgets.check("b", 1030).await.unwrap().is_ok());
            // At the last second of the window: 1 s.
            let last = budgets.check("a", 1099).await.unwrap().unwrap_err();
            assert_eq!(last.retry_after_secs, 1);
            // The next window starts from nothing.
            assert!(budgets.check("a", 1100).await.unwrap().is_ok());
            budgets.charge("a", 49, 1100).await.unwrap();
            assert!(budgets.check("a", 1101).await.unwrap().is_ok());
            budgets.charge("a", 1, 1101).await.unwrap();
            assert!(budgets.check("a", 1101).await.unwrap().is_err());
        }
    }

    #[test]
    fn the_book_stays_within_its_bound_forgetting_what_matters_least() {
        let mut book = SpendBook::new(3);
        book.charge("old", 1, 10);
        book.charge("a", 2, 5);
        book.charge("b", 2, 1);
        // Full: the window that is over goes first.
        book.charge("c", 2, 7);
        assert_eq!(book.spent.len(), 3);
        assert_eq!(book.spent("old", 1), 0);
        // Full in this window: the caller that spent least goes.
        book.charge("d", 2, 3);
        assert_eq!(book.spent.len(), 3);
        assert_eq!(
            (book.spent("a", 2), book.spent("b", 2), book.spent("c", 2)),
            (5, 0, 7)
        );
        assert_eq!(book.spent("d", 2), 3);
        // A known caller in a new window starts again.
        book.charge("a", 3, 4);
        assert_eq!((book.spent("a", 2), book.spent("a", 3)), (0, 4));
        book.charge("a", 3, u64::MAX);
        assert_eq!(book.spent("a", 3), u64::MAX);
    }

    #[test]
    fn keys_are_bounded_and_hash_tagged_by_caller() {
        let tag = crate::CallerDigest::of_scope("key:web").budget_tag();
        let key = key(&tag, u64::MAX);
        assert!(key.starts_with(&format!("{{budget:{tag}}}:")));
        assert!(key.len() <= 70, "{key}");
    }
}
