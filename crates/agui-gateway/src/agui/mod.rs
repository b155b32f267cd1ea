//! The AG-UI endpoint: a `RunAgentInput` from `@ag-ui/client`'s HttpAgent
//! (1.0.0, 0.0.59, 0.0.48) or CopilotKit's runtime becomes one A2A call,
//! and its answer comes back as AG-UI events.
//!
//! - `threadId` is the A2A `contextId`; `RUN_STARTED` / `RUN_FINISHED` echo
//!   the request's `threadId` and `runId`.
//! - `input`: what is new since the agent last spoke is sent, once; tool
//!   messages as tool results; `resume` answers the waiting task or
//!   cancels it.
//! - `bounds`: every identifier within 1 KiB, every list within 65,536
//!   entries, before anything of the input is kept, sent or echoed.
//! - `extension`: tools, state, context, instructions and the rest of
//!   `forwardedProps` travel in the message metadata.
//! - A thread whose task waits (for input, or for the client's tools)
//!   continues that task. The task id comes back in the metadata of the
//!   assistant message that asked (the 1.0 client keeps it); this
//!   replica's memory of the thread covers the rest.
//! - `forwardedProps.a2a.metadata` goes into the A2A message metadata (the
//!   multimodal-interaction seed's user, device, location, …) and
//!   `forwardedProps.a2a.extensions` activates A2A extensions.

mod bounds;
pub mod extension;
pub mod input;
mod parts;

use std::sync::Arc;

use a2a_agui::{ErrorCode, Event, Options, RunState};
use agui_journal::{RunBy, RunIdentity, RunThread, ThreadListKey, ThreadRef};
use axum::body::Bytes;
use axum::response::Response;

pub use self::bounds::{IdTooLong, bounded_id};
use self::input::{RunRequest, Upstream};
use crate::obs::access::{AccessNote, Mode};
use crate::random::random_u64;
use crate::relay::{self, Conversion};
use crate::state::{AppHandle, StreamsFull};
use crate::upstream::Call;
use crate::upstream::outbound::Forwarded;
use crate::upstream::run::RunCalled;
use crate::upstream::{Agent, TaskCall};

/// Why a `RunAgentInput` is refused, before anything of it is kept or
/// sent; the message says what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Not a `RunAgentInput` as the gateway reads it.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    IdTooLong(#[from] IdTooLong),
    /// Nothing in it for the agent.
    #[error(
        "nothing to send: no user or tool message after the agent's last message that was not sent already, and no resume not answered already"
    )]
    NothingNew,
}

impl InputError {
    pub fn code(&self) -> ErrorCode {
        match self {
            InputError::Invalid(_) => ErrorCode::InvalidRunInput,
            InputError::IdTooLong(_) => ErrorCode::IdTooLong,
            InputError::NothingNew => ErrorCode::NoNewInput,
        }
    }
}

/// Why a run did not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Busy(#[from] StreamsFull),
}

/// Reads a `RunAgentInput` as a first run of its thread would see it: the
/// checks every body goes through (for the fuzz target and tests).
pub fn read_run_input(body: &[u8]) -> Result<RunRequest, InputError> {
    input::parse(body)?.plan(&Default::default())
}

/// One `RunAgentInput` call as the route received it.
pub struct RunCall {
    /// The client's headers as the agent's policy forwards them.
    pub headers: Forwarded,
    pub run_by: RunBy,
    pub body: Bytes,
    pub access: Option<AccessNote>,
    /// `Agui`; `Inspect` (the upstream events are written too);
    /// `CopilotKit` (the runtime protocol: AG-UI whatever the agent's
    /// format).
    pub mode: Mode,
}

