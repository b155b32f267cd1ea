//! A run in the shared journal (Redis): every chunk is written there
//! before any client has it, with the converter input that produced it, so
//! that another replica can follow the run and, when this one dies, rebuild
//! the converter and take the run over. The lease says who holds the run;
//! a task renews it while the run lives, and hands on a stop a client
//! asked for on another replica (`RedisJournal::request_stop`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use agui_journal::redis::{Appended, Chunk, RENEW_EVERY, RedisJournal, Renewal, RunSpec};
use agui_journal::{InputOp, RunIdentity, ThreadRef};
use tokio_util::sync::{CancellationToken, DropGuard};

pub(super) struct RedisRun {
    journal: Arc<RedisJournal>,
    key: String,
    /// The input that produced frames not written yet. Cleared only once
    /// they are: a write cut short is done again with the next one.
    input: Vec<u8>,
    /// The number of the first frame not written yet.
    next: u64,
    /// Bytes written for this run; past `limit` it stops being shared.
    written: usize,
    limit: usize,
    /// Writing stopped: Redis failed, the lease was lost, or the limit.
    stopped: bool,
    /// The input outgrew the limit before it could be written.
    overgrown: bool,
    /// The run's task, learned since the last write: the next one records it.
    task: Option<String>,
    /// The run's thread (which keeps its tasks).
    thread: Option<ThreadRef>,
    lease_lost: Arc<AtomicBool>,
    /// The run's stop signal, once the relay has one.
    stopper: Arc<OnceLock<CancellationToken>>,
    /// Stops the renewal when the run is dropped.
    _renewal: DropGuard,
}

impl RedisRun {
    /// Records a new run, with this replica holding it; `None` (the run
    /// goes on unshared, with a warning) when Redis fails.
    pub(super) async fn open(
        journal: Arc<RedisJournal>,
        key: &str,
        identity: &RunIdentity,
        spec: &RunSpec,
        limit: usize,
    ) -> Option<RedisRun> {
        if let Err(err) = journal.open(key, identity, spec).await {
            tracing::warn!(run = key, "the run is not shared: {err}");
            return None;
        }
        let thread = identity.thread.as_ref().map(|thread| thread.thread);
        Some(RedisRun::held(journal, key, thread, 1, limit))
    }

    /// A run whose lease this replica holds, from frame `next` on.
    pub(super) fn held(
        journal: Arc<RedisJournal>,
        key: &str,
        thread: Option<ThreadRef>,
        next: u64,
        limit: usize,
    ) -> RedisRun {
        let stop = CancellationToken::new();
        let lease_lost = Arc::new(AtomicBool::new(false));
        let stopper = Arc::new(OnceLock::new());
        tokio::spawn(renew(
            journal.clone(),
            key.to_owned(),
            thread,
            stop.clone(),
            lease_lost.clone(),
            stopper.clone(),
        ));
        RedisRun {
            journal,
            key: key.to_owned(),
            input: Vec::new(),
            next,
            written: 0,
            limit,
            stopped: false,
            overgrown: false,
            task: None,
            thread,
            lease_lost,
            stopper,
            _renewal: stop.drop_guard(),
        }
    }

    /// The run's stop signal: cancelled when a client asks, on another
    /// replica, that the run stop.
    pub(super) fn stop_with(&self, stop: CancellationToken) {
        let _ = self.stopper.set(stop);
    }

    /// The agent named the run's task: recorded with the next write.
    pub(super) fn note_task(&mut self, task: &str) {
        self.task = Some(task.to_owned());
    }

    /// Keeps the input for the next write, within the run's bound: input
    /// that produces no frame (comments, pings, events that show nothing)
    /// is not written until a frame comes, so the bound is checked as it
    /// grows, not only when writing.
    pub(super) fn record(&mut self, op: InputOp, bytes: &[u8]) {
        if self.stopped || self.overgrown {
            return;
        }
        if self.written + self.input.len() + bytes.len() + 16 > self.limit {
            // The next write unshares the run (it needs Redis, this
            // cannot wait for it); nothing more is kept meanwhile.
            self.overgrown = true;
            self.input = Vec::new();
            return;
        }
        op.record(&mut self.input, bytes);
    }

