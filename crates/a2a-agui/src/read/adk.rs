//! Google ADK's parts (`to_a2a`, google-adk 2.x): what a part is sits in
//! part metadata under `adk_*` keys, not in the data.
//! - `adk_thought: true` on a text part: the model's thought;
//! - `adk_type: "function_call"`, data `{id, name, args}` (plus
//!   `adk_is_long_running` for a call the user must answer);
//! - `adk_type: "function_response"`, data `{id, name, response}`;
//! - `adk_type: "executable_code"`, data `{code, language}`, then
//!   `"code_execution_result"`, data `{outcome, output}`: code the model ran
//!   and what it printed, shown as a call of the tool `code_execution`.

use serde_json::Value;

use super::json::{Object, flag, id, text};
use super::tool::content_of;
use super::{Block, PartBody, Thinking, ToolCall, ToolResult, UNKNOWN_TOOL};

/// The tool name code execution is shown under.
pub(crate) const CODE_EXECUTION: &str = "code_execution";

/// True when the part's metadata carries ADK's marks.
pub(super) fn is_adk(meta: &Object) -> bool {
    // A null mark is no mark: the fast reader reads it as absent too.
    let marked = |key| meta.get(key).is_some_and(|v| !v.is_null());
    marked("adk_type") || marked("adk_thought")
}

/// The block an ADK part stands for; `None` leaves the part to the other
/// readers (an ADK part of a kind not known here).
pub(super) fn block<'a>(meta: &'a Object, body: &PartBody<'a>) -> Option<Block<'a>> {
    if flag(meta, "adk_thought") == Some(true)
        && let PartBody::Text(thought) = body
    {
        return Some(Block::Thinking(Thinking {
            text: thought,
            block_id: None,
            signature: None,
            thinking_type: None,
            completed: false,
        }));
    }
    let PartBody::Data(Value::Object(data)) = body else {
        return None;
    };
    match text(meta, "adk_type")? {
        "function_call" => Some(Block::ToolCall(ToolCall {
            id: id(data, "id"),
            name: text(data, "name").unwrap_or(UNKNOWN_TOOL),
            arguments: data
                .get("args")
                .cloned()
                .unwrap_or_else(|| Value::Object(Object::new())),
            result: None,
        })),
        "function_response" => Some(Block::ToolResult(ToolResult {
            id: id(data, "id"),
            name: text(data, "name"),
            content: content_of(data.get("response")),
            error: None,
            is_final: true,
        })),
        "executable_code" => Some(Block::ToolCall(ToolCall {
            id: None,
            name: CODE_EXECUTION,
            arguments: Value::Object(data.clone()),
            result: None,
        })),
        "code_execution_result" => {
            let output = content_of(data.get("output"));
            let failed = text(data, "outcome").is_some_and(|o| o != "OUTCOME_OK");
            Some(Block::ToolResult(ToolResult {
                id: None,
                name: Some(CODE_EXECUTION),
                error: failed.then(|| {
                    let outcome = text(data, "outcome").unwrap_or("");
                    if output.is_empty() {
                        outcome.to_owned()
                    } else {
                        output.clone()
                    }
                }),
                content: output,
                is_final: true,
            }))
        }
        _ => None,
    }
}

/// ADK's state changes, `adk_actions.stateDelta` in event, artifact or
/// message metadata: key → new value.
pub(crate) fn state_delta(meta: Option<&Object>) -> Option<&Object> {
    meta?
        .get("adk_actions")?
        .as_object()?
        .get("stateDelta")?
        .as_object()
        .filter(|delta| !delta.is_empty())
}
