//! Repeat detection: agents often send the answer again at the end, whole,
//! extended, or only its last turn (a closing status message, a final
//! artifact: Hector, ADK, Strands, LangGraph, fasta2a), and some stream
//! cumulative text (LangGraph: "It", "It is", "It is 21"). A person must
//! read each piece once.
//!
//! What was streamed is remembered as digests plus a bounded tail of the
//! text (for "the last turn again"), so memory per run stays bounded
//! however long the answer.

use std::collections::VecDeque;

use crate::digest::TextDigest;

/// How many closed text segments are remembered.
const RECENT_SEGMENTS: usize = 64;
/// How much of the streamed text is kept to recognise a repeated last
/// turn; a longer last turn repeated is shown again (degraded, not wrong).
const TAIL_BYTES: usize = 16 << 10;
/// On `Opening` evidence, the shortest text taken for a repeat at all:
/// longer than a streamed token, so a first chunk is never swallowed
/// (a shorter repeated answer is shown again: degraded, never lost).
const OPENING_MIN_BYTES: usize = 16;

/// How sure the caller is that a text closes the answer. A closing status
/// or a last (or replacing) artifact chunk is `Closing`; the first chunk of
/// an artifact that may still stream on is `Opening`, and repeats only when
/// the evidence is stronger (the text must be longer than a token), so
/// that a streamed first token is never taken for a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Evidence {
    Closing,
    Opening,
}

/// What a text that may repeat the streamed answer adds.
pub(super) enum Repeat {
    /// New text: all of it.
    Emit,
    /// Streamed already: nothing.
    Skip,
    /// Everything streamed so far (or the open segment), then this.
    Remainder(String),
}

/// Digests of the text written in this run.
#[derive(Debug, Default)]
pub(super) struct Transcript {
    /// All text of the run, in order.
    run_text: TextDigest,
    recent_segments: VecDeque<TextDigest>,
    /// The end of the run's text (at most about 2 × `TAIL_BYTES`).
    tail: String,
}

impl Transcript {
    pub(super) fn record_delta(&mut self, delta: &str) {
        self.run_text.update(delta);
        // Only the end of a long delta can matter to the tail: copying the
        // rest would grow the tail (and keep its capacity) to the delta.
        let mut from = delta.len().saturating_sub(2 * TAIL_BYTES);
        while !delta.is_char_boundary(from) {
            from += 1;
        }
        self.tail.push_str(&delta[from..]);
        if self.tail.len() > 2 * TAIL_BYTES {
            let mut cut = self.tail.len() - TAIL_BYTES;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
        }
    }

    pub(super) fn record_segment(&mut self, segment: TextDigest) {
        if self.recent_segments.len() == RECENT_SEGMENTS {
            self.recent_segments.pop_front();
        }
        self.recent_segments.push_back(segment);
    }

    /// Whether `whole`, a closing text, repeats what was streamed (all of
    /// it, the open segment, a recent segment, or the last turn: a suffix
    /// that starts where a delta started; trailing white space aside),
    /// extends it (only the rest is new), or is new.
    pub(super) fn classify(
        &self,
        whole: &str,
        open_segment: Option<TextDigest>,
        evidence: Evidence,
    ) -> Repeat {
        // White space around a repeat does not make it new.
        let trimmed = whole.trim();
        if trimmed.is_empty() {
            return Repeat::Skip;
        }
        if evidence == Evidence::Opening && trimmed.len() < OPENING_MIN_BYTES {
            return Repeat::Emit;
        }
        let seen = |text: &str| {
            let digest = TextDigest::of(text);
            digest == self.run_text
                || open_segment == Some(digest)
                || self.recent_segments.contains(&digest)
        };
        if seen(whole) || seen(trimmed) || self.repeats_last_turn(trimmed) {
            return Repeat::Skip;
        }
        match self.extension(whole, open_segment) {
            Some(rest) if rest.trim().is_empty() => Repeat::Skip,
            Some(rest) => Repeat::Remainder(rest.to_owned()),
            None => Repeat::Emit,
        }
    }

    /// Whether `text` sends the open segment again or extends it, judged
    /// as cumulative text is, from 16 bytes of open segment (a shorter
    /// one's text again may be a new chunk).
    pub(super) fn again_of_open(&self, text: &str, open_segment: Option<TextDigest>) -> Repeat {
        match open_segment {
            Some(open) if open.len() >= OPENING_MIN_BYTES => self.cumulative(text, Some(open)),
            _ => Repeat::Emit,
        }
    }

