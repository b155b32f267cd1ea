//! Upstream healing: when the upstream stream breaks (a read error, or an
//! end before the task reached a final or waiting state) while the run's
//! task is known, the run re-attaches to the task instead of failing.
//!
//! A polled run reads its task again where it left it. For a stream,
//! each attempt resubscribes in the agent's dialect (`tasks/resubscribe`,
//! `SubscribeToTask`), reads the task as stored (`tasks/get`, `GetTask`:
//! a2a-sdk 0.3 sends no snapshot on resubscribe, and a task that ended
//! meanwhile refuses one), feeds that snapshot, then the new stream. The
//! converter shows only what the client has not seen (`Converter::reattach`).
//! Attempts are bounded in number and time; only when all fail does the
//! run end in `RUN_ERROR`, as before.

use std::time::{Duration, Instant};

use a2a_agui::SseParser;
use agui_journal::InputOp;
use bytes::Bytes;
use futures::StreamExt;

use super::{
    RelayState, Source, batch, encoded, is_event_stream, keep_scratch, now_ms, take_scratch,
};
use crate::obs::telemetry::CallSpan;
use crate::upstream::Call;
use crate::upstream::call::Called;
use crate::upstream::outbound::Forwarded;
use crate::upstream::route::Route;
use crate::upstream::{Agent, TaskCall, UpstreamBody, answer};

/// The pause before each attempt: at most five, about 4 s of pauses in all
/// (each attempt is bounded by the agent's timeouts besides).
const ATTEMPT_DELAYS_MS: [u64; 5] = [50, 250, 500, 1_000, 2_000];

/// How long a new stream's first event is awaited: an agent refuses a
/// resubscribe at once, so a stream silent this long is a live one.
const PROBE: Duration = Duration::from_secs(1);

/// What re-attaching came to.
pub(super) enum Healed {
    /// The run goes on from a new stream; what the snapshot added.
    Resumed(Bytes),
    /// The run ended (the task had ended, or the gateway is stopping).
    Ended(Bytes),
    /// No attempt worked; what snapshots added on the way, if anything.
    GaveUp(Bytes),
}

/// A new stream that did not open with an error, and what was read of it.
struct Subscribed {
    body: UpstreamBody,
    first: Vec<u8>,
    /// `RelayState::batch_turns` for this body.
    turns: u32,
    /// The resubscribe's client span, ended with its stream.
    span: CallSpan,
}

impl RelayState {
    pub(super) async fn reattach(&mut self) -> Healed {
        if !matches!(self.source, Source::Events(_) | Source::Lost) {
            return Healed::GaveUp(Bytes::new());
        }
        let Some(task) = self.stream.converter().reattach_task().map(str::to_owned) else {
            return Healed::GaveUp(Bytes::new());
        };
        let route = self.run.agent.route().await;
        if let Some(memo) = self.polled.clone() {
            // A polled run reads its task on where the run left it, as the
            // run did (its memo), after what the converter showed.
            let limit = self.run.max_event_bytes;
            let shown = self.stream.converter().artifacts_shown();
            let (agent, forwarded) = (&self.run.agent, &self.run.forwarded);
            let items = agent.poll_task((route, &task), (memo, shown), forwarded, limit);
            self.source = Source::Items(items);
            self.last_upstream = Instant::now();
            tracing::info!(
                agent = agent.name(),
                task,
                "polling the upstream task again"
            );
            return Healed::Resumed(Bytes::new());
        }
        let mut shown = Vec::new();
        while let Some(&delay) = ATTEMPT_DELAYS_MS.get(self.reattached) {
            self.reattached += 1;
            tokio::select! {
                biased;
                _ = self.stop.as_mut() => {
                    if let Some(out) = self.stopping().await {
                        shown.push(out);
                    }
                    return Healed::Ended(join(shown));
                }
                () = tokio::time::sleep(Duration::from_millis(delay)) => {}
            }
            let (agent, forwarded) = (self.run.agent.clone(), self.run.forwarded.clone());
            let limit = self.run.max_event_bytes;
            let subscribed = resubscribe(&agent, &route, &forwarded, &task, limit).await;
            let snapshot = read_task(&agent, &route, &forwarded, &task, limit).await;
            self.stream.reattach();
            self.record(InputOp::Reattach, &[]);
            if let Some(snapshot) = snapshot {
                self.record(InputOp::Json, &snapshot);
                let mut out = take_scratch();
                encoded(self.stream.feed_json(&snapshot, now_ms(), &mut out));
                self.note_events();
                shown.push(self.took(&out));
                keep_scratch(out);
                if self.stream.is_finished() {
                    self.source = Source::Done;
                    return Healed::Ended(join(shown));
                }
            }
            let Some(Subscribed {
                body,
                first,
                turns,
                span,
            }) = subscribed
            else {
                continue;
            };
            tracing::info!(
                agent = self.run.agent.name(),
                task,
                "re-attached to the upstream task"
            );
            self.run.metrics.count_reattached();
            self.source = Source::Events(body);
            self.observer.call_span = span;
            self.batch_turns = turns;
            self.last_upstream = Instant::now();
            if let Some(out) = self.feed(&first) {
                shown.push(out);
            }
            return Healed::Resumed(join(shown));
        }
        Healed::GaveUp(join(shown))
    }
}

