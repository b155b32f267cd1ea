//! Lenient field access: a field of the wrong type reads as absent.

use serde_json::{Map, Value};

/// A JSON object as read.
pub(crate) type Object = Map<String, Value>;

pub(crate) fn text<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// The longest id read (task, context, message, artifact, tool call). An
/// agent's ids are short; a longer one is read as no id at all, because
/// each id is copied into many events and remembered per run: a 16 MiB
/// id would turn every small event into a 16 MiB one. The gateway holds
/// a client's ids (thread, run, message, tool call ids, names) to the same
/// bound.
pub const MAX_ID_BYTES: usize = 1024;

/// An id: a string of at most [`MAX_ID_BYTES`].
pub(crate) fn id<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    text(obj, key).filter(|id| id.len() <= MAX_ID_BYTES)
}

pub(crate) fn object<'a>(obj: &'a Object, key: &str) -> Option<&'a Object> {
    obj.get(key).and_then(Value::as_object)
}

pub(crate) fn array<'a>(obj: &'a Object, key: &str) -> Option<&'a [Value]> {
    obj.get(key).and_then(Value::as_array).map(Vec::as_slice)
}

/// Booleans as agents send them: `true`, `"true"`, `1`.
pub(crate) fn flag(obj: &Object, key: &str) -> Option<bool> {
    match obj.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        Value::Number(n) => n.as_f64().map(|f| f != 0.0),
        _ => None,
    }
}

/// Non-empty metadata object, if any.
pub(crate) fn metadata(obj: &Object) -> Option<&Object> {
    object(obj, "metadata").filter(|m| !m.is_empty())
}
