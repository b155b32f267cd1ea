//! What a `RunAgentInput` asks of the agent, worked out without I/O.
//!
//! Every AG-UI client sends the whole conversation on every run. The new
//! input is what the client added since the agent last spoke: the user and
//! tool messages after the last agent message (assistant, reasoning,
//! activity), less any this thread already sent upstream (remembered by
//! message id). Nothing else of the history is sent again: the agent keeps
//! its context. `resume` answers interrupts: `resolved` sends the payload
//! to the waiting task, `cancelled` cancels it.

use std::collections::{HashMap, HashSet};

use a2a_agui::{AguiVersion, TaskState, agent_tool_call_id};
use serde_json::{Map, Value};

use super::extension::{self, Carried};
use super::{InputError, bounds, parts};
use crate::state::ThreadMemory;
use crate::upstream::{OutgoingMessage, OutgoingPart};

/// A `RunAgentInput`, read and checked.
#[derive(Debug)]
pub struct RunInput {
    pub thread_id: String,
    pub run_id: String,
    pub version: AguiVersion,
    messages: Vec<Value>,
    tools: Vec<Value>,
    state: Value,
    context: Vec<Value>,
    forwarded_props: Map<String, Value>,
    resume: Vec<Resume>,
}

impl RunInput {
    /// The input's messages as a JSON array, for the thread's replay
    /// (activity messages are the UI's, never sent back); empty (not
    /// kept: the replay then asks the agent) when that passes `limit`
    /// bytes, the journal's bound for one run. The body they came in is
    /// bounded already; this keeps the journal's share within its own.
    pub fn messages_json(&self, limit: usize) -> bytes::Bytes {
        let kept: Vec<&Value> = self
            .messages
            .iter()
            .filter(|m| m["role"] != "activity" && m["id"].is_string())
            .collect();
        let json = serde_json::to_vec(&kept).unwrap_or_default();
        if json.len() > limit {
            return bytes::Bytes::new();
        }
        json.into()
    }
}

/// One `resume` entry.
#[derive(Debug, Clone)]
struct Resume {
    interrupt_id: String,
    status: ResumeStatus,
    payload: Option<Value>,
    raw: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResumeStatus {
    Resolved,
    Cancelled,
}

/// Who said a message, as far as the new input is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Tool,
    /// `system` / `developer`: instructions, carried in metadata.
    Instructions,
    /// `assistant`, `reasoning`, `activity`: the agent's side.
    Agent,
}

impl Role {
    fn of(message: &Value) -> Role {
        match message["role"].as_str() {
            Some("user") => Role::User,
            Some("tool") => Role::Tool,
            Some("system" | "developer") => Role::Instructions,
            _ => Role::Agent,
        }
    }
}

/// What to do upstream.
#[derive(Debug)]
pub enum Upstream {
    /// Send this message (to its task, when it names one).
    Send(OutgoingMessage),
    /// Cancel this task, then send `then` (as a new message) if anything
    /// else is new.
    Cancel {
        task: String,
        then: Option<OutgoingMessage>,
    },
}

/// A planned run.
#[derive(Debug)]
pub struct RunRequest {
    pub upstream: Upstream,
    /// A2A extensions to activate for this request.
    pub activate: Vec<String>,
    /// Tools the client runs itself, by name.
    pub client_tools: Vec<String>,
    /// Ids of the client messages this run sends: remembered once the
    /// agent took them.
    pub delivers: Vec<String>,
    /// Ids of the interrupts this run answers: remembered likewise.
    pub answers: Vec<String>,
}

fn invalid(message: impl Into<String>) -> InputError {
    InputError::Invalid(message.into())
}

