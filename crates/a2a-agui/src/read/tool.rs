//! Tool calls and results by their key families: every spelling agents
//! use for a tool's name, its call's id, its arguments and its result,
//! in one place, so that a framework nobody tuned for is read like the
//! ones that were.
//!
//! - name: `name`, `tool_name`, `toolName`, `function_name`,
//!   `functionName`, `function.name`;
//! - call id: `tool_call_id`, `toolCallId`, `call_id`, `callId`,
//!   `tool_use_id`, `toolUseId`, then `id` (on a call or a result alike);
//! - arguments: `arguments`, `args`, `input`, `parameters`, `tool_args`,
//!   `toolArgs`, `function.arguments` (an object, or JSON text kept as sent), then the
//!   `@ag-ui/a2a` bridge's `rawArguments`; Hector overlays `arguments` on
//!   `input` when both are objects;
//! - result: `result`, `output`, `content`, `response`, `payload` (a
//!   string as it is, anything else as JSON text); an error by `error`,
//!   `is_error` / `isError`, or `status: "error"`.

use serde_json::Value;

use super::json::{Object, flag, id, object, text};
use super::{PartBody, ToolCall, ToolResult, UNKNOWN_TOOL};

const NAME_KEYS: [&str; 5] = [
    "name",
    "tool_name",
    "toolName",
    "function_name",
    "functionName",
];
/// How a call or a result names the call; `id` comes after them.
const CALL_ID_KEYS: [&str; 6] = [
    "tool_call_id",
    "toolCallId",
    "call_id",
    "callId",
    "tool_use_id",
    "toolUseId",
];
const ARGUMENT_KEYS: [&str; 6] = [
    "arguments",
    "args",
    "input",
    "parameters",
    "tool_args",
    "toolArgs",
];
const RESULT_KEYS: [&str; 5] = ["result", "output", "content", "response", "payload"];

/// The tool's name, in whichever key carries it.
pub(super) fn name(payload: &Object) -> Option<&str> {
    NAME_KEYS
        .iter()
        .find_map(|k| text(payload, k))
        .or_else(|| object(payload, "function").and_then(|f| text(f, "name")))
        .filter(|n| !n.is_empty())
}

/// The call's id: a key naming a call id first, `id` last (an OpenAI
/// Responses item has its own `id` and the call's `call_id`; a result's
/// `id` may be the result's own).
pub(super) fn call_id(payload: &Object) -> Option<&str> {
    CALL_ID_KEYS
        .iter()
        .find_map(|k| id(payload, k))
        .or_else(|| id(payload, "id"))
}

/// A tool call's payload, flat or nested once more under `data` (Hector
/// v1 puts the call in a data part whose metadata says what it is).
pub(super) fn tool_payload(data: &Value) -> Option<&Object> {
    let obj = data.as_object()?;
    let looks_like_call = |o: &Object| {
        NAME_KEYS
            .iter()
            .chain(&ARGUMENT_KEYS)
            .chain(&CALL_ID_KEYS)
            .chain(&["id", "content", "function"])
            .any(|k| o.contains_key(*k))
    };
    if looks_like_call(obj) {
        return Some(obj);
    }
    object(obj, "data").filter(|inner| looks_like_call(inner))
}

/// A call read from its payload; `None` without a name unless `unnamed`
/// is allowed (the part declared itself a call in so many words).
pub(super) fn call(payload: &Object, unnamed: bool) -> Option<ToolCall<'_>> {
    if is_declaration(payload) {
        return None;
    }
    let name = match name(payload) {
        Some(name) => name,
        None if unnamed => UNKNOWN_TOOL,
        None => return None,
    };
    Some(ToolCall {
        id: call_id(payload),
        name,
        arguments: arguments(payload),
        result: None,
    })
}

/// A tool's declaration rather than a call of it: `parameters` holding a
/// JSON Schema (`properties`, or `type: "object"`) and no other arguments.
fn is_declaration(payload: &Object) -> bool {
    let schema = object(payload, "parameters")
        .is_some_and(|p| p.contains_key("properties") || text(p, "type") == Some("object"));
    let function_arguments =
        object(payload, "function").is_some_and(|f| f.contains_key("arguments"));
    schema
        && !function_arguments
        && ARGUMENT_KEYS
            .iter()
            .filter(|k| **k != "parameters")
            .all(|k| !payload.contains_key(*k))
}

/// The call's arguments. JSON text is kept as sent (the client gets those
/// very bytes); text that is not JSON is a JSON string.
pub(super) fn arguments(payload: &Object) -> Value {
    let as_object = |v: &Value| match v {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object),
        Value::Object(_) => Some(v.clone()),
        _ => None,
    };
    // Hector: `input` overlaid with `arguments`, `arguments` winning.
    if let (Some(Value::Object(mut merged)), Some(Value::Object(args))) = (
        payload.get("input").and_then(as_object),
        payload.get("arguments"),
    ) {
        for (k, v) in args {
            merged.insert(k.clone(), v.clone());
        }
        return Value::Object(merged);
    }
    let function = object(payload, "function").and_then(|f| f.get("arguments"));
    ARGUMENT_KEYS
        .iter()
        .filter_map(|k| payload.get(*k))
        .chain(function)
        .find(|v| !v.is_null())
        .cloned()
        .or_else(|| text(payload, "rawArguments").map(Value::from))
        .unwrap_or_else(|| Value::Object(Object::new()))
}

/// A tool's answer as text: a string as it is, anything else as JSON.
pub(super) fn content_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A result read from its payload: its call's id and name, its content
/// and whether it failed.
pub(super) fn result(payload: &Object) -> ToolResult<'_> {
    let content = content_of(RESULT_KEYS.iter().find_map(|k| payload.get(*k)));
    let failed = flag(payload, "is_error")
        .or_else(|| flag(payload, "isError"))
        .unwrap_or(false)
        || text(payload, "status")
            .is_some_and(|s| s.eq_ignore_ascii_case("error") || s.eq_ignore_ascii_case("failed"));
    let error = text(payload, "error")
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .or_else(|| failed.then(|| content.clone()));
    ToolResult {
        id: call_id(payload),
        name: name(payload),
        content,
        error,
        is_final: true,
    }
}

/// A tool result from part-metadata hints (Hector v1) and its part: the
/// payload read as any result is (content, error), else the part's text;
/// the hints name the call and the tool, and may flag an error.
pub(super) fn hinted_result<'a>(
    id: Option<&'a str>,
    name: Option<&'a str>,
    is_error: bool,
    is_final: Option<bool>,
    body: &PartBody<'a>,
) -> ToolResult<'a> {
    let mut found = match body {
        PartBody::Data(data) => tool_payload(data).map(result),
        _ => None,
    }
    .unwrap_or(ToolResult {
        id: None,
        name: None,
        content: String::new(),
        error: None,
        is_final: true,
    });
    if let PartBody::Text(text) = body {
        found.content = (*text).to_owned();
    }
    if is_error && found.error.is_none() {
        found.error = Some(found.content.clone());
    }
    ToolResult {
        id: id.or(found.id),
        name: name.or(found.name),
        is_final: is_final.unwrap_or(true),
        ..found
    }
}
