//! A thread's replay: what `connect` sends a client that opens a thread
//! again (a reload, a second tab, another replica). One run holding a
//! `MESSAGES_SNAPSHOT` of the whole conversation, then the thread's live
//! run, if any, from its first event.
//!
//! - A snapshot, not the runs' events again: a client merges a snapshot by
//!   id, so one that still holds the thread gets no duplicate (replayed
//!   `TEXT_MESSAGE_CONTENT` would append to the text it holds), and every
//!   client's `verifyEvents` accepts it (it sits inside a run, closed
//!   before the live run starts).
//! - The conversation is `conversation`'s: from the journal, else the agent.
//! - Bounded by what the client reads, not by what the thread holds: the
//!   replay is built once per thread version and held once for every
//!   request reading it, handed out in slices, under the gateway's and the
//!   reader's budgets (`journal::replays`); past them, 429 or 503 before
//!   any stream.

use std::convert::Infallible;

use agui_journal::replays::{Kind, Reading};
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::conversation::{
    AGENT_DEADLINE, ThreadAsk, conversation, journal_runs, run_ended, version_of,
};
use super::{Found, ResumeRefused, follow_stream};
use crate::random::random_u64;
use crate::relay;
use crate::state::{AppHandle, AppState};

/// What a connect answers when the thread has nothing to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenEmpty {
    /// 204 (`/agui/connect`).
    NoContent,
    /// An empty event stream (the CopilotKit runtime's answer).
    EmptyStream,
}

/// The most bytes of a held replay handed out at a time: what a client
/// does not read stays in the one shared copy, not in each connection's
/// buffers.
const SLICE: usize = 64 << 10;

/// The replay of a thread, then its live run.
pub async fn replay(
    state: &AppHandle,
    ask: ThreadAsk<'_>,
    empty: WhenEmpty,
) -> Result<Response, ResumeRefused> {
    let (reading, live) = held(state, &ask, Kind::Snapshot, snapshot_frame).await?;
    let reading = reading.filter(|reading| !reading.bytes().is_empty());
    if reading.is_none() && live.is_none() {
        return Ok(match empty {
            WhenEmpty::NoContent => StatusCode::NO_CONTENT.into_response(),
            WhenEmpty::EmptyStream => relay::sse_response(Body::empty()),
        });
    }
    let head = match reading {
        None => futures::stream::empty().boxed(),
        Some(reading) => {
            let run_id = ask
                .run_id
                .map_or_else(|| format!("replay-{:016x}", random_u64()), str::to_owned);
            let ids = json!({ "threadId": ask.thread_id, "runId": run_id });
            let frame = |kind: &str| {
                let mut event = json!({ "type": kind });
                if let (Value::Object(event), Value::Object(ids)) = (&mut event, ids.clone()) {
                    event.extend(ids);
                }
                // A `Value` always serialises.
                let mut frame = b"data: ".to_vec();
                frame.extend_from_slice(&serde_json::to_vec(&event).unwrap_or_default());
                frame.extend_from_slice(b"\n\n");
                Ok(Bytes::from(frame))
            };
            let started = futures::stream::iter([frame("RUN_STARTED")]);
            let finished = futures::stream::iter([frame("RUN_FINISHED")]);
            started.chain(sliced(reading)).chain(finished).boxed()
        }
    };
    state.metrics.count_resumed();
    Ok(match live {
        None => relay::sse_response(Body::from_stream(head)),
        Some(found) => match follow_stream(state, found, 0).await {
            Ok(live) => relay::sse_response(Body::from_stream(head.chain(live))),
            // The live run outgrew what the journal keeps of it: the
            // snapshot still stands, the run is not joined.
            Err(err) => {
                tracing::debug!("a thread's live run cannot be followed from its start: {err:?}");
                relay::sse_response(Body::from_stream(head))
            }
        },
    })
}

/// The thread's messages as the runtime's messages route lists them:
/// `render` writes the JSON body from them (oldest first).
pub async fn messages(
    state: &AppHandle,
    ask: ThreadAsk<'_>,
    render: fn(Vec<Value>) -> Vec<u8>,
) -> Result<Response, ResumeRefused> {
    let (reading, _) = held(state, &ask, Kind::Messages, render).await?;
    let body = match reading {
        Some(reading) => Body::from_stream(sliced(reading)),
        None => Body::from(render(Vec::new())),
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `MESSAGES_SNAPSHOT` as one frame; nothing for no messages.
fn snapshot_frame(messages: Vec<Value>) -> Vec<u8> {
    if messages.is_empty() {
        return Vec::new();
    }
    let snapshot = json!({ "type": "MESSAGES_SNAPSHOT", "messages": messages });
    let mut frame = b"data: ".to_vec();
    // A `Value` always serialises.
    let _ = serde_json::to_writer(&mut frame, &snapshot);
    frame.extend_from_slice(b"\n\n");
    frame
}

/// A held replay handed out `SLICE` bytes at a time (slices of the one
/// copy); its reader's budget is given back after the last.
fn sliced(reading: Reading) -> BoxStream<'static, Result<Bytes, Infallible>> {
    futures::stream::unfold((Some(reading), 0), |(reading, at)| async move {
        let reading = reading?;
        let bytes = reading.bytes();
        if at >= bytes.len() {
            return None;
        }
        let end = bytes.len().min(at + SLICE);
        let slice = bytes.slice(at..end);
        let next = (end < bytes.len()).then_some(reading);
        Some((Ok(slice), (next, end)))
    })
    .boxed()
}

/// The thread's replay of `kind` for `ask.reader`: the copy cached at the
/// thread's version, else one built now (`render` writes it from the
/// messages); and the thread's live run. `None` for a thread with nothing.
async fn held(
    state: &AppState,
    ask: &ThreadAsk<'_>,
    kind: Kind,
    render: fn(Vec<Value>) -> Vec<u8>,
) -> Result<(Option<Reading>, Option<Found>), ResumeRefused> {
    let runs = journal_runs(state, &ask.thread).await;
    let version = version_of(&runs);
    let live = runs.last().cloned().flatten().filter(|run| !run_ended(run));
    let replays = &state.replays;
    let held = match replays.cached(&ask.thread, kind, version) {
        Some(held) => held,
        None => {
            let deadline = tokio::time::Instant::now() + AGENT_DEADLINE;
            let _turn = replays.build_turn(&ask.thread, kind, deadline).await?;
            // Whoever built before this turn may have built this one.
            match replays.cached(&ask.thread, kind, version) {
                Some(held) => held,
                None => {
                    let (messages, from_agent) =
                        conversation(state, ask, &runs, live.as_ref()).await;
                    // Nothing to show is cached too: a thread id that names
                    // nothing must not cost an agent call each time.
                    let bytes = Bytes::from(render(messages));
                    replays.hold(&ask.thread, kind, version, from_agent, bytes)?
                }
            }
        }
    };
    if held.bytes.is_empty() {
        return Ok((None, live));
    }
    let reading = replays.read(ask.reader, held)?;
    Ok((Some(reading), live))
}