/// Reads a `RunAgentInput` body; the error says what is wrong.
pub fn parse(body: &[u8]) -> Result<RunInput, InputError> {
    let input: Value = serde_json::from_slice(body)
        .map_err(|err| invalid(format!("the body is not JSON: {err}")))?;
    bounds::check(&input)?;
    let text = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(thread_id), Some(run_id)) = (text("threadId"), text("runId")) else {
        return Err(invalid("a RunAgentInput needs string threadId and runId"));
    };
    let Some(messages) = input.get("messages").and_then(Value::as_array) else {
        return Err(invalid("a RunAgentInput needs a messages array"));
    };
    if messages.iter().any(|m| !m["role"].is_string()) {
        return Err(invalid("every message needs a string role"));
    }
    let array = |key: &str| match input.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => Ok(items.clone()),
        Some(_) => Err(invalid(format!("{key} must be an array of objects"))),
    };
    let tools = array("tools")?;
    if tools.iter().any(|t| !t["name"].is_string()) {
        return Err(invalid("every tool needs a string name"));
    }
    let resume = array("resume")?
        .into_iter()
        .map(read_resume)
        .collect::<Result<Vec<_>, _>>()?;
    let forwarded_props = match input.get("forwardedProps") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(props)) => props.clone(),
        Some(_) => return Err(invalid("forwardedProps must be an object")),
    };
    Ok(RunInput {
        thread_id: thread_id.to_owned(),
        run_id: run_id.to_owned(),
        version: AguiVersion::parse(text("protocolVersion")),
        messages: messages.clone(),
        tools,
        state: input.get("state").cloned().unwrap_or(Value::Null),
        context: array("context")?,
        forwarded_props,
        resume,
    })
}

