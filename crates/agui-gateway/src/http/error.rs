//! The JSON error a request gets when it fails before any stream starts,
//! and every domain error below `http` as that answer: the layers say what
//! went wrong (and its stable code), this module what status and headers
//! it gets. Once a converted stream is open, failures travel as
//! `RUN_ERROR` events instead (see `relay`): AG-UI clients report those as
//! a failed run.

use a2a_agui::ErrorCode;
use agui_edge::refusal;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::agui::{IdTooLong, InputError, RunError};
use agui_journal::ResumeError;
use agui_journal::budget::Exceeded;
use agui_journal::replays::Refused;

use crate::resume::ResumeRefused;
use crate::state::{NoAgent, StreamsFull};
use crate::upstream::outbound;
use crate::upstream::target::PathError;

/// An HTTP status and the error body (`agui_edge::refusal`) for `code`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    /// Extra response headers (`Retry-After`, `WWW-Authenticate`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> ApiError {
        self.headers.push((name, value));
        self
    }

    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    /// The gateway refuses new work (busy, draining); a retry may succeed.
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// Asks the client to wait a second before it tries again.
    fn retry_soon(self) -> ApiError {
        self.with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = refusal::body(self.code, &self.message);
        let mut response = (self.status, axum::Json(body)).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}

impl From<IdTooLong> for ApiError {
    fn from(err: IdTooLong) -> ApiError {
        ApiError::bad_request(ErrorCode::IdTooLong, err.to_string())
    }
}

impl From<InputError> for ApiError {
    fn from(err: InputError) -> ApiError {
        ApiError::bad_request(err.code(), err.to_string())
    }
}

impl From<RunError> for ApiError {
    fn from(err: RunError) -> ApiError {
        match err {
            RunError::Input(err) => err.into(),
            RunError::Busy(full) => full.into(),
        }
    }
}

/// A caller past its token budget: 429 until its window turns.
impl From<Exceeded> for ApiError {
    fn from(exceeded: Exceeded) -> ApiError {
        let retry_after = HeaderValue::from(exceeded.retry_after_secs);
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::TokenBudgetExceeded,
            exceeded.to_string(),
        )
        .with_header(header::RETRY_AFTER, retry_after)
    }
}

/// No place for one more stream: a 503, so a balancer may try another
/// replica.
impl From<StreamsFull> for ApiError {
    fn from(full: StreamsFull) -> ApiError {
        ApiError::unavailable(ErrorCode::GatewayBusy, full.to_string())
    }
}

/// The agent a route names is not one, or the route names none and no
/// default is configured.
impl From<NoAgent> for ApiError {
    fn from(err: NoAgent) -> ApiError {
        let code = match err {
            NoAgent::NameTooLong => {
                return IdTooLong {
                    field: "the agent name".to_owned(),
                }
                .into();
            }
            NoAgent::Unknown(_) => ErrorCode::UnknownAgent,
            NoAgent::NoDefault { .. } => ErrorCode::NoDefaultAgent,
        };
        ApiError::not_found(code, err.to_string())
    }
}

/// What a `Last-Event-ID` names that the journal cannot continue.
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

/// A thread replay not given now; both ask the client to come back in a
/// second: the bytes held go as soon as their readers read them.
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
        error.retry_soon()
    }
}

impl From<ResumeRefused> for ApiError {
    fn from(err: ResumeRefused) -> ApiError {
        match err {
            ResumeRefused::Journal(err) => err.into(),
            ResumeRefused::Busy(full) => full.into(),
            ResumeRefused::Replays(refused) => refused.into(),
            ResumeRefused::IdTooLong(err) => err.into(),
            err @ ResumeRefused::NotYetNamed => {
                ApiError::new(StatusCode::CONFLICT, err.code(), err.to_string())
            }
            err @ ResumeRefused::Body(_) => ApiError::bad_request(err.code(), err.to_string()),
        }
    }
}

/// A path that leaves the agent's base.
impl From<PathError> for ApiError {
    fn from(err: PathError) -> ApiError {
        ApiError::bad_request(ErrorCode::InvalidPath, err.to_string())
    }
}

/// The agent may not be called for this request (a call that is not a run:
/// a run shows it as its `RUN_ERROR`).
impl From<outbound::Refusal> for ApiError {
    fn from(refusal: outbound::Refusal) -> ApiError {
        ApiError::new(StatusCode::BAD_GATEWAY, refusal.code, refusal.message)
    }
}
