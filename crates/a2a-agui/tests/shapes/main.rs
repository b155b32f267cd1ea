//! Property tests for issue 26: parts read by their shape and text streams
//! read by their behaviour, over shapes no framework uses yet.
//! - A tool call and its result, in random key families, spellings,
//!   declarations and dialects, keep the call's name, arguments and result.
//! - The same text as deltas, as cumulative snapshots (of a message id or
//!   an artifact), under one id or many, shows the same text once.
//! - A resend of any block kind (text, thought, call, result) adds nothing.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

#[path = "../common/mod.rs"]
mod common;
mod text_streams;
mod tool_calls;

use common::check_sequence;
use serde_json::{Value, json};

fn convert(items: &[Value]) -> Vec<Value> {
    common::convert_items(items)
}

fn rpc(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

fn task(state: &str) -> Value {
    rpc(json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": state}}))
}

fn status(message_id: &str, parts: Vec<Value>, state: &str) -> Value {
    let done = state == "completed";
    rpc(json!({
        "kind": "status-update", "taskId": "t", "contextId": "c", "final": done,
        "status": {"state": state, "message": {
            "kind": "message", "role": "agent", "messageId": message_id, "parts": parts}}
    }))
}

fn task_with_message(message_id: &str, text: &str, state: &str) -> Value {
    rpc(json!({
        "kind": "task", "id": "t", "contextId": "c",
        "status": {"state": state, "message": {
            "kind": "message", "role": "agent", "messageId": message_id,
            "parts": [{"kind": "text", "text": text}]}}
    }))
}

fn artifact(id: &str, text: &str, append: bool, last: bool) -> Value {
    rpc(json!({
        "kind": "artifact-update", "taskId": "t", "contextId": "c",
        "append": append, "lastChunk": last,
        "artifact": {"artifactId": id, "parts": [{"kind": "text", "text": text}]}
    }))
}

fn done() -> Value {
    rpc(
        json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
               "status": {"state": "completed"}}),
    )
}

fn text_part(text: &str) -> Value {
    json!({"kind": "text", "text": text})
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn deltas(events: &[Value], kind: &str) -> String {
    of_type(events, kind)
        .iter()
        .filter_map(|e| e["delta"].as_str())
        .collect()
}