    /// `text` is exactly all the run's text, or all the open segment's.
    pub(super) fn is_all(&self, text: &str, open_segment: Option<TextDigest>) -> bool {
        if text.is_empty() {
            return false;
        }
        let digest = TextDigest::of(text);
        digest == self.run_text || open_segment == Some(digest)
    }

    /// For cumulative text (each message holds everything so far): only
    /// what extends the open segment, nothing when it is the same again.
    pub(super) fn cumulative(&self, whole: &str, open_segment: Option<TextDigest>) -> Repeat {
        let Some(open) = open_segment.filter(|o| o.len() > 0) else {
            return Repeat::Emit;
        };
        if TextDigest::of(whole) == open {
            return Repeat::Skip;
        }
        match extends(whole, open) {
            Some(rest) => Repeat::Remainder(rest.to_owned()),
            None => Repeat::Emit,
        }
    }

    /// The rest of `whole` after what it repeats: the open segment or all
    /// the run's text.
    fn extension<'w>(&self, whole: &'w str, open_segment: Option<TextDigest>) -> Option<&'w str> {
        [open_segment, Some(self.run_text)]
            .into_iter()
            .flatten()
            .find_map(|streamed| extends(whole, streamed))
    }

    /// `text` is the end of what was streamed (trailing white space aside),
    /// starting at a word boundary: where the tail starts, after a character
    /// that is not a letter or digit, or with a capital after lower case (a
    /// new turn: "…check.It is…" has the first, "…checkIt is…" the second).
    fn repeats_last_turn(&self, text: &str) -> bool {
        let streamed = self.tail.trim_end();
        let Some(before) = streamed.strip_suffix(text) else {
            return false;
        };
        match before.chars().next_back() {
            None => true,
            Some(previous) => {
                !previous.is_alphanumeric()
                    || (previous.is_lowercase() && text.starts_with(char::is_uppercase))
            }
        }
    }
}

/// The rest of `whole` when it starts with the text `streamed` digests.
pub(super) fn extends(whole: &str, streamed: TextDigest) -> Option<&str> {
    let len = streamed.len();
    (len > 0
        && whole.len() > len
        && whole.is_char_boundary(len)
        && TextDigest::of(&whole[..len]) == streamed)
        .then(|| &whole[len..])
}

#[cfg(test)]
mod tests {
    use super::{Evidence, Repeat, Transcript};

    fn streamed(deltas: &[&str]) -> Transcript {
        let mut transcript = Transcript::default();
        for delta in deltas {
            transcript.record_delta(delta);
        }
        transcript
    }

    #[test]
    fn a_repeated_last_turn_adds_nothing_however_many_deltas_it_took() {
        let turn: Vec<String> = (0..600).map(|i| format!(" w{i}")).collect();
        let mut deltas = vec!["Let me check."];
        deltas.extend(turn.iter().map(String::as_str));
        let transcript = streamed(&deltas);
        let last_turn = turn.concat();
        let last_turn = last_turn.trim_start();
        for evidence in [Evidence::Closing, Evidence::Opening] {
            assert!(matches!(
                transcript.classify(&format!("{last_turn}\n"), None, evidence),
                Repeat::Skip
            ));
        }
    }

    #[test]
    fn a_first_token_is_never_taken_for_a_repeat() {
        let transcript = streamed(&["The plan: ", "check the answer."]);
        assert!(matches!(
            transcript.classify("answer.", None, Evidence::Opening),
            Repeat::Emit
        ));
        // Not even a whole earlier message, when it is as short as a token.
        let short = streamed(&["Done."]);
        assert!(matches!(
            short.classify("Done.", None, Evidence::Opening),
            Repeat::Emit
        ));
        // The same text closing the answer is a repeat.
        assert!(matches!(
            transcript.classify("answer.", None, Evidence::Closing),
            Repeat::Skip
        ));
    }

    #[test]
    fn a_suffix_inside_a_word_is_not_a_repeat() {
        let transcript = streamed(&["It is 21 °C in Paris."]);
        assert!(matches!(
            transcript.classify("aris.", None, Evidence::Closing),
            Repeat::Emit
        ));
        let turns = streamed(&["Let me check", "It is sunny."]);
        assert!(matches!(
            turns.classify("It is sunny.", None, Evidence::Closing),
            Repeat::Skip
        ));
    }
}
