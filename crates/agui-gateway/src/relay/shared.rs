//! A run in the shared journal (Redis): every chunk is written there
//! before any client has it, with the converter input that produced it, so
//! that another replica can follow the run and, when this one dies, rebuild
//! the converter and take the run over. The lease says who holds the run;
//! a task renews it while the run lives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::journal::InputOp;
use crate::journal::RunIdentity;
use crate::journal::redis::{Entry, RENEW_EVERY, RedisJournal, RunSpec};

pub(super) struct SharedRun {
    journal: Arc<RedisJournal>,
    key: String,
    /// Converter input since the last entry written.
    input: Vec<u8>,
    /// The number of the first frame not written yet.
    next: u64,
    /// Bytes written for this run; past `limit` it stops being shared.
    written: usize,
    limit: usize,
    /// Writing stopped: Redis failed, the lease was lost, or the limit.
    stopped: bool,
    lease_lost: Arc<AtomicBool>,
    _renewal: DropGuard,
}

impl SharedRun {
    /// Records a new run, with this replica holding it; `None` (the run
    /// goes on unshared, with a warning) when Redis fails.
    pub(super) async fn open(
        journal: Arc<RedisJournal>,
        key: &str,
        identity: &RunIdentity,
        spec: &RunSpec,
        limit: usize,
    ) -> Option<SharedRun> {
        if let Err(err) = journal.open(key, identity, spec).await {
            tracing::warn!(run = key, "the run is not shared: {err}");
            return None;
        }
        Some(SharedRun::held(journal, key, 1, limit))
    }

    /// A run whose lease this replica holds, from frame `next` on.
    pub(super) fn held(
        journal: Arc<RedisJournal>,
        key: &str,
        next: u64,
        limit: usize,
    ) -> SharedRun {
        let stop = CancellationToken::new();
        let lease_lost = Arc::new(AtomicBool::new(false));
        tokio::spawn(renew(
            journal.clone(),
            key.to_owned(),
            stop.clone(),
            lease_lost.clone(),
        ));
        SharedRun {
            journal,
            key: key.to_owned(),
            input: Vec::new(),
            next,
            written: 0,
            limit,
            stopped: false,
            lease_lost,
            _renewal: stop.drop_guard(),
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
        match self.journal.release(&self.key).await {
            Ok(()) => true,
            Err(err) => {
                // It lapses on its own within the lease's time.
                tracing::warn!(run = self.key, "releasing the run's lease failed: {err}");
                true
            }
        }
    }

    pub(super) fn record(&mut self, op: InputOp, bytes: &[u8]) {
        if !self.stopped {
            op.record(&mut self.input, bytes);
        }
    }

    /// Writes the frames up to number `last` (the end of `out`); nothing
    /// for a chunk without frames (a keep-alive comment).
    pub(super) async fn publish(&mut self, last: u64, out: &Bytes, terminal: bool) {
        if self.stopped || last < self.next {
            return;
        }
        if self.lease_lost.load(Ordering::Relaxed) {
            tracing::warn!(run = self.key, "lost the run's lease: no longer sharing it");
            self.stopped = true;
            return;
        }
        self.written += out.len() + self.input.len();
        if self.written > self.limit {
            tracing::warn!(
                run = self.key,
                limit = self.limit,
                "the run outgrew the shared journal's bound: no longer sharing it"
            );
            self.stopped = true;
            return;
        }
        let entry = Entry {
            first: self.next,
            last,
            out: out.clone(),
            input: std::mem::take(&mut self.input),
            terminal,
        };
        match self.journal.append(&self.key, &entry).await {
            Ok(()) => self.next = last + 1,
            Err(err) => {
                tracing::warn!(
                    run = self.key,
                    "writing the shared journal failed, no longer sharing the run: {err}"
                );
                self.stopped = true;
            }
        }
    }
}

/// Renews the lease until `stop` (the run ended), or until it is lost.
async fn renew(
    journal: Arc<RedisJournal>,
    key: String,
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RENEW_EVERY) => {}
        }
        match journal.renew(&key).await {
            Ok(true) => {}
            Ok(false) => {
                lost.store(true, Ordering::Relaxed);
                return;
            }
            // Redis away for a moment: the next renewal may still be in
            // time (the lease lasts three renewal periods).
            Err(err) => tracing::warn!(run = key, "renewing the run's lease failed: {err}"),
        }
    }
}
