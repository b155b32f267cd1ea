//! A typed, borrowing reader for the two shapes that make up nearly every
//! event of a streaming answer: an artifact chunk of plain text and an agent
//! message of plain text, in any envelope (JSON-RPC or bare, 0.3 `kind` or
//! 1.0 wrapper key).
//!
//! It exists for speed only: parsing into `serde_json::Value` allocates a
//! map per object and a string per string, which caps the converter well
//! below a million events a second. This reader borrows strings from the
//! input and skips what it does not need. Anything it is not certain about
//! (a hint, a file or data part, a field of an unexpected type —
//! serde then fails the parse) is left to the lenient `Value` reader, so
//! both readers always agree on the result.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::usage::may_say_usage;
use super::{ArtifactChunk, Description, Item, MessageView, Parts};

// The envelope (JSON-RPC `result`, the 1.0 wrapper key) is read by a
// hand-written seed that descends into the same flat `Node`: no box and no
// move per level. Presence-only fields are `IgnoredAny` (zero-sized) and ids
// borrow as `&str`; an id with an escape sequence cannot borrow and fails
// the parse, which hands the item to the lenient reader.

/// The payload fields of every envelope level, merged.
#[derive(Default)]
pub(crate) struct Node<'a> {
    kind: Option<&'a str>,
    task_id: Option<&'a str>,
    context_id: Option<&'a str>,
    message_id: Option<&'a str>,
    role: Option<&'a str>,
    artifact: Option<Artifact<'a>>,
    append: Option<bool>,
    last_chunk: Option<bool>,
    parts: Option<Vec<Part<'a>>>,
    metadata: Option<&'a RawValue>,
    /// A key this reader leaves to the lenient one was present.
    lenient_only: bool,
}

/// How deep the envelope may nest: JSON-RPC `result`, then the wrapper key.
const MAX_DEPTH: u8 = 3;

struct Level<'n, 'a> {
    node: &'n mut Node<'a>,
    depth: u8,
}

impl<'de> serde::de::DeserializeSeed<'de> for Level<'_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Level<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an A2A stream item")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let node = self.node;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "result" | "artifactUpdate" | "message" if self.depth < MAX_DEPTH => {
                    map.next_value_seed(Level {
                        node: &mut *node,
                        depth: self.depth + 1,
                    })?;
                }
                "kind" => node.kind = map.next_value()?,
                "taskId" => node.task_id = map.next_value()?,
                "contextId" => node.context_id = map.next_value()?,
                "messageId" => node.message_id = map.next_value()?,
                "role" => node.role = map.next_value()?,
                "artifact" => node.artifact = map.next_value()?,
                "append" => node.append = map.next_value()?,
                "lastChunk" => node.last_chunk = map.next_value()?,
                "parts" => node.parts = map.next_value()?,
                "metadata" => {
                    // At two levels of the envelope: the lenient reader decides.
                    node.lenient_only |= node.metadata.is_some();
                    node.metadata = map.next_value()?;
                }
                "error" | "status" | "task" | "statusUpdate" | "type" | "content" | "result"
                | "artifactUpdate" | "message" | "referenceTaskIds" => {
                    node.lenient_only = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Artifact<'a> {
    #[serde(rename = "artifactId")]
    artifact_id: Option<&'a str>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    description: Option<&'a RawValue>,
    #[serde(borrow)]
    extensions: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    parts: Vec<Part<'a>>,
    // 0.1 put these on the artifact; left to the lenient reader.
    append: Option<IgnoredAny>,
    #[serde(rename = "lastChunk")]
    last_chunk: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Part<'a> {
    kind: Option<&'a str>,
    #[serde(rename = "type")]
    part_type: Option<IgnoredAny>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    metadata: Option<PartMetadata>,
    file: Option<IgnoredAny>,
    data: Option<IgnoredAny>,
    raw: Option<IgnoredAny>,
    url: Option<IgnoredAny>,
    content: Option<IgnoredAny>,
    content_type: Option<IgnoredAny>,
}

/// Whether part metadata holds a key that could make the part more than
/// plain text (`shape::is_hint_key`, with a value other than `null`), or
/// may hold token usage.
#[derive(Default)]
struct PartMetadata {
    hinted: bool,
}

impl<'de> Deserialize<'de> for PartMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = PartMetadata;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("part metadata")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PartMetadata, A::Error> {
                let mut hinted = false;
                while let Some(key) = map.next_key::<&'de str>()? {
                    // A borrowed key allocates nothing (a key with an escape
                    // fails the parse: the lenient reader decides). A null
                    // mark is no mark, as the lenient reader reads it.
                    // Usage is read from metadata by the lenient reader:
                    // flat OpenTelemetry keys, or an object under a key that
                    // says usage, or one nested in an object.
                    // Only an object is read again, by keys (rare here).
                    let value = map.next_value::<Option<&'de RawValue>>()?;
                    hinted |= value.is_some_and(|raw| {
                        super::shape::is_hint_key(key)
                            || key.starts_with("gen_ai.usage.")
                            || (raw.get().starts_with('{')
                                && (may_say_usage(key) || Probe::holds_usage(raw.get())))
                    });
                }
                Ok(PartMetadata { hinted })
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

