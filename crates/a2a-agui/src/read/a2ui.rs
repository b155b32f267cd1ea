//! A2UI (agent-rendered UI) messages in data parts, v0.8 and v0.9: a data
//! part marked with the A2UI media type (`application/json+a2ui`, or the
//! spec's `application/a2ui+json`, in part metadata or on the part), or
//! whose data is an A2UI message (`beginRendering`, `surfaceUpdate`,
//! `dataModelUpdate`, `createSurface`, `updateComponents`,
//! `updateDataModel`, `deleteSurface`, each naming a `surfaceId`). The
//! data may also be an array of such messages (v0.9's spec).

use serde_json::Value;

use super::Block;
use super::json::{Object, object, text};

const MEDIA_TYPES: [&str; 2] = ["application/json+a2ui", "application/a2ui+json"];
const OPERATIONS: [&str; 7] = [
    "beginRendering",
    "surfaceUpdate",
    "dataModelUpdate",
    "createSurface",
    "updateComponents",
    "updateDataModel",
    "deleteSurface",
];

/// Calls `f` with one block per A2UI message; false when the part is not
/// A2UI (or names no surface).
pub(super) fn read<'a>(
    part: &'a Object,
    metadata: Option<&'a Object>,
    data: &'a Value,
    f: &mut impl FnMut(Block<'a>),
) -> bool {
    let marked = super::part::media_types(part, metadata).any(|t| MEDIA_TYPES.contains(&t));
    let messages = match data {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    let surfaces: Vec<(&str, &Value)> = messages
        .iter()
        .filter_map(|m| surface_of(m).map(|s| (s, m)))
        .collect();
    if surfaces.is_empty() || (!marked && surfaces.len() != messages.len()) {
        return false;
    }
    for (surface_id, operation) in surfaces {
        f(Block::Ui {
            surface_id,
            operation,
        });
    }
    true
}

/// The surface an A2UI message is about (an activity needs a non-empty id).
fn surface_of(message: &Value) -> Option<&str> {
    let message = message.as_object()?;
    OPERATIONS
        .iter()
        .find_map(|key| object(message, key).and_then(|op| text(op, "surfaceId")))
        .filter(|id| !id.is_empty())
}
