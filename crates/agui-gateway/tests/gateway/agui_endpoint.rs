//! The AG-UI endpoint with the real clients: every `@ag-ui/client` version,
//! threads that wait for input, A2UI actions, what reaches the agent.

use serde_json::{Value, json};

use crate::support::*;
use crate::{post_text, run_client};

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
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
