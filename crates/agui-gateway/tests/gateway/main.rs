//! Gateway integration tests over real loopback TCP: the `agui-gateway`
//! binary started as in production, in front of real A2A servers (a2a-sdk
//! 1.3.0 and 0.3.26, @a2a-js/sdk 1.3.0) and a fault-injecting fake, called
//! by reqwest and by the real `@ag-ui/client` 1.0.0, 0.0.59 and 0.0.48.
//! All in one binary, to link once.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod auth;
mod batching;
mod config;
mod cors;
mod edge;
mod frameworks;
mod framing;
mod hardening;
mod ids;
mod input;
mod limits;
mod logs;
mod matrix;
mod readme;
mod replicas;
mod resume;
mod support;
mod telemetry;

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use support::*;

pub const SEED_BODY: &str = r#"{"request": {"role": "user", "parts": [{"text": "Hello"}]}}"#;

fn stream_request(v10: bool, text: &str) -> (Value, Option<(&'static str, &'static str)>) {
    if v10 {
        (
            json!({ "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": { "message":
                { "role": "ROLE_USER", "messageId": "m1", "parts": [{ "text": text }] } } }),
            Some(("A2A-Version", "1.0")),
        )
    } else {
        (
            json!({ "jsonrpc": "2.0", "id": "r1", "method": "message/stream", "params": { "message":
                { "kind": "message", "role": "user", "messageId": "m1", "parts": [{ "kind": "text", "text": text }] } } }),
            None,
        )
    }
}

async fn post_text(
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (reqwest::StatusCode, String, String) {
    let mut request = client().post(url).json(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, response.text().await.expect("body"))
}

/// The seed's request on the default agent's negotiated route, with the
/// fake upstream's behaviour picked by `X-Fake`.
async fn fake_run(gw: &Process, scenario: &str) -> reqwest::Response {
    client()
        .post(format!("{}/v1/agents/default/stream?format=agui", gw.url()))
        .header("X-Fake", scenario)
        .body(SEED_BODY)
        .send()
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------
// Transparent mode

#[tokio::test]
async fn passthrough_keeps_sse_bytes_status_and_headers() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {} });
    let direct = client()
        .post(format!("http://{addr}/"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let via = client()
        .post(format!("{}/", gw.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(via.status(), direct.status());
    assert_eq!(
        via.headers()["content-type"],
        direct.headers()["content-type"]
    );
    let (direct, via) = (direct.bytes().await.unwrap(), via.bytes().await.unwrap());
    assert_eq!(via, direct, "SSE bytes must pass unchanged");
    assert_eq!(via, FIXED_SSE.as_bytes());
    // A body that fails at once still delivers the upstream's head.
    for _ in 0..30 {
        let via = client()
            .post(format!("{}/", gw.url()))
            .header("X-Fake", "fail-at-once")
            .json(&body)
            .send()
            .await
            .expect("the response head arrives");
        assert_eq!(via.status(), 200);
        assert_eq!(via.headers()["content-type"], "text/event-stream");
        assert!(via.bytes().await.is_err(), "the cut body stays cut");
    }
    // Error statuses and their bodies pass through too.
    let via = client()
        .post(format!("{}/", gw.url()))
        .header("X-Fake", "http500")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(via.status(), 500);
    assert_eq!(via.text().await.unwrap(), "internal failure in the agent");
}

#[tokio::test]
async fn passthrough_to_real_agents_gives_what_direct_calls_give() {
    for (agent_name, v10) in [
        ("python-v1", true),
        ("python-v1", false),
        ("python-v03", false),
        ("js-v1", true),
    ] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &[]);
        let path = jsonrpc_path(agent_name);
        let (body, header) = stream_request(v10, "chunks");
        let headers: Vec<_> = header.into_iter().collect();
        let (s1, ct1, direct) = post_text(&format!("{}{path}", agent.url()), &body, &headers).await;
        let (s2, ct2, via) = post_text(&format!("{}{path}", gw.url()), &body, &headers).await;
        assert_eq!((s1, &ct1), (s2, &ct2), "{agent_name}");
        // Ids and timestamps differ per call; the framing and the shape do not.
        assert_eq!(
            direct.matches("data:").count(),
            via.matches("data:").count(),
            "{agent_name}"
        );
        assert_eq!(
            direct.contains("\r\n"),
            via.contains("\r\n"),
            "{agent_name}: line endings kept"
        );
        assert!(
            via.contains("completed") || via.contains("TASK_STATE_COMPLETED"),
            "{agent_name}: {via}"
        );
    }
}

#[tokio::test]
async fn the_card_points_at_the_gateway_and_declares_ag_ui() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &["--name", "py"]);
    let card: Value = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let gw_base = format!("{}/", gw.url());
    assert_eq!(card["url"], gw_base);
    for iface in card["supportedInterfaces"].as_array().unwrap() {
        assert!(
            iface["url"].as_str().unwrap().starts_with(&gw.url()),
            "{iface}"
        );
    }
    assert_eq!(
        card["additionalInterfaces"][0]["url"],
        format!("{}/rest", gw.url())
    );
    // The card has its own ETag (the body changed), and revalidates.
    let response = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .send()
        .await
        .unwrap();
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let again = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    for uri in [
        "https://ag-ui.org/protocol/v1",
        // What the gateway carries from AG-UI clients (issue 10).
        "urn:agui-gateway:a2a-extension:agui-input:v1",
    ] {
        assert!(extensions.iter().any(|e| e["uri"] == uri), "{uri}");
    }
    assert!(
        extensions.iter().any(|e| e["uri"]
            == "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol"),
        "the agent's own extensions stay"
    );
    // Behind a proxy: X-Forwarded-Proto/Host/Prefix; and a named agent's card.
    let card: Value = client()
        .get(format!(
            "{}/v1/agents/py/.well-known/agent-card.json",
            gw.url()
        ))
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "agents.example.com")
        .header("X-Forwarded-Prefix", "/edge")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["url"], "https://agents.example.com/edge/v1/agents/py/");
    assert_eq!(
        card["additionalInterfaces"][0]["url"],
        "https://agents.example.com/edge/v1/agents/py/rest"
    );
    let list: Value = client()
        .get(format!("{}/v1/agents", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["agents"][0]["name"], "py");
    assert_eq!(list["agents"][0]["cardName"], card["name"]);
}

