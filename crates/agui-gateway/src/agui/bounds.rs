//! What one `RunAgentInput` may hold, checked before anything of it is
//! kept, sent or echoed: every identifier at most [`MAX_ID_BYTES`] (the
//! converter's bound on an agent's ids), and every list the client fills
//! at most [`MAX_ENTRIES`] long.
//!
//! `max_request_bytes` bounds the body, but not what one small value
//! becomes: a thread id is echoed in every run's events, kept in the
//! thread book (and in Redis), sent as the A2A `contextId` and listed; a
//! run id is kept per thread and sent in the JSON-RPC id; a tool name is
//! compared on every call the agent makes.

use a2a_agui::MAX_ID_BYTES;
use serde_json::Value;

use super::InputError;

/// The most entries of one list (messages, tools, context, `resume`, the
/// tool calls of all messages). Clients send a thread's whole history with
/// every run, so this is far past any conversation a person has (a thread
/// past it could never be continued): within `max_request_bytes` it only
/// refuses floods of near-empty entries, each of which costs a parsed
/// value and a check however small it is.
pub const MAX_ENTRIES: usize = 65_536;

/// An identifier the client sent is longer than [`MAX_ID_BYTES`]: `field`
/// says which (`threadId`, `messages[3].id`, …).
#[derive(Debug, thiserror::Error)]
#[error("{field} is longer than {MAX_ID_BYTES} bytes")]
pub struct IdTooLong {
    pub field: String,
}

/// `id` when it is at most [`MAX_ID_BYTES`] long (the converter's bound on
/// an agent's ids), else `IdTooLong` naming `field`. Every identifier a
/// client sends is held to it before it is kept, sent or listed: each is
/// echoed in events, remembered per thread, sent upstream.
pub fn bounded_id<'a>(field: &str, id: &'a str) -> Result<&'a str, IdTooLong> {
    if id.len() > MAX_ID_BYTES {
        return Err(IdTooLong {
            field: field.to_owned(),
        });
    }
    Ok(id)
}

/// Checks the input's identifiers and lists; the first one out of bounds
/// is the error (`ID_TOO_LONG` names the field, `INVALID_RUN_INPUT` the
/// list).
pub fn check(input: &Value) -> Result<(), InputError> {
    for key in ["threadId", "runId", "parentRunId"] {
        if let Some(id) = input.get(key).and_then(Value::as_str) {
            bounded_id(key, id)?;
        }
    }
    let messages = list(input, "messages")?;
    let mut calls = 0usize;
    for (at, message) in messages.iter().enumerate() {
        ids(message, &["id", "toolCallId"], || format!("messages[{at}]"))?;
        let Some(list) = message.get("toolCalls").and_then(Value::as_array) else {
            continue;
        };
        calls += list.len();
        if calls > MAX_ENTRIES {
            return Err(too_many("the messages' toolCalls"));
        }
        for (n, call) in list.iter().enumerate() {
            ids(call, &["id"], || format!("messages[{at}].toolCalls[{n}]"))?;
            if let Some(function) = call.get("function") {
                ids(function, &["name"], || {
                    format!("messages[{at}].toolCalls[{n}].function")
                })?;
            }
        }
    }
    for (at, tool) in list(input, "tools")?.iter().enumerate() {
        ids(tool, &["name"], || format!("tools[{at}]"))?;
    }
    list(input, "context")?;
    for (at, entry) in list(input, "resume")?.iter().enumerate() {
        ids(entry, &["interruptId"], || format!("resume[{at}]"))?;
    }
    Ok(())
}

/// The array at `key` (none when absent or of another type: the parser
/// says what is wrong with those), refused past [`MAX_ENTRIES`].
fn list<'a>(input: &'a Value, key: &str) -> Result<&'a [Value], InputError> {
    let items = input
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if items.len() > MAX_ENTRIES {
        return Err(too_many(key));
    }
    Ok(items)
}

/// The string fields `keys` of `value`, each within the bound; `at` names
/// the value in an error.
fn ids(value: &Value, keys: &[&str], at: impl Fn() -> String) -> Result<(), InputError> {
    for key in keys {
        if let Some(id) = value.get(*key).and_then(Value::as_str)
            && id.len() > MAX_ID_BYTES
        {
            let field = format!("{}.{key}", at());
            return Err(IdTooLong { field }.into());
        }
    }
    Ok(())
}

fn too_many(what: &str) -> InputError {
    InputError::Invalid(format!("{what} holds more than {MAX_ENTRIES} entries"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_agui::ErrorCode;
    use serde_json::json;

    fn refused(input: Value) -> (ErrorCode, String) {
        let err = check(&input).unwrap_err();
        (err.code(), err.to_string())
    }

    #[test]
    fn every_identifier_is_bounded_and_named() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let fits = "x".repeat(MAX_ID_BYTES);
        let base = json!({ "threadId": fits, "runId": "r", "messages": [
            { "id": "m", "role": "assistant", "toolCalls": [
                { "id": "c", "type": "function", "function": { "name": "f", "arguments": "{}" } }] },
            { "id": "t", "role": "tool", "toolCallId": "c", "content": "ok" }],
            "tools": [{ "name": "f" }], "resume": [{ "interruptId": "i", "status": "resolved" }] });
        assert!(check(&base).is_ok());
        for (pointer, field) in [
            ("/threadId", "threadId"),
            ("/runId", "runId"),
            ("/messages/0/id", "messages[0].id"),
            ("/messages/0/toolCalls/0/id", "messages[0].toolCalls[0].id"),
            (
                "/messages/0/toolCalls/0/function/name",
                "messages[0].toolCalls[0].function.name",
            ),
            ("/messages/1/toolCallId", "messages[1].toolCallId"),
            ("/tools/0/name", "tools[0].name"),
            ("/resume/0/interruptId", "resume[0].interruptId"),
        ] {
            let mut input = base.clone();
            *input.pointer_mut(pointer).unwrap() = json!(long);
            let (code, message) = refused(input);
            assert_eq!(code, ErrorCode::IdTooLong, "{field}");
            assert!(
                message.starts_with(&format!("{field} is longer")),
                "{message}"
            );
        }
    }

    #[test]
    fn lists_are_bounded() {
        let many = |entry: Value| vec![entry; MAX_ENTRIES + 1];
        for (key, entry) in [
            ("messages", json!({ "role": "user", "content": "" })),
            ("tools", json!({ "name": "f" })),
            ("context", json!({ "description": "", "value": "" })),
            (
                "resume",
                json!({ "interruptId": "i", "status": "resolved" }),
            ),
        ] {
            let mut input = json!({ "threadId": "t", "runId": "r", "messages": [] });
            input[key] = json!(many(entry));
            assert_eq!(refused(input).0, ErrorCode::InvalidRunInput, "{key}");
        }
        let call = json!({ "id": "c", "function": { "name": "f" } });
        let message = json!({ "role": "assistant", "toolCalls": vec![call; MAX_ENTRIES / 2 + 1] });
        let input =
            json!({ "threadId": "t", "runId": "r", "messages": [message.clone(), message] });
        assert_eq!(refused(input).0, ErrorCode::InvalidRunInput);
    }
}
