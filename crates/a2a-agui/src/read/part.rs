//! The content of one part, in every dialect: 0.3 `kind` parts, 1.0 flat
//! parts (`url`, `raw`, `data`), 0.3 ProtoJSON (`{"data":{"data":…}}`,
//! `fileWithUri`), ACP message parts (`content_type`, `content_url`).

use serde_json::Value;

use super::json::{Object, object, text};

/// The content of one part, whatever its dialect.
#[derive(Debug, Clone)]
pub enum PartBody<'a> {
    /// Text.
    Text(&'a str),
    /// A file, by reference or inline.
    File(FileRef<'a>),
    /// Structured data (ProtoJSON's extra `data` level removed).
    Data(&'a Value),
    /// No content we recognise (an ACP trajectory part, an empty part).
    Empty,
}

/// A file part's fields, in any dialect's spelling.
#[derive(Debug, Clone, Default)]
pub struct FileRef<'a> {
    /// `uri`, `fileWithUri`, `url`.
    pub uri: Option<&'a str>,
    /// Base64 content: `bytes`, `fileWithBytes`, `raw`.
    pub bytes: Option<&'a str>,
    /// `mimeType`, `mediaType`.
    pub media_type: Option<&'a str>,
    /// `name`, `filename`.
    pub name: Option<&'a str>,
}

/// What one part holds; a part that is not an object is [`PartBody::Empty`].
pub fn part_body(part: &Value) -> PartBody<'_> {
    part.as_object().map_or(PartBody::Empty, part_body_of)
}

pub(crate) fn part_body_of(part: &Object) -> PartBody<'_> {
    let kind = text(part, "kind").or_else(|| text(part, "type"));
    match kind {
        Some("text") => return text(part, "text").map_or(PartBody::Empty, PartBody::Text),
        Some("file") => {
            return object(part, "file").map_or(PartBody::Empty, |f| PartBody::File(file_ref(f)));
        }
        Some("data") => return part.get("data").map_or(PartBody::Empty, PartBody::Data),
        _ => {}
    }
    if let Some(t) = text(part, "text") {
        return PartBody::Text(t);
    }
    if let Some(f) = object(part, "file") {
        return PartBody::File(file_ref(f));
    }
    if part.contains_key("raw") || part.contains_key("url") {
        return PartBody::File(FileRef {
            uri: text(part, "url"),
            bytes: text(part, "raw"),
            media_type: text(part, "mediaType"),
            name: text(part, "filename"),
        });
    }
    if let Some(data) = part.get("data") {
        return PartBody::Data(unwrap_proto_data(data));
    }
    if part.contains_key("content_type") || part.contains_key("content_url") {
        return acp_part_body(part);
    }
    if let Some(t) = text(part, "content") {
        return PartBody::Text(t);
    }
    PartBody::Empty
}

/// 0.3 ProtoJSON wraps a DataPart's struct once more: `{"data":{"data":{…}}}`.
fn unwrap_proto_data(data: &Value) -> &Value {
    match data.as_object() {
        Some(obj) if obj.len() == 1 => obj.get("data").unwrap_or(data),
        _ => data,
    }
}

fn file_ref(file: &Object) -> FileRef<'_> {
    FileRef {
        uri: text(file, "uri")
            .or_else(|| text(file, "fileWithUri"))
            .or_else(|| text(file, "url")),
        bytes: text(file, "bytes").or_else(|| text(file, "fileWithBytes")),
        media_type: text(file, "mimeType").or_else(|| text(file, "mediaType")),
        name: text(file, "name").or_else(|| text(file, "filename")),
    }
}

/// ACP `MessagePart`: `content_type`, `content` (plain or base64), `content_url`.
fn acp_part_body(part: &Object) -> PartBody<'_> {
    let content_type = text(part, "content_type");
    let is_text = content_type.is_none_or(|t| t.starts_with("text/"));
    let base64 = text(part, "content_encoding") == Some("base64");
    match (text(part, "content"), text(part, "content_url")) {
        (Some(content), _) if is_text && !base64 => PartBody::Text(content),
        (content, url) if content.is_some() || url.is_some() => PartBody::File(FileRef {
            uri: url,
            bytes: content,
            media_type: content_type,
            name: text(part, "name"),
        }),
        _ => PartBody::Empty,
    }
}

/// Every media type a part states, on itself then in its metadata, in any
/// spelling of the key (1.0 `mediaType` on the part, 0.3 `mimeType` in
/// metadata, …): what A2UI and the shape rules look for.
pub(crate) fn media_types<'a>(
    part: &'a Object,
    metadata: Option<&'a Object>,
) -> impl Iterator<Item = &'a str> {
    const KEYS: [&str; 4] = ["mediaType", "mimeType", "media_type", "mime_type"];
    std::iter::once(part)
        .chain(metadata)
        .flat_map(|o| KEYS.iter().filter_map(move |k| text(o, k)))
}
