//! What AG-UI clients send reaches the agent (issue 10): frontend tools and
//! their results, `resume`, state and context, each new message once. Real
//! clients (`@ag-ui/client` 1.0.0 / 0.0.59 / 0.0.48, CopilotKit's runtime
//! 1.75.0 driven by its own client class) in front of the gateway, in front
//! of a real a2a-sdk agent (`tests/agents/python-v1/input_agent.py`) that
//! logs every message it receives.

use serde_json::{Value, json};

use crate::edge::write_config;
use crate::support::{Process, agent, client, gateway, gateway_for, received_by, repo_root};

const TOOL_RESULT: &str = r#"{"temperature":21,"city":"Paris"}"#;

/// One flow of `input-flows.mjs` with one client version.
fn flow(client: &str, url: &str, flow: &str) -> Value {
    let script = repo_root().join("tests/conformance/node/input-flows.mjs");
    let output = std::process::Command::new("node")
        .arg(script)
        .args(["--client", client, "--url", url, "--flow", flow])
        .output()
        .expect("node runs (tests/conformance/setup.sh installs the clients)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    let line = line.unwrap_or_else(|| {
        panic!(
            "no result from {flow} with {client}: {stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    serde_json::from_str(line).expect("JSON line")
}

/// What the agent received in one thread, in order (messages and cancels).
async fn received(agent: &Process, thread: &str) -> Vec<Value> {
    let all = received_by(agent).await;
    let tasks: Vec<String> = all
        .iter()
        .filter(|m| m["contextId"] == thread)
        .filter_map(|m| m["taskId"].as_str().map(str::to_owned))
        .collect();
    all.into_iter()
        .filter(|m| {
            m["contextId"] == thread
                || m["cancel"]
                    .as_str()
                    .is_some_and(|t| tasks.iter().any(|x| x == t))
        })
        .collect()
}

/// The tool results among a received message's parts.
fn tool_results(message: &Value) -> Vec<&Value> {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["data"]["type"] == "tool_result")
        .map(|p| &p["data"])
        .collect()
}

fn texts(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .flat_map(|m| m["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// The agent answered from the tool's result in each of the flow's two turns.
fn answered_twice(run: &Value, version: &str) {
    let text = run["text"].as_str().unwrap_or_default();
    let answer = format!("get_weather said: {TOOL_RESULT}");
    assert_eq!(text.matches(&answer).count(), 2, "{version}: {text}");
}

/// Every tool call the client kept: ids unique, arguments valid JSON.
fn check_tool_calls(messages: &Value) {
    let calls: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .collect();
    let mut ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
    for call in &calls {
        let arguments = call["function"]["arguments"].as_str().unwrap();
        assert!(
            serde_json::from_str::<Value>(arguments).is_ok(),
            "arguments are not JSON: {arguments}"
        );
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), calls.len(), "tool-call ids repeat: {calls:?}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_frontend_tool_round_trips_with_every_client_and_nothing_is_sent_twice() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let run = flow(version, &url, "clienttool");
        assert_eq!(run["ok"], true, "{version}: {run}");
        // Two turns, each a run that ends at the tool call and one with its result.
        let runs = run["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4, "{version}: {run}");
        for (n, done) in runs.iter().enumerate() {
            assert_eq!(
                done["types"].as_array().unwrap().last().unwrap(),
                "RUN_FINISHED"
            );
            let pending = &done["result"]["pendingToolCallIds"];
            assert_eq!(pending.is_array(), n % 2 == 0, "{version} run {n}: {done}");
            // No result was made up for the client's tool.
            assert!(
                !done["types"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("TOOL_CALL_RESULT"))
            );
        }
        answered_twice(&run, version);
        check_tool_calls(&run["messages"]);

        // Upstream: four messages, the question once per turn, the result
        // as a tool_result for the agent's own call id.
        let got = received(&agent, run["threadId"].as_str().unwrap()).await;
        assert_eq!(got.len(), 4, "{version}: {got:?}");
        assert_eq!(
            texts(&got),
            ["clienttool", "clienttool"],
            "{version}: {got:?}"
        );
        for turn in got.chunks(2) {
            let (question, answer) = (&turn[0], &turn[1]);
            let results = tool_results(answer);
            assert_eq!(results.len(), 1, "{answer}");
            assert_eq!(results[0]["tool_call_id"], "call-weather");
            assert_eq!(results[0]["tool_name"], "get_weather");
            assert_eq!(results[0]["content"], TOOL_RESULT);
            assert_eq!(
                answer["taskId"], question["taskId"],
                "the waiting task gets the result"
            );
        }
        // The client's tools travel under the extension.
        assert_eq!(got[0]["metadata"]["x-agui-tools"][0]["name"], "get_weather");
        assert_eq!(
            got[0]["extensions"],
            json!(["urn:agui-gateway:a2a-extension:agui-input:v1"])
        );
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn copilotkit_runtime_runs_a_frontend_tool_in_two_upstream_requests() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let script = repo_root().join("tests/copilotkit/roundtrip.mjs");
    let output = std::process::Command::new("node")
        .arg(script)
        .args([
            "--agui-url",
            &format!("{}/agui", gw.url()),
            "--timeout-ms",
            "60000",
        ])
        .output()
        .expect("node runs (tests/copilotkit/setup.sh installs the runtime)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let run: Value = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no report: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert_eq!(run["ok"], true, "{run}");
    assert_eq!(run["runs"], 4, "two round trips, two runs each: {run}");
    assert_eq!(run["argumentsValidJson"], true);
    assert_eq!(run["toolCallIdsUnique"], true);
    let got = received(&agent, run["threadId"].as_str().unwrap()).await;
    // Exactly two upstream requests per round trip, the result in the second.
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(texts(&got), ["clienttool", "clienttool"]);
    for answer in [&got[1], &got[3]] {
        let results = tool_results(answer);
        assert_eq!(results.len(), 1, "{answer}");
        assert_eq!(results[0]["tool_call_id"], "call-weather");
        assert_eq!(results[0]["content"], TOOL_RESULT);
    }
}

/// A gateway in front of the input agent with AG-UI interrupts on.
fn interrupting_gateway(agent: &Process) -> Process {
    let config = write_config(
        "interrupts.toml",
        &format!(
            "default_agent = \"default\"\n[agents.default]\nupstream = \"{}/\"\ninterrupts = true\n",
            agent.url()
        ),
    );
    gateway(&["--config", config.to_str().unwrap()])
}

/// AG-UI 1.0: a run that stopped on a frontend tool call is a completed
/// run, whether the gateway writes interrupts or not; the app runs the tool
/// and the thread goes on (with interrupts on, an interrupt outcome would
/// make 1.0's next `runAgent` throw).
#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_frontend_tool_call_ends_a_1_0_run_as_a_success_with_interrupts_off_and_on() {
    let agent = agent("input");
    let plain = gateway_for(&agent.url(), &[]);
    let interrupting = interrupting_gateway(&agent);
    for gw in [&plain, &interrupting] {
        let run = flow("1.0.0", &format!("{}/agui", gw.url()), "clienttool");
        assert_eq!(run["ok"], true, "{run}");
        let runs = run["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4, "{run}");
        for (n, done) in runs.iter().enumerate() {
            if n % 2 == 1 {
                assert!(done["outcome"].is_null(), "run {n}: {done}");
                continue;
            }
            let pending = &done["result"]["pendingToolCallIds"];
            assert_eq!(pending.as_array().map(Vec::len), Some(1), "run {n}: {done}");
            assert_eq!(
                done["outcome"],
                json!({ "type": "success", "pendingToolCallIds": pending }),
                "run {n}"
            );
        }
        assert_eq!(run["pendingInterrupts"], json!([]));
        answered_twice(&run, "1.0.0");
        check_tool_calls(&run["messages"]);
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn resume_resolved_reaches_the_waiting_task_and_cancelled_cancels_it() {
    let agent = agent("input");
    let gw = interrupting_gateway(&agent);
    let url = format!("{}/agui", gw.url());
    for version in ["1.0.0", "0.0.59"] {
        let run = flow(version, &url, "resolved");
        assert_eq!(run["ok"], true, "{version}: {run}");
        let runs = run["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{version}: {run}");
        let interrupt = &runs[0]["outcome"]["interrupts"][0];
        assert_eq!(interrupt["reason"], "input_required");
        assert!(runs[1]["outcome"].is_null(), "{version}: {run}");
        assert_eq!(runs[1]["result"]["state"], "completed");
        assert!(
            run["text"]
                .as_str()
                .unwrap()
                .contains("Weather for Paris: sunny.")
        );
        assert_eq!(run["pendingInterrupts"], json!([]));
        let got = received(&agent, run["threadId"].as_str().unwrap()).await;
        assert_eq!(got.len(), 2, "{version}: {got:?}");
        assert_eq!(texts(&got), ["ask"], "the question is never sent again");
        assert_eq!(got[1]["taskId"], interrupt["id"]);
        assert_eq!(got[1]["parts"][0]["data"], json!({ "city": "Paris" }));
        assert_eq!(got[1]["metadata"]["x-agui-resume"][0]["status"], "resolved");

        let run = flow(version, &url, "cancelled");
        assert_eq!(run["ok"], true, "{version}: {run}");
        let runs = run["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{version}: {run}");
        let task = runs[0]["outcome"]["interrupts"][0]["id"].clone();
        assert_eq!(runs[1]["result"]["state"], "canceled");
        // The cancelled outcome is 1.0's: 0.0.59 rejects it.
        let outcome = if version == "1.0.0" {
            json!({ "type": "cancelled" })
        } else {
            Value::Null
        };
        assert_eq!(runs[1]["outcome"], outcome, "{version}: {run}");
        let got = received(&agent, run["threadId"].as_str().unwrap()).await;
        assert_eq!(got.len(), 2, "{version}: {got:?}");
        assert_eq!(got[1], json!({ "cancel": task }));
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn shared_state_and_context_reach_the_agent_and_its_answer_reaches_every_client() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let run = flow(version, &url, "state");
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(
            run["state"],
            json!({ "city": "Paris", "seen": true, "contextCount": 1, "answer": "sunny" }),
            "{version}: {run}"
        );
        assert_eq!(run["warnings"], json!([]), "{version}");
        let types = run["runs"][0]["types"].as_array().unwrap();
        // A patch for 1.0; the patched state for older clients (0.0.48
        // cannot apply a patch).
        let second = if version == "1.0.0" {
            "STATE_DELTA"
        } else {
            "STATE_SNAPSHOT"
        };
        let states: Vec<&Value> = types
            .iter()
            .filter(|t| t.as_str().unwrap().starts_with("STATE_"))
            .collect();
        assert_eq!(
            states,
            [&json!("STATE_SNAPSHOT"), &json!(second)],
            "{version}"
        );
        let got = received(&agent, run["threadId"].as_str().unwrap()).await;
        assert_eq!(
            got[0]["metadata"]["x-agui-state"],
            json!({ "city": "Paris" })
        );
        assert_eq!(got[0]["metadata"]["x-agui-context"][0]["value"], "Ada");
        assert_eq!(
            got[0]["requestMetadata"]["x-agui-state"],
            json!({ "city": "Paris" })
        );
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_run_with_nothing_new_is_refused_before_any_upstream_call() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let post = |body: Value| {
        let url = format!("{}/agui", gw.url());
        async move { client().post(url).json(&body).send().await.unwrap() }
    };
    let thread = "thread-nothing-new";
    let body = json!({ "threadId": thread, "runId": "r1",
        "messages": [{ "id": "u1", "role": "user", "content": "hello" }] });
    let first = post(body.clone()).await;
    assert_eq!(first.status(), 200);
    assert!(first.text().await.unwrap().contains("RUN_FINISHED"));
    // The same history again (a retry, a second tab): u1 was sent.
    for again in [
        body.clone(),
        json!({ "threadId": thread, "runId": "r2", "messages": [
            { "id": "u1", "role": "user", "content": "hello" },
            { "id": "a1", "role": "assistant", "content": "You said: hello" }] }),
    ] {
        let refused = post(again).await;
        assert_eq!(refused.status(), 400);
        let error: Value = refused.json().await.unwrap();
        assert_eq!(error["error"]["code"], "NO_NEW_INPUT");
        assert_eq!(error["error"]["side"], "client");
    }
    assert_eq!(received(&agent, thread).await.len(), 1);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn the_demo_agent_shows_a_frontend_tool_turn_and_a_shared_state_turn() {
    let demo = gateway(&["demo", "--delay-ms", "0"]);
    let url = format!("{}/agui", demo.url());
    for version in ["1.0.0", "0.0.48"] {
        let run = flow(version, &url, "clienttool");
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(run["runs"].as_array().unwrap().len(), 4, "{version}: {run}");
        assert_eq!(
            run["text"]
                .as_str()
                .unwrap()
                .matches(&format!("Your tool says: {TOOL_RESULT}"))
                .count(),
            2,
            "{version}: {}",
            run["text"]
        );
        check_tool_calls(&run["messages"]);

        let run = flow(version, &url, "state");
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(
            run["state"],
            json!({ "city": "Paris", "forecast": "sunny, 22 °C" }),
            "{version}: {run}"
        );
    }
}