/// Reads a value without keeping it, looking at the keys of the objects
/// in it: whether one may say usage (or the object is too deep to say);
/// `None` for `null`.
struct Probe {
    depth: u8,
}

impl Probe {
    /// Whether an object's keys, or those of the objects in it, may say
    /// usage (or it is not JSON this reader can borrow: the lenient one
    /// decides).
    fn holds_usage(object: &str) -> bool {
        use serde::de::DeserializeSeed;
        let mut deserializer = serde_json::Deserializer::from_str(object);
        Probe { depth: 0 }
            .deserialize(&mut deserializer)
            .map_or(true, |usage| usage == Some(true))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Probe {
    type Value = Option<bool>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Probe {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a metadata value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Some(false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Some(false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Some(false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Some(false))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Some(false))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(false))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut usage = self.depth >= 2;
        while let Some(key) = map.next_key::<&'de str>()? {
            usage |= may_say_usage(key);
            if self.depth >= 2 {
                map.next_value::<IgnoredAny>()?;
            } else {
                let inner = map.next_value_seed(Probe {
                    depth: self.depth + 1,
                })?;
                usage |= inner == Some(true);
            }
        }
        Ok(Some(usage))
    }
}

/// What the fast reader recognised: a plain-text artifact chunk (when the
/// node has an artifact) or a plain-text agent message.
pub(crate) struct FastItem<'a> {
    node: Node<'a>,
}

impl FastItem<'_> {
    /// The item in the readers' common vocabulary.
    pub(crate) fn item(&self) -> Item<'_> {
        let node = &self.node;
        match &node.artifact {
            Some(artifact) => Item::Artifact(ArtifactChunk {
                context_id: node.context_id,
                task_id: node.task_id,
                id: artifact.artifact_id.unwrap_or(""),
                append: node.append.unwrap_or(false),
                last_chunk: node.last_chunk.unwrap_or(false),
                description: Description::Raw([
                    artifact.name,
                    artifact.description,
                    artifact.extensions,
                    artifact.metadata,
                ]),
                event_metadata: None,
                partial: None,
                parts: Parts::Plain(&artifact.parts),
                commands: None,
                state_delta: None,
            }),
            None => Item::Message(MessageView {
                context_id: node.context_id,
                task_id: node.task_id,
                message_id: node.message_id,
                user_echo: None,
                parts: Parts::Plain(node.parts.as_deref().unwrap_or(&[])),
                metadata: None,
                state_delta: None,
                reference_task_ids: &[],
            }),
        }
    }
}

/// `None` whenever the lenient reader must decide.
pub(crate) fn read(json: &str) -> Option<FastItem<'_>> {
    use serde::de::DeserializeSeed;
    let mut node = Node::default();
    let mut deserializer = serde_json::Deserializer::from_str(json);
    Level {
        node: &mut node,
        depth: 0,
    }
    .deserialize(&mut deserializer)
    .ok()?;
    deserializer.end().ok()?;
    let artifact_id = node.artifact.as_ref().and_then(|a| a.artifact_id);
    let long_id = [node.task_id, node.context_id, node.message_id, artifact_id]
        .into_iter()
        .flatten()
        .any(|id| id.len() > super::json::MAX_ID_BYTES);
    if node.lenient_only || long_id {
        return None;
    }
    let plain = if let Some(artifact) = &node.artifact {
        matches!(node.kind, None | Some("artifact-update"))
            && node.parts.is_none()
            && node.metadata.is_none_or(|m| m.get() == "{}")
            && artifact.append.is_none()
            && artifact.last_chunk.is_none()
            && artifact.parts.iter().all(Part::is_plain_text)
    } else {
        matches!(node.kind, None | Some("message"))
            && node
                .role
                .is_some_and(|r| !r.eq_ignore_ascii_case("user") && r != "ROLE_USER")
            && node.metadata.is_none_or(|m| m.get() == "{}")
            && node
                .parts
                .as_ref()
                .is_some_and(|parts| parts.iter().all(Part::is_plain_text))
    };
    plain.then_some(FastItem { node })
}

impl Part<'_> {
    /// The part's text (every part the reader accepts has one).
    pub(crate) fn text(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }

    fn is_plain_text(&self) -> bool {
        let hinted = self.metadata.as_ref().is_some_and(|m| m.hinted);
        self.text.is_some()
            && matches!(self.kind, None | Some("text"))
            && !hinted
            && self.part_type.is_none()
            && self.file.is_none()
            && self.data.is_none()
            && self.raw.is_none()
            && self.url.is_none()
            && self.content.is_none()
            && self.content_type.is_none()
    }
}
