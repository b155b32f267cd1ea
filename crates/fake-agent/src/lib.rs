//! The one fake A2A agent of the project: a real JSON-RPC server on a
//! loopback port, in three behaviours.
//!
//! - [`Behaviour::Demo`]: `agui-gateway demo`'s agent. Every answer uses
//!   the hints of the three seed systems, and its ids derive from the
//!   request, so the README's examples show real output (`demo`).
//! - [`Behaviour::Faults`]: the tests' fault injection. The `X-Fake`
//!   request header picks what happens (a fixed body, an error answer, a
//!   stream cut, a stall, a burst, a drip, ...), and [`Agent::log`] records
//!   what the agent received and when it sent and was left (`faults`).
//! - [`Behaviour::Load`]: the load tools' agent: paced chunks carrying the
//!   time they were sent (`load`, `marker`), over JSON-RPC in both A2A
//!   dialects and over A2A 1.0's gRPC binding on a second port (`grpc`).
//! - [`Behaviour::Polled`]: an agent that does not stream, its tasks read
//!   as they advance on the clock, with the faults of polling (`polled`).
//!
//! Test support, not production code: it trusts what it is sent, within
//! the bounds a loopback test needs.
#![forbid(unsafe_code)]

pub mod demo;
mod faults;
mod grpc;
pub mod load;
mod log;
pub mod marker;
mod polled;
mod sse;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;

pub use self::faults::{BURST, FIXED_SSE, USAGE};
pub use self::load::LoadDefaults;
pub use self::log::Log;

/// What the agent does with a request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// The demo's answers, each event `delay` after the one before.
    Demo { delay: Duration },
    /// What the `X-Fake` header asks for (`fixed` without one).
    Faults,
    /// Paced chunks by the defaults, which a request's text may override.
    Load(LoadDefaults),
    /// No streaming: a task to poll (`X-Fake` picks its fault).
    Polled,
}

/// A running fake agent. It serves until the runtime it was started on
/// stops.
#[derive(Clone)]
pub struct Agent {
    pub addr: SocketAddr,
    /// A2A 1.0's gRPC binding, for [`Behaviour::Load`].
    pub grpc: Option<SocketAddr>,
    /// What the agent received, and when it sent and was left.
    pub log: Arc<Mutex<Log>>,
}

impl Agent {
    /// Binds `127.0.0.1:port` (0: any free port) and serves `behaviour`.
    pub async fn start(behaviour: Behaviour, port: u16) -> std::io::Result<Agent> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        // Small writes leave at once (Nagle plus delayed ACKs would add 40 ms).
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        let log = Arc::new(Mutex::new(Log::default()));
        let mode = match behaviour {
            Behaviour::Load(defaults) => Mode::Load(load::Pacer::new(defaults)),
            Behaviour::Demo { delay } => Mode::Demo(delay),
            Behaviour::Faults => Mode::Faults,
            Behaviour::Polled => Mode::Polled(polled::Tasks::default()),
        };
        // Both bindings answer from one pacer: one count of tasks, so no
        // two streams share a task id whichever binding they came by.
        let grpc = match &mode {
            Mode::Load(pacer) => {
                let grpc = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
                let grpc_addr = grpc.local_addr()?;
                tokio::spawn(grpc::serve(grpc, pacer.clone()));
                Some(grpc_addr)
            }
            _ => None,
        };
        let served = Served {
            url: format!("http://{addr}/"),
            behaviour: mode,
            log: log.clone(),
        };
        let mut app = Router::new()
            .route("/.well-known/agent-card.json", get(card))
            .route("/", post(rpc));
        if matches!(served.behaviour, Mode::Demo(_)) {
            // The demo answers agents' clients of A2A before 0.3 too.
            app = app.route("/.well-known/agent.json", get(card));
        }
        let app = app.with_state(served);
        tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::error!("the fake agent stopped: {err}");
            }
        });
        Ok(Agent { addr, grpc, log })
    }

    /// `http://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Waits up to `within` for the agent to have received JSON-RPC
    /// `method`; panics (a test's failure report) if it never does.
    pub async fn wait_for_method(&self, method: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !self
            .log
            .lock()
            .is_ok_and(|log| log.methods.iter().any(|m| m == method))
        {
            assert!(Instant::now() < deadline, "the agent never got {method}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A JSON-RPC message's text parts, joined by spaces (what the demo answers
/// and the load plans read).
fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The state every request sees.
#[derive(Clone)]
struct Served {
    url: String,
    behaviour: Mode,
    log: Arc<Mutex<Log>>,
}

#[derive(Clone)]
enum Mode {
    Demo(Duration),
    Faults,
    Load(load::Pacer),
    Polled(polled::Tasks),
}

async fn card(State(served): State<Served>) -> Response {
    match &served.behaviour {
        Mode::Demo(_) => demo::card(&served.url),
        Mode::Faults => faults::card(&served.url),
        Mode::Load(_) => load::card(&served.url),
        Mode::Polled(_) => polled::card(&served.url),
    }
    .into_response()
}

async fn rpc(State(served): State<Served>, headers: HeaderMap, body: Bytes) -> Response {
    match &served.behaviour {
        Mode::Demo(delay) => demo::respond(*delay, &body),
        Mode::Faults | Mode::Polled(_) => {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if let Ok(mut log) = served.log.lock() {
                log.received(&request, &headers);
            }
            match &served.behaviour {
                Mode::Polled(tasks) => tasks.answer(&headers, &request),
                _ => faults::answer(&served.log, &headers, &request),
            }
        }
        Mode::Load(pacer) => pacer.answer(&body),
    }
}
