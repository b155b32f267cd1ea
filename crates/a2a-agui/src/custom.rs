//! The `CUSTOM` events the converter writes, one type per name.
//!
//! AG-UI has no event for an A2A task's status, a citation or an artifact's
//! description; these travel as `CUSTOM` with a `name` (`a2a.*`, `acp.*`)
//! and a `value`. Each value is a struct here, so the Hector encoder and
//! the gateway match on variants instead of reading JSON back, and the
//! field order on the wire is the declaration order (goldens depend on it).
//! Optional fields are left out, never `null`.

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::{Map, Value};

use crate::read::TaskState;

/// A JSON object as agents send it in metadata, kept verbatim.
pub type Object = Map<String, Value>;

/// One `CUSTOM` event.
#[derive(Debug, Clone, PartialEq)]
pub enum Custom {
    /// `a2a.status`: the task moved to a non-final state.
    Status(StatusNotice),
    /// `a2a.tool_error`: the tool call's result is an error.
    ToolError(ToolError),
    /// `a2a.citation`: a source for a span of the last text message.
    Citation(Citation),
    /// `a2a.trajectory`: a step of the agent's work (Agent Stack).
    Trajectory(Trajectory),
    /// `a2a.message_metadata`: message metadata with no meaning of its own.
    MessageMetadata(MessageMetadata),
    /// `a2a.error`: an error the agent shows without failing the run.
    Error(ErrorNotice),
    /// `a2a.reasoning`: a reasoning block's signature and kind.
    Reasoning(ReasoningNotice),
    /// `a2a.file`: a file part.
    File(FileNotice),
    /// `a2a.data`: a data part with no meaning the converter knows.
    Data(DataNotice),
    /// `a2a.artifact`: an artifact's name, description and metadata.
    Artifact(ArtifactNotice),
    /// `a2a.event_metadata`: metadata on an artifact-update event.
    EventMetadata(EventMetadata),
    /// `a2a.commands`: the multimodal-interaction extension's client
    /// commands, verbatim.
    Commands(Value),
    /// `acp.status`: an ACP run was created or is in progress.
    AcpStatus(AcpStatus),
    /// `acp.generic`: an ACP `generic` event's payload, verbatim.
    AcpGeneric(Value),
}

impl Custom {
    /// The event's `name`.
    pub fn name(&self) -> &'static str {
        match self {
            Custom::Status(_) => "a2a.status",
            Custom::ToolError(_) => "a2a.tool_error",
            Custom::Citation(_) => "a2a.citation",
            Custom::Trajectory(_) => "a2a.trajectory",
            Custom::MessageMetadata(_) => "a2a.message_metadata",
            Custom::Error(_) => "a2a.error",
            Custom::Reasoning(_) => "a2a.reasoning",
            Custom::File(_) => "a2a.file",
            Custom::Data(_) => "a2a.data",
            Custom::Artifact(_) => "a2a.artifact",
            Custom::EventMetadata(_) => "a2a.event_metadata",
            Custom::Commands(_) => "a2a.commands",
            Custom::AcpStatus(_) => "acp.status",
            Custom::AcpGeneric(_) => "acp.generic",
        }
    }
}

/// `{"name": …, "value": …}`: the body of a `CUSTOM` event in AG-UI, and
/// of Hector's `custom` event.
impl Serialize for Custom {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Custom", 2)?;
        s.serialize_field("name", self.name())?;
        match self {
            Custom::Status(v) => s.serialize_field("value", v)?,
            Custom::ToolError(v) => s.serialize_field("value", v)?,
            Custom::Citation(v) => s.serialize_field("value", v)?,
            Custom::Trajectory(v) => s.serialize_field("value", v)?,
            Custom::MessageMetadata(v) => s.serialize_field("value", v)?,
            Custom::Error(v) => s.serialize_field("value", v)?,
            Custom::Reasoning(v) => s.serialize_field("value", v)?,
            Custom::File(v) => s.serialize_field("value", v)?,
            Custom::Data(v) => s.serialize_field("value", v)?,
            Custom::Artifact(v) => s.serialize_field("value", v)?,
            Custom::EventMetadata(v) => s.serialize_field("value", v)?,
            Custom::Commands(v) | Custom::AcpGeneric(v) => s.serialize_field("value", v)?,
            Custom::AcpStatus(v) => s.serialize_field("value", v)?,
        }
        s.end()
    }
}

/// `a2a.status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusNotice {
    /// The task, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The context, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The new state.
    pub state: TaskState,
    /// The status timestamp the agent sent, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Value>,
    /// The status-update event's metadata, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the citation's own fields, verbatim
pub struct Citation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_index: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_index: Option<Value>,
    /// The text message the citation refers to (the last one written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// `a2a.trajectory`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the step's own fields, verbatim
pub struct Trajectory {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<Value>,
}

/// `a2a.message_metadata`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageMetadata {
    /// The A2A message it came with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The keys that had no meaning of their own, verbatim.
    pub metadata: Object,
}

/// `a2a.error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ErrorNotice {
    /// The error text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The agent's own error code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// `a2a.reasoning`: for a closed block, its message id with the signature
/// and thinking type; for a block that was never open, its upstream block
/// id with the signature.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningNotice {
    /// The `REASONING_MESSAGE_*` id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The agent's block id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_id: Option<String>,
    /// The model's signature over the reasoning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Hector's `thinking_type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_type: Option<String>,
}

/// `a2a.file`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileNotice {
    /// Where the file is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The file, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The artifact it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// The part's metadata, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
}

/// `a2a.data`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataNotice {
    /// The data, verbatim.
    pub data: Value,
    /// The part's media type (1.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The artifact it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// The part's metadata, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
}

/// `a2a.artifact`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the artifact's own fields, verbatim
pub struct ArtifactNotice {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
    /// The artifact's metadata less `commands` (which has its own event).
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcpStatus {
    /// The ACP run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The ACP session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run's status, as ACP spells it.
    pub state: String,
}
