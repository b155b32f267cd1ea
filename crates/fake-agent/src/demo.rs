//! `agui-gateway demo`'s agent (A2A 0.3 JSON-RPC). Every answer uses the hints of all three seed systems: an Agent Stack
//! trajectory, Hector thinking and a tool call with its result, text
//! streamed as artifact chunks, an ACP citation, and a multimodal command.
//! Its ids derive from the request, so the same request gives the same
//! answer (the examples of the README and docs/routes.md show real output).
//!
//! Through `/agui` it also shows the AG-UI input extension
//! (`docs/extension.md`): when the client declares a weather tool, the
//! agent calls the client's tool instead of its own and answers from the
//! result the client sends back; when the client shares state, the agent
//! answers with a snapshot and a patch of it.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::sse;

/// The demo agent's card, served at `url`.
pub(crate) fn card(url: &str) -> Response {
    axum::Json(json!({
        "name": "Demo Assistant",
        "description": "A built-in A2A agent that answers weather questions with reasoning, a tool call, citations and a client command.",
        "url": url,
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": { "streaming": true, "extensions": [
            { "uri": "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol" },
            { "uri": "https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1" },
            { "uri": "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1" }
        ] },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{ "id": "weather", "name": "Weather", "description": "Tells the weather", "tags": ["demo"] }]
    }))
    .into_response()
}

fn short_hash(value: &impl Hash) -> String {
    // DefaultHasher::new() has fixed keys: the same request, the same id.
    let mut hasher = std::hash::DefaultHasher::new();
    value.hash(&mut hasher);
    format!("{:08x}", hasher.finish() >> 32)
}

fn error(id: &Value, code: i64, message: &str) -> Response {
    axum::Json(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }))
        .into_response()
}

/// The answer to a JSON-RPC request, each event `delay` after the one
/// before.
pub(crate) fn respond(delay: Duration, body: &[u8]) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error(&Value::Null, -32700, "Invalid JSON payload");
    };
    let id = request["id"].clone();
    let message = &request["params"]["message"];
    let method = request["method"].as_str().unwrap_or("");
    if !matches!(method, "message/stream" | "message/send") {
        return match method {
            "tasks/get" | "tasks/cancel" | "tasks/resubscribe" => {
                error(&id, -32001, "Task not found")
            }
            _ => error(&id, -32601, "Method not found"),
        };
    }
    if !message.is_object() {
        return error(&id, -32602, "params.message is required");
    }
    let text = crate::message_text(message);
    let context = message["contextId"]
        .as_str()
        .map_or_else(|| format!("ctx-{}", short_hash(&text)), str::to_owned);
    let metadata = &message["metadata"];
    let (task, events) = match tool_result(message) {
        // The result of the client's tool, for the task that asked for it.
        Some(result) => {
            let task = message["taskId"]
                .as_str()
                .map_or_else(|| format!("task-{}", short_hash(&result)), str::to_owned);
            let events = answer_from_tool(&task, &context, &result);
            (task, events)
        }
        None => {
            let task = format!("task-{}", short_hash(&(&text, &context)));
            let events = match client_weather_tool(metadata) {
                Some(tool) => call_client_tool(&task, &context, &tool, &city_in(&text)),
                None => answer(&task, &context, &text, metadata),
            };
            (task, events)
        }
    };
    if method == "message/send" {
        return axum::Json(
            json!({ "jsonrpc": "2.0", "id": id, "result": final_task(&task, &context, &events) }),
        )
        .into_response();
    }
    let stream = futures::stream::unfold(
        (events.into_iter(), id, true),
        move |(mut events, id, first)| async move {
            let event = events.next()?;
            if !first {
                tokio::time::sleep(delay).await;
            }
            let frame = sse::frame(&id, &event);
            Some((
                Ok::<_, std::convert::Infallible>(frame),
                (events, id, false),
            ))
        },
    );
    sse::response(stream)
}

