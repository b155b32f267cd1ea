//! Gateway integration tests over real loopback TCP: the `agui-gateway`
//! binary started as in production, in front of real A2A servers (a2a-sdk
//! 1.3.0 and 0.3.26, @a2a-js/sdk 1.3.0) and a fault-injecting fake, called
//! by reqwest and by the real `@ag-ui/client` 1.0.0, 0.0.59 and 0.0.48.
//! All in one binary, to link once.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod agui_endpoint;
mod auth;
mod batching;
mod budgets;
mod capabilities;
mod card_preference;
mod card_signing;
mod config;
mod copilotkit;
mod cors;
mod edge;
mod edge_tls;
mod failures;
mod frameworks;
mod framing;
mod fuzz_corpora;
mod grpc_by_card;
mod grpc_upstream;
mod hardening;
mod hardening_answers;
mod hardening_cards;
mod hardening_edge;
mod hardening_journal;
mod hardening_replays;
mod hardening_tokens;
mod hardening_trailers;
mod ids;
mod in_process;
mod in_process_relay;
mod input;
mod journal_cluster;
mod journal_tls;
mod limits;
mod logs;
mod matrix;
mod negotiation;
mod operations;
mod passthrough;
mod polling;
mod polling_in_process;
mod polling_survives;
mod proc;
mod readme;
mod reload;
mod replicas;
mod resume;
mod streaming;
mod support;
mod telemetry;
mod upstream_auth;
mod upstream_tls;
mod usage;
mod usage_in_process;

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
