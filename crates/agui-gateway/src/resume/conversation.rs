//! A thread's conversation as the gateway can tell it: from the journal
//! while it keeps the thread's runs (each run's input messages, the
//! client's own, ids and all, and the messages its events made, merged by
//! id in order), else from the agent (its tasks in the thread's context,
//! A2A 1.0 `ListTasks`, or the tasks the thread's runs named, `GetTask`,
//! 0.3 too, read by the converter, `a2a_agui::thread_messages`); only
//! tasks holding a message the gateway sent for this caller's thread
//! (`ThreadRef::owner_tag`), so a thread id is not a key to another
//! caller's conversation. Bounded: `MAX_MESSAGES` messages and
//! `MAX_SNAPSHOT_BYTES` in all; what the agent answers, per call and in
//! all, like an event, and parsed within an element budget
//! (`upstream::answer`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use a2a_agui::{MessageFold, SseParser};
use agui_journal::ThreadRef;
use agui_journal::replays::Reader;
use serde_json::Value;

use super::{Found, find};
use crate::config::A2aVersion;
use crate::state::AppState;
use crate::upstream::Call;
use crate::upstream::outbound::Forwarded;
use crate::upstream::route::Route;
use crate::upstream::{Agent, TaskCall, answer};

/// The most messages a snapshot holds.
const MAX_MESSAGES: usize = a2a_agui::MAX_MESSAGES;
/// The most bytes a snapshot holds (later messages are left out).
const MAX_SNAPSHOT_BYTES: usize = 16 << 20;
/// `ListTasks` pages read at most (100 tasks each).
const MAX_PAGES: usize = 5;
/// How long the agent may take to give a thread's tasks, all calls
/// together (a thread list's too); what came in time is shown.
pub(super) const AGENT_DEADLINE: Duration = Duration::from_secs(10);

/// Which thread, for whom.
pub struct ThreadAsk<'a> {
    pub agent: &'a Agent,
    pub thread: ThreadRef,
    pub thread_id: &'a str,
    /// The run id the replay's run carries (the client's, else minted).
    pub run_id: Option<&'a str>,
    pub forwarded: &'a Forwarded,
    /// Whose budget of replay bytes out the answer counts against.
    pub reader: Reader,
}

/// The thread's runs the journal keeps, oldest first: the shared journal's
/// when there is one (it has every replica's), else this replica's; a run
/// the thread lists but the journal cannot find (evicted, or no longer
/// shared) is `None`.
pub(super) async fn journal_runs(state: &AppState, thread: &ThreadRef) -> Vec<Option<Found>> {
    match &state.redis {
        Some(shared) => {
            let keys = shared
                .thread_runs(thread, None)
                .await
                .unwrap_or_else(|err| {
                    tracing::warn!("reading a thread's shared runs failed: {err}");
                    Vec::new()
                });
            let mut found = Vec::new();
            for key in keys {
                found.push(find(state, &key).await);
            }
            found
        }
        None => state
            .journal
            .as_ref()
            .map(|journal| journal.thread_runs(thread, None))
            .unwrap_or_default()
            .into_iter()
            .map(|log| Some(Found::Here(log)))
            .collect(),
    }
}

pub(super) fn run_ended(run: &Found) -> bool {
    match run {
        Found::Here(log) => log.is_finished(),
        Found::Elsewhere(_, remote) => remote.done,
    }
}

/// What a replay built from `runs` depends on: which runs there are and
/// which have ended (a run's input is fixed when it starts, its frames
/// when it ends; a live run's frames are followed, not replayed).
pub(super) fn version_of(runs: &[Option<Found>]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for run in runs {
        match run {
            None => 0u8.hash(&mut hasher),
            Some(run) => {
                1u8.hash(&mut hasher);
                run.key().hash(&mut hasher);
                run_ended(run).hash(&mut hasher);
            }
        }
    }
    hasher.finish()
}

