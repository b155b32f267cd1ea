//! The conformance matrix: upstream × client × route × scenario. Every cell
//! runs the real `@ag-ui/client` (`HttpAgent.runAgent`, its own verify
//! pipeline) against the gateway in front of a real A2A server, and checks
//! the terminal event, the run result and the messages the client rebuilt.
//! Plus `ag-ui-validate --fail-on warning` against the live endpoints.
//! The table of cells is in `docs/conformance/matrix.md`.

use std::sync::Mutex;

use serde_json::Value;

use crate::grpc_by_card::{ConfiguredBy, fronted};
use crate::run_client;
use crate::support::{Process, agent, gateway_for, repo_root};

pub const CLIENTS: [&str; 3] = ["1.0.0", "0.0.59", "0.0.48"];
pub const ROUTES: [&str; 2] = ["/agui", "/v1/agents/default/stream?format=agui"];

/// What a scenario must look like to a client.
struct Expect {
    scenario: &'static str,
    terminal: &'static str,
    /// `result.state` of RUN_FINISHED (absent for message-only runs).
    state: Option<&'static str>,
    /// Text the rebuilt assistant messages must contain.
    text: &'static [&'static str],
    /// A tool call (by name) the rebuilt messages must hold, with a result.
    tool: Option<&'static str>,
    /// An event type the run must contain.
    event: Option<&'static str>,
}

const fn expect(
    scenario: &'static str,
    terminal: &'static str,
    state: Option<&'static str>,
) -> Expect {
    Expect {
        scenario,
        terminal,
        state,
        text: &[],
        tool: None,
        event: None,
    }
}

fn scenarios() -> Vec<Expect> {
    let finished = |s| expect(s, "RUN_FINISHED", Some("completed"));
    vec![
        Expect {
            text: &["Hello", "streaming"],
            ..finished("chunks")
        },
        Expect {
            text: &["A1", "B1", "B3"],
            ..finished("interleave")
        },
        Expect {
            text: &["Status streamed text."],
            ..finished("status-text")
        },
        Expect {
            event: Some("CUSTOM"),
            ..finished("files")
        },
        Expect {
            text: &["It is sunny."],
            tool: Some("web_search"),
            event: Some("REASONING_MESSAGE_CONTENT"),
            ..finished("hector")
        },
        Expect {
            text: &["It is sunny."],
            tool: Some("web_search"),
            event: Some("REASONING_MESSAGE_CONTENT"),
            ..finished("hector-prefixed")
        },
        Expect {
            text: &["AI adoption rose 40%.", "It is 72F in SF."],
            tool: Some("weather_api"),
            ..finished("acp")
        },
        Expect {
            text: &["Python leads AI."],
            event: Some("CUSTOM"),
            ..finished("agentstack")
        },
        Expect {
            text: &["Sunny today, no rain."],
            event: Some("CUSTOM"),
            ..finished("commands")
        },
        Expect {
            text: &["Direct reply, no task."],
            ..expect("message-only", "RUN_FINISHED", None)
        },
        Expect {
            text: &["I can check the weather.", "Which city?"],
            ..expect("input-required", "RUN_FINISHED", Some("input-required"))
        },
        Expect {
            text: &["Please sign in."],
            ..expect("auth-required", "RUN_FINISHED", Some("auth-required"))
        },
        expect("fail", "RUN_ERROR", None),
        expect("reject", "RUN_ERROR", None),
        // Silent for 2 s with keep-alive comments every second.
        Expect {
            text: &["Before the pause."],
            ..finished("slow:2")
        },
    ]
}

