//! The open block: at most one text message or one reasoning message is
//! open at a time (AG-UI clients render them in order, and a reasoning
//! block interleaved with text would be shown out of place). Opening one
//! closes the other; `close` closes whichever it is.

use std::collections::HashSet;
use std::hash::BuildHasher;

use super::MAX_TRACKED;
use super::repeat::{Evidence, Repeat, Transcript};
use crate::digest::{TextDigest, WordHashBuilder};
use crate::event::custom::{Custom, ReasoningNotice};
use crate::event::{AssistantRole, Event, Id, ReasoningRole, TextMetadata};
use crate::ids::{IdKind, IdSource};
use crate::read::Thinking;

/// Which text stream a piece of text continues (a message id, the task's
/// status messages, an artifact id, ACP's message parts). Text for another
/// segment closes the open message and starts a fresh one.
///
/// A segment is kept as a fingerprint of its kind and id, computed once per
/// item, so a new segment costs no allocation and a comparison no string
/// compare. A collision would at worst continue one message with another's
/// text, which breaks no client rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Segment(u64);

impl Segment {
    fn of(kind: u8, id: &str) -> Segment {
        Segment(WordHashBuilder::default().hash_one((kind, id)))
    }

    pub(super) fn message(id: &str) -> Segment {
        Segment::of(0, id)
    }

    pub(super) fn status() -> Segment {
        Segment::of(1, "")
    }

    pub(super) fn artifact(id: &str) -> Segment {
        Segment::of(2, id)
    }

    pub(super) fn acp() -> Segment {
        Segment::of(3, "")
    }
}

#[derive(Debug)]
struct OpenText {
    id: Id,
    key: Segment,
    digest: TextDigest,
}

#[derive(Debug)]
struct OpenReasoning {
    span: Id,
    message: Id,
    digest: TextDigest,
    block: Option<String>,
    signature: Option<String>,
    thinking_type: Option<String>,
}

#[derive(Debug, Default)]
enum Open {
    #[default]
    None,
    Text(OpenText),
    Reasoning(OpenReasoning),
}

#[derive(Debug, Default)]
pub(super) struct Blocks {
    open: Open,
    /// The last text message opened: tool calls and citations refer to it.
    last_text_id: Option<Id>,
    /// Reasoning blocks already closed, by upstream block id.
    closed_blocks: HashSet<String, WordHashBuilder>,
    pub(super) transcript: Transcript,
    /// The run's reasoning, to recognise a thought sent again whole.
    thoughts: Transcript,
    /// The last thought closed, until a tool call or result starts a new
    /// step: ADK sends a turn's thought again whole with its answer.
    last_thought: Option<TextDigest>,
    /// Set while a run ends waiting for input: the text message it closes
    /// says which task is waiting (see `Event::TextMessageEnd`).
    pub(super) closing_metadata: Option<TextMetadata>,
    /// Set while a closing message is read: a thought in it that repeats
    /// one shown is a repeat however short (elsewhere a short one may be a
    /// new chunk).
    pub(super) in_closing_message: bool,
}

impl Blocks {
    pub(super) fn last_text_id(&self) -> Option<&Id> {
        self.last_text_id.as_ref()
    }

    /// The digest of the open text segment, if text is open.
    pub(super) fn open_text_digest(&self) -> Option<TextDigest> {
        match &self.open {
            Open::Text(text) => Some(text.digest),
            _ => None,
        }
    }

    /// The digest of the open text segment, if it is `key`'s.
    pub(super) fn open_text_digest_for(&self, key: Segment) -> Option<TextDigest> {
        match &self.open {
            Open::Text(text) if text.key == key => Some(text.digest),
            _ => None,
        }
    }

    /// A tool call or result: a thought after it is a new step's, even in
    /// the words of the last one.
    pub(super) fn new_step(&mut self) {
        self.last_thought = None;
    }

    /// `text` is all the run's text so far, or all of the open message's.
    pub(super) fn repeats_everything(&self, text: &str) -> bool {
        self.transcript.is_all(text, self.open_text_digest())
    }

    pub(super) fn is_text_open_for(&self, key: Segment) -> bool {
        matches!(&self.open, Open::Text(text) if text.key == key)
    }

    pub(super) fn close(&mut self, out: &mut Vec<Event>) {
        match std::mem::take(&mut self.open) {
            Open::None => {}
            Open::Text(text) => self.closed_text(text, out),
            Open::Reasoning(reasoning) => self.closed_reasoning(reasoning, out),
        }
    }

    pub(super) fn close_text(&mut self, out: &mut Vec<Event>) {
        if matches!(self.open, Open::Text(_)) {
            self.close(out);
        }
    }

