//! AG-UI messages folded from AG-UI events, as a client's reducer builds
//! them: what a thread's replay sends as `MESSAGES_SNAPSHOT` (a snapshot
//! is idempotent, merged by id, where replayed streaming events would
//! append text to messages a client still holds) and what a thread's
//! messages route lists.
//!
//! - `TEXT_MESSAGE_*`: an assistant message, its content the deltas;
//! - `TOOL_CALL_*`: a call on the assistant message it names as parent
//!   (else on the last assistant message, else on a new one), its
//!   arguments the deltas;
//! - `TOOL_CALL_RESULT`: a tool message;
//! - `REASONING_MESSAGE_*`: a reasoning message.
//!
//! Bounded like the converter: at most `MAX_MESSAGES` messages, each
//! message's text at most `MAX_MESSAGE_BYTES` (the rest is cut, on a
//! character boundary).

use serde::Serialize;

use std::collections::HashMap;

use serde_json::Value;

use crate::event::Event;

/// The most messages one fold keeps; later ones are dropped.
pub const MAX_MESSAGES: usize = 4096;
/// The most bytes of one message's text (or one call's arguments).
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// One AG-UI message (the union by `role`, the roles a replay needs).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// What the user said.
    User {
        /// The message's id.
        id: String,
        /// Its text.
        content: String,
    },
    /// What the agent said, and the tools it called.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// The message's id.
        id: String,
        /// Its text, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Its calls, if any.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer to a call.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The message's id.
        id: String,
        /// The answer.
        content: String,
        /// The call it answers.
        tool_call_id: String,
    },
    /// The agent's reasoning.
    Reasoning {
        /// The message's id.
        id: String,
        /// Its text.
        content: String,
    },
}

/// A call on an assistant message, in AG-UI's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The tool and its arguments.
    pub function: FunctionCall,
}

/// A call's tool and arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, JSON text.
    pub arguments: String,
}

/// The most tool calls one fold keeps, over all its messages.
pub const MAX_CALLS: usize = 4096;

/// Folds events into messages. Each event costs a lookup, not a scan:
/// a run's frames may be many.
#[derive(Debug, Default)]
pub struct MessageFold {
    messages: Vec<Message>,
    /// Message id → its place.
    at: HashMap<String, usize>,
    /// Tool call id → its message's place and its place there.
    calls: HashMap<String, (usize, usize)>,
    /// The id of 0.0.48's thinking messages, which carry none.
    thinking_id: Option<String>,
}

impl MessageFold {
    /// A fold for one run's frames: 0.0.48's thinking text (one message
    /// per run, without an id) is named `thinking-<run>`, so two runs'
    /// thoughts stay two messages.
    pub fn for_run(run: &str) -> MessageFold {
        MessageFold {
            thinking_id: Some(format!("thinking-{run}")),
            ..MessageFold::default()
        }
    }

    /// A user message (from the A2A history: the converter does not show
    /// what the user said).
    pub fn user(&mut self, id: &str, content: &str) {
        if self.position(id).is_none() {
            self.push(Message::User {
                id: id.to_owned(),
                content: bounded(content).to_owned(),
            });
        }
    }

    /// One event; events that carry no message content are ignored.
    pub fn event(&mut self, event: &Event) {
        match event {
            Event::TextMessageStart { message_id, .. } => self.text(message_id, ""),
            Event::TextMessageContent { message_id, delta } => self.text(message_id, delta),
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => self.call(tool_call_id, tool_call_name, parent_message_id.as_deref()),
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => self.arguments(tool_call_id, delta),
            Event::ToolCallResult {
                message_id,
                tool_call_id,
                content,
                ..
            } => self.result(message_id, tool_call_id, content),
            Event::ReasoningMessageStart { message_id, .. } => self.reasoning(message_id, ""),
            Event::ReasoningMessageContent { message_id, delta } => {
                self.reasoning(message_id, delta)
            }
            _ => {}
        }
    }

