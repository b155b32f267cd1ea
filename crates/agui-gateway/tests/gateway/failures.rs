//! Upstream failures: each ends the AG-UI run with `RUN_ERROR` and a stable
//! code.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_run;
use crate::support::*;

pub async fn failing_run(gw: &Process, scenario: &str) -> Value {
    let response = fake_run(gw, scenario).await;
    assert_eq!(response.status(), 200, "{scenario}");
    let text = response.text().await.unwrap();
    let events = agui_events(&text);
    let last = assert_valid_run(&events).clone();
    assert_eq!(last["type"], "RUN_ERROR", "{scenario}: {text}");
    last
}

#[tokio::test]
async fn every_upstream_failure_ends_in_run_error() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--idle-timeout-secs", "1", "--max-event-bytes", "2000"],
    );
    assert_eq!(
        failing_run(&gw, "http500").await["code"],
        "UPSTREAM_HTTP_ERROR"
    );
    let json_error = failing_run(&gw, "json-error").await;
    assert_eq!(
        (json_error["code"].as_str(), json_error["message"].as_str()),
        (
            Some("A2A_TASK_NOT_FOUND"),
            Some("the agent reported an error: Task not found")
        )
    );
    assert_eq!(
        failing_run(&gw, "drop").await["code"],
        "UPSTREAM_READ_ERROR"
    );
    let started = Instant::now();
    assert_eq!(
        failing_run(&gw, "stall").await["code"],
        "UPSTREAM_IDLE_TIMEOUT"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the idle timeout fired"
    );
    assert_eq!(
        failing_run(&gw, "oversized").await["code"],
        "UPSTREAM_EVENT_TOO_LARGE"
    );
    // Connection refused: nothing listens on the discard port. (A port
    // bound then freed was taken by another test's server now and then,
    // which then closed the connection: a read error.)
    let gw = gateway_for("http://127.0.0.1:9/", &[]);
    assert_eq!(
        failing_run(&gw, "fixed").await["code"],
        "UPSTREAM_UNREACHABLE"
    );
}
