//! The bytes a card signature covers: RFC 8785 (JCS) canonical JSON of the
//! card without its `signatures`, in each form a signer may have made it
//! (the specification's, a2a-js's, a2a-python's; the module above says
//! how they differ).

use std::fmt::Write as _;

use serde_json::Value;

/// What a pruning signer leaves out of a card.
#[derive(Clone, Copy)]
pub(super) struct Prune {
    /// `null`s (a2a-js).
    pub(super) nulls: bool,
    /// `false` and `0` (protobuf defaults, which a2a-python's card never
    /// holds), but for `optional` fields and inside an extension's
    /// free-form `params`.
    pub(super) defaults: bool,
}

/// What a canonical form covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Every field of the card (the empties and nulls a signer drops mean
    /// nothing).
    Whole,
    /// Its A2A 1.0 fields only.
    V1Fields,
}

/// The forms a signer may have canonicalised `card` to, without its
/// `signatures`, the specification's first, each once (a form equal to
/// one before it counts as that one: the whole card's first).
pub(super) fn canonical_forms(card: &Value) -> Vec<(Form, String)> {
    let mut bare = card.clone();
    if let Some(object) = bare.as_object_mut() {
        object.remove("signatures");
    }
    let empty = || Value::Object(Default::default());
    let keep_nulls = Prune {
        nulls: false,
        defaults: false,
    };
    let drop_nulls = Prune {
        nulls: true,
        defaults: false,
    };
    let protobuf = Prune {
        nulls: true,
        defaults: true,
    };
    let candidates = [
        (Form::Whole, bare.clone()),
        // a2a-python 0.3 and 1.x over the card as served.
        (Form::Whole, pruned(&bare, keep_nulls).unwrap_or_else(empty)),
        // a2a-js.
        (Form::Whole, pruned(&bare, drop_nulls).unwrap_or_else(empty)),
        // a2a-python 1.x: its protobuf card, without the 0.3 fields it
        // merges into the card it serves.
        (
            Form::V1Fields,
            pruned(&v1_fields(&bare), protobuf).unwrap_or_else(empty),
        ),
    ];
    let mut forms: Vec<(Form, String)> = Vec::with_capacity(candidates.len());
    for (form, candidate) in &candidates {
        let bytes = canonical(candidate);
        if !forms.iter().any(|(_, known)| *known == bytes) {
            forms.push((*form, bytes));
        }
    }
    forms
}

/// `value` without empty strings, lists and objects (emptied containers
/// included) and what `prune` adds, as the SDKs' signers prune a card.
pub(super) fn pruned(value: &Value, prune: Prune) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let kept: serde_json::Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| {
                    // An extension's parameters are data, kept as they are
                    // but for empties; the capabilities' flags are
                    // `optional` in the protobuf message, so a `false`
                    // there is present, not a default.
                    let inner = match k.as_str() {
                        "params" | "streaming" | "pushNotifications" | "extendedAgentCard" => {
                            Prune {
                                defaults: false,
                                ..prune
                            }
                        }
                        _ => prune,
                    };
                    Some((k.clone(), pruned(v, inner)?))
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(|v| pruned(v, prune)).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::String(text) if text.is_empty() => None,
        Value::Null if prune.nulls => None,
        Value::Bool(false) if prune.defaults => None,
        Value::Number(n) if prune.defaults && n.as_f64() == Some(0.0) => None,
        other => Some(other.clone()),
    }
}

/// The card's A2A 1.0 `AgentCard` fields only (the protobuf message's, as
/// its JSON names them): what a2a-python 1.x reads back from a card that
/// also carries the 0.3 ones.
pub(super) fn v1_fields(card: &Value) -> Value {
    const CARD: &[&str] = &[
        "name",
        "description",
        "supportedInterfaces",
        "provider",
        "version",
        "documentationUrl",
        "capabilities",
        "securitySchemes",
        "securityRequirements",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
        "iconUrl",
    ];
    const INTERFACE: &[&str] = &["url", "protocolBinding", "tenant", "protocolVersion"];
    const PROVIDER: &[&str] = &["url", "organization"];
    const CAPABILITIES: &[&str] = &[
        "streaming",
        "pushNotifications",
        "extensions",
        "extendedAgentCard",
    ];
    const EXTENSION: &[&str] = &["uri", "description", "required", "params"];
    const REQUIREMENT: &[&str] = &["schemes"];
    const SKILL: &[&str] = &[
        "id",
        "name",
        "description",
        "tags",
        "examples",
        "inputModes",
        "outputModes",
        "securityRequirements",
    ];
    fn only(value: &Value, keys: &[&str]) -> Value {
        match value.as_object() {
            Some(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| keys.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            None => value.clone(),
        }
    }
    fn each(value: &mut Value, keys: &[&str]) {
        if let Some(items) = value.as_array_mut() {
            for item in items {
                *item = only(item, keys);
            }
        }
    }
    let mut card = only(card, CARD);
    if let Some(interfaces) = card.get_mut("supportedInterfaces") {
        each(interfaces, INTERFACE);
    }
    if let Some(provider) = card.get_mut("provider") {
        *provider = only(provider, PROVIDER);
    }
    if let Some(capabilities) = card.get_mut("capabilities") {
        *capabilities = only(capabilities, CAPABILITIES);
        if let Some(extensions) = capabilities.get_mut("extensions") {
            each(extensions, EXTENSION);
        }
    }
    if let Some(schemes) = card
        .get_mut("securitySchemes")
        .and_then(Value::as_object_mut)
    {
        // A 1.0 scheme is one `…SecurityScheme` member; the 0.3 `type`,
        // `flows`, `scheme` … merged beside it go.
        for scheme in schemes.values_mut() {
            if let Some(members) = scheme.as_object_mut() {
                members.retain(|k, _| k.ends_with("SecurityScheme"));
            }
        }
    }
    if let Some(requirements) = card.get_mut("securityRequirements") {
        each(requirements, REQUIREMENT);
    }
    if let Some(skills) = card.get_mut("skills") {
        each(skills, SKILL);
        for skill in skills.as_array_mut().into_iter().flatten() {
            if let Some(requirements) = skill.get_mut("securityRequirements") {
                each(requirements, REQUIREMENT);
            }
        }
    }
    card
}

/// RFC 8785 (JCS): members sorted by their names' UTF-16 code units, no
/// white space, strings escaped as ECMAScript's `JSON.stringify` does,
/// numbers as its `Number.prototype.toString` writes them.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => out.push_str(ryu_js::Buffer::new().format_finite(f)),
            _ => out.push_str("null"),
        },
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
