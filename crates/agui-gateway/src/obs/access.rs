//! The access log: one line per request (target `agui_gateway::access`,
//! level info), written when its answer ends: a stream's last byte, an
//! error, or the client leaving. Handlers and the relay note what only
//! they know (the agent, the mode, events, the `RUN_ERROR` code) on the
//! request's `AccessNote` as the answer goes.
//!
//! Not tower-http's `TraceLayer`: its body wrapper calls back at a body's
//! end or failure but not when the body is dropped, and a client leaving
//! mid-stream (the usual end of an SSE run) drops it; that request would
//! get no line. Its callbacks also see neither the agent nor the events.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{Extensions, Method, StatusCode};
use axum::response::Response;
use http_body::Frame;

use crate::obs::telemetry::{self, Outcome, SharedTrace};

pub use crate::obs::metrics::Mode;

/// The request's notes, shared by the handler, the relay and the logged
/// body. Events are counted without a lock (the relay adds a step's
/// count); the rest is written once or twice per request.
#[derive(Clone, Default)]
pub struct AccessNote(Arc<Noted>);

#[derive(Default)]
struct Noted {
    events: AtomicU64,
    fields: Mutex<Fields>,
}

#[derive(Default)]
struct Fields {
    agent: Option<String>,
    mode: Option<Mode>,
    error: Option<String>,
    /// Input and output tokens the run used, when the agent said.
    tokens: Option<(u64, u64)>,
}

impl AccessNote {
    /// The note the access layer put on a request (if it runs), with the
    /// agent and mode the request turned out to be.
    pub fn noted(extensions: &Extensions, agent: &str, mode: Mode) -> Option<AccessNote> {
        let note = extensions.get::<AccessNote>().cloned()?;
        note.call(agent, mode);
        Some(note)
    }

    pub fn call(&self, agent: &str, mode: Mode) {
        if let Ok(mut fields) = self.0.fields.lock() {
            fields.agent = Some(agent.to_owned());
            fields.mode = Some(mode);
        }
    }

    pub fn add_events(&self, count: usize) {
        self.0
            .events
            .fetch_add(u64::try_from(count).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The run used these tokens (AG-UI's accounting).
    pub fn tokens(&self, input: u64, output: u64) {
        if let Ok(mut fields) = self.0.fields.lock() {
            fields.tokens = Some((input, output));
        }
    }

    /// The run ended in `RUN_ERROR` with this code.
    pub fn run_error(&self, code: &str) {
        if let Ok(mut fields) = self.0.fields.lock() {
            // An agent's code is its text: bounded for the log and spans.
            fields.error = Some(crate::obs::metrics::bounded_code(code).to_owned());
        }
    }
}

/// The middleware: notes the request, and hands the answer's body to a
/// wrapper that writes the line when it ends.
pub async fn layer(mut request: Request, next: axum::middleware::Next) -> Response {
    let path = request.uri().path();
    let trace = telemetry::start_request(request.headers(), request.method(), path);
    let line = Line {
        started: Instant::now(),
        method: request.method().clone(),
        // The path only: a query may carry a token.
        path: path.chars().take(200).collect(),
        note: AccessNote::default(),
        status: StatusCode::OK,
        bytes: 0,
        trace,
    };
    request.extensions_mut().insert(line.note.clone());
    if let Some(trace) = &line.trace {
        request.extensions_mut().insert(trace.clone());
    }
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let line = Line {
        status: parts.status,
        ..line
    };
    Response::from_parts(
        parts,
        Body::new(Logged {
            body,
            line: Some(line),
        }),
    )
}

struct Line {
    started: Instant,
    method: Method,
    path: String,
    note: AccessNote,
    status: StatusCode,
    bytes: u64,
    /// The request's spans, ended with the line.
    trace: Option<SharedTrace>,
}

impl Line {
    fn write(self, end: End) {
        let events = self.note.0.events.load(Ordering::Relaxed);
        let (agent, mode, error, tokens) = match self.note.0.fields.lock() {
            Ok(mut fields) => (
                fields.agent.take(),
                fields.mode.map(Mode::as_str),
                fields.error.take(),
                fields.tokens,
            ),
            Err(_) => (None, None, None, None),
        };
        let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        tracing::info!(
            target: "agui_gateway::access",
            method = %self.method,
            path = %self.path.escape_debug(),
            status = self.status.as_u16(),
            agent = agent.as_deref().unwrap_or("-"),
            mode = mode.unwrap_or("-"),
            events,
            run_error = error.as_deref().unwrap_or("-"),
            input_tokens = %count(tokens.map(|t| t.0)),
            output_tokens = %count(tokens.map(|t| t.1)),
            bytes = self.bytes,
            duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            end = end.as_str(),
            "request"
        );
        if let Some(trace) = &self.trace {
            trace.end(&Outcome {
                status: self.status,
                agent: agent.as_deref(),
                mode,
                events,
                run_error: error.as_deref(),
                end: end.as_str(),
            });
        }
    }
}

/// How an answer ended.
#[derive(Clone, Copy)]
enum End {
    /// Its last byte went out.
    Complete,
    /// Its body failed (the gateway's side).
    Failed,
    /// It was dropped before its end: the client went away.
    ClientGone,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            End::Complete => "complete",
            End::Failed => "failed",
            End::ClientGone => "client_gone",
        }
    }
}

/// The answer's body, counted; the line is written at its end or drop.
struct Logged {
    body: Body,
    line: Option<Line>,
}

impl Logged {
    fn end(&mut self, end: End) {
        if let Some(line) = self.line.take() {
            line.write(end);
        }
    }
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(line)) = (frame.data_ref(), self.line.as_mut()) {
                    line.bytes += u64::try_from(data.len()).unwrap_or(u64::MAX);
                }
            }
            Poll::Ready(Some(Err(_))) => self.end(End::Failed),
            Poll::Ready(None) => self.end(End::Complete),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        // hyper drops a body it has sent whole without a last poll when its
        // size was known (`is_end_stream`): that is complete, not a client
        // gone.
        let end = if self.body.is_end_stream() {
            End::Complete
        } else {
            End::ClientGone
        };
        self.end(end);
    }
}
