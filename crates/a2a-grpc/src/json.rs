//! Typed gRPC messages of either version written as A2A 1.0's JSON (the
//! ProtoJSON an a2a-sdk 1.x agent sends over JSON-RPC), which the converter
//! and everything after it (journal, replay, list) already read: one
//! vocabulary downstream, whatever the binding. 1.0's stream items, tasks
//! and messages are written straight to bytes (`write`); this module has
//! what both share (values, names, times) and 0.3's and the cards' JSON. 0.3's messages map onto
//! it field for field (`content` is `parts`, `update` is `message`, a file
//! part is a `url` or `raw` part with its media type and name, `final` is
//! the state's).

use base64::Engine as _;
use prost_types::value::Kind;
use serde_json::{Map, Value, json};

use crate::{v03, v10};

/// A `google.protobuf.Value` as JSON. A number that is not finite has no
/// JSON form: `null`.
pub fn value(of: &prost_types::Value) -> Value {
    match &of.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::NumberValue(n)) => {
            serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number)
        }
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StructValue(s)) => object(s),
        Some(Kind::ListValue(list)) => Value::Array(list.values.iter().map(value).collect()),
    }
}

/// A `google.protobuf.Struct` as a JSON object.
pub fn object(fields: &prost_types::Struct) -> Value {
    Value::Object(
        fields
            .fields
            .iter()
            .map(|(key, v)| (key.clone(), value(v)))
            .collect(),
    )
}

/// JSON as a `google.protobuf.Value`.
pub fn to_value(json: &Value) -> prost_types::Value {
    let kind = match json {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        Value::Object(fields) => Kind::StructValue(to_struct(fields)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A JSON object as a `google.protobuf.Struct`.
pub fn to_struct(fields: &Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: fields
            .iter()
            .map(|(key, v)| (key.clone(), to_value(v)))
            .collect(),
    }
}

/// Adds `key` when the text is not empty (proto3's absent string).
fn put_text(out: &mut Map<String, Value>, key: &str, text: &str) {
    if !text.is_empty() {
        out.insert(key.to_owned(), Value::String(text.to_owned()));
    }
}

fn put_object(out: &mut Map<String, Value>, key: &str, fields: Option<&prost_types::Struct>) {
    if let Some(fields) = fields {
        out.insert(key.to_owned(), object(fields));
    }
}

fn put_list(out: &mut Map<String, Value>, key: &str, items: &[String]) {
    if !items.is_empty() {
        out.insert(key.to_owned(), json!(items));
    }
}

/// A state's 1.0 name.
pub fn state_name(state: i32) -> &'static str {
    match v10::TaskState::try_from(state).unwrap_or(v10::TaskState::Unspecified) {
        v10::TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
        v10::TaskState::Submitted => "TASK_STATE_SUBMITTED",
        v10::TaskState::Working => "TASK_STATE_WORKING",
        v10::TaskState::Completed => "TASK_STATE_COMPLETED",
        v10::TaskState::Failed => "TASK_STATE_FAILED",
        v10::TaskState::Canceled => "TASK_STATE_CANCELED",
        v10::TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
        v10::TaskState::Rejected => "TASK_STATE_REJECTED",
        v10::TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
    }
}

pub fn role_name(role: i32) -> &'static str {
    match v10::Role::try_from(role).unwrap_or(v10::Role::Unspecified) {
        v10::Role::User => "ROLE_USER",
        v10::Role::Agent => "ROLE_AGENT",
        v10::Role::Unspecified => "ROLE_UNSPECIFIED",
    }
}

pub fn timestamp(at: &prost_types::Timestamp) -> Option<Value> {
    // RFC 3339 in UTC, as ProtoJSON writes it; a time out of range is left out.
    let secs = at.seconds;
    let nanos = u32::try_from(at.nanos).ok()?;
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days)?;
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_owned()
    };
    Some(Value::String(format!(
        "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}Z"
    )))
}

/// Days since 1970-01-01 as a proleptic Gregorian date (years 1 to 9999).
fn civil_from_days(days: i64) -> Option<(i64, i64, i64)> {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (1..=9999).contains(&year).then_some((year, month, day))
}

// --- 1.0 -----------------------------------------------------------------

// --- 0.3 -----------------------------------------------------------------

pub fn part_v03(part: &v03::Part) -> Value {
    let mut out = Map::new();
    match &part.content {
        Some(v03::part::Content::Text(text)) => {
            out.insert("text".into(), Value::String(text.clone()));
        }
        Some(v03::part::Content::File(file)) => {
            match &file.file {
                Some(v03::file_part::File::FileWithUri(url)) => {
                    out.insert("url".into(), Value::String(url.clone()));
                }
                Some(v03::file_part::File::FileWithBytes(bytes)) => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
                    out.insert("raw".into(), Value::String(encoded));
                }
                None => {}
            }
            put_text(&mut out, "filename", &file.name);
            put_text(&mut out, "mediaType", &file.mime_type);
        }
        Some(v03::part::Content::Data(data)) => {
            let data = data.data.as_ref().map_or_else(|| json!({}), object);
            out.insert("data".into(), data);
        }
        None => {}
    }
    put_object(&mut out, "metadata", part.metadata.as_ref());
    Value::Object(out)
}

