//! The edge under attack: every attack of issue 9 replayed against a
//! gateway configured as there, with a recording upstream below
//! `/agents/a/` and a canary listener that must never be reached.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// One request as the recording upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

#[derive(Clone, Default)]
pub struct Recorder {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Where the card of `/agents/a/` says to send calls.
    card_url: Arc<Mutex<String>>,
}

impl Recorder {
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An A2A 0.3 agent mounted at `/agents/a/` (plus `/err/`, which answers
/// 500 with an internal-looking body, and `/big/`, whose card never ends)
/// that records every request it gets, wherever it was sent.
pub async fn recording_upstream() -> (SocketAddr, Recorder) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let recorder = Recorder::default();
    let app = Router::new().fallback(record).with_state(recorder.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, recorder)
}

async fn record(State(recorder): State<Recorder>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    recorder.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        target: target.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: body.clone(),
    });
    let path = parts.uri.path();
    if path == "/agents/a/.well-known/agent-card.json" || path == "/err/.well-known/agent-card.json"
    {
        let url = recorder.card_url.lock().unwrap().clone();
        return axum::Json(
            json!({ "name": "recorded", "url": url, "protocolVersion": "0.3.0",
            "capabilities": { "streaming": true } }),
        )
        .into_response();
    }
    if path == "/big/.well-known/agent-card.json" {
        // 64 KiB chunks, for ever (bounded by the test's lifetime).
        let chunk = Bytes::from(vec![b' '; 64 << 10]);
        let stream = futures::stream::repeat(chunk)
            .take(2_000)
            .map(Ok::<_, std::io::Error>);
        return (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from_stream(
                futures::stream::once(async { Ok(Bytes::from_static(b"{\"name\":\"")) })
                    .chain(stream),
            ),
        )
            .into_response();
    }
    if path.starts_with("/err/") {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "upstream stack trace: connect to internal-db.corp.example:5432 failed",
        )
            .into_response();
    }
    if path == "/agents/a/hop" {
        let mut response = "hop".into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("x-hop-secret"));
        headers.insert("x-hop-secret", HeaderValue::from_static("1"));
        return response;
    }
    if parts.method == axum::http::Method::POST && path == "/agents/a/" {
        if body["method"] == "tasks/cancel" {
            return axum::Json(json!({ "jsonrpc": "2.0", "id": body["id"], "result": {
                "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": "canceled" } } }))
            .into_response();
        }
        let text = body
            .pointer("/params/message/parts/0/text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let frame = |result: Value| {
            Ok::<_, std::io::Error>(Bytes::from(format!(
                "data: {}\n\n",
                json!({ "jsonrpc": "2.0", "id": 1, "result": result })
            )))
        };
        let mut frames = vec![
            frame(
                json!({ "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": "working" } }),
            ),
            frame(
                json!({ "kind": "artifact-update", "taskId": "t1", "contextId": "c1",
                "artifact": { "artifactId": "a", "parts": [{ "kind": "text", "text": "recorded" }] } }),
            ),
        ];
        let endless = text == "endless";
        if !endless {
            frames.push(frame(
                json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1",
                "status": { "state": "completed" }, "final": true }),
            ));
        }
        let tail = futures::stream::once(async move {
            if endless {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            Ok(Bytes::new())
        });
        let mut response =
            Response::new(Body::from_stream(futures::stream::iter(frames).chain(tail)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        return response;
    }
    if path.starts_with("/agents/a/") {
        return format!("upstream got {target}").into_response();
    }
    (StatusCode::NOT_FOUND, "outside every base").into_response()
}

/// A listener that only counts connections: nothing may ever reach it.
pub async fn canary() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (addr, count)
}

/// A free loopback port (bound, then released) for a gateway whose own
/// address must be in its configuration.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends exact request bytes and reads the whole answer (the request says
/// `Connection: close`): status, head and body.
pub async fn raw(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(20), exchange)
        .await
        .unwrap_or_else(|_| panic!("no answer to {request:?}"))
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// The gateway on a given port (its own address is in its configuration).
pub fn gateway_on(port: u16, args: &[&str]) -> Process {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"));
    command
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("AGUI_GATEWAY_LOG", "warn");
    start_within(
        command,
        "listening on ",
        "the gateway",
        Duration::from_secs(30),
    )
}

