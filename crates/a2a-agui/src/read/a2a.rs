//! Lenient reading of A2A stream items, in every dialect seen in the field.
//!
//! Readers here never fail: a field of the wrong type reads as absent, an
//! item of unknown shape reads as [`Item::Unknown`]. The dialect is detected
//! per item by shape, never configured:
//! - 0.2/0.3 JSON-RPC: `kind` discriminators, kebab-case states, `final`;
//! - 1.0: wrapper keys (`statusUpdate`, …), flat parts, `TASK_STATE_*`;
//! - 0.3 ProtoJSON (REST, Hector): wrapper keys, `content` for parts,
//!   `{"data":{"data":…}}`, `fileWithUri`, `TASK_STATE_CANCELLED`;
//! - ACP run events (`type: "run.created"`, `message.part`, …);
//!
//! Each may come with or without a JSON-RPC envelope.

use serde_json::Value;

use super::json::{Object, array, flag, id, metadata, object, text};
use super::said::{agent_said, is_reason};
use super::{
    ArtifactChunk, Description, Item, MessageView, Parts, Status, StatusView, acp, adk, hints,
};
use crate::codes::ErrorCode;
use crate::state::TaskState;

/// Reads one stream item, whatever its dialect and envelope.
pub(crate) fn read_item(value: &Value) -> Item<'_> {
    match classify(value) {
        Shape::Task(task) => Item::Task(StatusView {
            task_id: id(task, "id"),
            artifacts: array(task, "artifacts").unwrap_or(&[]),
            ..status_view(task)
        }),
        Shape::Message(message) => Item::Message(message_view(message)),
        Shape::StatusUpdate(update) => Item::Status(status_view(update)),
        Shape::ArtifactUpdate(update) => match artifact_chunk(update) {
            Some(chunk) => Item::Artifact(chunk),
            None => Item::ArtifactWithoutBody {
                context_id: id(update, "contextId"),
                task_id: id(update, "taskId"),
                whole: value,
            },
        },
        Shape::Error(report) => Item::Error(report),
        Shape::Acp(kind, event) => Item::Acp {
            run: acp::run_ids(event),
            event: acp::read_event(kind, event, value),
        },
        Shape::Unknown => Item::Unknown(value),
    }
}

/// One stream item, classified by shape.
enum Shape<'a> {
    Task(&'a Object),
    Message(&'a Object),
    StatusUpdate(&'a Object),
    ArtifactUpdate(&'a Object),
    Error(ErrorReport),
    Acp(&'a str, &'a Object),
    Unknown,
}

fn classify(value: &Value) -> Shape<'_> {
    let Some(obj) = value.as_object() else {
        return Shape::Unknown;
    };
    // A JSON-RPC envelope, a REST error body or a Hector transport error.
    if let Some(result) = obj.get("result") {
        return match result {
            Value::Null => match obj.get("error") {
                Some(err) if !err.is_null() => Shape::Error(ErrorReport::from_value(err)),
                _ => Shape::Unknown,
            },
            other => classify(other),
        };
    }
    if let Some(err) = obj.get("error")
        && !err.is_null()
    {
        return Shape::Error(ErrorReport::from_value(err));
    }
    if is_problem_json(obj) {
        return Shape::Error(ErrorReport::from_problem(obj));
    }
    if let Some(kind) = text(obj, "kind") {
        match kind {
            "task" => return Shape::Task(obj),
            "message" => return Shape::Message(obj),
            "status-update" => return Shape::StatusUpdate(obj),
            "artifact-update" => return Shape::ArtifactUpdate(obj),
            _ => {}
        }
    }
    // Before the wrapper keys: ACP's `message.created` also has a `message`.
    if let Some(kind) = text(obj, "type")
        && acp::is_event(kind)
    {
        return Shape::Acp(kind, obj);
    }
    for (key, wrap) in WRAPPERS {
        if let Some(inner) = object(obj, key) {
            return wrap(inner);
        }
    }
    classify_by_fields(obj)
}

type Wrap = for<'a> fn(&'a Object) -> Shape<'a>;

const WRAPPERS: [(&str, Wrap); 6] = [
    ("statusUpdate", |o| Shape::StatusUpdate(o)),
    ("status_update", |o| Shape::StatusUpdate(o)),
    ("artifactUpdate", |o| Shape::ArtifactUpdate(o)),
    ("artifact_update", |o| Shape::ArtifactUpdate(o)),
    ("task", |o| Shape::Task(o)),
    ("message", |o| Shape::Message(o)),
];

fn classify_by_fields(obj: &Object) -> Shape<'_> {
    if object(obj, "artifact").is_some() {
        return Shape::ArtifactUpdate(obj);
    }
    if object(obj, "status").is_some() {
        if obj.contains_key("taskId") || obj.contains_key("final") {
            return Shape::StatusUpdate(obj);
        }
        if obj.contains_key("id") {
            return Shape::Task(obj);
        }
    }
    if obj.contains_key("role")
        && (array(obj, "parts").is_some() || array(obj, "content").is_some())
    {
        return Shape::Message(obj);
    }
    Shape::Unknown
}

