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

use serde_json::{Map, Value};

pub(crate) type Object = Map<String, Value>;

/// One stream item, classified.
pub(crate) enum Item<'a> {
    Task(&'a Object),
    Message(&'a Object),
    StatusUpdate(&'a Object),
    ArtifactUpdate(&'a Object),
    Error(ErrorReport),
    Acp(&'a str, &'a Object),
    Unknown,
}

pub(crate) fn classify(value: &Value) -> Item<'_> {
    let Some(obj) = value.as_object() else {
        return Item::Unknown;
    };
    // A JSON-RPC envelope, a REST error body or a Hector transport error.
    if let Some(result) = obj.get("result") {
        return match result {
            Value::Null => match obj.get("error") {
                Some(err) if !err.is_null() => Item::Error(ErrorReport::from_value(err)),
                _ => Item::Unknown,
            },
            other => classify(other),
        };
    }
    if let Some(err) = obj.get("error")
        && !err.is_null()
    {
        return Item::Error(ErrorReport::from_value(err));
    }
    if is_problem_json(obj) {
        return Item::Error(ErrorReport::from_problem(obj));
    }
    if let Some(kind) = text(obj, "kind") {
        match kind {
            "task" => return Item::Task(obj),
            "message" => return Item::Message(obj),
            "status-update" => return Item::StatusUpdate(obj),
            "artifact-update" => return Item::ArtifactUpdate(obj),
            _ => {}
        }
    }
    // Before the wrapper keys: ACP's `message.created` also has a `message`.
    if let Some(kind) = text(obj, "type")
        && is_acp_event(kind)
    {
        return Item::Acp(kind, obj);
    }
    for (key, wrap) in WRAPPERS {
        if let Some(inner) = object(obj, key) {
            return wrap(inner);
        }
    }
    classify_by_fields(obj)
}

type Wrap = for<'a> fn(&'a Object) -> Item<'a>;

const WRAPPERS: [(&str, Wrap); 6] = [
    ("statusUpdate", |o| Item::StatusUpdate(o)),
    ("status_update", |o| Item::StatusUpdate(o)),
    ("artifactUpdate", |o| Item::ArtifactUpdate(o)),
    ("artifact_update", |o| Item::ArtifactUpdate(o)),
    ("task", |o| Item::Task(o)),
    ("message", |o| Item::Message(o)),
];

fn classify_by_fields(obj: &Object) -> Item<'_> {
    if object(obj, "artifact").is_some() {
        return Item::ArtifactUpdate(obj);
    }
    if object(obj, "status").is_some() {
        if obj.contains_key("taskId") || obj.contains_key("final") {
            return Item::StatusUpdate(obj);
        }
        if obj.contains_key("id") {
            return Item::Task(obj);
        }
    }
    if obj.contains_key("role")
        && (array(obj, "parts").is_some() || array(obj, "content").is_some())
    {
        return Item::Message(obj);
    }
    Item::Unknown
}

fn is_acp_event(kind: &str) -> bool {
    kind.starts_with("run.") || kind.starts_with("message.") || kind == "generic"
}

fn is_problem_json(obj: &Object) -> bool {
    obj.contains_key("title") && obj.get("status").is_some_and(Value::is_number)
}

/// The error an upstream body reports, in any of the envelopes `classify`
/// knows (JSON-RPC, `google.rpc.Status`, problem+json, Hector's), if any.
pub fn error_report(body: &Value) -> Option<ErrorReport> {
    match classify(body) {
        Item::Error(report) => Some(report),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Field access

pub(crate) fn text<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

pub(crate) fn object<'a>(obj: &'a Object, key: &str) -> Option<&'a Object> {
    obj.get(key).and_then(Value::as_object)
}

pub(crate) fn array<'a>(obj: &'a Object, key: &str) -> Option<&'a [Value]> {
    obj.get(key).and_then(Value::as_array).map(Vec::as_slice)
}

/// Booleans as agents send them: `true`, `"true"`, `1`.
pub(crate) fn flag(obj: &Object, key: &str) -> Option<bool> {
    match obj.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        Value::Number(n) => n.as_f64().map(|f| f != 0.0),
        _ => None,
    }
}

/// A message's parts: `parts`, or `content` in 0.3 ProtoJSON.
pub(crate) fn message_parts(msg: &Object) -> &[Value] {
    array(msg, "parts")
        .or_else(|| array(msg, "content"))
        .unwrap_or(&[])
}

pub(crate) fn is_user_role(msg: &Object) -> bool {
    text(msg, "role").is_some_and(|r| r.eq_ignore_ascii_case("user") || r == "ROLE_USER")
}

/// Non-empty metadata object, if any.
pub(crate) fn metadata(obj: &Object) -> Option<&Object> {
    object(obj, "metadata").filter(|m| !m.is_empty())
}

// ---------------------------------------------------------------------------
// Task states

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
    Unknown,
}

impl TaskState {
    /// Reads `working`, `TASK_STATE_WORKING`, `input_required`,
    /// `TASK_STATE_CANCELLED` and the other spellings alike.
    pub fn parse(raw: &str) -> TaskState {
        let lower = raw.to_ascii_lowercase();
        let name = lower.strip_prefix("task_state_").unwrap_or(&lower);
        match name.replace('_', "-").as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "auth-required" => TaskState::AuthRequired,
            "completed" => TaskState::Completed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "failed" => TaskState::Failed,
            "rejected" => TaskState::Rejected,
            _ => TaskState::Unknown,
        }
    }

    /// The 0.3 JSON-RPC spelling, used in everything this crate writes.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::Unknown => "unknown",
        }
    }

    pub fn ends_turn(self) -> bool {
        !matches!(
            self,
            TaskState::Submitted | TaskState::Working | TaskState::Unknown
        )
    }
}

