//! The UI hints agents put in A2A metadata, read in every known spelling.
//!
//! - Hector: part metadata `event_type`, `block_id`, … as its code writes
//!   them, and `agui_event_type`, `agui_block_id`, … as its docs describe
//!   them; the unprefixed key wins when both are present.
//! - ACP: part metadata `kind: "citation" | "trajectory"`.
//! - Agent Stack (ACP's A2A successor): message metadata keyed by the
//!   citation and trajectory extension URIs, old and new host.
//! - Multimodal interaction extension: `commands` in artifact metadata.

use serde_json::Value;

use crate::a2a::{Object, flag, object, text};

pub(crate) const AGENTSTACK_CITATION: [&str; 2] = [
    "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1",
    "https://a2a-extensions.beeai.dev/ui/citation/v1",
];
pub(crate) const AGENTSTACK_TRAJECTORY: [&str; 2] = [
    "https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1",
    "https://a2a-extensions.beeai.dev/ui/trajectory/v1",
];

/// What a part means to a UI, decided from its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartRole {
    Thinking,
    ThinkingComplete,
    ToolCall,
    ToolResult,
    ErrorNotice,
    Citation,
    Trajectory,
    Plain,
}

#[derive(Debug, Default)]
pub(crate) struct PartHints<'a> {
    pub event_type: Option<&'a str>,
    pub block_type: Option<&'a str>,
    pub block_id: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub tool_name: Option<&'a str>,
    /// Hector tells a tool result from a tool call by the presence of the
    /// `is_error` key, not by its value.
    pub has_is_error: bool,
    pub is_error: bool,
    pub is_final: Option<bool>,
    pub signature: Option<&'a str>,
    pub thinking_type: Option<&'a str>,
    pub error_code: Option<&'a str>,
    pub acp_kind: Option<&'a str>,
}

fn hector_text<'a>(meta: &'a Object, key: &str, prefixed: &str) -> Option<&'a str> {
    text(meta, key).or_else(|| text(meta, prefixed))
}

fn hector_flag(meta: &Object, key: &str, prefixed: &str) -> Option<bool> {
    flag(meta, key).or_else(|| flag(meta, prefixed))
}

pub(crate) fn part_hints(meta: Option<&Object>) -> PartHints<'_> {
    let Some(meta) = meta else {
        return PartHints::default();
    };
    let is_error = hector_flag(meta, "is_error", "agui_is_error");
    PartHints {
        event_type: hector_text(meta, "event_type", "agui_event_type"),
        block_type: hector_text(meta, "block_type", "agui_block_type"),
        block_id: hector_text(meta, "block_id", "agui_block_id"),
        tool_call_id: hector_text(meta, "tool_call_id", "agui_tool_call_id"),
        tool_name: hector_text(meta, "tool_name", "agui_tool_name"),
        has_is_error: meta.contains_key("is_error") || meta.contains_key("agui_is_error"),
        is_error: is_error.unwrap_or(false),
        is_final: hector_flag(meta, "is_final", "agui_is_final"),
        signature: hector_text(meta, "signature", "agui_signature"),
        thinking_type: hector_text(meta, "thinking_type", "agui_thinking_type"),
        error_code: hector_text(meta, "error_code", "agui_error_code"),
        acp_kind: text(meta, "kind").filter(|k| *k == "citation" || *k == "trajectory"),
    }
}

impl PartHints<'_> {
    pub(crate) fn role(&self) -> PartRole {
        match self.acp_kind {
            Some("citation") => return PartRole::Citation,
            Some("trajectory") => return PartRole::Trajectory,
            _ => {}
        }
        if self.event_type == Some("thinking") || self.block_type == Some("thinking") {
            return PartRole::Thinking;
        }
        match self.event_type {
            Some("thinking_complete") => PartRole::ThinkingComplete,
            Some("tool_call") if self.has_is_error => PartRole::ToolResult,
            Some("tool_call") => PartRole::ToolCall,
            Some("error") => PartRole::ErrorNotice,
            _ => PartRole::Plain,
        }
    }
}

/// A tool call's payload, flat or nested once more under `data`.
pub(crate) fn tool_payload(data: &Value) -> Option<&Object> {
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
pub(crate) fn tool_arguments(payload: &Object) -> Value {
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

/// A citation in AG-UI's casing, from ACP part metadata or one entry of the
/// Agent Stack extension; fields that are absent or null are left out.
pub(crate) fn citation(source: &Object) -> Object {
    let mut out = Object::new();
    for (from, to) in [
        ("url", "url"),
        ("title", "title"),
        ("description", "description"),
        ("start_index", "startIndex"),
        ("startIndex", "startIndex"),
        ("end_index", "endIndex"),
        ("endIndex", "endIndex"),
    ] {
        if let Some(v) = source.get(from).filter(|v| !v.is_null()) {
            out.insert(to.to_owned(), v.clone());
        }
    }
    out
}

/// Agent Stack trajectory `{title, content, group_id}` in AG-UI's casing.
pub(crate) fn trajectory(source: &Object) -> Object {
    let mut out = Object::new();
    for (from, to) in [
        ("title", "title"),
        ("content", "content"),
        ("group_id", "groupId"),
        ("groupId", "groupId"),
    ] {
        if let Some(v) = source.get(from).filter(|v| !v.is_null()) {
            out.insert(to.to_owned(), v.clone());
        }
    }
    out
}

/// The entries of an Agent Stack citation value: `{"citations":[…]}`, or
/// the single flat object used before August 2025.
pub(crate) fn citation_entries(value: &Value) -> Vec<&Object> {
    match value.as_object() {
        Some(obj) => match obj.get("citations").and_then(Value::as_array) {
            Some(list) => list.iter().filter_map(Value::as_object).collect(),
            None => vec![obj],
        },
        None => Vec::new(),
    }
}
