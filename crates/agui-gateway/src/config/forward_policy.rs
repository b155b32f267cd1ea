//! What the configuration says about forwarding: which client headers an
//! agent receives (`ForwardPolicy`) and whose `X-Forwarded-*` headers are
//! believed (`TrustedProxies`). `upstream::forwarding` applies them.

use std::net::IpAddr;

use axum::http::{HeaderName, header};
use ipnet::IpNet;

/// Hop-by-hop headers (RFC 9110 7.6.1, plus the legacy `Proxy-Connection`
/// and `Host`, which the HTTP client writes for the upstream itself).
pub(crate) const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Headers about the path a request took; rebuilt by the gateway.
pub(crate) const PATH_HEADERS: [&str; 6] = [
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-prefix",
    "forwarded",
    "via",
];

/// What of the client's headers an agent receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardPolicy {
    pub authorization: bool,
    pub cookie: bool,
    /// `None`: every other end-to-end header (`*`); else only these.
    pub others: Option<Vec<HeaderName>>,
}

impl Default for ForwardPolicy {
    /// The user's bearer token reaches the agent (which may act on the
    /// user's behalf); cookies, which belong to the gateway's own site, do not.
    fn default() -> ForwardPolicy {
        ForwardPolicy {
            authorization: true,
            cookie: false,
            others: None,
        }
    }
}

impl ForwardPolicy {
    /// From a list like `["authorization", "*"]` or `["x-request-id"]`.
    pub fn parse(list: &[String]) -> Result<ForwardPolicy, String> {
        let mut policy = ForwardPolicy {
            authorization: false,
            cookie: false,
            others: Some(Vec::new()),
        };
        for item in list {
            let lower = item.trim().to_ascii_lowercase();
            match lower.as_str() {
                "authorization" => policy.authorization = true,
                "cookie" => policy.cookie = true,
                "*" => policy.others = None,
                _ => {
                    let name = HeaderName::from_bytes(lower.as_bytes())
                        .map_err(|_| format!("{item:?} is not a header name"))?;
                    if HOP_BY_HOP.contains(&name.as_str()) || PATH_HEADERS.contains(&name.as_str())
                    {
                        return Err(format!(
                            "{item:?} is never forwarded (hop-by-hop or set by the gateway)"
                        ));
                    }
                    if let Some(names) = &mut policy.others {
                        names.push(name);
                    }
                }
            }
        }
        Ok(policy)
    }

    pub(crate) fn allows(&self, name: &HeaderName) -> bool {
        if name == header::AUTHORIZATION {
            return self.authorization;
        }
        if name == header::COOKIE {
            return self.cookie;
        }
        match &self.others {
            None => true,
            Some(names) => names.contains(name),
        }
    }
}

/// The peers whose `X-Forwarded-*` headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(pub Vec<IpNet>);

impl TrustedProxies {
    /// Loopback: a sidecar or a proxy on the same host.
    pub fn loopback() -> TrustedProxies {
        let nets = ["127.0.0.0/8", "::1/128"]
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        TrustedProxies(nets)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.0.iter().any(|net| net.contains(&ip))
    }
}
