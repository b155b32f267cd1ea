//! Which route a request names. The gateway routes on one canonical form
//! of the path (`canonical`, applied to every request before the router
//! sees it): percent-encoded unreserved characters decoded, once (RFC 3986
//! §6.2.2.2: `%2D` is `-`, `%6E` is `n`, in any case of the hex), so the
//! gateway and the agent, which decodes them too, read the same path.
//!
//! The card calls (`card_call`) are recognised in that form. Whatever an
//! agent might still read as a card path after decoding further (`%2F`,
//! `%252D`, at any depth `target` checks), after removing dot segments,
//! empty segments, `;` parameters or a trailing `/`, below a prefix (the
//! public card is served at the mount's root only), or in another case
//! (some frameworks match paths without case), is no card route of the
//! gateway's and is refused (`CardCall::Disguised`): never passed to the
//! agent, whose card it would return with the agent's own addresses.

use std::borrow::Cow;

use a2a_agui::ErrorCode;
use axum::extract::Request;
use axum::http::uri::{PathAndQuery, Uri};
use axum::http::{Method, StatusCode};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::error::ApiError;
use crate::upstream::target::{DECODE_DEPTH, percent_decode};

/// The well-known paths of an agent's public card (1.0's, 0.3's).
const CARD_FILES: [&str; 2] = ["agent-card.json", "agent.json"];
/// The REST extended card: 1.0's last segment, 0.3's path.
const EXTENDED_SEGMENT: &str = "extendedAgentCard";
const EXTENDED_V03: &str = "/v1/card";
/// The JSON-RPC methods of the extended card (1.0's, 0.3's).
const EXTENDED_METHODS: [&str; 2] = ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"];

/// RFC 3986 §2.3.
fn unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// `path` with every percent-encoded unreserved character decoded, once;
/// `None` when there is none (the common case: no copy).
pub fn canonical(path: &str) -> Option<String> {
    if !path.contains('%') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'%'
            && let Some(&[hi, lo]) = bytes.get(at + 1..at + 3).and_then(|p| p.first_chunk())
            && let Some(decoded) = hex(hi).zip(hex(lo)).map(|(hi, lo)| (hi << 4) | lo)
            && unreserved(decoded)
        {
            out.push(decoded);
            changed = true;
            at += 3;
            continue;
        }
        out.push(byte);
        at += 1;
    }
    changed.then(|| String::from_utf8(out).ok()).flatten()
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// The request with its path in canonical form, before the router reads
/// it (its query, scheme and authority as they came).
pub fn canonical_request(mut request: Request) -> Request {
    let Some(path) = canonical(request.uri().path()) else {
        return request;
    };
    let target = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = PathAndQuery::try_from(target).ok();
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

/// A card call, as the gateway serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardCall {
    /// `GET /.well-known/agent-card.json` (or `agent.json`) below the
    /// agent's mount.
    Public,
    /// The extended card (`GetExtendedAgentCard`,
    /// `agent/getAuthenticatedExtendedCard`, REST `GET …/extendedAgentCard`
    /// or 0.3's `GET …/v1/card`): where its answer holds the card.
    Extended(ExtendedCard),
    /// A path the gateway does not serve as a card that an agent may read
    /// as one: refused, never passed on.
    Disguised,
    /// A JSON-RPC batch asking for the extended card: its answer would
    /// hold the card where the gateway does not look.
    Batched,
}

impl CardCall {
    /// Why the gateway does not pass the call on: a path an agent may read
    /// as its card's, in a spelling the gateway serves no card at (404), a
    /// batch asking for the extended card (400).
    pub fn refusal(self) -> Option<ApiError> {
        match self {
            CardCall::Disguised => Some(ApiError::new(
                StatusCode::NOT_FOUND,
                ErrorCode::InvalidPath,
                "the path names an agent card only in another spelling: ask for \
                 /.well-known/agent-card.json (or the extended card's path) as it is",
            )),
            CardCall::Batched => Some(ApiError::bad_request(
                ErrorCode::InvalidRequest,
                "a JSON-RPC batch may not ask for the extended agent card: send it alone",
            )),
            CardCall::Public | CardCall::Extended(_) => None,
        }
    }
}

/// Where an extended card call's answer holds the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtendedCard {
    /// A JSON-RPC response: the card is its `result`.
    JsonRpc,
    /// The card is the whole body.
    Rest,
}

/// Which card call a request to an agent's routes is, if any: `path`
/// below the agent's mount, in canonical form.
pub fn card_call(method: &Method, path: &str, body: &[u8]) -> Option<CardCall> {
    let named = names_card(path);
    if *method == Method::GET && named.is_some() {
        return named.map(|route| match route {
            Route::Public => CardCall::Public,
            Route::Extended => CardCall::Extended(ExtendedCard::Rest),
        });
    }
    if named.is_none() && names_card_loosely(path) {
        return Some(CardCall::Disguised);
    }
    if *method != Method::POST {
        return None;
    }
    match asks_extended_card(body) {
        Asks::No => None,
        Asks::Single => Some(CardCall::Extended(ExtendedCard::JsonRpc)),
        Asks::InBatch => Some(CardCall::Batched),
    }
}