/// The thread's messages (oldest first), and whether the agent was asked
/// (the journal did not tell the whole thread): the agent's tasks change
/// without the journal's version showing it.
pub(super) async fn conversation(
    state: &AppState,
    ask: &ThreadAsk<'_>,
    runs: &[Option<Found>],
    live: Option<&Found>,
) -> (Vec<Value>, bool) {
    let journaled = from_journal(runs).await;
    if journaled.whole {
        return (journaled.conversation.messages, false);
    }
    // The live run's task is followed live: the agent's copy of it would
    // show its answer twice.
    let live_task = live.and_then(|run| match run {
        Found::Here(log) => log.task(),
        Found::Elsewhere(_, remote) => remote.task.clone(),
    });
    let told = from_agent(state, ask, live_task.as_deref()).await;
    // An agent that tells nothing (a 0.3 agent whose tasks the gateway
    // forgot, a timeout) leaves what the journal has.
    if told.messages.is_empty() {
        (journaled.conversation.messages, true)
    } else {
        (told.messages, true)
    }
}

/// What the journal keeps of a thread.
struct Journaled {
    conversation: Conversation,
    /// It has all the conversation: the newest run's input messages (the
    /// client sends the whole thread each time) and, when that run has
    /// ended, all its frames. False too when it keeps no run.
    whole: bool,
}

/// What the journal keeps of the thread's `runs`. An older run whose
/// frames or input are gone adds what it still has; the newest decides
/// whether the journal tells the whole thread.
async fn from_journal(found: &[Option<Found>]) -> Journaled {
    let mut conversation = Conversation::default();
    let Some(last) = found.len().checked_sub(1) else {
        return Journaled {
            conversation,
            whole: false,
        };
    };
    let mut whole = true;
    for (n, run) in found.iter().enumerate() {
        let newest = n == last;
        let Some(run) = run else {
            whole &= !newest;
            continue;
        };
        let (input, ended) = match run {
            Found::Here(log) => {
                let input = log.identity().thread.as_ref().map(|t| t.input.clone());
                (input.filter(|i| !i.is_empty()), log.is_finished())
            }
            Found::Elsewhere(shared, remote) => {
                let input = shared.run_input(&remote.key).await.ok().flatten();
                (input.filter(|i| !i.is_empty()), remote.done)
            }
        };
        match input {
            Some(input) => conversation.input(&input),
            None => whole &= !newest,
        }
        if newest && !ended {
            continue;
        }
        let read = match run {
            Found::Here(log) => log
                .read_after(0)
                .ok()
                .map(|slice| conversation.run(log.key(), slice.frames.iter().map(|b| &b[..]))),
            Found::Elsewhere(shared, remote) => {
                let entries = shared.all_entries(&remote.key).await.ok();
                entries.map(|entries| {
                    conversation.run(&remote.key, entries.iter().map(|e| &e.out[..]))
                })
            }
        };
        whole &= !newest || read == Some(true);
    }
    Journaled {
        conversation,
        whole,
    }
}

