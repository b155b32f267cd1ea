//! Writing events as SSE frames, in two dialects.
//!
//! - [`Dialect::Agui`]: official AG-UI, `data: <compact JSON>\n\n`, no
//!   `event:` line, LF only, as `@ag-ui/encoder` writes it.
//! - [`Dialect::Hector`]: the named-event dialect of the Hector seed,
//!   `event: content_block_delta\ndata: {"blockId":…,"delta":…}\n\n`, with
//!   flat camelCase payloads as in the seed's example. It is rendered from
//!   the same AG-UI events, so both dialects always tell the same story.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::event::{Event, Id};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    #[default]
    Agui,
    Hector,
}

impl Dialect {
    pub fn parse(name: &str) -> Option<Dialect> {
        match name.to_ascii_lowercase().as_str() {
            "agui" | "ag-ui" => Some(Dialect::Agui),
            "hector" => Some(Dialect::Hector),
            _ => None,
        }
    }
}

/// Appends one AG-UI frame. `timestamp` (ms since the epoch) is written as
/// an integer when the caller has a clock to read.
pub fn write_agui_frame(
    event: &Event,
    timestamp: Option<u64>,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *out, event)?;
    if let Some(ms) = timestamp
        && out.last() == Some(&b'}')
    {
        out.pop();
        out.extend_from_slice(b",\"timestamp\":");
        out.extend_from_slice(ms.to_string().as_bytes());
        out.push(b'}');
    }
    out.extend_from_slice(b"\n\n");
    Ok(())
}

/// Renders AG-UI events as the Hector seed's named events. Stateful: a
/// Hector `tool_call_start` carries the whole input, which AG-UI spreads
/// over START/ARGS/END, and `task_*` names need the task id.
#[derive(Debug, Default)]
pub struct HectorEncoder {
    message_id: Option<Id>,
    context_id: Option<Value>,
    task_id: Option<Value>,
    blocks_started: u32,
    thinking_id: Option<Id>,
    pending_tools: HashMap<Id, (String, String)>,
    tool_errors: HashMap<Id, String>,
}

