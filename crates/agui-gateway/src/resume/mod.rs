//! Continuing journaled runs and threads: a reconnect (the original
//! request again, with `Last-Event-ID`), AG-UI `connect` (a thread's
//! replay, `replay`, or one run from its first event) and `stop`. None
//! ever calls the agent to run anything: a run has one upstream call
//! however many clients follow it. A run this replica holds is followed in
//! memory; with a shared journal, one held elsewhere is followed through
//! Redis (`remote`).

mod conversation;
mod event_id;
mod remote;
pub mod replay;
mod threads;

use a2a_agui::ErrorCode;
use agui_journal::redis::{RedisJournal, RemoteRun};
use agui_journal::replays::{Reader, Refused};
use agui_journal::{self as journal, CallerDigest, Owner, ResumeError, RunLog, ThreadRef};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use std::convert::Infallible;
use std::sync::Arc;

pub use conversation::ThreadAsk;
use event_id::EventId;
pub use replay::WhenEmpty;
pub use threads::threads;

use crate::agui::{IdTooLong, bounded_id};
use crate::obs::access::Mode;
use crate::relay;
use crate::state::{AppHandle, AppState, StreamsFull};
use crate::upstream::Agent;
use crate::upstream::outbound::Forwarded;

/// A thread or run id longer than this names nothing the gateway keeps
/// (no run can have one: `agui::bounds`).
pub use a2a_agui::MAX_ID_BYTES;

