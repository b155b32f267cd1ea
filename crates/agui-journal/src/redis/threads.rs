//! A thread's keys in the shared journal: its runs (newest first, the
//! last `RUNS_PER_THREAD`), the tasks they named, its summary, and per
//! thread list its threads by last use; what a thread's replay and a
//! caller's thread list read.

use bytes::Bytes;

use super::{MAX_LISTED, RUNS_PER_THREAD, RedisJournal, SharedError, TASKS_PER_THREAD};
use crate::identity::{ThreadListKey, ThreadRef};
use crate::threads::ThreadSummary;

impl RedisJournal {
    /// A thread's run key: the one named, else the newest.
    pub async fn thread_run(
        &self,
        thread: &ThreadRef,
        run_id: Option<&str>,
    ) -> Result<Option<String>, SharedError> {
        Ok(self.thread_runs(thread, run_id).await?.pop())
    }

    /// The run keys of a thread (the one named, else all), oldest first.
    pub async fn thread_runs(
        &self,
        thread: &ThreadRef,
        run_id: Option<&str>,
    ) -> Result<Vec<String>, SharedError> {
        let (mut conn, layout) = self.conn()?;
        let runs: Vec<String> = redis::cmd("LRANGE")
            .arg(layout.of_thread(thread).thread(thread))
            .arg(0)
            .arg(RUNS_PER_THREAD - 1)
            .query_async(&mut conn)
            .await?;
        Ok(runs
            .iter()
            .rev()
            .filter_map(|entry| {
                let (id, key) = entry.split_once('\t')?;
                run_id
                    .is_none_or(|wanted| wanted == id)
                    .then(|| key.to_owned())
            })
            .collect())
    }

    /// A run's input messages, as recorded when it opened.
    pub async fn run_input(&self, key: &str) -> Result<Option<Bytes>, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let input: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(shard.run(key))
            .arg("input")
            .query_async(&mut conn)
            .await?;
        Ok(input.map(Bytes::from))
    }

    /// The run's agent named its task: its thread keeps it.
    pub async fn note_thread_task(
        &self,
        thread: &ThreadRef,
        task: &str,
    ) -> Result<(), SharedError> {
        let (mut conn, layout) = self.conn()?;
        let list = layout.of_thread(thread).thread_tasks(thread);
        redis::pipe()
            .lrem(&list, 0, task)
            .ignore()
            .rpush(&list, task)
            .ignore()
            .ltrim(&list, -(TASKS_PER_THREAD as isize), -1)
            .ignore()
            .pexpire(&list, self.thread_lifetime() as i64)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    /// The A2A tasks a thread's runs named, oldest first.
    pub async fn thread_tasks(&self, thread: &ThreadRef) -> Result<Vec<String>, SharedError> {
        let (mut conn, layout) = self.conn()?;
        Ok(redis::cmd("LRANGE")
            .arg(layout.of_thread(thread).thread_tasks(thread))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?)
    }

    /// A caller's threads with an agent, the latest to run first: on a
    /// cluster, each shard's list read and merged.
    pub async fn threads(&self, list: &ThreadListKey) -> Result<Vec<ThreadSummary>, SharedError> {
        let (mut conn, layout) = self.conn()?;
        // (last run, thread ref, its shard's number)
        let mut listed: Vec<(u64, String, usize)> = Vec::new();
        for n in 0..layout.shards() {
            let refs: Vec<(String, f64)> = redis::cmd("ZREVRANGE")
                .arg(layout.shard(n).thread_list(list))
                .arg(0)
                .arg(MAX_LISTED - 1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await?;
            listed.extend(refs.into_iter().map(|(hex, at)| (at as u64, hex, n)));
        }
        // Newest first; ties as ZREVRANGE orders them (members descending).
        listed.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));
        listed.truncate(MAX_LISTED);
        // One pipeline per shard: a cluster's pipeline is one slot's.
        let mut found = std::collections::HashMap::new();
        for n in 0..layout.shards() {
            let shard = layout.shard(n);
            let refs: Vec<&str> = listed
                .iter()
                .filter(|(_, _, of)| *of == n)
                .map(|(_, hex, _)| hex.as_str())
                .collect();
            if refs.is_empty() {
                continue;
            }
            let mut pipe = redis::pipe();
            for hex in &refs {
                pipe.cmd("HMGET")
                    .arg(shard.thread_info(hex))
                    .arg("id")
                    .arg("created")
                    .arg("updated");
            }
            let infos: Vec<(Option<String>, Option<u64>, Option<u64>)> =
                pipe.query_async(&mut conn).await?;
            found.extend(refs.into_iter().map(str::to_owned).zip(infos));
        }
        Ok(listed
            .into_iter()
            .filter_map(|(_, hex, _)| {
                let (id, created, updated) = found.remove(&hex)?;
                Some(ThreadSummary {
                    id: id?,
                    created_ms: created.unwrap_or_default(),
                    updated_ms: updated.unwrap_or_default(),
                })
            })
            .collect())
    }
}
