//! Where fresh identifiers come from.
//!
//! The converter owns no randomness: every id it mints comes from the
//! [`IdSource`] its caller hands in. Tests use [`SequentialIds`] for
//! reproducible output (`msg-1`, `tool-call-2`, …); the gateway tags it
//! with a random value per run ([`SequentialIds::tagged`]: `msg-3f…-1`) so
//! ids never collide across the runs of one thread.

/// What the minted id will name; sources may use it to make ids readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A thread, when the agent names no context.
    Thread,
    /// A run, when the agent names no task.
    Run,
    /// A text message.
    Message,
    /// A reasoning span (`REASONING_START`).
    Reasoning,
    /// A reasoning message inside a span.
    ReasoningMessage,
    /// A tool call the agent gave no id.
    ToolCall,
    /// A tool result message.
    ToolResult,
}

impl IdKind {
    /// The readable part of ids of this kind.
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

/// A source of fresh ids, one per call.
pub trait IdSource {
    /// A new id, never returned before by this source.
    fn next_id(&mut self, kind: IdKind) -> String;
}

/// `{label}-{n}`, or `{label}-{tag}-{n}` when tagged, with one counter
/// shared by all kinds.
#[derive(Debug, Clone, Default)]
pub struct SequentialIds {
    tag: String,
    issued: u64,
}

impl SequentialIds {
    /// Ids carrying `tag` (a per-run random value, say) after their label.
    pub fn tagged(tag: impl Into<String>) -> Self {
        SequentialIds {
            tag: tag.into(),
            issued: 0,
        }
    }
}

impl IdSource for SequentialIds {
    fn next_id(&mut self, kind: IdKind) -> String {
        self.issued += 1;
        if self.tag.is_empty() {
            format!("{}-{}", kind.label(), self.issued)
        } else {
            format!("{}-{}-{}", kind.label(), self.tag, self.issued)
        }
    }
}

impl<T: IdSource + ?Sized> IdSource for Box<T> {
    fn next_id(&mut self, kind: IdKind) -> String {
        (**self).next_id(kind)
    }
}
