//! The agent card, served through the gateway: every interface URL points at
//! the gateway (so A2A clients and the a2a-tck keep talking through it), and
//! the AG-UI capability is declared.

use a2a_agui::ErrorCode;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use url::Url;

use super::error::ApiError;
use super::paths::ExtendedCard;
use crate::agui::extension;
use crate::config::Config;
use crate::signing::{Policy, Signer, Verdict};
use crate::upstream::call::Called;
use crate::upstream::headers::{first_value, list_values};
use crate::upstream::outbound::{self, Forwarded};
use crate::upstream::target::base_url;
use crate::upstream::{Agent, CARD_ELEMENTS, CardError, UNTRUSTED_CARD, answer};

/// The extension URI announcing AG-UI output (the one Hector declared).
pub const AGUI_EXTENSION_URI: &str = "https://ag-ui.org/protocol/v1";

/// The gateway's public base URL: configured, or from the request
/// (`X-Forwarded-Proto`, `X-Forwarded-Host`, `X-Forwarded-Prefix`, then the
/// request target's own authority when it came in absolute form, which
/// RFC 9112 3.2.2 says wins over `Host`, then `Host`; the edge has removed
/// the forwarding headers of a peer not in `trusted_proxies`). A host or
/// scheme that is not one (`evil/x?`, `javascript`) is not used.
pub fn public_base(config: &Config, uri: &Uri, headers: &HeaderMap) -> String {
    if let Some(url) = &config.public_url {
        return url.as_str().trim_end_matches('/').to_owned();
    }
    let text = |name: &str| first_value(headers, name);
    let scheme = text("x-forwarded-proto")
        .map(|proto| proto.to_ascii_lowercase())
        .filter(|proto| proto == "http" || proto == "https")
        .or_else(|| uri.scheme_str().map(str::to_owned))
        .unwrap_or_else(|| "http".to_owned());
    let host = text("x-forwarded-host")
        .filter(|host| is_authority(host))
        .or_else(|| {
            uri.authority()
                .map(|a| a.as_str().to_owned())
                .filter(|host| is_authority(host))
        })
        .or_else(|| text(header::HOST.as_str()).filter(|host| is_authority(host)))
        .unwrap_or_else(|| config.listen.to_string());
    let prefix = text("x-forwarded-prefix").unwrap_or_default();
    let prefix = prefix.trim_end_matches('/');
    let prefix = if prefix.is_empty() || prefix.starts_with('/') {
        prefix.to_owned()
    } else {
        format!("/{prefix}")
    };
    format!("{scheme}://{host}{prefix}")
}

/// A host and optional port, nothing else (no user, path or query).
fn is_authority(text: &str) -> bool {
    text.parse::<axum::http::uri::Authority>()
        .is_ok_and(|authority| !authority.as_str().contains('@'))
}

/// Whether the served card names the gateway by what the request said
/// (no `public_url`): then caches must keep one copy per host.
pub fn varies_by_request(config: &Config) -> bool {
    config.public_url.is_none()
}

/// The card at `path` (one of the well-known paths) for the agent mounted
/// at `mount` on the gateway.
pub async fn serve(
    (config, signer): (&Config, Option<&Signer>),
    agent: &Agent,
    path: &str,
    mount: &str,
    (uri, headers): (&Uri, &HeaderMap),
    forwarded: &Forwarded,
) -> Result<Response, ApiError> {
    let gateway_base = format!("{}{mount}", public_base(config, uri, headers));
    let upstream_base = base_url(&agent.config.upstream);
    let (request, span) = outbound::card(agent, path, forwarded)?;
    let fetched = agent.read_card(request).await;
    match &fetched {
        Ok(Some(_)) => {}
        Ok(None) => span.fail("no card"),
        Err(_) => span.fail("the card could not be read"),
    }
    // The call is over: the fallback below is the discovered card (whose
    // fetch, if it needs one, is the gateway's own and not the client's).
    drop(span);
    let (mut card, upstream_headers) = match fetched {
        Ok(Some((card, headers))) => (card, Some(headers)),
        Err(err @ CardError::TooLarge(_)) => return Err(unavailable(agent, &err.to_string())),
        // The card may live at the origin rather than under the upstream's
        // path: fall back to the one card discovery found.
        Ok(None) | Err(_) => match agent.current_card().await {
            Some(info) => (info.card.clone(), None),
            None => return Err(unavailable(agent, "the upstream serves no agent card")),
        },
    };
    let public = public_base(config, uri, headers);
    let bases = (&upstream_base, gateway_base.as_str(), public.as_str());
    // The upstream's ETag names the body it sent, not the rewritten one:
    // the gateway's own tag is a hash of what it serves (the same on every
    // replica for the same card and address), taken before its signature
    // (which that content and the key decide; a randomised one would
    // change the tag on every request).
    let mut etag = String::new();
    present(
        &mut card,
        (config, agent, signer),
        bases,
        |unsigned, signed| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            unsigned.to_string().hash(&mut hasher);
            signed.then(|| signer.map(Signer::kid)).hash(&mut hasher);
            etag = format!("W/\"{:016x}\"", hasher.finish());
        },
    )?;
    let body = card.to_string();
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    if let Ok(value) = header::HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    if let Some(upstream_headers) = upstream_headers {
        for name in [header::VARY, header::CACHE_CONTROL, header::LAST_MODIFIED] {
            if let Some(value) = upstream_headers.get(&name) {
                response.headers_mut().insert(name, value.clone());
            }
        }
    }
    if varies_by_request(config) {
        vary_by_host(response.headers_mut());
    }
    Ok(response)
}

