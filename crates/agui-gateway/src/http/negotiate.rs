//! What a request to an agent's A2A routes asks for: passed through as it
//! is, or converted to AG-UI; and when converted, which call to make
//! upstream and in which output format.

use a2a_agui::{A2aMessage, ErrorCode, OutputFormat, PartBody, part_body};
use axum::http::{HeaderMap, Method, header};
use serde_json::Value;

use super::error::ApiError;
use crate::agui::bounded_id;
use crate::random::random_u64;
use crate::upstream::{OutgoingMessage, OutgoingPart};

/// Whether the client wants AG-UI events rather than the agent's own
/// answer: by `Accept`, or by `?format=` for clients (and curl users) that
/// cannot set headers.
pub fn wants_agui(headers: &HeaderMap, query: Option<&str>) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/x-agui-events") || v.contains("application/agui+json"));
    accept
        || query_param(query, "format")
            .and_then(|f| OutputFormat::parse(&f))
            .is_some()
}

pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The output format of a converted call: `?format=hector`, or the older
/// `?dialect=`, else the agent's. `?format=agui` chooses nothing: it asked
/// for conversion long before `format` also named the output, so it keeps
/// the agent's configured format (and `?format=agui&dialect=hector` works).
pub fn output_format(query: Option<&str>, configured: OutputFormat) -> OutputFormat {
    let asked = |name: &str| query_param(query, name).and_then(|v| OutputFormat::parse(&v));
    asked("format")
        .filter(|f| *f == OutputFormat::Hector)
        .or_else(|| asked("dialect"))
        .unwrap_or(configured)
}

/// What a request asks of the gateway once AG-UI output was negotiated.
pub enum Negotiated {
    /// An A2A call the upstream answers as a stream or a result: forward
    /// it as it is and convert the answer.
    Forward,
    /// The seed's `{"request": …}` / `{"message": …}` body: the gateway
    /// builds the upstream's own streaming call.
    Build(Box<OutgoingMessage>),
    /// An A2A call with no AG-UI form (`tasks/get`, push configs, …).
    NotConvertible,
    /// A `RunAgentInput` (what `@ag-ui/client`'s HttpAgent always posts):
    /// served like the AG-UI endpoint.
    RunAgentInput,
}

const STREAMING_METHODS: [&str; 5] = [
    "message/stream",
    "SendStreamingMessage",
    "tasks/resubscribe",
    "SubscribeToTask",
    "tasks/subscribe",
];
const SEND_METHODS: [&str; 2] = ["message/send", "SendMessage"];