impl HectorEncoder {
    pub fn encode(&mut self, event: &Event, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match event {
            Event::RunStarted { thread_id, run_id } => {
                self.message_id = Some(run_id.clone());
                self.context_id = Some(Value::from(&**thread_id));
                frame(
                    out,
                    "message_start",
                    &json!({ "messageId": &**run_id, "contextId": &**thread_id, "role": "agent" }),
                )
            }
            Event::TextMessageStart { message_id, .. } => {
                let mut payload = Map::new();
                payload.insert("blockId".into(), Value::from(&**message_id));
                payload.insert("blockType".into(), Value::from("text"));
                // Hector's protojson omits the zero index.
                if self.blocks_started > 0 {
                    payload.insert("index".into(), Value::from(self.blocks_started));
                }
                self.blocks_started += 1;
                frame(out, "content_block_start", &payload)
            }
            Event::TextMessageContent { message_id, delta } => frame(
                out,
                "content_block_delta",
                &json!({ "blockId": &**message_id, "delta": delta }),
            ),
            Event::TextMessageEnd { message_id, .. } => frame(
                out,
                "content_block_stop",
                &json!({ "blockId": &**message_id }),
            ),
            Event::ReasoningStart { message_id } => {
                self.thinking_id = Some(message_id.clone());
                frame(
                    out,
                    "thinking_start",
                    &json!({ "thinkingId": &**message_id }),
                )
            }
            Event::ReasoningMessageContent { message_id, delta } => {
                let id = self.thinking_id.as_ref().unwrap_or(message_id);
                frame(
                    out,
                    "thinking_delta",
                    &json!({ "thinkingId": &**id, "delta": delta }),
                )
            }
            Event::ReasoningEnd { message_id } => {
                self.thinking_id = None;
                frame(
                    out,
                    "thinking_stop",
                    &json!({ "thinkingId": &**message_id }),
                )
            }
            // The reasoning message inside the span has no Hector counterpart.
            Event::ReasoningMessageStart { .. } | Event::ReasoningMessageEnd { .. } => Ok(()),
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                ..
            } => {
                self.pending_tools.insert(
                    tool_call_id.clone(),
                    (tool_call_name.clone(), String::new()),
                );
                Ok(())
            }
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => {
                if let Some((_, args)) = self.pending_tools.get_mut(tool_call_id) {
                    args.push_str(delta);
                }
                Ok(())
            }
            Event::ToolCallEnd { tool_call_id } => {
                let (name, args) = self.pending_tools.remove(tool_call_id).unwrap_or_default();
                let input = match serde_json::from_str::<Value>(&args) {
                    Ok(Value::Object(obj)) => Value::Object(obj),
                    Ok(other) => json!({ "value": other }),
                    Err(_) if args.is_empty() => json!({}),
                    Err(_) => json!({ "value": args }),
                };
                frame(
                    out,
                    "tool_call_start",
                    &json!({ "toolCallId": &**tool_call_id, "toolName": name, "input": input }),
                )
            }
            Event::ToolCallResult {
                tool_call_id,
                content,
                ..
            } => {
                let mut payload = Map::new();
                payload.insert("toolCallId".into(), Value::from(&**tool_call_id));
                match self.tool_errors.remove(tool_call_id) {
                    Some(error) => {
                        if !content.is_empty() && *content != error {
                            payload.insert("result".into(), Value::from(content.as_str()));
                        }
                        payload.insert("error".into(), Value::from(error));
                        payload.insert("isError".into(), Value::Bool(true));
                    }
                    None if !content.is_empty() => {
                        payload.insert("result".into(), Value::from(content.as_str()));
                    }
                    None => {}
                }
                frame(out, "tool_call_stop", &payload)
            }
            Event::Custom { name, value } => self.custom(name, value, out),
            Event::Raw { event, source } => {
                frame(out, "raw", &json!({ "event": event, "source": source }))
            }
            Event::RunFinished { result, .. } => {
                self.message_stop(out)?;
                let state = result
                    .as_ref()
                    .and_then(|r| r.get("state"))
                    .and_then(Value::as_str);
                if let Some(task_id) = result.as_ref().and_then(|r| r.get("taskId")) {
                    self.task_id = Some(task_id.clone());
                }
                match state {
                    Some("completed") => {
                        let mut payload = self.task_payload();
                        payload.insert("result".into(), result.clone().unwrap_or(json!({})));
                        frame(out, "task_complete", &payload)?;
                    }
                    Some(state) => {
                        let mut payload = self.task_payload();
                        payload.insert("status".into(), Value::from(hector_status(state)));
                        frame(out, "task_update", &payload)?;
                    }
                    None => {}
                }
                frame(out, "done", &json!({}))
            }
            Event::RunError { message, code } => {
                self.message_stop(out)?;
                let mut payload = self.task_payload();
                payload.insert("errorMessage".into(), Value::from(message.as_str()));
                if let Some(code) = code {
                    payload.insert("errorCode".into(), Value::from(code.as_str()));
                }
                frame(out, "task_error", &payload)
            }
        }
    }

    fn custom(
        &mut self,
        name: &str,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        match name {
            "a2a.status" => {
                if let Some(task_id) = value.get("taskId") {
                    self.task_id = Some(task_id.clone());
                }
                if let Some(context_id) = value.get("contextId") {
                    self.context_id = Some(context_id.clone());
                }
                let state = value
                    .get("state")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                let mut payload = self.task_payload();
                if state == "submitted" {
                    if let Some(context_id) = &self.context_id {
                        payload.insert("contextId".into(), context_id.clone());
                    }
                    frame(out, "task_start", &payload)
                } else {
                    payload.insert("status".into(), Value::from(hector_status(state)));
                    frame(out, "task_update", &payload)
                }
            }
            "a2a.tool_error" => {
                if let (Some(id), Some(error)) = (
                    value.get("toolCallId").and_then(Value::as_str),
                    value.get("error").and_then(Value::as_str),
                ) {
                    self.tool_errors.insert(id.into(), error.to_owned());
                }
                Ok(())
            }
            _ => frame(out, "custom", &json!({ "name": name, "value": value })),
        }
    }

    fn task_payload(&self) -> Map<String, Value> {
        let mut payload = Map::new();
        if let Some(task_id) = &self.task_id {
            payload.insert("taskId".into(), task_id.clone());
        }
        payload
    }

    fn message_stop(&mut self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match &self.message_id {
            Some(id) => frame(out, "message_stop", &json!({ "messageId": &**id })),
            None => Ok(()),
        }
    }
}

/// Hector's `task_update.status`: the proto enum name, lower-cased.
fn hector_status(state: &str) -> String {
    match state {
        "canceled" => "cancelled".to_owned(),
        other => other.replace('-', "_"),
    }
}

fn frame(out: &mut Vec<u8>, name: &str, payload: &impl Serialize) -> Result<(), serde_json::Error> {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    serde_json::to_writer(&mut *out, payload)?;
    out.extend_from_slice(b"\n\n");
    Ok(())
}
