//! The inspector's page (`GET /inspect`): a run's A2A events as they came
//! in beside the AG-UI events that went out, and the conversation they
//! render to. The assets are compiled in (no CDN, nothing to deploy);
//! the page calls `/v1/agents` and `POST /inspect/agents/{name}/run`,
//! whose stream carries the upstream events as `event: a2a` frames.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("inspector.js");
const STYLE: &str = include_str!("inspector.css");

/// Scripts and styles from the page's own origin only; no frames, no
/// form posts, no base rewriting. Citations are links out, which a
/// policy does not restrict.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The page and its assets, on a router that has no authentication in
/// front (they hold nothing secret; the run route is authenticated).
pub fn page_routes<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .route(
            "/inspect",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        // The page's relative links resolve against `/inspect`; so does this
        // redirect, which then holds behind a path prefix.
        .route(
            "/inspect/",
            get(|| async { Redirect::permanent("../inspect") }),
        )
        .route(
            "/inspect/inspector.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/inspect/inspector.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
