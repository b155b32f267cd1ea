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

    /// The id under which an agent's own tool-call id is shown. Agents
    /// reuse their ids across turns (`call-weather` in every turn), and a
    /// client merges calls that share an id; a source that tags its runs
    /// makes the id unique per run, reversibly ([`agent_tool_call_id`]).
    fn tool_call_id(&mut self, agent_id: &str) -> String {
        agent_id.to_owned()
    }
}

/// Separates an agent's tool-call id from the run tag that
/// [`SequentialIds::tagged`] appends to it.
const TOOL_CALL_TAG: char = '~';

/// The agent's own id behind a tool-call id this crate showed: the run tag
/// removed (`call-weather~3f0a…` → `call-weather`); any other id as it is.
pub fn agent_tool_call_id(shown: &str) -> &str {
    match shown.rsplit_once(TOOL_CALL_TAG) {
        Some((agent, tag))
            if !agent.is_empty()
                && (1..=16).contains(&tag.len())
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            agent
        }
        _ => shown,
    }
}

/// Whether `result_id` names a `TOOL_CALL_RESULT` a tagged source minted
/// (`tool-result-<tag>-<n>`) for `call_id` in the same run: the call
/// carries that tag, after an agent's own id (`call-weather~<tag>`) or in
/// a minted one (`tool-call-<tag>-<n>`). A client sends such a result back
/// as a tool message; it is the agent's own answer, not the client's.
pub fn is_result_of_call(result_id: &str, call_id: &str) -> bool {
    let tag = result_id
        .strip_prefix(IdKind::ToolResult.label())
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.rsplit_once('-'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty());
    tag.is_some_and(|tag| {
        call_id
            .strip_suffix(tag)
            .is_some_and(|agent| agent.ends_with(TOOL_CALL_TAG))
            || call_id.contains(&format!("-{tag}-"))
    })
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
    fn tool_call_id(&mut self, agent_id: &str) -> String {
        // Only a lowercase-hex tag can be taken off again.
        if self.tag.is_empty()
            || self.tag.len() > 16
            || !self
                .tag
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return agent_id.to_owned();
        }
        format!("{agent_id}{TOOL_CALL_TAG}{}", self.tag)
    }

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

    fn tool_call_id(&mut self, agent_id: &str) -> String {
        (**self).tool_call_id(agent_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_known_by_the_tag_its_call_carries() {
        let mut ids = SequentialIds::tagged("3f0a");
        let agent_call = ids.tool_call_id("call-weather");
        let minted_call = ids.next_id(IdKind::ToolCall);
        let result = ids.next_id(IdKind::ToolResult);
        assert!(is_result_of_call(&result, &agent_call));
        assert!(is_result_of_call(&result, &minted_call));
        assert!(!is_result_of_call(&result, "call-weather~9b1c"));
        assert!(!is_result_of_call("t1", &agent_call));
        assert!(!is_result_of_call("tool-result--1", &agent_call));
    }

    #[test]
    fn tagged_tool_call_ids_are_unique_per_run_and_reversible() {
        let mut first = SequentialIds::tagged("3f0a");
        let mut second = SequentialIds::tagged("9b1c");
        let a = first.tool_call_id("call-weather");
        let b = second.tool_call_id("call-weather");
        assert_ne!(a, b);
        assert_eq!(agent_tool_call_id(&a), "call-weather");
        assert_eq!(agent_tool_call_id(&b), "call-weather");
        // An agent id that itself looks tagged keeps its own tag.
        let c = first.tool_call_id("x~beef");
        assert_eq!(agent_tool_call_id(&c), "x~beef");
        // Ids the client made up pass through.
        for id in ["call_1", "a~", "~ab", "a~XYZ", "a~0123456789abcdef0"] {
            assert_eq!(agent_tool_call_id(id), id);
        }
        // Untagged sources (goldens) show the agent's id.
        assert_eq!(SequentialIds::default().tool_call_id("c"), "c");
    }
}
