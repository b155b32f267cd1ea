//! A message sent again under its id: what is new in it is decided from
//! what that id has shown so far, the same way for every agent.
//!
//! Agents send one message id many times: as whole snapshots of the text
//! so far (`""`, `"It is "`, `"It is 21C "`: a Task per event), as deltas
//! under one id, or as the whole message again at the end (ADK repeats
//! its last event as the waiting status). Part by part (by position):
//! - a text part that equals what its position has shown adds nothing (a
//!   message item's only in a snapshot stream or from 16 bytes: "ha" then
//!   "ha" are two deltas);
//! - one that extends it is a snapshot: only the rest is new (a message
//!   item's only when what was shown is a few bytes long or the position
//!   has shown itself a snapshot stream: "1" then "1." are deltas);
//! - one that does neither is a delta: all of it is new, and what the
//!   position has shown grows by it (so the whole text resent at the end
//!   is recognised as what was shown);
//! - an empty text shows nothing and ends nothing: the next version
//!   continues from what was shown;
//! - any other part adds nothing when it is the same as before.
//!
//! Memory is bounded: `MAX_TRACKED` ids (then a new id is shown whole, as
//! if seen first), `MAX_PARTS` positions per id (then later parts are
//! shown whole).

use std::collections::HashMap;

use super::MAX_TRACKED;
use super::repeat::extends;
use crate::digest::{TextDigest, WordHashBuilder};
use crate::read::{Parts, Piece};

/// Positions remembered per message id.
const MAX_PARTS: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Shown {
    /// For text, everything its position has shown; else the part's.
    digest: TextDigest,
    text: bool,
    /// The position's text in the last version (for text).
    last: TextDigest,
    /// How the position's text has behaved so far.
    behaviour: Behaviour,
}

/// What a text position's versions have shown themselves to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// One version (or only empty ones): either may follow.
    Unknown,
    /// A version extended the text so far: each holds everything so far.
    Snapshots,
    /// A version did neither: each is the next piece.
    Deltas,
}

/// The text so far is taken to be a snapshot's prefix only from this many
/// bytes: a token-sized text may as well be followed by a delta that
/// starts with it ("1" then "1."; "2" then "2").
const MIN_SNAPSHOT_PREFIX: usize = 3;
/// Before the position has shown its behaviour, the same text again is a
/// resend only from this many bytes (shorter, it may be a repeated token).
pub(super) const MIN_RESEND: usize = 16;

#[derive(Debug, Default)]
struct Message {
    parts: Vec<Shown>,
    metadata: Option<TextDigest>,
}

/// What carried the message: a status (a Task's or a status update's
/// message, which agents resend whole as the state moves on) or a stream
/// item (a message event, which agents also use for deltas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    Status,
    Item,
}

/// What to show of one part of a message seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PartPlan {
    /// All of it.
    Whole,
    /// Nothing: shown already.
    Skip,
    /// Its text from this byte on.
    From(usize),
}

/// What to show of a message.
pub(super) enum Plan {
    /// The id was not seen (or is not tracked): all of it, as a new message.
    First,
    /// Seen before: per part; `metadata_changed` says whether its metadata
    /// differs from the last version's.
    Again {
        parts: Vec<PartPlan>,
        metadata_changed: bool,
    },
}

