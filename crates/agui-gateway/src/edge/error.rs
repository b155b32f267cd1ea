//! The JSON error a request gets when it fails before any stream starts.
//! Once a converted stream is open, failures travel as `RUN_ERROR` events
//! instead (see `relay`): AG-UI clients report those as a failed run.

use a2a_agui::{ErrorCode, MAX_ID_BYTES};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `{"error": {"code", "message", "side"}}` with an HTTP status. The side
/// comes from the code, so a code can never be reported on the wrong side.
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

    /// An identifier the client sent is longer than [`MAX_ID_BYTES`]:
    /// `field` says which (`threadId`, `messages[3].id`, …).
    pub fn id_too_long(field: &str) -> ApiError {
        ApiError::bad_request(
            ErrorCode::IdTooLong,
            format!("{field} is longer than {MAX_ID_BYTES} bytes"),
        )
    }

    /// The gateway refuses new work (busy, draining); a retry may succeed.
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }
}

/// `id` when it is at most [`MAX_ID_BYTES`] long (the converter's bound on
/// an agent's ids), else `ID_TOO_LONG` naming `field`. Every identifier a
/// client sends is held to it before it is kept, sent or listed: each is
/// echoed in events, remembered per thread, sent upstream.
pub fn bounded_id<'a>(field: &str, id: &'a str) -> Result<&'a str, ApiError> {
    if id.len() > MAX_ID_BYTES {
        return Err(ApiError::id_too_long(field));
    }
    Ok(id)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": {
            "code": self.code.as_str(),
            "message": self.message,
            "side": self.code.side().as_str(),
        } });
        let mut response = (self.status, axum::Json(body)).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}
