//! An agent that does not stream, for the tests of polling: its card says
//! `capabilities.streaming: false`, it refuses `message/stream` as a2a-sdk
//! does, and `message/send` (non-blocking) starts a task that advances on
//! the clock, which `tasks/get` shows as a store would (the latest status
//! message in `status`, the earlier ones moved to `history`, artifact
//! parts appended). The `X-Fake` header of the send picks a fault:
//! `flaky` (every other read answers 503), `gone` (reads answer "Task not
//! found"), `blocking` (the send answers the finished task), `forever`
//! (the task works and never ends), `failed` (it ends failed, "Boom.").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the task does, and when (after the send, in ms): the first step
/// well before the end, so that a test sees it arrive while the task
/// works even when a loaded machine reads late.
const SCRIPT: [(u64, Step); 5] = [
    (100, Step::Said("Step 1. ")),
    (900, Step::Said("Step 2. ")),
    (1_000, Step::Part("All ")),
    (1_100, Step::Part("done.")),
    (1_200, Step::End),
];

#[derive(Clone, Copy)]
enum Step {
    Said(&'static str),
    Part(&'static str),
    End,
}

/// The tasks sent so far: when each started, its first message and its
/// fault.
#[derive(Clone, Default)]
pub(crate) struct Tasks(Arc<Mutex<HashMap<String, Started>>>);

struct Started {
    at: Instant,
    user: Value,
    fault: String,
    reads: u64,
    canceled: bool,
}

pub(crate) fn card(url: &str) -> Response {
    axum::Json(
        json!({ "name": "polled", "description": "a task to poll", "url": url,
        "protocolVersion": "0.3.0", "capabilities": { "streaming": false } }),
    )
    .into_response()
}

impl Tasks {
    pub(crate) fn answer(&self, headers: &HeaderMap, request: &Value) -> Response {
        let id = &request["id"];
        let reply = |result: Value| {
            axum::Json(json!({ "jsonrpc": "2.0", "id": id, "result": result })).into_response()
        };
        let error = |code: i64, message: &str| {
            axum::Json(json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": code, "message": message } }))
            .into_response()
        };
        let Ok(mut tasks) = self.0.lock() else {
            return error(-32603, "poisoned");
        };
        let task_id = request["params"]["id"].as_str().unwrap_or_default();
        match request["method"].as_str().unwrap_or_default() {
            "message/stream" => error(-32004, "Streaming is not supported by the agent"),
            "message/send" => {
                let user = request["params"]["message"].clone();
                let id = format!("task-{}", tasks.len() + 1);
                let fault = headers
                    .get("x-fake")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let started = Started {
                    at: Instant::now(),
                    user,
                    fault,
                    reads: 0,
                    canceled: false,
                };
                let elapsed = match started.fault.as_str() {
                    "blocking" => Duration::from_secs(60),
                    _ => Duration::ZERO,
                };
                let task = started.task(&id, elapsed);
                tasks.insert(id, started);
                reply(task)
            }
            "tasks/get" => match tasks.get_mut(task_id) {
                None => error(-32001, "Task not found"),
                Some(started) => {
                    started.reads += 1;
                    match started.fault.as_str() {
                        "gone" => error(-32001, "Task not found"),
                        "flaky" if started.reads % 2 == 0 => {
                            (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response()
                        }
                        _ => reply(started.task(task_id, started.at.elapsed())),
                    }
                }
            },
            "tasks/cancel" => match tasks.get_mut(task_id) {
                None => error(-32001, "Task not found"),
                Some(started) => {
                    started.canceled = true;
                    reply(started.task(task_id, started.at.elapsed()))
                }
            },
            other => error(-32601, &format!("no method {other}")),
        }
    }
}

impl Started {
    /// The task as stored `elapsed` after the send.
    fn task(&self, id: &str, elapsed: Duration) -> Value {
        let text = |t: &str| json!({ "kind": "text", "text": t });
        let mut history = vec![self.user.clone()];
        let mut message: Option<Value> = None;
        let mut parts = Vec::new();
        let mut state = "submitted";
        for (n, (at, step)) in SCRIPT.iter().enumerate() {
            if elapsed < Duration::from_millis(*at) {
                break;
            }
            state = "working";
            match step {
                Step::Said(said) => {
                    let said = json!({ "kind": "message", "role": "agent",
                        "messageId": format!("{id}-m{n}"), "parts": [text(said)] });
                    history.extend(message.replace(said));
                }
                Step::Part(part) => parts.push(text(part)),
                Step::End if self.fault == "forever" => {}
                Step::End if self.fault == "failed" => {
                    history.extend(message.replace(json!({ "kind": "message", "role": "agent",
                        "messageId": format!("{id}-failed"), "parts": [text("Boom.")] })));
                    state = "failed";
                }
                Step::End => {
                    history.extend(message.take());
                    state = "completed";
                }
            }
        }
        if self.canceled {
            state = "canceled";
        }
        let mut status = json!({ "state": state });
        if let Some(message) = message {
            status["message"] = message;
        }
        let mut task = json!({ "kind": "task", "id": id, "contextId": "ctx",
            "status": status, "history": history });
        if !parts.is_empty() {
            task["artifacts"] = json!([{ "artifactId": "answer", "parts": parts }]);
        }
        task
    }
}
