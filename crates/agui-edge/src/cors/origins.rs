//! Which browser origins may call the gateway (`[cors]`, `--cors-origin`),
//! checked once when the configuration is read; the layer is made from it.

use std::time::Duration;

use axum::http::HeaderName;

/// Preflight answers may be cached this long unless configured.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(600);

/// What a page on an allowed origin may read from an answer besides the
/// headers every page may read: the wait a refusal asks for.
pub const DEFAULT_EXPOSE_HEADERS: &[&str] = &["retry-after"];

/// The browser access the gateway grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsConfig {
    pub origins: Vec<OriginRule>,
    /// Pages may send cookies and HTTP authentication (`credentials:
    /// 'include'`). Never with `*`: browsers refuse that answer.
    pub allow_credentials: bool,
    pub max_age: Duration,
    pub expose_headers: Vec<HeaderName>,
}

impl Default for CorsConfig {
    fn default() -> CorsConfig {
        CorsConfig {
            origins: Vec::new(),
            allow_credentials: false,
            max_age: DEFAULT_MAX_AGE,
            expose_headers: DEFAULT_EXPOSE_HEADERS
                .iter()
                .map(|name| HeaderName::from_static(name))
                .collect(),
        }
    }
}

impl CorsConfig {
    /// Off unless some origin is allowed.
    pub fn is_on(&self) -> bool {
        !self.origins.is_empty()
    }

    /// Any origin (`*`) is allowed.
    pub fn allows_any(&self) -> bool {
        self.origins.contains(&OriginRule::Any)
    }

    /// The `Origin` header of a request is allowed.
    pub fn allows(&self, origin: &[u8]) -> bool {
        let Some(origin) = std::str::from_utf8(origin).ok().and_then(Origin::parse) else {
            return false;
        };
        self.origins.iter().any(|rule| rule.matches(&origin))
    }

    /// The combination is one browsers accept.
    pub fn check(&self) -> Result<(), String> {
        if self.allow_credentials && self.allows_any() {
            return Err(
                "credentials cannot go with the origin \"*\" (browsers refuse that answer): list the origins"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

/// One allowed origin, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginRule {
    /// `*`.
    Any,
    /// `https://app.example.com`: this origin exactly.
    Exact(Origin),
    /// `https://*.example.com`: every subdomain (not the domain itself),
    /// with this scheme and port.
    Subdomains {
        scheme: String,
        /// With its leading dot: `.example.com`.
        suffix: String,
        port: Option<u16>,
    },
    /// `http://localhost:*`: this scheme and host on any port.
    AnyPort { scheme: String, host: String },
}

impl OriginRule {
    /// Reads one configured origin; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<OriginRule, String> {
        if text == "*" {
            return Ok(OriginRule::Any);
        }
        let shape = "an origin is scheme://host[:port] (a host may start with \"*.\", a port may be \"*\"), or \"*\"";
        if text.eq_ignore_ascii_case("null") {
            return Err(format!(
                "\"null\" is the origin of sandboxed and file pages: any page can claim it; {shape}"
            ));
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!("no scheme: {shape}"));
        };
        if !is_scheme(scheme) {
            return Err(format!("{scheme:?} is no URL scheme: {shape}"));
        }
        if rest.contains(['/', '?', '#']) {
            return Err(format!(
                "an origin has no path, query or fragment (browsers send none, not even a \"/\"): {shape}"
            ));
        }
        if rest.contains('@') {
            return Err(format!("an origin has no user name or password: {shape}"));
        }
        let scheme = scheme.to_ascii_lowercase();
        let (host, port) = split_port(rest).ok_or_else(|| format!("bad port: {shape}"))?;
        let host = host.to_ascii_lowercase();
        match (host.strip_prefix("*."), port) {
            (Some(_), PortRule::Any) => Err(format!(
                "a subdomain pattern and any port at once are too wide: {shape}"
            )),
            (Some(domain), port) => {
                if !is_host(domain) || !domain.contains('.') {
                    return Err(format!(
                        "\"*.\" must be followed by a domain with a dot (\"*.example.com\"): {shape}"
                    ));
                }
                let port = match port {
                    PortRule::None => None,
                    PortRule::Number(n) => default_port_dropped(&scheme, n),
                    PortRule::Any => None,
                };
                Ok(OriginRule::Subdomains {
                    scheme,
                    suffix: format!(".{domain}"),
                    port,
                })
            }
            (None, _) if !is_host(&host) => Err(format!("{host:?} is no host name: {shape}")),
            (None, PortRule::Any) => Ok(OriginRule::AnyPort { scheme, host }),
            (None, PortRule::None) => Ok(OriginRule::Exact(Origin {
                scheme,
                host,
                port: None,
            })),
            (None, PortRule::Number(n)) => Ok(OriginRule::Exact(Origin {
                port: default_port_dropped(&scheme, n),
                scheme,
                host,
            })),
        }
    }

    fn matches(&self, origin: &Origin) -> bool {
        match self {
            OriginRule::Any => true,
            OriginRule::Exact(allowed) => allowed == origin,
            OriginRule::Subdomains {
                scheme,
                suffix,
                port,
            } => {
                *scheme == origin.scheme
                    && *port == origin.port
                    && origin.host.len() > suffix.len()
                    && origin.host.ends_with(suffix.as_str())
            }
            OriginRule::AnyPort { scheme, host } => {
                *scheme == origin.scheme && *host == origin.host
            }
        }
    }
}

impl std::fmt::Display for OriginRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OriginRule::Any => f.write_str("*"),
            OriginRule::Exact(origin) => origin.fmt(f),
            OriginRule::Subdomains {
                scheme,
                suffix,
                port,
            } => {
                write!(f, "{scheme}://*{suffix}")?;
                port.map_or(Ok(()), |port| write!(f, ":{port}"))
            }
            OriginRule::AnyPort { scheme, host } => write!(f, "{scheme}://{host}:*"),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        self.port.map_or(Ok(()), |port| write!(f, ":{port}"))
    }
}

