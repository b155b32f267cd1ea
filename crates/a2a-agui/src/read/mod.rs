//! Readers: whatever an agent sent, in one typed vocabulary.
//!
//! Every dialect (0.2/0.3 JSON-RPC, 1.0, 0.3 ProtoJSON, ACP) and every
//! vendor convention (Hector's part metadata and v2 data parts, ACP's
//! citation and trajectory parts, Agent Stack's extension metadata, the
//! multimodal `commands`) is read here and nowhere else. The converter sees
//! [`Item`]s whose parts are [`Block`]s; it never looks at a vendor key.
//!
//! Two readers produce items: [`read_value`] (lenient, any `Value`) and
//! [`read_fast`] (borrowing, plain-text chunks only, the hot path). Both
//! yield the same vocabulary, so there is one conversion path; the fast one
//! says "not mine" for anything it is not certain about.

mod a2a;
mod a2ui;
mod acp;
mod adk;
mod bridges;
mod fast;
mod hector;
mod hints;
mod json;
mod part;
mod polled;
mod said;
mod shape;
mod tool;
mod usage;

use serde_json::Value;
use serde_json::value::RawValue;

pub use a2a::{A2aMessage, ErrorReport, error_report};
pub(crate) use a2a::{artifact_view, read_message_object};
pub(crate) use acp::{AcpEvent, RunIds as AcpRunIds};
pub(crate) use adk::state_delta;
pub(crate) use hector::EventName;
pub(crate) use hints::{MessageNote, message_notes, without_commands};
pub(crate) use hints::{commands, is_empty_value};
pub use json::MAX_ID_BYTES;
pub(crate) use json::Object;
pub use part::{FileRef, PartBody, part_body};
pub use polled::{PollMemo, Polled, TaskPoll};
pub(crate) use said::one_line;
pub(crate) use shape::event_tools;
pub(crate) use usage::{Carrier, MAX_COUNT, Reading, item_readings};

use crate::event::custom::Citation;
use crate::state::TaskState;

/// One stream item, read.
pub(crate) enum Item<'a> {
    /// A Task snapshot.
    Task(StatusView<'a>),
    /// A message stream item.
    Message(MessageView<'a>),
    /// A status-update event.
    Status(StatusView<'a>),
    /// An artifact-update event with its artifact.
    Artifact(ArtifactChunk<'a>),
    /// An artifact-update event without an artifact: forwarded as it is
    /// (its ids still name the run).
    ArtifactWithoutBody {
        context_id: Option<&'a str>,
        task_id: Option<&'a str>,
        whole: &'a Value,
    },
    /// An error the agent reported.
    Error(ErrorReport),
    /// An ACP run event, with the ids of the run it names.
    Acp {
        run: AcpRunIds<'a>,
        event: AcpEvent<'a>,
    },
    /// Something with no known shape: forwarded as it is (unless `null`).
    Unknown(&'a Value),
}

impl Item<'_> {
    /// (contextId, taskId) of the item, for the run's ids.
    pub(crate) fn ids(&self) -> (Option<&str>, Option<&str>) {
        match self {
            Item::Task(s) | Item::Status(s) => (s.context_id, s.task_id),
            Item::Message(m) => (m.context_id, m.task_id),
            Item::Artifact(a) => (a.context_id, a.task_id),
            Item::Acp { run, .. } => (run.session_id, run.run_id),
            Item::ArtifactWithoutBody {
                context_id,
                task_id,
                ..
            } => (*context_id, *task_id),
            Item::Error(_) | Item::Unknown(_) => (None, None),
        }
    }
}

/// A task's status: its state, the message that came with it and when.
pub(crate) struct Status<'a> {
    pub state: TaskState,
    pub message: Option<MessageView<'a>>,
    pub timestamp: Option<&'a Value>,
}

/// A Task snapshot or a status-update event.
pub(crate) struct StatusView<'a> {
    pub context_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub status: Status<'a>,
    /// The snapshot's artifacts (none on an update).
    pub artifacts: &'a [Value],
    pub metadata: Option<&'a Object>,
    /// Changes to the shared state (ADK's `stateDelta`).
    pub state_delta: Option<&'a Object>,
}

/// An A2A message from the agent (or, echoed, from the user).
pub(crate) struct MessageView<'a> {
    pub context_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub message_id: Option<&'a str>,
    /// The message itself when its role is `user`: it is echoed, not shown.
    pub user_echo: Option<&'a Object>,
    pub parts: Parts<'a>,
    pub metadata: Option<&'a Object>,
    /// Changes to the shared state (ADK's `stateDelta`).
    pub state_delta: Option<&'a Object>,
    /// Tasks the message refers to (`referenceTaskIds`): work delegated.
    pub reference_task_ids: &'a [Value],
}