/// A card whose URLs come from the request's host: `Vary` names what it
/// was built from, and a shared cache may not keep it (`private`, the
/// agent's `max-age` kept): a host that a cache keys differently (an
/// absolute-form target) must not poison another client's copy.
pub fn vary_by_host(headers: &mut HeaderMap) {
    let mut vary = list_values(headers, header::VARY.as_str());
    for name in [
        "Host",
        "X-Forwarded-Host",
        "X-Forwarded-Proto",
        "X-Forwarded-Prefix",
    ] {
        if !vary
            .iter()
            .any(|v| v.eq_ignore_ascii_case(name) || v == "*")
        {
            vary.push(name.to_owned());
        }
    }
    if let Ok(value) = HeaderValue::from_str(&vary.join(", ")) {
        headers.insert(header::VARY, value);
    }
    let max_age = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.split(',')
                .filter_map(|d| d.trim().strip_prefix("max-age="))
                .find_map(|age| age.trim().parse::<u64>().ok())
        });
    let no_store = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("no-store"));
    let control = match max_age {
        _ if no_store => "private, no-store".to_owned(),
        Some(age) => format!("private, max-age={age}"),
        None => "private, no-cache".to_owned(),
    };
    if let Ok(value) = HeaderValue::from_str(&control) {
        headers.insert(header::CACHE_CONTROL, value);
    }
}

fn unavailable(agent: &Agent, message: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        ErrorCode::UpstreamCardUnavailable,
        format!("{message} (agent {:?})", agent.name()),
    )
}

/// A card of `agent` as the gateway serves it: checked against its
/// signature policy (and narrowed to what its signature covers),
/// rewritten (`rewrite`), then signed by the gateway unless the agent's
/// own signatures were checked and failed (it does not launder those),
/// the card's addresses come from the request (`public_url` unset: a
/// signed card naming whatever host a client sent would vouch for any
/// host), it is no agent card by its shape (`is_card`: an agent echoing a
/// client's text on a card route), or it names an address that is not the
/// gateway's once rewritten. `unsigned` sees the card between the two, and
/// whether it will be signed. `bases`: the agent's base, the gateway's for
/// this agent, the gateway's public one.
fn present(
    card: &mut Value,
    (config, agent, signer): (&Config, &Agent, Option<&Signer>),
    (upstream_base, gateway_base, public): (&Url, &str, &str),
    unsigned: impl FnOnce(&Value, bool),
) -> Result<(), ApiError> {
    let verdict = agent.verify_card(card);
    if agent.config.card_signatures == Policy::Require
        && !matches!(verdict, Some(Verdict::Verified(_)))
    {
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            ErrorCode::UpstreamCardUntrusted,
            UNTRUSTED_CARD,
        ));
    }
    let shaped = is_card(card);
    let mut ours = rewrite(card, upstream_base, gateway_base);
    if agent.grpc_channel().is_some() {
        // gRPC clients have no path prefix: only the default agent, at
        // the root, is reached over gRPC. The agent's own addresses (its
        // gRPC `host:port`) are never shown.
        let mount = gateway_base.strip_prefix(public).unwrap_or(gateway_base);
        let grpc = a2a_grpc::cards::grpc_address(public, mount);
        through_gateway(card, gateway_base, grpc.as_deref());
        ours = true;
    }
    let signer = signer.filter(|_| {
        shaped && ours && !matches!(verdict, Some(Verdict::Invalid)) && !varies_by_request(config)
    });
    unsigned(card, signer.is_some());
    if let Some(signer) = signer {
        signer.sign(card, Some(&format!("{public}{CARD_KEYS_PATH}")));
    }
    Ok(())
}

