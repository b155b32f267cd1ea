//! A run whose client went away: with a journal and a grace period it
//! detaches (a pump reads on into the journal for a reconnect), else it
//! ends here and is cancelled upstream when the agent is configured so.

use std::sync::Arc;
use std::time::Instant;

use a2a_agui::ErrorCode;
use agui_journal::RunLog;

use super::{RelayState, send_cancel};

impl RelayState {
    /// The client went away before the end. With a journal the run goes
    /// on, detached, for a reconnect; else (or with no runtime to run it
    /// on) it ends here, in `Drop`.
    fn client_left(self) {
        if self.observer.finished || self.handed_over || self.run.detach_grace.is_zero() {
            return;
        }
        let Some(log) = self.run.log.clone() else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            log.detach();
            self.run.metrics.count_detached();
            handle.spawn(self.pump(log));
        }
    }

    /// Reads the upstream on into the journal while nobody follows, until
    /// the run ends or nobody came back within the grace period.
    pub(super) async fn pump(mut self, log: Arc<RunLog>) {
        let grace = self.run.detach_grace;
        loop {
            let deadline = log
                .abandon_at(grace)
                .unwrap_or_else(|| Instant::now() + grace);
            tokio::select! {
                next = self.next_batch() => match next {
                    Some(bytes) => self.publish(&bytes).await,
                    None => return,
                },
                () = tokio::time::sleep_until(deadline.into()) => {
                    if log.abandon_at(grace).is_some_and(|at| at <= Instant::now()) {
                        // The RUN_ERROR below is what counts it.
                        self.cancel_upstream();
                        let secs = grace.as_secs();
                        let ended = self.fail(
                            ErrorCode::ClientDisconnected,
                            format!("the client went away and did not reconnect within {secs} s"),
                        );
                        self.publish(&ended).await;
                        return;
                    }
                }
            }
        }
    }

    /// Nobody will read the run: cancelled upstream when the agent is
    /// configured so.
    fn cancel_upstream(&self) {
        let task = self.stream.converter().task_id().map(str::to_owned);
        if let (true, Some(task)) = (self.run.agent.config.cancel_on_disconnect, task) {
            let agent = self.run.agent.clone();
            let forwarded = self.run.forwarded.clone();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move { send_cancel(&agent, &forwarded, &task).await });
            }
        }
    }
}

impl Drop for RelayState {
    fn drop(&mut self) {
        if self.handed_over {
            // Local followers end too: their reconnect goes elsewhere.
            if let Some(log) = &self.run.log {
                log.close();
            }
            return;
        }
        if self.observer.finished {
            return;
        }
        self.run.metrics.count_error(
            self.run.agent.name(),
            ErrorCode::ClientDisconnected.as_str(),
        );
        // What the agent reported using until now is the caller's still:
        // leaving before the end does not make a run free.
        let usage = self.stream.converter().usage();
        self.observer.used(self.run.agent.name(), &usage);
        self.cancel_upstream();
        if let Some(log) = &self.run.log {
            log.close();
        }
    }
}

/// The response body's hold on its run: dropped before the run's end (the
/// client went away), it lets the run go on detached.
///
/// Its state is boxed: the body's stream holds it, and so does each step's
/// future, which would otherwise be one more copy of it in the stream.
pub(super) struct Attached(pub(super) Option<Box<RelayState>>);

impl Drop for Attached {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            (*state).client_left();
        }
    }
}
