//! Repeat detection: agents often send the answer again at the end (a
//! closing status message, a final artifact), whole or extended. What was
//! streamed is remembered as digests, never as text, so memory per run stays
//! constant however long the answer.

use std::collections::VecDeque;

use crate::digest::TextDigest;

/// How many closed text segments are remembered.
const RECENT_SEGMENTS: usize = 64;

/// What a text that may repeat the streamed answer adds.
pub(super) enum Repeat {
    /// New text: all of it.
    Emit,
    /// Streamed already: nothing.
    Skip,
    /// Everything streamed so far, then this.
    Remainder(String),
}

/// Digests of the text written in this run.
#[derive(Debug, Default)]
pub(super) struct Transcript {
    /// All text of the run, in order.
    run_text: TextDigest,
    recent_segments: VecDeque<TextDigest>,
}

impl Transcript {
    pub(super) fn record_delta(&mut self, delta: &str) {
        self.run_text.update(delta);
    }

    pub(super) fn record_segment(&mut self, segment: TextDigest) {
        if self.recent_segments.len() == RECENT_SEGMENTS {
            self.recent_segments.pop_front();
        }
        self.recent_segments.push_back(segment);
    }

    /// Whether `whole` repeats text already streamed (all of it, the open
    /// segment or a recent one), extends it (only the rest is new), or is
    /// new.
    pub(super) fn classify(&self, whole: &str, open_segment: Option<TextDigest>) -> Repeat {
        let digest = TextDigest::of(whole);
        if whole.is_empty()
            || digest == self.run_text
            || open_segment == Some(digest)
            || self.recent_segments.contains(&digest)
        {
            return Repeat::Skip;
        }
        for streamed in [open_segment, Some(self.run_text)].into_iter().flatten() {
            let len = streamed.len();
            if len > 0
                && whole.len() > len
                && whole.is_char_boundary(len)
                && TextDigest::of(&whole[..len]) == streamed
            {
                return Repeat::Remainder(whole[len..].to_owned());
            }
        }
        Repeat::Emit
    }
}
