//! Browser access (CORS): tower-http's layer with the gateway's origin
//! rules (`origins.rs`). Outside every other check, so a preflight
//! is answered during a drain and without a credential, as browsers need;
//! a refused origin gets no CORS header and a line in the log.

mod origins;

use std::sync::Arc;

use axum::http::{HeaderValue, header, request::Parts};
use tower_http::cors::{AllowCredentials, AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

pub use origins::{CorsConfig, Origin, OriginRule};

use crate::throttle::LogThrottle;

/// The layer for `config`, or `None` when no origin is allowed.
pub fn layer(config: &CorsConfig) -> Option<CorsLayer> {
    if !config.is_on() {
        return None;
    }
    let rules = Arc::new(config.clone());
    let allow_origin = if config.allows_any() {
        AllowOrigin::any()
    } else {
        let rules = rules.clone();
        let refused = Arc::new(LogThrottle::new());
        AllowOrigin::predicate(move |origin: &HeaderValue, parts: &Parts| {
            let allowed = rules.allows(origin.as_bytes());
            if !allowed && refused.due() {
                // Bounded and escaped: the header is the client's.
                let shown: String = String::from_utf8_lossy(origin.as_bytes())
                    .chars()
                    .take(200)
                    .collect::<String>()
                    .escape_debug()
                    .to_string();
                tracing::warn!(
                    origin = %shown,
                    method = %parts.method,
                    path = parts.uri.path(),
                    "CORS: origin not allowed (it gets no CORS headers; see [cors] allow_origins)"
                );
            }
            allowed
        })
    };
    // Only to the origins allowed (tower-http's plain `true` goes on every
    // answer), and never with `*`: `CorsConfig::check` refuses that
    // when the configuration is read; should one get here, the narrower
    // answer wins.
    let credentials = if config.allow_credentials && !config.allows_any() {
        AllowCredentials::predicate(move |origin: &HeaderValue, _: &Parts| {
            rules.allows(origin.as_bytes())
        })
    } else {
        AllowCredentials::default()
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow_origin)
            // Echoed, not `*`: the Fetch standard does not let `*` cover
            // `Authorization`, nor anything at all with credentials.
            .allow_headers(AllowHeaders::mirror_request())
            // Echoed too: the A2A REST binding has more than GET and POST.
            .allow_methods(AllowMethods::mirror_request())
            .expose_headers(config.expose_headers.clone())
            .max_age(config.max_age)
            .allow_credentials(credentials),
    )
}

/// tower-http writes `Access-Control-Expose-Headers` on every answer and a
/// preflight's allowed methods, headers and max age whatever the origin:
/// without an allowed origin they all go, so a refused origin gets no CORS
/// header at all.
pub async fn tidy(mut response: axum::response::Response) -> axum::response::Response {
    let headers = response.headers_mut();
    if !headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        let cors: Vec<_> = headers
            .keys()
            .filter(|name| name.as_str().starts_with("access-control-"))
            .cloned()
            .collect();
        for name in cors {
            headers.remove(name);
        }
    }
    response
}
