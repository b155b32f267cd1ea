//! Hector's named SSE events. (Hector v1's part-metadata hints are read in
//! `hints`; v2's typed data parts, `thinking` / `tool_use` /
//! `tool_result`, are read by their shape, in `shape`, like any agent's.)

/// What an SSE event's name says. Hector names its events; a2a-sdk and
/// every other A2A server send unnamed `data:` events.
pub(crate) enum EventName {
    /// `event: done`: Hector's end-of-stream marker (the stream's end
    /// decides the outcome, so it means nothing more).
    Done,
    /// `event: error`: the data is an error, in any envelope.
    Error,
    /// Anything else: the data is a stream item.
    Item,
}

impl EventName {
    pub(crate) fn of(name: Option<&str>) -> EventName {
        match name {
            Some("done") => EventName::Done,
            Some("error") => EventName::Error,
            _ => EventName::Item,
        }
    }
}