// ---------------------------------------------------------------------------
// Negotiation

#[tokio::test]
async fn negotiation_by_header_and_by_query_in_both_dialects_on_every_agent() {
    for (agent_name, v10) in [
        ("python-v1", true),
        ("python-v1", false),
        ("python-v03", false),
        ("js-v1", true),
        ("js-v1", false),
    ] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &[]);
        let path = jsonrpc_path(agent_name);
        let (body, header) = stream_request(v10, "chunks");
        let mut headers: Vec<_> = header.into_iter().collect();
        headers.push(("Accept", "application/x-agui-events"));
        let (status, content_type, text) =
            post_text(&format!("{}{path}", gw.url()), &body, &headers).await;
        assert_eq!(status, 200);
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        let events = agui_events(&text);
        let last = assert_valid_run(&events);
        assert_eq!(
            last["result"]["state"], "completed",
            "{agent_name} v10={v10}: {text}"
        );
        assert!(
            text_of(&events).contains("streaming"),
            "{agent_name}: {}",
            text_of(&events)
        );
        assert!(
            events.iter().all(|e| e["timestamp"].is_u64()),
            "integer timestamps"
        );

        let (body, header) = stream_request(v10, "chunks");
        let headers: Vec<_> = header.into_iter().collect();
        let (_, _, text) = post_text(
            &format!("{}{path}?format=agui&dialect=hector", gw.url()),
            &body,
            &headers,
        )
        .await;
        let named = hector_events(&text);
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names.first(),
            Some(&"message_start"),
            "{agent_name}: {text}"
        );
        assert!(
            names.contains(&"content_block_delta") && names.contains(&"task_complete"),
            "{names:?}"
        );
        assert_eq!(names.last(), Some(&"done"));
    }
}

#[tokio::test]
async fn the_seed_s_curl_works_as_written_whatever_the_upstream_dialect() {
    for agent_name in ["python-v1", "python-v03", "js-v1"] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &["--name", "assistant"]);
        for (url, accept) in [
            (
                format!("{}/v1/agents/assistant/stream", gw.url()),
                Some("application/x-agui-events"),
            ),
            (
                format!("{}/v1/agents/assistant/stream?format=agui", gw.url()),
                None,
            ),
        ] {
            let mut request = client().post(&url).body(SEED_BODY);
            if let Some(accept) = accept {
                request = request.header("Accept", accept);
            }
            let text = request.send().await.unwrap().text().await.unwrap();
            let events = agui_events(&text);
            let last = assert_valid_run(&events);
            assert_eq!(last["type"], "RUN_FINISHED", "{agent_name}: {text}");
            assert!(!text_of(&events).is_empty(), "{agent_name}: {text}");
        }
    }
}

