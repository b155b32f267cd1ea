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

use super::json::{Object, flag, metadata, text};
use super::part::part_body_of;
use super::tool::{self, hinted_result, tool_payload};
use super::{
    Block, PartBody, PartMeaning, Thinking, ToolCall, UNKNOWN_TOOL, a2ui, adk, bridges, shape,
};
use crate::event::custom::{Citation, Trajectory};

/// Agent Stack's extension URIs: either host, then the extension's path.
const AGENTSTACK_HOSTS: [&str; 2] = [
    "https://a2a-extensions.agentstack.beeai.dev",
    "https://a2a-extensions.beeai.dev",
];
/// The multimodal-interaction extension's key in artifact metadata.
const COMMANDS: &str = "commands";

/// What a part means to a UI, decided from its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartRole {
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
struct PartHints<'a> {
    event_type: Option<&'a str>,
    block_type: Option<&'a str>,
    block_id: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    tool_name: Option<&'a str>,
    /// Hector tells a tool result from a tool call by the presence of the
    /// `is_error` key, not by its value.
    has_is_error: bool,
    is_error: bool,
    is_final: Option<bool>,
    signature: Option<&'a str>,
    thinking_type: Option<&'a str>,
    error_code: Option<&'a str>,
    acp_kind: Option<&'a str>,
    /// A flag or `type` saying the part is reasoning (`shape`).
    reasoning: bool,
}

fn hector_text<'a>(meta: &'a Object, key: &str, prefixed: &str) -> Option<&'a str> {
    text(meta, key).or_else(|| text(meta, prefixed))
}

fn hector_flag(meta: &Object, key: &str, prefixed: &str) -> Option<bool> {
    flag(meta, key).or_else(|| flag(meta, prefixed))
}

fn part_hints(meta: Option<&Object>) -> PartHints<'_> {
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
        reasoning: shape::text_is_reasoning(meta),
    }
}

