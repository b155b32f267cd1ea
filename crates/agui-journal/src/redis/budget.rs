//! The token budgets' counts (`crate::budget`), one key per caller and
//! window: `{budget:<tag>}:<window>` under the journal's prefix, counting
//! tokens, expiring after its window.

use std::time::Duration;

use super::{PREFIX, RedisJournal, SharedError};

impl RedisJournal {
    /// The tokens counted at `key` (0 for none).
    pub(crate) async fn budget_spent(&self, key: &str) -> Result<u64, SharedError> {
        let spent: Option<u64> = redis::cmd("GET")
            .arg(format!("{PREFIX}{key}"))
            .query_async(&mut self.conn()?)
            .await?;
        Ok(spent.unwrap_or(0))
    }

    /// Adds `tokens` at `key`, which then lives `keep` longer.
    pub(crate) async fn budget_charge(
        &self,
        key: &str,
        tokens: u64,
        keep: Duration,
    ) -> Result<(), SharedError> {
        let key = format!("{PREFIX}{key}");
        let () = redis::pipe()
            .atomic()
            .cmd("INCRBY")
            .arg(&key)
            .arg(i64::try_from(tokens).unwrap_or(i64::MAX))
            .ignore()
            .cmd("EXPIRE")
            .arg(&key)
            .arg(keep.as_secs().max(1))
            .ignore()
            .query_async(&mut self.conn()?)
            .await?;
        Ok(())
    }
}