    pub(super) fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        if matches!(self.open, Open::Reasoning(_)) {
            self.close(out);
        }
    }

    pub(super) fn close_text_of(&mut self, key: Segment, out: &mut Vec<Event>) {
        if self.is_text_open_for(key) {
            self.close(out);
        }
    }

    fn closed_text(&mut self, text: OpenText, out: &mut Vec<Event>) {
        out.push(Event::TextMessageEnd {
            message_id: text.id,
            metadata: self.closing_metadata.take(),
        });
        self.transcript.record_segment(text.digest);
    }

    fn closed_reasoning(&mut self, open: OpenReasoning, out: &mut Vec<Event>) {
        self.thoughts.record_segment(open.digest);
        self.last_thought = Some(open.digest);
        if let Some(block) = &open.block
            && self.closed_blocks.len() < MAX_TRACKED
        {
            self.closed_blocks.insert(block.clone());
        }
        out.push(Event::ReasoningMessageEnd {
            message_id: open.message.clone(),
        });
        out.push(Event::ReasoningEnd {
            message_id: open.span,
        });
        if open.signature.is_some() || open.thinking_type.is_some() {
            out.push(Event::Custom(Custom::Reasoning(ReasoningNotice {
                message_id: Some(open.message.to_string()),
                block_id: None,
                signature: open.signature,
                thinking_type: open.thinking_type,
            })));
        }
    }

    /// Answer text for the segment `key`.
    pub(super) fn text(
        &mut self,
        ids: &mut impl IdSource,
        key: Segment,
        delta: &str,
        out: &mut Vec<Event>,
    ) {
        if delta.is_empty() {
            return;
        }
        if !self.is_text_open_for(key) {
            self.close(out);
            let id: Id = ids.next_id(IdKind::Message).into();
            out.push(Event::TextMessageStart {
                message_id: id.clone(),
                role: AssistantRole::Assistant,
            });
            self.last_text_id = Some(id.clone());
            self.open = Open::Text(OpenText {
                id,
                key,
                digest: TextDigest::default(),
            });
        }
        if let Open::Text(open) = &mut self.open {
            open.digest.update(delta);
            self.transcript.record_delta(delta);
            out.push(Event::TextMessageContent {
                message_id: open.id.clone(),
                delta: delta.to_owned(),
            });
        }
    }

    /// Reasoning text. A completed block (Hector v2) that is open or was
    /// closed already repeats what was streamed: it only closes.
    pub(super) fn thinking(
        &mut self,
        ids: &mut impl IdSource,
        thinking: &Thinking<'_>,
        out: &mut Vec<Event>,
    ) {
        let open_block = match &self.open {
            Open::Reasoning(r) => Some(r.block.as_deref()),
            _ => None,
        };
        if thinking.completed {
            let same = thinking.block_id.is_some() && open_block == Some(thinking.block_id);
            let done_before = thinking
                .block_id
                .is_some_and(|id| self.closed_blocks.contains(id));
            if same || done_before {
                if same {
                    self.thinking_complete(thinking.block_id, thinking.signature, out);
                }
                return;
            }
        }
        // A thought streamed in chunks and then sent whole (as agents do
        // with answers) adds nothing; one that extends it adds the rest.
        let open_digest = match &self.open {
            Open::Reasoning(r) => Some(r.digest),
            _ => None,
        };
        let rest;
        let mut text = thinking.text;
        if !text.is_empty() {
            // A closing message resends what any earlier thought said;
            // elsewhere only the open thought, or the last one when no
            // tool call or result came since, may be sent again (a new
            // step may well repeat an earlier one's words).
            let repeat = if self.in_closing_message {
                self.thoughts.classify(text, open_digest, Evidence::Closing)
            } else {
                self.thoughts
                    .again_of_open(text, open_digest.or(self.last_thought))
            };
            match repeat {
                Repeat::Skip if thinking.completed => return self.close_reasoning(out),
                Repeat::Skip => return,
                Repeat::Remainder(remainder) => {
                    rest = remainder;
                    text = &rest;
                }
                Repeat::Emit => {}
            }
        }
        // Thinking parts without a block id continue the open block: Hector
        // would start a block per chunk (its bug), which no UI wants.
        let continues =
            open_block.is_some_and(|b| thinking.block_id.is_none() || b == thinking.block_id);
        if !continues {
            self.close(out);
            let span: Id = ids.next_id(IdKind::Reasoning).into();
            let message: Id = ids.next_id(IdKind::ReasoningMessage).into();
            out.push(Event::ReasoningStart {
                message_id: span.clone(),
            });
            out.push(Event::ReasoningMessageStart {
                message_id: message.clone(),
                role: ReasoningRole::Reasoning,
            });
            self.open = Open::Reasoning(OpenReasoning {
                span,
                message,
                digest: TextDigest::default(),
                block: thinking.block_id.map(str::to_owned),
                signature: None,
                thinking_type: None,
            });
        }
        if let Open::Reasoning(open) = &mut self.open {
            if let Some(signature) = thinking.signature {
                open.signature = Some(signature.to_owned());
            }
            if let Some(kind) = thinking.thinking_type {
                open.thinking_type = Some(kind.to_owned());
            }
            if !text.is_empty() {
                open.digest.update(text);
                self.thoughts.record_delta(text);
                out.push(Event::ReasoningMessageContent {
                    message_id: open.message.clone(),
                    delta: text.to_owned(),
                });
            }
        }
        if thinking.completed {
            self.close_reasoning(out);
        }
    }

    /// The end of a reasoning block; a signature for a block that is not
    /// open is announced on its own.
    pub(super) fn thinking_complete(
        &mut self,
        block: Option<&str>,
        signature: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        if let Open::Reasoning(open) = &mut self.open
            && (block.is_none() || open.block.is_none() || open.block.as_deref() == block)
        {
            if let Some(signature) = signature {
                open.signature = Some(signature.to_owned());
            }
            self.close(out);
        } else if let Some(signature) = signature {
            out.push(Event::Custom(Custom::Reasoning(ReasoningNotice {
                block_id: block.map(str::to_owned),
                signature: Some(signature.to_owned()),
                ..ReasoningNotice::default()
            })));
        }
    }

    /// A reasoning step that stands alone: its own block, opened and closed.
    pub(super) fn reasoning_step(
        &mut self,
        ids: &mut impl IdSource,
        thought: &str,
        out: &mut Vec<Event>,
    ) {
        self.close_reasoning(out);
        let step = Thinking {
            text: thought,
            block_id: None,
            signature: None,
            thinking_type: None,
            completed: false,
        };
        self.thinking(ids, &step, out);
        self.close_reasoning(out);
    }
}