pub fn message_v03(message: &v03::Message) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "messageId", &message.message_id);
    put_text(&mut out, "contextId", &message.context_id);
    put_text(&mut out, "taskId", &message.task_id);
    out.insert("role".into(), Value::String(role_name(message.role).into()));
    out.insert(
        "parts".into(),
        Value::Array(message.content.iter().map(part_v03).collect()),
    );
    put_object(&mut out, "metadata", message.metadata.as_ref());
    put_list(&mut out, "extensions", &message.extensions);
    Value::Object(out)
}

fn status_v03(status: &v03::TaskStatus) -> Value {
    let mut out = Map::new();
    out.insert(
        "state".into(),
        Value::String(state_name(status.state).into()),
    );
    if let Some(message) = &status.update {
        out.insert("message".into(), message_v03(message));
    }
    if let Some(at) = status.timestamp.as_ref().and_then(timestamp) {
        out.insert("timestamp".into(), at);
    }
    Value::Object(out)
}

fn artifact_v03(artifact: &v03::Artifact) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "artifactId", &artifact.artifact_id);
    put_text(&mut out, "name", &artifact.name);
    put_text(&mut out, "description", &artifact.description);
    out.insert(
        "parts".into(),
        Value::Array(artifact.parts.iter().map(part_v03).collect()),
    );
    put_object(&mut out, "metadata", artifact.metadata.as_ref());
    put_list(&mut out, "extensions", &artifact.extensions);
    Value::Object(out)
}

pub fn task_v03(task: &v03::Task) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "id", &task.id);
    put_text(&mut out, "contextId", &task.context_id);
    if let Some(status) = &task.status {
        out.insert("status".into(), status_v03(status));
    }
    if !task.artifacts.is_empty() {
        out.insert(
            "artifacts".into(),
            Value::Array(task.artifacts.iter().map(artifact_v03).collect()),
        );
    }
    if !task.history.is_empty() {
        out.insert(
            "history".into(),
            Value::Array(task.history.iter().map(message_v03).collect()),
        );
    }
    put_object(&mut out, "metadata", task.metadata.as_ref());
    Value::Object(out)
}

/// One 0.3 stream item in 1.0's JSON; `None` for an empty one.
pub fn stream_v03(item: &v03::StreamResponse) -> Option<Value> {
    use v03::stream_response::Payload;
    Some(match item.payload.as_ref()? {
        Payload::Task(task) => json!({ "task": task_v03(task) }),
        Payload::Msg(message) => json!({ "message": message_v03(message) }),
        Payload::StatusUpdate(update) => {
            let mut out = Map::new();
            put_text(&mut out, "taskId", &update.task_id);
            put_text(&mut out, "contextId", &update.context_id);
            if let Some(status) = &update.status {
                out.insert("status".into(), status_v03(status));
            }
            put_object(&mut out, "metadata", update.metadata.as_ref());
            json!({ "statusUpdate": out })
        }
        Payload::ArtifactUpdate(update) => {
            let mut out = Map::new();
            put_text(&mut out, "taskId", &update.task_id);
            put_text(&mut out, "contextId", &update.context_id);
            if let Some(artifact) = &update.artifact {
                out.insert("artifact".into(), artifact_v03(artifact));
            }
            if update.append {
                out.insert("append".into(), Value::Bool(true));
            }
            if update.last_chunk {
                out.insert("lastChunk".into(), Value::Bool(true));
            }
            put_object(&mut out, "metadata", update.metadata.as_ref());
            json!({ "artifactUpdate": out })
        }
    })
}

// --- cards ---------------------------------------------------------------

fn skill(skill: &v10::AgentSkill) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "id", &skill.id);
    put_text(&mut out, "name", &skill.name);
    put_text(&mut out, "description", &skill.description);
    out.insert("tags".into(), json!(skill.tags));
    put_list(&mut out, "examples", &skill.examples);
    put_list(&mut out, "inputModes", &skill.input_modes);
    put_list(&mut out, "outputModes", &skill.output_modes);
    Value::Object(out)
}

fn extension(extension: &v10::AgentExtension) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "uri", &extension.uri);
    put_text(&mut out, "description", &extension.description);
    if extension.required {
        out.insert("required".into(), Value::Bool(true));
    }
    put_object(&mut out, "params", extension.params.as_ref());
    Value::Object(out)
}

fn provider(out: &mut Map<String, Value>, provider: Option<&v10::AgentProvider>) {
    if let Some(provider) = provider {
        out.insert(
            "provider".into(),
            json!({ "url": provider.url, "organization": provider.organization }),
        );
    }
}

