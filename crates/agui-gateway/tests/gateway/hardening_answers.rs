//! Issue 37's hostile-answer findings against the gateway (the release
//! build under `scripts/test.sh`): an A2A 1.0 agent answering `ListTasks`
//! and `GetTask` with 15 MiB of small numbers, read for a thread list and
//! for a replay; and an agent that takes its time listing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::support::*;

const NUMBERS_BYTES: usize = 15 << 20;
const CALLER: &str = "Bearer alice";

/// How the agent behaves: `flood` answers with 15 MiB of numbers, `slow`
/// lists nothing after 20 s.
#[derive(Clone, Copy)]
enum Mode {
    Flood,
    Slow,
}

async fn hostile_agent(mode: Mode) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let card = json!({
        "name": "hostile", "description": "answers too much", "version": "1",
        "supportedInterfaces": [{ "url": format!("http://{addr}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": { "streaming": true }, "defaultInputModes": ["text"], "defaultOutputModes": ["text"], "skills": [],
    });
    let app = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || async move { axum::Json(card.clone()) }),
        )
        .route("/", post(answer))
        .with_state(mode);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// `[1,1,…,1]`, 15 MiB of it.
fn numbers() -> String {
    let mut text = String::with_capacity(NUMBERS_BYTES + 2);
    text.push('[');
    while text.len() < NUMBERS_BYTES {
        text.push_str("1,");
    }
    text.push_str("1]");
    text
}

async fn answer(State(mode): State<Mode>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = request["id"].clone();
    let task = |history: &str| {
        format!(
            r#"{{"id":"t1","contextId":"ctx","status":{{"state":"TASK_STATE_COMPLETED"}},"history":{history}}}"#
        )
    };
    let result = match (mode, request["method"].as_str()) {
        (Mode::Slow, _) => {
            tokio::time::sleep(Duration::from_secs(20)).await;
            r#"{"tasks":[]}"#.to_owned()
        }
        (Mode::Flood, Some("ListTasks")) => format!(r#"{{"tasks":[{}]}}"#, task(&numbers())),
        (Mode::Flood, Some("GetTask")) => task(&numbers()),
        _ => return (axum::http::StatusCode::BAD_REQUEST, "no").into_response(),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
    )
        .into_response()
}

async fn list_threads(gw: &Process) -> Value {
    client()
        .get(format!("{}/copilotkit/threads?agentId=default", gw.url()))
        .header("Authorization", CALLER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_a_hostile_task_list_is_read_within_budgets() {
    let agent = hostile_agent(Mode::Flood).await;
    let gw = gateway_for(&format!("http://{agent}/"), &[]);
    let pid = gw.child.id();
    let base = peak_rss_mib(pid);

    let one = list_threads(&gw).await;
    assert_eq!(one["threads"], json!([]), "{one}");
    let after_one = peak_rss_mib(pid);
    eprintln!("one thread list of a 15 MiB task list: peak {base} -> {after_one} MiB");
    assert!(after_one - base < 100, "peak {base} -> {after_one} MiB");

    let lists: Vec<_> = (0..8).map(|_| list_threads(&gw)).collect();
    for listed in futures::future::join_all(lists).await {
        assert_eq!(listed["threads"], json!([]), "{listed}");
    }
    let after_eight = peak_rss_mib(pid);
    eprintln!("8 at once: peak {after_eight} MiB");
    assert!(after_eight - base < 200, "peak {base} -> {after_eight} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_a_hostile_task_history_is_read_within_budgets() {
    let agent = hostile_agent(Mode::Flood).await;
    let gw = gateway_for(&format!("http://{agent}/"), &["--journal", "off"]);
    let pid = gw.child.id();
    let base = peak_rss_mib(pid);
    let replay = client()
        .post(format!("{}/agui/connect", gw.url()))
        .header("Authorization", CALLER)
        .json(&json!({ "threadId": "ctx" }))
        .send()
        .await
        .unwrap();
    // Nothing the agent said is shown: its tasks are not this caller's.
    assert_eq!(replay.status(), 204);
    let peak = peak_rss_mib(pid);
    eprintln!("one replay from a 15 MiB task history: peak {base} -> {peak} MiB");
    assert!(peak - base < 100, "peak {base} -> {peak} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_a_slow_agent_holds_a_thread_list_no_longer_than_a_replay() {
    let agent = hostile_agent(Mode::Slow).await;
    let gw = gateway_for(&format!("http://{agent}/"), &[]);
    let started = Instant::now();
    let listed = list_threads(&gw).await;
    let took = started.elapsed();
    assert_eq!(listed["threads"], json!([]), "{listed}");
    // A replay's deadline is 10 s; the agent's idle timeout (300 s) is not
    // what a page load waits on.
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(13),
        "{took:?}"
    );
}
