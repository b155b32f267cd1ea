//! Where a request goes upstream. The URL is *built*: the agent's configured
//! base plus the request's path as a relative path below it. Nothing a client
//! sends can change the origin or leave the base, whatever the encoding:
//! the path is checked at every percent-decoding depth an upstream might
//! apply, and the result is checked again after the URL library has
//! normalised it.

use url::Url;

/// Why a path cannot be forwarded. The messages go to the client: they name
/// the rule, never the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path names a URL scheme")]
    Scheme,
    #[error("the path names a host (it starts with //)")]
    Authority,
    #[error("the path holds a backslash")]
    Backslash,
    #[error("the path climbs above the agent's base with ..")]
    Climbs,
    #[error("the path holds control bytes")]
    Control,
    #[error("the path cannot be forwarded")]
    Malformed,
}

/// Schemes a URL parser resolves to an absolute URL even without `//`.
const SPECIAL_SCHEMES: [&str; 6] = ["http", "https", "ws", "wss", "ftp", "file"];

/// How many percent-decodings are checked: enough for double encoding
/// (`%252e`) through a chain of proxies; deeper nesting is refused.
pub const DECODE_DEPTH: usize = 4;

/// The upstream URL for `path` (the request path below the agent's mount,
/// still percent-encoded, `/` or empty for the agent's root) and `query`.
pub fn upstream_url(upstream: &Url, path: &str, query: Option<&str>) -> Result<Url, PathError> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let mut url = if rest.is_empty() {
        upstream.clone()
    } else {
        check(rest)?;
        let base = base_path(upstream);
        let mut url = upstream.clone();
        url.set_path(&format!("{base}{rest}"));
        if !url.path().starts_with(&base) {
            return Err(PathError::Climbs);
        }
        url
    };
    // A query in the configured URL (a key, a tenant) stays; the client's
    // is added after it.
    let merged = match (upstream.query(), query) {
        (Some(own), Some(client)) if !client.is_empty() => Some(format!("{own}&{client}")),
        (Some(own), _) => Some(own.to_owned()),
        (None, client) => client.map(str::to_owned),
    };
    url.set_query(merged.as_deref());
    url.set_fragment(None);
    // Compared by its parts: a `grpc://` upstream's origin is opaque (never
    // equal to itself), and the same scheme, host and port is the rule.
    let place = |u: &Url| {
        (
            u.scheme().to_owned(),
            u.host_str().map(str::to_owned),
            u.port_or_known_default(),
        )
    };
    if place(&url) != place(upstream) {
        return Err(PathError::Malformed);
    }
    Ok(url)
}

/// The upstream's path as a directory (ends in `/`).
pub fn base_path(upstream: &Url) -> String {
    let path = upstream.path();
    if path.ends_with('/') {
        path.to_owned()
    } else {
        format!("{path}/")
    }
}

/// The upstream URL as a base for relative references (ends in `/`).
pub fn base_url(upstream: &Url) -> Url {
    let mut base = upstream.clone();
    base.set_path(&base_path(upstream));
    base.set_query(None);
    base
}

/// Checks a relative path at each decoding depth until decoding changes
/// nothing.
fn check(rest: &str) -> Result<(), PathError> {
    let mut current = rest.as_bytes().to_vec();
    for _ in 0..DECODE_DEPTH {
        check_decoded(&current)?;
        let decoded = percent_decode(&current);
        if decoded == current {
            return Ok(());
        }
        current = decoded;
    }
    // Still changing after DECODE_DEPTH decodings: no honest client nests
    // encodings that deep.
    Err(PathError::Malformed)
}

