//! Token budgets per caller (issue 40): with `token_budget = 50` and two
//! API keys, the fake agent reporting 42 tokens a run (`X-Fake: usage`),
//! key `a` runs twice (84 tokens, the second run started under 50), then
//! gets 429 `TOKEN_BUDGET_EXCEEDED` with `Retry-After` on every metered
//! route and the agent receives nothing; key `b` still runs. In process,
//! counted in memory; then two replicas on one redis-server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_fake_agent::{Agent, Behaviour, USAGE};
use agui_gateway::config::{AgentConfig, Config};
use agui_gateway::http::router::router;
use agui_gateway::state::{AppState, Shutdown};
use axum::body::Body;
use axum::http::{HeaderMap, Request};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::SEED_BODY;
use crate::edge::write_config;
use crate::support::{Process, agui_events, assert_valid_run, client, gateway_for, redis_server};

const BUDGET: u64 = 50;
const WINDOW_SECS: u64 = 3600;
const KEYS: &str = "a:key-a-secret\nb:key-b-secret\n";

/// A 1.0 client's `RunAgentInput` (the usage is on its `RUN_FINISHED`).
fn run_input(n: usize) -> Value {
    json!({ "threadId": format!("budget-{n}"), "runId": format!("run-{n}"), "state": {}, "tools": [],
        "context": [], "forwardedProps": {}, "protocolVersion": "1.0",
        "messages": [{ "id": format!("u{n}"), "role": "user", "content": "how much?" }] })
}

/// An A2A streaming call, as a client of the agent sends it.
fn a2a_stream() -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": { "message":
        { "kind": "message", "role": "user", "messageId": "m1", "parts": [{ "kind": "text", "text": "hi" }] } } })
    .to_string()
}

/// What the agent received so far (each JSON-RPC call).
fn calls(fake: &Agent) -> usize {
    fake.log.lock().unwrap().methods.len()
}

/// A refusal as the budget writes it: 429, the code, `Retry-After` within
/// the window; the body's message.
fn assert_refused(status: u16, headers: &HeaderMap, body: &[u8]) {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "TOKEN_BUDGET_EXCEEDED", "{body}");
    assert_eq!(body["error"]["side"], "client", "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=WINDOW_SECS).contains(&retry), "{retry}");
}

/// The value of `agui_gateway_token_budget_refusals_total{agent}`.
fn refusals(metrics: &str, agent: &str) -> u64 {
    let series = format!("agui_gateway_token_budget_refusals_total{{agent=\"{agent}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series)?.parse().ok())
        .unwrap_or(0)
}

/// One request to the router, `X-Fake: usage`, as key `key`: its status,
/// headers and whole body.
async fn send(
    state: &Arc<AppState>,
    key: &str,
    path: &str,
    accept: Option<&str>,
    body: String,
) -> (u16, HeaderMap, Vec<u8>) {
    let mut request = Request::post(path)
        .header("content-type", "application/json")
        .header("x-api-key", key)
        .header("x-fake", "usage");
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = router(state.clone())
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status.as_u16(), headers, body.to_vec())
}

/// An `/agui` run that finishes, with its 42 tokens on `RUN_FINISHED`.
fn assert_ran(status: u16, body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    assert_eq!(status, 200, "{text}");
    let events = agui_events(&text);
    let last = assert_valid_run(&events);
    assert_eq!(last["type"], "RUN_FINISHED", "{text}");
    assert_eq!(last["usage"][0]["totalTokens"], USAGE.0 + USAGE.1, "{text}");
}

#[tokio::test]
async fn a_caller_past_its_token_budget_is_refused_before_any_agent_call() {
    let fake = Agent::start(Behaviour::Faults, 0).await.unwrap();
    let keys = write_config("budget-keys", KEYS);
    let upstream = url::Url::parse(&fake.url()).unwrap();
    let mut config = Config::single(
        ([127, 0, 0, 1], 8080).into(),
        AgentConfig::new("default", upstream),
    );
    config.auth.api_keys_file = Some(keys);
    config.limits.token_budget = BUDGET;
    config.limits.token_budget_window = Duration::from_secs(WINDOW_SECS);
    let state = Arc::new(AppState::new(config, Shutdown::default()).unwrap());
    let agui = |n: usize| run_input(n).to_string();

    // Under the budget, twice: 42, then 84 tokens.
    for n in 0..2 {
        let (status, _, body) = send(&state, "key-a-secret", "/agui", None, agui(n)).await;
        assert_ran(status, &body);
    }
    let before = calls(&fake);
    // Past it, on every route that converts; the agent hears of none.
    let copilotkit = agui(3);
    let refused = [
        ("/agui", None, agui(2)),
        ("/v1/agents/default/agui", None, agui(2)),
        (
            "/v1/agents/default/stream",
            Some("application/x-agui-events"),
            SEED_BODY.to_owned(),
        ),
        ("/?format=agui", None, a2a_stream()),
        ("/copilotkit/agent/default/run", None, copilotkit),
    ];
    for (path, accept, body) in &refused {
        let (status, headers, answer) =
            send(&state, "key-a-secret", path, *accept, body.clone()).await;
        assert_refused(status, &headers, &answer);
    }
    assert_eq!(calls(&fake), before, "a refused run reached the agent");
    let metrics = state.metrics.render(None, &[]);
    assert_eq!(
        refusals(&metrics, "default"),
        refused.len() as u64,
        "{metrics}"
    );

    // The other caller still runs.
    let (status, _, body) = send(&state, "key-b-secret", "/agui", None, agui(4)).await;
    assert_ran(status, &body);
    // A call passed through is not metered (nothing of it is read).
    let (status, _, _) = send(&state, "key-a-secret", "/", None, a2a_stream()).await;
    assert_eq!(status, 200);
    assert_eq!(calls(&fake), before + 2);
}

