//! A task read again and again (an agent that does not stream): what is
//! new in each read, as the stream items that would have carried it, so a
//! polled run goes through the same converter as a streamed one.
//!
//! Each read gives, in order:
//! - on the first read only, the task as it opened (its ids, `submitted`):
//!   a stream opens with the task, and the converter reads its first item
//!   as the turn's past (`Converter::on_task`), so the content follows in
//!   items of its own;
//! - each agent message of the history that is new (status messages an
//!   agent moved there when the next status came), then a working task's
//!   new status message, each as a `working` status;
//! - the task itself without its history, when it changed since the last
//!   read. The converter shows of it only what it has not shown: artifact
//!   parts past those it saw, messages by their ids. That is also what
//!   makes a run re-attached after a takeover show nothing twice.
//!
//! A continuation of a task (its earlier turns are in the task) starts
//! from a read of the task before the send (`baseline`): its messages and
//! the artifact parts it holds are the earlier turns', never shown again.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::state::TaskState;

/// The most message ids and artifacts a polled run remembers, as the
/// converter's own bound on what it tracks.
const MAX_TRACKED: usize = 4096;

/// What one read of a polled task comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Polled {
    /// The agent answered with its task.
    Task {
        /// Stream items to convert, in order (often none: nothing new).
        items: Vec<Value>,
        /// The task ended or waits for the user: no more reads.
        done: bool,
        /// The task's id, the next reads' subject.
        task_id: String,
    },
    /// Not a task (a message, an error, anything else): converted as the
    /// answer it is, and the run ends with it.
    Other,
}

/// One polled run's memory of what it handed on.
#[derive(Debug, Default)]
pub struct TaskPoll {
    /// The id of the message the gateway sent: the history up to it is
    /// earlier turns' and the user's own.
    sent: Option<String>,
    /// The opening item was given (or the converter knows the task
    /// already: a re-attach).
    opened: bool,
    /// Message ids handed on, or the earlier turns': at most
    /// `MAX_TRACKED` (past it the converter's own ids still hold).
    seen: HashSet<String>,
    /// Per artifact of the earlier turns: its parts then.
    baseline: HashMap<String, usize>,
    /// The last snapshot handed on, hashed: an unchanged task adds
    /// nothing.
    last: Option<u64>,
}

impl TaskPoll {
    /// A run that sent the message with id `sent`.
    pub fn new(sent: Option<String>) -> TaskPoll {
        TaskPoll {
            sent,
            ..TaskPoll::default()
        }
    }

    /// A run whose converter knows the task already (taken over from
    /// another replica): no opening item.
    pub fn reattached() -> TaskPoll {
        TaskPoll {
            opened: true,
            ..TaskPoll::default()
        }
    }

    /// `answer` is the task as it was before this turn's message.
    pub fn baseline(&mut self, answer: &Value) {
        let Some((task, _)) = task_of(answer) else {
            return;
        };
        for message in history(task).chain(status_message(task)) {
            if let Some(id) = message_id(message) {
                self.remember(id);
            }
        }
        for artifact in artifacts(task) {
            if let Some(id) = artifact.get("artifactId").and_then(Value::as_str)
                && self.baseline.len() < MAX_TRACKED
            {
                let parts = parts_of(artifact).map_or(0, Vec::len);
                *self.baseline.entry(id.to_owned()).or_default() += parts;
            }
        }
    }

    /// What an answer to a send or a read adds.
    pub fn read(&mut self, answer: &Value) -> Polled {
        let Some((task, v03)) = task_of(answer) else {
            return Polled::Other;
        };
        let Some(task_id) = task.get("id").and_then(Value::as_str) else {
            return Polled::Other;
        };
        let context = task.get("contextId").cloned().unwrap_or(Value::Null);
        let state = task
            .get("status")
            .and_then(|status| status.get("state"))
            .and_then(Value::as_str)
            .map_or(TaskState::Unknown, TaskState::parse);
        let mut items = Vec::new();
        if !self.opened {
            self.opened = true;
            let mut opening =
                json!({ "id": task_id, "status": { "state": spelled(TaskState::Submitted, v03) } });
            if !context.is_null() {
                opening["contextId"] = context.clone();
            }
            items.push(envelope(opening, "task", v03));
        }
        let said = status_message(task).and_then(message_id).map(str::to_owned);
        let mut news = self.news(task, said.as_deref());
        // A working task's status message came before the artifact parts
        // this read shows too, as agents say what they do before doing
        // it; a status that ends the turn closes it, after them (in the
        // snapshot).
        if !state.ends_turn()
            && let Some(id) = said.as_deref()
            && !self.seen.contains(id)
            && let Some(message) = status_message(task)
        {
            news.push(message.clone());
            self.remember(id);
        }
        for message in news {
            let mut update = json!({ "taskId": task_id,
                "status": { "state": spelled(TaskState::Working, v03), "message": message } });
            if !context.is_null() {
                update["contextId"] = context.clone();
            }
            if v03 {
                update["final"] = json!(false);
            }
            items.push(envelope(update, "status-update", v03));
        }
        // Hashed as the agent wrote it: what `snapshot` takes out depends
        // on what was seen, which this read changes.
        let digest = digest(task);
        if self.last != Some(digest) {
            self.last = Some(digest);
            items.push(envelope(self.snapshot(task, said.as_deref()), "task", v03));
        }
        if let Some(said) = said {
            self.remember(&said);
        }
        Polled::Task {
            items,
            done: state.ends_turn(),
            task_id: task_id.to_owned(),
        }
    }

