//! The relay in process: the router the binary serves, called with
//! `oneshot`, in front of the fake agent, both on the test's runtime. The
//! stream is read from the response body: no gateway socket, no binary.

use std::sync::Arc;
use std::time::Duration;

use a2a_fake_agent::{Agent, Behaviour};
use agui_gateway::config::{AgentConfig, Config};
use agui_gateway::http::router::router;
use agui_gateway::state::{AppState, Shutdown};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::SEED_BODY;
use crate::support::{BURST, agui_events, assert_valid_run, text_of};

/// The gateway's state for one agent, `default`, at the fake agent.
async fn gateway_before(fake: &Agent, idle_timeout: Duration) -> Arc<AppState> {
    let upstream = url::Url::parse(&fake.url()).expect("the fake's URL");
    let mut agent = AgentConfig::new("default", upstream);
    agent.idle_timeout = idle_timeout;
    let config = Config::single(([127, 0, 0, 1], 8080).into(), agent);
    Arc::new(AppState::new(config, Shutdown::default()).expect("the gateway's state"))
}

/// The seed's request on the negotiated route, the fake's behaviour picked
/// by `X-Fake`; the AG-UI events of the whole response.
async fn run(state: &Arc<AppState>, scenario: &str) -> Vec<Value> {
    let body = axum::body::to_bytes(seed_answer(state, scenario).await, 16 << 20)
        .await
        .expect("the whole stream");
    agui_events(std::str::from_utf8(&body).expect("UTF-8"))
}

/// The answer's body to the seed's request on the negotiated route, the
/// fake's behaviour picked by `X-Fake`.
pub(crate) async fn seed_answer(state: &Arc<AppState>, scenario: &str) -> Body {
    let request = Request::post("/v1/agents/default/stream?format=agui")
        .header("x-fake", scenario)
        .body(Body::from(SEED_BODY))
        .expect("a request");
    let response = router(state.clone())
        .oneshot(request)
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::OK, "{scenario}");
    response.into_body()
}

fn terminal_code(events: &[Value]) -> String {
    let last = assert_valid_run(events);
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    last["code"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_fake_agents_runs_are_relayed_in_process() {
    let fake = Agent::start(Behaviour::Faults, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(300)).await;
    let fixed = run(&state, "fixed").await;
    assert_eq!(assert_valid_run(&fixed)["type"], "RUN_FINISHED");
    assert_eq!(text_of(&fixed), "fixed");
    let burst = run(&state, "burst").await;
    assert_eq!(assert_valid_run(&burst)["type"], "RUN_FINISHED");
    let expected: String = (1..=BURST).map(|i| format!("[{i}]")).collect();
    assert_eq!(text_of(&burst), expected);
    assert_eq!(
        fake.log.lock().expect("the log").methods,
        ["message/stream", "message/stream"]
    );
}

#[tokio::test]
async fn an_agents_failures_end_the_run_in_process_with_their_codes() {
    let fake = Agent::start(Behaviour::Faults, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(300)).await;
    for (scenario, code) in [
        ("http500", "UPSTREAM_HTTP_ERROR"),
        ("json-error", "A2A_TASK_NOT_FOUND"),
        ("drop", "UPSTREAM_READ_ERROR"),
    ] {
        assert_eq!(
            terminal_code(&run(&state, scenario).await),
            code,
            "{scenario}"
        );
    }
}

/// The fake stalls for 30 s after its first event; the agent's idle
/// timeout is 1 s.
#[tokio::test]
async fn a_silent_agent_meets_its_idle_timeout_in_process() {
    let fake = Agent::start(Behaviour::Faults, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(1)).await;
    let started = std::time::Instant::now();
    let events = run(&state, "stall").await;
    assert_eq!(terminal_code(&events), "UPSTREAM_IDLE_TIMEOUT");
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(1)..Duration::from_secs(10)).contains(&waited),
        "the idle timeout fired after {waited:?}"
    );
}
