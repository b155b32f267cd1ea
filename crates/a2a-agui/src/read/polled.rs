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
//!   new status message, each as a `working` status update: agents say
//!   what they do before doing it;
//! - each artifact's parts past those handed on (and its metadata when it
//!   changed), as an appending artifact update;
//! - the status, when its state, its closing message or the task's
//!   metadata changed: a state that ends the turn ends the run, as its
//!   status update would.
//!
//! A continuation of a task (its earlier turns are in the task) starts
//! from a read of the task before the send (`baseline`): its messages and
//! the artifact parts it holds are the earlier turns', never shown again.
//! A replica taking a run over starts from the run's `PollMemo` and the
//! parts its rebuilt converter showed (`reattached`).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::json::MAX_ID_BYTES;
use crate::state::TaskState;

/// The most message ids and artifacts a polled run remembers, as the
/// converter's own bound on what it tracks.
const MAX_TRACKED: usize = 4096;

/// The most artifacts of earlier turns a run remembers (and journals in
/// its memo).
const MAX_BASELINE: usize = 64;

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

/// What a replica taking a polled run over needs to read the task as the
/// run did: the message it sent and the earlier turns' artifact parts
/// (journaled with the run; the converter's own state is rebuilt from its
/// input).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollMemo {
    sent: Option<String>,
    baseline: Vec<(String, usize)>,
}

/// An artifact as handed on: its parts (past the earlier turns') and its
/// metadata, hashed.
#[derive(Debug, Default, Clone, Copy)]
struct Handed {
    parts: usize,
    metadata: Option<u64>,
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
    /// Per artifact: what was handed on (at most `MAX_TRACKED`).
    handed: HashMap<String, Handed>,
    /// The state last handed on.
    state: Option<TaskState>,
    /// The task's metadata last handed on, hashed: handed on again only
    /// when it changes (each time, it is a status notice to the client).
    metadata: Option<u64>,
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
    /// another replica, with the run's `memo`), having shown `shown`
    /// parts of each artifact (`Converter::artifacts_shown`): no opening
    /// item, nothing shown again.
    pub fn reattached(memo: PollMemo, shown: Vec<(String, usize)>) -> TaskPoll {
        let handed = shown
            .into_iter()
            .take(MAX_TRACKED)
            .map(|(id, parts)| {
                let handed = Handed {
                    parts,
                    metadata: None,
                };
                (id, handed)
            })
            .collect();
        TaskPoll {
            opened: true,
            sent: memo.sent,
            baseline: memo.baseline.into_iter().collect(),
            handed,
            ..TaskPoll::default()
        }
    }

