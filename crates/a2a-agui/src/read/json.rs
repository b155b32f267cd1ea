//! Lenient field access: a field of the wrong type reads as absent.

use serde_json::{Map, Value};

/// A JSON object as read.
pub(crate) type Object = Map<String, Value>;

pub(crate) fn text<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
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
