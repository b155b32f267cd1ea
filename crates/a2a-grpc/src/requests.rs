//! A JSON-RPC call (the gateway's own, or a client's passed on) read into
//! the typed request of the agent's gRPC service. The reader is lenient
//! as every reader here: 0.3 and 1.0 spellings alike (`kind`ed parts or
//! flat ones, `file.uri` or `url`, `ROLE_USER` or `user`), unknown fields
//! ignored. What cannot be a call of the service is a `CallError` (the
//! client's, a JSON-RPC error before anything is sent).

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::json::{to_struct, to_value};
use crate::{v03, v10};

/// The calls the gateway makes over gRPC, by what they do.
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceCall {
    /// A message, answered by a stream (`message/stream`,
    /// `SendStreamingMessage`) or once (`message/send`, `SendMessage`).
    Send {
        streaming: bool,
        params: Map<String, Value>,
    },
    Get {
        id: String,
        history_length: Option<i32>,
    },
    Cancel {
        id: String,
    },
    Subscribe {
        id: String,
    },
    List {
        params: Map<String, Value>,
    },
    /// The authenticated extended card (1.0's only card call).
    ExtendedCard,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("method {0:?} has no gRPC call")]
    Method(String),
    #[error("{0}")]
    Params(&'static str),
}

impl CallError {
    /// Its JSON-RPC error code (-32601 method not found, -32602 invalid
    /// params).
    pub fn code(&self) -> i64 {
        match self {
            CallError::Method(_) => -32601,
            CallError::Params(_) => -32602,
        }
    }
}

/// The call a JSON-RPC body makes.
pub fn call_of(body: &Value) -> Result<ServiceCall, CallError> {
    let method = body
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = body
        .get("params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let id = || -> Result<String, CallError> {
        let id = params
            .get("id")
            .and_then(Value::as_str)
            .or_else(|| {
                params
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|name| name.strip_prefix("tasks/"))
            })
            .ok_or(CallError::Params("params.id: a task id is required"))?;
        Ok(id.to_owned())
    };
    Ok(match method {
        "message/stream" | "SendStreamingMessage" => ServiceCall::Send {
            streaming: true,
            params,
        },
        "message/send" | "SendMessage" => ServiceCall::Send {
            streaming: false,
            params,
        },
        "tasks/get" | "GetTask" => ServiceCall::Get {
            id: id()?,
            history_length: params
                .get("historyLength")
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok()),
        },
        "tasks/cancel" | "CancelTask" => ServiceCall::Cancel { id: id()? },
        "tasks/resubscribe" | "SubscribeToTask" => ServiceCall::Subscribe { id: id()? },
        "tasks/list" | "ListTasks" => ServiceCall::List { params },
        "agent/getAuthenticatedExtendedCard" | "GetExtendedAgentCard" => ServiceCall::ExtendedCard,
        other => return Err(CallError::Method(other.to_owned())),
    })
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn object_of<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    object.get(key).and_then(Value::as_object)
}

fn strings(object: &Map<String, Value>, key: &str) -> Vec<String> {
    object
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn role(text: &str) -> i32 {
    match text {
        "user" | "ROLE_USER" => v10::Role::User as i32,
        "agent" | "ROLE_AGENT" => v10::Role::Agent as i32,
        _ => v10::Role::Unspecified as i32,
    }
}

/// A part in either dialect, as its pieces.
struct PartFields {
    content: PartContent,
    metadata: Option<prost_types::Struct>,
    filename: String,
    media_type: String,
}

enum PartContent {
    Text(String),
    Url(String),
    Raw(Vec<u8>),
    Data(Value),
    None,
}

fn part_fields(part: &Map<String, Value>) -> Result<PartFields, CallError> {
    let file = object_of(part, "file");
    let mut filename = text(part, "filename").to_owned();
    let mut media_type = text(part, "mediaType").to_owned();
    if let Some(file) = file {
        if filename.is_empty() {
            filename = text(file, "name").to_owned();
        }
        if media_type.is_empty() {
            media_type = text(file, "mimeType").to_owned();
        }
    }
    let bytes = |encoded: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| CallError::Params("a file part's bytes are not base64"))
    };
    let content = if let Some(text) = part.get("text").and_then(Value::as_str) {
        PartContent::Text(text.to_owned())
    } else if let Some(url) = part.get("url").and_then(Value::as_str) {
        PartContent::Url(url.to_owned())
    } else if let Some(raw) = part.get("raw").and_then(Value::as_str) {
        PartContent::Raw(bytes(raw)?)
    } else if let Some(uri) = file.and_then(|f| f.get("uri")).and_then(Value::as_str) {
        PartContent::Url(uri.to_owned())
    } else if let Some(raw) = file.and_then(|f| f.get("bytes")).and_then(Value::as_str) {
        PartContent::Raw(bytes(raw)?)
    } else if let Some(data) = part.get("data") {
        PartContent::Data(data.clone())
    } else {
        PartContent::None
    };
    Ok(PartFields {
        content,
        metadata: object_of(part, "metadata").map(to_struct),
        filename,
        media_type,
    })
}

