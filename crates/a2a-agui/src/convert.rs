//! The converter: A2A stream items in, AG-UI events out.
//!
//! One [`Converter`] follows one run. It keeps only what the AG-UI
//! sequencing rules need (which text message, reasoning block and tool calls
//! are open) plus fingerprints for de-duplication, all bounded. Whatever the
//! input, the output obeys the client's rules: one `RUN_STARTED` first, one
//! terminal event last, nothing for an entity that is not open, everything
//! closed before `RUN_FINISHED`.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Value, json};

use crate::a2a::{
    self, ErrorReport, Item, Object, PartBody, TaskState, array, flag, metadata, object, text,
};
use crate::digest::{TextDigest, WordHashBuilder};
use crate::event::{AssistantRole, Event, Id, Interrupt, Outcome, ReasoningRole, ToolRole};
use crate::fast::{self, FastItem, Shape};
use crate::hints::{self, PartHints, PartRole};
use crate::ids::{IdKind, IdSource, SequentialIds};

/// How many artifacts, tool calls and message ids one run keeps track of.
/// Past this, de-duplication degrades; output stays well-formed.
pub const MAX_TRACKED: usize = 4096;
/// How many closed text segments are remembered for repeat detection.
const RECENT_SEGMENTS: usize = 64;
/// Incremental tool output is gathered up to this size, then delivered.
pub const MAX_PENDING_TOOL_OUTPUT: usize = 16 << 20;

/// `RUN_ERROR.code` values this crate writes itself. Upstream errors carry
/// `A2A_<reason>` codes (see [`ErrorReport`]).
pub mod codes {
    pub const TASK_FAILED: &str = "A2A_TASK_FAILED";
    pub const TASK_REJECTED: &str = "A2A_TASK_REJECTED";
    pub const MALFORMED_EVENT: &str = "A2A_MALFORMED_EVENT";
    pub const UPSTREAM_ENDED_EARLY: &str = "UPSTREAM_ENDED_EARLY";
    pub const UPSTREAM_EMPTY: &str = "UPSTREAM_EMPTY";
    pub const ACP_RUN_FAILED: &str = "ACP_RUN_FAILED";
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `RUN_STARTED.threadId`; defaults to the first item's contextId.
    pub thread_id: Option<String>,
    /// `RUN_STARTED.runId`; defaults to the first item's taskId.
    pub run_id: Option<String>,
    /// End input-required / auth-required runs with an `interrupt` outcome.
    /// Off by default: `@ag-ui/client` 1.0 then refuses the next run unless
    /// the UI answers the interrupt with `resume`.
    pub interrupts: bool,
}

/// How the input ended, as the caller saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// The upstream closed the stream.
    Eof,
    /// The caller gave up on the upstream (timeout, transport error, …).
    Failed { code: String, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Running,
    Done,
}

/// Which text stream a piece of text continues. Text for a different key
/// closes the open message and starts a fresh one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SegmentKey {
    Message(String),
    Status,
    Artifact(String),
    Acp,
}

