//! The one header policy, for every call to an upstream (passthrough,
//! converted, `/agui`, cancel, card) and for every response passed back:
//!
//! - hop-by-hop headers, and every header a `Connection` (or
//!   `Proxy-Connection`) header names, never cross, either way;
//! - of the client's end-to-end headers, the agent's
//!   `forward_client_headers` decides what goes: `Authorization` and
//!   `Cookie` only when named, the rest when `*` (or its name) is listed;
//! - the credential that authenticated the caller *to the gateway* (an API
//!   key) never goes upstream;
//! - `X-Forwarded-For`, `-Proto`, `-Host` and `Via` are the gateway's own:
//!   incoming ones count only from a `trusted_proxies` peer (the edge
//!   strips them otherwise, see `Caller::from_request`);
//! - the agent's configured headers replace client headers of the same
//!   name, so a configured key is sent exactly once.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

/// The entries of a comma-separated list header, over all its lines,
/// trimmed, empty ones left out.
pub fn list_values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

pub use crate::config::forward_policy::{ForwardPolicy, TrustedProxies};
use crate::config::forward_policy::{HOP_BY_HOP, PATH_HEADERS};

/// Who sent a request, as the edge established it: the client's address
/// (through trusted proxies) and the forwarding headers to send upstream.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The client's address: the peer, or the nearest untrusted address in
    /// a trusted proxy's `X-Forwarded-For`.
    pub ip: IpAddr,
    forwarded_for: String,
    proto: String,
    host: Option<HeaderValue>,
    /// The headers that carry gateway credentials: they are for the
    /// gateway, never for an upstream.
    pub credentials: Vec<HeaderName>,
}

impl Caller {
    /// Reads the forwarding headers from a trusted peer and removes them
    /// from an untrusted one's request, so nothing later (the card's public
    /// URL, the upstream call) can be steered by them.
    pub fn from_request(
        peer: SocketAddr,
        own_proto: &str,
        headers: &mut HeaderMap,
        trusted: &TrustedProxies,
    ) -> Caller {
        let peer_ip = peer.ip();
        if trusted.contains(peer_ip) {
            let chain = list_values(headers, "x-forwarded-for");
            // From the nearest hop outwards: the first address not of a
            // trusted proxy is the client. An entry that is no address
            // ends the walk, at the last hop that could be read: what lies
            // beyond it is anybody's word.
            let mut ip = peer_ip;
            for entry in chain.iter().rev() {
                let Some(hop) = parse_hop(entry) else {
                    break;
                };
                ip = hop;
                if !trusted.contains(hop) {
                    break;
                }
            }
            let mut forwarded_for = chain.join(", ");
            if !forwarded_for.is_empty() {
                forwarded_for.push_str(", ");
            }
            forwarded_for.push_str(&peer_ip.to_string());
            let proto =
                first_value(headers, "x-forwarded-proto").unwrap_or_else(|| own_proto.to_owned());
            let host = headers
                .get("x-forwarded-host")
                .or_else(|| headers.get(header::HOST))
                .map(detached);
            Caller {
                ip,
                forwarded_for,
                proto,
                host,
                credentials: Vec::new(),
            }
        } else {
            for name in PATH_HEADERS {
                if name != "via" {
                    headers.remove(name);
                }
            }
            Caller {
                ip: peer_ip,
                forwarded_for: peer_ip.to_string(),
                proto: own_proto.to_owned(),
                host: headers.get(header::HOST).map(detached),
                credentials: Vec::new(),
            }
        }
    }
}

