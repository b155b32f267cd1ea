//! What the converter remembers per artifact: how many parts were shown
//! (a Task snapshot then adds only the rest), and fingerprints of what was
//! announced about it (so a description repeated on every chunk is
//! announced once).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::Value;
use serde_json::value::RawValue;

use super::MAX_TRACKED;
use crate::custom::{ArtifactNotice, Custom, EventMetadata};
use crate::digest::{TextDigest, WordHashBuilder};
use crate::event::Event;
use crate::read::{self, Description, Object, without_commands};

#[derive(Debug, Default)]
pub(super) struct ArtifactState {
    pub(super) parts_seen: usize,
    description: Option<TextDigest>,
    /// A fingerprint of the raw description bytes that produced
    /// `description`, so the fast reader's repeats skip parsing. Cleared
    /// whenever `description` changes.
    raw_description: Option<u64>,
    /// Fingerprint of the event-level metadata last announced.
    event_metadata: Option<TextDigest>,
    /// A `partial: true` event streamed into this artifact.
    pub(super) streamed_partial: bool,
    commands: Option<TextDigest>,
    /// Fingerprint of the state delta last sent for this artifact.
    state_delta: Option<TextDigest>,
}

/// What a raw description's metadata held besides the description, found
/// when it was parsed (only when it changed): the fast reader leaves the
/// metadata unread, so these come from here.
#[derive(Debug, Default)]
pub(super) struct Extras {
    pub(super) commands: Option<Value>,
    pub(super) state_delta: Option<Object>,
}

#[derive(Debug, Default)]
pub(super) struct Artifacts {
    states: HashMap<String, ArtifactState, WordHashBuilder>,
}

impl Artifacts {
    pub(super) fn get(&self, id: &str) -> Option<&ArtifactState> {
        self.states.get(id)
    }

    /// The artifact's state, created on first sight; `None` once
    /// `MAX_TRACKED` artifacts are tracked.
    pub(super) fn state(&mut self, id: &str) -> Option<&mut ArtifactState> {
        if !self.states.contains_key(id) {
            if self.states.len() >= MAX_TRACKED {
                return None;
            }
            // Only a new artifact pays for an owned key.
            self.states.insert(id.to_owned(), ArtifactState::default());
        }
        self.states.get_mut(id)
    }

    /// `a2a.artifact` when the name, description, extensions or metadata
    /// (less `commands`) first appear or change.
    pub(super) fn describe(
        &mut self,
        id: &str,
        description: &Description<'_>,
        out: &mut Vec<Event>,
    ) -> Extras {
        match description {
            Description::Parsed { fields, metadata } => {
                self.describe_parsed(id, *fields, *metadata, out);
                Extras::default()
            }
            Description::Raw(raw) => self.describe_raw(id, raw, out),
        }
    }

    fn describe_raw(
        &mut self,
        id: &str,
        raw: &[Option<&RawValue>; 4],
        out: &mut Vec<Event>,
    ) -> Extras {
        if raw.iter().all(Option::is_none) {
            return Extras::default();
        }
        let raw_digest = {
            let mut hasher = WordHashBuilder::default().build_hasher();
            for field in raw {
                field.map(|r| r.get()).hash(&mut hasher);
            }
            hasher.finish()
        };
        if self
            .get(id)
            .is_some_and(|a| a.raw_description == Some(raw_digest))
        {
            return Extras::default();
        }
        let parse =
            |raw: &Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok());
        let [name, description, extensions, metadata] = raw.each_ref().map(parse);
        let metadata = metadata.as_ref().and_then(Value::as_object);
        self.describe_parsed(
            id,
            [name.as_ref(), description.as_ref(), extensions.as_ref()],
            metadata,
            out,
        );
        if let Some(state) = self.state(id) {
            state.raw_description = Some(raw_digest);
        }
        Extras {
            commands: read::commands(metadata).cloned(),
            state_delta: read::state_delta(metadata).cloned(),
        }
    }

    fn describe_parsed(
        &mut self,
        id: &str,
        fields: [Option<&Value>; 3],
        metadata: Option<&Object>,
        out: &mut Vec<Event>,
    ) {
        let fields = fields.map(|f| f.filter(|v| !crate::read::is_empty_value(v)));
        let described = metadata
            .map(|m| without_commands(m).collect::<Vec<_>>())
            .filter(|m| !m.is_empty());
        if described.is_none() && fields.iter().all(Option::is_none) {
            return;
        }
        // Fingerprint the source values first: most chunks repeat the same
        // description, and building the event for them would be waste.
        let digest = TextDigest::of_json(&(fields, &described));
        let Some(state) = self.state(id) else {
            return;
        };
        if state.description == Some(digest) {
            return;
        }
        state.description = Some(digest);
        state.raw_description = None;
        let [name, description, extensions] = fields.map(|f| f.cloned());
        out.push(Event::Custom(Custom::Artifact(ArtifactNotice {
            name,
            description,
            extensions,
            metadata: described
                .map(|d| d.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            artifact_id: id.to_owned(),
        })));
    }

    /// `a2a.event_metadata`, when it first appears or changes.
    pub(super) fn event_metadata(&mut self, id: &str, metadata: Object, out: &mut Vec<Event>) {
        let digest = TextDigest::of_json(&metadata);
        if let Some(state) = self.state(id) {
            if state.event_metadata == Some(digest) {
                return;
            }
            state.event_metadata = Some(digest);
        }
        out.push(Event::Custom(Custom::EventMetadata(EventMetadata {
            artifact_id: id.to_owned(),
            metadata,
        })));
    }

    /// True when `delta` differs from the last one this artifact stated (an
    /// artifact's metadata repeated on every chunk states it once).
    pub(super) fn state_delta_changed(&mut self, id: &str, delta: &Object) -> bool {
        let digest = TextDigest::of_json(delta);
        match self.state(id) {
            Some(state) if state.state_delta == Some(digest) => false,
            Some(state) => {
                state.state_delta = Some(digest);
                true
            }
            None => true,
        }
    }

    /// `a2a.commands`, when they first appear or change.
    pub(super) fn commands(&mut self, id: &str, commands: &Value, out: &mut Vec<Event>) {
        let digest = TextDigest::of_json(commands);
        if let Some(state) = self.state(id) {
            if state.commands == Some(digest) {
                return;
            }
            state.commands = Some(digest);
        }
        out.push(Event::Custom(Custom::Commands(commands.clone())));
    }
}
