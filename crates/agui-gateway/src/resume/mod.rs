//! Continuing journaled runs: a reconnect (the original request again,
//! with `Last-Event-ID`) and AG-UI `connect` (a thread's run from its
//! first event). Neither ever calls the upstream: a run has one upstream
//! call however many clients follow it. A run this replica holds is
//! followed in memory; with a shared journal, one held elsewhere is
//! followed through Redis (`remote`).

mod remote;

use a2a_agui::ErrorCode;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use std::sync::Arc;

use crate::edge::error::ApiError;
use crate::journal::redis::{RedisJournal, RemoteRun};
use crate::journal::{self, CallerDigest, EventId, Owner, ResumeError, RunLog, ThreadRef};
use crate::obs::access::Mode;
use crate::relay;
use crate::state::{AppHandle, AppState};
use crate::upstream::Agent;
use crate::upstream::outbound::Forwarded;

/// A thread or run id longer than this names nothing the gateway keeps.
const MAX_ID_BYTES: usize = 1024;

/// A run as this replica finds it.
enum Found {
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
) -> Result<Option<Response>, ApiError> {
    let Some(id) = EventId::from_headers(headers) else {
        return Ok(None);
    };
    let id = id?;
    let found = find(state, &id.key).await.ok_or(ResumeError::Unknown)?;
    if found.owner() != *owner {
        return Err(ResumeError::Mismatch.into());
    }
    follow(state, found, id.n).await.map(Some)
}

async fn follow(state: &AppHandle, found: Found, after: u64) -> Result<Response, ApiError> {
    let body = match found {
        Found::Here(log) => Body::from_stream(journal::follow(log, after, state.config.keepalive)?),
        Found::Elsewhere(shared, run) => {
            Body::from_stream(remote::follow(state.clone(), shared, *run, after).await?)
        }
    };
    state.metrics.count_resumed();
    Ok(relay::sse_response(body))
}

/// `POST …/agui/connect` with `{threadId, runId?}`, or a whole
/// `RunAgentInput` (whose `runId` a client made up, so it is not used):
/// the thread's latest run (or the one named), from its first event, then
/// live; 204 when the gateway keeps none. With `Last-Event-ID` of that
/// run, from after that event.
pub async fn connect(
    state: &AppHandle,
    agent: &Agent,
    caller: &CallerDigest,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    state.metrics.count_request(agent.name(), Mode::Connect);
    let Some(found) = named_run(state, agent, caller, body).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let after = match EventId::from_headers(headers) {
        None => 0,
        Some(id) => {
            let id = id?;
            if id.key != found.key() {
                return Err(ResumeError::Mismatch.into());
            }
            id.n
        }
    };
    follow(state, found, after).await
}

/// `POST …/agui/stop` with the connect body: the thread's run (the one
/// named, else the latest) is stopped at once: its A2A task is cancelled,
/// with this request's headers as the policy forwards them (202), and the
/// run ends as the agent reports. 204 when there is no such run or it has
/// ended; 409 `RUN_NOT_STOPPABLE` while the agent has not named its task.
/// (A dropped connection is not a stop: the run goes on for a reconnect.)
pub async fn stop(
    state: &AppHandle,
    agent: &Agent,
    caller: &CallerDigest,
    forwarded: &Forwarded,
    body: &Bytes,
) -> Result<Response, ApiError> {
    state.metrics.count_request(agent.name(), Mode::Stop);
    let (task, ended) = match named_run(state, agent, caller, body).await? {
        None => return Ok(StatusCode::NO_CONTENT.into_response()),
        Some(Found::Here(log)) => (log.task(), log.is_finished()),
        Some(Found::Elsewhere(_, run)) => (run.task, run.done),
    };
    if ended {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let Some(task) = task else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::RunNotStoppable,
            "the agent has not named the run's task yet: try again in a moment",
        ));
    };
    relay::send_cancel(agent, forwarded, &task).await;
    let body = axum::Json(serde_json::json!({ "stopping": true, "taskId": task }));
    Ok((StatusCode::ACCEPTED, body).into_response())
}

/// The run a connect or stop body (`{threadId, runId?}`) names, for this
/// agent and caller.
async fn named_run(
    state: &AppState,
    agent: &Agent,
    caller: &CallerDigest,
    body: &[u8],
) -> Result<Option<Found>, ApiError> {
    let (thread_id, run_id) = read_connect(body)?;
    let thread = ThreadRef::new(agent.name(), caller, &thread_id);
    Ok(thread_run(state, &thread, run_id.as_deref()).await)
}

/// A thread's run (the one named, else the latest): in this replica's
/// memory, else in the shared journal.
async fn thread_run(state: &AppState, thread: &ThreadRef, run_id: Option<&str>) -> Option<Found> {
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

fn read_connect(body: &[u8]) -> Result<(String, Option<String>), ApiError> {
    let invalid = |why: &str| {
        ApiError::bad_request(
            ErrorCode::InvalidRunInput,
            format!("connect: {why}: send {{\"threadId\": \"…\", \"runId\": \"…\" (optional)}}"),
        )
    };
    let value: Value = serde_json::from_slice(body).map_err(|_| invalid("the body is not JSON"))?;
    let id = |key: &str| match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_ID_BYTES => {
            Ok(Some(id.clone()))
        }
        Some(_) => Err(invalid(&format!(
            "{key} must be a non-empty string of at most {MAX_ID_BYTES} bytes"
        ))),
    };
    let thread_id = id("threadId")?.ok_or_else(|| invalid("threadId is missing"))?;
    // A whole RunAgentInput (CopilotKit's connect, `connectAgent()`) has a
    // runId made up for the request, not one of the thread's runs.
    let run_id = match value.get("messages") {
        Some(_) => None,
        None => id("runId")?,
    };
    Ok((thread_id, run_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_bodies() {
        let read = |body: &str| read_connect(body.as_bytes()).map_err(|e| e.code);
        assert_eq!(read(r#"{"threadId":"t"}"#), Ok(("t".to_owned(), None)));
        assert_eq!(
            read(r#"{"threadId":"t","runId":"r"}"#),
            Ok(("t".to_owned(), Some("r".to_owned())))
        );
        assert_eq!(
            read(r#"{"threadId":"t","runId":"made-up","messages":[]}"#),
            Ok(("t".to_owned(), None))
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
        assert_eq!(read(&long), Err(ErrorCode::InvalidRunInput));
    }
}
