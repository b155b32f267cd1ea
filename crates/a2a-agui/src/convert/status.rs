//! Tasks, statuses and messages: where the task stands, what the agent
//! says along the way, and the closing message that may repeat it.

use serde_json::Value;

use super::block::Segment;
use super::repeat::{Evidence, Repeat};
use super::run::Lifecycle;
use super::versions::{Carrier, MIN_RESEND, PartPlan, Plan};
use super::{Converter, raw};
use crate::codes::ErrorCode;
use crate::digest::TextDigest;
use crate::event::custom::{Citation, Custom, ErrorNotice, MessageMetadata, StatusNotice};
use crate::event::{Event, TextMetadata};
use crate::ids::IdSource;
use crate::read::{
    self, Block, MessageNote, MessageView, Object, PartMeaning, Status, StatusView, one_line,
};
use crate::state::TaskState;

/// Where a message came from; decides its text key and de-duplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// A `message` stream item.
    Stream,
    /// `status.message` of a working / submitted status.
    Status,
    /// `status.message` of a status that ends the turn.
    Closing,
}

impl<I: IdSource> Converter<I> {
    pub(super) fn on_task(&mut self, task: StatusView<'_>, out: &mut Vec<Event>) {
        self.run.saw_task = true;
        // A stream that opens with the task replays what came before this
        // turn: the client ran those tools already.
        self.replaying = self.run.items_seen == 1;
        self.on_task_snapshot(task, out);
        self.replaying = false;
    }

    fn on_task_snapshot(&mut self, task: StatusView<'_>, out: &mut Vec<Event>) {
        let state = task.status.state;
        self.snapshot_artifacts(task.artifacts, state.ends_turn(), out);
        if state.ends_turn() {
            // Nothing will stream after it: whatever a re-attach holds shows.
            self.release_held(out);
        }
        let waiting = matches!(state, TaskState::InputRequired | TaskState::AuthRequired);
        if waiting && self.run.items_seen == 1 {
            // A continuation (or a resubscription) opens with the task as it
            // was before this turn: still waiting, its question already
            // shown. The turn's own events follow; if none do, the end of
            // input finishes the run in this state.
            self.status_notice(&task.status, task.metadata, out);
            self.run.last_state = Some(state);
            return;
        }
        self.on_status(task.status, task.metadata, out);
    }

