//! Every call the gateway makes to an upstream agent is built here: where
//! it goes, which of the client's headers go with it, and which A2A headers
//! the gateway adds. Side by side, the differences between the calls are
//! visible, and deliberate:
//!
//! | call                             | client headers sent along                          |
//! |----------------------------------|----------------------------------------------------|
//! | passthrough                      | all but hop-by-hop ones                            |
//! | converted, forwarded as sent     | same, minus `Accept` and `Accept-Encoding`         |
//! | converted, body by the gateway   | same, minus `Content-Type` too                     |
//! | agent card                       | `a2a-version`, `authorization`, `accept-language`  |
//! | cancel after a disconnect        | none: the client is gone                           |
//!
//! The agent's configured headers go on every call, after the client's
//! (`Agent::with_configured_headers`).

use a2a_agui::ErrorCode;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, Method, header};
use reqwest::RequestBuilder;
use serde_json::Value;
use url::Url;

use crate::error::ApiError;
use crate::upstream::{Agent, OutgoingMessage, base_url, cancel_request, streaming_request};

/// Hop-by-hop headers belong to one connection and are not forwarded.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// What the relay can read: an A2A stream, or one JSON answer.
const CONVERTED_ACCEPT: &str = "text/event-stream, application/json";

/// The client headers an agent card request carries: the card may depend
/// on the protocol version, the caller (an extended card) and the language.
const CARD_HEADERS: [&str; 3] = ["a2a-version", "authorization", "accept-language"];

/// Whether a header may cross the gateway, either way. The length is left
/// out because the HTTP stack writes the length of what it actually sends.
pub fn forwardable(name: &HeaderName) -> bool {
    !HOP_BY_HOP.contains(&name.as_str()) && name != header::CONTENT_LENGTH
}

/// The upstream's headers a passed-through response keeps.
pub fn returned_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in upstream {
        if forwardable(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers
}

/// Transparent mode: the request as it came, to the same path upstream.
pub fn passthrough(
    agent: &Agent,
    method: Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<RequestBuilder, ApiError> {
    let url = upstream_url(agent, path, query)?;
    let mut request = agent.client.request(method, url);
    for (name, value) in headers {
        if forwardable(name) {
            request = request.header(name, value);
        }
    }
    Ok(agent.with_configured_headers(request).body(body))
}

/// A client's own A2A call whose answer the gateway converts.
pub fn forward(
    agent: &Agent,
    method: Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<RequestBuilder, ApiError> {
    let url = upstream_url(agent, path, query)?;
    let mut request = converted(agent, agent.stream_client.request(method, url), headers);
    if names_a_1_0_method(&body) && !headers.contains_key("a2a-version") {
        request = speaks_1_0(request);
    }
    Ok(request.body(body))
}

/// A streaming call the gateway writes itself (from the seed's body or a
/// `RunAgentInput`), to the endpoint and in the dialect the card names.
/// `activate` lists the A2A extensions to ask the agent to turn on.
pub async fn build(
    agent: &Agent,
    headers: &HeaderMap,
    message: &OutgoingMessage,
    rpc_id: &str,
    activate: &[String],
) -> RequestBuilder {
    let (url, version) = agent.endpoint().await;
    let (body, v10) = streaming_request(version, message, rpc_id);
    // The client's headers describe the body it sent, not this one.
    let mut own = headers.clone();
    own.remove(header::CONTENT_TYPE);
    let mut request = converted(agent, agent.stream_client.post(url), &own).json(&body);
    if v10 {
        request = speaks_1_0(request);
    }
    if !activate.is_empty() {
        // Both spellings: 1.0 renamed the 0.3 header.
        let list = activate.join(",");
        request = request
            .header("A2A-Extensions", &list)
            .header("X-A2A-Extensions", &list);
    }
    request
}

/// Cancels a task whose client went away.
pub async fn cancel(agent: &Agent, task: &str) -> RequestBuilder {
    let (url, version) = agent.endpoint().await;
    let (body, v10) = cancel_request(version, task, &format!("cancel-{task}"));
    let mut request = agent.client.post(url).json(&body);
    if v10 {
        request = speaks_1_0(request);
    }
    agent.with_configured_headers(request)
}

/// The agent card at `path` below the upstream's base.
pub fn card(agent: &Agent, path: &str, headers: &HeaderMap) -> Result<RequestBuilder, ApiError> {
    let url = base_url(&agent.config.upstream)
        .join(path.trim_start_matches('/'))
        .map_err(|err| ApiError::bad_request(ErrorCode::InvalidPath, err.to_string()))?;
    let mut request = agent.client.get(url);
    for name in CARD_HEADERS {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    Ok(agent.with_configured_headers(request))
}

/// The upstream URL for a gateway path: the same path under the upstream.
fn upstream_url(agent: &Agent, path: &str, query: Option<&str>) -> Result<Url, ApiError> {
    let url = if path == "/" || path.is_empty() {
        Some(agent.config.upstream.clone())
    } else {
        base_url(&agent.config.upstream)
            .join(path.trim_start_matches('/'))
            .ok()
    };
    let Some(mut url) = url else {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidPath,
            "the path cannot be forwarded",
        ));
    };
    url.set_query(query);
    Ok(url)
}

/// A converted call: the gateway reads the answer itself, so it, not the
/// client, says what it accepts, and asks for no compression (the
/// converter needs plain bytes).
fn converted(agent: &Agent, mut request: RequestBuilder, headers: &HeaderMap) -> RequestBuilder {
    for (name, value) in headers {
        let negotiation = name == header::ACCEPT || name == header::ACCEPT_ENCODING;
        if forwardable(name) && !negotiation {
            request = request.header(name, value);
        }
    }
    request = request.header(header::ACCEPT_ENCODING, "identity");
    agent
        .with_configured_headers(request)
        .header(header::ACCEPT, CONVERTED_ACCEPT)
}

/// A 1.0 server takes a call without `A2A-Version` for a 0.3 one.
fn speaks_1_0(request: RequestBuilder) -> RequestBuilder {
    request.header("A2A-Version", "1.0")
}

/// 1.0 JSON-RPC method names are PascalCase (`SendStreamingMessage`), 0.3
/// ones are not (`message/stream`).
fn names_a_1_0_method(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("method")
                .and_then(Value::as_str)
                .map(|m| m.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .unwrap_or(false)
}