/// The thread from the agent's stored tasks: those a message the gateway
/// sent for this caller's thread started, listed (1.0), else each task
/// recorded for the thread (`GetTask`); within `AGENT_DEADLINE`; less the
/// live run's task.
async fn from_agent(
    state: &AppState,
    ask: &ThreadAsk<'_>,
    live_task: Option<&str>,
) -> Conversation {
    let limit = state.config.limits.max_event_bytes;
    let deadline = tokio::time::Instant::now() + AGENT_DEADLINE;
    let agent = ask.agent;
    let owner = ask.thread.owner_tag();
    let mut tasks = Vec::new();
    // One element budget for everything the agent tells of the thread.
    let mut elements = answer::MAX_ELEMENTS;
    let route = agent.route().await;
    if route.version() == A2aVersion::V10 {
        tasks = listed(
            agent,
            &route,
            ask.forwarded,
            ask.thread_id,
            limit,
            deadline,
            &mut elements,
        )
        .await;
        tasks.retain(|task| started_by(task, &owner));
    }
    if tasks.is_empty() {
        let recorded = match &state.redis {
            Some(shared) => shared.thread_tasks(&ask.thread).await.unwrap_or_default(),
            None => state
                .journal
                .as_ref()
                .map(|journal| journal.thread_tasks(&ask.thread))
                .unwrap_or_default(),
        };
        let mut budget = MAX_SNAPSHOT_BYTES;
        for task in recorded {
            let call = Call::Task(TaskCall::Get, &task);
            let answer = agent.answer(&route, call, ask.forwarded, limit.min(budget));
            let Ok(answer) = tokio::time::timeout_at(deadline, answer).await else {
                break;
            };
            let Some(answer) = answer else {
                continue;
            };
            budget = budget.saturating_sub(answer.len());
            if let Some(task) = result(&answer, &mut elements) {
                tasks.push(task);
            }
        }
        tasks.retain(|task| started_by(task, &owner));
    }
    tasks.retain(|task| {
        live_task.is_none_or(|live| task.get("id").and_then(Value::as_str) != Some(live))
    });
    let mut conversation = Conversation::default();
    for message in a2a_agui::thread_messages(&tasks) {
        conversation.push(serde_json::to_value(message).unwrap_or_default());
    }
    conversation
}

/// A 1.0 agent's tasks in a context, oldest first (it lists the newest
/// first).
async fn listed(
    agent: &Agent,
    route: &Route,
    forwarded: &Forwarded,
    context: &str,
    limit: usize,
    deadline: tokio::time::Instant,
    elements: &mut usize,
) -> Vec<Value> {
    let mut tasks = Vec::new();
    let mut page_token = String::new();
    let mut budget = MAX_SNAPSHOT_BYTES;
    for _ in 0..MAX_PAGES {
        let call = Call::List {
            context: Some(context),
            page_token: &page_token,
        };
        let answer = agent.answer(route, call, forwarded, limit.min(budget));
        let Ok(Some(answer)) = tokio::time::timeout_at(deadline, answer).await else {
            break;
        };
        budget = budget.saturating_sub(answer.len());
        let Some(page) = result(&answer, elements) else {
            break;
        };
        if let Some(Value::Array(listed)) = page.get("tasks") {
            tasks.extend(listed.iter().cloned());
        }
        match page.get("nextPageToken").and_then(Value::as_str) {
            Some(next) if !next.is_empty() && next != page_token => page_token = next.to_owned(),
            _ => break,
        }
    }
    tasks.reverse();
    tasks
}

/// The task holds a message the gateway sent for this caller's thread
/// (`ThreadRef::owner_tag`).
pub(super) fn started_by(task: &Value, owner: &str) -> bool {
    let history = task.get("history").and_then(Value::as_array);
    let status = task.pointer("/status/message");
    history
        .into_iter()
        .flatten()
        .chain(status)
        .filter_map(|message| message.get("messageId").and_then(Value::as_str))
        .any(|id| ThreadRef::is_sent(id, owner))
}

/// A JSON-RPC answer's result, or an HTTP+JSON answer (an error answer
/// has none), parsed within
/// `elements` (`upstream::answer`), which it spends.
pub(super) fn result(answer: &[u8], elements: &mut usize) -> Option<Value> {
    let mut value = answer::parse_within(answer, elements)?;
    if let Some(result) = value.get_mut("result") {
        return result.is_object().then(|| result.take());
    }
    // HTTP+JSON answers with the object itself (a task, a page of tasks);
    // an error is no result.
    (value.is_object() && value.get("error").is_none()).then_some(value)
}

/// AG-UI messages merged by id, in the order first seen, bounded.
#[derive(Default)]
struct Conversation {
    messages: Vec<Value>,
    at: HashMap<String, usize>,
    bytes: usize,
}

impl Conversation {
    /// A run's input messages as recorded (a JSON array).
    fn input(&mut self, input: &[u8]) {
        if let Ok(Value::Array(messages)) = serde_json::from_slice(input) {
            for message in messages {
                self.push(message);
            }
        }
    }

