//! The Hector seed's named events, rendered from AG-UI events.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::event::custom::Custom;
use crate::event::{Event, Id, TokenUsage};
use crate::state::{RunState, TaskState};

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
    /// Appends the frames (none, one or two) that `event` becomes.
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
            Event::Custom(custom) => self.custom(custom, out),
            // Hector has no shared state or activity events: the AG-UI
            // payloads go out under the AG-UI names, lower-cased.
            Event::StateDelta { delta } => frame(out, "state_delta", &json!({ "delta": delta })),
            Event::StateSnapshot { snapshot } => {
                frame(out, "state_snapshot", &json!({ "snapshot": snapshot }))
            }
            // Hector has no sub-agents: only a 1.0 AG-UI client asks for
            // these, and such a client reads the AG-UI dialect.
            Event::SubagentStarted { .. }
            | Event::SubagentFinished { .. }
            | Event::SubagentError { .. } => Ok(()),
            Event::ActivitySnapshot {
                message_id,
                activity_type,
                content,
                replace,
            } => frame(
                out,
                "activity_snapshot",
                &json!({ "messageId": &**message_id, "activityType": activity_type, "content": content, "replace": replace }),
            ),
            Event::ActivityDelta {
                message_id,
                activity_type,
                patch,
            } => frame(
                out,
                "activity_delta",
                &json!({ "messageId": &**message_id, "activityType": activity_type, "patch": patch }),
            ),
            Event::Raw { event, source } => {
                frame(out, "raw", &json!({ "event": event, "source": source }))
            }
            Event::RunFinished { result, usage, .. } => {
                self.usage(usage.as_deref(), out)?;
                self.message_stop(out)?;
                if let Some(task_id) = result.as_ref().and_then(|r| r.task_id.as_deref()) {
                    self.task_id = Some(Value::from(task_id));
                }
                match result.as_ref().and_then(|r| r.state) {
                    Some(RunState::Task(TaskState::Completed)) => {
                        let mut payload = self.task_payload();
                        payload.insert("result".into(), serde_json::to_value(result)?);
                        frame(out, "task_complete", &payload)?;
                    }
                    Some(state) => {
                        let mut payload = self.task_payload();
                        payload.insert("status".into(), Value::from(hector_status(state.as_str())));
                        frame(out, "task_update", &payload)?;
                    }
                    None => {}
                }
                frame(out, "done", &json!({}))
            }
            Event::RunError {
                message,
                code,
                usage,
            } => {
                self.usage(usage.as_deref(), out)?;
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

    fn custom(&mut self, custom: &Custom, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match custom {
            Custom::Status(status) => {
                if let Some(task_id) = &status.task_id {
                    self.task_id = Some(Value::from(task_id.as_str()));
                }
                if let Some(context_id) = &status.context_id {
                    self.context_id = Some(Value::from(context_id.as_str()));
                }
                let mut payload = self.task_payload();
                if status.state == TaskState::Submitted {
                    if let Some(context_id) = &self.context_id {
                        payload.insert("contextId".into(), context_id.clone());
                    }
                    frame(out, "task_start", &payload)
                } else {
                    let state = hector_status(status.state.as_str());
                    payload.insert("status".into(), Value::from(state));
                    frame(out, "task_update", &payload)
                }
            }
            Custom::ToolError(error) => {
                self.tool_errors
                    .insert(error.tool_call_id.as_str().into(), error.error.clone());
                Ok(())
            }
            Custom::Usage(notice) => self.usage(Some(&notice.usage), out),
            other => frame(out, "custom", other),
        }
    }

    /// The run's usage as Hector's `message_delta` (the message-level
    /// event the seed names and never fills), before `message_stop`.
    fn usage(
        &mut self,
        usage: Option<&[TokenUsage]>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        match (usage, &self.message_id) {
            (Some(usage), Some(id)) if !usage.is_empty() => frame(
                out,
                "message_delta",
                &json!({ "messageId": &**id, "usage": usage }),
            ),
            _ => Ok(()),
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
