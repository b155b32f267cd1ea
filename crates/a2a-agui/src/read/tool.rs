//! Tool calls and results as agents spell them: a payload flat or nested
//! under `data`, arguments as `input` (JSON text or object) and/or
//! `arguments`, content as text or JSON.

use serde_json::Value;

use super::json::{Object, object, text};
use super::{PartBody, ToolResult};

/// A tool call's payload, flat or nested once more under `data`.
pub(super) fn tool_payload(data: &Value) -> Option<&Object> {
    let obj = data.as_object()?;
    let looks_like_call = |o: &Object| {
        [
            "id",
            "name",
            "arguments",
            "input",
            "tool_call_id",
            "content",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
    };
    if looks_like_call(obj) {
        return Some(obj);
    }
    object(obj, "data").filter(|inner| looks_like_call(inner))
}

/// Tool input as Hector merges it: `input` (a JSON string or an object)
/// overlaid with `arguments` (an object), `arguments` winning.
pub(super) fn tool_arguments(payload: &Object) -> Value {
    let from_input = match payload.get("input") {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
        Some(v @ Value::Object(_)) => Some(v.clone()),
        _ => None,
    };
    match (from_input, payload.get("arguments")) {
        (Some(Value::Object(mut merged)), Some(Value::Object(args))) => {
            for (k, v) in args {
                merged.insert(k.clone(), v.clone());
            }
            Value::Object(merged)
        }
        (_, Some(Value::String(s))) => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::from(s.as_str()))
        }
        (_, Some(args)) => args.clone(),
        (Some(input), None) => input,
        (None, None) => Value::Object(Object::new()),
    }
}

/// A tool result from its hinted fields and its part's content: the
/// payload's `content` (else the part's text), its `error`, and Hector's
/// `is_error` flag.
pub(super) fn tool_result<'a>(
    id: Option<&'a str>,
    name: Option<&'a str>,
    is_error: bool,
    is_final: Option<bool>,
    body: &PartBody<'a>,
) -> ToolResult<'a> {
    let payload = match body {
        PartBody::Data(data) => tool_payload(data),
        _ => None,
    };
    let content = match payload.and_then(|p| p.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => match body {
            PartBody::Text(t) => (*t).to_owned(),
            _ => String::new(),
        },
        Some(other) => other.to_string(),
    };
    let error = payload
        .and_then(|p| text(p, "error"))
        .filter(|e| !e.is_empty())
        .map(str::to_owned);
    let is_error = is_error || error.is_some();
    let error = match (is_error, error) {
        (true, None) => Some(content.clone()),
        (_, error) => error,
    };
    ToolResult {
        id: id.or_else(|| payload.and_then(|p| super::json::id(p, "tool_call_id"))),
        name,
        content,
        error,
        is_final: is_final.unwrap_or(true),
        answers_last_call: false,
    }
}
