//! The AG-UI events this crate writes.
//!
//! By default only the subset that every client in use accepts
//! (`@ag-ui/client` 1.0.0, 0.0.59 and 0.0.48): no `THINKING_*`, no
//! `SUBAGENT_*`, no `cancelled` outcome, `TOOL_CALL_RESULT` content always a
//! string. `SUBAGENT_*` and the `cancelled` outcome are written only for a
//! client that said it speaks 1.0 ([`AguiVersion`](crate::AguiVersion)).
//! Optional fields are `Option`s skipped when absent, so `null` never
//! reaches the wire.

pub(crate) mod custom;

use std::sync::Arc;

use serde::Serialize;
use serde_with::skip_serializing_none;

use self::custom::Custom;
use crate::state::{RunState, TaskState};

/// An identifier shared by several events of one entity. `Arc` because every
/// content event repeats its message id; cloning must not allocate.
pub type Id = Arc<str>;

/// One AG-UI event, as written on the wire (`type` is the tag).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)] // the fields are AG-UI's, documented by the protocol
pub enum Event {
    #[serde(rename_all = "camelCase")]
    RunStarted { thread_id: Id, run_id: Id },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: Id,
        run_id: Id,
        result: Option<RunResult>,
        outcome: Option<Outcome>,
        /// 1.0 clients only; older ones get `CUSTOM a2a.usage`.
        usage: Option<Vec<TokenUsage>>,
    },
    #[serde(rename_all = "camelCase")]
    RunError {
        message: String,
        code: Option<String>,
        /// As on `RUN_FINISHED`: what the run used before it failed.
        usage: Option<Vec<TokenUsage>>,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageStart { message_id: Id, role: AssistantRole },
    #[serde(rename_all = "camelCase")]
    TextMessageContent { message_id: Id, delta: String },
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        message_id: Id,
        /// `@ag-ui/client` 1.0 merges this into the message it keeps and
        /// sends back; used to say which A2A task a question came from.
        metadata: Option<TextMetadata>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: Id,
        tool_call_name: String,
        parent_message_id: Option<Id>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArgs { tool_call_id: Id, delta: String },
    #[serde(rename_all = "camelCase")]
    ToolCallEnd { tool_call_id: Id },
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: Id,
        tool_call_id: Id,
        content: String,
        role: ToolRole,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningStart { message_id: Id },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart { message_id: Id, role: ReasoningRole },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent { message_id: Id, delta: String },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd { message_id: Id },
    #[serde(rename_all = "camelCase")]
    ReasoningEnd { message_id: Id },
    /// Replaces the client's shared state.
    StateSnapshot { snapshot: serde_json::Value },
    /// Patches the client's shared state (RFC 6902).
    StateDelta { delta: Patch },
    /// Creates an `activity` message (a UI surface, say).
    #[serde(rename_all = "camelCase")]
    ActivitySnapshot {
        message_id: Id,
        activity_type: &'static str,
        content: serde_json::Value,
        replace: bool,
    },
    /// Patches an `activity` message's content (RFC 6902).
    #[serde(rename_all = "camelCase")]
    ActivityDelta {
        message_id: Id,
        activity_type: &'static str,
        patch: Vec<PatchOp>,
    },
    /// A delegated A2A task began (AG-UI 1.0 clients only).
    #[serde(rename_all = "camelCase")]
    SubagentStarted {
        subagent_run_id: Id,
        name: String,
        parent_message_id: Option<Id>,
    },
    /// A delegated task completed or waits (AG-UI 1.0 clients only).
    #[serde(rename_all = "camelCase")]
    SubagentFinished {
        subagent_run_id: Id,
        outcome: Option<SubagentOutcome>,
    },
    /// A delegated task failed (AG-UI 1.0 clients only).
    #[serde(rename_all = "camelCase")]
    SubagentError {
        subagent_run_id: Id,
        message: String,
        code: Option<String>,
    },
    /// Serialised as `{"type":"CUSTOM","name":…,"value":…}`.
    Custom(Custom),
    Raw {
        event: serde_json::Value,
        source: Option<String>,
    },
}

impl Event {
    /// The wire name of the event, as in its `type` field.
    pub fn type_name(&self) -> &'static str {
        Event::TYPE_NAMES[self.kind_index()]
    }

    /// Every `type` name this crate writes, in `kind_index` order.
    pub const TYPE_NAMES: [&'static str; 24] = [
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
        "STATE_DELTA",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "STATE_SNAPSHOT",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
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
            Event::StateDelta { .. } => 17,
            Event::ActivitySnapshot { .. } => 18,
            Event::ActivityDelta { .. } => 19,
            Event::StateSnapshot { .. } => 20,
            Event::SubagentStarted { .. } => 21,
            Event::SubagentFinished { .. } => 22,
            Event::SubagentError { .. } => 23,
        }
    }

    /// `RUN_FINISHED` or `RUN_ERROR`: nothing may follow it.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::RunFinished { .. } | Event::RunError { .. })
    }
}

/// `TEXT_MESSAGE_START.role`: the converter only writes agent text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AssistantRole {
    /// `"assistant"`.
    Assistant,
}

/// `TOOL_CALL_RESULT.role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    /// `"tool"`.
    Tool,
}

/// `REASONING_MESSAGE_START.role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningRole {
    /// `"reasoning"`.
    Reasoning,
}

