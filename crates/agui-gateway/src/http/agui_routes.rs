//! What the AG-UI routes share (`/agui`, the CopilotKit protocol, the
//! inspector): reading a request body within its bounds, and a
//! `RunAgentInput` that a reconnect continues or `agui::run` runs.

use std::sync::Arc;

use a2a_agui::ErrorCode;
use agui_edge::bodies::BodiesInFlight;
use agui_journal::{Owner, RunBy};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;

use super::error::ApiError;
use super::gate;
use crate::obs::access::{AccessNote, Mode};
use crate::state::{AppHandle, AppState};
use crate::upstream::Agent;
use crate::upstream::outbound::Forwarded;
use crate::{agui, resume};

/// A `RunAgentInput` read, on any route: a reconnect continues its run,
/// anything else calls the agent.
pub async fn agui_input(
    state: AppHandle,
    agent: Arc<Agent>,
    parts: &axum::http::request::Parts,
    forwarded: Forwarded,
    body: Bytes,
    mode: Mode,
) -> Result<Response, ApiError> {
    let scope = gate::scope(&parts.extensions);
    let run_by = run_by(&agent, &scope, parts, &body);
    let access = AccessNote::noted(&parts.extensions, agent.name(), mode);
    if let Some(resumed) = resume::reconnect(&state, &parts.headers, &run_by.owner).await? {
        return Ok(resumed);
    }
    gate::budget(&state, &agent, &run_by.caller).await?;
    let call = agui::RunCall {
        headers: forwarded,
        run_by,
        body,
        access,
        mode,
    };
    // Boxed: see `agui::run`.
    Ok(Box::pin(agui::run(state, agent, call)).await?)
}

/// Who sent which request: a reconnect must be the same.
pub fn run_by(
    agent: &Agent,
    scope: &str,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> RunBy {
    let caller = gate::caller_digest(scope, &parts.headers);
    let uri = parts.uri.path_and_query().map_or("", |p| p.as_str());
    RunBy {
        owner: Owner::of(agent.name(), &caller, parts.method.as_str(), uri, body),
        caller,
    }
}

/// The request body, up to `max_request_bytes` and within
/// `request_body_timeout`; past either, or past its HTTP/2 connection's
/// budget of bodies in flight (`agui_edge::bodies`), a JSON error.
pub async fn read_body(state: &AppState, body: Body) -> Result<Bytes, ApiError> {
    let limits = &state.config.limits;
    let limit = limits.max_request_bytes;
    let read = tokio::time::timeout(limits.request_body_timeout, read_within(body, limit));
    match read.await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(Unread::TooLarge)) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::RequestTooLarge,
            format!("the request body exceeds {limit} bytes"),
        )),
        Ok(Err(Unread::InFlight(limit))) => Err(ApiError::unavailable(
            ErrorCode::GatewayBusy,
            format!(
                "the request bodies being sent on this connection reached {limit} bytes together; send this one again when they are in"
            ),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))),
        Ok(Err(Unread::Broken)) => Err(ApiError::bad_request(
            ErrorCode::InvalidRequest,
            "the request body broke off before its end",
        )),
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::RequestTimeout,
            format!(
                "the request body did not arrive within {} s",
                limits.request_body_timeout.as_secs()
            ),
        )),
    }
}

/// Why a body was not read.
enum Unread {
    TooLarge,
    /// Its HTTP/2 connection's bodies in flight reached this many bytes.
    InFlight(usize),
    Broken,
}

/// Reads `body` into one buffer, checking `limit` before it grows. The
/// buffer grows by doubling from what came (never reserved from a length
/// the client declares, nor past `limit`), each frame copied and dropped
/// at once (an HTTP/2 frame is a slice of the connection's read buffer),
/// and is trimmed to its length at the end.
async fn read_within(mut body: Body, limit: usize) -> Result<Bytes, Unread> {
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| match err.into_inner().downcast::<BodiesInFlight>() {
            Ok(spent) => Unread::InFlight(spent.limit),
            Err(_) => Unread::Broken,
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.len() > limit - buffer.len() {
            return Err(Unread::TooLarge);
        }
        if buffer.capacity() - buffer.len() < data.len() {
            let grown = (buffer.capacity() * 2)
                .max(buffer.len() + data.len())
                .min(limit);
            buffer.reserve_exact(grown - buffer.len());
        }
        buffer.extend_from_slice(&data);
    }
    buffer.shrink_to_fit();
    Ok(Bytes::from(buffer))
}