    /// The history's agent messages not handed on yet, after the sent
    /// message when it is there; the status message is the snapshot's.
    fn news(&mut self, task: &Map<String, Value>, said: Option<&str>) -> Vec<Value> {
        let all: Vec<&Value> = history(task).collect();
        let from = self
            .sent
            .as_deref()
            .and_then(|sent| all.iter().position(|m| message_id(m) == Some(sent)))
            .map_or(0, |at| at + 1);
        let mut news = Vec::new();
        for message in &all[from..] {
            let Some(id) = message_id(message) else {
                // Without an id it could not be told from the next read's.
                continue;
            };
            if !is_agent(message) || Some(id) == said || self.seen.contains(id) {
                continue;
            }
            self.remember(id);
            news.push((*message).clone());
        }
        news
    }

    /// The task without its history, the earlier turns' artifact parts
    /// and status message taken out.
    fn snapshot(&self, task: &Map<String, Value>, said: Option<&str>) -> Value {
        let mut snapshot = task.clone();
        snapshot.remove("history");
        if said.is_some_and(|id| self.seen.contains(id))
            && let Some(status) = snapshot.get_mut("status").and_then(Value::as_object_mut)
        {
            status.remove("message");
        }
        if !self.baseline.is_empty()
            && let Some(Value::Array(artifacts)) = snapshot.get_mut("artifacts")
        {
            artifacts.retain_mut(|artifact| {
                let id = artifact.get("artifactId").and_then(Value::as_str);
                let Some(before) = id.and_then(|id| self.baseline.get(id)).copied() else {
                    return true;
                };
                let key = if artifact.get("parts").is_some() {
                    "parts"
                } else {
                    "content"
                };
                match artifact.get_mut(key).and_then(Value::as_array_mut) {
                    Some(parts) if parts.len() > before => {
                        parts.drain(..before);
                        true
                    }
                    _ => false,
                }
            });
        }
        Value::Object(snapshot)
    }

    fn remember(&mut self, id: &str) {
        if self.seen.len() < MAX_TRACKED {
            self.seen.insert(id.to_owned());
        }
    }
}

/// The task an answer holds, and whether it is in 0.3's dialect: the
/// JSON-RPC `result`, 1.0's `{"task": …}`, or the task itself.
fn task_of(answer: &Value) -> Option<(&Map<String, Value>, bool)> {
    let result = answer.get("result").unwrap_or(answer);
    let task = result.get("task").unwrap_or(result).as_object()?;
    let is_task = task.contains_key("id")
        && task.get("status").is_some_and(Value::is_object)
        && !task.contains_key("messageId");
    let v03 = task.get("kind").and_then(Value::as_str) == Some("task");
    is_task.then_some((task, v03))
}

fn history(task: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    task.get("history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn artifacts(task: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    task.get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn status_message(task: &Map<String, Value>) -> Option<&Value> {
    task.get("status")?.get("message").filter(|m| m.is_object())
}

fn parts_of(artifact: &Value) -> Option<&Vec<Value>> {
    artifact
        .get("parts")
        .or_else(|| artifact.get("content"))
        .and_then(Value::as_array)
}

fn message_id(message: &Value) -> Option<&str> {
    message
        .get("messageId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
}

/// `agent`, `ROLE_AGENT`: anything but the user's.
fn is_agent(message: &Value) -> bool {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    !role.eq_ignore_ascii_case("user") && !role.eq_ignore_ascii_case("role_user")
}

fn spelled(state: TaskState, v03: bool) -> String {
    if v03 {
        state.as_str().to_owned()
    } else {
        format!(
            "TASK_STATE_{}",
            state.as_str().replace('-', "_").to_uppercase()
        )
    }
}

/// A stream item in the answer's dialect: 0.3's `kind`, 1.0's wrapper.
fn envelope(mut item: Value, kind: &str, v03: bool) -> Value {
    if v03 {
        item["kind"] = json!(kind);
        return item;
    }
    let key = match kind {
        "task" => "task",
        _ => "statusUpdate",
    };
    json!({ key: item })
}

/// The task without its history (where nothing but moved messages
/// change), hashed.
fn digest(task: &Map<String, Value>) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (key, value) in task.iter().filter(|(key, _)| *key != "history") {
        key.hash(&mut hasher);
        serde_json::to_vec(value)
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    hasher.finish()
}
