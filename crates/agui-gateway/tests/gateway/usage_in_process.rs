//! A run's token usage through the gateway, in process (issue 40): the
//! fake agent reports it (`X-Fake: usage`, Mastra's shape on the final
//! status); a 1.0 client finds it on `RUN_FINISHED`, an older one in
//! `CUSTOM a2a.usage`, and `agui_gateway_tokens_total` counts it.

use std::sync::Arc;

use a2a_fake_agent::{Agent, Behaviour, USAGE};
use agui_gateway::config::{AgentConfig, Config};
use agui_gateway::http::router::router;
use agui_gateway::state::{AppState, Shutdown};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{agui_events, assert_valid_run};
use crate::usage::tokens_counted;

async fn gateway_before(fake: &Agent) -> Arc<AppState> {
    gateway_with(fake, |_| {}).await
}

async fn gateway_with(fake: &Agent, change: impl FnOnce(&mut Config)) -> Arc<AppState> {
    let upstream = url::Url::parse(&fake.url()).expect("the fake's URL");
    let mut config = Config::single(
        ([127, 0, 0, 1], 8080).into(),
        AgentConfig::new("default", upstream),
    );
    change(&mut config);
    Arc::new(AppState::new(config, Shutdown::default()).expect("the gateway's state"))
}

/// One `/agui` run with `X-Fake: scenario`; `protocol_version` as the
/// client sends it (none before 1.0).
async fn agui_run(
    state: &Arc<AppState>,
    scenario: &str,
    protocol_version: Option<&str>,
) -> Vec<Value> {
    let response = agui_answer(state, scenario, protocol_version).await;
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("the stream");
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    agui_events(std::str::from_utf8(&body).expect("UTF-8"))
}

/// The answer to one `/agui` run with `X-Fake: scenario`, its body unread.
async fn agui_answer(
    state: &Arc<AppState>,
    scenario: &str,
    protocol_version: Option<&str>,
) -> axum::response::Response {
    let mut input = json!({
        "threadId": format!("thread-{scenario}-{protocol_version:?}"), "runId": "run-usage", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{ "id": "u1", "role": "user", "content": "how much?" }],
    });
    if let Some(version) = protocol_version {
        input["protocolVersion"] = json!(version);
    }
    let request = Request::post("/agui")
        .header("content-type", "application/json")
        .header("x-fake", scenario)
        .body(Body::from(input.to_string()))
        .expect("a request");
    router(state.clone())
        .oneshot(request)
        .await
        .expect("an answer")
}

/// The tokens of one kind the gateway counted for `default`.
fn tokens(state: &AppState, kind: &str) -> u64 {
    let kind = format!("kind=\"{kind}\"");
    tokens_counted(
        &state.metrics.render(None, &[]),
        &["agent=\"default\"", &kind],
    )
}

#[tokio::test]
async fn usage_reaches_each_client_as_it_reads_it_and_is_counted_once_per_run() {
    let fake = Agent::start(Behaviour::Faults, 0).await.expect("the fake");
    let state = gateway_before(&fake).await;
    let expected = json!([{ "inputTokens": USAGE.0, "outputTokens": USAGE.1, "totalTokens": USAGE.0 + USAGE.1 }]);

    let v1 = agui_run(&state, "usage", Some("1.0")).await;
    let last = assert_valid_run(&v1);
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["usage"], expected, "{v1:?}");
    assert!(
        !v1.iter().any(|e| e["name"] == "a2a.usage"),
        "1.0 reads it on RUN_FINISHED only"
    );
    assert_eq!((tokens(&state, "input"), tokens(&state, "output")), USAGE);

    let legacy = agui_run(&state, "usage", None).await;
    let last = assert_valid_run(&legacy);
    assert!(last.get("usage").is_none(), "{last}");
    let before = &legacy[legacy.len() - 2];
    assert_eq!(before["type"], "CUSTOM");
    assert_eq!(before["name"], "a2a.usage");
    assert_eq!(before["value"]["usage"], expected);
    assert_eq!(
        (tokens(&state, "input"), tokens(&state, "output")),
        (2 * USAGE.0, 2 * USAGE.1)
    );

    // A run without usage carries none and counts nothing.
    let plain = agui_run(&state, "fixed", Some("1.0")).await;
    assert!(assert_valid_run(&plain).get("usage").is_none());
    assert!(!plain.iter().any(|e| e["name"] == "a2a.usage"));
    assert_eq!(
        (tokens(&state, "input"), tokens(&state, "output")),
        (2 * USAGE.0, 2 * USAGE.1)
    );
    let rendered = state.metrics.render(None, &[]);
    assert!(
        rendered.contains("model=\"unknown\""),
        "a run whose agent named no model: {rendered}"
    );
}

/// With no journal a run ends with its client: what the agent reported
/// using until then still counts (and would be charged to a budget).
#[tokio::test]
async fn a_client_that_leaves_mid_run_leaves_its_usage_counted() {
    use futures::StreamExt as _;
    let fake = Agent::start(Behaviour::Faults, 0).await.expect("the fake");
    let state = gateway_with(&fake, |config| {
        config.journal.backend = agui_gateway::config::Backend::Off;
    })
    .await;
    let response = agui_answer(&state, "usage-stall", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body().into_data_stream();
    let mut seen = String::new();
    while !seen.contains("\"delta\":\"used\"") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
            .await
            .expect("the chunk within 10 s")
            .expect("more body")
            .expect("a chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert_eq!(
        (tokens(&state, "input"), tokens(&state, "output")),
        (0, 0),
        "not before the end"
    );
    drop(body);
    assert_eq!((tokens(&state, "input"), tokens(&state, "output")), USAGE);
}
