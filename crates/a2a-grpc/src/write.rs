//! A 1.0 stream item written as the JSON-RPC `data:` frame a JSON-RPC
//! agent would have sent, straight from the typed message into bytes.
//! This is the per-event path of a gRPC agent's run: building a
//! `serde_json::Value` first (a map per object, its keys hashed) cost about
//! a tenth of the gateway's CPU per event (BENCHMARKS.md, "gRPC agents").
//! A `Value`, where one is wanted, is what was written read back
//! (`stream_value`, `task_value`), so the two cannot disagree on a key.

use base64::Engine as _;
use serde_json::Value;

use crate::{json, v10};

/// `"key":`, after a comma unless it is the object's first.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// The next member's key (the writer's own constants: nothing to
    /// escape); its value is written to the returned buffer.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// A text member, left out when empty (proto3's absent string).
    fn text(&mut self, key: &str, text: &str) {
        if !text.is_empty() {
            string(self.key(key), text);
        }
    }

    fn value(&mut self, key: &str, value: &Value) {
        let out = self.key(key);
        // Writing a `Value` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(out, value);
    }

    fn object(&mut self, key: &str, fields: Option<&prost_types::Struct>) {
        if let Some(fields) = fields {
            self.value(key, &json::object(fields));
        }
    }

    fn list(&mut self, key: &str, items: &[String]) {
        if !items.is_empty() {
            self.array(key, items, |out, item| string(out, item));
        }
    }

    fn array<T>(&mut self, key: &str, items: &[T], write: fn(&mut Vec<u8>, &T)) {
        let out = self.key(key);
        out.push(b'[');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write(out, item);
        }
        out.push(b']');
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn string(out: &mut Vec<u8>, text: &str) {
    // Escaped as serde_json escapes; writing into a `Vec` cannot fail.
    let _ = serde_json::to_writer(out, text);
}

fn part(out: &mut Vec<u8>, part: &v10::Part) {
    let mut object = Object::open(out);
    match &part.content {
        Some(v10::part::Content::Text(text)) => string(object.key("text"), text),
        Some(v10::part::Content::Raw(bytes)) => {
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            string(object.key("raw"), &encoded);
        }
        Some(v10::part::Content::Url(url)) => string(object.key("url"), url),
        Some(v10::part::Content::Data(data)) => object.value("data", &json::value(data)),
        None => {}
    }
    object.object("metadata", part.metadata.as_ref());
    object.text("filename", &part.filename);
    object.text("mediaType", &part.media_type);
    object.close();
}

fn message(out: &mut Vec<u8>, message: &v10::Message) {
    let mut object = Object::open(out);
    object.text("messageId", &message.message_id);
    object.text("contextId", &message.context_id);
    object.text("taskId", &message.task_id);
    string(object.key("role"), json::role_name(message.role));
    object.array("parts", &message.parts, part);
    object.object("metadata", message.metadata.as_ref());
    object.list("extensions", &message.extensions);
    object.list("referenceTaskIds", &message.reference_task_ids);
    object.close();
}

fn status(out: &mut Vec<u8>, status: &v10::TaskStatus) {
    let mut object = Object::open(out);
    string(object.key("state"), json::state_name(status.state));
    if let Some(said) = &status.message {
        message(object.key("message"), said);
    }
    if let Some(at) = status.timestamp.as_ref().and_then(json::timestamp) {
        object.value("timestamp", &at);
    }
    object.close();
}

fn artifact(out: &mut Vec<u8>, artifact: &v10::Artifact) {
    let mut object = Object::open(out);
    object.text("artifactId", &artifact.artifact_id);
    object.text("name", &artifact.name);
    object.text("description", &artifact.description);
    object.array("parts", &artifact.parts, part);
    object.object("metadata", artifact.metadata.as_ref());
    object.list("extensions", &artifact.extensions);
    object.close();
}