/// The agent's extended card, fetched with the request's headers (the
/// caller's, as the policy forwards them, and the agent's token) and
/// served as the public card is: rewritten and signed (a 1.0 interface's
/// `tenant` is kept, only its URL changes). Any other answer (an error,
/// a refusal, JSON that is no card) goes back as it came, unsigned.
pub async fn serve_extended(
    (config, signer): (&Config, Option<&Signer>),
    agent: &Agent,
    kind: ExtendedCard,
    (method, url, body): (Method, Url, axum::body::Bytes),
    (uri, headers, mount): (&Uri, &HeaderMap, &str),
    forwarded: &Forwarded,
) -> Result<Response, ApiError> {
    let deadline = Some(agent.card_timeout());
    let Called { answer, span } = agent.pass((method, url), forwarded, body, deadline).await;
    let response = answer.map_err(|_| {
        span.fail("unreachable");
        unavailable(agent, "the extended agent card request failed")
    })?;
    let status = response.status;
    span.answered(status);
    let answer = agent
        .read_answer(response)
        .await
        .map_err(|err| unavailable(agent, &err.to_string()))?;
    let mut document = match answer::parse(&answer, CARD_ELEMENTS) {
        Some(document) => document,
        // JSON of more elements than a card holds: not shown as it came
        // (it would not be readdressed), not built either.
        None if serde_json::from_slice::<IgnoredAny>(&answer).is_ok() => {
            return Err(unavailable(agent, "the extended agent card is too large"));
        }
        None => return Ok((status, answer.into_bytes()).into_response()),
    };
    let public = public_base(config, uri, headers);
    let gateway_base = format!("{public}{mount}");
    let upstream_base = base_url(&agent.config.upstream);
    let bases = (&upstream_base, gateway_base.as_str(), public.as_str());
    let card = match kind {
        ExtendedCard::JsonRpc => document.get_mut("result"),
        ExtendedCard::Rest => Some(&mut document),
    };
    if status.is_success()
        && let Some(card) = card.filter(|c| is_card(c))
    {
        present(card, (config, agent, signer), bases, |_, _| {})?;
    }
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        document.to_string(),
    )
        .into_response();
    if varies_by_request(config) {
        vary_by_host(response.headers_mut());
    }
    Ok(response)
}

/// Where the gateway publishes its card-signing key (a JWKS document).
pub const CARD_KEYS_PATH: &str = "/v1/card-keys";

/// Whether a JSON value is an agent card by its shape (what both 0.3
/// and 1.0 require): a `name`, and its interfaces (1.0's
/// `supportedInterfaces`, each with a `url`, or 0.3's `url`).
pub fn is_card(card: &Value) -> bool {
    let named = card.get("name").and_then(Value::as_str).is_some();
    let interfaces = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .is_some_and(|list| {
            !list.is_empty()
                && list
                    .iter()
                    .all(|i| i.get("url").is_some_and(Value::is_string))
        });
    named && (interfaces || card.get("url").is_some_and(Value::is_string))
}

/// Points every interface URL at the gateway and declares AG-UI; whether
/// every interface URL is the gateway's afterwards (one on another
/// origin stays as it is). The agent's signatures go: they were made over
/// the URLs replaced here and would not verify (a client that checks them
/// would refuse the agent), and one that did would vouch for a card the
/// agent never wrote.
pub fn rewrite(card: &mut Value, upstream_base: &Url, gateway_base: &str) -> bool {
    if let Some(object) = card.as_object_mut() {
        object.remove("signatures");
    }
    let gateway = format!("{}/", gateway_base.trim_end_matches('/'));
    let mut ours = true;
    let mut rewrite_field = |value: &mut Value| {
        let moved = value
            .as_str()
            .and_then(|u| rewrite_url(u, upstream_base, gateway_base));
        match moved {
            Some(new) => *value = Value::from(new),
            None => {
                let text = value.as_str().unwrap_or_default();
                ours &= text == gateway_base || text.starts_with(&gateway);
            }
        }
    };
    if let Some(url) = card.get_mut("url") {
        rewrite_field(url);
    }
    for list in ["additionalInterfaces", "supportedInterfaces"] {
        if let Some(interfaces) = card.get_mut(list).and_then(Value::as_array_mut) {
            for iface in interfaces {
                if let Some(url) = iface.get_mut("url") {
                    rewrite_field(url);
                }
            }
        }
    }
    if !card["capabilities"].is_object() {
        card["capabilities"] = json!({});
    }
    let capabilities = &mut card["capabilities"];
    if !capabilities["extensions"].is_array() {
        capabilities["extensions"] = json!([]);
    }
    if let Some(extensions) = capabilities["extensions"].as_array_mut() {
        if !extensions.iter().any(|e| e["uri"] == AGUI_EXTENSION_URI) {
            extensions.push(json!({
                "uri": AGUI_EXTENSION_URI,
                "description": "AG-UI events over SSE: send Accept: application/x-agui-events or ?format=agui on a streaming call, or POST a RunAgentInput to /agui",
                "required": false,
            }));
        }
        // What the gateway carries to the agent from an AG-UI client.
        if !extensions.iter().any(|e| e["uri"] == extension::URI) {
            extensions.push(extension::card_entry());
        }
    }
    ours
}