/// Why a run or a thread is not followed or stopped as asked.
#[derive(Debug, thiserror::Error)]
pub enum ResumeRefused {
    /// The run is gone, no longer from that event on, or another's.
    #[error("{0:?}")]
    Journal(ResumeError),
    #[error(transparent)]
    Busy(#[from] StreamsFull),
    /// Thread replays are at their bound, the caller's or the gateway's.
    #[error("{0:?}")]
    Replays(Refused),
    /// Another replica runs it, the agent has not named its task yet and
    /// the stop could not be passed on.
    #[error("the agent has not named the run's task yet: try again in a moment")]
    NotYetNamed,
    /// Not a connect or stop body; says what is wrong.
    #[error("connect: {0}: send {{\"threadId\": \"…\", \"runId\": \"…\" (optional)}}")]
    Body(String),
    #[error(transparent)]
    IdTooLong(#[from] IdTooLong),
}

impl ResumeRefused {
    pub fn code(&self) -> ErrorCode {
        match self {
            ResumeRefused::Journal(ResumeError::Mismatch) => ErrorCode::RunMismatch,
            ResumeRefused::Journal(_) => ErrorCode::RunNotResumable,
            ResumeRefused::Busy(_) | ResumeRefused::Replays(Refused::Busy) => {
                ErrorCode::GatewayBusy
            }
            ResumeRefused::Replays(Refused::ReaderFull) => ErrorCode::RateLimited,
            ResumeRefused::NotYetNamed => ErrorCode::RunNotStoppable,
            ResumeRefused::Body(_) => ErrorCode::InvalidRunInput,
            ResumeRefused::IdTooLong(_) => ErrorCode::IdTooLong,
        }
    }
}

impl From<ResumeError> for ResumeRefused {
    fn from(err: ResumeError) -> ResumeRefused {
        ResumeRefused::Journal(err)
    }
}

impl From<Refused> for ResumeRefused {
    fn from(refused: Refused) -> ResumeRefused {
        ResumeRefused::Replays(refused)
    }
}

/// A run as this replica finds it.
#[derive(Clone)]
pub enum Found {
    Here(Arc<RunLog>),
    Elsewhere(Arc<RedisJournal>, Box<RemoteRun>),
}

impl Found {
    fn owner(&self) -> Owner {
        match self {
            Found::Here(log) => log.identity().owner,
            Found::Elsewhere(_, run) => run.owner,
        }
    }

    fn key(&self) -> &str {
        match self {
            Found::Here(log) => log.key(),
            Found::Elsewhere(_, run) => &run.key,
        }
    }
}

/// The run with this key: in this replica's memory, else in the shared
/// journal.
async fn find(state: &AppState, key: &str) -> Option<Found> {
    if let Some(log) = state.journal.as_ref().and_then(|j| j.find(key)) {
        return Some(Found::Here(log));
    }
    let shared = state.redis.clone()?;
    match shared.find(key).await {
        Ok(Some(run)) => Some(Found::Elsewhere(shared, Box::new(run))),
        Ok(None) => None,
        Err(err) => {
            tracing::warn!(run = key, "looking up a shared run failed: {err}");
            None
        }
    }
}

/// `Some` stream when the request carries `Last-Event-ID`: the events of
/// its run after that id, then live. The request must be the one that
/// started the run (`owner`), else 409; an id the journal no longer
/// keeps gets 410.
pub async fn reconnect(
    state: &AppHandle,
    headers: &HeaderMap,
    owner: &Owner,
) -> Result<Option<Response>, ResumeRefused> {
    let Some(id) = EventId::from_headers(headers) else {
        return Ok(None);
    };
    let id = id?;
    // Boxed where taken (here and in `connect`): every request awaits
    // this, and a future holds its awaited futures inline (issue 42).
    let found = Box::pin(find(state, &id.key))
        .await
        .ok_or(ResumeError::Unknown)?;
    if found.owner() != *owner {
        return Err(ResumeError::Mismatch.into());
    }
    Box::pin(follow(state, found, id.n)).await.map(Some)
}

async fn follow(state: &AppHandle, found: Found, after: u64) -> Result<Response, ResumeRefused> {
    let body = Body::from_stream(follow_stream(state, found, after).await?);
    state.metrics.count_resumed();
    Ok(relay::sse_response(body))
}

/// A run's frames after number `after`, then live.
async fn follow_stream(
    state: &AppHandle,
    found: Found,
    after: u64,
) -> Result<BoxStream<'static, Result<Bytes, Infallible>>, ResumeRefused> {
    Ok(match found {
        Found::Here(log) => journal::follow(log, after, state.config.keepalive)?.boxed(),
        Found::Elsewhere(shared, run) => remote::follow(state.clone(), shared, *run, after)
            .await?
            .boxed(),
    })
}

/// `POST …/agui/connect` with `{threadId}`, or a whole `RunAgentInput`
/// (CopilotKit's connect, `connectAgent()`): the thread's replay, then its
/// live run (`replay`); `empty` says what a thread with nothing to show
/// gets. With a `runId` of the thread's (not a `RunAgentInput`'s, which
/// the client made up), or `Last-Event-ID` of its latest run: that run,
/// from its first event (or after that id), then live.
pub async fn connect(
    state: &AppHandle,
    agent: &Agent,
    (caller, reader): (&CallerDigest, Reader),
    request: (&HeaderMap, &Forwarded),
    body: &Bytes,
    empty: WhenEmpty,
) -> Result<Response, ResumeRefused> {
    let (headers, forwarded) = request;
    let asked = read_connect(body)?;
    let thread = ThreadRef::new(agent.name(), caller, &asked.thread_id);
    let event_id = EventId::from_headers(headers);
    if asked.run_id.is_none() && event_id.is_none() {
        let ask = ThreadAsk {
            agent,
            thread,
            thread_id: &asked.thread_id,
            run_id: asked.input_run_id.as_deref(),
            forwarded,
            reader,
        };
        return Box::pin(replay::replay(state, ask, empty)).await;
    }
    let Some(found) = Box::pin(thread_run(state, &thread, asked.run_id.as_deref())).await else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let after = match event_id {
        None => 0,
        Some(id) => {
            let id = id?;
            if id.key != found.key() {
                return Err(ResumeError::Mismatch.into());
            }
            id.n
        }
    };
    Box::pin(follow(state, found, after)).await
}

/// What a stop came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The thread has no such run, or it has ended.
    NoRun,
    /// Another replica runs it, the agent has not named its task yet and
    /// the stop could not be passed on (Redis failed): nothing can stop it
    /// from here.
    NotYetNamed,
    /// The run ends now (this replica relays it), within the lease's
    /// renewal period (another does), or as the agent reports its cancel;
    /// `task` is the task cancelled.
    Stopping { task: Option<String> },
}

/// Stops a thread's run (the one named, else the latest): a run this
/// replica relays ends at once (`RUN_FINISHED`, as a cancelled task), one
/// another replica relays when that replica next renews its lease; the
/// relay cancels the A2A task. A run no relay can be told of (Redis
/// failed) has its task cancelled from here, with this request's headers
/// as the policy forwards them. (A dropped connection is not a stop: the run goes on
/// for a reconnect.)
pub async fn stop_thread(
    state: &AppHandle,
    agent: &Agent,
    thread: &ThreadRef,
    run_id: Option<&str>,
    forwarded: &Forwarded,
) -> Stopped {
    // `handed`: the relay took the stop, and cancels the task itself.
    let (task, handed) = match thread_run(state, thread, run_id).await {
        None => return Stopped::NoRun,
        Some(Found::Here(log)) => {
            if log.is_finished() {
                return Stopped::NoRun;
            }
            (log.task(), log.request_stop())
        }
        Some(Found::Elsewhere(shared, run)) => {
            if run.done {
                return Stopped::NoRun;
            }
            // The replica relaying it ends it when it next renews its lease.
            let asked = shared.request_stop(&run.key).await.unwrap_or_else(|err| {
                tracing::warn!("asking another replica to stop a run failed: {err}");
                false
            });
            (run.task, asked)
        }
    };
    match (task, handed) {
        (task, true) => Stopped::Stopping { task },
        (Some(task), false) => {
            relay::send_cancel(agent, forwarded, &task).await;
            Stopped::Stopping { task: Some(task) }
        }
        (None, false) => Stopped::NotYetNamed,
    }
}

