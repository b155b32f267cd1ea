//! The converter: A2A stream items in, AG-UI events out.
//!
//! One [`Converter`] follows one run. Readers (`crate::read`) turn each
//! item into typed meanings; this module dispatches them to the concern
//! that owns the state they touch:
//! - `run`: the lifecycle (`RUN_STARTED`, ids, the terminal event);
//! - `block`: the one open text or reasoning message;
//! - `tools`: tool calls and their (possibly incremental) results;
//! - `artifacts`: per-artifact progress and what was announced about it;
//! - `repeat`: digests of the streamed text, to drop closing repeats;
//! - `options`: what the caller chose for the run, and how its input ended;
//! - `usage`: the tokens the agent reported, for the terminal event.
//!
//! Whatever the input, the output obeys the client's rules: one
//! `RUN_STARTED` first, one terminal event last, nothing for an entity that
//! is not open, everything closed before `RUN_FINISHED`.

mod acp;
mod artifacts;
mod block;
mod options;
mod repeat;
mod resync;
mod run;
mod shared;
mod status;
mod subagents;
mod tools;
mod ui;
mod usage;
mod versions;

use serde_json::Value;

use self::artifacts::Artifacts;
use self::block::{Blocks, Segment};
pub use self::options::{AguiVersion, Options, StreamEnd};
use self::resync::Resync;
use self::run::{Ending, Lifecycle};
use self::status::Origin;
use self::subagents::Subagents;
use self::tools::{NewCall, Tools};
use self::ui::Surfaces;
use self::usage::Usage;
use self::versions::Versions;
use crate::codes::ErrorCode;
use crate::digest::TextDigest;
use crate::event::custom::{Custom, DataNotice, ErrorNotice, FileNotice};
use crate::event::{Event, Outcome, Patch, PatchOp, RunResult, TokenUsage};
use crate::ids::{IdSource, SequentialIds};
use crate::read::{self, Block, ErrorReport, Item, Object};
use crate::state::{RunState, TaskState};

/// How many artifacts, tool calls and message ids one run keeps track of.
/// Past this, de-duplication degrades; output stays well-formed.
pub const MAX_TRACKED: usize = 4096;
/// Incremental tool output is gathered up to this size, then delivered.
pub const MAX_PENDING_TOOL_OUTPUT: usize = 16 << 20;

/// The state machine of one run. Feed it items with `push_*`, then
/// [`finish`](Converter::finish); every call appends the events it
/// produced to `out`.
pub struct Converter<I = SequentialIds> {
    options: Options,
    ids: I,
    run: Lifecycle,
    blocks: Blocks,
    tools: Tools,
    artifacts: Artifacts,
    /// What each message id has shown (`versions`).
    versions: Versions,
    /// The parts of the last agent message, fingerprinted: ADK's closing
    /// artifact repeats them, data parts included.
    last_message_parts: Option<TextDigest>,
    surfaces: Surfaces,
    subagents: Subagents,
    /// The client's shared state, when known (`shared`).
    shared_state: Option<Value>,
    /// An opening Task snapshot is being read (`status::on_task`).
    replaying: bool,
    /// Re-attached to the task after the upstream broke (`reattach`).
    resync: Resync,
    usage: Usage,
}

impl Converter<SequentialIds> {
    /// A converter minting ids `msg-1`, `tool-result-2`, … (reproducible).
    pub fn with_sequential_ids(options: Options) -> Self {
        Converter::new(options, SequentialIds::default())
    }
}

impl<I: IdSource> Converter<I> {
    /// A converter whose minted ids come from `ids`.
    pub fn new(options: Options, ids: I) -> Self {
        Converter {
            subagents: Subagents::new(options.version == AguiVersion::V1),
            shared_state: shared::initial(&options),
            replaying: false,
            resync: Resync::default(),
            usage: Usage::default(),
            options,
            ids,
            run: Lifecycle::default(),
            blocks: Blocks::default(),
            tools: Tools::default(),
            artifacts: Artifacts::default(),
            versions: Versions::default(),
            last_message_parts: None,
            surfaces: Surfaces::default(),
        }
    }

