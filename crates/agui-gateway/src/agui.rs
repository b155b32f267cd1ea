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

use a2a_agui::{ErrorCode, Event, Options, TaskState};
use axum::body::Bytes;
use axum::response::Response;
use serde_json::Value;

use crate::error::ApiError;
use crate::outbound::{self, Forwarded};
use crate::random::random_u64;
use crate::relay::{self, Conversion};
use crate::state::SharedState;
use crate::upstream::{Agent, OutgoingMessage, OutgoingPart};

/// What a `RunAgentInput` asks for, read without any I/O.
#[derive(Debug)]
pub struct RunRequest {
    pub thread_id: String,
    pub run_id: String,
    /// The message to send; its task is the one a waiting assistant message
    /// names, if any.
    pub message: OutgoingMessage,
    /// A2A extensions to activate for this request.
    pub activate: Vec<String>,
}

/// Reads a `RunAgentInput` body; a 400 JSON error says what is wrong.
pub fn read_run_input(body: &[u8]) -> Result<RunRequest, ApiError> {
    let input: Value = serde_json::from_slice(body)
        .map_err(|err| invalid(format!("the body is not JSON: {err}")))?;
    let text = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(thread_id), Some(run_id)) = (text("threadId"), text("runId")) else {
        return Err(invalid("a RunAgentInput needs string threadId and runId"));
    };
    let Some(messages) = input.get("messages").and_then(Value::as_array) else {
        return Err(invalid("a RunAgentInput needs a messages array"));
    };
    let forwarded = input.pointer("/forwardedProps/a2a");
    let mut message = newest_user_message(messages)
        .ok_or_else(|| invalid("no user message to send: the messages contain none"))?
        .map_err(invalid)?;
    message.message_id = format!("{run_id}-user");
    message.context_id = Some(thread_id.to_owned());
    message.task_id = waiting_task(messages);
    if let Some(metadata) = forwarded.and_then(|f| f.get("metadata")) {
        let metadata = metadata
            .as_object()
            .ok_or_else(|| invalid("forwardedProps.a2a.metadata must be an object"))?;
        message.metadata = Some(metadata.clone());
    }
    if let Some(extensions) = forwarded.and_then(|f| f.get("extensions")) {
        let list = extensions
            .as_array()
            .ok_or_else(|| invalid("forwardedProps.a2a.extensions must be an array of URIs"))?;
        message.extensions = list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    let mut activate = message.extensions.clone();
    if let Some(action) = input.pointer("/forwardedProps/a2uiAction") {
        let extension = a2ui_extension(action)?;
        message.parts.push(OutgoingPart::Ui(action.clone()));
        if !activate.iter().any(|e| e == extension) {
            activate.push(extension.to_owned());
        }
    }
    Ok(RunRequest {
        thread_id: thread_id.to_owned(),
        run_id: run_id.to_owned(),
        message,
        activate,
    })
}

/// Runs one `RunAgentInput`; `scope` is the caller (`edge::scope`).
pub async fn run(
    state: SharedState,
    agent: Arc<Agent>,
    headers: Forwarded,
    scope: String,
    body: Bytes,
) -> Result<Response, ApiError> {
    state.metrics.count_request("agui");
    let RunRequest {
        thread_id,
        run_id,
        mut message,
        activate,
    } = read_run_input(&body)?;
    // The fallback memory is per agent and per caller: a thread id known
    // to another caller must not hand it this caller's task.
    let memory_key = format!("{}\u{1f}{scope}\u{1f}{thread_id}", agent.name());
    if message.task_id.is_none() {
        message.task_id = state.waiting.get(&memory_key);
    }

    let thread = memory_key;
    let waiting_state = state.clone();
    let on_end = move |event: &Event, task: Option<&str>| {
        // Remember a waiting task for clients that do not send the
        // message metadata back; forget it once the task moved on.
        let waiting = matches!(
            event,
            Event::RunFinished { result: Some(result), .. } if result.is_waiting()
        );
        waiting_state
            .waiting
            .set(&thread, if waiting { task } else { None });
    };
    let conversion = Conversion {
        options: Options {
            thread_id: Some(thread_id),
            run_id: Some(run_id.clone()),
            interrupts: agent.config.interrupts,
            ..Options::default()
        },
        // This endpoint has no query to choose from: the agent's format.
        format: agent.config.format,
        on_end: Some(Box::new(on_end)),
    };
    let rpc_id = format!("agui-{run_id}-{:x}", random_u64());
    // The forwarded extensions are also the ones to activate, with A2UI's
    // for this request when it carries a UI action.
    let request =
        async { Ok(outbound::build(&agent, &headers, &message, &rpc_id, &activate).await) };
    relay::open(&state, agent.clone(), headers.clone(), request, conversion).await
}

/// The A2UI extension a UI action belongs to: v0.9 actions say their
/// version (`{"version":"v0.9","action":…}`), v0.8 ones carry `userAction`.
fn a2ui_extension(action: &Value) -> Result<&'static str, ApiError> {
    const V08: &str = "https://a2ui.org/a2a-extension/a2ui/v0.8";
    const V09: &str = "https://a2ui.org/a2a-extension/a2ui/v0.9";
    match action {
        Value::Object(a) if a.contains_key("userAction") => Ok(V08),
        Value::Object(a) if a.contains_key("action") => Ok(V09),
        _ => Err(invalid(
            "forwardedProps.a2uiAction must be an A2UI client message (userAction, or a v0.9 action)",
        )),
    }
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(ErrorCode::InvalidRunInput, message)
}

/// The task a thread's last assistant message said is waiting for input.
fn waiting_task(messages: &[Value]) -> Option<String> {
    let last_user = messages.iter().rposition(|m| m["role"] == "user")?;
    let before = &messages[..last_user];
    let assistant = before.iter().rev().find(|m| m["role"] == "assistant")?;
    let a2a = assistant.pointer("/metadata/a2a")?;
    let state = a2a["state"]
        .as_str()
        .map_or(TaskState::Unknown, TaskState::parse);
    let waiting = matches!(state, TaskState::InputRequired | TaskState::AuthRequired);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
