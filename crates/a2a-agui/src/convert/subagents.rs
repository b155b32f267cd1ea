//! Delegated tasks: items of another task than the run's own (an agent
//! streaming what a sub-agent does), and tasks an agent message names in
//! `referenceTaskIds`. Their states never end the run; a 1.0
//! client sees each as a sub-agent (`SUBAGENT_STARTED`, then
//! `SUBAGENT_FINISHED` or `SUBAGENT_ERROR`), an older one as `a2a.status`
//! notices naming the task.

use std::collections::HashSet;

use super::block::Segment;
use super::status::Origin;
use super::{Converter, MAX_TRACKED};
use crate::digest::WordHashBuilder;
use crate::event::custom::{Custom, StatusNotice};
use crate::event::{Event, Id, SubagentOutcome};
use crate::ids::IdSource;
use crate::read::{Item, StatusView};
use crate::state::TaskState;

#[derive(Debug, Default)]
pub(super) struct Subagents {
    /// Lifecycle events are written (the client speaks 1.0).
    enabled: bool,
    /// Started and not yet finished, in start order.
    open: Vec<Id>,
    /// Every sub-agent started in this run: one start each.
    started: HashSet<String, WordHashBuilder>,
}

impl Subagents {
    pub(super) fn new(enabled: bool) -> Subagents {
        Subagents {
            enabled,
            ..Subagents::default()
        }
    }

    pub(super) fn start(&mut self, task: &str, out: &mut Vec<Event>) {
        if !self.enabled || self.started.contains(task) || self.started.len() >= MAX_TRACKED {
            return;
        }
        self.started.insert(task.to_owned());
        let id: Id = task.into();
        out.push(Event::SubagentStarted {
            subagent_run_id: id.clone(),
            name: "a2a-task".to_owned(),
            parent_message_id: None,
        });
        self.open.push(id);
    }

    /// The delegated task reached `state`, which ends its turn.
    fn end(&mut self, task: &str, state: TaskState, message: Option<String>, out: &mut Vec<Event>) {
        let Some(at) = self.open.iter().position(|id| &**id == task) else {
            return;
        };
        let id = self.open.remove(at);
        out.push(match state {
            TaskState::Failed | TaskState::Rejected | TaskState::Canceled => Event::SubagentError {
                subagent_run_id: id,
                message: message
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| format!("the delegated task ended {}", state.as_str())),
                code: Some(format!("A2A_TASK_{}", state.as_str().to_ascii_uppercase())),
            },
            TaskState::InputRequired | TaskState::AuthRequired => Event::SubagentFinished {
                subagent_run_id: id,
                outcome: Some(SubagentOutcome::Suspended),
            },
            _ => Event::SubagentFinished {
                subagent_run_id: id,
                outcome: Some(SubagentOutcome::Success),
            },
        });
    }

    /// The run ends: every open sub-agent ends with it, failed when the run
    /// failed (`error`).
    pub(super) fn close_all(&mut self, error: Option<&str>, out: &mut Vec<Event>) {
        // Each open sub-agent carries the message: an excerpt, so that
        // thousands of them cannot multiply a long one.
        let error = error.map(crate::read::one_line);
        for id in self.open.drain(..) {
            out.push(match &error {
                Some(message) => Event::SubagentError {
                    subagent_run_id: id,
                    message: message.clone(),
                    code: None,
                },
                None => Event::SubagentFinished {
                    subagent_run_id: id,
                    outcome: None,
                },
            });
        }
    }
}

impl<I: IdSource> Converter<I> {
    /// The task another item names, when it is not the run's own.
    pub(super) fn delegated<'a>(&self, item: &Item<'a>) -> Option<&'a str> {
        let task = match item {
            Item::Task(s) | Item::Status(s) => s.task_id,
            Item::Message(m) => m.task_id,
            Item::Artifact(a) => a.task_id,
            _ => None,
        }?;
        let own = self.run.task_id.as_deref()?;
        (!task.is_empty() && task != own).then_some(task)
    }

    /// An item of a delegated task: its content is shown as usual, its
    /// states only as the sub-agent's.
    pub(super) fn on_delegated(&mut self, task: &str, item: Item<'_>, out: &mut Vec<Event>) {
        self.blocks.close_text(out);
        self.subagents.start(task, out);
        match item {
            Item::Task(view) | Item::Status(view) => self.on_delegated_status(task, view, out),
            Item::Message(message) => self.on_message(message, Origin::Stream, out),
            Item::Artifact(chunk) => self.on_artifact(chunk, out),
            _ => {}
        }
    }

    fn on_delegated_status(&mut self, task: &str, view: StatusView<'_>, out: &mut Vec<Event>) {
        let state = view.status.state;
        self.snapshot_artifacts(view.artifacts, state.ends_turn(), out);
        out.push(Event::Custom(Custom::Status(StatusNotice {
            task_id: Some(task.to_owned()),
            context_id: view.context_id.map(str::to_owned),
            state,
            timestamp: view.status.timestamp.cloned(),
            metadata: view.metadata.cloned(),
        })));
        let text = view.status.message.as_ref().map(|m| m.text());
        if let Some(message) = view.status.message {
            let key = Segment::status();
            message
                .parts
                .for_each_block(|_, block| self.on_block(block, key, None, out));
            self.blocks.close_text(out);
        }
        if state.ends_turn() {
            self.subagents.end(task, state, text, out);
        }
    }
}