impl PartHints<'_> {
    fn role(&self) -> PartRole {
        match self.acp_kind {
            Some("citation") => return PartRole::Citation,
            Some("trajectory") => return PartRole::Trajectory,
            _ => {}
        }
        if self.event_type == Some("thinking")
            || self.block_type == Some("thinking")
            || self.reasoning
        {
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

/// True when a part's metadata gives it a meaning beyond its content.
pub(super) fn has_role(part: &Object) -> bool {
    metadata(part).is_some_and(adk::is_adk) || part_hints(metadata(part)).role() != PartRole::Plain
}

/// Reads one part into what it means; most parts mean one block, a cited
/// or trajectory part two or three.
pub(super) fn read_part<'a>(part: &'a Object, f: &mut impl FnMut(PartMeaning, Block<'a>)) {
    let part_metadata = metadata(part);
    let body = part_body_of(part);
    if let Some(meta) = part_metadata.filter(|m| adk::is_adk(m))
        && let Some(block) = adk::block(meta, &body)
    {
        return f(PartMeaning::Other, block);
    }
    let hints = part_hints(part_metadata);
    match hints.role() {
        PartRole::Thinking => {
            let thought = match &body {
                PartBody::Text(t) => t,
                PartBody::Data(d) => d.get("text").and_then(Value::as_str).unwrap_or(""),
                _ => "",
            };
            f(
                PartMeaning::Other,
                Block::Thinking(Thinking {
                    text: thought,
                    block_id: hints.block_id,
                    signature: hints.signature,
                    thinking_type: hints.thinking_type,
                    completed: false,
                }),
            );
        }
        PartRole::ThinkingComplete => {
            let data = match &body {
                PartBody::Data(d) => d.as_object(),
                _ => None,
            };
            f(
                PartMeaning::Other,
                Block::ThinkingComplete {
                    block_id: hints
                        .block_id
                        .or_else(|| data.and_then(|d| text(d, "thinking_id"))),
                    signature: hints
                        .signature
                        .or_else(|| data.and_then(|d| text(d, "signature"))),
                },
            );
        }
        PartRole::ToolCall => f(
            PartMeaning::Other,
            Block::ToolCall(tool_call(&hints, &body)),
        ),
        PartRole::ToolResult => f(
            PartMeaning::Other,
            Block::ToolResult(hinted_result(
                hints.tool_call_id,
                hints.tool_name,
                hints.is_error,
                hints.is_final,
                &body,
            )),
        ),
        PartRole::ErrorNotice => f(
            PartMeaning::Other,
            Block::ErrorNotice {
                message: match body {
                    PartBody::Text(t) => Some(t),
                    _ => None,
                },
                code: hints.error_code,
            },
        ),
        PartRole::Citation => {
            plain(part, body, part_metadata, PartMeaning::Other, f);
            if let Some(meta) = part_metadata {
                f(
                    PartMeaning::Other,
                    Block::Citation(Box::new(citation(meta))),
                );
            }
        }
        PartRole::Trajectory => {
            if let Some(meta) = part_metadata {
                acp_trajectory(meta, f);
            }
            plain(part, body, None, PartMeaning::Other, f);
        }
        PartRole::Plain => {
            if let PartBody::Data(data) = &body {
                if shape::read(part, part_metadata, data, &mut |block| {
                    f(PartMeaning::Other, block)
                }) {
                    return;
                }
                if let Some(data) = data.as_object()
                    && bridges::read(data, &mut |block| f(PartMeaning::Other, block))
                {
                    return;
                }
                if a2ui::read(part, part_metadata, data, &mut |block| {
                    f(PartMeaning::Other, block)
                }) {
                    return;
                }
            }
            plain(part, body, part_metadata, PartMeaning::PlainText, f);
        }
    }
}

/// A part's content; `text_meaning` says whether its text is all the part
/// means (a cited part's is not).
fn plain<'a>(
    part: &'a Object,
    body: PartBody<'a>,
    metadata: Option<&'a Object>,
    text_meaning: PartMeaning,
    f: &mut impl FnMut(PartMeaning, Block<'a>),
) {
    match body {
        PartBody::Text(t) => f(text_meaning, Block::Text(t)),
        PartBody::Empty => {}
        PartBody::File(file) => f(PartMeaning::Other, Block::File { file, metadata }),
        PartBody::Data(data) => f(
            PartMeaning::Other,
            Block::Data {
                data,
                media_type: text(part, "mediaType"),
                metadata,
            },
        ),
    }
}

fn tool_call<'a>(hints: &PartHints<'a>, body: &PartBody<'a>) -> ToolCall<'a> {
    let payload = match body {
        PartBody::Data(data) => tool_payload(data),
        _ => None,
    };
    ToolCall {
        id: hints
            .tool_call_id
            .or_else(|| payload.and_then(tool::call_id)),
        name: hints
            .tool_name
            .or_else(|| payload.and_then(tool::name))
            .unwrap_or(UNKNOWN_TOOL),
        arguments: payload.map_or_else(|| Value::Object(Object::new()), tool::arguments),
        result: None,
    }
}

/// ACP trajectory metadata: a tool execution (`tool_name`, `tool_input`,
/// `tool_output`) and/or a reasoning step (`message`).
fn acp_trajectory<'a>(meta: &'a Object, f: &mut impl FnMut(PartMeaning, Block<'a>)) {
    if let Some(tool_name) = text(meta, "tool_name") {
        let arguments = meta
            .get("tool_input")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| Value::Object(Object::new()));
        let result = meta
            .get("tool_output")
            .filter(|v| !v.is_null())
            .map(|output| match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        f(
            PartMeaning::Other,
            Block::ToolCall(ToolCall {
                id: None,
                name: tool_name,
                arguments,
                result,
            }),
        );
    }
    if let Some(thought) = text(meta, "message") {
        f(PartMeaning::Other, Block::ReasoningStep(thought));
    }
}

/// What a message's metadata says besides its parts.
pub(crate) enum MessageNote<'a> {
    Citation(Citation),
    Trajectory(Trajectory),
    /// A tool call the agent asks the user to approve (Agent Stack's
    /// approval and tool-call extensions): shown, never answered here.
    ToolCall(ToolCall<'a>),
    /// An error the agent shows (Agent Stack's error extension).
    Error {
        message: Option<&'a str>,
        code: Option<&'a str>,
    },
    /// The keys with no meaning of their own, verbatim.
    Rest(Object),
}

/// The path of an Agent Stack extension URI (`/ui/citation/v1`, …).
fn agentstack_extension(key: &str) -> Option<&str> {
    AGENTSTACK_HOSTS
        .iter()
        .find_map(|host| key.strip_prefix(host))
}

/// Reads message metadata: Agent Stack's citations, trajectory, approval
/// and tool-call requests and errors in the order they come, then the rest.
pub(crate) fn message_notes<'a>(meta: &'a Object, mut f: impl FnMut(MessageNote<'a>)) {
    let mut rest = Object::new();
    for (key, value) in meta {
        let object = value.as_object();
        match (agentstack_extension(key), object) {
            (Some("/ui/citation/v1"), _) => {
                for entry in citation_entries(value) {
                    f(MessageNote::Citation(citation(entry)));
                }
            }
            (Some("/ui/trajectory/v1"), Some(step)) => {
                f(MessageNote::Trajectory(trajectory(step)));
            }
            (Some("/interactions/approval/v1" | "/tools/call/v1"), Some(request)) => {
                f(MessageNote::ToolCall(ToolCall {
                    id: None,
                    name: text(request, "name").unwrap_or(UNKNOWN_TOOL),
                    arguments: request
                        .get("input")
                        .filter(|v| !v.is_null())
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Object::new())),
                    result: None,
                }));
            }
            (Some("/ui/error/v1"), Some(report)) => {
                let error = report.get("error").and_then(Value::as_object);
                f(MessageNote::Error {
                    message: error.and_then(|e| text(e, "message").or_else(|| text(e, "title"))),
                    code: error.and_then(|e| text(e, "title")),
                });
            }
            _ => {
                rest.insert(key.clone(), value.clone());
            }
        }
    }
    if !rest.is_empty() {
        f(MessageNote::Rest(rest));
    }
}