    /// True once the terminal event has been written; later input is ignored.
    pub fn is_finished(&self) -> bool {
        self.run.is_done()
    }

    /// `RUN_STARTED.threadId`, once written.
    pub fn thread_id(&self) -> Option<&str> {
        self.run.thread_id()
    }

    /// `RUN_STARTED.runId`, once written.
    pub fn run_id(&self) -> Option<&str> {
        self.run.run_id()
    }

    /// The A2A task the run belongs to, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.run.task_id.as_deref()
    }

    /// The A2A context the run belongs to, once known.
    pub fn context_id(&self) -> Option<&str> {
        self.run.context_id.as_deref()
    }

    /// The task to re-attach to when the upstream stream broke now: the
    /// run's own task, if the run is still on and the task is not final
    /// or waiting (an end of input now would be `UPSTREAM_ENDED_EARLY`).
    pub fn reattach_task(&self) -> Option<&str> {
        if self.run.is_done() || !matches!(self.run.ending(), Ending::EndedEarly(_)) {
            return None;
        }
        self.run.task_id.as_deref()
    }

    /// The caller re-attached to the task (a resubscribe, a read of the
    /// task): Task snapshots and the chunks after them are reconciled with
    /// what was shown (`resync`). Feed only what shows the task, not the
    /// agent's refusal.
    pub fn reattach(&mut self) {
        self.resync.start();
    }

    /// The tokens the agent reported so far, one entry per provider and
    /// model, in AG-UI's accounting (what the terminal event carries).
    pub fn usage(&self) -> Vec<TokenUsage> {
        self.usage.entries()
    }

    /// Items that arrived after the terminal event (a trailing Task
    /// snapshot, for example) and so produced nothing.
    pub fn ignored_after_finish(&self) -> u64 {
        self.run.ignored_after_finish
    }

    /// One SSE event from the upstream: its `event:` name and `data:`.
    pub fn push_sse(&mut self, event_name: Option<&str>, data: &[u8], out: &mut Vec<Event>) {
        let data = unframed(data);
        if data.is_empty() {
            return;
        }
        match read::EventName::of(event_name) {
            read::EventName::Done => {}
            read::EventName::Error => self.push_error_event(data, out),
            read::EventName::Item => self.push_json(data, out),
        }
    }

    /// One JSON document (an SSE `data:` payload or a JSONL line).
    pub fn push_json(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        if self.ignored() {
            return;
        }
        // Validating UTF-8 once for the whole payload is cheaper than the
        // JSON reader checking each string it borrows.
        let Ok(json) = std::str::from_utf8(bytes) else {
            return self.push_unreadable(bytes, out);
        };
        if let Some(fast) = read::read_fast(json) {
            return self.push_item(fast.item(), out);
        }
        match serde_json::from_str::<Value>(json) {
            Ok(value) => self.push_item(read::read_value(&value), out),
            Err(err) => self.push_malformed(
                format!("upstream sent an event that is not valid JSON: {err}"),
                out,
            ),
        }
    }

    /// One parsed stream item.
    pub fn push_value(&mut self, value: &Value, out: &mut Vec<Event>) {
        if !self.ignored() {
            self.push_item(read::read_value(value), out);
        }
    }

    /// The input has ended. Closes what is open and writes the terminal
    /// event if the stream did not carry one.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Event>) {
        if self.run.is_done() {
            return;
        }
        self.release_held(out);
        self.start(None, None, out);
        match end {
            StreamEnd::Failed { code, message } => self.fail_run(code.as_str(), message, out),
            StreamEnd::AgentError(report) => self.fail_run(&report.code, report.message, out),
            StreamEnd::Eof => match self.run.ending() {
                Ending::Answered(result) => self.finish_run(result, None, out),
                Ending::Waiting(state) => {
                    let outcome = self.run.interrupt_outcome(&self.options, state, None);
                    let result = self.run.task_result(state);
                    self.finish_run(Some(result), outcome, out);
                }
                Ending::Empty => self.fail_run(
                    ErrorCode::UpstreamEmpty.as_str(),
                    "upstream closed the stream without sending any event".to_owned(),
                    out,
                ),
                Ending::EndedEarly(state) => self.fail_run(
                    ErrorCode::UpstreamEndedEarly.as_str(),
                    format!(
                        "upstream closed the stream before the task reached a final state (last state: {})",
                        state.as_str()
                    ),
                    out,
                ),
            },
        }
    }

    // -- dispatch -------------------------------------------------------------

    /// True (and counted) when the run is over and input is ignored.
    fn ignored(&mut self) -> bool {
        if self.run.is_done() {
            self.run.ignored_after_finish += 1;
        }
        self.run.is_done()
    }

    fn push_item(&mut self, item: Item<'_>, out: &mut Vec<Event>) {
        if !matches!(item, Item::Task(_)) {
            self.resync.collecting = false;
        }
        if self.resync.is_holding() && !matches!(item, Item::Task(_) | Item::Artifact(_)) {
            self.release_held(out);
        }
        self.run.items_seen += 1;
        // Before the item is converted: it may end the run.
        self.usage.observe(&item, self.run.items_seen == 1);
        let (context, task) = item.ids();
        self.start(context, task, out);
        let delegated = self.delegated(&item);
        self.run.remember_ids(context, task);
        if let Some(task) = delegated {
            self.on_delegated(task, item, out);
        } else {
            self.push_own_item(item, out);
        }
        if !self.tools.client_calls.is_empty() && !self.run.is_done() {
            // The agent called a tool the client runs: the turn is the
            // client's now, whatever the agent's stream does next.
            let result = match self.run.last_state {
                Some(state) => self.run.task_result(state),
                None => RunResult {
                    task_id: self.run.task_id.clone(),
                    context_id: self.run.context_id.clone(),
                    ..RunResult::default()
                },
            };
            self.finish_run(Some(result), None, out);
        }
    }

    /// An item of the run's own task (or of no task).
    fn push_own_item(&mut self, item: Item<'_>, out: &mut Vec<Event>) {
        match item {
            Item::Task(task) => self.on_task(task, out),
            Item::Message(message) => self.on_message(message, Origin::Stream, out),
            Item::Status(update) => {
                self.run.saw_task = true;
                self.state_delta(update.state_delta, out);
                self.on_status(update.status, update.metadata, out);
            }
            Item::Artifact(chunk) => self.on_artifact(chunk, out),
            Item::ArtifactWithoutBody { whole, .. } => {
                self.run.saw_task = true;
                out.push(raw(whole.clone()));
            }
            Item::Error(report) => self.fail_run(&report.code, report.message, out),
            Item::Acp { run, event } => self.on_acp(run, event, out),
            // A bare `null` carries nothing to forward, and RAW.event may not be null.
            Item::Unknown(value) if value.is_null() => {}
            Item::Unknown(value) => out.push(raw(value.clone())),
        }
    }

    fn push_unreadable(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        let message = match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(err) => format!("upstream sent an event that is not valid JSON: {err}"),
            Ok(_) => "upstream sent an event that is not valid UTF-8".to_owned(),
        };
        self.push_malformed(message, out);
    }

    fn push_malformed(&mut self, message: String, out: &mut Vec<Event>) {
        self.run.items_seen += 1;
        self.start(None, None, out);
        self.fail_run(ErrorCode::MalformedEvent.as_str(), message, out);
    }

    /// Hector's `event: error`: its data is the error, in any envelope.
    fn push_error_event(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if self.ignored() {
            return;
        }
        self.run.items_seen += 1;
        self.start(None, None, out);
        let report = match serde_json::from_slice::<Value>(data) {
            Ok(value) => {
                read::error_report(&value).unwrap_or_else(|| ErrorReport::from_value(&value))
            }
            Err(_) => ErrorReport::unexplained(),
        };
        self.fail_run(&report.code, report.message, out);
    }

    // -- run lifecycle ----------------------------------------------------------

    fn start(&mut self, context: Option<&str>, task: Option<&str>, out: &mut Vec<Event>) {
        self.run
            .start(&self.options, &mut self.ids, context, task, out);
    }

    fn finish_run(
        &mut self,
        mut result: Option<RunResult>,
        mut outcome: Option<Outcome>,
        out: &mut Vec<Event>,
    ) {
        self.close_all(out);
        self.subagents.close_all(None, out);
        let calls = std::mem::take(&mut self.tools.client_calls);
        let ended = result.as_ref().is_some_and(|r| {
            matches!(
                r.state,
                Some(RunState::Task(
                    TaskState::Canceled | TaskState::Failed | TaskState::Rejected
                ))
            )
        });
        // A task that ended waits for nobody's tools.
        if !calls.is_empty() && !ended {
            // The run waits on the client's tools, not on a question.
            let ids: Vec<String> = calls.iter().map(|id| id.to_string()).collect();
            result
                .get_or_insert_with(RunResult::default)
                .pending_tool_call_ids = Some(ids);
            outcome = self.run.tool_call_outcome(&self.options, &calls);
        }
        let usage = self.usage.for_terminal(self.options.version, out);
        out.extend(self.run.finished(result, outcome, usage));
    }

    fn fail_run(&mut self, code: &str, message: String, out: &mut Vec<Event>) {
        self.close_all(out);
        self.subagents.close_all(Some(&message), out);
        self.tools.client_calls.clear();
        let usage = self.usage.for_terminal(self.options.version, out);
        out.push(self.run.failed(code, message, usage));
    }

    /// `STATE_DELTA` for the members the agent changed.
    fn state_delta(&mut self, delta: Option<&Object>, out: &mut Vec<Event>) {
        if let Some(delta) = delta {
            let ops = delta
                .iter()
                .map(|(key, value)| PatchOp::add(PatchOp::member(key), value.clone()))
                .collect();
            self.state_patch(Patch::Ops(ops), out);
        }
    }

    fn close_all(&mut self, out: &mut Vec<Event>) {
        self.blocks.close(out);
        self.tools.flush(&mut self.ids, out);
    }

    // -- parts ----------------------------------------------------------------

    /// One part's meaning. `key` is the text segment it belongs to.
    fn on_block(
        &mut self,
        block: Block<'_>,
        key: Segment,
        artifact_id: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        let ids = &mut self.ids;
        match block {
            Block::Text(text) => self.blocks.text(ids, key, text, out),
            Block::Thinking(thinking) => self.blocks.thinking(ids, &thinking, out),
            Block::ThinkingComplete {
                block_id,
                signature,
            } => self.blocks.thinking_complete(block_id, signature, out),
            Block::ReasoningStep(thought) => self.blocks.reasoning_step(ids, thought, out),
            Block::ToolCall(call) => {
                let client_tool = self.options.client_tools.iter().any(|t| t == call.name);
                if client_tool && self.replaying {
                    // A call of the client's tool from an earlier turn: the
                    // client has it, and ran it.
                    return;
                }
                if call.id.is_some_and(|id| self.tools.knows(id)) {
                    // A repeated announcement of a call already sent: AG-UI
                    // forbids a second TOOL_CALL_START for the same id.
                    return;
                }
                self.blocks.close(out);
                self.blocks.new_step();
                let parent = self.blocks.last_text_id().cloned();
                // A client's tool is answered by the client; a call that
                // reports its result itself needs none.
                let announced = NewCall {
                    id: call.id,
                    name: call.name,
                    arguments: &call.arguments,
                    text: parent,
                    awaits_result: !client_tool && call.result.is_none(),
                };
                let id = self.tools.start(ids, announced, out);
                if client_tool {
                    // The client runs it: the run ends once this item is
                    // read, and no result is made up for it.
                    self.tools.client_calls.push(id);
                } else if let Some(result) = call.result {
                    tools::emit_result(ids, id, result, None, out);
                }
            }
            Block::ToolResult(result) => {
                // A result that names no call answers the open call of
                // its tool's name (ADK's code execution result, agents
                // that give results no id).
                let answered = match result.id {
                    None => self.tools.open_call(result.name),
                    Some(_) => None,
                };
                if result.id.is_none()
                    && answered.is_none()
                    && self.tools.answered_before(result.name, &result.content)
                {
                    // Resent once its call was answered: nothing new.
                    return;
                }
                if result.id.is_some_and(|id| self.tools.repeats(id, &result)) {
                    return;
                }
                self.blocks.close(out);
                self.blocks.new_step();
                let key = match (result.id, answered) {
                    (_, Some(key)) => key,
                    (Some(id), None) if self.tools.knows(id) => id.to_owned(),
                    // A result for a call never announced: announce it
                    // first, so the result refers to a known tool call.
                    _ => {
                        let parent = self.blocks.last_text_id().cloned();
                        let name = result.name.unwrap_or(read::UNKNOWN_TOOL);
                        let empty = Value::Object(Object::new());
                        let announced = NewCall {
                            id: result.id,
                            name,
                            arguments: &empty,
                            text: parent,
                            awaits_result: true,
                        };
                        self.tools.start(ids, announced, out).to_string()
                    }
                };
                self.tools.result(ids, key, result, out);
            }
            Block::Citation(citation) => self.citation(*citation, out),
            Block::File { file, metadata } => out.push(Event::Custom(Custom::File(FileNotice {
                uri: file.uri.map(str::to_owned),
                bytes: file.bytes.map(str::to_owned),
                media_type: file.media_type.map(str::to_owned),
                name: file.name.map(str::to_owned),
                artifact_id: artifact_id.map(str::to_owned),
                metadata: metadata.cloned(),
            }))),
            Block::Data {
                data,
                media_type,
                metadata,
            } => out.push(Event::Custom(Custom::Data(DataNotice {
                data: data.clone(),
                media_type: media_type.map(str::to_owned),
                artifact_id: artifact_id.map(str::to_owned),
                metadata: metadata.cloned(),
            }))),
            Block::ErrorNotice { message, code } => {
                out.push(Event::Custom(Custom::Error(ErrorNotice {
                    message: message.map(str::to_owned),
                    code: code.map(str::to_owned),
                })));
            }
            Block::Ui {
                surface_id,
                operation,
            } => {
                self.blocks.close(out);
                self.surfaces.operation(surface_id, operation, out);
            }
            Block::StateSnapshot(snapshot) => self.state_snapshot(snapshot, out),
            Block::StatePatch(patch) => self.state_patch(Patch::Agent(patch.to_vec()), out),
            Block::Unreadable(value) => out.push(raw(value.clone())),
        }
    }
}