/// A browser's origin, as it sends it (`Origin` header): lower case, no
/// default port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    fn parse(text: &str) -> Option<Origin> {
        let (scheme, rest) = text.split_once("://")?;
        if !is_scheme(scheme) || rest.contains(['/', '?', '#', '@']) {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        let (host, port) = split_port(rest)?;
        let host = host.to_ascii_lowercase();
        if !is_host(&host) {
            return None;
        }
        let port = match port {
            PortRule::None => None,
            PortRule::Number(n) => default_port_dropped(&scheme, n),
            PortRule::Any => return None,
        };
        Some(Origin { scheme, host, port })
    }
}

enum PortRule {
    None,
    Number(u16),
    Any,
}

/// `host[:port]`, where the host may be a bracketed IPv6 address.
fn split_port(authority: &str) -> Option<(&str, PortRule)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => PortRule::None,
        Some("*") => PortRule::Any,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            PortRule::Number(digits.parse().ok().filter(|n| *n > 0)?)
        }
        Some(_) => return None,
    };
    Some((host, port))
}

fn default_port_dropped(scheme: &str, port: u16) -> Option<u16> {
    match (scheme, port) {
        ("http", 80) | ("https", 443) => None,
        _ => Some(port),
    }
}

fn is_scheme(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// A DNS name, an IPv4 address or a bracketed IPv6 address.
fn is_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(origins: &[&str]) -> CorsConfig {
        CorsConfig {
            origins: origins
                .iter()
                .map(|o| OriginRule::parse(o).unwrap())
                .collect(),
            ..CorsConfig::default()
        }
    }

    #[test]
    fn exact_origins_match_as_browsers_send_them() {
        let cors = config(&[
            "https://App.Example.com",
            "http://localhost:3000",
            "https://a.example:443",
        ]);
        assert!(cors.allows(b"https://app.example.com"));
        assert!(cors.allows(b"http://localhost:3000"));
        assert!(
            cors.allows(b"https://a.example"),
            "the default port is dropped"
        );
        assert!(!cors.allows(b"http://app.example.com"), "another scheme");
        assert!(
            !cors.allows(b"https://app.example.com:8443"),
            "another port"
        );
        assert!(!cors.allows(b"http://localhost:3001"));
        assert!(!cors.allows(b"https://app.example.com.evil.example"));
        assert!(!cors.allows(b"null"));
        assert!(!cors.allows(b"https://app.example.com/"));
        assert!(!cors.allows(b"\xff"));
    }

    #[test]
    fn patterns_cover_subdomains_or_ports_and_nothing_else() {
        let cors = config(&[
            "https://*.example.com",
            "http://localhost:*",
            "http://[::1]:*",
        ]);
        assert!(cors.allows(b"https://app.example.com"));
        assert!(cors.allows(b"https://a.b.example.com"));
        assert!(
            !cors.allows(b"https://example.com"),
            "not the domain itself"
        );
        assert!(!cors.allows(b"https://evilexample.com"));
        assert!(!cors.allows(b"https://app.example.com:8443"));
        assert!(!cors.allows(b"http://app.example.com"));
        assert!(cors.allows(b"http://localhost:5173"));
        assert!(cors.allows(b"http://localhost"));
        assert!(!cors.allows(b"http://localhost.evil.example:5173"));
        assert!(cors.allows(b"http://[::1]:8080"));
        assert!(!cors.allows(b"https://localhost:5173"));
    }

    #[test]
    fn rules_print_as_configured_in_their_normal_form() {
        for (text, shown) in [
            ("*", "*"),
            ("HTTPS://App.Example.com:443", "https://app.example.com"),
            ("http://localhost:8080", "http://localhost:8080"),
            ("https://*.example.com:8443", "https://*.example.com:8443"),
            ("http://[::1]:*", "http://[::1]:*"),
        ] {
            assert_eq!(OriginRule::parse(text).unwrap().to_string(), shown);
        }
    }

    #[test]
    fn any_origin_is_never_combined_with_credentials() {
        let mut cors = config(&["*"]);
        assert!(cors.allows(b"https://anything.example"));
        assert!(cors.check().is_ok());
        cors.allow_credentials = true;
        assert!(cors.check().unwrap_err().contains("list the origins"));
    }

    #[test]
    fn malformed_origins_are_refused_with_the_reason() {
        for (text, reason) in [
            ("app.example.com", "no scheme"),
            ("https://app.example.com/", "no path"),
            ("https://app.example.com/ui", "no path"),
            ("https://user@app.example.com", "user name"),
            ("https://app.example.com:0", "bad port"),
            ("https://app.example.com:99999", "bad port"),
            ("https://app.example.com:", "bad port"),
            ("https://*.com", "with a dot"),
            ("https://*.example.com:*", "too wide"),
            ("https://app example.com", "no host"),
            ("https://", "no host"),
            ("1http://a.example", "no URL scheme"),
            ("null", "sandboxed"),
        ] {
            let err = OriginRule::parse(text).unwrap_err();
            assert!(err.contains(reason), "{text}: {err}");
        }
    }
}
