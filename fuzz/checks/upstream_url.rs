//! The upstream URL builder: whatever the path and query, a URL it builds
//! is on the configured origin and below the configured base.

use agui_gateway::upstream::target::{base_path, upstream_url};
use url::Url;

const BASES: [&str; 5] = [
    "http://127.0.0.1:9/agents/a/",
    "https://agents.example.com/",
    "http://agent:8080/rpc",
    "http://[::1]:1/a/b/c/",
    "https://user@h.example/x/?q=1",
];

pub fn check(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(base) = Url::parse(BASES[usize::from(choice) % BASES.len()]) else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (path, query) = match text.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (&*text, None),
    };
    if let Ok(url) = upstream_url(&base, path, query) {
        assert_eq!(
            url.origin(),
            base.origin(),
            "{path:?} left the origin: {url}"
        );
        assert_eq!(url.username(), base.username());
        assert_eq!(url.password(), base.password());
        let below = url.path().starts_with(&base_path(&base)) || url.path() == base.path();
        assert!(below, "{path:?} left the base: {url}");
        assert!(url.fragment().is_none());
    }
}