/// A gateway replica on `journal`, in front of `fake`, with the budget
/// and the two keys.
fn replica(fake: &Agent, journal: &str, id: &str) -> Process {
    let keys = write_config(&format!("budget-keys-{id}"), KEYS);
    let window = WINDOW_SECS.to_string();
    gateway_for(
        &fake.url(),
        &[
            "--journal",
            journal,
            "--gateway-id",
            id,
            "--api-keys-file",
            keys.to_str().unwrap(),
            "--token-budget",
            &BUDGET.to_string(),
            "--token-budget-window-secs",
            &window,
        ],
    )
}

/// The replica's Prometheus text (behind its authentication).
async fn metrics_of(gw: &Process) -> String {
    let metrics = client()
        .get(format!("{}/metrics", gw.url()))
        .header("x-api-key", "key-b-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    metrics.text().await.unwrap()
}

async fn post_agui(gw: &Process, key: &str, n: usize) -> reqwest::Response {
    client()
        .post(format!("{}/agui", gw.url()))
        .header("x-api-key", key)
        .header("x-fake", "usage")
        .json(&run_input(n))
        .send()
        .await
        .unwrap()
}

/// The tokens Redis counts for every caller, once it counts at least
/// `want` (a run's tokens are written after its end).
async fn counted_in_redis(redis: &Process, want: u64) -> u64 {
    let mut connection = redis::Client::open(format!("redis://127.0.0.1:{}/", redis.port))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("agui-gateway:{budget:*")
            .query_async(&mut connection)
            .await
            .unwrap();
        let mut counted = 0;
        for key in &keys {
            let spent: u64 = redis::cmd("GET")
                .arg(key)
                .query_async(&mut connection)
                .await
                .unwrap();
            counted += spent;
        }
        if counted >= want {
            return counted;
        }
        assert!(Instant::now() < deadline, "Redis counts {counted} tokens");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn two_replicas_share_a_callers_budget_through_redis() {
    let redis = redis_server();
    let journal = format!("redis://127.0.0.1:{}/", redis.port);
    let fake = Agent::start(Behaviour::Faults, 0).await.unwrap();
    let first = replica(&fake, &journal, "gw-budget-1");
    let second = replica(&fake, &journal, "gw-budget-2");

    // Charged on the first replica…
    for n in 0..2 {
        let run = post_agui(&first, "key-a-secret", n).await;
        let status = run.status().as_u16();
        assert_ran(status, &run.bytes().await.unwrap());
    }
    let total = USAGE.0 + USAGE.1;
    assert_eq!(counted_in_redis(&redis, 2 * total).await, 2 * total);
    // …refused on the second, before any agent call.
    let before = calls(&fake);
    let refused = post_agui(&second, "key-a-secret", 2).await;
    let (status, headers) = (refused.status().as_u16(), refused.headers().clone());
    assert_refused(status, &headers, &refused.bytes().await.unwrap());
    assert_eq!(calls(&fake), before, "a refused run reached the agent");
    assert_eq!(refusals(&metrics_of(&second).await, "default"), 1);
    assert_eq!(refusals(&metrics_of(&first).await, "default"), 0);
    // The other caller runs on either.
    let run = post_agui(&second, "key-b-secret", 3).await;
    let status = run.status().as_u16();
    assert_ran(status, &run.bytes().await.unwrap());

    // Redis gone: the budget is not checked, the run goes on (counted).
    drop(redis);
    let run = post_agui(&second, "key-a-secret", 4).await;
    let status = run.status().as_u16();
    assert_ran(status, &run.bytes().await.unwrap());
    let metrics = metrics_of(&second).await;
    assert!(
        metrics.contains("agui_gateway_token_budget_errors_total{op=\"check\"} 1"),
        "{metrics}"
    );
}