impl MessageView<'_> {
    /// The text of the plain text parts, joined (hints ignored).
    pub(crate) fn text(&self) -> String {
        let mut joined = String::new();
        self.parts.for_each_text(|t, _| joined.push_str(t));
        joined
    }
}

/// An artifact-update event (or one artifact of a Task snapshot).
pub(crate) struct ArtifactChunk<'a> {
    pub context_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub id: &'a str,
    pub append: bool,
    pub last_chunk: bool,
    pub description: Description<'a>,
    /// The event's own metadata less what every chunk repeats.
    pub event_metadata: Option<Object>,
    /// ADK-style streaming: `true` on deltas, `false` on the closing repeat.
    pub partial: Option<bool>,
    pub parts: Parts<'a>,
    /// The multimodal-interaction extension's client commands.
    pub commands: Option<&'a Value>,
    /// Changes to the shared state (ADK's `stateDelta`).
    pub state_delta: Option<&'a Object>,
}

/// An artifact's name, description, extensions and metadata, parsed or
/// still raw (the fast reader leaves them unparsed: most chunks repeat the
/// same description, and a fingerprint of the bytes skips them).
pub(crate) enum Description<'a> {
    Parsed {
        fields: [Option<&'a Value>; 3],
        metadata: Option<&'a Object>,
    },
    /// name, description, extensions, metadata.
    Raw([Option<&'a RawValue>; 4]),
}

/// A message's or artifact's parts.
#[derive(Clone, Copy)]
pub(crate) enum Parts<'a> {
    Values(&'a [Value]),
    /// Plain text only, from the fast reader.
    Plain(&'a [fast::Part<'a>]),
}

impl<'a> Parts<'a> {
    /// A fingerprint of the parts as sent, to recognise the same parts sent
    /// again: ADK's legacy executor closes with an artifact repeating its
    /// last message's parts, data parts included. `None` for any other
    /// parts (text is compared as text, by the repeat checks), so other
    /// agents' messages pay nothing for it.
    pub(crate) fn fingerprint(&self) -> Option<crate::digest::TextDigest> {
        match self {
            Parts::Values(values)
                if values.iter().any(|p| {
                    p.as_object()
                        .and_then(json::metadata)
                        .is_some_and(adk::is_adk)
                }) =>
            {
                Some(crate::digest::TextDigest::of_json(values))
            }
            _ => None,
        }
    }

    /// One digest per part: its text for a text part (however it was
    /// read, metadata aside), else the part as JSON. Recognises a chunk
    /// that a re-attached stream delivers again after a snapshot showed it.
    pub(crate) fn part_digests(&self) -> Vec<crate::digest::TextDigest> {
        let mut digests = Vec::with_capacity(self.len());
        self.for_each_piece(|_, piece| {
            digests.push(match piece {
                Piece::Text(text) => crate::digest::TextDigest::of(text),
                Piece::Other(digest) => digest,
            });
        });
        digests
    }

    /// Each part as a version of a message compares it: its text (any
    /// text part, hinted or not), else a digest of the part as sent.
    pub(crate) fn for_each_piece(&self, mut f: impl FnMut(usize, Piece<'a>)) {
        use crate::digest::TextDigest;
        match self {
            Parts::Values(values) => {
                for (i, value) in values.iter().enumerate() {
                    match value.as_object().map(part::part_body_of) {
                        Some(PartBody::Text(text)) => f(i, Piece::Text(text)),
                        _ => f(i, Piece::Other(TextDigest::of_json(value))),
                    }
                }
            }
            Parts::Plain(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    f(i, Piece::Text(part.text()));
                }
            }
        }
    }

    /// The part at `index` alone (none past the end).
    pub(crate) fn nth(self, index: usize) -> Parts<'a> {
        match self {
            Parts::Values(v) => Parts::Values(v.get(index..=index).unwrap_or(&[])),
            Parts::Plain(p) => Parts::Plain(p.get(index..=index).unwrap_or(&[])),
        }
    }

    /// The parts as JSON values (none for the fast reader's plain text,
    /// which never reads a snapshot).
    pub(crate) fn values(&self) -> &'a [Value] {
        match self {
            Parts::Values(values) => values,
            Parts::Plain(_) => &[],
        }
    }

    /// The parts after the first `n`.
    pub(crate) fn skip(self, n: usize) -> Parts<'a> {
        match self {
            Parts::Values(v) => Parts::Values(v.get(n..).unwrap_or(&[])),
            Parts::Plain(p) => Parts::Plain(p.get(n..).unwrap_or(&[])),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Parts::Values(v) => v.len(),
            Parts::Plain(p) => p.len(),
        }
    }

    /// The whole text when every part is plain text with no hint, and
    /// there is at least one part: what a repeat check may compare.
    pub(crate) fn plain_text(&self) -> Option<String> {
        let mut joined = String::new();
        let mut plain = true;
        let count = self.for_each_text(|t, hinted| {
            plain &= !hinted;
            joined.push_str(t);
        });
        (plain && count == self.len() && count > 0).then_some(joined)
    }

    /// The text of the parts that are only text (no hint), joined, whatever
    /// other parts there are; `None` when there are none.
    pub(crate) fn unhinted_text(&self) -> Option<String> {
        let mut joined = String::new();
        let mut any = false;
        self.for_each_text(|t, hinted| {
            if !hinted {
                any = true;
                joined.push_str(t);
            }
        });
        any.then_some(joined)
    }

    /// Calls `f` with each plain text part and whether it carries a hint
    /// that gives it another meaning; returns how many there were.
    fn for_each_text(&self, mut f: impl FnMut(&str, bool)) -> usize {
        let mut count = 0;
        match self {
            Parts::Values(values) => {
                for part in values.iter().filter_map(Value::as_object) {
                    if let PartBody::Text(t) = part::part_body_of(part) {
                        count += 1;
                        f(t, hints::has_role(part));
                    }
                }
            }
            Parts::Plain(parts) => {
                for part in parts.iter() {
                    count += 1;
                    f(part.text(), false);
                }
            }
        }
        count
    }

    /// The meaning of every part, in order.
    pub(crate) fn for_each_block(&self, mut f: impl FnMut(PartMeaning, Block<'a>)) {
        match self {
            Parts::Values(values) => {
                for part in values.iter() {
                    read_part_value(part, &mut f);
                }
            }
            Parts::Plain(parts) => {
                for part in parts.iter() {
                    f(PartMeaning::PlainText, Block::Text(part.text()));
                }
            }
        }
    }
}