/// The first entry of a comma-separated header (the nearest proxy's
/// word for `X-Forwarded-Proto` and the like), if not empty.
pub fn first_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// One `X-Forwarded-For` entry: an address, maybe with a port
/// (`192.0.2.1:5678`, `[2001:db8::1]:443`).
fn parse_hop(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse() {
        return Some(ip);
    }
    if let Ok(socket) = entry.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    let (host, port) = entry.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

/// The names a `Connection` or `Proxy-Connection` header lists: hop-by-hop
/// for this one message.
fn connection_named(headers: &HeaderMap) -> Vec<HeaderName> {
    ["connection", "proxy-connection"]
        .iter()
        .flat_map(|name| headers.get_all(*name))
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect()
}

/// Whether a header may cross the gateway at all, either way. The length is
/// left out because the HTTP stack writes the length of what it sends.
fn crosses(name: &HeaderName, named: &[HeaderName]) -> bool {
    !HOP_BY_HOP.contains(&name.as_str()) && name != header::CONTENT_LENGTH && !named.contains(name)
}

/// Response headers that are the edge's to set, never an agent's: CORS
/// (the gateway's policy, or none), and what binds the gateway's whole
/// origin (HSTS, another service to use instead, wiping the site's data).
const EDGE_OWNED: [&str; 3] = ["strict-transport-security", "alt-svc", "clear-site-data"];

/// What a passed-through response may carry back from its agent.
pub struct ReturnPolicy<'a> {
    /// The agent may set cookies: its policy forwards the client's `Cookie`
    /// (without that, a cookie it set would never come back to it, and
    /// would only sit on the gateway's origin).
    pub cookies: bool,
    /// A `Location` or `Content-Location` on the agent's origin is moved
    /// to this base (the agent's address is not shown to clients).
    pub rewrite: &'a dyn Fn(&str) -> Option<String>,
}

/// The upstream's headers a passed-through response keeps: end-to-end
/// ones, less the edge's own (`Access-Control-*`, [`EDGE_OWNED`]) and
/// `Set-Cookie` unless the agent takes cookies; the agent's own URLs in
/// `Location` point at the gateway.
pub fn returned_headers(upstream: &HeaderMap, policy: &ReturnPolicy<'_>) -> HeaderMap {
    let named = connection_named(upstream);
    let mut headers = HeaderMap::new();
    for (name, value) in upstream {
        if !crosses(name, &named) || is_edge_owned(name) {
            continue;
        }
        if name == header::SET_COOKIE && !policy.cookies {
            continue;
        }
        if name == header::LOCATION || name == header::CONTENT_LOCATION {
            let moved = value
                .to_str()
                .ok()
                .and_then(|url| (policy.rewrite)(url))
                .and_then(|url| HeaderValue::from_str(&url).ok());
            if let Some(moved) = moved {
                headers.append(name.clone(), moved);
                continue;
            }
        }
        headers.append(name.clone(), value.clone());
    }
    headers
}

fn is_edge_owned(name: &HeaderName) -> bool {
    name.as_str().starts_with("access-control-") || EDGE_OWNED.contains(&name.as_str())
}

/// This gateway's entry in `Via` headers: `1.1 <gateway_id>`.
pub fn via_entry(gateway_id: &str) -> String {
    format!("1.1 {gateway_id}")
}

/// Whether `Via` shows the request already passed through this gateway.
pub fn has_looped(headers: &HeaderMap, gateway_id: &str) -> bool {
    headers
        .get_all("via")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|entry| entry.split_whitespace().nth(1) == Some(gateway_id))
}

/// The headers of an upstream call made for `caller`'s request: the client
/// headers the policy lets through, the forwarding headers, `Via`, then the
/// agent's configured headers in place of any client header of their name.
pub fn upstream_headers(
    incoming: &HeaderMap,
    caller: Option<&Caller>,
    policy: &ForwardPolicy,
    configured: &[(HeaderName, HeaderValue)],
    via: &str,
) -> HeaderMap {
    let named = connection_named(incoming);
    let mut out = HeaderMap::new();
    for (name, value) in incoming {
        let gateway_credential = caller.is_some_and(|c| c.credentials.contains(name));
        if crosses(name, &named)
            && !PATH_HEADERS.contains(&name.as_str())
            && !gateway_credential
            && policy.allows(name)
        {
            out.append(name.clone(), detached(value));
        }
    }
    own_headers(&mut out, incoming, caller, via);
    for (name, value) in configured {
        out.insert(name.clone(), value.clone());
    }
    out
}

/// A copy of a client's header value in an allocation of its own. hyper's
/// values are slices of the connection's 8 KiB read buffer: one clone kept
/// for a stream's life keeps that whole buffer, and hyper then allocates
/// another to watch the connection (measured: 8 KiB more per held stream).
pub fn detached(value: &HeaderValue) -> HeaderValue {
    match HeaderValue::from_bytes(value.as_bytes()) {
        Ok(mut copy) => {
            copy.set_sensitive(value.is_sensitive());
            copy
        }
        Err(_) => value.clone(),
    }
}

/// The headers of a call no client asked for (card refresh): `Via` and the
/// configured ones.
pub fn background_headers(configured: &[(HeaderName, HeaderValue)], via: &str) -> HeaderMap {
    upstream_headers(
        &HeaderMap::new(),
        None,
        &ForwardPolicy::default(),
        configured,
        via,
    )
}

