//! The token budgets' counts (`crate::budget`), one key per caller and
//! window: `{budget:<tag>}:<window>` under the journal's prefix, counting
//! tokens, expiring after its window. Its own hash tag: on a Redis Cluster
//! the key is in a slot of its own, whichever shard the runs are in.

use std::time::Duration;

use super::keys;
use super::{RedisJournal, SharedError};

impl RedisJournal {
    /// The tokens counted at `key` (0 for none).
    pub(crate) async fn budget_spent(&self, key: &str) -> Result<u64, SharedError> {
        let spent: Option<u64> = redis::cmd("GET")
            .arg(keys::budget(key))
            .query_async(&mut self.conn()?.0)
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
        let key = keys::budget(key);
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
            .query_async(&mut self.conn()?.0)
            .await?;
        Ok(())
    }
}
