//! Issue 24's findings replayed against the gateway (the release build when
//! `AGUI_GATEWAY_BIN` names it, as `scripts/test.sh` does), each in front
//! of a hostile agent on loopback that records every request it gets and
//! holds a configured secret header it must never see echoed anywhere.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::edge::{Recorder, Seen, raw, write_config};
use crate::support::*;

/// What an agent's error body tries to leak.
const LEAKS: [&str; 3] = ["10.1.2.3", "abc123", "S3CRET"];

/// A forged access-log line, after a line break in an agent's body.
const FORGED: &str = "2026-11-24T00:00:00.000000Z  INFO agui_gateway::access: request method=GET path=/forged status=200";

/// The agent: each route below `/{name}/` is one hostile behaviour.
async fn hostile_agent() -> (SocketAddr, Recorder) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let recorder = Recorder::default();
    let app = Router::new().fallback(behave).with_state(recorder.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, recorder)
}

fn sse_of(events: Vec<Value>) -> Response {
    let body: String = events
        .into_iter()
        .map(|result| {
            format!(
                "data: {}\n\n",
                json!({ "jsonrpc": "2.0", "id": 1, "result": result })
            )
        })
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn data_part(data: Value) -> Value {
    json!({ "kind": "artifact-update", "taskId": "t1", "contextId": "c1", "lastChunk": true,
        "artifact": { "artifactId": "state", "parts": [{ "kind": "data", "data": data }] } })
}

/// 24 copies of the whole state into itself: each doubles it.
fn doubling_patch() -> Value {
    let ops: Vec<Value> = (0..24)
        .map(|k| json!({ "op": "copy", "from": "", "path": format!("/k{k}") }))
        .collect();
    json!({ "type": "agui-state-delta", "patch": ops })
}

async fn behave(State(recorder): State<Recorder>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    recorder.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        target: path.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let agent = path.split('/').nth(1).unwrap_or_default().to_owned();
    if path.ends_with("/.well-known/agent-card.json") {
        let mut card = axum::Json(json!({ "name": agent, "protocolVersion": "0.3.0",
            "url": format!("http://{}/{agent}/", parts.headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("")),
            "capabilities": { "streaming": true } }))
        .into_response();
        card.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=600"),
        );
        return card;
    }
    let working =
        json!({ "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": "working" } });
    let done = json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "final": true,
        "status": { "state": "completed" } });
    match agent.as_str() {
        "bomb" => sse_of(vec![working, data_part(doubling_patch()), done]),
        "snapbomb" => sse_of(vec![
            working,
            data_part(
                json!({ "type": "agui-state-snapshot", "snapshot": { "seed": "x".repeat(4096) } }),
            ),
            data_part(doubling_patch()),
            done,
        ]),
        "cors" => {
            let mut response = "agent body".into_response();
            let headers = response.headers_mut();
            for (name, value) in [
                ("access-control-allow-origin", "https://evil.test"),
                ("access-control-allow-credentials", "true"),
                ("access-control-expose-headers", "x-internal"),
                (
                    "strict-transport-security",
                    "max-age=63072000; includeSubDomains",
                ),
                ("alt-svc", "h2=\"evil.test:443\""),
                ("set-cookie", "agent=1"),
                ("x-agent", "kept"),
            ] {
                headers.insert(name, HeaderValue::from_static(value));
            }
            response
        }
        "e500" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({ "error": "db failed internal-host=10.1.2.3 token=abc123" })),
        )
            .into_response(),
        "problem" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "application/problem+json")],
            json!({ "type": "about:blank", "title": "Internal", "status": 500,
                "detail": "upstream internal-host=10.1.2.3 token=abc123" })
            .to_string(),
        )
            .into_response(),
        "rpcerr" => axum::Json(
            json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32603,
            "message": "the model failed\ninternal-host=10.1.2.3 token=abc123",
            "data": { "trace": "token=abc123" } } }),
        )
        .into_response(),
        "e502" => (
            StatusCode::BAD_GATEWAY,
            [(header::CONTENT_TYPE, "text/plain")],
            format!("bad gateway\n{FORGED}\n"),
        )
            .into_response(),
        _ => (StatusCode::OK, Body::from(Bytes::from_static(b"{}"))).into_response(),
    }
}

const AGENTS: [&str; 7] = [
    "bomb", "snapbomb", "cors", "e500", "problem", "rpcerr", "e502",
];

