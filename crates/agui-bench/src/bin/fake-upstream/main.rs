//! A deterministic, rate-controlled A2A agent for load tests (real HTTP on
//! loopback). `message/stream` answers in the 0.3 dialect,
//! `SendStreamingMessage` in 1.0. Every chunk's text carries the time it
//! was sent (`@@<µs>@@`).
//!
//! The user's text may override the defaults per request:
//! `events=50 interval=20 hold=0 bytes=16` (chunks, ms between them, seconds
//! to stay silent after the first chunk, filler bytes per chunk).
//!
//! The same agent over A2A 1.0's gRPC binding on a second port (`grpc`):
//! `SendStreamingMessage` streams the same plan as typed messages.
//!
//! `fake-upstream [--port 0] [--events 50] [--interval-ms 20]`; prints
//! `READY <port>`, then `GRPC <port>`.
#![forbid(unsafe_code)]

mod grpc;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agui_bench::{marker, now_micros};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{Listener, ListenerExt};
use clap::Parser;
use serde_json::{Value, json};

#[derive(Debug, Parser, Clone)]
pub struct Args {
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Chunks per stream.
    #[arg(long, default_value_t = 50)]
    events: u64,
    /// Milliseconds between chunks.
    #[arg(long, default_value_t = 20)]
    interval_ms: u64,
    /// Filler bytes per chunk, besides the time marker.
    #[arg(long, default_value_t = 16)]
    bytes: usize,
}

#[derive(Clone)]
pub struct Fake {
    pub args: Args,
    base: String,
    pub tasks: Arc<AtomicU64>,
}

#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub events: u64,
    interval: Duration,
    hold: Duration,
    pub bytes: usize,
}

pub fn plan(defaults: &Args, text: &str) -> Plan {
    let mut plan = Plan {
        events: defaults.events,
        interval: Duration::from_millis(defaults.interval_ms),
        hold: Duration::ZERO,
        bytes: defaults.bytes,
    };
    for word in text.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let Ok(number) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "events" => plan.events = number.min(1_000_000),
            "interval" => plan.interval = Duration::from_millis(number),
            "hold" => plan.hold = Duration::from_secs(number.min(3600)),
            "bytes" => plan.bytes = usize::try_from(number).unwrap_or(16).min(1 << 20),
            _ => {}
        }
    }
    plan
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    let addr = listener.local_addr()?;
    let fake = Fake {
        args,
        base: format!("http://{addr}/"),
        tasks: Arc::default(),
    };
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/", post(rpc))
        .with_state(fake.clone());
    let grpc_listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let grpc_port = grpc_listener.local_addr()?.port();
    println!("READY {}", addr.port());
    println!("GRPC {grpc_port}");
    tokio::spawn(grpc::serve(grpc_listener, fake.clone()));
    axum::serve(listener, app).await?;
    Ok(())
}

async fn card(State(fake): State<Fake>) -> Response {
    axum::Json(json!({ "name": "fake upstream", "description": "deterministic load-test agent",
        "url": fake.base, "version": "1", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
        "capabilities": { "streaming": true }, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": [] }))
    .into_response()
}

async fn rpc(State(fake): State<Fake>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let v10 = request["method"] == "SendStreamingMessage";
    let text: String = request["params"]["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let plan = plan(&fake.args, &text);
    let n = fake.tasks.fetch_add(1, Ordering::Relaxed);
    let (task, context) = (format!("task-{n}"), format!("ctx-{n}"));
    let id = request["id"].clone();
    let filler = "x".repeat(plan.bytes);
    let stream = paced(plan, move |i| {
        let result = if i == 0 {
            task_event(v10, &task, &context)
        } else if i <= plan.events {
            let text = format!("{filler} {} ", marker(now_micros()));
            chunk_event(v10, &task, &context, &text, i == 1, i == plan.events)
        } else {
            done_event(v10, &task, &context)
        };
        let frame = format!(
            "data: {}\n\n",
            json!({ "jsonrpc": "2.0", "id": id, "result": result })
        );
        Ok::<_, Infallible>(Bytes::from(frame))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Item `i` of a plan's stream made by `item` (0: the task, 1..=events:
/// the chunks, then the end), each at its time: the first chunk at once,
/// the next after the interval plus the hold, the rest an interval apart.
pub fn paced<T: Send + 'static>(
    plan: Plan,
    item: impl Fn(u64) -> T + Send + Sync + 'static,
) -> impl futures::Stream<Item = T> + Send + 'static {
    let item = Arc::new(item);
    futures::stream::unfold(0u64, move |i| {
        let item = item.clone();
        async move {
            if i > plan.events + 1 {
                return None;
            }
            if i >= 2 {
                let wait = if i == 2 {
                    plan.interval + plan.hold
                } else {
                    plan.interval
                };
                if wait.is_zero() {
                    // Back to back: `sleep(0)` would wait for the timer's
                    // next millisecond tick, pacing every stream.
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(wait).await;
                }
            }
            Some((item(i), i + 1))
        }
    })
}

fn task_event(v10: bool, task: &str, context: &str) -> Value {
    if v10 {
        json!({ "task": { "id": task, "contextId": context, "status": { "state": "TASK_STATE_SUBMITTED" } } })
    } else {
        json!({ "kind": "task", "id": task, "contextId": context, "status": { "state": "submitted" } })
    }
}

fn chunk_event(v10: bool, task: &str, context: &str, text: &str, first: bool, last: bool) -> Value {
    if v10 {
        let mut update = json!({ "taskId": task, "contextId": context,
            "artifact": { "artifactId": "answer", "parts": [{ "text": text }] } });
        if !first {
            update["append"] = json!(true);
        }
        if last {
            update["lastChunk"] = json!(true);
        }
        json!({ "artifactUpdate": update })
    } else {
        json!({ "kind": "artifact-update", "taskId": task, "contextId": context, "append": !first, "lastChunk": last,
            "artifact": { "artifactId": "answer", "parts": [{ "kind": "text", "text": text }] } })
    }
}

fn done_event(v10: bool, task: &str, context: &str) -> Value {
    if v10 {
        json!({ "statusUpdate": { "taskId": task, "contextId": context, "status": { "state": "TASK_STATE_COMPLETED" } } })
    } else {
        json!({ "kind": "status-update", "taskId": task, "contextId": context, "final": true, "status": { "state": "completed" } })
    }
}