#[tokio::test]
async fn a_negotiated_send_returns_its_result_as_an_event_stream() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &[]);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": { "message":
        { "kind": "message", "role": "user", "messageId": "m1", "parts": [{ "kind": "text", "text": "chunks" }] } } });
    let (status, content_type, text) = post_text(
        &format!("{}/", gw.url()),
        &body,
        &[("Accept", "application/x-agui-events")],
    )
    .await;
    assert_eq!(
        (status.as_u16(), content_type.as_str()),
        (200, "text/event-stream")
    );
    let events = agui_events(&text);
    assert_eq!(
        assert_valid_run(&events)["result"]["state"],
        "completed",
        "{text}"
    );
    assert!(text_of(&events).contains("streaming"), "{text}");
}

#[tokio::test]
async fn malformed_requests_get_a_4xx_json_body_before_any_stream() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    for (url, body) in [
        (format!("{}/?format=agui", gw.url()), "{not json"),
        (format!("{}/?format=agui", gw.url()), r#"{"hello": 1}"#),
        (
            format!("{}/v1/agents/default/stream?format=agui", gw.url()),
            r#"{"request": {"role": "agent", "parts": [{"text": "x"}]}}"#,
        ),
        (format!("{}/agui", gw.url()), r#"{"messages": []}"#),
        (format!("{}/agui", gw.url()), "[]"),
    ] {
        let response = client().post(&url).body(body).send().await.unwrap();
        assert_eq!(response.status(), 400, "{url} {body}");
        let json: Value = response.json().await.unwrap();
        assert!(
            json["error"]["message"].is_string() && json["error"]["side"] == "client",
            "{json}"
        );
    }
    // Too large, on every route: 413 with a JSON body.
    let big = format!(
        "{{\"threadId\": \"t\", \"runId\": \"r\", \"messages\": [], \"pad\": \"{}\"}}",
        "x".repeat(5 << 20)
    );
    for url in [
        format!("{}/agui", gw.url()),
        format!("{}/?format=agui", gw.url()),
    ] {
        let response = client().post(&url).body(big.clone()).send().await.unwrap();
        assert_eq!(response.status(), 413, "{url}");
        let json: Value = response.json().await.unwrap();
        assert_eq!(json["error"]["code"], "REQUEST_TOO_LARGE");
    }
    let response = client()
        .post(format!("{}/v1/agents/nobody/agui", gw.url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

// ---------------------------------------------------------------------------
// The AG-UI endpoint, with the real clients

pub fn run_client(version: &str, url: &str, extra: &[&str]) -> Value {
    let script = repo_root().join("tests/conformance/node/run-agent.mjs");
    let output = std::process::Command::new("node")
        .arg(script)
        .args(["--client", version, "--url", url, "--timeout-ms", "30000"])
        .args(extra)
        .output()
        .expect("node runs (tests/conformance/setup.sh installs the clients)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!(
                "no result from @ag-ui/client {version}: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    serde_json::from_str(line).expect("JSON line")
}

#[tokio::test]
async fn every_ag_ui_client_version_runs_against_the_agui_endpoint() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let run = run_client(version, &url, &["--message", "hector"]);
        assert_eq!(run["ok"], true, "{version}: {run}");
        let types: Vec<&str> = run["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(types.last(), Some(&"RUN_FINISHED"), "{version}: {types:?}");
        assert!(
            types.contains(&"REASONING_MESSAGE_CONTENT") && types.contains(&"TOOL_CALL_RESULT"),
            "{version}: {types:?}"
        );
        let messages = run["newMessages"].as_array().unwrap();
        assert!(
            messages.iter().any(|m| m["role"] == "assistant"
                && m["content"].as_str().is_some_and(|c| c.contains("sunny"))),
            "{version}: {messages:?}"
        );
        assert!(
            messages
                .iter()
                // The agent's id, tagged per run (unique in the thread).
                .any(|m| m["role"] == "tool"
                    && m["toolCallId"]
                        .as_str()
                        .is_some_and(|id| id.starts_with("call-1~"))),
            "{version}: {messages:?}"
        );
    }
    // HttpAgent pointed at a negotiated A2A route posts the same RunAgentInput.
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let url = format!("{}/v1/agents/default/stream?format=agui", gw.url());
        let run = run_client(version, &url, &["--message", "chunks"]);
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(
            run["types"].as_array().unwrap().last().unwrap(),
            "RUN_FINISHED",
            "{version}: {run}"
        );
    }
}

#[tokio::test]
async fn a_thread_waiting_for_input_continues_its_task() {
    for agent_name in ["python-v1", "js-v1"] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &[]);
        let url = format!("{}/agui", gw.url());
        // First turn ends waiting; the question carries the task id.
        let first = json!({ "threadId": format!("thread-{agent_name}"), "runId": "run-1", "messages": [
            { "id": "u1", "role": "user", "content": "input-required" }], "tools": [], "context": [], "forwardedProps": {} });
        let (_, _, text) = post_text(&url, &first, &[]).await;
        let events = agui_events(&text);
        let last = assert_valid_run(&events);
        assert_eq!(last["result"]["state"], "input-required", "{text}");
        let thread = format!("thread-{agent_name}");
        for event in [&events[0], last] {
            assert_eq!(
                (event["threadId"].as_str(), event["runId"].as_str()),
                (Some(thread.as_str()), Some("run-1"))
            );
        }
        assert_eq!(
            last["result"]["contextId"],
            thread.as_str(),
            "threadId is the A2A contextId"
        );
        let task = last["result"]["taskId"].as_str().unwrap().to_owned();
        let end = events
            .iter()
            .rev()
            .find(|e| e["type"] == "TEXT_MESSAGE_END")
            .unwrap();
        assert_eq!(end["metadata"]["a2a"]["taskId"], task.as_str());
        // Second turn, as 1.0 sends it (metadata kept on the message)...
        let second = json!({ "threadId": format!("thread-{agent_name}"), "runId": "run-2", "messages": [
            { "id": "u1", "role": "user", "content": "input-required" },
            { "id": "m1", "role": "assistant", "content": "Which city?", "metadata": end["metadata"] },
            { "id": "u2", "role": "user", "content": "Paris" }] });
        let (_, _, text) = post_text(&url, &second, &[]).await;
        let events = agui_events(&text);
        let last = assert_valid_run(&events);
        assert_eq!(last["result"]["state"], "completed", "{agent_name}: {text}");
        assert_eq!(
            last["result"]["taskId"],
            task.as_str(),
            "the same task continued"
        );
        assert!(text_of(&events).contains("Paris"), "{text}");
    }
    // ...and as 0.0.x sends it (no metadata): the gateway's memory.
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    let first = json!({ "threadId": "t-old", "runId": "r1", "messages": [{ "id": "u1", "role": "user", "content": "input-required" }] });
    let (_, _, text) = post_text(&url, &first, &[]).await;
    let task = assert_valid_run(&agui_events(&text))["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = json!({ "threadId": "t-old", "runId": "r2", "messages": [
        { "id": "u1", "role": "user", "content": "input-required" }, { "id": "m1", "role": "assistant", "content": "Which city?" },
        { "id": "u2", "role": "user", "content": "Rome" }] });
    let (_, _, text) = post_text(&url, &second, &[]).await;
    let last = assert_valid_run(&agui_events(&text)).clone();
    assert_eq!(
        (
            last["result"]["state"].as_str(),
            last["result"]["taskId"].as_str()
        ),
        (Some("completed"), Some(task.as_str())),
        "{text}"
    );
}