fn read_resume(entry: Value) -> Result<Resume, InputError> {
    let interrupt_id = entry["interruptId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| invalid("every resume entry needs a string interruptId"))?
        .to_owned();
    let status = match entry["status"].as_str() {
        Some("resolved") => ResumeStatus::Resolved,
        Some("cancelled") => ResumeStatus::Cancelled,
        _ => {
            return Err(invalid(
                "a resume entry's status must be \"resolved\" or \"cancelled\"",
            ));
        }
    };
    Ok(Resume {
        interrupt_id,
        status,
        payload: entry.get("payload").cloned(),
        raw: entry,
    })
}

impl RunInput {
    /// The shared state the client sent, if any: the base of the agent's
    /// state patches.
    pub fn shared_state(&self) -> Option<Value> {
        Some(self.state.clone()).filter(|s| !s.is_null())
    }

    /// The run's upstream call. `memory` is what this gateway remembers of
    /// the thread (a waiting task, the calls the client runs, what was sent).
    pub fn plan(self, memory: &ThreadMemory) -> Result<RunRequest, InputError> {
        let agent_at = self
            .messages
            .iter()
            .rposition(|m| Role::of(m) == Role::Agent);
        let since = agent_at.map_or(0, |at| at + 1);
        let after = &self.messages[since..];
        let calls = tool_calls(&self.messages);
        let new: Vec<&Value> = after
            .iter()
            .filter(|m| match Role::of(m) {
                Role::User => true,
                // The agent's own results come back too (the client keeps
                // every TOOL_CALL_RESULT as a tool message): not input.
                Role::Tool => !shown_by_gateway(m, memory),
                _ => false,
            })
            .filter(|m| m["id"].as_str().is_none_or(|id| !memory.was_sent(id)))
            .collect();
        let history = &self.messages[..since];
        let waiting = waiting_task(history).or_else(|| memory.waiting_task.clone());

        let mut parts = Vec::new();
        let mut delivers = Vec::new();
        for message in &new {
            if let Some(id) = message["id"].as_str() {
                delivers.push(id.to_owned());
            }
            match Role::of(message) {
                Role::Tool => parts.push(tool_message(message, &calls)?),
                _ => parts.extend(parts::user_parts(message).map_err(invalid)?),
            }
        }

        // Resume: a tool_call interrupt is named by the call's id and
        // answered by a tool message (or here, from its payload); any other
        // by the waiting task's id. An answer is sent once.
        let answered_calls: HashSet<&str> = after
            .iter()
            .filter(|m| Role::of(m) == Role::Tool)
            .filter_map(|m| m["toolCallId"].as_str())
            .collect();
        let mut task = waiting.clone();
        let mut cancel = None;
        let mut answers = Vec::new();
        for entry in self
            .resume
            .iter()
            .filter(|e| !memory.was_answered(&e.interrupt_id))
        {
            answers.push(entry.interrupt_id.clone());
            let id = entry.interrupt_id.as_str();
            match (entry.status, calls.get(id)) {
                // The client answered the call in a tool message already.
                (_, Some(_)) if answered_calls.contains(id) => {}
                // Declining one tool call is its result, not the task's end.
                (ResumeStatus::Cancelled, Some(name)) => parts.push(parts::tool_result(
                    agent_tool_call_id(id),
                    *name,
                    "",
                    Some("cancelled by the user"),
                )),
                (ResumeStatus::Resolved, Some(name)) => {
                    let content = match &entry.payload {
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    parts.push(parts::tool_result(
                        agent_tool_call_id(id),
                        *name,
                        &content,
                        None,
                    ));
                }
                (ResumeStatus::Cancelled, None) => cancel = Some(entry.interrupt_id.clone()),
                (ResumeStatus::Resolved, None) => {
                    parts.push(parts::resume_payload(id, entry.payload.as_ref()));
                    task = Some(entry.interrupt_id.clone());
                }
            }
        }
        let acts = self.forwarded_props.contains_key("a2uiAction");
        if parts.is_empty() && cancel.is_none() && !acts {
            return Err(InputError::NothingNew);
        }

        let client_tools = self
            .tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let (mut message, mut activate) = self.outgoing()?;
        // A UI action, if any, follows what the user said.
        let action = std::mem::replace(&mut message.parts, parts);
        message.parts.extend(action);
        let upstream = match cancel {
            Some(cancelled) => Upstream::Cancel {
                task: cancelled,
                then: (!message.parts.is_empty()).then_some(message),
            },
            None => {
                message.task_id = task;
                Upstream::Send(message)
            }
        };
        let mut seen = HashSet::new();
        activate.retain(|uri| seen.insert(uri.clone()));
        Ok(RunRequest {
            upstream,
            activate,
            client_tools,
            delivers,
            answers,
        })
    }

    /// The message without its parts: context, metadata (the forwarded
    /// A2A metadata and the extension's keys), extensions.
    fn outgoing(&self) -> Result<(OutgoingMessage, Vec<String>), InputError> {
        let mut message = OutgoingMessage {
            context_id: Some(self.thread_id.clone()),
            ..OutgoingMessage::default()
        };
        let mut props = self.forwarded_props.clone();
        let a2a = props.remove("a2a");
        let action = props.remove("a2uiAction");
        let mut metadata = match a2a.as_ref().and_then(|a| a.get("metadata")) {
            None => Map::new(),
            Some(Value::Object(metadata)) => metadata.clone(),
            Some(_) => return Err(invalid("forwardedProps.a2a.metadata must be an object")),
        };
        // The extension's keys are the gateway's to write.
        metadata.retain(|key, _| !key.starts_with(extension::KEY_PREFIX));
        if let Some(extensions) = a2a.as_ref().and_then(|a| a.get("extensions")) {
            message.extensions = extension_uris(extensions)?;
        }
        let mut activate = message.extensions.clone();
        let carried = Carried {
            tools: self.tools.iter().map(tool_declaration).collect(),
            state: Some(self.state.clone()).filter(|s| match s {
                Value::Null => false,
                Value::Object(members) => !members.is_empty(),
                _ => true,
            }),
            context: self.context.clone(),
            instructions: self
                .messages
                .iter()
                .filter(|m| Role::of(m) == Role::Instructions)
                .map(|m| {
                    let mut said = Map::new();
                    said.insert("role".to_owned(), m["role"].clone());
                    if !m["content"].is_null() {
                        said.insert("content".to_owned(), m["content"].clone());
                    }
                    Value::Object(said)
                })
                .collect(),
            forwarded_props: props,
            resume: self.resume.iter().map(|r| r.raw.clone()).collect(),
        };
        let mut request = Map::new();
        if carried.write(&self.thread_id, &self.run_id, &mut metadata, &mut request) {
            activate.push(extension::URI.to_owned());
            if !message.extensions.iter().any(|e| e == extension::URI) {
                message.extensions.push(extension::URI.to_owned());
            }
        }
        if !metadata.is_empty() {
            message.metadata = Some(metadata);
        }
        if !request.is_empty() {
            message.request_metadata = Some(request);
        }
        if let Some(action) = action {
            let uri = a2ui_extension(&action)?;
            message.parts.push(OutgoingPart::Ui(action));
            activate.push(uri.to_owned());
        }
        Ok((message, activate))
    }
}

/// The A2A extensions a client asks for (`forwardedProps.a2a.extensions`):
/// they go into a header list, so each must be a plain URI.
fn extension_uris(value: &Value) -> Result<Vec<String>, InputError> {
    const MAX_EXTENSIONS: usize = 32;
    const MAX_URI_BYTES: usize = 512;
    let list = value
        .as_array()
        .filter(|list| list.len() <= MAX_EXTENSIONS)
        .ok_or_else(|| {
            invalid(format!(
                "forwardedProps.a2a.extensions must be an array of at most {MAX_EXTENSIONS} URIs"
            ))
        })?;
    let mut uris: Vec<String> = Vec::with_capacity(list.len());
    for uri in list {
        let uri = uri
            .as_str()
            .filter(|u| !u.is_empty() && u.len() <= MAX_URI_BYTES)
            .filter(|u| u.bytes().all(|b| b.is_ascii_graphic() && b != b','))
            .ok_or_else(|| {
                invalid(format!(
                    "forwardedProps.a2a.extensions: {uri} is not a URI of at most {MAX_URI_BYTES} visible ASCII characters without commas"
                ))
            })?;
        if !uris.iter().any(|u| u == uri) {
            uris.push(uri.to_owned());
        }
    }
    Ok(uris)
}

/// A declared tool as the agent reads it: name, description, parameters.
fn tool_declaration(tool: &Value) -> Value {
    let mut out = Map::new();
    for key in ["name", "description", "parameters"] {
        if let Some(value) = tool.get(key).filter(|v| !v.is_null()) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(out)
}

/// A `tool` message as a tool result for the agent's own call id.
fn tool_message(
    message: &Value,
    calls: &HashMap<&str, Option<&str>>,
) -> Result<OutgoingPart, InputError> {
    let shown = message["toolCallId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| invalid("a tool message needs a string toolCallId"))?;
    let content = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let name = calls.get(shown).copied().flatten();
    let error = message["error"].as_str();
    Ok(parts::tool_result(
        agent_tool_call_id(shown),
        name,
        &content,
        error,
    ))
}

/// Every tool call in the history (its id as the client saw it) and its
/// name.
fn tool_calls(messages: &[Value]) -> HashMap<&str, Option<&str>> {
    messages
        .iter()
        .filter_map(|m| m["toolCalls"].as_array())
        .flatten()
        .filter_map(|call| {
            let id = call["id"].as_str()?;
            Some((id, call.pointer("/function/name").and_then(Value::as_str)))
        })
        .collect()
}

/// A tool message the client made from the gateway's own `TOOL_CALL_RESULT`
/// (the agent ran the tool): its id is the result's, `tool-result-<tag>-<n>`,
/// with the run tag its call carries. A call the client runs never is.
fn shown_by_gateway(message: &Value, memory: &ThreadMemory) -> bool {
    let (Some(id), Some(call)) = (message["id"].as_str(), message["toolCallId"].as_str()) else {
        return false;
    };
    !memory.is_pending_call(call) && a2a_agui::is_result_of_call(id, call)
}

/// The task the agent's last message said waits for input (the 1.0
/// client keeps `metadata.a2a` on the messages it sends back).
fn waiting_task(history: &[Value]) -> Option<String> {
    let assistant = history.iter().rev().find(|m| m["role"] == "assistant")?;
    let a2a = assistant.pointer("/metadata/a2a")?;
    let state = a2a["state"]
        .as_str()
        .map_or(TaskState::Unknown, TaskState::parse);
    let waiting = matches!(state, TaskState::InputRequired | TaskState::AuthRequired);
    waiting
        .then(|| a2a["taskId"].as_str().map(str::to_owned))
        .flatten()
}

/// The A2UI extension a UI action belongs to: v0.9 actions say their
/// version (`{"version":"v0.9","action":…}`), v0.8 ones carry `userAction`.
fn a2ui_extension(action: &Value) -> Result<&'static str, InputError> {
    const V08: &str = "https://a2ui.org/a2a-extension/a2ui/v0.8";
    const V09: &str = "https://a2ui.org/a2a-extension/a2ui/v0.9";
    match action {
        Value::Object(a) if a.contains_key("userAction") => Ok(V08),
        Value::Object(a) if a.contains_key("action") => Ok(V09),
        _ => Err(invalid(
            "forwardedProps.a2uiAction must be an A2UI client message (userAction, or a v0.9 action)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_agui::ErrorCode;
    use proptest::prelude::*;
    use serde_json::json;

    fn plan(input: Value, memory: &ThreadMemory) -> Result<RunRequest, InputError> {
        parse(input.to_string().as_bytes())?.plan(memory)
    }

    fn sent(request: &RunRequest) -> &OutgoingMessage {
        match &request.upstream {
            Upstream::Send(message) => message,
            Upstream::Cancel { .. } => panic!("expected a send"),
        }
    }

    fn input(messages: Value) -> Value {
        json!({ "threadId": "th", "runId": "r2", "messages": messages,
                "tools": [], "state": {}, "context": [], "forwardedProps": {} })
    }

    fn marked(part: &OutgoingPart) -> &Value {
        match part {
            OutgoingPart::Marked { data, .. } => data,
            other => panic!("a data part, not {other:?}"),
        }
    }

    /// CopilotKit after running a frontend tool: no new user message; the
    /// agent's own (server) tool result is in the history too.
    fn after_tool_run() -> Value {
        input(json!([
            { "id": "u1", "role": "user", "content": "weather in Paris?" },
            { "id": "a1", "role": "assistant", "content": "Let me see.", "toolCalls": [
                { "id": "search~3f0a", "type": "function", "function": { "name": "web_search", "arguments": "{}" } },
                { "id": "call-weather~3f0a", "type": "function",
                  "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" } }] },
            { "id": "tool-result-3f0a-2", "role": "tool", "toolCallId": "search~3f0a", "content": "found" },
            { "id": "t1", "role": "tool", "toolCallId": "call-weather~3f0a", "content": "{\"t\":21}" }
        ]))
    }

    #[test]
    fn a_tool_result_goes_back_as_a_tool_result_not_the_question_again() {
        let request = plan(after_tool_run(), &ThreadMemory::default().waiting("task-1")).unwrap();
        let message = sent(&request);
        assert_eq!(message.task_id.as_deref(), Some("task-1"));
        // The client's result only: the agent's own came from the gateway.
        assert_eq!(message.parts.len(), 1);
        let data = marked(&message.parts[0]);
        assert_eq!(data["tool_call_id"], "call-weather", "the agent's own id");
        assert_eq!(data["tool_name"], "get_weather");
        assert_eq!(data["content"], "{\"t\":21}");
        assert_eq!(request.delivers, ["t1"]);
        // No extension: nothing but defaults was sent.
        assert!(message.metadata.is_none() && request.activate.is_empty());
    }

    #[test]
    fn nothing_new_is_a_400_of_its_own() {
        let messages = json!([
            { "id": "u1", "role": "user", "content": "hi" },
            { "id": "a1", "role": "assistant", "content": "hello" }
        ]);
        let err = plan(input(messages), &ThreadMemory::default()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoNewInput);
        // A message sent before (a retry, another tab) is not new either.
        let mut memory = ThreadMemory::default();
        memory.remember_sent(&["u1".to_owned()], &[]);
        let retry = input(json!([{ "id": "u1", "role": "user", "content": "hi" }]));
        assert_eq!(
            plan(retry, &memory).unwrap_err().code(),
            ErrorCode::NoNewInput
        );
    }

    #[test]
    fn resume_resolved_sends_the_payload_to_the_waiting_task_once() {
        let mut body = input(json!([
            { "id": "u1", "role": "user", "content": "weather?" },
            { "id": "a1", "role": "assistant", "content": "Which city?" }
        ]));
        body["resume"] = json!([{ "interruptId": "task-9", "status": "resolved", "payload": { "city": "Paris" } }]);
        let request = plan(body.clone(), &ThreadMemory::default()).unwrap();
        let message = sent(&request);
        assert_eq!(message.task_id.as_deref(), Some("task-9"));
        assert_eq!(marked(&message.parts[0]), &json!({ "city": "Paris" }));
        let metadata = message.metadata.as_ref().unwrap();
        assert_eq!(metadata[extension::key::RESUME][0]["interruptId"], "task-9");
        assert_eq!(request.activate, [extension::URI]);
        // The same resume again (a retry) has nothing new.
        let mut memory = ThreadMemory::default();
        memory.remember_sent(&request.delivers, &request.answers);
        assert_eq!(
            plan(body, &memory).unwrap_err().code(),
            ErrorCode::NoNewInput
        );
    }

    #[test]
    fn resume_cancelled_cancels_the_task_but_declines_only_a_tool_call() {
        let mut body = input(json!([{ "id": "u1", "role": "user", "content": "weather?" }]));
        body["resume"] = json!([{ "interruptId": "task-9", "status": "cancelled" }]);
        let mut memory = ThreadMemory::default();
        memory.remember_sent(&["u1".to_owned()], &[]);
        let request = plan(body, &memory).unwrap();
        assert!(
            matches!(request.upstream, Upstream::Cancel { ref task, then: None } if task == "task-9")
        );
        // A tool_call interrupt names the call: declining it is its result.
        let mut body = input(json!([
            { "id": "u1", "role": "user", "content": "weather?" },
            { "id": "a1", "role": "assistant", "toolCalls": [{ "id": "call-weather~3f0a", "type": "function",
              "function": { "name": "get_weather", "arguments": "{}" } }] }
        ]));
        body["resume"] = json!([{ "interruptId": "call-weather~3f0a", "status": "cancelled" }]);
        let request = plan(body, &ThreadMemory::default().waiting("task-1")).unwrap();
        let message = sent(&request);
        assert_eq!(message.task_id.as_deref(), Some("task-1"));
        let data = marked(&message.parts[0]);
        assert_eq!(data["tool_call_id"], "call-weather");
        assert_eq!(data["is_error"], true);
    }

    #[test]
    fn tools_state_context_and_instructions_travel_in_metadata() {
        let body = json!({
            "threadId": "th", "runId": "r1", "protocolVersion": "1.0",
            "messages": [
                { "id": "s", "role": "system", "content": "Be brief." },
                { "id": "u1", "role": "user", "content": "hi" }
            ],
            "tools": [{ "name": "get_weather", "description": "d", "parameters": { "type": "object" } }],
            "state": { "city": "Paris" },
            "context": [{ "description": "user", "value": "Ada" }],
            "forwardedProps": { "theme": "dark", "a2a": { "metadata": {
                "device": "phone", "x-agui-run": { "runId": "forged" } } } }
        });
        let request = plan(body, &ThreadMemory::default()).unwrap();
        let message = sent(&request);
        let metadata = message.metadata.as_ref().unwrap();
        assert_eq!(metadata["device"], "phone");
        assert_eq!(
            metadata[extension::key::RUN]["runId"],
            "r1",
            "the client cannot write the extension's keys"
        );
        assert_eq!(metadata[extension::key::TOOLS][0]["name"], "get_weather");
        assert_eq!(metadata[extension::key::STATE], json!({ "city": "Paris" }));
        assert_eq!(metadata[extension::key::CONTEXT][0]["value"], "Ada");
        assert_eq!(
            metadata[extension::key::INSTRUCTIONS][0]["content"],
            "Be brief."
        );
        assert_eq!(
            metadata[extension::key::FORWARDED_PROPS],
            json!({ "theme": "dark" })
        );
        assert_eq!(
            message.request_metadata.as_ref().unwrap()[extension::key::STATE],
            json!({ "city": "Paris" })
        );
        assert_eq!(request.client_tools, ["get_weather"]);
        assert_eq!(
            message.parts.len(),
            1,
            "the system message is not user input"
        );
    }

    #[test]
    fn extension_uris_that_cannot_be_a_header_list_are_refused() {
        for bad in [
            json!(["a,b"]),
            json!(["a\nb"]),
            json!([""]),
            json!([1]),
            json!(vec!["u"; 33]),
        ] {
            let mut body = input(json!([{ "id": "u1", "role": "user", "content": "hi" }]));
            body["forwardedProps"] = json!({ "a2a": { "extensions": bad } });
            let err = plan(body, &ThreadMemory::default()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRunInput, "{bad}");
        }
    }

    /// One step of a random conversation.
    #[derive(Debug, Clone)]
    enum Step {
        /// The user types (1 or 2 messages), then the client runs.
        User(u8),
        /// The agent answers: text, calls of its own tools (with results the
        /// client keeps as tool messages), calls of the client's tools.
        Agent { server: u8, client: u8 },
        /// The client runs again without adding anything (a retry).
        Again,
        /// The run's upstream call fails before the agent took it.
        Lost,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (1u8..=2).prop_map(Step::User),
            3 => (0u8..=2, 0u8..=2).prop_map(|(server, client)| Step::Agent { server, client }),
            1 => Just(Step::Again),
            1 => Just(Step::Lost),
        ]
    }

    proptest! {
        /// Whatever the conversation, a client sending its whole history on
        /// every run never gets a message sent upstream twice, never has the
        /// agent's own tool results sent back as its own, and every message
        /// it added reaches the agent.
        #[test]
        fn no_message_is_sent_twice(steps in prop::collection::vec(step(), 1..24)) {
            let mut history: Vec<Value> = Vec::new();
            let mut memory = ThreadMemory::default();
            let mut delivered: Vec<String> = Vec::new();
            let mut added: Vec<String> = Vec::new();
            let mut pending_calls: Vec<String> = Vec::new();
            for (n, step) in steps.iter().enumerate() {
                let lost = matches!(step, Step::Lost);
                match step {
                    Step::User(count) => {
                        // Results of the client's tools come first, as CopilotKit adds them.
                        for call in pending_calls.drain(..) {
                            let id = format!("tool-{n}-{call}");
                            history.push(json!({ "id": id, "role": "tool", "toolCallId": call, "content": "42" }));
                            added.push(id);
                        }
                        for i in 0..*count {
                            let id = format!("user-{n}-{i}");
                            history.push(json!({ "id": id, "role": "user", "content": "hello" }));
                            added.push(id);
                        }
                    }
                    Step::Agent { server, client } => {
                        let tag = format!("{n:04x}");
                        let call = |c: u8, name: &str| json!({ "id": format!("{name}-{c}~{tag}"), "type": "function",
                            "function": { "name": name, "arguments": "{}" } });
                        let mut calls: Vec<Value> = (0..*server).map(|c| call(c, "search")).collect();
                        calls.extend((0..*client).map(|c| call(c, "get_weather")));
                        history.push(json!({ "id": format!("agent-{n}"), "role": "assistant",
                                             "content": "ok", "toolCalls": calls }));
                        for c in 0..*server {
                            history.push(json!({ "id": format!("tool-result-{tag}-{c}"), "role": "tool",
                                                 "toolCallId": format!("search-{c}~{tag}"), "content": "found" }));
                        }
                        pending_calls = (0..*client).map(|c| format!("get_weather-{c}~{tag}")).collect();
                        let waiting = memory.waiting_task.clone();
                        memory = memory_after(memory, waiting.as_deref(), &pending_calls);
                        continue;
                    }
                    Step::Again | Step::Lost => {}
                }
                let body = json!({ "threadId": "th", "runId": format!("r{n}"), "messages": history });
                match parse(body.to_string().as_bytes()).unwrap().plan(&memory) {
                    Ok(request) => {
                        for id in &request.delivers {
                            prop_assert!(!id.starts_with("tool-result-"), "the agent's own result {id} sent back");
                            prop_assert!(!delivered.contains(id), "{id} sent twice");
                        }
                        if !lost {
                            memory.remember_sent(&request.delivers, &request.answers);
                            delivered.extend(request.delivers);
                        }
                    }
                    Err(err) => prop_assert_eq!(err.code(), ErrorCode::NoNewInput),
                }
            }
            // A last run delivers whatever a lost one left behind.
            let body = json!({ "threadId": "th", "runId": "last", "messages": history });
            if let Ok(request) = parse(body.to_string().as_bytes()).unwrap().plan(&memory) {
                delivered.extend(request.delivers);
            }
            for id in &added {
                prop_assert!(delivered.contains(id), "{id} never sent");
            }
        }
    }

    /// The memory after a run that ended on these client calls.
    fn memory_after(memory: ThreadMemory, task: Option<&str>, calls: &[String]) -> ThreadMemory {
        let threads = crate::state::Threads::default();
        let caller = agui_journal::CallerDigest::of_scope("c");
        let key = agui_journal::ThreadRef::new("a", &caller, "th");
        threads.restore(key, memory);
        threads.ended(key, task, calls);
        threads.get(key)
    }
}