/// The city a question names: its last capitalised word that is not a
/// usual sentence opener.
fn city_in(question: &str) -> String {
    const OPENERS: [&str; 8] = ["Hello", "Hi", "What", "Weather", "How", "Is", "The", "Tell"];
    question
        .split(|c: char| !c.is_alphanumeric())
        .rfind(|w| w.chars().next().is_some_and(char::is_uppercase) && !OPENERS.contains(w))
        .unwrap_or("Paris")
        .to_owned()
}

/// A tool the client declared (`x-agui-tools`) whose name says weather.
fn client_weather_tool(metadata: &Value) -> Option<String> {
    metadata["x-agui-tools"]
        .as_array()?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|name| name.to_ascii_lowercase().contains("weather"))
        .map(str::to_owned)
}

/// The content of a `tool_result` part the client sent, if any.
fn tool_result(message: &Value) -> Option<String> {
    message["parts"]
        .as_array()?
        .iter()
        .map(|p| &p["data"])
        .find(|d| d["type"] == "tool_result")
        .map(|d| d["content"].as_str().unwrap_or_default().to_owned())
}

/// The turn that lets the client run its own weather tool: the call, then
/// the task waits for the result.
fn call_client_tool(task: &str, context: &str, tool: &str, city: &str) -> Vec<Value> {
    vec![
        json!({ "kind": "task", "id": task, "contextId": context, "status": { "state": "submitted" } }),
        json!({ "kind": "status-update", "taskId": task, "contextId": context, "final": false,
            "status": { "state": "working", "message": { "kind": "message", "role": "agent",
                "messageId": format!("{task}-ask"), "parts": [
                    { "kind": "text", "text": format!("Asking your {tool} tool about {city}.") },
                    { "kind": "data", "data": { "type": "tool_use", "id": "call-client-weather",
                      "name": tool, "arguments": { "city": city } } }] } } }),
        json!({ "kind": "status-update", "taskId": task, "contextId": context, "final": true,
            "status": { "state": "input-required" } }),
    ]
}

/// The turn after the client ran its tool: the answer from its result.
fn answer_from_tool(task: &str, context: &str, result: &str) -> Vec<Value> {
    vec![
        json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "lastChunk": true,
            "artifact": { "artifactId": "answer", "name": "answer",
                "parts": [{ "kind": "text", "text": format!("Your tool says: {result}") }] } }),
        json!({ "kind": "status-update", "taskId": task, "contextId": context, "final": true,
            "status": { "state": "completed" } }),
    ]
}