/// The client commands in artifact metadata, if any.
pub(crate) fn commands(meta: Option<&Object>) -> Option<&Value> {
    meta?.get(COMMANDS).filter(|c| !is_empty_value(c))
}

/// Artifact metadata as `a2a.artifact` describes it: without `commands`,
/// which has an event of its own.
pub(crate) fn without_commands(meta: &Object) -> impl Iterator<Item = (&String, &Value)> {
    meta.iter().filter(|(k, _)| k.as_str() != COMMANDS)
}

/// Artifact-update event metadata less what Hector v2 repeats on every
/// event and its parts already say (announcing it would be one CUSTOM per
/// chunk); `None` when nothing is left.
pub(super) fn announced_event_metadata(meta: &Object) -> Option<Object> {
    const PER_EVENT: [&str; 5] = [
        "event_id",
        "partial",
        "thinking",
        "tool_calls",
        "tool_results",
    ];
    let meta: Object = meta
        .iter()
        .filter(|(k, _)| !PER_EVENT.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!meta.is_empty()).then_some(meta)
}

/// Null, `""`, `[]` and `{}` say nothing.
pub(crate) fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// A citation in AG-UI's casing, from ACP part metadata or one entry of the
/// Agent Stack extension; fields that are absent or null are left out (of
/// two spellings, the camelCase one wins).
fn citation(source: &Object) -> Citation {
    let field = |keys: &[&str]| either_spelling(source, keys);
    Citation {
        url: field(&["url"]),
        title: field(&["title"]),
        description: field(&["description"]),
        start_index: field(&["start_index", "startIndex"]),
        end_index: field(&["end_index", "endIndex"]),
        message_id: None,
    }
}

/// Agent Stack trajectory `{title, content, group_id}` in AG-UI's casing.
fn trajectory(source: &Object) -> Trajectory {
    let field = |keys: &[&str]| either_spelling(source, keys);
    Trajectory {
        title: field(&["title"]),
        content: field(&["content"]),
        group_id: field(&["group_id", "groupId"]),
    }
}

/// The first non-null value among `keys`, the last spelling winning.
fn either_spelling(source: &Object, keys: &[&str]) -> Option<Value> {
    keys.iter()
        .rev()
        .find_map(|k| source.get(*k).filter(|v| !v.is_null()))
        .cloned()
}

/// The entries of an Agent Stack citation value: `{"citations":[…]}`, or
/// the single flat object used before August 2025.
fn citation_entries(value: &Value) -> Vec<&Object> {
    match value.as_object() {
        Some(obj) => match obj.get("citations").and_then(Value::as_array) {
            Some(list) => list.iter().filter_map(Value::as_object).collect(),
            None => vec![obj],
        },
        None => Vec::new(),
    }
}
