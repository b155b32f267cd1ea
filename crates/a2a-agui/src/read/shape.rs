//! What a data part (or a text part's metadata) declares itself to be,
//! read from its shape instead of from which framework sent it.
//!
//! Precedence, first match wins (part-metadata marks that name a
//! framework's own vocabulary, ADK's `adk_*` and Hector's hints, are read
//! before this, in `hints`):
//! 1. the data's own `type`, then its `kind`, in any spelling
//!    (`tool-call`, `tool_call`, `toolCall`, `function_call`, `tool_use`;
//!    `tool-result`, `function_response`, `tool_output`, …; `reasoning`,
//!    `thinking`, `thought`);
//! 2. the part's media type (on the part or in its metadata: `mediaType`,
//!    `mimeType`): one naming a tool result, a tool call or a function, or
//!    reasoning;
//! 3. the part metadata's `type` / `kind`, spelled as in 1;
//! 4. an OpenAI-shaped call: a `function` object with `name` and
//!    `arguments`.
//!
//! A declaration in so many words (1) is a call even without a name
//! (`unknown_tool`); a weaker one (2, 3) needs a name, else the part
//! stays data. A result is never read as a call. What the fields are
//! called is `tool`'s business.

use serde_json::Value;

use super::json::{Object, flag, id, object, text};
use super::{Block, Thinking, ToolCall, part, tool};

/// What a part declares itself to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Declared {
    ToolCall,
    ToolResult,
    Reasoning,
}

/// How strongly: by the data's own type, or only by a media type or
/// metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    InTheData,
    Around,
}

const CALL_WORDS: [&str; 4] = ["toolcall", "functioncall", "tooluse", "toolinvocation"];
const RESULT_WORDS: [&str; 8] = [
    "toolresult",
    "functionresult",
    "functionresponse",
    "toolresponse",
    "tooloutput",
    "functioncalloutput",
    "toolcallresult",
    "tooluseresult",
];
const REASONING_WORDS: [&str; 4] = ["reasoning", "thinking", "thought", "thoughts"];
/// Media-type words, results first (`function-response` names a function).
const MEDIA_RESULT: [&str; 5] = [
    "toolresult",
    "functionresult",
    "functionresponse",
    "tooloutput",
    "toolresponse",
];
const MEDIA_CALL: [&str; 4] = ["toolcall", "functioncall", "tooluse", "function"];
/// Longer values are no declaration (and are not folded).
const MAX_WORD: usize = 64;

/// `value` with case and every character that is not a letter or digit
/// ignored: `Tool-Call`, `tool_call` and `toolCall` fold alike.
fn folded(value: &str) -> impl Iterator<Item = u8> + '_ {
    value
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|b| b.to_ascii_lowercase())
}

fn is_word(value: &str, words: &[&str]) -> bool {
    value.len() <= MAX_WORD && words.iter().any(|w| folded(value).eq(w.bytes()))
}

/// What a `type` / `kind` value declares, in any spelling.
pub(super) fn declared_by_word(value: &str) -> Option<Declared> {
    if is_word(value, &CALL_WORDS) {
        Some(Declared::ToolCall)
    } else if is_word(value, &RESULT_WORDS) {
        Some(Declared::ToolResult)
    } else if is_word(value, &REASONING_WORDS) {
        Some(Declared::Reasoning)
    } else {
        None
    }
}

/// What a media type declares (`application/vnd.acme.tool-call+json`).
fn declared_by_media_type(media_type: &str) -> Option<Declared> {
    if media_type.len() > 2 * MAX_WORD {
        return None;
    }
    let folded: Vec<u8> = folded(media_type).collect();
    let has = |words: &[&str]| {
        words
            .iter()
            .any(|w| folded.windows(w.len()).any(|win| win == w.as_bytes()))
    };
    if has(&MEDIA_RESULT) {
        Some(Declared::ToolResult)
    } else if has(&MEDIA_CALL) {
        Some(Declared::ToolCall)
    } else if has(&REASONING_WORDS) {
        Some(Declared::Reasoning)
    } else {
        None
    }
}

/// A metadata key that states a type: `type`, `kind`, or one vendor
/// word before `_type` (`adk_type`, `kagent_type`, `event_type`; not
/// `model_type`'s kind of setting with more words: `llm_model_type`).
fn is_type_key(key: &str) -> bool {
    key == "type" || key == "kind" || vendor_prefixed(key, "_type")
}