fn check_decoded(path: &[u8]) -> Result<(), PathError> {
    if path.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(PathError::Control);
    }
    if path.contains(&b'\\') {
        return Err(PathError::Backslash);
    }
    if path.starts_with(b"/") {
        return Err(PathError::Authority);
    }
    if path.windows(3).any(|w| w == b"://") {
        return Err(PathError::Scheme);
    }
    let first = path.split(|&b| b == b'/').next().unwrap_or_default();
    if let Some(colon) = first.iter().position(|&b| b == b':') {
        let scheme = &first[..colon];
        if SPECIAL_SCHEMES
            .iter()
            .any(|s| s.as_bytes().eq_ignore_ascii_case(scheme))
        {
            return Err(PathError::Scheme);
        }
    }
    let mut depth = 0usize;
    for segment in path.split(|&b| b == b'/') {
        match segment {
            b"" | b"." => {}
            b".." => depth = depth.checked_sub(1).ok_or(PathError::Climbs)?,
            _ => depth += 1,
        }
    }
    Ok(())
}

/// Every `%XX` decoded, once.
pub fn percent_decode(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                input.get(i + 1).and_then(|b| (*b as char).to_digit(16)),
                input.get(i + 2).and_then(|b| (*b as char).to_digit(16)),
            )
        {
            // Two hex digits make at most 0xff.
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(0));
            i += 3;
            continue;
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://127.0.0.1:9/agents/a/").unwrap()
    }

    fn built(path: &str) -> Result<String, PathError> {
        upstream_url(&base(), path, None).map(|u| u.to_string())
    }

    #[test]
    fn paths_stay_below_the_base() {
        assert_eq!(built("/").unwrap(), "http://127.0.0.1:9/agents/a/");
        assert_eq!(built("").unwrap(), "http://127.0.0.1:9/agents/a/");
        assert_eq!(
            built("/v1/message:stream").unwrap(),
            "http://127.0.0.1:9/agents/a/v1/message:stream"
        );
        assert_eq!(
            built("/tasks/t-1:cancel").unwrap(),
            "http://127.0.0.1:9/agents/a/tasks/t-1:cancel"
        );
        assert_eq!(built("/x/../y").unwrap(), "http://127.0.0.1:9/agents/a/y");
        assert_eq!(
            built("/a%2Fb").unwrap(),
            "http://127.0.0.1:9/agents/a/a%2Fb"
        );
        let with_query = upstream_url(&base(), "/x", Some("format=agui")).unwrap();
        assert_eq!(
            with_query.as_str(),
            "http://127.0.0.1:9/agents/a/x?format=agui"
        );
        let keyed = Url::parse("http://h/a/?tenant=eu").unwrap();
        assert_eq!(
            upstream_url(&keyed, "/x", Some("format=agui"))
                .unwrap()
                .as_str(),
            "http://h/a/x?tenant=eu&format=agui"
        );
        assert_eq!(
            upstream_url(&keyed, "/", None).unwrap().as_str(),
            "http://h/a/?tenant=eu"
        );
        let no_slash = Url::parse("http://h/rpc").unwrap();
        assert_eq!(
            upstream_url(&no_slash, "/", None).unwrap().as_str(),
            "http://h/rpc"
        );
        assert_eq!(
            upstream_url(&no_slash, "/card", None).unwrap().as_str(),
            "http://h/rpc/card"
        );
    }

    #[test]
    fn every_attack_is_refused() {
        let cases = [
            ("/http://other:1/x", PathError::Scheme),
            ("/HTTP:%2F%2Fother/x", PathError::Scheme),
            ("/https:other/x", PathError::Scheme),
            ("/v1/http://other/x", PathError::Scheme),
            ("//other/x", PathError::Authority),
            ("/%2F%2Fother/x", PathError::Authority),
            ("/\\\\other/x", PathError::Backslash),
            ("/%5C%5Cother/x", PathError::Backslash),
            ("/..", PathError::Climbs),
            ("/%2e%2e/%2e%2e/secret-admin", PathError::Climbs),
            ("/x/../../y", PathError::Climbs),
            ("/%252e%252e/y", PathError::Climbs),
            ("/..%2F..%2Fy", PathError::Climbs),
            ("/.%2e/y", PathError::Climbs),
            ("/a%00b", PathError::Control),
            ("/a%0d%0aHost:x", PathError::Control),
            ("/%25252525252e", PathError::Malformed),
        ];
        for (path, want) in cases {
            assert_eq!(built(path), Err(want), "{path}");
        }
    }
}
