//! Why a run cannot be continued, in the journal's terms.

/// Why a run cannot be continued from a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// Not an id of this gateway, or its run is gone (finished longer ago
    /// than the TTL, evicted, never existed, or the journal is off).
    #[error("no run with that id is kept")]
    Unknown,
    /// The run is kept, but no longer from that event on.
    #[error("the run no longer keeps the frames after that id")]
    TooOld,
    /// Another request or another caller started that run.
    #[error("the run was started by another request")]
    Mismatch,
}
