//! Re-attaching to the run's task after the upstream connection broke. The
//! caller resubscribes to the task and reads it, and the converter
//! reconciles what it already showed with what the agent now says, so the
//! client sees one run with no gap and nothing twice.
//!
//! - A Task snapshot's status messages already shown are skipped (message
//!   ids); its artifact parts beyond those shown are held back, not shown.
//! - Agents tap the task's events before they read the stored task (a2a-sdk
//!   1.x, a2a-js), or send no snapshot at all so the caller reads the task
//!   after the new stream's first event (a2a-sdk 0.3, whose store then
//!   holds every later chunk twice). Either way the held parts that come
//!   before the first live chunk of their artifact are the gap: the parts
//!   from the earliest one equal to that chunk on come live, and are
//!   dropped from the snapshot.
//! - Anything else that arrives (a status, a message, the end) shows the
//!   held parts first, whole.
//! - The caller judges the agent's answers to the resubscribe and to the
//!   read (an error there means the task ended, or the agent lost it, not
//!   that the run failed) and feeds only what shows the task.

use serde_json::Value;

use crate::measure::json_len;
use crate::read::Parts;

#[derive(Debug, Default)]
pub(super) struct Resync {
    /// From `reattach` to the first item that is not a Task snapshot.
    pub(super) collecting: bool,
    /// Per artifact, in snapshot order: its parts not shown yet.
    held: Vec<(String, Vec<Value>)>,
    /// The serialised size of what is held, within `MAX_HELD_BYTES`.
    held_bytes: usize,
}

/// The most a re-attach holds back (artifacts and bytes): an agent that
/// sends snapshot after snapshot of new artifacts gets them shown at once
/// past it, rather than kept.
const MAX_HELD: usize = super::MAX_TRACKED;
const MAX_HELD_BYTES: usize = 16 << 20;

impl Resync {
    pub(super) fn start(&mut self) {
        *self = Resync {
            collecting: true,
            held: std::mem::take(&mut self.held),
            held_bytes: self.held_bytes,
        };
    }

    /// A snapshot showed `parts` of `artifact` beyond those shown. Of
    /// several snapshots (the one the caller read, the stream's own), the
    /// one holding more is the newer. `false` when holding them would
    /// pass the bounds: the caller shows them instead.
    pub(super) fn hold(&mut self, artifact: &str, parts: &[Value]) -> bool {
        let at = self.held.iter().position(|(id, _)| id == artifact);
        if parts.is_empty() || at.is_some_and(|at| self.held[at].1.len() >= parts.len()) {
            return true;
        }
        if at.is_none() && self.held.len() >= MAX_HELD {
            return false;
        }
        let refuse = |resync: &mut Resync| {
            // The caller shows these parts now, which include what an
            // earlier snapshot held of this artifact: not to be shown again.
            resync.forget(artifact);
            false
        };
        let room = MAX_HELD_BYTES.saturating_sub(self.held_bytes);
        let measured = parts.iter().try_fold(0usize, |sum, part| {
            Some(sum + json_len(part, room.checked_sub(sum)?)?)
        });
        let Some(bytes) = measured else {
            return refuse(self);
        };
        match at {
            Some(at) => {
                let old = &mut self.held[at].1;
                let old_bytes: usize = old.iter().filter_map(|p| json_len(p, usize::MAX)).sum();
                self.held_bytes = self.held_bytes.saturating_sub(old_bytes) + bytes;
                *old = parts.to_vec();
            }
            None => {
                self.held_bytes += bytes;
                self.held.push((artifact.to_owned(), parts.to_vec()));
            }
        }
        true
    }

    /// Drops what is held of `artifact`: its parts are being shown by
    /// other means.
    pub(super) fn forget(&mut self, artifact: &str) {
        if let Some(at) = self.held.iter().position(|(id, _)| id == artifact) {
            let (_, held) = self.held.remove(at);
            let bytes: usize = held.iter().filter_map(|p| json_len(p, usize::MAX)).sum();
            self.held_bytes = self.held_bytes.saturating_sub(bytes);
        }
    }

    pub(super) fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The held parts of `artifact` that a live chunk of it (`chunk`) does
    /// not bring again: those before the earliest part equal to its first.
    pub(super) fn gap_before(&mut self, artifact: &str, chunk: Parts<'_>) -> Option<Vec<Value>> {
        let at = self.held.iter().position(|(id, _)| id == artifact)?;
        let (_, mut held) = self.held.remove(at);
        let bytes: usize = held.iter().filter_map(|p| json_len(p, usize::MAX)).sum();
        self.held_bytes = self.held_bytes.saturating_sub(bytes);
        let live = chunk.part_digests();
        if let Some(first) = live.first() {
            let digests = Parts::Values(&held).part_digests();
            if let Some(cut) = digests.iter().position(|d| d == first) {
                held.truncate(cut);
            }
        }
        Some(held)
    }

    /// Everything held, to be shown now.
    pub(super) fn release(&mut self) -> Vec<(String, Vec<Value>)> {
        self.held_bytes = 0;
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_gap_ends_where_the_live_chunk_first_appears() {
        let mut resync = Resync::default();
        resync.start();
        let parts: Vec<Value> = ["a", "b", "c", "c", "d"]
            .iter()
            .map(|t| json!({ "kind": "text", "text": t }))
            .collect();
        resync.hold("x", &parts[..3]);
        // A newer snapshot holding more replaces it; an older one does not.
        resync.hold("x", &parts);
        resync.hold("x", &parts[..1]);
        let live = [json!({ "kind": "text", "text": "c" })];
        let gap = resync.gap_before("x", Parts::Values(&live)).unwrap();
        assert_eq!(gap, parts[..2].to_vec());
        assert!(!resync.is_holding());
    }
}