/// A card route, by its path's last segments.
#[derive(Clone, Copy)]
enum Route {
    Public,
    Extended,
}

/// The card route `path` names exactly: the public card at the root (the
/// card the gateway serves for the agent), the extended card below any
/// prefix (a tenant, the REST interface's path).
fn names_card(path: &str) -> Option<Route> {
    let public = path
        .strip_prefix("/.well-known/")
        .is_some_and(|file| CARD_FILES.contains(&file));
    if public {
        return Some(Route::Public);
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    (last == EXTENDED_SEGMENT || path.ends_with(EXTENDED_V03)).then_some(Route::Extended)
}

/// Whether `path`, at any percent-decoding depth (every byte decoded),
/// normalised as lenient servers do, names a card route in any case.
fn names_card_loosely(path: &str) -> bool {
    let mut current = path.as_bytes().to_vec();
    for _ in 0..=DECODE_DEPTH {
        if names_card_normalised(&current) {
            return true;
        }
        let decoded = percent_decode(&current);
        if decoded == current {
            return false;
        }
        current = decoded;
    }
    false
}

fn names_card_normalised(path: &[u8]) -> bool {
    let text = String::from_utf8_lossy(path).to_ascii_lowercase();
    let mut kept: Vec<&str> = Vec::new();
    for segment in text.split('/') {
        // `;` parameters go (as servlet containers drop them), then dot
        // segments and empty ones (merged slashes, a trailing `/`).
        let segment = segment.split(';').next().unwrap_or_default();
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            _ => kept.push(segment),
        }
    }
    let last = kept.last().copied().unwrap_or_default();
    let before = kept.len().checked_sub(2).and_then(|i| kept.get(i)).copied();
    (CARD_FILES.contains(&last) && before == Some(".well-known"))
        || last == EXTENDED_SEGMENT.to_ascii_lowercase()
        || kept.ends_with(&["v1", "card"])
}

/// Whether a JSON-RPC body asks for the extended card.
#[derive(Debug, PartialEq, Eq)]
enum Asks {
    No,
    Single,
    InBatch,
}

/// Every `method` member counts (an agent may read a repeated one's last
/// or its first), in a call or in each call of a batch. A body the
/// gateway's parser refuses but a lenient one might read (`NaN`, numbers
/// out of range) counts when its text names the method, escapes of ASCII
/// read.
fn asks_extended_card(body: &[u8]) -> Asks {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    match deserializer.deserialize_any(CallVisitor) {
        Ok(asks) => asks,
        Err(_) if names_method_in_text(body) => Asks::Single,
        Err(_) => Asks::No,
    }
}

fn names_method_in_text(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    let mut unescaped = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\\u") {
        unescaped.push_str(rest.get(..at).unwrap_or_default());
        let code = rest.get(at + 2..at + 6);
        match code.and_then(|c| u8::from_str_radix(c, 16).ok()) {
            Some(byte) if byte.is_ascii() => {
                unescaped.push(char::from(byte).to_ascii_lowercase());
                rest = rest.get(at + 6..).unwrap_or_default();
            }
            _ => {
                unescaped.push_str("\\u");
                rest = rest.get(at + 2..).unwrap_or_default();
            }
        }
    }
    unescaped.push_str(rest);
    EXTENDED_METHODS
        .iter()
        .any(|m| unescaped.contains(&m.to_ascii_lowercase()))
}

struct CallVisitor;