pub fn write_config(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-gateway-edge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn every_edge_attack_is_refused_and_nothing_leaks() {
    let (up, recorder) = recording_upstream().await;
    let (canary_addr, canary_hits) = canary().await;
    // The card of /agents/a/ names the canary: calls must not follow it.
    *recorder.card_url.lock().unwrap() = format!("http://{canary_addr}/rpc");
    let closed = free_port();
    let port = free_port();
    let config = write_config(
        "attack.toml",
        &format!(
            "listen = \"127.0.0.1:{port}\"\ngateway_id = \"gw-test\"\ndefault_agent = \"a\"\ndetach_grace_secs = 0\n\
             [agents.a]\nupstream = \"http://{up}/agents/a/\"\nheaders = {{ \"X-API-KEY\" = \"secret\" }}\ncancel_on_disconnect = true\n\
             [agents.loop]\nupstream = \"http://127.0.0.1:{port}/v1/agents/loop/\"\na2a_version = \"0.3\"\n\
             [agents.big]\nupstream = \"http://{up}/big/\"\n\
             [agents.err]\nupstream = \"http://{up}/err/\"\n\
             [agents.down]\nupstream = \"http://127.0.0.1:{closed}/internal/\"\n"
        ),
    );
    let gw = gateway_on(port, &["--config", config.to_str().unwrap()]);
    let gw_addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    let canary = canary_addr.to_string();

    // Open proxy and traversal, on plain, negotiated and ?format=agui routes.
    let paths = [
        format!("/http://{canary}/x"),
        format!("/v1/agents/a/http://{canary}/x"),
        format!("/v1/agents/a/https:%2F%2F{canary}/x"),
        format!("/\\\\{canary}/x"),
        format!("//{canary}/x"),
        format!("/v1/agents/a//{canary}/x"),
        format!("/%2F%2F{canary}/x"),
        "/v1/agents/a/%2e%2e/%2e%2e/secret-admin".to_owned(),
        "/v1/agents/a/..%2F..%2Fsecret-admin".to_owned(),
        "/v1/agents/a/%252e%252e/%252e%252e/secret-admin".to_owned(),
        "/v1/agents/a/x/../../../secret-admin".to_owned(),
        "/%2e%2e/%2e%2e/secret-admin".to_owned(),
    ];
    let mut refused = 0;
    for path in &paths {
        for (method, extra, query) in [
            ("GET", "", ""),
            ("POST", "Accept: application/x-agui-events\r\n", ""),
            ("POST", "", "?format=agui"),
        ] {
            let body = r#"{"request": {"role": "user", "parts": [{"text": "Hello"}]}}"#;
            let request = format!(
                "{method} {path}{query} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n{extra}Authorization: Bearer user-token\r\nCookie: session=1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let (status, _, answer) = raw(gw_addr, &request).await;
            assert_ne!(status, 200, "{method} {path}{query} went through: {answer}");
            if status == 400 {
                refused += 1;
                assert!(answer.contains("INVALID_PATH"), "{path}: {answer}");
            }
        }
    }
    // Absolute-form and authority-form targets name the canary too.
    for request in [
        format!("GET http://{canary}/x HTTP/1.1\r\nHost: {canary}\r\nConnection: close\r\n\r\n"),
        format!("CONNECT {canary} HTTP/1.1\r\nHost: {canary}\r\nConnection: close\r\n\r\n"),
    ] {
        let _ = raw(gw_addr, &request).await;
    }
    assert_eq!(refused, paths.len() * 3, "every hostile path is a 400");

    // Self-loop amplification: nested gateway URLs, and an agent whose
    // upstream is the gateway itself.
    let nested = format!("/http://127.0.0.1:{port}").repeat(2_500);
    for _ in 0..3 {
        let request = format!("GET {nested}/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
        let (status, _, _) = raw(gw_addr, &request).await;
        assert!(
            status == 400 || status == 414 || status == 431,
            "nested: {status}"
        );
    }
    let (status, _, answer) = raw(
        gw_addr,
        "GET /v1/agents/loop/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 508, "{answer}");
    assert!(answer.contains("GATEWAY_LOOP"), "{answer}");

    // A converted run: configured key replaces the client's, hop-by-hop and
    // Connection-named headers stay, the card's foreign URL is ignored.
    let agui_body = json!({ "threadId": "t", "runId": "r", "messages": [
        { "id": "u", "role": "user", "content": "hi" }] })
    .to_string();
    let run = format!(
        "POST /agui HTTP/1.1\r\nHost: gw\r\nConnection: close, x-private\r\nx-private: 1\r\nProxy-Connection: x-private2\r\nx-private2: 1\r\nX-API-KEY: client-key\r\nAuthorization: Bearer user-token\r\nCookie: session=1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{agui_body}",
        agui_body.len()
    );
    let (status, _, answer) = raw(gw_addr, &run).await;
    assert_eq!(status, 200);
    assert!(answer.contains("RUN_FINISHED"), "{answer}");
    let sent = recorder
        .requests()
        .into_iter()
        .rfind(|s| s.method == "POST" && s.body["method"] == "message/stream")
        .expect("the run reached the upstream");
    assert_eq!(sent.target, "/agents/a/");
    assert_eq!(sent.all("x-api-key"), vec!["secret"]);
    assert_eq!(sent.all("authorization"), vec!["Bearer user-token"]);
    assert_eq!(sent.all("via"), vec!["1.1 gw-test"]);
    assert_eq!(sent.all("x-forwarded-for"), vec!["127.0.0.1"]);
    for gone in [
        "cookie",
        "x-private",
        "x-private2",
        "proxy-connection",
        "connection",
    ] {
        assert!(sent.all(gone).is_empty(), "{gone} went upstream");
    }

    // Passthrough: a Connection-named response header stays upstream.
    let (status, head, body) = raw(
        gw_addr,
        "GET /v1/agents/a/hop HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("hop"), "{body}");
    assert!(
        !head.to_ascii_lowercase().contains("x-hop-secret"),
        "{head}"
    );

    // The cancel after a disconnect carries the run's credentials.
    let client = client();
    let response = client
        .post(format!("{}/agui", gw.url()))
        .header("Authorization", "Bearer user-token")
        .json(&json!({ "threadId": "t2", "runId": "r2", "messages": [
            { "id": "u", "role": "user", "content": "endless" }] }))
        .send()
        .await
        .unwrap();
    read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let cancel = loop {
        if let Some(cancel) = recorder
            .requests()
            .into_iter()
            .find(|s| s.body["method"] == "tasks/cancel")
        {
            break cancel;
        }
        assert!(Instant::now() < deadline, "no cancel");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(cancel.all("authorization"), vec!["Bearer user-token"]);
    assert_eq!(cancel.all("x-api-key"), vec!["secret"]);

    // Errors name the side, not the place: no upstream address, no body.
    for agent in ["err", "down"] {
        let response = client
            .post(format!("{}/v1/agents/{agent}/agui", gw.url()))
            .json(&json!({ "threadId": "t3", "runId": "r3", "messages": [
                { "id": "u", "role": "user", "content": "hi" }] }))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let events = agui_events(&response);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "RUN_ERROR", "{agent}: {response}");
        let message = last["message"].as_str().unwrap();
        for secret in ["127.0.0.1", "internal", "5432", &closed.to_string()] {
            assert!(!message.contains(secret), "{agent}: {message}");
        }
    }
    let (_, _, answer) = raw(
        gw_addr,
        "GET /v1/agents/down/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        answer.contains("UPSTREAM_UNREACHABLE") && !answer.contains("127.0.0.1"),
        "{answer}"
    );

    // /readyz answers from the cached card state: 50 probes, no card storm,
    // and the endless card of /big/ is cut at the size cap.
    let cards_before = recorder
        .requests()
        .iter()
        .filter(|s| s.target.ends_with("agent-card.json"))
        .count();
    for _ in 0..50 {
        let ready: Value = http_get(format!("{}/readyz", gw.url()))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(ready["agents"]["big"]["ready"], false, "{ready}");
        assert!(!ready.to_string().contains("127.0.0.1"), "{ready}");
    }
    let cards_after = recorder
        .requests()
        .iter()
        .filter(|s| s.target.ends_with("agent-card.json"))
        .count();
    assert!(
        cards_after - cards_before <= 3,
        "{} card fetches for 50 probes",
        cards_after - cards_before
    );

    // What reached the upstream stayed below its bases; nothing reached the canary.
    for seen in recorder.requests() {
        assert!(
            ["/agents/a/", "/big/", "/err/"]
                .iter()
                .any(|base| seen.target.starts_with(base)),
            "the upstream got {} {}",
            seen.method,
            seen.target
        );
        assert!(!seen.target.contains("secret-admin"), "{}", seen.target);
        let keys = seen.all("x-api-key");
        assert!(keys.is_empty() || keys == vec!["secret"], "{keys:?}");
        if !seen.target.starts_with("/agents/a/") {
            assert!(keys.is_empty(), "the key went to {}", seen.target);
        }
    }
    assert_eq!(
        canary_hits.load(Ordering::SeqCst),
        0,
        "the canary was reached"
    );
    let rss = rss_kib(gw.child.id());
    eprintln!(
        "edge: {refused} path attacks refused with 400, {} upstream requests all below their bases, canary 0, RSS {rss} KiB",
        recorder.requests().len()
    );
    assert!(rss > 0 && rss < 100 * 1024, "RSS {rss} KiB");
}
