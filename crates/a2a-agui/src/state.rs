//! Where a task or run stands: A2A task states in every spelling, and the
//! state a converted run ends in.

use serde::Serialize;

/// An A2A task state, whatever its spelling on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // A2A's own states
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
    /// A state this crate does not know, or none.
    Unknown,
}

impl serde::Serialize for TaskState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl TaskState {
    /// Reads `working`, `TASK_STATE_WORKING`, `input_required`,
    /// `TASK_STATE_CANCELLED` and the other spellings alike.
    pub fn parse(raw: &str) -> TaskState {
        let lower = raw.to_ascii_lowercase();
        let name = lower.strip_prefix("task_state_").unwrap_or(&lower);
        match name.replace('_', "-").as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "auth-required" => TaskState::AuthRequired,
            "completed" => TaskState::Completed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "failed" => TaskState::Failed,
            "rejected" => TaskState::Rejected,
            _ => TaskState::Unknown,
        }
    }

    /// The 0.3 JSON-RPC spelling, used in everything this crate writes.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::Unknown => "unknown",
        }
    }

    /// True once the task is over: completed, canceled, failed, rejected.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }

    /// True for every state in which the agent stops talking: final
    /// states and the ones waiting for the user.
    pub fn ends_turn(self) -> bool {
        !matches!(
            self,
            TaskState::Submitted | TaskState::Working | TaskState::Unknown
        )
    }
}

/// The state in [`RunResult`]: an A2A task state, or ACP's `awaiting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// A2A task state, written in the 0.3 spelling (`input-required`).
    Task(TaskState),
    /// An ACP run waiting for the client (`run.awaiting`).
    AcpAwaiting,
}

impl RunState {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Task(state) => state.as_str(),
            RunState::AcpAwaiting => "awaiting",
        }
    }
}

impl Serialize for RunState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
