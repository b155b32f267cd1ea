//! Sans-IO conversion of A2A (Agent2Agent) stream events into AG-UI events.
//!
//! # Layout
//! - `read`: everything agents send, in every dialect (0.2/0.3 JSON-RPC,
//!   1.0, 0.3 ProtoJSON, ACP) and vendor convention (Hector, ACP, Agent
//!   Stack, multimodal commands), turned into one typed vocabulary; a
//!   lenient `Value` reader and a borrowing fast reader for plain text;
//!   a polled task's reads as the stream items they stand for.
//! - `convert`: the [`Converter`] state machine, split by concern (run
//!   lifecycle, the open block, tool calls, artifacts, repeat detection).
//! - `event`: the AG-UI events written, with a typed value for every
//!   `CUSTOM` name (`event/custom.rs`).
//! - `encode`: SSE frames in the AG-UI format and the Hector seed's
//!   named-event format.
//! - `sse`: a bounded, linear-time `text/event-stream` parser.
//! - `pipeline`: parser + converter + encoder, bytes in, bytes out.
//! - `codes`: every stable error code, shared with the gateway.
//! - `ids`: where minted ids come from.
//! - `messages`: AG-UI messages folded from events (a thread's replay);
//!   `history`: a thread's conversation from the agent's stored tasks.
//!
//! Nothing here does I/O, reads a clock or draws randomness: ids come from
//! an [`IdSource`] and timestamps from the caller. Nothing here fails on bad
//! input either: what cannot be converted is reported as events.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod codes;
mod convert;
mod digest;
mod encode;
mod event;
mod history;
mod ids;
mod measure;
mod messages;
mod pipeline;
mod read;
mod sse;
mod state;

pub use codes::{ErrorCode, Side};
pub use convert::{
    AguiVersion, Converter, MAX_PENDING_TOOL_OUTPUT, MAX_TRACKED, Options, StreamEnd,
};
pub use encode::{Encoder, HectorEncoder, OutputFormat, write_agui_frame};
pub use event::custom::{
    AcpStatus, ArtifactNotice, Citation, Custom, DataNotice, ErrorNotice, EventMetadata,
    FileNotice, MessageMetadata, ReasoningNotice, StatusNotice, ToolError, Trajectory, UsageNotice,
};
pub use event::{
    AssistantRole, Event, Id, Interrupt, InterruptReason, Outcome, Patch, PatchOp, ReasoningRole,
    RunResult, SubagentOutcome, TextMetadata, TokenUsage, ToolRole,
};
pub use history::thread_messages;
pub use ids::{IdKind, IdSource, SequentialIds, agent_tool_call_id, is_result_of_call};
pub use messages::{
    FunctionCall, MAX_CALLS, MAX_MESSAGE_BYTES, MAX_MESSAGES, Message, MessageFold, ToolCall,
};
pub use pipeline::{StreamConverter, convert_recording, looks_like_sse};
pub use read::{
    A2aMessage, ErrorReport, FileRef, MAX_ID_BYTES, PartBody, PollMemo, Polled, TaskPoll,
    error_report, part_body,
};
pub use sse::{DEFAULT_MAX_EVENT_BYTES, SseError, SseEvent, SseParser};
pub use state::{RunState, TaskState};
