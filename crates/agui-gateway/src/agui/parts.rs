//! AG-UI message content as A2A parts: user content (text, images, files),
//! tool results and the answers to interrupts.

use serde_json::{Map, Value, json};

use crate::upstream::OutgoingPart;

/// A user message's content as parts; an error names what is wrong.
pub fn user_parts(message: &Value) -> Result<Vec<OutgoingPart>, String> {
    let parts = match &message["content"] {
        Value::String(text) if text.is_empty() => Vec::new(),
        Value::String(text) => vec![OutgoingPart::Text(text.clone())],
        Value::Array(content) => content
            .iter()
            .map(content_part)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect(),
        _ => return Err("a user message has no content".to_owned()),
    };
    if parts.is_empty() {
        return Err("a user message is empty".to_owned());
    }
    Ok(parts)
}

/// A tool's result for the agent's call `call_id`: Hector v2's typed data
/// part, with Hector v1's part metadata (both spellings), so that agents
/// reading either convention find it.
pub fn tool_result(
    call_id: &str,
    tool_name: Option<&str>,
    content: &str,
    error: Option<&str>,
) -> OutgoingPart {
    let is_error = error.is_some();
    let mut data = json!({
        "type": "tool_result",
        "tool_call_id": call_id,
        "content": content,
        "is_error": is_error,
    });
    let mut metadata = Map::new();
    for prefix in ["", "agui_"] {
        let mut put = |key: &str, value: Value| {
            metadata.insert(format!("{prefix}{key}"), value);
        };
        put("event_type", json!("tool_call"));
        put("tool_call_id", json!(call_id));
        put("is_error", json!(is_error));
        put("is_final", json!(true));
        if let Some(name) = tool_name {
            put("tool_name", json!(name));
        }
    }
    if let Some(name) = tool_name {
        data["tool_name"] = json!(name);
    }
    if let Some(error) = error {
        data["error"] = json!(error);
    }
    OutgoingPart::Marked { data, metadata }
}

/// The answer to an interrupt: text as a text part, an object as the data
/// part it is, anything else wrapped (`{"value": …}`: A2A 0.3 data must be
/// an object), no payload as an empty object. The data parts say which
/// interrupt they answer in their metadata.
pub fn resume_payload(interrupt_id: &str, payload: Option<&Value>) -> OutgoingPart {
    let data = match payload {
        Some(Value::String(text)) => return OutgoingPart::Text(text.clone()),
        Some(Value::Object(object)) => Value::Object(object.clone()),
        None | Some(Value::Null) => json!({}),
        Some(other) => json!({ "value": other }),
    };
    let mut metadata = Map::new();
    metadata.insert(
        "x-agui-resume".to_owned(),
        json!({ "interruptId": interrupt_id, "status": "resolved" }),
    );
    OutgoingPart::Marked { data, metadata }
}

/// One AG-UI content part: text, image/audio/video/document with a url,
/// data or file source, or the legacy `binary` part.
fn content_part(part: &Value) -> Result<Option<OutgoingPart>, String> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match part["type"].as_str() {
        Some("text") => Ok(text(part, "text")
            .filter(|t| !t.is_empty())
            .map(OutgoingPart::Text)),
        Some("image" | "audio" | "video" | "document") => {
            let source = &part["source"];
            let media_type = text(source, "mimeType");
            let value = text(source, "value").ok_or("a content part's source has no value")?;
            Ok(Some(match source["type"].as_str() {
                Some("data") => OutgoingPart::FileBytes {
                    bytes: value,
                    media_type,
                    name: None,
                },
                _ => OutgoingPart::FileUri {
                    uri: value,
                    media_type,
                    name: None,
                },
            }))
        }
        Some("binary") => {
            let media_type = text(part, "mimeType");
            let name = text(part, "filename");
            if let Some(data) = text(part, "data") {
                Ok(Some(OutgoingPart::FileBytes {
                    bytes: data,
                    media_type,
                    name,
                }))
            } else if let Some(url) = text(part, "url") {
                Ok(Some(OutgoingPart::FileUri {
                    uri: url,
                    media_type,
                    name,
                }))
            } else {
                Err("a binary content part has neither data nor url".to_owned())
            }
        }
        Some(other) => Err(format!("unsupported content part type {other:?}")),
        None => Err("a content part has no type".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_parts_become_a2a_parts() {
        let user = json!({ "id": "u", "role": "user", "content": [
            { "type": "text", "text": "look" },
            { "type": "image", "source": { "type": "url", "value": "https://x/a.png", "mimeType": "image/png" } },
            { "type": "binary", "mimeType": "application/pdf", "data": "JVBER", "filename": "a.pdf" }
        ] });
        let parts = user_parts(&user).unwrap();
        assert_eq!(parts.len(), 3);
        assert!(matches!(&parts[1], OutgoingPart::FileUri { uri, .. } if uri == "https://x/a.png"));
        assert!(user_parts(&json!({ "role": "user", "content": "" })).is_err());
    }

    #[test]
    fn tool_results_carry_both_hector_conventions() {
        let OutgoingPart::Marked { data, metadata } =
            tool_result("call-1", Some("get_weather"), "{\"t\":21}", None)
        else {
            panic!("a tool result is a marked data part");
        };
        assert_eq!(data["type"], "tool_result");
        assert_eq!(data["tool_call_id"], "call-1");
        assert_eq!(data["tool_name"], "get_weather");
        assert_eq!(data["content"], "{\"t\":21}");
        assert_eq!(metadata["event_type"], "tool_call");
        assert_eq!(metadata["agui_tool_call_id"], "call-1");
        assert_eq!(metadata["is_final"], true);
    }

    #[test]
    fn resume_payloads_keep_their_shape() {
        assert!(
            matches!(resume_payload("i", Some(&json!("Paris"))), OutgoingPart::Text(t) if t == "Paris")
        );
        let OutgoingPart::Marked { data, metadata } = resume_payload("i", Some(&json!([1]))) else {
            panic!("not text");
        };
        assert_eq!(data, json!({ "value": [1] }));
        assert_eq!(metadata["x-agui-resume"]["interruptId"], "i");
    }
}
