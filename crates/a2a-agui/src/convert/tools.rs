//! Tool calls and their results. A call is announced once (START, ARGS,
//! END at once: A2A delivers arguments whole); its result follows as
//! `TOOL_CALL_RESULT`, gathered first when it comes in pieces.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::{MAX_PENDING_TOOL_OUTPUT, MAX_TRACKED};
use crate::digest::{TextDigest, WordHashBuilder};
use crate::event::custom::{Custom, ToolError};
use crate::event::{Event, Id, ToolRole};
use crate::ids::{IdKind, IdSource};
use crate::read::ToolResult;

/// A call to announce.
pub(super) struct NewCall<'a> {
    /// The agent's id for it, if any.
    pub(super) id: Option<&'a str>,
    pub(super) name: &'a str,
    pub(super) arguments: &'a Value,
    /// The text message the call follows, if any: its parent. (Without
    /// one there is none: a parent must name a message the run sent.)
    pub(super) text: Option<Id>,
    /// False for a client's tool (the client answers) and a call that
    /// reports its result itself.
    pub(super) awaits_result: bool,
}

/// A call awaiting its result.
#[derive(Debug)]
struct OpenCall {
    /// A hash of the tool's name.
    name: u64,
    key: String,
    /// The agent gave the call no id: a result without one is more
    /// likely its answer than a call's that has an id of its own.
    minted: bool,
}

/// How many unanswered calls a result without a call id may answer.
const MAX_OPEN_CALLS: usize = 64;

#[derive(Debug)]
struct ToolState {
    id: Id,
    pending: String,
    pending_error: Option<String>,
    /// The last whole result delivered: the same result sent again (a
    /// closing message repeating the run's parts) adds nothing.
    delivered: Option<TextDigest>,
}

#[derive(Debug, Default)]
pub(super) struct Tools {
    calls: HashMap<String, ToolState, WordHashBuilder>,
    /// Calls announced and awaiting a result, oldest first. At most
    /// `MAX_OPEN_CALLS`; an older one is no longer answered by name (its
    /// result still finds it by id).
    open_calls: VecDeque<OpenCall>,
    /// The last results delivered, (hash of the tool's name, content): a
    /// result without a call id sent again once its call is answered adds
    /// nothing. At most `MAX_OPEN_CALLS`.
    answered: VecDeque<(u64, TextDigest)>,
    /// Calls of client-declared tools, waiting for the run to end.
    pub(super) client_calls: Vec<Id>,
    /// Output gathered over every call, within `MAX_PENDING_TOOL_OUTPUT`:
    /// the bound is the run's, not each call's.
    pending_bytes: usize,
}

impl Tools {
    /// A call with this agent id was announced already.
    pub(super) fn knows(&self, id: &str) -> bool {
        self.calls.contains_key(id)
    }

    /// The call a result that names no call answers: the oldest open
    /// call of the result's tool's name (of any name when it names none),
    /// a call the agent gave no id first.
    pub(super) fn open_call(&self, name: Option<&str>) -> Option<String> {
        let name = name.map(name_hash);
        let fits = |call: &&OpenCall| name.is_none_or(|n| n == call.name);
        let mut fitting = self.open_calls.iter().filter(fits);
        let first = fitting.clone().find(|call| call.minted);
        first
            .or_else(|| fitting.next())
            .map(|call| call.key.clone())
    }

    /// The whole result last delivered for the call `key`, again.
    pub(super) fn repeats(&self, key: &str, result: &ToolResult<'_>) -> bool {
        self.calls.get(key).is_some_and(|tool| {
            result.is_final
                && tool.pending.is_empty()
                && tool.delivered == Some(TextDigest::of(&result.content))
        })
    }

    /// A result without a call id that repeats one delivered for a call
    /// of the same tool, or of any tool when it names none (a closing
    /// message resending the run's parts).
    pub(super) fn answered_before(&self, name: Option<&str>, content: &str) -> bool {
        let name = name.map(name_hash);
        let content = TextDigest::of(content);
        self.answered
            .iter()
            .any(|(answered, digest)| *digest == content && name.is_none_or(|n| n == *answered))
    }