/// Runs one `RunAgentInput`.
pub async fn run(state: AppHandle, agent: Arc<Agent>, call: RunCall) -> Result<Response, RunError> {
    let RunCall {
        headers,
        run_by,
        body,
        access,
        mode,
    } = call;
    let tap = mode == Mode::Inspect;
    state.metrics.count_request(agent.name(), mode);
    let input = input::parse(&body)?;
    // One identity for the thread's memory and its runs in the journal
    // (`connect`): per agent and per caller (with authentication off, the
    // credentials it sent), so a thread id known to another caller never
    // hands it this caller's task.
    let thread = ThreadRef::new(agent.name(), &run_by.caller, &input.thread_id);
    let (thread_id, run_id, version) =
        (input.thread_id.clone(), input.run_id.clone(), input.version);
    let identity = RunIdentity {
        owner: run_by.owner,
        thread: Some(RunThread {
            thread,
            id: thread_id.clone(),
            list: ThreadListKey::new(agent.name(), &run_by.caller),
            run_id: run_id.clone(),
            input: input.messages_json(state.config.journal.limits.max_run_bytes),
        }),
    };
    let shared_state = input.shared_state();
    let plan = input.plan(&state.threads.get(thread))?;
    let RunRequest {
        upstream,
        activate,
        client_tools,
        delivers,
        answers,
    } = plan;

    let memory = state.clone();
    let on_delivered = move || memory.threads.sent(thread, &delivers, &answers);
    let memory = state.clone();
    let on_end = move |event: &Event, task: Option<&str>| {
        if let Some((waiting, pending)) = left_waiting(event) {
            memory
                .threads
                .ended(thread, task.filter(|_| waiting), pending);
        }
    };
    let conversion = Conversion {
        options: Options {
            thread_id: Some(thread_id),
            run_id: Some(run_id.clone()),
            interrupts: agent.config.interrupts,
            version,
            client_tools,
            state: shared_state,
        },
        // This endpoint has no query to choose from: the agent's format
        // (the inspector and CopilotKit read AG-UI).
        format: if tap || mode == Mode::CopilotKit {
            a2a_agui::OutputFormat::Agui
        } else {
            agent.config.format
        },
        on_end: Some(Box::new(on_end)),
        access,
        on_delivered: Some(Box::new(on_delivered)),
        on_usage: state.charger(&run_by.caller),
        tap,
    };
    // The run is the answer to the send, or, when the client only
    // cancelled, to the cancel.
    let send = match upstream {
        Upstream::Send(message) => Ok(message),
        Upstream::Cancel { task, then: None } => Err(task),
        Upstream::Cancel {
            task,
            then: Some(message),
        } => {
            Box::pin(relay::send_cancel(&agent, &headers, &task)).await;
            Ok(message)
        }
    };
    let limit = state.config.limits.max_event_bytes;
    let call = async {
        let route = agent.route().await;
        match send {
            Ok(mut message) => {
                // Minted per request: a resumed run repeats its run id.
                message.message_id = thread.message_id(random_u64());
                agent
                    .run(route, (&message, &activate), &headers, limit)
                    .await
            }
            Err(task) => {
                let cancel = Call::Task(TaskCall::Cancel, &task);
                RunCalled::as_is(agent.call(&route, cancel, &headers).await)
            }
        }
    };
    // Boxed, the call and the opening: a request's future holds its
    // awaited futures inline, each the size of its largest state, and an
    // unboxed chain of them came to 85 KiB per request in flight (issue 42).
    let opened = relay::open(
        &state,
        agent.clone(),
        headers.clone(),
        Box::pin(call),
        conversion,
        identity,
    );
    Ok(Box::pin(opened).await?)
}

/// How a run left its task, for the thread's memory: whether the task
/// waits for the client (for input, or for the results of the client's
/// tools), and the calls it waits on. `None` leaves the memory as it was:
/// a run that failed on the way (the upstream dropped, timed out) did not
/// end the task; only the agent saying so does.
fn left_waiting(event: &Event) -> Option<(bool, &[String])> {
    match event {
        Event::RunFinished { result, .. } => {
            let Some(result) = result else {
                return Some((false, &[]));
            };
            let open = !matches!(result.state, Some(RunState::Task(state)) if state.is_final());
            let pending = result.pending_tool_call_ids.as_deref().unwrap_or_default();
            Some((
                result.is_waiting() || (!pending.is_empty() && open),
                pending,
            ))
        }
        Event::RunError { code, .. } => {
            let ended = [ErrorCode::TaskFailed, ErrorCode::TaskRejected]
                .iter()
                .any(|c| code.as_deref() == Some(c.as_str()));
            ended.then_some((false, &[][..]))
        }
        _ => None,
    }
}
