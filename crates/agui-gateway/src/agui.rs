//! The AG-UI endpoint: a `RunAgentInput` from `@ag-ui/client`'s HttpAgent
//! (1.0.0, 0.0.59, 0.0.48) becomes one A2A streaming call, and its answer
//! comes back as AG-UI events.
//!
//! - `threadId` is the A2A `contextId`; `RUN_STARTED` / `RUN_FINISHED` echo
//!   the request's `threadId` and `runId`.
//! - The newest user message (text, images, files) is what is sent.
//! - A thread whose task waits for input continues that task. The task id
//!   comes back in the metadata of the assistant message that asked (the
//!   1.0 client keeps it), so any replica can continue; a per-replica
//!   memory covers older clients.
//! - `forwardedProps.a2a.metadata` goes into the A2A message metadata (the
//!   multimodal-interaction seed's user, device, location, …) and
//!   `forwardedProps.a2a.extensions` activates A2A extensions.

use std::sync::Arc;
use std::time::Instant;

use a2a_agui::{Event, Options};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::relay::{self, Run, random_u64};
use crate::server::{
    Accept, SharedState, error_response, forward_headers, output_dialect, stream_permit,
};
use crate::upstream::{Agent, OutgoingMessage, OutgoingPart, streaming_request};

pub async fn run(
    state: SharedState,
    agent: Arc<Agent>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.metrics.count_request("agui");
    let input: Value = match serde_json::from_slice(&body) {
        Ok(input) => input,
        Err(err) => return invalid(format!("the body is not JSON: {err}")),
    };
    let text = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(thread_id), Some(run_id)) = (text("threadId"), text("runId")) else {
        return invalid("a RunAgentInput needs string threadId and runId".to_owned());
    };
    let Some(messages) = input.get("messages").and_then(Value::as_array) else {
        return invalid("a RunAgentInput needs a messages array".to_owned());
    };
    let forwarded = input.pointer("/forwardedProps/a2a");
    let mut message = match newest_user_message(messages) {
        Some(Ok(message)) => message,
        Some(Err(err)) => return invalid(err),
        None => return invalid("no user message to send: the messages contain none".to_owned()),
    };
    message.message_id = format!("{run_id}-user");
    message.context_id = Some(thread_id.to_owned());
    message.task_id = waiting_task(messages).or_else(|| state.waiting.get(thread_id));
    if let Some(metadata) = forwarded.and_then(|f| f.get("metadata")) {
        match metadata.as_object() {
            Some(metadata) => message.metadata = Some(metadata.clone()),
            None => return invalid("forwardedProps.a2a.metadata must be an object".to_owned()),
        }
    }
    if let Some(extensions) = forwarded.and_then(|f| f.get("extensions")) {
        let Some(list) = extensions.as_array() else {
            return invalid("forwardedProps.a2a.extensions must be an array of URIs".to_owned());
        };
        message.extensions = list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }

    let permit = match stream_permit(&state) {
        Ok(permit) => permit,
        Err(response) => return *response,
    };
    let (url, version) = agent.endpoint().await;
    let (request_body, needs_version) = streaming_request(
        version,
        &message,
        &format!("agui-{run_id}-{:x}", random_u64()),
    );
    let mut request = forward_headers(
        agent.stream_client.post(url),
        &without_body_headers(&headers),
        &agent,
        Accept::Replace,
    )
    .header(header::ACCEPT, "text/event-stream, application/json")
    .json(&request_body);
    if needs_version {
        request = request.header("A2A-Version", "1.0");
    }
    if !message.extensions.is_empty() {
        let list = message.extensions.join(",");
        request = request
            .header("A2A-Extensions", &list)
            .header("X-A2A-Extensions", &list);
    }
    let thread = thread_id.to_owned();
    let state_for_end = state.clone();
    let on_end = move |event: &Event, task: Option<&str>| {
        // Remember a waiting task for clients that do not send the
        // message metadata back; forget it once the task moved on.
        let waiting = match event {
            Event::RunFinished {
                result: Some(result),
                ..
            } => matches!(
                result.get("state").and_then(Value::as_str),
                Some("input-required" | "auth-required")
            ),
            _ => false,
        };
        state_for_end
            .waiting
            .set(&thread, if waiting { task } else { None });
    };
    let query = None;
    let run = Run {
        agent: agent.clone(),
        options: Options {
            thread_id: Some(thread_id.to_owned()),
            run_id: Some(run_id.to_owned()),
            interrupts: agent.config.interrupts,
        },
        dialect: output_dialect(&agent, query),
        keepalive: state.config.keepalive,
        max_event_bytes: state.config.max_event_bytes,
        shutdown: state.shutdown.clone(),
        metrics: state.metrics.clone(),
        on_end: Some(Box::new(on_end)),
        permit,
    };
    let started = Instant::now();
    relay::relay(run, agent.send_stream(request).await, started).await
}

