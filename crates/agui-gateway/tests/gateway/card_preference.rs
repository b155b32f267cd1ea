//! Card preference (issue 39): runs take the first interface an agent's
//! card lists that the gateway speaks on an origin it may call, unless
//! the configuration pins a binding. Against a2a-sdk 1.3.0 (`python-v1`)
//! with its card switches (`CARD_ORDER`, `CARD_FOREIGN`, `STREAMING`),
//! what it was called with read from its `CALL_LOG`.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::edge::{canary, write_config};
use crate::matrix::check_scenario;
use crate::support::*;

/// A send in JSON-RPC, in either dialect.
const JSON_RPC_SENDS: [&str; 4] = [
    "SendStreamingMessage",
    "SendMessage",
    "message/stream",
    "message/send",
];

/// `python-v1` with `env` and a fresh `CALL_LOG` named after `test`: the
/// agent, and the log.
fn logged_agent(test: &str, env: &[(&str, &str)]) -> (Process, std::path::PathBuf) {
    let log = call_log_path(test);
    let log_text = log.display().to_string();
    let mut env = env.to_vec();
    env.push(("CALL_LOG", &log_text));
    (agent_with("python-v1", &env), log)
}

/// A gateway fronting `agent` by its URL as agent `a`, with `lines` more
/// of its table.
fn gateway_of(test: &str, agent: &Process, lines: &str) -> Process {
    let file = write_config(
        &format!("card-preference-{test}-{}.toml", agent.port),
        &format!(
            "[agents.a]\nupstream = \"http://127.0.0.1:{}/\"\n{lines}",
            agent.port
        ),
    );
    gateway(&["--config", file.to_str().unwrap()])
}

/// The matrix's checks of `scenarios`, run through agent `a` with
/// `@ag-ui/client` 1.0.0 (blocking: on a thread of its own).
async fn converts(gw: &Process, test: &str, scenarios: &[&'static str]) {
    let url = format!("{}/v1/agents/a/agui", gw.url());
    let test = test.to_owned();
    let scenarios = scenarios.to_vec();
    let failures = tokio::task::spawn_blocking(move || {
        scenarios
            .iter()
            .filter_map(|scenario| {
                check_scenario(&url, scenario, &format!("{test}-{scenario}"))
                    .err()
                    .map(|why| format!("{test} × {scenario}: {why}"))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn count(calls: &[String], wanted: impl Fn(&str) -> bool) -> usize {
    calls.iter().filter(|call| wanted(call)).count()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI clients, tests/conformance/setup.sh"]
async fn a_card_listing_http_json_first_is_called_over_http_json_streaming_and_polled() {
    const SCENARIOS: [&str; 2] = ["chunks", "hector"];
    for (mode, env) in [
        ("stream", vec![("CARD_ORDER", "rest-first")]),
        (
            "poll",
            vec![("CARD_ORDER", "rest-first"), ("STREAMING", "0")],
        ),
    ] {
        let test = format!("rest-first-{mode}");
        let (agent, log) = logged_agent(&test, &env);
        let gw = gateway_of(&test, &agent, "");
        assert_eq!(
            reached_by(&gw, "a").await,
            json!({ "binding": "HTTP+JSON", "version": "1.0", "mode": mode }),
            "{mode}"
        );
        converts(&gw, &test, &SCENARIOS).await;
        let calls = calls_logged(&log);
        let sends = SCENARIOS.len();
        assert_eq!(
            count(&calls, |c| JSON_RPC_SENDS.contains(&c)),
            0,
            "{mode}: {calls:?}"
        );
        let streamed = count(&calls, |c| c == "POST /rest/message:stream");
        let sent = count(&calls, |c| c == "POST /rest/message:send");
        let reads = count(&calls, |c| c.starts_with("GET /rest/tasks/"));
        if mode == "stream" {
            assert_eq!((streamed, sent, reads), (sends, 0, 0), "{calls:?}");
        } else {
            assert_eq!((streamed, sent), (0, sends), "{calls:?}");
            // Each send, then its task read until it ended.
            let first_send = calls.iter().position(|c| c == "POST /rest/message:send");
            let first_read = calls.iter().position(|c| c.starts_with("GET /rest/tasks/"));
            assert!(first_send < first_read, "{calls:?}");
            assert!(reads >= sends, "{calls:?}");
        }
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI clients, tests/conformance/setup.sh"]
async fn binding_jsonrpc_pins_json_rpc_over_a_cards_preference() {
    let (agent, log) = logged_agent("pinned-jsonrpc", &[("CARD_ORDER", "rest-first")]);
    let gw = gateway_of("pinned-jsonrpc", &agent, "binding = \"jsonrpc\"\n");
    assert_eq!(
        reached_by(&gw, "a").await,
        json!({ "binding": "JSONRPC", "version": "1.0", "mode": "stream" })
    );
    converts(&gw, "pinned-jsonrpc", &["chunks"]).await;
    let calls = calls_logged(&log);
    assert_eq!(
        count(&calls, |c| c == "SendStreamingMessage"),
        1,
        "{calls:?}"
    );
    assert_eq!(count(&calls, |c| c.contains("/rest")), 0, "{calls:?}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; the AG-UI clients, tests/conformance/setup.sh"]
async fn an_interface_on_another_origin_is_called_only_once_that_origin_is_allowed() {
    let (canary_addr, canary_hits) = canary().await;
    let foreign = format!("http://{canary_addr}/rpc");
    let (agent, log) = logged_agent("foreign", &[("CARD_FOREIGN", &foreign)]);
    // Not allowed: the card's first interface is passed over for the
    // agent's own (JSON-RPC 1.0 at `/`).
    let gw = gateway_of("foreign", &agent, "");
    assert_eq!(
        reached_by(&gw, "a").await,
        json!({ "binding": "JSONRPC", "version": "1.0", "mode": "stream" })
    );
    converts(&gw, "foreign", &["chunks", "hector"]).await;
    let calls = calls_logged(&log);
    assert_eq!(
        count(&calls, |c| c == "SendStreamingMessage"),
        2,
        "{calls:?}"
    );
    assert_eq!(
        canary_hits.load(Ordering::SeqCst),
        0,
        "the canary was reached"
    );
    drop(gw);
    // Allowed: the run goes there (the canary closes the connection: the
    // run fails), and not to the agent.
    let gw = gateway_of(
        "foreign-allowed",
        &agent,
        &format!("allowed_origins = [\"http://{canary_addr}\"]\n"),
    );
    assert_eq!(
        reached_by(&gw, "a").await,
        json!({ "binding": "JSONRPC", "version": "1.0", "mode": "stream" })
    );
    assert_eq!(
        canary_hits.load(Ordering::SeqCst),
        0,
        "reached before the run"
    );
    let events = agui_run(&gw, "a", "chunks", "t-foreign-allowed").await;
    assert_eq!(assert_valid_run(&events)["type"], "RUN_ERROR", "{events:?}");
    assert!(
        canary_hits.load(Ordering::SeqCst) >= 1,
        "the canary was not called"
    );
    let after = calls_logged(&log);
    assert_eq!(
        count(&after, |c| JSON_RPC_SENDS.contains(&c)),
        2,
        "the agent was called: {after:?}"
    );
}
