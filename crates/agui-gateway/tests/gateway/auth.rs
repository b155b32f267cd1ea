//! Inbound authentication and rate limiting: API keys and JWTs signed here,
//! checked by the gateway against a JWKS served on loopback.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::routing::get;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::edge::{recording_upstream, write_config};
use crate::support::*;

/// The public half of `fixtures/test-only-jwt-ed25519.pem` (a key made for
/// these tests and nothing else), as a JWK `x`.
const TEST_KEY_X: &str = "CQU5W1bWJXfuEN1Rl49_o3uSS2FApTJVBANo3wK7klE";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        repo_root()
            .join("crates/agui-gateway/tests/gateway/fixtures")
            .join(name),
    )
    .unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A JWT with these claims over the defaults (valid for an hour, for
/// `alice`, from the test issuer to the gateway), signed by `key`.
fn token(key: &str, claims: Value) -> String {
    token_of("k1", key, claims)
}

/// `token`, naming the JWKS key `kid`.
fn token_of(kid: &str, key: &str, claims: Value) -> String {
    let mut all = json!({ "sub": "alice", "iss": "https://issuer.test/", "aud": "agui-gateway",
        "exp": now() + 3600, "iat": now() });
    for (k, v) in claims.as_object().unwrap() {
        all[k] = v.clone();
    }
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_ed_pem(&fixture(key)).unwrap();
    jsonwebtoken::encode(&header, &all, &key).unwrap()
}

async fn jwks_server() -> (String, Arc<AtomicUsize>) {
    jwks_server_of(json!([{ "kty": "OKP", "crv": "Ed25519", "x": TEST_KEY_X,
        "kid": "k1", "alg": "EdDSA", "use": "sig" }]))
    .await
}

async fn jwks_server_of(keys: Value) -> (String, Arc<AtomicUsize>) {
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = fetches.clone();
    let app = Router::new().route(
        "/jwks.json",
        get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let keys = keys.clone();
            async move { axum::Json(json!({ "keys": keys })) }
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/jwks.json"), fetches)
}

/// A gateway in front of the recording agent, taking JWTs from `jwks` for
/// the test issuer and audience, from the command line.
fn jwt_gateway(up: std::net::SocketAddr, jwks: &str) -> Process {
    let upstream = format!("http://{up}/agents/a/");
    let mut command = std::process::Command::new(gateway_binary());
    command
        .args(["--upstream", &upstream, "--listen", "127.0.0.1:0"])
        .args(["--jwks-url", jwks, "--jwt-audience", "agui-gateway"])
        .args(["--jwt-issuer", "https://issuer.test/"])
        .env("AGUI_GATEWAY_LOG", "warn");
    start_within(
        command,
        "listening on ",
        "the gateway",
        std::time::Duration::from_secs(30),
    )
}

/// A run on `/agui` with `bearer` goes through to its end.
async fn assert_run_finishes(gw: &Process, bearer: &str) {
    let text = client()
        .post(format!("{}/agui", gw.url()))
        .bearer_auth(bearer)
        .json(&run_body())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        assert_valid_run(&agui_events(&text))["type"],
        "RUN_FINISHED",
        "{text}"
    );
}

/// A run with a message of its own: the gateway sends each message once.
fn run_body() -> Value {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({ "threadId": "t", "runId": format!("r{n}"), "messages": [{ "id": format!("u{n}"), "role": "user", "content": "hi" }] })
}

#[tokio::test]
async fn only_valid_credentials_reach_the_agents_they_are_allowed() {
    let (up, recorder) = recording_upstream().await;
    let (jwks, fetches) = jwks_server().await;
    let keys = write_config("api-keys", "# test keys\nweb:s3cret-key\n");
    let config = write_config(
        "auth.toml",
        &format!(
            "default_agent = \"a\"\n[auth]\napi_keys_file = \"{}\"\n[auth.jwt]\njwks_url = \"{jwks}\"\nissuer = \"https://issuer.test/\"\naudience = \"agui-gateway\"\nleeway_secs = 5\nalgorithms = [\"EdDSA\"]\n\
             [agents.a]\nupstream = \"http://{up}/agents/a/\"\nallow = [\"key:web\", \"sub:alice\", \"key:ci\"]\n\
             [agents.b]\nupstream = \"http://{up}/agents/a/\"\nallow = [\"sub:bob\"]\n",
            keys.display()
        ),
    );
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"));
    command
        .args([
            "--config",
            config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .env("AGUI_GATEWAY_LOG", "warn")
        .env("AGUI_GATEWAY_API_KEYS", "ci:env-key");
    let gw = start_within(
        command,
        "listening on ",
        "the gateway",
        std::time::Duration::from_secs(30),
    );
    let client = client();
    let agui = |agent: &str| format!("{}/v1/agents/{agent}/agui", gw.url());

    let expired = token("test-only-jwt-ed25519.pem", json!({ "exp": now() - 60 }));
    let foreign_audience = token(
        "test-only-jwt-ed25519.pem",
        json!({ "aud": "someone-else" }),
    );
    let foreign_issuer = token(
        "test-only-jwt-ed25519.pem",
        json!({ "iss": "https://evil.test/" }),
    );
    let forged = token("test-only-other-ed25519.pem", json!({}));
    let no_subject = token("test-only-jwt-ed25519.pem", json!({ "sub": "" }));
    // (agent, request headers, status, code)
    type Refusal<'a> = (&'a str, Vec<(&'a str, String)>, u16, &'a str);
    let refusals: Vec<Refusal> = vec![
        ("a", vec![], 401, "AUTH_REQUIRED"),
        ("a", vec![("X-API-Key", "nope".into())], 401, "AUTH_INVALID"),
        (
            "a",
            vec![("Authorization", "Bearer nope".into())],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![("Authorization", format!("Bearer {expired}"))],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![("Authorization", format!("Bearer {foreign_audience}"))],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![("Authorization", format!("Bearer {foreign_issuer}"))],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![("Authorization", format!("Bearer {forged}"))],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![("Authorization", format!("Bearer {no_subject}"))],
            401,
            "AUTH_INVALID",
        ),
        (
            "a",
            vec![(
                "Authorization",
                "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.".into(),
            )],
            401,
            "AUTH_INVALID",
        ),
        (
            "b",
            vec![("X-API-Key", "s3cret-key".into())],
            403,
            "AUTH_FORBIDDEN",
        ),
        (
            "b",
            vec![(
                "Authorization",
                format!("Bearer {}", token("test-only-jwt-ed25519.pem", json!({}))),
            )],
            403,
            "AUTH_FORBIDDEN",
        ),
    ];
    for (agent, headers, status, code) in &refusals {
        let mut request = client.post(agui(agent)).json(&run_body());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), *status, "{headers:?}");
        if *status == 401 {
            assert!(response.headers().contains_key("www-authenticate"));
        }
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], *code, "{headers:?}: {body}");
        assert_eq!(body["error"]["side"], "client");
    }
    assert!(
        recorder
            .requests()
            .iter()
            .all(|s| s.body["method"] != "message/stream"),
        "a refused request reached the upstream"
    );
    // Forged key ids or not, the JWKS was fetched a bounded number of times.
    assert!(
        fetches.load(Ordering::SeqCst) <= 3,
        "{} JWKS fetches",
        fetches.load(Ordering::SeqCst)
    );

    // Valid credentials stream; a gateway key never goes upstream, the
    // user's JWT does (the default forwarding policy).
    let alice = token("test-only-jwt-ed25519.pem", json!({}));
    for (name, value) in [
        ("X-API-Key", "s3cret-key".to_owned()),
        ("Authorization", "Bearer s3cret-key".to_owned()),
        ("Authorization", "Bearer env-key".to_owned()),
        ("Authorization", format!("Bearer {alice}")),
    ] {
        let before = recorder.requests().len();
        let text = client
            .post(agui("a"))
            .header(name, &value)
            .json(&run_body())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let events = agui_events(&text);
        assert_eq!(
            assert_valid_run(&events)["type"],
            "RUN_FINISHED",
            "{name}: {text}"
        );
        let sent = recorder.requests()[before..]
            .iter()
            .rfind(|s| s.body["method"] == "message/stream")
            .cloned()
            .expect("the run reached the upstream");
        let leaked = sent
            .headers
            .iter()
            .any(|(_, v)| v.contains("s3cret-key") || v.contains("env-key"));
        assert!(!leaked, "a gateway key went upstream: {:?}", sent.headers);
        if value.contains(&alice) {
            assert_eq!(sent.all("authorization"), vec![value.as_str()]);
        }
    }

    // Probes: health is public, metrics are not (no admin listener here).
    let health = http_get(format!("{}/healthz", gw.url())).await;
    assert_eq!(health.status(), 200);
    let metrics = http_get(format!("{}/metrics", gw.url())).await;
    assert_eq!(metrics.status(), 401);
    let metrics = client
        .get(format!("{}/metrics", gw.url()))
        .header("X-API-Key", "s3cret-key")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    // The agent list shows only what the caller may use.
    let listed: Value = client
        .get(format!("{}/v1/agents", gw.url()))
        .header("X-API-Key", "s3cret-key")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, vec!["a"]);
}

