//! Data parts that other A2A↔AG-UI bridges and agent servers define:
//! - `@ag-ui/a2a` (the official bridge): `{"type":"tool-call","id","name",
//!   "arguments","rawArguments"}` and `{"type":"tool-result","toolCallId",
//!   "payload"}`;
//! - LangGraph Agent Server: `{"tool_results":[{"toolCallId","name",
//!   "content","status"}]}`, results whose calls were never sent.

use serde_json::Value;

use super::json::{Object, array, text};
use super::{Block, ToolCall, ToolResult, UNKNOWN_TOOL};

/// Calls `f` with each block a bridge data part stands for; false when the
/// data is none of these conventions.
pub(super) fn read<'a>(data: &'a Object, f: &mut impl FnMut(Block<'a>)) -> bool {
    match text(data, "type") {
        Some("tool-call") => {
            let arguments = match (data.get("arguments"), text(data, "rawArguments")) {
                (Some(arguments), _) if !arguments.is_null() => arguments.clone(),
                (_, Some(raw)) => Value::from(raw),
                _ => Value::Object(Object::new()),
            };
            f(Block::ToolCall(ToolCall {
                id: text(data, "id"),
                name: text(data, "name").unwrap_or(UNKNOWN_TOOL),
                arguments,
                result: None,
            }));
            return true;
        }
        Some("tool-result") => {
            f(Block::ToolResult(result(
                text(data, "toolCallId"),
                None,
                data.get("payload"),
                false,
            )));
            return true;
        }
        _ => {}
    }
    let Some(results) = array(data, "tool_results").filter(|_| data.len() == 1) else {
        return false;
    };
    for entry in results.iter().filter_map(Value::as_object) {
        let failed = text(entry, "status").is_some_and(|s| s.eq_ignore_ascii_case("error"));
        f(Block::ToolResult(result(
            text(entry, "toolCallId").or_else(|| text(entry, "tool_call_id")),
            text(entry, "name"),
            entry.get("content"),
            failed,
        )));
    }
    true
}

fn result<'a>(
    id: Option<&'a str>,
    name: Option<&'a str>,
    content: Option<&Value>,
    failed: bool,
) -> ToolResult<'a> {
    let content = match content {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    ToolResult {
        id,
        name,
        error: failed.then(|| content.clone()),
        content,
        is_final: true,
        answers_last_call: false,
    }
}