    /// Writes frames `next..=last` (`out`) with the input that produced
    /// them. On any failure the run stops being shared, and says so.
    pub(super) async fn write(&mut self, last: u64, out: &[u8], terminal: bool) {
        if self.stopped || last < self.next {
            return;
        }
        if self.lease_lost.load(Ordering::Relaxed) {
            // Another replica took the run over: it writes now.
            tracing::warn!(run = self.key, "lost the run's lease: no longer sharing it");
            self.stopped = true;
            return;
        }
        if self.overgrown || self.written + out.len() + self.input.len() > self.limit {
            tracing::warn!(
                run = self.key,
                limit = self.limit,
                "the run outgrew the shared journal's bound: no longer sharing it"
            );
            return self.unshare().await;
        }
        let appended = self
            .journal
            .append(
                &self.key,
                Chunk {
                    first: self.next,
                    last,
                    out,
                    input: &self.input,
                    terminal,
                    task: self.task.as_deref(),
                },
            )
            .await;
        match appended {
            Ok(Appended::Written) => {
                self.written += out.len() + self.input.len();
                self.input.clear();
                if let (Some(task), Some(thread)) = (self.task.take(), &self.thread)
                    && let Err(err) = self.journal.note_thread_task(thread, &task).await
                {
                    tracing::warn!(run = self.key, "recording the thread's task failed: {err}");
                }
                self.next = last + 1;
            }
            Ok(Appended::NotHolder) => {
                tracing::warn!(
                    run = self.key,
                    "the run's lease is another replica's: no longer sharing it"
                );
                self.stopped = true;
            }
            Ok(Appended::NoRoom) => {
                tracing::warn!(
                    run = self.key,
                    "the shared journal is full (journal_max_bytes) with runs still going: no longer sharing the run"
                );
                self.unshare().await;
            }
            // A write cut short that Redis had done after all.
            Ok(Appended::OutOfOrder) => {
                tracing::warn!(
                    run = self.key,
                    "the shared journal is ahead of this replica: no longer sharing the run"
                );
                self.unshare().await;
            }
            Err(err) => {
                tracing::warn!(
                    run = self.key,
                    "writing the shared journal failed, no longer sharing the run: {err}"
                );
                self.unshare().await;
            }
        }
    }

    /// The run goes on here only: other replicas answer 410 for it, and
    /// nobody takes it over.
    async fn unshare(&mut self) {
        self.stopped = true;
        if let Err(err) = self.journal.unshare(&self.key).await {
            tracing::warn!(run = self.key, "marking the run unshared failed: {err}");
        }
    }

    /// This replica stops: the lease goes at once (not after it lapses),
    /// so a replica serving the client's reconnect takes the run over.
    /// False when the run is not (or no longer) shared.
    pub(super) async fn hand_over(&mut self) -> bool {
        if self.stopped || self.lease_lost.load(Ordering::Relaxed) {
            return false;
        }
        self.stopped = true;
        if let Err(err) = self.journal.release(&self.key).await {
            // It lapses on its own within the lease's time.
            tracing::warn!(run = self.key, "releasing the run's lease failed: {err}");
        }
        true
    }
}

/// Renews the lease until `stop` (the run ended), or until it is lost;
/// a stop asked elsewhere cancels the run's stop signal.
async fn renew(
    journal: Arc<RedisJournal>,
    key: String,
    thread: Option<ThreadRef>,
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
    stopper: Arc<OnceLock<CancellationToken>>,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RENEW_EVERY) => {}
        }
        match journal.renew(&key, thread.as_ref()).await {
            Ok(Renewal::Held) => {}
            Ok(Renewal::StopAsked) => {
                if let Some(stopper) = stopper.get() {
                    stopper.cancel();
                }
            }
            Ok(Renewal::Lost) => {
                lost.store(true, Ordering::Relaxed);
                return;
            }
            // Redis away for a moment: the next renewal may still be in
            // time (the lease lasts three renewal periods).
            Err(err) => tracing::warn!(run = key, "renewing the run's lease failed: {err}"),
        }
    }
}