#[tokio::test]
async fn the_request_past_the_burst_gets_429_with_retry_after() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--rate-limit-per-second", "1", "--rate-limit-burst", "3"],
    );
    let mut statuses = Vec::new();
    let mut last = None;
    for _ in 0..4 {
        let response = http_get(format!("{}/v1/agents", gw.url())).await;
        statuses.push(response.status().as_u16());
        last = Some(response);
    }
    assert_eq!(statuses, vec![200, 200, 200, 429]);
    let last = last.unwrap();
    let retry: u64 = last.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    let body: Value = last.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    // Probes are not rate limited.
    let health = http_get(format!("{}/healthz", gw.url())).await;
    assert_eq!(health.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let again = http_get(format!("{}/v1/agents", gw.url())).await;
    assert_eq!(again.status(), 200, "a token came back after a second");
}

#[tokio::test]
async fn a_jwks_from_the_command_line_takes_tokens_with_the_default_algorithms() {
    let (up, recorder) = recording_upstream().await;
    let (jwks, _) = jwks_server().await;
    let gw = jwt_gateway(up, &jwks);
    let client = client();
    let alice = token("test-only-jwt-ed25519.pem", json!({}));
    assert_run_finishes(&gw, &alice).await;
    // Not before its time either.
    let early = token("test-only-jwt-ed25519.pem", json!({ "nbf": now() + 600 }));
    let response = client
        .post(format!("{}/agui", gw.url()))
        .bearer_auth(&early)
        .json(&run_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let runs = recorder
        .requests()
        .iter()
        .filter(|s| s.body["method"] == "message/stream")
        .count();
    assert_eq!(runs, 1);
}

#[tokio::test]
async fn keys_not_for_signing_and_tokens_from_the_future_are_refused_with_their_reason() {
    let (up, recorder) = recording_upstream().await;
    // The same public key published for encryption (`use`) and for
    // encrypting only (`key_ops`): neither may verify a signature.
    let key = |kid: &str, extra: Value| {
        let mut jwk =
            json!({ "kty": "OKP", "crv": "Ed25519", "x": TEST_KEY_X, "kid": kid, "alg": "EdDSA" });
        for (k, v) in extra.as_object().unwrap() {
            jwk[k] = v.clone();
        }
        jwk
    };
    let (jwks, _) = jwks_server_of(json!([
        key("k1", json!({ "use": "sig" })),
        key("enc", json!({ "use": "enc" })),
        key("ops", json!({ "key_ops": ["encrypt"] })),
        key("verify", json!({ "key_ops": ["verify"] })),
    ]))
    .await;
    let gw = jwt_gateway(up, &jwks);
    let pem = "test-only-jwt-ed25519.pem";
    let cases = [
        (
            token_of("enc", pem, json!({})),
            "not for verifying signatures",
        ),
        (
            token_of("ops", pem, json!({})),
            "not for verifying signatures",
        ),
        (
            token(pem, json!({ "iat": now() + 600 })),
            "issued in the future",
        ),
        (token(pem, json!({ "nbf": now() + 600 })), "not valid yet"),
        (token(pem, json!({ "exp": now() - 600 })), "expired"),
    ];
    for (bearer, reason) in cases {
        let response = client()
            .post(format!("{}/agui", gw.url()))
            .bearer_auth(&bearer)
            .json(&run_body())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{reason}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "AUTH_INVALID", "{reason}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{reason}: {message}");
    }
    // A key whose operations include verify, and a token a few seconds
    // ahead of the clock (within the leeway), still pass.
    for bearer in [
        token_of("verify", pem, json!({})),
        token(pem, json!({ "iat": now() + 5 })),
    ] {
        assert_run_finishes(&gw, &bearer).await;
    }
    // A verified token and a second Authorization: refused before any
    // check, and the agent never sees either.
    let before = recorder.requests().len();
    let response = client()
        .post(format!("{}/agui", gw.url()))
        .bearer_auth(token(pem, json!({})))
        .header("authorization", "Bearer unverified")
        .json(&run_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(recorder.requests().len(), before);
}
