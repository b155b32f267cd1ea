//! The run's lifecycle: `RUN_STARTED` once, the ids it names, what the
//! stream has shown so far, and the one terminal event.

use crate::convert::{AguiVersion, Options};
use crate::event::{Event, Id, Interrupt, InterruptReason, Outcome, RunResult, TokenUsage};
use crate::ids::{IdKind, IdSource};
use crate::state::{RunState, TaskState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    #[default]
    Idle,
    Running,
    Done,
}

#[derive(Debug, Default)]
pub(super) struct Lifecycle {
    phase: Phase,
    thread_id: Option<Id>,
    run_id: Option<Id>,
    pub(super) task_id: Option<String>,
    pub(super) context_id: Option<String>,
    pub(super) items_seen: u64,
    /// A task-shaped item came (so a message-only end is not a success).
    pub(super) saw_task: bool,
    pub(super) saw_agent_message: bool,
    pub(super) last_state: Option<TaskState>,
    pub(super) ignored_after_finish: u64,
}

/// What the end of input means for the run.
pub(super) enum Ending {
    /// A message-only answer: done (with the context, if one was named).
    Answered(Option<RunResult>),
    /// The task waits for the user.
    Waiting(TaskState),
    Empty,
    EndedEarly(TaskState),
}

impl Lifecycle {
    pub(super) fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    pub(super) fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    pub(super) fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// `RUN_STARTED`, on the first item: ids from the options, else the
    /// item's context and task, else minted.
    pub(super) fn start(
        &mut self,
        options: &Options,
        ids: &mut impl IdSource,
        context: Option<&str>,
        task: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        if self.phase != Phase::Idle {
            return;
        }
        let thread = match (&options.thread_id, context) {
            (Some(given), _) => given.clone(),
            (None, Some(context)) if !context.is_empty() => context.to_owned(),
            _ => ids.next_id(IdKind::Thread),
        };
        let run = match (&options.run_id, task) {
            (Some(given), _) => given.clone(),
            (None, Some(task)) if !task.is_empty() => task.to_owned(),
            _ => ids.next_id(IdKind::Run),
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

    pub(super) fn remember_ids(&mut self, context: Option<&str>, task: Option<&str>) {
        if let Some(context) = context.filter(|c| !c.is_empty())
            && self.context_id.as_deref() != Some(context)
        {
            self.context_id = Some(context.to_owned());
        }
        // The first task named is the run's own; any other is delegated.
        if let Some(task) = task.filter(|t| !t.is_empty())
            && self.task_id.is_none()
        {
            self.task_id = Some(task.to_owned());
        }
    }

    /// `RUN_FINISHED`; the caller has closed everything.
    pub(super) fn finished(
        &mut self,
        result: Option<RunResult>,
        outcome: Option<Outcome>,
        usage: Option<Vec<TokenUsage>>,
    ) -> Option<Event> {
        let (Some(thread_id), Some(run_id)) = (self.thread_id.clone(), self.run_id.clone()) else {
            return None;
        };
        self.phase = Phase::Done;
        Some(Event::RunFinished {
            thread_id,
            run_id,
            result,
            outcome,
            usage,
        })
    }

    /// `RUN_ERROR`; the caller has closed everything.
    pub(super) fn failed(
        &mut self,
        code: &str,
        message: String,
        usage: Option<Vec<TokenUsage>>,
    ) -> Event {
        self.phase = Phase::Done;
        Event::RunError {
            message,
            code: Some(code.to_owned()),
            usage,
        }
    }

    /// The task's ids and the state it ended in.
    pub(super) fn task_result(&self, state: TaskState) -> RunResult {
        RunResult {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            state: Some(RunState::Task(state)),
            ..RunResult::default()
        }
    }

    /// An `interrupt` outcome for a task waiting for the user, when the
    /// caller asked for them.
    pub(super) fn interrupt_outcome(
        &self,
        options: &Options,
        state: TaskState,
        message: Option<String>,
    ) -> Option<Outcome> {
        if !options.interrupts {
            return None;
        }
        let reason = match state {
            TaskState::InputRequired => InterruptReason::InputRequired,
            TaskState::AuthRequired => InterruptReason::AuthRequired,
            _ => return None,
        };
        let id = self
            .task_id
            .clone()
            .or_else(|| self.run_id.as_deref().map(str::to_owned))
            .unwrap_or_default();
        Some(Outcome::Interrupt {
            interrupts: vec![Interrupt {
                id,
                reason,
                message: message.filter(|m| !m.is_empty()),
                tool_call_id: None,
            }],
        })
    }

    /// The outcome of a run that stopped on client tool calls. For a 1.0
    /// client, a completed run leaving them to the client (`success` with
    /// `pendingToolCallIds`), whatever the interrupts: it is no question.
    /// For an older client, as before 1.0: an `interrupt` outcome, one
    /// entry per call, when the caller asked for interrupts.
    pub(super) fn tool_call_outcome(&self, options: &Options, calls: &[Id]) -> Option<Outcome> {
        if options.version == AguiVersion::V1 {
            return Some(Outcome::Success {
                pending_tool_call_ids: calls.iter().map(|id| id.to_string()).collect(),
            });
        }
        options.interrupts.then(|| Outcome::Interrupt {
            interrupts: calls
                .iter()
                .map(|id| Interrupt {
                    id: id.to_string(),
                    reason: InterruptReason::ToolCall,
                    message: None,
                    tool_call_id: Some(id.to_string()),
                })
                .collect(),
        })
    }

    /// The `cancelled` outcome, for a client that knows it.
    pub(super) fn cancelled_outcome(options: &Options) -> Option<Outcome> {
        (options.version == AguiVersion::V1).then_some(Outcome::Cancelled)
    }

    /// What the upstream closing the stream now means.
    pub(super) fn ending(&self) -> Ending {
        match self.last_state {
            _ if !self.saw_task && self.saw_agent_message => {
                Ending::Answered(self.context_id.clone().map(|context| RunResult {
                    context_id: Some(context),
                    ..RunResult::default()
                }))
            }
            Some(state @ (TaskState::InputRequired | TaskState::AuthRequired)) => {
                Ending::Waiting(state)
            }
            _ if self.items_seen == 0 => Ending::Empty,
            last => Ending::EndedEarly(last.unwrap_or(TaskState::Unknown)),
        }
    }
}