    /// One AG-UI event as JSON (a frame of a journaled run, whatever
    /// client version it was written for, chunks included); anything else
    /// is ignored.
    pub fn event_json(&mut self, event: &Value) {
        let text = |key: &str| event.get(key).and_then(Value::as_str);
        let Some(kind) = text("type") else {
            return;
        };
        let (message, call) = (text("messageId"), text("toolCallId"));
        let delta = text("delta").unwrap_or_default();
        match kind {
            "TEXT_MESSAGE_START" | "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_CHUNK" => {
                if let Some(id) = message {
                    self.text(id, delta);
                }
            }
            "TOOL_CALL_START" | "TOOL_CALL_CHUNK" => {
                if let (Some(id), Some(name)) = (call, text("toolCallName")) {
                    self.call(id, name, text("parentMessageId"));
                }
                if let Some(id) = call {
                    self.arguments(id, delta);
                }
            }
            "TOOL_CALL_ARGS" => {
                if let Some(id) = call {
                    self.arguments(id, delta);
                }
            }
            "TOOL_CALL_RESULT" => {
                if let (Some(id), Some(call)) = (message, call) {
                    self.result(id, call, text("content").unwrap_or_default());
                }
            }
            "REASONING_MESSAGE_START"
            | "REASONING_MESSAGE_CONTENT"
            | "REASONING_MESSAGE_CHUNK"
            | "THINKING_TEXT_MESSAGE_CONTENT" => {
                // 0.0.48's thinking messages have no id: one per run.
                let id = match message {
                    Some(id) => id.to_owned(),
                    None => self.thinking_id.as_deref().unwrap_or("thinking").to_owned(),
                };
                self.reasoning(&id, delta);
            }
            _ => {}
        }
    }

    /// Text of assistant message `id` (created when new).
    fn text(&mut self, id: &str, delta: &str) {
        let at = self.assistant(id);
        if let Some(Message::Assistant { content, .. }) = at.and_then(|i| self.messages.get_mut(i))
            && !delta.is_empty()
        {
            append(content.get_or_insert_with(String::new), delta);
        }
    }

    fn arguments(&mut self, call: &str, delta: &str) {
        if let Some(call) = self.find_call(call) {
            append(&mut call.function.arguments, delta);
        }
    }

    fn result(&mut self, id: &str, call: &str, content: &str) {
        if self.position(id).is_none() {
            self.push(Message::Tool {
                id: id.to_owned(),
                content: bounded(content).to_owned(),
                tool_call_id: call.to_owned(),
            });
        }
    }

    fn reasoning(&mut self, id: &str, delta: &str) {
        if self.position(id).is_none() {
            self.push(Message::Reasoning {
                id: id.to_owned(),
                content: String::new(),
            });
        }
        if let Some(Message::Reasoning { content, .. }) =
            self.position(id).and_then(|i| self.messages.get_mut(i))
        {
            append(content, delta);
        }
    }

    /// The messages, in the order they began.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.at.get(id).copied()
    }

    fn push(&mut self, message: Message) {
        if self.messages.len() < MAX_MESSAGES && !self.at.contains_key(message.id()) {
            self.at.insert(message.id().to_owned(), self.messages.len());
            self.messages.push(message);
        }
    }

    /// Whether no further message can be added.
    pub fn is_full(&self) -> bool {
        self.messages.len() >= MAX_MESSAGES
    }

    /// The assistant message `id`, created when new.
    fn assistant(&mut self, id: &str) -> Option<usize> {
        if let Some(at) = self.position(id) {
            return Some(at);
        }
        self.push(Message::Assistant {
            id: id.to_string(),
            content: None,
            tool_calls: Vec::new(),
        });
        self.position(id)
    }

    fn call(&mut self, id: &str, name: &str, parent: Option<&str>) {
        if self.calls.contains_key(id) || self.calls.len() >= MAX_CALLS {
            return;
        }
        let at = match parent.and_then(|p| self.position(p)) {
            Some(at) => Some(at),
            // A call follows the assistant message it belongs to; after
            // anything else it starts one of its own.
            None => match self.messages.last() {
                Some(Message::Assistant { .. }) => Some(self.messages.len() - 1),
                _ => self.assistant(&format!("{id}-message")),
            },
        };
        let Some(at) = at else {
            return;
        };
        if let Some(Message::Assistant { tool_calls, .. }) = self.messages.get_mut(at) {
            self.calls.insert(id.to_owned(), (at, tool_calls.len()));
            tool_calls.push(ToolCall {
                id: id.to_string(),
                kind: "function",
                function: FunctionCall {
                    name: bounded(name).to_owned(),
                    arguments: String::new(),
                },
            });
        }
    }

    fn find_call(&mut self, id: &str) -> Option<&mut ToolCall> {
        let &(at, n) = self.calls.get(id)?;
        match self.messages.get_mut(at)? {
            Message::Assistant { tool_calls, .. } => tool_calls.get_mut(n),
            _ => None,
        }
    }
}

impl Message {
    /// The message's id.
    pub fn id(&self) -> &str {
        match self {
            Message::User { id, .. }
            | Message::Assistant { id, .. }
            | Message::Tool { id, .. }
            | Message::Reasoning { id, .. } => id,
        }
    }
}

