//! What a `RunAgentInput` asks of the agent, worked out without I/O.
//!
//! Every AG-UI client sends the whole conversation on every run. The new
//! input is what the client added since the agent last spoke: the user and
//! tool messages after the last agent message (assistant, reasoning,
//! activity), less any this thread already sent upstream (remembered by
//! message id). Nothing else of the history is sent again: the agent keeps
//! its context. `resume` answers interrupts: `resolved` sends the payload
//! to the waiting task, `cancelled` cancels it.

use a2a_agui::{AguiVersion, ErrorCode, TaskState, agent_tool_call_id};
use serde_json::{Map, Value};

use super::extension::{self, Carried};
use super::parts;
use crate::error::ApiError;
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
    /// Ids of the client messages this run sends: remembered once sent.
    pub delivers: Vec<String>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(ErrorCode::InvalidRunInput, message)
}

/// Reads a `RunAgentInput` body; a 400 JSON error says what is wrong.
pub fn parse(body: &[u8]) -> Result<RunInput, ApiError> {
    let input: Value = serde_json::from_slice(body)
        .map_err(|err| invalid(format!("the body is not JSON: {err}")))?;
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

fn read_resume(entry: Value) -> Result<Resume, ApiError> {
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
    /// the thread (a waiting task, the message ids already sent).
    pub fn plan(self, memory: &ThreadMemory) -> Result<RunRequest, ApiError> {
        let agent_at = self
            .messages
            .iter()
            .rposition(|m| Role::of(m) == Role::Agent);
        let since = agent_at.map_or(0, |at| at + 1);
        let new: Vec<&Value> = self.messages[since..]
            .iter()
            .filter(|m| matches!(Role::of(m), Role::User | Role::Tool))
            .filter(|m| m["id"].as_str().is_none_or(|id| !memory.was_sent(id)))
            .collect();
        let acts = self.forwarded_props.contains_key("a2uiAction");
        if new.is_empty() && self.resume.is_empty() && !acts {
            return Err(ApiError::bad_request(
                ErrorCode::NoNewInput,
                "nothing to send: no user or tool message after the agent's last message that was not sent already, and no resume",
            ));
        }
        let history = &self.messages[..since];
        let waiting = waiting_task(history).or_else(|| memory.waiting_task.clone());
        let tool_names = tool_names(&self.messages);

        let mut parts = Vec::new();
        let mut delivers = Vec::new();
        for message in &new {
            if let Some(id) = message["id"].as_str() {
                delivers.push(id.to_owned());
            }
            match Role::of(message) {
                Role::Tool => parts.push(tool_message(message, &tool_names)?),
                _ => parts.extend(parts::user_parts(message).map_err(invalid)?),
            }
        }

        // Resume: a tool_call interrupt is named by the call's id and
        // answered by the tool message; any other by the task's id.
        let mut task = waiting.clone();
        let mut cancel = None;
        for entry in &self.resume {
            let is_call = tool_names.iter().any(|(id, _)| *id == entry.interrupt_id);
            let entry_task = if is_call {
                waiting.clone()
            } else {
                Some(entry.interrupt_id.clone())
            };
            match entry.status {
                ResumeStatus::Cancelled => {
                    cancel = entry_task.or_else(|| Some(entry.interrupt_id.clone()));
                }
                ResumeStatus::Resolved => {
                    let answered = new.iter().any(|m| {
                        Role::of(m) == Role::Tool
                            && m["toolCallId"].as_str() == Some(entry.interrupt_id.as_str())
                    });
                    if is_call && !answered {
                        let content = match &entry.payload {
                            Some(Value::String(text)) => text.clone(),
                            Some(other) => other.to_string(),
                            None => String::new(),
                        };
                        let name = tool_names
                            .iter()
                            .find(|(id, _)| *id == entry.interrupt_id)
                            .and_then(|(_, name)| *name);
                        let agent_id = agent_tool_call_id(&entry.interrupt_id);
                        parts.push(parts::tool_result(agent_id, name, &content, None));
                    } else if !is_call {
                        parts.push(parts::resume_payload(
                            &entry.interrupt_id,
                            entry.payload.as_ref(),
                        ));
                    }
                    if entry_task.is_some() {
                        task = entry_task;
                    }
                }
            }
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
        let mut seen = std::collections::HashSet::new();
        activate.retain(|uri| seen.insert(uri.clone()));
        Ok(RunRequest {
            upstream,
            activate,
            client_tools,
            delivers,
        })
    }

    /// The message without its parts: context, metadata (the forwarded
    /// A2A metadata and the extension's keys), extensions.
    fn outgoing(&self) -> Result<(OutgoingMessage, Vec<String>), ApiError> {
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
        if let Some(extensions) = a2a.as_ref().and_then(|a| a.get("extensions")) {
            let list = extensions
                .as_array()
                .ok_or_else(|| invalid("forwardedProps.a2a.extensions must be an array of URIs"))?;
            message.extensions = list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
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
                .map(|m| serde_json::json!({ "role": m["role"], "content": m["content"] }))
                .collect(),
            forwarded_props: props,
            resume: self.resume.iter().map(|r| r.raw.clone()).collect(),
        };
        let mut request = Map::new();
        if carried.write(&self.thread_id, &self.run_id, &mut metadata, &mut request) {
            activate.push(extension::URI.to_owned());
            message.extensions.push(extension::URI.to_owned());
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
fn tool_message(message: &Value, names: &[(&str, Option<&str>)]) -> Result<OutgoingPart, ApiError> {
    let shown = message["toolCallId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| invalid("a tool message needs a string toolCallId"))?;
    let content = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let name = names
        .iter()
        .find(|(id, _)| *id == shown)
        .and_then(|(_, name)| *name);
    let error = message["error"].as_str();
    Ok(parts::tool_result(
        agent_tool_call_id(shown),
        name,
        &content,
        error,
    ))
}

/// Every tool call in the history (as the client saw its id) and its name.
fn tool_names(messages: &[Value]) -> Vec<(&str, Option<&str>)> {
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
fn a2ui_extension(action: &Value) -> Result<&'static str, ApiError> {
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
    use proptest::prelude::*;
    use serde_json::json;

    fn plan(input: Value, memory: &ThreadMemory) -> Result<RunRequest, ApiError> {
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

    #[test]
    fn a_tool_result_goes_back_as_a_tool_result_not_the_question_again() {
        // CopilotKit after running a frontend tool: no new user message.
        let request = plan(
            input(json!([
                { "id": "u1", "role": "user", "content": "weather in Paris?" },
                { "id": "a1", "role": "assistant", "toolCalls": [{ "id": "call-weather~3f0a", "type": "function",
                  "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" } }] },
                { "id": "t1", "role": "tool", "toolCallId": "call-weather~3f0a", "content": "{\"t\":21}" }
            ])),
            &ThreadMemory::default().waiting("task-1"),
        )
        .unwrap();
        let message = sent(&request);
        assert_eq!(message.task_id.as_deref(), Some("task-1"));
        assert_eq!(message.parts.len(), 1);
        let OutgoingPart::Marked { data, .. } = &message.parts[0] else {
            panic!("a tool result part");
        };
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
        assert_eq!(err.code, ErrorCode::NoNewInput);
        // A message sent before (a retry, another tab) is not new either.
        let mut memory = ThreadMemory::default();
        memory.remember_sent(&["u1".to_owned()]);
        let retry = input(json!([{ "id": "u1", "role": "user", "content": "hi" }]));
        assert_eq!(
            plan(retry, &memory).unwrap_err().code,
            ErrorCode::NoNewInput
        );
    }

    #[test]
    fn resume_resolved_sends_the_payload_to_the_waiting_task() {
        let mut body = input(json!([
            { "id": "u1", "role": "user", "content": "weather?" },
            { "id": "a1", "role": "assistant", "content": "Which city?" }
        ]));
        body["resume"] = json!([{ "interruptId": "task-9", "status": "resolved", "payload": { "city": "Paris" } }]);
        let request = plan(body, &ThreadMemory::default()).unwrap();
        let message = sent(&request);
        assert_eq!(message.task_id.as_deref(), Some("task-9"));
        let OutgoingPart::Marked { data, .. } = &message.parts[0] else {
            panic!("a data part");
        };
        assert_eq!(data, &json!({ "city": "Paris" }));
        let metadata = message.metadata.as_ref().unwrap();
        assert_eq!(metadata[extension::key::RESUME][0]["interruptId"], "task-9");
        assert_eq!(request.activate, [extension::URI]);
    }

    #[test]
    fn resume_cancelled_cancels_the_task() {
        let mut body = input(json!([{ "id": "u1", "role": "user", "content": "weather?" }]));
        body["resume"] = json!([{ "interruptId": "task-9", "status": "cancelled" }]);
        let mut memory = ThreadMemory::default();
        memory.remember_sent(&["u1".to_owned()]);
        let request = plan(body, &memory).unwrap();
        assert!(
            matches!(request.upstream, Upstream::Cancel { ref task, then: None } if task == "task-9")
        );
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
            "forwardedProps": { "theme": "dark", "a2a": { "metadata": { "device": "phone" } } }
        });
        let request = plan(body, &ThreadMemory::default()).unwrap();
        let message = sent(&request);
        let metadata = message.metadata.as_ref().unwrap();
        assert_eq!(metadata["device"], "phone");
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

    /// One step of a random conversation.
    #[derive(Debug, Clone)]
    enum Step {
        /// The user types (1 or 2 messages).
        User(u8),
        /// The agent answers (text, or calls to a client tool).
        Agent { calls: u8 },
        /// The run failed before the agent said anything.
        Nothing,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (1u8..=2).prop_map(Step::User),
            3 => (0u8..=2).prop_map(|calls| Step::Agent { calls }),
            1 => Just(Step::Nothing),
        ]
    }

    proptest! {
        /// Whatever the conversation, a client sending its whole history on
        /// every run never gets a message sent upstream twice, and every
        /// message it added reaches the agent.
        #[test]
        fn no_message_is_sent_twice(steps in prop::collection::vec(step(), 1..24)) {
            let mut history: Vec<Value> = Vec::new();
            let mut memory = ThreadMemory::default();
            let mut delivered: Vec<String> = Vec::new();
            let mut added: Vec<String> = Vec::new();
            let mut pending_calls: Vec<String> = Vec::new();
            for (n, step) in steps.iter().enumerate() {
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
                    Step::Agent { calls } => {
                        let calls: Vec<Value> = (0..*calls)
                            .map(|c| json!({ "id": format!("call-{n}-{c}~ab"), "type": "function",
                                              "function": { "name": "get_weather", "arguments": "{}" } }))
                            .collect();
                        pending_calls = calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect();
                        history.push(json!({ "id": format!("agent-{n}"), "role": "assistant",
                                             "content": "ok", "toolCalls": calls }));
                        continue;
                    }
                    Step::Nothing => {}
                }
                let body = json!({ "threadId": "th", "runId": format!("r{n}"), "messages": history });
                match parse(body.to_string().as_bytes()).unwrap().plan(&memory) {
                    Ok(request) => {
                        for id in &request.delivers {
                            prop_assert!(!delivered.contains(id), "{id} sent twice");
                        }
                        memory.remember_sent(&request.delivers);
                        delivered.extend(request.delivers);
                    }
                    Err(err) => prop_assert_eq!(err.code, ErrorCode::NoNewInput),
                }
            }
            for id in &added {
                prop_assert!(delivered.contains(id), "{id} never sent");
            }
        }
    }
}
