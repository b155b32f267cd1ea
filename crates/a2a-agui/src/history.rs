//! A thread's conversation rebuilt from the agent's stored tasks (A2A
//! `ListTasks` by `contextId`, `GetTask`): what a reload shows when the
//! gateway no longer holds the runs.
//!
//! Each task's `history` (the user's turns and the agent's earlier status
//! messages), its artifacts and its last `status.message` are read by one
//! converter pass, as a live stream is, so a part means the same whether
//! it streamed or was stored, and the agent's messages group as they did
//! live (status texts that followed each other are one message); then
//! folded into messages ([`crate::messages`]). A user's turn closes what
//! the agent had open. Ids are the agent's, so a replay gives the same ids
//! every time: a text message takes the A2A `messageId` (or `artifactId`)
//! it began in (a second one from the same A2A message gets `-2`, …),
//! reasoning `<messageId>-reasoning`, a tool result `<toolCallId>-result`,
//! whether the agent reported it or the client's tool sent it back.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::convert::{Converter, Options, StreamEnd};
use crate::event::{Event, Id};
use crate::messages::{Message, MessageFold};
use crate::read::{PartBody, part_body, read_message_object};

/// The conversation of `tasks`, oldest task first, as AG-UI messages.
/// Anything that is not a task is skipped.
pub fn thread_messages(tasks: &[Value]) -> Vec<Message> {
    let mut replay = Replay::default();
    for task in tasks.iter().filter_map(Value::as_object) {
        if replay.fold.is_full() {
            break;
        }
        let history = task.get("history").and_then(Value::as_array);
        for message in history.into_iter().flatten() {
            replay.message(message);
        }
        // The current status message last: it is usually what closed the
        // turn, after the artifacts (a task records no order between them).
        let artifacts = task.get("artifacts").and_then(Value::as_array);
        for artifact in artifacts.into_iter().flatten() {
            replay.artifact(artifact);
        }
        let status = task.get("status").and_then(Value::as_object);
        if let Some(message) = status.and_then(|s| s.get("message")) {
            replay.message(message);
        }
        replay.close();
    }
    replay.fold.into_messages()
}

/// One converter pass over a thread, its minted message ids renamed.
struct Replay {
    fold: MessageFold,
    converter: Converter,
    /// Minted id → stable id, for the whole pass: a text the converter
    /// keeps open continues under the name it began with.
    names: HashMap<Id, Id>,
    /// How many messages each stable name began.
    begun: HashMap<String, usize>,
}

impl Default for Replay {
    fn default() -> Self {
        Replay {
            fold: MessageFold::default(),
            converter: Converter::with_sequential_ids(Options::default()),
            names: HashMap::new(),
            begun: HashMap::new(),
        }
    }
}

impl Replay {
    /// One stored message: the user's as they sent it (text, and the
    /// results of the client's tools), the agent's read as a status
    /// message is.
    fn message(&mut self, message: &Value) {
        let Some(fields) = message.as_object() else {
            return;
        };
        let read = read_message_object(fields);
        let id = read.message_id.unwrap_or_default();
        if !(read.role.is_some() && read.is_from_user()) {
            self.push(&status(message), id, |_| true);
            return;
        }
        self.close();
        let parts = read.parts.unwrap_or_default();
        let text: String = parts
            .iter()
            .filter_map(|part| match part_body(part) {
                PartBody::Text(text) => Some(text),
                _ => None,
            })
            .collect();
        if !id.is_empty() && !text.is_empty() {
            self.fold.user(id, &text);
        }
        // The results the client's tools sent back, read as the agent's
        // would be; nothing else of a user's data is shown.
        let data: Vec<&Value> = parts
            .iter()
            .filter(|part| !matches!(part_body(part), PartBody::Text(_)))
            .collect();
        if !data.is_empty() {
            let results = json!({"role": "agent", "messageId": id, "parts": data});
            self.push(&status(&results), id, |event| {
                matches!(event, Event::ToolCallResult { .. })
            });
            self.close();
        }
    }

    fn artifact(&mut self, artifact: &Value) {
        let id = artifact
            .get("artifactId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let item = json!({"kind": "artifact-update", "append": false, "lastChunk": true,
                          "artifact": artifact});
        self.push(&item, id, |_| true);
    }

    /// Ends what the agent had open (the converter's end of input), and
    /// begins a new pass: nothing continues across it.
    fn close(&mut self) {
        let mut events = Vec::new();
        self.converter.finish(StreamEnd::Eof, &mut events);
        self.fold_events(&events, "", |_| true);
        self.converter = Converter::with_sequential_ids(Options::default());
        self.names.clear();
    }

    /// Converts `item` and folds the events `keep` takes, the messages
    /// they begin named after `stable`.
    fn push(&mut self, item: &Value, stable: &str, keep: impl Fn(&Event) -> bool) {
        let mut events = Vec::new();
        self.converter.push_value(item, &mut events);
        self.fold_events(&events, stable, keep);
    }

    fn fold_events(&mut self, events: &[Event], stable: &str, keep: impl Fn(&Event) -> bool) {
        for event in events.iter().filter(|e| keep(e)) {
            let minted = match event {
                Event::TextMessageStart { message_id, .. } => Some((message_id, "")),
                Event::ReasoningMessageStart { message_id, .. } => Some((message_id, "-reasoning")),
                _ => None,
            };
            if let Some((minted, suffix)) = minted.filter(|_| !stable.is_empty()) {
                let base = format!("{stable}{suffix}");
                let n = self.begun.entry(base.clone()).or_default();
                *n += 1;
                let name = if *n == 1 { base } else { format!("{base}-{n}") };
                self.names.insert(minted.clone(), name.into());
            }
            if let Event::ToolCallResult {
                message_id,
                tool_call_id,
                ..
            } = event
            {
                let name = format!("{tool_call_id}-result").into();
                self.names.insert(message_id.clone(), name);
            }
            self.fold.event(&rename(event, &self.names));
        }
    }
}