fn is_problem_json(obj: &Object) -> bool {
    obj.contains_key("title") && obj.get("status").is_some_and(Value::is_number)
}

fn status_view(owner: &Object) -> StatusView<'_> {
    StatusView {
        context_id: id(owner, "contextId"),
        task_id: id(owner, "taskId"),
        status: status_of(owner),
        artifacts: &[],
        metadata: metadata(owner),
        state_delta: adk::state_delta(metadata(owner)),
    }
}

fn status_of(owner: &Object) -> Status<'_> {
    let status = object(owner, "status");
    Status {
        state: status.map_or(TaskState::Unknown, |s| {
            text(s, "state").map_or(TaskState::Unknown, TaskState::parse)
        }),
        message: status.and_then(|s| object(s, "message")).map(message_view),
        timestamp: status
            .and_then(|s| s.get("timestamp"))
            .filter(|t| t.is_string()),
    }
}

pub(crate) fn message_view(message: &Object) -> MessageView<'_> {
    MessageView {
        context_id: id(message, "contextId"),
        task_id: id(message, "taskId"),
        message_id: id(message, "messageId"),
        user_echo: is_user_role(message).then_some(message),
        parts: Parts::Values(message_parts(message)),
        metadata: metadata(message),
        state_delta: adk::state_delta(metadata(message)),
        reference_task_ids: message
            .get("referenceTaskIds")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
    }
}

/// An artifact-update event's chunk; `None` when it has no artifact.
fn artifact_chunk(update: &Object) -> Option<ArtifactChunk<'_>> {
    let artifact = object(update, "artifact")?;
    let event_metadata = metadata(update);
    let mut chunk = artifact_view(artifact);
    chunk.context_id = id(update, "contextId");
    chunk.task_id = id(update, "taskId");
    chunk.append = flag(update, "append")
        .or_else(|| flag(artifact, "append"))
        .unwrap_or(false);
    chunk.last_chunk = flag(update, "lastChunk")
        .or_else(|| flag(artifact, "lastChunk"))
        .unwrap_or(false);
    chunk.event_metadata = event_metadata.and_then(hints::announced_event_metadata);
    chunk.partial = event_metadata
        .and_then(|m| m.get("partial"))
        .and_then(Value::as_bool);
    Some(chunk)
}

/// One artifact (of an update event or a Task snapshot).
pub(crate) fn artifact_view(artifact: &Object) -> ArtifactChunk<'_> {
    let artifact_metadata = metadata(artifact);
    ArtifactChunk {
        context_id: None,
        task_id: None,
        id: id(artifact, "artifactId").unwrap_or(""),
        append: false,
        last_chunk: false,
        description: Description::Parsed {
            fields: ["name", "description", "extensions"].map(|key| artifact.get(key)),
            metadata: artifact_metadata,
        },
        event_metadata: None,
        partial: None,
        parts: Parts::Values(array(artifact, "parts").unwrap_or(&[])),
        commands: hints::commands(artifact_metadata),
        state_delta: adk::state_delta(artifact_metadata),
    }
}

/// An A2A message as a client or agent wrote it, in any dialect: 0.3
/// JSON-RPC (`kind`), 1.0 (flat parts, `ROLE_USER`), 0.3 ProtoJSON
/// (`content`), as in the Hector seed's `{"role": "user", "parts":
/// [{"text": "Hello"}]}`. Fields of the wrong type read as absent.
#[derive(Debug, Clone)]
pub struct A2aMessage<'a> {
    /// `role`, in whatever spelling.
    pub role: Option<&'a str>,
    /// `messageId`.
    pub message_id: Option<&'a str>,
    /// `contextId`.
    pub context_id: Option<&'a str>,
    /// `taskId`.
    pub task_id: Option<&'a str>,
    /// `metadata`, when it is an object.
    pub metadata: Option<&'a Object>,
    /// `extensions`: the URIs among them.
    pub extensions: Vec<&'a str>,
    /// `parts` (or ProtoJSON's `content`); read each with [`part_body`].
    /// `None` when the message has neither.
    pub parts: Option<&'a [Value]>,
}

impl<'a> A2aMessage<'a> {
    /// Reads a message; `None` when the value is not a JSON object.
    pub fn read(value: &'a Value) -> Option<A2aMessage<'a>> {
        value.as_object().map(read_message_object)
    }

    /// True for `user` (any case) and `ROLE_USER`; also true when the
    /// role is absent, which clients sending a message often leave out.
    pub fn is_from_user(&self) -> bool {
        self.role
            .is_none_or(|r| r.eq_ignore_ascii_case("user") || r == "ROLE_USER")
    }
}

pub(crate) fn read_message_object(obj: &Object) -> A2aMessage<'_> {
    A2aMessage {
        role: text(obj, "role"),
        message_id: id(obj, "messageId"),
        context_id: id(obj, "contextId"),
        task_id: id(obj, "taskId"),
        metadata: object(obj, "metadata"),
        extensions: array(obj, "extensions")
            .unwrap_or(&[])
            .iter()
            .filter_map(Value::as_str)
            .collect(),
        parts: array(obj, "parts").or_else(|| array(obj, "content")),
    }
}

