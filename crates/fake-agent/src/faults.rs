//! Fault injection for the tests: what the agent does is chosen per
//! request by the `X-Fake` header, which the gateway forwards like any
//! other header: `fixed` (the default), `http500`, `fail-at-once`,
//! `json-error`, `drop`, `stall`, `oversized`, `silent`, `burst`, `drip`,
//! `endless`, `usage` and `usage-stall`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::log::{DropFlag, Log};
use crate::sse;

/// The fixed SSE body of the `fixed` scenario: CRLF, a comment, a
/// multi-line `data:`, an `event:` line. Passthrough must keep every byte.
pub const FIXED_SSE: &str = ": ping - 2026-11-21 04:36:11\r\n\r\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"kind\":\"task\",\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"submitted\"}}}\r\n\r\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\r\ndata: \"result\":{\"kind\":\"artifact-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"kind\":\"text\",\"text\":\"fixed\"}]},\"lastChunk\":true}}\r\n\r\nevent: message\r\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"kind\":\"status-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"completed\"},\"final\":true}}\r\n\r\n";

/// The input and output tokens the `usage` scenario reports.
pub const USAGE: (u64, u64) = (30, 12);

/// The chunks of the `burst` scenario.
pub const BURST: usize = 200;

/// The card of the fault-injecting agent.
pub(crate) fn card(url: &str) -> Response {
    axum::Json(
        json!({ "name": "fake", "description": "fault injection", "url": url,
        "protocolVersion": "0.3.0", "capabilities": { "streaming": true } }),
    )
    .into_response()
}

/// Every frame of this agent answers request id 1.
fn frame(result: Value) -> Bytes {
    sse::frame(&json!(1), &result)
}

fn task() -> Value {
    json!({ "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": "working" } })
}

fn chunk(text: &str) -> Value {
    json!({ "kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": true,
        "artifact": { "artifactId": "a", "parts": [{ "kind": "text", "text": text }] } })
}

/// The answer to `request` (already logged) that the `X-Fake` header
/// picks.
pub(crate) fn answer(log: &Arc<Mutex<Log>>, headers: &HeaderMap, request: &Value) -> Response {
    if request["method"] == "tasks/cancel" {
        return axum::Json(
            json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "kind": "task", "id": "t1",
            "contextId": "c1", "status": { "state": "canceled" } } }),
        )
        .into_response();
    }
    let scenario = headers
        .get("x-fake")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("fixed")
        .to_owned();
    let ok = |b: Bytes| Ok::<_, std::io::Error>(b);
    match scenario.as_str() {
        "fixed" => sse::response(futures::stream::iter([ok(Bytes::from_static(FIXED_SSE.as_bytes()))])),
        "http500" => (StatusCode::INTERNAL_SERVER_ERROR, "internal failure in the agent").into_response(),
        // A head, then a body that fails before its first byte (as a2a-sdk
        // 0.3's REST subscribe to a finished task does).
        "fail-at-once" => sse::response(futures::stream::once(async {
            // Pending once, so hyper flushes this fake's own head; the cut
            // follows at once, arriving with the head as the SDK's does.
            tokio::task::yield_now().await;
            Err(std::io::Error::other("cut before the first byte"))
        })),
        "json-error" => axum::Json(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32001, "message": "Task not found" } })).into_response(),
        "drop" => sse::response(futures::stream::iter([
            ok(frame(task())),
            ok(frame(chunk("half an ans"))),
            Err(std::io::Error::other("connection reset by the fake")),
        ])),
        "stall" => sse::response(futures::stream::iter([ok(frame(task()))]).chain(futures::stream::once(async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            ok(Bytes::new())
        }))),
        "oversized" => sse::response(futures::stream::iter([ok(frame(task())), ok(frame(chunk(&"x".repeat(5000))))])),
        "silent" => sse::response(futures::stream::iter([ok(frame(task()))]).chain(futures::stream::once(async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            ok(frame(json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": { "state": "completed" }, "final": true })))
        }))),
        // A run that reports its usage as Mastra does (input 30, output
        // 12: 42 tokens), on the final status.
        "usage" => {
            let end = json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": { "state": "completed" }, "final": true,
                "metadata": { "usage": { "inputTokens": USAGE.0, "outputTokens": USAGE.1, "totalTokens": USAGE.0 + USAGE.1 } } });
            sse::response(futures::stream::iter([ok(frame(task())), ok(frame(chunk("used"))), ok(frame(end))]))
        }
        // A model call's usage mid-run (ADK's shape), then silence: what
        // a client that leaves before the end was charged.
        "usage-stall" => {
            let call = json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": { "state": "working" }, "final": false,
                "metadata": { "adk_usage_metadata": { "prompt_token_count": USAGE.0, "candidates_token_count": USAGE.1 } } });
            sse::response(futures::stream::iter([ok(frame(task())), ok(frame(call)), ok(frame(chunk("used")))]).chain(futures::stream::once(async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                ok(Bytes::new())
            })))
        }
        // 200 chunks back to back, then the end: what batching is for.
        "burst" => {
            let chunks = (1..=BURST).map(move |i| ok(frame(chunk(&format!("[{i}]")))));
            let end = json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": { "state": "completed" }, "final": true });
            sse::response(futures::stream::iter(
                std::iter::once(ok(frame(task()))).chain(chunks).chain([ok(frame(end))]),
            ))
        }
        "drip" | "endless" => {
            let count = if scenario == "drip" { 8 } else { 150 };
            let log = log.clone();
            let flag = DropFlag(log.clone());
            let stream = futures::stream::unfold((0usize, log, flag), move |(i, log, flag)| async move {
                if i > count {
                    return None;
                }
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                let event = if i == 0 {
                    task()
                } else if i == count {
                    json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": { "state": "completed" }, "final": true })
                } else {
                    chunk(&format!("[{i}]"))
                };
                if let Ok(mut log) = log.lock() {
                    log.sent.push(Instant::now());
                }
                Some((ok(frame(event)), (i + 1, log, flag)))
            });
            sse::response(stream)
        }
        other => (StatusCode::BAD_REQUEST, format!("unknown X-Fake scenario {other}")).into_response(),
    }
}
