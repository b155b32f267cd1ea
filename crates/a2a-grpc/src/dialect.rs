//! The answer in the caller's dialect. `json` writes 1.0's JSON; a caller
//! that asked in 0.3's JSON-RPC (`message/stream`, `tasks/get`, ...) reads
//! 0.3's: `kind`-tagged objects, lower-case states and roles, parts as
//! `text`, `file` or `data`, and a status update's `final`.

use serde_json::{Map, Value, json};

/// Which JSON an answer is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V03,
    V10,
}

impl Dialect {
    /// 0.3's methods are `noun/verb`; 1.0's are `PascalCase`.
    pub fn of_method(method: &str) -> Dialect {
        if method.contains('/') {
            Dialect::V03
        } else {
            Dialect::V10
        }
    }
}

fn state(name: &str) -> String {
    name.strip_prefix("TASK_STATE_")
        .unwrap_or(name)
        .to_ascii_lowercase()
        .replace('_', "-")
}

fn is_final(state: &str) -> bool {
    matches!(
        state,
        "completed" | "failed" | "canceled" | "rejected" | "input-required" | "auth-required"
    )
}

fn part(part: &Value) -> Value {
    let Some(object) = part.as_object() else {
        return part.clone();
    };
    let mut out = Map::new();
    if let Some(text) = object.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if object.contains_key("url") || object.contains_key("raw") {
        let mut file = Map::new();
        if let Some(url) = object.get("url") {
            file.insert("uri".into(), url.clone());
        }
        if let Some(raw) = object.get("raw") {
            file.insert("bytes".into(), raw.clone());
        }
        if let Some(media) = object.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = object.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    } else if let Some(data) = object.get("data") {
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data.clone());
    }
    if let Some(metadata) = object.get("metadata") {
        out.insert("metadata".into(), metadata.clone());
    }
    Value::Object(out)
}

fn parts(list: &mut Value) {
    if let Some(items) = list.as_array_mut() {
        for item in items.iter_mut() {
            *item = part(item);
        }
    }
}

fn message(value: &Value) -> Value {
    let mut out = value.clone();
    out["kind"] = json!("message");
    if let Some(role) = value["role"].as_str() {
        out["role"] = json!(match role {
            "ROLE_USER" => "user",
            "ROLE_AGENT" => "agent",
            other => other,
        });
    }
    parts(&mut out["parts"]);
    out
}

fn status(value: &Value) -> Value {
    let mut out = value.clone();
    if let Some(name) = value["state"].as_str() {
        out["state"] = json!(state(name));
    }
    if value.get("message").is_some() {
        out["message"] = message(&value["message"]);
    }
    out
}

fn artifact(value: &Value) -> Value {
    let mut out = value.clone();
    parts(&mut out["parts"]);
    out
}

fn task(value: &Value) -> Value {
    let mut out = value.clone();
    out["kind"] = json!("task");
    if value.get("status").is_some() {
        out["status"] = status(&value["status"]);
    }
    if let Some(list) = out.get_mut("artifacts").and_then(Value::as_array_mut) {
        for item in list.iter_mut() {
            *item = artifact(item);
        }
    }
    if let Some(list) = out.get_mut("history").and_then(Value::as_array_mut) {
        for item in list.iter_mut() {
            *item = message(item);
        }
    }
    out
}

/// A stream item (1.0's wrapped form) as 0.3's result.
pub fn stream_item_v03(wrapped: &Value) -> Value {
    if let Some(inner) = wrapped.get("task") {
        return task(inner);
    }
    if let Some(inner) = wrapped.get("message") {
        return message(inner);
    }
    if let Some(inner) = wrapped.get("statusUpdate") {
        let mut out = inner.clone();
        out["kind"] = json!("status-update");
        out["status"] = status(&inner["status"]);
        let done = out["status"]["state"].as_str().is_some_and(is_final);
        out["final"] = json!(done);
        return out;
    }
    if let Some(inner) = wrapped.get("artifactUpdate") {
        let mut out = inner.clone();
        out["kind"] = json!("artifact-update");
        out["artifact"] = artifact(&inner["artifact"]);
        return out;
    }
    wrapped.clone()
}

/// A task (a get's or a cancel's answer) as 0.3's.
pub fn task_v03(value: &Value) -> Value {
    task(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_stream_reads_as_0_3() {
        let update = json!({ "statusUpdate": { "taskId": "t", "contextId": "c",
            "status": { "state": "TASK_STATE_INPUT_REQUIRED",
                "message": { "role": "ROLE_AGENT", "parts": [{ "text": "which city?" }] } } } });
        assert_eq!(
            stream_item_v03(&update),
            json!({ "taskId": "t", "contextId": "c", "kind": "status-update", "final": true,
                "status": { "state": "input-required",
                    "message": { "kind": "message", "role": "agent",
                        "parts": [{ "kind": "text", "text": "which city?" }] } } })
        );
        let artifact = json!({ "artifactUpdate": { "taskId": "t", "artifact": { "artifactId": "a",
            "parts": [{ "url": "https://x/a.png", "mediaType": "image/png" }, { "data": { "k": 1 } }] },
            "append": true } });
        assert_eq!(
            stream_item_v03(&artifact)["artifact"]["parts"],
            json!([{ "kind": "file", "file": { "uri": "https://x/a.png", "mimeType": "image/png" } },
                   { "kind": "data", "data": { "k": 1 } }])
        );
        let working = json!({ "statusUpdate": { "status": { "state": "TASK_STATE_WORKING" } } });
        assert_eq!(stream_item_v03(&working)["final"], false);
        assert_eq!(Dialect::of_method("tasks/get"), Dialect::V03);
        assert_eq!(Dialect::of_method("GetTask"), Dialect::V10);
    }
}
