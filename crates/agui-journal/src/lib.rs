//! The run journal: every frame of a converted run, kept so that a client
//! that lost its connection continues from the last id it got, a run goes
//! on while nobody listens (detach), and `connect` replays a thread's run.
//!
//! - A run's frames are appended by whoever reads its upstream (the
//!   response body while the client is attached, a pump task once it is
//!   gone) *before* any client sees them: any id a client holds can be
//!   continued from.
//! - Frames are stored as the chunks the converter wrote (one per upstream
//!   read); a resume from inside a chunk slices it at the frame's `id:`
//!   line, so appending costs no scan.
//! - Bounded: runs kept, bytes per run, bytes in all, time a finished run
//!   stays.
//! - A thread's replay, built from its runs, is held once for all who read
//!   it (`replays`).
//!
//! - Token budgets per caller are counted beside the runs (`budget`).
//!
//! The journal knows runs, threads and callers, not HTTP: a refusal is a
//! `ResumeError`, which the gateway answers as it sees fit.
#![forbid(unsafe_code)]

pub mod budget;
mod config;
mod error;
mod follow;
mod frame;
mod identity;
mod input;
mod memory;
pub mod redis;
pub mod replays;
mod threads;

pub use config::{Backend, JournalConfig, JournalLimits, RedisAccessFiles, RedisNodes};
pub use error::ResumeError;
pub use follow::{follow, joined};
pub use frame::frame_start;
pub use identity::{CallerDigest, Owner, RunBy, RunIdentity, RunThread, ThreadListKey, ThreadRef};
pub use input::InputOp;
pub use memory::{MemoryJournal, RunLog, Slice};
pub use threads::{MAX_LISTED, ThreadSummary, unix_ms};