/// The parts of a message: `parts`, or `content` in 0.3 ProtoJSON.
pub(crate) fn message_parts(msg: &Object) -> &[Value] {
    array(msg, "parts")
        .or_else(|| array(msg, "content"))
        .unwrap_or(&[])
}

pub(crate) fn is_user_role(msg: &Object) -> bool {
    text(msg, "role").is_some_and(|r| r.eq_ignore_ascii_case("user") || r == "ROLE_USER")
}

/// The error an upstream body reports, in any envelope the readers know
/// (JSON-RPC, `google.rpc.Status`, problem+json, Hector's), if any.
pub fn error_report(body: &Value) -> Option<ErrorReport> {
    match classify(body) {
        Shape::Error(report) => Some(report),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Errors

/// An upstream error, whatever envelope it came in.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    /// What the client is told: written by this crate, naming the agent as
    /// the side that failed; of the agent's own words only a structured
    /// error's `message`, as one bounded line (`read::said::one_line`). Bodies that
    /// are not such an error (a string, text, problem details) and every
    /// `data` / `details` stay out: they may name internal hosts or carry
    /// secrets.
    pub message: String,
    /// Stable, `A2A_`-prefixed code: the 1.0 `ErrorInfo.reason`, or the
    /// reason a JSON-RPC code stands for, or `A2A_ERROR`.
    pub code: String,
}

impl ErrorReport {
    pub(crate) fn from_value(err: &Value) -> ErrorReport {
        match err {
            Value::Object(obj) => ErrorReport::from_object(obj),
            // Not an error object: whatever it says is not shown.
            _ => ErrorReport::unexplained(),
        }
    }

    /// JSON-RPC error objects, `google.rpc.Status` and Hector's `{message}`.
    fn from_object(obj: &Object) -> ErrorReport {
        let reason = error_info_reason(obj.get("details"))
            .or_else(|| error_info_reason(obj.get("data")))
            .map(str::to_owned)
            .or_else(|| {
                obj.get("code")
                    .and_then(Value::as_f64)
                    .and_then(jsonrpc_reason)
                    .map(str::to_owned)
            })
            .or_else(|| text(obj, "status").map(str::to_owned))
            .filter(|reason| is_reason(reason));
        ErrorReport {
            message: agent_said(text(obj, "message")),
            code: reason.map_or_else(
                || ErrorCode::AgentError.as_str().to_owned(),
                |r| format!("A2A_{r}"),
            ),
        }
    }

    /// RFC 9457 `application/problem+json`: an HTTP error body, of which
    /// only the problem type (`…/task-not-found` reads as
    /// `A2A_TASK_NOT_FOUND`) is kept.
    fn from_problem(obj: &Object) -> ErrorReport {
        let reason = text(obj, "type")
            .and_then(|kind| kind.rsplit('/').next())
            .map(|last| last.replace('-', "_").to_ascii_uppercase())
            .filter(|reason| is_reason(reason) && reason != "ABOUT:BLANK");
        ErrorReport {
            message: "the agent reported a problem".to_owned(),
            code: reason.map_or_else(
                || ErrorCode::AgentError.as_str().to_owned(),
                |r| format!("A2A_{r}"),
            ),
        }
    }

    /// A report for an error event whose body is not an error object.
    pub(crate) fn unexplained() -> ErrorReport {
        ErrorReport {
            message: "the agent reported an error".to_owned(),
            code: ErrorCode::AgentError.as_str().to_owned(),
        }
    }
}

fn error_info_reason(details: Option<&Value>) -> Option<&str> {
    details?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find_map(|d| text(d, "reason"))
}

/// The reason names of A2A 1.0 for the JSON-RPC codes both dialects share.
fn jsonrpc_reason(code: f64) -> Option<&'static str> {
    // Codes are integral; agents behind protobuf Structs send them as floats.
    let reason = match code as i64 {
        -32700 => "JSON_PARSE_ERROR",
        -32600 => "INVALID_REQUEST",
        -32601 => "METHOD_NOT_FOUND",
        -32602 => "INVALID_PARAMS",
        -32603 => "INTERNAL_ERROR",
        -32001 => "TASK_NOT_FOUND",
        -32002 => "TASK_NOT_CANCELABLE",
        -32003 => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        -32004 => "UNSUPPORTED_OPERATION",
        -32005 => "CONTENT_TYPE_NOT_SUPPORTED",
        -32006 => "INVALID_AGENT_RESPONSE",
        -32007 => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        -32008 => "EXTENSION_SUPPORT_REQUIRED",
        -32009 => "VERSION_NOT_SUPPORTED",
        _ => return None,
    };
    Some(reason)
}