/// The A2A events of one answer.
fn answer(task: &str, context: &str, question: &str, metadata: &Value) -> Vec<Value> {
    let city = city_in(question);
    let message = |parts: Value, meta: Option<Value>| {
        let mut m = json!({ "kind": "message", "role": "agent", "messageId": format!("{task}-msg"), "taskId": task, "contextId": context, "parts": parts });
        if let Some(meta) = meta {
            m["metadata"] = meta;
        }
        m
    };
    let status = |state: &str, msg: Option<Value>, last: bool| {
        let mut s = json!({ "kind": "status-update", "taskId": task, "contextId": context, "status": { "state": state }, "final": last });
        if let Some(msg) = msg {
            s["status"]["message"] = msg;
        }
        s
    };
    let thinking = |text: &str| {
        json!([{ "kind": "text", "text": text,
        "metadata": { "event_type": "thinking", "block_type": "thinking", "block_id": "think-1", "block_index": 0 } }])
    };
    let chunk = |text: &str,
                 append: bool,
                 last: bool,
                 part_meta: Option<Value>,
                 artifact_meta: Option<Value>| {
        let mut part = json!({ "kind": "text", "text": text });
        if let Some(meta) = part_meta {
            part["metadata"] = meta;
        }
        let mut artifact = json!({ "artifactId": "answer", "name": "answer", "parts": [part] });
        if let Some(meta) = artifact_meta {
            artifact["metadata"] = meta;
        }
        json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "artifact": artifact, "append": append, "lastChunk": last })
    };
    let cited = format!("It is sunny in {city}");
    let mut events = vec![
        json!({ "kind": "task", "id": task, "contextId": context, "status": { "state": "submitted" } }),
        status(
            "working",
            Some(
                json!({ "kind": "message", "role": "agent", "messageId": format!("{task}-plan"), "parts": [],
            "metadata": { "https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1":
                { "title": "Planning", "content": "Look up the weather, then answer.", "group_id": "plan" } } }),
            ),
            false,
        ),
        message(thinking(""), None),
        message(
            thinking(&format!("The user wants the weather in {city}. ")),
            None,
        ),
        message(thinking("I will call the weather tool."), None),
        message(
            json!([{ "kind": "data", "data": { "thinking_id": "think-1" },
            "metadata": { "event_type": "thinking_complete", "block_type": "thinking_complete", "block_id": "think-1" } }]),
            None,
        ),
        message(
            json!([{ "kind": "data", "data": { "id": "call-weather", "name": "get_weather", "arguments": { "city": city } },
            "metadata": { "event_type": "tool_call", "tool_call_id": "call-weather", "tool_name": "get_weather" } }]),
            None,
        ),
        message(
            json!([{ "kind": "data", "data": { "tool_call_id": "call-weather", "content": "sunny, 22 °C", "error": "" },
            "metadata": { "event_type": "tool_call", "tool_call_id": "call-weather", "is_error": false, "is_final": true } }]),
            None,
        ),
        chunk(&cited, false, false, None, None),
        chunk(
            ", 22 °C",
            true,
            false,
            // The citation covers the sentence's cited part, whatever the
            // city's length (offsets in characters).
            Some(
                json!({ "kind": "citation", "url": "https://weather.example/today",
            "title": "Weather service", "start_index": 0, "end_index": cited.chars().count() }),
            ),
            None,
        ),
        chunk(
            ", with a light breeze.",
            true,
            true,
            None,
            Some(json!({ "commands": [{ "name": "SHOW_WEATHER_CARD",
            "params": [{ "name": "city", "value": city, "normValue": city.to_lowercase() }], "commandRequestId": format!("{task}-cmd") }] })),
        ),
    ];
    if let Some(state) = metadata["x-agui-state"].as_object() {
        // Shared state: the city asked about in a snapshot, the forecast as
        // a patch of it.
        let mut snapshot = state.clone();
        snapshot.insert("city".into(), json!(city));
        events.push(json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "lastChunk": true,
            "artifact": { "artifactId": "shared-state", "parts": [
                { "kind": "data", "data": { "type": "agui-state-snapshot", "snapshot": snapshot } },
                { "kind": "data", "data": { "type": "agui-state-delta",
                  "patch": [{ "op": "add", "path": "/forecast", "value": "sunny, 22 °C" }] } }] } }));
    }
    if metadata.as_object().is_some_and(|m| !m.is_empty()) {
        events.push(json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "lastChunk": true,
            "artifact": { "artifactId": "client-metadata", "parts": [{ "kind": "data", "data": { "received": metadata } }] } }));
    }
    // What the demo's "model" used, as an AI SDK agent reports it: the
    // gateway's accounting shows on every run.
    let mut done = status("completed", None, true);
    done["metadata"] = json!({ "model": "demo-weather",
        "usage": { "inputTokens": DEMO_USAGE.0, "outputTokens": DEMO_USAGE.1, "totalTokens": DEMO_USAGE.0 + DEMO_USAGE.1 } });
    events.push(done);
    events
}

/// The input and output tokens each weather answer reports.
pub const DEMO_USAGE: (u64, u64) = (96, 24);

/// What `message/send` returns: the finished task with its artifacts.
fn final_task(task: &str, context: &str, events: &[Value]) -> Value {
    let artifacts: Vec<Value> = events
        .iter()
        .filter(|e| e["kind"] == "artifact-update")
        .map(|e| e["artifact"].clone())
        .collect();
    let state = events
        .iter()
        .rev()
        .find_map(|e| e["status"]["state"].as_str())
        .unwrap_or("completed");
    json!({ "kind": "task", "id": task, "contextId": context, "status": { "state": state }, "artifacts": artifacts })
}