#[tokio::test]
async fn an_a2ui_action_goes_back_as_an_a2ui_part_with_its_extension_for_that_request_only() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let action = json!({ "userAction": { "name": "book", "surfaceId": "booking",
        "sourceComponentId": "submit", "timestamp": "2026-11-23T09:00:00Z", "context": { "guests": 2 } } });
    let input = json!({ "threadId": "t-ui", "runId": "r1", "messages": [{ "id": "u", "role": "user", "content": "book it" }],
        "forwardedProps": { "a2uiAction": action } });
    let (_, _, text) = post_text(&format!("{}/agui", gw.url()), &input, &[]).await;
    assert_valid_run(&agui_events(&text));
    let header = |headers: &[(String, String)], name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let (headers, body) = {
        let log = fake.log.lock().unwrap();
        (log.headers.clone(), log.body.clone())
    };
    let parts = &body["params"]["message"]["parts"];
    assert_eq!(parts[0], json!({ "kind": "text", "text": "book it" }));
    assert_eq!(
        parts[1],
        json!({ "kind": "data", "data": action, "metadata": { "mimeType": "application/json+a2ui" } })
    );
    let v08 = "https://a2ui.org/a2a-extension/a2ui/v0.8";
    assert_eq!(header(&headers, "x-a2a-extensions").as_deref(), Some(v08));
    assert_eq!(header(&headers, "a2a-extensions").as_deref(), Some(v08));
    // The next run of the same thread carries no action: no extension.
    let input = json!({ "threadId": "t-ui", "runId": "r2", "messages": [{ "id": "u2", "role": "user", "content": "thanks" }] });
    let (_, _, text) = post_text(&format!("{}/agui", gw.url()), &input, &[]).await;
    assert_valid_run(&agui_events(&text));
    let headers = fake.log.lock().unwrap().headers.clone();
    assert_eq!(header(&headers, "x-a2a-extensions"), None);
    // Not an A2UI action: a 400 before anything goes upstream.
    let input = json!({ "threadId": "t-ui", "runId": "r3", "messages": [{ "id": "u3", "role": "user", "content": "x" }],
        "forwardedProps": { "a2uiAction": "book" } });
    let (status, _, text) = post_text(&format!("{}/agui", gw.url()), &input, &[]).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("INVALID_RUN_INPUT"), "{text}");
}

