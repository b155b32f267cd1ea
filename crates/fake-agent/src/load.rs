//! The load tools' agent: deterministic and rate-controlled.
//! `message/stream` answers in the 0.3 dialect, `SendStreamingMessage` in
//! 1.0 (and over A2A 1.0's gRPC binding: `grpc`). Every chunk's text
//! carries the time it was sent (`marker`).
//!
//! The user's text may override the defaults per request:
//! `events=50 interval=20 hold=0 bytes=16` (chunks, ms between them, seconds
//! to stay silent after the first chunk, filler bytes per chunk).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::marker::{marker, now_micros};
use crate::sse;

/// What a request gets unless its text says otherwise.
#[derive(Debug, Clone)]
pub struct LoadDefaults {
    /// Chunks per stream.
    pub events: u64,
    /// Milliseconds between chunks.
    pub interval_ms: u64,
    /// Filler bytes per chunk, besides the time marker.
    pub bytes: usize,
}

impl Default for LoadDefaults {
    fn default() -> LoadDefaults {
        LoadDefaults {
            events: 50,
            interval_ms: 20,
            bytes: 16,
        }
    }
}

/// The defaults and a count of the tasks answered (each gets its own ids).
#[derive(Clone)]
pub(crate) struct Pacer {
    pub(crate) defaults: LoadDefaults,
    pub(crate) tasks: Arc<AtomicU64>,
}

impl Pacer {
    pub(crate) fn new(defaults: LoadDefaults) -> Pacer {
        Pacer {
            defaults,
            tasks: Arc::default(),
        }
    }

    /// A JSON-RPC streaming request's answer: its plan's stream.
    pub(crate) fn answer(&self, body: &[u8]) -> Response {
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let v10 = request["method"] == "SendStreamingMessage";
        let text = crate::message_text(&request["params"]["message"]);
        let plan = plan(&self.defaults, &text);
        let n = self.tasks.fetch_add(1, Ordering::Relaxed);
        let (task, context) = (format!("task-{n}"), format!("ctx-{n}"));
        let id = request["id"].clone();
        let filler = "x".repeat(plan.bytes);
        let stream = paced(plan, move |i| {
            let result = if i == 0 {
                task_event(v10, &task, &context)
            } else if i <= plan.events {
                let text = format!("{filler} {} ", marker(now_micros()));
                chunk_event(v10, &task, &context, &text, i == 1, i == plan.events)
            } else {
                done_event(v10, &task, &context)
            };
            Ok::<_, Infallible>(sse::frame(&id, &result))
        });
        sse::response(stream)
    }
}

/// The card of the load agent.
pub(crate) fn card(url: &str) -> Response {
    axum::Json(
        json!({ "name": "fake upstream", "description": "deterministic load-test agent",
        "url": url, "version": "1", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
        "capabilities": { "streaming": true }, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": [] }),
    )
    .into_response()
}

/// One stream's plan: the defaults, as its text overrode them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) events: u64,
    interval: Duration,
    hold: Duration,
    pub(crate) bytes: usize,
}

pub(crate) fn plan(defaults: &LoadDefaults, text: &str) -> Plan {
    let mut plan = Plan {
        events: defaults.events,
        interval: Duration::from_millis(defaults.interval_ms),
        hold: Duration::ZERO,
        bytes: defaults.bytes,
    };
    for word in text.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let Ok(number) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "events" => plan.events = number.min(1_000_000),
            "interval" => plan.interval = Duration::from_millis(number),
            "hold" => plan.hold = Duration::from_secs(number.min(3600)),
            "bytes" => plan.bytes = usize::try_from(number).unwrap_or(16).min(1 << 20),
            _ => {}
        }
    }
    plan
}

/// Item `i` of a plan's stream made by `item` (0: the task, 1..=events:
/// the chunks, then the end), each at its time: the first chunk at once,
/// the next after the interval plus the hold, the rest an interval apart.
pub(crate) fn paced<T: Send + 'static>(
    plan: Plan,
    item: impl Fn(u64) -> T + Send + Sync + 'static,
) -> impl futures::Stream<Item = T> + Send + 'static {
    let item = Arc::new(item);
    futures::stream::unfold(0u64, move |i| {
        let item = item.clone();
        async move {
            if i > plan.events + 1 {
                return None;
            }
            if i >= 2 {
                let wait = if i == 2 {
                    plan.interval + plan.hold
                } else {
                    plan.interval
                };
                if wait.is_zero() {
                    // Back to back: `sleep(0)` would wait for the timer's
                    // next millisecond tick, pacing every stream.
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(wait).await;
                }
            }
            Some((item(i), i + 1))
        }
    })
}

fn task_event(v10: bool, task: &str, context: &str) -> Value {
    if v10 {
        json!({ "task": { "id": task, "contextId": context, "status": { "state": "TASK_STATE_SUBMITTED" } } })
    } else {
        json!({ "kind": "task", "id": task, "contextId": context, "status": { "state": "submitted" } })
    }
}

fn chunk_event(v10: bool, task: &str, context: &str, text: &str, first: bool, last: bool) -> Value {
    if v10 {
        let mut update = json!({ "taskId": task, "contextId": context,
            "artifact": { "artifactId": "answer", "parts": [{ "text": text }] } });
        if !first {
            update["append"] = json!(true);
        }
        if last {
            update["lastChunk"] = json!(true);
        }
        json!({ "artifactUpdate": update })
    } else {
        json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "append": !first, "lastChunk": last,
            "artifact": { "artifactId": "answer", "parts": [{ "kind": "text", "text": text }] } })
    }
}

fn done_event(v10: bool, task: &str, context: &str) -> Value {
    if v10 {
        json!({ "statusUpdate": { "taskId": task, "contextId": context, "status": { "state": "TASK_STATE_COMPLETED" } } })
    } else {
        json!({ "kind": "status-update", "taskId": task, "contextId": context, "final": true, "status": { "state": "completed" } })
    }
}
