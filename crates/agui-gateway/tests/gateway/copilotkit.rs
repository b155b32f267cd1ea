//! The CopilotKit runtime protocol served by the gateway: `@copilotkit/core`
//! 1.75.0 (`tests/copilotkit/direct.mjs`) with `runtimeUrl` at
//! `<gateway>/copilotkit` and no runtime between, in front of a real a2a-sdk
//! 1.3.0 agent; and the runtime's error bodies, before any agent call.
//!
//! A restored conversation is compared whole with what the live turns
//! showed: user and assistant messages, reasoning, the agent's tool calls
//! and results, and a frontend tool's round trip, once and in order.

use serde_json::{Value, json};

use crate::support::{Process, agent, client, core_with, gateway_for, json_rpc};

/// Who the main test's caller is (authentication is off: its credential
/// header is its identity), and another caller.
const ALICE: &str = "Authorization: Bearer alice";
const BOB: &str = "Authorization: Bearer bob";

/// One phase of the harness (one page load) as Alice; its report line.
async fn core(gw: &Process, transport: &str, thread: &str, phase: &str, text: &str) -> Value {
    core_with(gw, transport, thread, phase, text, &["--header", ALICE]).await
}

/// The agent's task of a context, as the agent stores it.
async fn agent_tasks(agent: &Process, context: &str) -> Vec<Value> {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                       "params": { "contextId": context } });
    let answer = json_rpc(&agent.url(), "1.0", &body).await;
    answer["result"]["tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn copilotkit_core_runs_restores_stops_and_lists_threads_with_no_runtime_between() {
    let agent = agent("python-v1");
    for transport in ["rest", "single"] {
        let gw = gateway_for(&agent.url(), &[]);
        let thread = format!("ck-{transport}");
        core(&gw, transport, &thread, "turn", "chunks").await;
        core(&gw, transport, &thread, "turn", "hector").await;
        let turn = core(&gw, transport, &thread, "turn", "status-text").await;
        let conversation = turn["messages"].clone();
        assert_eq!(
            conversation,
            json!([
                "user: chunks",
                "assistant: Thinking...",
                "assistant: Hello from the streaming test agent.",
                "assistant: Done.",
                "user: hector",
                "reasoning: Let me think. Checking the weather.",
                "assistant:  [web_search({\"query\":\"weather\"})]",
                "tool: Sunny, 22C",
                "assistant: It is sunny.",
                "user: status-text",
                "assistant: Status streamed text."
            ]),
            "{turn}"
        );
        // A reload restores the conversation once, in order, and a client
        // that still holds it gets nothing twice.
        let reload = core(&gw, transport, &thread, "restore", "").await;
        assert_eq!(reload["messages"], conversation, "{reload}");
        assert_eq!(reload["again"], conversation, "{reload}");

        // The gateway restarts: its journal is empty, the agent's tasks
        // hold the thread, and they read as the live turns did.
        drop(gw);
        let gw = gateway_for(&agent.url(), &[]);
        let reload = core(&gw, transport, &thread, "restore", "").await;
        assert_eq!(reload["messages"], conversation, "{reload}");
        assert_eq!(reload["again"], conversation, "{reload}");

        // Stop on a long run: it ends at once, and the agent's task is
        // cancelled.
        let long = format!("{thread}-long");
        let stopped = core(&gw, transport, &long, "stop", "cancel-me").await;
        assert!(stopped["stopToEndMs"].as_u64().unwrap() < 2000, "{stopped}");
        let mut state = Value::Null;
        for _ in 0..40 {
            let tasks = agent_tasks(&agent, &long).await;
            state = tasks
                .first()
                .map(|t| t["status"]["state"].clone())
                .unwrap_or_default();
            if state == "TASK_STATE_CANCELED" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(state, "TASK_STATE_CANCELED");

        // The caller's threads, newest first: the long one and the first.
        let threads = |who: Option<&'static str>| {
            let mut request =
                client().get(format!("{}/copilotkit/threads?agentId=default", gw.url()));
            if let Some(who) = who {
                request =
                    request.header("Authorization", who.trim_start_matches("Authorization: "));
            }
            async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
        };
        let listed = threads(Some(ALICE)).await;
        let ids: Vec<&str> = listed["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["id"].as_str())
            .collect();
        assert!(
            ids.contains(&thread.as_str()) && ids.contains(&long.as_str()),
            "{listed}"
        );
        assert_eq!(ids[0], long, "{listed}");

        // The thread's messages, as the runtime's route gives them (a
        // call as `{id, name, args}`).
        let messages = |who: &'static str| {
            let request = client()
                .get(format!(
                    "{}/copilotkit/threads/{thread}/messages?agentId=default",
                    gw.url()
                ))
                .header("Authorization", who.trim_start_matches("Authorization: "));
            async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
        };
        let mine = messages(ALICE).await;
        assert_eq!(
            mine["messages"].as_array().map(Vec::len),
            conversation.as_array().map(Vec::len),
            "{mine}"
        );
        let call = mine["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|m| m["toolCalls"].get(0))
            .unwrap_or_else(|| panic!("{mine}"));
        assert_eq!(call["name"], "web_search", "{mine}");
        assert_eq!(call["args"], "{\"query\":\"weather\"}", "{mine}");

        // Another caller, who knows the thread id, gets none of it: no
        // replay, no messages, no list entry. An anonymous caller
        // (no identity: all anonymous callers are one) gets no list.
        let bob = core_with(&gw, transport, &thread, "restore", "", &["--header", BOB]).await;
        assert_eq!(bob["messages"], json!([]), "{bob}");
        assert_eq!(bob["info"]["threadList"], true, "{bob}");
        let listed = threads(Some(BOB)).await;
        assert!(!listed.to_string().contains(&thread), "{listed}");
        let theirs = messages(BOB).await;
        assert_eq!(theirs["messages"], json!([]), "{theirs}");

        assert_eq!(threads(None).await["threads"], json!([]));
        let anonymous = core_with(
            &gw,
            transport,
            &format!("{thread}-anon"),
            "restore",
            "",
            &[],
        )
        .await;
        assert_eq!(anonymous["info"]["threadList"], false, "{anonymous}");
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_frontend_tools_round_trip_is_restored_from_the_journal_and_from_the_agent() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    // An anonymous caller (no credential header): its thread id is its key.
    let tool = ["--tool", "get_weather"];
    let turn = core_with(&gw, "rest", "ck-tool", "turn", "clienttool", &tool).await;
    let conversation = turn["messages"].clone();
    let answer = "{\"temperature\":21,\"city\":\"Paris\"}";
    assert_eq!(
        conversation,
        json!([
            "user: clienttool",
            "assistant: Let me check the weather. [get_weather({\"city\":\"Paris\"})]",
            format!("tool: {answer}"),
            format!("assistant: get_weather said: {answer}")
        ]),
        "{turn}"
    );
    let reload = core_with(&gw, "rest", "ck-tool", "restore", "", &[]).await;
    assert_eq!(reload["messages"], conversation, "{reload}");
    assert_eq!(reload["again"], conversation, "{reload}");
    // From the agent: the tool's result is the user's A2A message that
    // carried it back.
    drop(gw);
    let gw = gateway_for(&agent.url(), &[]);
    let reload = core_with(&gw, "single", "ck-tool", "restore", "", &[]).await;
    assert_eq!(reload["messages"], conversation, "{reload}");
    assert_eq!(reload["again"], conversation, "{reload}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn bad_input_gets_the_runtimes_errors_before_any_agent_call() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &[]);
    let base = format!("{}/copilotkit", gw.url());
    let http = client();
    let send = |method: reqwest::Method, path: &str, body: Option<&str>| {
        let mut request = http.request(method, format!("{base}{path}"));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        request.send()
    };
    let cases: Vec<(reqwest::Method, &str, Option<&str>, u16, Value)> = vec![
        (
            reqwest::Method::POST,
            "/agent/nope/run",
            Some("{}"),
            404,
            json!({"error": "Agent not found", "message": "Agent 'nope' does not exist"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/run",
            Some("{\"threadId\":\"t\"}"),
            400,
            json!({"error": "Invalid request body", "details": "messages must be an array"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/run",
            Some("not json"),
            400,
            json!({"error": "Invalid request body", "details": "the body is not JSON"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/connect",
            Some("[]"),
            400,
            json!({"error": "Invalid request body", "details": "threadId must be a string"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/stop/t",
            Some("{\"x\":1}"),
            400,
            json!({"error": "Invalid stop request"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/stop/t",
            Some("{\"runId\":7}"),
            400,
            json!({"error": "Invalid runId"}),
        ),
        (
            reqwest::Method::POST,
            "/agent/default/stop/t",
            None,
            200,
            json!({"stopped": false, "message": "No active run for thread 't'."}),
        ),
        (
            reqwest::Method::GET,
            "/agent/default/run",
            None,
            405,
            json!({"error": "Method not allowed"}),
        ),
        (
            reqwest::Method::GET,
            "/nowhere",
            None,
            404,
            json!({"error": "Not found"}),
        ),
        (
            reqwest::Method::GET,
            "/threads",
            None,
            400,
            json!({"error": "Missing agentId"}),
        ),
        (
            reqwest::Method::POST,
            "",
            Some("{\"method\":\"agent/fly\"}"),
            400,
            json!({"error": "invalid_request", "message": "Unsupported method 'agent/fly'"}),
        ),
        (
            reqwest::Method::POST,
            "",
            Some("{\"method\":\"agent/run\",\"params\":{}}"),
            400,
            json!({"error": "invalid_request", "message": "Missing or invalid parameter 'agentId'"}),
        ),
        (
            reqwest::Method::POST,
            "",
            Some("{\"method\":\"agent/run\",\"params\":{\"agentId\":\"default\"}}"),
            400,
            json!({"error": "invalid_request", "message": "Missing request body for JSON handler"}),
        ),
        (
            reqwest::Method::POST,
            "",
            Some("{\"method\":\"agent/run\",\"params\":{\"agentId\":\"nope\"},\"body\":{}}"),
            404,
            json!({"error": "Agent not found", "message": "Agent 'nope' does not exist"}),
        ),
    ];
    for (method, path, body, status, expected) in cases {
        let response = send(method.clone(), path, body).await.unwrap();
        assert_eq!(
            response.status().as_u16(),
            status,
            "{method} {path} {body:?}"
        );
        let got: Value = response.json().await.unwrap();
        assert_eq!(got, expected, "{method} {path} {body:?}");
    }
    let plain = http
        .post(&base)
        .header("content-type", "text/plain")
        .body("{\"method\":\"info\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 415);
    // None of it reached the agent.
    assert!(agent_tasks(&agent, "t").await.is_empty());
}