/// A 1.0 card as 1.0's JSON card.
pub fn card_v10(card: &v10::AgentCard) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "name", &card.name);
    put_text(&mut out, "description", &card.description);
    let interfaces: Vec<Value> = card
        .supported_interfaces
        .iter()
        .map(|interface| {
            let mut out = Map::new();
            put_text(&mut out, "url", &interface.url);
            put_text(&mut out, "protocolBinding", &interface.protocol_binding);
            put_text(&mut out, "tenant", &interface.tenant);
            put_text(&mut out, "protocolVersion", &interface.protocol_version);
            Value::Object(out)
        })
        .collect();
    out.insert("supportedInterfaces".into(), Value::Array(interfaces));
    provider(&mut out, card.provider.as_ref());
    put_text(&mut out, "version", &card.version);
    if let Some(url) = &card.documentation_url {
        put_text(&mut out, "documentationUrl", url);
    }
    let mut capabilities = Map::new();
    if let Some(caps) = &card.capabilities {
        let flags = [
            ("streaming", caps.streaming),
            ("pushNotifications", caps.push_notifications),
            ("extendedAgentCard", caps.extended_agent_card),
        ];
        for (key, flag) in flags {
            if let Some(flag) = flag {
                capabilities.insert(key.into(), Value::Bool(flag));
            }
        }
        if !caps.extensions.is_empty() {
            let extensions = caps.extensions.iter().map(extension).collect();
            capabilities.insert("extensions".into(), Value::Array(extensions));
        }
    }
    out.insert("capabilities".into(), Value::Object(capabilities));
    out.insert("defaultInputModes".into(), json!(card.default_input_modes));
    out.insert(
        "defaultOutputModes".into(),
        json!(card.default_output_modes),
    );
    out.insert(
        "skills".into(),
        Value::Array(card.skills.iter().map(skill).collect()),
    );
    if let Some(url) = &card.icon_url {
        put_text(&mut out, "iconUrl", url);
    }
    Value::Object(out)
}

/// A 0.3 card as 0.3's JSON card.
pub fn card_v03(card: &v03::AgentCard) -> Value {
    let mut out = Map::new();
    put_text(&mut out, "name", &card.name);
    put_text(&mut out, "description", &card.description);
    put_text(&mut out, "url", &card.url);
    put_text(&mut out, "preferredTransport", &card.preferred_transport);
    if !card.additional_interfaces.is_empty() {
        let interfaces = card
            .additional_interfaces
            .iter()
            .map(|i| json!({ "url": i.url, "transport": i.transport }))
            .collect();
        out.insert("additionalInterfaces".into(), Value::Array(interfaces));
    }
    put_text(&mut out, "protocolVersion", &card.protocol_version);
    provider(&mut out, card.provider.as_ref());
    put_text(&mut out, "version", &card.version);
    put_text(&mut out, "documentationUrl", &card.documentation_url);
    let mut capabilities = Map::new();
    if let Some(caps) = &card.capabilities {
        capabilities.insert("streaming".into(), Value::Bool(caps.streaming));
        capabilities.insert(
            "pushNotifications".into(),
            Value::Bool(caps.push_notifications),
        );
        if !caps.extensions.is_empty() {
            let extensions = caps.extensions.iter().map(extension).collect();
            capabilities.insert("extensions".into(), Value::Array(extensions));
        }
    }
    out.insert("capabilities".into(), Value::Object(capabilities));
    out.insert("defaultInputModes".into(), json!(card.default_input_modes));
    out.insert(
        "defaultOutputModes".into(),
        json!(card.default_output_modes),
    );
    out.insert(
        "skills".into(),
        Value::Array(card.skills.iter().map(skill).collect()),
    );
    if card.supports_authenticated_extended_card {
        out.insert(
            "supportsAuthenticatedExtendedCard".into(),
            Value::Bool(true),
        );
    }
    put_text(&mut out, "iconUrl", &card.icon_url);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_in_utc() {
        let at = |seconds, nanos| timestamp(&prost_types::Timestamp { seconds, nanos });
        assert_eq!(at(0, 0), Some(json!("1970-01-01T00:00:00Z")));
        assert_eq!(
            at(1_795_764_996, 561_000_000),
            Some(json!("2026-11-27T07:36:36.561Z"))
        );
        assert_eq!(
            at(951_782_400, 1),
            Some(json!("2000-02-29T00:00:00.000000001Z"))
        );
        assert_eq!(at(i64::MAX, 0), None);
        assert_eq!(at(0, -1), None);
    }

    #[test]
    fn structs_and_values_go_both_ways() {
        let json = json!({ "a": 1.5, "b": [true, null, "x"], "c": { "d": {} } });
        let Value::Object(fields) = &json else {
            unreachable!()
        };
        assert_eq!(object(&to_struct(fields)), json);
        let nan = prost_types::Value {
            kind: Some(Kind::NumberValue(f64::NAN)),
        };
        assert_eq!(value(&nan), Value::Null);
    }
}