/// A gRPC agent's card, as the gateway serves it: the gateway's JSON-RPC
/// endpoint first (the gateway answers JSON-RPC for it; 1.0 in
/// `supportedInterfaces`, and 0.3's `url` and preferred transport where
/// the card has 0.3's fields), then its gRPC interfaces at the gateway's
/// gRPC address (`grpc`, passed through as they came), or none where gRPC
/// cannot reach it. The agent's interfaces of other bindings go: the
/// gateway reaches it over gRPC only, and they name addresses of the
/// agent's no client is to be sent to. The JSON twin of
/// `a2a_grpc::cards`, for the card a gRPC client reads.
pub fn through_gateway(card: &mut Value, gateway_base: &str, grpc: Option<&str>) {
    let gateway = format!("{}/", gateway_base.trim_end_matches('/'));
    let kept = |iface: &mut Value, key: &str| {
        let is_grpc = iface[key]
            .as_str()
            .is_some_and(|binding| binding.eq_ignore_ascii_case("GRPC"));
        match (is_grpc, grpc) {
            (true, Some(address)) => {
                iface["url"] = json!(address);
                true
            }
            _ => false,
        }
    };
    if let Some(interfaces) = card
        .get_mut("supportedInterfaces")
        .and_then(Value::as_array_mut)
    {
        interfaces.retain_mut(|iface| kept(iface, "protocolBinding"));
        interfaces.insert(
            0,
            json!({ "url": gateway, "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }),
        );
    }
    if let Some(interfaces) = card
        .get_mut("additionalInterfaces")
        .and_then(Value::as_array_mut)
    {
        interfaces.retain_mut(|iface| kept(iface, "transport"));
        interfaces.insert(0, json!({ "url": gateway, "transport": "JSONRPC" }));
    }
    if card.get("url").is_some() || card.get("preferredTransport").is_some() {
        card["url"] = json!(gateway);
        card["preferredTransport"] = json!("JSONRPC");
    }
}

fn is_loopback(host: &str) -> bool {
    matches!(
        host,
        "localhost" | "127.0.0.1" | "[::1]" | "::1" | "0.0.0.0"
    )
}

/// A URL on the upstream's origin, moved to the gateway's base with the
/// path below the upstream's base kept. Other origins are left alone.
pub fn rewrite_url(url: &str, upstream_base: &Url, gateway_base: &str) -> Option<String> {
    let parsed = Url::parse(url).ok()?;
    let same_host = match (parsed.host_str(), upstream_base.host_str()) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b) || (is_loopback(a) && is_loopback(b)),
        _ => false,
    };
    if !same_host
        || parsed.port_or_known_default() != upstream_base.port_or_known_default()
        || parsed.scheme() != upstream_base.scheme()
    {
        return None;
    }
    let base_path = upstream_base.path();
    let path = parsed.path();
    let rest = match path.strip_prefix(base_path.trim_end_matches('/')) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    let rest = if rest.is_empty() { "/" } else { rest };
    let mut new = format!("{}{rest}", gateway_base.trim_end_matches('/'));
    if let Some(query) = parsed.query() {
        new.push('?');
        new.push_str(query);
    }
    Some(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_agents_card_names_the_gateway_only() {
        let mut card = json!({
            "name": "both",
            "url": "http://10.0.0.7:8000/",
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [
                { "url": "http://10.0.0.7:8000/", "transport": "JSONRPC" },
                { "url": "10.0.0.7:50051", "transport": "GRPC" },
            ],
            "supportedInterfaces": [
                { "url": "http://10.0.0.7:8000/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
                { "url": "10.0.0.7:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0" },
                { "url": "http://10.0.0.7:8000/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0" },
            ],
        });
        let mut named = card.clone();
        through_gateway(&mut card, "http://gw:8080", Some("gw:8080"));
        assert!(!card.to_string().contains("10.0.0.7"), "{card}");
        assert_eq!(card["url"], "http://gw:8080/");
        assert_eq!(card["preferredTransport"], "JSONRPC");
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                { "url": "http://gw:8080/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
                { "url": "gw:8080", "protocolBinding": "GRPC", "protocolVersion": "1.0" },
            ])
        );
        assert_eq!(
            card["additionalInterfaces"],
            json!([
                { "url": "http://gw:8080/", "transport": "JSONRPC" },
                { "url": "gw:8080", "transport": "GRPC" },
            ])
        );
        // A named agent: no gRPC address, so no gRPC interface either.
        through_gateway(&mut named, "http://gw:8080/v1/agents/x", None);
        assert!(!named.to_string().contains("10.0.0.7"), "{named}");
        assert!(!named.to_string().contains("GRPC"), "{named}");
    }

    #[test]
    fn urls_move_to_the_gateway_keeping_their_path() {
        let upstream = Url::parse("http://127.0.0.1:9999/").unwrap();
        let gw = "https://gw.example.com/prefix/v1/agents/a";
        assert_eq!(
            rewrite_url("http://127.0.0.1:9999/", &upstream, gw).unwrap(),
            "https://gw.example.com/prefix/v1/agents/a/"
        );
        assert_eq!(
            rewrite_url("http://localhost:9999/rest", &upstream, gw).unwrap(),
            "https://gw.example.com/prefix/v1/agents/a/rest"
        );
        assert_eq!(rewrite_url("http://other:9999/rest", &upstream, gw), None);
        assert_eq!(rewrite_url("http://127.0.0.1:9998/", &upstream, gw), None);
        let prefixed = Url::parse("http://127.0.0.1:9998/a2a/").unwrap();
        assert_eq!(
            rewrite_url("http://127.0.0.1:9998/a2a/jsonrpc", &prefixed, "http://gw").unwrap(),
            "http://gw/jsonrpc"
        );
    }

    #[test]
    fn only_a_card_shaped_answer_naming_the_gateway_alone_is_signable() {
        let one = json!({ "name": "a", "supportedInterfaces": [{ "url": "http://127.0.0.1:1/" }] });
        let old = json!({ "name": "a", "url": "http://127.0.0.1:1/" });
        assert!(is_card(&one) && is_card(&old));
        for echo in [
            json!({ "echo": "text" }),
            json!({ "name": "a" }),
            json!({ "name": 7, "url": "http://x/" }),
            json!({ "name": "a", "supportedInterfaces": [] }),
            json!({ "name": "a", "supportedInterfaces": [{ "uri": "x" }] }),
            json!("a card"),
        ] {
            assert!(!is_card(&echo), "{echo}");
        }
        let upstream = Url::parse("http://127.0.0.1:1").unwrap();
        let mut foreign = json!({ "name": "a", "url": "http://127.0.0.1:1/",
            "additionalInterfaces": [{ "url": "https://attacker.example/" }] });
        assert!(!rewrite(&mut foreign, &upstream, "http://gw:8080"));
        assert_eq!(foreign["url"], "http://gw:8080/");
    }

    #[test]
    fn every_interface_is_rewritten_and_agui_declared_once() {
        let mut card = json!({
            "url": "http://127.0.0.1:1/",
            "additionalInterfaces": [{ "url": "http://127.0.0.1:1/rest", "transport": "HTTP+JSON" }],
            "supportedInterfaces": [{ "url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC" }],
            "capabilities": { "streaming": true, "extensions": [{ "uri": "x" }] }
        });
        let upstream = Url::parse("http://127.0.0.1:1").unwrap();
        assert!(rewrite(&mut card, &upstream, "http://gw:8080"));
        assert!(rewrite(&mut card, &upstream, "http://gw:8080"));
        assert_eq!(card["url"], "http://gw:8080/");
        assert_eq!(
            card["additionalInterfaces"][0]["url"],
            "http://gw:8080/rest"
        );
        assert_eq!(card["supportedInterfaces"][0]["url"], "http://gw:8080/");
        // The agent's own, AG-UI, and the AG-UI input extension: once each.
        let uris: Vec<&str> = card["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["uri"].as_str())
            .collect();
        assert_eq!(uris, ["x", AGUI_EXTENSION_URI, extension::URI]);
    }
}
