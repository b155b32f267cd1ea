//! The HTTP answer to each refusal the layers below say in their own
//! terms: the journal's (a run that cannot be continued, a thread replay
//! refused) and the shared state's (no room for a stream, no such agent).

use a2a_agui::ErrorCode;
use agui_journal::ResumeError;
use agui_journal::replays::Refused;
use axum::http::{HeaderValue, StatusCode, header};

use crate::edge::error::ApiError;
use crate::state::{NoAgent, StreamsFull};

impl From<ResumeError> for ApiError {
    fn from(err: ResumeError) -> ApiError {
        match err {
            ResumeError::Unknown => ApiError::new(
                StatusCode::GONE,
                ErrorCode::RunNotResumable,
                "the gateway keeps no run with that Last-Event-ID (finished too long ago, or never here): start a new run",
            ),
            ResumeError::TooOld => ApiError::new(
                StatusCode::GONE,
                ErrorCode::RunNotResumable,
                "the run no longer keeps the events after that Last-Event-ID: start a new run",
            ),
            ResumeError::Mismatch => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::RunMismatch,
                "that Last-Event-ID belongs to a run of another request: repeat the original request exactly",
            ),
        }
    }
}

/// Both ask the client to come back in a second: the bytes held go as
/// soon as their readers read them.
impl From<Refused> for ApiError {
    fn from(refused: Refused) -> ApiError {
        let error = match refused {
            Refused::ReaderFull => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                "too many thread replays of this caller are still being read: read them first",
            ),
            Refused::Busy => ApiError::unavailable(
                ErrorCode::GatewayBusy,
                "the gateway holds as many thread replays as it may: try again shortly",
            ),
        };
        error.with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }
}

/// A 503: a balancer may try another replica.
impl From<StreamsFull> for ApiError {
    fn from(full: StreamsFull) -> ApiError {
        ApiError::unavailable(ErrorCode::GatewayBusy, full.to_string())
    }
}

impl From<NoAgent> for ApiError {
    fn from(err: NoAgent) -> ApiError {
        let code = match err {
            NoAgent::NameTooLong => return ApiError::id_too_long("the agent name"),
            NoAgent::Unknown(_) => ErrorCode::UnknownAgent,
            NoAgent::NoDefault { .. } => ErrorCode::NoDefaultAgent,
        };
        ApiError::not_found(code, err.to_string())
    }
}
