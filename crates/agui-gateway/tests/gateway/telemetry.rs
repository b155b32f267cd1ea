//! Traces as an operator's collector sees them: a loopback stand-in for an
//! OTLP/HTTP collector receives the gateway's spans, in the client's trace,
//! and the agent receives the gateway's span as its parent.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::Value;

use super::SEED_BODY;
use super::support::*;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

type Received = Arc<Mutex<Vec<Value>>>;

/// The collector stand-in: keeps every OTLP/JSON export it is sent.
async fn collector() -> (SocketAddr, Received) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Received::default();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(|State(received): State<Received>, body: Bytes| async move {
                if let Ok(export) = serde_json::from_slice(&body) {
                    received.lock().unwrap().push(export);
                }
                axum::Json(serde_json::json!({}))
            }),
        )
        .with_state(received.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, received)
}

/// Every span the collector got.
fn spans(received: &Received) -> Vec<Value> {
    received
        .lock()
        .unwrap()
        .iter()
        .flat_map(|export| {
            export["resourceSpans"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// A gateway exporting its spans to `collector` every 100 ms (not 5 s).
fn exporting_gateway(upstream: SocketAddr, collector: SocketAddr, extra: &[&str]) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agui-gateway"));
    command
        .args(["--upstream", &format!("http://{upstream}/")])
        .args(extra)
        .args(["--otlp-endpoint", &format!("http://{collector}")])
        .args(["--listen", "127.0.0.1:0"])
        .env("AGUI_GATEWAY_LOG", "warn")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    start_within(
        command,
        "listening on ",
        "the gateway",
        Duration::from_secs(30),
    )
}

/// The spans of `trace` once `ready` holds for them, within 15 s.
async fn spans_of(
    received: &Received,
    trace: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let spans: Vec<Value> = spans(received)
            .into_iter()
            .filter(|s| s["traceId"] == trace)
            .collect();
        if ready(&spans) {
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "not the spans expected: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One converted run with the client's `traceparent` and `tracestate`;
/// the trace headers the agent got (each at most once).
async fn traced_run(gw: &Process, fake: &Fake) -> (String, Option<String>) {
    let response = client()
        .post(format!("{}/v1/agents/default/stream?format=agui", gw.url()))
        .header("X-Fake", "fixed")
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .header("tracestate", "vendor=client-data")
        .body(SEED_BODY)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(text.contains("RUN_FINISHED"), "{text}");
    let log = fake.log.lock().unwrap();
    let values = |wanted: &str| -> Vec<String> {
        log.headers
            .iter()
            .filter(|(name, _)| name == wanted)
            .map(|(_, value)| value.clone())
            .collect()
    };
    let (parents, states) = (values("traceparent"), values("tracestate"));
    assert!(parents.len() <= 1 && states.len() <= 1, "{:?}", log.headers);
    (
        parents.into_iter().next().unwrap_or_default(),
        states.into_iter().next(),
    )
}

#[tokio::test]
async fn spans_reach_the_collector_in_the_clients_trace() {
    let (collector, received) = collector().await;
    let (upstream, fake) = fake_upstream().await;
    let gw = exporting_gateway(upstream, collector, &[]);
    let (upstream_parent, state) = traced_run(&gw, &fake).await;
    // The default policy forwards every header: the client's tracestate
    // goes on in the gateway's context.
    assert_eq!(state.as_deref(), Some("vendor=client-data"));

    // The agent's parent is the gateway's client span, in the same trace.
    let parts: Vec<&str> = upstream_parent.split('-').collect();
    assert_eq!(parts.len(), 4, "traceparent upstream: {upstream_parent:?}");
    assert_eq!(parts[1], TRACE_ID);
    assert_ne!(
        parts[2], CLIENT_SPAN,
        "the gateway's own span is the parent"
    );
    assert_eq!(parts[3], "01");

    let deadline = Instant::now() + Duration::from_secs(15);
    let (server, call) = loop {
        let spans = spans(&received);
        let server = spans
            .iter()
            .find(|s| s["traceId"] == TRACE_ID && s["parentSpanId"] == CLIENT_SPAN)
            .cloned();
        let call = spans
            .iter()
            .find(|s| s["traceId"] == TRACE_ID && s["spanId"] == parts[2])
            .cloned();
        if let (Some(server), Some(call)) = (server, call) {
            break (server, call);
        }
        assert!(
            Instant::now() < deadline,
            "the collector did not get both spans: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(server["name"], "POST /v1/agents/{name}/*", "{server:#}");
    assert_eq!(call["parentSpanId"], server["spanId"], "{call:#}");
    assert_eq!(
        attribute(&server, "agui.agent").map(|v| &v["stringValue"]),
        Some(&Value::from("default")),
        "{server:#}"
    );
    assert_eq!(
        attribute(&server, "agui.mode").map(|v| &v["stringValue"]),
        Some(&Value::from("converted")),
        "{server:#}"
    );
    // OTLP/JSON writes 64-bit integers as strings; accept a number too.
    let status = attribute(&server, "http.response.status_code").map(|v| &v["intValue"]);
    assert!(
        status == Some(&Value::from("200")) || status == Some(&Value::from(200)),
        "{server:#}"
    );
    // Ids are never the query or headers: nothing but known keys.
    let keys: Vec<&str> = server["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["key"].as_str())
        .collect();
    for key in &keys {
        assert!(
            key.starts_with("http.") || key.starts_with("url.") || key.starts_with("agui."),
            "{key} in {keys:?}"
        );
    }
    // One call, one client span.
    let calls: Vec<Value> = spans(&received)
        .into_iter()
        .filter(|s| s["traceId"] == TRACE_ID && s["parentSpanId"] == server["spanId"])
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");

    // A request refused before any call has its server span and no
    // client span.
    const REFUSED_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    let response = client()
        .post(format!("{}/agui", gw.url()))
        .header(
            "traceparent",
            format!("00-{REFUSED_TRACE}-{CLIENT_SPAN}-01"),
        )
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let refused = spans_of(&received, REFUSED_TRACE, |spans| {
        spans.iter().any(|s| s["parentSpanId"] == CLIENT_SPAN)
    })
    .await;
    assert_eq!(
        refused.len(),
        1,
        "a span for a call never made: {refused:#?}"
    );

    let resource = received.lock().unwrap()[0]["resourceSpans"][0]["resource"].clone();
    assert!(
        resource.to_string().contains("agui-gateway"),
        "service.name: {resource:#}"
    );
}

/// Without a collector the gateway changes no trace header: the client's
/// reach the agent as they were where the forwarding policy forwards them,
/// and not where it does not. With one, the gateway's `traceparent` goes
/// in any case, the client's `tracestate` only where the policy allows.
#[tokio::test]
async fn trace_headers_follow_the_forwarding_policy() {
    let (upstream, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{upstream}/"), &[]);
    let (parent, state) = traced_run(&gw, &fake).await;
    assert_eq!(parent, format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"));
    assert_eq!(state.as_deref(), Some("vendor=client-data"));
    drop(gw);

    let gw = gateway_for(
        &format!("http://{upstream}/"),
        &["--forward-client-headers", "x-request-id"],
    );
    let (parent, state) = traced_run(&gw, &fake).await;
    assert_eq!(parent, "", "a policy that forwards no trace header");
    assert_eq!(state, None);
    drop(gw);

    let (collector, _received) = collector().await;
    let gw = exporting_gateway(
        upstream,
        collector,
        &["--forward-client-headers", "x-request-id"],
    );
    let (parent, state) = traced_run(&gw, &fake).await;
    assert!(parent.starts_with(&format!("00-{TRACE_ID}-")), "{parent}");
    assert!(!parent.contains(CLIENT_SPAN), "{parent}");
    assert_eq!(state, None, "the policy does not forward tracestate");
}

/// A call lasts as long as it does, not as long as its request: after the
/// client left (no grace), the run's call ends after the request's span,
/// and the cancel that follows has a client span of its own, under the
/// request's, whose id is the `traceparent` the agent got with it.
#[tokio::test]
async fn a_call_outlives_a_request_the_client_left_and_the_cancel_has_its_own_span() {
    const TRACE: &str = "5b8aa5a2d2c872e8321cf37308d69df2";
    let (collector, received) = collector().await;
    let (upstream, fake) = fake_upstream().await;
    let gw = exporting_gateway(
        upstream,
        collector,
        &["--cancel-on-disconnect", "--detach-grace-secs", "0"],
    );
    let response = client()
        .post(format!("{}/v1/agents/default/stream?format=agui", gw.url()))
        .header("X-Fake", "endless")
        .header("traceparent", format!("00-{TRACE}-{CLIENT_SPAN}-01"))
        .body(SEED_BODY)
        .send()
        .await
        .unwrap();
    read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
    fake.wait_for_method("tasks/cancel", Duration::from_secs(10))
        .await;
    // The cancel is the agent's last request.
    let cancel_parent = fake
        .log
        .lock()
        .unwrap()
        .headers
        .iter()
        .find(|(name, _)| name == "traceparent")
        .map(|(_, value)| value.clone())
        .expect("the cancel's traceparent");
    let cancel_id = cancel_parent.split('-').nth(2).unwrap().to_owned();

    let spans = spans_of(&received, TRACE, |spans| {
        spans.len() >= 3 && spans.iter().any(|s| s["spanId"] == cancel_id)
    })
    .await;
    let server = spans
        .iter()
        .find(|s| s["parentSpanId"] == CLIENT_SPAN)
        .expect("the server span");
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parentSpanId"] == server["spanId"])
        .collect();
    assert_eq!(calls.len(), 2, "the run's call and the cancel: {spans:#?}");
    for call in &calls {
        assert_eq!(call["name"], "A2A default", "{call:#}");
        assert_eq!(call["kind"], 3, "SPAN_KIND_CLIENT: {call:#}");
    }
    let time = |span: &Value, key: &str| -> u64 {
        match &span[key] {
            Value::String(text) => text.parse().unwrap(),
            other => other.as_u64().unwrap(),
        }
    };
    let (cancel, run): (Vec<&Value>, Vec<&Value>) = calls
        .iter()
        .partition(|s| s["spanId"] == cancel_id.as_str());
    let (cancel, run) = (cancel[0], run[0]);
    let request_end = time(server, "endTimeUnixNano");
    assert!(
        time(cancel, "startTimeUnixNano") >= request_end,
        "the cancel came after the request: {spans:#?}"
    );
    assert!(
        time(run, "endTimeUnixNano") >= request_end,
        "the run's call ended with its stream, after the client left: {spans:#?}"
    );
}
