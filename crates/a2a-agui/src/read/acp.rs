//! ACP (Agent Communication Protocol) run events: `run.created`,
//! `run.in-progress`, `run.completed`, `run.failed`, `message.part`, …

use serde_json::Value;

use super::Parts;
use super::json::{Object, object, text};
use crate::codes::ErrorCode;
use crate::state::{RunState, TaskState};

/// True for the `type` values of ACP run events.
pub(super) fn is_event(kind: &str) -> bool {
    kind.starts_with("run.") || kind.starts_with("message.") || kind == "generic"
}

/// One ACP event, read.
pub(crate) enum AcpEvent<'a> {
    /// `run.created`, `run.in-progress`: the run's status as ACP spells
    /// it (else the event type).
    Progress(&'a str),
    /// `run.completed`, `run.cancelled`, `run.awaiting`.
    Finished {
        state: RunState,
        await_request: Option<&'a Value>,
    },
    /// `run.failed`, `error`.
    Failed { code: String, message: String },
    /// `message.created`, `message.completed`: the parts come separately,
    /// so these only mark where one message ends.
    MessageBoundary,
    /// `message.part`, its one part.
    Part(Parts<'a>),
    /// `generic`: its payload, else the whole event.
    Generic {
        payload: Option<&'a Value>,
        event: &'a Object,
    },
    /// Anything else (or a `message.part` without a part): forwarded.
    Other(&'a Value),
}

/// The ids of an ACP run.
#[derive(Clone, Copy, Default)]
pub(crate) struct RunIds<'a> {
    pub run_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
}

/// The ids of the run an ACP event names (any event may carry `run`).
pub(super) fn run_ids(event: &Object) -> RunIds<'_> {
    let run = object(event, "run");
    RunIds {
        run_id: run.and_then(|r| text(r, "run_id")),
        session_id: run.and_then(|r| text(r, "session_id")),
    }
}

pub(super) fn read_event<'a>(kind: &'a str, event: &'a Object, whole: &'a Value) -> AcpEvent<'a> {
    let run = object(event, "run");
    match kind {
        "run.created" | "run.in-progress" => {
            AcpEvent::Progress(run.and_then(|r| text(r, "status")).unwrap_or(kind))
        }
        "run.completed" | "run.cancelled" | "run.awaiting" => AcpEvent::Finished {
            state: match kind {
                "run.completed" => RunState::Task(TaskState::Completed),
                "run.cancelled" => RunState::Task(TaskState::Canceled),
                _ => RunState::AcpAwaiting,
            },
            await_request: run
                .and_then(|r| r.get("await_request"))
                .filter(|v| !v.is_null()),
        },
        "run.failed" | "error" => {
            let error = run
                .and_then(|r| object(r, "error"))
                .or_else(|| object(event, "error"));
            AcpEvent::Failed {
                message: super::said::agent_said(error.and_then(|e| text(e, "message"))),
                // The agent's code, when it is fit for one (it reaches
                // clients, logs and metric labels).
                code: error
                    .and_then(|e| text(e, "code"))
                    .map(|c| c.replace('-', "_").to_ascii_uppercase())
                    .filter(|c| super::said::is_reason(c))
                    .map_or_else(
                        || ErrorCode::AcpRunFailed.as_str().to_owned(),
                        |c| format!("ACP_{c}"),
                    ),
            }
        }
        "message.created" | "message.completed" => AcpEvent::MessageBoundary,
        "message.part" => match event.get("part").filter(|p| p.is_object()) {
            Some(part) => AcpEvent::Part(Parts::Values(std::slice::from_ref(part))),
            None => AcpEvent::Other(whole),
        },
        "generic" => AcpEvent::Generic {
            payload: event.get("generic").filter(|g| !g.is_null()),
            event,
        },
        _ => AcpEvent::Other(whole),
    }
}
