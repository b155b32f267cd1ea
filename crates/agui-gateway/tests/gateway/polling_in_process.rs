//! Agents that do not stream, in process (tier 1): the router in front of
//! the fake agent's `Polled` behaviour (a card with `streaming: false`, a
//! task that advances on the clock), its faults picked by `X-Fake`. The
//! real agents' runs are tier 2 (`polling.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_fake_agent::{Agent, Behaviour};
use agui_gateway::config::{AgentConfig, Config, Mode};
use agui_gateway::http::router::router;
use agui_gateway::state::{AppState, Shutdown};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use crate::in_process_relay::seed_answer;
use crate::support::{agui_events, assert_valid_run, text_of};

async fn gateway_before(fake: &Agent, idle: Duration, mode: Option<Mode>) -> Arc<AppState> {
    let upstream = url::Url::parse(&fake.url()).expect("the fake's URL");
    let mut agent = AgentConfig::new("default", upstream);
    agent.idle_timeout = idle;
    agent.reach.mode = mode;
    let config = Config::single(([127, 0, 0, 1], 8080).into(), agent);
    Arc::new(AppState::new(config, Shutdown::default()).expect("the gateway's state"))
}

/// The seed's request, the fake's fault picked by `X-Fake`: the AG-UI
/// events, each with when it arrived.
async fn run(state: &Arc<AppState>, fault: &str) -> Vec<(Instant, Value)> {
    let mut body = seed_answer(state, fault).await;
    let mut events = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while let Ok(Some(frame)) = tokio::time::timeout_at(until.into(), body.frame()).await {
        let Ok(data) = frame.expect("a frame").into_data() else {
            continue;
        };
        let text = std::str::from_utf8(&data).expect("UTF-8");
        events.extend(agui_events(text).into_iter().map(|e| (Instant::now(), e)));
    }
    events
}

fn events(timed: &[(Instant, Value)]) -> Vec<Value> {
    timed.iter().map(|(_, e)| e.clone()).collect()
}

fn reads(fake: &Agent) -> Vec<Instant> {
    let log = fake.log.lock().expect("the log");
    log.methods
        .iter()
        .zip(&log.received_at)
        .filter(|(m, _)| *m == "tasks/get")
        .map(|(_, at)| *at)
        .collect()
}

#[tokio::test]
async fn a_task_that_does_not_stream_is_polled_to_its_end() {
    let fake = Agent::start(Behaviour::Polled, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(300), None).await;
    let started = Instant::now();
    let timed = run(&state, "").await;
    let events = events(&timed);
    assert_eq!(
        assert_valid_run(&events)["type"],
        "RUN_FINISHED",
        "{events:?}"
    );
    assert_eq!(text_of(&events), "Step 1. Step 2. All done.");
    // The first step shows while the task still works (it ends 1.2 s
    // after the send; reads start 200 ms apart).
    let first = timed
        .iter()
        .find(|(_, e)| e["type"] == "TEXT_MESSAGE_CONTENT")
        .expect("some text");
    let last = timed.last().expect("events");
    assert!(
        first.0 + Duration::from_millis(200) < last.0,
        "step 1 at {:?}, the end at {:?}",
        first.0 - started,
        last.0 - started
    );
    let methods = fake.log.lock().expect("the log").methods.clone();
    assert_eq!(methods[0], "message/send", "{methods:?}");
    assert!(
        !methods.iter().any(|m| m == "message/stream"),
        "{methods:?}"
    );
    let body = fake.log.lock().expect("the log").body.clone();
    assert_eq!(body["method"], "tasks/get", "the last call: {body}");
    let reads = reads(&fake);
    assert!(reads.len() >= 2, "{methods:?}");
    for pair in reads.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(100), "two reads {gap:?} apart");
    }
}

#[tokio::test]
async fn the_faults_of_a_polled_task_end_its_run_as_a_stream_would() {
    let fake = Agent::start(Behaviour::Polled, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(300), None).await;
    // A read answered 503 is read again.
    let flaky = events(&run(&state, "flaky").await);
    assert_eq!(
        assert_valid_run(&flaky)["type"],
        "RUN_FINISHED",
        "{flaky:?}"
    );
    assert_eq!(text_of(&flaky), "Step 1. Step 2. All done.");
    // A task the agent lost: its error, in its words.
    let gone = events(&run(&state, "gone").await);
    let last = assert_valid_run(&gone);
    assert_eq!(
        (last["type"].as_str(), last["code"].as_str()),
        (Some("RUN_ERROR"), Some("A2A_TASK_NOT_FOUND")),
        "{gone:?}"
    );
    // A failed task: RUN_ERROR with the agent's words.
    let failed = events(&run(&state, "failed").await);
    let last = assert_valid_run(&failed);
    assert_eq!(last["code"], "A2A_TASK_FAILED", "{failed:?}");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.contains("Boom.")),
        "{last}"
    );
    // An agent that blocks anyway: one answer, no reads.
    let before = reads(&fake).len();
    let blocking = events(&run(&state, "blocking").await);
    assert_eq!(assert_valid_run(&blocking)["type"], "RUN_FINISHED");
    assert_eq!(text_of(&blocking), "Step 1. Step 2. All done.");
    assert_eq!(reads(&fake).len(), before, "a finished task is not read");
}

#[tokio::test]
async fn a_polled_task_without_news_meets_the_idle_timeout() {
    let fake = Agent::start(Behaviour::Polled, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(2), None).await;
    let started = Instant::now();
    let events = events(&run(&state, "forever").await);
    let last = assert_valid_run(&events);
    assert_eq!(last["code"], "UPSTREAM_IDLE_TIMEOUT", "{events:?}");
    assert_eq!(text_of(&events), "Step 1. Step 2. All done.");
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(2)..Duration::from_secs(10)).contains(&waited),
        "{waited:?}"
    );
    // Read on while it waited, within the rate.
    let reads = reads(&fake);
    let span = reads[reads.len() - 1] - reads[0];
    assert!(
        reads.len() as f64 <= 1.0 + span.as_secs_f64() * 5.0,
        "{} reads in {span:?}",
        reads.len()
    );
}

#[tokio::test]
async fn a_pinned_mode_wins_over_the_card() {
    let fake = Agent::start(Behaviour::Polled, 0).await.expect("the fake");
    let state = gateway_before(&fake, Duration::from_secs(300), Some(Mode::Stream)).await;
    let events = events(&run(&state, "").await);
    let last = assert_valid_run(&events);
    assert_eq!(last["code"], "A2A_UNSUPPORTED_OPERATION", "{events:?}");
    let readyz = router(state.clone())
        .oneshot(
            Request::get("/readyz")
                .body(Body::empty())
                .expect("a request"),
        )
        .await
        .expect("an answer");
    let body = axum::body::to_bytes(readyz.into_body(), 1 << 20)
        .await
        .expect("the body");
    let readyz: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        readyz["agents"]["default"]["reachedBy"],
        serde_json::json!({ "binding": "JSONRPC", "version": "0.3", "mode": "stream" })
    );
}
