//! The `CUSTOM` events the converter writes, one type per name.
//!
//! AG-UI has no event for an A2A task's status, a citation or an artifact's
//! description; these travel as `CUSTOM` with a `name` (`a2a.*`, `acp.*`)
//! and a `value`. Each value is a struct here, so the Hector encoder and
//! the gateway match on variants instead of reading JSON back, and the
//! field order on the wire is the declaration order (goldens depend on it).
//! Optional fields are left out, never `null`.

use serde::Serialize;
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

use crate::event::TokenUsage;
use crate::state::TaskState;

/// A JSON object as agents send it in metadata, kept verbatim.
pub type Object = Map<String, Value>;

/// One `CUSTOM` event: serialised as `{"name": …, "value": …}`, the body
/// of a `CUSTOM` event in AG-UI and of Hector's `custom` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "name", content = "value")]
pub enum Custom {
    /// The task moved to a non-final state.
    #[serde(rename = "a2a.status")]
    Status(StatusNotice),
    /// The tool call's result is an error.
    #[serde(rename = "a2a.tool_error")]
    ToolError(ToolError),
    /// A source for a span of the last text message.
    #[serde(rename = "a2a.citation")]
    Citation(Citation),
    /// A step of the agent's work (Agent Stack).
    #[serde(rename = "a2a.trajectory")]
    Trajectory(Trajectory),
    /// Message metadata with no meaning of its own.
    #[serde(rename = "a2a.message_metadata")]
    MessageMetadata(MessageMetadata),
    /// An error the agent shows without failing the run.
    #[serde(rename = "a2a.error")]
    Error(ErrorNotice),
    /// A reasoning block's signature and kind.
    #[serde(rename = "a2a.reasoning")]
    Reasoning(ReasoningNotice),
    /// A file part.
    #[serde(rename = "a2a.file")]
    File(FileNotice),
    /// A data part with no meaning the converter knows.
    #[serde(rename = "a2a.data")]
    Data(DataNotice),
    /// An artifact's name, description and metadata.
    #[serde(rename = "a2a.artifact")]
    Artifact(ArtifactNotice),
    /// Metadata on an artifact-update event.
    #[serde(rename = "a2a.event_metadata")]
    EventMetadata(EventMetadata),
    /// The multimodal-interaction extension's client commands, verbatim.
    #[serde(rename = "a2a.commands")]
    Commands(Value),
    /// The run's token usage, for a client older than AG-UI 1.0 (1.0
    /// clients read it on the terminal event); just before that event.
    #[serde(rename = "a2a.usage")]
    Usage(UsageNotice),
    /// An ACP run was created or is in progress.
    #[serde(rename = "acp.status")]
    AcpStatus(AcpStatus),
    /// An ACP `generic` event's payload, verbatim.
    #[serde(rename = "acp.generic")]
    AcpGeneric(Value),
}

/// `a2a.status`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusNotice {
    /// The task, once known.
    pub task_id: Option<String>,
    /// The context, once known.
    pub context_id: Option<String>,
    /// The new state.
    pub state: TaskState,
    /// The status timestamp the agent sent, verbatim.
    pub timestamp: Option<Value>,
    /// The status-update event's metadata, verbatim.
    pub metadata: Option<Object>,
}

/// `a2a.tool_error`: sent just before the `TOOL_CALL_RESULT` it qualifies.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    /// The failed call.
    pub tool_call_id: String,
    /// The error text.
    pub error: String,
}

/// `a2a.citation`, in AG-UI's casing whatever the agent's.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the citation's own fields, verbatim
pub struct Citation {
    pub url: Option<Value>,
    pub title: Option<Value>,
    pub description: Option<Value>,
    pub start_index: Option<Value>,
    pub end_index: Option<Value>,
    /// The text message the citation refers to (the last one written).
    pub message_id: Option<String>,
}

/// `a2a.trajectory`.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the step's own fields, verbatim
pub struct Trajectory {
    pub title: Option<Value>,
    pub content: Option<Value>,
    pub group_id: Option<Value>,
}

/// `a2a.message_metadata`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageMetadata {
    /// The A2A message it came with.
    pub message_id: Option<String>,
    /// The keys that had no meaning of their own, verbatim.
    pub metadata: Object,
}

/// `a2a.error`.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ErrorNotice {
    /// The error text.
    pub message: Option<String>,
    /// The agent's own error code.
    pub code: Option<String>,
}

/// `a2a.reasoning`: for a closed block, its message id with the signature
/// and thinking type; for a block that was never open, its upstream block
/// id with the signature.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningNotice {
    /// The `REASONING_MESSAGE_*` id.
    pub message_id: Option<String>,
    /// The agent's block id.
    pub block_id: Option<String>,
    /// The model's signature over the reasoning.
    pub signature: Option<String>,
    /// Hector's `thinking_type`.
    pub thinking_type: Option<String>,
}

/// `a2a.file`.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileNotice {
    /// Where the file is.
    pub uri: Option<String>,
    /// The file, base64.
    pub bytes: Option<String>,
    /// Its media type.
    pub media_type: Option<String>,
    /// Its name.
    pub name: Option<String>,
    /// The artifact it belongs to.
    pub artifact_id: Option<String>,
    /// The part's metadata, verbatim.
    pub metadata: Option<Object>,
}

/// `a2a.data`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataNotice {
    /// The data, verbatim.
    pub data: Value,
    /// The part's media type (1.0).
    pub media_type: Option<String>,
    /// The artifact it belongs to.
    pub artifact_id: Option<String>,
    /// The part's metadata, verbatim.
    pub metadata: Option<Object>,
}

/// `a2a.artifact`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the artifact's own fields, verbatim
pub struct ArtifactNotice {
    pub name: Option<Value>,
    pub description: Option<Value>,
    pub extensions: Option<Value>,
    /// The artifact's metadata less `commands` (which has its own event).
    pub metadata: Option<Object>,
    pub artifact_id: String,
}

/// `a2a.event_metadata`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventMetadata {
    /// The artifact the event updated.
    pub artifact_id: String,
    /// The event's metadata less what every chunk repeats.
    pub metadata: Object,
}

/// `acp.status`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcpStatus {
    /// The ACP run.
    pub run_id: Option<String>,
    /// The ACP session.
    pub session_id: Option<String>,
    /// The run's status, as ACP spells it.
    pub state: String,
}

/// `a2a.usage`: as AG-UI 1.0's `RUN_FINISHED.usage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageNotice {
    /// One entry per provider and model.
    pub usage: Vec<TokenUsage>,
}