    /// The messages run `key`'s frames (`data:` JSON events) made; false
    /// when they are not AG-UI (an agent whose format is Hector's named
    /// events), which this cannot read.
    fn run<'a>(&mut self, key: &str, chunks: impl Iterator<Item = &'a [u8]>) -> bool {
        let mut fold = MessageFold::for_run(key);
        let mut parser = SseParser::new(MAX_SNAPSHOT_BYTES);
        let mut agui = true;
        let mut each = |event: a2a_agui::SseEvent<'_>| match event.name {
            // The inspector's tap: the A2A event the next frames came from.
            Some("a2a") => {}
            Some(_) => agui = false,
            None => {
                if let Ok(event) = serde_json::from_slice::<Value>(event.data) {
                    fold.event_json(&event);
                }
            }
        };
        for chunk in chunks {
            let _ = parser.feed(chunk, &mut each);
        }
        let _ = parser.finish(&mut each);
        if !agui {
            return false;
        }
        for message in fold.into_messages() {
            self.push(serde_json::to_value(message).unwrap_or_default());
        }
        true
    }

    /// A message: one already held under its id is replaced where it is
    /// (the client's latest copy), a new one appended while there is room.
    fn push(&mut self, message: Value) {
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            return;
        };
        let size = serde_json::to_vec(&message).map_or(usize::MAX, |b| b.len());
        match self.at.get(id) {
            Some(&at) => {
                let old = serde_json::to_vec(&self.messages[at]).map_or(0, |b| b.len());
                if self.bytes - old.min(self.bytes) + size <= MAX_SNAPSHOT_BYTES {
                    self.bytes = self.bytes - old.min(self.bytes) + size;
                    self.messages[at] = message;
                }
            }
            None if self.messages.len() < MAX_MESSAGES
                && self.bytes.saturating_add(size) <= MAX_SNAPSHOT_BYTES =>
            {
                self.bytes += size;
                self.at.insert(id.to_owned(), self.messages.len());
                self.messages.push(message);
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_merges_inputs_and_runs_by_id_in_order() {
        let mut conversation = Conversation::default();
        conversation.input(br#"[{"id":"u1","role":"user","content":"hi"}]"#);
        assert!(conversation.run(
            "k",
            [
                &b"id: k.1\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"[..],
                b"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m1\",\"role\":\"assistant\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"hel",
                b"lo\"}\n\n",
            ]
            .into_iter(),
        ));
        // Hector's named events are not AG-UI: that run cannot be read.
        assert!(!conversation.run(
            "h",
            [&b"event: message_start\ndata: {\"messageId\":\"x\"}\n\n"[..]].into_iter()
        ));
        // The next run's input holds the whole thread again, and more.
        conversation.input(
            br#"[{"id":"u1","role":"user","content":"hi"},{"id":"m1","role":"assistant","content":"hello"},{"id":"u2","role":"user","content":"again"},{"role":"user"}]"#,
        );
        conversation.input(b"not json");
        let ids: Vec<&str> = conversation
            .messages
            .iter()
            .filter_map(|m| m["id"].as_str())
            .collect();
        assert_eq!(ids, ["u1", "m1", "u2"]);
        assert_eq!(conversation.messages[1]["content"], "hello");
    }

    #[test]
    fn a_conversation_is_bounded_as_it_grows() {
        let mut conversation = Conversation::default();
        let big = "x".repeat(1 << 20);
        for n in 0..40 {
            conversation.push(json!({"id": format!("m{n}"), "role": "user", "content": big}));
        }
        assert!(conversation.bytes <= MAX_SNAPSHOT_BYTES);
        assert_eq!(conversation.messages.len(), 15);
        for n in 0..MAX_MESSAGES + 10 {
            conversation.push(json!({"id": format!("s{n}"), "role": "user", "content": ""}));
        }
        assert_eq!(conversation.messages.len(), MAX_MESSAGES);
    }
}
