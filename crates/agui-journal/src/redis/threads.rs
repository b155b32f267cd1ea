//! A thread's keys in the shared journal: its runs (newest first, the
//! last `RUNS_PER_THREAD`), the tasks they named, its summary, and per
//! thread list its threads by last use; what a thread's replay and a
//! caller's thread list read.

use bytes::Bytes;

use super::{
    MAX_LISTED, PREFIX, RUNS_PER_THREAD, RedisJournal, SharedError, TASKS_PER_THREAD, run_key,
    thread_key, thread_list_key, thread_tasks_key,
};
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
        let runs: Vec<String> = redis::cmd("LRANGE")
            .arg(thread_key(thread))
            .arg(0)
            .arg(RUNS_PER_THREAD - 1)
            .query_async(&mut self.conn()?)
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
        let input: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(run_key(key))
            .arg("input")
            .query_async(&mut self.conn()?)
            .await?;
        Ok(input.map(Bytes::from))
    }

    /// The run's agent named its task: its thread keeps it.
    pub async fn note_thread_task(
        &self,
        thread: &ThreadRef,
        task: &str,
    ) -> Result<(), SharedError> {
        let list = thread_tasks_key(thread);
        redis::pipe()
            .lrem(&list, 0, task)
            .ignore()
            .rpush(&list, task)
            .ignore()
            .ltrim(&list, -(TASKS_PER_THREAD as isize), -1)
            .ignore()
            .pexpire(&list, self.thread_lifetime() as i64)
            .ignore()
            .query_async::<()>(&mut self.conn()?)
            .await?;
        Ok(())
    }

    /// The A2A tasks a thread's runs named, oldest first.
    pub async fn thread_tasks(&self, thread: &ThreadRef) -> Result<Vec<String>, SharedError> {
        Ok(redis::cmd("LRANGE")
            .arg(thread_tasks_key(thread))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn()?)
            .await?)
    }

    /// A caller's threads with an agent, the latest to run first.
    pub async fn threads(&self, list: &ThreadListKey) -> Result<Vec<ThreadSummary>, SharedError> {
        let refs: Vec<String> = redis::cmd("ZREVRANGE")
            .arg(thread_list_key(list))
            .arg(0)
            .arg(MAX_LISTED - 1)
            .query_async(&mut self.conn()?)
            .await?;
        if refs.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for hex in &refs {
            pipe.cmd("HMGET")
                .arg(format!("{PREFIX}thread:{hex}:info"))
                .arg("id")
                .arg("created")
                .arg("updated");
        }
        let infos: Vec<(Option<String>, Option<u64>, Option<u64>)> =
            pipe.query_async(&mut self.conn()?).await?;
        Ok(infos
            .into_iter()
            .filter_map(|(id, created, updated)| {
                Some(ThreadSummary {
                    id: id?,
                    created_ms: created.unwrap_or_default(),
                    updated_ms: updated.unwrap_or_default(),
                })
            })
            .collect())
    }
}
