//! Data parts that other A2A↔AG-UI bridges and agent servers define (the
//! `@ag-ui/a2a` bridge's `tool-call` / `tool-result` parts are read by
//! their shape, in `shape`):
//! - LangGraph Agent Server: `{"tool_results":[{"toolCallId","name",
//!   "content","status"}]}`, results whose calls were never sent;
//! - shared state (ag-ui PR #1936, and the gateway's AG-UI input
//!   extension): `{"type":"agui-state-snapshot","snapshot"}` and
//!   `{"type":"agui-state-delta","patch":[RFC 6902 operations]}`.

use serde_json::Value;

use super::json::{Object, array, text};
use super::{Block, tool};

/// Calls `f` with each block a bridge data part stands for; false when the
/// data is none of these conventions.
pub(super) fn read<'a>(data: &'a Object, f: &mut impl FnMut(Block<'a>)) -> bool {
    match text(data, "type") {
        Some("agui-state-snapshot") => {
            if let Some(snapshot) = data.get("snapshot").filter(|s| !s.is_null()) {
                f(Block::StateSnapshot(snapshot));
                return true;
            }
        }
        Some("agui-state-delta") => {
            // Only a patch of operation objects is a patch; anything else is
            // shown as the data it is.
            if let Some(patch) = data.get("patch").and_then(Value::as_array)
                && !patch.is_empty()
                && patch.iter().all(is_patch_operation)
            {
                f(Block::StatePatch(patch));
                return true;
            }
        }
        _ => {}
    }
    let Some(results) = array(data, "tool_results").filter(|_| data.len() == 1) else {
        return false;
    };
    for entry in results.iter().filter_map(Value::as_object) {
        // `{toolCallId, name, content, status}`: the result key families.
        f(Block::ToolResult(tool::result(entry)));
    }
    true
}

/// One RFC 6902 operation: a known `op`, a JSON Pointer `path`, and the
/// member that op needs (`value` or `from`).
fn is_patch_operation(op: &Value) -> bool {
    let pointer = |key: &str| {
        op.get(key)
            .and_then(Value::as_str)
            .is_some_and(|p| p.is_empty() || p.starts_with('/'))
    };
    if !pointer("path") {
        return false;
    }
    match op.get("op").and_then(Value::as_str) {
        Some("add" | "replace" | "test") => op.get("value").is_some(),
        Some("remove") => true,
        Some("move" | "copy") => pointer("from"),
        _ => false,
    }
}
