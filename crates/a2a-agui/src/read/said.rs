//! What an agent said in an error, as clients are shown it: its words
//! are the agent's, possibly naming internal hosts or carrying secrets
//! over several lines, so only one bounded line of a structured error's
//! `message` is kept, after a sentence that names the agent as the side
//! that failed.

/// The longest excerpt of an agent's error message shown to clients.
const MAX_ERROR_EXCERPT: usize = 200;

/// An agent's words as one line of at most [`MAX_ERROR_EXCERPT`]
/// characters: what follows a line break goes, other control characters
/// become spaces.
pub(crate) fn one_line(text: &str) -> String {
    let first = text
        .split(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .next()
        .unwrap_or_default()
        .trim();
    let mut line: String = first
        .chars()
        .take(MAX_ERROR_EXCERPT)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if first.chars().nth(MAX_ERROR_EXCERPT).is_some() {
        line.push('…');
    }
    line
}

/// The client's message for an error the agent reported with `message`.
pub(crate) fn agent_said(message: Option<&str>) -> String {
    match message.map(one_line).filter(|m| !m.is_empty()) {
        Some(line) => format!("the agent reported an error: {line}"),
        None => "the agent reported an error without a message".to_owned(),
    }
}

/// A reason fit for a code: capitals, digits and `_`, at most 64 bytes.
pub(crate) fn is_reason(reason: &str) -> bool {
    !reason.is_empty()
        && reason.len() <= 64
        && reason
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_line_of_the_agents_words_is_shown_bounded() {
        assert_eq!(
            agent_said(Some("Task not found\ninternal-host=10.1.2.3")),
            "the agent reported an error: Task not found"
        );
        assert_eq!(one_line("a\tb\u{1b}[2Jc"), "a b [2Jc");
        let long = one_line(&"é".repeat(500));
        assert_eq!(long.chars().count(), MAX_ERROR_EXCERPT + 1);
        assert!(long.ends_with('…'));
        assert_eq!(
            agent_said(Some("  \r\nsecond line")),
            "the agent reported an error without a message"
        );
        assert_eq!(
            agent_said(None),
            "the agent reported an error without a message"
        );
    }
}