fn assistant_text(run: &Value) -> String {
    run["newMessages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks one cell; `Err` says what is wrong.
fn check(expect: &Expect, run: &Value) -> Result<(), String> {
    let types: Vec<&str> = run["types"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if run["ok"] != true {
        return Err(format!("the client failed: {}", run["error"]));
    }
    if types.last() != Some(&expect.terminal) {
        return Err(format!(
            "ended with {:?}, expected {}",
            types.last(),
            expect.terminal
        ));
    }
    let last = run["events"]
        .as_array()
        .and_then(|e| e.last())
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(state) = expect.state
        && last["result"]["state"] != state
    {
        return Err(format!(
            "result {} instead of state {state}",
            last["result"]
        ));
    }
    match expect.scenario {
        "fail" if last["message"] != "Boom." || last["code"] != "A2A_TASK_FAILED" => {
            return Err(format!("RUN_ERROR {last}"));
        }
        "reject" if last["code"] != "A2A_TASK_REJECTED" => return Err(format!("RUN_ERROR {last}")),
        _ => {}
    }
    let text = assistant_text(run);
    for needle in expect.text {
        if !text.contains(needle) {
            return Err(format!("assistant text {text:?} lacks {needle:?}"));
        }
    }
    if let Some(tool) = expect.tool {
        let messages = run["newMessages"].as_array().cloned().unwrap_or_default();
        let call = messages
            .iter()
            .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
            .find(|c| c["function"]["name"] == tool)
            .ok_or_else(|| format!("no tool call {tool} in the rebuilt messages"))?;
        let answered = messages
            .iter()
            .any(|m| m["role"] == "tool" && m["toolCallId"] == call["id"]);
        if !answered {
            return Err(format!("no tool result for {tool}"));
        }
    }
    if let Some(event) = expect.event
        && !types.contains(&event)
    {
        return Err(format!("no {event} event"));
    }
    Ok(())
}

/// Runs every client × route × scenario cell against one upstream.
pub fn run_matrix(upstream: &str) {
    let agent: Process = agent(upstream);
    let gw = gateway_for(&agent.url(), &["--keepalive-secs", "1"]);
    run_cells(upstream, &gw);
}

/// The matrix against a gRPC-only agent (a2a-sdk 1.3.0), called on
/// `service` ("1.0": `lf.a2a.v1`, "0.3": `a2a.v1`), the gateway
/// configured `by` its gRPC address or by the URL of its card.
fn run_grpc_matrix(service: &str, by: ConfiguredBy) {
    let fronted = fronted("default", service, by, &["--keepalive-secs", "1"], &[]);
    run_cells(
        &format!("python-v1-grpc-{service}{}", by.suffix()),
        &fronted.gw,
    );
}

/// One scenario of the matrix, run by `@ag-ui/client` 1.0.0 against
/// `url` in `thread`, checked as its cells are; `Err` says what is wrong.
pub fn check_scenario(url: &str, scenario: &str, thread: &str) -> Result<(), String> {
    let expect = scenarios()
        .into_iter()
        .find(|e| e.scenario == scenario)
        .unwrap_or_else(|| panic!("no scenario {scenario} in the matrix"));
    let run = run_client(
        CLIENTS[0],
        url,
        &["--message", scenario, "--thread", thread],
    );
    check(&expect, &run)
}

fn run_cells(upstream: &str, gw: &Process) {
    let mut cells = Vec::new();
    for client in CLIENTS {
        for route in ROUTES {
            for expect in scenarios() {
                cells.push((client, route, expect));
            }
        }
    }
    let failures = Mutex::new(Vec::new());
    let passed = Mutex::new(0usize);
    let next = Mutex::new(cells.into_iter().enumerate());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                loop {
                    let Some((n, (client, route, expect))) = next.lock().unwrap().next() else {
                        return;
                    };
                    let url = format!("{}{route}", gw.url());
                    let thread = format!("{upstream}-{client}-{n}");
                    let run = run_client(
                        client,
                        &url,
                        &["--message", expect.scenario, "--thread", &thread],
                    );
                    let cell = format!("{upstream} × {client} × {route} × {}", expect.scenario);
                    match check(&expect, &run) {
                        Ok(()) => *passed.lock().unwrap() += 1,
                        Err(why) => failures.lock().unwrap().push(format!("FAIL {cell}: {why}")),
                    }
                }
            });
        }
    });
    // The validator against the live endpoints, as its own HTTP client.
    let validator = repo_root().join(".cache/venv-validate/bin/ag-ui-validate");
    for route in ROUTES {
        let output = std::process::Command::new(&validator)
            .arg(format!("{}{route}", gw.url()))
            .args(["--fail-on", "warning", "--timeout", "30", "--no-color"])
            .output()
            .expect("ag-ui-validate runs (tests/conformance/setup.sh installs it)");
        let cell = format!("{upstream} × ag-ui-validate × {route} × default");
        if output.status.success() {
            *passed.lock().unwrap() += 1;
        } else {
            failures.lock().unwrap().push(format!(
                "FAIL {cell}: {}",
                String::from_utf8_lossy(&output.stdout)
            ));
        }
    }
    let failures = failures.into_inner().unwrap();
    let passed = passed.into_inner().unwrap();
    println!(
        "matrix {upstream}: {passed} cells passed, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cells failed:\n{}",
        failures.len(),
        passed + failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_1_3() {
    run_matrix("python-v1");
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_0_3() {
    run_matrix("python-v03");
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_1_3_grpc_1_0() {
    run_grpc_matrix("1.0", ConfiguredBy::GrpcUrl);
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_1_3_grpc_0_3() {
    run_grpc_matrix("0.3", ConfiguredBy::GrpcUrl);
}

/// The same agent configured by the URL of its card (1.0's), which names
/// its gRPC interfaces (issue 39).
#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_1_3_grpc_1_0_by_card() {
    run_grpc_matrix("1.0", ConfiguredBy::CardUrl);
}

/// The same with a 0.3-only card (`GRPC_CARD=0.3`).
#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_python_a2a_sdk_1_3_grpc_0_3_by_card() {
    run_grpc_matrix("0.3", ConfiguredBy::CardUrl);
}

#[test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI validator, tests/conformance/setup.sh"]
fn matrix_js_a2a_sdk_1_3() {
    run_matrix("js-v1");
}
