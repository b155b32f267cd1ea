//! The router in process, without a socket: each request goes through
//! `tower::ServiceExt::oneshot` on the same router the binary serves
//! (access log, CORS, the gate, the handlers). For the edge's decisions
//! that need no agent: methods, credentials, CORS, authentication, the
//! drain, loops, negotiation's refusals. The agent's address is one nothing
//! listens on: every case here is decided before any call.

use std::sync::Arc;

use agui_edge::cors::OriginRule;
use agui_gateway::config::{AgentConfig, Config};
use agui_gateway::http::router::router;
use agui_gateway::state::{AppState, Shutdown};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

/// One agent, `a`, the default, at an address nothing answers.
fn config() -> Config {
    let upstream = url::Url::parse("http://127.0.0.1:9/").unwrap();
    let mut config = Config::single(
        ([127, 0, 0, 1], 8080).into(),
        AgentConfig::new("a", upstream),
    );
    config.gateway_id = "gw-in-process".to_owned();
    config
}

fn app_with(config: Config, shutdown: Shutdown) -> Router {
    router(Arc::new(AppState::new(config, shutdown).unwrap()))
}

fn app(config: Config) -> Router {
    app_with(config, Shutdown::default())
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }
}

async fn call(app: Router, request: Request<Body>) -> Answer {
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
    }
}

fn request(method: &str, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(path)
}

#[tokio::test]
async fn methods_are_matched_case_sensitively_before_anything_else() {
    for method in ["trace", "TRACE", "CONNECT", "get", "FOO"] {
        let answer = call(
            app(config()),
            request(method, "/v1/agents/a/x")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(answer.code(), "METHOD_NOT_ALLOWED", "{method}");
        assert_eq!(answer.body["error"]["side"], "client");
    }
}

#[tokio::test]
async fn a_repeated_credential_is_refused_and_so_is_a_loop() {
    for name in ["authorization", "x-api-key"] {
        let answer = call(
            app(config()),
            request("GET", "/v1/agents")
                .header(name, "Bearer one")
                .header(name, "Bearer two")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(answer.code(), "DUPLICATE_CREDENTIAL");
    }
    let answer = call(
        app(config()),
        request("GET", "/v1/agents/a/x")
            .header("via", "1.1 gw-in-process")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::LOOP_DETECTED);
    assert_eq!(answer.code(), "GATEWAY_LOOP");
}

#[tokio::test]
async fn cors_answers_allowed_origins_and_says_nothing_to_others() {
    let mut config = config();
    config.cors.origins = vec![OriginRule::parse("https://*.example.com").unwrap()];
    let preflight = |origin: &str| {
        request("OPTIONS", "/agui")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization")
            .body(Body::empty())
            .unwrap()
    };
    let allowed = call(app(config.clone()), preflight("https://app.example.com")).await;
    assert_eq!(
        allowed.headers["access-control-allow-origin"],
        "https://app.example.com"
    );
    assert_eq!(
        allowed.headers["access-control-allow-headers"],
        "authorization"
    );
    let refused = call(app(config), preflight("https://example.com.evil.test")).await;
    let cors: Vec<&str> = refused
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "{cors:?}");
}

#[tokio::test]
async fn authentication_refuses_before_any_call() {
    let keys = std::env::temp_dir().join(format!("agui-in-process-keys-{}", std::process::id()));
    std::fs::write(&keys, "web:s3cret\n").unwrap();
    let mut config = config();
    config.auth.api_keys_file = Some(keys);
    let cases = [
        (None, StatusCode::UNAUTHORIZED, "AUTH_REQUIRED"),
        (
            Some("Bearer wrong"),
            StatusCode::UNAUTHORIZED,
            "AUTH_INVALID",
        ),
    ];
    for (credential, status, code) in cases {
        let mut builder = request("GET", "/v1/agents/a/x");
        if let Some(credential) = credential {
            builder = builder.header("authorization", credential);
        }
        let answer = call(app(config.clone()), builder.body(Body::empty()).unwrap()).await;
        assert_eq!((answer.status, answer.code()), (status, code));
        assert_eq!(
            answer.headers["www-authenticate"],
            "Bearer realm=\"agui-gateway\""
        );
    }
    // The right key gets past the gate: to the agent list, which needs no call.
    let answer = call(
        app(config),
        request("GET", "/v1/agents")
            .header("x-api-key", "s3cret")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body["agents"][0]["name"], "a");
}

#[tokio::test]
async fn a_draining_gateway_refuses_new_requests_and_closes_the_connection() {
    let shutdown = Shutdown::default();
    shutdown.unready.cancel();
    shutdown.draining.cancel();
    let answer = call(
        app_with(config(), shutdown),
        request("GET", "/v1/agents").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.code(), "GATEWAY_DRAINING");
    assert_eq!(answer.headers["connection"], "close");
    assert_eq!(answer.body["error"]["side"], "gateway");
}

#[tokio::test]
async fn negotiation_refuses_what_it_cannot_convert_with_a_json_error() {
    let cases = [
        // AG-UI asked for, the body no A2A call.
        ("/v1/agents/a/?format=agui", "not json", "INVALID_REQUEST"),
        // A RunAgentInput that is not one.
        ("/agui", r#"{"threadId": 5}"#, "INVALID_RUN_INPUT"),
        ("/v1/agents/nobody/agui", "{}", "UNKNOWN_AGENT"),
    ];
    for (path, body, code) in cases {
        let answer = call(
            app(config()),
            request("POST", path)
                .header("content-type", "application/json")
                .header("accept", "application/x-agui-events")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
        assert!(answer.status.is_client_error(), "{path}: {}", answer.status);
        assert_eq!(answer.code(), code, "{path}: {}", answer.body);
        assert_eq!(
            answer.headers["content-type"], "application/json",
            "{path}: a JSON body before any stream"
        );
    }
}