/// A stored agent message as the working status update that carried it.
fn status(message: &Value) -> Value {
    json!({"kind": "status-update", "final": false,
           "status": {"state": "working", "message": message}})
}

/// `event` with the message ids in `names` replaced.
fn rename(event: &Event, names: &HashMap<Id, Id>) -> Event {
    let new = |id: &Id| names.get(id).cloned().unwrap_or_else(|| id.clone());
    let mut event = event.clone();
    match &mut event {
        Event::TextMessageStart { message_id, .. }
        | Event::TextMessageContent { message_id, .. }
        | Event::TextMessageEnd { message_id, .. }
        | Event::ReasoningMessageStart { message_id, .. }
        | Event::ReasoningMessageContent { message_id, .. }
        | Event::ReasoningMessageEnd { message_id }
        | Event::ToolCallResult { message_id, .. } => *message_id = new(message_id),
        Event::ToolCallStart {
            parent_message_id: Some(parent),
            ..
        } => *parent = new(parent),
        _ => {}
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_thread_reads_as_the_conversation_with_the_agents_ids() {
        let tasks = [json!({
            "id": "t1", "contextId": "c1",
            "history": [
                {"role": "user", "messageId": "u1", "parts": [{"kind": "text", "text": "Weather in Paris?"}]},
                {"role": "agent", "messageId": "a1", "parts": [
                    {"kind": "text", "text": "I should look it up.", "metadata": {"thought": true}},
                    {"kind": "text", "text": "Let me check."},
                    {"kind": "data", "data": {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}}]},
                {"role": "agent", "messageId": "a2", "parts": [
                    {"kind": "data", "data": {"type": "tool_result", "tool_call_id": "c1", "output": "21C"}}]}
            ],
            "status": {"state": "completed", "message": {"role": "agent", "messageId": "a3",
                "parts": [{"kind": "text", "text": "It is 21C in Paris."}]}}
        })];
        let messages = serde_json::to_value(thread_messages(&tasks)).unwrap_or_default();
        assert_eq!(
            messages,
            json!([
                {"role": "user", "id": "u1", "content": "Weather in Paris?"},
                {"role": "reasoning", "id": "a1-reasoning", "content": "I should look it up."},
                {"role": "assistant", "id": "a1", "content": "Let me check.", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "id": "c1-result", "content": "21C", "toolCallId": "c1"},
                {"role": "assistant", "id": "a3", "content": "It is 21C in Paris."}
            ])
        );
    }

    #[test]
    fn status_texts_that_followed_each_other_are_one_message_as_they_were_live() {
        let text = |id: &str, text: &str| json!({"role": "ROLE_AGENT", "messageId": id, "parts": [{"text": text}]});
        let tasks = [
            json!({"id": "t1", "history": [
                {"role": "ROLE_USER", "messageId": "u1", "parts": [{"text": "status-text"}]},
                text("s1", "Status "), text("s2", "streamed "), text("s3", "text.")],
                "status": {"state": "TASK_STATE_COMPLETED"}}),
            json!({"id": "t2", "history": [
                {"role": "ROLE_USER", "messageId": "u2", "parts": [{"text": "again"}]},
                text("s4", "Once "), text("s5", "more.")],
                "status": {"state": "TASK_STATE_COMPLETED"}}),
        ];
        let messages = serde_json::to_value(thread_messages(&tasks)).unwrap_or_default();
        assert_eq!(
            messages,
            json!([
                {"role": "user", "id": "u1", "content": "status-text"},
                {"role": "assistant", "id": "s1", "content": "Status streamed text."},
                {"role": "user", "id": "u2", "content": "again"},
                {"role": "assistant", "id": "s4", "content": "Once more."}
            ])
        );
    }

    #[test]
    fn the_result_a_clients_tool_sent_back_is_the_tool_message_of_its_call() {
        let tasks = [json!({
            "id": "t1",
            "history": [
                {"role": "ROLE_USER", "messageId": "u1", "parts": [{"text": "clienttool"}]},
                {"role": "ROLE_AGENT", "messageId": "a1", "parts": [
                    {"text": "Let me check the weather."},
                    {"data": {"type": "tool_use", "id": "call-weather", "name": "get_weather",
                              "arguments": {"city": "Paris"}}}]},
                {"role": "ROLE_USER", "messageId": "u2", "parts": [
                    {"data": {"type": "tool_result", "tool_call_id": "call-weather",
                              "tool_name": "get_weather", "content": "{\"t\":21}", "is_error": false},
                     "metadata": {"event_type": "tool_call", "tool_call_id": "call-weather",
                                  "tool_name": "get_weather", "is_error": false, "is_final": true}}]}
            ],
            "artifacts": [{"artifactId": "answer", "parts": [{"text": "get_weather said: {\"t\":21}"}]}],
            "status": {"state": "TASK_STATE_COMPLETED"}
        })];
        let messages = serde_json::to_value(thread_messages(&tasks)).unwrap_or_default();
        assert_eq!(
            messages,
            json!([
                {"role": "user", "id": "u1", "content": "clienttool"},
                {"role": "assistant", "id": "a1", "content": "Let me check the weather.", "toolCalls": [
                    {"id": "call-weather", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "id": "call-weather-result", "content": "{\"t\":21}",
                 "toolCallId": "call-weather"},
                {"role": "assistant", "id": "answer", "content": "get_weather said: {\"t\":21}"}
            ])
        );
    }
}
