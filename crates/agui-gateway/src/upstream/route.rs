//! How the gateway reaches an agent for the calls it makes itself: the
//! binding, the address, the dialect and the mode, chosen from the card's
//! interfaces in the card's order of preference, among those the gateway
//! speaks on an origin it may call, under what the configuration pins.

use a2a_grpc::{GrpcAgent, Service};
use serde_json::Value;
use url::Url;

use crate::config::{A2aVersion, AgentConfig, Binding, Mode};

/// An interface a card lists, as the gateway would call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub binding: Binding,
    pub url: Url,
    /// Never `Auto`.
    pub version: A2aVersion,
}

/// The way runs and the gateway's other calls reach an agent.
#[derive(Clone)]
pub struct Route {
    pub interface: Interface,
    pub mode: Mode,
    /// The channel of a gRPC route (connected on first use).
    pub grpc: Option<GrpcAgent>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("interface", &self.interface)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Route {
    pub fn binding(&self) -> Binding {
        self.interface.binding
    }

    pub fn version(&self) -> A2aVersion {
        self.interface.version
    }

    pub fn url(&self) -> &Url {
        &self.interface.url
    }
}

/// The interfaces `card` lists that the gateway speaks, in the card's
/// order of preference: 1.0's `supportedInterfaces`, then 0.3's `url`
/// (in its `preferredTransport`) and `additionalInterfaces`. HTTP+JSON is
/// spoken in 1.0 only (0.3's is another JSON). A gRPC address without a
/// scheme (`host:port`, as the SDKs write it) is over TLS when the agent's
/// configured upstream is.
pub fn interfaces(card: &Value, upstream: &Url) -> Vec<Interface> {
    let mut found = Vec::new();
    let tls = matches!(upstream.scheme(), "https" | "grpcs");
    for iface in card["supportedInterfaces"].as_array().into_iter().flatten() {
        let version = match iface["protocolVersion"].as_str().unwrap_or("1.0") {
            v if v.starts_with("0.") => A2aVersion::V03,
            _ => A2aVersion::V10,
        };
        push(
            &mut found,
            &iface["protocolBinding"],
            &iface["url"],
            version,
            tls,
        );
    }
    let preferred = card
        .get("preferredTransport")
        .cloned()
        .unwrap_or_else(|| Value::from("JSONRPC"));
    push(&mut found, &preferred, &card["url"], A2aVersion::V03, tls);
    for iface in card["additionalInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        push(
            &mut found,
            &iface["transport"],
            &iface["url"],
            A2aVersion::V03,
            tls,
        );
    }
    found
}

fn push(found: &mut Vec<Interface>, binding: &Value, url: &Value, version: A2aVersion, tls: bool) {
    let Some(binding) = binding.as_str().and_then(Binding::of_card) else {
        return;
    };
    if binding == Binding::HttpJson && version == A2aVersion::V03 {
        return;
    }
    let Some(url) = url.as_str().and_then(|url| address(binding, url, tls)) else {
        return;
    };
    let interface = Interface {
        binding,
        url,
        version,
    };
    if !found.contains(&interface) {
        found.push(interface);
    }
}

/// An interface's URL as the gateway calls it: HTTP(S) for every binding
/// (a gRPC channel too), with a host.
fn address(binding: Binding, url: &str, tls: bool) -> Option<Url> {
    let url = match (binding, url.contains("://")) {
        (Binding::Grpc, false) => {
            let scheme = if tls { "https" } else { "http" };
            Url::parse(&format!("{scheme}://{url}")).ok()?
        }
        _ => Url::parse(url).ok()?,
    };
    let scheme = match (binding, url.scheme()) {
        (_, "http" | "https") => url.scheme().to_owned(),
        (Binding::Grpc, "grpc") => "http".to_owned(),
        (Binding::Grpc, "grpcs") => "https".to_owned(),
        _ => return None,
    };
    url.host_str()?;
    let mut url = url;
    if url.scheme() != scheme {
        // `grpc://h:p` → `http://h:p`: the port stays as written.
        url = Url::parse(&format!("{scheme}{}", &url.as_str()[url.scheme().len()..])).ok()?;
    }
    Some(url)
}