impl<'de> Visitor<'de> for CallVisitor {
    type Value = Asks;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC call or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Asks, A::Error> {
        let mut asks = Asks::No;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "method" {
                let method: Value = map.next_value()?;
                if method
                    .as_str()
                    .is_some_and(|m| EXTENDED_METHODS.contains(&m))
                {
                    asks = Asks::Single;
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(asks)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Asks, A::Error> {
        let mut asks = Asks::No;
        while let Some(call) = seq.next_element::<BatchEntry>()? {
            if call.0 != Asks::No {
                asks = Asks::InBatch;
            }
        }
        Ok(asks)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Asks, E> {
        Ok(Asks::No)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Asks, E> {
        Ok(Asks::No)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Asks, E> {
        Ok(Asks::No)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Asks, E> {
        Ok(Asks::No)
    }
    fn visit_str<E>(self, _: &str) -> Result<Asks, E> {
        Ok(Asks::No)
    }
    fn visit_unit<E>(self) -> Result<Asks, E> {
        Ok(Asks::No)
    }
}

/// One call of a batch (a batch in a batch is no call).
struct BatchEntry(Asks);

impl<'de> serde::Deserialize<'de> for BatchEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<BatchEntry, D::Error> {
        deserializer
            .deserialize_any(CallVisitor)
            .map(|asks| match asks {
                Asks::InBatch => BatchEntry(Asks::No),
                other => BatchEntry(other),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_escapes_are_decoded_once_and_nothing_else() {
        assert_eq!(canonical("/.well-known/agent-card.json"), None);
        assert_eq!(
            canonical("/.well-known/agent%2Dcard.jso%6E").as_deref(),
            Some("/.well-known/agent-card.json")
        );
        assert_eq!(canonical("/%2e%2E/%7e%5F").as_deref(), Some("/../~_"));
        // Reserved characters and `%` itself stay encoded: `%2F` is no
        // `/`, `%252D` is `%2D` one decoding further.
        assert_eq!(canonical("/a%2Fb%3F%23%25"), None);
        assert_eq!(canonical("/agent%252Dcard"), None);
        assert_eq!(canonical("/%2"), None);
        assert_eq!(canonical("/%zz%4"), None);
        assert_eq!(canonical("/%41%2F").as_deref(), Some("/A%2F"));
    }

    #[test]
    fn card_calls_in_every_spelling_are_served_or_refused() {
        let get = |path: &str| card_call(&Method::GET, path, b"");
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
            assert_eq!(get(path), Some(CardCall::Public), "{path}");
        }
        for path in ["/extendedAgentCard", "/acme/extendedAgentCard", "/v1/card"] {
            assert_eq!(
                get(path),
                Some(CardCall::Extended(ExtendedCard::Rest)),
                "{path}"
            );
        }
        for path in [
            "/.well-known%2Fagent-card.json",
            "/.well-known/agent%252Dcard.json",
            "/.well-known/agent%25252Dcard.json",
            "/.WELL-KNOWN/AGENT-CARD.JSON",
            "/.well-known/agent-card.json/",
            "/.well-known//agent-card.json",
            "/.well-known/x/../agent-card.json",
            "/.well-known/./agent.json",
            "/x/../.well-known/agent-card.json",
            "/rest/.well-known/agent-card.json",
            "/.well-known/agent-card.json;x=1",
            "/extendedagentcard",
            "/a/extendedAgentCar%2564",
            "/v1%2Fcard",
            "/V1/Card",
        ] {
            assert_eq!(get(path), Some(CardCall::Disguised), "{path}");
            assert_eq!(
                card_call(&Method::POST, path, b"{}"),
                Some(CardCall::Disguised),
                "{path}"
            );
        }
        for path in [
            "/",
            "/v1/message:stream",
            "/tasks/t1",
            "/agent-card.json",
            "/card",
        ] {
            assert_eq!(get(path), None, "{path}");
        }
        // The exact route by another method passes on as it came.
        assert_eq!(
            card_call(&Method::HEAD, "/.well-known/agent-card.json", b""),
            None
        );
    }

    #[test]
    fn the_extended_card_method_is_found_however_the_body_says_it() {
        let post = |body: &str| card_call(&Method::POST, "/", body.as_bytes());
        let extended = Some(CardCall::Extended(ExtendedCard::JsonRpc));
        assert_eq!(
            post(r#"{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}"#),
            extended
        );
        assert_eq!(
            post(r#"{"method":"agent/getAuthenticatedExtendedCard","id":1}"#),
            extended
        );
        assert_eq!(
            post(r#"{"meth\u006fd":"GetExtendedAgentCar\u0064"}"#),
            extended
        );
        // Repeated: whichever an agent reads.
        assert_eq!(
            post(r#"{"method":"GetExtendedAgentCard","method":"tasks/get"}"#),
            extended
        );
        assert_eq!(
            post(r#"{"method":"tasks/get","method":"GetExtendedAgentCard"}"#),
            extended
        );
        // Past any size: padding does not hide it.
        let padded = format!(
            r#"{{"method":"GetExtendedAgentCard","pad":"{}"}}"#,
            "x".repeat(200_000)
        );
        assert_eq!(post(&padded), extended);
        // What Python's parser reads and serde's does not.
        assert_eq!(
            post(r#"{"method":"GetExtendedAgentCard","x":NaN}"#),
            extended
        );
        assert_eq!(
            post(r#"[{"method":"tasks/get"},{"method":"GetExtendedAgentCard"}]"#),
            Some(CardCall::Batched)
        );
        for body in [
            r#"{"method":"message/stream","params":{"method":"GetExtendedAgentCard"}}"#,
            r#"{"method":"tasks/get"}"#,
            r#"[{"method":"tasks/get"}]"#,
            r#"[[{"method":"GetExtendedAgentCard"}]]"#,
            "not json",
            "",
            "7",
        ] {
            assert_eq!(post(body), None, "{body}");
        }
    }
}
