//! A run of an agent that does not stream (its route's mode is `Poll`):
//! the message sent to return at once, then its task read until it ends
//! or waits for the user. What each read adds is handed on as the stream
//! items that would have carried it (`a2a_agui::TaskPoll`), one JSON
//! document each, so the relay converts, journals and resumes a polled
//! run as it does a streamed one.
//!
//! Reads start 200 ms apart and slow down by half each time nothing
//! changed, to 2 s; news brings them back to 200 ms. So a run never reads
//! more than 5 times a second, and a long task costs one read every 2 s.
//! A read that fails is tried again at the next turn: the relay's idle
//! timer, which only news resets, ends a run whose agent stays silent or
//! unreachable, as it ends a silent stream.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use a2a_agui::{PollMemo, Polled, TaskPoll};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use bytes::Bytes;

use super::answer::{self, Answer};
use super::call::{Called, read_whole};
use super::outbound::Forwarded;
use super::route::Route;
use super::rpc::{Call, OutgoingMessage, TaskCall};
use super::{Agent, StreamResponse, UpstreamBody, UpstreamError};
use crate::obs::telemetry::CallSpan;

/// The first pause between reads, and the pause after news.
const FIRST_GAP: Duration = Duration::from_millis(200);
/// The longest pause between reads.
const LONGEST_GAP: Duration = Duration::from_secs(2);

/// What a send to poll came to.
pub enum Sent {
    /// The task's news, item by item, and what a replica taking the run
    /// over needs to read on (journaled with the run).
    Polling { items: UpstreamBody, memo: PollMemo },
    /// No task to read: an answer to convert as it is (an error, a
    /// message).
    Answer(StreamResponse),
}

impl Agent {
    /// Sends a run's message to return at once, and reads its task on.
    /// `limit` bounds each answer read whole (the send's, a task's).
    pub async fn send_to_poll(
        self: &Arc<Self>,
        route: Route,
        (message, activate): (&OutgoingMessage, &[String]),
        forwarded: &Forwarded,
        limit: usize,
    ) -> (Result<Sent, UpstreamError>, CallSpan) {
        let mut poll = TaskPoll::new(Some(message.message_id.clone()));
        if let Some(task) = &message.task_id {
            // A continuation: what the task held before is earlier turns'.
            // Without it, the earlier turns' artifacts would show again:
            // one more try, then on without it.
            let before = Call::Task(TaskCall::Get, task);
            let mut read = self.answer(&route, before, forwarded, limit).await;
            if read.is_none() {
                read = self.answer(&route, before, forwarded, limit).await;
            }
            match read.and_then(|before| answer::parse(&before, answer::MAX_ELEMENTS)) {
                Some(before) => poll.baseline(&before),
                None => tracing::warn!(
                    agent = self.name(),
                    task,
                    "the task could not be read before its continuation: earlier artifacts may show again"
                ),
            }
        }
        let send = Call::Send { message, activate };
        let Called { answer, span } = self.call(&route, send, forwarded).await;
        let response = match answer {
            Ok(response) if response.status.is_success() => response,
            other => return (other.map(Sent::Answer), span),
        };
        let Some(sent) = read_whole(response, limit).await else {
            return (Err(UpstreamError::Unreadable), span);
        };
        let polling = Polling {
            agent: self.clone(),
            route,
            forwarded: forwarded.clone(),
            poll,
            task: None,
            pending: VecDeque::new(),
            gap: FIRST_GAP,
            done: false,
            limit,
        };
        let sent = match polling.first(sent) {
            Ok(polling) => Sent::Polling {
                memo: polling.poll.memo(),
                items: polling.items(),
            },
            Err(document) => Sent::Answer(document),
        };
        (Ok(sent), span)
    }