    pub(super) fn on_status(
        &mut self,
        status: Status<'_>,
        metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        let state = status.state;
        if let Some(metadata) = metadata {
            // Calls and results the event's own metadata carries, before
            // what its message says.
            read::event_tools(metadata, &mut |block| {
                self.on_block(block, Segment::status(), None, out);
            });
        }
        if state.ends_turn() {
            // The last word on the task, for clients that show it.
            self.status_notice(&status, metadata, out);
        }
        match state {
            TaskState::Failed | TaskState::Rejected => {
                let (code, fallback) = if state == TaskState::Failed {
                    (
                        ErrorCode::TaskFailed,
                        "the agent reported the task as failed",
                    )
                } else {
                    (ErrorCode::TaskRejected, "the agent rejected the task")
                };
                // The agent's own words on why, as an error line: the
                // first line, bounded.
                let text = status.message.as_ref().map(|m| one_line(&m.text()));
                let text = text
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| fallback.to_owned());
                self.fail_run(code.as_str(), text, out);
            }
            state if state.ends_turn() => {
                let question = match &status.message {
                    Some(message) if self.options.interrupts => Some(message.text()),
                    _ => None,
                };
                let mark = out.len();
                if let Some(message) = status.message {
                    self.on_message(message, Origin::Closing, out);
                }
                let outcome = match state {
                    TaskState::Canceled => Lifecycle::cancelled_outcome(&self.options),
                    _ => self.run.interrupt_outcome(&self.options, state, question),
                };
                let result = self.run.task_result(state);
                if result.is_waiting() {
                    let said = TextMetadata {
                        a2a: result.clone(),
                    };
                    // The text that asks carries the waiting task: the one
                    // still open (closed by `finish_run`), else the last one
                    // this closing message wrote (a tool call it shows after
                    // its text closed it).
                    let closed = out[mark..].iter_mut().rev().find_map(|e| match e {
                        Event::TextMessageEnd { metadata, .. } => Some(metadata),
                        _ => None,
                    });
                    match closed {
                        Some(metadata) if self.blocks.open_text_digest().is_none() => {
                            *metadata = Some(said);
                        }
                        _ => self.blocks.closing_metadata = Some(said),
                    }
                }
                self.finish_run(Some(result), outcome, out);
            }
            state => {
                if self.run.last_state != Some(state) || metadata.is_some() {
                    self.status_notice(&status, metadata, out);
                }
                self.run.last_state = Some(state);
                if let Some(message) = status.message {
                    self.on_message(message, Origin::Status, out);
                }
            }
        }
    }

    fn status_notice(
        &mut self,
        status: &Status<'_>,
        metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        out.push(Event::Custom(Custom::Status(StatusNotice {
            task_id: self.run.task_id.clone(),
            context_id: self.run.context_id.clone(),
            state: status.state,
            timestamp: status.timestamp.cloned(),
            metadata: metadata.cloned(),
        })));
    }

    pub(super) fn on_message(
        &mut self,
        message: MessageView<'_>,
        origin: Origin,
        out: &mut Vec<Event>,
    ) {
        if let Some(echo) = message.user_echo {
            out.push(raw(Value::Object(echo.clone())));
            return;
        }
        // A message naming tasks it delegated to: each a sub-agent.
        let own = self.run.task_id.clone();
        for task in message.reference_task_ids.iter().filter_map(Value::as_str) {
            if !task.is_empty() && own.as_deref() != Some(task) {
                self.subagents.start(task, out);
            }
        }
        let message_id = message.message_id;
        if origin == Origin::Stream {
            self.run.saw_agent_message = true;
        }
        // A message id sent again shows only what is new in it.
        let plan = match message_id {
            Some(id) => {
                let metadata = message.metadata.map(TextDigest::of_json);
                let carrier = match origin {
                    Origin::Stream => Carrier::Item,
                    Origin::Status | Origin::Closing => Carrier::Status,
                };
                self.versions.plan(id, carrier, message.parts, metadata)
            }
            None => Plan::First,
        };
        if plan.adds_nothing() {
            return;
        }
        let parts = message.parts.fingerprint();
        // ADK sends its last event again as the input-required status: the
        // same parts, text included, add nothing the second time.
        let repeats_last =
            origin == Origin::Closing && parts.is_some() && parts == self.last_message_parts;
        self.last_message_parts = parts;
        let metadata_new = match &plan {
            Plan::First => true,
            Plan::Again {
                metadata_changed, ..
            } => *metadata_changed,
        };
        if metadata_new {
            self.state_delta(message.state_delta, out);
        }
        let key = match origin {
            Origin::Stream => Segment::message(message_id.unwrap_or("")),
            Origin::Status | Origin::Closing => Segment::status(),
        };
        self.blocks.in_closing_message = origin == Origin::Closing;
        match plan {
            Plan::First => self.first_version(&message, origin, key, repeats_last, out),
            Plan::Again { parts, .. } if !repeats_last => {
                self.again(&message, &parts, origin, key, out);
            }
            Plan::Again { .. } => {}
        }
        self.blocks.in_closing_message = false;
        if !metadata_new {
            return;
        }
        if let Some(metadata) = message.metadata {
            read::message_notes(metadata, |note| match note {
                MessageNote::Citation(citation) => self.citation(citation, out),
                MessageNote::Trajectory(step) => out.push(Event::Custom(Custom::Trajectory(step))),
                MessageNote::ToolCall(call) => self.on_block(Block::ToolCall(call), key, None, out),
                MessageNote::Error { message, code } => {
                    let notice = ErrorNotice {
                        message: message.map(str::to_owned),
                        code: code.map(str::to_owned),
                    };
                    out.push(Event::Custom(Custom::Error(notice)));
                }
                MessageNote::Rest(rest) => {
                    out.push(Event::Custom(Custom::MessageMetadata(MessageMetadata {
                        message_id: message_id.map(str::to_owned),
                        metadata: rest,
                    })));
                }
            });
        }
    }

    /// A message id's first version: its parts, less what a closing or a
    /// cumulative status message repeats of the text streamed before it.
    fn first_version(
        &mut self,
        message: &MessageView<'_>,
        origin: Origin,
        key: Segment,
        repeats_last: bool,
        out: &mut Vec<Event>,
    ) {
        // A closing status often repeats the answer already streamed
        // (Hector sends the whole text again): repeats add nothing, and a
        // message that extends what was streamed adds only the extension.
        let repeat = match origin {
            _ if repeats_last => Repeat::Skip,
            // Its text is judged as a whole, whatever else it carries (a
            // closing message may resend the run's thoughts and calls too).
            Origin::Closing => message.parts.unhinted_text().map_or(Repeat::Emit, |whole| {
                self.blocks.transcript.classify(
                    &whole,
                    self.blocks.open_text_digest(),
                    Evidence::Closing,
                )
            }),
            // LangGraph sends each status message with all the text so far.
            // (Only while status text is open can it be cumulative.)
            // (Its text judged whatever else it carries: ADK sends a
            // turn's thought and answer again together.)
            Origin::Status => match self.blocks.open_text_digest_for(Segment::status()) {
                Some(open) => message.parts.unhinted_text().map_or(Repeat::Emit, |whole| {
                    self.blocks.transcript.cumulative(&whole, Some(open))
                }),
                None => Repeat::Emit,
            },
            Origin::Stream => Repeat::Emit,
        };
        if let Repeat::Emit = repeat {
            return message
                .parts
                .for_each_block(|_, block| self.on_block(block, key, None, out));
        }
        // A repeat adds no text (what is new of it stands where its text
        // began); its other parts, and its metadata, still count.
        let mut rest = match repeat {
            Repeat::Remainder(rest) => Some(rest),
            _ => None,
        };
        message.parts.for_each_block(|meaning, block| match block {
            Block::Text(_) if meaning == PartMeaning::PlainText => {
                if let Some(rest) = rest.take() {
                    self.blocks.text(&mut self.ids, key, &rest, out);
                }
            }
            block => self.on_block(block, key, None, out),
        });
    }

    /// A later version of a message id: per part, what is new.
    fn again(
        &mut self,
        message: &MessageView<'_>,
        plans: &[PartPlan],
        origin: Origin,
        key: Segment,
        out: &mut Vec<Event>,
    ) {
        for (index, plan) in plans.iter().enumerate() {
            let from = match plan {
                PartPlan::Skip => continue,
                PartPlan::Whole => 0,
                PartPlan::From(from) => *from,
            };
            message.parts.nth(index).for_each_block(|meaning, block| {
                let block = match block {
                    Block::Text(text) if from > 0 => Block::Text(text.get(from..).unwrap_or("")),
                    // Under an id that showed something else: the whole
                    // text again, resent under the last chunk's id.
                    // (A message item's short text may be a repeated token.)
                    Block::Text(text)
                        if meaning == PartMeaning::PlainText
                            && (origin != Origin::Stream || text.len() >= MIN_RESEND)
                            && self.blocks.repeats_everything(text) =>
                    {
                        return;
                    }
                    // A closing message's new text may still repeat what
                    // streamed elsewhere (an artifact).
                    Block::Text(text)
                        if origin == Origin::Closing && meaning == PartMeaning::PlainText =>
                    {
                        let open = self.blocks.open_text_digest();
                        match self
                            .blocks
                            .transcript
                            .classify(text, open, Evidence::Closing)
                        {
                            Repeat::Skip => return,
                            Repeat::Remainder(rest) => {
                                return self.blocks.text(&mut self.ids, key, &rest, out);
                            }
                            Repeat::Emit => Block::Text(text),
                        }
                    }
                    Block::Thinking(mut thinking) if from > 0 => {
                        thinking.text = thinking.text.get(from..).unwrap_or("");
                        Block::Thinking(thinking)
                    }
                    block => block,
                };
                self.on_block(block, key, None, out);
            });
        }
    }

    pub(super) fn citation(&mut self, mut citation: Citation, out: &mut Vec<Event>) {
        citation.message_id = self.blocks.last_text_id().map(|id| id.to_string());
        out.push(Event::Custom(Custom::Citation(citation)));
    }
}