pub fn negotiate(method: &Method, path: &str, body: &[u8]) -> Result<Negotiated, ApiError> {
    let bad = |message: String| ApiError::bad_request(ErrorCode::InvalidRequest, message);
    // REST bindings name the call in the path, not the body.
    if path.ends_with("message:stream")
        || path.ends_with("message:send")
        || path.ends_with(":subscribe")
    {
        if let Ok(json) = serde_json::from_slice::<Value>(body) {
            a2a_ids(&json)?;
        }
        return Ok(Negotiated::Forward);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return if method == Method::GET {
            Ok(Negotiated::NotConvertible)
        } else {
            Err(bad(
                "an AG-UI stream was asked for but the request has no body".to_owned(),
            ))
        };
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not JSON: {e}")))?;
    if let Some(rpc_method) = json.get("method").and_then(Value::as_str) {
        // Only a call the gateway converts is read for its ids: any other
        // method goes on as it came.
        let converted =
            STREAMING_METHODS.contains(&rpc_method) || SEND_METHODS.contains(&rpc_method);
        if converted {
            a2a_ids(&json)?;
        }
        return Ok(if converted {
            Negotiated::Forward
        } else {
            Negotiated::NotConvertible
        });
    }
    if json.get("threadId").is_some()
        && json.get("runId").is_some()
        && json.get("messages").is_some()
    {
        return Ok(Negotiated::RunAgentInput);
    }
    a2a_ids(&json)?;
    let message = json
        .get("request")
        .or_else(|| json.get("message"))
        .or_else(|| json.pointer("/params/message"));
    match message {
        Some(message) => message_from_a2a(message)
            .map(|m| Negotiated::Build(Box::new(m)))
            .map_err(bad),
        None => Err(bad(
            "cannot tell which A2A call this is: expected a JSON-RPC request or {\"request\": message}"
                .to_owned(),
        )),
    }
}

/// The identifiers of a converted call (its message's, the task it
/// subscribes to), each within `MAX_ID_BYTES`: the agent is sent them and
/// echoes them in every event, where the converter would read a longer one
/// as none.
fn a2a_ids(json: &Value) -> Result<(), ApiError> {
    let message = json
        .get("request")
        .or_else(|| json.get("message"))
        .or_else(|| json.pointer("/params/message"));
    for key in ["messageId", "contextId", "taskId"] {
        if let Some(id) = message.and_then(|m| m.get(key)).and_then(Value::as_str) {
            bounded_id(&format!("the message's {key}"), id)?;
        }
    }
    for key in ["id", "name"] {
        if let Some(id) = json
            .pointer(&format!("/params/{key}"))
            .and_then(Value::as_str)
        {
            bounded_id(&format!("params.{key}"), id)?;
        }
    }
    Ok(())
}

/// The seed's message, in any shape the converter's reader knows (0.3
/// `kind` parts, 1.0 flat parts, ProtoJSON, `ROLE_USER`), as in the Hector
/// seed's `{"request": {"role": "user", "parts": [{"text": "Hello"}]}}`.
pub fn message_from_a2a(message: &Value) -> Result<OutgoingMessage, String> {
    let message = A2aMessage::read(message).ok_or("the message must be a JSON object")?;
    if let Some(role) = message.role.filter(|_| !message.is_from_user()) {
        return Err(format!("the message role must be user, not {role:?}"));
    }
    let parts = message
        .parts
        .ok_or("the message has no parts")?
        .iter()
        .map(a2a_part)
        .collect::<Result<Vec<_>, _>>()?;
    if parts.is_empty() {
        return Err("the message has no parts".to_owned());
    }
    Ok(OutgoingMessage {
        message_id: message
            .message_id
            .map_or_else(|| format!("agui-gateway-{:x}", random_u64()), str::to_owned),
        parts,
        context_id: message.context_id.map(str::to_owned),
        task_id: message.task_id.map(str::to_owned),
        metadata: message.metadata.cloned(),
        extensions: message.extensions.iter().map(|e| (*e).to_owned()).collect(),
        request_metadata: None,
    })
}

fn a2a_part(part: &Value) -> Result<OutgoingPart, String> {
    match part_body(part) {
        PartBody::Text(text) => Ok(OutgoingPart::Text(text.to_owned())),
        PartBody::File(file) => {
            let media_type = file.media_type.map(str::to_owned);
            let name = file.name.map(str::to_owned);
            match (file.uri, file.bytes) {
                (Some(uri), _) => Ok(OutgoingPart::FileUri {
                    uri: uri.to_owned(),
                    media_type,
                    name,
                }),
                (None, Some(bytes)) => Ok(OutgoingPart::FileBytes {
                    bytes: bytes.to_owned(),
                    media_type,
                    name,
                }),
                (None, None) => Err("a file part has neither uri nor bytes".to_owned()),
            }
        }
        PartBody::Data(data) => Ok(OutgoingPart::Data(data.clone())),
        PartBody::Empty => Err(format!("unsupported message part: {part}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_seed_body_reads_in_every_shape() {
        for body in [
            json!({ "role": "user", "parts": [{ "text": "Hello" }] }),
            json!({ "role": "ROLE_USER", "content": [{ "text": "Hello" }] }),
            json!({ "kind": "message", "role": "user", "parts": [{ "kind": "text", "text": "Hello" }] }),
        ] {
            let message = message_from_a2a(&body).unwrap();
            assert!(matches!(&message.parts[..], [OutgoingPart::Text(t)] if t == "Hello"));
        }
        assert!(message_from_a2a(&json!({ "role": "agent", "parts": [{ "text": "x" }] })).is_err());
        assert!(matches!(
            a2a_part(&json!({ "data": { "data": { "k": 1 } } })).unwrap(),
            OutgoingPart::Data(d) if d == json!({ "k": 1 })
        ));
    }

    #[test]
    fn a_converted_call_s_ids_are_bounded() {
        let long = "x".repeat(a2a_agui::MAX_ID_BYTES + 1);
        let post = Method::POST;
        for body in [
            json!({ "request": { "role": "user", "contextId": long, "parts": [{ "text": "x" }] } }),
            json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": { "message":
                { "role": "user", "messageId": long, "parts": [{ "text": "x" }] } } }),
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": { "id": long } }),
        ] {
            let body = body.to_string();
            let err = negotiate(&post, "/", body.as_bytes()).err().unwrap();
            assert_eq!(err.code, ErrorCode::IdTooLong, "{body:.80}");
        }
        let rest = json!({ "message": { "role": "ROLE_USER", "taskId": long } }).to_string();
        let err = negotiate(&post, "/message:stream", rest.as_bytes()).err();
        assert_eq!(err.map(|e| e.code), Some(ErrorCode::IdTooLong));
    }

    #[test]
    fn bad_seed_bodies_say_why() {
        let err = |body: Value| message_from_a2a(&body).unwrap_err();
        assert_eq!(err(json!("hi")), "the message must be a JSON object");
        assert_eq!(err(json!({ "role": "user" })), "the message has no parts");
        assert_eq!(
            err(json!({ "role": "user", "parts": [] })),
            "the message has no parts"
        );
        assert_eq!(
            err(json!({ "parts": [{ "file": { "name": "a" } }] })),
            "a file part has neither uri nor bytes"
        );
        assert_eq!(
            err(json!({ "parts": [{ "x": 1 }] })),
            "unsupported message part: {\"x\":1}"
        );
        let message = message_from_a2a(&json!({ "parts": [{ "text": "x" }] })).unwrap();
        assert!(message.message_id.starts_with("agui-gateway-"));
    }

    #[test]
    fn format_and_its_older_names_choose_the_output() {
        let hector = OutputFormat::Hector;
        let agui = OutputFormat::Agui;
        assert_eq!(output_format(Some("format=hector"), agui), hector);
        assert_eq!(
            output_format(Some("format=agui&dialect=hector"), agui),
            hector
        );
        assert_eq!(output_format(Some("dialect=hector"), agui), hector);
        // `?format=agui` asks for conversion and keeps the agent's format.
        assert_eq!(output_format(Some("format=agui"), hector), hector);
        assert_eq!(output_format(None, hector), hector);
        assert_eq!(output_format(Some("dialect=agui"), hector), agui);
        let none = HeaderMap::new();
        assert!(wants_agui(&none, Some("format=agui")));
        assert!(wants_agui(&none, Some("format=hector")));
        assert!(!wants_agui(&none, Some("dialect=hector")));
        assert!(!wants_agui(&none, Some("format=json")));
    }
}