fn own_headers(out: &mut HeaderMap, incoming: &HeaderMap, caller: Option<&Caller>, via: &str) {
    let mut via_value: Vec<&str> = incoming
        .get_all("via")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    via_value.push(via);
    if let Ok(value) = HeaderValue::from_str(&via_value.join(", ")) {
        out.insert("via", value);
    }
    let Some(caller) = caller else {
        return;
    };
    if let Ok(value) = HeaderValue::from_str(&caller.forwarded_for) {
        out.insert("x-forwarded-for", value);
    }
    if let Ok(value) = HeaderValue::from_str(&caller.proto) {
        out.insert("x-forwarded-proto", value);
    }
    if let Some(host) = &caller.host {
        out.insert("x-forwarded-host", host.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 1)
    }

    #[test]
    fn forwarded_values_do_not_keep_the_request_buffer() {
        // As hyper builds them: values are slices of one read buffer.
        let buffer = bytes::Bytes::from(b"GET / HTTP/1.1\r\nx-trace: abc\r\n\r\n".to_vec());
        let mut value = HeaderValue::from_maybe_shared(buffer.slice(25..28)).unwrap();
        value.set_sensitive(true);
        let copy = detached(&value);
        assert_eq!(copy, value);
        assert!(copy.is_sensitive());
        assert_ne!(copy.as_bytes().as_ptr(), value.as_bytes().as_ptr());

        let mut incoming = HeaderMap::new();
        incoming.insert("x-trace", value.clone());
        let out = upstream_headers(&incoming, None, &ForwardPolicy::default(), &[], "1.1 gw");
        let sent = out.get("x-trace").unwrap();
        assert_eq!(sent, "abc");
        assert_ne!(sent.as_bytes().as_ptr(), value.as_bytes().as_ptr());
    }

    #[test]
    fn configured_headers_replace_the_clients_and_hop_by_hop_ones_stay() {
        let mut incoming = map(&[
            ("x-api-key", "client"),
            ("authorization", "Bearer user"),
            ("cookie", "s=1"),
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("proxy-connection", "x-other-hop"),
            ("x-other-hop", "1"),
            ("te", "trailers"),
            ("x-request-id", "r1"),
            ("host", "gw"),
        ]);
        let caller = Caller::from_request(
            peer("203.0.113.9"),
            "http",
            &mut incoming,
            &TrustedProxies::loopback(),
        );
        let configured = vec![(
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_static("secret"),
        )];
        let out = upstream_headers(
            &incoming,
            Some(&caller),
            &ForwardPolicy::default(),
            &configured,
            "1.1 gw1",
        );
        let keys: Vec<_> = out.get_all("x-api-key").iter().collect();
        assert_eq!(keys, vec!["secret"]);
        assert_eq!(out["authorization"], "Bearer user");
        for gone in [
            "cookie",
            "connection",
            "x-secret-hop",
            "x-other-hop",
            "te",
            "host",
            "proxy-connection",
        ] {
            assert!(!out.contains_key(gone), "{gone}");
        }
        assert_eq!(out["x-request-id"], "r1");
        assert_eq!(out["x-forwarded-for"], "203.0.113.9");
        assert_eq!(out["x-forwarded-proto"], "http");
        assert_eq!(out["x-forwarded-host"], "gw");
        assert_eq!(out["via"], "1.1 gw1");
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_peers() {
        let spoofed = [
            ("x-forwarded-for", "10.9.9.9"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "evil"),
            ("host", "gw"),
        ];
        let mut untrusted = map(&spoofed);
        let caller = Caller::from_request(
            peer("203.0.113.9"),
            "http",
            &mut untrusted,
            &TrustedProxies::loopback(),
        );
        assert_eq!(caller.ip, "203.0.113.9".parse::<IpAddr>().unwrap());
        assert!(!untrusted.contains_key("x-forwarded-host"));
        let mut trusted = map(&spoofed);
        let caller = Caller::from_request(
            peer("127.0.0.1"),
            "http",
            &mut trusted,
            &TrustedProxies::loopback(),
        );
        assert_eq!(caller.ip, "10.9.9.9".parse::<IpAddr>().unwrap());
        let out = upstream_headers(
            &trusted,
            Some(&caller),
            &ForwardPolicy::default(),
            &[],
            "1.1 gw",
        );
        assert_eq!(out["x-forwarded-for"], "10.9.9.9, 127.0.0.1");
        assert_eq!(out["x-forwarded-proto"], "https");
        assert_eq!(out["x-forwarded-host"], "evil");
    }

    #[test]
    fn the_policy_chooses_credentials_and_others() {
        let incoming = map(&[
            ("authorization", "a"),
            ("cookie", "c"),
            ("x-one", "1"),
            ("x-two", "2"),
        ]);
        let policy = ForwardPolicy::parse(&["cookie".into(), "X-One".into()]).unwrap();
        let out = upstream_headers(&incoming, None, &policy, &[], "1.1 gw");
        assert!(!out.contains_key("authorization"));
        assert_eq!(out["cookie"], "c");
        assert_eq!(out["x-one"], "1");
        assert!(!out.contains_key("x-two"));
        assert!(ForwardPolicy::parse(&["connection".into()]).is_err());
        assert!(ForwardPolicy::parse(&["bad header".into()]).is_err());
    }

    #[test]
    fn the_client_is_the_nearest_untrusted_hop_and_garbage_ends_the_walk() {
        let trusted = TrustedProxies(vec!["10.0.0.0/8".parse().unwrap()]);
        let ip_of = |xff: &str| {
            let mut headers = map(&[("x-forwarded-for", xff)]);
            Caller::from_request(peer("10.0.0.1"), "http", &mut headers, &trusted).ip
        };
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(ip_of("6.6.6.6, 192.0.2.7, 10.0.0.9"), ip("192.0.2.7"));
        assert_eq!(ip_of("6.6.6.6, 192.0.2.7:5678"), ip("192.0.2.7"));
        assert_eq!(ip_of("[2001:db8::7]:443"), ip("2001:db8::7"));
        assert_eq!(ip_of("6.6.6.6, unknown, 10.0.0.9"), ip("10.0.0.9"));
        assert_eq!(ip_of("10.0.0.3, 10.0.0.9"), ip("10.0.0.3"));
    }

    #[test]
    fn loops_are_seen_by_id() {
        let headers = map(&[("via", "1.0 other, 1.1 gw-a (agui-gateway)")]);
        assert!(has_looped(&headers, "gw-a"));
        assert!(!has_looped(&headers, "gw-b"));
    }

    #[test]
    fn responses_lose_hop_by_hop_and_connection_named_headers() {
        let upstream = map(&[
            ("connection", "x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("content-type", "text/event-stream"),
            ("content-length", "5"),
        ]);
        let policy = ReturnPolicy {
            cookies: true,
            rewrite: &|_| None,
        };
        let back = returned_headers(&upstream, &policy);
        assert_eq!(back.len(), 1);
        assert_eq!(back["content-type"], "text/event-stream");
    }

    #[test]
    fn responses_lose_what_the_edge_owns_and_cookies_the_agent_never_gets() {
        let upstream = map(&[
            ("access-control-allow-origin", "https://evil.test"),
            ("access-control-allow-credentials", "true"),
            ("access-control-expose-headers", "x-secret"),
            (
                "strict-transport-security",
                "max-age=63072000; includeSubDomains",
            ),
            ("alt-svc", "h2=\"evil.test:443\""),
            ("clear-site-data", "\"*\""),
            ("set-cookie", "session=agent"),
            ("location", "http://10.1.2.3:9000/tasks/1"),
            ("content-location", "https://elsewhere.test/x"),
            ("x-request-id", "r-1"),
            ("www-authenticate", "Bearer"),
        ]);
        let rewrite = |url: &str| {
            url.strip_prefix("http://10.1.2.3:9000")
                .map(|rest| format!("https://gw.test/v1/agents/a{rest}"))
        };
        let policy = ReturnPolicy {
            cookies: false,
            rewrite: &rewrite,
        };
        let back = returned_headers(&upstream, &policy);
        let mut names: Vec<&str> = back.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "content-location",
                "location",
                "www-authenticate",
                "x-request-id"
            ]
        );
        assert_eq!(back["location"], "https://gw.test/v1/agents/a/tasks/1");
        assert_eq!(back["content-location"], "https://elsewhere.test/x");
        let with_cookies = ReturnPolicy {
            cookies: true,
            rewrite: &rewrite,
        };
        assert_eq!(
            returned_headers(&upstream, &with_cookies)["set-cookie"],
            "session=agent"
        );
    }
}
