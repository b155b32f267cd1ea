//! Issue 37, finding 4: a client cannot make the gateway fetch tokens. An
//! agent with client-credentials auth (the real authorization server of
//! `tests/authz/`) has paths that answer 401 to every caller, with a bare
//! challenge or one saying `error="invalid_token"`: 50 client requests to
//! them cost at most 2 token requests in all (the token the gateway holds,
//! and at most one renewal per `RENEWAL_GAP`, shared by every call).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{any, get};
use serde_json::json;

use crate::edge::write_config;
use crate::support::{Process, client, gateway};
use crate::upstream_auth::{CLIENT_CREDENTIALS, authz, count, grants};

/// An agent on loopback: `routes` beside its card (1.0, naming its
/// address) at the well-known path.
pub(crate) async fn loopback_agent(routes: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let card = json!({ "name": "loopback", "description": "a test agent", "version": "1",
        "supportedInterfaces": [{ "url": format!("http://{addr}/"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": {}, "skills": [], "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"] });
    let app = routes.route(
        "/.well-known/agent-card.json",
        get(move || async move { axum::Json(card).into_response() }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// An agent whose `/locked` answers 401 with a bare challenge and whose
/// `/revoked` answers 401 saying the token is invalid, whatever the
/// token; everything else is a 200. Counts the 401s it sent.
async fn refusing_agent() -> (SocketAddr, Arc<AtomicU64>) {
    let refusals = Arc::new(AtomicU64::new(0));
    let refuse = |challenge: &'static str, refusals: Arc<AtomicU64>| {
        move || async move {
            refusals.fetch_add(1, Ordering::SeqCst);
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, challenge)],
                "{\"error\":\"no\"}",
            )
                .into_response()
        }
    };
    let routes = Router::new()
        .route(
            "/locked",
            any(refuse(r#"Bearer realm="agent""#, refusals.clone())),
        )
        .route(
            "/revoked",
            any(refuse(
                r#"Bearer realm="agent", error="invalid_token""#,
                refusals.clone(),
            )),
        )
        .fallback(|| async { axum::Json(json!({})).into_response() });
    (loopback_agent(routes).await, refusals)
}

/// A gateway calling `agent` as agent `a` with the gateway's client
/// credentials at `authz`.
fn gateway_with_credentials(agent: SocketAddr, authz: &Process) -> Process {
    let file = write_config(
        "h37-tokens.toml",
        &format!(
            "[agents.a]\nupstream = \"http://{agent}/\"\n[agents.a.auth]\n\
             type = \"oauth2_client_credentials\"\ntoken_url = \"{}/token\"\n\
             client_id = \"gateway\"\nclient_secret = \"gateway-secret\"\n\
             scopes = [\"a2a.invoke\"]\nresource = \"https://agent.test/\"\n",
            authz.url()
        ),
    );
    gateway(&["--config", file.to_str().unwrap()])
}

/// `n` calls of `call`, `together` at a time; each answer's status.
async fn in_groups<F, Fut>(n: usize, together: usize, call: F) -> Vec<u16>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = u16>,
{
    let mut statuses = Vec::new();
    for _ in 0..n / together {
        statuses.extend(futures::future::join_all((0..together).map(|_| call())).await);
    }
    statuses
}

#[tokio::test]
#[ignore = "tier 2: the OAuth2 authorization server, tests/authz/setup.sh"]
async fn fifty_client_caused_401s_cost_at_most_two_token_requests() {
    let authz = authz(300);
    let (agent, refusals) = refusing_agent().await;
    let gw = gateway_with_credentials(agent, &authz);
    let http = client();
    let get = |path: &'static str| {
        let request = http.get(format!("{}/v1/agents/a{path}", gw.url()));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(get("/ok").await, 200);
    let held = count(&grants(&authz).await, CLIENT_CREDENTIALS);
    assert_eq!(held, 1, "one token for the gateway's calls");

    // A bare challenge: the request lacked something a new token would
    // not bring. No token request at all (one after the other, as the
    // issue measured them: 50 token requests).
    let statuses = in_groups(50, 1, || get("/locked")).await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    let after_bare = count(&grants(&authz).await, CLIENT_CREDENTIALS);
    assert_eq!(
        after_bare,
        held,
        "50 401s with a bare challenge made {} token requests",
        after_bare - held
    );

    // `invalid_token`, from a path that refuses every token: one renewal,
    // shared; the renewed token refused again is the agent's answer.
    let started = Instant::now();
    let statuses = in_groups(50, 1, || get("/revoked")).await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    // Converted streams renew through the same door.
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
        "message": { "kind": "message", "role": "user", "messageId": "m1",
            "parts": [{ "kind": "text", "text": "hi" }] } } });
    let converted = in_groups(10, 10, || {
        let request = http
            .post(format!("{}/v1/agents/a/revoked?format=agui", gw.url()))
            .json(&body);
        async move { request.send().await.unwrap().status().as_u16() }
    })
    .await;
    assert!(converted.iter().all(|s| *s == 200), "{converted:?}");
    let elapsed = started.elapsed();
    let issued = count(&grants(&authz).await, CLIENT_CREDENTIALS);
    eprintln!(
        "token requests: {held} at start, {} after 50 bare 401s, {issued} after 60 invalid_token 401s ({elapsed:?})",
        after_bare
    );
    assert!(
        issued <= 2,
        "60 client-caused 401s (invalid_token) made {} token requests in {elapsed:?}; \
         at most 2 in all",
        issued - held
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "the calls took {elapsed:?}, longer than one renewal gap"
    );
    assert!(refusals.load(Ordering::SeqCst) >= 110);
}