#[tokio::test]
async fn forwarded_props_metadata_and_extensions_reach_the_agent() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let metadata = json!({ "user": { "userId": "u1" }, "device": { "clientIp": "1.2.3.4", "deviceId": "d1" },
        "location": { "city": "Hangzhou", "longitude": "120.1", "latitude": "30.2" }, "userDefinedParams": { "p": "v" },
        "commandResults": [{ "commandRequestId": "cmd-1", "opaque": true }], "images": [{ "type": "url", "value": "https://img/1.png" }], "chatId": "chat-1" });
    let input = json!({ "threadId": "t", "runId": "r", "messages": [{ "id": "u", "role": "user", "content": [
            { "type": "text", "text": "what is in this picture?" },
            { "type": "image", "source": { "type": "url", "value": "https://img/1.png", "mimeType": "image/png" } }] }],
        "forwardedProps": { "a2a": { "metadata": metadata, "extensions": ["https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol"] } } });
    let (_, _, text) = post_text(
        &format!("{}/agui", gw.url()),
        &input,
        &[("Accept-Encoding", "gzip, deflate")],
    )
    .await;
    assert_valid_run(&agui_events(&text));
    let (headers, body) = {
        let log = fake.log.lock().unwrap();
        (log.headers.clone(), log.body.clone())
    };
    let encoding = headers
        .iter()
        .find(|(k, _)| k == "accept-encoding")
        .map(|(_, v)| v.as_str());
    assert_eq!(
        encoding,
        Some("identity"),
        "a converted answer must come uncompressed"
    );
    let message = &body["params"]["message"];
    assert_eq!(
        (message["contextId"].as_str(), message["role"].as_str()),
        (Some("t"), Some("user"))
    );
    assert_eq!(message["metadata"], metadata);
    assert_eq!(
        message["parts"][1],
        json!({ "kind": "file", "file": { "uri": "https://img/1.png", "mimeType": "image/png" } })
    );
    let ext = headers
        .iter()
        .find(|(k, _)| k == "x-a2a-extensions")
        .map(|(_, v)| v.as_str());
    assert_eq!(
        ext,
        Some("https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol")
    );
    // The real agent echoes the metadata it received, proving it arrived whole.
    let agent = agent("python-v03");
    let gw = gateway_for(&agent.url(), &[]);
    let input = json!({ "threadId": "t2", "runId": "r", "messages": [{ "id": "u", "role": "user", "content": "commands" }],
        "forwardedProps": { "a2a": { "metadata": metadata } } });
    let (_, _, text) = post_text(&format!("{}/agui", gw.url()), &input, &[]).await;
    let events = agui_events(&text);
    assert_valid_run(&events);
    let echoed = events
        .iter()
        .find(|e| e["name"] == "a2a.data")
        .expect("echo-metadata artifact");
    assert_eq!(echoed["value"]["data"]["metadata"], metadata);
    let commands = events
        .iter()
        .find(|e| e["name"] == "a2a.commands")
        .expect("commands");
    assert_eq!(commands["value"][0]["name"], "VOLUME_SET");
}

// ---------------------------------------------------------------------------
// Upstream failures: each ends the AG-UI run with RUN_ERROR and a stable code

async fn failing_run(gw: &Process, scenario: &str) -> Value {
    let response = fake_run(gw, scenario).await;
    assert_eq!(response.status(), 200, "{scenario}");
    let text = response.text().await.unwrap();
    let events = agui_events(&text);
    let last = assert_valid_run(&events).clone();
    assert_eq!(last["type"], "RUN_ERROR", "{scenario}: {text}");
    last
}

