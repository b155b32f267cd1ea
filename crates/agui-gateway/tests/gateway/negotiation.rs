//! Negotiation: which requests are converted (`Accept`, `?format=`, the
//! seed's body, JSON-RPC and REST streams, resubscription) and which get a
//! 4xx JSON error before any stream.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::*;
use crate::{SEED_BODY, post_text, stream_request};

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
