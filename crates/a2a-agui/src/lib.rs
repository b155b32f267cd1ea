//! Sans-IO conversion of A2A (Agent2Agent) stream events into AG-UI events.
//!
//! # Layout
//! - [`a2a`]: lenient reading of every A2A dialect (0.2/0.3 JSON-RPC, 1.0,
//!   0.3 ProtoJSON as REST and Hector send it) and of ACP run events.
//! - `fast`: a borrowing reader for plain-text chunks, the hot path.
//! - `hints`: the UI hints agents put in metadata (Hector, ACP, Agent Stack,
//!   multimodal-interaction commands).
//! - [`convert`]: the [`Converter`] state machine.
//! - [`event`]: the AG-UI events written.
//! - [`encode`]: SSE frames in the AG-UI dialect and the Hector seed's
//!   named-event dialect.
//! - [`sse`]: a bounded, linear-time `text/event-stream` parser.
//! - [`pipeline`]: parser + converter + encoder, bytes in, bytes out.
//! - [`ids`]: where minted ids come from.
//!
//! Nothing here does I/O, reads a clock or draws randomness: ids come from
//! an [`IdSource`] and timestamps from the caller. Nothing here fails on bad
//! input either: what cannot be converted is reported as events.
#![forbid(unsafe_code)]

pub mod a2a;
pub mod convert;
mod digest;
pub mod encode;
pub mod event;
mod fast;
mod hints;
pub mod ids;
pub mod pipeline;
pub mod sse;

pub use a2a::{ErrorReport, TaskState, error_report};
pub use convert::{Converter, Options, StreamEnd};
pub use encode::{Dialect, HectorEncoder, write_agui_frame};
pub use event::Event;
pub use ids::{IdKind, IdSource, SequentialIds};
pub use pipeline::{StreamConverter, convert_recording};
pub use sse::{SseError, SseEvent, SseParser};