#[tokio::test]
async fn every_upstream_failure_ends_in_run_error() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--idle-timeout-secs", "1", "--max-event-bytes", "2000"],
    );
    assert_eq!(
        failing_run(&gw, "http500").await["code"],
        "UPSTREAM_HTTP_ERROR"
    );
    let json_error = failing_run(&gw, "json-error").await;
    assert_eq!(
        (json_error["code"].as_str(), json_error["message"].as_str()),
        (
            Some("A2A_TASK_NOT_FOUND"),
            Some("the agent reported an error: Task not found")
        )
    );
    assert_eq!(
        failing_run(&gw, "drop").await["code"],
        "UPSTREAM_READ_ERROR"
    );
    let started = Instant::now();
    assert_eq!(
        failing_run(&gw, "stall").await["code"],
        "UPSTREAM_IDLE_TIMEOUT"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the idle timeout fired"
    );
    assert_eq!(
        failing_run(&gw, "oversized").await["code"],
        "UPSTREAM_EVENT_TOO_LARGE"
    );
    // Connection refused: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let gw = gateway_for(&format!("http://{closed}/"), &[]);
    assert_eq!(
        failing_run(&gw, "fixed").await["code"],
        "UPSTREAM_UNREACHABLE"
    );
}

// ---------------------------------------------------------------------------
// Streaming behaviour

#[tokio::test]
async fn each_event_reaches_the_client_before_the_upstream_sends_the_next() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let response = fake_run(&gw, "drip").await;
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut received = Vec::new();
    while let Some(chunk) = body.next().await {
        buffer.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if frame.contains("TEXT_MESSAGE_CONTENT") {
                let event = agui_events(&frame).remove(0);
                received.push((event["delta"].as_str().unwrap().to_owned(), Instant::now()));
            }
        }
    }
    let sent = fake.log.lock().unwrap().sent.clone();
    assert_eq!(received.len(), 7, "{received:?}");
    for (i, (delta, at)) in received.iter().enumerate() {
        // Chunk i+1 was sent at sent[i + 1]; the next event at sent[i + 2].
        assert_eq!(delta, &format!("[{}]", i + 1));
        assert!(
            *at < sent[i + 2],
            "event {delta} arrived after the upstream sent the next one"
        );
    }
}

#[tokio::test]
async fn a_silent_upstream_gets_keep_alive_comments() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &["--keepalive-secs", "1"]);
    let response = fake_run(&gw, "silent").await;
    let text = response.text().await.unwrap();
    assert!(text.matches(": ping\n\n").count() >= 2, "{text}");
    assert_eq!(
        assert_valid_run(&agui_events(&text))["type"],
        "RUN_FINISHED"
    );
}