/// `POST …/agui/stop` with the connect body: `stop_thread`; 202 while it
/// stops, 204 when there is no such run or it has ended, 409
/// `RUN_NOT_STOPPABLE` when another replica runs it, the stop could not be
/// passed on (Redis failed) and the agent has not named its task yet.
pub async fn stop(
    state: &AppHandle,
    agent: &Agent,
    caller: &CallerDigest,
    forwarded: &Forwarded,
    body: &Bytes,
) -> Result<Response, ResumeRefused> {
    state.metrics.count_request(agent.name(), Mode::Stop);
    let asked = read_connect(body)?;
    let thread = ThreadRef::new(agent.name(), caller, &asked.thread_id);
    match stop_thread(state, agent, &thread, asked.run_id.as_deref(), forwarded).await {
        Stopped::NoRun => Ok(StatusCode::NO_CONTENT.into_response()),
        Stopped::NotYetNamed => Err(ResumeRefused::NotYetNamed),
        Stopped::Stopping { task } => {
            let mut body = serde_json::json!({ "stopping": true });
            if let Some(task) = task {
                body["taskId"] = task.into();
            }
            Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
        }
    }
}

/// A thread's run (the one named, else the latest): in this replica's
/// memory, else in the shared journal.
pub async fn thread_run(
    state: &AppState,
    thread: &ThreadRef,
    run_id: Option<&str>,
) -> Option<Found> {
    if let Some(log) = state
        .journal
        .as_ref()
        .and_then(|journal| journal.thread_run(thread, run_id))
    {
        return Some(Found::Here(log));
    }
    let shared = state.redis.as_ref()?;
    let key = match shared.thread_run(thread, run_id).await {
        Ok(key) => key?,
        Err(err) => {
            tracing::warn!("looking up a thread's shared run failed: {err}");
            return None;
        }
    };
    find(state, &key).await
}

/// What a connect or stop body asks for.
#[derive(Debug, PartialEq, Eq)]
struct ConnectBody {
    thread_id: String,
    /// One of the thread's runs, named.
    run_id: Option<String>,
    /// A whole `RunAgentInput`'s run id (CopilotKit's connect,
    /// `connectAgent()`): made up for the request, not one of the thread's.
    input_run_id: Option<String>,
}

fn read_connect(body: &[u8]) -> Result<ConnectBody, ResumeRefused> {
    let invalid = |why: &str| ResumeRefused::Body(why.to_owned());
    let value: Value = serde_json::from_slice(body).map_err(|_| invalid("the body is not JSON"))?;
    let id = |key: &str| -> Result<Option<String>, ResumeRefused> {
        match value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(id)) if !id.is_empty() => Ok(Some(bounded_id(key, id)?.to_owned())),
            Some(_) => Err(invalid(&format!("{key} must be a non-empty string"))),
        }
    };
    let thread_id = id("threadId")?.ok_or_else(|| invalid("threadId is missing"))?;
    let run_id = id("runId")?;
    Ok(match value.get("messages") {
        Some(_) => ConnectBody {
            thread_id,
            run_id: None,
            input_run_id: run_id,
        },
        None => ConnectBody {
            thread_id,
            run_id,
            input_run_id: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_bodies() {
        let read = |body: &str| {
            read_connect(body.as_bytes())
                .map(|b| (b.thread_id, b.run_id, b.input_run_id))
                .map_err(|e| e.code())
        };
        assert_eq!(
            read(r#"{"threadId":"t"}"#),
            Ok(("t".to_owned(), None, None))
        );
        assert_eq!(
            read(r#"{"threadId":"t","runId":"r"}"#),
            Ok(("t".to_owned(), Some("r".to_owned()), None))
        );
        assert_eq!(
            read(r#"{"threadId":"t","runId":"made-up","messages":[]}"#),
            Ok(("t".to_owned(), None, Some("made-up".to_owned())))
        );
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"threadId":""}"#,
            r#"{"threadId":7}"#,
            r#"{"threadId":"t","runId":3}"#,
        ] {
            assert_eq!(read(bad), Err(ErrorCode::InvalidRunInput), "{bad:?}");
        }
        let long = format!(r#"{{"threadId":"{}"}}"#, "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(read(&long), Err(ErrorCode::IdTooLong));
    }
}