fn invalid(message: String) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        "client",
        "INVALID_RUN_INPUT",
        message,
    )
}

/// The client's own headers minus those describing its body and what it
/// accepts (the gateway sends a different body and accepts SSE).
fn without_body_headers(headers: &HeaderMap) -> HeaderMap {
    let mut headers = headers.clone();
    for name in [
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::ACCEPT,
        header::ACCEPT_ENCODING,
    ] {
        headers.remove(name);
    }
    headers
}

/// The task a thread's last assistant message said is waiting for input.
fn waiting_task(messages: &[Value]) -> Option<String> {
    let last_user = messages.iter().rposition(|m| m["role"] == "user")?;
    let before = &messages[..last_user];
    let assistant = before.iter().rev().find(|m| m["role"] == "assistant")?;
    let a2a = assistant.pointer("/metadata/a2a")?;
    let waiting = matches!(
        a2a["state"].as_str(),
        Some("input-required" | "auth-required")
    );
    waiting
        .then(|| a2a["taskId"].as_str().map(str::to_owned))
        .flatten()
}

/// The newest user message as A2A parts; `None` when there is none.
fn newest_user_message(messages: &[Value]) -> Option<Result<OutgoingMessage, String>> {
    let user = messages.iter().rev().find(|m| m["role"] == "user")?;
    let parts = match &user["content"] {
        Value::String(text) => vec![OutgoingPart::Text(text.clone())],
        Value::Array(content) => match content
            .iter()
            .map(content_part)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(parts) => parts.into_iter().flatten().collect(),
            Err(err) => return Some(Err(err)),
        },
        _ => return Some(Err("the user message has no content".to_owned())),
    };
    if parts.is_empty() {
        return Some(Err("the user message is empty".to_owned()));
    }
    Some(Ok(OutgoingMessage {
        parts,
        ..OutgoingMessage::default()
    }))
}

/// One AG-UI content part: text, image/audio/video/document with a url,
/// data or file source, or the legacy `binary` part.
fn content_part(part: &Value) -> Result<Option<OutgoingPart>, String> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match part["type"].as_str() {
        Some("text") => Ok(text(part, "text")
            .filter(|t| !t.is_empty())
            .map(OutgoingPart::Text)),
        Some("image" | "audio" | "video" | "document") => {
            let source = &part["source"];
            let media_type = text(source, "mimeType");
            let value = text(source, "value").ok_or("a content part's source has no value")?;
            Ok(Some(match source["type"].as_str() {
                Some("data") => OutgoingPart::FileBytes {
                    bytes: value,
                    media_type,
                    name: None,
                },
                _ => OutgoingPart::FileUri {
                    uri: value,
                    media_type,
                    name: None,
                },
            }))
        }
        Some("binary") => {
            let media_type = text(part, "mimeType");
            let name = text(part, "filename");
            if let Some(data) = text(part, "data") {
                Ok(Some(OutgoingPart::FileBytes {
                    bytes: data,
                    media_type,
                    name,
                }))
            } else if let Some(url) = text(part, "url") {
                Ok(Some(OutgoingPart::FileUri {
                    uri: url,
                    media_type,
                    name,
                }))
            } else {
                Err("a binary content part has neither data nor url".to_owned())
            }
        }
        Some(other) => Err(format!("unsupported content part type {other:?}")),
        None => Err("a content part has no type".to_owned()),
    }
}

