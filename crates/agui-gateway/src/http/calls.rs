//! What the AG-UI routes share (`/agui`, the CopilotKit protocol, the
//! inspector): reading a request body within its bounds, and a
//! `RunAgentInput` that a reconnect continues or `agui::run` runs.

use std::sync::Arc;

use a2a_agui::ErrorCode;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::Response;

use super::gate;
use crate::edge::error::ApiError;
use crate::journal::{CallerDigest, Owner, RunBy};
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
    let call = agui::Call {
        headers: forwarded,
        run_by,
        body,
        access,
        mode,
    };
    agui::run(state, agent, call).await
}

/// Who sent which request: a reconnect must be the same.
pub fn run_by(
    agent: &Agent,
    scope: &str,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> RunBy {
    let caller = CallerDigest::of(scope, &parts.headers);
    let uri = parts.uri.path_and_query().map_or("", |p| p.as_str());
    RunBy {
        owner: Owner::of(agent.name(), &caller, parts.method.as_str(), uri, body),
        caller,
    }
}

/// The request body, up to `max_request_bytes` and within
/// `request_body_timeout`; past either, a JSON error.
pub async fn read_body(state: &AppState, body: Body) -> Result<Bytes, ApiError> {
    let limits = &state.config.limits;
    let limit = limits.max_request_bytes;
    let read = tokio::time::timeout(
        limits.request_body_timeout,
        axum::body::to_bytes(body, limit),
    );
    match read.await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::RequestTooLarge,
            format!("the request body exceeds {limit} bytes"),
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
