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
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_agui::{PollMemo, Polled, TaskPoll};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use bytes::Bytes;
use futures::Stream;

use super::answer::{self, Answer};
use super::call::{Called, read_whole};
use super::outbound::Forwarded;
use super::route::Route;
use super::rpc::Call;
use super::rpc::{OutgoingMessage, TaskCall};
use super::{Agent, BodyError, StreamResponse, UpstreamError};
use crate::config::Mode;
use crate::obs::telemetry::CallSpan;

/// The first pause between reads, and the pause after news.
const FIRST_GAP: Duration = Duration::from_millis(200);
/// The longest pause between reads.
const LONGEST_GAP: Duration = Duration::from_secs(2);

/// A polled task's news: stream items, one JSON document each.
pub type Items = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// What a run's call came to.
pub enum RunAnswer {
    /// An answer read as it comes: a stream of events, or one document
    /// (an error, a message, a task already over).
    Body(StreamResponse),
    /// A polled task's news, item by item, and what a replica taking the
    /// run over needs to read on (journaled with the run).
    Polled { items: Items, memo: PollMemo },
}

/// A run's call: its answer, and its client span.
pub struct RunCalled {
    pub answer: Result<RunAnswer, UpstreamError>,
    pub span: CallSpan,
}

impl Agent {
    /// Sends a run's message the way `route` says: a stream, or a send to
    /// poll. `limit` bounds each answer read whole (a send's, a task's).
    pub async fn run(
        self: &Arc<Self>,
        route: Route,
        (message, activate): (&OutgoingMessage, &[String]),
        forwarded: &Forwarded,
        limit: usize,
    ) -> RunCalled {
        let send = Call::Send { message, activate };
        if route.mode == Mode::Stream {
            let Called { answer, span } = self.call(&route, send, forwarded).await;
            let answer = answer.map(RunAnswer::Body);
            return RunCalled { answer, span };
        }
        let mut poll = TaskPoll::new(Some(message.message_id.clone()));
        if let Some(task) = &message.task_id {
            // A continuation: what the task held before is earlier turns'.
            let before = Call::Task(TaskCall::Get, task);
            if let Some(before) = self.answer(&route, before, forwarded, limit).await
                && let Some(before) = answer::parse(&before, answer::MAX_ELEMENTS)
            {
                poll.baseline(&before);
            }
        }
        let Called { answer, span } = self.call(&route, send, forwarded).await;
        let response = match answer {
            Ok(response) if response.status.is_success() => response,
            other => {
                let answer = other.map(RunAnswer::Body);
                return RunCalled { answer, span };
            }
        };
        let Some(sent) = read_whole(response, limit).await else {
            let answer = Err(UpstreamError::Unreadable);
            return RunCalled { answer, span };
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
        let answer = match polling.first(sent) {
            Ok(polling) => RunAnswer::Polled {
                memo: polling.poll.memo(),
                items: polling.items(),
            },
            Err(document) => RunAnswer::Body(document),
        };
        RunCalled {
            answer: Ok(answer),
            span,
        }
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
    ) -> Items {
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

    fn items(self) -> Items {
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