/// `RUN_FINISHED.result`: where the run left the A2A task (or ACP run).
/// Absent fields are left out, so the shape depends on what the agent said.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The A2A task the run belongs to.
    pub task_id: Option<String>,
    /// The A2A context (the AG-UI thread).
    pub context_id: Option<String>,
    /// The ACP run id.
    pub run_id: Option<String>,
    /// The ACP session id.
    pub session_id: Option<String>,
    /// Calls of tools the client declared: the run ended so that the
    /// client runs them and sends their results back.
    pub pending_tool_call_ids: Option<Vec<String>>,
    /// The state the run ended in; absent for a message-only answer.
    pub state: Option<RunState>,
    /// What an awaiting ACP run asks for, verbatim.
    pub await_request: Option<serde_json::Value>,
}

impl RunResult {
    /// True when the task waits for the user (input or auth required).
    pub fn is_waiting(&self) -> bool {
        matches!(
            self.state,
            Some(RunState::Task(
                TaskState::InputRequired | TaskState::AuthRequired
            ))
        )
    }
}

/// `STATE_DELTA.delta`: operations the converter wrote, or a JSON Patch
/// the agent sent (an array of operation objects, passed on as it is).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Patch {
    /// Written by the converter (ADK's state deltas).
    Ops(Vec<PatchOp>),
    /// The agent's own patch.
    Agent(Vec<serde_json::Value>),
}

/// One RFC 6902 operation; the converter only ever adds (which, on an
/// object member, also replaces).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOp {
    /// Always `"add"`.
    pub op: &'static str,
    /// A JSON Pointer.
    pub path: String,
    /// The value added.
    pub value: serde_json::Value,
}

impl PatchOp {
    /// `add` at `path`.
    pub fn add(path: String, value: serde_json::Value) -> PatchOp {
        PatchOp {
            op: "add",
            path,
            value,
        }
    }

    /// The JSON Pointer of an object member (RFC 6901 escapes).
    pub fn member(key: &str) -> String {
        format!("/{}", key.replace('~', "~0").replace('/', "~1"))
    }
}

/// `TEXT_MESSAGE_END.metadata`: `{"a2a": {taskId, contextId, state}}` on
/// the message that asks the user something, so that a client sending the
/// history back names the task to continue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextMetadata {
    /// Where the run left the task.
    pub a2a: RunResult,
}

/// `RUN_FINISHED.outcome`. An absent outcome means success; `success`
/// with `pendingToolCallIds` and `cancelled` are written for 1.0 clients
/// only (both are fatal on `@ag-ui/client` 0.0.59).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Outcome {
    /// The run completed, maybe leaving calls of the client's tools for
    /// the client to answer (AG-UI 1.0: a completed run, not a question).
    #[serde(rename_all = "camelCase")]
    Success {
        /// The calls, in the order they were made.
        pending_tool_call_ids: Vec<String>,
    },
    /// The run stopped to ask the user something.
    Interrupt {
        /// What is asked: the waiting task, or each client tool called.
        interrupts: Vec<Interrupt>,
    },
    /// The task was cancelled.
    Cancelled,
}

/// `SUBAGENT_FINISHED.outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SubagentOutcome {
    /// The delegated task completed.
    Success,
    /// The delegated task waits for input.
    Suspended,
}

/// One open question of an interrupted run.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The waiting A2A task (else the run id): what `resume` names.
    pub id: String,
    /// Why the run stopped.
    pub reason: InterruptReason,
    /// The agent's question, when it asked one in text.
    pub message: Option<String>,
    /// The client tool call this interrupt waits on.
    pub tool_call_id: Option<String>,
}

/// `Interrupt.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptReason {
    /// The task is `input-required`.
    InputRequired,
    /// The task is `auth-required`.
    AuthRequired,
    /// The agent called a tool the client declared.
    ToolCall,
}

/// `TokenUsage`: what one provider and model used in the run, in AG-UI's
/// accounting. `input_tokens` includes the cached and cache-write tokens,
/// `output_tokens` the reasoning tokens; `total_tokens` is the two summed.
/// A count the agent did not report is absent, never zero.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Who served the calls, as the agent named it.
    pub provider: Option<String>,
    /// Which model served them, as the agent named it.
    pub model: Option<String>,
    /// Every prompt token charged.
    pub input_tokens: Option<u64>,
    /// Every generated token, reasoning included.
    pub output_tokens: Option<u64>,
    /// `input_tokens + output_tokens`.
    pub total_tokens: Option<u64>,
    /// The part of `output_tokens` spent reasoning.
    pub reasoning_tokens: Option<u64>,
    /// The part of `input_tokens` read from a cache.
    pub cached_input_tokens: Option<u64>,
    /// The part of `input_tokens` written to a cache.
    pub cache_write_input_tokens: Option<u64>,
}

impl TokenUsage {
    /// Input plus output, summed over entries (what a budget counts).
    pub fn total_of(entries: &[TokenUsage]) -> u64 {
        entries
            .iter()
            .map(|e| {
                e.total_tokens.unwrap_or_else(|| {
                    e.input_tokens
                        .unwrap_or(0)
                        .saturating_add(e.output_tokens.unwrap_or(0))
                })
            })
            .fold(0, u64::saturating_add)
    }
}