#[tokio::test]
async fn a_client_disconnect_closes_the_upstream_within_a_second_and_can_cancel() {
    let (addr, fake) = fake_upstream().await;
    // Without a grace period: a run ends with its client.
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--cancel-on-disconnect", "--detach-grace-secs", "0"],
    );
    let response = fake_run(&gw, "endless").await;
    read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
    let dropped = Instant::now();
    let deadline = dropped + Duration::from_secs(5);
    let closed = loop {
        if let Some(closed) = fake.log.lock().unwrap().closed {
            break closed;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream connection stayed open"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let lag = closed.saturating_duration_since(dropped);
    assert!(
        lag < Duration::from_secs(1),
        "upstream closed {lag:?} after the client left"
    );
    fake.wait_for_method("tasks/cancel", Duration::from_secs(5))
        .await;
}

#[tokio::test]
async fn sigterm_drains_open_streams_then_ends_them_with_run_error() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &["--shutdown-grace-secs", "1"]);
    let url = format!("{}/v1/agents/default/stream?format=agui", gw.url());
    let response = fake_run(&gw, "endless").await;
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("RUN_STARTED"));
    let signalled = Instant::now();
    gw.terminate();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The listener stays open through the drain: readiness says 503 and new
    // work gets a 503 that closes its connection, so balancers move on.
    let ready = client()
        .get(format!("{}/readyz", gw.url()))
        .send()
        .await
        .expect("the listener is open while draining");
    assert_eq!(ready.status(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["error"]["code"], "GATEWAY_DRAINING", "{ready}");
    let refused = client()
        .post(&url)
        .header("X-Fake", "fixed")
        .body(SEED_BODY)
        .send()
        .await
        .expect("the listener is open while draining");
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["connection"], "close");
    assert_eq!(refused.headers()["retry-after"], "1");
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "GATEWAY_DRAINING", "{refused}");
    let mut rest = String::from_utf8_lossy(&first).into_owned();
    while let Some(chunk) = body.next().await {
        rest.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let events = agui_events(&rest);
    let last = assert_valid_run(&events);
    assert_eq!(last["code"], "GATEWAY_SHUTTING_DOWN", "{rest}");
    let ended = signalled.elapsed();
    assert!(
        ended >= Duration::from_millis(900) && ended < Duration::from_secs(5),
        "drained for {ended:?}"
    );
    let mut gw = gw;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = gw.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "the gateway did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------
// Operations

#[tokio::test]
async fn health_readiness_metrics_and_config_checks() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let health: Value = client()
        .get(format!("{}/healthz", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok");
    let ready = client()
        .get(format!("{}/readyz", gw.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let _ = failing_run(&gw, "http500").await;
    let metrics = client()
        .get(format!("{}/metrics", gw.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for needle in [
        "agui_gateway_active_streams{agent=\"default\"} 0",
        "agui_gateway_events_total{agent=\"default\",type=\"RUN_STARTED\"}",
        "agui_gateway_errors_total{agent=\"default\",kind=\"UPSTREAM_HTTP_ERROR\"} 1",
        "agui_gateway_requests_total{agent=\"default\",route=\"negotiated\"}",
        "agui_gateway_upstream_latency_seconds_count{agent=\"default\"}",
        "agui_gateway_upstream_latency_seconds_bucket{agent=\"default\",le=\"600\"}",
        "agui_gateway_stream_duration_seconds_bucket{agent=\"default\",le=\"600\"}",
        // The process's own, from the prometheus crate's collector.
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
    ] {
        assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(
        metrics.contains("agui_gateway_agent_up{agent=\"default\"} 1"),
        "{metrics}"
    );
    // An agent that is down is reported, but the process stays ready: every
    // replica fronts the same agents, and taking them all out would refuse
    // the agents that work too.
    let gw = gateway_for(&format!("http://{closed}/"), &[]);
    let ready = http_get(format!("{}/readyz", gw.url())).await;
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["agents"]["default"]["ready"], false, "{ready}");
    let listed: Value = http_get(format!("{}/v1/agents", gw.url()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["agents"][0]["ready"], false, "{listed}");
    assert!(listed["agents"][0]["error"].is_string(), "{listed}");
    assert!(
        !listed.to_string().contains(&closed.to_string()),
        "{listed}"
    );
    let metrics = http_get(format!("{}/metrics", gw.url()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("agui_gateway_agent_up{agent=\"default\"} 0"),
        "{metrics}"
    );

    // An upstream without a scheme is refused at start, not at the first call.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .args(["--upstream", "localhost:9999"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("an http:// or https:// URL"),
        "{output:?}"
    );

    let dir = std::env::temp_dir().join(format!("agui-gateway-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[agents.a]\nupstream = \"http://127.0.0.1:1/\"\noutput = \"xml\"\n",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("bad.toml:3: agents.a.output"),
        "{output:?}"
    );
    // Zero where zero means nothing works (not "off") is an error, with its line.
    for (text, says) in [
        (
            "keepalive_secs = 0\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
            "zero.toml:1: keepalive_secs: must be at least 1",
        ),
        (
            "[limits]\nmax_streams = 10\nwrite_timeout_secs = 0\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
            "zero.toml:3: limits.write_timeout_secs: must be at least 1",
        ),
        (
            "[agents.a]\nupstream = \"http://127.0.0.1:1/\"\nidle_timeout_secs = 0\n",
            "zero.toml:3: agents.a.idle_timeout_secs: must be at least 1",
        ),
    ] {
        let zero = dir.join("zero.toml");
        std::fs::write(&zero, text).unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
            .arg("check-config")
            .arg(&zero)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{text}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{text}: {output:?}"
        );
    }
    let good = dir.join("good.toml");
    let good_config = format!(
        "listen = \"127.0.0.1:0\"\n[cors]\nallow_origins = [\"https://app.example.com\"]\n[agents.assistant]\nupstream = \"http://{addr}/\"\noutput = \"hector\"\n"
    );
    std::fs::write(&good, good_config).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(&good)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // A gateway from the file, its agent speaking the Hector dialect by default.
    let gw = gateway(&["--config", good.to_str().unwrap()]);
    let text = client()
        .post(format!(
            "{}/v1/agents/assistant/stream?format=agui",
            gw.url()
        ))
        .body(SEED_BODY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        hector_events(&text)
            .iter()
            .any(|(n, _)| n == "task_complete"),
        "{text}"
    );
    // CORS: a browser's preflight, and no header for an origin not allowed.
    let preflight = client()
        .request(reqwest::Method::OPTIONS, format!("{}/agui", gw.url()))
        .header("Origin", "https://app.example.com")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{preflight:?}");
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let other = client()
        .get(format!("{}/healthz", gw.url()))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

// ---------------------------------------------------------------------------
// More negotiated calls: REST streams and resubscription

#[tokio::test]
async fn rest_streams_are_negotiated_too() {
    for (agent_name, path, v10) in [
        ("python-v1", "/rest/message:stream", true),
        ("python-v1", "/rest/v1/message:stream", false),
        ("python-v03", "/rest/v1/message:stream", false),
        ("js-v1", "/a2a/rest/message:stream", true),
    ] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &[]);
        let body = if v10 {
            json!({ "message": { "role": "ROLE_USER", "messageId": "m1", "parts": [{ "text": "chunks" }] } })
        } else {
            json!({ "message": { "role": "ROLE_USER", "messageId": "m1", "content": [{ "text": "chunks" }] } })
        };
        let headers: Vec<_> = if v10 {
            vec![("A2A-Version", "1.0")]
        } else {
            vec![]
        };
        let (status, _, text) =
            post_text(&format!("{}{path}?format=agui", gw.url()), &body, &headers).await;
        assert_eq!(status, 200, "{agent_name} {path}: {text}");
        let events = agui_events(&text);
        assert_eq!(
            assert_valid_run(&events)["result"]["state"],
            "completed",
            "{agent_name} {path}: {text}"
        );
        assert!(
            text_of(&events).contains("streaming"),
            "{agent_name} {path}"
        );
    }
}

/// The task id in the first `"kind":"task"` event of a 0.3 SSE body.
fn first_task_id(sse: &str) -> Option<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["result"]["kind"] == "task")
        .and_then(|v| v["result"]["id"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn a_resubscription_is_negotiated_and_starts_from_the_task_snapshot() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &[]);
    // A long task, started directly by an A2A client.
    let (start, _) = stream_request(false, "cancel-me");
    let response = client()
        .post(format!("{}/", agent.url()))
        .json(&start)
        .send()
        .await
        .unwrap();
    let mut original = response.bytes_stream();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let task = loop {
        assert!(Instant::now() < deadline, "no task event: {seen}");
        seen.push_str(std::str::from_utf8(&original.next().await.unwrap().unwrap()).unwrap());
        if let Some(task) = first_task_id(&seen) {
            break task;
        }
    };
    let resubscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": { "id": task } });
    let url = format!("{}/?format=agui", gw.url());
    let watcher = tokio::spawn(async move { post_text(&url, &resubscribe, &[]).await });
    tokio::time::sleep(Duration::from_millis(600)).await;
    let cancel =
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": { "id": task } });
    let (status, _, _) = post_text(&format!("{}/", agent.url()), &cancel, &[]).await;
    assert_eq!(status, 200);
    let (_, _, text) = watcher.await.unwrap();
    let events = agui_events(&text);
    let last = assert_valid_run(&events);
    assert_eq!(events[0]["runId"], task.as_str(), "{text}");
    assert_eq!(last["result"]["state"], "canceled", "{text}");
    assert!(
        !text_of(&events).is_empty(),
        "the snapshot's text and the live chunks: {text}"
    );
    drop(original);
}

#[tokio::test]
async fn the_stream_limit_refuses_with_503_and_frees_places_as_streams_end() {
    let (addr, _fake) = fake_upstream().await;
    // A detached run keeps its place: without a grace, a dropped client
    // frees it.
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--max-streams", "1", "--detach-grace-secs", "0"],
    );
    let freed = one_place_refused_then_freed(|scenario| fake_run(&gw, scenario)).await;
    assert_eq!(
        assert_valid_run(&agui_events(&freed))["type"],
        "RUN_FINISHED"
    );
    // The refusals count under the agent that was asked for (one, or more
    // while the place was being freed).
    let metrics = metrics_of(&gw).await;
    let busy = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("agui_gateway_errors_total{agent=\"default\",kind=\"GATEWAY_BUSY\"} ")
        })
        .and_then(|count| count.parse::<u64>().ok());
    assert!(busy.is_some_and(|n| n >= 1), "{metrics}");
}