fn raw(event: Value) -> Event {
    Event::Raw {
        event,
        source: Some("a2a".to_owned()),
    }
}

/// A payload's JSON, without what some agents frame it with: a record
/// separator before each text (RFC 7464 JSON text sequences, as one
/// framework writes every `data:`), a byte-order mark, white space. What
/// follows is read as JSON as any payload is; anything else still fails.
fn unframed(data: &[u8]) -> &[u8] {
    const BOM: &[u8] = "\u{feff}".as_bytes();
    let mut rest = data;
    loop {
        // Nearly every payload: JSON at once.
        match rest.first() {
            Some(b'{' | b'[') | None => return rest,
            Some(0x1e) => rest = &rest[1..],
            Some(b) if b.is_ascii_whitespace() => rest = &rest[1..],
            Some(_) => match rest.strip_prefix(BOM) {
                Some(after) => rest = after,
                None => return rest,
            },
        }
    }
}

#[cfg(test)]
mod framing_tests {
    use super::unframed;

    #[test]
    fn framing_before_the_json_is_dropped_and_nothing_else() {
        assert_eq!(unframed(b"\x1e{\"a\":1}\n"), b"{\"a\":1}\n");
        assert_eq!(unframed("\u{feff} \x1e\t[1]".as_bytes()), b"[1]");
        assert_eq!(unframed(b"{}"), b"{}");
        assert_eq!(unframed(b" \x1e "), b"");
        // Not JSON after the framing: left for the reader to refuse.
        assert_eq!(unframed(b"\x1enot json"), b"not json");
        assert_eq!(unframed(b"\xef\xbbx"), b"\xef\xbbx");
    }
}
