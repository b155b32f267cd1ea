//! Hector v2's typed data parts. Hector v1 put its hints in part metadata
//! (read in `hints`); v2 (the current Hector) marks the data itself:
//! - `{"type":"thinking","id","content","status"}`: while `active`, content
//!   is a delta; once `completed`, it is the whole thought again;
//! - `{"type":"tool_use","id","name","arguments"}`;
//! - `{"type":"tool_result","tool_call_id","tool_name","content","is_error"}`.

use serde_json::Value;

use super::json::{flag, id, text};
use super::tool::{tool_arguments, tool_result};
use super::{Block, PartBody, Thinking, ToolCall, UNKNOWN_TOOL};

/// The block a v2 data part stands for; `None` for any other data.
pub(super) fn v2_block(value: &Value) -> Option<Block<'_>> {
    let data = value.as_object()?;
    match text(data, "type")? {
        "thinking" => Some(Block::Thinking(Thinking {
            text: text(data, "content")
                .or_else(|| text(data, "thinking"))
                .unwrap_or(""),
            block_id: id(data, "id"),
            signature: text(data, "signature").filter(|s| !s.is_empty()),
            thinking_type: text(data, "thinking_type"),
            completed: text(data, "status") == Some("completed"),
        })),
        "tool_use" => Some(Block::ToolCall(ToolCall {
            id: id(data, "id"),
            name: text(data, "name").unwrap_or(UNKNOWN_TOOL),
            arguments: tool_arguments(data),
            result: None,
        })),
        "tool_result" => Some(Block::ToolResult(tool_result(
            id(data, "tool_call_id"),
            text(data, "tool_name"),
            flag(data, "is_error").unwrap_or(false),
            None,
            &PartBody::Data(value),
        ))),
        _ => None,
    }
}

/// What an SSE event's name says. Hector names its events; a2a-sdk and
/// every other A2A server send unnamed `data:` events.
pub(crate) enum EventName {
    /// `event: done`: Hector's end-of-stream marker (the stream's end
    /// decides the outcome, so it means nothing more).
    Done,
    /// `event: error`: the data is an error, in any envelope.
    Error,
    /// Anything else: the data is a stream item.
    Item,
}

impl EventName {
    pub(crate) fn of(name: Option<&str>) -> EventName {
        match name {
            Some("done") => EventName::Done,
            Some("error") => EventName::Error,
            _ => EventName::Item,
        }
    }
}