pub(crate) fn status_state(status: &Object) -> TaskState {
    text(status, "state").map_or(TaskState::Unknown, TaskState::parse)
}

// ---------------------------------------------------------------------------
// Parts

pub(crate) enum PartBody<'a> {
    Text(&'a str),
    File(FileRef<'a>),
    Data(&'a Value),
    /// No content we recognise (an ACP trajectory part, an empty part).
    Empty,
}

pub(crate) struct FileRef<'a> {
    pub uri: Option<&'a str>,
    pub bytes: Option<&'a str>,
    pub media_type: Option<&'a str>,
    pub name: Option<&'a str>,
}

impl FileRef<'_> {
    pub(crate) fn to_json(&self) -> Object {
        let mut out = Object::new();
        let fields = [
            ("uri", self.uri),
            ("bytes", self.bytes),
            ("mediaType", self.media_type),
            ("name", self.name),
        ];
        for (key, value) in fields {
            if let Some(v) = value {
                out.insert(key.to_owned(), Value::from(v));
            }
        }
        out
    }
}

pub(crate) fn part_body(part: &Object) -> PartBody<'_> {
    let kind = text(part, "kind").or_else(|| text(part, "type"));
    match kind {
        Some("text") => return text(part, "text").map_or(PartBody::Empty, PartBody::Text),
        Some("file") => {
            return object(part, "file").map_or(PartBody::Empty, |f| PartBody::File(file_ref(f)));
        }
        Some("data") => return part.get("data").map_or(PartBody::Empty, PartBody::Data),
        _ => {}
    }
    if let Some(t) = text(part, "text") {
        return PartBody::Text(t);
    }
    if let Some(f) = object(part, "file") {
        return PartBody::File(file_ref(f));
    }
    if part.contains_key("raw") || part.contains_key("url") {
        return PartBody::File(FileRef {
            uri: text(part, "url"),
            bytes: text(part, "raw"),
            media_type: text(part, "mediaType"),
            name: text(part, "filename"),
        });
    }
    if let Some(data) = part.get("data") {
        return PartBody::Data(unwrap_proto_data(data));
    }
    if part.contains_key("content_type") || part.contains_key("content_url") {
        return acp_part_body(part);
    }
    if let Some(t) = text(part, "content") {
        return PartBody::Text(t);
    }
    PartBody::Empty
}

/// 0.3 ProtoJSON wraps a DataPart's struct once more: `{"data":{"data":{…}}}`.
fn unwrap_proto_data(data: &Value) -> &Value {
    match data.as_object() {
        Some(obj) if obj.len() == 1 => obj.get("data").unwrap_or(data),
        _ => data,
    }
}

fn file_ref(file: &Object) -> FileRef<'_> {
    FileRef {
        uri: text(file, "uri")
            .or_else(|| text(file, "fileWithUri"))
            .or_else(|| text(file, "url")),
        bytes: text(file, "bytes").or_else(|| text(file, "fileWithBytes")),
        media_type: text(file, "mimeType").or_else(|| text(file, "mediaType")),
        name: text(file, "name").or_else(|| text(file, "filename")),
    }
}

/// ACP `MessagePart`: `content_type`, `content` (plain or base64), `content_url`.
fn acp_part_body(part: &Object) -> PartBody<'_> {
    let content_type = text(part, "content_type");
    let is_text = content_type.is_none_or(|t| t.starts_with("text/"));
    let base64 = text(part, "content_encoding") == Some("base64");
    match (text(part, "content"), text(part, "content_url")) {
        (Some(content), _) if is_text && !base64 => PartBody::Text(content),
        (content, url) if content.is_some() || url.is_some() => PartBody::File(FileRef {
            uri: url,
            bytes: content,
            media_type: content_type,
            name: text(part, "name"),
        }),
        _ => PartBody::Empty,
    }
}

// ---------------------------------------------------------------------------
// Errors

/// An upstream error, whatever envelope it came in.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    pub message: String,
    /// Stable, `A2A_`-prefixed code: the 1.0 `ErrorInfo.reason`, or the
    /// reason a JSON-RPC code stands for, or `A2A_ERROR`.
    pub code: String,
}

impl ErrorReport {
    pub(crate) fn from_value(err: &Value) -> ErrorReport {
        match err {
            Value::Object(obj) => ErrorReport::from_object(obj),
            Value::String(s) => ErrorReport {
                message: s.clone(),
                code: "A2A_ERROR".to_owned(),
            },
            other => ErrorReport {
                message: other.to_string(),
                code: "A2A_ERROR".to_owned(),
            },
        }
    }

    /// JSON-RPC error objects, `google.rpc.Status` and Hector's `{message}`.
    fn from_object(obj: &Object) -> ErrorReport {
        let message = text(obj, "message")
            .map(str::to_owned)
            .unwrap_or_else(|| "upstream reported an error without a message".to_owned());
        let reason = error_info_reason(obj.get("details"))
            .or_else(|| error_info_reason(obj.get("data")))
            .map(str::to_owned)
            .or_else(|| {
                obj.get("code")
                    .and_then(Value::as_f64)
                    .and_then(jsonrpc_reason)
                    .map(str::to_owned)
            })
            .or_else(|| text(obj, "status").map(str::to_owned));
        ErrorReport {
            message,
            code: reason.map_or_else(|| "A2A_ERROR".to_owned(), |r| format!("A2A_{r}")),
        }
    }

    /// RFC 9457 `application/problem+json`.
    fn from_problem(obj: &Object) -> ErrorReport {
        let message = text(obj, "detail")
            .or_else(|| text(obj, "title"))
            .unwrap_or("upstream reported a problem")
            .to_owned();
        ErrorReport {
            message,
            code: "A2A_ERROR".to_owned(),
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