/// The interface runs take: the first of `card`'s that the configuration
/// allows (its pinned binding and version) on an origin `may_call`
/// accepts; else the configured upstream itself, in the pinned binding
/// (JSON-RPC when none) and version (0.3 for JSON-RPC, else 1.0, when
/// none).
pub fn choose(
    card: Option<&Value>,
    config: &AgentConfig,
    may_call: impl Fn(&Url) -> bool,
) -> Interface {
    let pinned_grpc_url = matches!(config.upstream.scheme(), "grpc" | "grpcs");
    let binding = match pinned_grpc_url {
        // `grpc://` pins the binding as `binding = "grpc"` does.
        true => Binding::Grpc,
        false => config.reach.binding.unwrap_or(Binding::JsonRpc),
    };
    // What the card says of the binding the fallback speaks: its newest
    // version, though no interface of it may be called where it says.
    let mut card_version = None;
    if !pinned_grpc_url && let Some(card) = card {
        let listed = interfaces(card, &config.upstream);
        let chosen = listed.iter().find(|iface| {
            config.reach.binding.is_none_or(|pin| pin == iface.binding)
                && (config.a2a_version == A2aVersion::Auto || config.a2a_version == iface.version)
                && may_call(&iface.url)
        });
        if let Some(chosen) = chosen {
            return chosen.clone();
        }
        card_version = listed
            .iter()
            .filter(|iface| iface.binding == binding)
            .map(|iface| iface.version)
            .max_by_key(|version| *version == A2aVersion::V10);
    }
    let version = match (config.a2a_version, card_version, binding) {
        (A2aVersion::Auto, Some(version), _) => version,
        (A2aVersion::Auto, None, Binding::JsonRpc) => A2aVersion::V03,
        (A2aVersion::Auto, None, _) => A2aVersion::V10,
        (pinned, _, _) => pinned,
    };
    let url = match binding {
        Binding::Grpc => address(Binding::Grpc, config.upstream.as_str(), false),
        _ => None,
    };
    Interface {
        binding,
        url: url.unwrap_or_else(|| config.upstream.clone()),
        version,
    }
}

/// Streaming, unless the configuration pins a mode or the card says
/// `capabilities.streaming: false` (a card that says nothing is taken to
/// stream, as agents did before the field).
pub fn mode(card: Option<&Value>, config: &AgentConfig) -> Mode {
    if let Some(mode) = config.reach.mode {
        return mode;
    }
    let streams = card
        .and_then(|card| card.pointer("/capabilities/streaming"))
        .and_then(Value::as_bool);
    match streams {
        Some(false) => Mode::Poll,
        _ => Mode::Stream,
    }
}

/// The gRPC service an interface's version is.
pub fn service(version: A2aVersion) -> Service {
    match version {
        A2aVersion::V03 => Service::V03,
        _ => Service::V10,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(upstream: &str) -> AgentConfig {
        AgentConfig::new("a", Url::parse(upstream).unwrap())
    }

    #[test]
    fn the_card_order_decides_among_what_is_spoken_and_allowed() {
        let card = json!({
            "url": "http://a/", "protocolVersion": "0.3",
            "capabilities": { "streaming": false },
            "supportedInterfaces": [
                { "url": "http://elsewhere/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
                { "url": "http://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3" },
                { "url": "http://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0" },
                { "url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }]
        });
        let config = config("http://a/");
        let own = |url: &Url| url.origin() == config.upstream.origin();
        let chosen = choose(Some(&card), &config, own);
        assert_eq!(chosen.binding, Binding::HttpJson);
        assert_eq!(chosen.url.as_str(), "http://a/rest");
        assert_eq!(mode(Some(&card), &config), Mode::Poll);
        let mut pinned = config.clone();
        pinned.reach.binding = Some(Binding::JsonRpc);
        let chosen = choose(Some(&card), &pinned, own);
        assert_eq!(
            (chosen.binding, chosen.version),
            (Binding::JsonRpc, A2aVersion::V10)
        );
        pinned.a2a_version = A2aVersion::V03;
        assert_eq!(choose(Some(&card), &pinned, own).url.as_str(), "http://a/");
    }

    #[test]
    fn grpc_addresses_without_a_scheme_follow_the_upstream() {
        let card = json!({ "supportedInterfaces": [
            { "url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0" }] });
        let plain = interfaces(&card, &Url::parse("http://127.0.0.1:8080/").unwrap());
        assert_eq!(plain[0].url.as_str(), "http://127.0.0.1:50051/");
        let tls = interfaces(&card, &Url::parse("https://agent.example/").unwrap());
        assert_eq!(tls[0].url.as_str(), "https://127.0.0.1:50051/");
        let old = json!({ "url": "grpcs://agent.example:443", "preferredTransport": "GRPC" });
        let found = interfaces(&old, &Url::parse("http://agent.example/").unwrap());
        assert_eq!(
            (found[0].binding, found[0].version, found[0].url.scheme()),
            (Binding::Grpc, A2aVersion::V03, "https")
        );
    }

    #[test]
    fn a_card_naming_only_addresses_elsewhere_still_says_its_version() {
        // An agent behind a proxy whose card names its own internal URL:
        // the configured upstream, in the card's 1.0.
        let card = json!({ "supportedInterfaces": [
            { "url": "http://localhost:9999/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" },
            { "url": "http://localhost:9999/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }] });
        let config = config("https://agent.example/a2a");
        let chosen = choose(Some(&card), &config, |_| false);
        assert_eq!(
            (chosen.binding, chosen.version, chosen.url.as_str()),
            (
                Binding::JsonRpc,
                A2aVersion::V10,
                "https://agent.example/a2a"
            )
        );
    }

    #[test]
    fn no_card_is_the_configured_upstream() {
        let config = config("http://a/rpc");
        let chosen = choose(None, &config, |_| true);
        assert_eq!(
            (chosen.binding, chosen.version, chosen.url.as_str()),
            (Binding::JsonRpc, A2aVersion::V03, "http://a/rpc")
        );
        assert_eq!(mode(None, &config), Mode::Stream);
    }
}