#[derive(Debug, Clone, Copy)]
enum KeyRef<'a> {
    Message(&'a str),
    Status,
    Artifact(&'a str),
    Acp,
}

impl SegmentKey {
    fn is(&self, other: KeyRef<'_>) -> bool {
        match (self, other) {
            (SegmentKey::Message(a), KeyRef::Message(b)) => a == b,
            (SegmentKey::Artifact(a), KeyRef::Artifact(b)) => a == b,
            (SegmentKey::Status, KeyRef::Status) | (SegmentKey::Acp, KeyRef::Acp) => true,
            _ => false,
        }
    }
}

impl KeyRef<'_> {
    fn to_owned_key(self) -> SegmentKey {
        match self {
            KeyRef::Message(id) => SegmentKey::Message(id.to_owned()),
            KeyRef::Status => SegmentKey::Status,
            KeyRef::Artifact(id) => SegmentKey::Artifact(id.to_owned()),
            KeyRef::Acp => SegmentKey::Acp,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct PartContext<'a> {
    key: KeyRef<'a>,
    artifact_id: Option<&'a str>,
}

#[derive(Debug)]
struct OpenText {
    id: Id,
    key: SegmentKey,
    digest: TextDigest,
}

#[derive(Debug)]
struct OpenReasoning {
    span: Id,
    message: Id,
    block: Option<String>,
    signature: Option<String>,
    thinking_type: Option<String>,
}

#[derive(Debug)]
struct ToolState {
    id: Id,
    pending: String,
    pending_error: Option<String>,
}

#[derive(Debug, Default)]
struct ArtifactState {
    parts_seen: usize,
    description: Option<TextDigest>,
    /// Fingerprint of the event-level metadata last announced.
    event_metadata: Option<TextDigest>,
    /// A `partial: true` event streamed into this artifact.
    streamed_partial: bool,
    /// The fast reader's fingerprint of the raw description bytes, so that
    /// repeated descriptions are skipped without parsing them.
    raw_description: Option<u64>,
    commands: Option<TextDigest>,
}

/// Where a message came from; decides its text key and de-duplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageOrigin {
    /// A `message` stream item.
    Stream,
    /// `status.message` of a working / submitted status.
    Status,
    /// `status.message` of a status that ends the turn.
    Closing,
}

enum Repeat {
    Emit,
    Skip,
    /// The message repeats everything streamed so far, then adds this.
    Remainder(String),
}

pub struct Converter<I = SequentialIds> {
    options: Options,
    ids: I,
    phase: Phase,
    thread_id: Option<Id>,
    run_id: Option<Id>,
    task_id: Option<String>,
    context_id: Option<String>,
    items_seen: u64,
    saw_task: bool,
    saw_agent_message: bool,
    last_state: Option<TaskState>,
    text: Option<OpenText>,
    last_text_id: Option<Id>,
    reasoning: Option<OpenReasoning>,
    tools: HashMap<String, ToolState, WordHashBuilder>,
    artifacts: HashMap<String, ArtifactState, WordHashBuilder>,
    seen_messages: HashSet<String, WordHashBuilder>,
    /// Reasoning blocks already closed, by upstream block id.
    closed_blocks: HashSet<String, WordHashBuilder>,
    run_text: TextDigest,
    recent_segments: VecDeque<TextDigest>,
    ignored_after_finish: u64,
    /// Set while a run ends waiting for input: the text message it closes
    /// says which task is waiting (see `Event::TextMessageEnd`).
    closing_text_metadata: Option<Value>,
}

impl Converter<SequentialIds> {
    /// A converter minting ids `msg-1`, `tool-result-2`, … (reproducible).
    pub fn with_sequential_ids(options: Options) -> Self {
        Converter::new(options, SequentialIds::default())
    }
}

impl<I: IdSource> Converter<I> {
    pub fn new(options: Options, ids: I) -> Self {
        Converter {
            options,
            ids,
            phase: Phase::Idle,
            thread_id: None,
            run_id: None,
            task_id: None,
            context_id: None,
            items_seen: 0,
            saw_task: false,
            saw_agent_message: false,
            last_state: None,
            text: None,
            last_text_id: None,
            reasoning: None,
            tools: HashMap::default(),
            artifacts: HashMap::default(),
            seen_messages: HashSet::default(),
            closed_blocks: HashSet::default(),
            run_text: TextDigest::default(),
            recent_segments: VecDeque::new(),
            ignored_after_finish: 0,
            closing_text_metadata: None,
        }
    }

    /// True once the terminal event has been written; later input is ignored.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done
    }

    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    pub fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// The A2A task the run belongs to, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    pub fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    /// Items that arrived after the terminal event (a trailing Task
    /// snapshot, for example) and so produced nothing.
    pub fn ignored_after_finish(&self) -> u64 {
        self.ignored_after_finish
    }

    /// One SSE event from the upstream: its `event:` name and `data:`.
    pub fn push_sse(&mut self, event_name: Option<&str>, data: &[u8], out: &mut Vec<Event>) {
        if data.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match event_name {
            // Hector's end-of-stream marker; the stream end decides the outcome.
            Some("done") => {}
            Some("error") => self.push_error_event(data, out),
            _ => self.push_json(data, out),
        }
    }

    /// One JSON document (an SSE `data:` payload or a JSONL line).
    pub fn push_json(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        if self.phase == Phase::Done {
            self.ignored_after_finish += 1;
            return;
        }
        // Validating UTF-8 once for the whole payload is cheaper than the
        // JSON reader checking each string it borrows.
        let Ok(json) = std::str::from_utf8(bytes) else {
            self.push_unreadable(bytes, out);
            return;
        };
        if let Some(item) = fast::read(json) {
            self.push_fast(item, out);
            return;
        }
        match serde_json::from_str::<Value>(json) {
            Ok(value) => self.push_value(&value, out),
            Err(err) => {
                self.items_seen += 1;
                self.start_run(None, None, out);
                self.fail_run(
                    codes::MALFORMED_EVENT,
                    format!("upstream sent an event that is not valid JSON: {err}"),
                    out,
                );
            }
        }
    }

    fn push_unreadable(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        self.items_seen += 1;
        self.start_run(None, None, out);
        let message = match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(err) => format!("upstream sent an event that is not valid JSON: {err}"),
            Ok(_) => "upstream sent an event that is not valid UTF-8".to_owned(),
        };
        self.fail_run(codes::MALFORMED_EVENT, message, out);
    }

    /// One parsed stream item.
    pub fn push_value(&mut self, value: &Value, out: &mut Vec<Event>) {
        if self.phase == Phase::Done {
            self.ignored_after_finish += 1;
            return;
        }
        self.items_seen += 1;
        let item = a2a::classify(value);
        let (context, task) = item_ids(&item);
        self.start_run(context, task, out);
        self.remember_ids(context, task);
        match item {
            Item::Task(task) => self.on_task(task, out),
            Item::Message(message) => self.convert_message(message, MessageOrigin::Stream, out),
            Item::StatusUpdate(update) => self.on_status_update(update, out),
            Item::ArtifactUpdate(update) => self.on_artifact_update(update, value, out),
            Item::Error(report) => self.fail_run(&report.code, report.message, out),
            Item::Acp(kind, event) => self.on_acp(kind, event, value, out),
            // A bare `null` carries nothing to forward, and RAW.event may not be null.
            Item::Unknown if value.is_null() => {}
            Item::Unknown => out.push(raw(value.clone())),
        }
    }

    /// The input has ended. Closes what is open and writes the terminal
    /// event if the stream did not carry one.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Event>) {
        if self.phase == Phase::Done {
            return;
        }
        self.start_run(None, None, out);
        match end {
            StreamEnd::Failed { code, message } => self.fail_run(&code, message, out),
            StreamEnd::Eof if !self.saw_task && self.saw_agent_message => {
                let result = self.context_id.as_ref().map(|c| json!({ "contextId": c }));
                self.finish_run(result, None, out);
            }
            StreamEnd::Eof
                if matches!(
                    self.last_state,
                    Some(TaskState::InputRequired | TaskState::AuthRequired)
                ) =>
            {
                let state = self.last_state.unwrap_or(TaskState::InputRequired);
                let outcome = self.interrupt_outcome(state, None);
                let result = self.task_result(state.as_str());
                self.finish_run(Some(result), outcome, out);
            }
            StreamEnd::Eof if self.items_seen == 0 => self.fail_run(
                codes::UPSTREAM_EMPTY,
                "upstream closed the stream without sending any event".to_owned(),
                out,
            ),
            StreamEnd::Eof => {
                let state = self.last_state.map_or("unknown", TaskState::as_str);
                self.fail_run(
                    codes::UPSTREAM_ENDED_EARLY,
                    format!(
                        "upstream closed the stream before the task reached a final state (last state: {state})"
                    ),
                    out,
                );
            }
        }
    }

    // -- run lifecycle ------------------------------------------------------

    fn start_run(&mut self, context: Option<&str>, task: Option<&str>, out: &mut Vec<Event>) {
        if self.phase != Phase::Idle {
            return;
        }
        let thread = match (&self.options.thread_id, context) {
            (Some(given), _) => given.clone(),
            (None, Some(context)) if !context.is_empty() => context.to_owned(),
            _ => self.ids.next_id(IdKind::Thread),
        };
        let run = match (&self.options.run_id, task) {
            (Some(given), _) => given.clone(),
            (None, Some(task)) if !task.is_empty() => task.to_owned(),
            _ => self.ids.next_id(IdKind::Run),
        };
        let thread_id: Id = thread.into();
        let run_id: Id = run.into();
        out.push(Event::RunStarted {
            thread_id: thread_id.clone(),
            run_id: run_id.clone(),
        });
        self.thread_id = Some(thread_id);
        self.run_id = Some(run_id);
        self.phase = Phase::Running;
    }

    fn remember_ids(&mut self, context: Option<&str>, task: Option<&str>) {
        if let Some(context) = context.filter(|c| !c.is_empty())
            && self.context_id.as_deref() != Some(context)
        {
            self.context_id = Some(context.to_owned());
        }
        if let Some(task) = task.filter(|t| !t.is_empty())
            && self.task_id.as_deref() != Some(task)
        {
            self.task_id = Some(task.to_owned());
        }
    }

    fn finish_run(
        &mut self,
        result: Option<Value>,
        outcome: Option<Outcome>,
        out: &mut Vec<Event>,
    ) {
        self.close_all(out);
        let (Some(thread_id), Some(run_id)) = (self.thread_id.clone(), self.run_id.clone()) else {
            return;
        };
        out.push(Event::RunFinished {
            thread_id,
            run_id,
            result,
            outcome,
        });
        self.phase = Phase::Done;
    }

    fn fail_run(&mut self, code: &str, message: String, out: &mut Vec<Event>) {
        self.close_all(out);
        out.push(Event::RunError {
            message,
            code: Some(code.to_owned()),
        });
        self.phase = Phase::Done;
    }

    fn close_all(&mut self, out: &mut Vec<Event>) {
        self.close_reasoning(out);
        self.close_text(out);
        self.flush_pending_tool_output(out);
    }

    fn task_result(&self, state: &str) -> Value {
        let mut result = Object::new();
        if let Some(task) = &self.task_id {
            result.insert("taskId".to_owned(), Value::from(task.as_str()));
        }
        if let Some(context) = &self.context_id {
            result.insert("contextId".to_owned(), Value::from(context.as_str()));
        }
        result.insert("state".to_owned(), Value::from(state));
        Value::Object(result)
    }

    // -- tasks and statuses -------------------------------------------------

    fn on_task(&mut self, task: &Object, out: &mut Vec<Event>) {
        self.saw_task = true;
        if let Some(artifacts) = array(task, "artifacts") {
            self.snapshot_artifacts(artifacts, out);
        }
        let status = object(task, "status");
        let state = status.map_or(TaskState::Unknown, a2a::status_state);
        let interrupted = matches!(state, TaskState::InputRequired | TaskState::AuthRequired);
        if interrupted && self.items_seen == 1 {
            // A continuation (or a resubscription) opens with the task as it
            // was before this turn: still waiting, its question already
            // shown. The turn's own events follow; if none do, the end of
            // input finishes the run in this state.
            self.status_notice(state, status, metadata(task), out);
            self.last_state = Some(state);
            return;
        }
        self.on_status(state, status, metadata(task), out);
    }

    fn on_status_update(&mut self, update: &Object, out: &mut Vec<Event>) {
        self.saw_task = true;
        let status = object(update, "status");
        let state = status.map_or(TaskState::Unknown, a2a::status_state);
        self.on_status(state, status, metadata(update), out);
    }

    fn on_status(
        &mut self,
        state: TaskState,
        status: Option<&Object>,
        event_metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        let message = status.and_then(|s| object(s, "message"));
        match state {
            TaskState::Failed | TaskState::Rejected => {
                let (code, fallback) = if state == TaskState::Failed {
                    (codes::TASK_FAILED, "the agent reported the task as failed")
                } else {
                    (codes::TASK_REJECTED, "the agent rejected the task")
                };
                let text = message.map(message_text).unwrap_or_default();
                let text = if text.is_empty() {
                    fallback.to_owned()
                } else {
                    text
                };
                self.fail_run(code, text, out);
            }
            state if state.ends_turn() => {
                if let Some(message) = message {
                    self.convert_message(message, MessageOrigin::Closing, out);
                }
                let outcome = self.interrupt_outcome(state, message);
                let result = self.task_result(state.as_str());
                if matches!(state, TaskState::InputRequired | TaskState::AuthRequired) {
                    self.closing_text_metadata = Some(json!({ "a2a": &result }));
                }
                self.finish_run(Some(result), outcome, out);
            }
            state => {
                if self.last_state != Some(state) || event_metadata.is_some() {
                    self.status_notice(state, status, event_metadata, out);
                }
                self.last_state = Some(state);
                if let Some(message) = message {
                    self.convert_message(message, MessageOrigin::Status, out);
                }
            }
        }
    }

    fn status_notice(
        &mut self,
        state: TaskState,
        status: Option<&Object>,
        event_metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        let mut value = Object::new();
        if let Some(task) = &self.task_id {
            value.insert("taskId".to_owned(), Value::from(task.as_str()));
        }
        if let Some(context) = &self.context_id {
            value.insert("contextId".to_owned(), Value::from(context.as_str()));
        }
        value.insert("state".to_owned(), Value::from(state.as_str()));
        if let Some(timestamp) = status
            .and_then(|s| s.get("timestamp"))
            .filter(|t| t.is_string())
        {
            value.insert("timestamp".to_owned(), timestamp.clone());
        }
        if let Some(meta) = event_metadata {
            value.insert("metadata".to_owned(), Value::Object(meta.clone()));
        }
        out.push(custom("a2a.status", Value::Object(value)));
    }

    fn interrupt_outcome(&self, state: TaskState, message: Option<&Object>) -> Option<Outcome> {
        if !self.options.interrupts {
            return None;
        }
        let reason = match state {
            TaskState::InputRequired => "input_required",
            TaskState::AuthRequired => "auth_required",
            _ => return None,
        };
        let id = self
            .task_id
            .clone()
            .or_else(|| self.run_id.as_deref().map(str::to_owned))
            .unwrap_or_default();
        let message = message.map(message_text).filter(|m| !m.is_empty());
        Some(Outcome::Interrupt {
            interrupts: vec![Interrupt {
                id,
                reason: reason.to_owned(),
                message,
            }],
        })
    }

    // -- messages -----------------------------------------------------------

    fn convert_message(&mut self, message: &Object, origin: MessageOrigin, out: &mut Vec<Event>) {
        if a2a::is_user_role(message) {
            out.push(raw(Value::Object(message.clone())));
            return;
        }
        let message_id = text(message, "messageId");
        if origin == MessageOrigin::Stream {
            self.saw_agent_message = true;
        } else if message_id.is_some_and(|id| self.seen_messages.contains(id)) {
            return;
        }
        if let Some(id) = message_id
            && self.seen_messages.len() < MAX_TRACKED
        {
            self.seen_messages.insert(id.to_owned());
        }
        let key = match origin {
            MessageOrigin::Stream => KeyRef::Message(message_id.unwrap_or("")),
            MessageOrigin::Status | MessageOrigin::Closing => KeyRef::Status,
        };
        let context = PartContext {
            key,
            artifact_id: None,
        };
        match self.repeat_check(message, origin) {
            Repeat::Skip => return,
            Repeat::Remainder(rest) => self.text(key, &rest, out),
            Repeat::Emit => {
                for part in a2a::message_parts(message) {
                    self.convert_part_value(part, context, out);
                }
            }
        }
        self.message_metadata(message, message_id, out);
    }

    /// A closing status often repeats the answer already streamed (Hector
    /// sends the whole text again). Repeats add nothing; a message that
    /// extends what was streamed adds only the extension.
    fn repeat_check(&self, message: &Object, origin: MessageOrigin) -> Repeat {
        if origin != MessageOrigin::Closing {
            return Repeat::Emit;
        }
        let parts = a2a::message_parts(message);
        let plain_text_only = parts.iter().all(|p| {
            p.as_object().is_some_and(|p| {
                matches!(a2a::part_body(p), PartBody::Text(_))
                    && hints::part_hints(metadata(p)).role() == PartRole::Plain
            })
        });
        if !plain_text_only || parts.is_empty() {
            return Repeat::Emit;
        }
        self.repeat_of(&message_text(message))
    }

    /// Whether `whole` repeats text already streamed (all of it, the open
    /// segment or a recent one), extends it (only the rest is new), or is new.
    fn repeat_of(&self, whole: &str) -> Repeat {
        let digest = TextDigest::of(whole);
        let open_segment = self.text.as_ref().map(|open| open.digest);
        if whole.is_empty()
            || digest == self.run_text
            || open_segment == Some(digest)
            || self.recent_segments.contains(&digest)
        {
            return Repeat::Skip;
        }
        for streamed in [open_segment, Some(self.run_text)].into_iter().flatten() {
            let len = streamed.len();
            if len > 0
                && whole.len() > len
                && whole.is_char_boundary(len)
                && TextDigest::of(&whole[..len]) == streamed
            {
                return Repeat::Remainder(whole[len..].to_owned());
            }
        }
        Repeat::Emit
    }

    fn message_metadata(
        &mut self,
        message: &Object,
        message_id: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        let Some(meta) = metadata(message) else {
            return;
        };
        let mut rest = Object::new();
        for (key, value) in meta {
            if hints::AGENTSTACK_CITATION.contains(&key.as_str()) {
                for entry in hints::citation_entries(value) {
                    self.citation(entry, out);
                }
            } else if hints::AGENTSTACK_TRAJECTORY.contains(&key.as_str()) {
                if let Some(obj) = value.as_object() {
                    out.push(custom(
                        "a2a.trajectory",
                        Value::Object(hints::trajectory(obj)),
                    ));
                }
            } else {
                rest.insert(key.clone(), value.clone());
            }
        }
        if !rest.is_empty() {
            let mut value = Object::new();
            if let Some(id) = message_id {
                value.insert("messageId".to_owned(), Value::from(id));
            }
            value.insert("metadata".to_owned(), Value::Object(rest));
            out.push(custom("a2a.message_metadata", Value::Object(value)));
        }
    }

    fn citation(&mut self, source: &Object, out: &mut Vec<Event>) {
        let mut value = hints::citation(source);
        if let Some(id) = &self.last_text_id {
            value.insert("messageId".to_owned(), Value::from(&**id));
        }
        out.push(custom("a2a.citation", Value::Object(value)));
    }

    // -- parts --------------------------------------------------------------

    fn convert_part_value(&mut self, part: &Value, context: PartContext<'_>, out: &mut Vec<Event>) {
        match part.as_object() {
            Some(part) => self.convert_part(part, context, out),
            None if part.is_null() => {}
            None => out.push(raw(part.clone())),
        }
    }

    fn convert_part(&mut self, part: &Object, context: PartContext<'_>, out: &mut Vec<Event>) {
        let part_metadata = metadata(part);
        let hints = hints::part_hints(part_metadata);
        let body = a2a::part_body(part);
        match hints.role() {
            PartRole::Thinking => {
                let thought = match &body {
                    PartBody::Text(t) => t,
                    PartBody::Data(d) => d.get("text").and_then(Value::as_str).unwrap_or(""),
                    _ => "",
                };
                self.thinking(&hints, thought, out);
            }
            PartRole::ThinkingComplete => {
                let data = match &body {
                    PartBody::Data(d) => d.as_object(),
                    _ => None,
                };
                let block = hints
                    .block_id
                    .or_else(|| data.and_then(|d| text(d, "thinking_id")));
                let signature = hints
                    .signature
                    .or_else(|| data.and_then(|d| text(d, "signature")));
                self.thinking_complete(block, signature, out);
            }
            PartRole::ToolCall => self.tool_call(&hints, &body, out),
            PartRole::ToolResult => self.tool_result(&hints, &body, out),
            PartRole::ErrorNotice => {
                let mut value = Object::new();
                if let PartBody::Text(t) = body {
                    value.insert("message".to_owned(), Value::from(t));
                }
                if let Some(code) = hints.error_code {
                    value.insert("code".to_owned(), Value::from(code));
                }
                out.push(custom("a2a.error", Value::Object(value)));
            }
            PartRole::Citation => {
                self.plain_part(part, body, part_metadata, context, out);
                if let Some(meta) = part_metadata {
                    self.citation(meta, out);
                }
            }
            PartRole::Trajectory => {
                if let Some(meta) = part_metadata {
                    self.acp_trajectory(meta, out);
                }
                self.plain_part(part, body, None, context, out);
            }
            PartRole::Plain => {
                if let PartBody::Data(data) = &body
                    && let Some(data) = data.as_object()
                    && self.hector_v2_part(data, out)
                {
                    return;
                }
                self.plain_part(part, body, part_metadata, context, out)
            }
        }
    }

    /// Hector v2 marks its parts in the data itself: `{"type":"thinking",
    /// "id","content","status"}` (active content is a delta, completed is
    /// the whole text), `{"type":"tool_use","id","name","arguments"}` and
    /// `{"type":"tool_result","tool_call_id","tool_name","content","is_error"}`.
    /// Returns false for any other data.
    fn hector_v2_part(&mut self, data: &Object, out: &mut Vec<Event>) -> bool {
        match text(data, "type") {
            Some("thinking") => {
                let id = text(data, "id");
                let content = text(data, "content")
                    .or_else(|| text(data, "thinking"))
                    .unwrap_or("");
                let signature = text(data, "signature").filter(|s| !s.is_empty());
                let completed = text(data, "status") == Some("completed");
                let open = self
                    .reasoning
                    .as_ref()
                    .is_some_and(|r| id.is_some() && r.block.as_deref() == id);
                let done_before = id.is_some_and(|id| self.closed_blocks.contains(id));
                if completed && (open || done_before) {
                    // The whole text of a block already streamed as deltas.
                    if open {
                        self.thinking_complete(id, signature, out);
                    }
                    return true;
                }
                let hints = PartHints {
                    block_id: id,
                    signature,
                    thinking_type: text(data, "thinking_type"),
                    ..PartHints::default()
                };
                self.thinking(&hints, content, out);
                if completed {
                    self.close_reasoning(out);
                }
                true
            }
            Some("tool_use") => {
                let id = text(data, "id");
                if id.is_some_and(|id| self.tools.contains_key(id)) {
                    return true;
                }
                let name = text(data, "name").unwrap_or(UNKNOWN_TOOL);
                let arguments = hints::tool_arguments(data);
                self.start_tool_call(id, name, &arguments, out);
                true
            }
            Some("tool_result") => {
                let hints = PartHints {
                    tool_call_id: text(data, "tool_call_id"),
                    tool_name: text(data, "tool_name"),
                    has_is_error: true,
                    is_error: flag(data, "is_error").unwrap_or(false),
                    ..PartHints::default()
                };
                self.tool_result(&hints, &PartBody::Data(&Value::Object(data.clone())), out);
                true
            }
            _ => false,
        }
    }

    fn plain_part(
        &mut self,
        part: &Object,
        body: PartBody<'_>,
        part_metadata: Option<&Object>,
        context: PartContext<'_>,
        out: &mut Vec<Event>,
    ) {
        let (name, mut value) = match body {
            PartBody::Text(t) => return self.text(context.key, t, out),
            PartBody::Empty => return,
            PartBody::File(file) => ("a2a.file", file.to_json()),
            PartBody::Data(data) => {
                let mut value = Object::new();
                value.insert("data".to_owned(), data.clone());
                if let Some(media_type) = text(part, "mediaType") {
                    value.insert("mediaType".to_owned(), Value::from(media_type));
                }
                ("a2a.data", value)
            }
        };
        if let Some(artifact_id) = context.artifact_id {
            value.insert("artifactId".to_owned(), Value::from(artifact_id));
        }
        if let Some(meta) = part_metadata {
            value.insert("metadata".to_owned(), Value::Object(meta.clone()));
        }
        out.push(custom(name, Value::Object(value)));
    }

    // -- text ---------------------------------------------------------------

    fn text(&mut self, key: KeyRef<'_>, delta: &str, out: &mut Vec<Event>) {
        if delta.is_empty() {
            return;
        }
        self.close_reasoning(out);
        if !self.text.as_ref().is_some_and(|open| open.key.is(key)) {
            self.close_text(out);
            let id: Id = self.ids.next_id(IdKind::Message).into();
            out.push(Event::TextMessageStart {
                message_id: id.clone(),
                role: AssistantRole::Assistant,
            });
            self.last_text_id = Some(id.clone());
            self.text = Some(OpenText {
                id,
                key: key.to_owned_key(),
                digest: TextDigest::default(),
            });
        }
        if let Some(open) = &mut self.text {
            open.digest.update(delta);
            self.run_text.update(delta);
            out.push(Event::TextMessageContent {
                message_id: open.id.clone(),
                delta: delta.to_owned(),
            });
        }
    }

    fn close_text(&mut self, out: &mut Vec<Event>) {
        if let Some(open) = self.text.take() {
            out.push(Event::TextMessageEnd {
                message_id: open.id,
                metadata: self.closing_text_metadata.take(),
            });
            if self.recent_segments.len() == RECENT_SEGMENTS {
                self.recent_segments.pop_front();
            }
            self.recent_segments.push_back(open.digest);
        }
    }

    fn close_text_of(&mut self, key: KeyRef<'_>, out: &mut Vec<Event>) {
        if self.text.as_ref().is_some_and(|open| open.key.is(key)) {
            self.close_text(out);
        }
    }

    // -- reasoning ----------------------------------------------------------

    fn thinking(&mut self, hints: &PartHints<'_>, thought: &str, out: &mut Vec<Event>) {
        self.close_text(out);
        // Thinking parts without a block id continue the open block: Hector
        // would start a block per chunk (its bug), which no UI wants.
        let continues = self
            .reasoning
            .as_ref()
            .is_some_and(|r| hints.block_id.is_none() || r.block.as_deref() == hints.block_id);
        if !continues {
            self.close_reasoning(out);
            let span: Id = self.ids.next_id(IdKind::Reasoning).into();
            let message: Id = self.ids.next_id(IdKind::ReasoningMessage).into();
            out.push(Event::ReasoningStart {
                message_id: span.clone(),
            });
            out.push(Event::ReasoningMessageStart {
                message_id: message.clone(),
                role: ReasoningRole::Reasoning,
            });
            self.reasoning = Some(OpenReasoning {
                span,
                message,
                block: hints.block_id.map(str::to_owned),
                signature: None,
                thinking_type: None,
            });
        }
        if let Some(open) = &mut self.reasoning {
            if let Some(signature) = hints.signature {
                open.signature = Some(signature.to_owned());
            }
            if let Some(kind) = hints.thinking_type {
                open.thinking_type = Some(kind.to_owned());
            }
            if !thought.is_empty() {
                out.push(Event::ReasoningMessageContent {
                    message_id: open.message.clone(),
                    delta: thought.to_owned(),
                });
            }
        }
    }

    fn thinking_complete(
        &mut self,
        block: Option<&str>,
        signature: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        let matches_open = self
            .reasoning
            .as_ref()
            .is_some_and(|r| block.is_none() || r.block.is_none() || r.block.as_deref() == block);
        if matches_open {
            if let (Some(open), Some(signature)) = (&mut self.reasoning, signature) {
                open.signature = Some(signature.to_owned());
            }
            self.close_reasoning(out);
        } else if let Some(signature) = signature {
            let mut value = Object::new();
            if let Some(block) = block {
                value.insert("blockId".to_owned(), Value::from(block));
            }
            value.insert("signature".to_owned(), Value::from(signature));
            out.push(custom("a2a.reasoning", Value::Object(value)));
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        let Some(open) = self.reasoning.take() else {
            return;
        };
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
            let mut value = Object::new();
            value.insert("messageId".to_owned(), Value::from(&*open.message));
            if let Some(signature) = open.signature {
                value.insert("signature".to_owned(), Value::from(signature));
            }
            if let Some(kind) = open.thinking_type {
                value.insert("thinkingType".to_owned(), Value::from(kind));
            }
            out.push(custom("a2a.reasoning", Value::Object(value)));
        }
    }

    // -- tools --------------------------------------------------------------

    fn tool_call(&mut self, hints: &PartHints<'_>, body: &PartBody<'_>, out: &mut Vec<Event>) {
        let payload = match body {
            PartBody::Data(data) => hints::tool_payload(data),
            _ => None,
        };
        let id = hints
            .tool_call_id
            .or_else(|| payload.and_then(|p| text(p, "id")));
        let name = hints
            .tool_name
            .or_else(|| payload.and_then(|p| text(p, "name")))
            .unwrap_or(UNKNOWN_TOOL);
        let arguments = payload.map_or_else(|| Value::Object(Object::new()), hints::tool_arguments);
        if id.is_some_and(|id| self.tools.contains_key(id)) {
            // A repeated announcement of a call already sent: AG-UI forbids
            // a second TOOL_CALL_START for the same id.
            return;
        }
        self.start_tool_call(id, name, &arguments, out);
    }

    fn start_tool_call(
        &mut self,
        id: Option<&str>,
        name: &str,
        arguments: &Value,
        out: &mut Vec<Event>,
    ) -> Id {
        self.close_reasoning(out);
        self.close_text(out);
        let key = match id {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => self.ids.next_id(IdKind::ToolCall),
        };
        let tool_call_id: Id = key.as_str().into();
        out.push(Event::ToolCallStart {
            tool_call_id: tool_call_id.clone(),
            tool_call_name: name.to_owned(),
            parent_message_id: self.last_text_id.clone(),
        });
        out.push(Event::ToolCallArgs {
            tool_call_id: tool_call_id.clone(),
            delta: arguments_json(arguments),
        });
        out.push(Event::ToolCallEnd {
            tool_call_id: tool_call_id.clone(),
        });
        if self.tools.len() < MAX_TRACKED {
            self.tools.insert(
                key,
                ToolState {
                    id: tool_call_id.clone(),
                    pending: String::new(),
                    pending_error: None,
                },
            );
        }
        tool_call_id
    }

    fn tool_result(&mut self, hints: &PartHints<'_>, body: &PartBody<'_>, out: &mut Vec<Event>) {
        let payload = match body {
            PartBody::Data(data) => hints::tool_payload(data),
            _ => None,
        };
        let id = hints
            .tool_call_id
            .or_else(|| payload.and_then(|p| text(p, "tool_call_id")));
        let content = match (body, payload.and_then(|p| p.get("content"))) {
            (_, Some(Value::String(s))) => s.clone(),
            (_, Some(Value::Null) | None) => match body {
                PartBody::Text(t) => (*t).to_owned(),
                _ => String::new(),
            },
            (_, Some(other)) => other.to_string(),
        };
        let error = payload
            .and_then(|p| text(p, "error"))
            .filter(|e| !e.is_empty())
            .map(str::to_owned);
        let is_error = hints.is_error || error.is_some();
        let error = match (is_error, error) {
            (true, None) => Some(content.clone()),
            (_, error) => error,
        };
        self.close_reasoning(out);
        self.close_text(out);
        let key = match id {
            Some(id) if self.tools.contains_key(id) => id.to_owned(),
            _ => {
                // A result for a call never announced: announce it first, so
                // the result refers to a known tool call.
                let name = hints.tool_name.unwrap_or(UNKNOWN_TOOL);
                let started = self.start_tool_call(id, name, &Value::Object(Object::new()), out);
                started.to_string()
            }
        };
        let is_final = hints.is_final.unwrap_or(true);
        let Some(tool) = self.tools.get_mut(&key) else {
            // Tracking is full: deliver at once rather than lose the output.
            let tool_call_id: Id = key.into();
            self.emit_tool_result(tool_call_id, content, error, out);
            return;
        };
        tool.pending.push_str(&content);
        if error.is_some() {
            tool.pending_error = error;
        }
        if is_final || tool.pending.len() >= MAX_PENDING_TOOL_OUTPUT {
            let content = std::mem::take(&mut tool.pending);
            let error = tool.pending_error.take();
            let tool_call_id = tool.id.clone();
            self.emit_tool_result(tool_call_id, content, error, out);
        }
    }

    fn emit_tool_result(
        &mut self,
        tool_call_id: Id,
        content: String,
        error: Option<String>,
        out: &mut Vec<Event>,
    ) {
        if let Some(error) = &error {
            out.push(custom(
                "a2a.tool_error",
                json!({ "toolCallId": &*tool_call_id, "error": error }),
            ));
        }
        // AG-UI's tool message has no error flag in the event: an empty
        // result of a failed call carries the error text instead.
        let content = match error {
            Some(error) if content.is_empty() => error,
            _ => content,
        };
        let message_id: Id = self.ids.next_id(IdKind::ToolResult).into();
        out.push(Event::ToolCallResult {
            message_id,
            tool_call_id,
            content,
            role: ToolRole::Tool,
        });
    }

    /// Incremental results whose final piece never came are delivered as
    /// they are when the run closes.
    fn flush_pending_tool_output(&mut self, out: &mut Vec<Event>) {
        let mut pending: Vec<(Id, String, Option<String>)> = self
            .tools
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
            self.emit_tool_result(id, content, error, out);
        }
    }

    /// ACP trajectory: a tool execution (`tool_name`, `tool_input`,
    /// `tool_output`) or a reasoning step (`message`).
    fn acp_trajectory(&mut self, meta: &Object, out: &mut Vec<Event>) {
        if let Some(tool_name) = text(meta, "tool_name") {
            let input = meta
                .get("tool_input")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| Value::Object(Object::new()));
            let id = self.start_tool_call(None, tool_name, &input, out);
            if let Some(output) = meta.get("tool_output").filter(|v| !v.is_null()) {
                let content = match output {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                self.emit_tool_result(id, content, None, out);
            }
        }
        if let Some(thought) = text(meta, "message") {
            let hints = PartHints::default();
            self.close_reasoning(out);
            self.thinking(&hints, thought, out);
            self.close_reasoning(out);
        }
    }

    // -- artifacts ----------------------------------------------------------

    fn on_artifact_update(&mut self, update: &Object, whole: &Value, out: &mut Vec<Event>) {
        let Some(artifact) = object(update, "artifact") else {
            self.saw_task = true;
            out.push(raw(whole.clone()));
            return;
        };
        let id = text(artifact, "artifactId").unwrap_or("");
        let append = flag(update, "append")
            .or_else(|| flag(artifact, "append"))
            .unwrap_or(false);
        let last_chunk = flag(update, "lastChunk")
            .or_else(|| flag(artifact, "lastChunk"))
            .unwrap_or(false);
        self.begin_artifact_chunk(id, append, out);
        self.describe_artifact(artifact, id, out);
        let event_metadata = metadata(update);
        if let Some(meta) = event_metadata {
            self.artifact_event_metadata(meta, id, out);
        }
        // ADK-style streaming (Hector v2): `partial: true` events carry
        // deltas, then a `partial: false` event repeats the whole text.
        let partial = event_metadata
            .and_then(|m| m.get("partial"))
            .and_then(Value::as_bool);
        let repeats_streamed =
            partial == Some(false) && self.artifacts.get(id).is_some_and(|a| a.streamed_partial);
        if partial == Some(true)
            && let Some(state) = self.artifact_state(id)
        {
            state.streamed_partial = true;
        }
        let parts = array(artifact, "parts").unwrap_or(&[]);
        let context = PartContext {
            key: KeyRef::Artifact(id),
            artifact_id: Some(id),
        };
        let mut final_text = String::new();
        for part in parts {
            let plain_text = part.as_object().and_then(|p| match a2a::part_body(p) {
                PartBody::Text(t) if hints::part_hints(metadata(p)).role() == PartRole::Plain => {
                    Some(t)
                }
                _ => None,
            });
            match plain_text {
                Some(t) if repeats_streamed => final_text.push_str(t),
                _ => self.convert_part_value(part, context, out),
            }
        }
        match self.repeat_of(&final_text) {
            Repeat::Skip => {}
            Repeat::Remainder(rest) => self.text(KeyRef::Artifact(id), &rest, out),
            Repeat::Emit => self.text(KeyRef::Artifact(id), &final_text, out),
        }
        self.end_artifact_chunk(id, parts.len(), last_chunk, out);
        self.artifact_commands(artifact, id, out);
    }

    fn begin_artifact_chunk(&mut self, id: &str, append: bool, out: &mut Vec<Event>) {
        self.saw_task = true;
        let key = KeyRef::Artifact(id);
        if !self.text.as_ref().is_some_and(|open| open.key.is(key)) {
            self.close_text(out);
        }
        if !append && self.artifacts.get(id).is_some_and(|a| a.parts_seen > 0) {
            // A replacement: what was streamed stays, the new content is a
            // new message.
            self.close_text(out);
            if let Some(state) = self.artifacts.get_mut(id) {
                state.parts_seen = 0;
            }
        }
    }

    fn end_artifact_chunk(
        &mut self,
        id: &str,
        parts: usize,
        last_chunk: bool,
        out: &mut Vec<Event>,
    ) {
        if let Some(state) = self.artifact_state(id) {
            state.parts_seen += parts;
        }
        if last_chunk {
            self.close_text_of(KeyRef::Artifact(id), out);
        }
    }

    /// A plain-text item read by the fast reader: the same steps as the
    /// lenient path takes for it.
    fn push_fast(&mut self, item: FastItem<'_>, out: &mut Vec<Event>) {
        self.items_seen += 1;
        let node = item.payload();
        let (context, task) = (node.context_id, node.task_id);
        self.start_run(context, task, out);
        self.remember_ids(context, task);
        match (item.shape, &node.artifact) {
            (Shape::ArtifactText, Some(artifact)) => {
                let id = artifact.artifact_id.unwrap_or("");
                self.begin_artifact_chunk(id, node.append.unwrap_or(false), out);
                self.describe_raw_artifact(artifact, id, out);
                for part in &artifact.parts {
                    if let Some(delta) = &part.text {
                        self.text(KeyRef::Artifact(id), delta, out);
                    }
                }
                self.end_artifact_chunk(
                    id,
                    artifact.parts.len(),
                    node.last_chunk.unwrap_or(false),
                    out,
                );
            }
            _ => {
                self.saw_agent_message = true;
                let message_id = node.message_id;
                if let Some(id) = message_id
                    && self.seen_messages.len() < MAX_TRACKED
                    && !self.seen_messages.contains(id)
                {
                    self.seen_messages.insert(id.to_owned());
                }
                let key = KeyRef::Message(message_id.unwrap_or(""));
                for part in node.parts.iter().flatten() {
                    if let Some(delta) = &part.text {
                        self.text(key, delta, out);
                    }
                }
            }
        }
    }

    fn describe_raw_artifact(
        &mut self,
        artifact: &fast::Artifact<'_>,
        id: &str,
        out: &mut Vec<Event>,
    ) {
        let fields = [
            artifact.name,
            artifact.description,
            artifact.extensions,
            artifact.metadata,
        ];
        if fields.iter().all(Option::is_none) {
            return;
        }
        let raw_digest = {
            use std::hash::{BuildHasher, Hash, Hasher};
            let mut hasher = WordHashBuilder::default().build_hasher();
            for field in fields {
                field.map(|raw| raw.get()).hash(&mut hasher);
            }
            hasher.finish()
        };
        if self
            .artifacts
            .get(id)
            .is_some_and(|a| a.raw_description == Some(raw_digest))
        {
            return;
        }
        let parse = |raw: Option<&serde_json::value::RawValue>| {
            raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
        };
        let [name, description, extensions, metadata] = fields.map(parse);
        let metadata = metadata.as_ref().and_then(Value::as_object);
        self.describe_artifact_fields(
            id,
            [name.as_ref(), description.as_ref(), extensions.as_ref()],
            metadata,
            out,
        );
        if let Some(state) = self.artifact_state(id) {
            state.raw_description = Some(raw_digest);
        }
    }

    /// Artifacts of a Task snapshot: only parts not yet streamed are new.
    /// Several entries may share one artifactId (their parts concatenate).
    fn snapshot_artifacts(&mut self, artifacts: &[Value], out: &mut Vec<Event>) {
        let mut offsets: HashMap<&str, usize> = HashMap::new();
        for artifact in artifacts.iter().filter_map(Value::as_object) {
            let id = text(artifact, "artifactId").unwrap_or("");
            let parts = array(artifact, "parts").unwrap_or(&[]);
            let offset = offsets.entry(id).or_insert(0);
            let start = *offset;
            *offset += parts.len();
            let streamed = self.artifacts.get(id).map_or(0, |a| a.parts_seen);
            self.describe_artifact(artifact, id, out);
            let context = PartContext {
                key: KeyRef::Artifact(id),
                artifact_id: Some(id),
            };
            for (index, part) in parts.iter().enumerate() {
                if start + index >= streamed {
                    self.convert_part_value(part, context, out);
                }
            }
            if let Some(state) = self.artifact_state(id) {
                state.parts_seen = state.parts_seen.max(start + parts.len());
            }
            self.artifact_commands(artifact, id, out);
        }
    }

    fn artifact_state(&mut self, id: &str) -> Option<&mut ArtifactState> {
        if !self.artifacts.contains_key(id) {
            if self.artifacts.len() >= MAX_TRACKED {
                return None;
            }
            // Only a new artifact pays for an owned key.
            self.artifacts
                .insert(id.to_owned(), ArtifactState::default());
        }
        self.artifacts.get_mut(id)
    }

    /// `a2a.artifact` announces an artifact's name, description and metadata
    /// when they first appear or change.
    fn describe_artifact(&mut self, artifact: &Object, id: &str, out: &mut Vec<Event>) {
        let fields = ARTIFACT_FIELDS.map(|key| artifact.get(key));
        self.describe_artifact_fields(id, fields, metadata(artifact), out);
    }

    /// `a2a.artifact` announces an artifact's name, description, extensions
    /// and metadata (less `commands`, which has its own event) when they
    /// first appear or change.
    fn describe_artifact_fields(
        &mut self,
        id: &str,
        fields: [Option<&Value>; 3],
        metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        let fields = fields.map(|f| f.filter(|v| !is_empty_value(v)));
        let metadata = metadata.filter(|m| m.keys().any(|k| k != "commands"));
        if metadata.is_none() && fields.iter().all(Option::is_none) {
            return;
        }
        let described_metadata = metadata.map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "commands")
                .collect::<Vec<_>>()
        });
        // Fingerprint the source values first: most chunks repeat the same
        // description, and building the event for them would be waste.
        let digest = TextDigest::of_json(&(fields, &described_metadata));
        let Some(state) = self.artifact_state(id) else {
            return;
        };
        if state.description == Some(digest) {
            return;
        }
        state.description = Some(digest);
        // The fast reader's raw fingerprint named the old description.
        state.raw_description = None;
        let mut value = Object::new();
        for (key, field) in ARTIFACT_FIELDS.iter().zip(fields) {
            if let Some(v) = field {
                value.insert((*key).to_owned(), v.clone());
            }
        }
        if let Some(described) = described_metadata {
            let rest: Object = described
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            value.insert("metadata".to_owned(), Value::Object(rest));
        }
        value.insert("artifactId".to_owned(), Value::from(id));
        out.push(custom("a2a.artifact", Value::Object(value)));
    }

    /// Metadata on the artifact-update event itself (not on the artifact):
    /// `a2a.event_metadata`, when it first appears or changes.
    fn artifact_event_metadata(&mut self, meta: &Object, id: &str, out: &mut Vec<Event>) {
        // What Hector v2 repeats on every event and the parts already say:
        // announcing it would be one CUSTOM per chunk.
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
        if meta.is_empty() {
            return;
        }
        let digest = TextDigest::of_json(&meta);
        if let Some(state) = self.artifact_state(id) {
            if state.event_metadata == Some(digest) {
                return;
            }
            state.event_metadata = Some(digest);
        }
        out.push(custom(
            "a2a.event_metadata",
            json!({ "artifactId": id, "metadata": meta }),
        ));
    }

    /// The multimodal-interaction extension's client commands, verbatim.
    fn artifact_commands(&mut self, artifact: &Object, id: &str, out: &mut Vec<Event>) {
        let Some(commands) = metadata(artifact)
            .and_then(|m| m.get("commands"))
            .filter(|c| !is_empty_value(c))
        else {
            return;
        };
        let digest = TextDigest::of_json(commands);
        if let Some(state) = self.artifact_state(id) {
            if state.commands == Some(digest) {
                return;
            }
            state.commands = Some(digest);
        }
        out.push(custom("a2a.commands", commands.clone()));
    }

    // -- ACP ----------------------------------------------------------------

    fn on_acp(&mut self, kind: &str, event: &Object, whole: &Value, out: &mut Vec<Event>) {
        self.saw_task = true;
        let run = object(event, "run");
        match kind {
            "run.created" | "run.in-progress" => {
                let state = run.and_then(|r| text(r, "status")).unwrap_or(kind);
                let mut value = acp_run_ids(run);
                value.insert("state".to_owned(), Value::from(state));
                out.push(custom("acp.status", Value::Object(value)));
            }
            "run.completed" | "run.cancelled" | "run.awaiting" => {
                let state = match kind {
                    "run.completed" => "completed",
                    "run.cancelled" => "canceled",
                    _ => "awaiting",
                };
                let mut result = acp_run_ids(run);
                result.insert("state".to_owned(), Value::from(state));
                if let Some(request) = run
                    .and_then(|r| r.get("await_request"))
                    .filter(|v| !v.is_null())
                {
                    result.insert("awaitRequest".to_owned(), request.clone());
                }
                self.finish_run(Some(Value::Object(result)), None, out);
            }
            "run.failed" | "error" => {
                let error = run
                    .and_then(|r| object(r, "error"))
                    .or_else(|| object(event, "error"));
                let message = error
                    .and_then(|e| text(e, "message"))
                    .unwrap_or("the ACP run failed")
                    .to_owned();
                let code = error.and_then(|e| text(e, "code")).map_or_else(
                    || codes::ACP_RUN_FAILED.to_owned(),
                    |c| format!("ACP_{}", c.to_ascii_uppercase()),
                );
                self.fail_run(&code, message, out);
            }
            // A full message arrives again as message.part events, so the
            // boundaries are all that message.created/completed carry.
            "message.created" | "message.completed" => self.close_text(out),
            "message.part" => match object(event, "part") {
                Some(part) => self.convert_part(
                    part,
                    PartContext {
                        key: KeyRef::Acp,
                        artifact_id: None,
                    },
                    out,
                ),
                None => out.push(raw(whole.clone())),
            },
            "generic" => {
                let value = event
                    .get("generic")
                    .filter(|g| !g.is_null())
                    .cloned()
                    .unwrap_or_else(|| Value::Object(event.clone()));
                out.push(custom("acp.generic", value));
            }
            _ => out.push(raw(whole.clone())),
        }
    }

    fn push_error_event(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if self.phase == Phase::Done {
            self.ignored_after_finish += 1;
            return;
        }
        self.items_seen += 1;
        self.start_run(None, None, out);
        let report = match serde_json::from_slice::<Value>(data) {
            Ok(value) => match a2a::classify(&value) {
                Item::Error(report) => report,
                _ => ErrorReport::from_value(&value),
            },
            Err(_) => ErrorReport {
                message: String::from_utf8_lossy(data).into_owned(),
                code: "A2A_ERROR".to_owned(),
            },
        };
        self.fail_run(&report.code, report.message, out);
    }
}