    /// What a replica taking the run over needs (`reattached`).
    pub fn memo(&self) -> PollMemo {
        let mut baseline: Vec<(String, usize)> = self
            .baseline
            .iter()
            .map(|(id, parts)| (id.clone(), *parts))
            .collect();
        baseline.sort();
        PollMemo {
            sent: self.sent.clone(),
            baseline,
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
            if let Some(id) = artifact_id(artifact)
                && self.baseline.len() < MAX_BASELINE
            {
                let parts = parts_of(artifact).map_or(0, |(_, parts)| parts.len());
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
        let mut ids = json!({ "taskId": task_id });
        if let Some(context) = task.get("contextId") {
            ids["contextId"] = context.clone();
        }
        let status = task.get("status").and_then(Value::as_object);
        let state = status
            .and_then(|status| status.get("state"))
            .and_then(Value::as_str)
            .map_or(TaskState::Unknown, TaskState::parse);
        let mut items = Vec::new();
        if !self.opened {
            self.opened = true;
            let mut opening = json!({ "id": task_id,
                "status": { "state": spelled(TaskState::Submitted, v03) } });
            if let Some(context) = task.get("contextId") {
                opening["contextId"] = context.clone();
            }
            items.push(envelope(opening, "task", v03));
        }
        let said = status_message(task).and_then(message_id).map(str::to_owned);
        let mut news = self.news(task, said.as_deref());
        if !state.ends_turn()
            && let Some(id) = said.as_deref()
            && !self.seen.contains(id)
            && let Some(message) = status_message(task)
        {
            news.push(message.clone());
            self.remember(id);
        }
        for message in news {
            let mut update = ids.clone();
            update["status"] =
                json!({ "state": spelled(TaskState::Working, v03), "message": message });
            if v03 {
                update["final"] = json!(false);
            }
            items.push(envelope(update, "status-update", v03));
        }
        for artifact in artifacts(task) {
            if let Some(update) = self.artifact_news(artifact) {
                let mut item = ids.clone();
                if let (Value::Object(item), Value::Object(update)) = (&mut item, update) {
                    item.extend(update);
                }
                items.push(envelope(item, "artifact-update", v03));
            }
        }
        if let Some(update) = self.status_news(task, state, said.as_deref()) {
            let mut item = ids;
            if let (Value::Object(item), Value::Object(update)) = (&mut item, update) {
                item.extend(update);
            }
            if v03 {
                item["final"] = json!(state.ends_turn());
            }
            items.push(envelope(item, "status-update", v03));
        }
        Polled::Task {
            items,
            done: state.ends_turn(),
            task_id: task_id.to_owned(),
        }
    }

    /// The history's agent messages not handed on yet, after the sent
    /// message when it is there; the status message is not one of them.
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

    /// An artifact's parts past those handed on (and past the earlier
    /// turns'), with its metadata when it changed: an update that appends
    /// once anything of it was handed on.
    fn artifact_news(&mut self, artifact: &Value) -> Option<Value> {
        let id = artifact_id(artifact)?;
        let (key, parts) = parts_of(artifact).unwrap_or(("parts", &EMPTY));
        let before = self.baseline.get(id).copied().unwrap_or(0);
        let parts = parts.get(before..).unwrap_or_default();
        let metadata = artifact.get("metadata").map(hash);
        if !self.handed.contains_key(id) && self.handed.len() >= MAX_TRACKED {
            return None;
        }
        let handed = self.handed.entry(id.to_owned()).or_default();
        let new = parts.get(handed.parts..).unwrap_or_default();
        if new.is_empty() && metadata == handed.metadata {
            return None;
        }
        let mut update = Map::new();
        for field in ["artifactId", "name", "description", "extensions"] {
            if let Some(value) = artifact.get(field) {
                update.insert(field.to_owned(), value.clone());
            }
        }
        if metadata != handed.metadata
            && let Some(value) = artifact.get("metadata")
        {
            update.insert("metadata".to_owned(), value.clone());
        }
        update.insert(key.to_owned(), Value::Array(new.to_vec()));
        let append = handed.parts > 0;
        handed.parts += new.len();
        handed.metadata = metadata;
        Some(json!({ "artifact": update, "append": append }))
    }

    /// The status, when its state changed, it closes the turn with a
    /// message not handed on, or the task's metadata changed.
    fn status_news(
        &mut self,
        task: &Map<String, Value>,
        state: TaskState,
        said: Option<&str>,
    ) -> Option<Value> {
        let status = task.get("status")?.as_object()?;
        let closing = said.filter(|id| state.ends_turn() && !self.seen.contains(*id));
        let metadata = task.get("metadata").map(hash);
        let changed = self.state != Some(state) || closing.is_some() || metadata != self.metadata;
        self.state = Some(state);
        if !changed {
            return None;
        }
        let mut shown = status.clone();
        if closing.is_none() {
            shown.remove("message");
        }
        if let Some(id) = closing {
            self.remember(id);
        }
        let mut update = json!({ "status": shown });
        if metadata != self.metadata
            && let Some(value) = task.get("metadata")
        {
            update["metadata"] = value.clone();
        }
        self.metadata = metadata;
        Some(update)
    }

    fn remember(&mut self, id: &str) {
        if self.seen.len() < MAX_TRACKED {
            self.seen.insert(id.to_owned());
        }
    }
}

static EMPTY: Vec<Value> = Vec::new();

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

/// An artifact's parts and the key they are under (0.3's ProtoJSON says
/// `content`).
fn parts_of(artifact: &Value) -> Option<(&'static str, &Vec<Value>)> {
    ["parts", "content"]
        .into_iter()
        .find_map(|key| Some((key, artifact.get(key)?.as_array()?)))
}

/// An id the gateway keeps (one past `MAX_ID_BYTES` is no id: never
/// remembered, so never grown on).
fn kept_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_BYTES
}

fn message_id(message: &Value) -> Option<&str> {
    message
        .get("messageId")
        .and_then(Value::as_str)
        .filter(|id| kept_id(id))
}

fn artifact_id(artifact: &Value) -> Option<&str> {
    artifact
        .get("artifactId")
        .and_then(Value::as_str)
        .filter(|id| kept_id(id))
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
        "artifact-update" => "artifactUpdate",
        _ => "statusUpdate",
    };
    json!({ key: item })
}

fn hash(value: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_vec(value)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}
