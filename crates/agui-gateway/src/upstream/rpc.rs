//! The calls the gateway makes itself, in A2A's terms and no binding yet
//! (`Call`, `TaskCall`, `OutgoingMessage`), and the bodies they carry in
//! the agent's dialect (0.3 or 1.0): a send's params, which every binding
//! sends, and the JSON-RPC envelopes. How they are sent is `binding`'s.

use serde_json::{Map, Value, json};

use crate::config::{A2aVersion, Mode};

/// A user message the gateway sends upstream, in no dialect yet.
#[derive(Debug, Clone, Default)]
pub struct OutgoingMessage {
    pub message_id: String,
    pub parts: Vec<OutgoingPart>,
    pub context_id: Option<String>,
    pub task_id: Option<String>,
    pub metadata: Option<serde_json::Map<String, Value>>,
    pub extensions: Vec<String>,
    /// The request's own metadata (`params.metadata`), beside the message.
    pub request_metadata: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone)]
pub enum OutgoingPart {
    Text(String),
    FileUri {
        uri: String,
        media_type: Option<String>,
        name: Option<String>,
    },
    FileBytes {
        bytes: String,
        media_type: Option<String>,
        name: Option<String>,
    },
    Data(Value),
    /// A data part with part metadata that says what it is (a tool result,
    /// the answer to an interrupt).
    Marked {
        data: Value,
        metadata: serde_json::Map<String, Value>,
    },
    /// An A2UI client message (a user action): a data part marked with the
    /// A2UI media type, in part metadata as the A2UI extension says.
    Ui(Value),
}

/// The media type A2UI parts carry.
pub const A2UI_MEDIA_TYPE: &str = "application/json+a2ui";

impl OutgoingPart {
    fn to_json(&self, version: A2aVersion) -> Value {
        let v10 = version == A2aVersion::V10;
        let mut part = match self {
            OutgoingPart::Text(text) if v10 => json!({ "text": text }),
            OutgoingPart::Text(text) => json!({ "kind": "text", "text": text }),
            OutgoingPart::FileUri { uri, .. } if v10 => json!({ "url": uri }),
            OutgoingPart::FileUri { uri, .. } => json!({ "kind": "file", "file": { "uri": uri } }),
            OutgoingPart::FileBytes { bytes, .. } if v10 => json!({ "raw": bytes }),
            OutgoingPart::FileBytes { bytes, .. } => {
                json!({ "kind": "file", "file": { "bytes": bytes } })
            }
            OutgoingPart::Data(data) if v10 => json!({ "data": data }),
            OutgoingPart::Data(data) => json!({ "kind": "data", "data": data }),
            OutgoingPart::Marked { data, metadata } if v10 => {
                json!({ "data": data, "metadata": metadata })
            }
            OutgoingPart::Marked { data, metadata } => {
                json!({ "kind": "data", "data": data, "metadata": metadata })
            }
            OutgoingPart::Ui(data) if v10 => {
                json!({ "data": data, "mediaType": A2UI_MEDIA_TYPE, "metadata": { "mimeType": A2UI_MEDIA_TYPE } })
            }
            OutgoingPart::Ui(data) => {
                json!({ "kind": "data", "data": data, "metadata": { "mimeType": A2UI_MEDIA_TYPE } })
            }
        };
        if let OutgoingPart::FileUri {
            media_type, name, ..
        }
        | OutgoingPart::FileBytes {
            media_type, name, ..
        } = self
        {
            let (target, media_key, name_key) = if v10 {
                (&mut part, "mediaType", "filename")
            } else {
                (&mut part["file"], "mimeType", "name")
            };
            if let Some(media_type) = media_type {
                target[media_key] = json!(media_type);
            }
            if let Some(name) = name {
                target[name_key] = json!(name);
            }
        }
        part
    }
}

/// A send's params in the upstream's dialect: A2A's `SendMessageRequest`
/// as JSON, what JSON-RPC wraps, HTTP+JSON posts and gRPC encodes. A
/// polled send (`Mode::Poll`) asks for the task at once rather than when
/// it is done: 0.3's `blocking: false`, 1.0's `returnImmediately: true`.
pub fn send_params(
    version: A2aVersion,
    message: &OutgoingMessage,
    mode: Mode,
) -> Map<String, Value> {
    let v10 = version == A2aVersion::V10;
    let parts: Vec<Value> = message.parts.iter().map(|p| p.to_json(version)).collect();
    let mut msg = if v10 {
        json!({ "role": "ROLE_USER", "messageId": message.message_id, "parts": parts })
    } else {
        json!({ "kind": "message", "role": "user", "messageId": message.message_id, "parts": parts })
    };
    if let Some(context) = &message.context_id {
        msg["contextId"] = json!(context);
    }
    if let Some(task) = &message.task_id {
        msg["taskId"] = json!(task);
    }
    if let Some(metadata) = &message.metadata {
        msg["metadata"] = Value::Object(metadata.clone());
    }
    if !message.extensions.is_empty() {
        msg["extensions"] = json!(message.extensions);
    }
    let mut params = Map::new();
    params.insert("message".to_owned(), msg);
    if mode == Mode::Poll {
        let configuration = match v10 {
            true => json!({ "returnImmediately": true }),
            false => json!({ "blocking": false }),
        };
        params.insert("configuration".to_owned(), configuration);
    }
    if let Some(metadata) = &message.request_metadata {
        params.insert("metadata".to_owned(), Value::Object(metadata.clone()));
    }
    params
}