    /// Announces a call; the caller has closed the open block.
    pub(super) fn start(
        &mut self,
        ids: &mut impl IdSource,
        call: NewCall<'_>,
        out: &mut Vec<Event>,
    ) -> Id {
        let NewCall {
            id,
            name,
            arguments,
            text,
            awaits_result,
        } = call;
        let minted = id.is_none_or(str::is_empty);
        let (key, shown) = match id {
            Some(id) if !id.is_empty() => (id.to_owned(), ids.tool_call_id(id)),
            _ => {
                let minted = ids.next_id(IdKind::ToolCall);
                (minted.clone(), minted)
            }
        };
        let tool_call_id: Id = shown.into();
        out.push(Event::ToolCallStart {
            tool_call_id: tool_call_id.clone(),
            tool_call_name: name.to_owned(),
            parent_message_id: text,
        });
        out.push(Event::ToolCallArgs {
            tool_call_id: tool_call_id.clone(),
            delta: arguments_json(arguments),
        });
        out.push(Event::ToolCallEnd {
            tool_call_id: tool_call_id.clone(),
        });
        if awaits_result {
            if self.open_calls.len() == MAX_OPEN_CALLS {
                self.open_calls.pop_front();
            }
            self.open_calls.push_back(OpenCall {
                name: name_hash(name),
                key: key.clone(),
                minted,
            });
        }
        if self.calls.len() < MAX_TRACKED {
            self.calls.insert(
                key,
                ToolState {
                    id: tool_call_id.clone(),
                    pending: String::new(),
                    pending_error: None,
                    delivered: None,
                },
            );
        }
        tool_call_id
    }

    /// A result (or a piece of one) for the call `key`, which is known or
    /// was just announced.
    pub(super) fn result(
        &mut self,
        ids: &mut impl IdSource,
        key: String,
        result: ToolResult<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some(at) = self.open_calls.iter().position(|call| call.key == key)
            && let Some(OpenCall { name, .. }) = self.open_calls.remove(at)
        {
            if self.answered.len() == MAX_OPEN_CALLS {
                self.answered.pop_front();
            }
            self.answered
                .push_back((name, TextDigest::of(&result.content)));
        }
        // A client tool the agent answered itself: the client need not run it.
        let shown = self.calls.get(&key).map(|t| t.id.clone());
        self.client_calls
            .retain(|call| Some(call) != shown.as_ref() && **call != *key);
        if !self.calls.contains_key(&key) {
            // Tracking is full: deliver at once rather than lose the output.
            emit_result(ids, key.into(), result.content, result.error, out);
            return;
        }
        if self.repeats(&key, &result) {
            return;
        }
        // Checked before the piece is added: what is gathered so far goes
        // out first when the piece would take the run past the bound.
        if self.pending_bytes + result.content.len() > MAX_PENDING_TOOL_OUTPUT {
            self.flush(ids, out);
        }
        let Some(tool) = self.calls.get_mut(&key) else {
            return;
        };
        tool.pending.push_str(&result.content);
        self.pending_bytes += result.content.len();
        if result.error.is_some() {
            tool.pending_error = result.error;
        }
        if result.is_final || tool.pending.len() >= MAX_PENDING_TOOL_OUTPUT {
            self.pending_bytes -= tool.pending.len();
            let content = std::mem::take(&mut tool.pending);
            tool.delivered = Some(TextDigest::of(&content));
            let error = tool.pending_error.take();
            let tool_call_id = tool.id.clone();
            emit_result(ids, tool_call_id, content, error, out);
        }
    }

    /// Incremental results whose final piece never came are delivered as
    /// they are when the run closes.
    pub(super) fn flush(&mut self, ids: &mut impl IdSource, out: &mut Vec<Event>) {
        self.pending_bytes = 0;
        let mut pending: Vec<(Id, String, Option<String>)> = self
            .calls
            .values_mut()
            .filter(|t| !t.pending.is_empty() || t.pending_error.is_some())
            .map(|t| {
                (
                    t.id.clone(),
                    std::mem::take(&mut t.pending),
                    t.pending_error.take(),
                )
            })
            .collect();
        // HashMap order is arbitrary; output must be reproducible.
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, content, error) in pending {
            emit_result(ids, id, content, error, out);
        }
    }
}

pub(super) fn emit_result(
    ids: &mut impl IdSource,
    tool_call_id: Id,
    content: String,
    error: Option<String>,
    out: &mut Vec<Event>,
) {
    if let Some(error) = &error {
        out.push(Event::Custom(Custom::ToolError(ToolError {
            tool_call_id: tool_call_id.to_string(),
            error: error.clone(),
        })));
    }
    // AG-UI's tool message has no error flag in the event: an empty
    // result of a failed call carries the error text instead.
    let content = match error {
        Some(error) if content.is_empty() => error,
        _ => content,
    };
    let message_id: Id = ids.next_id(IdKind::ToolResult).into();
    out.push(Event::ToolCallResult {
        message_id,
        tool_call_id,
        content,
        role: ToolRole::Tool,
    });
}

/// A tool's name as remembered: its hash (names come from the agent and
/// may be long; a collision at worst answers the wrong open call).
fn name_hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    WordHashBuilder::default().hash_one(name)
}

/// TOOL_CALL_ARGS carries JSON text. A string argument that already is JSON
/// text goes through as it is; anything else is serialised.
fn arguments_json(arguments: &Value) -> String {
    match arguments {
        Value::String(s) if serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok() => s.clone(),
        other => other.to_string(),
    }
}