/// `text` cut to `MAX_MESSAGE_BYTES` on a character boundary.
fn bounded(text: &str) -> &str {
    let mut end = text.len().min(MAX_MESSAGE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Appends within `MAX_MESSAGE_BYTES`, checked before the text grows.
fn append(to: &mut String, delta: &str) {
    let room = MAX_MESSAGE_BYTES.saturating_sub(to.len());
    let mut end = delta.len().min(room);
    while !delta.is_char_boundary(end) {
        end -= 1;
    }
    to.push_str(&delta[..end]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AssistantRole, Id, ReasoningRole, ToolRole};

    fn id(s: &str) -> Id {
        s.into()
    }

    #[test]
    fn a_turn_folds_into_the_messages_a_client_holds() {
        let mut fold = MessageFold::default();
        let mut from_json = MessageFold::default();
        fold.user("u1", "What is the weather?");
        for event in [
            Event::ReasoningMessageStart {
                message_id: id("r1"),
                role: ReasoningRole::Reasoning,
            },
            Event::ReasoningMessageContent {
                message_id: id("r1"),
                delta: "Look it up.".into(),
            },
            Event::TextMessageStart {
                message_id: id("m1"),
                role: AssistantRole::Assistant,
            },
            Event::TextMessageContent {
                message_id: id("m1"),
                delta: "Let me ".into(),
            },
            Event::TextMessageContent {
                message_id: id("m1"),
                delta: "check.".into(),
            },
            Event::ToolCallStart {
                tool_call_id: id("c1"),
                tool_call_name: "get_weather".into(),
                parent_message_id: Some(id("m1")),
            },
            Event::ToolCallArgs {
                tool_call_id: id("c1"),
                delta: "{\"city\":\"Paris\"}".into(),
            },
            Event::ToolCallResult {
                message_id: id("t1"),
                tool_call_id: id("c1"),
                content: "21C".into(),
                role: ToolRole::Tool,
            },
            // A call after the result: an assistant message of its own.
            Event::ToolCallStart {
                tool_call_id: id("c2"),
                tool_call_name: "get_time".into(),
                parent_message_id: None,
            },
        ] {
            fold.event(&event);
            // The same events as a journal holds them, as JSON.
            from_json.event_json(&serde_json::to_value(&event).unwrap_or_default());
        }
        let json = serde_json::to_value(fold.into_messages()).unwrap_or_default();
        let mut from_json = serde_json::to_value(from_json.into_messages()).unwrap_or_default();
        // The JSON fold is given no user message.
        if let Some(messages) = from_json.as_array_mut() {
            messages.insert(0, json[0].clone());
        }
        assert_eq!(from_json, json);
        assert_eq!(
            json,
            serde_json::json!([
                {"role": "user", "id": "u1", "content": "What is the weather?"},
                {"role": "reasoning", "id": "r1", "content": "Look it up."},
                {"role": "assistant", "id": "m1", "content": "Let me check.", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "id": "t1", "content": "21C", "toolCallId": "c1"},
                {"role": "assistant", "id": "c2-message", "toolCalls": [
                    {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]}
            ])
        );
    }

    #[test]
    fn chunks_and_older_spellings_fold_too() {
        let mut fold = MessageFold::default();
        for event in [
            serde_json::json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hi"}),
            serde_json::json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "!"}),
            serde_json::json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m", "delta": "{}"}),
            serde_json::json!({"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hm"}),
            serde_json::json!({"type": "TOOL_CALL_RESULT", "toolCallId": "c"}),
            serde_json::json!({"type": 7}),
            serde_json::json!("RUN_STARTED"),
        ] {
            fold.event_json(&event);
        }
        assert_eq!(
            serde_json::to_value(fold.into_messages()).unwrap_or_default(),
            serde_json::json!([
                {"role": "assistant", "id": "m", "content": "Hi!", "toolCalls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "reasoning", "id": "thinking", "content": "hm"}
            ])
        );
    }

    #[test]
    fn text_is_bounded_as_it_grows() {
        let mut fold = MessageFold::default();
        fold.event(&Event::TextMessageStart {
            message_id: id("m"),
            role: AssistantRole::Assistant,
        });
        let chunk = "é".repeat(1 << 16);
        for _ in 0..20 {
            fold.event(&Event::TextMessageContent {
                message_id: id("m"),
                delta: chunk.clone(),
            });
        }
        match &fold.into_messages()[0] {
            Message::Assistant {
                content: Some(c), ..
            } => assert!(c.len() <= MAX_MESSAGE_BYTES && c.len() > MAX_MESSAGE_BYTES - 4),
            other => panic!("{other:?}"),
        }
    }
}