/// Resubscribes; `None` when the agent refused (an error answer, or an
/// error as the stream's first event) or could not be reached.
async fn resubscribe(
    agent: &Agent,
    route: &Route,
    forwarded: &Forwarded,
    task: &str,
    limit: usize,
) -> Option<Subscribed> {
    let call = Call::Task(TaskCall::Subscribe, task);
    let Called { answer, span } = agent.call(route, call, forwarded).await;
    let Ok(response) = answer else {
        span.fail("unreachable");
        return None;
    };
    span.answered(response.status);
    if !response.status.is_success() || !is_event_stream(&response.headers) {
        span.fail("refused");
        return None;
    }
    let turns = batch::turns_for(&response);
    let mut body = response.body;
    let mut parser = SseParser::new(limit);
    let mut first = Vec::new();
    let until = tokio::time::Instant::now() + PROBE;
    loop {
        let chunk = match tokio::time::timeout_at(until, body.next()).await {
            // Silent: a live stream waiting for the agent's next event.
            Err(_) => {
                return Some(Subscribed {
                    body,
                    first,
                    turns,
                    span,
                });
            }
            Ok(Some(Ok(chunk))) => chunk,
            Ok(_) => {
                span.fail("the answer broke off");
                return None;
            }
        };
        // Kept until the first event shows whether the agent refused;
        // comments and blank lines count too (the parser drops them).
        if first.len() + chunk.len() > limit {
            span.fail("unreadable");
            return None;
        }
        first.extend_from_slice(&chunk);
        let mut refused = None;
        let parsed = parser.feed(&chunk, |event| {
            refused.get_or_insert_with(|| event.name == Some("error") || refuses(event.data));
        });
        match refused {
            Some(true) => {
                span.fail("refused");
                return None;
            }
            Some(false) => {
                return Some(Subscribed {
                    body,
                    first,
                    turns,
                    span,
                });
            }
            None if parsed.is_err() => {
                span.fail("unreadable");
                return None;
            }
            None => {}
        }
    }
}

/// The task as the agent stores it, when it answers with one.
async fn read_task(
    agent: &Agent,
    route: &Route,
    forwarded: &Forwarded,
    task: &str,
    limit: usize,
) -> Option<Vec<u8>> {
    let call = Call::Task(TaskCall::Get, task);
    let document = agent.answer(route, call, forwarded, limit).await?;
    (!refuses(&document)).then(|| document.into_bytes())
}

/// An error in any envelope (or no JSON at all, or JSON of more elements
/// than the gateway reads: what the converter would build of it is not
/// bounded by its bytes): the agent's refusal.
fn refuses(data: &[u8]) -> bool {
    answer::parse(data, answer::MAX_ELEMENTS)
        .is_none_or(|value| a2a_agui::error_report(&value).is_some())
}

pub(super) fn join(mut parts: Vec<Bytes>) -> Bytes {
    parts.retain(|part| !part.is_empty());
    match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap_or_default(),
        _ => Bytes::from(parts.concat()),
    }
}