/// One part as versions of a message compare it.
pub(crate) enum Piece<'a> {
    Text(&'a str),
    Other(crate::digest::TextDigest),
}

/// Whether a block came from a plain text part (the closing-repeat check
/// gathers those instead of streaming them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartMeaning {
    PlainText,
    Other,
}

/// What one part means.
pub(crate) enum Block<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text, continuing the open block unless it names another.
    Thinking(Thinking<'a>),
    /// The end of a reasoning block, maybe with its signature.
    ThinkingComplete {
        block_id: Option<&'a str>,
        signature: Option<&'a str>,
    },
    /// A whole reasoning step of its own (an ACP trajectory message).
    ReasoningStep(&'a str),
    ToolCall(ToolCall<'a>),
    ToolResult(ToolResult<'a>),
    /// A source for the text around it (boxed: it is rare and large).
    Citation(Box<Citation>),
    File {
        file: FileRef<'a>,
        metadata: Option<&'a Object>,
    },
    Data {
        data: &'a Value,
        media_type: Option<&'a str>,
        metadata: Option<&'a Object>,
    },
    /// An error the agent shows without failing the task.
    ErrorNotice {
        message: Option<&'a str>,
        code: Option<&'a str>,
    },
    /// An A2UI message for the surface it names.
    Ui {
        surface_id: &'a str,
        operation: &'a Value,
    },
    /// The client's shared state, whole.
    StateSnapshot(&'a Value),
    /// Changes to the client's shared state (RFC 6902 operations).
    StatePatch(&'a [Value]),
    /// A part that is not an object: forwarded as it is.
    Unreadable(&'a Value),
}

pub(crate) struct Thinking<'a> {
    pub text: &'a str,
    pub block_id: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub thinking_type: Option<&'a str>,
    /// The block is complete (Hector v2 `status: "completed"`): its text is
    /// the whole thought, already streamed if the block is known.
    pub completed: bool,
}

pub(crate) struct ToolCall<'a> {
    pub id: Option<&'a str>,
    pub name: &'a str,
    pub arguments: Value,
    /// The call's result when the same part reports both (ACP trajectory).
    pub result: Option<String>,
}

pub(crate) struct ToolResult<'a> {
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub content: String,
    pub error: Option<String>,
    /// False for a piece of incremental output; more follows.
    pub is_final: bool,
}

/// The tool name used when an agent names none.
pub(crate) const UNKNOWN_TOOL: &str = "unknown_tool";

fn read_part_value<'a>(part: &'a Value, f: &mut impl FnMut(PartMeaning, Block<'a>)) {
    match part.as_object() {
        Some(part) => hints::read_part(part, f),
        None if part.is_null() => {}
        None => f(PartMeaning::Other, Block::Unreadable(part)),
    }
}

/// Reads a parsed stream item.
pub(crate) fn read_value(value: &Value) -> Item<'_> {
    a2a::read_item(value)
}

/// Reads a plain-text chunk straight from its bytes, or says `None`: the
/// lenient reader must decide. [`FastItem::item`] gives the item.
pub(crate) fn read_fast(json: &str) -> Option<FastItem<'_>> {
    fast::read(json)
}

pub(crate) use fast::FastItem;
