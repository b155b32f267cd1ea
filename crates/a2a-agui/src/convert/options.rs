//! What shapes one run's conversion, chosen by the caller: the ids, the
//! interrupts, the client's AG-UI version and the tools it runs itself, its
//! shared state; and how the input ended.

use serde_json::Value;

use crate::codes::ErrorCode;
use crate::read::ErrorReport;

/// How a run is converted.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `RUN_STARTED.threadId`; defaults to the first item's contextId.
    pub thread_id: Option<String>,
    /// `RUN_STARTED.runId`; defaults to the first item's taskId.
    pub run_id: Option<String>,
    /// End input-required / auth-required runs with an `interrupt` outcome.
    /// Off by default: `@ag-ui/client` 1.0 then refuses the next run unless
    /// the UI answers the interrupt with `resume`.
    pub interrupts: bool,
    /// The AG-UI version the client speaks.
    pub version: AguiVersion,
    /// Tools the client declared (AG-UI `tools`, by name): when the agent
    /// calls one, the run ends after the call so that the client runs it.
    pub client_tools: Vec<String>,
    /// The shared state the client sent (AG-UI `state`): the base of the
    /// agent's patches.
    pub state: Option<Value>,
}

/// The AG-UI version a client speaks, from `RunAgentInput.protocolVersion`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AguiVersion {
    /// Before 1.0 (no `protocolVersion`): only events and outcomes every
    /// client version accepts.
    #[default]
    Legacy,
    /// 1.0: `SUBAGENT_*` events and the `cancelled` outcome too.
    V1,
}

impl AguiVersion {
    /// `protocolVersion` as a 1.0 client sends it (`"1.0"`, `"1.2"`, …).
    pub fn parse(protocol_version: Option<&str>) -> AguiVersion {
        match protocol_version.and_then(|v| v.split('.').next()?.parse::<u32>().ok()) {
            Some(major) if major >= 1 => AguiVersion::V1,
            _ => AguiVersion::Legacy,
        }
    }
}

/// How the input ended, as the caller saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// The upstream closed the stream.
    Eof,
    /// The caller gave up on the upstream (timeout, transport error, …).
    Failed {
        /// Why, as a stable code.
        code: ErrorCode,
        /// Why, for a person.
        message: String,
    },
    /// The upstream answered with an error of its own (an error body on a
    /// non-2xx response, say).
    AgentError(ErrorReport),
}