fn parts(message: &Map<String, Value>) -> Result<Vec<PartFields>, CallError> {
    message
        .get("parts")
        .or_else(|| message.get("content"))
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(Value::as_object)
                .map(part_fields)
                .collect()
        })
        .unwrap_or_else(|| Ok(Vec::new()))
}

fn message_object(params: &Map<String, Value>) -> Result<&Map<String, Value>, CallError> {
    object_of(params, "message")
        .or_else(|| object_of(params, "request"))
        .ok_or(CallError::Params("params.message is required"))
}

/// `SendMessage`'s request in 1.0.
pub fn send_v10(params: &Map<String, Value>) -> Result<v10::SendMessageRequest, CallError> {
    let message = message_object(params)?;
    let parts = parts(message)?
        .into_iter()
        .map(|part| v10::Part {
            content: match part.content {
                PartContent::Text(text) => Some(v10::part::Content::Text(text)),
                PartContent::Url(url) => Some(v10::part::Content::Url(url)),
                PartContent::Raw(raw) => Some(v10::part::Content::Raw(raw)),
                PartContent::Data(data) => Some(v10::part::Content::Data(to_value(&data))),
                PartContent::None => None,
            },
            metadata: part.metadata,
            filename: part.filename,
            media_type: part.media_type,
        })
        .collect();
    let configuration = object_of(params, "configuration").map(|c| v10::SendMessageConfiguration {
        accepted_output_modes: strings(c, "acceptedOutputModes"),
        history_length: c
            .get("historyLength")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok()),
        return_immediately: c
            .get("returnImmediately")
            .and_then(Value::as_bool)
            .or_else(|| c.get("blocking").and_then(Value::as_bool).map(|b| !b))
            .unwrap_or(false),
    });
    Ok(v10::SendMessageRequest {
        tenant: text(params, "tenant").to_owned(),
        message: Some(v10::Message {
            message_id: text(message, "messageId").to_owned(),
            context_id: text(message, "contextId").to_owned(),
            task_id: text(message, "taskId").to_owned(),
            role: role(text(message, "role")),
            parts,
            metadata: object_of(message, "metadata").map(to_struct),
            extensions: strings(message, "extensions"),
            reference_task_ids: strings(message, "referenceTaskIds"),
        }),
        configuration,
        metadata: object_of(params, "metadata").map(to_struct),
    })
}

/// `SendMessage`'s request in 0.3.
pub fn send_v03(params: &Map<String, Value>) -> Result<v03::SendMessageRequest, CallError> {
    let message = message_object(params)?;
    let content = parts(message)?
        .into_iter()
        .map(|part| {
            let file = |file| {
                v03::part::Content::File(v03::FilePart {
                    file: Some(file),
                    mime_type: part.media_type.clone(),
                    name: part.filename.clone(),
                })
            };
            v03::Part {
                content: match part.content {
                    PartContent::Text(text) => Some(v03::part::Content::Text(text)),
                    PartContent::Url(url) => Some(file(v03::file_part::File::FileWithUri(url))),
                    PartContent::Raw(raw) => Some(file(v03::file_part::File::FileWithBytes(raw))),
                    // 0.3's data part holds an object; anything else is
                    // wrapped, as a2a-sdk's own conversion does.
                    PartContent::Data(Value::Object(data)) => {
                        Some(v03::part::Content::Data(v03::DataPart {
                            data: Some(to_struct(&data)),
                        }))
                    }
                    PartContent::Data(other) => {
                        let mut wrapped = Map::new();
                        wrapped.insert("value".to_owned(), other);
                        Some(v03::part::Content::Data(v03::DataPart {
                            data: Some(to_struct(&wrapped)),
                        }))
                    }
                    PartContent::None => None,
                },
                metadata: part.metadata,
            }
        })
        .collect();
    let configuration = object_of(params, "configuration").map(|c| v03::SendMessageConfiguration {
        accepted_output_modes: strings(c, "acceptedOutputModes"),
        history_length: c
            .get("historyLength")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or_default(),
        blocking: c.get("blocking").and_then(Value::as_bool).unwrap_or(false),
    });
    Ok(v03::SendMessageRequest {
        request: Some(v03::Message {
            message_id: text(message, "messageId").to_owned(),
            context_id: text(message, "contextId").to_owned(),
            task_id: text(message, "taskId").to_owned(),
            role: role(text(message, "role")),
            content,
            metadata: object_of(message, "metadata").map(to_struct),
            extensions: strings(message, "extensions"),
        }),
        configuration,
        metadata: object_of(params, "metadata").map(to_struct),
    })
}

