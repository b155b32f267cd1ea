//! The JSON body of every error answer, the edge's own refusals and the
//! gateway's alike: `{"error": {"code", "message", "side"}}`. The side
//! comes from the code, so a code can never be reported on the wrong side.

use a2a_agui::ErrorCode;
use serde_json::{Value, json};

/// The body for `code` and `message` (its keys in this order).
pub fn body(code: ErrorCode, message: &str) -> Value {
    json!({ "error": {
        "code": code.as_str(),
        "message": message,
        "side": code.side().as_str(),
    } })
}
