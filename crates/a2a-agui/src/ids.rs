//! Where fresh identifiers come from.
//!
//! The converter owns no randomness: every id it mints comes from the
//! [`IdSource`] its caller hands in. Tests use [`SequentialIds`] for
//! reproducible output; the gateway prefixes it with a per-run random value
//! so ids never collide across the runs of one thread.

/// What the minted id will name; sources may use it to make ids readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Thread,
    Run,
    Message,
    Reasoning,
    ReasoningMessage,
    ToolCall,
    ToolResult,
}

impl IdKind {
    pub fn label(self) -> &'static str {
        match self {
            IdKind::Thread => "thread",
            IdKind::Run => "run",
            IdKind::Message => "msg",
            IdKind::Reasoning => "reasoning",
            IdKind::ReasoningMessage => "reasoning-msg",
            IdKind::ToolCall => "tool-call",
            IdKind::ToolResult => "tool-result",
        }
    }
}

pub trait IdSource {
    fn next_id(&mut self, kind: IdKind) -> String;
}

/// `{prefix}{label}-{n}` with one counter shared by all kinds.
#[derive(Debug, Clone, Default)]
pub struct SequentialIds {
    prefix: String,
    issued: u64,
}

impl SequentialIds {
    pub fn new(prefix: impl Into<String>) -> Self {
        SequentialIds {
            prefix: prefix.into(),
            issued: 0,
        }
    }
}

impl IdSource for SequentialIds {
    fn next_id(&mut self, kind: IdKind) -> String {
        self.issued += 1;
        format!("{}{}-{}", self.prefix, kind.label(), self.issued)
    }
}

impl<T: IdSource + ?Sized> IdSource for Box<T> {
    fn next_id(&mut self, kind: IdKind) -> String {
        (**self).next_id(kind)
    }
}