/// `ListTasks`' request (1.0 only).
pub fn list_v10(params: &Map<String, Value>) -> v10::ListTasksRequest {
    let int = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
    };
    v10::ListTasksRequest {
        tenant: text(params, "tenant").to_owned(),
        context_id: text(params, "contextId").to_owned(),
        page_size: int("pageSize"),
        page_token: text(params, "pageToken").to_owned(),
        history_length: int("historyLength"),
        include_artifacts: params.get("includeArtifacts").and_then(Value::as_bool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(body: &Value) -> Map<String, Value> {
        match call_of(body) {
            Ok(ServiceCall::Send { params, .. }) => params,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn either_dialects_send_reads_into_either_service() {
        let v03_body = json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
            "message": { "kind": "message", "role": "user", "messageId": "m1", "contextId": "c1",
                "parts": [ { "kind": "text", "text": "hi" },
                           { "kind": "file", "file": { "uri": "https://x/a.png", "mimeType": "image/png", "name": "a" } },
                           { "kind": "data", "data": { "k": 1 }, "metadata": { "mark": "tool" } } ] },
            "metadata": { "m": true } } });
        let v10_body = json!({ "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
            "message": { "role": "ROLE_USER", "messageId": "m1", "contextId": "c1",
                "parts": [ { "text": "hi" },
                           { "url": "https://x/a.png", "mediaType": "image/png", "filename": "a" },
                           { "data": { "k": 1 }, "metadata": { "mark": "tool" } } ] },
            "metadata": { "m": true } } });
        for body in [&v03_body, &v10_body] {
            let typed = send_v10(&params(body)).expect("reads");
            let message = typed.message.expect("a message");
            assert_eq!(message.role, v10::Role::User as i32);
            assert_eq!(message.parts.len(), 3);
            assert_eq!(
                message.parts[1].content,
                Some(v10::part::Content::Url("https://x/a.png".into()))
            );
            assert_eq!(message.parts[1].media_type, "image/png");
            assert_eq!(message.parts[1].filename, "a");
            assert!(message.parts[2].metadata.is_some());
            let typed = send_v03(&params(body)).expect("reads");
            let message = typed.request.expect("a message");
            let Some(v03::part::Content::File(file)) = &message.content[1].content else {
                panic!("a file part");
            };
            assert_eq!(file.mime_type, "image/png");
            assert_eq!(file.name, "a");
            assert!(typed.metadata.is_some());
        }
    }

    #[test]
    fn task_calls_take_an_id_or_a_name_and_the_rest_is_refused() {
        let get = json!({ "method": "tasks/get", "params": { "id": "t1", "historyLength": 5 } });
        assert_eq!(
            call_of(&get),
            Ok(ServiceCall::Get {
                id: "t1".into(),
                history_length: Some(5)
            })
        );
        let cancel = json!({ "method": "CancelTask", "params": { "name": "tasks/t2" } });
        assert_eq!(
            call_of(&cancel),
            Ok(ServiceCall::Cancel { id: "t2".into() })
        );
        let no_id = json!({ "method": "SubscribeToTask", "params": {} });
        assert_eq!(call_of(&no_id).map_err(|e| e.code()), Err(-32602));
        let unknown = json!({ "method": "tasks/pushNotificationConfig/set", "params": {} });
        assert_eq!(call_of(&unknown).map_err(|e| e.code()), Err(-32601));
        let bad_bytes = json!({ "method": "message/send", "params": { "message": {
            "parts": [ { "kind": "file", "file": { "bytes": "%%%" } } ] } } });
        assert!(send_v10(&params(&bad_bytes)).is_err());
    }
}