const UNKNOWN_TOOL: &str = "unknown_tool";
const ARTIFACT_FIELDS: [&str; 3] = ["name", "description", "extensions"];

fn custom(name: &str, value: Value) -> Event {
    Event::Custom {
        name: name.to_owned(),
        value,
    }
}

fn raw(event: Value) -> Event {
    Event::Raw {
        event,
        source: Some("a2a".to_owned()),
    }
}

fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The text of a message's plain text parts, joined.
fn message_text(message: &Object) -> String {
    let mut joined = String::new();
    for part in a2a::message_parts(message)
        .iter()
        .filter_map(Value::as_object)
    {
        if let PartBody::Text(t) = a2a::part_body(part) {
            joined.push_str(t);
        }
    }
    joined
}

/// TOOL_CALL_ARGS carries JSON text. A string argument that already is JSON
/// text goes through as it is; anything else is serialised.
fn arguments_json(arguments: &Value) -> String {
    match arguments {
        Value::String(s) if serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok() => s.clone(),
        other => other.to_string(),
    }
}

fn acp_run_ids(run: Option<&Object>) -> Object {
    let mut ids = Object::new();
    if let Some(run) = run {
        if let Some(id) = text(run, "run_id") {
            ids.insert("runId".to_owned(), Value::from(id));
        }
        if let Some(id) = text(run, "session_id") {
            ids.insert("sessionId".to_owned(), Value::from(id));
        }
    }
    ids
}

/// (contextId, taskId) of an item, for run ids.
fn item_ids<'a>(item: &Item<'a>) -> (Option<&'a str>, Option<&'a str>) {
    match item {
        Item::Task(task) => (text(task, "contextId"), text(task, "id")),
        Item::Message(obj) | Item::StatusUpdate(obj) | Item::ArtifactUpdate(obj) => {
            (text(obj, "contextId"), text(obj, "taskId"))
        }
        Item::Acp(_, event) => {
            let run = object(event, "run");
            (
                run.and_then(|r| text(r, "session_id")),
                run.and_then(|r| text(r, "run_id")),
            )
        }
        Item::Error(_) | Item::Unknown => (None, None),
    }
}
