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
/// How many delta starts are remembered: a repeated turn starts at one.
const DELTA_STARTS: usize = 256;

/// How sure the caller is that a text closes the answer. A closing status
/// or a last (or replacing) artifact chunk is `Closing`; the first chunk of
/// an artifact that may still stream on is `Opening`, and repeats only when
/// the evidence is stronger (a repeated last turn must span two deltas),
/// so that a streamed first token is never taken for a repeat.
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
#[derive(Debug)]
pub(super) struct Transcript {
    /// All text of the run, in order.
    run_text: TextDigest,
    recent_segments: VecDeque<TextDigest>,
    /// The end of the run's text (at most about 2 × `TAIL_BYTES`).
    tail: String,
    /// Where recent deltas started, as offsets into the run's text: a ring,
    /// `next` the slot the next start goes to.
    delta_starts: [usize; DELTA_STARTS],
    next: usize,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            run_text: TextDigest::default(),
            recent_segments: VecDeque::new(),
            tail: String::new(),
            // No delta starts at `usize::MAX`: an empty slot never matches.
            delta_starts: [usize::MAX; DELTA_STARTS],
            next: 0,
        }
    }
}

impl Transcript {
    pub(super) fn record_delta(&mut self, delta: &str) {
        self.delta_starts[self.next] = self.run_text.len();
        self.next = (self.next + 1) % DELTA_STARTS;
        self.run_text.update(delta);
        self.tail.push_str(delta);
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
        let trimmed = whole.trim_end();
        if trimmed.is_empty() {
            return Repeat::Skip;
        }
        let seen = |text: &str| {
            let digest = TextDigest::of(text);
            digest == self.run_text
                || open_segment == Some(digest)
                || self.recent_segments.contains(&digest)
        };
        if seen(whole) || seen(trimmed) || self.repeats_last_turn(trimmed, evidence) {
            return Repeat::Skip;
        }
        match self.extension(whole, open_segment) {
            Some(rest) if rest.trim().is_empty() => Repeat::Skip,
            Some(rest) => Repeat::Remainder(rest.to_owned()),
            None => Repeat::Emit,
        }
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

    /// `text` is the end of what was streamed and starts where a delta did
    /// (and, on weaker evidence, spans at least two deltas).
    fn repeats_last_turn(&self, text: &str, evidence: Evidence) -> bool {
        let streamed = self.tail.trim_end();
        let trailing = self.tail.len() - streamed.len();
        let Some(start) = self.run_text.len().checked_sub(trailing + text.len()) else {
            return false;
        };
        let deltas = self
            .delta_starts
            .iter()
            .filter(|&&s| s != usize::MAX && s >= start)
            .count();
        let needed = match evidence {
            Evidence::Closing => 1,
            Evidence::Opening => 2,
        };
        streamed.ends_with(text) && self.delta_starts.contains(&start) && deltas >= needed
    }
}

/// The rest of `whole` when it starts with the text `streamed` digests.
fn extends(whole: &str, streamed: TextDigest) -> Option<&str> {
    let len = streamed.len();
    (len > 0
        && whole.len() > len
        && whole.is_char_boundary(len)
        && TextDigest::of(&whole[..len]) == streamed)
        .then(|| &whole[len..])
}
