//! Artifacts: how their chunks are shown (appended, replaced, closing
//! repeats of what was streamed), and what the converter remembers per
//! artifact: how many parts were shown (a Task snapshot then adds only the
//! rest), and fingerprints of what was announced about it (so a
//! description repeated on every chunk is announced once).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::Value;
use serde_json::value::RawValue;

use super::block::Segment;
use super::repeat::{Evidence, Repeat, extends};
use super::{Converter, MAX_TRACKED};
use crate::digest::{TextDigest, WordHashBuilder};
use crate::event::Event;
use crate::event::custom::{ArtifactNotice, Custom, EventMetadata};
use crate::ids::IdSource;
use crate::read::{
    self, ArtifactChunk, Block, Description, Object, PartMeaning, Parts, without_commands,
};

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
    /// Boxed: a table's least is four slots, and a run has one artifact
    /// or two, whose states held inline would take four slots' room with
    /// every stream.
    states: HashMap<String, Box<ArtifactState>, WordHashBuilder>,
}

impl Artifacts {
    pub(super) fn get(&self, id: &str) -> Option<&ArtifactState> {
        self.states.get(id).map(|state| &**state)
    }

    /// The artifact's state, created on first sight; `None` once
    /// `MAX_TRACKED` artifacts are tracked.
    pub(super) fn state(&mut self, id: &str) -> Option<&mut ArtifactState> {
        if !self.states.contains_key(id) {
            if self.states.len() >= MAX_TRACKED {
                return None;
            }
            // Only a new artifact pays for an owned key.
            self.states.insert(id.to_owned(), Box::default());
        }
        self.states.get_mut(id).map(|state| &mut **state)
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

/// What a closing artifact's plain text parts become.
#[derive(Debug, PartialEq, Eq)]
enum TextPlan {
    /// Shown as they are.
    AsIs,
    /// A repeat: not shown.
    Drop,
    /// Only this, what is new, where the text began.
    Replace(String),
}

impl<I: IdSource> Converter<I> {
    /// Each artifact's parts shown so far: where a polled run taken over
    /// by another replica reads on from (`TaskPoll::reattached`).
    pub fn artifacts_shown(&self) -> Vec<(String, usize)> {
        let states = &self.artifacts.states;
        states
            .iter()
            .map(|(id, state)| (id.clone(), state.parts_seen))
            .collect()
    }

    pub(super) fn on_artifact(&mut self, mut chunk: ArtifactChunk<'_>, out: &mut Vec<Event>) {
        self.run.saw_task = true;
        let id = chunk.id;
        if self.resync.is_holding()
            && let Some(gap) = self.resync.gap_before(id, chunk.parts)
        {
            // What a re-attach snapshot held back that this chunk does not
            // bring again: shown first.
            self.show_held(id, &gap, out);
        }
        let key = Segment::artifact(id);
        if !self.blocks.is_text_open_for(key) {
            self.blocks.close_text(out);
        }
        let shown = self.artifacts.get(id).map_or(0, |a| a.parts_seen);
        let replaced = !chunk.append && shown > 0;
        // A replacement: what was streamed stays, the new content is a new
        // message (or nothing, when it repeats what was streamed), unless
        // it is a snapshot of the text still open (an agent that sends the
        // whole text so far each time): then only its rest continues it.
        let snapshot_of_open = replaced
            && self.blocks.open_text_digest_for(key).is_some_and(|open| {
                chunk
                    .parts
                    .unhinted_text()
                    .is_some_and(|whole| extends(&whole, open).is_some())
            });
        if replaced {
            if !snapshot_of_open {
                self.blocks.close_text(out);
            }
            if let Some(state) = self.artifacts.state(id) {
                state.parts_seen = 0;
            }
        }
        let extras = self.artifacts.describe(id, &chunk.description, out);
        if let Some(delta) = chunk.state_delta.or(extras.state_delta.as_ref())
            && self.artifacts.state_delta_changed(id, delta)
        {
            self.state_delta(Some(delta), out);
        }
        let commands = chunk.commands.or(extras.commands.as_ref());
        if let Some(metadata) = chunk.event_metadata.take() {
            self.artifacts.event_metadata(id, metadata, out);
        }
        // ADK-style streaming (Hector v2): `partial: true` events carry
        // deltas, then a `partial: false` event repeats the whole text.
        let repeats_streamed = chunk.partial == Some(false)
            && self.artifacts.get(id).is_some_and(|a| a.streamed_partial);
        if chunk.partial == Some(true)
            && let Some(state) = self.artifacts.state(id)
        {
            state.streamed_partial = true;
        }
        // A closing artifact of text only, whole in one event or replacing
        // one, often repeats the answer (ADK, Strands, LangGraph) or only
        // its last turn (fasta2a's `result`): it adds what is new.
        let first_sight = shown == 0;
        let evidence = if chunk.last_chunk || replaced {
            Evidence::Closing
        } else {
            Evidence::Opening
        };
        let closing =
            !repeats_streamed && !chunk.append && (chunk.last_chunk || replaced || first_sight);
        if closing
            && chunk.parts.fingerprint().is_some()
            && chunk.parts.fingerprint() == self.last_message_parts
        {
            // The last message again, as the task's result (ADK).
            return self.end_artifact_chunk(&chunk, commands, key, out);
        }
        // Its text is judged as a whole, whatever else it carries (LangGraph
        // closes with the answer and its A2UI parts together).
        let plan = match closing.then(|| chunk.parts.unhinted_text()).flatten() {
            Some(whole) => {
                let open = self.blocks.open_text_digest();
                match self.blocks.transcript.classify(&whole, open, evidence) {
                    Repeat::Skip => TextPlan::Drop,
                    Repeat::Remainder(rest) => TextPlan::Replace(rest),
                    Repeat::Emit => TextPlan::AsIs,
                }
            }
            None => TextPlan::AsIs,
        };
        self.artifact_parts(id, key, chunk.parts, repeats_streamed, plan, out);
        self.end_artifact_chunk(&chunk, commands, key, out);
    }

    /// What every chunk ends with: parts counted, the text closed on the
    /// last chunk, the client commands.
    fn end_artifact_chunk(
        &mut self,
        chunk: &ArtifactChunk<'_>,
        commands: Option<&Value>,
        key: Segment,
        out: &mut Vec<Event>,
    ) {
        let id = chunk.id;
        if let Some(state) = self.artifacts.state(id) {
            state.parts_seen += chunk.parts.len();
        }
        if chunk.last_chunk {
            self.blocks.close_text_of(key, out);
        }
        if let Some(commands) = commands {
            self.artifacts.commands(id, commands, out);
        }
    }

    /// An artifact chunk's parts; when the chunk repeats what ADK-style
    /// `partial` events streamed, its text is gathered and only what is new
    /// of it is added.
    fn artifact_parts(
        &mut self,
        id: &str,
        key: Segment,
        parts: Parts<'_>,
        repeats_streamed: bool,
        mut plan: TextPlan,
        out: &mut Vec<Event>,
    ) {
        if !repeats_streamed && plan == TextPlan::AsIs {
            // Nearly every chunk: its parts as they are.
            return parts.for_each_block(|_, block| self.on_block(block, key, Some(id), out));
        }
        let mut final_text = String::new();
        parts.for_each_block(|meaning, block| match (block, meaning) {
            (Block::Text(text), PartMeaning::PlainText) if repeats_streamed => {
                final_text.push_str(text);
            }
            (Block::Text(_), PartMeaning::PlainText) if plan == TextPlan::Drop => {}
            (Block::Text(_), PartMeaning::PlainText) if matches!(plan, TextPlan::Replace(_)) => {
                // The new rest stands where the text began; the rest of the
                // text parts were shown already.
                if let TextPlan::Replace(rest) = std::mem::replace(&mut plan, TextPlan::Drop) {
                    self.blocks.text(&mut self.ids, key, &rest, out);
                }
            }
            (block, _) => self.on_block(block, key, Some(id), out),
        });
        let open = self.blocks.open_text_digest();
        match self
            .blocks
            .transcript
            .classify(&final_text, open, Evidence::Closing)
        {
            Repeat::Skip => {}
            Repeat::Remainder(rest) => self.blocks.text(&mut self.ids, key, &rest, out),
            Repeat::Emit => self.blocks.text(&mut self.ids, key, &final_text, out),
        }
    }

    /// Parts a re-attach snapshot held back, shown now, counted as shown.
    pub(super) fn show_held(&mut self, id: &str, parts: &[Value], out: &mut Vec<Event>) {
        let key = Segment::artifact(id);
        if !self.blocks.is_text_open_for(key) {
            self.blocks.close_text(out);
        }
        Parts::Values(parts).for_each_block(|_, block| self.on_block(block, key, Some(id), out));
        if let Some(state) = self.artifacts.state(id) {
            state.parts_seen += parts.len();
        }
    }

    /// A finished task's stored artifact of plain text, some of which was
    /// streamed: a store need not keep the chunks part for part (a closing
    /// chunk may have replaced them with the whole text, a store may merge
    /// them), so what is new is judged by the text, as a closing chunk's
    /// is, not by counting parts. Shows the rest of it, if any; `false`
    /// when the text does not continue what was streamed (then parts are
    /// counted, as for any snapshot).
    fn rest_of_stored_text(&mut self, id: &str, parts: Parts<'_>, out: &mut Vec<Event>) -> bool {
        let Some(whole) = parts.plain_text() else {
            return false;
        };
        let key = Segment::artifact(id);
        let open = self.blocks.open_text_digest_for(key);
        match self
            .blocks
            .transcript
            .classify(&whole, open, Evidence::Closing)
        {
            Repeat::Skip => {}
            Repeat::Remainder(rest) => self.blocks.text(&mut self.ids, key, &rest, out),
            Repeat::Emit => return false,
        }
        if let Some(state) = self.artifacts.state(id) {
            state.parts_seen = state.parts_seen.max(parts.len());
        }
        true
    }

    /// Everything re-attach snapshots hold, shown now (something else came).
    pub(super) fn release_held(&mut self, out: &mut Vec<Event>) {
        for (id, parts) in self.resync.release() {
            self.show_held(&id, &parts, out);
        }
    }

    /// Artifacts of a Task snapshot: only parts not yet streamed are new.
    /// Several entries may share one artifactId (their parts concatenate).
    /// `ended`: the task's turn is over, nothing streams after it.
    pub(super) fn snapshot_artifacts(
        &mut self,
        artifacts: &[Value],
        ended: bool,
        out: &mut Vec<Event>,
    ) {
        let mut offsets: HashMap<&str, usize> = HashMap::new();
        for artifact in artifacts.iter().filter_map(Value::as_object) {
            let view = read::artifact_view(artifact);
            let id = view.id;
            let count = view.parts.len();
            let offset = offsets.entry(id).or_insert(0);
            let start = *offset;
            *offset += count;
            let streamed = self.artifacts.get(id).map_or(0, |a| a.parts_seen);
            self.artifacts.describe(id, &view.description, out);
            let key = Segment::artifact(id);
            if ended && start == 0 {
                // The task's last word on the artifact: what an earlier
                // snapshot held of it is superseded (it may hold the same
                // text in fewer, longer parts).
                self.resync.forget(id);
            }
            if ended && start == 0 && streamed > 0 && self.rest_of_stored_text(id, view.parts, out)
            {
                if let Some(commands) = view.commands {
                    self.artifacts.commands(id, commands, out);
                }
                continue;
            }
            let new = view.parts.skip(streamed.saturating_sub(start));
            // Re-attached: held until the live stream shows where it takes
            // over (`resync`), within the bounds of what is held.
            if !(self.resync.collecting && self.resync.hold(id, new.values())) {
                new.for_each_block(|_, block| self.on_block(block, key, Some(id), out));
                if let Some(state) = self.artifacts.state(id) {
                    state.parts_seen = state.parts_seen.max(start + count);
                }
            }
            if let Some(commands) = view.commands {
                self.artifacts.commands(id, commands, out);
            }
        }
    }
}