fn task(out: &mut Vec<u8>, task: &v10::Task) {
    let mut object = Object::open(out);
    object.text("id", &task.id);
    object.text("contextId", &task.context_id);
    if let Some(now) = &task.status {
        status(object.key("status"), now);
    }
    if !task.artifacts.is_empty() {
        object.array("artifacts", &task.artifacts, artifact);
    }
    if !task.history.is_empty() {
        object.array("history", &task.history, message);
    }
    object.object("metadata", task.metadata.as_ref());
    object.close();
}

/// One stream item, wrapped by its kind as 1.0's JSON wraps it; false
/// (nothing written) for an empty one.
fn stream_item(out: &mut Vec<u8>, item: &v10::StreamResponse) -> bool {
    use v10::stream_response::Payload;
    let Some(payload) = &item.payload else {
        return false;
    };
    let mut wrapper = Object::open(out);
    match payload {
        Payload::Task(now) => task(wrapper.key("task"), now),
        Payload::Message(said) => message(wrapper.key("message"), said),
        Payload::StatusUpdate(update) => {
            let mut object = Object::open(wrapper.key("statusUpdate"));
            object.text("taskId", &update.task_id);
            object.text("contextId", &update.context_id);
            if let Some(now) = &update.status {
                status(object.key("status"), now);
            }
            object.object("metadata", update.metadata.as_ref());
            object.close();
        }
        Payload::ArtifactUpdate(update) => {
            let mut object = Object::open(wrapper.key("artifactUpdate"));
            object.text("taskId", &update.task_id);
            object.text("contextId", &update.context_id);
            if let Some(chunk) = &update.artifact {
                artifact(object.key("artifact"), chunk);
            }
            if update.append {
                object.key("append").extend_from_slice(b"true");
            }
            if update.last_chunk {
                object.key("lastChunk").extend_from_slice(b"true");
            }
            object.object("metadata", update.metadata.as_ref());
            object.close();
        }
    }
    wrapper.close();
    true
}

/// `data: {"jsonrpc":"2.0","id":…,"result":…}` and the blank line, for
/// the call `id`; `None` for an empty item.
pub fn frame(id: &Value, item: &v10::StreamResponse) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: {\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(b",\"result\":");
    if !stream_item(&mut out, item) {
        return None;
    }
    out.extend_from_slice(b"}\n\n");
    Some(out)
}

/// What was written, read back (for the callers that want a `Value`).
fn read_back(written: &[u8]) -> Value {
    serde_json::from_slice(written).unwrap_or(Value::Null)
}

/// A 1.0 task as JSON (a unary answer, a list's entry).
pub fn task_value(of: &v10::Task) -> Value {
    let mut out = Vec::new();
    task(&mut out, of);
    read_back(&out)
}

/// One stream item as JSON, wrapped by its kind; `None` for an empty one.
pub fn stream_value(item: &v10::StreamResponse) -> Option<Value> {
    let mut out = Vec::new();
    stream_item(&mut out, item).then(|| read_back(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_part(text: &str) -> v10::Part {
        v10::Part {
            content: Some(v10::part::Content::Text(text.to_owned())),
            ..v10::Part::default()
        }
    }

    #[test]
    fn a_frame_is_the_json_rpc_frame_of_the_item() {
        let item = v10::StreamResponse {
            payload: Some(v10::stream_response::Payload::ArtifactUpdate(
                v10::TaskArtifactUpdateEvent {
                    task_id: "t\"1".to_owned(),
                    context_id: "c".to_owned(),
                    artifact: Some(v10::Artifact {
                        artifact_id: "a".to_owned(),
                        parts: vec![text_part("Hé\n")],
                        ..v10::Artifact::default()
                    }),
                    append: true,
                    last_chunk: false,
                    metadata: None,
                },
            )),
        };
        let frame = frame(&serde_json::json!(7), &item).unwrap();
        let text = String::from_utf8(frame).unwrap();
        assert_eq!(
            text,
            "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"artifactUpdate\":{\"taskId\":\"t\\\"1\",\"contextId\":\"c\",\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"Hé\\n\"}]},\"append\":true}}}\n\n"
        );
        assert!(super::frame(&Value::Null, &v10::StreamResponse::default()).is_none());
    }
}