/// `key` is one vendor word (letters and digits) and then `suffix`.
fn vendor_prefixed(key: &str, suffix: &str) -> bool {
    key.strip_suffix(suffix).is_some_and(|vendor| {
        !vendor.is_empty() && vendor.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// A metadata key that flags reasoning: `thought`, `thinking`,
/// `reasoning`, or one vendor word before `_thought` (`adk_thought`,
/// `kagent_thought`). Settings such as `extended_thinking` or
/// `show_reasoning` are not flags.
fn is_reasoning_flag(key: &str) -> bool {
    matches!(key, "thought" | "thinking" | "reasoning") || vendor_prefixed(key, "_thought")
}

/// A part-metadata key that may give a text part another meaning: the
/// fast reader leaves such parts to the lenient one. Broader than what
/// is read (any `_type`, any reasoning word at the end), which costs
/// speed only, never agreement.
pub(super) fn is_hint_key(key: &str) -> bool {
    ["type", "kind", "thought", "thinking", "reasoning"]
        .iter()
        .any(|word| key.ends_with(word))
}

/// What the metadata's type keys declare, the first that declares.
fn declared_in_metadata(meta: &Object) -> Option<Declared> {
    meta.iter()
        .filter(|(k, _)| is_type_key(k))
        .find_map(|(_, v)| v.as_str().and_then(declared_by_word))
}

/// What a text part's metadata declares: reasoning by a flag (`thought`,
/// `thinking`, `reasoning`, a vendor's `<vendor>_thought`: true) or by
/// its `type` / `kind`.
pub(super) fn text_is_reasoning(meta: &Object) -> bool {
    meta.iter()
        .any(|(k, _)| is_reasoning_flag(k) && flag(meta, k) == Some(true))
        || ["type", "kind"]
            .iter()
            .any(|k| text(meta, k).and_then(declared_by_word) == Some(Declared::Reasoning))
}

/// Lifecycle words an event type may end with (`tool_call_started`).
const LIFECYCLE: [&str; 9] = [
    "started",
    "start",
    "begin",
    "delta",
    "completed",
    "complete",
    "done",
    "end",
    "finished",
];

/// What an event's metadata declares by its event type (`type`, `kind`,
/// `event_type` or a vendor's `<vendor>_event_type`), a lifecycle word
/// after it allowed: `tool_call_started` declares a tool call.
fn declared_by_event(meta: &Object) -> Option<Declared> {
    let names_event_type = |k: &str| k == "type" || k == "kind" || k.ends_with("event_type");
    meta.iter()
        .filter(|(k, _)| names_event_type(k))
        .filter_map(|(_, v)| v.as_str())
        .filter(|value| value.len() <= 2 * MAX_WORD)
        .find_map(|value| {
            declared_by_word(value).or_else(|| {
                let folded: String = folded(value).map(char::from).collect();
                LIFECYCLE
                    .iter()
                    .find_map(|end| folded.strip_suffix(end))
                    .and_then(declared_by_word)
            })
        })
}

/// Tool calls and results that an event's own metadata carries:
/// - one call announced by the event type (Agno's status updates:
///   `agno_event_type: "tool_call_started"`, `tool_name`, `tool_call_id`,
///   `tool_args`);
/// - lists of declared calls and results under a key naming them
///   (`toolCalls`, `tool_calls`, `toolResults`, `tool_results`), at the
///   top or one object down (Mastra's `execution.toolCalls`), each entry's
///   fields flat or under `payload`.
///
/// A call needs a name here; an entry that declares nothing is skipped.
pub(crate) fn event_tools<'a>(meta: &'a Object, f: &mut impl FnMut(Block<'a>)) {
    if meta.len() > 64 {
        return;
    }
    if declared_by_event(meta) == Some(Declared::ToolCall)
        && let Some(call) = tool::call(meta, false)
    {
        f(Block::ToolCall(call));
    }
    let lists = meta.iter().chain(
        meta.values()
            .filter_map(Value::as_object)
            .filter(|inner| inner.len() <= 64)
            .flat_map(|inner| inner.iter()),
    );
    for (key, value) in lists {
        let Some(entries) = value.as_array() else {
            continue;
        };
        if !is_word(key, &["toolcalls", "toolresults", "functioncalls"]) {
            continue;
        }
        for entry in entries.iter().filter_map(Value::as_object).take(MAX_LISTED) {
            let declared = ["type", "kind"]
                .iter()
                .find_map(|k| text(entry, k).and_then(declared_by_word));
            let fields = unwrapped(entry);
            match declared {
                Some(Declared::ToolCall) => {
                    if let Some(call) = tool::call(fields, false) {
                        f(Block::ToolCall(call));
                    }
                }
                Some(Declared::ToolResult) => f(Block::ToolResult(tool::result(fields))),
                _ => {}
            }
        }
    }
}

/// Entries listed in one event's metadata that are read.
const MAX_LISTED: usize = 256;

/// A call's or result's fields: flat, or under `payload` when the entry
/// itself names neither a tool nor a call.
fn unwrapped(entry: &Object) -> &Object {
    match object(entry, "payload") {
        Some(inner) if tool::name(entry).is_none() && tool::call_id(entry).is_none() => inner,
        _ => entry,
    }
}

/// Calls `f` with what a data part declares itself to be; false when it
/// declares nothing this module reads (or too little: a weakly declared
/// call without a name).
pub(super) fn read<'a>(
    part: &'a Object,
    meta: Option<&'a Object>,
    data: &'a Value,
    f: &mut impl FnMut(Block<'a>),
) -> bool {
    let Some(fields) = data.as_object() else {
        return false;
    };
    let in_data = ["type", "kind"]
        .iter()
        .find_map(|k| text(fields, k).and_then(declared_by_word));
    let around = || {
        part::media_types(part, meta)
            .find_map(declared_by_media_type)
            .or_else(|| meta.and_then(declared_in_metadata))
    };
    let (declared, said) = match in_data {
        Some(declared) => (declared, Said::InTheData),
        None => match around() {
            Some(declared) => (declared, Said::Around),
            None => return openai_call(fields, f),
        },
    };
    match declared {
        Declared::ToolCall => {
            let Some(call) = tool::tool_payload(data)
                .and_then(|payload| tool::call(payload, said == Said::InTheData))
            else {
                return false;
            };
            f(Block::ToolCall(call));
        }
        Declared::ToolResult => f(Block::ToolResult(tool::result(fields))),
        Declared::Reasoning => match thought(fields) {
            Some(thinking) => f(Block::Thinking(thinking)),
            // No text to show (a summary in another shape): it stays data.
            None => return false,
        },
    }
    true
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`: a call
/// in the chat-completions shape. A function with `parameters` and no
/// `arguments` is a tool's declaration, not a call.
fn openai_call<'a>(fields: &'a Object, f: &mut impl FnMut(Block<'a>)) -> bool {
    let Some(function) = object(fields, "function") else {
        return false;
    };
    if !function.contains_key("arguments") || tool::name(fields).is_some() {
        return false;
    }
    let Some(name) = text(function, "name").filter(|n| !n.is_empty()) else {
        return false;
    };
    f(Block::ToolCall(ToolCall {
        id: tool::call_id(fields),
        name,
        arguments: tool::arguments(fields),
        result: None,
    }));
    true
}

/// A thought in a data part: its text under `text`, `content`,
/// `reasoning`, `thinking` or `thought`; Hector v2's block id, status
/// (`completed`: the text is the whole thought again) and signature.
fn thought(fields: &Object) -> Option<Thinking<'_>> {
    const TEXT_KEYS: [&str; 5] = ["text", "content", "reasoning", "thinking", "thought"];
    Some(Thinking {
        text: TEXT_KEYS.iter().find_map(|k| text(fields, k))?,
        block_id: id(fields, "id"),
        signature: text(fields, "signature").filter(|s| !s.is_empty()),
        thinking_type: text(fields, "thinking_type"),
        completed: text(fields, "status") == Some("completed"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_fold_alike() {
        for word in [
            "tool-call",
            "tool_call",
            "toolCall",
            "Tool Call",
            "function_call",
            "tool_use",
        ] {
            assert_eq!(declared_by_word(word), Some(Declared::ToolCall), "{word}");
        }
        for word in [
            "tool-result",
            "function_response",
            "toolOutput",
            "function_call_output",
        ] {
            assert_eq!(declared_by_word(word), Some(Declared::ToolResult), "{word}");
        }
        for word in ["reasoning", "THINKING", "thought"] {
            assert_eq!(declared_by_word(word), Some(Declared::Reasoning), "{word}");
        }
        for word in ["tool", "call", "function", "text", "data", ""] {
            assert_eq!(declared_by_word(word), None, "{word}");
        }
    }

    #[test]
    fn media_types_name_results_before_functions() {
        let by = declared_by_media_type;
        assert_eq!(
            by("application/vnd.acme.tool-call+json"),
            Some(Declared::ToolCall)
        );
        assert_eq!(
            by("application/vnd.acme.function+json"),
            Some(Declared::ToolCall)
        );
        assert_eq!(
            by("application/vnd.acme.function-response+json"),
            Some(Declared::ToolResult)
        );
        assert_eq!(by("application/x-tool_result"), Some(Declared::ToolResult));
        assert_eq!(by("text/x-reasoning"), Some(Declared::Reasoning));
        assert_eq!(by("application/json"), None);
        assert_eq!(by("application/json+a2ui"), None);
    }
}