/// The JSON-RPC method of a send.
fn send_method(version: A2aVersion, mode: Mode) -> &'static str {
    match (version == A2aVersion::V10, mode) {
        (true, Mode::Stream) => "SendStreamingMessage",
        (true, Mode::Poll) => "SendMessage",
        (false, Mode::Stream) => "message/stream",
        (false, Mode::Poll) => "message/send",
    }
}

/// The JSON-RPC body of a send in the upstream's dialect, and whether it
/// needs the `A2A-Version: 1.0` header.
pub fn send_request(
    version: A2aVersion,
    message: &OutgoingMessage,
    rpc_id: &str,
    mode: Mode,
) -> (Value, bool) {
    let params = send_params(version, message, mode);
    let method = send_method(version, mode);
    (
        json!({ "jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params }),
        version == A2aVersion::V10,
    )
}

/// What the gateway asks of an agent, in no binding yet.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    /// A run's message: streamed, or sent to be polled (the route's mode).
    /// `activate` lists the A2A extensions to ask the agent to turn on.
    Send {
        message: &'a OutgoingMessage,
        activate: &'a [String],
    },
    /// A call about one task.
    Task(TaskCall, &'a str),
    /// One page of the tasks the caller may see (of a context, when
    /// given): 1.0's `ListTasks`.
    List {
        context: Option<&'a str>,
        page_token: &'a str,
    },
}

/// A call about one task that the gateway makes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCall {
    /// The client went away, or cancelled an interrupt.
    Cancel,
    /// Its events again, after the upstream stream broke.
    Subscribe,
    /// The task as stored: what a re-attached stream missed, or how it
    /// ended.
    Get,
}

impl TaskCall {
    fn method(self, v10: bool) -> &'static str {
        match (self, v10) {
            (TaskCall::Cancel, true) => "CancelTask",
            (TaskCall::Cancel, false) => "tasks/cancel",
            (TaskCall::Subscribe, true) => "SubscribeToTask",
            (TaskCall::Subscribe, false) => "tasks/resubscribe",
            (TaskCall::Get, true) => "GetTask",
            (TaskCall::Get, false) => "tasks/get",
        }
    }
}

/// The JSON-RPC body of a call about one task, in the upstream's dialect.
pub fn task_request(
    version: A2aVersion,
    call: TaskCall,
    task_id: &str,
    rpc_id: &str,
) -> (Value, bool) {
    let v10 = version == A2aVersion::V10;
    let method = call.method(v10);
    (
        json!({ "jsonrpc": "2.0", "id": rpc_id, "method": method, "params": { "id": task_id } }),
        v10,
    )
}

/// A 1.0 `ListTasks` call: one page of a context's tasks, their
/// artifacts included, or of every task the caller may see, without
/// (the newest first, as the agent sorts them).
pub fn list_tasks_request(context_id: Option<&str>, page_token: &str, rpc_id: &str) -> Value {
    let params = list_params(context_id, page_token);
    json!({ "jsonrpc": "2.0", "id": rpc_id, "method": "ListTasks", "params": params })
}

/// `ListTasks`'s params (every binding's, HTTP+JSON's as its query).
pub fn list_params(context_id: Option<&str>, page_token: &str) -> Map<String, Value> {
    // The history is what shows whose a task is (the gateway's message
    // ids): asked for explicitly, as an agent's default may be none.
    let mut params = Map::new();
    params.insert("pageSize".into(), json!(100));
    params.insert("historyLength".into(), json!(1000));
    params.insert("includeArtifacts".into(), json!(context_id.is_some()));
    if let Some(context) = context_id {
        params.insert("contextId".into(), json!(context));
    }
    if !page_token.is_empty() {
        params.insert("pageToken".into(), json!(page_token));
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_written_in_each_dialect() {
        let message = OutgoingMessage {
            message_id: "m".into(),
            parts: vec![
                OutgoingPart::Text("hi".into()),
                OutgoingPart::FileUri {
                    uri: "https://x/a.png".into(),
                    media_type: Some("image/png".into()),
                    name: None,
                },
            ],
            context_id: Some("c".into()),
            ..OutgoingMessage::default()
        };
        let (v03, header) = send_request(A2aVersion::V03, &message, "1", Mode::Stream);
        assert!(!header);
        assert_eq!(v03["method"], "message/stream");
        assert_eq!(
            v03["params"]["message"]["parts"][1],
            json!({ "kind": "file", "file": { "uri": "https://x/a.png", "mimeType": "image/png" } })
        );
        let (v10, header) = send_request(A2aVersion::V10, &message, "1", Mode::Stream);
        assert!(header);
        assert_eq!(v10["params"]["message"]["role"], "ROLE_USER");
        assert_eq!(
            v10["params"]["message"]["parts"][1],
            json!({ "url": "https://x/a.png", "mediaType": "image/png" })
        );
    }
}