fn config_for(up: SocketAddr, extra: &str) -> std::path::PathBuf {
    let mut text = format!("default_agent = \"cors\"\n{extra}\n");
    for name in AGENTS {
        text.push_str(&format!(
            "[agents.{name}]\nupstream = \"http://{up}/{name}/\"\nheaders = {{ \"X-Upstream-Secret\" = \"S3CRET\" }}\n"
        ));
    }
    // A file of its own per gateway: a gateway reloads the file it was
    // started with when it changes.
    static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    write_config(&format!("hardening-{}-{n}.toml", up.port()), &text)
}

fn start(config: &std::path::Path, log: Option<&std::path::Path>) -> Process {
    let mut command = Command::new(gateway_binary());
    command.args([
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    match log {
        Some(log) => {
            command
                .env("AGUI_GATEWAY_LOG", "info")
                .stderr(std::fs::File::create(log).unwrap());
            start_reporting(
                command,
                "listening on ",
                "the gateway",
                Duration::from_secs(30),
            )
        }
        None => {
            command.env("AGUI_GATEWAY_LOG", "warn");
            start_within(
                command,
                "listening on ",
                "the gateway",
                Duration::from_secs(30),
            )
        }
    }
}

/// An AG-UI run of `agent` from a client before 1.0 (no `protocolVersion`)
/// that shares state: the gateway follows the state for it.
async fn run_of(gw: &Process, agent: &str) -> String {
    let body = json!({ "threadId": format!("th-{agent}"), "runId": "r1", "state": {},
        "messages": [{ "id": format!("u-{agent}"), "role": "user", "content": "go" }] });
    let response = client()
        .post(format!("{}/v1/agents/{agent}/agui", gw.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{agent}");
    tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .expect("the run ends")
        .unwrap()
}

#[tokio::test]
async fn a_state_patch_that_doubles_itself_stops_at_the_bound() {
    let (up, _recorder) = hostile_agent().await;
    let gw = start(&config_for(up, ""), None);
    for agent in ["bomb", "snapbomb"] {
        let started = Instant::now();
        let text = run_of(&gw, agent).await;
        let events = agui_events(&text);
        assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{agent}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{agent}: {:?}",
            started.elapsed()
        );
        // The patch is passed on as it came (the state is no longer
        // followed): never a snapshot of the doubled state.
        let delta = events
            .iter()
            .find(|e| e["type"] == "STATE_DELTA")
            .expect("the delta");
        assert_eq!(delta["delta"].as_array().map(Vec::len), Some(24), "{agent}");
        assert!(text.len() < 64 << 10, "{agent}: {} bytes out", text.len());
        let health = tokio::time::timeout(
            Duration::from_secs(1),
            http_get(format!("{}/healthz", gw.url())),
        )
        .await
        .expect("/healthz answers");
        assert_eq!(health.status(), 200);
    }
    let peak = peak_rss_mib(gw.child.id());
    println!("the patch bombs: peak RSS {peak} MiB");
    assert!(peak < 100, "peak RSS {peak} MiB");
}

#[tokio::test]
async fn the_agents_cors_and_origin_wide_headers_never_pass() {
    let (up, _recorder) = hostile_agent().await;
    let plain = start(&config_for(up, ""), None);
    let cors = start(
        &config_for(
            up,
            "[cors]\nallow_origins = [\"https://*.example.com\"]\nallow_credentials = true",
        ),
        None,
    );
    for (gw, origin) in [
        (&plain, "https://evil.test"),
        (&plain, "https://app.example.com"),
        (&cors, "https://evil.test"),
    ] {
        let response = client()
            .get(format!("{}/v1/agents/cors/anything", gw.url()))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let names: Vec<String> = response.headers().keys().map(|k| k.to_string()).collect();
        for refused in [
            "access-control-",
            "strict-transport-security",
            "alt-svc",
            "set-cookie",
        ] {
            assert!(
                !names.iter().any(|n| n.starts_with(refused)),
                "{origin}: {names:?}"
            );
        }
        assert_eq!(response.headers()["x-agent"], "kept");
        assert_eq!(response.text().await.unwrap(), "agent body");
    }
    // An allowed origin gets the gateway's answer, not the agent's.
    let response = client()
        .get(format!("{}/v1/agents/cors/anything", cors.url()))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    let headers = response.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example.com"
    );
    assert_eq!(headers["access-control-allow-credentials"], "true");
    assert!(
        headers
            .get("access-control-expose-headers")
            .is_none_or(|v| !v.to_str().unwrap().contains("x-internal"))
    );
}

#[tokio::test]
async fn agent_error_bodies_stay_in_the_log_and_the_log_stays_one_line_per_event() {
    let (up, _recorder) = hostile_agent().await;
    let log = std::env::temp_dir().join(format!("agui-gateway-hardening-{}.log", up.port()));
    let gw = start(&config_for(up, ""), Some(&log));
    for (agent, code) in [
        // Error bodies: only their code is read.
        ("e500", "A2A_ERROR"),
        ("problem", "A2A_ERROR"),
        ("rpcerr", "A2A_INTERNAL_ERROR"),
        ("e502", "UPSTREAM_HTTP_ERROR"),
    ] {
        let text = run_of(&gw, agent).await;
        let events = agui_events(&text);
        let last = assert_valid_run(&events);
        assert_eq!(
            (last["type"].as_str(), last["code"].as_str()),
            (Some("RUN_ERROR"), Some(code)),
            "{agent}"
        );
        for leak in LEAKS.iter().chain(&["db failed", "bad gateway", "forged"]) {
            assert!(!text.contains(leak), "{agent}: {leak} in {text}");
        }
        let message = last["message"].as_str().unwrap();
        assert!(!message.contains('\n'), "{message:?}");
    }
    // A JSON-RPC error's own message, its first line only, names the agent.
    let text = run_of(&gw, "rpcerr").await;
    let events = agui_events(&text);
    assert_eq!(
        assert_valid_run(&events)["message"],
        "the agent reported an error: the model failed"
    );
    // The bodies went to the log, escaped: the forged line is not a line.
    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.contains("path=/forged") || Instant::now() > deadline {
            break logged;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(logged.contains("internal-host=10.1.2.3"), "{logged}");
    assert!(
        logged.contains("\\n2026-11-24T00:00:00.000000Z"),
        "{logged}"
    );
    assert!(
        !logged
            .lines()
            .any(|line| line.starts_with("2026-11-24T00:00:00")),
        "{logged}"
    );
    assert!(!logged.contains("S3CRET"));
}

#[tokio::test]
async fn methods_are_case_sensitive_and_the_target_authority_names_the_card() {
    let (up, recorder) = hostile_agent().await;
    let gw = start(&config_for(up, ""), None);
    let addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    for method in ["trace", "TRACE", "get", "Post", "FOO", "CONNECT"] {
        let (status, _, body) = raw(
            addr,
            &format!(
                "{method} /v1/agents/cors/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert_eq!(status, 405, "{method}: {body}");
        assert!(body.contains("METHOD_NOT_ALLOWED"), "{body}");
    }
    let reached: Vec<String> = recorder
        .requests()
        .iter()
        .map(|s| s.method.clone())
        .collect();
    assert!(
        reached.iter().all(|m| m == "GET" || m == "POST"),
        "the agent got {reached:?}"
    );
    assert!(!reached.iter().any(|m| m.eq_ignore_ascii_case("trace")));

    // RFC 9112 3.2.2: the absolute-form target's authority wins over Host.
    let (status, head, body) = raw(
        addr,
        "GET http://gw.example/v1/agents/cors/.well-known/agent-card.json HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{head}");
    let body = body.lines().find(|l| l.starts_with('{')).unwrap_or(&body);
    let card: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(card["url"], "http://gw.example/v1/agents/cors/");
    assert!(!body.contains("evil.test"), "{body}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("vary: host"), "{head}");
    assert!(
        head.contains("cache-control: private, max-age=600"),
        "{head}"
    );
    // User information in the target is no host either.
    let (_, _, body) = raw(
        addr,
        "GET http://user:pw@gw.example/v1/agents/cors/.well-known/agent-card.json HTTP/1.1\r\nHost: gw.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(!body.contains("pw@"), "{body}");
    // The agents' list is built from the host as the card is.
    let (_, head, _) = raw(
        addr,
        "GET /v1/agents HTTP/1.1\r\nHost: gw.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(head.to_ascii_lowercase().contains("vary: host"), "{head}");
    // A Host that is not a host is not used.
    let (_, _, body) = raw(
        addr,
        "GET /v1/agents/cors/.well-known/agent-card.json HTTP/1.1\r\nHost: evil.test/x?y\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(!body.contains("evil.test"), "{body}");
}

#[tokio::test]
async fn a_second_authorization_header_is_refused_before_anything_else() {
    let (up, recorder) = hostile_agent().await;
    let gw = start(&config_for(up, ""), None);
    let before = recorder.requests().len();
    let response = client()
        .get(format!("{}/v1/agents/cors/x", gw.url()))
        .header("authorization", "Bearer first")
        .header("authorization", "Bearer second")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "DUPLICATE_CREDENTIAL");
    assert_eq!(body["error"]["side"], "client");
    let after: Vec<Seen> = recorder.requests();
    assert!(
        after[before..]
            .iter()
            .all(|s| s.target.ends_with("agent-card.json")),
        "{:?}",
        &after[before..]
    );
}