impl Plan {
    /// True when the message adds nothing at all.
    pub(super) fn adds_nothing(&self) -> bool {
        match self {
            Plan::First => false,
            Plan::Again {
                parts,
                metadata_changed,
            } => !metadata_changed && parts.iter().all(|p| *p == PartPlan::Skip),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Versions {
    by_id: HashMap<String, Message, WordHashBuilder>,
}

impl Versions {
    /// The plan for a version of message `id`, and what it shows recorded.
    pub(super) fn plan(
        &mut self,
        id: &str,
        carrier: Carrier,
        parts: Parts<'_>,
        metadata: Option<TextDigest>,
    ) -> Plan {
        let Some(message) = self.by_id.get_mut(id) else {
            if self.by_id.len() < MAX_TRACKED {
                let mut message = Message {
                    parts: Vec::new(),
                    metadata,
                };
                parts.for_each_piece(|i, piece| {
                    if i < MAX_PARTS {
                        message.parts.push(first_sight(&piece));
                    }
                });
                self.by_id.insert(id.to_owned(), message);
            }
            return Plan::First;
        };
        let metadata_changed = metadata.is_some() && metadata != message.metadata;
        message.metadata = metadata;
        let mut pieces = Vec::with_capacity(parts.len());
        parts.for_each_piece(|_, piece| pieces.push(piece));
        // The whole message says it is a snapshot: it has grown by parts,
        // or repeats one that is not text.
        let snapshot = pieces.len() > 1
            && (pieces.len() > message.parts.len()
                || pieces.iter().zip(&message.parts).any(|(piece, shown)| {
                    matches!(piece, Piece::Other(digest) if !shown.text && *digest == shown.digest)
                }));
        let mut plans = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.into_iter().enumerate() {
            let plan = match message.parts.get_mut(i) {
                Some(shown) => again(shown, carrier, snapshot, &piece),
                None => {
                    if i < MAX_PARTS {
                        message.parts.push(first_sight(&piece));
                    }
                    PartPlan::Whole
                }
            };
            plans.push(plan);
        }
        Plan::Again {
            parts: plans,
            metadata_changed,
        }
    }
}

fn first_sight(piece: &Piece<'_>) -> Shown {
    let (digest, text) = match piece {
        Piece::Text(text) => (TextDigest::of(text), true),
        Piece::Other(digest) => (*digest, false),
    };
    Shown {
        digest,
        text,
        last: digest,
        behaviour: Behaviour::Unknown,
    }
}

/// What a part adds over what its position showed, and the record updated.
/// Whether the same text again (or a text extending it) is a snapshot, a
/// resend or a delta that happens to start with it is decided from how the
/// position has behaved, and from the whole message (`snapshot`): lose
/// nothing a delta stream sends.
fn again(shown: &mut Shown, carrier: Carrier, snapshot: bool, piece: &Piece<'_>) -> PartPlan {
    let text = match piece {
        Piece::Text(text) if shown.text => *text,
        Piece::Other(digest) if !shown.text && *digest == shown.digest => return PartPlan::Skip,
        _ => {
            *shown = first_sight(piece);
            return PartPlan::Whole;
        }
    };
    let digest = TextDigest::of(text);
    let last = std::mem::replace(&mut shown.last, digest);
    let so_far = shown.digest.len();
    if so_far == 0 {
        shown.digest = digest;
        return PartPlan::Whole;
    }
    let snapshots = snapshot || shown.behaviour == Behaviour::Snapshots;
    let same = digest == shown.digest;
    // A status message sent again as the state moves on is the same
    // message; a stream item may be a repeated token.
    let resend = match carrier {
        Carrier::Status => same,
        Carrier::Item => same && (snapshots || so_far >= MIN_RESEND),
    };
    if resend {
        return PartPlan::Skip;
    }
    let extends_shown = !same
        && (carrier == Carrier::Status || snapshots || so_far >= MIN_SNAPSHOT_PREFIX)
        && extends(text, shown.digest).is_some();
    if extends_shown {
        shown.behaviour = Behaviour::Snapshots;
        shown.digest = digest;
        return PartPlan::From(so_far);
    }
    // Taken for deltas too early (a short first snapshot): once a version
    // extends the last one, the position is a snapshot stream from here.
    if shown.behaviour == Behaviour::Deltas
        && last.len() >= MIN_SNAPSHOT_PREFIX
        && extends(text, last).is_some()
    {
        shown.behaviour = Behaviour::Snapshots;
        shown.digest = digest;
        return PartPlan::From(last.len());
    }
    if shown.behaviour == Behaviour::Unknown {
        shown.behaviour = Behaviour::Deltas;
    }
    shown.digest.update(text);
    PartPlan::Whole
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Parts;

    fn texts(versions: &mut Versions, id: &str, text: &str) -> Vec<String> {
        let value = serde_json::json!([{"kind": "text", "text": text}]);
        let parts = Parts::Values(value.as_array().map(Vec::as_slice).unwrap_or(&[]));
        match versions.plan(id, Carrier::Item, parts, None) {
            Plan::First => vec![text.to_owned()],
            Plan::Again { parts, .. } => parts
                .iter()
                .filter_map(|p| match p {
                    PartPlan::Whole => Some(text.to_owned()),
                    PartPlan::From(n) => Some(text[*n..].to_owned()),
                    PartPlan::Skip => None,
                })
                .collect(),
        }
    }

    #[test]
    fn snapshots_deltas_and_resends_show_the_text_once() {
        let shown = |chunks: &[&str]| {
            let mut versions = Versions::default();
            chunks
                .iter()
                .flat_map(|c| texts(&mut versions, "m", c))
                .collect::<String>()
        };
        let answer = "It is 21C in Paris.";
        assert_eq!(shown(&["", "It is ", "It is 21C ", answer]), answer);
        assert_eq!(shown(&["It is ", "21C ", "in Paris."]), answer);
        assert_eq!(shown(&["It is ", "21C ", "in Paris.", answer]), answer);
        assert_eq!(shown(&["It is ", "It is 21C ", answer, answer]), answer);
        // Deltas that repeat or start with the text so far lose nothing.
        assert_eq!(shown(&["2", "2", "°C in Paris."]), "22°C in Paris.");
        assert_eq!(shown(&["ha", "ha", "!"]), "haha!");
        assert_eq!(shown(&["1", "1.", " Go"]), "11. Go");
        // A short first snapshot taken for a delta: the stream recovers.
        assert_eq!(
            shown(&["I", "I am", "I am fine, thanks."]),
            "II am fine, thanks."
        );
    }
}