/// An A2A message in any shape a client may send it: 0.3 JSON-RPC parts
/// (`kind`), 1.0 flat parts, 0.3 ProtoJSON (`content`, `{"data":{"data":…}}`,
/// `fileWithUri`), roles `user` or `ROLE_USER`, as in the Hector seed's
/// `{"request": {"role": "user", "parts": [{"text": "Hello"}]}}`.
pub fn message_from_a2a(message: &Value) -> Result<OutgoingMessage, String> {
    let Some(obj) = message.as_object() else {
        return Err("the message must be a JSON object".to_owned());
    };
    if let Some(role) = obj.get("role").and_then(Value::as_str)
        && !(role.eq_ignore_ascii_case("user") || role == "ROLE_USER")
    {
        return Err(format!("the message role must be user, not {role:?}"));
    }
    let parts = obj
        .get("parts")
        .or_else(|| obj.get("content"))
        .and_then(Value::as_array)
        .ok_or("the message has no parts")?;
    let mut out = Vec::new();
    for part in parts {
        out.push(a2a_part(part)?);
    }
    if out.is_empty() {
        return Err("the message has no parts".to_owned());
    }
    let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(OutgoingMessage {
        message_id: text("messageId").unwrap_or_else(|| format!("agui-gateway-{:x}", random_u64())),
        parts: out,
        context_id: text("contextId"),
        task_id: text("taskId"),
        metadata: obj.get("metadata").and_then(Value::as_object).cloned(),
        extensions: obj
            .get("extensions")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn a2a_part(part: &Value) -> Result<OutgoingPart, String> {
    let get = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    if let Some(text) = get(part, "text") {
        return Ok(OutgoingPart::Text(text));
    }
    if let Some(file) = part.get("file").filter(|f| f.is_object()) {
        let media_type = get(file, "mimeType").or_else(|| get(file, "mediaType"));
        let name = get(file, "name");
        if let Some(uri) = get(file, "uri").or_else(|| get(file, "fileWithUri")) {
            return Ok(OutgoingPart::FileUri {
                uri,
                media_type,
                name,
            });
        }
        if let Some(bytes) = get(file, "bytes").or_else(|| get(file, "fileWithBytes")) {
            return Ok(OutgoingPart::FileBytes {
                bytes,
                media_type,
                name,
            });
        }
        return Err("a file part has neither uri nor bytes".to_owned());
    }
    let media_type = get(part, "mediaType");
    let name = get(part, "filename");
    if let Some(uri) = get(part, "url") {
        return Ok(OutgoingPart::FileUri {
            uri,
            media_type,
            name,
        });
    }
    if let Some(bytes) = get(part, "raw") {
        return Ok(OutgoingPart::FileBytes {
            bytes,
            media_type,
            name,
        });
    }
    if let Some(data) = part.get("data") {
        // 0.3 ProtoJSON wraps the struct once more.
        let data = match data.as_object() {
            Some(obj) if obj.len() == 1 && part.get("kind").is_none() => {
                obj.get("data").unwrap_or(data)
            }
            _ => data,
        };
        return Ok(OutgoingPart::Data(data.clone()));
    }
    Err(format!("unsupported message part: {part}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_seed_body_reads_in_every_shape() {
        for body in [
            json!({ "role": "user", "parts": [{ "text": "Hello" }] }),
            json!({ "role": "ROLE_USER", "content": [{ "text": "Hello" }] }),
            json!({ "kind": "message", "role": "user", "parts": [{ "kind": "text", "text": "Hello" }] }),
        ] {
            let message = message_from_a2a(&body).unwrap();
            assert!(matches!(&message.parts[..], [OutgoingPart::Text(t)] if t == "Hello"));
        }
        assert!(message_from_a2a(&json!({ "role": "agent", "parts": [{ "text": "x" }] })).is_err());
        assert!(matches!(
            a2a_part(&json!({ "data": { "data": { "k": 1 } } })).unwrap(),
            OutgoingPart::Data(d) if d == json!({ "k": 1 })
        ));
    }

    #[test]
    fn a_waiting_task_is_found_in_the_history() {
        let messages = json!([
            { "id": "u1", "role": "user", "content": "weather?" },
            { "id": "m1", "role": "assistant", "content": "Which city?",
              "metadata": { "a2a": { "taskId": "t1", "contextId": "c", "state": "input-required" } } },
            { "id": "u2", "role": "user", "content": "Paris" }
        ]);
        assert_eq!(
            waiting_task(messages.as_array().unwrap()).as_deref(),
            Some("t1")
        );
        let done = json!([
            { "id": "m1", "role": "assistant", "metadata": { "a2a": { "taskId": "t1", "state": "completed" } } },
            { "id": "u2", "role": "user", "content": "again" }
        ]);
        assert_eq!(waiting_task(done.as_array().unwrap()), None);
    }

    #[test]
    fn content_parts_become_a2a_parts() {
        let user = json!([{ "id": "u", "role": "user", "content": [
            { "type": "text", "text": "look" },
            { "type": "image", "source": { "type": "url", "value": "https://x/a.png", "mimeType": "image/png" } },
            { "type": "binary", "mimeType": "application/pdf", "data": "JVBER", "filename": "a.pdf" }
        ] }]);
        let message = newest_user_message(user.as_array().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(message.parts.len(), 3);
        assert!(
            matches!(&message.parts[1], OutgoingPart::FileUri { uri, .. } if uri == "https://x/a.png")
        );
    }
}
