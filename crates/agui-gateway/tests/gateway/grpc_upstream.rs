//! Agents over A2A's gRPC binding (issue 29, part 1): a real a2a-sdk
//! 1.3.0 agent serving only gRPC, both services on one port (1.0's
//! `lf.a2a.v1.A2AService` and 0.3's `a2a.v1.A2AService`), fronted by the
//! gateway as `grpc://`: a converted run, the card (read over gRPC),
//! a task's get and cancel passed on as JSON-RPC.

use serde_json::{Value, json};

use crate::support::*;

/// A gateway fronting the gRPC agent on `port` as agent `a` with
/// `service` ("1.0", "0.3"), `lines` more of its agent's table.
fn grpc_gateway(port: u16, service: &str, lines: &str, extra: &[&str]) -> Process {
    grpc_gateway_named("a", port, service, lines, extra)
}

/// The same, the agent named `name`.
pub(crate) fn grpc_gateway_named(
    name: &str,
    port: u16,
    service: &str,
    lines: &str,
    extra: &[&str],
) -> Process {
    let dir = std::env::temp_dir().join(format!(
        "agui-gateway-grpc-{name}-{service}-{}-{}",
        std::process::id(),
        lines.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gw.toml");
    std::fs::write(
        &config,
        format!(
            "[agents.{name}]\nupstream = \"grpc://127.0.0.1:{port}\"\na2a_version = \"{service}\"\n{lines}"
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let mut args = vec!["--config", config.as_str()];
    args.extend_from_slice(extra);
    gateway(&args)
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_grpc_only_agent_runs_through_the_gateway_on_either_service() {
    let agent = agent("python-v1-grpc");
    for service in ["1.0", "0.3"] {
        let gw = grpc_gateway(agent.port, service, "", &[]);
        let body = json!({ "threadId": format!("t-grpc-{service}"), "runId": "r1",
            "messages": [{ "id": "u1", "role": "user", "content": "chunks" }] });
        let answer = client()
            .post(format!("{}/v1/agents/a/agui", gw.url()))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let events = agui_events(&answer);
        assert_valid_run(&events);
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "{service}: {answer}"
        );
        assert!(!text_of(&events).is_empty(), "{service}: {answer}");
        // The card, read over gRPC, served as the gateway's.
        let card: Value = http_get(format!(
            "{}/v1/agents/a/.well-known/agent-card.json",
            gw.url()
        ))
        .await
        .json()
        .await
        .unwrap();
        assert!(
            card["name"]
                .as_str()
                .unwrap_or_default()
                .contains("gRPC only"),
            "{service}: {card}"
        );
        // A task's get as JSON-RPC, answered over gRPC.
        let task = events.last().unwrap()["result"]["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let got: Value = client()
            .post(format!("{}/v1/agents/a/", gw.url()))
            .json(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": { "id": task } }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(got["id"], 7, "{service}: {got}");
        let state = got["result"]["status"]["state"]
            .as_str()
            .unwrap_or_default();
        assert!(
            state.contains("COMPLETED") || state == "completed",
            "{service}: {got}"
        );
        // An unknown task: the agent's NOT_FOUND as JSON-RPC's -32001.
        let missing: Value = client()
            .post(format!("{}/v1/agents/a/", gw.url()))
            .json(&json!({ "jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": { "id": "nope" } }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(missing["error"]["code"], -32001, "{service}: {missing}");
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_client_leaving_cancels_the_grpc_agents_task_on_either_service() {
    let agent = agent("python-v1-grpc");
    for service in ["1.0", "0.3"] {
        let gw = grpc_gateway(
            agent.port,
            service,
            "cancel_on_disconnect = true\n",
            &["--detach-grace-secs", "0"],
        );
        let body = json!({ "threadId": format!("t-grpc-cancel-{service}"), "runId": "r1",
            "messages": [{ "id": "u1", "role": "user", "content": "cancel-me" }] });
        let response = client()
            .post(format!("{}/v1/agents/a/agui", gw.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let seen = read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
        let task = seen
            .split("\"taskId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default()
            .to_owned();
        assert!(!task.is_empty(), "{service}: no task id in {seen}");
        // The cancel went over gRPC: the task says so, well before its
        // 30 s of ticks are over.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let got: Value = client()
                .post(format!("{}/v1/agents/a/", gw.url()))
                .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": { "id": task } }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let state = got["result"]["status"]["state"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if state.to_ascii_uppercase().contains("CANCEL") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{service}: the task was not cancelled: {got}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_dropped_grpc_stream_is_re_attached_by_subscribe_on_either_service() {
    use futures::StreamExt;
    let agent = agent("python-v1-grpc");
    let at: std::net::SocketAddr = format!("127.0.0.1:{}", agent.port).parse().unwrap();
    for service in ["1.0", "0.3"] {
        let proxy = CuttableProxy::start(at).await;
        let port = proxy
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_owned();
        let gw = grpc_gateway(port.parse().unwrap(), service, "", &[]);
        let body = json!({ "threadId": format!("t-grpc-heal-{service}"), "runId": "r1",
            "messages": [{ "id": "u1", "role": "user", "content": "drip" }] });
        let response = client()
            .post(format!("{}/v1/agents/a/agui", gw.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let mut stream = response.bytes_stream();
        let mut seen = String::new();
        let mut cut = false;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Some(chunk) = stream.next().await {
            assert!(std::time::Instant::now() < deadline, "{service}: {seen}");
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if !cut && seen.matches("TEXT_MESSAGE_CONTENT").count() >= 3 {
                proxy.cut();
                cut = true;
            }
        }
        assert!(cut, "{service}: {seen}");
        let events = agui_events(&seen);
        assert_eq!(
            assert_valid_run(&events)["result"]["state"],
            "completed",
            "{service}: {seen}"
        );
        let deltas = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .count();
        assert_eq!(deltas, 10, "{service}: {seen}");
        let metrics = metrics_of(&gw).await;
        assert!(
            metrics.contains("agui_gateway_upstream_reattached_total 1"),
            "{service}: {metrics}"
        );
    }
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
fn the_three_ag_ui_clients_run_a_grpc_agent_on_either_service() {
    let agent = agent("python-v1-grpc");
    for service in ["1.0", "0.3"] {
        let gw = grpc_gateway(agent.port, service, "", &[]);
        let url = format!("{}/v1/agents/a/agui", gw.url());
        for version in ["1.0.0", "0.0.59", "0.0.48"] {
            let run = crate::run_client(version, &url, &["--message", "hector"]);
            assert_eq!(run["ok"], true, "{service} {version}: {run}");
            let types: Vec<&str> = run["types"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                types.last(),
                Some(&"RUN_FINISHED"),
                "{service} {version}: {types:?}"
            );
            for wanted in [
                "REASONING_MESSAGE_CONTENT",
                "TOOL_CALL_START",
                "TEXT_MESSAGE_CONTENT",
            ] {
                assert!(
                    types.contains(&wanted)
                        || (wanted.starts_with("REASONING")
                            && types.contains(&"THINKING_TEXT_MESSAGE_CONTENT")),
                    "{service} {version}: no {wanted} in {types:?}"
                );
            }
        }
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_0_3_json_rpc_caller_reads_0_3_from_a_grpc_agent() {
    let agent = agent("python-v1-grpc");
    let gw = grpc_gateway(agent.port, "1.0", "", &[]);
    let call = json!({ "jsonrpc": "2.0", "id": "s1", "method": "message/stream", "params": {
        "message": { "kind": "message", "role": "user", "messageId": "m-03",
            "parts": [{ "kind": "text", "text": "chunks" }] } } });
    let answer = client()
        .post(format!("{}/v1/agents/a/", gw.url()))
        .json(&call)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let results: Vec<Value> = answer
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str::<Value>(data).unwrap()["result"].clone())
        .collect();
    assert_eq!(results[0]["kind"], "task", "{answer}");
    assert_eq!(results[0]["status"]["state"], "submitted", "{answer}");
    let last = results.last().unwrap();
    assert_eq!(last["kind"], "status-update", "{answer}");
    assert_eq!(last["status"]["state"], "completed", "{answer}");
    assert_eq!(last["final"], true, "{answer}");
    assert!(
        results
            .iter()
            .filter(|r| r["kind"] == "artifact-update")
            .all(|r| r["artifact"]["parts"][0]["kind"] == "text"),
        "{answer}"
    );
    // And a 0.3 get.
    let task = results[0]["id"].as_str().unwrap().to_owned();
    let got: Value = client()
        .post(format!("{}/v1/agents/a/", gw.url()))
        .json(
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": { "id": task } }),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["result"]["kind"], "task", "{got}");
    assert_eq!(got["result"]["status"]["state"], "completed", "{got}");
}

/// A client that speaks HTTP/2 by prior knowledge, as gRPC clients do.
fn h2_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap()
}

/// One gRPC call of `path` with the message `message` (framed here).
async fn grpc_call(
    client: &reqwest::Client,
    url: &str,
    message: &[u8],
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut body = vec![0u8];
    body.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    body.extend_from_slice(message);
    let mut request = client
        .post(url)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

fn grpc_status(answer: &reqwest::Response) -> Option<String> {
    answer
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_grpc_clients_card_call_passes_the_edge_and_names_the_gateway() {
    let agent = agent("python-v1-grpc");
    let dir = std::env::temp_dir().join(format!("agui-gateway-grpc-pass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    std::fs::write(&keys, "tests:k-grpc\n").unwrap();
    let lines = format!(
        "[limits]\nmax_request_bytes = 1024\n[auth]\napi_keys_file = \"{}\"\n",
        keys.display()
    );
    let gw = grpc_gateway(agent.port, "1.0", &lines, &[]);
    let h2 = h2_client();
    let card_1_0 = format!("{}/lf.a2a.v1.A2AService/GetExtendedAgentCard", gw.url());
    // No key: the gate's refusal, as gRPC's UNAUTHENTICATED, not JSON.
    let refused = grpc_call(&h2, &card_1_0, &[], &[]).await;
    assert_eq!(refused.status(), 200);
    assert_eq!(grpc_status(&refused).as_deref(), Some("16"), "{refused:?}");
    assert_eq!(
        refused.headers()["content-type"].to_str().unwrap(),
        "application/grpc"
    );
    let said = refused.headers()["grpc-message"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        said.contains("UNAUTHORIZED") || said.contains("AUTH"),
        "{said}"
    );
    let key = [("x-api-key", "k-grpc")];
    // With it: the agent's card, its addresses the gateway's, on either
    // service.
    let gateway_address = format!("127.0.0.1:{}", gw.port);
    let agent_address = format!("127.0.0.1:{}", agent.port);
    for path in [
        "lf.a2a.v1.A2AService/GetExtendedAgentCard",
        "a2a.v1.A2AService/GetAgentCard",
    ] {
        let answer = grpc_call(&h2, &format!("{}/{path}", gw.url()), &[], &key).await;
        assert_eq!(answer.status(), 200, "{path}");
        assert_eq!(grpc_status(&answer), None, "{path}: {answer:?}");
        let body = answer.bytes().await.unwrap();
        assert!(body.len() > 5, "{path}");
        let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        assert_eq!(length, body.len() - 5, "{path}: one message");
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("gRPC only"), "{path}: {text}");
        assert!(text.contains(&gateway_address), "{path}: {text}");
        assert!(!text.contains(&agent_address), "{path}: {text}");
    }
    // A body over `max_request_bytes`: RESOURCE_EXHAUSTED.
    let big = grpc_call(&h2, &card_1_0, &[0u8; 4096], &key).await;
    assert_eq!(grpc_status(&big).as_deref(), Some("8"), "{big:?}");
    // No A2A method, and gRPC over HTTP/1.1: UNIMPLEMENTED.
    let health = format!("{}/grpc.health.v1.Health/Check", gw.url());
    let other = grpc_call(&h2, &health, &[], &key).await;
    assert_eq!(grpc_status(&other).as_deref(), Some("12"), "{other:?}");
    let h1 = grpc_call(&client(), &card_1_0, &[], &key).await;
    assert_eq!(grpc_status(&h1).as_deref(), Some("12"), "{h1:?}");
    assert!(
        h1.headers()["grpc-message"]
            .to_str()
            .unwrap()
            .contains("HTTP/2")
    );
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_grpc_call_to_an_agent_reached_over_http_is_unimplemented() {
    let agent = agent("python-v1");
    let gw = gateway_for(&format!("http://127.0.0.1:{}/", agent.port), &[]);
    let answer = grpc_call(
        &h2_client(),
        &format!("{}/lf.a2a.v1.A2AService/SendMessage", gw.url()),
        &[],
        &[],
    )
    .await;
    assert_eq!(grpc_status(&answer).as_deref(), Some("12"), "{answer:?}");
    // Its HTTP card names no gRPC interface of the gateway's.
    let card: Value = http_get(format!("{}/.well-known/agent-card.json", gw.url()))
        .await
        .json()
        .await
        .unwrap();
    assert!(!card.to_string().contains("\"GRPC\""), "{card}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_cut_client_resumes_a_grpc_agents_run_on_either_service() {
    use crate::resume::{frames, id_of, post, read_then_cut};
    let agent = agent("python-v1-grpc");
    for service in ["1.0", "0.3"] {
        let gw = grpc_gateway(agent.port, service, "", &[]);
        let url = format!("{}/v1/agents/a/agui", gw.url());
        let thread = format!("t-grpc-resume-{service}");
        let input = json!({ "threadId": thread, "runId": "r1",
            "messages": [{ "id": "u1", "role": "user", "content": "drip" }] });
        // Cut after 4 frames, then after 3 more, then read to the end.
        let mut whole = read_then_cut(post(&url, &input, None).await, 4).await;
        let last = id_of(frames(&whole).last().unwrap()).to_owned();
        whole.push_str(&read_then_cut(post(&url, &input, Some(&last)).await, 3).await);
        let last = id_of(frames(&whole).last().unwrap()).to_owned();
        let rest = post(&url, &input, Some(&last)).await;
        assert_eq!(rest.status(), 200, "{service}");
        whole.push_str(&rest.text().await.unwrap());
        // One run: ids 1, 2, 3, … with none missing or twice, ten deltas.
        let seen = frames(&whole);
        for (n, frame) in seen.iter().enumerate() {
            let (_, number) = id_of(frame).split_once('.').unwrap();
            assert_eq!(number, (n + 1).to_string(), "{service}: {whole}");
        }
        let events = agui_events(&whole);
        assert_eq!(
            assert_valid_run(&events)["result"]["state"],
            "completed",
            "{service}: {whole}"
        );
        let deltas = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .count();
        assert_eq!(deltas, 10, "{service}: {whole}");
        // `connect` replays what the cut client put together.
        let connect = post(
            &format!("{}/v1/agents/a/agui/connect", gw.url()),
            &json!({ "threadId": thread, "runId": "r1" }),
            None,
        )
        .await;
        assert_eq!(connect.status(), 200, "{service}");
        assert_eq!(frames(&connect.text().await.unwrap()), seen, "{service}");
    }
}