    /// The news of `task` from now on, for a run taken over from another
    /// replica: its `memo` (journaled), and the parts of each artifact its
    /// rebuilt converter showed.
    pub fn poll_task(
        self: &Arc<Self>,
        (route, task): (Route, &str),
        (memo, shown): (PollMemo, Vec<(String, usize)>),
        forwarded: &Forwarded,
        limit: usize,
    ) -> UpstreamBody {
        Polling {
            agent: self.clone(),
            route,
            forwarded: forwarded.clone(),
            poll: TaskPoll::reattached(memo, shown),
            task: Some(task.to_owned()),
            pending: VecDeque::new(),
            gap: FIRST_GAP,
            done: false,
            limit,
        }
        .items()
    }
}

/// One polled run's reads.
struct Polling {
    agent: Arc<Agent>,
    route: Route,
    forwarded: Forwarded,
    poll: TaskPoll,
    /// The task read, once known.
    task: Option<String>,
    /// Items read but not handed on yet.
    pending: VecDeque<Bytes>,
    /// The pause before the next read.
    gap: Duration,
    /// The task ended or waits: no more reads.
    done: bool,
    limit: usize,
}

impl Polling {
    /// Takes the send's answer: the task to read on, or, when it is none
    /// (a message, an error), the answer to convert as a document.
    fn first(mut self, sent: Answer) -> Result<Polling, StreamResponse> {
        let parsed = answer::parse(&sent, answer::MAX_ELEMENTS);
        match parsed.as_ref().map(|answer| self.poll.read(answer)) {
            Some(Polled::Task {
                items,
                done,
                task_id,
            }) => {
                self.took(items, done);
                self.task = Some(task_id);
                Ok(self)
            }
            _ => Err(document(sent.into_bytes())),
        }
    }

    fn took(&mut self, items: Vec<serde_json::Value>, done: bool) {
        self.gap = match items.is_empty() {
            true => LONGEST_GAP.min(self.gap + self.gap / 2),
            false => FIRST_GAP,
        };
        for item in items {
            self.pending
                .push_back(Bytes::from(serde_json::to_vec(&item).unwrap_or_default()));
        }
        self.done |= done;
    }

    fn items(self) -> UpstreamBody {
        Box::pin(futures::stream::unfold(self, |mut polling| async move {
            loop {
                if let Some(item) = polling.pending.pop_front() {
                    return Some((Ok(item), polling));
                }
                if polling.done {
                    return None;
                }
                polling.read().await;
            }
        }))
    }

    /// One read of the task, after the pause.
    async fn read(&mut self) {
        tokio::time::sleep(self.gap.max(FIRST_GAP)).await;
        let Some(task) = self.task.clone() else {
            self.done = true;
            return;
        };
        let call = Call::Task(TaskCall::Get, &task);
        let Called { answer, span } = self.agent.call(&self.route, call, &self.forwarded).await;
        let response = match answer {
            Ok(response) => response,
            Err(err) => {
                span.fail("unreachable");
                tracing::debug!(
                    agent = self.agent.name(),
                    "reading a polled task failed: {err}"
                );
                return self.took(Vec::new(), false);
            }
        };
        span.answered(response.status);
        let (status, busy) = (response.status, response.busy);
        let Some(read) = read_whole(response, self.limit).await else {
            span.fail("unreadable");
            return self.took(Vec::new(), false);
        };
        if busy {
            // A moment's trouble at the agent: the next read may do.
            return self.took(Vec::new(), false);
        }
        let parsed = answer::parse(&read, answer::MAX_ELEMENTS);
        match parsed.as_ref().map(|answer| self.poll.read(answer)) {
            Some(Polled::Task { items, done, .. }) if status.is_success() => self.took(items, done),
            // Not the task (an error: it is gone, or never was the
            // caller's): the converter ends the run with the agent's
            // words.
            _ => {
                self.pending.push_back(Bytes::from(read.into_bytes()));
                self.done = true;
            }
        }
    }
}

/// An answer already read, as a document the relay converts.
fn document(bytes: Vec<u8>) -> StreamResponse {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    StreamResponse {
        status: StatusCode::OK,
        unauthenticated: false,
        busy: false,
        headers,
        body: Box::pin(futures::stream::once(async move { Ok(Bytes::from(bytes)) })),
        handed_one_by_one: false,
    }
}
