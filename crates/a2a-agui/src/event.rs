//! The AG-UI events this crate writes.
//!
//! Only the subset that every client in use accepts (`@ag-ui/client` 1.0.0,
//! 0.0.59 and 0.0.48): no `THINKING_*`, no `SUBAGENT_*`, no `cancelled`
//! outcome, `TOOL_CALL_RESULT` content always a string. Optional fields are
//! `Option`s skipped when absent, so `null` never reaches the wire.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// An identifier shared by several events of one entity. `Arc` because every
/// content event repeats its message id; cloning must not allocate.
pub type Id = Arc<str>;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Event {
    #[serde(rename_all = "camelCase")]
    RunStarted {
        thread_id: Id,
        run_id: Id,
    },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: Id,
        run_id: Id,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome>,
    },
    #[serde(rename_all = "camelCase")]
    RunError {
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        message_id: Id,
        role: AssistantRole,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        message_id: Id,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        message_id: Id,
        /// `@ag-ui/client` 1.0 merges this into the message it keeps and
        /// sends back; used to say which A2A task a question came from.
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: Id,
        tool_call_name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<Id>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        tool_call_id: Id,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        tool_call_id: Id,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: Id,
        tool_call_id: Id,
        content: String,
        role: ToolRole,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        message_id: Id,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        message_id: Id,
        role: ReasoningRole,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        message_id: Id,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        message_id: Id,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        message_id: Id,
    },
    Custom {
        name: String,
        value: Value,
    },
    Raw {
        event: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
}

impl Event {
    /// The wire name of the event, as in its `type` field.
    pub fn type_name(&self) -> &'static str {
        Event::TYPE_NAMES[self.kind_index()]
    }

    /// Every `type` name this crate writes, in `kind_index` order.
    pub const TYPE_NAMES: [&'static str; 17] = [
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "CUSTOM",
        "RAW",
    ];

    /// The position of this event's type in `TYPE_NAMES` (for counters).
    pub fn kind_index(&self) -> usize {
        match self {
            Event::RunStarted { .. } => 0,
            Event::RunFinished { .. } => 1,
            Event::RunError { .. } => 2,
            Event::TextMessageStart { .. } => 3,
            Event::TextMessageContent { .. } => 4,
            Event::TextMessageEnd { .. } => 5,
            Event::ToolCallStart { .. } => 6,
            Event::ToolCallArgs { .. } => 7,
            Event::ToolCallEnd { .. } => 8,
            Event::ToolCallResult { .. } => 9,
            Event::ReasoningStart { .. } => 10,
            Event::ReasoningMessageStart { .. } => 11,
            Event::ReasoningMessageContent { .. } => 12,
            Event::ReasoningMessageEnd { .. } => 13,
            Event::ReasoningEnd { .. } => 14,
            Event::Custom { .. } => 15,
            Event::Raw { .. } => 16,
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::RunFinished { .. } | Event::RunError { .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AssistantRole {
    Assistant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    Tool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningRole {
    Reasoning,
}

/// `RUN_FINISHED.outcome`. Only `interrupt` is ever written: an absent
/// outcome means success, and `cancelled` is fatal on `@ag-ui/client` 0.0.59.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Outcome {
    Interrupt { interrupts: Vec<Interrupt> },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    pub id: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
